//! HTTP/1.1 clients: each owns one keepalive connection and keeps one request in flight, or,
//! with `--pipeline N`, up to N clients share one connection (`client::http1::pipeline`).

use std::rc::Rc;
use std::time::Instant;

use bytes::BytesMut;

use crate::client::http1::Conn;
use crate::client::http1::pipeline::Pipe;
use crate::engine::plan::{connect_turn, quota};
use crate::engine::ramp::Gate;
use crate::engine::worker::{Reconnect, Via, Worker};
use crate::engine::{Assignment, Ctx};
use crate::outcome::{Failure, FailureKind};
use crate::workload::Workload;
use crate::workload::etcd::client::{Client, is_invalid_token};

/// A connection for endpoint slot `endpoint`, to the member the slot goes to now.
async fn connect(ctx: &Ctx, endpoint: usize) -> Result<Conn, String> {
    let member = ctx.member(endpoint);
    let addr = ctx.addrs[member];
    let conn = Conn::connect(
        addr,
        &ctx.hosts[member],
        endpoint,
        &ctx.net,
        ctx.max_body,
        ctx.layers,
    )
    .await
    .map_err(|e| format!("connect to {addr}: {e}"))?;
    Ok(if ctx.workload.head_requests() {
        conn.head_requests()
    } else {
        conn
    })
}

/// Opens every client's connection before the start line (none with `--requests-per-conn`: the
/// connect is part of each client's first request).
pub(super) async fn setup(ctx: &Ctx, a: &Assignment) -> Result<Vec<Option<Conn>>, String> {
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
pub(super) async fn run(w: Rc<Worker>, a: &Assignment, conns: Vec<Option<Conn>>) -> Vec<Conn> {
    let mut tasks = Vec::with_capacity(conns.len());
    for (&(id, endpoint), conn) in a.clients.iter().zip(conns) {
        tasks.push(tokio::task::spawn_local(client(
            w.clone(),
            id,
            endpoint,
            conn,
        )));
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
fn retire(w: &Worker, c: Conn) {
    w.closer.spawn(c.close(super::worker::CLOSE_BOUND));
}

/// One client's closed (or paced) loop; returns its connection, still open.
async fn client(w: Rc<Worker>, id: usize, endpoint: usize, mut conn: Option<Conn>) -> Option<Conn> {
    let ctx = w.ctx.clone();
    let quota = quota(&ctx, id);
    let mut work = ctx.workload.for_client(id as u64);
    // sized by the first request (and grown to the largest): there may be 100,000 clients
    let mut wbuf = BytesMut::new();
    let mut idx = id as u64;
    let mut sent = 0u64;
    let mut reconnect = Reconnect::new();
    // re-authentication: at most once per request
    let (mut needs_auth, mut reauthed) = (false, false);
    // a turn to use again: the request goes again after re-authenticating
    let mut again = None;
    // the request deadline's timer, one for the client's life (see `within`)
    let mut timer = std::pin::pin!(tokio::time::sleep(ctx.timeout));
    // --client-stages: when this client sends; while it does not, its connection is closed
    let mut gate = Gate::new(&w, id);
    // the client has no connection because of its stretch (it joins later, or paused): the
    // next connect is no reconnect
    let mut paused = gate.is_some() && conn.is_none();
    // the member this client's connection goes to (etcd failover moves slots)
    let mut conn_member = endpoint;

    while let Some(turn) = w
        .turn(
            &mut again,
            &mut gate,
            || {
                if let Some(c) = conn.take() {
                    retire(&w, c);
                    paused = true;
                }
            },
            endpoint,
            sent,
            quota,
        )
        .await
    {
        let warm = turn.warm;
        // the slot was moved to another member: this connection goes, the next one goes there
        if ctx.routes.is_some()
            && conn.is_some()
            && ctx.member(endpoint) != conn_member
            && let Some(c) = conn.take()
        {
            retire(&w, c);
        }
        // --requests-per-conn: the connect is part of the request it precedes
        let setup_from = ctx.requests_per_conn.map(|_| Instant::now());
        let c = match &mut conn {
            Some(c) => c,
            // boxed, as the rare paths below: a connect (TLS handshake included) is a large
            // future that every client's future would otherwise carry, and there may be
            // 100,000 of them
            None => match Box::pin(connect(&ctx, endpoint)).await {
                Ok(c) => {
                    reconnect.ok();
                    if !std::mem::take(&mut paused) {
                        w.stats.borrow_mut().reconnects += 1;
                    }
                    conn_member = ctx.member(endpoint);
                    conn.insert(c)
                }
                Err(e) => {
                    let f = Failure::with(FailureKind::Connect, e);
                    if Box::pin(reconnect.connect_failed(&w, endpoint, warm, &mut sent, quota, f))
                        .await
                    {
                        continue;
                    }
                    break;
                }
            },
        };

        let started = Instant::now();
        wbuf.clear();
        let head_len = work.encode_http(idx, endpoint, &mut wbuf);
        idx += ctx.clients as u64;
        sent += u64::from(!warm);
        let before = c.requests_written();
        let via = Via::on(started, Some(c.local_port()));
        let deadline = tokio::time::Instant::from_std(started + ctx.timeout);
        let result = within(timer.as_mut(), deadline, c.round_trip(&wbuf, head_len)).await;
        // txn-mixed: the class of the request at hand (reads and writes counted apart)
        let class = work.class();
        let mut keep = match result {
            Err(_) => {
                w.fail(
                    endpoint,
                    warm,
                    None,
                    Failure::with(
                        FailureKind::Timeout,
                        format_args!("no response within {:?}", ctx.timeout),
                    ),
                    via,
                );
                w.classed(class, warm, None);
                // The response may still arrive: this connection's framing is unknown now.
                false
            }
            Ok(Err(f)) => {
                w.fail(endpoint, warm, None, f, via);
                w.classed(class, warm, None);
                c.reusable()
            }
            Ok(Ok(resp)) => {
                let verdict = work.check_http(resp.status, resp.body);
                match verdict {
                    // etcd no longer accepts the token: authenticate again, then send again.
                    Err((_, f)) if !reauthed && ctx.auth.is_some() && is_invalid_token(&f) => {
                        needs_auth = true;
                    }
                    _ if warm => w.warmup_done(),
                    Ok((status, ack)) => {
                        let via = via.bytes(resp.body.len());
                        let latency =
                            w.ok(endpoint, turn, setup_from.unwrap_or(started), status, via);
                        w.classed(class, warm, Some(latency));
                        w.without_setup(started);
                        w.acked(ack);
                        w.keep_sample(|| work.sample_http(resp.body));
                    }
                    Err((status, f)) => {
                        w.fail(endpoint, warm, Some(status), f, via.bytes(resp.body.len()));
                        w.classed(class, warm, None);
                    }
                }
                c.reusable()
            }
        };
        // a request sent again after re-authenticating was written (and counted) the first time
        if c.requests_written() > before && !reauthed {
            w.wrote(warm);
        }
        reauthed = false;
        if needs_auth {
            needs_auth = false;
            match Box::pin(reauthenticate(&ctx, endpoint, c, &mut work)).await {
                Ok(()) => {
                    w.stats.borrow_mut().reauthenticated += 1;
                    reauthed = true;
                    // The same request goes again; it was not counted.
                    sent -= u64::from(!warm);
                    again = Some(turn);
                    continue;
                }
                Err(f) => {
                    // the authentication's answer may still come: the framing is unknown now
                    keep &= f.kind != FailureKind::Timeout;
                    w.fail(endpoint, warm, None, f, via);
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
            retire(&w, c);
        }
    }
    conn
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

/// Authenticates again on `c` (etcd no longer accepted the token) and gives `work` the new
/// token. A failure is `timeout` (the answer may still come: `c`'s framing is unknown) or
/// `auth`.
async fn reauthenticate(
    ctx: &Ctx,
    endpoint: usize,
    c: &mut Conn,
    work: &mut Workload,
) -> Result<(), Failure> {
    let Some((user, password)) = &ctx.auth else {
        return Err(Failure::with(FailureKind::Auth, "no credentials"));
    };
    let auth = Client::http(c, &ctx.authorities[ctx.member(endpoint)]).authenticate(user, password);
    let token = tokio::time::timeout(ctx.timeout, auth)
        .await
        .unwrap_or_else(|_| {
            Err(Failure::with(
                FailureKind::Timeout,
                format_args!("re-authentication: no answer within {:?}", ctx.timeout),
            ))
        })
        .map_err(|f| match f.kind {
            FailureKind::Timeout => f,
            _ => Failure::with(FailureKind::Auth, f),
        })?;
    work.set_token(&token)
        .map_err(|e| Failure::with(FailureKind::Auth, e))
}

/// Pipelined: opens this thread's connections before the start line, one pipe each.
pub(super) async fn setup_pipes(ctx: &Ctx, a: &Assignment) -> Result<Vec<Rc<Pipe>>, String> {
    let mut sharing = vec![0usize; a.conns.len()];
    for &(_, k) in &a.clients {
        sharing[k] += 1;
    }
    let mut pipes = Vec::with_capacity(a.conns.len());
    let t0 = Instant::now();
    for (j, &endpoint) in a.conns.iter().enumerate() {
        connect_turn(ctx, a, j, t0).await;
        let conn = connect(ctx, endpoint).await?;
        pipes.push(Rc::new(Pipe::new(endpoint, sharing[j], conn, ctx.timeout)));
    }
    Ok(pipes)
}

/// Pipelined: runs every pipe's driver and every client; the drivers live on until
/// `close_pipes`.
pub(super) async fn run_pipes(w: Rc<Worker>, a: &Assignment, pipes: &[Rc<Pipe>]) {
    for pipe in pipes {
        let (pipe, w) = (pipe.clone(), w.clone());
        tokio::task::spawn_local(async move {
            while let Some(dead) = pipe.drive().await {
                retire(&w, dead);
            }
        });
    }
    let mut next = vec![0usize; pipes.len()];
    let mut tasks = Vec::with_capacity(a.clients.len());
    for &(id, k) in &a.clients {
        let local = next[k];
        next[k] += 1;
        tasks.push(tokio::task::spawn_local(pipe_client(
            w.clone(),
            id,
            pipes[k].clone(),
            local,
        )));
    }
    for t in tasks {
        let _ = t.await;
    }
}

/// Stops every pipe's driver and starts closing its connection (the records are collected
/// with the others).
pub(super) fn close_pipes(w: &Worker, pipes: Vec<Rc<Pipe>>) {
    for pipe in pipes {
        if let Some(c) = pipe.close() {
            retire(w, c);
        }
    }
}

/// One client of a pipelined connection, `local` among the clients of `pipe`: its closed (or
/// paced) loop, as `client`'s.
async fn pipe_client(w: Rc<Worker>, id: usize, pipe: Rc<Pipe>, local: usize) {
    let ctx = w.ctx.clone();
    let quota = quota(&ctx, id);
    let mut work = ctx.workload.for_client(id as u64);
    let endpoint = pipe.endpoint;
    let mut idx = id as u64;
    let mut sent = 0u64;
    let mut reconnect = Reconnect::new();
    let mut reauthed = false;
    let mut again = None;
    let mut gate = Gate::new(&w, id);

    while let Some(turn) = w
        .turn(&mut again, &mut gate, || {}, endpoint, sent, quota)
        .await
    {
        let warm = turn.warm;
        match pipe.acquire(|| Box::pin(connect(&ctx, endpoint))).await {
            Ok(new) => {
                reconnect.ok();
                if new {
                    w.stats.borrow_mut().reconnects += 1;
                }
            }
            Err(f) => {
                // boxed: the backoff's sleep would otherwise be in every client's future
                if Box::pin(reconnect.connect_failed(&w, endpoint, warm, &mut sent, quota, f)).await
                {
                    continue;
                }
                break;
            }
        }
        let started = Instant::now();
        let via = Via::on(started, pipe.local_port());
        pipe.submit(local, started + ctx.timeout, |buf| {
            work.encode_http(idx, endpoint, buf)
        });
        idx += ctx.clients as u64;
        sent += u64::from(!warm);
        let out = pipe.outcome(local).await;
        let was_reauthed = std::mem::take(&mut reauthed);
        // a request sent again after re-authenticating was written (and counted) the first time
        if out.written && !was_reauthed {
            w.wrote(warm);
        }
        let class = work.class();
        let status = match out.result {
            Ok(status) => status,
            Err(f) => {
                w.fail(endpoint, warm, None, f, via);
                w.classed(class, warm, None);
                continue;
            }
        };
        match pipe.with_body(local, |body| work.check_http(status, body)) {
            // etcd no longer accepts the token: authenticate on a connection of its own (this
            // one carries other clients' requests), then send again
            Err((_, f)) if !was_reauthed && ctx.auth.is_some() && is_invalid_token(&f) => {
                match Box::pin(reauthenticate_apart(&w, endpoint, &mut work)).await {
                    Ok(()) => {
                        w.stats.borrow_mut().reauthenticated += 1;
                        reauthed = true;
                        sent -= u64::from(!warm);
                        again = Some(turn);
                    }
                    Err(f) => {
                        w.fail(endpoint, warm, None, f, via);
                        w.classed(class, warm, None);
                    }
                }
            }
            _ if warm => w.warmup_done(),
            Ok((status, ack)) => {
                let via = via.bytes(pipe.with_body(local, <[u8]>::len));
                let latency = w.ok(endpoint, turn, started, status, via);
                w.classed(class, warm, Some(latency));
                w.acked(ack);
                w.keep_sample(|| pipe.with_body(local, |body| work.sample_http(body)));
            }
            Err((status, f)) => {
                let via = via.bytes(pipe.with_body(local, <[u8]>::len));
                w.fail(endpoint, warm, Some(status), f, via);
                w.classed(class, warm, None);
            }
        }
    }
}

/// Re-authentication for a pipelined client, on a connection opened for it and closed after.
async fn reauthenticate_apart(
    w: &Worker,
    endpoint: usize,
    work: &mut Workload,
) -> Result<(), Failure> {
    let mut c = connect(&w.ctx, endpoint)
        .await
        .map_err(|e| Failure::with(FailureKind::Connect, e))?;
    let result = reauthenticate(&w.ctx, endpoint, &mut c, work).await;
    retire(w, c);
    result
}
