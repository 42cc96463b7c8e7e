//! The wire crate's h2 client (`wirebench_wire::h2::client::Connection`) on tokio: one driver
//! task per connection moves bytes, the callers queue their streams on the shared state.
//!
//! A wakeup of the driver reads until the socket has nothing more (every frame of every read is
//! handled at once), then writes everything queued (the callers' HEADERS and DATA, PING and
//! SETTINGS acks, WINDOW_UPDATEs) in one write call. Callers run as their own tasks on the same
//! thread: a caller woken by a response queues its next request and wakes the driver, which the
//! runtime polls after the other woken callers, so their requests share that one write. A call
//! alone on its connection (no other call holds a slot, nothing else queued) writes its frames
//! itself on a plain socket: one call at a time per connection then costs no driver wakeup to
//! send.
//!
//! With the ledger on, the connection's codec counts the h2 layers of its own frames (no frame
//! sniffer on this client): `ConnHandle::layers` takes them, with the incomplete frame still in
//! the read buffer, when the connection's record is taken.
//!
//! Nothing here allocates per call in steady state: a call takes a slot (`slot::StreamSlot`: its
//! verdict state and its caller's response buffer, swapped in for the call) from a free list,
//! the request's header fields are borrowed from its `Call`, and the connection's buffers keep
//! their capacity. Nor does a call register a timer: its deadline sits in its slot, and the
//! driver's one timer (`deadlines`) ends the calls whose deadline passed.
//!
//! Its files: `slot` (a call's slot and the frame events applied to the slots, a ping-pong
//! the driver answers itself), `bidi` (a bidirectional stream on a slot).

mod bidi;
mod slot;

pub use bidi::WireBidi;
pub use slot::Rally;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker, ready};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use super::settings::H2Config;
use crate::client::call::{Call, CallError, InFlight, Progress, Request};
use crate::net::{Io, Ledger};
use crate::outcome::{Failure, FailureKind};
use crate::stats::Duplex;
use slot::{Sink, StreamSlot};
use wirebench_wire::h2::client::{Config, Connection, OpenError};
use wirebench_wire::h2::counts::H2Counts;
use wirebench_wire::h2::frame::Reason;
use wirebench_wire::h2::tally::TallyLayers;

/// The read buffer's first size; it grows to hold the largest frame we accept.
const READ_START: usize = 16 << 10;

/// The connection settings of `H2Config` as the wire client's: with the ledger on, the
/// connection counts the h2 layers of its frames (the gRPC messages in DATA unless it carries
/// plain HTTP/2).
fn config(h2: &H2Config) -> Config {
    Config {
        initial_window_size: h2.initial_window_size,
        initial_conn_window_size: h2.initial_conn_window_size,
        max_frame_size: h2.max_frame_size,
        hpack: h2.hpack,
        layers: match (h2.ledger, h2.plain) {
            (false, _) => TallyLayers::Off,
            (true, false) => TallyLayers::Grpc,
            (true, true) => TallyLayers::H2,
        },
        ..Config::default()
    }
}

/// Why a connection is unusable.
#[derive(Clone, Debug)]
enum Dead {
    /// The peer broke the protocol (we sent GOAWAY with this reason).
    Protocol(wirebench_wire::h2::client::Error),
    /// A read or write failed, or the peer closed the socket.
    Io(Failure),
}

impl Dead {
    fn failure(&self) -> Failure {
        match self {
            Dead::Protocol(e) => Failure::with(FailureKind::H2, e),
            Dead::Io(f) => f.clone(),
        }
    }
}

/// The connection and its calls, shared by the driver and the callers on one thread.
struct State {
    conn: Connection,
    /// the socket: the driver's, and a lone caller's for writing its own call (`send_queued`);
    /// dropped (closed) when the driver ends
    io: Option<Io>,
    /// what was read, `rbuf[..filled]` not yet taken by the connection (an incomplete frame)
    rbuf: Vec<u8>,
    filled: usize,
    slots: Vec<StreamSlot>,
    free: Vec<usize>,
    /// streams to reset after the frames at hand are handled (a verdict came early)
    to_reset: Vec<u32>,
    /// rallies whose next message is due once the frames at hand are handled
    to_send: Vec<usize>,
    /// callers waiting for a stream (the server's SETTINGS, or its stream limit)
    waiting: VecDeque<Waker>,
    /// no call's deadline is earlier (a lower bound: the driver's timer fires then and looks)
    next_deadline: Option<Instant>,
    driver: Option<Waker>,
    dead: Option<Dead>,
    /// the owner closes: write what is left, GOAWAY, FIN, read to EOF
    closing: bool,
    /// everything was written and our side shut down
    shut: bool,
    eof: bool,
}

impl State {
    fn wake_driver(&self) {
        if let Some(w) = &self.driver {
            w.wake_by_ref();
        }
    }

    /// A call's frames, just queued, go out: the caller writes them itself when `alone` (the
    /// connection's only call, nothing else queued before its frames, as on a connection that
    /// carries one call at a time) and the socket is plain; otherwise, or for what the socket
    /// did not take, the driver is woken to write them (with the frames of the other callers
    /// it woke, in one write). A connection of one call at a time so saves the driver's
    /// wakeup per call.
    fn send_queued(&mut self, alone: bool) {
        if alone
            && self.dead.is_none()
            && let Some(io) = self.io.as_mut().filter(|io| io.plain_fd().is_some())
        {
            match io.send_now(self.conn.output()) {
                Ok(n) => {
                    self.conn.advance(n);
                    if self.conn.output().is_empty() {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                // the calls fail; the driver, woken, ends
                Err(e) => self.kill(Dead::Io(crate::client::io_failure(&e))),
            }
        }
        self.wake_driver();
    }

    /// Gives slot `token`'s call a deadline; the driver is woken when it is the earliest.
    fn set_deadline(&mut self, token: usize, at: Instant) {
        self.slots[token].deadline = Some(at);
        if self.next_deadline.is_none_or(|d| at < d) {
            self.next_deadline = Some(at);
            self.wake_driver();
        }
    }

    /// The deadlines that passed by `now`: their calls end (the caller resets the stream), the
    /// others give the next lower bound.
    fn expire(&mut self, now: Instant) {
        let mut next = None;
        for s in &mut self.slots {
            let Some(at) = s.deadline else { continue };
            if s.outcome.is_some() || s.expired {
                continue;
            }
            if at <= now {
                s.expired = true;
                s.wake();
            } else if next.is_none_or(|n| at < n) {
                next = Some(at);
            }
        }
        self.next_deadline = next;
    }

    /// A free slot (a new one when none is), ready for a call of `call`.
    fn take_slot(&mut self, call: &Call, max_message: usize) -> usize {
        let token = match self.free.pop() {
            Some(t) => t,
            None => {
                self.slots.push(StreamSlot::new());
                self.slots.len() - 1
            }
        };
        self.slots[token].begin(call, max_message);
        token
    }

    fn wake_waiting(&mut self) {
        while let Some(w) = self.waiting.pop_front() {
            w.wake();
        }
    }

    fn kill(&mut self, why: Dead) {
        if self.dead.is_none() {
            self.dead = Some(why);
        }
        let failure = self.dead.as_ref().map(Dead::failure);
        let mut sink = Sink {
            slots: &mut self.slots,
            to_reset: &mut self.to_reset,
            to_send: &mut self.to_send,
            lost: failure,
        };
        self.conn.fail_all(&mut sink);
        self.wake_waiting();
    }
}

/// A handle on one wire-client connection; clones share it.
#[derive(Clone)]
pub struct ConnHandle {
    state: Rc<RefCell<State>>,
}

/// Starts the client on `io`, its driver a task on the current `LocalSet` that sets `dead` when
/// it ends: the preface goes out, and the returned handle opens streams once the server's
/// SETTINGS are in (callers wait for them, within their timeout).
pub(super) fn start(
    io: Io,
    h2: &H2Config,
    dead: Rc<Cell<bool>>,
) -> (ConnHandle, tokio::task::JoinHandle<()>) {
    let max_frame = h2.max_frame_size as usize;
    let state = Rc::new(RefCell::new(State {
        conn: Connection::new(config(h2)),
        io: Some(io),
        rbuf: vec![0u8; READ_START.min(max_frame + 9 + 4096)],
        filled: 0,
        slots: Vec::new(),
        free: Vec::new(),
        to_reset: Vec::new(),
        to_send: Vec::new(),
        waiting: VecDeque::new(),
        next_deadline: None,
        driver: None,
        dead: None,
        closing: false,
        shut: false,
        eof: false,
    }));
    let handle = ConnHandle {
        state: state.clone(),
    };
    let task = tokio::task::spawn_local(async move {
        let mut timer = None;
        poll_fn(|cx| {
            let more = drive(&state, max_frame, cx);
            deadlines(&mut state.borrow_mut(), &mut timer, cx);
            more
        })
        .await;
        // the socket closes with the driver, as the handles may outlive it
        state.borrow_mut().io = None;
        dead.set(true);
    });
    (handle, task)
}

/// The calls' deadlines on one timer: it is set to the earliest one known (a lower bound),
/// and when it fires the slots are looked through: the calls past theirs end, the earliest of
/// the others sets it again. With one timeout for every call this fires about once per
/// timeout, and a call costs no timer of its own.
///
/// A timer polled pending keeps the driver's waker (its task's, which does not change), so it
/// is polled again only when its deadline moved or it fired: not on every wakeup.
fn deadlines(st: &mut State, timer: &mut Option<Timer>, cx: &mut Context<'_>) {
    while let Some(at) = st.next_deadline {
        let t = timer.get_or_insert_with(|| Timer {
            sleep: Box::pin(tokio::time::sleep_until(at)),
            armed: false,
        });
        if t.sleep.deadline() != at {
            t.sleep.as_mut().reset(at);
            t.armed = false;
        } else if t.armed && !t.sleep.is_elapsed() {
            return;
        }
        if t.sleep.as_mut().poll(cx).is_pending() {
            t.armed = true;
            return;
        }
        t.armed = false;
        st.expire(Instant::now());
    }
}

/// The driver's one timer, and whether it holds the driver's waker for its deadline.
struct Timer {
    sleep: Pin<Box<Sleep>>,
    armed: bool,
}

/// One wakeup of the driver: read everything, handle it, write everything.
fn drive(state: &Rc<RefCell<State>>, max_frame: usize, cx: &mut Context<'_>) -> Poll<()> {
    let mut st = state.borrow_mut();
    let st = &mut *st;
    if st.driver.as_ref().is_none_or(|w| !w.will_wake(cx.waker())) {
        st.driver = Some(cx.waker().clone());
    }
    while st.dead.is_none() && !st.eof {
        if st.filled == st.rbuf.len() {
            // a frame larger than the buffer: grow towards the largest we accept (the
            // frame decoder refuses larger ones from their header)
            let limit = max_frame + 9 + 4096;
            if st.rbuf.len() >= limit {
                st.kill(Dead::Io(Failure::with(FailureKind::H2, "read buffer full")));
                break;
            }
            let grown = (st.rbuf.len() * 2).min(limit);
            st.rbuf.resize(grown, 0);
        }
        let Some(io) = st.io.as_mut() else {
            return Poll::Ready(());
        };
        let mut rb = ReadBuf::new(&mut st.rbuf[st.filled..]);
        match Pin::new(io).poll_read(cx, &mut rb) {
            Poll::Pending => break,
            Poll::Ready(Err(e)) => st.kill(Dead::Io(crate::client::io_failure(&e))),
            Poll::Ready(Ok(())) if rb.filled().is_empty() => {
                st.eof = true;
                if !st.closing || st.conn.active_streams() > 0 {
                    st.kill(Dead::Io(Failure::with(
                        FailureKind::Closed,
                        "connection closed by the server",
                    )));
                }
            }
            Poll::Ready(Ok(())) => {
                st.filled += rb.filled().len();
                let mut sink = Sink {
                    slots: &mut st.slots,
                    to_reset: &mut st.to_reset,
                    to_send: &mut st.to_send,
                    lost: None,
                };
                match st.conn.recv(&st.rbuf[..st.filled], &mut sink) {
                    Ok(used) => {
                        st.rbuf.copy_within(used..st.filled, 0);
                        st.filled -= used;
                    }
                    Err(e) => {
                        // the connection takes nothing more; its counts took the buffer in
                        st.filled = 0;
                        st.kill(Dead::Protocol(e));
                    }
                }
                for id in st.to_reset.drain(..) {
                    st.conn.reset(id, Reason::CANCEL);
                }
                // a connection that just died sends nothing more (its calls have failed)
                for token in st.to_send.drain(..) {
                    if st.dead.is_none() {
                        volley(&mut st.conn, &mut st.slots[token]);
                    }
                }
            }
        }
    }
    if !st.waiting.is_empty()
        && (st.conn.is_closing()
            || st.dead.is_some()
            || (st.conn.is_ready() && st.conn.active_streams() < st.conn.max_streams()))
    {
        st.wake_waiting();
    }
    // writes: everything queued, in as few calls as the socket takes
    match flush(st, cx) {
        Poll::Pending => return Poll::Pending,
        Poll::Ready(false) => return Poll::Ready(()),
        Poll::Ready(true) => {}
    }
    if st.closing && st.conn.active_streams() == 0 {
        if !st.shut {
            // the GOAWAY, then our FIN
            st.conn.go_away();
            match flush(st, cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(false) => return Poll::Ready(()),
                Poll::Ready(true) => {}
            }
            let Some(io) = st.io.as_mut() else {
                return Poll::Ready(());
            };
            match Pin::new(io).poll_shutdown(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(_) => st.shut = true,
            }
        }
        if st.eof {
            return Poll::Ready(());
        }
    }
    Poll::Pending
}

/// Queues a rally's due messages on its stream (the last one ends our side).
fn volley(conn: &mut Connection, s: &mut StreamSlot) {
    let r = &mut s.rally;
    while s.rallying && r.due() && !s.frames.is_empty() {
        let frame = &s.frames[(r.end.sent % s.frames.len() as u64) as usize];
        r.end.sent += 1;
        let last = r.end.sent == r.total;
        if last {
            r.end.last_sent_at = Some(r.sent_at);
        }
        conn.send_data(s.stream, frame, last);
    }
}

/// Writes the connection's output until it is empty or the socket is full (pending); a
/// connection that died of a protocol error still writes its GOAWAY. `false` when the
/// connection is dead.
fn flush(st: &mut State, cx: &mut Context<'_>) -> Poll<bool> {
    while !st.conn.output().is_empty() && !matches!(st.dead, Some(Dead::Io(_))) {
        let Some(io) = st.io.as_mut() else {
            return Poll::Ready(false);
        };
        match Pin::new(io).poll_write(cx, st.conn.output()) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Ok(0)) => {
                st.kill(Dead::Io(Failure::with(FailureKind::Io, "write returned 0")));
                return Poll::Ready(false);
            }
            Poll::Ready(Ok(n)) => st.conn.advance(n),
            Poll::Ready(Err(e)) => {
                st.kill(Dead::Io(crate::client::io_failure(&e)));
                return Poll::Ready(false);
            }
        }
    }
    Poll::Ready(st.dead.is_none())
}

impl ConnHandle {
    /// Whether the connection can take no more calls.
    pub fn is_dead(&self) -> bool {
        let st = self.state.borrow();
        st.dead.is_some() || st.eof || st.conn.is_closing()
    }

    /// Waits until the server's SETTINGS are in (or the connection failed).
    pub async fn ready(&self) -> io::Result<()> {
        poll_fn(|cx| {
            let mut st = self.state.borrow_mut();
            if let Some(d) = &st.dead {
                return Poll::Ready(Err(io::Error::other(d.failure().to_string())));
            }
            if st.conn.is_ready() {
                return Poll::Ready(Ok(()));
            }
            st.waiting.push_back(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// The h2 layers of the bytes written and read so far, counted by the connection's codec,
    /// the incomplete frame still in the read buffer included; `None` without the ledger.
    pub fn layers(&self) -> Option<Duplex<H2Counts>> {
        let st = self.state.borrow();
        Some(Duplex {
            out: st.conn.counts_out()?,
            inbound: st.conn.counts_in(&st.rbuf[..st.filled])?,
        })
    }

    /// Whether the server's FIN arrived.
    pub fn saw_eof(&self) -> bool {
        self.state.borrow().eof
    }

    /// Starts the close: once no stream is open, GOAWAY, our FIN, and the server's answer read
    /// to its FIN through the ledger. The driver task ends then.
    pub fn close(&self) {
        let mut st = self.state.borrow_mut();
        st.closing = true;
        st.wake_driver();
    }

    /// One unary call (or plain request); `progress` tells when its HEADERS are queued and
    /// the response's status. `None` when `deadline` passed first (its stream, if open, is
    /// reset).
    pub async fn unary(
        &self,
        ledger: &Ledger,
        req: Request<'_>,
        rx: &mut BytesMut,
        progress: &Progress,
        deadline: Option<Instant>,
    ) -> Option<Result<Bytes, CallError>> {
        let Request {
            call,
            bytes: request,
            max_message,
        } = req;
        let token = {
            let mut st = self.state.borrow_mut();
            let token = st.take_slot(call, max_message);
            std::mem::swap(&mut st.slots[token].rx, rx);
            st.slots[token].rx.clear();
            if let Some(at) = deadline {
                st.set_deadline(token, at);
            }
            token
        };
        let mut guard = CallGuard {
            state: &self.state,
            token,
            rx,
            stream: None,
        };
        let id = match poll_fn(|cx| guard.open(cx, call, request)).await? {
            Ok(id) => id,
            Err(e) => return Some(Err(e)),
        };
        guard.stream = Some(id);
        progress.sent.set(true);
        ledger.count_request();
        if ledger.h2.is_some() {
            ledger.h2_header_lists(call.header_list_bytes, 0);
        }
        let _in_flight = InFlight::new(ledger);
        let outcome = poll_fn(|cx| {
            let mut st = self.state.borrow_mut();
            let s = &mut st.slots[token];
            match s.outcome.take() {
                Some(o) => Poll::Ready(Some(o)),
                // the guard resets the stream
                None if s.expired => Poll::Ready(None),
                None => {
                    s.wait(cx);
                    Poll::Pending
                }
            }
        })
        .await?;
        {
            let st = self.state.borrow();
            let s = &st.slots[token];
            progress.status.set(s.status);
            if ledger.h2.is_some() {
                ledger.h2_header_lists(0, s.header_bytes_in);
            }
        }
        guard.stream = None;
        Some(outcome)
    }
}

/// A call's hold on its slot: gives the caller's buffer back and frees the slot however the
/// call ends; a call dropped mid-flight (its timeout) resets its stream.
struct CallGuard<'a> {
    state: &'a Rc<RefCell<State>>,
    token: usize,
    rx: &'a mut BytesMut,
    stream: Option<u32>,
}

impl CallGuard<'_> {
    /// Opens the call's stream and queues its request; `None` when the deadline passed first.
    fn open(
        &mut self,
        cx: &mut Context<'_>,
        call: &Call,
        request: &Bytes,
    ) -> Poll<Option<Result<u32, CallError>>> {
        let mut st = self.state.borrow_mut();
        if st.slots[self.token].expired {
            return Poll::Ready(None);
        }
        // a plain request without a body ends with its HEADERS, as GET requests do
        let headers_only = call.is_plain() && request.is_empty();
        let body = (!headers_only).then_some(&request[..]);
        let id = match ready!(open_stream(
            &mut st,
            self.token,
            call,
            headers_only,
            body,
            cx
        )) {
            Ok(id) => id,
            Err(e) => return Poll::Ready(Some(Err(e))),
        };
        Poll::Ready(Some(Ok(id)))
    }
}

/// Opens a stream for slot `token` with `call`'s header fields (and `body`, ending our side,
/// when there is one), once the server's SETTINGS and its stream limit allow; they go out
/// with `send_queued`.
fn open_stream(
    st: &mut State,
    token: usize,
    call: &Call,
    end_stream: bool,
    body: Option<&[u8]>,
    cx: &mut Context<'_>,
) -> Poll<Result<u32, CallError>> {
    if let Some(d) = &st.dead {
        return Poll::Ready(Err(CallError::never_sent(d.failure())));
    }
    // no other call holds a slot (one in flight, or answered and its caller not yet back for
    // the next), and nothing else waits to be written
    let alone = st.slots.len() - st.free.len() == 1 && st.conn.output().is_empty();
    let opened = st.conn.open_keyed_varying(
        token,
        call.key(),
        call.varying_fields(),
        || call.fields(),
        call.varying_values(),
        end_stream,
    );
    match opened {
        Ok(id) => {
            st.slots[token].stream = id;
            if let Some(body) = body {
                st.conn.send_data(id, body, true);
            }
            st.send_queued(alone);
            Poll::Ready(Ok(id))
        }
        Err(OpenError::NotReady | OpenError::Busy) => {
            st.waiting.push_back(cx.waker().clone());
            // the deadline wakes it through its slot
            st.slots[token].wait(cx);
            Poll::Pending
        }
        Err(OpenError::Closing) => Poll::Ready(Err(CallError::never_sent(Failure::with(
            FailureKind::Goaway,
            "the connection is going away",
        )))),
    }
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        if let Some(id) = self.stream {
            st.conn.reset(id, Reason::CANCEL);
            st.wake_driver();
        }
        let s = &mut st.slots[self.token];
        std::mem::swap(&mut s.rx, self.rx);
        s.outcome = None;
        s.waker = None;
        s.deadline = None;
        st.free.push(self.token);
    }
}
