//! One worker thread: its runtime, connections and clients, the turns they take, the
//! measured window read on the thread itself, and the close after it.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::client::http1::pipeline::Pipe;
use crate::client::{BACKOFF_MAX, BACKOFF_MIN};
use crate::config::{Proto, Stop};
use crate::outcome::{Failure, FailureKind, GAVE_UP, StatusKey};
use crate::stats::live::{self, Snapshot};
use crate::stats::perf::{Counter, KernelCounts, ThreadCounters};
use crate::stats::reqlog::{Row, ThreadLog};
use crate::stats::{At, ConnRecord, ConnSet, CpuTimes, IoCalls, Stats, WindowCost};
use crate::workload::Ack;

use super::ramp::{Admit, Gate};
use super::run::Meeting;
use super::{Assignment, Ctx, bidi, grpc, http1, interval, pace, progress, ramp};

/// Per-thread state shared by that thread's client tasks.
pub(super) struct Worker {
    pub(super) ctx: Arc<Ctx>,
    pub(super) stats: RefCell<Stats>,
    /// connections closing in the background (replaced mid-run, or at the end) and the records
    /// of those closed
    pub(super) closer: Rc<Closer>,
    pub(super) sample: RefCell<Option<Value>>,
    /// Measurement starts here; requests started before it are warmup.
    pub(super) warmup_end: Instant,
    /// Duration mode: no new request starts after this.
    pub(super) deadline: Option<Instant>,
    /// open loop: the ticks this thread releases
    pub(super) pacer: Option<pace::Pacer>,
    /// the progress bar's counters for this thread
    pub(super) progress: Option<(Arc<[progress::Counters]>, usize)>,
    /// `--log-requests`: this thread's rows
    pub(super) log: RefCell<Option<ThreadLog>>,
}

/// What the request log (`--log-requests`) keeps of a request besides its outcome: when it
/// started, the connection it went on (its local port), its response's body bytes.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Via {
    /// None: when it failed (a request that found no connection)
    pub(super) started: Option<Instant>,
    /// never sent (an expired open-loop send): no latency
    pub(super) unsent: bool,
    pub(super) port: Option<u16>,
    pub(super) bytes: Option<u64>,
}

impl Via {
    /// A request started at `started` on the connection with local port `port`.
    pub(super) fn on(started: Instant, port: Option<u16>) -> Via {
        Via {
            started: Some(started),
            port,
            ..Via::default()
        }
    }

    /// The same, with a response of `n` body bytes.
    pub(super) fn bytes(self, n: usize) -> Via {
        Via {
            bytes: Some(n as u64),
            ..self
        }
    }

    /// A send due at `at` that never went out.
    pub(super) fn unsent(at: Instant) -> Via {
        Via {
            started: Some(at),
            unsent: true,
            ..Via::default()
        }
    }
}

/// A client's next send: warmup or measured, and (open loop) when it was meant to go.
#[derive(Debug, Clone, Copy)]
pub(super) struct Turn {
    pub(super) warm: bool,
    pub(super) intended: Option<Instant>,
}

impl Worker {
    /// The next send of a client talking to `endpoint`, or None when it should stop. Closed loop:
    /// at once while the run lasts. Open loop: when the schedule releases one.
    pub(super) async fn next(&self, endpoint: usize, sent: u64, quota: u64) -> Option<Turn> {
        let Some(pacer) = &self.pacer else {
            return self.phase(sent, quota).map(|warm| Turn {
                warm,
                intended: None,
            });
        };
        loop {
            if self.ctx.halted() {
                return None;
            }
            match pacer.next(self.ctx.timeout).await? {
                pace::Take::Send(t) => {
                    if !t.warm {
                        let at = self.at(endpoint, t.intended);
                        let lag = t.intended.elapsed();
                        let mut st = self.stats.borrow_mut();
                        st.record_scheduled(at);
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
                        let at = self.at(endpoint, t.intended);
                        let mut st = self.stats.borrow_mut();
                        st.record_scheduled(at);
                        st.expired += 1;
                    }
                    self.fail(endpoint, t.warm, None, f, Via::unsent(t.intended))
                }
            }
        }
    }

    /// The next turn of a client: `again` (a request to send once more) first. With
    /// `--client-stages`, a client outside its stretch calls `paused` and waits first.
    pub(super) async fn turn(
        &self,
        again: &mut Option<Turn>,
        gate: &mut Option<Gate>,
        mut paused: impl FnMut(),
        endpoint: usize,
        sent: u64,
        quota: u64,
    ) -> Option<Turn> {
        if let Some(t) = again.take() {
            return Some(t);
        }
        if let Some(g) = gate {
            loop {
                match g.admit(self) {
                    Admit::Go => break,
                    Admit::Never => return None,
                    Admit::Wait(t) => {
                        paused();
                        // boxed: the sleep would otherwise be in every client's future
                        Box::pin(ramp::pause(self, t)).await;
                        self.phase(0, u64::MAX)?;
                    }
                }
            }
        }
        self.next(endpoint, sent, quota).await
    }

    /// `endpoint`, the offset of `now` into the measured window and its stage.
    pub(super) fn at(&self, endpoint: usize, now: Instant) -> At {
        let offset = now.saturating_duration_since(self.warmup_end);
        let ends = &self.ctx.stage_ends;
        At {
            endpoint,
            offset,
            stage: (!ends.is_empty())
                .then(|| ends.partition_point(|e| *e <= offset).min(ends.len() - 1)),
        }
    }

    pub(super) fn bump_progress(&self, failed: bool) {
        if let Some((c, i)) = &self.progress {
            c[*i].done(failed);
        }
    }

    /// A successful measured request: latency from the intended send time in open loop
    /// (corrected) and from `sent` as well; from `sent` alone in closed loop. The pacer never
    /// releases a send before its intended time; should one still start earlier, the corrected
    /// latency counts from the actual start, so it is never below the uncorrected one.
    /// Returns the latency recorded.
    pub(super) fn ok(
        &self,
        endpoint: usize,
        turn: Turn,
        sent: Instant,
        status: StatusKey,
        via: Via,
    ) -> Duration {
        let now = Instant::now();
        let at = self.at(endpoint, now);
        let from = turn.intended.map_or(sent, |i| i.min(sent));
        let mut st = self.stats.borrow_mut();
        st.record_ok(at, now - from, status);
        if turn.intended.is_some() {
            st.record_uncorrected(now - sent);
        }
        drop(st);
        if let Some(log) = self.log.borrow_mut().as_mut() {
            log.push(Row {
                start_ns: nanos(from.saturating_duration_since(self.warmup_end)),
                latency_ns: Some(nanos(now - from)),
                status: Some(status),
                connection: via.port,
                bytes: via.bytes,
                error: None,
            });
        }
        if let Some(r) = &self.ctx.routes {
            r.succeeded(endpoint);
        }
        self.bump_progress(false);
        now - from
    }

    /// After `ok` or `fail`: a measured request of a workload whose requests have classes
    /// (txn-mixed: reads, writes) counted in its class as well, with the latency `ok` recorded
    /// (None: it failed). Nothing for a warmup request or a workload of one kind.
    pub(super) fn classed(&self, class: Option<u8>, warm: bool, latency: Option<Duration>) {
        if let Some(c) = class
            && !warm
        {
            self.stats.borrow_mut().record_class(c, latency);
        }
    }

    /// `--requests-per-conn`, after `ok`: the same request's latency from `ready`, when its
    /// connection was ready (after the connect it may have waited for).
    pub(super) fn without_setup(&self, ready: Instant) {
        if self.ctx.requests_per_conn.is_some() {
            self.stats
                .borrow_mut()
                .record_without_setup(ready.elapsed());
        }
    }

    /// A successful server-streaming call, after `ok`: its messages and its latency to the
    /// first.
    pub(super) fn streamed(&self, messages: u64, first: Option<Duration>) {
        self.stats.borrow_mut().record_stream(messages, first);
    }

    /// What a successful request acknowledged: the watch puts' revisions by key, or with
    /// `--verify` every put's key index and revision; nothing otherwise.
    pub(super) fn acked(&self, ack: Ack) {
        let Some((key, revision)) = ack else { return };
        match self.ctx.acks {
            super::Acks::ByKey => {
                let at = crate::workload::etcd::epoch_ns(Instant::now());
                let mut st = self.stats.borrow_mut();
                st.record_revision(key, revision);
                st.acked_at.push((revision, at));
            }
            super::Acks::Listed => self.stats.borrow_mut().acks.push((key as u64, revision)),
            super::Acks::Dropped => {}
        }
    }

    /// Counts one failed request (warmup requests only as a number).
    pub(super) fn fail(
        &self,
        endpoint: usize,
        warm: bool,
        status: Option<StatusKey>,
        f: Failure,
        via: Via,
    ) {
        if let Some(r) = &self.ctx.routes {
            r.failed(endpoint, &f, !warm);
        }
        if warm {
            self.warmup_done();
            return;
        }
        let now = Instant::now();
        let at = self.at(endpoint, now);
        if let Some(log) = self.log.borrow_mut().as_mut() {
            let started = via.started.unwrap_or(now);
            log.push(Row {
                start_ns: nanos(started.saturating_duration_since(self.warmup_end)),
                latency_ns: (!via.unsent && via.started.is_some())
                    .then(|| nanos(now.saturating_duration_since(started))),
                status,
                connection: via.port,
                bytes: via.bytes,
                error: Some(f.kind),
            });
        }
        self.stats.borrow_mut().record_failure(at, status, f);
        self.bump_progress(true);
    }

    /// `n` measured requests that were never sent and failed the same way (a quota given up).
    fn fail_unsent(&self, endpoint: usize, n: u64, f: Failure) {
        let now = Instant::now();
        if let Some(log) = self.log.borrow_mut().as_mut() {
            for _ in 0..n {
                log.push(Row {
                    start_ns: nanos(now.saturating_duration_since(self.warmup_end)),
                    latency_ns: None,
                    status: None,
                    connection: None,
                    bytes: None,
                    error: Some(f.kind),
                });
            }
        }
        let at = self.at(endpoint, now);
        self.stats.borrow_mut().record_failures(at, n, f);
    }

    /// A request's bytes went to the socket: measured ones are the window's denominator.
    pub(super) fn wrote(&self, warm: bool) {
        if !warm {
            self.stats.borrow_mut().written += 1;
        }
    }

    pub(super) fn warmup_done(&self) {
        self.stats.borrow_mut().warmup += 1;
        self.bump_progress(false);
    }

    /// Whether a request starting now is warmup, measured, or not to be sent (`None`).
    pub(super) fn phase(&self, sent: u64, quota: u64) -> Option<bool> {
        if self.ctx.halted() {
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

    pub(super) fn keep_sample(&self, f: impl FnOnce() -> Value) {
        let mut s = self.sample.borrow_mut();
        if s.is_none() {
            *s = Some(f());
        }
    }
}

/// Tracks connect failures of one client: capped exponential backoff, and in total mode gives
/// up once the server has been unreachable for longer than the request timeout.
pub(super) struct Reconnect {
    pub(super) delay: Duration,
    pub(super) down_since: Option<Instant>,
}

impl Reconnect {
    pub(super) fn new() -> Self {
        Reconnect {
            delay: BACKOFF_MIN,
            down_since: None,
        }
    }

    pub(super) fn ok(&mut self) {
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
    pub(super) async fn connect_failed(
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
            w.fail(endpoint, warm, None, f, Via::default());
            *sent += u64::from(!warm);
        } else if let Some(r) = &w.ctx.routes {
            r.failed(endpoint, &f, false);
        }
        if self.failed(w).await {
            return true;
        }
        w.fail_unsent(
            endpoint,
            quota.saturating_sub(*sent),
            Failure::with(FailureKind::Connect, GAVE_UP),
        );
        false
    }

    /// After a failed connect: sleeps the backoff; returns false when the client should give up.
    pub(super) async fn failed(&mut self, w: &Worker) -> bool {
        let since = *self.down_since.get_or_insert_with(Instant::now);
        // Open loop: the schedule bounds the run, and every tick counts as a failure meanwhile.
        if w.deadline.is_none() && w.pacer.is_none() && since.elapsed() >= w.ctx.timeout {
            return false;
        }
        let mut delay = self.delay;
        // clients that can be moved try again soon: the slot may point elsewhere by then
        if w.ctx.routes.is_some() {
            delay = delay.min(super::failover::RETRY_EVERY);
        }
        if let Some(d) = w.deadline {
            delay = delay.min(d.saturating_duration_since(Instant::now()));
        }
        tokio::time::sleep(delay).await;
        self.delay = (self.delay * 2).min(BACKOFF_MAX);
        true
    }
}

/// What a worker thread hands back.
pub(super) struct WorkerOut {
    pub(super) stats: Stats,
    pub(super) sample: Option<Value>,
    pub(super) cost: WindowCost,
    /// when its last client was done (None when it never ran)
    pub(super) ended: Option<Instant>,
    pub(super) pacer_timer: Option<&'static str>,
    /// `--stages` / `--client-stages`: this thread's CPU in each stage it reached
    pub(super) stage_cpu: Vec<CpuTimes>,
}

/// A thread's counters at one moment: CPU, kernel counters, socket data calls.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Reading {
    pub(super) cpu: CpuTimes,
    pub(super) kernel: KernelCounts,
    pub(super) io: IoCalls,
}

impl Reading {
    pub(super) fn now(counters: &ThreadCounters) -> Reading {
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
pub(super) fn worker_thread(
    ctx: Arc<Ctx>,
    a: Assignment,
    sync: &Meeting,
    progress: Option<(Arc<[progress::Counters]>, usize)>,
) -> WorkerOut {
    // Opened first, so that the counts outside the window cover this thread's whole life.
    let counters = Rc::new(ThreadCounters::open());
    let born = counters.read();
    let idle = |sync: &Meeting| {
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
            if let Some((_, sink)) = &ctx.interval {
                let _ = sink.send(interval::Part {
                    thread: a.thread,
                    k: 0,
                    end: Duration::ZERO,
                    slot: crate::stats::TimeSlot::default(),
                    bytes_out: 0,
                    bytes_in: 0,
                    last: true,
                    ran: false,
                });
            }
            idle(sync);
            return WorkerOut {
                stats: Stats::default(),
                sample: None,
                cost: WindowCost::default(),
                ended: None,
                pacer_timer: None,
                stage_cpu: Vec::new(),
            };
        }
    };
    let local = tokio::task::LocalSet::new();
    let proto = ctx.proto;
    let setup = local.block_on(&rt, async {
        match proto {
            Proto::Http if ctx.pipeline > 1 => http1::setup_pipes(&ctx, &a).await.map(Setup::Pipes),
            Proto::Http => http1::setup(&ctx, &a).await.map(Setup::Http),
            Proto::H2 | Proto::Grpc => grpc::setup(&ctx, &a).await.map(Setup::Grpc),
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
        closer: Rc::default(),
        sample: RefCell::new(None),
        warmup_end,
        deadline: match ctx.stop {
            Stop::Duration(d) => Some(warmup_end + d),
            Stop::Total(_) => None,
        },
        pacer: ctx.rate.map(|_| pace::Pacer::default()),
        progress,
        log: RefCell::new(ctx.taps.log.as_ref().map(|l| l.thread(ctx.proto))),
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
            profile: match &ctx.staged {
                Some(crate::config::Staged::Rate(st)) => pace::Profile::Staged(st.clone()),
                _ => pace::Profile::Constant(rate),
            },
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
                    || w.ctx.halted(),
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
    // stages: this thread's CPU clock at each stage's end (read on the thread by a timer task)
    let stage_marks: Rc<RefCell<Vec<CpuTimes>>> = Rc::default();
    let window_over: Rc<Cell<bool>> = Rc::default();
    if ran && !ctx.stage_ends.is_empty() {
        let (marks, over, ends) = (
            stage_marks.clone(),
            window_over.clone(),
            ctx.stage_ends.clone(),
        );
        local.spawn_local(async move {
            for e in &ends[..ends.len() - 1] {
                tokio::time::sleep_until((warmup_end + *e).into()).await;
                if over.get() {
                    return;
                }
                marks.borrow_mut().push(CpuTimes::thread_now());
            }
        });
    }
    let intervals = ctx.interval.as_ref().map(|(every, sink)| {
        Intervals::start(&local, &worker, a.thread, *every, sink.clone(), ran)
    });
    if ran && let Some(board) = &ctx.taps.live {
        live_task(
            &local,
            &worker,
            board,
            a.thread,
            &counters,
            &window_start,
            &window_over,
        );
    }
    let closing = setup.map(|s| local.block_on(&rt, s.run(worker.clone(), &a)));
    let window_end = Reading::now(&counters);
    let ended = ran.then(Instant::now);
    window_over.set(true);
    if let Some(i) = intervals {
        i.finish(&worker);
    }
    if ran && let Some(board) = &ctx.taps.live {
        // the last snapshot: the window's end, as the report will have it
        let snap = snapshot(&worker, window_start.get(), window_end);
        board.post(ctx.proto, a.thread, snap);
    }
    if let Some(log) = worker.log.borrow_mut().take() {
        worker.stats.borrow_mut().log = log.finish();
    }
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
    // each stage's CPU: between the marks, the first from the window's start, the last to
    // its end (a stage the run did not reach has none)
    let mut stage_cpu = Vec::new();
    if !ctx.stage_ends.is_empty() {
        let mut from = start.cpu;
        for m in stage_marks.borrow().iter().copied() {
            stage_cpu.push(m.since(from));
            from = m;
        }
        stage_cpu.push(window_end.cpu.since(from));
    }
    WorkerOut {
        stats: worker.stats.take(),
        sample: worker.sample.take(),
        cost,
        ended,
        pacer_timer,
        stage_cpu,
    }
}

/// A duration in ns (saturating: 584 years).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// How often a worker posts its live snapshot (`--metrics-addr`).
const LIVE_EVERY: Duration = Duration::from_millis(500);

/// The thread's figures now: outcomes from its stats, bytes and connections from its sockets,
/// CPU and syscalls since the window's start (`start`) to `now`.
fn snapshot(w: &Worker, start: Reading, now: Reading) -> Snapshot {
    let io = crate::net::thread_io_calls();
    Snapshot::of(
        &w.stats.borrow(),
        live::Io {
            bytes_out: io.bytes_out,
            bytes_in: io.bytes_in,
            syscalls: now.kernel.since(start.kernel).syscalls,
            cpu: now.cpu.since(start.cpu),
            connections: crate::net::thread_connects(),
        },
    )
}

/// `--metrics-addr` on one worker thread: a timer task posts the thread's snapshot every
/// `LIVE_EVERY` of the measured window (never on the request path: a copy of its counters and
/// a pass over its latency histogram); the caller posts the last one at the window's end.
fn live_task(
    local: &tokio::task::LocalSet,
    w: &Rc<Worker>,
    board: &Arc<live::Board>,
    thread: usize,
    counters: &Rc<ThreadCounters>,
    window_start: &Rc<Cell<Reading>>,
    over: &Rc<Cell<bool>>,
) {
    let (w, board, counters, start, over) = (
        w.clone(),
        board.clone(),
        counters.clone(),
        window_start.clone(),
        over.clone(),
    );
    local.spawn_local(async move {
        let mut next = w.warmup_end;
        loop {
            next += LIVE_EVERY;
            tokio::time::sleep_until(next.into()).await;
            if over.get() {
                return;
            }
            let snap = snapshot(&w, start.get(), Reading::now(&counters));
            board.post(w.ctx.proto, thread, snap);
        }
    });
}

/// `--interval` on one worker thread: a timer task hands `Stats::interval` to the printer at
/// each interval's end; `finish` sends the last, partial one.
struct Intervals {
    thread: usize,
    sink: interval::Sink,
    /// the interval now open
    k: Rc<Cell<u64>>,
    /// the socket counters when it opened
    io: Rc<Cell<IoCalls>>,
    done: Rc<Cell<bool>>,
    ran: bool,
}

impl Intervals {
    fn start(
        local: &tokio::task::LocalSet,
        w: &Rc<Worker>,
        thread: usize,
        every: Duration,
        sink: interval::Sink,
        ran: bool,
    ) -> Intervals {
        let me = Intervals {
            thread,
            sink,
            k: Rc::default(),
            io: Rc::new(Cell::new(crate::net::thread_io_calls())),
            done: Rc::default(),
            ran,
        };
        if !ran {
            return me;
        }
        w.stats.borrow_mut().interval = Some(crate::stats::TimeSlot::precise());
        let (w, sink, k, io, done) = (
            w.clone(),
            me.sink.clone(),
            me.k.clone(),
            me.io.clone(),
            me.done.clone(),
        );
        local.spawn_local(async move {
            tokio::time::sleep_until(w.warmup_end.into()).await;
            io.set(crate::net::thread_io_calls());
            loop {
                let end = w.warmup_end + every * (k.get() as u32 + 1);
                tokio::time::sleep_until(end.into()).await;
                if done.get() {
                    return;
                }
                let part = Intervals::part_of(&w, thread, &k, &io, false, true);
                if sink.send(part).is_err() {
                    return;
                }
                k.set(k.get() + 1);
            }
        });
        me
    }

    /// Takes the thread's open interval as a part for the printer.
    fn part_of(
        w: &Worker,
        thread: usize,
        k: &Cell<u64>,
        io: &Cell<IoCalls>,
        last: bool,
        ran: bool,
    ) -> interval::Part {
        let slot = w
            .stats
            .borrow_mut()
            .interval
            .replace(crate::stats::TimeSlot::precise())
            .unwrap_or_default();
        let now = crate::net::thread_io_calls();
        let moved = now.since(io.replace(now));
        interval::Part {
            thread,
            k: k.get(),
            end: Instant::now().saturating_duration_since(w.warmup_end),
            slot,
            bytes_out: moved.bytes_out,
            bytes_in: moved.bytes_in,
            last,
            ran,
        }
    }

    /// The last, partial interval once the clients are done; the timer task sends no more.
    fn finish(self, w: &Worker) {
        self.done.set(true);
        let part = Intervals::part_of(w, self.thread, &self.k, &self.io, true, self.ran);
        let _ = self.sink.send(part);
    }
}

pub(super) fn fail_setup(sync: &Meeting, e: String) {
    sync.abort.store(true, Ordering::SeqCst);
    if let Ok(mut g) = sync.setup_error.lock() {
        g.get_or_insert(e);
    }
}

/// Connections made before the start barrier.
pub(super) enum Setup {
    Http(Vec<Option<crate::client::http1::Conn>>),
    /// pipelined HTTP/1.1
    Pipes(Vec<Rc<Pipe>>),
    Grpc(Vec<Rc<grpc::Slot>>),
}

/// What is left to close after the measured window.
pub(super) enum Closing {
    Http(Vec<crate::client::http1::Conn>),
    Pipes(Vec<Rc<Pipe>>),
    Grpc(Vec<Rc<grpc::Slot>>),
}

/// How long one connection's close exchange may take; connections close concurrently.
pub(crate) const CLOSE_BOUND: Duration = crate::client::grpc::CLOSE_BOUND;

impl Setup {
    pub(super) async fn run(self, w: Rc<Worker>, a: &Assignment) -> Closing {
        match self {
            Setup::Http(conns) => Closing::Http(http1::run(w, a, conns).await),
            Setup::Pipes(pipes) => {
                http1::run_pipes(w, a, &pipes).await;
                Closing::Pipes(pipes)
            }
            Setup::Grpc(slots) => {
                // etcd's lease keepalives: a bidi stream per client, off the unary path
                if bidi::runs(&w.ctx.workload, w.ctx.proto) {
                    grpc::run(w, a, &slots, bidi::client).await;
                } else {
                    grpc::run(w, a, &slots, grpc::client).await;
                }
                Closing::Grpc(slots)
            }
        }
    }
}

impl Closing {
    /// Closes every connection at once (each may wait for its server's last bytes), and the
    /// ones replaced mid-run that are still closing; their records join the stats.
    pub(super) async fn close(self, w: &Rc<Worker>) {
        match self {
            Closing::Http(conns) => {
                for conn in conns {
                    w.closer.spawn(conn.close(CLOSE_BOUND));
                }
            }
            Closing::Pipes(pipes) => http1::close_pipes(w, pipes),
            Closing::Grpc(slots) => grpc::close(w, slots),
        }
        w.closer.all_closed().await;
        let (records, folded_connect) = w.closer.records.take().into_records();
        let mut st = w.stats.borrow_mut();
        st.conns = records;
        st.folded_connect = folded_connect;
    }
}

/// Closes connections in the background, each as its own task, and keeps their records (a
/// bounded set, `ConnSet`): a run that opens a connection per request holds no task or record
/// per connection.
#[derive(Default)]
pub(super) struct Closer {
    pending: Cell<usize>,
    done: tokio::sync::Notify,
    records: RefCell<ConnSet>,
}

impl Closer {
    pub(super) fn spawn(self: &Rc<Self>, close: impl Future<Output = ConnRecord> + 'static) {
        self.pending.set(self.pending.get() + 1);
        let me = self.clone();
        tokio::task::spawn_local(async move {
            let rec = close.await;
            me.records.borrow_mut().add(rec);
            me.pending.set(me.pending.get() - 1);
            if me.pending.get() == 0 {
                me.done.notify_waiters();
            }
        });
    }

    /// Waits until every connection handed to `spawn` is closed.
    pub(super) async fn all_closed(&self) {
        loop {
            let done = self.done.notified();
            if self.pending.get() == 0 {
                return;
            }
            done.await;
        }
    }
}
