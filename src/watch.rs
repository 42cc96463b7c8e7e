//! `wirebench etcd watch`: watchers on gRPC bidi streams or HTTP/1.1 chunked streams, a put load
//! whose values carry their send time, event latency, and a count of missing and duplicated events.
//!
//! Two threads, each a current-thread runtime: one owns the watch connections, the other the put
//! load, so the put side never delays event delivery on the watch side. Both stamp times against
//! one process-wide `Instant` (the epoch), so "put sent -> event received" needs no clock sync.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use http::header::{CONTENT_TYPE, HeaderValue, TE};
use http::{Method, Request, Uri, Version};
use prost::Message;
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;

use crate::client::grpc::{Call, Conn as GrpcConn, H2Config, unary};
use crate::client::http1::Conn as HttpConn;
use crate::config::{Endpoint, Format, Proto};
use crate::net::{self, Layers, NetConfig};
use crate::outcome::{Failure, FailureKind};
use crate::stats::{ConnRecord, Latencies};
use wirebench_wire::http1::{self as h1, BodyKind, ChunkedDecoder, RequestTemplate};
use wirebench_wire::json::{self, GwError, GwResponse};
use wirebench_wire::proto::etcd::{
    PutResponse, WatchCreateRequest, WatchRequest, WatchResponse, watch_request::RequestUnion,
};
use wirebench_wire::{grpc, watch as wline};

/// Largest gRPC WatchResponse accepted (etcd fragments larger ones only when asked to).
const MAX_WATCH_MESSAGE: usize = 64 << 20;
/// Bytes at the front of every put value: the send time, ns since the epoch, little endian.
pub const STAMP_LEN: usize = 8;

/// A validated watch run.
#[derive(Debug, Clone)]
pub struct WatchConfig {
    pub endpoints: Vec<Endpoint>,
    /// watch protocols to measure, one run each
    pub protos: Vec<Proto>,
    pub watchers: usize,
    pub streams: usize,
    /// gRPC connections carrying the streams (HTTP/1.1: one connection per stream)
    pub conns: usize,
    pub watched_keys: usize,
    /// every watcher watches the whole key prefix instead of one key
    pub prefix: bool,
    pub key_prefix: String,
    pub put_total: u64,
    /// puts per second over all put clients; None = as fast as the clients go
    pub put_rate: Option<f64>,
    pub put_clients: usize,
    pub put_proto: Proto,
    pub val_size: usize,
    /// how long to wait for outstanding events after the last put
    pub drain: Duration,
    /// per-put limit: a put not answered within it fails (`timeout`)
    pub put_timeout: Duration,
    pub net: NetConfig,
    pub h2: H2Config,
    pub format: Format,
    pub output: Option<std::path::PathBuf>,
}

impl WatchConfig {
    fn key(&self, i: usize) -> Vec<u8> {
        format!("{}{i}", self.key_prefix).into_bytes()
    }

    /// The key range watcher `w` watches: one key, or the whole prefix.
    fn range(&self, w: usize) -> (Vec<u8>, Option<Vec<u8>>) {
        if self.prefix {
            let start = self.key_prefix.clone().into_bytes();
            (start.clone(), Some(prefix_end(&start)))
        } else {
            (self.key(w % self.watched_keys), None)
        }
    }

    /// The key indexes watcher `w` sees events for.
    fn keys_of(&self, w: usize) -> Vec<usize> {
        if self.prefix {
            (0..self.watched_keys).collect()
        } else {
            vec![w % self.watched_keys]
        }
    }
}

/// etcd's range end for "every key with this prefix": the prefix with its last byte below 0xff
/// incremented and what follows dropped.
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

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

/// Per-watch-thread state shared by its stream tasks.
struct WatchState {
    epoch: Instant,
    /// revisions seen per watcher
    seen: RefCell<Vec<Vec<i64>>>,
    create_sent: RefCell<Vec<Option<Instant>>>,
    created: Cell<usize>,
    creation: RefCell<Latencies>,
    latency: RefCell<Latencies>,
    events: Cell<u64>,
    last_event: Cell<Option<Instant>>,
    errors: RefCell<HashMap<Failure, u64>>,
    conns: RefCell<Vec<ConnRecord>>,
    /// HTTP/1.1 chunks received on the watch connections
    chunks: Cell<u64>,
    stop: Notify,
    stopped: Cell<bool>,
    /// h2 DATA frames or HTTP chunk-framing bytes come from the ledgers; this counts messages
    responses: Cell<u64>,
    /// set once the puts are done: what each watcher must still receive
    expected: RefCell<Option<Expected>>,
}

/// Per watcher, the revisions of the acknowledged puts it must see (sorted) and which of them
/// arrived. The drain waits for these, not for a count of events: an event of a put that failed
/// (timed out, yet applied by etcd) must not stand in for one that is still on its way.
struct Expected {
    revisions: Arc<Vec<Vec<i64>>>,
    seen: Vec<Vec<bool>>,
    outstanding: u64,
}

impl Expected {
    fn new(revisions: Arc<Vec<Vec<i64>>>, seen_so_far: &[Vec<i64>]) -> Expected {
        let seen = revisions.iter().map(|r| vec![false; r.len()]).collect();
        let outstanding = revisions.iter().map(|r| r.len() as u64).sum();
        let mut e = Expected {
            revisions,
            seen,
            outstanding,
        };
        for (w, revs) in seen_so_far.iter().enumerate() {
            for &rev in revs {
                e.arrived(w, rev);
            }
        }
        e
    }

    fn arrived(&mut self, w: usize, revision: i64) {
        let (Some(revs), Some(seen)) = (self.revisions.get(w), self.seen.get_mut(w)) else {
            return;
        };
        if let Ok(i) = revs.binary_search(&revision)
            && let Some(s) = seen.get_mut(i)
            && !*s
        {
            *s = true;
            self.outstanding -= 1;
        }
    }
}

impl WatchState {
    fn error(&self, f: Failure) {
        *self.errors.borrow_mut().entry(f).or_insert(0) += 1;
    }

    fn created(&self, w: usize, now: Instant) {
        let sent = self.create_sent.borrow().get(w).copied().flatten();
        if let Some(sent) = sent {
            self.creation.borrow_mut().record(now.duration_since(sent));
        }
        self.created.set(self.created.get() + 1);
    }

    fn event(&self, w: usize, revision: i64, value: &[u8], now: Instant) {
        if let Some(seen) = self.seen.borrow_mut().get_mut(w) {
            seen.push(revision);
        }
        if let Some(e) = self.expected.borrow_mut().as_mut() {
            e.arrived(w, revision);
        }
        if let Some(stamp) = value.get(..STAMP_LEN) {
            let mut b = [0u8; STAMP_LEN];
            b.copy_from_slice(stamp);
            let sent = u64::from_le_bytes(b);
            let at = now.duration_since(self.epoch).as_nanos() as u64;
            self.latency
                .borrow_mut()
                .record(Duration::from_nanos(at.saturating_sub(sent)));
        }
        self.events.set(self.events.get() + 1);
        self.last_event.set(Some(now));
    }

    /// Handles one WatchResponse of a stream whose watchers are created in `pending` order.
    #[allow(clippy::too_many_arguments)]
    fn response(
        &self,
        watch_id: i64,
        created: bool,
        canceled: bool,
        compact_revision: i64,
        cancel_reason: &str,
        events: impl Iterator<Item = (bool, i64, Vec<u8>)>,
        pending: &mut VecDeque<usize>,
        ids: &mut HashMap<i64, usize>,
    ) {
        let now = Instant::now();
        self.responses.set(self.responses.get() + 1);
        if created {
            if let Some(w) = pending.pop_front() {
                ids.insert(watch_id, w);
                self.created(w, now);
            } else {
                self.error(Failure::with(
                    FailureKind::Watch,
                    "created response without a create request",
                ));
            }
        }
        if compact_revision > 0 {
            self.error(Failure::with(
                FailureKind::Compacted,
                format_args!("watch {watch_id}: compacted at revision {compact_revision}"),
            ));
        }
        if canceled {
            let why = if cancel_reason.is_empty() {
                "no reason given"
            } else {
                cancel_reason
            };
            self.error(Failure::with(FailureKind::Canceled, why));
        }
        let Some(&w) = ids.get(&watch_id) else {
            if !created {
                for _ in events {
                    self.error(Failure::with(
                        FailureKind::Watch,
                        "event for an unknown watch id",
                    ));
                }
            }
            return;
        };
        for (delete, revision, value) in events {
            if delete {
                self.error(Failure::with(FailureKind::Watch, "unexpected DELETE event"));
            }
            self.event(w, revision, &value, now);
        }
    }
}

/// The measured outcome of one watch run.
#[derive(Debug, Serialize)]
pub struct WatchReport {
    pub proto: &'static str,
    pub title: &'static str,
    pub watchers: usize,
    pub streams: usize,
    pub connections: usize,
    pub created: usize,
    pub creation_ms: LatencySummary,
    pub events: u64,
    pub expected_events: u64,
    pub missing: u64,
    pub duplicated: u64,
    pub unexpected: u64,
    /// first put sent -> last event received
    pub total_s: f64,
    pub events_per_sec: f64,
    pub events_per_sec_per_watcher: f64,
    /// put sent -> event received
    pub event_latency_ms: LatencySummary,
    pub puts: PutReport,
    pub wire: WatchWire,
    pub errors: Vec<crate::report::ErrorCount>,
    pub per_connection: Vec<ConnRecord>,
}

#[derive(Debug, Serialize)]
pub struct PutReport {
    pub proto: &'static str,
    pub clients: usize,
    /// --put-total: always ok + failed + not_sent
    pub total: u64,
    pub ok: u64,
    pub failed: u64,
    pub not_sent: u64,
    /// connections opened during the run to replace broken ones
    pub reconnects: u64,
    pub timeout_ms: f64,
    pub target_rate: Option<f64>,
    pub achieved_rate: f64,
    pub latency_ms: LatencySummary,
    pub errors: Vec<crate::report::ErrorCount>,
    /// why puts were not sent (`{kind, message, count}`, counts summing to not_sent)
    pub not_sent_reasons: Vec<crate::report::ErrorCount>,
}

#[derive(Debug, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub fastest: f64,
    pub average: f64,
    pub slowest: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
}

impl LatencySummary {
    fn of(l: &Latencies) -> LatencySummary {
        let ms = |ns: f64| ns / 1e6;
        let empty = l.count == 0;
        LatencySummary {
            count: l.count,
            fastest: if empty { 0.0 } else { ms(l.min_ns as f64) },
            average: ms(l.mean_ns()),
            slowest: if empty { 0.0 } else { ms(l.max_ns as f64) },
            p50: ms(l.quantile_ns(0.5) as f64),
            p90: ms(l.quantile_ns(0.9) as f64),
            p99: ms(l.quantile_ns(0.99) as f64),
            p999: ms(l.quantile_ns(0.999) as f64),
        }
    }
}

/// Socket cost of the watch connections, per event received.
#[derive(Debug, Serialize)]
pub struct WatchWire {
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub bytes_in_per_event: f64,
    pub segments_in_per_event: f64,
    pub data_segments_in_per_event: f64,
    pub read_calls_per_event: f64,
    /// WatchResponse messages (gRPC) or JSON lines (HTTP/1.1) per event
    pub responses_per_event: f64,
    /// gRPC: h2 DATA frames received per event
    pub data_frames_in_per_event: Option<f64>,
    /// HTTP/1.1: chunk framing bytes received per event
    pub chunk_framing_bytes_per_event: Option<f64>,
    /// HTTP/1.1: chunks received per event
    pub chunks_per_event: Option<f64>,
}

fn per(n: u64, d: u64) -> f64 {
    if d == 0 { 0.0 } else { n as f64 / d as f64 }
}

/// Runs the configured watch protocols one after the other.
pub fn run(cfg: &WatchConfig) -> Result<Vec<WatchReport>, String> {
    let cfg = Arc::new(cfg.clone());
    let mut out = Vec::new();
    for &proto in &cfg.protos {
        out.push(run_one(&cfg, proto)?);
    }
    Ok(out)
}

/// What the watch thread hands back.
struct WatchOutcome {
    seen: Vec<Vec<i64>>,
    created: usize,
    creation: Latencies,
    latency: Latencies,
    events: u64,
    last_event: Option<Instant>,
    errors: HashMap<Failure, u64>,
    conns: Vec<ConnRecord>,
    responses: u64,
    chunks: u64,
}

fn run_one(cfg: &Arc<WatchConfig>, proto: Proto) -> Result<WatchReport, String> {
    let epoch = Instant::now();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<Arc<Vec<Vec<i64>>>>();
    let wcfg = cfg.clone();
    let watcher = std::thread::Builder::new()
        .name("wirebench-watch".into())
        .spawn(move || watch_thread(wcfg, proto, epoch, ready_tx, done_rx))
        .map_err(|e| format!("cannot start the watch thread: {e}"))?;
    let setup_limit = cfg.net.connect_timeout + Duration::from_secs(30);
    match ready_rx.recv_timeout(setup_limit) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            let _ = done_tx.send(Arc::default());
            let _ = watcher.join();
            return Err(e);
        }
        Err(_) => {
            let _ = done_tx.send(Arc::default());
            let _ = watcher.join();
            return Err(format!(
                "watches were not all created within {setup_limit:?}"
            ));
        }
    }
    let pcfg = cfg.clone();
    let puts = std::thread::Builder::new()
        .name("wirebench-put".into())
        .spawn(move || put_thread(pcfg, epoch))
        .map_err(|e| format!("cannot start the put thread: {e}"))?
        .join()
        .map_err(|_| "the put thread panicked (a bug: please report it)".to_string())??;

    // Every watcher should see every acknowledged put to the keys it watches.
    let expected: Vec<Vec<i64>> = (0..cfg.watchers)
        .map(|w| {
            let mut v: Vec<i64> = cfg
                .keys_of(w)
                .into_iter()
                .flat_map(|k| puts.revisions.get(k).cloned().unwrap_or_default())
                .collect();
            v.sort_unstable();
            v
        })
        .collect();
    let expected_events: u64 = expected.iter().map(|v| v.len() as u64).sum();
    let expected = Arc::new(expected);
    let _ = done_tx.send(expected.clone());
    let w = watcher
        .join()
        .map_err(|_| "the watch thread panicked (a bug: please report it)".to_string())?;

    let (mut missing, mut duplicated, mut unexpected) = (0u64, 0u64, 0u64);
    for (i, exp) in expected.iter().enumerate() {
        let mut seen = w.seen.get(i).cloned().unwrap_or_default();
        seen.sort_unstable();
        let before = seen.len();
        seen.dedup();
        duplicated += (before - seen.len()) as u64;
        let (mut a, mut b) = (0, 0);
        while a < exp.len() || b < seen.len() {
            match (exp.get(a), seen.get(b)) {
                (Some(x), Some(y)) if x == y => {
                    a += 1;
                    b += 1;
                }
                (Some(x), Some(y)) if x < y => {
                    missing += 1;
                    a += 1;
                }
                (Some(_), None) => {
                    missing += 1;
                    a += 1;
                }
                _ => {
                    unexpected += 1;
                    b += 1;
                }
            }
        }
    }
    let start = puts.first_sent.unwrap_or(epoch);
    let end = w.last_event.unwrap_or(start).max(start);
    let total = end.duration_since(start).as_secs_f64();
    let put_span = match (puts.first_sent, puts.last_done) {
        (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
        _ => 0.0,
    };
    let conns = &w.conns;
    let sum = |f: fn(&ConnRecord) -> u64| conns.iter().map(f).sum::<u64>();
    let tcp = |f: fn(&crate::stats::TcpInfo) -> u64| {
        conns
            .iter()
            .filter_map(|c| c.tcp.as_ref())
            .map(f)
            .sum::<u64>()
    };
    let frames_in: u64 = conns
        .iter()
        .filter_map(|c| c.h2.as_ref())
        .map(|h| {
            h.inbound
                .frame(wirebench_wire::h2sniff::FrameType::Data)
                .count
        })
        .sum();
    let framing: u64 = conns
        .iter()
        .filter_map(|c| c.http1.as_ref())
        .map(|h| h.chunk_framing_bytes)
        .sum();
    let events = w.events;
    Ok(WatchReport {
        proto: proto.name(),
        title: proto.title(),
        watchers: cfg.watchers,
        streams: cfg.streams,
        connections: conns.len(),
        created: w.created,
        creation_ms: LatencySummary::of(&w.creation),
        events,
        expected_events,
        missing,
        duplicated,
        unexpected,
        total_s: total,
        events_per_sec: if total > 0.0 {
            events as f64 / total
        } else {
            0.0
        },
        events_per_sec_per_watcher: if total > 0.0 {
            events as f64 / total / cfg.watchers as f64
        } else {
            0.0
        },
        event_latency_ms: LatencySummary::of(&w.latency),
        puts: PutReport {
            proto: cfg.put_proto.name(),
            clients: cfg.put_clients,
            total: cfg.put_total,
            ok: puts.ok,
            failed: puts.failed,
            not_sent: puts.not_sent,
            reconnects: puts.reconnects,
            timeout_ms: cfg.put_timeout.as_secs_f64() * 1e3,
            target_rate: cfg.put_rate,
            achieved_rate: if put_span > 0.0 {
                puts.ok as f64 / put_span
            } else {
                0.0
            },
            latency_ms: LatencySummary::of(&puts.latency),
            errors: crate::report::error_counts(&puts.errors),
            not_sent_reasons: crate::report::error_counts(&puts.not_sent_reasons),
        },
        wire: WatchWire {
            bytes_in: sum(|c| c.bytes_in),
            bytes_out: sum(|c| c.bytes_out),
            bytes_in_per_event: per(sum(|c| c.bytes_in), events),
            segments_in_per_event: per(tcp(|t| t.segs_in), events),
            data_segments_in_per_event: per(tcp(|t| t.data_segs_in), events),
            read_calls_per_event: per(sum(|c| c.read_calls), events),
            responses_per_event: per(w.responses, events),
            data_frames_in_per_event: (proto == Proto::Grpc).then(|| per(frames_in, events)),
            chunk_framing_bytes_per_event: (proto == Proto::Http).then(|| per(framing, events)),
            chunks_per_event: (proto == Proto::Http).then(|| per(w.chunks, events)),
        },
        errors: crate::report::error_counts(&w.errors),
        per_connection: w.conns,
    })
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))
}

fn watch_thread(
    cfg: Arc<WatchConfig>,
    proto: Proto,
    epoch: Instant,
    ready: std::sync::mpsc::Sender<Result<(), String>>,
    done: tokio::sync::oneshot::Receiver<Arc<Vec<Vec<i64>>>>,
) -> WatchOutcome {
    let st = Rc::new(WatchState {
        epoch,
        seen: RefCell::new(vec![Vec::new(); cfg.watchers]),
        create_sent: RefCell::new(vec![None; cfg.watchers]),
        created: Cell::new(0),
        creation: RefCell::new(Latencies::default()),
        latency: RefCell::new(Latencies::default()),
        events: Cell::new(0),
        last_event: Cell::new(None),
        errors: RefCell::new(HashMap::new()),
        conns: RefCell::new(Vec::new()),
        chunks: Cell::new(0),
        stop: Notify::new(),
        stopped: Cell::new(false),
        responses: Cell::new(0),
        expected: RefCell::new(None),
    });
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(e));
            return outcome(&st);
        }
    };
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let tasks = match open_streams(&cfg, proto, &st).await {
            Ok(t) => t,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        // Wait until every watch is confirmed (created), bounded.
        let deadline = Instant::now() + cfg.net.connect_timeout + Duration::from_secs(20);
        while st.created.get() < cfg.watchers
            && Instant::now() < deadline
            && !tasks.iter().all(|t| t.is_finished())
        {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        if st.created.get() < cfg.watchers {
            let errs: Vec<String> = st.errors.borrow().keys().map(|f| f.to_string()).collect();
            let _ = ready.send(Err(format!(
                "only {} of {} watches were created{}",
                st.created.get(),
                cfg.watchers,
                if errs.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", errs.join("; "))
                }
            )));
            stop_all(&st, tasks).await;
            return;
        }
        let _ = ready.send(Ok(()));
        // The puts run now; the revisions they created arrive when they are done.
        let expected = done.await.unwrap_or_default();
        let tracked = Expected::new(expected, &st.seen.borrow());
        *st.expected.borrow_mut() = Some(tracked);
        let outstanding = || st.expected.borrow().as_ref().map_or(0, |e| e.outstanding);
        let deadline = tokio::time::Instant::now() + cfg.drain;
        while outstanding() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        stop_all(&st, tasks).await;
    });
    outcome(&st)
}

fn outcome(st: &WatchState) -> WatchOutcome {
    WatchOutcome {
        seen: st.seen.take(),
        created: st.created.get(),
        creation: st.creation.take(),
        latency: st.latency.take(),
        events: st.events.get(),
        last_event: st.last_event.get(),
        errors: st.errors.take(),
        conns: st.conns.take(),
        responses: st.responses.get(),
        chunks: st.chunks.get(),
    }
}

async fn stop_all(st: &WatchState, tasks: Vec<tokio::task::JoinHandle<()>>) {
    st.stopped.set(true);
    st.stop.notify_waiters();
    for t in tasks {
        let _ = t.await;
    }
}

/// Watchers of stream `s` of `streams`: w with w % streams == s.
fn stream_watchers(watchers: usize, streams: usize, s: usize) -> Vec<usize> {
    (s..watchers).step_by(streams).collect()
}

async fn open_streams(
    cfg: &Arc<WatchConfig>,
    proto: Proto,
    st: &Rc<WatchState>,
) -> Result<Vec<tokio::task::JoinHandle<()>>, String> {
    let mut tasks = Vec::new();
    match proto {
        Proto::Grpc => {
            let mut conns = Vec::with_capacity(cfg.conns);
            for c in 0..cfg.conns {
                let ep = &cfg.endpoints[c % cfg.endpoints.len()];
                let conn = GrpcConn::connect(
                    ep.addr,
                    &ep.host,
                    c % cfg.endpoints.len(),
                    &cfg.net,
                    &cfg.h2,
                )
                .await
                .map_err(|e| format!("connect to {}: {e}", ep.addr))?;
                conns.push((Rc::new(conn), ep.authority.clone()));
            }
            for s in 0..cfg.streams {
                let (conn, authority) = &conns[s % conns.len()];
                let watchers = stream_watchers(cfg.watchers, cfg.streams, s);
                let uri: Uri = format!("http://{authority}/etcdserverpb.Watch/Watch")
                    .parse()
                    .map_err(|e| format!("{authority}: {e}"))?;
                tasks.push(tokio::task::spawn_local(grpc_stream(
                    st.clone(),
                    cfg.clone(),
                    conn.clone(),
                    uri,
                    watchers,
                )));
            }
            // The connections close (ledger, TCP_INFO) once every stream task is done.
            let st2 = st.clone();
            let linger = cfg.drain;
            let streams_done: Vec<_> = std::mem::take(&mut tasks);
            tasks.push(tokio::task::spawn_local(async move {
                for t in streams_done {
                    let _ = t.await;
                }
                for (conn, _) in conns {
                    if let Ok(conn) = Rc::try_unwrap(conn) {
                        let rec = conn.close(linger).await;
                        st2.conns.borrow_mut().push(rec);
                    }
                }
            }));
        }
        Proto::Http => {
            for s in 0..cfg.streams {
                let e = s % cfg.endpoints.len();
                let ep = &cfg.endpoints[e];
                let watchers = stream_watchers(cfg.watchers, cfg.streams, s);
                let opened =
                    net::open(ep.addr, &ep.host, &cfg.net, net::Alpn::Http1, Layers::Http1)
                        .await
                        .map_err(|err| format!("connect to {}: {err}", ep.addr))?;
                tasks.push(tokio::task::spawn_local(http_stream(
                    st.clone(),
                    cfg.clone(),
                    opened,
                    e,
                    ep.authority.clone(),
                    watchers,
                )));
            }
        }
    }
    Ok(tasks)
}

fn create_request(cfg: &WatchConfig, w: usize) -> WatchRequest {
    let (key, range_end) = cfg.range(w);
    WatchRequest {
        request_union: Some(RequestUnion::CreateRequest(WatchCreateRequest {
            key: key.into(),
            range_end: range_end.unwrap_or_default().into(),
            ..Default::default()
        })),
    }
}

async fn grpc_stream(
    st: Rc<WatchState>,
    cfg: Arc<WatchConfig>,
    conn: Rc<GrpcConn>,
    uri: Uri,
    watchers: Vec<usize>,
) {
    let mut send = conn.handle();
    let ledger = conn.ledger().clone();
    let mut req = Request::new(());
    *req.method_mut() = Method::POST;
    *req.uri_mut() = uri;
    *req.version_mut() = Version::HTTP_2;
    req.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    req.headers_mut()
        .insert(TE, HeaderValue::from_static("trailers"));
    if let Err(e) = std::future::poll_fn(|cx| send.poll_ready(cx)).await {
        st.error(Failure::with(FailureKind::H2, e));
        return;
    }
    let (response, mut tx) = match send.send_request(req, false) {
        Ok(r) => r,
        Err(e) => {
            st.error(Failure::with(FailureKind::H2, e));
            return;
        }
    };
    ledger.count_request();
    let mut frame = BytesMut::new();
    for &w in &watchers {
        frame.clear();
        grpc::encode(&create_request(&cfg, w), &mut frame);
        st.create_sent.borrow_mut()[w] = Some(Instant::now());
        if let Err(e) = tx.send_data(frame.split().freeze(), false) {
            st.error(Failure::with(FailureKind::H2, e));
            return;
        }
    }
    let response = tokio::select! {
        r = response => r,
        _ = st.stop.notified() => return,
    };
    let response = match response {
        Ok(r) => r,
        Err(e) => {
            st.error(Failure::with(FailureKind::H2, e));
            return;
        }
    };
    let (parts, mut body) = response.into_parts();
    if parts.status != http::StatusCode::OK || parts.headers.contains_key("grpc-status") {
        let status = parts
            .headers
            .get("grpc-message")
            .map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned())
            .unwrap_or_else(|| format!("HTTP {}", parts.status));
        st.error(Failure::with(FailureKind::Etcd, status));
        return;
    }
    let mut pending: VecDeque<usize> = watchers.iter().copied().collect();
    let mut ids: HashMap<i64, usize> = HashMap::new();
    let mut rx = BytesMut::with_capacity(16 * 1024);
    loop {
        if st.stopped.get() {
            break;
        }
        let chunk = tokio::select! {
            c = body.data() => c,
            _ = st.stop.notified() => break,
        };
        let chunk = match chunk {
            Some(Ok(c)) => c,
            Some(Err(e)) => {
                st.error(Failure::with(FailureKind::H2, e));
                break;
            }
            None => {
                st.error(Failure::with(
                    FailureKind::Watch,
                    "etcd ended the watch stream",
                ));
                break;
            }
        };
        let _ = body.flow_control().release_capacity(chunk.len());
        rx.extend_from_slice(&chunk);
        loop {
            match grpc::decode_message::<WatchResponse>(&mut rx, MAX_WATCH_MESSAGE) {
                Ok(Some(r)) => {
                    let revision_events = r.events.into_iter().map(|e| {
                        let kv = e.kv.unwrap_or_default();
                        (e.r#type == 1, kv.mod_revision, kv.value.to_vec())
                    });
                    st.response(
                        r.watch_id,
                        r.created,
                        r.canceled,
                        r.compact_revision,
                        &r.cancel_reason,
                        revision_events,
                        &mut pending,
                        &mut ids,
                    );
                }
                Ok(None) => break,
                Err(e) => {
                    st.error(Failure::with(FailureKind::GrpcFraming, e));
                    return;
                }
            }
        }
    }
    // Ends the stream: the request side is reset (CANCEL), which cancels its watches.
    drop(tx);
}

async fn http_stream(
    st: Rc<WatchState>,
    cfg: Arc<WatchConfig>,
    opened: net::Opened,
    endpoint: usize,
    authority: String,
    watchers: Vec<usize>,
) {
    let (mut io, ledger, local_port) = (opened.io, opened.ledger, opened.local_port);
    let opened = Instant::now();
    let record = |io: &net::Io| {
        let tcp = net::tcp_info(io.tcp());
        ledger.record(
            endpoint,
            local_port,
            opened.elapsed().as_micros() as u64,
            tcp,
        )
    };
    let template = match RequestTemplate::new(
        "POST",
        "/v3/watch",
        &authority,
        &[("Content-Type", "application/json")],
    ) {
        Ok(t) => t,
        Err(e) => {
            st.error(Failure::with(FailureKind::Http1, e));
            return;
        }
    };
    let mut body = BytesMut::new();
    for (i, &w) in watchers.iter().enumerate() {
        if i > 0 {
            body.put_u8(b'\n');
        }
        let (key, range_end) = cfg.range(w);
        wline::render_create_request(&key, range_end.as_deref(), 0, None, &mut body);
    }
    let mut wbuf = BytesMut::new();
    let head_len = template.encode(&body, &mut wbuf);
    ledger.count_request();
    ledger.http1_request(head_len, body.len());
    let now = Instant::now();
    for &w in &watchers {
        st.create_sent.borrow_mut()[w] = Some(now);
    }
    if let Err(e) = io.write_all(&wbuf).await {
        st.error(crate::client::io_failure(&e));
        st.conns.borrow_mut().push(record(&io));
        return;
    }
    let mut rbuf = BytesMut::with_capacity(16 * 1024);
    let mut lines = BytesMut::with_capacity(16 * 1024);
    let mut chunked = ChunkedDecoder::new(u64::MAX);
    let mut pending: VecDeque<usize> = watchers.iter().copied().collect();
    let mut ids: HashMap<i64, usize> = HashMap::new();
    let mut head: Option<h1::ResponseHead> = None;
    loop {
        if st.stopped.get() {
            break;
        }
        let n = tokio::select! {
            r = io.read_buf(&mut rbuf) => r,
            _ = st.stop.notified() => break,
        };
        match n {
            Ok(0) => {
                st.error(Failure::with(
                    FailureKind::Closed,
                    "etcd closed the watch connection",
                ));
                break;
            }
            Ok(_) => {}
            Err(e) => {
                st.error(crate::client::io_failure(&e));
                break;
            }
        }
        if head.is_none() {
            match h1::decode_response_head(&mut rbuf, u64::MAX) {
                Ok(Some(h)) => {
                    if h.status != 200 || h.body != BodyKind::Chunked {
                        let msg = String::from_utf8_lossy(&rbuf).into_owned();
                        st.error(Failure::with(
                            FailureKind::Etcd,
                            format_args!("HTTP {}: {}", h.status, msg.trim()),
                        ));
                        break;
                    }
                    head = Some(h);
                }
                Ok(None) => continue,
                Err(e) => {
                    st.error(Failure::with(FailureKind::Http1, e));
                    break;
                }
            }
        }
        let ended = match chunked.decode(&mut rbuf, &mut lines) {
            Ok(ended) => ended,
            Err(e) => {
                st.error(Failure::with(FailureKind::Http1, e));
                break;
            }
        };
        loop {
            // At the end of the body the gateway's last line (an error) has no newline.
            let next = if ended {
                wline::next_line_eof(&mut lines)
            } else {
                wline::next_line(&mut lines)
            };
            match next {
                Ok(Some(line)) => match wline::parse_line(&line) {
                    Ok(wline::WatchLine::Response {
                        watch_id,
                        created,
                        canceled,
                        compact_revision,
                        cancel_reason,
                        events,
                        ..
                    }) => st.response(
                        watch_id,
                        created,
                        canceled,
                        compact_revision,
                        cancel_reason.as_deref().unwrap_or(""),
                        events
                            .into_iter()
                            .map(|e| (e.delete, e.mod_revision, e.value)),
                        &mut pending,
                        &mut ids,
                    ),
                    Ok(wline::WatchLine::Error { message, .. }) => {
                        st.error(Failure::with(FailureKind::Etcd, message))
                    }
                    Err(e) => st.error(Failure::with(FailureKind::BadResponse, e)),
                },
                Ok(None) => break,
                Err(e) => {
                    st.error(Failure::with(FailureKind::BadResponse, e));
                    break;
                }
            }
        }
        if ended {
            st.error(Failure::with(
                FailureKind::Watch,
                "etcd ended the watch response",
            ));
            break;
        }
    }
    if let Some(h) = head {
        ledger.http1_response(
            h.head_len,
            chunked.data_bytes() as usize,
            chunked.framing_bytes(),
        );
    }
    st.chunks.set(st.chunks.get() + chunked.chunks());
    st.conns.borrow_mut().push(record(&io));
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
    put_thread(Arc::new(cfg.clone()), Instant::now())
}

/// What one put client shares with the others on the put thread.
struct PutCtx {
    cfg: Arc<WatchConfig>,
    epoch: Instant,
    /// the schedule's origin (open loop), taken once every put connection is open
    start: tokio::time::Instant,
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
        crate::engine::INTERRUPTED
            .load(std::sync::atomic::Ordering::Relaxed)
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
            delay: crate::engine::BACKOFF_MIN,
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
        self.delay = (self.delay * 2).min(crate::engine::BACKOFF_MAX);
        Some(delay)
    }

    /// Whether the server has been unreachable for `limit` or longer.
    fn expired(&self, limit: Duration) -> bool {
        self.down_since.is_some_and(|s| s.elapsed() >= limit)
    }
}

fn put_thread(cfg: Arc<WatchConfig>, epoch: Instant) -> Result<PutOutcome, String> {
    let rt = runtime()?;
    let local = tokio::task::LocalSet::new();
    let ctx = local.block_on(&rt, async {
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
    })?;
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
    HttpConn::connect(ep.addr, &ep.host, 0, &cfg.net, 1 << 20, Layers::Off).await
}

/// The gateway's answer to one put: its revision, or why not.
fn judge_http_put(status: u16, body: &[u8]) -> Result<i64, Failure> {
    if status != 200 {
        return Err(match serde_json::from_slice::<GwError>(body) {
            Ok(e) => Failure::with(FailureKind::Etcd, e.text()),
            Err(_) => Failure::with(FailureKind::HttpStatus, format_args!("HTTP {status}")),
        });
    }
    let r: GwResponse =
        serde_json::from_slice(body).map_err(|e| Failure::with(FailureKind::BadResponse, e))?;
    r.header
        .and_then(|h| h.revision)
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or_else(|| Failure::with(FailureKind::BadResponse, "no header.revision in response"))
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
        body.put_slice(br#"{"key":""#);
        json::put_base64(&cfg.key(k), &mut body);
        body.put_slice(br#"","value":""#);
        json::put_base64(&value, &mut body);
        body.put_slice(br#""}"#);
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
                    let rev = judge_http_put(resp.status, resp.body);
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
            Ok(Ok(msg)) => PutResponse::decode(msg)
                .ok()
                .and_then(|p| p.header)
                .map(|h| h.revision)
                .ok_or_else(|| {
                    Failure::with(FailureKind::BadResponse, "PutResponse without header")
                }),
        };
        ctx.record(k, rev, t0);
        idx += step;
    }
}

/// Text report of watch runs.
pub fn render_text(cfg: &WatchConfig, runs: &[WatchReport]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for r in runs {
        let _ = writeln!(
            out,
            "Watch over {} — {} watchers on {} streams, {} connections; {} keys{}",
            r.title,
            r.watchers,
            r.streams,
            r.connections,
            cfg.watched_keys,
            if cfg.prefix {
                ", every watcher on the whole prefix"
            } else {
                ""
            }
        );
        let _ = writeln!(
            out,
            "  puts: {} over {} by {} clients, {}",
            cfg.put_total,
            r.puts.proto,
            r.puts.clients,
            cfg.put_rate
                .map_or("closed loop".to_string(), |x| format!("{x:.0}/s target"))
        );
        let _ = writeln!(out);
        let c = &r.creation_ms;
        let _ = writeln!(
            out,
            "Watch creation: {} of {} created; latency p50 {:.3} ms, p99 {:.3} ms, slowest {:.3} ms",
            r.created, r.watchers, c.p50, c.p99, c.slowest
        );
        let _ = writeln!(out);
        let _ = writeln!(out, "Events:");
        let _ = writeln!(
            out,
            "  Received:     {} of {} expected",
            r.events, r.expected_events
        );
        let _ = writeln!(
            out,
            "  Missing:      {}   Duplicated: {}   Unexpected: {}",
            r.missing, r.duplicated, r.unexpected
        );
        let _ = writeln!(
            out,
            "  Total:        {:.2} s (first put sent to last event received)",
            r.total_s
        );
        let _ = writeln!(
            out,
            "  Events/sec:   {:.1} ({:.1} per watcher)",
            r.events_per_sec, r.events_per_sec_per_watcher
        );
        let l = &r.event_latency_ms;
        let _ = writeln!(out);
        let _ = writeln!(out, "Event latency (put sent -> event received):");
        let _ = writeln!(
            out,
            "  fastest {:.3} ms, average {:.3} ms, p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, p99.9 {:.3} ms, slowest {:.3} ms",
            l.fastest, l.average, l.p50, l.p90, l.p99, l.p999, l.slowest
        );
        let p = &r.puts;
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Puts: {} ok, {} failed, {} not sent (of {}); {:.1}/s achieved; latency p50 {:.3} ms, p99 {:.3} ms",
            p.ok,
            p.failed,
            p.not_sent,
            p.total,
            p.achieved_rate,
            p.latency_ms.p50,
            p.latency_ms.p99
        );
        let _ = writeln!(
            out,
            "  per-put timeout {:.0} ms, {} reconnects",
            p.timeout_ms, p.reconnects
        );
        for e in &p.not_sent_reasons {
            let _ = writeln!(
                out,
                "  not sent [{}]\t{}: {}",
                e.count,
                e.kind,
                e.message.as_deref().unwrap_or("")
            );
        }
        let w = &r.wire;
        let _ = writeln!(out);
        let _ = writeln!(out, "Wire (watch connections, per event received):");
        let _ = writeln!(
            out,
            "  Bytes in / event:        {:.1} ({} in all; {} out)",
            w.bytes_in_per_event, w.bytes_in, w.bytes_out
        );
        let _ = writeln!(
            out,
            "  TCP segments in / event: {:.3} ({:.3} with data)",
            w.segments_in_per_event, w.data_segments_in_per_event
        );
        let _ = writeln!(
            out,
            "  Read syscalls / event:   {:.3}",
            w.read_calls_per_event
        );
        let _ = writeln!(
            out,
            "  Responses / event:       {:.3}",
            w.responses_per_event
        );
        if let Some(f) = w.data_frames_in_per_event {
            let _ = writeln!(out, "  h2 DATA frames / event:  {f:.3}");
        }
        if let (Some(f), Some(c)) = (w.chunk_framing_bytes_per_event, w.chunks_per_event) {
            let _ = writeln!(
                out,
                "  Chunks / event:          {c:.3} ({f:.1} B of chunk framing)"
            );
        }
        let errors: Vec<_> = r.errors.iter().chain(p.errors.iter()).collect();
        if !errors.is_empty() {
            let _ = writeln!(out);
            let _ = writeln!(out, "Errors:");
            for e in errors {
                let _ = writeln!(
                    out,
                    "  [{}]\t{}: {}",
                    e.count,
                    e.kind,
                    e.message.as_deref().unwrap_or("")
                );
            }
        }
        let _ = writeln!(out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_increments_the_last_byte() {
        assert_eq!(prefix_end(b"a/"), b"a0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff\xff"), vec![0]);
    }

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
    fn gateway_put_answers_are_judged_by_kind() {
        assert_eq!(
            judge_http_put(200, br#"{"header":{"revision":"42"}}"#),
            Ok(42)
        );
        let kind = |status, body: &[u8]| judge_http_put(status, body).map_err(|f| f.kind);
        assert_eq!(
            kind(200, br#"{"header":{}}"#),
            Err(FailureKind::BadResponse)
        );
        assert_eq!(kind(200, b"not json"), Err(FailureKind::BadResponse));
        assert_eq!(
            kind(
                400,
                br#"{"error":"etcdserver: request is too large","code":3}"#
            ),
            Err(FailureKind::Etcd)
        );
        assert_eq!(kind(502, b"Bad Gateway"), Err(FailureKind::HttpStatus));
    }

    #[test]
    fn only_expected_revisions_count_toward_the_drain() {
        // watcher 0 expects 10, 11, 12; it already saw 10 and an unexpected 99
        let revisions = Arc::new(vec![vec![10, 11, 12], vec![]]);
        let mut e = Expected::new(revisions, &[vec![10, 99], vec![]]);
        assert_eq!(e.outstanding, 2);
        // an unexpected event (a timed-out put etcd applied) is no stand-in for 11 or 12
        e.arrived(0, 98);
        e.arrived(1, 11);
        // a duplicate counts once
        e.arrived(0, 10);
        assert_eq!(e.outstanding, 2);
        e.arrived(0, 12);
        e.arrived(0, 11);
        assert_eq!(e.outstanding, 0);
        e.arrived(0, 11);
        e.arrived(7, 11);
        assert_eq!(e.outstanding, 0);
    }

    #[test]
    fn backoff_doubles_up_to_its_cap_and_gives_up_after_the_limit() {
        let limit = Duration::from_secs(60);
        let mut b = Backoff::new();
        let mut delays = Vec::new();
        for _ in 0..9 {
            delays.push(b.failed(Instant::now(), limit).expect("within the limit"));
        }
        assert_eq!(delays[0], crate::engine::BACKOFF_MIN);
        assert_eq!(delays[1], crate::engine::BACKOFF_MIN * 2);
        assert_eq!(*delays.last().unwrap(), crate::engine::BACKOFF_MAX);
        assert!(!b.expired(limit));
        // down since the first failure: a later failure past the limit gives up
        let mut b = Backoff::new();
        let long_ago = Instant::now() - Duration::from_millis(500);
        let short = Duration::from_millis(300);
        assert_eq!(b.failed(long_ago, short), None);
        assert!(b.expired(short));
        b.ok();
        assert!(!b.expired(short));
        assert_eq!(
            b.failed(Instant::now(), short),
            Some(crate::engine::BACKOFF_MIN)
        );
    }

    #[test]
    fn streams_split_watchers_evenly() {
        assert_eq!(stream_watchers(10, 3, 0), vec![0, 3, 6, 9]);
        assert_eq!(stream_watchers(10, 3, 2), vec![2, 5, 8]);
        let all: usize = (0..10).map(|s| stream_watchers(1000, 10, s).len()).sum();
        assert_eq!(all, 1000);
    }
}
