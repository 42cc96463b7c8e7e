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
use crate::stats::perf::{Counter, KernelCounts, ThreadCounters};
use crate::stats::{At, ConnRecord, ConnSet, CpuTimes, IoCalls, Stats, WindowCost};
use crate::workload::Ack;

use super::run::Meeting;
use super::{Assignment, Ctx, INTERRUPTED, grpc, http1, pace, progress};

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
    pub(super) async fn turn(
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
    pub(super) fn at(&self, endpoint: usize, now: Instant) -> At {
        At {
            endpoint,
            offset: now.saturating_duration_since(self.warmup_end),
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
    pub(super) fn ok(&self, endpoint: usize, turn: Turn, sent: Instant, status: StatusKey) {
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

    /// What a successful request acknowledged (the watch puts' revisions); nothing for the
    /// other workloads.
    pub(super) fn acked(&self, ack: Ack) {
        if let Some((key, revision)) = ack {
            self.stats.borrow_mut().record_revision(key, revision);
        }
    }

    /// Counts one failed request (warmup requests only as a number).
    pub(super) fn fail(&self, endpoint: usize, warm: bool, status: Option<StatusKey>, f: Failure) {
        if warm {
            self.warmup_done();
            return;
        }
        let at = self.at(endpoint, Instant::now());
        self.stats.borrow_mut().record_failure(at, status, f);
        self.bump_progress(true);
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
    pub(super) async fn failed(&mut self, w: &Worker) -> bool {
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

/// What a worker thread hands back.
pub(super) struct WorkerOut {
    pub(super) stats: Stats,
    pub(super) sample: Option<Value>,
    pub(super) cost: WindowCost,
    /// when its last client was done (None when it never ran)
    pub(super) ended: Option<Instant>,
    pub(super) pacer_timer: Option<&'static str>,
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
                grpc::run(w, a, &slots).await;
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
