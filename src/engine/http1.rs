//! HTTP/1.1 clients, each owning one keepalive connection with one request in flight: the
//! HTTP/1.1 `Session`. (With `--pipeline N`, up to N clients share one: `pipeline.rs`.)

use std::pin::Pin;
use std::rc::Rc;
use std::time::Instant;

use bytes::BytesMut;

use crate::client::http1::Conn;
use crate::config::Staged;
use crate::outcome::{Failure, FailureKind};
use crate::workload::{ClientWork, Http1Work, OnStack, reauthenticate_http};

use super::closer::CLOSE_BOUND;
use super::plan::connect_turn;
use super::session::{Exchange, Session, drive};
use super::worker::{Trace, Turn, Worker};
use super::{Assignment, Ctx, EngineError};

/// A connection for endpoint slot `endpoint`, to the member the slot goes to now.
pub(super) async fn connect(ctx: &Ctx, endpoint: usize) -> Result<Conn, EngineError> {
    let member = ctx.member(endpoint);
    let addr = ctx.addrs[member].clone();
    let conn = Conn::connect(
        &addr,
        &ctx.hosts[member],
        endpoint,
        &ctx.net,
        ctx.max_body,
        ctx.layers,
    )
    .await
    .map_err(|source| EngineError::Connect { addr, source })?;
    Ok(
        if matches!(&ctx.work, OnStack::Http1(w) if w.head_requests()) {
            conn.head_requests()
        } else {
            conn
        },
    )
}

/// Opens every client's connection before the start line (none with `--requests-per-conn`: the
/// connect is part of each client's first request).
pub(super) async fn setup(ctx: &Ctx, a: &Assignment) -> Result<Vec<Option<Conn>>, EngineError> {
    let mut conns = Vec::with_capacity(a.clients.len());
    if ctx.requests_per_conn.is_some() {
        conns.resize_with(a.clients.len(), || None);
        return Ok(conns);
    }
    // --client-stages: a client joins with its connection when its stretch begins
    let first = match &ctx.staged {
        Some(crate::config::Staged::Clients(st)) => st.start_level() as usize,
        _ => usize::MAX,
    };
    let t0 = Instant::now();
    for (j, &(id, endpoint)) in a.clients.iter().enumerate() {
        if id >= first {
            conns.push(None);
            continue;
        }
        connect_turn(ctx, a, j, t0).await;
        conns.push(Some(connect(ctx, endpoint).await?));
    }
    Ok(conns)
}

/// Runs every client; returns the connections still open, to be closed after the window.
pub(super) async fn run(
    w: Rc<Worker>,
    a: &Assignment,
    conns: Vec<Option<Conn>>,
    work: &Http1Work,
) -> Vec<Conn> {
    let mut tasks = Vec::with_capacity(conns.len());
    for (&(id, endpoint), conn) in a.clients.iter().zip(conns) {
        let mut client = Client::new(&w, endpoint, conn, work.for_client(id as u64));
        let w = w.clone();
        tasks.push(tokio::task::spawn_local(async move {
            drive(&w, id, &mut client).await;
            client.conn
        }));
    }
    let mut open = Vec::with_capacity(tasks.len());
    for t in tasks {
        // A client task only ends by returning; a JoinError would mean a panic, already reported.
        if let Ok(Some(c)) = t.await {
            open.push(c);
        }
    }
    open
}

/// Closes a connection replaced mid-run in the background; its record joins the stats at the
/// end.
pub(super) fn retire(w: &Worker, c: Conn) {
    w.closer.spawn(c.close(CLOSE_BOUND));
}

/// One client: its connection and what it sends.
pub(super) struct Client {
    pub(super) endpoint: usize,
    pub(super) conn: Option<Conn>,
    pub(super) work: Http1Work,
    /// sized by the first request (and grown to the largest): there may be 100,000 clients
    pub(super) wbuf: BytesMut,
    /// the request deadline's timer, one for the client's life (see `within`)
    timer: Pin<Box<tokio::time::Sleep>>,
    /// the client has no connection because of its stretch (it joins later, or paused): the
    /// next connect is no reconnect
    paused: bool,
    /// the member the connection goes to (failover moves slots)
    conn_member: usize,
    /// the request at hand is the one sent again after re-authenticating (at most once)
    reauthed: bool,
}

impl Client {
    pub(super) fn new(w: &Worker, endpoint: usize, conn: Option<Conn>, work: Http1Work) -> Client {
        let ctx = &w.ctx;
        Client {
            endpoint,
            // --client-stages: a client joins with its connection when its stretch begins
            paused: matches!(ctx.staged, Some(Staged::Clients(_))) && conn.is_none(),
            conn,
            work,
            wbuf: BytesMut::new(),
            timer: Box::pin(tokio::time::sleep(ctx.timeout)),
            conn_member: endpoint,
            reauthed: false,
        }
    }
}

impl Session for Client {
    fn endpoint(&self) -> usize {
        self.endpoint
    }

    fn pause(&mut self, w: &Worker) {
        if let Some(c) = self.conn.take() {
            retire(w, c);
            self.paused = true;
        }
    }

    async fn ready(&mut self, w: &Worker) -> Result<(), Failure> {
        let ctx = &w.ctx;
        // the slot was moved to another member: this connection goes, the next one goes there
        if ctx.routes.is_some()
            && self.conn.is_some()
            && ctx.member(self.endpoint) != self.conn_member
            && let Some(c) = self.conn.take()
        {
            retire(w, c);
        }
        if self.conn.is_some() {
            return Ok(());
        }
        // boxed: a connect (TLS handshake included) is a large future that every client's
        // future would otherwise carry, and there may be 100,000 of them
        let c = Box::pin(connect(ctx, self.endpoint))
            .await
            .map_err(|e| Failure::with(FailureKind::Connect, e))?;
        if !std::mem::take(&mut self.paused) {
            w.stats.borrow_mut().reconnects += 1;
        }
        self.conn_member = ctx.member(self.endpoint);
        self.conn = Some(c);
        Ok(())
    }

    async fn exchange(
        &mut self,
        w: &Worker,
        turn: Turn,
        idx: u64,
        setup_from: Option<Instant>,
    ) -> Exchange {
        let ctx = &w.ctx;
        let (endpoint, warm) = (self.endpoint, turn.warm);
        let Client {
            conn,
            work,
            wbuf,
            timer,
            ..
        } = self;
        let Some(c) = conn.as_mut() else {
            // `ready` left a connection: none is a bug, counted as a failed connect
            w.fail(
                endpoint,
                warm,
                None,
                Failure::new(FailureKind::Connect),
                Trace::default(),
            );
            return Exchange::Done;
        };
        let started = Instant::now();
        wbuf.clear();
        let head_len = work.encode_http(idx, endpoint, wbuf);
        let before = c.requests_written();
        let trace = Trace::on(started, Some(c.local_port()));
        let deadline = tokio::time::Instant::from_std(started + ctx.timeout);
        let result = within(timer.as_mut(), deadline, c.round_trip(wbuf, head_len)).await;
        let answer = match result {
            Err(_) => Answer::TimedOut,
            Ok(Err(f)) => Answer::Failed(f),
            Ok(Ok(resp)) => Answer::Response(resp),
        };
        let may_reauth = !self.reauthed && ctx.auth.is_some();
        let at = Sent {
            endpoint,
            turn,
            started: setup_from.unwrap_or(started),
            ready: started,
            trace,
        };
        let (keep, needs_auth) = record(w, work, at, answer, may_reauth);
        let mut keep = keep && c.reusable();
        let class = work.class();
        // a request sent again after re-authenticating was written (and counted) the first time
        if c.requests_written() > before && !self.reauthed {
            w.wrote(warm);
        }
        self.reauthed = false;
        if needs_auth {
            let authority = &ctx.authorities[ctx.member(endpoint)];
            let creds = ctx.auth.as_ref();
            // boxed: rare, and large
            let auth = Box::pin(reauthenticate_http(work, c, authority, creds, ctx.timeout));
            match auth.await {
                Ok(()) => {
                    w.stats.borrow_mut().reauthenticated += 1;
                    self.reauthed = true;
                    return Exchange::Again;
                }
                Err(f) => {
                    // the authentication's answer may still come: the framing is unknown now
                    keep &= f.kind != FailureKind::Timeout;
                    w.fail(endpoint, warm, None, f, trace);
                    w.classed(class, warm, None);
                }
            }
        }
        // --requests-per-conn: this connection has carried its share
        let spent = ctx
            .requests_per_conn
            .is_some_and(|n| c.requests_written() >= n);
        if (!keep || spent || !c.reusable())
            && let Some(c) = conn.take()
        {
            retire(w, c);
        }
        Exchange::Done
    }
}

/// A request as it went: its client's endpoint, its turn, when its latency counts from
/// (`started`: before the connect with `--requests-per-conn`) and when its connection was ready,
/// and its trace.
pub(super) struct Sent {
    pub(super) endpoint: usize,
    pub(super) turn: Turn,
    pub(super) started: Instant,
    pub(super) ready: Instant,
    pub(super) trace: Trace,
}

impl Sent {
    /// A request of a connection that was ready when it started (its latency counts from
    /// `started`), on the connection of local port `port`.
    pub(super) fn ready_at(
        endpoint: usize,
        turn: Turn,
        started: Instant,
        port: Option<u16>,
    ) -> Sent {
        Sent {
            endpoint,
            turn,
            started,
            ready: started,
            trace: Trace::on(started, port),
        }
    }
}

/// What became of a request on an HTTP/1.1 connection.
pub(super) enum Answer<'a> {
    /// no response within the timeout
    TimedOut,
    Failed(Failure),
    Response(crate::client::http1::Response<'a>),
}

/// Records the answer to request `at` (the tokio client and the readiness loop alike).
/// Returns whether its connection may carry the next request as far as the answer goes (a
/// timeout leaves its framing unknown; the connection has its own say too) and whether the
/// target refused the token and `may_reauth` lets the client authenticate and send again.
pub(super) fn record(
    w: &Worker,
    work: &Http1Work,
    at: Sent,
    answer: Answer<'_>,
    may_reauth: bool,
) -> (bool, bool) {
    let Sent {
        endpoint,
        turn,
        started,
        ready,
        trace,
    } = at;
    let warm = turn.warm;
    // txn-mixed: the class of the request at hand (reads and writes counted apart)
    let class = work.class();
    match answer {
        Answer::TimedOut => {
            w.fail(
                endpoint,
                warm,
                None,
                Failure::with(
                    FailureKind::Timeout,
                    format_args!("no response within {:?}", w.ctx.timeout),
                ),
                trace,
            );
            w.classed(class, warm, None);
            // The response may still arrive: this connection's framing is unknown now.
            (false, false)
        }
        Answer::Failed(f) => {
            w.fail(endpoint, warm, None, f, trace);
            w.classed(class, warm, None);
            (true, false)
        }
        Answer::Response(resp) => {
            match work.check_http(resp.status, resp.body) {
                // the target no longer accepts the token: authenticate again, send again
                Err((_, f)) if may_reauth && work.token_refused(&f) => return (true, true),
                _ if warm => w.warmup_done(),
                Ok((status, ack)) => {
                    let trace = trace.bytes(resp.body.len());
                    let done = resp.done.unwrap_or_else(Instant::now);
                    let latency = w.ok_at(endpoint, turn, started, done, status, trace);
                    w.classed(class, warm, Some(latency));
                    w.without_setup(ready);
                    w.acked(ack);
                    w.keep_sample(|| work.sample_http(resp.body));
                }
                Err((status, f)) => {
                    w.fail(
                        endpoint,
                        warm,
                        Some(status),
                        f,
                        trace.bytes(resp.body.len()),
                    );
                    w.classed(class, warm, None);
                }
            }
            (true, false)
        }
    }
}

/// Runs `fut` until `deadline`; `Err(())` when the deadline passed first. `timer` is armed at
/// or before `deadline` (a client's deadlines only grow): when requests are faster than the
/// timeout it fires at most once per timeout and is then re-armed at the current deadline, so
/// a request registers no timer of its own.
async fn within<F: std::future::Future>(
    mut timer: std::pin::Pin<&mut tokio::time::Sleep>,
    deadline: tokio::time::Instant,
    fut: F,
) -> Result<F::Output, ()> {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(v) = fut.as_mut().poll(cx) {
            return std::task::Poll::Ready(Ok(v));
        }
        while timer.as_mut().poll(cx).is_ready() {
            if timer.deadline() >= deadline {
                return std::task::Poll::Ready(Err(()));
            }
            timer.as_mut().reset(deadline);
        }
        std::task::Poll::Pending
    })
    .await
}
