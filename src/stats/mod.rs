//! Per-worker measurements (latency histogram, outcomes, connection records) and their merge.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::net::{Ledger, TcpInfo};
use crate::wire::grpc::Code;
use crate::wire::h2sniff::{FrameType, H2Counts};

/// Longest latency the histogram tracks exactly (longer ones saturate): one hour, in ns.
const HIST_MAX_NS: u64 = 3_600_000_000_000;

/// What a response said about itself: an HTTP status or a gRPC status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StatusKey {
    Http(u16),
    Grpc(u32),
}

impl fmt::Display for StatusKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatusKey::Http(code) => write!(f, "{code}"),
            StatusKey::Grpc(code) => f.write_str(Code::from_u32(*code).as_str()),
        }
    }
}

/// Why a request failed: a stable kind (the metric key) and, where useful, the peer's message.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Failure {
    pub kind: &'static str,
    pub detail: Option<Box<str>>,
}

impl Failure {
    pub fn new(kind: &'static str) -> Self {
        Failure { kind, detail: None }
    }

    pub fn with(kind: &'static str, detail: impl fmt::Display) -> Self {
        Failure {
            kind,
            detail: Some(detail.to_string().into_boxed_str()),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.detail {
            Some(d) => write!(f, "{}: {}", self.kind, d),
            None => f.write_str(self.kind),
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
    /// open loop: measured sends whose intended time came while every client was busy
    pub late: u64,
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
        self.late += other.late;
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

impl ConnRecord {
    /// The ledger of a connection as it stands, with the TCP_INFO snapshot taken at close.
    pub fn from_ledger(
        l: &Ledger,
        endpoint: usize,
        local_port: u16,
        lifetime_us: u64,
        tcp: Option<TcpInfo>,
    ) -> Self {
        ConnRecord {
            endpoint,
            local_ip: l.local_ip.get(),
            local_port,
            bytes_out: l.bytes_out.get(),
            bytes_in: l.bytes_in.get(),
            write_calls: l.write_calls.get(),
            read_calls: l.read_calls.get(),
            write_would_block: l.write_would_block.get(),
            read_would_block: l.read_would_block.get(),
            requests: l.requests.get(),
            lifetime_us,
            connect_us: l.connect_us.get(),
            tcp,
            http1: l.http1.as_ref().map(|t| Http1Layers {
                requests: t.requests.get(),
                responses: t.responses.get(),
                request_head_bytes: t.request_head_bytes.get(),
                request_body_bytes: t.request_body_bytes.get(),
                response_head_bytes: t.response_head_bytes.get(),
                response_body_bytes: t.response_body_bytes.get(),
                chunk_framing_bytes: t.chunk_framing_bytes.get(),
            }),
            tls: l.tls_handshake_us.get().map(|h| TlsLayer {
                handshakes: 1,
                handshake_us: h,
                plaintext_out: l.plain_out.get(),
                plaintext_in: l.plain_in.get(),
                record_overhead_out: l.bytes_out.get().saturating_sub(l.plain_out.get()),
                record_overhead_in: l.bytes_in.get().saturating_sub(l.plain_in.get()),
            }),
            h2: l.h2.as_ref().map(|t| {
                let t = t.borrow();
                H2Layers {
                    out: H2Dir::from_counts(t.out.counts(), t.header_list_out),
                    inbound: H2Dir::from_counts(t.inbound.counts(), t.header_list_in),
                }
            }),
        }
    }
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
    fn from_counts(c: &H2Counts, header_list_bytes: u64) -> H2Dir {
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

    #[test]
    fn reads_our_own_cpu_from_proc() {
        let pid = std::process::id();
        let before = process_cpu(pid).expect("/proc/self/stat");
        let mut x = 0u64;
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_millis(50) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0);
        let after = process_cpu(pid).unwrap();
        assert!(after >= before);
        assert!(process_cpu(u32::MAX).is_none());
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
            Failure::with("http_status", "boom"),
        );
        b.record_failure(at(0, 1), None, Failure::new("timeout"));
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
        assert_eq!(a.errors[&Failure::new("timeout")], 1);
        assert_eq!(a.latency.min_ns, 10_000);
        assert_eq!(a.latency.max_ns, 30_000);
    }
}

/// CPU time (user + system) another process has used so far, from `/proc/PID/stat`
/// (clock-tick resolution, 10 ms on most systems).
pub fn process_cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces: skip past it.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let hz = u64::try_from(hz).ok().filter(|h| *h > 0)?;
    Some(Duration::from_nanos(
        (utime + stime).saturating_mul(1_000_000_000) / hz,
    ))
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
