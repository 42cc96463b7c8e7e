//! The spec grammar's tests: every key, unit and error, the canonical form, lists, and the
//! round trip (written, then read: the same spec) over generated specs and strings.

use std::time::Duration;

use proptest::prelude::*;

use super::*;

fn parse(s: &str) -> LinkSpec {
    s.parse()
        .unwrap_or_else(|e| panic!("{s:?} does not parse: {e}"))
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn err(s: &str) -> SpecError {
    match s.parse::<LinkSpec>() {
        Ok(spec) => panic!("{s:?} parsed as {spec:?}"),
        Err(e) => e,
    }
}

#[test]
fn rtt_splits_and_delays_set_their_directions() {
    let s = parse("rtt=40ms");
    assert_eq!(
        (s.up.delay, s.down.delay, s.rtt()),
        (ms(20), ms(20), ms(40))
    );
    // an odd count of ns: up gets the extra one
    let s = parse("rtt=3ns");
    assert_eq!(s.up.delay, Duration::from_nanos(2));
    assert_eq!(s.down.delay, Duration::from_nanos(1));
    let s = parse("delay=5ms");
    assert_eq!((s.up.delay, s.down.delay, s.rtt()), (ms(5), ms(5), ms(10)));
    let s = parse("delay-up=1ms,delay-down=30ms");
    assert_eq!((s.up.delay, s.down.delay), (ms(1), ms(30)));
    let s = parse("delay-down=7ms");
    assert_eq!((s.up.delay, s.down.delay), (Duration::ZERO, ms(7)));
}

#[test]
fn every_duration_unit() {
    for (text, ns) in [
        ("0", 0),
        ("0ms", 0),
        ("0.0s", 0),
        ("7ns", 7),
        ("250us", 250_000),
        ("250µs", 250_000),
        ("40ms", 40_000_000),
        ("1.5ms", 1_500_000),
        ("0.000001ms", 1),
        ("2s", 2_000_000_000),
        ("60s", 60_000_000_000),
        ("60.000000000s", 60_000_000_000),
        ("1.250000000000000000000000000000000000ms", 1_250_000),
        ("007ms", 7_000_000),
    ] {
        let s = parse(&format!("jitter={text}"));
        assert_eq!(s.up.jitter, Duration::from_nanos(ns), "{text}");
        assert_eq!(s.down.jitter, Duration::from_nanos(ns), "{text}");
    }
    let s = parse("jitter-up=1ms,jitter-down=2ms");
    assert_eq!((s.up.jitter, s.down.jitter), (ms(1), ms(2)));
    // jitter above the delay is allowed (each packet's delay is clamped at 0)
    assert_eq!(parse("rtt=2ms,jitter=5ms").up.jitter, ms(5));
}

#[test]
fn losses_as_percentages_and_fractions() {
    for (text, p) in [
        ("0", 0.0),
        ("0%", 0.0),
        ("1%", 0.01),
        ("0.5%", 0.005),
        ("100%", 1.0),
        ("0.01", 0.01),
        ("0.999", 0.999),
        ("12.5%", 0.125),
    ] {
        let s = parse(&format!("loss={text}"));
        assert_eq!((s.up.loss, s.down.loss), (p, p), "{text}");
    }
    let s = parse("loss-up=1%,loss-down=2%");
    assert_eq!((s.up.loss, s.down.loss), (0.01, 0.02));
}

#[test]
fn bursts_with_their_defaults() {
    let s = parse("burst=1%/25%");
    let b = Burst {
        p: 0.01,
        r: 0.25,
        bad: 1.0,
        good: 0.0,
    };
    assert_eq!((s.up.burst, s.down.burst), (Some(b), Some(b)));
    let s = parse("burst-up=0.01/0.3/50%");
    assert_eq!(
        s.up.burst,
        Some(Burst {
            p: 0.01,
            r: 0.3,
            bad: 0.5,
            good: 0.0
        })
    );
    assert_eq!(s.down.burst, None);
    let s = parse("burst-down=1%/10%/80%/0.1%");
    assert_eq!(
        s.down.burst,
        Some(Burst {
            p: 0.01,
            r: 0.1,
            bad: 0.8,
            good: 0.001
        })
    );
    // loss and burst in one direction: both apply
    let s = parse("loss=1%,burst=1%/25%");
    assert_eq!((s.up.loss, s.up.burst), (0.01, Some(b)));
}

#[test]
fn every_rate_unit() {
    for (text, bps) in [
        ("1", 1),
        ("8000", 8000),
        ("100bit", 100),
        ("64kbit", 64_000),
        ("20mbit", 20_000_000),
        ("1.5mbit", 1_500_000),
        ("1gbit", 1_000_000_000),
        ("1000gbit", 1_000_000_000_000),
        ("1bps", 8),
        ("1kbps", 8_000),
        ("2.5mbps", 20_000_000),
        ("125gbps", 1_000_000_000_000),
    ] {
        let s = parse(&format!("rate={text}"));
        assert_eq!(
            (s.up.rate_bps, s.down.rate_bps),
            (Some(bps), Some(bps)),
            "{text}"
        );
        assert_eq!(s.up.queue, DEFAULT_QUEUE);
    }
    let s = parse("rate-up=1mbit,rate-down=10mbit");
    assert_eq!(
        (s.up.rate_bps, s.down.rate_bps),
        (Some(1_000_000), Some(10_000_000))
    );
}

#[test]
fn queues_in_packets_and_bytes() {
    for (text, q) in [
        ("1", Queue::Packets(1)),
        ("100", Queue::Packets(100)),
        ("4294967295", Queue::Packets(u32::MAX)),
        ("1500b", Queue::Bytes(1500)),
        ("256k", Queue::Bytes(262_144)),
        ("1.5k", Queue::Bytes(1536)),
        ("2m", Queue::Bytes(2 << 20)),
        ("1048576m", Queue::Bytes(1 << 40)),
    ] {
        let s = parse(&format!("rate=10mbit,queue={text}"));
        assert_eq!((s.up.queue, s.down.queue), (q, q), "{text}");
    }
    let s = parse("rate-up=1mbit,queue-up=10");
    assert_eq!(
        (s.up.queue, s.down.queue),
        (Queue::Packets(10), DEFAULT_QUEUE)
    );
    let s = parse("rate=1mbit,queue-down=64k");
    assert_eq!(
        (s.up.queue, s.down.queue),
        (DEFAULT_QUEUE, Queue::Bytes(65_536))
    );
}

#[test]
fn reorder_seed_none_and_whitespace() {
    assert!(parse("reorder").reorder);
    assert!(parse("reorder=yes").reorder);
    assert!(!parse("reorder=no").reorder);
    assert!(!parse("rtt=1ms").reorder);
    assert!(parse("rtt=1ms,spin").spin);
    assert!(!parse("spin=no").spin);
    assert_eq!(parse("spin=yes,rtt=2ms").to_string(), "rtt=2ms,spin");
    assert!(parse("spin").is_passthrough());
    assert_eq!(parse("rtt=1ms").seed, DEFAULT_SEED);
    assert_eq!(parse("seed=42").seed, 42);
    assert_eq!(parse("seed=18446744073709551615").seed, u64::MAX);
    let none = parse("none");
    assert_eq!(none, LinkSpec::default());
    assert!(none.is_passthrough());
    assert_eq!(parse("  none "), none);
    assert_eq!(parse(" rtt = 40ms ,  loss=1%\t"), parse("rtt=40ms,loss=1%"));
}

#[test]
fn passthrough_is_no_delay_jitter_loss_burst_or_rate() {
    assert!(parse("reorder,seed=9").is_passthrough());
    assert!(parse("rtt=0,loss=0%").is_passthrough());
    for s in [
        "delay-down=1ns",
        "jitter-up=1us",
        "loss-down=0.1%",
        "burst=0%/100%",
        "rate-up=1gbit",
    ] {
        assert!(!parse(s).is_passthrough(), "{s}");
    }
}

#[test]
fn the_whole_grammar_at_once() {
    let s = parse(
        "delay-up=10ms,delay-down=30ms,jitter=1ms,reorder,loss-up=1%,burst-down=2%/20%,\
         rate=20mbit,queue-up=50,queue-down=64k,seed=7",
    );
    assert_eq!(
        s,
        LinkSpec {
            up: DirSpec {
                delay: ms(10),
                jitter: ms(1),
                loss: 0.01,
                burst: None,
                rate_bps: Some(20_000_000),
                queue: Queue::Packets(50),
            },
            down: DirSpec {
                delay: ms(30),
                jitter: ms(1),
                loss: 0.0,
                burst: Some(Burst {
                    p: 0.02,
                    r: 0.2,
                    bad: 1.0,
                    good: 0.0
                }),
                rate_bps: Some(20_000_000),
                queue: Queue::Bytes(65_536),
            },
            reorder: true,
            spin: false,
            seed: 7,
        }
    );
}

/// Each error names its part and says what is wrong, in one line.
#[test]
fn every_error_names_its_part() {
    use Problem::*;
    let cases: &[(&str, &str, Problem)] = &[
        ("rtt=1ms,,loss=1%", "rtt=1ms,,loss=1%", EmptyPart),
        ("rtt=1ms,", "rtt=1ms,", EmptyPart),
        (",rtt=1ms", ",rtt=1ms", EmptyPart),
        ("rtt=1ms, ,loss=1%", "rtt=1ms, ,loss=1%", EmptyPart),
        ("latency=1ms", "latency=1ms", UnknownKey),
        ("RTT=1ms", "RTT=1ms", UnknownKey),
        ("rtt-up=1ms", "rtt-up=1ms", UnknownKey),
        ("seed-down=1", "seed-down=1", UnknownKey),
        ("reorder-up", "reorder-up", UnknownKey),
        ("loss-left=1%", "loss-left=1%", UnknownKey),
        ("=1%", "=1%", UnknownKey),
        ("loss", "loss", MissingValue),
        ("rtt", "rtt", MissingValue),
        ("queue", "queue", MissingValue),
        ("loss=1%,loss-up=2%", "loss-up=2%", Repeated),
        ("loss-down=1%,loss=2%", "loss=2%", Repeated),
        ("delay=1ms,delay=2ms", "delay=2ms", Repeated),
        ("jitter-up=1ms,jitter-up=2ms", "jitter-up=2ms", Repeated),
        ("burst=1%/2%,burst-down=1%/2%", "burst-down=1%/2%", Repeated),
        ("rate=1mbit,rate-up=2mbit", "rate-up=2mbit", Repeated),
        ("rate=1mbit,queue=5,queue-up=6", "queue-up=6", Repeated),
        ("rtt=1ms,rtt=2ms", "rtt=2ms", Repeated),
        ("reorder,reorder=no", "reorder=no", Repeated),
        ("seed=1,seed=2", "seed=2", Repeated),
        ("none,loss=1%", "none", NoneAlone),
        ("loss=1%,none", "none", NoneAlone),
        ("none=1", "none=1", NoneAlone),
        ("rtt=40ms,delay=1ms", "delay=1ms", RttAndDelay),
        ("delay-up=1ms,rtt=40ms", "rtt=40ms", RttAndDelay),
        ("rtt=40", "rtt=40", Duration),
        ("rtt=61s", "rtt=61s", Duration),
        ("rtt=60.000000001s", "rtt=60.000000001s", Duration),
        ("delay=1.5ns", "delay=1.5ns", Duration),
        ("delay=-1ms", "delay=-1ms", Duration),
        ("delay=1e3ms", "delay=1e3ms", Duration),
        ("delay=1msec", "delay=1msec", Duration),
        ("delay=1MS", "delay=1MS", Duration),
        ("delay=.5ms", "delay=.5ms", Duration),
        ("delay=1.ms", "delay=1.ms", Duration),
        ("delay=ms", "delay=ms", Duration),
        ("jitter=", "jitter=", Duration),
        (
            "jitter-down=9999999999999999999999999999999s",
            "jitter-down=9999999999999999999999999999999s",
            Duration,
        ),
        ("loss=150%", "loss=150%", Loss),
        ("loss=100.001%", "loss=100.001%", Loss),
        ("loss=1", "loss=1", Loss),
        ("loss=1.5", "loss=1.5", Loss),
        ("loss=-1%", "loss=-1%", Loss),
        ("loss=nan", "loss=nan", Loss),
        ("loss=inf%", "loss=inf%", Loss),
        ("loss=1e-2", "loss=1e-2", Loss),
        ("loss=%", "loss=%", Loss),
        ("loss=1%%", "loss=1%%", Loss),
        ("loss-up=", "loss-up=", Loss),
        ("burst=1%", "burst=1%", Burst),
        ("burst=1%/2%/3%/4%/5%", "burst=1%/2%/3%/4%/5%", Burst),
        ("burst=1%/200%", "burst=1%/200%", Burst),
        ("burst=1%//50%", "burst=1%//50%", Burst),
        ("burst=", "burst=", Burst),
        ("rate=0", "rate=0", Rate),
        ("rate=0mbit", "rate=0mbit", Rate),
        ("rate=1001gbit", "rate=1001gbit", Rate),
        ("rate=126gbps", "rate=126gbps", Rate),
        ("rate=0.5bit", "rate=0.5bit", Rate),
        ("rate=20Mbit", "rate=20Mbit", Rate),
        ("rate=20mbits", "rate=20mbits", Rate),
        ("rate=fast", "rate=fast", Rate),
        ("rate-up=", "rate-up=", Rate),
        ("rate=1mbit,queue=0", "queue=0", Queue),
        ("rate=1mbit,queue=1.5", "queue=1.5", Queue),
        ("rate=1mbit,queue=0b", "queue=0b", Queue),
        ("rate=1mbit,queue=0.5b", "queue=0.5b", Queue),
        ("rate=1mbit,queue=10kb", "queue=10kb", Queue),
        ("rate=1mbit,queue=4294967296", "queue=4294967296", Queue),
        ("rate=1mbit,queue=1048577m", "queue=1048577m", Queue),
        ("rate=1mbit,queue=", "queue=", Queue),
        ("queue=100", "queue=100", QueueWithoutRate),
        ("queue=100,rate-up=1mbit", "queue=100", QueueWithoutRate),
        (
            "rate-up=1mbit,queue-down=64k",
            "queue-down=64k",
            QueueWithoutRate,
        ),
        ("reorder=maybe", "reorder=maybe", Reorder),
        ("spin=fast", "spin=fast", Spin),
        ("spin,spin", "spin", Repeated),
        ("reorder=", "reorder=", Reorder),
        ("seed=-1", "seed=-1", Seed),
        ("seed=+1", "seed=+1", Seed),
        (
            "seed=18446744073709551616",
            "seed=18446744073709551616",
            Seed,
        ),
        ("seed=0x10", "seed=0x10", Seed),
        ("seed=", "seed=", Seed),
    ];
    for &(input, part, problem) in cases {
        let e = err(input);
        assert_eq!(
            e,
            SpecError::Part {
                part: part.to_string(),
                problem
            },
            "{input:?}"
        );
        let text = e.to_string();
        assert!(text.starts_with(&format!("\"{part}\": ")), "{text}");
        assert!(!text.contains('\n') && !text.contains("--link"), "{text}");
    }
    assert_eq!(err(""), SpecError::Empty);
    assert_eq!(err("  \t"), SpecError::Empty);
}

/// The words of each error, as a user reads them.
#[test]
fn every_error_message() {
    assert_eq!(
        SpecError::Empty.to_string(),
        "an empty link spec (write none for no link)"
    );
    assert_eq!(
        err("loss=150%").to_string(),
        "\"loss=150%\": a loss is a percentage from 0% to 100% (1%, 0.5%) or a fraction below 1 \
         (0.01)"
    );
    let said = |input: &str| match err(input) {
        SpecError::Part { problem, .. } => problem.to_string(),
        SpecError::Empty => panic!("{input:?}: empty"),
    };
    for (input, message) in [
        (
            "rtt=1ms,,x",
            "an empty part (two commas in a row, or one at an end)",
        ),
        (
            "bandwidth=1mbit",
            "an unknown key; the keys are rtt, delay, jitter, loss, burst, rate, queue (each but \
             rtt also as KEY-up or KEY-down), reorder, spin, seed, and none alone",
        ),
        ("loss", "a value is missing (KEY=VALUE)"),
        ("loss=1%,loss-up=2%", "set twice (for the same direction)"),
        (
            "none,rtt=1ms",
            "none stands alone, with no value and no other part",
        ),
        (
            "rtt=1ms,delay=1ms",
            "rtt and delay together; give one of them",
        ),
        (
            "rtt=40",
            "a duration is a number with ns, us, ms or s (or 0), a whole number of ns, at most 60s",
        ),
        (
            "burst=1%",
            "a burst is p/r[/bad[/good]]: each a percentage from 0% to 100% or a fraction below 1",
        ),
        (
            "rate=0",
            "a rate is a number with bit, kbit, mbit, gbit, or bps, kbps, mbps, gbps (bytes/s), a \
             whole number of bit/s above 0 and at most 1000gbit",
        ),
        (
            "rate=1mbit,queue=0",
            "a queue is a number of packets (1 or more) or a size with b, k or m (1500b, 256k), \
             at most 1048576m",
        ),
        (
            "queue=10",
            "a queue needs a rate in the same direction (queue-up with rate-up, queue-down with \
             rate-down, queue with both)",
        ),
        (
            "reorder=sometimes",
            "reorder is a bare word, reorder=yes or reorder=no",
        ),
        (
            "seed=x",
            "a seed is a whole number from 0 to 18446744073709551615",
        ),
    ] {
        assert_eq!(said(input), message, "{input:?}");
    }
}

#[test]
fn the_canonical_form() {
    for (input, canonical) in [
        ("none", "none"),
        ("rtt=0", "none"),
        ("loss=0%,reorder=no", "none"),
        ("rtt=40ms", "rtt=40ms"),
        ("delay=20ms", "rtt=40ms"),
        ("delay-up=20ms,delay-down=20ms", "rtt=40ms"),
        ("rtt=3ns", "rtt=3ns"),
        ("delay-up=2ns,delay-down=1ns", "rtt=3ns"),
        ("delay-up=1ns,delay-down=2ns", "delay-up=1ns,delay-down=2ns"),
        ("delay-down=5ms", "delay-down=5ms"),
        ("delay=40s", "delay=40s"),
        ("delay-up=40s,delay-down=39s", "delay-up=40s,delay-down=39s"),
        ("rtt=1.5ms", "rtt=1500us"),
        ("rtt=0.25s", "rtt=250ms"),
        ("rtt=2000ms", "rtt=2s"),
        ("rtt=1001ns", "rtt=1001ns"),
        ("jitter=1ms,rtt=40ms", "rtt=40ms,jitter=1ms"),
        ("jitter-up=1ms,jitter-down=1000us", "jitter=1ms"),
        ("reorder=yes,jitter=1ms", "jitter=1ms,reorder"),
        ("loss=0.01", "loss=1%"),
        ("loss=0.5%", "loss=0.5%"),
        ("loss=0.005", "loss=0.5%"),
        ("loss=0.07", "loss=7%"),
        ("loss=12.345%", "loss=12.345%"),
        ("loss=100%", "loss=100%"),
        ("loss-up=1%,loss-down=1%", "loss=1%"),
        ("loss-up=1%,loss-down=2%", "loss-up=1%,loss-down=2%"),
        ("burst=0.01/0.25", "burst=1%/25%"),
        ("burst=1%/25%/100%/0%", "burst=1%/25%"),
        ("burst=1%/25%/50%", "burst=1%/25%/50%"),
        ("burst=1%/25%/100%/1%", "burst=1%/25%/100%/1%"),
        ("rate=20000000", "rate=20mbit"),
        ("rate=2.5mbps", "rate=20mbit"),
        ("rate=1bps", "rate=8bit"),
        ("rate=1500kbit", "rate=1500kbit"),
        ("rate=1000gbit", "rate=1000gbit"),
        ("rate=1mbit,queue=1000", "rate=1mbit"),
        ("rate=1mbit,queue=100", "rate=1mbit,queue=100"),
        ("rate=1mbit,queue=262144b", "rate=1mbit,queue=256k"),
        ("rate=1mbit,queue=1024k", "rate=1mbit,queue=1m"),
        ("rate=1mbit,queue=1500b", "rate=1mbit,queue=1500b"),
        ("rate=1mbit,queue-up=10", "rate=1mbit,queue-up=10"),
        ("rate-up=1mbit,queue-up=10", "rate-up=1mbit,queue-up=10"),
        ("seed=7", "seed=7"),
        (
            "seed=3,rate-down=1gbit,loss=1%,rtt=40ms",
            "rtt=40ms,loss=1%,rate-down=1gbit,seed=3",
        ),
    ] {
        assert_eq!(parse(input).to_string(), canonical, "{input:?}");
        assert_eq!(parse(canonical), parse(input), "{canonical:?}");
    }
    assert_eq!(
        format!("seed={DEFAULT_SEED}")
            .parse::<LinkSpec>()
            .unwrap()
            .to_string(),
        "none"
    );
}

#[test]
fn lists_of_specs() {
    let list = parse_list("rtt=1ms;rtt=40ms,loss=1%;none").unwrap();
    assert_eq!(
        list,
        vec![
            parse("rtt=1ms"),
            parse("rtt=40ms,loss=1%"),
            LinkSpec::default()
        ]
    );
    assert_eq!(parse_list(" rtt=1ms ").unwrap(), vec![parse("rtt=1ms")]);
    assert_eq!(parse_list(""), Err(SpecError::Empty));
    assert_eq!(parse_list("rtt=1ms;"), Err(SpecError::Empty));
    assert_eq!(parse_list("rtt=1ms;;none"), Err(SpecError::Empty));
    assert_eq!(
        parse_list("rtt=1ms;loss=2"),
        Err(SpecError::Part {
            part: "loss=2".to_string(),
            problem: Problem::Loss
        })
    );
}

#[test]
fn every_seed_passes_the_fuzz_check() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/link_spec");
    let mut seeds = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir:?}: {e}")) {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        fuzz_check(&data);
        seeds += 1;
    }
    assert!(seeds >= 3, "{seeds} seeds in {dir:?}");
}

/// A duration of a spec: any ns count up to 60 s, or a round one.
fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        Just(Duration::ZERO),
        (0..=60_000_000_000u64).prop_map(Duration::from_nanos),
        (0..=60_000u64).prop_map(Duration::from_millis),
        (0..=60_000_000u64).prop_map(Duration::from_micros),
    ]
}

/// A probability: thousandths of a percent (what users write), or any f64 in [0, 1). Either
/// round-trips exactly (compared with `==`, no tolerance): the writer writes the shortest
/// digits that read back to the same f64.
fn probability() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(1.0),
        (0..=100_000u32).prop_map(|k| {
            let text = format!("{}.{:03}%", k / 1000, k % 1000);
            value::probability(&text).expect("0% to 100% in thousandths")
        }),
        0.0..1.0f64,
    ]
}

fn burst() -> impl Strategy<Value = Burst> {
    (probability(), probability(), probability(), probability())
        .prop_map(|(p, r, bad, good)| Burst { p, r, bad, good })
}

fn rate() -> impl Strategy<Value = u64> {
    prop_oneof![
        1..=MAX_RATE_BPS,
        (1..=1000u64).prop_map(|g| g * 1_000_000_000),
        (1..=1_000_000u64).prop_map(|k| k * 1_000),
    ]
}

fn queue() -> impl Strategy<Value = Queue> {
    prop_oneof![
        Just(DEFAULT_QUEUE),
        (1..=u32::MAX).prop_map(Queue::Packets),
        (1..=MAX_QUEUE_BYTES).prop_map(Queue::Bytes),
        (1..=1u64 << 20).prop_map(|k| Queue::Bytes(k * 1024)),
    ]
}

/// One direction's conditions but its delay (set beside the other direction's).
fn dir_spec() -> BoxedStrategy<DirSpec> {
    (
        duration(),
        prop_oneof![Just(0.0), probability()],
        proptest::option::of(burst()),
        proptest::option::of((rate(), queue())),
    )
        .prop_map(|(jitter, loss, burst, bottleneck)| DirSpec {
            delay: Duration::ZERO,
            jitter,
            loss,
            burst,
            rate_bps: bottleneck.map(|(r, _)| r),
            queue: bottleneck.map_or(DEFAULT_QUEUE, |(_, q)| q),
        })
        .boxed()
}

/// Any spec the grammar can write: delays equal, one ns apart (an odd rtt) or independent.
pub(crate) fn link_spec() -> BoxedStrategy<LinkSpec> {
    let delays = prop_oneof![
        duration().prop_map(|d| (d, d)),
        (0..=30_000_000_000u64)
            .prop_map(|n| (Duration::from_nanos(n + 1), Duration::from_nanos(n))),
        (duration(), duration()),
    ];
    let seed = prop_oneof![Just(DEFAULT_SEED), any::<u64>()];
    (
        delays,
        dir_spec(),
        dir_spec(),
        any::<bool>(),
        any::<bool>(),
        seed,
    )
        .prop_map(
            |((up_delay, down_delay), up, down, reorder, spin, seed)| LinkSpec {
                up: DirSpec {
                    delay: up_delay,
                    ..up
                },
                down: DirSpec {
                    delay: down_delay,
                    ..down
                },
                reorder,
                spin,
                seed,
            },
        )
        .boxed()
}

proptest! {
    /// Written, then read: the same spec (compared exactly, floats included), and written
    /// again: the same text.
    #[test]
    fn a_written_spec_reads_back_the_same(spec in link_spec()) {
        let shown = spec.to_string();
        let back: LinkSpec = shown.parse().map_err(|e| TestCaseError::fail(format!("{shown:?}: {e}")))?;
        prop_assert_eq!(&back, &spec, "{}", shown);
        prop_assert_eq!(back.to_string(), shown);
    }

    /// Lists of written specs read back as the list.
    #[test]
    fn a_written_list_reads_back(specs in proptest::collection::vec(link_spec(), 1..4)) {
        let shown: Vec<String> = specs.iter().map(LinkSpec::to_string).collect();
        prop_assert_eq!(parse_list(&shown.join(";")), Ok(specs));
    }

    /// Text near the grammar and any text: no panic, and what parses round-trips.
    #[test]
    fn any_text_passes_the_fuzz_check(
        parts in proptest::collection::vec(
            "(rtt|delay|jitter|loss|burst|rate|queue|seed|reorder|none)(-up|-down)?(=[0-9./%a-zµ]{0,12})?",
            1..5,
        ),
        junk in ".{0,40}",
    ) {
        fuzz_check(parts.join(",").as_bytes());
        fuzz_check(parts.join(";").as_bytes());
        fuzz_check(junk.as_bytes());
    }
}

/// Every probability, however many digits it needs, is written as a percentage that reads back
/// to the same f64; `N%` and the fraction N/100 are one value.
#[test]
fn every_probability_is_written_as_a_percentage() {
    let mut rng = crate::rng::Rng::new(1);
    let edges = [
        0.0,
        1.0,
        f64::MIN_POSITIVE,
        5e-324,
        f64::EPSILON,
        1.0 - f64::EPSILON / 2.0,
        0.07,
        0.1 + 0.2,
    ];
    for p in edges.into_iter().chain((0..100_000).map(|_| rng.unit())) {
        let text = value::format_probability(p);
        assert!(text.ends_with('%'), "{p:?}: {text}");
        assert_eq!(value::probability(&text), Some(p), "{p:?}: {text}");
    }
    for (pct, fraction) in [("0.5%", "0.005"), ("7%", "0.07"), ("12.345%", "0.12345")] {
        assert_eq!(value::probability(pct), value::probability(fraction));
    }
    assert_eq!(value::format_probability(0.1 + 0.2), "30.000000000000004%");
}
