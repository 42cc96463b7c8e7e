//! HTTP/1.1 pipelining (`--pipeline N`): up to N requests in flight on one connection, shared
//! by up to N clients.
//!
//! The clients run as their own tasks and queue their encoded requests in the pipe's write
//! buffer; one driver task per pipe moves the bytes. A wakeup of the driver writes everything
//! queued in one write call, then reads and completes every response the socket holds, in
//! order: HTTP/1.1 has no request ids, so the n-th response answers the n-th request written.
//! A client woken by its response queues its next request and wakes the driver, which the
//! runtime polls after the other woken clients, so requests that are ready together share one
//! write.
//!
//! When the connection ends with requests in flight (the server closed it, a read or write
//! failed, a response was malformed or late), the oldest request fails with that cause and
//! every request behind it as `unanswered`: never retried (a POST is not idempotent) and never
//! lost from the counts. The connection is then replaced by the next client that finds none.
//!
//! Nothing here allocates per request in steady state: each client has a reply slot whose body
//! buffer keeps its capacity, the write buffer and queue keep theirs, and the deadlines share
//! the driver's one timer (the oldest request's deadline is the only one that can pass first).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWrite};
use tokio::sync::Notify;
use tokio::time::Sleep;

use super::Conn;
use crate::client::io_failure;
use crate::outcome::{Failure, FailureKind};
use wirebench_wire::http1;

/// One pipelined connection, replaced when it dies.
pub struct Pipe {
    pub endpoint: usize,
    st: RefCell<State>,
    connected: Notify,
}

/// One queued or written request.
#[derive(Debug, Clone, Copy)]
struct Entry {
    client: usize,
    head_len: usize,
    len: usize,
    deadline: Instant,
}

/// A client's reply slot: its outcome once known, and the body of its last response.
#[derive(Default)]
struct Reply {
    outcome: Option<Result<u16, Failure>>,
    /// the request was written completely
    written: bool,
    body: BytesMut,
    waker: Option<Waker>,
}

struct State {
    conn: Option<Conn>,
    connecting: bool,
    closed: bool,
    /// requests encoded, not all written yet
    out: BytesMut,
    /// bytes of `out` already written
    out_at: usize,
    /// bytes of `out` that belong to requests counted as written
    out_counted: usize,
    /// requests in order: the first `written` are on the wire
    queue: VecDeque<Entry>,
    written: usize,
    replies: Vec<Reply>,
    driver: Option<Waker>,
    /// armed at the oldest request's deadline or earlier (deadlines only grow down the queue)
    timer: Option<Pin<Box<Sleep>>>,
    /// the request timeout, for the message of a request that passed its deadline
    timeout: Duration,
}

/// What a client's request came to.
pub struct Outcome {
    pub result: Result<u16, Failure>,
    /// the request was written completely (it counts in the window's denominator)
    pub written: bool,
}

impl Pipe {
    /// A pipe for `clients` clients (indices 0..clients) on `conn`; `timeout` is the request
    /// timeout, named when a request passes its deadline.
    pub fn new(endpoint: usize, clients: usize, conn: Conn, timeout: Duration) -> Pipe {
        let mut replies = Vec::with_capacity(clients);
        replies.resize_with(clients, Reply::default);
        Pipe {
            endpoint,
            st: RefCell::new(State {
                conn: Some(conn.pipelined()),
                connecting: false,
                closed: false,
                out: BytesMut::new(),
                out_at: 0,
                out_counted: 0,
                queue: VecDeque::with_capacity(clients),
                written: 0,
                replies,
                driver: None,
                timer: None,
                timeout,
            }),
            connected: Notify::new(),
        }
    }

    /// Ensures the pipe has a live connection: returns at once if it has, waits if another
    /// client is connecting, otherwise connects with `connect`. `Ok(true)`: this call made a new
    /// connection; a connect error is a `connect` failure with its words.
    pub async fn acquire<F, E>(&self, connect: impl FnOnce() -> F) -> Result<bool, Failure>
    where
        F: Future<Output = Result<Conn, E>>,
        E: std::fmt::Display,
    {
        loop {
            let (live, connecting) = {
                let st = self.st.borrow();
                (st.conn.is_some(), st.connecting)
            };
            if live {
                return Ok(false);
            }
            if connecting {
                self.connected.notified().await;
                continue;
            }
            self.st.borrow_mut().connecting = true;
            let result = connect().await;
            let mut st = self.st.borrow_mut();
            st.connecting = false;
            self.connected.notify_waiters();
            let conn = result.map_err(|e| Failure::with(FailureKind::Connect, e))?;
            st.conn = Some(conn.pipelined());
            if let Some(w) = &st.driver {
                w.wake_by_ref();
            }
            return Ok(true);
        }
    }

    /// Queues client `client`'s request, encoded by `encode` into the pipe's write buffer
    /// (returning its head length), to be written with whatever else is queued; it fails unless
    /// answered by `deadline`. Await its outcome with [`Pipe::outcome`].
    pub fn submit(
        &self,
        client: usize,
        deadline: Instant,
        encode: impl FnOnce(&mut BytesMut) -> usize,
    ) {
        let mut st = self.st.borrow_mut();
        let st = &mut *st;
        let start = st.out.len();
        let head_len = encode(&mut st.out);
        let len = st.out.len() - start;
        let reply = &mut st.replies[client];
        reply.outcome = None;
        reply.written = false;
        st.queue.push_back(Entry {
            client,
            head_len,
            len,
            deadline,
        });
        if let Some(w) = &st.driver {
            w.wake_by_ref();
        }
    }

    /// The local port of the connection the pipe has now (None: none).
    pub fn local_port(&self) -> Option<u16> {
        self.st.borrow().conn.as_ref().map(Conn::local_port)
    }

    /// The outcome of client `client`'s queued request.
    pub fn outcome(&self, client: usize) -> impl Future<Output = Outcome> + '_ {
        poll_fn(move |cx| {
            let mut st = self.st.borrow_mut();
            let reply = &mut st.replies[client];
            match reply.outcome.take() {
                Some(result) => Poll::Ready(Outcome {
                    result,
                    written: reply.written,
                }),
                None => {
                    if !reply
                        .waker
                        .as_ref()
                        .is_some_and(|w| w.will_wake(cx.waker()))
                    {
                        reply.waker = Some(cx.waker().clone());
                    }
                    Poll::Pending
                }
            }
        })
    }

    /// Runs `f` over the body of client `client`'s last response.
    pub fn with_body<R>(&self, client: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        f(&self.st.borrow().replies[client].body)
    }

    /// The driver: moves bytes until a connection ends (returned, to be closed) or the pipe is
    /// closed (`None`).
    pub fn drive(&self) -> impl Future<Output = Option<Conn>> + '_ {
        poll_fn(move |cx| self.poll_drive(cx))
    }

    /// Ends the pipe: the driver stops; returns the connection to close.
    pub fn close(&self) -> Option<Conn> {
        let mut st = self.st.borrow_mut();
        st.closed = true;
        if let Some(w) = st.driver.take() {
            w.wake();
        }
        st.conn.take()
    }

    fn poll_drive(&self, cx: &mut Context<'_>) -> Poll<Option<Conn>> {
        let mut guard = self.st.borrow_mut();
        let st = &mut *guard;
        if st.closed {
            return Poll::Ready(None);
        }
        if !st.driver.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            st.driver = Some(cx.waker().clone());
        }
        let Some(mut conn) = st.conn.take() else {
            return Poll::Pending;
        };
        match st.pump(&mut conn, cx) {
            Ok(true) => {
                st.conn = Some(conn);
                Poll::Pending
            }
            // the server asked to close after a response: what follows it goes unanswered
            Ok(false) => {
                st.end(None);
                Poll::Ready(Some(conn))
            }
            Err(f) => {
                conn.reusable = false;
                st.end(Some(f));
                Poll::Ready(Some(conn))
            }
        }
    }
}

impl State {
    /// Writes what is queued, completes what the socket holds, watches the oldest deadline.
    /// `Ok(false)`: the connection may carry no more requests.
    fn pump(&mut self, conn: &mut Conn, cx: &mut Context<'_>) -> Result<bool, Failure> {
        while self.out_at < self.out.len() {
            match Pin::new(&mut conn.io).poll_write(cx, &self.out[self.out_at..]) {
                Poll::Ready(Ok(0)) => {
                    return Err(Failure::with(FailureKind::Io, "the socket took no bytes"));
                }
                Poll::Ready(Ok(n)) => {
                    self.out_at += n;
                    self.count_written(conn);
                }
                Poll::Ready(Err(e)) => return Err(io_failure(&e)),
                Poll::Pending => break,
            }
        }
        if self.out_at == self.out.len() {
            self.out.clear();
            self.out_at = 0;
            self.out_counted = 0;
        }
        while self.written > 0 {
            let complete = match conn.reader.poll(&mut conn.rbuf, &mut conn.body) {
                Ok(Some(response)) => response,
                Ok(None) => match pin!(conn.io.read_buf(&mut conn.rbuf)).poll(cx) {
                    Poll::Pending => break,
                    Poll::Ready(Ok(0)) => match conn.reader.eof(&conn.rbuf) {
                        Ok(response) => response,
                        Err(e) => return Err(http1_failure(e)),
                    },
                    Poll::Ready(Ok(_)) => continue,
                    Poll::Ready(Err(e)) => return Err(io_failure(&e)),
                },
                Err(e) => return Err(http1_failure(e)),
            };
            conn.ledger.http1_response(
                complete.head_len,
                complete.body_len(),
                complete.chunk_framing,
            );
            let Some(entry) = self.queue.pop_front() else {
                break;
            };
            self.written -= 1;
            let reply = &mut self.replies[entry.client];
            reply.body.clear();
            reply
                .body
                .extend_from_slice(complete.body(&conn.rbuf, &conn.body));
            reply.outcome = Some(Ok(complete.status));
            if let Some(w) = reply.waker.take() {
                w.wake();
            }
            let keep_alive = complete.keep_alive;
            conn.reader.next_response(&mut conn.rbuf);
            if !keep_alive {
                conn.reusable = false;
                return Ok(false);
            }
        }
        // the oldest request's deadline: one timer for all
        if let Some(front) = self.queue.front() {
            let deadline = tokio::time::Instant::from_std(front.deadline);
            let timer = self
                .timer
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
            if timer.deadline() > deadline {
                timer.as_mut().reset(deadline);
            }
            while timer.as_mut().poll(cx).is_ready() {
                let front = match self.queue.front() {
                    Some(f) => f.deadline,
                    None => break,
                };
                if front <= Instant::now() {
                    return Err(Failure::with(
                        FailureKind::Timeout,
                        format_args!("no response within {:?}", self.timeout),
                    ));
                }
                timer.as_mut().reset(tokio::time::Instant::from_std(front));
            }
        }
        Ok(true)
    }

    /// Counts the requests whose last byte is now written.
    fn count_written(&mut self, conn: &Conn) {
        while let Some(e) = self.queue.get(self.written) {
            if self.out_counted + e.len > self.out_at {
                break;
            }
            self.out_counted += e.len;
            self.written += 1;
            conn.ledger.count_request();
            conn.ledger.http1_request(e.head_len, e.len - e.head_len);
            self.replies[e.client].written = true;
        }
    }

    /// The connection ended: the oldest request in flight fails with `cause` (when there is
    /// one), every other queued request as unanswered.
    fn end(&mut self, mut cause: Option<Failure>) {
        for e in self.queue.drain(..) {
            let f = cause.take().unwrap_or_else(|| {
                Failure::with(
                    FailureKind::Unanswered,
                    "pipelined: the connection ended before its response",
                )
            });
            let reply = &mut self.replies[e.client];
            reply.outcome = Some(Err(f));
            if let Some(w) = reply.waker.take() {
                w.wake();
            }
        }
        self.written = 0;
        self.out.clear();
        self.out_at = 0;
        self.out_counted = 0;
        self.timer = None;
    }
}

fn http1_failure(e: http1::Error) -> Failure {
    match e {
        http1::Error::Truncated => {
            Failure::with(FailureKind::Closed, "server closed the connection")
        }
        e => Failure::with(FailureKind::Http1, e),
    }
}
