//! gRPC clients, and plain HTTP/2 clients (`--proto h2`): spread over shared h2 connections
//! (`ConnSlot`), each client one stream in flight: the unary (and streaming) `Session`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Instant;

use bytes::BytesMut;
use serde_json::Value;
use tokio::sync::Notify;

use crate::client::grpc::{self as grpc_client, CallError, Conn, Progress};
use crate::client::stream::{self, Plan};
use crate::config::BidiMode;
use crate::net::Ledger;
use crate::outcome::{Failure, FailureKind, StatusKey};
use crate::stats::StreamFigures;
use crate::workload::{ClientWork, GrpcWork, OverH2, reauthenticate_grpc};
use wirebench_wire::grpc::Code;

use super::plan::connect_turn;
use super::session::{Exchange, Session, drive};
use super::worker::{Trace, Turn, Worker};
use super::{Assignment, Ctx, EngineError};

/// Attempts after the first for a request the server refused unprocessed.
const MAX_RETRIES: u32 = 3;

/// One h2 connection slot: the live connection, replaced when it dies.
pub(super) struct ConnSlot {
    pub(super) endpoint: usize,
    conn: RefCell<Option<Conn>>,
    /// bumped on every new connection so clients notice their cached handle is stale
    generation: Cell<u64>,
    connecting: Cell<bool>,
    connected: Notify,
    /// `--requests-per-conn`: calls the current connection may still take
    budget: Cell<u64>,
    /// the member the current connection goes to (failover moves slots)
    member: Cell<usize>,
}

/// A client's cached handle to its slot's current connection.
pub(super) struct ConnHandle {
    pub(super) generation: u64,
    pub(super) send: grpc_client::Sender,
    pub(super) ledger: Rc<Ledger>,
    /// the connection's local port (the request log's connection)
    pub(super) port: u16,
}

/// A connection for endpoint slot `endpoint`, to the member the slot goes to now.
async fn connect(ctx: &Ctx, endpoint: usize) -> Result<Conn, EngineError> {
    let member = ctx.member(endpoint);
    let addr = ctx.addrs[member].clone();
    Conn::connect(&addr, &ctx.hosts[member], endpoint, &ctx.net, &ctx.h2)
        .await
        .map_err(|source| EngineError::Connect { addr, source })
}

pub(super) async fn setup(ctx: &Ctx, a: &Assignment) -> Result<Vec<Rc<ConnSlot>>, EngineError> {
    let mut slots = Vec::with_capacity(a.conns.len());
    let t0 = Instant::now();
    for (j, &endpoint) in a.conns.iter().enumerate() {
        // --requests-per-conn: no connection before the start; the first call opens it
        let conn = match ctx.requests_per_conn {
            Some(_) => None,
            None => {
                connect_turn(ctx, a, j, t0).await;
                Some(connect(ctx, endpoint).await?)
            }
        };
        slots.push(Rc::new(ConnSlot {
            endpoint,
            conn: RefCell::new(conn),
            generation: Cell::new(1),
            connecting: Cell::new(false),
            connected: Notify::new(),
            budget: Cell::new(ctx.requests_per_conn.unwrap_or(0)),
            member: Cell::new(endpoint),
        }));
    }
    Ok(slots)
}

impl ConnSlot {
    /// Closes a dead connection in the background; its record joins the stats at the end.
    fn retire(&self, w: &Worker) {
        let dead = {
            let mut c = self.conn.borrow_mut();
            if c.as_ref().is_some_and(Conn::is_dead) {
                c.take()
            } else {
                None
            }
        };
        if let Some(conn) = dead {
            w.closer.spawn(conn.close(w.ctx.timeout));
        }
    }

    /// Ensures `handle` points at a live connection, reconnecting if needed. With
    /// `--requests-per-conn N` each connection is handed out for N calls, then replaced (it
    /// closes once its streams are done).
    pub(super) async fn acquire(
        &self,
        w: &Worker,
        handle: &mut Option<ConnHandle>,
    ) -> Result<(), Failure> {
        let churn = w.ctx.requests_per_conn;
        loop {
            if churn.is_some()
                && self.budget.get() == 0
                && let Some(conn) = self.conn.borrow().as_ref()
            {
                conn.mark_dead();
            }
            // the slot was moved to another member: replace the connection
            if w.ctx.routes.is_some()
                && w.ctx.member(self.endpoint) != self.member.get()
                && let Some(conn) = self.conn.borrow().as_ref()
            {
                conn.mark_dead();
            }
            if let Some(conn) = self.conn.borrow().as_ref()
                && !conn.is_dead()
            {
                if churn.is_some() {
                    self.budget.set(self.budget.get() - 1);
                }
                let generation = self.generation.get();
                if handle.as_ref().is_none_or(|h| h.generation != generation) {
                    *handle = Some(ConnHandle {
                        generation,
                        send: conn.handle(),
                        ledger: conn.ledger().clone(),
                        port: conn.local_port(),
                    });
                }
                return Ok(());
            }
            if self.connecting.get() {
                self.connected.notified().await;
                continue;
            }
            self.connecting.set(true);
            self.retire(w);
            // boxed: a connect (TLS handshake included) is a large future that every client's
            // future would otherwise carry, and there may be 100,000 of them
            let member = w.ctx.member(self.endpoint);
            let result = Box::pin(connect(&w.ctx, self.endpoint)).await;
            self.connecting.set(false);
            self.connected.notify_waiters();
            let conn = result.map_err(|e| Failure::with(FailureKind::Connect, e))?;
            *self.conn.borrow_mut() = Some(conn);
            self.member.set(member);
            self.budget.set(churn.unwrap_or(0));
            self.generation.set(self.generation.get() + 1);
            w.stats.borrow_mut().reconnects += 1;
        }
    }

    /// One request on this slot's connection, sent again when the server provably did not
    /// process it: after GOAWAY on a new connection (the old one is marked dead), after
    /// REFUSED_STREAM on the same one unless it broke. At most MAX_RETRIES times, all within
    /// the request timeout: each step waits until the one deadline (no clock read of its own),
    /// and only one step's future is alive at a time, which keeps every client's future small.
    /// Err(()): no answer by `deadline`.
    async fn unary(
        &self,
        w: &Worker,
        handle: &mut Option<ConnHandle>,
        (call, body): (&grpc_client::Call, &bytes::Bytes),
        (rx, max_message): (&mut BytesMut, usize),
        progress: &Progress,
        deadline: tokio::time::Instant,
    ) -> Result<Result<bytes::Bytes, CallError>, ()> {
        let mut retries = 0;
        loop {
            let Some(h) = handle.as_mut() else {
                break Ok(Err(CallError::plain(Failure::new(FailureKind::Connect))));
            };
            let generation = h.generation;
            let req = grpc_client::Request {
                call,
                bytes: body,
                max_message,
            };
            let call =
                grpc_client::unary_sent(&mut h.send, &h.ledger, req, rx, progress, Some(deadline));
            let Some(r) = call.await else {
                break Err(());
            };
            if let Err(e) = &r
                && e.conn_broken
            {
                self.mark_dead(generation);
            }
            match r {
                Err(e) if e.unprocessed && retries < MAX_RETRIES => {
                    retries += 1;
                    w.stats.borrow_mut().retried += 1;
                    let acquire = tokio::time::timeout_at(deadline, self.acquire(w, handle));
                    match Box::pin(acquire).await {
                        Ok(Ok(())) => {}
                        Ok(Err(f)) => break Ok(Err(CallError::plain(f))),
                        Err(_) => break Err(()),
                    }
                }
                other => break Ok(other),
            }
        }
    }

    fn mark_dead(&self, generation: u64) {
        if self.generation.get() == generation
            && let Some(c) = self.conn.borrow().as_ref()
        {
            c.mark_dead();
        }
    }
}

/// Runs the clients of `a` on `slots`, each the session `client` makes: this module's unary
/// one (`Unary::new`), or the bidi stream one of `engine::bidi` (lease keepalives), as the
/// thread picks.
pub(super) async fn run<S, M>(w: Rc<Worker>, a: &Assignment, slots: &[Rc<ConnSlot>], client: M)
where
    S: Session + 'static,
    M: Fn(&Worker, usize, Rc<ConnSlot>) -> S,
{
    let mut tasks = Vec::with_capacity(a.clients.len());
    for &(id, k) in &a.clients {
        let mut session = client(&w, id, slots[k].clone());
        let w = w.clone();
        tasks.push(tokio::task::spawn_local(async move {
            drive(&w, id, &mut session).await;
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

/// Starts closing every connection of `slots` (the records are collected with the others).
pub(super) fn close(w: &Worker, slots: Vec<Rc<ConnSlot>>) {
    let linger = w.ctx.timeout;
    for slot in slots {
        let conn = slot.conn.borrow_mut().take();
        if let Some(conn) = conn {
            w.closer.spawn(conn.close(linger));
        }
    }
}

/// One unary (or streaming) client on a shared connection.
pub(super) struct Unary {
    slot: Rc<ConnSlot>,
    handle: Option<ConnHandle>,
    /// small: the large workloads are boxed inside it
    work: OverH2,
    /// plain HTTP/2: a request with a body of its own, judged by its status as HTTP/1.1's are
    plain: bool,
    streaming: bool,
    max_message: usize,
    /// allocated by the first response, as large as it, and grown to the largest once: there
    /// may be 100,000 clients
    rx: BytesMut,
    /// set while the request after a re-authentication is in flight: at most one retry
    reauthed: bool,
}

impl Unary {
    pub(super) fn new(w: &Worker, slot: Rc<ConnSlot>, work: OverH2) -> Unary {
        let ctx = &w.ctx;
        let plain = matches!(work, OverH2::Plain(_));
        Unary {
            slot,
            handle: None,
            streaming: matches!(&work, OverH2::Grpc(g) if g.streaming_method().is_some()),
            work,
            plain,
            max_message: if plain {
                usize::try_from(ctx.max_body).unwrap_or(usize::MAX)
            } else {
                ctx.h2.max_recv_message
            },
            rx: BytesMut::new(),
            reauthed: false,
        }
    }
}

impl Session for Unary {
    fn endpoint(&self) -> usize {
        self.slot.endpoint
    }

    async fn ready(&mut self, w: &Worker) -> Result<(), Failure> {
        self.slot.acquire(w, &mut self.handle).await
    }

    async fn exchange(
        &mut self,
        w: &Worker,
        turn: Turn,
        idx: u64,
        setup_from: Option<Instant>,
    ) -> Exchange {
        let ctx = &w.ctx;
        let Unary {
            slot,
            handle,
            work,
            plain,
            streaming,
            max_message,
            rx,
            reauthed,
        } = self;
        let (plain, endpoint, warm) = (*plain, slot.endpoint, turn.warm);
        let started = Instant::now();
        if *streaming && let OverH2::Grpc(work) = work {
            // boxed, as the rare paths below: a stream's future is large, and only this kind
            // of run has it
            work.next_grpc(idx, endpoint);
            Box::pin(stream_call(
                w,
                slot,
                handle,
                work,
                turn,
                (setup_from.unwrap_or(started), started),
                rx,
            ))
            .await;
            return Exchange::Done;
        }
        // borrowed for this request (a re-authentication changes the call): the client's
        // future carries references, not copies
        let (body, call) = work.next_request(idx, endpoint);
        let progress = Progress::default();
        let deadline = tokio::time::Instant::from_std(started + ctx.timeout);
        let result = slot
            .unary(
                w,
                handle,
                (call, body),
                (rx, *max_message),
                &progress,
                deadline,
            )
            .await;
        let was_reauthed = std::mem::take(reauthed);
        let trace = Trace::on(started, handle.as_ref().map(|h| h.port));
        // a request sent again after re-authenticating was written (and counted) the first time
        if progress.sent.get() && !was_reauthed {
            w.wrote(warm);
        }
        // plain HTTP/2: judged as an HTTP/1.1 response is; a refused token takes the
        // re-authentication path below, as over gRPC
        let (result, verdict) = match result {
            Ok(Ok(body)) if !warm => match work.judge(progress.status.get(), &body) {
                Err((status, f))
                    if plain && !was_reauthed && ctx.auth.is_some() && work.token_refused(&f) =>
                {
                    let e = CallError {
                        status: Some(status),
                        ..CallError::plain(f)
                    };
                    (Ok(Err(e)), None)
                }
                v => (Ok(Ok(body)), Some(v)),
            },
            r => (r, None),
        };
        // txn-mixed: the class of the request just judged (reads and writes counted apart)
        let class = work.class();
        match result {
            // Dropping the call resets the stream (RST_STREAM CANCEL); the connection lives on.
            Err(_) => {
                w.fail(endpoint, warm, None, timed_out("no response", ctx), trace);
                w.classed(class, warm, None);
            }
            // the target no longer accepts the token: authenticate again, then send again (once)
            Ok(Err(e)) if !was_reauthed && ctx.auth.is_some() && work.token_refused(&e.failure) => {
                let Some(h) = handle.as_mut() else {
                    // no connection to authenticate on: the request fails as it came back
                    w.fail(endpoint, warm, e.status, e.failure, trace);
                    w.classed(class, warm, None);
                    return Exchange::Done;
                };
                let authority = &ctx.authorities[ctx.member(slot.endpoint)];
                // boxed, as the connect: rare, and large
                let auth = reauthenticate_grpc(
                    work,
                    &mut h.send,
                    &h.ledger,
                    authority,
                    ctx.auth.as_ref(),
                    ctx.timeout,
                );
                match Box::pin(auth).await {
                    Ok(()) => {
                        w.stats.borrow_mut().reauthenticated += 1;
                        *reauthed = true;
                        return Exchange::Again;
                    }
                    Err(f) => {
                        w.fail(endpoint, warm, e.status, f, trace);
                        w.classed(class, warm, None);
                    }
                }
            }
            Ok(Err(e)) => {
                w.fail(endpoint, warm, e.status, e.failure, trace);
                w.classed(class, warm, None);
            }
            Ok(Ok(body)) => match verdict {
                // a warmup request (its verdict is not taken)
                None => w.warmup_done(),
                Some(Ok((status, ack))) => {
                    let trace = trace.bytes(body.len());
                    let latency =
                        w.ok(endpoint, turn, setup_from.unwrap_or(started), status, trace);
                    w.classed(class, warm, Some(latency));
                    w.without_setup(started);
                    w.acked(ack);
                    w.keep_sample(|| work.sample(&body));
                }
                Some(Err((status, f))) => {
                    w.fail(endpoint, warm, Some(status), f, trace.bytes(body.len()));
                    w.classed(class, warm, None);
                }
            },
        }
        Exchange::Done
    }
}

/// One streaming call of client `work` and its outcome: OK when the stream ends with
/// grpc-status 0 (a client-streaming call's with exactly one message), its messages counted
/// each way, its latency to the first message recorded, a ping-pong's each reply's, a
/// client stream's from its last message to the response (the call's latency is to its end).
/// Never retried; bounded by the request timeout. `started`: (from, ready): when its latency
/// counts from (before a `--requests-per-conn` connect) and when its connection was ready.
async fn stream_call(
    w: &Worker,
    slot: &ConnSlot,
    handle: &mut Option<ConnHandle>,
    work: &mut GrpcWork,
    turn: Turn,
    (started, ready): (Instant, Instant),
    rx: &mut BytesMut,
) {
    let ctx = &w.ctx;
    let (endpoint, warm) = (slot.endpoint, turn.warm);
    let (Some(h), Some(m)) = (handle.as_mut(), work.streaming_method()) else {
        let trace = Trace::on(ready, None);
        w.fail(
            endpoint,
            warm,
            None,
            Failure::new(FailureKind::Connect),
            trace,
        );
        return;
    };
    let generation = h.generation;
    let trace = Trace::on(ready, Some(h.port));
    let progress = Progress::default();
    // the sample: the messages of the first successful call, at most this many
    const SAMPLE_MESSAGES: usize = 100;
    let keep = if !warm && w.sample.borrow().is_none() {
        SAMPLE_MESSAGES
    } else {
        0
    };
    let (client, server) = (m.client_streaming(), m.server_streaming());
    let shape = m.stream_plan();
    let plan = Plan {
        frames: m.stream_frames(),
        messages: if client { shape.messages } else { 1 },
        span: shape.span.filter(|_| client),
        interval: shape.interval.filter(|_| client),
        pingpong: client && server && shape.bidi == BidiMode::PingPong,
        server_streaming: server,
    };
    let mut reply = |d| {
        if !warm {
            w.message_reply(d);
        }
    };
    let call = stream::stream_call(
        &mut h.send,
        &h.ledger,
        m.call(endpoint),
        ctx.h2.max_recv_message,
        plan,
        rx,
        &progress,
        keep,
        &mut reply,
    );
    let deadline = tokio::time::Instant::from_std(started + ctx.timeout);
    let result = tokio::time::timeout_at(deadline, call).await;
    if progress.sent.get() {
        w.wrote(warm);
    }
    match result {
        Err(_) => w.fail(
            endpoint,
            warm,
            None,
            timed_out("the stream did not end", ctx),
            trace,
        ),
        Ok(Err(e)) => {
            if e.conn_broken {
                slot.mark_dead(generation);
            }
            w.fail(endpoint, warm, e.status, e.failure, trace);
        }
        Ok(Ok(_)) if warm => w.warmup_done(),
        Ok(Ok(end)) => {
            let ok = StatusKey::Grpc(Code::Ok.as_u32());
            w.ok(endpoint, turn, started, ok, trace);
            w.without_setup(ready);
            w.streamed(&StreamFigures {
                sent: if client { end.sent } else { 0 },
                received: end.received,
                first: end.first_at.map(|t| t - started),
                last_to_response: match (client && !server, end.first_at, end.last_sent_at) {
                    (true, Some(first), Some(last)) => Some(first.saturating_duration_since(last)),
                    _ => None,
                },
            });
            if keep > 0 {
                w.keep_sample(|| {
                    let mut all: Vec<Value> =
                        end.kept.iter().map(|m| work.sample_grpc(m)).collect();
                    if end.received > end.kept.len() as u64 {
                        all.push(Value::String(format!(
                            "... ({} messages in all)",
                            end.received
                        )));
                    }
                    Value::Array(all)
                });
            }
        }
    }
}

/// A call that did not end within the request timeout: "`what` within 2s".
pub(super) fn timed_out(what: &str, ctx: &Ctx) -> Failure {
    Failure::with(
        FailureKind::Timeout,
        format_args!("{what} within {:?}", ctx.timeout),
    )
}
