//! Pipelined HTTP/1.1 (`--pipeline N`) on the thread's readiness loop (`http1_loop::drive`):
//! a line is one connection and the clients that share it. An event on its socket reads every
//! response the socket holds and records each for the client whose request it answers (in
//! order: the n-th response answers the n-th request written), then encodes the next request
//! of every client that got its answer, and writes them all with one write call. No task,
//! waker or copy of a body per request; the requests encoded together share the clock read of
//! their start, as they share the write.
//!
//! When a connection ends with requests in flight (the server closed it, a read or write
//! failed, a response was malformed or late), the oldest request fails with that cause and every
//! request behind it as `unanswered`, as with a task per connection (`client::http1::pipeline`):
//! never retried, never lost from the counts. The line then goes to a runtime task for a new
//! connection, its clients taking turns at the connect (each attempt one client's turn, with
//! that client's backoff), and comes back when it has one or its clients are done.

use std::collections::VecDeque;
use std::time::Instant;

use bytes::BytesMut;

use crate::client::http1::Conn;
use crate::outcome::{Failure, FailureKind};
use crate::workload::{ClientWork, Http1Work};

use super::Assignment;
use super::http1::{Answer, Sent, connect, record, retire};
use super::http1_loop::{Back, Core, Lines, Ready, drive, unwatched};
use super::plan::quota;
use super::worker::{Reconnect, Turn, Worker};

/// Runs the thread's pipelined connections (`conns[k]` to endpoint `a.conns[k]`, shared by the
/// clients `a.clients` assigns to `k`) on the loop; returns the connections still open.
pub(super) async fn run(
    core: Core<(usize, Line)>,
    a: &Assignment,
    conns: Vec<Conn>,
    work: &Http1Work,
) -> Vec<Conn> {
    let ctx = core.w.ctx.clone();
    core.w
        .client_loop
        .set(Some(crate::stats::CLIENT_LOOP_EPOLL));
    let mut lines: Vec<Line> = a
        .conns
        .iter()
        .zip(conns)
        .map(|(&endpoint, conn)| Line {
            endpoint,
            conn: Some(conn.pipelined().stamped()),
            members: Vec::new(),
            queue: VecDeque::new(),
            written: 0,
            out: BytesMut::new(),
            out_at: 0,
            out_counted: 0,
        })
        .collect();
    for &(id, k) in &a.clients {
        let line = &mut lines[k];
        line.members.push(Member {
            work: work.for_client(id as u64),
            idx: id as u64,
            sent: 0,
            quota: quota(&ctx, id),
            reconnect: Reconnect::new(),
            busy: false,
            done: false,
        });
    }
    let mut lp = PipeLoop {
        slots: lines.into_iter().map(Some).collect(),
        core,
    };
    for i in 0..lp.slots.len() {
        lp.rejoin(i);
    }
    drive(&mut lp).await;
    lp.slots
        .iter_mut()
        .filter_map(|l| l.as_mut().and_then(|l| l.conn.take()))
        .collect()
}

/// One client of a line.
struct Member {
    work: Http1Work,
    /// its next request's number
    idx: u64,
    /// measured requests sent
    sent: u64,
    quota: u64,
    reconnect: Reconnect,
    /// a request of its is queued or in flight
    busy: bool,
    /// no more requests
    done: bool,
}

/// A request queued or in flight on a line: whose, its turn, its start and its length.
struct Flight {
    member: usize,
    turn: Turn,
    started: Instant,
    head_len: usize,
    len: usize,
}

/// A pipelined connection and its clients; it goes to a runtime task (and comes back) whole.
pub(super) struct Line {
    endpoint: usize,
    /// None only while it gets a new one (or its clients are done)
    conn: Option<Conn>,
    members: Vec<Member>,
    /// requests in order: the first `written` are on the wire
    queue: VecDeque<Flight>,
    written: usize,
    /// requests encoded, not all written yet
    out: BytesMut,
    /// bytes of `out` written
    out_at: usize,
    /// bytes of `out` that belong to requests counted as written
    out_counted: usize,
}

struct PipeLoop {
    /// None while away (a line done stays, for its connection to be closed after the window)
    slots: Vec<Option<Line>>,
    core: Core<(usize, Line)>,
}

impl Lines for PipeLoop {
    type Returned = (usize, Line);

    fn core(&mut self) -> &mut Core<(usize, Line)> {
        &mut self.core
    }

    fn advance(&mut self, i: usize, ready: Ready) {
        let (mut fresh, hangup) = ready.flags();
        let mut first = true;
        loop {
            let w = &*self.core.w;
            let Some(line) = self.slots[i].as_mut() else {
                return;
            };
            let answered = match line.read(w, fresh, hangup) {
                Ok(n) => n,
                Err(ended) => {
                    line.end(w, ended);
                    self.away(i);
                    return;
                }
            };
            // after the first pass, only answers free clients to send again
            if !first && answered == 0 {
                return;
            }
            (first, fresh) = (false, false);
            if let Some(at) = line.fill(w) {
                self.core.last_start = Some(at);
            }
            if let Err(f) = line.write(w) {
                line.end(w, Ended::Failed(f));
                self.away(i);
                return;
            }
            if line.queue.is_empty() {
                // every client done (a client with a turn left has a request queued)
                self.done(i);
                return;
            }
        }
    }

    fn expire(&mut self, now: Instant) {
        let w = self.core.w.clone();
        for i in 0..self.slots.len() {
            let Some(line) = self.slots[i].as_mut() else {
                continue;
            };
            if line
                .queue
                .front()
                .is_some_and(|f| now >= f.started + w.ctx.timeout)
            {
                line.end(&w, Ended::TimedOut);
                self.away(i);
            }
        }
    }

    fn take_returned(&mut self) {
        let returned = std::mem::take(&mut *self.core.back.returned.borrow_mut());
        for (i, line) in returned {
            self.core.away -= 1;
            self.slots[i] = Some(line);
            self.rejoin(i);
        }
    }
}

impl PipeLoop {
    /// Line `i` (on the loop, or back from its task) sends its clients' requests, or is done,
    /// or goes for a connection.
    fn rejoin(&mut self, i: usize) {
        let Some(line) = self.slots[i].as_mut() else {
            return;
        };
        if !line.live() {
            self.done(i);
            return;
        }
        let Some(fd) = line.conn.as_ref().and_then(Conn::plain_fd) else {
            self.away(i);
            return;
        };
        if self.core.ep.add(fd, i as u64).is_err() {
            // one client's turn fails, and the line tries again
            let w = &*self.core.w;
            if let Some(m) = line.members.iter_mut().find(|m| !m.done)
                && let Some(warm) = w.phase(m.sent, m.quota)
            {
                m.sent += u64::from(!warm);
                unwatched(w, line.endpoint, warm);
            }
            if let Some(c) = line.conn.take() {
                retire(w, c);
            }
            self.away(i);
            return;
        }
        self.advance(i, Ready::Unknown);
    }

    /// Line `i` is done: its clients have no more requests (its connection stays, to be closed
    /// after the window).
    fn done(&mut self, i: usize) {
        if let Some(fd) = self.slots[i]
            .as_ref()
            .and_then(|l| l.conn.as_ref())
            .and_then(Conn::plain_fd)
        {
            self.core.ep.remove(fd);
        }
        // kept in its slot for its connection; no event names it any more
        self.core.live -= 1;
    }

    /// Line `i` leaves the loop for a runtime task: its connection (if any) closes, and its
    /// clients take turns at connecting (backing off, or giving up, as a task client does) until
    /// one succeeds or all are done; then it comes back.
    fn away(&mut self, i: usize) {
        let Some(mut line) = self.slots[i].take() else {
            return;
        };
        if let Some(c) = line.conn.take() {
            if let Some(fd) = c.plain_fd() {
                self.core.ep.remove(fd);
            }
            retire(&self.core.w, c);
        }
        self.core.away += 1;
        let (w, back) = (self.core.w.clone(), self.core.back.clone());
        tokio::task::spawn_local(async move {
            line.reconnect(&w, &back).await;
            back.back((i, line));
        });
    }
}

impl Line {
    /// Reads what the socket holds and records every response complete in it: how many.
    /// `Err`: the connection ended.
    fn read(&mut self, w: &Worker, mut fresh: bool, hangup: bool) -> Result<usize, Ended> {
        let mut answered = 0;
        let Some(c) = self.conn.as_mut() else {
            return Err(Ended::Closed);
        };
        let port = c.local_port();
        while self.written > 0 {
            let resp = match c.read_now(fresh, hangup) {
                Ok(None) => break,
                Ok(Some(resp)) => resp,
                Err(f) => return Err(Ended::Failed(f)),
            };
            fresh = false;
            let Some(f) = self.queue.pop_front() else {
                break;
            };
            self.written -= 1;
            answered += 1;
            let m = &mut self.members[f.member];
            m.busy = false;
            let at = Sent::ready_at(self.endpoint, f.turn, f.started, Some(port));
            record(w, &m.work, at, Answer::Response(resp), false);
            if !c.reusable() {
                // the server asked to close after this response: what follows goes unanswered
                return Err(Ended::Closed);
            }
            c.begin();
        }
        Ok(answered)
    }

    /// Encodes the next request of every client without one in flight (a client whose run is
    /// over is done); returns their start when there were any.
    fn fill(&mut self, w: &Worker) -> Option<Instant> {
        let clients = w.ctx.clients as u64;
        let mut now = None;
        for (j, m) in self.members.iter_mut().enumerate() {
            if m.busy || m.done {
                continue;
            }
            let Some(warm) = w.phase_with(m.sent, m.quota, &mut now) else {
                m.done = true;
                continue;
            };
            let started = *now.get_or_insert_with(Instant::now);
            let from = self.out.len();
            let head_len = m.work.encode_http(m.idx, self.endpoint, &mut self.out);
            m.idx += clients;
            m.sent += u64::from(!warm);
            m.busy = true;
            self.queue.push_back(Flight {
                member: j,
                turn: Turn {
                    warm,
                    intended: None,
                },
                started,
                head_len,
                len: self.out.len() - from,
            });
        }
        now
    }

    /// Writes what is queued as far as the socket takes it, counting each request whose last
    /// byte went.
    fn write(&mut self, w: &Worker) -> Result<(), Failure> {
        let Some(c) = self.conn.as_mut() else {
            return Ok(());
        };
        while self.out_at < self.out.len() {
            match c.write_now(&self.out[self.out_at..])? {
                Some(n) => self.out_at += n,
                None => break,
            }
        }
        while let Some(f) = self.queue.get(self.written) {
            if self.out_counted + f.len > self.out_at {
                break;
            }
            self.out_counted += f.len;
            self.written += 1;
            c.count_request(f.head_len, f.len - f.head_len);
            w.wrote(f.turn.warm);
        }
        if self.out_at == self.out.len() {
            self.out.clear();
            self.out_at = 0;
            self.out_counted = 0;
        }
        Ok(())
    }

    /// The connection ended (`how`): the oldest request fails with its cause, every one behind
    /// it as unanswered (all of them when the server asked to close).
    fn end(&mut self, w: &Worker, how: Ended) {
        let port = self.conn.as_ref().map(Conn::local_port);
        let mut cause = Some(how);
        for f in self.queue.drain(..) {
            let m = &mut self.members[f.member];
            m.busy = false;
            let answer = match cause.take() {
                Some(Ended::TimedOut) => Answer::TimedOut,
                Some(Ended::Failed(c)) => Answer::Failed(c),
                Some(Ended::Closed) | None => Answer::Failed(Failure::with(
                    FailureKind::Unanswered,
                    "pipelined: the connection ended before its response",
                )),
            };
            let at = Sent::ready_at(self.endpoint, f.turn, f.started, port);
            record(w, &m.work, at, answer, false);
        }
        self.written = 0;
        self.out.clear();
        self.out_at = 0;
        self.out_counted = 0;
    }

    /// Whether a client of the line has requests left.
    fn live(&self) -> bool {
        self.members.iter().any(|m| !m.done)
    }

    /// Gets the line a new connection: its clients take turns at the connect, each attempt one
    /// client's turn with its own backoff, until one succeeds or every client is done.
    async fn reconnect(&mut self, w: &Worker, back: &Back<(usize, Line)>) {
        let mut next = 0;
        let n = self.members.len();
        // the next client not done, from `next` round
        while let Some(j) = (0..n)
            .map(|k| (next + k) % n)
            .find(|&j| !self.members[j].done)
        {
            next = j + 1;
            let m = &mut self.members[j];
            let Some(warm) = w.phase(m.sent, m.quota) else {
                m.done = true;
                continue;
            };
            // boxed: a connect is a large future
            match back
                .connecting(Box::pin(connect(&w.ctx, self.endpoint)))
                .await
            {
                Ok(c) => {
                    w.stats.borrow_mut().reconnects += 1;
                    for m in &mut self.members {
                        m.reconnect.ok();
                    }
                    self.conn = Some(c.pipelined().stamped());
                    return;
                }
                Err(e) => {
                    let f = Failure::with(FailureKind::Connect, e);
                    let (endpoint, quota) = (self.endpoint, m.quota);
                    let on = Box::pin(m.reconnect.connect_failed(
                        w,
                        endpoint,
                        warm,
                        &mut m.sent,
                        quota,
                        f,
                    ));
                    if !on.await {
                        m.done = true;
                    }
                }
            }
        }
    }
}

/// How a line's connection ended, for its oldest request.
enum Ended {
    /// the server asked to close after its last response (none is the oldest's)
    Closed,
    Failed(Failure),
    /// the oldest request passed its deadline
    TimedOut,
}
