//! Thread-per-core runner: each thread a current-thread runtime owning its connections, clients
//! and stats; closed loop, bounded by a total or a duration; merged once at the end.

mod grpc;
mod http1;
mod pace;
mod progress;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, LazyLock, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::client::grpc::H2Config;
use crate::config::{Config, Proto, Stop};
use crate::net::NetConfig;
use crate::stats::{At, CpuTimes, Failure, Stats, StatusKey};
use crate::workload::Workload;

/// Set by SIGINT: clients stop sending, in-flight requests finish, the report is printed.
pub static INTERRUPTED: LazyLock<Arc<AtomicBool>> = LazyLock::new(Arc::default);

/// First reconnect delay after a failed connect; doubles up to `BACKOFF_MAX`.
const BACKOFF_MIN: Duration = Duration::from_millis(10);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// What one protocol run measured, merged over all threads.
#[derive(Debug)]
pub struct ProtoRun {
    pub proto: Proto,
    pub clients: usize,
    /// connections opened at start (gRPC: --conns; HTTP/1.1: one per client)
    pub conns: usize,
    pub threads: usize,
    pub stats: Stats,
    /// the measured window: after warmup until the last request finished
    pub elapsed: Duration,
    /// process CPU over the measured window (the in-process server's threads excluded)
    pub cpu: CpuTimes,
    /// the in-process server's CPU over the measured window
    pub server_cpu: Option<Duration>,
    /// the first successful response, as JSON
    pub sample: Option<Value>,
    pub interrupted: bool,
    /// open loop: the target rate (requests/s over all clients)
    pub rate: Option<f64>,
    /// this process's memory: before connecting, once every connection was open, and the peak
    pub memory: Option<Memory>,
}

/// Resident memory of this process around one run (from /proc/self/status).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Memory {
    pub rss_before_kib: u64,
    /// once every connection was open (before the first request)
    pub rss_connected_kib: u64,
    /// VmHWM: the process's peak so far (an in-process server and earlier runs included)
    pub peak_rss_kib: u64,
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
                pace::Take::Expired(t, f) => self.fail(endpoint, t.warm, None, f),
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
    /// (corrected) and from `sent` as well; from `sent` alone in closed loop.
    fn ok(&self, endpoint: usize, turn: Turn, sent: Instant, status: StatusKey) {
        let now = Instant::now();
        let at = self.at(endpoint, now);
        let mut st = self.stats.borrow_mut();
        st.record_ok(at, now - turn.intended.unwrap_or(sent), status);
        if turn.intended.is_some() {
            st.record_uncorrected(now - sent);
        }
        drop(st);
        self.bump_progress(false);
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

    /// Counts a request that found no connection, backs off, and returns false when the client
    /// should stop: then its remaining quota is counted as failed too (total mode only).
    async fn connect_failed(
        &mut self,
        w: &Worker,
        endpoint: usize,
        warm: bool,
        sent: &mut u64,
        quota: u64,
        f: Failure,
    ) -> bool {
        w.fail(endpoint, warm, None, f);
        *sent += u64::from(!warm);
        if self.failed(w).await {
            return true;
        }
        let at = w.at(endpoint, Instant::now());
        w.stats.borrow_mut().record_failures(
            at,
            quota.saturating_sub(*sent),
            Failure::with(
                "connect",
                "gave up: server unreachable for longer than --timeout",
            ),
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

/// Runs one protocol to completion and merges what every thread measured.
pub fn run_proto(
    cfg: &Config,
    proto: Proto,
    server_cpu: Option<&dyn Fn() -> Duration>,
) -> Result<ProtoRun, String> {
    let load = &cfg.load;
    let conns = match proto {
        Proto::Http => load.clients,
        // at least one connection per endpoint, so every endpoint gets clients
        Proto::Grpc => load.conns.max(cfg.endpoints.len()).min(load.clients),
    };
    let plan = assign(
        proto,
        load.clients,
        conns,
        load.threads.max(1),
        cfg.endpoints.len(),
    );
    let threads = plan.len();
    let rss_before = crate::stats::memory();
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
        addrs: cfg.endpoints.iter().map(|e| e.addr).collect(),
        authorities: cfg.endpoints.iter().map(|e| e.authority.clone()).collect(),
        hosts: cfg.endpoints.iter().map(|e| e.host.clone()).collect(),
        auth: cfg.auth.clone(),
        workload: cfg.workload.clone(),
    });
    let start = Arc::new(Barrier::new(threads + 1));
    let finish = Arc::new(Barrier::new(threads + 1));
    let abort = Arc::new(AtomicBool::new(false));
    let setup_error: Arc<std::sync::Mutex<Option<String>>> = Arc::default();
    let t0: Arc<OnceLock<Instant>> = Arc::default();
    let bar = progress::Bar::start(proto.title(), threads, load.stop, load.warmup);
    let counters = bar.as_ref().map(|b| b.counters.clone());

    let handles: Vec<_> = plan
        .into_iter()
        .enumerate()
        .map(|(i, a)| {
            let sync = Shared {
                start: start.clone(),
                finish: finish.clone(),
                abort: abort.clone(),
                setup_error: setup_error.clone(),
                t0: t0.clone(),
                progress: counters.clone().map(|c| (c, i)),
            };
            let ctx = ctx.clone();
            std::thread::Builder::new()
                .name(format!("wirebench-{}-{i}", proto.name()))
                .spawn(move || worker_thread(ctx, a, sync))
                .map_err(|e| format!("cannot start a worker thread: {e}"))
        })
        .collect::<Result<_, _>>()?;

    let server_now = || server_cpu.map_or(Duration::ZERO, |f| f());
    start.wait();
    let started = *t0.get_or_init(Instant::now);
    let rss_connected = crate::stats::memory();
    let mut measure_start = started;
    let mut server_start = server_now();
    if !abort.load(Ordering::SeqCst) && !load.warmup.is_zero() {
        std::thread::sleep((started + load.warmup).saturating_duration_since(Instant::now()));
        measure_start = Instant::now();
        server_start = server_now();
    }
    finish.wait();
    let elapsed = measure_start.elapsed();
    let server_used = server_now().saturating_sub(server_start);
    drop(bar);
    let memory = match (rss_before, rss_connected, crate::stats::memory()) {
        (Some(b), Some(c), Some(end)) => Some(Memory {
            rss_before_kib: b.rss_kib,
            rss_connected_kib: c.rss_kib,
            // VmHWM is synced from per-thread counters lazily: never below what was seen
            peak_rss_kib: end.peak_kib.max(end.rss_kib).max(c.rss_kib),
        }),
        _ => None,
    };

    let mut stats = Stats::default();
    let mut sample = None;
    let mut cpu = CpuTimes::default();
    for h in handles {
        let (s, smp, c) = h
            .join()
            .map_err(|_| "a worker thread panicked (a bug: please report it)".to_string())?;
        stats.merge(s);
        sample = sample.or(smp);
        cpu = cpu.plus(c);
    }
    if let Some(e) = setup_error.lock().ok().and_then(|mut g| g.take()) {
        return Err(e);
    }
    Ok(ProtoRun {
        proto,
        clients: load.clients,
        conns,
        threads,
        stats,
        elapsed,
        cpu,
        server_cpu: server_cpu.map(|_| server_used),
        sample,
        interrupted: INTERRUPTED.load(Ordering::Relaxed),
        rate: load.rate,
        memory,
    })
}

/// What a worker thread shares with the others and the main thread.
struct Shared {
    start: Arc<Barrier>,
    finish: Arc<Barrier>,
    abort: Arc<AtomicBool>,
    setup_error: Arc<std::sync::Mutex<Option<String>>>,
    /// the moment the first thread passed the start line: the schedule's origin
    t0: Arc<OnceLock<Instant>>,
    progress: Option<(Arc<[progress::Counters]>, usize)>,
}

/// One worker thread: set up connections, wait for the start, run clients, wait for the
/// finish line, close connections. Always passes both barriers, so a failure cannot hang the run.
fn worker_thread(ctx: Arc<Ctx>, a: Assignment, sync: Shared) -> (Stats, Option<Value>, CpuTimes) {
    let Shared {
        start,
        finish,
        abort,
        setup_error,
        t0,
        progress,
    } = sync;
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            fail_setup(&abort, &setup_error, format!("cannot start a runtime: {e}"));
            start.wait();
            finish.wait();
            return (Stats::default(), None, CpuTimes::default());
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
            fail_setup(&abort, &setup_error, e);
            None
        }
    };
    start.wait();
    let t0 = *t0.get_or_init(Instant::now);
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
    if let Some(rate) = ctx.rate
        && setup.is_some()
        && !abort.load(Ordering::SeqCst)
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
    let setup = if abort.load(Ordering::SeqCst) {
        None
    } else {
        setup
    };
    // This thread's CPU from the end of warmup (sampled on this thread by a timer task) to the
    // moment its clients are done.
    let cpu_start = Rc::new(std::cell::Cell::new(CpuTimes::thread_now()));
    if !ctx.warmup.is_zero() {
        let at = cpu_start.clone();
        local.spawn_local(async move {
            tokio::time::sleep_until(warmup_end.into()).await;
            at.set(CpuTimes::thread_now());
        });
    }
    let closing = setup.map(|s| local.block_on(&rt, s.run(worker.clone(), &a)));
    let cpu = CpuTimes::thread_now().since(cpu_start.get());
    finish.wait();
    if let Some(closing) = closing {
        local.block_on(&rt, closing.close(&worker));
    }
    let stats = worker.stats.take();
    let sample = worker.sample.take();
    (stats, sample, cpu)
}

fn fail_setup(abort: &AtomicBool, slot: &std::sync::Mutex<Option<String>>, e: String) {
    abort.store(true, Ordering::SeqCst);
    if let Ok(mut g) = slot.lock() {
        g.get_or_insert(e);
    }
}

/// Connections made before the start barrier.
enum Setup {
    Http(Vec<Option<crate::client::http1::Conn>>),
    Grpc(Vec<Rc<grpc::Slot>>),
}

/// What is left to close after the finish barrier.
enum Closing {
    Http,
    Grpc(Vec<Rc<grpc::Slot>>),
}

impl Setup {
    async fn run(self, w: Rc<Worker>, a: &Assignment) -> Closing {
        match self {
            Setup::Http(conns) => {
                http1::run(w, a, conns).await;
                Closing::Http
            }
            Setup::Grpc(slots) => {
                grpc::run(w, a, &slots).await;
                Closing::Grpc(slots)
            }
        }
    }
}

impl Closing {
    async fn close(self, w: &Rc<Worker>) {
        if let Closing::Grpc(slots) = self {
            grpc::close(w, slots).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
