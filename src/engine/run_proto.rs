//! One protocol run from the main thread: start the workers, meet them at the barriers,
//! sample memory and the server's CPU over the measured window, merge what they measured.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::config::{Config, Endpoint};
use crate::stack::Proto;
use crate::stats::perf::KernelCounts;
use crate::stats::{ClockError, Memory, ProtoRun, RssSampler, Stats, WindowCost};
use crate::workload::Workload;

use super::meeting::Meeting;
use super::plan::assign;
use super::thread::worker_thread;
use super::{Ctx, EngineError, INTERRUPTED, progress};

/// How often the main thread samples RSS during the measured window.
pub(super) const RSS_EVERY: Duration = Duration::from_millis(20);

/// Most RSS samples kept; past this every other one is dropped (and the interval doubles).
pub(super) const RSS_SAMPLES: usize = 1024;

/// RSS samples over the window, thinned to stay bounded.
pub(super) struct RssSamples {
    pub(super) every: Duration,
    pub(super) next: Instant,
    pub(super) samples: Vec<(Instant, u64)>,
}

impl RssSamples {
    pub(super) fn new(start: Instant) -> RssSamples {
        RssSamples {
            every: RSS_EVERY,
            next: start,
            samples: Vec::new(),
        }
    }

    pub(super) fn take(&mut self, sampler: &RssSampler, now: Instant) {
        if now < self.next {
            return;
        }
        if let Some(kib) = sampler.rss_kib() {
            self.samples.push((now, kib));
        }
        if self.samples.len() >= RSS_SAMPLES {
            let kept = self.samples.iter().copied().step_by(2).collect();
            self.samples = kept;
            self.every *= 2;
        }
        self.next = now + self.every;
    }

    /// The sample nearest the middle of `[start, end]`.
    pub(super) fn steady(&self, start: Instant, end: Instant) -> Option<u64> {
        let mid = start + end.saturating_duration_since(start) / 2;
        self.samples
            .iter()
            .min_by_key(|(t, _)| t.max(&mid).duration_since(*t.min(&mid)))
            .map(|&(_, kib)| kib)
    }
}

/// Runs one protocol to completion and merges what every thread measured: `workload` rendered
/// for `endpoints` (what the run learnt before it started, `app::prepare`). `server_cpu` reads
/// the server's CPU time so far (the built-in server's thread clocks, or `--server-pid`'s
/// process clock).
pub fn run_proto(
    cfg: &Config,
    workload: &Workload,
    endpoints: &[Endpoint],
    proto: Proto,
    server_cpu: Option<&dyn Fn() -> Result<Duration, ClockError>>,
    failover: Option<&super::Failover>,
) -> Result<ProtoRun, EngineError> {
    run_proto_with(
        cfg,
        workload,
        endpoints,
        proto,
        server_cpu,
        failover,
        &super::Taps::default(),
    )
}

/// `run_proto`, handing each thread's live snapshots and request log rows to `taps`.
pub fn run_proto_with(
    cfg: &Config,
    workload: &Workload,
    endpoints: &[Endpoint],
    proto: Proto,
    server_cpu: Option<&dyn Fn() -> Result<Duration, ClockError>>,
    failover: Option<&super::Failover>,
    taps: &super::Taps,
) -> Result<ProtoRun, EngineError> {
    let load = &cfg.load;
    let conns = connections(proto, load, endpoints.len());
    let plan = assign(
        proto,
        load.pipeline,
        load.clients,
        conns,
        load.threads.max(1),
        endpoints.len(),
    );
    let threads = plan.len();
    // a cluster with clients to move: the run's endpoints, then the cluster's other members
    let members = match failover {
        Some(f) => &f.members[..],
        None => endpoints,
    };
    let bar = progress::Bar::start(proto.title(), threads, load.stop, load.warmup);
    let counters = bar.as_ref().map(|b| b.counters.clone());
    // --interval: the printer thread, fed by every worker
    let (sink, printer) = start_printer(load, bar.as_ref(), proto, threads)?;
    let ctx = Ctx::new(
        cfg,
        workload,
        proto,
        members,
        failover.map(|_| endpoints.len()),
        taps,
    )?;
    let ctx = Arc::new(Ctx {
        threads,
        interval: sink,
        ..ctx
    });
    if let Some(board) = &taps.live {
        board.begin(proto, threads);
    }
    if let (Some(r), Some(f)) = (&ctx.routes, failover) {
        r.settle(f);
    }
    let start_members: Vec<usize> = match &ctx.routes {
        Some(_) => (0..endpoints.len()).map(|i| ctx.member(i)).collect(),
        None => Vec::new(),
    };
    let sync = Arc::new(Meeting::new(threads));

    let handles = spawn_workers(plan, &ctx, &sync, counters.as_ref())?;

    // Memory: the baseline once every worker thread and runtime exists, before any connect.
    let sampler = RssSampler::open();
    let rss = || sampler.as_ref().and_then(RssSampler::rss_kib);
    sync.ready.wait();
    let rss_baseline = rss();
    sync.go.wait();
    if let Some(at) = load.start_at {
        // the workers wait at the start line while this thread waits for the time
        wait_for_start(at, load.warmup, &sync.abort);
    }
    sync.start.wait();
    let started = *sync.t0.get_or_init(Instant::now);
    if let Some(c) = &taps.control {
        c.started.store(true, Ordering::Release);
    }
    let rss_connected = rss();
    // The measured window starts where the workers start it: at the end of the warmup.
    let window_start = started + load.warmup;
    let started_at = wall_clock(window_start);
    let aborted = sync.abort.load(Ordering::SeqCst);
    if !aborted {
        std::thread::sleep(window_start.saturating_duration_since(Instant::now()));
    }
    let server_start = server_cpu.map(|f| f());
    let samples = sample_window(&sync, sampler.as_ref(), &ctx, failover, window_start);
    let server_end = server_cpu.map(|f| f());
    let last_sample = rss();
    // every worker sent its last interval before it arrived at `done`
    if let Some(p) = printer {
        let _ = p.join();
    }
    sync.close.wait();
    drop(bar);

    let Joined {
        stats,
        sample,
        cost,
        ended,
        pacer_timer,
        client_loop,
        stage_cpu,
    } = join(handles)?;
    if let Some(e) = sync.setup_error.lock().ok().and_then(|mut g| g.take()) {
        return Err(e);
    }
    let window_end = ended.unwrap_or(window_start).max(window_start);
    let (failovers, rediscovery_failures) = match &ctx.routes {
        Some(r) => failover_events(r, started, window_end),
        None => (Vec::new(), crate::stats::Unresolved::default()),
    };
    let server_cpu = match (server_start, server_end) {
        (Some(Ok(a)), Some(Ok(b))) => Some(Ok(b.saturating_sub(a))),
        (Some(Err(e)), _) | (_, Some(Err(e))) => Some(Err(e)),
        _ => None,
    };
    let memory = memory(
        (rss_baseline, rss_connected, last_sample),
        &samples,
        (window_start, window_end),
    );
    Ok(ProtoRun {
        proto,
        clients: load.clients,
        conns,
        pipeline: load.pipeline,
        requests_per_conn: load.requests_per_conn,
        threads,
        stats,
        window_start,
        started_at,
        elapsed: window_end - window_start,
        cost,
        server_cpu,
        sample,
        interrupted: INTERRUPTED.load(Ordering::Relaxed),
        rate: load.rate,
        client_loop: client_loop.unwrap_or(crate::stats::CLIENT_LOOP_TOKIO),
        pacer_timer,
        memory,
        stage_cpu,
        failovers,
        rediscovery_failures,
        members: match failover {
            Some(_) => members.iter().map(|e| e.url.clone()).collect(),
            None => Vec::new(),
        },
        start_members,
        classes: workload.classes(),
        compaction: None,
        leases: None,
        link: None,
    })
}

/// Until every worker is done: memory samples over the measured window from `window_start`,
/// and while clients can be moved (`failover`), re-discoveries.
fn sample_window(
    sync: &Meeting,
    sampler: Option<&RssSampler>,
    ctx: &Ctx,
    failover: Option<&super::Failover>,
    window_start: Instant,
) -> RssSamples {
    let mut samples = RssSamples::new(window_start);
    // woken for the next memory sample, and while clients can be moved, for re-discoveries
    let wake = |samples: &RssSamples| {
        let sample = match sampler {
            Some(_) => samples.next.saturating_duration_since(Instant::now()),
            None => Duration::from_secs(3600),
        };
        match failover {
            Some(_) => sample.min(super::failover::RETRY_EVERY),
            None => sample,
        }
    };
    while !sync.done.wait(wake(&samples)) {
        if let Some(s) = sampler {
            samples.take(s, Instant::now());
        }
        if let (Some(r), Some(f)) = (&ctx.routes, failover) {
            r.rediscover(f);
        }
    }
    samples
}

/// The run's memory figures: (baseline, connected, last) RSS samples, the window's samples and
/// the window; None where RSS could not be read.
fn memory(
    (baseline, connected, last): (Option<u64>, Option<u64>, Option<u64>),
    samples: &RssSamples,
    (window_start, window_end): (Instant, Instant),
) -> Option<Memory> {
    match (baseline, connected, crate::stats::memory()) {
        (Some(baseline), Some(connected), Some(end)) => Some(Memory {
            rss_baseline_kib: baseline,
            rss_connected_kib: connected,
            rss_steady_kib: samples
                .steady(window_start, window_end)
                .or(last)
                .unwrap_or(connected),
            peak_rss_kib: end.peak_kib,
        }),
        _ => None,
    }
}

impl Ctx {
    /// The context of a run of `workload` over `proto` to `members` (the run's endpoints first);
    /// `moving`: Some(endpoint slots) when clients can be moved between members. Its `threads`
    /// and `interval` are the caller's to set.
    fn new(
        cfg: &Config,
        workload: &Workload,
        proto: Proto,
        members: &[Endpoint],
        moving: Option<usize>,
        taps: &super::Taps,
    ) -> Result<Ctx, EngineError> {
        let load = &cfg.load;
        // streamed responses may hold many small frames unread: h2's budget for them widens
        let h2 = match workload {
            Workload::Grpc(g) if g.server_streaming() => cfg.h2.for_message_streams(),
            _ => cfg.h2,
        };
        Ok(Ctx {
            proto,
            clients: load.clients,
            stop: load.stop,
            warmup: load.warmup,
            timeout: load.timeout,
            net: cfg.net.clone(),
            h2: crate::client::grpc::H2Config {
                plain: matches!(proto, Proto::H2 | Proto::H3),
                h3: proto == Proto::H3,
                ..h2
            },
            max_body: cfg.max_body,
            pipeline: load.pipeline,
            requests_per_conn: load.requests_per_conn,
            rate: load.rate,
            staged: load.stages.clone(),
            stage_ends: stage_ends(load),
            interval: None,
            connect_rate: load.connect_rate,
            threads: 0,
            layers: if cfg.h2.ledger {
                crate::net::Layers::Http1
            } else {
                crate::net::Layers::Off
            },
            addrs: members.iter().map(|e| e.dest()).collect(),
            authorities: members.iter().map(|e| e.authority.clone()).collect(),
            hosts: members.iter().map(|e| e.host.clone()).collect(),
            routes: moving.map(|slots| super::failover::Routes::new(slots, Instant::now())),
            auth: cfg.auth.clone(),
            work: workload.clone().on(proto)?,
            acks: if workload.acks_by_key() {
                super::Acks::ByKey
            } else if cfg.verify && workload.verifiable() {
                super::Acks::Listed
            } else {
                super::Acks::Dropped
            },
            taps: taps.clone(),
        })
    }
}

/// `--interval`: the sink every worker feeds, and the printer thread that reads it.
type Printer = (
    Option<(Duration, super::interval::Sink)>,
    Option<std::thread::JoinHandle<()>>,
);

/// Starts the `--interval` printer (none without `--interval`).
fn start_printer(
    load: &crate::config::Load,
    bar: Option<&progress::Bar>,
    proto: Proto,
    threads: usize,
) -> Result<Printer, EngineError> {
    Ok(match load.interval {
        Some(iv) => {
            let (tx, rx) = std::sync::mpsc::channel();
            let out = match bar {
                Some(b) => super::interval::Out::Bar(b.handle()),
                None => super::interval::Out::Stderr,
            };
            let stack = proto.name();
            let printer = std::thread::Builder::new()
                .name("wirebench-interval".into())
                .spawn(move || {
                    super::interval::print(rx, threads, iv.every, iv.csv, stack, |l| out.line(l))
                })
                .map_err(EngineError::IntervalPrinter)?;
            (Some((iv.every, tx)), Some(printer))
        }
        None => (None, None),
    })
}

/// The connections a run of `proto` opens to `endpoints` endpoints.
fn connections(proto: Proto, load: &crate::config::Load, endpoints: usize) -> usize {
    match proto {
        Proto::Http if load.pipeline <= 1 => load.clients,
        // pipelined: -c stays the requests in flight, up to --pipeline of them per connection
        Proto::Http => load
            .clients
            .div_ceil(load.pipeline)
            .max(endpoints)
            .min(load.clients),
        // at least one connection per endpoint, so every endpoint gets clients
        Proto::H2 | Proto::Grpc | Proto::H3 => load.conns.max(endpoints).min(load.clients),
    }
}

/// The failover events of `routes`, their times from the start line (`started`); an event
/// whose clients never moved waited until `window_end`.
fn failover_events(
    routes: &super::failover::Routes,
    started: Instant,
    window_end: Instant,
) -> (Vec<crate::stats::FailoverEvent>, crate::stats::Unresolved) {
    let (mut events, unresolved) = routes.finish();
    // from the routes' origin to the start line
    let lead = started.saturating_duration_since(routes.base());
    for e in &mut events {
        e.first_failure = e.first_failure.saturating_sub(lead);
        e.moved = e.moved.map(|t| t.saturating_sub(lead));
        e.first_success = e.first_success.map(|t| t.saturating_sub(lead));
        e.unresolved_until = e.unresolved_until.map(|t| t.saturating_sub(lead));
        if e.to.is_none() {
            let end = window_end.saturating_duration_since(started);
            e.waited = Some(end.saturating_sub(e.first_failure));
        }
    }
    (events, unresolved)
}

/// Starts a worker thread per assignment of `plan`.
fn spawn_workers(
    plan: Vec<super::Assignment>,
    ctx: &Arc<Ctx>,
    sync: &Arc<Meeting>,
    counters: Option<&Arc<[progress::Counters]>>,
) -> Result<Vec<std::thread::JoinHandle<super::thread::WorkerOut>>, EngineError> {
    plan.into_iter()
        .enumerate()
        .map(|(i, a)| {
            let (ctx, sync, progress) = (ctx.clone(), sync.clone(), counters.cloned());
            std::thread::Builder::new()
                .name(format!("wirebench-{}-{i}", ctx.proto.name()))
                .spawn(move || worker_thread(ctx, a, &sync, progress.map(|c| (c, i))))
                .map_err(EngineError::Thread)
        })
        .collect()
}

/// What every worker thread measured, merged.
struct Joined {
    stats: Stats,
    sample: Option<serde_json::Value>,
    cost: WindowCost,
    ended: Option<Instant>,
    pacer_timer: Option<&'static str>,
    /// the loop the threads' HTTP/1.1 clients ran on (None: runtime tasks)
    client_loop: Option<&'static str>,
    stage_cpu: Vec<crate::stats::CpuTimes>,
}

/// Waits for every worker thread and merges what they measured.
fn join(
    handles: Vec<std::thread::JoinHandle<super::thread::WorkerOut>>,
) -> Result<Joined, EngineError> {
    let mut stats = Stats::default();
    let mut sample = None;
    let mut cost = WindowCost {
        kernel: KernelCounts::ZERO,
        outside: KernelCounts::ZERO,
        ..WindowCost::default()
    };
    let mut ended: Option<Instant> = None;
    let mut pacer_timer = None;
    let mut client_loop: Option<&'static str> = None;
    let mut stage_cpu: Vec<crate::stats::CpuTimes> = Vec::new();
    for h in handles {
        let out = h.join().map_err(|_| EngineError::Panicked)?;
        stats.merge(out.stats);
        sample = sample.or(out.sample);
        cost = cost.plus(out.cost);
        ended = ended.max(out.ended);
        pacer_timer = pacer_timer.or(out.pacer_timer);
        client_loop = match (client_loop, out.client_loop) {
            (Some(a), Some(b)) if a != b => Some(crate::stats::CLIENT_LOOP_MIXED),
            (a, b) => a.or(b),
        };
        if stage_cpu.len() < out.stage_cpu.len() {
            stage_cpu.resize(out.stage_cpu.len(), crate::stats::CpuTimes::default());
        }
        for (sum, c) in stage_cpu.iter_mut().zip(out.stage_cpu) {
            *sum = sum.plus(c);
        }
    }
    Ok(Joined {
        stats,
        sample,
        cost,
        ended,
        pacer_timer,
        client_loop,
        stage_cpu,
    })
}

/// Longest single sleep while waiting for `--start-at`: the wall clock is read again after each
/// (NTP may step it), and a setup failure or Ctrl-C ends the wait within it.
const START_POLL: Duration = Duration::from_millis(50);

/// `--start-at`: returns when the start line is due (`at` less the warmup, so the measured
/// window begins at `at`), at once when that has passed, or when setup failed or Ctrl-C came.
fn wait_for_start(at: SystemTime, warmup: Duration, abort: &AtomicBool) {
    let line = at.checked_sub(warmup).unwrap_or(at);
    while !abort.load(Ordering::SeqCst) && !INTERRUPTED.load(Ordering::Relaxed) {
        match line.duration_since(SystemTime::now()) {
            Ok(left) if !left.is_zero() => std::thread::sleep(left.min(START_POLL)),
            _ => return,
        }
    }
}

/// The wall-clock time of `t`, by the distance between the two clocks now.
fn wall_clock(t: Instant) -> SystemTime {
    let (now, wall) = (Instant::now(), SystemTime::now());
    if t <= now {
        wall.checked_sub(now - t).unwrap_or(wall)
    } else {
        wall.checked_add(t - now).unwrap_or(wall)
    }
}

/// Where each stage ends, from the start of the measured window; trailing steps (0s stages)
/// cover nothing and are left out, so the last entry is the last stage with a duration.
fn stage_ends(load: &crate::config::Load) -> Vec<Duration> {
    let Some(st) = &load.stages else {
        return Vec::new();
    };
    let st = st.stages();
    let mut ends: Vec<Duration> = st.ends().into_iter().map(Duration::from_secs_f64).collect();
    while ends.len() > 1 && st.stages[ends.len() - 1].duration.is_zero() {
        ends.pop();
    }
    ends
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_steady_memory_sample_is_the_one_nearest_mid_window() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut s = RssSamples::new(t0);
        s.samples = vec![(ms(0), 10), (ms(40), 20), (ms(90), 30), (ms(140), 40)];
        // window 0..200 ms: middle 100 ms, nearest sample at 90 ms
        assert_eq!(s.steady(ms(0), ms(200)), Some(30));
        // window 20..60 ms: middle 40 ms
        assert_eq!(s.steady(ms(20), ms(60)), Some(20));
        assert_eq!(RssSamples::new(t0).steady(ms(0), ms(10)), None);
    }

    #[test]
    fn rss_samples_stay_bounded_and_thin_out_evenly() {
        let Some(sampler) = RssSampler::open() else {
            panic!("/proc/self/statm");
        };
        let t0 = Instant::now();
        let mut s = RssSamples::new(t0);
        let mut now = t0;
        for _ in 0..10 * RSS_SAMPLES {
            s.take(&sampler, now);
            now += RSS_EVERY;
        }
        assert!(s.samples.len() < RSS_SAMPLES, "{}", s.samples.len());
        // thinned several times: the interval doubled each time
        assert!(s.every >= RSS_EVERY * 8, "{:?}", s.every);
        // what is kept still covers the whole span, evenly (a thinning can leave one gap of
        // up to two intervals where old and new spacings meet)
        let gaps: Vec<Duration> = s.samples.windows(2).map(|w| w[1].0 - w[0].0).collect();
        assert!(gaps.iter().all(|g| *g <= s.every * 2), "{gaps:?}");
        let span = s.samples.last().unwrap().0 - s.samples[0].0;
        assert!(span >= (now - t0) * 9 / 10, "{span:?}");
    }
}
