//! One worker thread's life: its runtime, the connections its stack opens before the start
//! line, its clients over the measured window (read on the thread itself), the live and
//! interval tasks beside them, and the close after it.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::client::http1::pipeline::Pipe;
use crate::config::Stop;
use crate::stats::live::{self, Snapshot};
use crate::stats::perf::{Counter, KernelCounts, ThreadCounters};
use crate::stats::{CpuTimes, IoCalls, Stats, WindowCost};
use crate::workload::{ClientWork, Http1Work, OnStack, OverH2};

use super::closer::CLOSE_BOUND;
use super::meeting::Meeting;
use super::worker::Worker;
use super::{
    Assignment, Ctx, EngineError, bidi, grpc, http1, http1_loop, interval, pace, pipe_loop,
    pipeline, progress,
};

/// What a worker thread hands back.
pub(super) struct WorkerOut {
    pub(super) stats: Stats,
    pub(super) sample: Option<Value>,
    pub(super) cost: WindowCost,
    /// when its last client was done (None when it never ran)
    pub(super) ended: Option<Instant>,
    pub(super) pacer_timer: Option<&'static str>,
    /// the loop its HTTP/1.1 clients ran on (`stats::CLIENT_LOOP_*`; None: runtime tasks)
    pub(super) client_loop: Option<&'static str>,
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
    let rt = crate::net::enter_link(&ctx.net).and_then(|()| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    });
    sync.ready.wait();
    sync.go.wait();
    let rt = match rt {
        Ok(rt) => rt,
        Err(e) => return without_runtime(&ctx, &a, sync, e),
    };
    let local = tokio::task::LocalSet::new();
    let setup = local.block_on(&rt, async {
        match &ctx.work {
            OnStack::Http1(t) if ctx.pipeline > 1 => pipeline::setup(&ctx, &a)
                .await
                .map(|p| Setup::Pipes(p, t.clone())),
            OnStack::Http1(t) => http1::setup(&ctx, &a)
                .await
                .map(|c| Setup::Http(c, t.clone())),
            OnStack::H2(t) => grpc::setup(&ctx, &a)
                .await
                .map(|s| Setup::Grpc(s, t.clone())),
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
        measuring: Cell::new(false),
        deadline: match ctx.stop {
            Stop::Duration(d) => Some(warmup_end + d),
            Stop::Total(_) => None,
        },
        pacer: ctx.rate.map(|_| pace::Pacer::default()),
        progress,
        log: RefCell::new(ctx.taps.log.as_ref().map(|l| l.thread(ctx.proto))),
        client_loop: Cell::new(None),
    });
    let setup = if sync.abort.load(Ordering::SeqCst) {
        None
    } else {
        setup
    };
    if let Some(rate) = ctx.rate
        && setup.is_some()
    {
        spawn_pacer(&local, &worker, rate, a.thread, t0);
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
    let own_loop =
        matches!(&setup, Some(Setup::Http(..) | Setup::Pipes(..))) && http1_loop::eligible(&ctx);
    let closing = setup.map(|s| local.block_on(&rt, s.run(worker.clone(), &a, own_loop)));
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
    let stage_cpu = stage_cpu(&ctx, &stage_marks.borrow(), start.cpu, window_end.cpu);
    WorkerOut {
        stats: worker.stats.take(),
        sample: worker.sample.take(),
        cost,
        ended,
        pacer_timer,
        client_loop: worker.client_loop.get(),
        stage_cpu,
    }
}

/// A thread whose runtime could not start: it says so, sends its last (empty) interval and
/// passes the remaining meeting points.
fn without_runtime(ctx: &Ctx, a: &Assignment, sync: &Meeting, e: std::io::Error) -> WorkerOut {
    fail_setup(sync, EngineError::Runtime(e));
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
    sync.start.wait();
    sync.done.arrive();
    sync.close.wait();
    WorkerOut {
        stats: Stats::default(),
        sample: None,
        cost: WindowCost::default(),
        ended: None,
        pacer_timer: None,
        client_loop: None,
        stage_cpu: Vec::new(),
    }
}

/// `--rate`: the task that releases this thread's sends on schedule (`rate` in all, this
/// thread's share by its index).
fn spawn_pacer(
    local: &tokio::task::LocalSet,
    worker: &Rc<Worker>,
    rate: f64,
    thread: usize,
    t0: Instant,
) {
    let ctx = &worker.ctx;
    let schedule = pace::Schedule {
        t0,
        profile: match &ctx.staged {
            Some(crate::config::Staged::Rate(st)) => pace::Profile::Staged(st.clone()),
            _ => pace::Profile::Constant(rate),
        },
        index: thread as u64,
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
                || w.stats.borrow_mut().overdue += 1,
            )
            .await;
        }
    });
}

/// Each stage's CPU: between the `marks` taken at the stages' ends, the first from the
/// window's start, the last to its end (a stage the run did not reach has none).
fn stage_cpu(ctx: &Ctx, marks: &[CpuTimes], start: CpuTimes, end: CpuTimes) -> Vec<CpuTimes> {
    let mut stage_cpu = Vec::new();
    if !ctx.stage_ends.is_empty() {
        let mut from = start;
        for m in marks.iter().copied() {
            stage_cpu.push(m.since(from));
            from = m;
        }
        stage_cpu.push(end.since(from));
    }
    stage_cpu
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

pub(super) fn fail_setup(sync: &Meeting, e: EngineError) {
    sync.abort.store(true, Ordering::SeqCst);
    if let Ok(mut g) = sync.setup_error.lock() {
        g.get_or_insert(e);
    }
}

/// Connections made before the start barrier.
/// This thread's connections, opened before the start line, and the workload its clients
/// copy.
pub(super) enum Setup {
    Http(Vec<Option<crate::client::http1::Conn>>, Http1Work),
    /// pipelined HTTP/1.1: the connections, `a.conns` in order
    Pipes(Vec<crate::client::http1::Conn>, Http1Work),
    Grpc(Vec<Rc<grpc::ConnSlot>>, OverH2),
}

/// What is left to close after the measured window.
pub(super) enum Closing {
    Http(Vec<crate::client::http1::Conn>),
    Pipes(Vec<Rc<Pipe>>),
    Grpc(Vec<Rc<grpc::ConnSlot>>),
}

impl Setup {
    /// `own_loop`: HTTP/1.1 clients go on the thread's readiness loop (`http1_loop::eligible`).
    pub(super) async fn run(self, w: Rc<Worker>, a: &Assignment, own_loop: bool) -> Closing {
        match self {
            Setup::Http(conns, work) if own_loop => {
                Closing::Http(http1_loop::run(w, a, conns, &work).await)
            }
            Setup::Http(conns, work) => Closing::Http(http1::run(w, a, conns, &work).await),
            Setup::Pipes(conns, work) => {
                if own_loop && let Some(core) = http1_loop::Core::new(&w, conns.len()) {
                    return Closing::Http(pipe_loop::run(core, a, conns, &work).await);
                }
                let pipes = pipeline::pipes(&w.ctx, a, conns);
                pipeline::run(w, a, &pipes, &work).await;
                Closing::Pipes(pipes)
            }
            Setup::Grpc(slots, work) => {
                match &work {
                    // lease keepalives: a bidi stream per client, off the unary path
                    OverH2::Grpc(g) if g.bidi() => {
                        let open = |w: &Worker, id: usize, slot| {
                            bidi::Keepalive::new(w, slot, g.for_client(id as u64))
                        };
                        grpc::run(w, a, &slots, open).await;
                    }
                    _ => {
                        let open = |w: &Worker, id: usize, slot| {
                            grpc::Unary::new(w, slot, work.for_client(id as u64))
                        };
                        grpc::run(w, a, &slots, open).await;
                    }
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
            Closing::Pipes(pipes) => pipeline::close(w, pipes),
            Closing::Grpc(slots) => grpc::close(w, slots),
        }
        w.closer.all_closed().await;
        let (records, folded_connect) = w.closer.take_records().into_records();
        let mut st = w.stats.borrow_mut();
        st.conns = records;
        st.folded_connect = folded_connect;
    }
}
