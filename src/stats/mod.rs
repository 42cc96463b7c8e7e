//! Per-worker measurements (latency histogram, outcomes, connection records) and their merge.

pub mod perf;
mod run;

pub use run::{Memory, Proto, ProtoRun, TIMERFD, TOKIO_FALLBACK, WindowCost};

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use wirebench_wire::grpc::Code;
use wirebench_wire::h2sniff::{FrameType, H2Counts};

/// Longest latency the histogram tracks exactly (longer ones saturate): one hour, in ns.
const HIST_MAX_NS: u64 = 3_600_000_000_000;

/// What a response said about itself: an HTTP status or a gRPC status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StatusKey {
    Http(u16),
    Grpc(u32),
    /// a gRPC server answered with a non-200 HTTP status: the gRPC code the spec maps it to,
    /// and the HTTP status itself
    GrpcFromHttp {
        code: u32,
        http: u16,
    },
}

impl fmt::Display for StatusKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatusKey::Http(code) => write!(f, "{code}"),
            StatusKey::Grpc(code) => f.write_str(Code::from_u32(*code).as_str()),
            StatusKey::GrpcFromHttp { code, http } => {
                write!(f, "{} (HTTP {http})", Code::from_u32(*code).as_str())
            }
        }
    }
}

/// The stable failure kinds: their names are the JSON keys and are listed in
/// docs/METHODOLOGY.md ("Failure kinds"); a test keeps the two in step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailureKind {
    /// no connection: the connect (or TLS / h2 handshake) failed
    Connect,
    /// no complete response within --timeout
    Timeout,
    /// the server closed the connection before the response was complete
    Closed,
    Io,
    /// a malformed HTTP/1.1 response (head, chunk framing)
    Http1,
    /// a response body beyond --max-body
    BodyTooLarge,
    RstStream,
    Goaway,
    /// an h2 protocol error (local or remote)
    H2,
    GrpcFraming,
    /// valid framing, unexpected content
    BadResponse,
    /// an HTTP status that is not a success (and not an etcd error body)
    HttpStatus,
    /// an error etcd reported
    Etcd,
    /// a non-zero grpc-status from a non-etcd server
    GrpcStatus,
    /// etcd authentication failed (re-authenticating after "invalid auth token")
    Auth,
    /// open loop: a send still waiting --timeout after its intended time, never sent
    Late,
    /// a watch stream answered what no watch request asked for
    Watch,
    /// a watch canceled because its revision was compacted
    Compacted,
    /// a watch canceled by etcd for another reason
    Canceled,
    /// not sent: the run was interrupted (Ctrl-C)
    Interrupted,
}

impl FailureKind {
    /// Every kind, in the order docs/METHODOLOGY.md lists them.
    pub const ALL: [FailureKind; 20] = [
        FailureKind::Connect,
        FailureKind::Timeout,
        FailureKind::Closed,
        FailureKind::Io,
        FailureKind::Http1,
        FailureKind::BodyTooLarge,
        FailureKind::RstStream,
        FailureKind::Goaway,
        FailureKind::H2,
        FailureKind::GrpcFraming,
        FailureKind::BadResponse,
        FailureKind::HttpStatus,
        FailureKind::Etcd,
        FailureKind::GrpcStatus,
        FailureKind::Auth,
        FailureKind::Late,
        FailureKind::Watch,
        FailureKind::Compacted,
        FailureKind::Canceled,
        FailureKind::Interrupted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Connect => "connect",
            FailureKind::Timeout => "timeout",
            FailureKind::Closed => "closed",
            FailureKind::Io => "io",
            FailureKind::Http1 => "http1",
            FailureKind::BodyTooLarge => "body_too_large",
            FailureKind::RstStream => "rst_stream",
            FailureKind::Goaway => "goaway",
            FailureKind::H2 => "h2",
            FailureKind::GrpcFraming => "grpc_framing",
            FailureKind::BadResponse => "bad_response",
            FailureKind::HttpStatus => "http_status",
            FailureKind::Etcd => "etcd",
            FailureKind::GrpcStatus => "grpc_status",
            FailureKind::Auth => "auth",
            FailureKind::Late => "late",
            FailureKind::Watch => "watch",
            FailureKind::Compacted => "compacted",
            FailureKind::Canceled => "canceled",
            FailureKind::Interrupted => "interrupted",
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a request failed: a stable kind (the metric key) and, where useful, the peer's message.
/// The message is interned per thread: a failure that happened before costs no allocation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Failure {
    pub kind: FailureKind,
    pub detail: Option<Arc<str>>,
}

/// Distinct failure messages one thread keeps for reuse; past this, a new message is allocated
/// each time it occurs (a peer sending endless distinct texts cannot grow the cache).
const INTERNED_MAX: usize = 4096;

thread_local! {
    /// The messages seen on this thread, and a buffer to format the next one into.
    static MESSAGES: RefCell<(HashSet<Arc<str>>, String)> = RefCell::new((HashSet::new(), String::new()));
}

/// `detail` as an interned string: formatted into a reused buffer, looked up, allocated only
/// the first time (or when the cache is full).
fn intern(detail: impl fmt::Display) -> Arc<str> {
    use std::fmt::Write;
    MESSAGES.with(|m| {
        let mut m = m.borrow_mut();
        let (set, buf) = &mut *m;
        buf.clear();
        let _ = write!(buf, "{detail}");
        if let Some(known) = set.get(buf.as_str()) {
            return known.clone();
        }
        let new: Arc<str> = Arc::from(buf.as_str());
        if set.len() < INTERNED_MAX {
            set.insert(new.clone());
        }
        new
    })
}

impl Failure {
    pub fn new(kind: FailureKind) -> Self {
        Failure { kind, detail: None }
    }

    pub fn with(kind: FailureKind, detail: impl fmt::Display) -> Self {
        Failure {
            kind,
            detail: Some(intern(detail)),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.detail {
            Some(d) => write!(f, "{}: {}", self.kind, d),
            None => f.write_str(self.kind.as_str()),
        }
    }
}

/// Latency of successful requests: an HDR histogram (ns, 3 significant digits) plus exact
/// count, sum, sum of squares, min and max, so mean and stddev carry no histogram rounding.
#[derive(Debug, Clone)]
pub struct Latencies {
    pub hist: Histogram<u64>,
    pub count: u64,
    pub sum_ns: u128,
    pub sum_sq_ns: u128,
    pub min_ns: u64,
    pub max_ns: u64,
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies {
            // Invariant: the bounds are constants that satisfy hdrhistogram's preconditions.
            hist: Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("valid histogram bounds"),
            count: 0,
            sum_ns: 0,
            sum_sq_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
        }
    }
}

impl Latencies {
    pub fn record(&mut self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1);
        self.hist.saturating_record(ns);
        self.count += 1;
        self.sum_ns += u128::from(ns);
        self.sum_sq_ns += u128::from(ns) * u128::from(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn merge(&mut self, other: &Latencies) {
        // Both histograms share bounds, so add cannot fail.
        self.hist.add(&other.hist).expect("same histogram bounds");
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.sum_sq_ns += other.sum_sq_ns;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        self.sum_ns as f64 / self.count as f64
    }

    /// Population standard deviation.
    pub fn stddev_ns(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let n = self.count as f64;
        let mean = self.sum_ns as f64 / n;
        (self.sum_sq_ns as f64 / n - mean * mean).max(0.0).sqrt()
    }

    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        self.hist.value_at_quantile(q)
    }
}

/// Where and when an outcome happened: the endpoint it went to, and its offset from the start of
/// the measured window (for the timeline).
#[derive(Debug, Clone, Copy, Default)]
pub struct At {
    pub endpoint: usize,
    pub offset: Duration,
}

/// Outcomes of the requests sent to one endpoint.
#[derive(Debug, Clone, Default)]
pub struct EndpointStats {
    pub ok: u64,
    pub failed: u64,
    pub latency: Latencies,
}

/// Most timeline buckets kept: past this, neighbouring buckets are merged (the width doubles), so
/// a long run's timeline stays bounded in memory.
const TIMELINE_MAX_BUCKETS: usize = 600;

/// Latencies a timeline bucket tracks (µs; longer ones saturate): 100 s.
const TIMELINE_MAX_US: u64 = 100_000_000;

/// One timeline bucket: outcomes completed in it and their latencies (µs, 2 significant digits).
#[derive(Debug, Clone)]
pub struct Bucket {
    pub ok: u64,
    pub failed: u64,
    pub hist: Histogram<u32>,
}

impl Default for Bucket {
    fn default() -> Self {
        Bucket {
            ok: 0,
            failed: 0,
            // Invariant: constant bounds that satisfy hdrhistogram's preconditions.
            hist: Histogram::new_with_bounds(1, TIMELINE_MAX_US, 2).expect("valid bounds"),
        }
    }
}

impl Bucket {
    fn add(&mut self, o: &Bucket) {
        self.ok += o.ok;
        self.failed += o.failed;
        // Same bounds on both sides: add cannot fail.
        self.hist.add(&o.hist).expect("same histogram bounds");
    }
}

/// Outcomes by completion time: buckets of `width_s` seconds from the start of the measured
/// window (1 s until the run outgrows `TIMELINE_MAX_BUCKETS`).
#[derive(Debug, Clone)]
pub struct Timeline {
    pub width_s: u64,
    pub buckets: Vec<Bucket>,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline {
            width_s: 1,
            buckets: Vec::new(),
        }
    }
}

impl Timeline {
    fn bucket(&mut self, offset: Duration) -> &mut Bucket {
        let mut i = (offset.as_secs() / self.width_s) as usize;
        while i >= TIMELINE_MAX_BUCKETS {
            self.coarsen();
            i = (offset.as_secs() / self.width_s) as usize;
        }
        if self.buckets.len() <= i {
            self.buckets.resize_with(i + 1, Bucket::default);
        }
        &mut self.buckets[i]
    }

    /// Merges neighbouring buckets: twice the width, half the buckets.
    fn coarsen(&mut self) {
        let old = std::mem::take(&mut self.buckets);
        let mut it = old.into_iter();
        while let Some(mut a) = it.next() {
            if let Some(b) = it.next() {
                a.add(&b);
            }
            self.buckets.push(a);
        }
        self.width_s *= 2;
    }

    pub fn merge(&mut self, mut other: Timeline) {
        while self.width_s < other.width_s {
            self.coarsen();
        }
        while other.width_s < self.width_s {
            other.coarsen();
        }
        if self.buckets.len() < other.buckets.len() {
            self.buckets
                .resize_with(other.buckets.len(), Bucket::default);
        }
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            a.add(b);
        }
    }
}

/// Everything one worker thread measured.
#[derive(Debug, Default)]
pub struct Stats {
    /// latency of successful requests; in open loop from the intended send time (corrected)
    pub latency: Latencies,
    /// open loop only: latency from the actual send time (what a closed-loop tool would report)
    pub uncorrected: Option<Latencies>,
    pub ok: u64,
    pub failed: u64,
    /// requests sent during warmup (excluded from everything but the wire counters)
    pub warmup: u64,
    pub statuses: BTreeMap<StatusKey, u64>,
    pub errors: HashMap<Failure, u64>,
    /// connections replaced mid-run (server closed, error, timeout)
    pub reconnects: u64,
    /// gRPC requests re-sent on a new connection because the server did not process them
    pub retried: u64,
    /// requests re-sent after re-authenticating ("invalid auth token")
    pub reauthenticated: u64,
    /// measured requests written to a socket (a gRPC request retried counts once): the
    /// denominator of the measured window's per-request figures
    pub written: u64,
    /// connection attempts that failed mid-run (each turn that found no connection), and the
    /// last reason; in duration mode they are not requests, so Count leaves them out
    pub connect_failures: u64,
    pub connect_error: Option<Failure>,
    /// open loop: measured sends whose intended time came while every client was busy
    pub late: u64,
    /// open loop: measured sends that waited longer than --timeout for a free client and were
    /// never sent (each is also a `late` failure)
    pub expired: u64,
    /// open loop: the largest delay between a send's intended and actual time
    pub max_send_lag: Duration,
    /// open loop: measured sends and their delays summed (for the average)
    pub lagged_sends: u64,
    pub send_lag_sum: Duration,
    pub per_endpoint: Vec<EndpointStats>,
    pub timeline: Timeline,
    pub conns: Vec<ConnRecord>,
}

impl Stats {
    fn endpoint(&mut self, i: usize) -> &mut EndpointStats {
        if self.per_endpoint.len() <= i {
            self.per_endpoint.resize_with(i + 1, EndpointStats::default);
        }
        &mut self.per_endpoint[i]
    }

    pub fn record_ok(&mut self, at: At, latency: Duration, status: StatusKey) {
        self.ok += 1;
        self.latency.record(latency);
        *self.statuses.entry(status).or_insert(0) += 1;
        let e = self.endpoint(at.endpoint);
        e.ok += 1;
        e.latency.record(latency);
        let b = self.timeline.bucket(at.offset);
        b.ok += 1;
        b.hist.saturating_record(
            u64::try_from(latency.as_micros())
                .unwrap_or(u64::MAX)
                .max(1),
        );
    }

    /// Open loop: the same request's latency from its actual send time.
    pub fn record_uncorrected(&mut self, latency: Duration) {
        self.uncorrected
            .get_or_insert_with(Latencies::default)
            .record(latency);
    }

    pub fn record_failure(&mut self, at: At, status: Option<StatusKey>, failure: Failure) {
        self.record_failures(at, 1, failure);
        if let Some(s) = status {
            *self.statuses.entry(s).or_insert(0) += 1;
        }
    }

    /// `n` requests that failed the same way (e.g. not sent: server unreachable).
    pub fn record_failures(&mut self, at: At, n: u64, failure: Failure) {
        if n == 0 {
            return;
        }
        self.failed += n;
        *self.errors.entry(failure).or_insert(0) += n;
        self.endpoint(at.endpoint).failed += n;
        self.timeline.bucket(at.offset).failed += n;
    }

    pub fn merge(&mut self, other: Stats) {
        self.latency.merge(&other.latency);
        if let Some(u) = &other.uncorrected {
            self.uncorrected
                .get_or_insert_with(Latencies::default)
                .merge(u);
        }
        self.ok += other.ok;
        self.failed += other.failed;
        self.warmup += other.warmup;
        for (k, v) in other.statuses {
            *self.statuses.entry(k).or_insert(0) += v;
        }
        for (k, v) in other.errors {
            *self.errors.entry(k).or_insert(0) += v;
        }
        self.reconnects += other.reconnects;
        self.retried += other.retried;
        self.reauthenticated += other.reauthenticated;
        self.written += other.written;
        self.connect_failures += other.connect_failures;
        if other.connect_error.is_some() {
            self.connect_error = other.connect_error;
        }
        self.late += other.late;
        self.expired += other.expired;
        self.max_send_lag = self.max_send_lag.max(other.max_send_lag);
        self.lagged_sends += other.lagged_sends;
        self.send_lag_sum += other.send_lag_sum;
        for (i, e) in other.per_endpoint.iter().enumerate() {
            let mine = self.endpoint(i);
            mine.ok += e.ok;
            mine.failed += e.failed;
            mine.latency.merge(&e.latency);
        }
        self.timeline.merge(other.timeline);
        self.conns.extend(other.conns);
    }

    pub fn count(&self) -> u64 {
        self.ok + self.failed
    }
}

/// The ledger of one TCP connection, taken when it closed (or at the end of the run).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ConnRecord {
    /// index of the endpoint it went to
    pub endpoint: usize,
    /// source address (see `--bind`)
    pub local_ip: Option<std::net::IpAddr>,
    pub local_port: u16,
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub write_calls: u64,
    pub read_calls: u64,
    pub write_would_block: u64,
    pub read_would_block: u64,
    /// requests (HTTP/1.1) or streams (gRPC) carried
    pub requests: u64,
    pub lifetime_us: u64,
    /// TCP connect time (SYN sent to established), before any TLS or h2 handshake
    pub connect_us: u64,
    /// TCP_INFO read just before close; absent if the kernel would not say
    pub tcp: Option<TcpInfo>,
    /// HTTP/1.1 layers (HTTP/1.1 connections, ledger on)
    pub http1: Option<Http1Layers>,
    /// h2 layers per direction (gRPC connections, ledger on)
    pub h2: Option<H2Layers>,
    /// TLS connections: handshake time and record overhead (socket bytes - plaintext)
    pub tls: Option<TlsLayer>,
    /// the close exchange, after the snapshot every other figure of the record is taken at
    pub close: Option<CloseRecord>,
}

/// What crossed a connection after its snapshot (taken when its last response had been read,
/// before the client began to close): our GOAWAY / close_notify and FIN, the peer's answer and
/// FIN. Counted apart so that per-request figures hold no close traffic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CloseRecord {
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// TCP_INFO after the close minus TCP_INFO at the snapshot (absent when either is)
    pub segs_out: Option<u64>,
    pub segs_in: Option<u64>,
    pub data_segs_out: Option<u64>,
    pub data_segs_in: Option<u64>,
    /// the peer's FIN was read within the bound; false: the close was cut off
    pub drained: bool,
    pub duration_us: u64,
}

/// The TLS layer of one connection (or summed over several).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TlsLayer {
    pub handshakes: u64,
    pub handshake_us: u64,
    pub plaintext_out: u64,
    pub plaintext_in: u64,
    /// bytes on the socket beyond the plaintext: handshake, record headers, AEAD tags, alerts
    pub record_overhead_out: u64,
    pub record_overhead_in: u64,
}

impl TlsLayer {
    pub fn add(&mut self, o: &TlsLayer) {
        self.handshakes += o.handshakes;
        self.handshake_us += o.handshake_us;
        self.plaintext_out += o.plaintext_out;
        self.plaintext_in += o.plaintext_in;
        self.record_overhead_out += o.record_overhead_out;
        self.record_overhead_in += o.record_overhead_in;
    }
}

/// What wirebench keeps of `TCP_INFO` for one connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TcpInfo {
    /// all segments sent, pure ACKs and retransmits included (tcpi_segs_out)
    pub segs_out: u64,
    /// all segments received (tcpi_segs_in)
    pub segs_in: u64,
    /// segments carrying payload sent (tcpi_data_segs_out)
    pub data_segs_out: u64,
    /// segments carrying payload received (tcpi_data_segs_in)
    pub data_segs_in: u64,
    /// segments retransmitted over the connection's life (tcpi_total_retrans)
    pub retransmits: u64,
    /// smoothed round-trip time, microseconds (tcpi_rtt)
    pub rtt_us: u64,
    /// send maximum segment size, bytes (tcpi_snd_mss)
    pub mss: u64,
    /// whether TCP timestamps were negotiated (12 option bytes on every segment)
    pub timestamps: bool,
}

/// HTTP/1.1 bytes by layer on one connection (or summed over several).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Http1Layers {
    pub requests: u64,
    pub responses: u64,
    /// start line + headers + blank line
    pub request_head_bytes: u64,
    pub request_body_bytes: u64,
    pub response_head_bytes: u64,
    /// payload, de-chunked
    pub response_body_bytes: u64,
    /// chunk size lines, CRLFs, last chunk and trailers
    pub chunk_framing_bytes: u64,
}

impl Http1Layers {
    pub fn add(&mut self, o: &Http1Layers) {
        self.requests += o.requests;
        self.responses += o.responses;
        self.request_head_bytes += o.request_head_bytes;
        self.request_body_bytes += o.request_body_bytes;
        self.response_head_bytes += o.response_head_bytes;
        self.response_body_bytes += o.response_body_bytes;
        self.chunk_framing_bytes += o.chunk_framing_bytes;
    }
}

/// Frames of one type: how many, and their bytes (9-byte header + payload).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FrameTally {
    pub count: u64,
    pub bytes: u64,
}

/// One direction of an h2 connection, by layer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct H2Dir {
    /// the 24-byte client preface (client to server only)
    pub preface_bytes: u64,
    /// everything before the first HEADERS frame: preface, SETTINGS, their ACKs, the setup PING
    pub setup_bytes: u64,
    pub frame_header_bytes: u64,
    /// HPACK-compressed header block bytes (HEADERS and CONTINUATION fragments)
    pub hpack_bytes: u64,
    /// the same header lists uncompressed (name + value octets, pseudo-headers included)
    pub header_list_bytes: u64,
    pub data_payload_bytes: u64,
    pub padding_bytes: u64,
    pub grpc_prefix_bytes: u64,
    pub grpc_message_bytes: u64,
    pub grpc_messages: u64,
    /// DATA bytes whose gRPC framing could not be followed
    pub data_untracked_bytes: u64,
    /// bytes after the framing broke (a protocol error), if it did
    pub unparsed_bytes: u64,
    /// per frame type name ("DATA", "HEADERS", ...), only types seen
    pub frames: BTreeMap<&'static str, FrameTally>,
}

impl H2Dir {
    pub fn from_counts(c: &H2Counts, header_list_bytes: u64) -> H2Dir {
        let frames = FrameType::ALL
            .iter()
            .zip(c.frames.iter())
            .filter(|(_, f)| f.count > 0)
            .map(|(t, f)| {
                (
                    t.name(),
                    FrameTally {
                        count: f.count,
                        bytes: f.bytes,
                    },
                )
            })
            .collect();
        H2Dir {
            preface_bytes: c.preface_bytes,
            setup_bytes: c.setup_bytes,
            frame_header_bytes: c.frame_header_bytes,
            hpack_bytes: c.hpack_bytes,
            header_list_bytes,
            data_payload_bytes: c.data_payload_bytes,
            padding_bytes: c.padding_bytes,
            grpc_prefix_bytes: c.grpc_prefix_bytes,
            grpc_message_bytes: c.grpc_message_bytes,
            grpc_messages: c.grpc_messages,
            data_untracked_bytes: c.data_untracked_bytes,
            unparsed_bytes: c.unparsed_bytes,
            frames,
        }
    }

    pub fn add(&mut self, o: &H2Dir) {
        self.preface_bytes += o.preface_bytes;
        self.setup_bytes += o.setup_bytes;
        self.frame_header_bytes += o.frame_header_bytes;
        self.hpack_bytes += o.hpack_bytes;
        self.header_list_bytes += o.header_list_bytes;
        self.data_payload_bytes += o.data_payload_bytes;
        self.padding_bytes += o.padding_bytes;
        self.grpc_prefix_bytes += o.grpc_prefix_bytes;
        self.grpc_message_bytes += o.grpc_message_bytes;
        self.grpc_messages += o.grpc_messages;
        self.data_untracked_bytes += o.data_untracked_bytes;
        self.unparsed_bytes += o.unparsed_bytes;
        for (k, v) in &o.frames {
            let e = self.frames.entry(k).or_default();
            e.count += v.count;
            e.bytes += v.bytes;
        }
    }

    /// Bytes of frames that are neither DATA nor HEADERS/CONTINUATION: connection control.
    pub fn control_frame_bytes(&self) -> u64 {
        self.frames
            .iter()
            .filter(|(k, _)| !matches!(**k, "DATA" | "HEADERS" | "CONTINUATION"))
            .map(|(_, f)| f.bytes)
            .sum()
    }
}

/// Both directions of an h2 connection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct H2Layers {
    pub out: H2Dir,
    #[serde(rename = "in")]
    pub inbound: H2Dir,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CPU time of this process from the kernel's own clock for it.
    fn own_process_cpu() -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid pointer to a timespec we own.
        assert_eq!(
            unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) },
            0
        );
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    /// Spins until this thread has used `d` of CPU (its own clock, whatever else runs).
    fn burn(d: Duration) {
        let thread_cpu = || {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: a valid pointer to a timespec we own.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
        };
        let start = thread_cpu();
        let mut x = 0u64;
        while thread_cpu() - start < d {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0);
    }

    #[test]
    fn process_clock_agrees_with_the_kernel_and_keeps_exited_threads() {
        let clock = ProcessClock::open(std::process::id()).expect("our own clock");
        // The same clock read two ways: our pid's clock lies between two readings of
        // CLOCK_PROCESS_CPUTIME_ID (other test threads only move all three forward).
        let bracket = || {
            let before = own_process_cpu();
            let v = clock.read().unwrap();
            let after = own_process_cpu();
            assert!(
                before <= v && v <= after,
                "{before:?} <= {v:?} <= {after:?}"
            );
            v
        };
        let a = bracket();
        // a thread that burns 60 ms and exits: its time stays in the process clock
        std::thread::spawn(|| burn(Duration::from_millis(60)))
            .join()
            .unwrap();
        let b = bracket();
        assert!(
            b - a >= Duration::from_millis(60),
            "the exited thread's 60 ms are missing: {:?}",
            b - a
        );
    }

    #[test]
    fn process_clock_of_another_process_and_after_it_exits() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .expect("sh");
        let clock = ProcessClock::open(child.id()).expect("a child's clock");
        // the busy child's clock keeps growing (however loaded the machine is)
        let t = std::time::Instant::now();
        let mut used = clock.read().unwrap();
        while used < Duration::from_millis(50) && t.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(10));
            used = clock.read().unwrap();
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(used >= Duration::from_millis(50), "{used:?}");
        let gone = clock.read().unwrap_err();
        assert!(gone.contains("exited"), "{gone}");
        assert!(ProcessClock::open(u32::MAX).is_err());
        assert!(ProcessClock::open(child.id()).is_err());
    }

    #[test]
    fn rss_and_peak_follow_an_allocation() {
        const SIZE: usize = 64 << 20;
        let sampler = RssSampler::open().expect("/proc/self/statm");
        let before = sampler.rss_kib().unwrap();
        let status_before = memory().expect("/proc/self/status");
        // SAFETY: an anonymous private mapping; no file, no fixed address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        // SAFETY: the mapping is SIZE bytes, writable, and ours alone.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 1, SIZE) };
        let touched = sampler.rss_kib().unwrap();
        let status_touched = memory().unwrap();
        // SAFETY: the mapping made above, unmapped once.
        assert_eq!(unsafe { libc::munmap(p, SIZE) }, 0);
        let after = sampler.rss_kib().unwrap();
        let status_after = memory().unwrap();
        let mib = |kib: u64| kib / 1024;
        // other test threads allocate too: bounds, not equalities
        assert!(
            mib(touched.saturating_sub(before)) >= 60,
            "statm: {before} -> {touched} kiB"
        );
        assert!(
            mib(status_touched.rss_kib.saturating_sub(status_before.rss_kib)) >= 60,
            "status: {status_before:?} -> {status_touched:?}"
        );
        assert!(
            mib(touched.saturating_sub(after)) >= 60,
            "statm after munmap: {touched} -> {after} kiB"
        );
        // VmHWM keeps the peak after the memory is gone. The kernel folds each thread's RSS
        // changes into the process counters lazily (up to 64 pages per thread), so its peak
        // may trail a reading of VmRSS by a few MiB: bounds again.
        assert!(
            status_after.peak_kib + 4 * 1024 >= status_touched.rss_kib,
            "{status_touched:?} then {status_after:?}"
        );
        assert!(
            status_after.rss_kib + 56 * 1024 <= status_after.peak_kib,
            "{status_after:?}"
        );
    }

    #[test]
    fn a_failure_seen_before_allocates_nothing() {
        let a = Failure::with(
            FailureKind::Timeout,
            format_args!("no response within {}s", 2),
        );
        let b = Failure::with(
            FailureKind::Timeout,
            format_args!("no response within {}s", 2),
        );
        assert_eq!(a, b);
        let (da, db) = (a.detail.unwrap(), b.detail.unwrap());
        // the same allocation, shared
        assert!(Arc::ptr_eq(&da, &db));
        assert_eq!(&*da, "no response within 2s");
        let c = Failure::with(FailureKind::Timeout, "another");
        assert!(!Arc::ptr_eq(&da, c.detail.as_ref().unwrap()));
    }

    #[test]
    fn failure_kinds_are_the_documented_ones() {
        let doc = include_str!("../../docs/METHODOLOGY.md");
        let table = &doc[doc.find("**Failure kinds**").expect("the section")..];
        let documented: Vec<&str> = table
            .lines()
            .skip_while(|l| !l.starts_with("| `"))
            .take_while(|l| l.starts_with('|'))
            .filter_map(|l| l.split('`').nth(1))
            .collect();
        let ours: Vec<&str> = FailureKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(documented, ours, "docs/METHODOLOGY.md lists other kinds");
        // stable names are metric keys: lower case and underscores only
        for k in ours {
            assert!(
                k.bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'_' || b.is_ascii_digit())
            );
        }
    }

    #[test]
    fn long_timelines_coarsen_and_merge() {
        let mut a = Timeline::default();
        for s in 0..1300u64 {
            a.bucket(Duration::from_secs(s)).ok += 1;
        }
        // 1300 s do not fit 600 one-second buckets: 4-second buckets, every one counted
        assert_eq!(a.width_s, 4);
        assert!(a.buckets.len() <= TIMELINE_MAX_BUCKETS);
        assert_eq!(a.buckets.iter().map(|b| b.ok).sum::<u64>(), 1300);
        let mut b = Timeline::default();
        b.bucket(Duration::from_secs(5)).failed += 1;
        a.merge(b);
        assert_eq!(a.width_s, 4);
        assert_eq!(a.buckets[1].failed, 1);
        assert_eq!(a.buckets[1].ok, 4);
    }

    #[test]
    fn exact_mean_and_stddev() {
        let mut l = Latencies::default();
        for us in [100u64, 200, 300, 400] {
            l.record(Duration::from_micros(us));
        }
        assert_eq!(l.count, 4);
        assert_eq!(l.mean_ns(), 250_000.0);
        // population stddev of 100,200,300,400 µs = 111.803 µs
        assert!((l.stddev_ns() - 111_803.398).abs() < 1.0);
        assert_eq!(l.min_ns, 100_000);
        assert_eq!(l.max_ns, 400_000);
        let p50 = l.quantile_ns(0.5) as f64;
        assert!((p50 - 200_000.0).abs() / 200_000.0 < 0.001);
    }

    #[test]
    fn merge_adds_everything() {
        let mut a = Stats::default();
        let mut b = Stats::default();
        let at = |endpoint, s| At {
            endpoint,
            offset: Duration::from_secs(s),
        };
        a.record_ok(at(0, 0), Duration::from_micros(10), StatusKey::Http(200));
        b.record_ok(at(1, 2), Duration::from_micros(30), StatusKey::Http(200));
        b.record_failure(
            at(1, 2),
            Some(StatusKey::Http(500)),
            Failure::with(FailureKind::HttpStatus, "boom"),
        );
        b.record_failure(at(0, 1), None, Failure::new(FailureKind::Timeout));
        a.merge(b);
        assert_eq!((a.ok, a.failed, a.count()), (2, 2, 4));
        let eps: Vec<(u64, u64)> = a.per_endpoint.iter().map(|e| (e.ok, e.failed)).collect();
        assert_eq!(eps, [(1, 1), (1, 1)]);
        let secs: Vec<(u64, u64)> = a
            .timeline
            .buckets
            .iter()
            .map(|b| (b.ok, b.failed))
            .collect();
        assert_eq!(secs, [(1, 0), (0, 1), (1, 1)]);
        assert_eq!(a.statuses[&StatusKey::Http(200)], 2);
        assert_eq!(a.statuses[&StatusKey::Http(500)], 1);
        assert_eq!(a.errors[&Failure::new(FailureKind::Timeout)], 1);
        assert_eq!(a.latency.min_ns, 10_000);
        assert_eq!(a.latency.max_ns, 30_000);
    }
}

/// Data calls on this thread's sockets: reads and writes that moved bytes (a read of EOF
/// counts), and those the kernel answered EAGAIN. Every socket read and write wirebench makes
/// goes through `net::Metered` (or the close drain), which counts them here per thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct IoCalls {
    pub reads: u64,
    pub writes: u64,
    pub read_would_block: u64,
    pub write_would_block: u64,
}

impl IoCalls {
    pub const ZERO: IoCalls = IoCalls {
        reads: 0,
        writes: 0,
        read_would_block: 0,
        write_would_block: 0,
    };

    pub fn since(self, earlier: IoCalls) -> IoCalls {
        IoCalls {
            reads: self.reads.saturating_sub(earlier.reads),
            writes: self.writes.saturating_sub(earlier.writes),
            read_would_block: self
                .read_would_block
                .saturating_sub(earlier.read_would_block),
            write_would_block: self
                .write_would_block
                .saturating_sub(earlier.write_would_block),
        }
    }

    pub fn plus(self, o: IoCalls) -> IoCalls {
        IoCalls {
            reads: self.reads + o.reads,
            writes: self.writes + o.writes,
            read_would_block: self.read_would_block + o.read_would_block,
            write_would_block: self.write_would_block + o.write_would_block,
        }
    }

    pub fn total(self) -> u64 {
        self.reads + self.writes + self.read_would_block + self.write_would_block
    }
}

/// The CPU-time clock of another process: every thread's user + system time, those that have
/// exited included, in nanoseconds (`clock_getcpuclockid` + `clock_gettime`).
#[derive(Debug, Clone, Copy)]
pub struct ProcessClock {
    pid: u32,
    clock: libc::clockid_t,
}

impl ProcessClock {
    /// The clock of `pid`, read once to prove it can be.
    pub fn open(pid: u32) -> Result<ProcessClock, String> {
        let mut clock: libc::clockid_t = 0;
        let raw =
            libc::pid_t::try_from(pid).map_err(|_| format!("--server-pid {pid}: not a pid"))?;
        // SAFETY: a valid pointer to a clockid_t we own; the function only writes it.
        let rc = unsafe { libc::clock_getcpuclockid(raw, &mut clock) };
        if rc != 0 {
            return Err(format!(
                "--server-pid {pid}: {}",
                std::io::Error::from_raw_os_error(rc)
            ));
        }
        let c = ProcessClock { pid, clock };
        c.read()?;
        Ok(c)
    }

    /// CPU time the process has used so far; an error once it is gone.
    pub fn read(&self) -> Result<Duration, String> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a clock id from clock_getcpuclockid and a valid pointer to a timespec we own.
        if unsafe { libc::clock_gettime(self.clock, &mut ts) } != 0 {
            return Err(format!(
                "--server-pid {}: cannot read its CPU clock ({}): has it exited?",
                self.pid,
                std::io::Error::last_os_error()
            ));
        }
        Ok(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }
}

/// User and system CPU time of this process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CpuTimes {
    pub user_us: u64,
    pub sys_us: u64,
}

impl CpuTimes {
    /// getrusage(RUSAGE_THREAD): the calling thread only.
    pub fn thread_now() -> CpuTimes {
        // SAFETY: rusage is plain old data; getrusage fills it and cannot fail for RUSAGE_THREAD.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: a valid pointer to a rusage we own.
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
        let us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
        CpuTimes {
            user_us: us(ru.ru_utime),
            sys_us: us(ru.ru_stime),
        }
    }

    pub fn since(self, earlier: CpuTimes) -> CpuTimes {
        CpuTimes {
            user_us: self.user_us.saturating_sub(earlier.user_us),
            sys_us: self.sys_us.saturating_sub(earlier.sys_us),
        }
    }

    pub fn plus(self, other: CpuTimes) -> CpuTimes {
        CpuTimes {
            user_us: self.user_us + other.user_us,
            sys_us: self.sys_us + other.sys_us,
        }
    }

    pub fn total_us(self) -> u64 {
        self.user_us + self.sys_us
    }
}

/// Reads this process's resident set from an open `/proc/self/statm`: one `pread` per sample,
/// cheap enough to sample during a run.
#[derive(Debug)]
pub struct RssSampler {
    statm: std::fs::File,
    page_kib: u64,
}

impl RssSampler {
    pub fn open() -> Option<RssSampler> {
        let statm = std::fs::File::open("/proc/self/statm").ok()?;
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let page_kib = u64::try_from(page).ok().filter(|p| *p >= 1024)? / 1024;
        Some(RssSampler { statm, page_kib })
    }

    /// Resident kiB now (statm's second field: resident pages).
    pub fn rss_kib(&self) -> Option<u64> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 128];
        let n = self.statm.read_at(&mut buf, 0).ok()?;
        let text = std::str::from_utf8(&buf[..n]).ok()?;
        let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
        Some(pages * self.page_kib)
    }
}

/// This process's resident memory now and at its peak (kiB, from /proc/self/status).
#[derive(Debug, Clone, Copy)]
pub struct Rss {
    pub rss_kib: u64,
    pub peak_kib: u64,
}

pub fn memory() -> Option<Rss> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()
    };
    Some(Rss {
        rss_kib: field("VmRSS:")?,
        peak_kib: field("VmHWM:")?,
    })
}
