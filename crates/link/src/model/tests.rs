//! The path model against a fake clock: each parameter's counts and times, the statistics of
//! the random draws (with bounds computed from their distributions), and invariants over
//! generated specs and packet sequences.

use proptest::prelude::*;

use super::*;
use crate::spec::{DEFAULT_QUEUE, DirSpec, LinkSpec, Queue};

const MS: u64 = 1_000_000;

fn dir(spec: &str) -> DirSpec {
    spec.parse::<LinkSpec>()
        .unwrap_or_else(|e| panic!("{spec:?}: {e}"))
        .up
}

fn path(spec: &str) -> Path {
    Path::new(&dir(spec), false, 1)
}

fn at(v: Verdict) -> u64 {
    match v {
        Verdict::Release { at } => at,
        Verdict::Drop(c) => panic!("dropped: {}", c.name()),
    }
}

#[test]
fn delay_only_releases_at_now_plus_delay() {
    let mut p = path("delay-up=20ms");
    for now in [0, 1, 5 * MS, 5 * MS, 1_000 * MS] {
        assert_eq!(p.offer(now, 100), Verdict::Release { at: now + 20 * MS });
    }
    assert_eq!(
        *p.counts(),
        PathCounts {
            packets: 5,
            bytes: 500,
            delivered: 5,
            delivered_bytes: 500,
            ..PathCounts::default()
        }
    );
    // no conditions: released as it comes
    let mut p = path("none");
    assert_eq!(p.offer(7, 1500), Verdict::Release { at: 7 });
}

#[test]
fn an_rtt_splits_over_the_two_directions() {
    let mut link = Link::new(&"rtt=40ms".parse().unwrap());
    assert_eq!(at(link.up.offer(MS, 64)), 21 * MS);
    assert_eq!(at(link.down.offer(MS, 64)), 21 * MS);
    let mut link = Link::new(&"rtt=3ns".parse().unwrap());
    assert_eq!(at(link.up.offer(10, 64)), 12);
    assert_eq!(at(link.down.offer(10, 64)), 11);
}

#[test]
fn a_time_before_the_last_counts_as_the_last() {
    let mut p = path("delay=1ms");
    assert_eq!(at(p.offer(100, 1)), 100 + MS);
    assert_eq!(at(p.offer(50, 1)), 100 + MS);
    let mut p = path("rate=8mbit,queue=1");
    assert_eq!(at(p.offer(5 * MS, 1000)), 6 * MS);
    // at 5 ms again, not 0: the first packet is still in transmission
    assert_eq!(p.offer(0, 1000), Verdict::Drop(Cause::Queue));
}

/// The offsets `release - now` of 20,000 packets 10 µs apart through delay 10 ms ± 2 ms.
fn jittered(reorder: bool) -> Vec<(u64, u64)> {
    let mut p = Path::new(&dir("delay=10ms,jitter=2ms"), reorder, 3);
    (0..20_000u64)
        .map(|i| {
            let now = i * 10_000;
            (now, at(p.offer(now, 100)))
        })
        .collect()
}

#[test]
fn jitter_stays_in_its_bounds_and_reorders_only_when_allowed() {
    let (lo, hi) = (8 * MS, 12 * MS);
    let free = jittered(true);
    let offsets: Vec<u64> = free.iter().map(|&(now, at)| at - now).collect();
    assert!(offsets.iter().all(|o| (lo..=hi).contains(o)));
    // the draws cover the range: 20,000 uniform draws leave no gap of 0.1 ms at either end
    assert!(*offsets.iter().min().unwrap() < lo + MS / 10);
    assert!(*offsets.iter().max().unwrap() > hi - MS / 10);
    let inversions = free.windows(2).filter(|w| w[1].1 < w[0].1).count();
    assert!(inversions > 1000, "{inversions} inversions");

    let kept = jittered(false);
    let mut last = 0;
    for &(now, at) in &kept {
        assert!(at >= last, "released before the packet before it");
        assert!(at >= now + lo && at <= (now + hi).max(last));
        last = at;
    }

    // a jitter above the delay: clamped at 0, never before now
    let mut p = Path::new(&dir("delay=1ms,jitter=5ms"), true, 4);
    let mut at_once = 0;
    for i in 0..10_000u64 {
        let now = i * 1000;
        let t = at(p.offer(now, 100));
        assert!(t >= now && t <= now + 6 * MS);
        at_once += u64::from(t == now);
    }
    // P(delay + draw ≤ 0) = 4 ms / 10 ms: about 4,000 of 10,000
    assert!((3_500..4_500).contains(&at_once), "{at_once}");
}

/// `n` packets of 100 bytes, 1 µs apart.
fn run(p: &mut Path, n: u64) -> Vec<Verdict> {
    (0..n).map(|i| p.offer(i * 1000, 100)).collect()
}

#[test]
fn random_loss_stays_inside_its_binomial_interval() {
    let n = 100_000u64;
    let mut p = path("loss=2%");
    run(&mut p, n);
    let c = *p.counts();
    // 99.9% of binomial(n, 0.02) lies within mean ± 3.29 sd
    let (mean, sd) = (n as f64 * 0.02, (n as f64 * 0.02 * 0.98).sqrt());
    let lost = c.dropped_random as f64;
    assert!(
        (lost - mean).abs() <= 3.29 * sd,
        "{lost} lost, {mean} ± {sd}"
    );
    assert_eq!(c.delivered + c.dropped_random, n);
    assert_eq!(c.delivered_bytes + 100 * c.dropped_random, c.bytes);
    assert_eq!((c.dropped_burst, c.dropped_queue), (0, 0));
}

#[test]
fn no_loss_and_total_loss() {
    let mut p = path("loss=0%");
    assert!(
        run(&mut p, 10_000)
            .iter()
            .all(|v| matches!(v, Verdict::Release { .. }))
    );
    assert_eq!(p.counts().delivered, 10_000);
    let mut p = path("loss=100%");
    assert!(
        run(&mut p, 10_000)
            .iter()
            .all(|&v| v == Verdict::Drop(Cause::Random))
    );
    assert_eq!(
        (p.counts().delivered, p.counts().dropped_random),
        (0, 10_000)
    );
    let mut p = path("burst=100%/0%");
    assert_eq!(run(&mut p, 1000)[0], Verdict::Drop(Cause::Burst));
    assert_eq!(p.counts().dropped_burst, 1000);
}

/// The asymptotic variance (× n) of the fraction of time a two-state Markov chain spends in
/// one state, with transition probabilities `p` (into it) and `r` (out of it): π(1-π)(1+λ)/(1-λ)
/// with π = p/(p+r) and λ = 1-p-r, its second eigenvalue. Consecutive packets' states are
/// correlated, so this is wider than a binomial's π(1-π).
fn chain_variance(p: f64, r: f64) -> f64 {
    let pi = p / (p + r);
    let lambda = 1.0 - p - r;
    pi * (1.0 - pi) * (1.0 + lambda) / (1.0 - lambda)
}

#[test]
fn bursts_lose_the_stationary_fraction_in_runs_of_one_over_r() {
    let (n, p, r) = (1_000_000u64, 0.01, 0.1);
    let mut path = path("burst=1%/10%");
    let verdicts = run(&mut path, n);
    let lost = path.counts().dropped_burst as f64 / n as f64;
    // bad = 100%, good = 0%: the loss fraction is the time in the bad state, p/(p+r) = 1/11;
    // 4 sd of the chain's own spread (a seed fails this about once in 16,000)
    let sd = (chain_variance(p, r) / n as f64).sqrt();
    assert!(
        (lost - p / (p + r)).abs() <= 4.0 * sd,
        "{lost} lost, sd {sd}"
    );

    // a burst is a stay in the bad state: geometric, mean 1/r = 10, sd √(1-r)/r ≈ 9.5
    let mut runs = Vec::new();
    let mut len = 0u64;
    for v in &verdicts {
        if *v == Verdict::Drop(Cause::Burst) {
            len += 1;
        } else if len > 0 {
            runs.push(len);
            len = 0;
        }
    }
    let mean = runs.iter().sum::<u64>() as f64 / runs.len() as f64;
    let sd = (1.0 - r).sqrt() / r / (runs.len() as f64).sqrt();
    assert!(
        (mean - 1.0 / r).abs() <= 4.0 * sd,
        "mean burst {mean}, sd {sd}"
    );
}

#[test]
fn bursts_with_loss_in_both_states_and_random_loss_beside() {
    let (n, p, r, bad, good): (u64, f64, f64, f64, f64) = (1_000_000, 0.01, 0.1, 0.5, 0.01);
    let mut path = path("burst=1%/10%/50%/1%");
    run(&mut path, n);
    let lost = path.counts().dropped_burst as f64 / n as f64;
    let pi = p / (p + r);
    let expected = pi * bad + (1.0 - pi) * good;
    // each packet's own draw adds a binomial part to the chain's spread
    let var = pi * bad * (1.0 - bad)
        + (1.0 - pi) * good * (1.0 - good)
        + (bad - good).powi(2) * chain_variance(p, r);
    let sd = (var / n as f64).sqrt();
    assert!(
        (lost - expected).abs() <= 4.0 * sd,
        "{lost} lost, {expected} ± {sd}"
    );

    // random loss first, then bursts: counted apart, the bursts among what random loss left
    let mut path = Path::new(&dir("loss=1%,burst=1%/10%"), false, 5);
    run(&mut path, n);
    let c = *path.counts();
    let random = c.dropped_random as f64 / n as f64;
    let burst = c.dropped_burst as f64 / n as f64;
    assert!((random - 0.01).abs() < 0.001, "{random}");
    assert!((burst - 0.99 / 11.0).abs() < 0.01, "{burst}");
    assert_eq!(c.delivered + c.dropped_random + c.dropped_burst, n);
}

#[test]
fn a_rate_spaces_back_to_back_packets() {
    // 1500 bytes at 12 Mbit/s: 1 ms each
    let mut p = path("rate=12mbit");
    for i in 1..=10 {
        assert_eq!(p.offer(0, 1500), Verdict::Release { at: i * MS });
    }
    assert_eq!(p.counts().queue_peak_packets, 10);
    assert_eq!(p.counts().queue_peak_bytes, 15_000);
    // an idle line: a packet starts when it arrives; the delay comes after the transmission
    let mut p = path("rate=12mbit,delay=5ms");
    assert_eq!(at(p.offer(100 * MS, 1500)), 106 * MS);
    // rounded up to the next ns: 1 byte at 3 bit/s is 2.67 s
    let mut p = path("rate=3bit");
    assert_eq!(at(p.offer(0, 1)), 2_666_666_667);
}

#[test]
fn a_long_run_delivers_at_the_rate() {
    // 7 Mbit/s (no packet's time a whole ns), offered 10% above it in sizes from 40 to 1500
    let bps = 7_000_000u64;
    let mut p = path("rate=7mbit,queue=64k");
    let mut rng = crate::rng::Rng::new(9);
    let (mut now, mut last) = (0u64, 0u64);
    for _ in 0..50_000 {
        let len = 40 + rng.below(1461);
        if let Verdict::Release { at } = p.offer(now, len as usize) {
            last = at;
        }
        now += len * 8 * 1_000_000_000 / (bps + bps / 10);
    }
    let c = *p.counts();
    assert!(c.dropped_queue > 0, "the offer did not saturate the line");
    let achieved = c.delivered_bytes as f64 * 8.0 * 1e9 / last as f64;
    assert!(
        (achieved / bps as f64 - 1.0).abs() < 0.001,
        "{achieved} bit/s"
    );
}

#[test]
fn a_packet_queue_drops_what_passes_its_limit() {
    // 1500 bytes at 1 Mbit/s: 12 ms each; 10 at once into 4 places
    let mut p = path("rate=1mbit,queue=4");
    let v: Vec<Verdict> = (0..10).map(|_| p.offer(0, 1500)).collect();
    for (i, v) in v.iter().enumerate().take(4) {
        assert_eq!(
            *v,
            Verdict::Release {
                at: (i as u64 + 1) * 12 * MS
            }
        );
    }
    assert!(v[4..].iter().all(|&v| v == Verdict::Drop(Cause::Queue)));
    let c = *p.counts();
    assert_eq!((c.delivered, c.dropped_queue), (4, 6));
    assert_eq!((c.queue_peak_packets, c.queue_peak_bytes), (4, 6000));
}

#[test]
fn a_byte_queue_drops_what_passes_its_limit() {
    // 1000 bytes at 8 Mbit/s: 1 ms each
    let mut p = path("rate=8mbit,queue=3500b");
    for i in 1..=3 {
        assert_eq!(at(p.offer(0, 1000)), i * MS);
    }
    assert_eq!(p.offer(0, 1000), Verdict::Drop(Cause::Queue));
    // a smaller one still fits (3500 ≤ 3500), and the drop before it changed nothing
    assert_eq!(at(p.offer(0, 500)), 3 * MS + MS / 2);
    assert_eq!(p.offer(0, 1), Verdict::Drop(Cause::Queue));
    let c = *p.counts();
    assert_eq!((c.delivered, c.dropped_queue), (4, 2));
    assert_eq!((c.queue_peak_packets, c.queue_peak_bytes), (4, 3500));
    // a packet larger than the whole queue never fits
    let mut p = path("rate=8mbit,queue=1k");
    assert_eq!(p.offer(0, 1025), Verdict::Drop(Cause::Queue));
    assert_eq!(at(p.offer(0, 1024)), 1024 * 1000);
}

#[test]
fn the_queue_drains() {
    // 12 ms per packet, 2 places
    let mut p = path("rate=1mbit,queue=2");
    assert_eq!(at(p.offer(0, 1500)), 12 * MS);
    assert_eq!(at(p.offer(0, 1500)), 24 * MS);
    assert_eq!(p.offer(0, 1500), Verdict::Drop(Cause::Queue));
    assert_eq!(p.offer(12 * MS - 1, 1500), Verdict::Drop(Cause::Queue));
    // the first one's transmission ended: its place is free
    assert_eq!(at(p.offer(12 * MS, 1500)), 36 * MS);
    assert_eq!(p.offer(12 * MS, 1500), Verdict::Drop(Cause::Queue));
    // long after: empty, idle, a packet starts as it arrives
    assert_eq!(at(p.offer(100 * MS, 1500)), 112 * MS);
    assert_eq!(at(p.offer(100 * MS, 1500)), 124 * MS);
    let c = *p.counts();
    assert_eq!((c.packets, c.delivered, c.dropped_queue), (8, 5, 3));
    assert_eq!(c.queue_peak_packets, 2);
}

#[test]
fn a_seed_gives_its_verdicts() {
    let spec = dir("rtt=40ms,jitter=5ms,loss=5%,burst=1%/20%,rate=10mbit,queue=20");
    let verdicts = |seed| {
        let mut p = Path::new(&spec, false, seed);
        (0..5000u64)
            .map(|i| p.offer(i * 500_000, 1200))
            .collect::<Vec<_>>()
    };
    assert_eq!(verdicts(7), verdicts(7));
    assert_ne!(verdicts(7), verdicts(8));
    // the two directions of a link draw apart
    let spec: LinkSpec = "loss=50%,seed=7".parse().unwrap();
    let mut link = Link::new(&spec);
    let up: Vec<_> = (0..200).map(|i| link.up.offer(i, 1)).collect();
    let down: Vec<_> = (0..200).map(|i| link.down.offer(i, 1)).collect();
    assert_ne!(up, down);
    let mut again = Link::new(&spec).up;
    let up_again: Vec<_> = (0..200).map(|i| again.offer(i, 1)).collect();
    assert_eq!(up, up_again);
}

#[test]
fn extremes_saturate_without_panicking() {
    let mut p = path("delay=60s,jitter=60s,rate=1bit,queue=1048576m");
    assert_eq!(at(p.offer(u64::MAX - 5, 1500)), u64::MAX);
    assert_eq!(p.offer(0, usize::MAX), Verdict::Drop(Cause::Queue));
    assert_eq!(p.counts().bytes, u64::MAX);
    let mut p = path("rate=1000gbit,queue=4294967295");
    let tx = (u128::from(u64::MAX) * 8_000_000_000).div_ceil(1_000_000_000_000);
    assert_eq!(u128::from(at(p.offer(0, usize::MAX))), tx);
    assert_eq!(u128::from(at(p.offer(0, 0))), tx);
    let mut p = path("rate=1bit,queue=10");
    assert_eq!(at(p.offer(0, usize::MAX)), u64::MAX);
    assert_eq!(at(p.offer(5, 1)), u64::MAX);
    // a queue of 0 (no spec gives one): everything dropped, nothing breaks
    let mut spec = dir("rate=1mbit");
    spec.queue = Queue::Packets(0);
    assert_eq!(
        Path::new(&spec, false, 1).offer(0, 1),
        Verdict::Drop(Cause::Queue)
    );
    spec.queue = Queue::Bytes(0);
    assert_eq!(
        Path::new(&spec, false, 1).offer(0, 0),
        Verdict::Release { at: 0 }
    );
    assert_eq!(DEFAULT_QUEUE, Queue::Packets(1000));
}

#[test]
fn causes_have_names() {
    let names: Vec<&str> = [Cause::Random, Cause::Burst, Cause::Queue]
        .iter()
        .map(|c| c.name())
        .collect();
    assert_eq!(names, ["random", "burst", "queue"]);
}

/// Packets as (gap since the previous one in ns, length).
fn packets() -> impl Strategy<Value = Vec<(u64, usize)>> {
    proptest::collection::vec((0..2_000_000u64, 0..9000usize), 1..300)
}

proptest! {
    /// For any spec and packets: the counts add up; every release comes no sooner than the
    /// packet's own transmission and the least delay jitter allows; without reorder, releases
    /// never go back; a queue never holds more than its limit.
    #[test]
    fn counts_add_up_and_releases_keep_their_bounds(
        spec in crate::spec::tests::link_spec(),
        packets in packets(),
    ) {
        let dir = &spec.up;
        let mut p = Path::new(dir, spec.reorder, spec.seed);
        let least = dir.delay.saturating_sub(dir.jitter).as_nanos() as u64;
        let (mut now, mut last, mut dropped_bytes) = (0u64, 0u64, 0u64);
        for &(gap, len) in &packets {
            now += gap;
            match p.offer(now, len) {
                Verdict::Release { at } => {
                    let tx = dir.rate_bps.map_or(0, |bps| {
                        (u128::from(len as u64) * 8_000_000_000).div_ceil(u128::from(bps))
                    });
                    let floor = u128::from(now) + tx + u128::from(least);
                    prop_assert!(u128::from(at) >= floor.min(u128::from(u64::MAX)));
                    if !spec.reorder {
                        prop_assert!(at >= last);
                    }
                    last = at;
                }
                Verdict::Drop(_) => dropped_bytes += len as u64,
            }
        }
        let c = *p.counts();
        prop_assert_eq!(c.packets, packets.len() as u64);
        prop_assert_eq!(
            c.packets,
            c.delivered + c.dropped_random + c.dropped_burst + c.dropped_queue
        );
        prop_assert_eq!(c.bytes, c.delivered_bytes + dropped_bytes);
        match dir.queue {
            Queue::Packets(n) => prop_assert!(c.queue_peak_packets <= u64::from(n)),
            Queue::Bytes(b) => prop_assert!(c.queue_peak_bytes <= b),
        }
        if dir.rate_bps.is_none() {
            prop_assert_eq!((c.queue_peak_packets, c.dropped_queue), (0, 0));
        }
    }
}
