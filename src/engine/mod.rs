//! Thread-per-core runner: each thread a current-thread runtime owning its connections, clients
//! and stats; closed loop, bounded by a total or a duration; merged once at the end.

mod grpc;
mod http1;
mod pace;
mod progress;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Condvar, LazyLock, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::client::{BACKOFF_MAX, BACKOFF_MIN};
use crate::config::{Config, Endpoint, Proto, Stop};
use crate::net::{H2Config, NetConfig};
use crate::outcome::{Failure, FailureKind, GAVE_UP, StatusKey};
use crate::stats::perf::{Counter, KernelCounts, ThreadCounters};
use crate::stats::{At, CpuTimes, IoCalls, Memory, ProtoRun, RssSampler, Stats, WindowCost};
use crate::workload::{Ack, Workload};

/// Set by SIGINT: clients stop sending, in-flight requests finish, the report is printed.
pub static INTERRUPTED: LazyLock<Arc<AtomicBool>> = LazyLock::new(Arc::default);

/// How often the main thread samples RSS during the measured window.
const RSS_EVERY: Duration = Duration::from_millis(20);
/// Most RSS samples kept; past this every other one is dropped (and the interval doubles).
const RSS_SAMPLES: usize = 1024;

/// RSS samples over the window, thinned to stay bounded.
struct RssSamples {
    every: Duration,
    next: Instant,
    samples: Vec<(Instant, u64)>,
}

impl RssSamples {
    fn new(start: Instant) -> RssSamples {
        RssSamples {
            every: RSS_EVERY,
            next: start,
            samples: Vec::new(),
        }
    }

    fn take(&mut self, sampler: &RssSampler, now: Instant) {
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
    fn steady(&self, start: Instant, end: Instant) -> Option<u64> {
        let mid = start + end.saturating_duration_since(start) / 2;
        self.samples
            .iter()
            .min_by_key(|(t, _)| t.max(&mid).duration_since(*t.min(&mid)))
            .map(|&(_, kib)| kib)
    }
}

/// The workers tell the main thread they are done; it waits with a timeout to sample meanwhile.
struct Latch {
    left: Mutex<usize>,
    cv: Condvar,
}

impl Latch {
    fn new(n: usize) -> Latch {
        Latch {
            left: Mutex::new(n),
            cv: Condvar::new(),
        }
    }

    fn arrive(&self) {
        let mut left = self.left.lock().unwrap_or_else(|e| e.into_inner());
        *left = left.saturating_sub(1);
        if *left == 0 {
            self.cv.notify_all();
        }
    }

    /// Waits at most `d`; true once every worker has arrived.
    fn wait(&self, d: Duration) -> bool {
        let left = self.left.lock().unwrap_or_else(|e| e.into_inner());
        let (left, _) = self
            .cv
            .wait_timeout_while(left, d, |n| *n > 0)
            .unwrap_or_else(|e| e.into_inner());
        *left == 0
    }
}

/// Read-only run parameters shared by all worker threads.
struct Ctx {
    proto: Proto,
    clients: usize,
    stop: Stop,
    warmup: Duration,
    timeout: Duration,
    net: NetConfig,
    h2: H2Config,
    max_body: u64,
    /// open loop: requests/s over all threads
    rate: Option<f64>,
    /// connections opened per second at setup (all threads together)
    connect_rate: Option<f64>,
    /// worker threads that have clients
    threads: usize,
    /// HTTP/1.1 layer accounting on or off (h2 carries its own switch in `h2`)
    layers: crate::net::Layers,
    addrs: Vec<std::net::SocketAddr>,
    /// `host:port` per endpoint (re-authentication requests)
    authorities: Vec<String>,
    /// host per endpoint (TLS server name)
    hosts: Vec<String>,
    /// etcd credentials, to re-authenticate on "invalid auth token"
    auth: Option<(String, String)>,
    workload: Workload,
}

/// The clients (and, for gRPC, connections) one thread owns.
#[derive(Debug, Default)]
struct Assignment {
    /// this thread's index among the threads that have clients
    thread: usize,
    /// (client id, connection index into `conns` for gRPC, endpoint for HTTP/1.1)
    clients: Vec<(usize, usize)>,
    /// gRPC connections: endpoint of each
    conns: Vec<usize>,
}

/// Per-thread state shared by that thread's client tasks.
struct Worker {
    ctx: Arc<Ctx>,
    stats: RefCell<Stats>,
    /// gRPC connections being closed in the background (replaced mid-run)
    closing: RefCell<Vec<tokio::task::JoinHandle<crate::stats::ConnRecord>>>,
    sample: RefCell<Option<Value>>,
    /// Measurement starts here; requests started before it are warmup.
    warmup_end: Instant,
    /// Duration mode: no new request starts after this.
    deadline: Option<Instant>,
    /// open loop: the ticks this thread releases
    pacer: Option<pace::Pacer>,
    /// the progress bar's counters for this thread
    progress: Option<(Arc<[progress::Counters]>, usize)>,
}

/// A client's next send: warmup or measured, and (open loop) when it was meant to go.
#[derive(Debug, Clone, Copy)]
struct Turn {
    warm: bool,
    intended: Option<Instant>,
}

impl Worker {
    /// The next send of a client talking to `endpoint`, or None when it should stop. Closed loop:
    /// at once while the run lasts. Open loop: when the schedule releases one.
    async fn next(&self, endpoint: usize, sent: u64, quota: u64) -> Option<Turn> {
        let Some(pacer) = &self.pacer else {
            return self.phase(sent, quota).map(|warm| Turn {
                warm,
                intended: None,
            });
        };
        loop {
            if INTERRUPTED.load(Ordering::Relaxed) {
                return None;
            }
            match pacer.next(self.ctx.timeout).await? {
                pace::Take::Send(t) => {
                    if !t.warm {
                        let lag = t.intended.elapsed();
                        let mut st = self.stats.borrow_mut();
                        st.max_send_lag = st.max_send_lag.max(lag);
                        st.lagged_sends += 1;
                        st.send_lag_sum += lag;
                    }
                    return Some(Turn {
                        warm: t.warm,
                        intended: Some(t.intended),
                    });
                }
                pace::Take::Expired(t, f) => {
                    if !t.warm {
                        self.stats.borrow_mut().expired += 1;
                    }
                    self.fail(endpoint, t.warm, None, f)
                }
            }
        }
    }

    /// The next turn of a client: `again` (a request to send once more) first.
    async fn turn(
        &self,
        again: &mut Option<Turn>,
        endpoint: usize,
        sent: u64,
        quota: u64,
    ) -> Option<Turn> {
        match again.take() {
            Some(t) => Some(t),
            None => self.next(endpoint, sent, quota).await,
        }
    }

    /// `endpoint` and the offset of `now` into the measured window.
    fn at(&self, endpoint: usize, now: Instant) -> At {
        At {
            endpoint,
            offset: now.saturating_duration_since(self.warmup_end),
        }
    }

    fn bump_progress(&self, failed: bool) {
        if let Some((c, i)) = &self.progress {
            c[*i].done(failed);
        }
    }

    /// A successful measured request: latency from the intended send time in open loop
    /// (corrected) and from `sent` as well; from `sent` alone in closed loop. The pacer never
    /// releases a send before its intended time; should one still start earlier, the corrected
    /// latency counts from the actual start, so it is never below the uncorrected one.
    fn ok(&self, endpoint: usize, turn: Turn, sent: Instant, status: StatusKey) {
        let now = Instant::now();
        let at = self.at(endpoint, now);
        let from = turn.intended.map_or(sent, |i| i.min(sent));
        let mut st = self.stats.borrow_mut();
        st.record_ok(at, now - from, status);
        if turn.intended.is_some() {
            st.record_uncorrected(now - sent);
        }
        drop(st);
        self.bump_progress(false);
    }

    /// What a successful request acknowledged (the watch puts' revisions); nothing for the
    /// other workloads.
    fn acked(&self, ack: Ack) {
        if let Some((key, revision)) = ack {
            self.stats.borrow_mut().record_revision(key, revision);
        }
    }

    /// Counts one failed request (warmup requests only as a number).
    fn fail(&self, endpoint: usize, warm: bool, status: Option<StatusKey>, f: Failure) {
        if warm {
            self.warmup_done();
            return;
        }
        let at = self.at(endpoint, Instant::now());
        self.stats.borrow_mut().record_failure(at, status, f);
        self.bump_progress(true);
    }

    /// A request's bytes went to the socket: measured ones are the window's denominator.
    fn wrote(&self, warm: bool) {
        if !warm {
            self.stats.borrow_mut().written += 1;
        }
    }

    fn warmup_done(&self) {
        self.stats.borrow_mut().warmup += 1;
        self.bump_progress(false);
    }

    /// Whether a request starting now is warmup, measured, or not to be sent (`None`).
    fn phase(&self, sent: u64, quota: u64) -> Option<bool> {
        if INTERRUPTED.load(Ordering::Relaxed) {
            return None;
        }
        let now = Instant::now();
        if now < self.warmup_end {
            return Some(true);
        }
        match self.deadline {
            Some(d) if now >= d => None,
            None if sent >= quota => None,
            _ => Some(false),
        }
    }

    fn keep_sample(&self, f: impl FnOnce() -> Value) {
        let mut s = self.sample.borrow_mut();
        if s.is_none() {
            *s = Some(f());
        }
    }
}

/// Tracks connect failures of one client: capped exponential backoff, and in total mode gives
/// up once the server has been unreachable for longer than the request timeout.
struct Reconnect {
    delay: Duration,
    down_since: Option<Instant>,
}

impl Reconnect {
    fn new() -> Self {
        Reconnect {
            delay: BACKOFF_MIN,
            down_since: None,
        }
    }

    fn ok(&mut self) {
        self.delay = BACKOFF_MIN;
        self.down_since = None;
    }

    /// Counts a turn that found no connection, backs off, and returns false when the client
    /// should stop: then its remaining quota is counted as failed too (total mode only).
    ///
    /// In total mode the turn is one of the N requests and in open loop one scheduled send:
    /// both fail as `connect`. In closed-loop duration mode there is no fixed number of
    /// requests, and how many turns fit in the run would only measure the backoff, so the turn
    /// is no request: it counts as a connect failure alone.
    async fn connect_failed(
        &mut self,
        w: &Worker,
        endpoint: usize,
        warm: bool,
        sent: &mut u64,
        quota: u64,
        f: Failure,
    ) -> bool {
        {
            let mut st = w.stats.borrow_mut();
            st.connect_failures += 1;
            st.connect_error = Some(f.clone());
        }
        if w.deadline.is_none() || w.pacer.is_some() {
            w.fail(endpoint, warm, None, f);
            *sent += u64::from(!warm);
        }
        if self.failed(w).await {
            return true;
        }
        let at = w.at(endpoint, Instant::now());
        w.stats.borrow_mut().record_failures(
            at,
            quota.saturating_sub(*sent),
            Failure::with(FailureKind::Connect, GAVE_UP),
        );
        false
    }

    /// After a failed connect: sleeps the backoff; returns false when the client should give up.
    async fn failed(&mut self, w: &Worker) -> bool {
        let since = *self.down_since.get_or_insert_with(Instant::now);
        // Open loop: the schedule bounds the run, and every tick counts as a failure meanwhile.
        if w.deadline.is_none() && w.pacer.is_none() && since.elapsed() >= w.ctx.timeout {
            return false;
        }
        let mut delay = self.delay;
        if let Some(d) = w.deadline {
            delay = delay.min(d.saturating_duration_since(Instant::now()));
        }
        tokio::time::sleep(delay).await;
        self.delay = (self.delay * 2).min(BACKOFF_MAX);
        true
    }
}

/// Opens connection `j` of this thread no earlier than `--connect-rate` allows: connection g
/// (over all threads) at `t0 + g / rate`.
async fn connect_turn(ctx: &Ctx, a: &Assignment, j: usize, t0: Instant) {
    if let Some(rate) = ctx.connect_rate {
        let g = (j * ctx.threads + a.thread) as f64;
        tokio::time::sleep_until((t0 + Duration::from_secs_f64(g / rate)).into()).await;
    }
}

/// Number of measured requests client `id` of `clients` sends for `-n total`: the requests
/// with index id, id + clients, id + 2*clients, ... below total. Open loop: the schedule decides.
fn quota(ctx: &Ctx, id: usize) -> u64 {
    if ctx.rate.is_some() {
        return u64::MAX;
    }
    quota_of(ctx.stop, id, ctx.clients)
}

fn quota_of(stop: Stop, id: usize, clients: usize) -> u64 {
    match stop {
        Stop::Total(n) => {
            let (id, c) = (id as u64, clients as u64);
            if id >= n { 0 } else { (n - id).div_ceil(c) }
        }
        Stop::Duration(_) => u64::MAX,
    }
}

/// Splits clients (and gRPC connections) over threads; returns only non-empty assignments.
fn assign(
    proto: Proto,
    clients: usize,
    conns: usize,
    threads: usize,
    endpoints: usize,
) -> Vec<Assignment> {
    let mut out: Vec<Assignment> = (0..threads).map(|_| Assignment::default()).collect();
    match proto {
        Proto::Http => {
            for c in 0..clients {
                out[c % threads].clients.push((c, c % endpoints));
            }
        }
        Proto::Grpc => {
            // connection k lives on thread k % threads; client c uses connection c % conns
            let mut local = vec![0usize; conns];
            for (k, slot) in local.iter_mut().enumerate() {
                let t = &mut out[k % threads];
                *slot = t.conns.len();
                t.conns.push(k % endpoints);
            }
            for c in 0..clients {
                let k = c % conns;
                out[k % threads].clients.push((c, local[k]));
            }
        }
    }
    out.retain(|a| !a.clients.is_empty());
    for (i, a) in out.iter_mut().enumerate() {
        a.thread = i;
    }
    out
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
    server_cpu: Option<&dyn Fn() -> Result<Duration, String>>,
) -> Result<ProtoRun, String> {
    let load = &cfg.load;
    let conns = match proto {
        Proto::Http => load.clients,
        // at least one connection per endpoint, so every endpoint gets clients
        Proto::Grpc => load.conns.max(endpoints.len()).min(load.clients),
    };
    let plan = assign(
        proto,
        load.clients,
        conns,
        load.threads.max(1),
        endpoints.len(),
    );
    let threads = plan.len();
    let ctx = Arc::new(Ctx {
        proto,
        clients: load.clients,
        stop: load.stop,
        warmup: load.warmup,
        timeout: load.timeout,
        net: cfg.net.clone(),
        h2: cfg.h2,
        max_body: cfg.max_body,
        rate: load.rate,
        connect_rate: load.connect_rate,
        threads,
        layers: if cfg.h2.ledger {
            crate::net::Layers::Http1
        } else {
            crate::net::Layers::Off
        },
        addrs: endpoints.iter().map(|e| e.addr).collect(),
        authorities: endpoints.iter().map(|e| e.authority.clone()).collect(),
        hosts: endpoints.iter().map(|e| e.host.clone()).collect(),
        auth: cfg.auth.clone(),
        workload: workload.clone(),
    });
    let sync = Arc::new(Sync::new(threads));
    let bar = progress::Bar::start(proto.title(), threads, load.stop, load.warmup);
    let counters = bar.as_ref().map(|b| b.counters.clone());

    let handles: Vec<_> = plan
        .into_iter()
        .enumerate()
        .map(|(i, a)| {
            let (ctx, sync, progress) = (ctx.clone(), sync.clone(), counters.clone());
            std::thread::Builder::new()
                .name(format!("wirebench-{}-{i}", proto.name()))
                .spawn(move || worker_thread(ctx, a, &sync, progress.map(|c| (c, i))))
                .map_err(|e| format!("cannot start a worker thread: {e}"))
        })
        .collect::<Result<_, _>>()?;

    // Memory: the baseline once every worker thread and runtime exists, before any connect.
    let sampler = RssSampler::open();
    let rss = || sampler.as_ref().and_then(RssSampler::rss_kib);
    sync.ready.wait();
    let rss_baseline = rss();
    sync.go.wait();
    sync.start.wait();
    let started = *sync.t0.get_or_init(Instant::now);
    let rss_connected = rss();
    // The measured window starts where the workers start it: at the end of the warmup.
    let window_start = started + load.warmup;
    let aborted = sync.abort.load(Ordering::SeqCst);
    if !aborted {
        std::thread::sleep(window_start.saturating_duration_since(Instant::now()));
    }
    let server_start = server_cpu.map(|f| f());
    let mut samples = RssSamples::new(window_start);
    if let Some(s) = &sampler {
        while !sync
            .done
            .wait(samples.next.saturating_duration_since(Instant::now()))
        {
            samples.take(s, Instant::now());
        }
    } else {
        while !sync.done.wait(Duration::from_secs(3600)) {}
    }
    let server_end = server_cpu.map(|f| f());
    let last_sample = rss();
    sync.close.wait();
    drop(bar);

    let mut stats = Stats::default();
    let mut sample = None;
    let mut cost = WindowCost {
        kernel: KernelCounts::ZERO,
        outside: KernelCounts::ZERO,
        ..WindowCost::default()
    };
    let mut ended: Option<Instant> = None;
    let mut pacer_timer = None;
    for h in handles {
        let out = h
            .join()
            .map_err(|_| "a worker thread panicked (a bug: please report it)".to_string())?;
        stats.merge(out.stats);
        sample = sample.or(out.sample);
        cost = cost.plus(out.cost);
        ended = ended.max(out.ended);
        pacer_timer = pacer_timer.or(out.pacer_timer);
    }
    if let Some(e) = sync.setup_error.lock().ok().and_then(|mut g| g.take()) {
        return Err(e);
    }
    let window_end = ended.unwrap_or(window_start).max(window_start);
    let server_cpu = match (server_start, server_end) {
        (Some(Ok(a)), Some(Ok(b))) => Some(Ok(b.saturating_sub(a))),
        (Some(Err(e)), _) | (_, Some(Err(e))) => Some(Err(e)),
        _ => None,
    };
    let memory = match (rss_baseline, rss_connected, crate::stats::memory()) {
        (Some(baseline), Some(connected), Some(end)) => Some(Memory {
            rss_baseline_kib: baseline,
            rss_connected_kib: connected,
            rss_steady_kib: samples
                .steady(window_start, window_end)
                .or(last_sample)
                .unwrap_or(connected),
            peak_rss_kib: end.peak_kib,
        }),
        _ => None,
    };
    Ok(ProtoRun {
        proto,
        clients: load.clients,
        conns,
        threads,
        stats,
        window_start,
        elapsed: window_end - window_start,
        cost,
        server_cpu,
        sample,
        interrupted: INTERRUPTED.load(Ordering::Relaxed),
        rate: load.rate,
        pacer_timer,
        memory,
    })
}

/// The meeting points of the main thread and the workers, in order.
struct Sync {
    /// every worker has its runtime: the main thread reads the memory baseline
    ready: Barrier,
    /// the workers may connect
    go: Barrier,
    /// every connection is open: the run starts
    start: Barrier,
    /// every worker's clients are done (the main thread samples memory until then)
    done: Latch,
    /// the main thread has read its end figures: the workers may close their connections
    close: Barrier,
    abort: AtomicBool,
    setup_error: Mutex<Option<String>>,
    /// the moment the first thread passed the start line: the schedule's origin
    t0: OnceLock<Instant>,
}

impl Sync {
    fn new(threads: usize) -> Sync {
        Sync {
            ready: Barrier::new(threads + 1),
            go: Barrier::new(threads + 1),
            start: Barrier::new(threads + 1),
            done: Latch::new(threads),
            close: Barrier::new(threads + 1),
            abort: AtomicBool::new(false),
            setup_error: Mutex::new(None),
            t0: OnceLock::new(),
        }
    }
}

/// What a worker thread hands back.
struct WorkerOut {
    stats: Stats,
    sample: Option<Value>,
    cost: WindowCost,
    /// when its last client was done (None when it never ran)
    ended: Option<Instant>,
    pacer_timer: Option<&'static str>,
}

/// A thread's counters at one moment: CPU, kernel counters, socket data calls.
#[derive(Debug, Clone, Copy, Default)]
struct Reading {
    cpu: CpuTimes,
    kernel: KernelCounts,
    io: IoCalls,
}

impl Reading {
    fn now(counters: &ThreadCounters) -> Reading {
        Reading {
            cpu: CpuTimes::thread_now(),
            kernel: counters.read(),
            io: crate::net::thread_io_calls(),
        }
    }
}

/// One worker thread: set up connections, wait for the start, run clients, report done, wait
/// for the main thread, close connections. Always passes every meeting point, so a failure
/// cannot hang the run.
fn worker_thread(
    ctx: Arc<Ctx>,
    a: Assignment,
    sync: &Sync,
    progress: Option<(Arc<[progress::Counters]>, usize)>,
) -> WorkerOut {
    // Opened first, so that the counts outside the window cover this thread's whole life.
    let counters = Rc::new(ThreadCounters::open());
    let born = counters.read();
    let idle = |sync: &Sync| {
        sync.start.wait();
        sync.done.arrive();
        sync.close.wait();
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    sync.ready.wait();
    sync.go.wait();
    let rt = match rt {
        Ok(rt) => rt,
        Err(e) => {
            fail_setup(sync, format!("cannot start a runtime: {e}"));
            idle(sync);
            return WorkerOut {
                stats: Stats::default(),
                sample: None,
                cost: WindowCost::default(),
                ended: None,
                pacer_timer: None,
            };
        }
    };
    let local = tokio::task::LocalSet::new();
    let proto = ctx.proto;
    let setup = local.block_on(&rt, async {
        match proto {
            Proto::Http => http1::setup(&ctx, &a).await.map(Setup::Http),
            Proto::Grpc => grpc::setup(&ctx, &a).await.map(Setup::Grpc),
        }
    });
    let setup = match setup {
        Ok(s) => Some(s),
        Err(e) => {
            fail_setup(sync, e);
            None
        }
    };
    sync.start.wait();
    let t0 = *sync.t0.get_or_init(Instant::now);
    let warmup_end = t0 + ctx.warmup;
    let worker = Rc::new(Worker {
        ctx: ctx.clone(),
        stats: RefCell::new(Stats::default()),
        closing: RefCell::new(Vec::new()),
        sample: RefCell::new(None),
        warmup_end,
        deadline: match ctx.stop {
            Stop::Duration(d) => Some(warmup_end + d),
            Stop::Total(_) => None,
        },
        pacer: ctx.rate.map(|_| pace::Pacer::default()),
        progress,
    });
    let setup = if sync.abort.load(Ordering::SeqCst) {
        None
    } else {
        setup
    };
    if let Some(rate) = ctx.rate
        && setup.is_some()
    {
        let schedule = pace::Schedule {
            t0,
            rate,
            index: a.thread as u64,
            stride: ctx.threads as u64,
            warmup: ctx.warmup,
            stop: ctx.stop,
        };
        let w = worker.clone();
        local.spawn_local(async move {
            if let Some(p) = &w.pacer {
                p.dispatch(
                    schedule,
                    || INTERRUPTED.load(Ordering::Relaxed),
                    || w.stats.borrow_mut().late += 1,
                )
                .await;
            }
        });
    }
    // The window: from the end of warmup (read on this thread by a timer task) to the moment
    // its clients are done.
    let window_start = Rc::new(Cell::new(Reading::now(&counters)));
    if !ctx.warmup.is_zero() {
        let (at, counters) = (window_start.clone(), counters.clone());
        local.spawn_local(async move {
            tokio::time::sleep_until(warmup_end.into()).await;
            at.set(Reading::now(&counters));
        });
    }
    let ran = setup.is_some();
    let closing = setup.map(|s| local.block_on(&rt, s.run(worker.clone(), &a)));
    let window_end = Reading::now(&counters);
    let ended = ran.then(Instant::now);
    sync.done.arrive();
    sync.close.wait();
    if let Some(closing) = closing {
        local.block_on(&rt, closing.close(&worker));
    }
    let dead = counters.read();
    let start = window_start.get();
    let window = window_end.kernel.since(start.kernel);
    let cost = WindowCost {
        cpu: window_end.cpu.since(start.cpu),
        kernel: window,
        outside: dead.since(born).since(window),
        io: window_end.io.since(start.io),
        kernel_unavailable: counters.unavailable(Counter::Syscalls).map(str::to_string),
    };
    let pacer_timer = worker.pacer.as_ref().and_then(pace::Pacer::timer);
    WorkerOut {
        stats: worker.stats.take(),
        sample: worker.sample.take(),
        cost,
        ended,
        pacer_timer,
    }
}

fn fail_setup(sync: &Sync, e: String) {
    sync.abort.store(true, Ordering::SeqCst);
    if let Ok(mut g) = sync.setup_error.lock() {
        g.get_or_insert(e);
    }
}

/// Connections made before the start barrier.
enum Setup {
    Http(Vec<Option<crate::client::http1::Conn>>),
    Grpc(Vec<Rc<grpc::Slot>>),
}

/// What is left to close after the measured window.
enum Closing {
    Http(Vec<crate::client::http1::Conn>),
    Grpc(Vec<Rc<grpc::Slot>>),
}

/// How long one connection's close exchange may take; connections close concurrently.
pub(crate) const CLOSE_BOUND: Duration = crate::client::grpc::CLOSE_BOUND;

impl Setup {
    async fn run(self, w: Rc<Worker>, a: &Assignment) -> Closing {
        match self {
            Setup::Http(conns) => Closing::Http(http1::run(w, a, conns).await),
            Setup::Grpc(slots) => {
                grpc::run(w, a, &slots).await;
                Closing::Grpc(slots)
            }
        }
    }
}

impl Closing {
    /// Closes every connection at once (each may wait for its server's last bytes), and the
    /// ones replaced mid-run that are still closing; their records join the stats.
    async fn close(self, w: &Rc<Worker>) {
        match self {
            Closing::Http(conns) => {
                let mut c = w.closing.borrow_mut();
                for conn in conns {
                    c.push(tokio::task::spawn_local(conn.close(CLOSE_BOUND)));
                }
            }
            Closing::Grpc(slots) => grpc::close(w, slots),
        }
        let closing: Vec<_> = w.closing.borrow_mut().drain(..).collect();
        for handle in closing {
            if let Ok(rec) = handle.await {
                w.stats.borrow_mut().conns.push(rec);
            }
        }
    }
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

    #[test]
    fn the_latch_opens_when_every_worker_arrived() {
        let latch = Arc::new(Latch::new(2));
        assert!(!latch.wait(Duration::from_millis(1)));
        latch.arrive();
        assert!(!latch.wait(Duration::from_millis(1)));
        let l = latch.clone();
        let t = std::thread::spawn(move || l.arrive());
        assert!(latch.wait(Duration::from_secs(10)));
        t.join().unwrap();
    }

    #[test]
    fn quotas_add_up_to_total() {
        for (n, c) in [(20_000u64, 10usize), (7, 3), (2, 5), (0, 4), (1, 1)] {
            let sum: u64 = (0..c).map(|id| quota_of(Stop::Total(n), id, c)).sum();
            assert_eq!(sum, n, "n={n} c={c}");
        }
    }

    #[test]
    fn assignment_spreads_clients_and_conns() {
        let a = assign(Proto::Grpc, 10, 3, 2, 1);
        let conns: usize = a.iter().map(|t| t.conns.len()).sum();
        let clients: usize = a.iter().map(|t| t.clients.len()).sum();
        assert_eq!((conns, clients), (3, 10));
        for t in &a {
            for &(_, k) in &t.clients {
                assert!(k < t.conns.len());
            }
        }
        // one connection: everything on one thread, the other thread unused
        let a = assign(Proto::Grpc, 8, 1, 2, 1);
        assert_eq!(a.len(), 1);
        let a = assign(Proto::Http, 5, 5, 2, 2);
        assert_eq!(a.iter().map(|t| t.clients.len()).sum::<usize>(), 5);
        assert_eq!(a[0].clients[1], (2, 0));
    }
}
