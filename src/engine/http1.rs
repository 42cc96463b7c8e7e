//! HTTP/1.1 clients: each owns one keepalive connection and keeps one request in flight.

use std::rc::Rc;
use std::time::Instant;

use bytes::BytesMut;

use crate::client::http1::Conn;
use crate::engine::plan::{connect_turn, quota};
use crate::engine::worker::{Reconnect, Worker};
use crate::engine::{Assignment, Ctx};
use crate::outcome::{Failure, FailureKind};
use crate::workload::etcd::client::{Client, is_invalid_token};

async fn connect(ctx: &Ctx, endpoint: usize) -> Result<Conn, String> {
    let addr = ctx.addrs[endpoint];
    let conn = Conn::connect(
        addr,
        &ctx.hosts[endpoint],
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

/// Opens every client's connection before the start line.
pub(super) async fn setup(ctx: &Ctx, a: &Assignment) -> Result<Vec<Option<Conn>>, String> {
    let mut conns = Vec::with_capacity(a.clients.len());
    let t0 = Instant::now();
    for (j, &(_, endpoint)) in a.clients.iter().enumerate() {
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
    w.closing.borrow_mut().push(tokio::task::spawn_local(
        c.close(super::worker::CLOSE_BOUND),
    ));
}

/// One client's closed (or paced) loop; returns its connection, still open.
async fn client(w: Rc<Worker>, id: usize, endpoint: usize, mut conn: Option<Conn>) -> Option<Conn> {
    let ctx = w.ctx.clone();
    let quota = quota(&ctx, id);
    let mut work = ctx.workload.for_client(id as u64);
    let mut wbuf = BytesMut::with_capacity(4096);
    let mut idx = id as u64;
    let mut sent = 0u64;
    let mut reconnect = Reconnect::new();
    // re-authentication: at most once per request
    let (mut needs_auth, mut reauthed) = (false, false);
    // a turn to use again: the request goes again after re-authenticating
    let mut again = None;

    while let Some(turn) = w.turn(&mut again, endpoint, sent, quota).await {
        let warm = turn.warm;
        let c = match &mut conn {
            Some(c) => c,
            None => match connect(&ctx, endpoint).await {
                Ok(c) => {
                    reconnect.ok();
                    w.stats.borrow_mut().reconnects += 1;
                    conn.insert(c)
                }
                Err(e) => {
                    let f = Failure::with(FailureKind::Connect, e);
                    if reconnect
                        .connect_failed(&w, endpoint, warm, &mut sent, quota, f)
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
        let result = tokio::time::timeout(ctx.timeout, c.round_trip(&wbuf, head_len)).await;
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
                );
                // The response may still arrive: this connection's framing is unknown now.
                false
            }
            Ok(Err(f)) => {
                w.fail(endpoint, warm, None, f);
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
                        w.ok(endpoint, turn, started, status);
                        w.acked(ack);
                        w.keep_sample(|| work.sample_http(resp.body));
                    }
                    Err((status, f)) => w.fail(endpoint, warm, Some(status), f),
                }
                c.reusable()
            }
        };
        // a request sent again after re-authenticating was written (and counted) the first time
        if c.requests_written() > before && !reauthed {
            w.wrote(warm);
        }
        reauthed = false;
        if needs_auth && let Some((user, password)) = &ctx.auth {
            needs_auth = false;
            let authority = &ctx.authorities[endpoint];
            let auth = Client::http(c, authority).authenticate(user, password);
            let auth = tokio::time::timeout(ctx.timeout, auth)
                .await
                .unwrap_or_else(|_| {
                    Err(Failure::with(
                        FailureKind::Timeout,
                        format_args!("re-authentication: no answer within {:?}", ctx.timeout),
                    ))
                });
            match auth {
                Ok(token) => match work.set_token(&token) {
                    Ok(()) => {
                        w.stats.borrow_mut().reauthenticated += 1;
                        reauthed = true;
                        // The same request goes again; it was not counted.
                        sent -= u64::from(!warm);
                        again = Some(turn);
                        continue;
                    }
                    Err(e) => w.fail(endpoint, warm, None, Failure::with(FailureKind::Auth, e)),
                },
                Err(f) if f.kind == FailureKind::Timeout => {
                    w.fail(endpoint, warm, None, f);
                    // the authentication's answer may still come: the framing is unknown now
                    keep = false;
                }
                Err(f) => w.fail(endpoint, warm, None, Failure::with(FailureKind::Auth, f)),
            }
        }
        if (!keep || !c.reusable())
            && let Some(c) = conn.take()
        {
            retire(&w, c);
        }
    }
    conn
}
