//! HTTP/1.1 clients on one readiness loop per thread: the thread waits on an epoll set of its
//! own for all its clients' sockets, and each event advances that client's request in place
//! (write, read, parse, check, record, the next request), with no task, waker or future per
//! request. The same `Client`s, `Conn`s and recording as the tokio clients (`http1.rs`); what
//! the loop does not do itself runs as runtime tasks beside it: a client that needs a
//! connection (a reconnect and its backoff), connections closing, and the thread's timer tasks
//! (the window's start, intervals, live figures). The loop yields to the runtime between batches
//! of events, at least every `TICK`, and after every batch while a connect is under way.
//!
//! Where the kernel gives the thread an io_uring with deferred task work (`net::uring`, Linux
//! 6.1+) and `--io-loop` is `auto`, the unpipelined clients' reads go through it instead of
//! epoll: once a request is written, a read is queued into its connection's buffer, and one
//! `io_uring_enter` submits the reads and waits for their completions (`Ready::Landed`), where
//! epoll costs a wait and then a read. Writes stay plain `send` calls.
//!
//! It runs the closed loop over plain sockets (TCP or Unix): runs with TLS, `--rate`, stages,
//! failover, credentials or `--requests-per-conn` keep one runtime task per client, as does
//! `--io-loop tokio`. The loop itself (`drive`) moves `Lines`: here a client and its
//! connection, in `pipe_loop` a pipelined connection and the clients sharing it.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::client::http1::{Conn, Landing, Response};
use crate::net::epoll::{Epoll, Event};
use crate::net::uring::{Completion, Uring};
use crate::outcome::{Failure, FailureKind};
use crate::workload::{ClientWork, Http1Work};

use super::http1::{self, Answer, Client, Sent, record, retire};
use super::plan::quota;
use super::session::Session;
use super::worker::{Reconnect, Trace, Turn, Worker};
use super::{Assignment, Ctx};

/// The longest the loop waits for its sockets before it turns the runtime.
const TICK: Duration = Duration::from_millis(1);
/// The longest wait while responses flow (the last wait returned events) and the runtime has
/// nothing of the loop's to do: a wait that ends with an event (in microseconds under load)
/// costs the same whatever its timeout, but a short timeout is a timer the kernel arms and
/// cancels on every sleep (measured: 1.1 µs more system time a request at 10 connections with
/// a 1 ms timeout on every wait). The runtime still gets its turn at least every `TICK` while
/// events come, and a gap between events, during which the loop's sockets do nothing, can delay
/// it by as long as the gap, up to this.
const LONG_WAIT: Duration = Duration::from_millis(50);
/// Events one wait returns at most.
const BATCH: usize = 256;
/// A ring operation's token: the line's index, with this bit for a wait for writability.
const WRITABLE: u64 = 1 << 62;

/// Whether this run's HTTP/1.1 clients go on the readiness loop.
pub(super) fn eligible(ctx: &Ctx) -> bool {
    ctx.net.own_loop
        && ctx.net.tls.is_none()
        && ctx.rate.is_none()
        && ctx.staged.is_none()
        && ctx.routes.is_none()
        && ctx.auth.is_none()
        && ctx.requests_per_conn.is_none()
}

/// What the loop knows of a socket's readiness when it moves its client on.
#[derive(Debug, Clone, Copy)]
pub(super) enum Ready {
    /// an event just reported it (`hangup`: the peer closed its side, or the socket failed)
    Reported { hangup: bool },
    /// nothing new: after the client's own write, or when it rejoins the loop
    Unknown,
    /// the ring's read for it completed: its result (bytes, 0 at the end, or -errno)
    Landed(i32),
    /// the ring's wait for writability completed
    Writable,
}

impl Ready {
    /// `Conn::read_now`'s `fresh` and `hangup`.
    pub(super) fn flags(self) -> (bool, bool) {
        match self {
            Ready::Reported { hangup } => (true, hangup),
            Ready::Unknown => (false, false),
            Ready::Landed(_) | Ready::Writable => (true, false),
        }
    }
}

/// Where a client is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// between requests (only inside `advance`)
    Idle,
    /// the request at hand: `off` bytes of it written, all of them once `written`
    Busy { off: usize, written: bool },
    /// on a runtime task, getting a connection
    Away,
    /// no more requests
    Done,
}

/// One client on the loop.
struct Slot {
    /// None while away
    client: Option<Client>,
    reconnect: Reconnect,
    /// the next request's number
    idx: u64,
    /// measured requests sent
    sent: u64,
    quota: u64,
    state: State,
    /// the request at hand
    turn: Turn,
    started: Instant,
    head_len: usize,
    /// the connection's requests written before it
    before: u64,
    /// the ring's operation in flight for it (its token): until its completion, the ring may
    /// write into the connection's buffer
    in_ring: Option<u64>,
}

/// A client back from its runtime task: with a connection and its next turn, or done.
struct Returned {
    slot: usize,
    client: Client,
    reconnect: Reconnect,
    sent: u64,
    turn: Option<Turn>,
}

/// What the loop and the tasks of the lines away from it share: the lines back (`R`: a
/// client with its connection, a pipelined connection with its clients).
pub(super) struct Back<R> {
    pub(super) returned: RefCell<Vec<R>>,
    /// a line came back
    pub(super) notify: tokio::sync::Notify,
    /// lines inside a connect now
    pub(super) connecting: Cell<usize>,
}

impl<R> Default for Back<R> {
    fn default() -> Self {
        Back {
            returned: RefCell::new(Vec::new()),
            notify: tokio::sync::Notify::new(),
            connecting: Cell::new(0),
        }
    }
}

impl<R> Back<R> {
    /// A line away from the loop is connecting while `fut` runs.
    pub(super) async fn connecting<T>(&self, fut: impl std::future::Future<Output = T>) -> T {
        self.connecting.set(self.connecting.get() + 1);
        let out = fut.await;
        self.connecting.set(self.connecting.get() - 1);
        out
    }

    /// A line comes back to the loop.
    pub(super) fn back(&self, r: R) {
        self.returned.borrow_mut().push(r);
        self.notify.notify_one();
    }
}

/// What the loop and its lines share: the epoll set (a line's token is its index), the worker,
/// the lines' way back, and the loop's counts.
pub(super) struct Core<R> {
    pub(super) ep: Epoll,
    /// reads through a ring instead of readiness (`http1_loop` only): then `ep` is unused
    pub(super) ring: Option<Uring>,
    pub(super) w: Rc<Worker>,
    pub(super) back: Rc<Back<R>>,
    /// lines not done
    pub(super) live: usize,
    /// lines away on a runtime task
    pub(super) away: usize,
    /// how often requests are checked against the timeout
    pub(super) scan_every: Duration,
    /// the latest clock read of a request's start since the loop last looked: the loop's "now"
    /// after a batch that started one (no clock read of its own then)
    pub(super) last_start: Option<Instant>,
    /// when the ring's last wait returned: the completion time of every response its
    /// completions brought (all their bytes had landed by then), one clock read for the batch
    /// (a completion a cancel took early is handed over, and stamped, at the next wait)
    pub(super) landed_at: Instant,
}

impl<R> Core<R> {
    /// A loop's core with `lines` lines; None when the thread cannot have an epoll set.
    pub(super) fn new(w: &Rc<Worker>, lines: usize) -> Option<Core<R>> {
        let ep = Epoll::new(BATCH).ok()?;
        Some(Core {
            ep,
            ring: None,
            w: w.clone(),
            back: Rc::default(),
            live: lines,
            away: 0,
            scan_every: (w.ctx.timeout / 16).clamp(TICK, Duration::from_millis(50)),
            last_start: None,
            landed_at: Instant::now(),
        })
    }
}

/// A turn whose new connection the loop cannot watch (the kernel refused it a place in the
/// epoll set): it fails as a connect would.
pub(super) fn unwatched(w: &Worker, endpoint: usize, warm: bool) {
    w.fail(
        endpoint,
        warm,
        None,
        Failure::with(FailureKind::Connect, "no room in the epoll set"),
        Trace::default(),
    );
}

/// What the loop moves: lines of sockets, each under its index in the epoll set.
pub(super) trait Lines {
    /// a line coming back from its runtime task
    type Returned;
    fn core(&mut self) -> &mut Core<Self::Returned>;
    /// Moves line `i` on as far as it goes without waiting (`ready`: what its socket reported).
    fn advance(&mut self, i: usize, ready: Ready);
    /// Requests past their timeout fail.
    fn expire(&mut self, now: Instant);
    /// The lines back from their tasks rejoin the loop (or are done).
    fn take_returned(&mut self);
}

/// Runs the loop until every line is done: waits on the epoll set, moves the lines its events
/// name, turns the runtime at each tick (and while a connect is under way), scans for timeouts.
pub(super) async fn drive<L: Lines>(lines: &mut L) {
    let mut events = Vec::with_capacity(BATCH);
    let mut done: Vec<Completion> = Vec::with_capacity(BATCH);
    let mut now = Instant::now();
    let mut next_tick = now + TICK;
    let mut next_scan = now + lines.core().scan_every;
    let mut wait_failed = false;
    // the last wait returned events
    let mut flowing = false;
    loop {
        let core = lines.core();
        if core.live == 0 {
            break;
        }
        if core.live == core.away {
            // nobody on the loop: the runtime alone, until a line comes back
            let back = core.back.clone();
            back.notify.notified().await;
            lines.take_returned();
            continue;
        }
        let connecting = core.back.connecting.get() > 0;
        let runtime_busy = core.away > 0 || core.w.closer.pending() > 0;
        let timeout = if connecting {
            0
        } else if flowing && !runtime_busy {
            LONG_WAIT.as_millis() as i32
        } else {
            // at least a millisecond: epoll counts in milliseconds
            next_tick
                .saturating_duration_since(now)
                .as_millis()
                .clamp(1, TICK.as_millis()) as i32
        };
        let waited = match core.ring.as_mut() {
            Some(ring) => ring
                .wait(Duration::from_millis(timeout as u64), &mut done)
                .map_err(|e| ("io_uring_enter", e)),
            None => core
                .ep
                .wait(timeout, &mut events)
                .map_err(|e| ("epoll_wait", e)),
        };
        if let Err((call, e)) = waited {
            // not expected of a valid set or ring and buffer: said once, and the loop goes on
            // at the tick (the timeout scan still bounds every request)
            if !std::mem::replace(&mut wait_failed, true) {
                eprintln!("wirebench: {call}: {e}");
            }
            std::thread::sleep(TICK);
        }
        flowing = !events.is_empty() || !done.is_empty();
        if !done.is_empty() {
            lines.core().landed_at = Instant::now();
        }
        for &Event { token, hangup } in &events {
            lines.advance(token as usize, Ready::Reported { hangup });
        }
        for &Completion { token, res } in &done {
            match token & WRITABLE {
                0 => lines.advance(token as usize, Ready::Landed(res)),
                _ => lines.advance((token & !WRITABLE) as usize, Ready::Writable),
            }
        }
        let core = lines.core();
        now = core.last_start.take().unwrap_or_else(Instant::now);
        if connecting || core.w.closer.pending() > 0 || now >= next_tick {
            tokio::task::yield_now().await;
            lines.take_returned();
            next_tick = now + TICK;
        }
        if now >= next_scan {
            lines.expire(now);
            next_scan = now + lines.core().scan_every;
        }
    }
}

/// The most connections a thread's loop reads through an io_uring (`--io-loop auto`); with more
/// it waits on epoll. Each ring read arms a poll on its socket, and the server's answer
/// completes it in the server's context: from 30 connections a thread on, client and server
/// each spent more a request than on epoll, whose set keeps one poll armed per socket
/// (docs/RESULTS.md: the client 2-3% more at 30 and 50 connections, 5-7% at 100; at 10 and 16
/// within about 1% either way, with a syscall less a request).
const RING_MOST_CONNS: usize = 16;

/// Runs the thread's clients on the loop; returns the connections still open, to be closed
/// after the window. Falls back to a task per client when the thread cannot have an epoll set.
///
/// The loop is the one future its thread's runtime polls besides the helpers' tasks: it blocks
/// in `epoll_wait` inside its poll (see `TICK` and `LONG_WAIT`), and yields to the runtime at
/// each tick, which then runs the helpers' tasks and turns its own driver without waiting (a
/// yield is deferred to the runtime's next turn).
pub(super) async fn run(
    w: Rc<Worker>,
    a: &Assignment,
    conns: Vec<Option<Conn>>,
    work: &Http1Work,
) -> Vec<Conn> {
    let Some(mut core) = Core::new(&w, conns.len()) else {
        return http1::run(w, a, conns, work).await;
    };
    let ctx = w.ctx.clone();
    if ctx.net.ring && conns.len() <= RING_MOST_CONNS {
        // None where the kernel has no ring with deferred task work: epoll then
        core.ring = Uring::new(conns.len()).ok();
    }
    w.client_loop.set(Some(match core.ring {
        Some(_) => crate::stats::CLIENT_LOOP_URING,
        None => crate::stats::CLIENT_LOOP_EPOLL,
    }));
    let slots = a
        .clients
        .iter()
        .zip(conns)
        .map(|(&(id, endpoint), conn)| Slot {
            client: Some(Client::new(&w, endpoint, conn, work.for_client(id as u64))),
            reconnect: Reconnect::new(),
            idx: id as u64,
            sent: 0,
            quota: quota(&ctx, id),
            state: State::Idle,
            turn: Turn {
                warm: false,
                intended: None,
            },
            started: Instant::now(),
            head_len: 0,
            before: 0,
            in_ring: None,
        })
        .collect::<Vec<_>>();
    let mut lp = Loop { core, slots };
    lp.run().await
}

/// The core goes first when the loop is dropped: a ring still holding reads (only when the
/// thread unwinds) cancels them and waits before the buffers they write into go.
struct Loop {
    core: Core<Returned>,
    slots: Vec<Slot>,
}

impl Lines for Loop {
    type Returned = Returned;

    fn core(&mut self) -> &mut Core<Returned> {
        &mut self.core
    }

    /// Moves client `i` on as far as it goes without waiting: the request at hand written and
    /// read (`ready`: what its socket reported), recorded, the next one sent, until
    /// the socket has nothing more or the client is done or away.
    fn advance(&mut self, i: usize, mut ready: Ready) {
        if matches!(ready, Ready::Landed(_) | Ready::Writable) {
            self.slots[i].in_ring = None;
        }
        // the clock reading the phase made (a deadline, the warmup), the request's start
        let mut now = None;
        loop {
            let s = &mut self.slots[i];
            match s.state {
                State::Idle => match self.core.w.phase_with(s.sent, s.quota, &mut now) {
                    None => {
                        s.state = State::Done;
                        self.core.live -= 1;
                        return;
                    }
                    Some(warm) => {
                        let turn = Turn {
                            warm,
                            intended: None,
                        };
                        if !self.start(i, turn, now.take()) {
                            self.away(i);
                            return;
                        }
                    }
                },
                State::Busy { .. } => match self.step(i, ready) {
                    None => return,
                    Some(true) => self.slots[i].state = State::Idle,
                    Some(false) => {
                        self.away(i);
                        return;
                    }
                },
                State::Away | State::Done => return,
            }
            ready = Ready::Unknown;
        }
    }

    /// Requests past their timeout fail as `timeout`, and their connections go (a late response
    /// would be read as the next one's).
    fn expire(&mut self, now: Instant) {
        let timeout = self.core.w.ctx.timeout;
        for i in 0..self.slots.len() {
            let s = &self.slots[i];
            if !matches!(s.state, State::Busy { .. }) || now < s.started + timeout {
                continue;
            }
            let (Some(client), Some(c)) = (
                s.client.as_ref(),
                s.client.as_ref().and_then(|c| c.conn.as_ref()),
            ) else {
                continue;
            };
            let at = Sent::ready_at(client.endpoint, s.turn, s.started, Some(c.local_port()));
            record(&self.core.w, &client.work, at, Answer::TimedOut, false);
            self.after(i, false);
            self.away(i);
        }
    }

    /// The clients back from their tasks rejoin the loop (their next request sent) or are done.
    fn take_returned(&mut self) {
        let returned = std::mem::take(&mut *self.core.back.returned.borrow_mut());
        for r in returned {
            self.core.away -= 1;
            let s = &mut self.slots[r.slot];
            s.client = Some(r.client);
            s.reconnect = r.reconnect;
            s.sent = r.sent;
            match r.turn {
                None => {
                    s.state = State::Done;
                    self.core.live -= 1;
                }
                Some(turn) if self.watch(r.slot) => {
                    if self.start(r.slot, turn, None) {
                        self.advance(r.slot, Ready::Unknown);
                    } else {
                        self.away(r.slot);
                    }
                }
                Some(turn) => {
                    // the client tries again
                    let s = &mut self.slots[r.slot];
                    s.sent += u64::from(!turn.warm);
                    s.state = State::Idle;
                    let endpoint = s.client.as_ref().map_or(0, |c| c.endpoint);
                    unwatched(&self.core.w, endpoint, turn.warm);
                    self.away(r.slot);
                }
            }
        }
    }
}

impl Loop {
    async fn run(&mut self) -> Vec<Conn> {
        for i in 0..self.slots.len() {
            if self.watch(i) {
                self.advance(i, Ready::Unknown);
            } else {
                self.away(i);
            }
        }
        drive(self).await;
        self.slots
            .iter_mut()
            .filter_map(|s| s.client.as_mut().and_then(|c| c.conn.take()))
            .collect()
    }

    /// Puts slot `i`'s connection in the epoll set; false when it has none (or the set refused
    /// it: the client then gets a connection the runtime's way).
    fn watch(&mut self, i: usize) -> bool {
        let Some(fd) = self.slots[i]
            .client
            .as_ref()
            .and_then(|c| c.conn.as_ref())
            .and_then(Conn::plain_fd)
        else {
            return false;
        };
        // with a ring, reads and waits are queued as the requests go
        self.core.ring.is_some() || self.core.ep.add(fd, i as u64).is_ok()
    }

    /// Sends request `turn` of client `i` (encoded now; written in `step`), started at `now`
    /// (the phase's clock reading) or at a reading of its own; false when the client has no
    /// connection to send it on (not expected: it gets one away first).
    fn start(&mut self, i: usize, turn: Turn, now: Option<Instant>) -> bool {
        let clients = self.core.w.ctx.clients as u64;
        let s = &mut self.slots[i];
        let Some(client) = s.client.as_mut() else {
            return false;
        };
        let Some(c) = client.conn.as_mut() else {
            return false;
        };
        s.started = now.unwrap_or_else(Instant::now);
        self.core.last_start = Some(s.started);
        client.wbuf.clear();
        s.head_len = client
            .work
            .encode_http(s.idx, client.endpoint, &mut client.wbuf);
        s.idx += clients;
        s.sent += u64::from(!turn.warm);
        s.turn = turn;
        s.before = c.requests_written();
        c.begin();
        s.state = State::Busy {
            off: 0,
            written: false,
        };
        true
    }

    /// Writes and reads what client `i`'s socket allows: None to wait for its next readiness;
    /// once the request is answered (or failed), recorded, whether the connection carries the
    /// next one.
    fn step(&mut self, i: usize, ready: Ready) -> Option<bool> {
        let w = &*self.core.w;
        let landed_at = self.core.landed_at;
        let ring = &mut self.core.ring;
        let s = &mut self.slots[i];
        let State::Busy {
            mut off,
            mut written,
        } = s.state
        else {
            return None;
        };
        let client = s.client.as_mut()?;
        let c = client.conn.as_mut()?;
        let port = c.local_port();
        let mut failed = None;
        if !written {
            match c.send_now(&client.wbuf, &mut off, s.head_len) {
                Ok(done) => written = done,
                Err(f) => failed = Some(f),
            }
            s.state = State::Busy { off, written };
            if !written && failed.is_none() {
                let Some(ring) = ring else {
                    return None;
                };
                // the socket's buffer is full: the ring says when it takes writes
                let token = i as u64 | WRITABLE;
                match c.plain_fd().map(|fd| ring.writable(fd, token)) {
                    Some(Ok(())) => {
                        s.in_ring = Some(token);
                        return None;
                    }
                    Some(Err(e)) => failed = Some(crate::client::io_failure(&e)),
                    None => failed = Some(Failure::with(FailureKind::Io, "no socket")),
                }
            }
        }
        let answer = match (failed, ring) {
            (Some(f), _) => Answer::Failed(f),
            (None, None) => {
                let (fresh, hangup) = ready.flags();
                match c.read_now(fresh, hangup) {
                    Ok(None) => return None,
                    Ok(Some(resp)) => Answer::Response(resp),
                    Err(f) => Answer::Failed(f),
                }
            }
            (None, Some(ring)) => {
                let fd = c.plain_fd();
                let landing = match ready {
                    Ready::Landed(res) => c.landed(res),
                    _ => c.read_buffered(),
                };
                match (landing, fd) {
                    // complete when the wait that brought its last bytes returned (never before
                    // its request went: a server's answer ahead of it is stamped at the send)
                    (Ok(Landing::Response(resp)), _) => Answer::Response(Response {
                        done: Some(landed_at.max(s.started)),
                        ..resp
                    }),
                    (Ok(Landing::Room { ptr, len }), Some(fd)) => {
                        // SAFETY: the room is the connection's read buffer's spare capacity;
                        // nothing touches that buffer while `in_ring` is set, and the
                        // connection leaves the loop (or the ring goes) only after the read's
                        // completion (`away` cancels it and waits; `Uring`'s drop too).
                        match unsafe { ring.recv(fd, ptr, len, i as u64) } {
                            Ok(()) => {
                                s.in_ring = Some(i as u64);
                                return None;
                            }
                            Err(e) => Answer::Failed(crate::client::io_failure(&e)),
                        }
                    }
                    (Ok(Landing::Room { .. }), None) => {
                        Answer::Failed(Failure::with(FailureKind::Io, "no socket"))
                    }
                    (Err(f), _) => Answer::Failed(f),
                }
            }
        };
        let at = Sent::ready_at(client.endpoint, s.turn, s.started, Some(port));
        let (keep, _) = record(w, &client.work, at, answer, false);
        Some(self.after(i, keep))
    }

    /// After client `i`'s request is recorded: its write counted, and whether its connection
    /// carries the next (`keep`: the answer left its framing known).
    fn after(&mut self, i: usize, keep: bool) -> bool {
        let s = &mut self.slots[i];
        let Some(c) = s.client.as_ref().and_then(|c| c.conn.as_ref()) else {
            return false;
        };
        if c.requests_written() > s.before {
            self.core.w.wrote(s.turn.warm);
        }
        keep && c.reusable()
    }

    /// Client `i` leaves the loop for a runtime task: its connection (if any) closes, and the
    /// task gets it a new one as the tokio clients do (backing off while it cannot connect, or
    /// giving up), and hands it back with its next turn.
    fn away(&mut self, i: usize) {
        let s = &mut self.slots[i];
        let Some(mut client) = s.client.take() else {
            return;
        };
        if let (Some(token), Some(ring)) = (s.in_ring.take(), self.core.ring.as_mut()) {
            match ring.cancel(token) {
                // a read that finished first: its bytes were read off the socket, so counted
                Ok(Completion { res, .. }) if token & WRITABLE == 0 => {
                    if let Some(c) = client.conn.as_mut() {
                        c.abandon_landed(res);
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    // the ring may still write into the buffer: the connection is never freed
                    // (not expected: the ring's enter fails only for invalid arguments)
                    eprintln!("wirebench: io_uring cancel: {e}");
                    std::mem::forget(client.conn.take());
                }
            }
        }
        if let Some(fd) = client.conn.as_ref().and_then(Conn::plain_fd) {
            self.core.ep.remove(fd);
        }
        if let Some(c) = client.conn.take() {
            retire(&self.core.w, c);
        }
        s.state = State::Away;
        self.core.away += 1;
        let (w, back) = (self.core.w.clone(), self.core.back.clone());
        let (mut sent, quota, endpoint) = (s.sent, s.quota, client.endpoint);
        let mut reconnect = std::mem::replace(&mut s.reconnect, Reconnect::new());
        tokio::task::spawn_local(async move {
            let turn = loop {
                let Some(warm) = w.phase(sent, quota) else {
                    break None;
                };
                match back.connecting(client.ready(&w)).await {
                    Ok(()) => {
                        reconnect.ok();
                        break Some(Turn {
                            warm,
                            intended: None,
                        });
                    }
                    Err(f) => {
                        // boxed: the backoff's sleep
                        let on = Box::pin(
                            reconnect.connect_failed(&w, endpoint, warm, &mut sent, quota, f),
                        );
                        if !on.await {
                            break None;
                        }
                    }
                }
            };
            back.back(Returned {
                slot: i,
                client,
                reconnect,
                sent,
                turn,
            });
        });
    }
}
