//! The wire crate's h2 client (`wirebench_wire::h2::client::Connection`) on tokio: one driver
//! task per connection moves bytes, the callers queue their streams on the shared state.
//!
//! A wakeup of the driver reads until the socket has nothing more (every frame of every read is
//! handled at once), then writes everything queued (the callers' HEADERS and DATA, PING and
//! SETTINGS acks, WINDOW_UPDATEs) in one write call. Callers run as their own tasks on the same
//! thread: a caller woken by a response queues its next request and wakes the driver, which the
//! runtime polls after the other woken callers, so their requests share that one write.
//!
//! With the ledger on, the connection's codec counts the h2 layers of its own frames (no frame
//! sniffer on this client): `Handle::layers` takes them, with the incomplete frame still in the
//! read buffer, when the connection's record is taken.
//!
//! Nothing here allocates per call in steady state: a call takes a slot (its verdict state and
//! its caller's response buffer, swapped in for the call) from a free list, the request's
//! header fields are borrowed from its `Call`, and the connection's buffers keep their capacity.
//! Nor does a call register a timer: its deadline sits in its slot, and the driver's one timer
//! (`deadlines`) ends the calls whose deadline passed.

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

use super::{Call, CallError, Progress, judged_message};
use crate::net::{H2Config, Io, Ledger};
use crate::outcome::{Failure, FailureKind};
use crate::stats::Duplex;
use wirebench_wire::grpc::unary::{UnaryResponse, Verdict};
use wirebench_wire::grpc::{self, Code};
use wirebench_wire::h2::client::{Closed, Config, Connection, Events, OpenError};
use wirebench_wire::h2::counts::H2Counts;
use wirebench_wire::h2::frame::Reason;
use wirebench_wire::h2::hpack::Field;
use wirebench_wire::h2::tally::TallyLayers;

/// The read buffer's first size; it grows to hold the largest frame we accept.
const READ_START: usize = 16 << 10;
/// A grpc-message is kept up to this many bytes.
const MAX_MESSAGE_TEXT: usize = 1024;
/// What a bidi stream may hold unread beyond one message at the receive limit.
const STREAM_SLACK: usize = 1 << 20;

/// The connection settings of `H2Config` as the wire client's: with the ledger on, the
/// connection counts the h2 layers of its frames (the gRPC messages in DATA unless it carries
/// plain HTTP/2).
pub fn config(h2: &H2Config) -> Config {
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

/// One call's state while its stream is open.
struct Slot {
    /// the caller's response buffer, lent for the call
    rx: BytesMut,
    max_message: usize,
    status_kind: FailureKind,
    status: u16,
    /// grpc-status of the head (trailers-only) and of the trailers, parsed (`None`: absent)
    head_grpc: Option<Result<Code, grpc::Error>>,
    trailer_grpc: Option<Result<Code, grpc::Error>>,
    message: Vec<u8>,
    header_bytes_in: u64,
    stream: u32,
    outcome: Option<Result<Bytes, CallError>>,
    waker: Option<Waker>,
    /// a bidi stream (`Bidi`): DATA is kept in `rx` for its reader, not judged as one message
    streaming: bool,
    /// a plain HTTP/2 request: the response is a status and a body of at most `max_message`
    /// bytes, complete at END_STREAM (no gRPC framing, no grpc-status)
    plain: bool,
    /// the stream's response head arrived
    head_seen: bool,
    /// the server ended the stream
    ended: bool,
    /// a bidi stream's trailers arrived (their grpc-status is `trailer_grpc`)
    trailers_seen: bool,
    /// when a unary call gives up (the driver's timer checks it); `None` for none
    deadline: Option<Instant>,
    /// the deadline passed before the call's outcome came
    expired: bool,
}

impl Slot {
    fn new() -> Slot {
        Slot {
            rx: BytesMut::new(),
            max_message: 0,
            status_kind: FailureKind::GrpcStatus,
            status: 0,
            head_grpc: None,
            trailer_grpc: None,
            message: Vec::new(),
            header_bytes_in: 0,
            stream: 0,
            outcome: None,
            waker: None,
            streaming: false,
            plain: false,
            head_seen: false,
            ended: false,
            trailers_seen: false,
            deadline: None,
            expired: false,
        }
    }

    /// Ready for a new call, its buffers kept.
    fn begin(&mut self, call: &Call, max_message: usize) {
        self.rx.clear();
        self.max_message = max_message;
        self.status_kind = call.status_kind;
        self.status = 0;
        self.head_grpc = None;
        self.trailer_grpc = None;
        self.message.clear();
        self.header_bytes_in = 0;
        self.stream = 0;
        self.outcome = None;
        self.waker = None;
        self.streaming = false;
        self.plain = call.is_plain();
        self.head_seen = false;
        self.ended = false;
        self.trailers_seen = false;
        self.deadline = None;
        self.expired = false;
    }

    fn wake(&mut self) {
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    /// Registers the task that waits on this slot.
    fn wait(&mut self, cx: &Context<'_>) {
        if self.waker.as_ref().is_none_or(|w| !w.will_wake(cx.waker())) {
            self.waker = Some(cx.waker().clone());
        }
    }

    fn done(&mut self, outcome: Result<Bytes, CallError>) {
        if self.outcome.is_none() {
            self.outcome = Some(outcome);
            self.wake();
        }
    }

    fn judged(&self, v: Verdict) -> CallError {
        let message = (!self.message.is_empty()).then_some(&self.message[..]);
        judged_message(v, message, self.status_kind)
    }
}

/// The connection and its calls, shared by the driver and the callers on one thread.
struct State {
    conn: Connection,
    /// what was read, `rbuf[..filled]` not yet taken by the connection (an incomplete frame)
    rbuf: Vec<u8>,
    filled: usize,
    slots: Vec<Slot>,
    free: Vec<usize>,
    /// streams to reset after the frames at hand are handled (a verdict came early)
    to_reset: Vec<u32>,
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
                self.slots.push(Slot::new());
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
            lost: failure,
        };
        self.conn.fail_all(&mut sink);
        self.wake_waiting();
    }
}

/// The events of received frames, applied to the calls' slots.
struct Sink<'a> {
    slots: &'a mut Vec<Slot>,
    to_reset: &'a mut Vec<u32>,
    /// what a lost stream fails with
    lost: Option<Failure>,
}

impl Events for Sink<'_> {
    fn field(&mut self, token: usize, f: Field<'_>, trailers: bool) {
        let s = &mut self.slots[token];
        s.header_bytes_in += (f.name.len() + f.value.len()) as u64;
        match f.name {
            // three digits: the connection hands over no other :status
            b":status" => {
                s.status = std::str::from_utf8(f.value)
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
            }
            b"grpc-status" if trailers => s.trailer_grpc = Some(grpc::parse_status(f.value)),
            b"grpc-status" => s.head_grpc = Some(grpc::parse_status(f.value)),
            b"grpc-message" => {
                s.message.clear();
                s.message
                    .extend_from_slice(&f.value[..f.value.len().min(MAX_MESSAGE_TEXT)]);
            }
            _ => {}
        }
    }

    fn headers_done(&mut self, token: usize, trailers: bool, end_stream: bool) {
        let s = &mut self.slots[token];
        if s.outcome.is_some() {
            return;
        }
        if s.streaming {
            if !trailers && (100..200).contains(&s.status) {
                s.status = 0;
                return;
            }
            s.head_seen = true;
            s.trailers_seen |= trailers;
            s.ended |= trailers || end_stream;
            s.wake();
            return;
        }
        if s.plain {
            if trailers || end_stream {
                // trailers end a plain response too; an informational head never ends one
                if trailers || !(100..200).contains(&s.status) {
                    let body = s.rx.split().freeze();
                    s.done(Ok(body));
                }
            } else if (100..200).contains(&s.status) {
                s.status = 0;
            } else {
                s.rx.clear();
            }
            return;
        }
        let verdict = UnaryResponse::new(s.max_message);
        if trailers {
            let r = verdict.finish(&mut s.rx, true, s.trailer_grpc);
            let r = r.map_err(|v| s.judged(v));
            s.done(r);
            return;
        }
        if (100..200).contains(&s.status) {
            // informational: the real head follows
            s.status = 0;
            return;
        }
        match verdict.headers(s.status, s.head_grpc) {
            Err(v) => {
                let e = s.judged(v);
                s.done(Err(e));
                if !end_stream {
                    self.to_reset.push(s.stream);
                }
            }
            Ok(_) if end_stream => {
                let r = verdict
                    .finish(&mut s.rx, false, None)
                    .map_err(|v| s.judged(v));
                s.done(r);
            }
            Ok(_) => s.rx.clear(),
        }
    }

    fn data(&mut self, token: usize, data: &[u8], end_stream: bool) {
        let s = &mut self.slots[token];
        if s.outcome.is_some() {
            return;
        }
        if s.streaming {
            // what the reader has not taken yet is bounded: one message at the receive limit
            // and a window's worth behind it
            if s.rx.len() + data.len() > s.max_message + STREAM_SLACK {
                let failure = Failure::with(
                    FailureKind::GrpcFraming,
                    "the stream's unread data exceeds the receive limit",
                );
                s.done(Err(CallError::plain(failure)));
                self.to_reset.push(s.stream);
                return;
            }
            s.rx.extend_from_slice(data);
            s.ended |= end_stream;
            s.wake();
            return;
        }
        if s.plain {
            if s.rx.len() + data.len() > s.max_message {
                let failure = Failure::with(
                    FailureKind::BodyTooLarge,
                    format_args!("response body beyond {} bytes (--max-body)", s.max_message),
                );
                s.done(Err(CallError::plain(failure)));
                if !end_stream {
                    self.to_reset.push(s.stream);
                }
                return;
            }
            s.rx.extend_from_slice(data);
            if end_stream {
                let body = s.rx.split().freeze();
                s.done(Ok(body));
            }
            return;
        }
        let verdict = UnaryResponse::new(s.max_message);
        if let Err(v) = verdict.data(&mut s.rx, data) {
            let e = s.judged(v);
            s.done(Err(e));
            if !end_stream {
                self.to_reset.push(s.stream);
            }
        } else if end_stream {
            let r = verdict
                .finish(&mut s.rx, false, None)
                .map_err(|v| s.judged(v));
            s.done(r);
        }
    }

    fn closed(&mut self, token: usize, why: Closed) {
        let s = &mut self.slots[token];
        let e = match why {
            Closed::Reset(r) => CallError {
                status: None,
                failure: Failure::with(
                    FailureKind::RstStream,
                    format_args!("{r}: {}", r.meaning()),
                ),
                conn_broken: false,
                unprocessed: r == Reason::REFUSED_STREAM,
            },
            Closed::Refused => CallError {
                status: None,
                failure: Failure::with(FailureKind::Goaway, "stream above the GOAWAY's last id"),
                conn_broken: true,
                unprocessed: true,
            },
            Closed::Error(reason, what) => CallError {
                status: None,
                failure: Failure::with(FailureKind::H2, format_args!("{reason}: {what}")),
                conn_broken: false,
                unprocessed: false,
            },
            Closed::Lost => CallError {
                status: None,
                failure: self
                    .lost
                    .clone()
                    .unwrap_or_else(|| Failure::with(FailureKind::Io, "connection lost")),
                conn_broken: true,
                unprocessed: false,
            },
        };
        s.done(Err(e));
    }
}

/// A handle on one wire-client connection; clones share it.
#[derive(Clone)]
pub struct Handle {
    state: Rc<RefCell<State>>,
}

/// Starts the client on `io`, its driver a task on the current `LocalSet` that sets `dead` when
/// it ends: the preface goes out, and the returned handle opens streams once the server's
/// SETTINGS are in (callers wait for them, within their timeout).
pub fn start(io: Io, h2: &H2Config, dead: Rc<Cell<bool>>) -> (Handle, tokio::task::JoinHandle<()>) {
    let max_frame = h2.max_frame_size as usize;
    let state = Rc::new(RefCell::new(State {
        conn: Connection::new(config(h2)),
        rbuf: vec![0u8; READ_START.min(max_frame + 9 + 4096)],
        filled: 0,
        slots: Vec::new(),
        free: Vec::new(),
        to_reset: Vec::new(),
        waiting: VecDeque::new(),
        next_deadline: None,
        driver: None,
        dead: None,
        closing: false,
        shut: false,
        eof: false,
    }));
    let handle = Handle {
        state: state.clone(),
    };
    let task = tokio::task::spawn_local(async move {
        let mut io = io;
        let mut timer = None;
        poll_fn(|cx| {
            let more = drive(&state, &mut io, max_frame, cx);
            deadlines(&mut state.borrow_mut(), &mut timer, cx);
            more
        })
        .await;
        dead.set(true);
    });
    (handle, task)
}

/// The calls' deadlines on one timer: it is set to the earliest one known (a lower bound),
/// and when it fires the slots are looked through: the calls past theirs end, the earliest of
/// the others sets it again. With one timeout for every call this fires about once per
/// timeout, and a call costs no timer of its own.
fn deadlines(st: &mut State, timer: &mut Option<Pin<Box<Sleep>>>, cx: &mut Context<'_>) {
    while let Some(at) = st.next_deadline {
        let t = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
        if t.deadline() != at {
            t.as_mut().reset(at);
        }
        if t.as_mut().poll(cx).is_pending() {
            return;
        }
        st.expire(Instant::now());
    }
}

/// One wakeup of the driver: read everything, handle it, write everything.
fn drive(
    state: &Rc<RefCell<State>>,
    io: &mut Io,
    max_frame: usize,
    cx: &mut Context<'_>,
) -> Poll<()> {
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
        let mut rb = ReadBuf::new(&mut st.rbuf[st.filled..]);
        match Pin::new(&mut *io).poll_read(cx, &mut rb) {
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
    match flush(st, io, cx) {
        Poll::Pending => return Poll::Pending,
        Poll::Ready(false) => return Poll::Ready(()),
        Poll::Ready(true) => {}
    }
    if st.closing && st.conn.active_streams() == 0 {
        if !st.shut {
            // the GOAWAY, then our FIN
            st.conn.go_away();
            match flush(st, io, cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(false) => return Poll::Ready(()),
                Poll::Ready(true) => {}
            }
            match Pin::new(&mut *io).poll_shutdown(cx) {
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

/// Writes the connection's output until it is empty or the socket is full (pending); a
/// connection that died of a protocol error still writes its GOAWAY. `false` when the
/// connection is dead.
fn flush(st: &mut State, io: &mut Io, cx: &mut Context<'_>) -> Poll<bool> {
    while !st.conn.output().is_empty() && !matches!(st.dead, Some(Dead::Io(_))) {
        match Pin::new(&mut *io).poll_write(cx, st.conn.output()) {
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

impl Handle {
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
    #[allow(clippy::too_many_arguments)]
    pub async fn unary(
        &self,
        ledger: &Ledger,
        call: &Call,
        request: &Bytes,
        rx: &mut BytesMut,
        max_message: usize,
        progress: &Progress,
        deadline: Option<Instant>,
    ) -> Option<Result<Bytes, CallError>> {
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
        let _in_flight = super::InFlight::new(ledger);
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
        let id = match ready!(open_stream(&mut st, self.token, call, headers_only, cx)) {
            Ok(id) => id,
            Err(e) => return Poll::Ready(Some(Err(e))),
        };
        if !headers_only {
            st.conn.send_data(id, request, true);
        }
        Poll::Ready(Some(Ok(id)))
    }
}

/// Opens a stream for slot `token` with `call`'s header fields, once the server's SETTINGS and
/// its stream limit allow; the driver is woken to write it.
fn open_stream(
    st: &mut State,
    token: usize,
    call: &Call,
    end_stream: bool,
    cx: &mut Context<'_>,
) -> Poll<Result<u32, CallError>> {
    if let Some(d) = &st.dead {
        return Poll::Ready(Err(never_sent(d.failure())));
    }
    match st
        .conn
        .open_keyed(token, call.key, call.fields(), end_stream)
    {
        Ok(id) => {
            st.slots[token].stream = id;
            st.wake_driver();
            Poll::Ready(Ok(id))
        }
        Err(OpenError::NotReady | OpenError::Busy) => {
            st.waiting.push_back(cx.waker().clone());
            // the deadline wakes it through its slot
            st.slots[token].wait(cx);
            Poll::Pending
        }
        Err(OpenError::Closing) => Poll::Ready(Err(never_sent(Failure::with(
            FailureKind::Goaway,
            "the connection is going away",
        )))),
    }
}

fn never_sent(failure: Failure) -> CallError {
    CallError {
        status: None,
        failure,
        conn_broken: true,
        unprocessed: true,
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

/// The head of a bidi stream's response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamHead {
    pub status: u16,
    /// the head carried a grpc-status: a trailers-only answer, the stream is over
    pub trailers_only: bool,
    /// that grpc-status, parsed
    pub grpc_status: Option<Result<Code, grpc::Error>>,
    /// its grpc-message, percent-decoded
    pub message: Option<String>,
}

/// A bidirectional stream on a wire-client connection (etcd's Watch): messages go out as DATA
/// without END_STREAM, what arrives is read as it comes. Dropping it resets the stream.
pub struct Bidi {
    state: Rc<RefCell<State>>,
    token: usize,
    stream: u32,
}

impl Handle {
    /// Opens a bidi stream of `call` (HEADERS without END_STREAM); `max_message` bounds what it
    /// may hold unread.
    pub async fn bidi(
        &self,
        ledger: &Ledger,
        call: &Call,
        max_message: usize,
    ) -> Result<Bidi, CallError> {
        let token = self.state.borrow_mut().take_slot(call, max_message);
        self.state.borrow_mut().slots[token].streaming = true;
        let mut bidi = Bidi {
            state: self.state.clone(),
            token,
            stream: 0,
        };
        bidi.stream =
            poll_fn(|cx| open_stream(&mut bidi.state.borrow_mut(), token, call, false, cx)).await?;
        ledger.count_request();
        if ledger.h2.is_some() {
            ledger.h2_header_lists(call.header_list_bytes, 0);
        }
        Ok(bidi)
    }
}

impl Bidi {
    /// Queues `message` (already gRPC-framed) on the stream; `last` ends our side with it.
    pub fn send(&self, message: &[u8], last: bool) {
        let mut st = self.state.borrow_mut();
        st.conn.send_data(self.stream, message, last);
        st.wake_driver();
    }

    /// The uncompressed size of the response's header lists so far (head and trailers).
    pub fn header_bytes_in(&self) -> u64 {
        self.state.borrow().slots[self.token].header_bytes_in
    }

    /// Once the stream ended: whether trailers came, their grpc-status (or a trailers-only
    /// head's) and grpc-message.
    pub fn trailers(&self) -> (bool, Option<Result<Code, grpc::Error>>, Vec<u8>) {
        let st = self.state.borrow();
        let s = &st.slots[self.token];
        match s.head_grpc {
            Some(head) => (true, Some(head), s.message.clone()),
            None => (s.trailers_seen, s.trailer_grpc, s.message.clone()),
        }
    }

    /// Waits for the response head.
    pub async fn head(&self) -> Result<StreamHead, Failure> {
        poll_fn(|cx| {
            let mut st = self.state.borrow_mut();
            let s = &mut st.slots[self.token];
            // a head that came is the answer, even if a reset followed it (a trailers-only
            // answer to a stream still open on our side ends with RST_STREAM NO_ERROR)
            if !s.head_seen {
                if let Some(Err(e)) = &s.outcome {
                    return Poll::Ready(Err(e.failure.clone()));
                }
                s.wait(cx);
                return Poll::Pending;
            }
            let message = (!s.message.is_empty()).then(|| {
                let mut text = String::new();
                wirebench_wire::grpc::decode_message_text(&s.message, MAX_MESSAGE_TEXT, &mut text);
                text
            });
            Poll::Ready(Ok(StreamHead {
                status: s.status,
                trailers_only: s.head_grpc.is_some(),
                grpc_status: s.head_grpc,
                message,
            }))
        })
        .await
    }

    /// Appends what arrived to `into`, waiting for something: `Ok(true)` with bytes,
    /// `Ok(false)` once the server ended the stream and everything was read.
    pub async fn recv(&self, into: &mut BytesMut) -> Result<bool, Failure> {
        poll_fn(|cx| {
            let mut st = self.state.borrow_mut();
            let s = &mut st.slots[self.token];
            if !s.rx.is_empty() {
                into.extend_from_slice(&s.rx);
                s.rx.clear();
                return Poll::Ready(Ok(true));
            }
            if let Some(Err(e)) = &s.outcome {
                return Poll::Ready(Err(e.failure.clone()));
            }
            if s.ended {
                return Poll::Ready(Ok(false));
            }
            s.wait(cx);
            Poll::Pending
        })
        .await
    }
}

impl Drop for Bidi {
    fn drop(&mut self) {
        let mut st = self.state.borrow_mut();
        if self.stream != 0 {
            // cancels what the stream still does (etcd: its watches); nothing if it is over
            st.conn.reset(self.stream, Reason::CANCEL);
            st.wake_driver();
        }
        let s = &mut st.slots[self.token];
        s.outcome = None;
        s.waker = None;
        s.streaming = false;
        st.free.push(self.token);
    }
}
