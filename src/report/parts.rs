//! The parts of a run's report (`RunReport`'s fields): the summary and distributions, the
//! cost and wire ledgers, the open-loop, streaming and setup figures, etcd's failover, verify,
//! classes, compaction and leases, the timeline and stages: what JSON serializes and text
//! renders.

use serde::{Deserialize, Serialize};

use super::show;
use crate::stats::IoCalls;
use crate::stats::{CloseRecord, ConnRecord, Duplex, Http1Counts, TlsCounts};
use wirebench_wire::h2::counts::H2Counts;

/// `--log-requests`: what one run wrote to the log.
#[derive(Debug, Clone, Serialize)]
pub struct RequestLogReport {
    /// rows this run logged: one per measured request (= `summary.count`)
    pub rows: u64,
    /// how long the worker threads waited for the writer (no empty buffer), summed over the
    /// threads, and how many times
    pub writer_wait_ms: f64,
    pub writer_waits: u64,
    /// the longest any one thread waited in all
    pub longest_thread_wait_ms: f64,
}

/// The measured window on the wall clock, in microseconds since the Unix epoch: what
/// `wirebench merge` takes the union of.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Window {
    pub start_unix_us: u64,
    pub end_unix_us: u64,
    /// `--start-at` as asked (RFC 3339, UTC), and how much later the window began (0 when on
    /// time); both null without it
    pub start_at: Option<String>,
    pub start_late_ms: Option<f64>,
}

/// `--requests-per-conn`: the connections the requests opened and what that cost. The latency
/// figures of the run include each request's connect and TLS handshake; these exclude them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConnectionSetup {
    pub requests_per_conn: u64,
    /// connections opened / requests written (null: none written)
    pub connections_per_request: Option<f64>,
    /// TCP connect, average over the connections (null: none opened)
    pub tcp_connect_average_ms: Option<f64>,
    /// TLS connections only
    pub tls: Option<HandshakeCost>,
    /// latency from the moment each request's connection was ready (null: no success)
    pub without_setup_average_ms: Option<f64>,
    pub without_setup_distribution: Vec<Percentile>,
}

/// What the TLS handshakes of a run cost, per handshake.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HandshakeCost {
    pub handshakes: u64,
    pub full: u64,
    pub resumed: u64,
    /// per handshake: null when none completed
    pub average_ms: Option<f64>,
    /// the client's CPU inside the handshake (its thread's time in the handshake's polls)
    pub client_cpu_us: Option<f64>,
    /// socket bytes until the handshake ended
    pub bytes_out: Option<f64>,
    pub bytes_in: Option<f64>,
}

/// Streaming figures, over the successful calls (the latency distribution is to each call's
/// end).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Streaming {
    /// messages the successful calls received
    pub messages: u64,
    /// messages / successful calls (null: no call succeeded)
    pub messages_per_call: Option<f64>,
    /// messages / the measured window
    pub messages_per_sec: Option<f64>,
    /// from each call's start to its first message (the calls that had one; null: none had)
    pub first_message_average_ms: Option<f64>,
    pub first_message_distribution: Vec<Percentile>,
    /// client-streaming and bidi calls: the messages the successful calls sent, and per call
    #[serde(default)]
    pub messages_sent: u64,
    #[serde(default)]
    pub messages_sent_per_call: Option<f64>,
    /// bidi ping-pong: each message's time to its reply (empty otherwise)
    #[serde(default)]
    pub message_latency_average_ms: Option<f64>,
    #[serde(default)]
    pub message_latency_distribution: Vec<Percentile>,
    /// client-streaming: from each call's last message to its response (empty otherwise)
    #[serde(default)]
    pub last_to_response_average_ms: Option<f64>,
    #[serde(default)]
    pub last_to_response_distribution: Vec<Percentile>,
}

/// Open-loop figures: the schedule against what happened.
#[derive(Debug, Clone, Serialize)]
pub struct OpenLoop {
    pub target_rate: f64,
    /// measured requests written / measured window (the window ends with the last response)
    pub achieved_rate: Option<f64>,
    /// measured sends that waited --timeout for a free client and were never sent (each also a
    /// `late` failure)
    pub expired_sends: u64,
    /// what the schedule slept with: "timerfd", or tokio's 1 ms timer when a timerfd failed
    pub timer: Option<&'static str>,
    /// measured sends whose intended time came while all -c clients were busy: the in-flight
    /// cap was hit and they went late (their corrected latency includes the wait)
    pub late_sends: u64,
    /// measured sends the schedule released 2 ms or more after their intended time: the
    /// thread was busy elsewhere when its timer came due (the client set the pace)
    #[serde(default)]
    pub overdue_sends: u64,
    /// measured sends a client took: the divisor of `average_send_lag_ms`
    pub sends_taken: u64,
    /// intended send time to the moment a client took the send (timer wake-up and scheduling
    /// included): part of every corrected latency (both null: no client took a send)
    pub average_send_lag_ms: Option<f64>,
    pub max_send_lag_ms: Option<f64>,
    /// latency from the actual send time, as a closed-loop tool would report it (null: no
    /// success)
    pub uncorrected_average_ms: Option<f64>,
    pub uncorrected_slowest_ms: Option<f64>,
    pub uncorrected_distribution: Vec<Percentile>,
}

/// One endpoint's share of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EndpointReport {
    pub endpoint: String,
    /// etcd role found by `--target` discovery ("leader", "follower"), when known
    pub role: Option<String>,
    pub count: u64,
    pub ok: u64,
    pub failed: u64,
    pub requests_per_sec: Option<f64>,
    /// of the endpoint's successful requests (null: none)
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

/// One class of a run's requests (txn-mixed: reads, writes), over the same measured window as
/// the summary.
#[derive(Debug, Clone, Serialize)]
pub struct ClassReport {
    pub class: &'static str,
    /// measured requests of the class: ok + failed
    pub count: u64,
    pub ok: u64,
    pub failed: u64,
    /// count / the run's measured window (summary.total_s)
    pub requests_per_sec: Option<f64>,
    pub ok_per_sec: Option<f64>,
    /// of the class's successful requests (null: none)
    pub average_ms: Option<f64>,
    pub fastest_ms: Option<f64>,
    pub slowest_ms: Option<f64>,
    pub latency_distribution: Vec<Percentile>,
}

/// `--compact-interval`: the compactor's requests beside the load.
#[derive(Debug, Clone, Serialize)]
pub struct CompactionReport {
    pub interval_s: f64,
    pub index_delta: i64,
    /// `KV/Compact` requests sent: ok + failed
    pub requests: u64,
    pub ok: u64,
    pub failed: u64,
    /// intervals with nothing new to compact (current revision - delta not past the last
    /// compaction, or below 1): no request
    pub skipped: u64,
    /// the revision of the last compaction etcd acknowledged (null: none)
    pub last_revision: Option<i64>,
    /// the last failure (a compaction, or the revision read before one)
    pub last_error: Option<String>,
}

impl CompactionReport {
    pub fn of(c: &crate::stats::Compactions) -> CompactionReport {
        CompactionReport {
            interval_s: c.interval.as_secs_f64(),
            index_delta: c.index_delta,
            requests: c.requests,
            ok: c.ok,
            failed: c.failed,
            skipped: c.skipped,
            last_revision: c.last_revision,
            last_error: c.last_error.as_ref().map(ToString::to_string),
        }
    }
}

/// lease-keepalive: one lease per client, granted before the measured window (outside every
/// figure) and revoked after the run.
#[derive(Debug, Clone, Serialize)]
pub struct LeaseReport {
    pub granted: u64,
    /// the TTL etcd granted, seconds
    pub ttl_s: i64,
    pub revoked: u64,
    /// already gone when revoked (expired, or revoked by someone else)
    pub gone: u64,
    /// revocations that failed (those leases expire on their own), and the last reason
    pub revoke_failed: u64,
    pub revoke_error: Option<String>,
}

/// `--verify`: every acknowledged write looked up at its revision.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerifyReport {
    /// acknowledged writes looked up (a transaction once)
    pub checked: u64,
    /// acknowledged writes of which a key had another mod revision (or none) at their revision
    pub lost: u64,
    /// up to 10 of them
    pub lost_examples: Vec<LostWrite>,
    /// lookups asked again: after an error etcd gives during an election, or on the next member
    /// when a connection failed or a member fell silent
    #[serde(default)]
    pub retried: u64,
    /// the member that answered the last lookups
    pub via: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LostWrite {
    /// the first key of the write that was not as written
    pub key_index: u64,
    pub revision: i64,
    /// the key's mod revision at `revision` (null: no value)
    pub found: Option<i64>,
}

/// What moving clients between etcd members did during the run.
#[derive(Debug, Clone, Serialize)]
pub struct FailoverReport {
    /// the members the clients could go to, the run's endpoints first
    pub members: Vec<String>,
    pub events: Vec<FailoverRow>,
    /// re-discoveries that found nothing to move to (an election running, no member
    /// answering), the last reason, and what each member answered it (one line each)
    pub rediscovery_failures: u64,
    pub last_rediscovery_error: Option<String>,
    pub last_answers: Vec<String>,
}

/// One endpoint slot's clients moved to another member, or waiting until the end of the run
/// for the cluster to name one; seconds from the start line.
#[derive(Debug, Clone, Serialize)]
pub struct FailoverRow {
    /// the slot: index into `per_endpoint`
    pub endpoint: usize,
    pub from: String,
    /// null: the slot never moved, the cluster named nowhere to go before the end
    pub to: Option<String>,
    /// the failure that opened the episode
    pub first_failure_s: f64,
    /// the cluster named another member; the slot moved (null: never)
    pub moved_s: Option<f64>,
    /// the slot's first success after the move (null: none before the end)
    pub first_success_s: Option<f64>,
    /// first_success_s - first_failure_s
    pub gap_s: Option<f64>,
    /// the slot's failed requests in between
    pub failed_between: u64,
    /// re-discoveries in the episode that found nowhere to move (the cluster had no leader
    /// yet, say), and the last one: until then the wait was the cluster's
    pub unresolved: u64,
    pub unresolved_until_s: Option<f64>,
    /// an episode that never moved: from its first failure to the end of the run
    pub waited_s: Option<f64>,
}

impl FailoverRow {
    /// The episode in one line, as the text reports print it.
    pub fn line(&self) -> String {
        let waited = match (self.unresolved, self.unresolved_until_s) {
            (n, Some(t)) if n > 0 => {
                format!("; {n} re-discoveries found nowhere to move, the last at {t:.3} s")
            }
            _ => String::new(),
        };
        match (&self.to, self.moved_s) {
            (Some(to), Some(moved)) => format!(
                "{} -> {to}: first failure {:.3} s, moved {moved:.3} s, first success {}, {} failed between{waited}",
                self.from,
                self.first_failure_s,
                match (self.first_success_s, self.gap_s) {
                    (Some(t), Some(g)) => format!("{t:.3} s ({g:.3} s after the first failure)"),
                    _ => "none before the end".to_string(),
                },
                self.failed_between
            ),
            _ => format!(
                "{} -> nowhere: first failure {:.3} s, no member to move to in the {} s to the end of the run, {} failed{waited}",
                self.from,
                self.first_failure_s,
                show::num(self.waited_s, 3),
                self.failed_between
            ),
        }
    }
}

impl FailoverReport {
    /// One line per episode that found nowhere to move before the run ended: how long it
    /// waited, how often the cluster was asked, and what each member answered last.
    pub fn stranded(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| e.to.is_none())
            .map(|e| {
                format!(
                    "the clients of {} found no member to move to in the {} s from their first failure ({:.3} s) to the end of the run: {} re-discoveries, the last: {}; the members answered: {}",
                    e.from,
                    show::num(e.waited_s, 2),
                    e.first_failure_s,
                    e.unresolved,
                    self.last_rediscovery_error.as_deref().unwrap_or("-"),
                    if self.last_answers.is_empty() {
                        "-".to_string()
                    } else {
                        self.last_answers.join("; ")
                    }
                )
            })
            .collect()
    }
}

/// One timeline bucket.
#[derive(Debug, Clone, Serialize)]
pub struct TimelinePoint {
    /// bucket start, seconds from the start of the measured window
    pub t_s: u64,
    pub width_s: u64,
    pub ok: u64,
    pub errors: u64,
    pub requests_per_sec: Option<f64>,
    /// of the successful requests completed in the bucket (2 significant digits; null: none)
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// open loop: measured sends whose intended time fell in the bucket (the schedule)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduled: Option<u64>,
    /// with stages: the stage (1-based, in the list's order) the bucket starts in
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<usize>,
}

/// One stage of `--stages` / `--client-stages`: what completed in it.
#[derive(Debug, Clone, Serialize)]
pub struct StageRow {
    /// 1-based, in the list's order (steps, `0s:` stages, have no row)
    pub stage: usize,
    /// as given, `30s:5000`
    pub spec: String,
    /// the target it ramps from and to (requests/s, or clients)
    pub from: f64,
    pub to: f64,
    /// seconds from the start of the measured window; the last stage ends with the window
    pub start_s: f64,
    pub end_s: f64,
    pub count: u64,
    pub ok: u64,
    pub errors: u64,
    /// open loop: measured sends whose intended time fell in the stage
    pub scheduled: Option<u64>,
    /// count / (end_s - start_s)
    pub requests_per_sec: Option<f64>,
    /// of the successful requests completed in the stage (3 significant digits; null: none)
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// the worker threads' CPU over the stage / its count (null: no request completed in it)
    pub client_cpu_us_per_request: Option<f64>,
}

/// The distribution of TCP connect times.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConnectTimes {
    pub connections: u64,
    pub average_ms: f64,
    pub fastest_ms: f64,
    pub slowest_ms: f64,
    pub histogram: Vec<Bucket>,
    pub distribution: Vec<Percentile>,
}

/// This process's resident memory around the run.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryReport {
    /// worker threads and runtimes exist, nothing is connected yet
    pub rss_baseline_kib: u64,
    /// every connection open, before the first request
    pub rss_connected_kib: u64,
    /// mid-run (the sample nearest the middle of the measured window)
    pub rss_steady_kib: u64,
    /// VmHWM at the end: the process's peak so far
    pub peak_rss_kib: u64,
    /// (steady - baseline) / connections opened at start
    pub rss_per_connection_bytes: Option<f64>,
    /// (steady - baseline) / clients: per request in flight (HTTP/1.1: per connection; gRPC:
    /// per concurrent h2 stream)
    pub rss_per_in_flight_bytes: Option<f64>,
    /// the built-in server runs in this process: both ends of every connection are included
    pub includes_server: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    /// measured requests: ok + failed (warmup excluded)
    pub count: u64,
    pub ok: u64,
    pub failed: u64,
    pub warmup_requests: u64,
    /// measured requests written to a socket: the denominator of `cost`
    pub written: u64,
    /// gRPC requests re-sent on a new connection after GOAWAY / REFUSED_STREAM
    pub retried: u64,
    /// requests sent again after re-authenticating with etcd ("invalid auth token")
    pub reauthenticated: u64,
    /// written requests that failed: the server may have acted on them (a write may have been
    /// applied), so for etcd ok ≤ revision delta ≤ ok + outcome_unknown
    pub outcome_unknown: u64,
    pub total_s: f64,
    /// over the successful requests: null when none succeeded
    pub slowest_ms: Option<f64>,
    pub fastest_ms: Option<f64>,
    pub average_ms: Option<f64>,
    pub stddev_ms: Option<f64>,
    /// count / total_s, as ghz and etcd's benchmark compute it; open loop: written / total_s
    /// (a send that expired unwritten is in count, as a `late` failure, but sent nothing);
    /// null for a window of no length
    pub requests_per_sec: Option<f64>,
    pub ok_per_sec: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Bucket {
    /// upper edge of the bucket
    pub mark_ms: f64,
    pub count: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Percentile {
    pub percentile: f64,
    pub latency_ms: f64,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct StatusCount {
    pub status: String,
    pub count: u64,
}

#[derive(Debug, Serialize)]
pub struct ErrorCount {
    pub kind: &'static str,
    pub message: Option<String>,
    pub count: u64,
}

/// What the measured window cost, on the worker threads only, per measured request written
/// in it (`requests`). Kernel figures are null where the kernel would not count them; every
/// per-request figure is null when no request was written.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cost {
    /// the denominator: measured requests written to a socket
    pub requests: u64,
    pub client_cpu_user_us: u64,
    pub client_cpu_sys_us: u64,
    pub client_cpu_us_per_request: Option<f64>,
    /// every syscall the worker threads entered (perf: raw_syscalls:sys_enter)
    pub syscalls: Option<u64>,
    pub syscalls_per_request: Option<f64>,
    pub context_switches: Option<u64>,
    pub context_switches_per_request: Option<f64>,
    pub instructions: Option<u64>,
    pub instructions_per_request: Option<f64>,
    pub cycles: Option<u64>,
    pub cycles_per_request: Option<f64>,
    /// why the kernel did not count syscalls, one line
    pub kernel_counters_unavailable: Option<String>,
    /// the same threads outside the window: setup (runtime, connects) and close
    pub syscalls_outside_window: Option<u64>,
    pub context_switches_outside_window: Option<u64>,
    /// socket reads and writes in the window: the data part of `syscalls` (a ring's reads,
    /// `ring_reads`, are not syscalls)
    pub data_calls: IoCalls,
    pub reads_per_request: Option<f64>,
    pub writes_per_request: Option<f64>,
    pub read_would_block_per_request: Option<f64>,
    pub write_would_block_per_request: Option<f64>,
    /// syscalls that moved no data: epoll_wait, timers, futex, ...
    pub other_syscalls_per_request: Option<f64>,
    /// the server's CPU over the window (built-in server or --server-pid), and why not
    pub server_cpu_ns: Option<u64>,
    pub server_cpu_us_per_request: Option<f64>,
    pub server_cpu_error: Option<String>,
    /// how the clients waited for their sockets: "epoll" (HTTP/1.1 on each thread's own
    /// readiness loop) or "tokio" (a runtime task per client or connection); null in a merge
    /// of runs that differ
    #[serde(default)]
    pub client_loop: Option<String>,
}

/// Socket-level cost, from the per-connection ledgers and TCP_INFO. Every figure covers a
/// connection until its snapshot (last response read, before the close); the close exchange is
/// `close`. A sum over some connections is divided by the requests on those connections, and
/// is null when they carried none (no connection, or none with TCP_INFO).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Wire {
    pub connections_opened: u64,
    pub reconnects: u64,
    /// connection attempts that failed mid-run, and the last reason
    pub connect_failures: u64,
    pub connect_error: Option<String>,
    /// requests written on every connection (warmup and failed ones included): the divisor of
    /// the byte and call figures
    pub requests_on_wire: u64,
    pub requests_per_connection: Option<f64>,
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub bytes_out_per_request: Option<f64>,
    pub bytes_in_per_request: Option<f64>,
    /// the connections' data calls (as `cost.data_calls`, but over their whole lives)
    pub write_calls: u64,
    pub read_calls: u64,
    pub write_calls_per_request: Option<f64>,
    pub read_calls_per_request: Option<f64>,
    pub write_would_block: u64,
    pub read_would_block: u64,
    /// requests written on the connections that have TCP_INFO: the divisor of the segment
    /// figures, and of the on-the-wire figures with the requests of the QUIC connections
    pub requests_with_tcp_info: u64,
    /// socket bytes of the connections with TCP_INFO: with their IP/TCP headers, the
    /// numerators of `wire_bytes_*_per_request`
    pub bytes_out_with_tcp_info: u64,
    pub bytes_in_with_tcp_info: u64,
    pub segments_out: u64,
    pub segments_in: u64,
    pub data_segments_out: u64,
    pub data_segments_in: u64,
    pub segments_out_per_request: Option<f64>,
    pub segments_in_per_request: Option<f64>,
    pub data_segments_out_per_request: Option<f64>,
    pub data_segments_in_per_request: Option<f64>,
    pub retransmits: u64,
    /// TCP connections whose TCP_INFO could not be read (left out of the segment figures;
    /// QUIC connections and Unix socket ones, which have none, are not counted)
    pub connections_without_tcp_info: u64,
    /// connections on a Unix domain socket (`unix:///path` targets): no TCP, so no segments,
    /// retransmits or IP/TCP headers; their bytes are in the byte figures (absent when 0)
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unix_socket_connections: u64,
    /// IP + TCP headers, estimated: segments x (IP header + 20 + 12 with timestamps)
    pub ip_tcp_header_bytes_out: u64,
    pub ip_tcp_header_bytes_in: u64,
    /// (socket bytes + estimated IP/TCP headers) / requests, over the connections with
    /// TCP_INFO; for HTTP/3, (UDP payload + estimated IP/UDP headers) / requests, over the
    /// QUIC connections
    pub wire_bytes_out_per_request: Option<f64>,
    pub wire_bytes_in_per_request: Option<f64>,
    /// the close exchanges, summed (not per request)
    pub close: CloseTotals,
    /// protocol layers summed over all connections (absent with --ledger off)
    pub layers: Option<LayerTotals>,
    /// TLS summed over all connections (absent without TLS)
    pub tls: Option<TlsCounts>,
    /// HTTP/3: UDP, QUIC, the HTTP/3 layer and the handshakes (absent on TCP stacks, and in
    /// reports written before HTTP/3)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h3: Option<super::quic::H3Wire>,
}

impl Wire {
    /// IP packets per request, out and in: TCP segments, or UDP datagrams for HTTP/3.
    pub fn packets_per_request(&self) -> (Option<f64>, Option<f64>) {
        match &self.h3 {
            Some(h) => (
                h.udp.datagrams_out_per_request,
                h.udp.datagrams_in_per_request,
            ),
            None => (self.segments_out_per_request, self.segments_in_per_request),
        }
    }
}

/// The close exchanges of a run's connections, summed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CloseTotals {
    pub connections: u64,
    /// connections whose peer FIN was read within the bound
    pub drained: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// summed over the closes whose segments are known (TCP_INFO read before and after the
    /// close): an unknown one is left out, not counted as 0, and counted in
    /// `connections_without_segments`; null when no close's segments are known
    pub segments_out: Option<u64>,
    pub segments_in: Option<u64>,
    /// closes whose segments are unknown (TCP_INFO missing at either end)
    pub connections_without_segments: u64,
}

/// The sum of the known counts: None when none is known.
pub(in crate::report) fn sum_known(counts: impl IntoIterator<Item = Option<u64>>) -> Option<u64> {
    counts.into_iter().fold(None, |sum, n| match (sum, n) {
        (Some(s), Some(n)) => Some(s + n),
        (s, n) => s.or(n),
    })
}

impl CloseTotals {
    pub(super) fn of(conns: &[ConnRecord]) -> CloseTotals {
        let closes: Vec<(&CloseRecord, u64)> = conns
            .iter()
            .filter_map(|c| c.close.as_ref().map(|x| (x, c.weight())))
            .collect();
        let weight = |pick: fn(&CloseRecord) -> bool| -> u64 {
            closes.iter().filter(|(c, _)| pick(c)).map(|(_, w)| w).sum()
        };
        CloseTotals {
            connections: weight(|_| true),
            drained: weight(|c| c.drained),
            bytes_out: closes.iter().map(|(c, _)| c.bytes_out).sum(),
            bytes_in: closes.iter().map(|(c, _)| c.bytes_in).sum(),
            segments_out: sum_known(closes.iter().map(|(c, _)| c.segs_out)),
            segments_in: sum_known(closes.iter().map(|(c, _)| c.segs_in)),
            connections_without_segments: weight(|c| c.segs_out.is_none()),
        }
    }
}

/// Protocol layers of a run, summed over its connections.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LayerTotals {
    pub http1: Option<Http1Counts>,
    pub h2: Option<Duplex<H2Counts>>,
    /// h2 connection setup (preface, SETTINGS exchange, setup PING) in both directions: paid once
    /// per connection, not per request
    pub setup_bytes_out: u64,
    pub setup_bytes_in: u64,
    /// (socket bytes - setup) / requests on wire: the per-request cost once connections exist
    pub bytes_out_per_request_after_setup: Option<f64>,
    pub bytes_in_per_request_after_setup: Option<f64>,
}

/// For `skip_serializing_if`: a count of 0 is left out.
fn is_zero(n: &u64) -> bool {
    *n == 0
}
