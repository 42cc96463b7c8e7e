//! The put load of a watch run: `--put-clients` clients on their own thread put stamped values
//! to the watched keys, paced on a global schedule with `--put-rate`, each put bounded by
//! `--put-timeout`, broken connections replaced with backoff; every put ends counted once, as
//! ok (with the revision etcd assigned), failed by kind, or not sent.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http::Uri;
use tokio::sync::Notify;

use super::config::{STAMP_LEN, WatchConfig};
use crate::client::grpc::{Call, Conn as GrpcConn, unary};
use crate::client::http1::Conn as HttpConn;
use crate::client::{BACKOFF_MAX, BACKOFF_MIN};
use crate::config::{Endpoint, Proto};
use crate::etcd::client::{MAX_RESPONSE, block_on, put_body, put_revision, put_revision_gateway};
use crate::net::Layers;
use crate::outcome::{Failure, FailureKind};
use crate::stats::Latencies;
use wirebench_wire::grpc;
use wirebench_wire::http1::RequestTemplate;

/// What the put side measured. Every one of the `--put-total` puts is counted in exactly one of
/// `ok`, `failed` and `not_sent`.
#[derive(Debug, Default)]
pub struct PutOutcome {
    /// revisions etcd assigned, per key index
    pub revisions: Vec<Vec<i64>>,
    /// answered with a revision
    pub ok: u64,
    /// due but not answered with a revision: by kind in `errors` (a put that timed out or lost
    /// its connection may still have been applied by etcd)
    pub failed: u64,
    /// never sent: its client stopped first (server unreachable for longer than
    /// --put-timeout, or Ctrl-C); why in `not_sent_reasons`
    pub not_sent: u64,
    /// connections opened during the run to replace broken ones
    pub reconnects: u64,
    pub latency: Latencies,
    pub errors: HashMap<Failure, u64>,
    pub not_sent_reasons: HashMap<Failure, u64>,
    pub first_sent: Option<Instant>,
    pub last_done: Option<Instant>,
}

/// Writes the send time (ns since the epoch, little endian) into the front of a put value.
fn stamp(value: &mut [u8], epoch: Instant) {
    let ns = epoch.elapsed().as_nanos() as u64;
    if let Some(s) = value.get_mut(..STAMP_LEN) {
        s.copy_from_slice(&ns.to_le_bytes());
    }
}

/// Runs the put load alone (no watchers): `--put-total` puts over `--put-proto` to the first
/// endpoint, as a watch run would send them. Every put ends counted in exactly one of `ok`,
/// `failed` and `not_sent`. An error is a setup error (a connection or the request template).
pub fn put_load(cfg: &WatchConfig) -> Result<PutOutcome, String> {
    run(&Arc::new(cfg.clone()), Instant::now(), Arc::default())
}

/// Runs the put load of a watch run on a thread of its own: values stamped against `epoch`,
/// clients stopping once `stop` is set (Ctrl-C).
pub fn run(
    cfg: &Arc<WatchConfig>,
    epoch: Instant,
    stop: Arc<AtomicBool>,
) -> Result<PutOutcome, String> {
    let cfg = cfg.clone();
    std::thread::Builder::new()
        .name("wirebench-put".into())
        .spawn(move || put_thread(cfg, epoch, stop))
        .map_err(|e| format!("cannot start the put thread: {e}"))?
        .join()
        .map_err(|_| "the put thread panicked (a bug: please report it)".to_string())?
}

/// What one put client shares with the others on the put thread.
struct PutCtx {
    cfg: Arc<WatchConfig>,
    epoch: Instant,
    /// the schedule's origin (open loop), taken once every put connection is open
    start: tokio::time::Instant,
    /// set by Ctrl-C: the clients stop
    stop: Arc<AtomicBool>,
    out: RefCell<PutOutcome>,
}

impl PutCtx {
    fn note_first(&self, t: Instant) {
        let mut o = self.out.borrow_mut();
        if o.first_sent.is_none() {
            o.first_sent = Some(t);
        }
    }

    /// One put that was due ends: answered with a revision, or failed by kind.
    fn record(&self, k: usize, rev: Result<i64, Failure>, t0: Instant) {
        let now = Instant::now();
        let mut o = self.out.borrow_mut();
        o.last_done = Some(now);
        match rev {
            Ok(rev) => {
                o.ok += 1;
                o.latency.record(now.duration_since(t0));
                if let Some(v) = o.revisions.get_mut(k) {
                    v.push(rev);
                }
            }
            Err(f) => {
                o.failed += 1;
                *o.errors.entry(f).or_insert(0) += 1;
            }
        }
    }

    /// A client stops at put `idx`: that one and the rest of its share are not sent.
    fn not_sent(&self, idx: u64, why: Failure) {
        let n = remaining(idx, self.cfg.put_clients as u64, self.cfg.put_total);
        if n > 0 {
            let mut o = self.out.borrow_mut();
            o.not_sent += n;
            *o.not_sent_reasons.entry(why).or_insert(0) += n;
        }
    }

    fn reconnected(&self) {
        self.out.borrow_mut().reconnects += 1;
    }

    /// Open-loop pacing: put `idx` is due at start + idx / rate.
    async fn pace(&self, idx: u64) {
        if let Some(rate) = self.cfg.put_rate {
            let due = self.start + Duration::from_secs_f64(idx as f64 / rate);
            tokio::time::sleep_until(due).await;
        }
    }

    /// Why the clients stop early when Ctrl-C was pressed.
    fn interrupted(&self) -> Option<Failure> {
        self.stop
            .load(Ordering::Relaxed)
            .then(|| Failure::with(FailureKind::Interrupted, "Ctrl-C"))
    }

    fn timed_out(&self) -> Failure {
        Failure::with(
            FailureKind::Timeout,
            format_args!("no response within {:?}", self.cfg.put_timeout),
        )
    }

    fn gave_up(&self) -> Failure {
        Failure::with(
            FailureKind::Connect,
            format_args!(
                "gave up: server unreachable for longer than --put-timeout ({:?})",
                self.cfg.put_timeout
            ),
        )
    }
}

/// Puts of a client's share at or after `idx`: idx, idx + step, ... below total.
fn remaining(idx: u64, step: u64, total: u64) -> u64 {
    if idx >= total {
        0
    } else {
        (total - idx).div_ceil(step.max(1))
    }
}

/// Reconnect pacing of one put connection: capped exponential backoff, and when to give up.
#[derive(Debug)]
struct Backoff {
    delay: Duration,
    /// start of the first failed connect attempt since the last success
    down_since: Option<Instant>,
}

impl Backoff {
    fn new() -> Self {
        Backoff {
            delay: BACKOFF_MIN,
            down_since: None,
        }
    }

    fn ok(&mut self) {
        *self = Backoff::new();
    }

    /// After a connect attempt that started at `tried` failed: `None` when the server has been
    /// unreachable for `limit` or longer (give up), else the delay before the next attempt.
    fn failed(&mut self, tried: Instant, limit: Duration) -> Option<Duration> {
        let since = *self.down_since.get_or_insert(tried);
        if since.elapsed() >= limit {
            return None;
        }
        let delay = self.delay;
        self.delay = (self.delay * 2).min(BACKOFF_MAX);
        Some(delay)
    }

    /// Whether the server has been unreachable for `limit` or longer.
    fn expired(&self, limit: Duration) -> bool {
        self.down_since.is_some_and(|s| s.elapsed() >= limit)
    }
}

fn put_thread(
    cfg: Arc<WatchConfig>,
    epoch: Instant,
    stop: Arc<AtomicBool>,
) -> Result<PutOutcome, String> {
    let ctx = block_on(async {
        let ep = cfg.endpoints[0].clone();
        // Setup: everything that can fail is done before the first put is sent.
        let setup = match cfg.put_proto {
            Proto::Grpc => {
                let uri: Uri = format!("http://{}/etcdserverpb.KV/Put", ep.authority)
                    .parse()
                    .map_err(|e| format!("put request path for {}: {e}", ep.authority))?;
                let call = Call::new(uri, Vec::new(), FailureKind::Etcd);
                let conn = GrpcConn::connect(ep.addr, &ep.host, 0, &cfg.net, &cfg.h2)
                    .await
                    .map_err(|e| format!("put connection to {}: {e}", ep.addr))?;
                PutSetup::Grpc(Rc::new(GrpcPutConn::new(ep, conn)), Rc::new(call))
            }
            Proto::Http => {
                let template = RequestTemplate::new(
                    "POST",
                    "/v3/kv/put",
                    &ep.authority,
                    &[("Content-Type", "application/json")],
                )
                .map_err(|e| format!("put request for {}: {e}", ep.authority))?;
                let mut conns = Vec::with_capacity(cfg.put_clients);
                for _ in 0..cfg.put_clients {
                    conns.push(
                        connect_http(&cfg, &ep)
                            .await
                            .map_err(|e| format!("put connection to {}: {e}", ep.addr))?,
                    );
                }
                PutSetup::Http(ep, Rc::new(template), conns)
            }
        };
        let ctx = Rc::new(PutCtx {
            cfg: cfg.clone(),
            epoch,
            start: tokio::time::Instant::now(),
            stop,
            out: RefCell::new(PutOutcome {
                revisions: vec![Vec::new(); cfg.watched_keys],
                ..Default::default()
            }),
        });
        let mut tasks = Vec::with_capacity(cfg.put_clients);
        match setup {
            PutSetup::Grpc(conn, call) => {
                for c in 0..cfg.put_clients {
                    tasks.push(tokio::task::spawn_local(grpc_put_client(
                        ctx.clone(),
                        conn.clone(),
                        call.clone(),
                        c,
                    )));
                }
            }
            PutSetup::Http(ep, template, conns) => {
                for (c, conn) in conns.into_iter().enumerate() {
                    tasks.push(tokio::task::spawn_local(http_put_client(
                        ctx.clone(),
                        ep.clone(),
                        template.clone(),
                        c,
                        conn,
                    )));
                }
            }
        }
        for t in tasks {
            t.await
                .map_err(|_| "a put client panicked (a bug: please report it)".to_string())?;
        }
        Ok::<_, String>(ctx)
    })??;
    let out = Rc::try_unwrap(ctx)
        .map(|c| c.out.into_inner())
        .map_err(|_| "put tasks still hold the outcome (a bug: please report it)".to_string())?;
    let counted = out.ok + out.failed + out.not_sent;
    if counted != cfg.put_total {
        return Err(format!(
            "put accounting: {} ok + {} failed + {} not sent != {} puts (a bug: please report it)",
            out.ok, out.failed, out.not_sent, cfg.put_total
        ));
    }
    Ok(out)
}

/// Put connections opened before the first put.
enum PutSetup {
    Grpc(Rc<GrpcPutConn>, Rc<Call>),
    Http(Endpoint, Rc<RequestTemplate>, Vec<HttpConn>),
}

async fn connect_http(cfg: &WatchConfig, ep: &Endpoint) -> std::io::Result<HttpConn> {
    HttpConn::connect(
        ep.addr,
        &ep.host,
        0,
        &cfg.net,
        MAX_RESPONSE as u64,
        Layers::Off,
    )
    .await
}

/// One HTTP/1.1 put client: puts c, c + clients, ... on its own keepalive connection, replaced
/// whenever it cannot carry the next put (`Connection: close`, a failed round trip, a timeout).
async fn http_put_client(
    ctx: Rc<PutCtx>,
    ep: Endpoint,
    template: Rc<RequestTemplate>,
    c: usize,
    conn: HttpConn,
) {
    let cfg = ctx.cfg.clone();
    let step = cfg.put_clients as u64;
    let mut conn = Some(conn);
    let mut backoff = Backoff::new();
    let mut value = vec![0u8; cfg.val_size];
    let (mut body, mut wbuf) = (BytesMut::new(), BytesMut::new());
    let mut idx = c as u64;
    while idx < cfg.put_total {
        if let Some(why) = ctx.interrupted() {
            ctx.not_sent(idx, why);
            break;
        }
        ctx.pace(idx).await;
        let k = (idx % cfg.watched_keys as u64) as usize;
        let live = match &mut conn {
            Some(live) => live,
            None => {
                let tried = Instant::now();
                match connect_http(&cfg, &ep).await {
                    Ok(fresh) => {
                        backoff.ok();
                        ctx.reconnected();
                        conn.insert(fresh)
                    }
                    Err(e) => {
                        // This put was due and found no connection.
                        let f = Failure::with(
                            FailureKind::Connect,
                            format_args!("connect to {}: {e}", ep.addr),
                        );
                        ctx.record(k, Err(f), tried);
                        idx += step;
                        match backoff.failed(tried, cfg.put_timeout) {
                            Some(delay) => tokio::time::sleep(delay).await,
                            None => {
                                ctx.not_sent(idx, ctx.gave_up());
                                break;
                            }
                        }
                        continue;
                    }
                }
            }
        };
        stamp(&mut value, ctx.epoch);
        body.clear();
        put_body(&cfg.key(k), &value, &mut body);
        wbuf.clear();
        let head = template.encode(&body, &mut wbuf);
        let t0 = Instant::now();
        ctx.note_first(t0);
        let (rev, keep) =
            match tokio::time::timeout(cfg.put_timeout, live.round_trip(&wbuf, head)).await {
                // The answer may still come: the connection's framing is unknown now.
                Err(_) => (Err(ctx.timed_out()), false),
                // Closed, broken or malformed mid-response: the same (a failed write does not
                // even clear `reusable`).
                Ok(Err(f)) => (Err(f), false),
                Ok(Ok(resp)) => {
                    let rev = put_revision_gateway(resp.status, resp.body);
                    (rev, live.reusable())
                }
            };
        ctx.record(k, rev, t0);
        if !keep {
            conn = None;
        }
        idx += step;
    }
}

/// The gRPC put connection every put client shares as concurrent h2 streams. When it breaks,
/// the first client to notice opens the replacement and the others wait for that one attempt.
struct GrpcPutConn {
    ep: Endpoint,
    conn: RefCell<Option<GrpcConn>>,
    /// bumped on every new connection, so a client notices its cached handle is stale
    generation: Cell<u64>,
    connecting: Cell<bool>,
    /// finished reconnect attempts, and the failure of the last one when it failed
    attempts: Cell<u64>,
    last_failure: RefCell<Option<Failure>>,
    attempt_done: Notify,
    backoff: RefCell<Backoff>,
    /// no reconnect attempt before this (the backoff after a failed one)
    retry_at: Cell<Option<Instant>>,
}

/// A client's handle to the shared connection's current generation.
struct PutHandle {
    generation: u64,
    send: h2::client::SendRequest<Bytes>,
    ledger: Rc<crate::net::Ledger>,
}

/// Why a put found no connection to go on.
enum Unavailable {
    /// the reconnect attempt it waited for failed: this put fails (`connect`)
    Failed(Failure),
    /// the server has been unreachable for longer than --put-timeout: stop sending
    GaveUp,
}

impl GrpcPutConn {
    fn new(ep: Endpoint, conn: GrpcConn) -> Self {
        GrpcPutConn {
            ep,
            conn: RefCell::new(Some(conn)),
            generation: Cell::new(1),
            connecting: Cell::new(false),
            attempts: Cell::new(0),
            last_failure: RefCell::new(None),
            attempt_done: Notify::new(),
            backoff: RefCell::new(Backoff::new()),
            retry_at: Cell::new(None),
        }
    }

    /// A handle on a live connection, reconnecting (once for all clients) if it broke.
    async fn acquire<'h>(
        &self,
        ctx: &PutCtx,
        handle: &'h mut Option<PutHandle>,
    ) -> Result<&'h mut PutHandle, Unavailable> {
        let fresh = self.live(ctx, handle.as_ref()).await?;
        if let Some(fresh) = fresh {
            return Ok(handle.insert(fresh));
        }
        // `live` returns no fresh handle only when the cached one is current.
        handle
            .as_mut()
            .ok_or_else(|| Unavailable::Failed(Failure::new(FailureKind::Connect)))
    }

    /// Waits for a live connection; a new handle when `cached` is missing or stale.
    async fn live(
        &self,
        ctx: &PutCtx,
        cached: Option<&PutHandle>,
    ) -> Result<Option<PutHandle>, Unavailable> {
        let cached = cached.map(|h| h.generation);
        loop {
            if let Some(c) = self.conn.borrow().as_ref()
                && !c.is_dead()
            {
                let generation = self.generation.get();
                return Ok((cached != Some(generation)).then(|| PutHandle {
                    generation,
                    send: c.handle(),
                    ledger: c.ledger().clone(),
                }));
            }
            if self.connecting.get() {
                let before = self.attempts.get();
                self.attempt_done.notified().await;
                if self.attempts.get() != before
                    && let Some(f) = self.last_failure.borrow().clone()
                {
                    return Err(Unavailable::Failed(f));
                }
                continue;
            }
            if self.backoff.borrow().expired(ctx.cfg.put_timeout) {
                return Err(Unavailable::GaveUp);
            }
            if let Some(at) = self.retry_at.get()
                && Instant::now() < at
            {
                tokio::time::sleep_until(at.into()).await;
                continue;
            }
            self.reconnect(ctx).await?;
        }
    }

    /// One reconnect attempt; the clients waiting meanwhile share its outcome.
    async fn reconnect(&self, ctx: &PutCtx) -> Result<(), Unavailable> {
        self.connecting.set(true);
        // The broken connection goes; its driver ends with it.
        drop(self.conn.borrow_mut().take());
        let tried = Instant::now();
        let result =
            GrpcConn::connect(self.ep.addr, &self.ep.host, 0, &ctx.cfg.net, &ctx.cfg.h2).await;
        self.connecting.set(false);
        self.attempts.set(self.attempts.get() + 1);
        let outcome = match result {
            Ok(conn) => {
                *self.conn.borrow_mut() = Some(conn);
                self.generation.set(self.generation.get() + 1);
                self.backoff.borrow_mut().ok();
                self.retry_at.set(None);
                *self.last_failure.borrow_mut() = None;
                ctx.reconnected();
                Ok(())
            }
            Err(e) => {
                let f = Failure::with(
                    FailureKind::Connect,
                    format_args!("connect to {}: {e}", self.ep.addr),
                );
                // After the give-up point the next caller stops at once; before it, it waits.
                let delay = self
                    .backoff
                    .borrow_mut()
                    .failed(tried, ctx.cfg.put_timeout)
                    .unwrap_or_default();
                self.retry_at.set(Some(Instant::now() + delay));
                *self.last_failure.borrow_mut() = Some(f.clone());
                Err(Unavailable::Failed(f))
            }
        };
        self.attempt_done.notify_waiters();
        outcome
    }

    fn mark_dead(&self, generation: u64) {
        if self.generation.get() == generation
            && let Some(c) = self.conn.borrow().as_ref()
        {
            c.mark_dead();
        }
    }
}

/// One gRPC put client: puts c, c + clients, ... as unary calls on the shared connection.
async fn grpc_put_client(ctx: Rc<PutCtx>, conn: Rc<GrpcPutConn>, call: Rc<Call>, c: usize) {
    let cfg = ctx.cfg.clone();
    let step = cfg.put_clients as u64;
    let mut handle: Option<PutHandle> = None;
    let mut rx = BytesMut::new();
    let mut frame = BytesMut::new();
    let mut value = vec![0u8; cfg.val_size];
    let mut idx = c as u64;
    while idx < cfg.put_total {
        if let Some(why) = ctx.interrupted() {
            ctx.not_sent(idx, why);
            break;
        }
        ctx.pace(idx).await;
        let k = (idx % cfg.watched_keys as u64) as usize;
        let asked = Instant::now();
        let h = match conn.acquire(&ctx, &mut handle).await {
            Ok(h) => h,
            Err(Unavailable::Failed(f)) => {
                ctx.record(k, Err(f), asked);
                idx += step;
                continue;
            }
            Err(Unavailable::GaveUp) => {
                ctx.not_sent(idx, ctx.gave_up());
                break;
            }
        };
        stamp(&mut value, ctx.epoch);
        frame.clear();
        grpc::encode(
            &wirebench_wire::proto::etcd::PutRequest {
                key: cfg.key(k).into(),
                value: Bytes::copy_from_slice(&value),
                ..Default::default()
            },
            &mut frame,
        );
        let t0 = Instant::now();
        ctx.note_first(t0);
        let generation = h.generation;
        let call = unary(
            &mut h.send,
            &h.ledger,
            &call,
            frame.split().freeze(),
            &mut rx,
            cfg.h2.max_recv_message,
        );
        // On timeout, dropping the call resets its stream (RST_STREAM CANCEL); the connection
        // itself lives on.
        let rev = match tokio::time::timeout(cfg.put_timeout, call).await {
            Err(_) => Err(ctx.timed_out()),
            Ok(Err(e)) => {
                if e.conn_broken {
                    conn.mark_dead(generation);
                }
                Err(e.failure)
            }
            Ok(Ok(msg)) => put_revision(msg),
        };
        ctx.record(k, rev, t0);
        idx += step;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_shares_cover_every_put_once() {
        for (total, clients) in [(300u64, 4u64), (7, 3), (2, 5), (1, 1), (20, 2)] {
            let all: u64 = (0..clients).map(|c| remaining(c, clients, total)).sum();
            assert_eq!(all, total, "total={total} clients={clients}");
        }
        // from the middle of a share: idx, idx + step, ... below total
        assert_eq!(remaining(5, 4, 300), 74);
        assert_eq!(remaining(299, 4, 300), 1);
        assert_eq!(remaining(300, 4, 300), 0);
        assert_eq!(remaining(400, 4, 300), 0);
    }

    #[test]
    fn backoff_doubles_up_to_its_cap_and_gives_up_after_the_limit() {
        let limit = Duration::from_secs(60);
        let mut b = Backoff::new();
        let mut delays = Vec::new();
        for _ in 0..9 {
            delays.push(b.failed(Instant::now(), limit).expect("within the limit"));
        }
        assert_eq!(delays[0], BACKOFF_MIN);
        assert_eq!(delays[1], BACKOFF_MIN * 2);
        assert_eq!(*delays.last().unwrap(), BACKOFF_MAX);
        assert!(!b.expired(limit));
        // down since the first failure: a later failure past the limit gives up
        let mut b = Backoff::new();
        let long_ago = Instant::now() - Duration::from_millis(500);
        let short = Duration::from_millis(300);
        assert_eq!(b.failed(long_ago, short), None);
        assert!(b.expired(short));
        b.ok();
        assert!(!b.expired(short));
        assert_eq!(b.failed(Instant::now(), short), Some(BACKOFF_MIN));
    }
}
