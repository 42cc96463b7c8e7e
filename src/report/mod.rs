//! Turns merged measurements into report figures (one derivation, shared by every format).

pub mod compare;
pub mod svg;
pub mod text;
pub mod watch;

use serde::Serialize;
use serde_json::Value;

use crate::config::{Config, Endpoint, Stop};
use crate::engine::ProtoRun;
use crate::net::IoCalls;
use crate::stats::{CloseRecord, ConnRecord, H2Layers, Http1Layers, Latencies, TlsLayer};

/// Version of the JSON layout below; bumped on any incompatible change (docs/json-schema.md).
pub const SCHEMA: &str = "wirebench.report.v2";

/// Percentiles of the latency distribution, as etcd's benchmark and ghz print them (plus 99.99).
pub const PERCENTILES: [f64; 9] = [10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99];

#[derive(Debug, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub version: &'static str,
    pub workload: String,
    pub endpoints: Vec<String>,
    pub settings: Settings,
    pub runs: Vec<RunReport>,
    /// present when both protocols ran: gRPC figure divided by HTTP/1.1 figure
    pub ratios: Option<Ratios>,
    /// text only: print the per-connection table
    #[serde(skip)]
    pub per_conn_table: bool,
}

#[derive(Debug, Serialize)]
pub struct Settings {
    pub clients: usize,
    pub conns: usize,
    pub threads: usize,
    /// -n; absent in duration mode
    pub total_requests: Option<u64>,
    /// -z; absent in total mode
    pub duration_s: Option<f64>,
    pub warmup_s: f64,
    pub timeout_s: f64,
}

#[derive(Debug, Serialize)]
pub struct RunReport {
    pub proto: &'static str,
    pub title: &'static str,
    pub clients: usize,
    /// connections opened at start
    pub connections: usize,
    pub threads: usize,
    pub interrupted: bool,
    pub summary: Summary,
    pub histogram: Vec<Bucket>,
    pub latency_distribution: Vec<Percentile>,
    pub status_distribution: Vec<StatusCount>,
    pub error_distribution: Vec<ErrorCount>,
    /// the measured window's cost per request written in it
    pub cost: Cost,
    pub wire: Wire,
    /// open loop (`--rate`) only
    pub open_loop: Option<OpenLoop>,
    /// outcomes by endpoint, in `--endpoints` order (after `--target` selection)
    pub per_endpoint: Vec<EndpointReport>,
    /// outcomes by completion time from the start of the measured window
    pub timeline: Vec<TimelinePoint>,
    /// TCP connect times of the connections opened (SYN to established)
    pub connect_times: Option<ConnectTimes>,
    pub memory: Option<MemoryReport>,
    pub per_connection: Vec<ConnRecord>,
    pub sample_response: Option<Value>,
}

/// Open-loop figures: the schedule against what happened.
#[derive(Debug, Clone, Serialize)]
pub struct OpenLoop {
    pub target_rate: f64,
    /// measured requests written / measured window (the window ends with the last response)
    pub achieved_rate: f64,
    /// measured sends that waited --timeout for a free client and were never sent (each also a
    /// `late` failure)
    pub expired_sends: u64,
    /// what the schedule slept with: "timerfd", or tokio's 1 ms timer when a timerfd failed
    pub timer: Option<&'static str>,
    /// measured sends whose intended time came while all -c clients were busy: the in-flight
    /// cap was hit and they went late (their corrected latency includes the wait)
    pub late_sends: u64,
    /// intended send time to the moment a client took the send (timer wake-up and scheduling
    /// included): part of every corrected latency
    pub average_send_lag_ms: f64,
    pub max_send_lag_ms: f64,
    /// latency from the actual send time, as a closed-loop tool would report it
    pub uncorrected_average_ms: f64,
    pub uncorrected_slowest_ms: f64,
    pub uncorrected_distribution: Vec<Percentile>,
}

/// One endpoint's share of a run.
#[derive(Debug, Clone, Serialize)]
pub struct EndpointReport {
    pub endpoint: String,
    /// etcd role found by `--target` discovery ("leader", "follower"), when known
    pub role: Option<String>,
    pub count: u64,
    pub ok: u64,
    pub failed: u64,
    pub requests_per_sec: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
}

/// One timeline bucket.
#[derive(Debug, Clone, Serialize)]
pub struct TimelinePoint {
    /// bucket start, seconds from the start of the measured window
    pub t_s: u64,
    pub width_s: u64,
    pub ok: u64,
    pub errors: u64,
    pub requests_per_sec: f64,
    /// of the successful requests completed in the bucket (2 significant digits)
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// The distribution of TCP connect times.
#[derive(Debug, Clone, Serialize)]
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
    pub rss_per_connection_bytes: f64,
    /// (steady - baseline) / clients: per request in flight (HTTP/1.1: per connection; gRPC:
    /// per concurrent h2 stream)
    pub rss_per_in_flight_bytes: f64,
    /// the built-in server runs in this process: both ends of every connection are included
    pub includes_server: bool,
}

#[derive(Debug, Clone, Serialize)]
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
    pub total_s: f64,
    pub slowest_ms: f64,
    pub fastest_ms: f64,
    pub average_ms: f64,
    pub stddev_ms: f64,
    /// count / total_s, as ghz and etcd's benchmark compute it
    pub requests_per_sec: f64,
    pub ok_per_sec: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Bucket {
    /// upper edge of the bucket
    pub mark_ms: f64,
    pub count: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Percentile {
    pub percentile: f64,
    pub latency_ms: f64,
}

#[derive(Debug, Serialize)]
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
/// in it (`requests`). Kernel figures are null where the kernel would not count them.
#[derive(Debug, Clone, Serialize)]
pub struct Cost {
    /// the denominator: measured requests written to a socket
    pub requests: u64,
    pub client_cpu_user_us: u64,
    pub client_cpu_sys_us: u64,
    pub client_cpu_us_per_request: f64,
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
    /// socket reads and writes in the window: the data part of `syscalls`
    pub data_calls: IoCalls,
    pub reads_per_request: f64,
    pub writes_per_request: f64,
    pub read_would_block_per_request: f64,
    pub write_would_block_per_request: f64,
    /// syscalls that moved no data: epoll_wait, timers, futex, ...
    pub other_syscalls_per_request: Option<f64>,
    /// the server's CPU over the window (built-in server or --server-pid), and why not
    pub server_cpu_ns: Option<u64>,
    pub server_cpu_us_per_request: Option<f64>,
    pub server_cpu_error: Option<String>,
}

/// Socket-level cost, from the per-connection ledgers and TCP_INFO. Every figure covers a
/// connection until its snapshot (last response read, before the close); the close exchange is
/// `close`. A sum over some connections is divided by the requests on those connections.
#[derive(Debug, Clone, Serialize)]
pub struct Wire {
    pub connections_opened: u64,
    pub reconnects: u64,
    /// connection attempts that failed mid-run, and the last reason
    pub connect_failures: u64,
    pub connect_error: Option<String>,
    /// requests written on every connection (warmup and failed ones included): the divisor of
    /// the byte and call figures
    pub requests_on_wire: u64,
    pub requests_per_connection: f64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub bytes_out_per_request: f64,
    pub bytes_in_per_request: f64,
    /// the connections' data calls (as `cost.data_calls`, but over their whole lives)
    pub write_calls: u64,
    pub read_calls: u64,
    pub write_calls_per_request: f64,
    pub read_calls_per_request: f64,
    pub write_would_block: u64,
    pub read_would_block: u64,
    /// requests written on the connections that have TCP_INFO: the divisor of the segment and
    /// on-the-wire figures
    pub requests_with_tcp_info: u64,
    pub segments_out: u64,
    pub segments_in: u64,
    pub data_segments_out: u64,
    pub data_segments_in: u64,
    pub segments_out_per_request: f64,
    pub segments_in_per_request: f64,
    pub data_segments_out_per_request: f64,
    pub data_segments_in_per_request: f64,
    pub retransmits: u64,
    /// connections whose TCP_INFO could not be read (left out of the segment figures)
    pub connections_without_tcp_info: u64,
    /// IP + TCP headers, estimated: segments x (IP header + 20 + 12 with timestamps)
    pub ip_tcp_header_bytes_out: u64,
    pub ip_tcp_header_bytes_in: u64,
    /// (socket bytes + estimated IP/TCP headers) / requests, over the connections with TCP_INFO
    pub wire_bytes_out_per_request: f64,
    pub wire_bytes_in_per_request: f64,
    /// the close exchanges, summed (not per request)
    pub close: CloseTotals,
    /// protocol layers summed over all connections (absent with --ledger off)
    pub layers: Option<LayerTotals>,
    /// TLS summed over all connections (absent without TLS)
    pub tls: Option<TlsLayer>,
}

/// The close exchanges of a run's connections, summed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CloseTotals {
    pub connections: u64,
    /// connections whose peer FIN was read within the bound
    pub drained: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// over the connections with TCP_INFO before and after the close
    pub segments_out: u64,
    pub segments_in: u64,
}

impl CloseTotals {
    fn of(conns: &[ConnRecord]) -> CloseTotals {
        let mut t = CloseTotals::default();
        for c in conns.iter().filter_map(|c| c.close.as_ref()) {
            let CloseRecord {
                bytes_out,
                bytes_in,
                segs_out,
                segs_in,
                drained,
                ..
            } = *c;
            t.connections += 1;
            t.drained += u64::from(drained);
            t.bytes_out += bytes_out;
            t.bytes_in += bytes_in;
            t.segments_out += segs_out.unwrap_or(0);
            t.segments_in += segs_in.unwrap_or(0);
        }
        t
    }
}

/// Protocol layers of a run, summed over its connections.
#[derive(Debug, Clone, Serialize)]
pub struct LayerTotals {
    pub http1: Option<Http1Layers>,
    pub h2: Option<H2Layers>,
    /// h2 connection setup (preface, SETTINGS exchange, setup PING) in both directions: paid once
    /// per connection, not per request
    pub setup_bytes_out: u64,
    pub setup_bytes_in: u64,
    /// (socket bytes - setup) / requests on wire: the per-request cost once connections exist
    pub bytes_out_per_request_after_setup: f64,
    pub bytes_in_per_request_after_setup: f64,
}

/// gRPC / HTTP/1.1 for the headline figures.
#[derive(Debug, Clone, Serialize)]
pub struct Ratios {
    pub requests_per_sec: Option<f64>,
    pub latency_p50: Option<f64>,
    pub latency_p99: Option<f64>,
    pub connections: Option<f64>,
    pub bytes_out_per_request: Option<f64>,
    pub bytes_in_per_request: Option<f64>,
    pub segments_out_per_request: Option<f64>,
    pub segments_in_per_request: Option<f64>,
    /// kernel-counted syscalls per request (null when either side has none)
    pub syscalls_per_request: Option<f64>,
    pub context_switches_per_request: Option<f64>,
    pub client_cpu_us_per_request: Option<f64>,
    pub server_cpu_us_per_request: Option<f64>,
    pub wire_bytes_out_per_request: Option<f64>,
    pub wire_bytes_in_per_request: Option<f64>,
}

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

fn per(n: u64, d: u64) -> f64 {
    if d == 0 { 0.0 } else { n as f64 / d as f64 }
}

fn ratio(grpc: f64, http: f64) -> Option<f64> {
    (http > 0.0 && grpc.is_finite()).then(|| grpc / http)
}

fn ratio_opt(grpc: Option<f64>, http: Option<f64>) -> Option<f64> {
    ratio(grpc?, http?)
}

/// Failures by kind and message, most frequent first (ties by kind, then message).
pub fn error_counts(
    errors: &std::collections::HashMap<crate::stats::Failure, u64>,
) -> Vec<ErrorCount> {
    let mut v: Vec<ErrorCount> = errors
        .iter()
        .map(|(f, &count)| ErrorCount {
            kind: f.kind.as_str(),
            message: f.detail.as_deref().map(str::to_string),
            count,
        })
        .collect();
    v.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(a.kind.cmp(b.kind))
            .then_with(|| a.message.cmp(&b.message))
    });
    v
}

/// IP + TCP header bytes of `segments` segments: IPv4 20 or IPv6 40, TCP 20, plus 12 bytes of
/// timestamp option on every segment when negotiated (Linux pads it to 12). SACK blocks and other
/// options on some segments are not counted: the figure is a floor.
pub fn ip_tcp_header_bytes(segments: u64, ipv6: bool, timestamps: bool) -> u64 {
    let ip = if ipv6 { 40 } else { 20 };
    let tcp = 20 + if timestamps { 12 } else { 0 };
    segments * (ip + tcp)
}

fn layer_totals(conns: &[ConnRecord], requests: u64) -> Option<LayerTotals> {
    let mut http1: Option<Http1Layers> = None;
    let mut h2: Option<H2Layers> = None;
    for c in conns {
        if let Some(l) = &c.http1 {
            http1.get_or_insert_with(Default::default).add(l);
        }
        if let Some(l) = &c.h2 {
            let t = h2.get_or_insert_with(Default::default);
            t.out.add(&l.out);
            t.inbound.add(&l.inbound);
        }
    }
    if http1.is_none() && h2.is_none() {
        return None;
    }
    let (setup_out, setup_in) = h2
        .as_ref()
        .map_or((0, 0), |h| (h.out.setup_bytes, h.inbound.setup_bytes));
    let bytes_out: u64 = conns.iter().map(|c| c.bytes_out).sum();
    let bytes_in: u64 = conns.iter().map(|c| c.bytes_in).sum();
    Some(LayerTotals {
        http1,
        h2,
        setup_bytes_out: setup_out,
        setup_bytes_in: setup_in,
        bytes_out_per_request_after_setup: per(bytes_out.saturating_sub(setup_out), requests),
        bytes_in_per_request_after_setup: per(bytes_in.saturating_sub(setup_in), requests),
    })
}

fn distribution(lat: &Latencies) -> Vec<Percentile> {
    if lat.count == 0 {
        return Vec::new();
    }
    PERCENTILES
        .iter()
        .map(|&p| Percentile {
            percentile: p,
            latency_ms: ms(lat.quantile_ns(p / 100.0) as f64),
        })
        .collect()
}

fn open_loop(run: &ProtoRun) -> Option<OpenLoop> {
    let target_rate = run.rate?;
    let st = &run.stats;
    let secs = run.elapsed.as_secs_f64();
    let unc = st.uncorrected.clone().unwrap_or_default();
    Some(OpenLoop {
        target_rate,
        achieved_rate: if secs > 0.0 {
            st.written as f64 / secs
        } else {
            0.0
        },
        expired_sends: st.expired,
        timer: run.pacer_timer,
        late_sends: st.late,
        average_send_lag_ms: if st.lagged_sends == 0 {
            0.0
        } else {
            ms(st.send_lag_sum.as_nanos() as f64 / st.lagged_sends as f64)
        },
        max_send_lag_ms: ms(st.max_send_lag.as_nanos() as f64),
        uncorrected_average_ms: ms(unc.mean_ns()),
        uncorrected_slowest_ms: if unc.count == 0 {
            0.0
        } else {
            ms(unc.max_ns as f64)
        },
        uncorrected_distribution: distribution(&unc),
    })
}

fn per_endpoint(run: &ProtoRun, endpoints: &[String], roles: &[String]) -> Vec<EndpointReport> {
    let secs = run.elapsed.as_secs_f64();
    run.stats
        .per_endpoint
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let q = |p: f64| {
                if e.latency.count == 0 {
                    0.0
                } else {
                    ms(e.latency.quantile_ns(p) as f64)
                }
            };
            EndpointReport {
                endpoint: endpoints.get(i).cloned().unwrap_or_default(),
                role: roles.get(i).cloned(),
                count: e.ok + e.failed,
                ok: e.ok,
                failed: e.failed,
                requests_per_sec: if secs > 0.0 {
                    (e.ok + e.failed) as f64 / secs
                } else {
                    0.0
                },
                p50_ms: q(0.5),
                p90_ms: q(0.9),
                p99_ms: q(0.99),
            }
        })
        .collect()
}

fn timeline(run: &ProtoRun) -> Vec<TimelinePoint> {
    let t = &run.stats.timeline;
    t.buckets
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let q = |p: f64| {
                if b.ok == 0 {
                    0.0
                } else {
                    b.hist.value_at_quantile(p) as f64 / 1000.0
                }
            };
            TimelinePoint {
                t_s: i as u64 * t.width_s,
                width_s: t.width_s,
                ok: b.ok,
                errors: b.failed,
                requests_per_sec: (b.ok + b.failed) as f64 / t.width_s as f64,
                p50_ms: q(0.5),
                p99_ms: q(0.99),
            }
        })
        .collect()
}

fn connect_times(conns: &[ConnRecord]) -> Option<ConnectTimes> {
    if conns.is_empty() {
        return None;
    }
    let mut lat = Latencies::default();
    for c in conns {
        lat.record(std::time::Duration::from_micros(c.connect_us));
    }
    Some(ConnectTimes {
        connections: lat.count,
        average_ms: ms(lat.mean_ns()),
        fastest_ms: ms(lat.min_ns as f64),
        slowest_ms: ms(lat.max_ns as f64),
        histogram: buckets(&lat),
        distribution: distribution(&lat),
    })
}

fn memory(run: &ProtoRun, includes_server: bool) -> Option<MemoryReport> {
    let m = run.memory?;
    let grown = m.rss_steady_kib.saturating_sub(m.rss_baseline_kib) * 1024;
    Some(MemoryReport {
        rss_baseline_kib: m.rss_baseline_kib,
        rss_connected_kib: m.rss_connected_kib,
        rss_steady_kib: m.rss_steady_kib,
        peak_rss_kib: m.peak_rss_kib,
        rss_per_connection_bytes: per(grown, run.conns as u64),
        rss_per_in_flight_bytes: per(grown, run.clients as u64),
        includes_server,
    })
}

/// Per request, or None when the count itself is unknown.
fn per_opt(n: Option<u64>, d: u64) -> Option<f64> {
    n.map(|n| per(n, d))
}

fn cost(run: &ProtoRun) -> Cost {
    let c = &run.cost;
    let requests = run.stats.written;
    let io = c.io;
    let (server_cpu_ns, server_cpu_error) = match &run.server_cpu {
        Some(Ok(d)) => (Some(d.as_nanos() as u64), None),
        Some(Err(e)) => (None, Some(e.clone())),
        None => (None, None),
    };
    Cost {
        requests,
        client_cpu_user_us: c.cpu.user_us,
        client_cpu_sys_us: c.cpu.sys_us,
        client_cpu_us_per_request: per(c.cpu.total_us(), requests),
        syscalls: c.kernel.syscalls,
        syscalls_per_request: per_opt(c.kernel.syscalls, requests),
        context_switches: c.kernel.context_switches,
        context_switches_per_request: per_opt(c.kernel.context_switches, requests),
        instructions: c.kernel.instructions,
        instructions_per_request: per_opt(c.kernel.instructions, requests),
        cycles: c.kernel.cycles,
        cycles_per_request: per_opt(c.kernel.cycles, requests),
        kernel_counters_unavailable: c.kernel_unavailable.clone(),
        syscalls_outside_window: c.outside.syscalls,
        context_switches_outside_window: c.outside.context_switches,
        data_calls: io,
        reads_per_request: per(io.reads, requests),
        writes_per_request: per(io.writes, requests),
        read_would_block_per_request: per(io.read_would_block, requests),
        write_would_block_per_request: per(io.write_would_block, requests),
        other_syscalls_per_request: per_opt(
            c.kernel.syscalls.map(|s| s.saturating_sub(io.total())),
            requests,
        ),
        server_cpu_ns,
        server_cpu_us_per_request: server_cpu_ns.map(|ns| per(ns, requests) / 1000.0),
        server_cpu_error,
    }
}

impl RunReport {
    /// `endpoints`: the run's endpoints; `roles`: their etcd roles when discovered.
    /// `includes_server`: the built-in server runs in this process (its memory is in ours).
    pub fn from_run(
        run: &ProtoRun,
        endpoints: &[crate::config::Endpoint],
        roles: &[String],
        includes_server: bool,
    ) -> RunReport {
        let ipv6: Vec<bool> = endpoints.iter().map(|e| e.addr.is_ipv6()).collect();
        let urls: Vec<String> = endpoints.iter().map(|e| e.url.clone()).collect();
        let st = &run.stats;
        let lat = &st.latency;
        let secs = run.elapsed.as_secs_f64();
        let count = st.count();
        let summary = Summary {
            count,
            ok: st.ok,
            failed: st.failed,
            warmup_requests: st.warmup,
            written: st.written,
            retried: st.retried,
            reauthenticated: st.reauthenticated,
            total_s: secs,
            slowest_ms: if lat.count == 0 {
                0.0
            } else {
                ms(lat.max_ns as f64)
            },
            fastest_ms: if lat.count == 0 {
                0.0
            } else {
                ms(lat.min_ns as f64)
            },
            average_ms: ms(lat.mean_ns()),
            stddev_ms: ms(lat.stddev_ns()),
            requests_per_sec: if secs > 0.0 { count as f64 / secs } else { 0.0 },
            ok_per_sec: if secs > 0.0 { st.ok as f64 / secs } else { 0.0 },
        };
        let latency_distribution = distribution(lat);
        let mut status_distribution: Vec<StatusCount> = st
            .statuses
            .iter()
            .map(|(k, &count)| StatusCount {
                status: k.to_string(),
                count,
            })
            .collect();
        status_distribution.sort_by_key(|s| std::cmp::Reverse(s.count));
        let error_distribution = error_counts(&st.errors);

        RunReport {
            proto: run.proto.name(),
            title: run.proto.title(),
            clients: run.clients,
            connections: run.conns,
            threads: run.threads,
            interrupted: run.interrupted,
            summary,
            histogram: buckets(lat),
            latency_distribution,
            status_distribution,
            error_distribution,
            cost: cost(run),
            wire: wire(run, &ipv6),
            open_loop: open_loop(run),
            per_endpoint: per_endpoint(run, &urls, roles),
            timeline: timeline(run),
            connect_times: connect_times(&st.conns),
            memory: memory(run, includes_server),
            per_connection: st.conns.clone(),
            sample_response: run.sample.clone(),
        }
    }

    pub fn percentile_ms(&self, p: f64) -> f64 {
        percentile_in(&self.latency_distribution, p)
    }
}

/// Percentile `p` of a distribution (0 when it is empty).
pub fn percentile_in(dist: &[Percentile], p: f64) -> f64 {
    dist.iter()
        .find(|x| x.percentile == p)
        .map_or(0.0, |x| x.latency_ms)
}

/// ghz's response-time histogram: 10 equal-width buckets from fastest to slowest, each counting
/// the latencies at or below its mark (HDR-bucket resolution: 0.1%, rounded down).
fn buckets(lat: &Latencies) -> Vec<Bucket> {
    if lat.count == 0 {
        return Vec::new();
    }
    let (lo, hi) = (lat.min_ns as f64, lat.max_ns as f64);
    const BUCKETS: usize = 10;
    let width = (hi - lo) / BUCKETS as f64;
    let marks: Vec<f64> = (0..=BUCKETS).map(|i| lo + width * i as f64).collect();
    let mut counts = vec![0u64; marks.len()];
    for v in lat.hist.iter_recorded() {
        // The lowest value of the HDR bucket, clamped into [fastest, slowest]: the fastest
        // latency then lands under the first mark (ghz's layout), whatever its bucket's width.
        let value = (lat.hist.lowest_equivalent(v.value_iterated_to()) as f64).clamp(lo, hi);
        let i = marks.iter().position(|&m| value <= m).unwrap_or(BUCKETS);
        counts[i] += v.count_at_value();
    }
    marks
        .into_iter()
        .zip(counts)
        .map(|(m, count)| Bucket {
            mark_ms: ms(m),
            count,
        })
        .collect()
}

fn wire(run: &ProtoRun, ipv6: &[bool]) -> Wire {
    let conns = &run.stats.conns;
    let sum = |f: fn(&ConnRecord) -> u64| conns.iter().map(f).sum::<u64>();
    // The segment figures cover the connections with TCP_INFO, and only their requests.
    let with_tcp = || conns.iter().filter_map(|c| c.tcp.as_ref().map(|t| (c, t)));
    let tcp_sum = |f: fn(&crate::net::TcpInfo) -> u64| with_tcp().map(|(_, t)| f(t)).sum::<u64>();
    let requests = sum(|c| c.requests);
    let tcp_requests: u64 = with_tcp().map(|(c, _)| c.requests).sum();
    let headers = |out: bool| -> u64 {
        with_tcp()
            .map(|(c, t)| {
                let v6 = ipv6.get(c.endpoint).copied().unwrap_or(false);
                ip_tcp_header_bytes(if out { t.segs_out } else { t.segs_in }, v6, t.timestamps)
            })
            .sum()
    };
    let (hdr_out, hdr_in) = (headers(true), headers(false));
    let tcp_bytes_out: u64 = with_tcp().map(|(c, _)| c.bytes_out).sum();
    let tcp_bytes_in: u64 = with_tcp().map(|(c, _)| c.bytes_in).sum();
    Wire {
        connections_opened: conns.len() as u64,
        reconnects: run.stats.reconnects,
        connect_failures: run.stats.connect_failures,
        connect_error: run.stats.connect_error.as_ref().map(ToString::to_string),
        requests_on_wire: requests,
        requests_per_connection: per(requests, conns.len() as u64),
        bytes_out: sum(|c| c.bytes_out),
        bytes_in: sum(|c| c.bytes_in),
        bytes_out_per_request: per(sum(|c| c.bytes_out), requests),
        bytes_in_per_request: per(sum(|c| c.bytes_in), requests),
        write_calls: sum(|c| c.write_calls),
        read_calls: sum(|c| c.read_calls),
        write_calls_per_request: per(sum(|c| c.write_calls), requests),
        read_calls_per_request: per(sum(|c| c.read_calls), requests),
        write_would_block: sum(|c| c.write_would_block),
        read_would_block: sum(|c| c.read_would_block),
        requests_with_tcp_info: tcp_requests,
        segments_out: tcp_sum(|t| t.segs_out),
        segments_in: tcp_sum(|t| t.segs_in),
        data_segments_out: tcp_sum(|t| t.data_segs_out),
        data_segments_in: tcp_sum(|t| t.data_segs_in),
        segments_out_per_request: per(tcp_sum(|t| t.segs_out), tcp_requests),
        segments_in_per_request: per(tcp_sum(|t| t.segs_in), tcp_requests),
        data_segments_out_per_request: per(tcp_sum(|t| t.data_segs_out), tcp_requests),
        data_segments_in_per_request: per(tcp_sum(|t| t.data_segs_in), tcp_requests),
        retransmits: tcp_sum(|t| t.retransmits),
        connections_without_tcp_info: conns.iter().filter(|c| c.tcp.is_none()).count() as u64,
        ip_tcp_header_bytes_out: hdr_out,
        ip_tcp_header_bytes_in: hdr_in,
        wire_bytes_out_per_request: per(tcp_bytes_out + hdr_out, tcp_requests),
        wire_bytes_in_per_request: per(tcp_bytes_in + hdr_in, tcp_requests),
        close: CloseTotals::of(conns),
        layers: layer_totals(conns, requests),
        tls: conns
            .iter()
            .filter_map(|c| c.tls.as_ref())
            .fold(None, |acc: Option<TlsLayer>, t| {
                let mut a = acc.unwrap_or_default();
                a.add(t);
                Some(a)
            }),
    }
}

impl Report {
    /// `endpoints` and their `roles`: those the runs used (after `--target`, or the built-in
    /// server's); `includes_server`: the built-in server runs in this process.
    pub fn new(
        cfg: &Config,
        endpoints: &[Endpoint],
        roles: &[String],
        runs: &[ProtoRun],
        includes_server: bool,
    ) -> Report {
        let runs: Vec<RunReport> = runs
            .iter()
            .map(|r| RunReport::from_run(r, endpoints, roles, includes_server))
            .collect();
        let http = runs.iter().find(|r| r.proto == "http");
        let grpc = runs.iter().find(|r| r.proto == "grpc");
        let ratios = match (http, grpc) {
            (Some(h), Some(g)) => Some(Ratios {
                requests_per_sec: ratio(g.summary.requests_per_sec, h.summary.requests_per_sec),
                latency_p50: ratio(g.percentile_ms(50.0), h.percentile_ms(50.0)),
                latency_p99: ratio(g.percentile_ms(99.0), h.percentile_ms(99.0)),
                connections: ratio(
                    g.wire.connections_opened as f64,
                    h.wire.connections_opened as f64,
                ),
                bytes_out_per_request: ratio(
                    g.wire.bytes_out_per_request,
                    h.wire.bytes_out_per_request,
                ),
                bytes_in_per_request: ratio(
                    g.wire.bytes_in_per_request,
                    h.wire.bytes_in_per_request,
                ),
                segments_out_per_request: ratio(
                    g.wire.segments_out_per_request,
                    h.wire.segments_out_per_request,
                ),
                segments_in_per_request: ratio(
                    g.wire.segments_in_per_request,
                    h.wire.segments_in_per_request,
                ),
                syscalls_per_request: ratio_opt(
                    g.cost.syscalls_per_request,
                    h.cost.syscalls_per_request,
                ),
                context_switches_per_request: ratio_opt(
                    g.cost.context_switches_per_request,
                    h.cost.context_switches_per_request,
                ),
                client_cpu_us_per_request: ratio(
                    g.cost.client_cpu_us_per_request,
                    h.cost.client_cpu_us_per_request,
                ),
                server_cpu_us_per_request: ratio_opt(
                    g.cost.server_cpu_us_per_request,
                    h.cost.server_cpu_us_per_request,
                ),
                wire_bytes_out_per_request: ratio(
                    g.wire.wire_bytes_out_per_request,
                    h.wire.wire_bytes_out_per_request,
                ),
                wire_bytes_in_per_request: ratio(
                    g.wire.wire_bytes_in_per_request,
                    h.wire.wire_bytes_in_per_request,
                ),
            }),
            _ => None,
        };
        let (total_requests, duration_s) = match cfg.load.stop {
            Stop::Total(n) => (Some(n), None),
            Stop::Duration(d) => (None, Some(d.as_secs_f64())),
        };
        Report {
            schema: SCHEMA,
            version: env!("CARGO_PKG_VERSION"),
            workload: cfg.spec.describe(),
            endpoints: endpoints.iter().map(|e| e.url.clone()).collect(),
            settings: Settings {
                clients: cfg.load.clients,
                conns: cfg.load.conns,
                threads: cfg.load.threads,
                total_requests,
                duration_s,
                warmup_s: cfg.load.warmup.as_secs_f64(),
                timeout_s: cfg.load.timeout.as_secs_f64(),
            },
            runs,
            ratios,
            per_conn_table: cfg.per_conn,
        }
    }

    pub fn to_json(&self) -> String {
        // Serializing plain structs of numbers and strings cannot fail.
        let mut s = serde_json::to_string_pretty(self).expect("report serializes");
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    //! Every derived figure against numbers computed by hand. Latencies are recorded exactly
    //! (count, sum, min, max); percentiles come from the HDR histogram, 3 significant digits,
    //! so those are checked within 0.1% (`hdr`).

    use std::time::Duration;

    use super::*;
    use crate::config::{Endpoint, Proto};
    use crate::engine::{Memory, WindowCost};
    use crate::net::TcpInfo;
    use crate::stats::perf::KernelCounts;
    use crate::stats::{
        At, CpuTimes, Failure, FailureKind, FrameTally, H2Dir, Stats, StatusKey, Timeline,
    };

    // The helpers marked pub(super) are shared with the tests of `compare`.

    /// A run that measured nothing, over a 1 s window: each test fills in what it checks.
    pub(super) fn run(proto: Proto) -> ProtoRun {
        ProtoRun {
            proto,
            clients: 1,
            conns: 1,
            threads: 1,
            stats: Stats::default(),
            elapsed: Duration::from_secs(1),
            cost: WindowCost::default(),
            server_cpu: None,
            sample: None,
            interrupted: false,
            rate: None,
            pacer_timer: None,
            memory: None,
        }
    }

    /// Endpoint 0 is IPv4, endpoint 1 IPv6 (literals: nothing is resolved).
    pub(super) fn endpoints() -> Vec<Endpoint> {
        ["http://127.0.0.1:2379", "http://[::1]:2379"]
            .iter()
            .map(|u| Endpoint::parse(u).expect("a literal address"))
            .collect()
    }

    pub(super) fn report(run: &ProtoRun) -> RunReport {
        RunReport::from_run(run, &endpoints(), &[], false)
    }

    /// At endpoint `endpoint`, `s` seconds into the window.
    fn at(endpoint: usize, s: u64) -> At {
        At {
            endpoint,
            offset: Duration::from_secs(s),
        }
    }

    /// `n` successful requests of `latency` each, at endpoint 0, in the first second.
    pub(super) fn ok(stats: &mut Stats, n: u64, latency: Duration) {
        for _ in 0..n {
            stats.record_ok(at(0, 0), latency, StatusKey::Http(200));
        }
    }

    /// One successful request of each of `ms` milliseconds, at endpoint 0.
    pub(super) fn ok_ms(stats: &mut Stats, ms: impl IntoIterator<Item = u64>) {
        for ms in ms {
            ok(stats, 1, Duration::from_millis(ms));
        }
    }

    pub(super) fn conn(
        endpoint: usize,
        requests: u64,
        bytes_out: u64,
        bytes_in: u64,
        tcp: Option<TcpInfo>,
    ) -> ConnRecord {
        ConnRecord {
            endpoint,
            requests,
            bytes_out,
            bytes_in,
            tcp,
            ..ConnRecord::default()
        }
    }

    pub(super) fn tcp(segs_out: u64, segs_in: u64, timestamps: bool) -> TcpInfo {
        TcpInfo {
            segs_out,
            segs_in,
            timestamps,
            ..TcpInfo::default()
        }
    }

    /// `got` is `want` within HDR's 3 significant digits.
    #[track_caller]
    pub(super) fn hdr(got: f64, want: f64) {
        assert!(
            (got - want).abs() <= want * 1e-3,
            "{got} is not {want} within 0.1%"
        );
    }

    /// `got` is `want` up to float rounding (a square root).
    #[track_caller]
    fn close(got: f64, want: f64) {
        assert!((got - want).abs() <= want.abs() * 1e-12, "{got} != {want}");
    }

    /// The nine percentiles of `got`, each `want` within 0.1%.
    #[track_caller]
    fn hdr_all(got: &[Percentile], want: [f64; 9]) {
        let ps: Vec<f64> = got.iter().map(|p| p.percentile).collect();
        assert_eq!(ps, PERCENTILES);
        for (g, w) in got.iter().zip(want) {
            hdr(g.latency_ms, w);
        }
    }

    #[test]
    fn summary_counts_rates_and_exact_latency() {
        let mut r = run(Proto::Http);
        (r.clients, r.conns, r.threads, r.interrupted) = (4, 4, 2, true);
        r.elapsed = Duration::from_secs(2);
        r.sample = Some(serde_json::json!({"header": {"revision": "7"}}));
        // 8 OK of 1, 2, ... 8 ms; 2 failed, one of them before it was written (9 written)
        ok_ms(&mut r.stats, 1..=8);
        r.stats
            .record_failures(at(0, 1), 2, Failure::new(FailureKind::Timeout));
        let st = &mut r.stats;
        (st.warmup, st.written, st.retried, st.reauthenticated) = (5, 9, 3, 1);
        st.conns = vec![conn(0, 14, 100, 200, None)];
        let rep = report(&r);
        assert_eq!(
            (
                rep.proto,
                rep.title,
                rep.clients,
                rep.connections,
                rep.threads
            ),
            ("http", "HTTP/1.1", 4, 4, 2)
        );
        assert!(rep.interrupted);
        let s = &rep.summary;
        // count = ok + failed = 8 + 2
        assert_eq!((s.count, s.ok, s.failed), (10, 8, 2));
        assert_eq!(
            (s.warmup_requests, s.written, s.retried, s.reauthenticated),
            (5, 9, 3, 1)
        );
        assert_eq!(s.total_s, 2.0);
        assert_eq!((s.fastest_ms, s.slowest_ms), (1.0, 8.0));
        // (1 + ... + 8) / 8 = 36 / 8
        assert_eq!(s.average_ms, 4.5);
        // population variance of 1..=8 is (8² - 1) / 12 = 5.25 ms²
        close(s.stddev_ms, 5.25f64.sqrt());
        // count / total_s = 10 / 2; ok / total_s = 8 / 2
        assert_eq!((s.requests_per_sec, s.ok_per_sec), (5.0, 4.0));
        assert_eq!(rep.per_connection.len(), 1);
        assert_eq!(rep.per_connection[0].requests, 14);
        assert_eq!(rep.sample_response, r.sample);
    }

    #[test]
    fn an_empty_run_reports_zeros_and_absences() {
        let mut r = run(Proto::Grpc);
        r.elapsed = Duration::ZERO;
        let rep = report(&r);
        let s = &rep.summary;
        assert_eq!((rep.proto, rep.title), ("grpc", "gRPC"));
        // no latency: 0, not the u64::MAX the empty minimum starts from
        assert_eq!(
            (s.fastest_ms, s.slowest_ms, s.average_ms, s.stddev_ms),
            (0.0, 0.0, 0.0, 0.0)
        );
        // a zero window gives no rate rather than a division by zero
        assert_eq!((s.requests_per_sec, s.ok_per_sec), (0.0, 0.0));
        assert!(rep.histogram.is_empty());
        assert!(rep.latency_distribution.is_empty());
        assert_eq!(rep.percentile_ms(50.0), 0.0);
        assert!(rep.status_distribution.is_empty() && rep.error_distribution.is_empty());
        assert!(rep.per_endpoint.is_empty() && rep.timeline.is_empty());
        assert!(rep.connect_times.is_none() && rep.memory.is_none());
        assert!(rep.open_loop.is_none());
        // nothing written: every per-request figure is 0, none divides by zero
        assert_eq!(rep.cost.requests, 0);
        assert_eq!(rep.cost.client_cpu_us_per_request, 0.0);
        assert_eq!(rep.wire.connections_opened, 0);
        assert_eq!(rep.wire.requests_per_connection, 0.0);
        assert_eq!(rep.wire.bytes_out_per_request, 0.0);
        assert_eq!(rep.wire.segments_out_per_request, 0.0);
        assert_eq!(rep.wire.wire_bytes_out_per_request, 0.0);
        assert_eq!(rep.wire.connect_error, None);
        assert!(rep.wire.layers.is_none() && rep.wire.tls.is_none());
        assert_eq!(rep.wire.close.connections, 0);
    }

    #[test]
    fn latency_distribution_is_the_hdr_percentiles() {
        let mut r = run(Proto::Http);
        ok_ms(&mut r.stats, 1..=10);
        let rep = report(&r);
        // of 10 sorted latencies, percentile p is the ceil(p/100 × 10)-th:
        // p10 1st, p25 3rd (2.5), p50 5th, p75 8th (7.5), p90 9th, p95 and up the 10th
        hdr_all(
            &rep.latency_distribution,
            [1.0, 3.0, 5.0, 8.0, 9.0, 10.0, 10.0, 10.0, 10.0],
        );
        hdr(rep.percentile_ms(50.0), 5.0);
        hdr(rep.percentile_ms(99.0), 10.0);
        // a percentile that is not in the list reads 0
        assert_eq!(rep.percentile_ms(42.0), 0.0);
    }

    /// The count of each bucket of a histogram.
    fn counts(b: &[Bucket]) -> Vec<u64> {
        b.iter().map(|b| b.count).collect()
    }

    #[test]
    fn histogram_has_eleven_marks_from_fastest_to_slowest() {
        let mut r = run(Proto::Http);
        ok_ms(&mut r.stats, 1..=10);
        let rep = report(&r);
        // fastest 1 ms, slowest 10 ms: width (10 - 1) / 10 = 0.9 ms
        let marks: Vec<f64> = rep.histogram.iter().map(|b| b.mark_ms).collect();
        assert_eq!(
            marks,
            [1.0, 1.9, 2.8, 3.7, 4.6, 5.5, 6.4, 7.3, 8.2, 9.1, 10.0]
        );
        let c = counts(&rep.histogram);
        assert_eq!(c.iter().sum::<u64>(), 10);
        // 2 ms under 2.8, 3 under 3.7, ... 9 under 9.1, 10 (the slowest) under 10
        assert_eq!(c[2..], [1; 9]);
        // 1 ms, the fastest, under the first mark (ghz: latencies at or below each mark)
        assert_eq!(c[..2], [1, 0]);
    }

    #[test]
    fn histogram_counts_the_fastest_under_the_first_mark() {
        let mut r = run(Proto::Http);
        ok_ms(&mut r.stats, 1..=10);
        let rep = report(&r);
        // ghz: the first mark is the fastest latency and counts it (latencies <= mark)
        assert_eq!(counts(&rep.histogram), [1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
    }

    #[test]
    fn statuses_and_errors_most_frequent_first() {
        let mut r = run(Proto::Grpc);
        let st = &mut r.stats;
        st.statuses.insert(StatusKey::Grpc(0), 7);
        st.statuses.insert(StatusKey::Grpc(14), 2);
        st.statuses.insert(StatusKey::Http(500), 2);
        st.statuses.insert(
            StatusKey::GrpcFromHttp {
                code: 14,
                http: 503,
            },
            3,
        );
        st.errors.insert(
            Failure::with(FailureKind::Etcd, "etcdserver: too many requests"),
            5,
        );
        st.errors.insert(Failure::new(FailureKind::Timeout), 3);
        st.errors.insert(Failure::new(FailureKind::Closed), 3);
        st.errors
            .insert(Failure::with(FailureKind::HttpStatus, "500"), 1);
        let rep = report(&r);
        let statuses: Vec<(&str, u64)> = rep
            .status_distribution
            .iter()
            .map(|s| (s.status.as_str(), s.count))
            .collect();
        // by count; the tie (2 and 2) keeps the key order: HTTP statuses before gRPC codes
        assert_eq!(
            statuses,
            [
                ("OK", 7),
                ("UNAVAILABLE (HTTP 503)", 3),
                ("500", 2),
                ("UNAVAILABLE", 2)
            ]
        );
        let errors: Vec<(&str, Option<&str>, u64)> = rep
            .error_distribution
            .iter()
            .map(|e| (e.kind, e.message.as_deref(), e.count))
            .collect();
        // by count, a tie by kind name ("closed" < "timeout")
        assert_eq!(
            errors,
            [
                ("etcd", Some("etcdserver: too many requests"), 5),
                ("closed", None, 3),
                ("timeout", None, 3),
                ("http_status", Some("500"), 1),
            ]
        );
    }

    /// 50 requests measured (30 ok + 20 failed, 10 of those never written: no connection), 40
    /// written in the window, 80 on the wire (warmup included): three different numbers, so a
    /// figure with the wrong denominator shows.
    fn costly_run() -> ProtoRun {
        let mut r = run(Proto::Http);
        (r.stats.ok, r.stats.failed, r.stats.written) = (30, 20, 40);
        r.stats.conns = vec![conn(0, 80, 8000, 16000, None)];
        r.cost = WindowCost {
            cpu: CpuTimes {
                user_us: 300,
                sys_us: 100,
            },
            kernel: KernelCounts {
                syscalls: Some(400),
                context_switches: Some(80),
                instructions: Some(4_000_000),
                cycles: Some(6_000_000),
            },
            outside: KernelCounts {
                syscalls: Some(30),
                context_switches: Some(3),
                instructions: None,
                cycles: None,
            },
            io: IoCalls {
                reads: 60,
                writes: 40,
                read_would_block: 20,
                write_would_block: 20,
            },
            kernel_unavailable: None,
        };
        r
    }

    #[test]
    fn cost_divides_by_requests_written() {
        let rep = report(&costly_run());
        assert_eq!(
            (
                rep.summary.count,
                rep.summary.written,
                rep.wire.requests_on_wire
            ),
            (50, 40, 80)
        );
        let c = &rep.cost;
        assert_eq!(c.requests, 40);
        assert_eq!((c.client_cpu_user_us, c.client_cpu_sys_us), (300, 100));
        // (300 + 100) µs / 40 written (by count: 8, by wire: 5)
        assert_eq!(c.client_cpu_us_per_request, 10.0);
        // 400 / 40; 80 / 40; 4e6 / 40; 6e6 / 40
        assert_eq!(
            (c.syscalls, c.syscalls_per_request),
            (Some(400), Some(10.0))
        );
        assert_eq!(
            (c.context_switches, c.context_switches_per_request),
            (Some(80), Some(2.0))
        );
        assert_eq!(
            (c.instructions, c.instructions_per_request),
            (Some(4_000_000), Some(100_000.0))
        );
        assert_eq!(
            (c.cycles, c.cycles_per_request),
            (Some(6_000_000), Some(150_000.0))
        );
        assert_eq!(c.kernel_counters_unavailable, None);
        // outside the window: passed through, not per request
        assert_eq!(
            (c.syscalls_outside_window, c.context_switches_outside_window),
            (Some(30), Some(3))
        );
        assert_eq!(c.data_calls, costly_run().cost.io);
        // 60 / 40, 40 / 40, 20 / 40, 20 / 40
        assert_eq!(
            (
                c.reads_per_request,
                c.writes_per_request,
                c.read_would_block_per_request,
                c.write_would_block_per_request
            ),
            (1.5, 1.0, 0.5, 0.5)
        );
        // (400 syscalls - 140 data calls, the 40 would-block ones included) / 40
        assert_eq!(c.other_syscalls_per_request, Some(6.5));
        assert_eq!(
            (
                c.server_cpu_ns,
                c.server_cpu_us_per_request,
                &c.server_cpu_error
            ),
            (None, None, &None)
        );
    }

    #[test]
    fn kernel_counts_missing_are_null_not_zero() {
        let mut r = costly_run();
        r.cost.kernel = KernelCounts::default();
        r.cost.outside = KernelCounts::default();
        r.cost.kernel_unavailable = Some("perf_event_paranoid is 3".into());
        let rep = report(&r);
        let c = &rep.cost;
        assert_eq!((c.syscalls, c.syscalls_per_request), (None, None));
        assert_eq!(
            (c.context_switches, c.context_switches_per_request),
            (None, None)
        );
        assert_eq!((c.instructions, c.instructions_per_request), (None, None));
        assert_eq!((c.cycles, c.cycles_per_request), (None, None));
        assert_eq!(
            (c.syscalls_outside_window, c.context_switches_outside_window),
            (None, None)
        );
        assert_eq!(c.other_syscalls_per_request, None);
        assert_eq!(
            c.kernel_counters_unavailable.as_deref(),
            Some("perf_event_paranoid is 3")
        );
        // the data calls are our own counts: still there, 60 / 40
        assert_eq!(c.reads_per_request, 1.5);
        let json = serde_json::to_value(c).expect("a plain struct serializes");
        for k in [
            "syscalls",
            "syscalls_per_request",
            "context_switches_per_request",
            "instructions_per_request",
            "cycles_per_request",
            "other_syscalls_per_request",
        ] {
            assert_eq!(json[k], Value::Null, "{k}");
        }

        // syscalls counted, instructions and cycles not (no hardware counters in a VM)
        let mut r = costly_run();
        (r.cost.kernel.instructions, r.cost.kernel.cycles) = (None, None);
        let c = report(&r).cost;
        assert_eq!(c.syscalls_per_request, Some(10.0));
        assert_eq!((c.instructions, c.instructions_per_request), (None, None));
        assert_eq!((c.cycles, c.cycles_per_request), (None, None));
    }

    #[test]
    fn server_cpu_read_failed_or_absent() {
        // 2 ms over 40 written: 2_000_000 ns / 40 = 50_000 ns = 50 µs per request
        let mut r = costly_run();
        r.server_cpu = Some(Ok(Duration::from_millis(2)));
        let c = report(&r).cost;
        assert_eq!(c.server_cpu_ns, Some(2_000_000));
        assert_eq!(c.server_cpu_us_per_request, Some(50.0));
        assert_eq!(c.server_cpu_error, None);

        let msg = "--server-pid 42: cannot read its CPU clock";
        r.server_cpu = Some(Err(msg.into()));
        let c = report(&r).cost;
        assert_eq!((c.server_cpu_ns, c.server_cpu_us_per_request), (None, None));
        assert_eq!(c.server_cpu_error.as_deref(), Some(msg));

        r.server_cpu = None;
        let c = report(&r).cost;
        assert_eq!(
            (
                c.server_cpu_ns,
                c.server_cpu_us_per_request,
                c.server_cpu_error
            ),
            (None, None, None)
        );
    }

    /// Three connections carrying 40 requests:
    /// A: endpoint 0 (IPv4), TCP timestamps, 20 requests;
    /// B: endpoint 1 (IPv6), no timestamps, 10 requests;
    /// C: endpoint 0, no TCP_INFO, 10 requests.
    fn three_conns() -> Vec<ConnRecord> {
        let a = ConnRecord {
            write_calls: 20,
            read_calls: 40,
            write_would_block: 2,
            read_would_block: 10,
            tcp: Some(TcpInfo {
                data_segs_out: 10,
                data_segs_in: 20,
                retransmits: 1,
                ..tcp(15, 30, true)
            }),
            tls: Some(TlsLayer {
                handshakes: 1,
                handshake_us: 500,
                plaintext_out: 1800,
                plaintext_in: 3800,
                record_overhead_out: 200,
                record_overhead_in: 200,
            }),
            ..conn(0, 20, 2000, 4000, None)
        };
        let b = ConnRecord {
            write_calls: 10,
            read_calls: 20,
            read_would_block: 5,
            tcp: Some(TcpInfo {
                data_segs_out: 5,
                data_segs_in: 10,
                retransmits: 2,
                ..tcp(15, 15, false)
            }),
            tls: Some(TlsLayer {
                handshakes: 1,
                handshake_us: 700,
                plaintext_out: 900,
                plaintext_in: 1900,
                record_overhead_out: 100,
                record_overhead_in: 100,
            }),
            ..conn(1, 10, 1000, 2000, None)
        };
        let c = ConnRecord {
            write_calls: 10,
            read_calls: 20,
            write_would_block: 1,
            read_would_block: 5,
            ..conn(0, 10, 1000, 2000, None)
        };
        vec![a, b, c]
    }

    #[test]
    fn wire_bytes_and_calls_cover_every_connection() {
        let mut r = run(Proto::Http);
        r.stats.conns = three_conns();
        (r.stats.reconnects, r.stats.connect_failures) = (2, 4);
        r.stats.connect_error = Some(Failure::with(FailureKind::Connect, "refused"));
        let w = report(&r).wire;
        assert_eq!((w.connections_opened, w.reconnects), (3, 2));
        assert_eq!(w.connect_failures, 4);
        assert_eq!(w.connect_error.as_deref(), Some("connect: refused"));
        // 20 + 10 + 10 requests, on 3 connections
        assert_eq!(w.requests_on_wire, 40);
        assert_eq!(w.requests_per_connection, 40.0 / 3.0);
        // 4000 B out, 8000 B in, 40 writes, 80 reads, over all 40 requests
        assert_eq!((w.bytes_out, w.bytes_in), (4000, 8000));
        assert_eq!(
            (w.bytes_out_per_request, w.bytes_in_per_request),
            (100.0, 200.0)
        );
        assert_eq!(
            (w.write_calls_per_request, w.read_calls_per_request),
            (1.0, 2.0)
        );
        // 2 + 0 + 1, 10 + 5 + 5
        assert_eq!((w.write_would_block, w.read_would_block), (3, 20));
        // summed over the connections that have TLS
        assert_eq!(
            w.tls,
            Some(TlsLayer {
                handshakes: 2,
                handshake_us: 1200,
                plaintext_out: 2700,
                plaintext_in: 5700,
                record_overhead_out: 300,
                record_overhead_in: 300,
            })
        );
    }

    #[test]
    fn wire_segments_cover_only_connections_with_tcp_info() {
        let mut r = run(Proto::Http);
        r.stats.conns = three_conns();
        let w = report(&r).wire;
        // A and B have TCP_INFO: 30 of the 40 requests
        assert_eq!(w.requests_with_tcp_info, 30);
        assert_eq!(w.connections_without_tcp_info, 1);
        // 15 + 15 segments out, 30 + 15 in: / 30 (over all 40 it would read 0.75 and 1.125)
        assert_eq!((w.segments_out, w.segments_in), (30, 45));
        assert_eq!(
            (w.segments_out_per_request, w.segments_in_per_request),
            (1.0, 1.5)
        );
        // data segments 10 + 5 out, 20 + 10 in: / 30
        assert_eq!(
            (
                w.data_segments_out_per_request,
                w.data_segments_in_per_request
            ),
            (0.5, 1.0)
        );
        assert_eq!(w.retransmits, 3);
        // A (IPv4 + timestamps: 20 + 20 + 12 = 52 B): 15 out, 30 in;
        // B (IPv6, no timestamps: 40 + 20 = 60 B): 15 out, 15 in
        // out: 15 × 52 + 15 × 60 = 780 + 900; in: 30 × 52 + 15 × 60 = 1560 + 900
        assert_eq!(
            (w.ip_tcp_header_bytes_out, w.ip_tcp_header_bytes_in),
            (1680, 2460)
        );
        // (A + B socket bytes + headers) / 30: out (2000 + 1000 + 1680) / 30,
        // in (4000 + 2000 + 2460) / 30; C's bytes are left out with its requests
        assert_eq!(
            (w.wire_bytes_out_per_request, w.wire_bytes_in_per_request),
            (156.0, 282.0)
        );
    }

    #[test]
    fn ip_tcp_header_bytes_by_family_and_timestamps() {
        // IPv4 20 + TCP 20, + 12 with timestamps; IPv6 40 + 20, + 12
        assert_eq!(ip_tcp_header_bytes(10, false, false), 400);
        assert_eq!(ip_tcp_header_bytes(10, false, true), 520);
        assert_eq!(ip_tcp_header_bytes(10, true, false), 600);
        assert_eq!(ip_tcp_header_bytes(10, true, true), 720);
        assert_eq!(ip_tcp_header_bytes(0, true, true), 0);
        // the family comes from the connection's endpoint: 10 segments each way, timestamps
        let headers = |endpoint: usize| {
            let mut r = run(Proto::Grpc);
            r.stats.conns = vec![conn(endpoint, 1, 0, 0, Some(tcp(10, 10, true)))];
            let w = report(&r).wire;
            (w.ip_tcp_header_bytes_out, w.ip_tcp_header_bytes_in)
        };
        assert_eq!(headers(0), (520, 520));
        assert_eq!(headers(1), (720, 720));
        // an index past the endpoint list counts as IPv4
        assert_eq!(headers(7), (520, 520));
    }

    #[test]
    fn close_totals_sum_the_close_exchanges() {
        let closed = |bytes_out, bytes_in, segs: Option<(u64, u64)>, drained| CloseRecord {
            bytes_out,
            bytes_in,
            segs_out: segs.map(|s| s.0),
            segs_in: segs.map(|s| s.1),
            drained,
            ..CloseRecord::default()
        };
        let mut r = run(Proto::Grpc);
        r.stats.conns = vec![
            ConnRecord {
                close: Some(closed(40, 30, Some((3, 2)), true)),
                ..conn(0, 5, 500, 500, Some(tcp(10, 10, true)))
            },
            // its TCP_INFO was missing on one side: bytes counted, segments not
            ConnRecord {
                close: Some(closed(24, 0, None, false)),
                ..conn(0, 5, 500, 500, None)
            },
            ConnRecord {
                close: Some(closed(40, 31, Some((2, 4)), true)),
                ..conn(0, 5, 500, 500, Some(tcp(10, 10, true)))
            },
            // not closed by us (the run ended with it open)
            conn(0, 5, 500, 500, None),
        ];
        let w = report(&r).wire;
        // 3 closes, 2 drained; 40 + 24 + 40 B out, 30 + 0 + 31 B in; 3 + 2 segments out, 2 + 4 in
        assert_eq!((w.close.connections, w.close.drained), (3, 2));
        assert_eq!((w.close.bytes_out, w.close.bytes_in), (104, 61));
        assert_eq!((w.close.segments_out, w.close.segments_in), (5, 6));
        // the close is not in the connections' own figures
        assert_eq!((w.bytes_out, w.segments_out), (2000, 20));
    }

    #[test]
    fn layer_totals_subtract_h2_setup_per_request_on_wire() {
        let dir = |setup_bytes, frame_header_bytes| H2Dir {
            setup_bytes,
            frame_header_bytes,
            frames: [(
                "HEADERS",
                FrameTally {
                    count: 10,
                    bytes: 300,
                },
            )]
            .into(),
            ..H2Dir::default()
        };
        let h2 = H2Layers {
            out: H2Dir {
                preface_bytes: 24,
                ..dir(100, 180)
            },
            inbound: dir(60, 270),
        };
        let mut r = run(Proto::Grpc);
        // two connections of 10 requests, 1100 B out and 700 B in each
        r.stats.conns = vec![
            ConnRecord {
                h2: Some(h2.clone()),
                ..conn(0, 10, 1100, 700, None)
            },
            ConnRecord {
                h2: Some(h2.clone()),
                ..conn(0, 10, 1100, 700, None)
            },
        ];
        let l = report(&r).wire.layers.expect("h2 layers");
        assert!(l.http1.is_none());
        // setup 2 × 100 out, 2 × 60 in
        assert_eq!((l.setup_bytes_out, l.setup_bytes_in), (200, 120));
        // (2200 - 200) / 20 requests on wire; (1400 - 120) / 20
        assert_eq!(
            (
                l.bytes_out_per_request_after_setup,
                l.bytes_in_per_request_after_setup
            ),
            (100.0, 64.0)
        );
        let t = l.h2.expect("h2 summed");
        assert_eq!((t.out.preface_bytes, t.out.frame_header_bytes), (48, 360));
        assert_eq!(
            (t.inbound.preface_bytes, t.inbound.frame_header_bytes),
            (0, 540)
        );
        assert_eq!(
            t.out.frames["HEADERS"],
            FrameTally {
                count: 20,
                bytes: 600
            }
        );

        // HTTP/1.1 has no setup: socket bytes / requests on wire
        let layers = Http1Layers {
            requests: 10,
            responses: 10,
            request_head_bytes: 1000,
            request_body_bytes: 200,
            response_head_bytes: 1500,
            response_body_bytes: 400,
            chunk_framing_bytes: 50,
        };
        let mut r = run(Proto::Http);
        r.stats.conns = vec![
            ConnRecord {
                http1: Some(layers.clone()),
                ..conn(0, 10, 1200, 1950, None)
            },
            ConnRecord {
                http1: Some(layers.clone()),
                ..conn(1, 10, 1200, 1950, None)
            },
        ];
        let l = report(&r).wire.layers.expect("http1 layers");
        assert!(l.h2.is_none());
        assert_eq!((l.setup_bytes_out, l.setup_bytes_in), (0, 0));
        // 2400 / 20, 3900 / 20
        assert_eq!(
            (
                l.bytes_out_per_request_after_setup,
                l.bytes_in_per_request_after_setup
            ),
            (120.0, 195.0)
        );
        assert_eq!(
            l.http1,
            Some(Http1Layers {
                requests: 20,
                responses: 20,
                request_head_bytes: 2000,
                request_body_bytes: 400,
                response_head_bytes: 3000,
                response_body_bytes: 800,
                chunk_framing_bytes: 100,
            })
        );
    }

    #[test]
    fn open_loop_rate_lag_and_uncorrected_latency() {
        let mut r = run(Proto::Grpc);
        r.rate = Some(100.0);
        r.pacer_timer = Some("timerfd");
        r.elapsed = Duration::from_secs(2);
        let st = &mut r.stats;
        // 160 measured (140 ok + 20 failed), 150 written: 10 expired before a client was free
        (st.ok, st.failed, st.written) = (140, 20, 150);
        (st.expired, st.late) = (10, 12);
        // 100 sends lagged 50 ms in all, at most 3 ms
        st.lagged_sends = 100;
        st.send_lag_sum = Duration::from_millis(50);
        st.max_send_lag = Duration::from_millis(3);
        for ms in 1..=4 {
            st.record_uncorrected(Duration::from_millis(ms));
        }
        let o = report(&r).open_loop.expect("open loop");
        assert_eq!(o.target_rate, 100.0);
        // 150 written / 2 s (count / 2 s would be 80)
        assert_eq!(o.achieved_rate, 75.0);
        assert_eq!((o.expired_sends, o.late_sends), (10, 12));
        assert_eq!(o.timer, Some("timerfd"));
        // 50 ms / 100 sends
        assert_eq!((o.average_send_lag_ms, o.max_send_lag_ms), (0.5, 3.0));
        // uncorrected 1, 2, 3, 4 ms: average 2.5, slowest 4
        assert_eq!(
            (o.uncorrected_average_ms, o.uncorrected_slowest_ms),
            (2.5, 4.0)
        );
        // of 4: p10 and p25 the 1st, p50 the 2nd, p75 the 3rd, p90 and up the 4th
        hdr_all(
            &o.uncorrected_distribution,
            [1.0, 1.0, 2.0, 3.0, 4.0, 4.0, 4.0, 4.0, 4.0],
        );

        // nothing lagged, nothing uncorrected, a zero window: zeros, not NaN
        let mut r = run(Proto::Grpc);
        r.rate = Some(100.0);
        r.elapsed = Duration::ZERO;
        r.stats.written = 10;
        let o = report(&r).open_loop.expect("open loop");
        assert_eq!((o.achieved_rate, o.average_send_lag_ms), (0.0, 0.0));
        assert_eq!(
            (o.uncorrected_average_ms, o.uncorrected_slowest_ms),
            (0.0, 0.0)
        );
        assert!(o.uncorrected_distribution.is_empty());
        assert_eq!(o.timer, None);

        // closed loop: no block at all
        assert!(report(&run(Proto::Grpc)).open_loop.is_none());
    }

    #[test]
    fn per_endpoint_in_endpoint_order_with_roles() {
        let mut r = run(Proto::Http);
        r.elapsed = Duration::from_secs(2);
        // endpoint 0: 10 OK of 1..=10 ms and 2 failed; endpoint 1: 4 failed
        ok_ms(&mut r.stats, 1..=10);
        r.stats
            .record_failures(at(0, 0), 2, Failure::new(FailureKind::Timeout));
        r.stats
            .record_failures(at(1, 0), 4, Failure::new(FailureKind::Connect));
        let roles = ["leader".to_string()];
        let rep = RunReport::from_run(&r, &endpoints(), &roles, false);
        let [e0, e1] = &rep.per_endpoint[..] else {
            panic!("two endpoints: {:?}", rep.per_endpoint);
        };
        assert_eq!(e0.endpoint, "http://127.0.0.1:2379");
        assert_eq!(e0.role.as_deref(), Some("leader"));
        assert_eq!((e0.count, e0.ok, e0.failed), (12, 10, 2));
        // 12 / 2 s
        assert_eq!(e0.requests_per_sec, 6.0);
        // of 10: p50 the 5th, p90 the 9th, p99 the 10th
        hdr(e0.p50_ms, 5.0);
        hdr(e0.p90_ms, 9.0);
        hdr(e0.p99_ms, 10.0);
        assert_eq!(e1.endpoint, "http://[::1]:2379");
        // no role known for it
        assert_eq!(e1.role, None);
        assert_eq!((e1.count, e1.ok, e1.failed), (4, 0, 4));
        assert_eq!(e1.requests_per_sec, 2.0);
        // no successful request: no latency
        assert_eq!((e1.p50_ms, e1.p90_ms, e1.p99_ms), (0.0, 0.0, 0.0));
    }

    #[test]
    fn timeline_buckets_by_width() {
        // latencies below 256 µs are exact in the timeline's 2-significant-digit histogram
        let bucket = |ok, failed, us: &[u64]| {
            let mut b = crate::stats::Bucket {
                ok,
                failed,
                ..Default::default()
            };
            for &v in us {
                b.hist.record(v).expect("within the bounds");
            }
            b
        };
        let mut r = run(Proto::Http);
        // 2 s buckets (a long run's timeline after one coarsening)
        r.stats.timeline = Timeline {
            width_s: 2,
            buckets: vec![
                bucket(6, 2, &[100, 100, 100, 200, 200, 200]),
                bucket(0, 4, &[]),
                bucket(2, 0, &[50, 250]),
            ],
        };
        let t = report(&r).timeline;
        let rows: Vec<(u64, u64, u64, u64, f64)> = t
            .iter()
            .map(|p| (p.t_s, p.width_s, p.ok, p.errors, p.requests_per_sec))
            .collect();
        // starts 0, 2, 4 s; (ok + errors) / 2 s
        assert_eq!(
            rows,
            [(0, 2, 6, 2, 4.0), (2, 2, 0, 4, 2.0), (4, 2, 2, 0, 1.0)]
        );
        // of 6: p50 the 3rd (100 µs), p99 the 6th (200 µs)
        assert_eq!((t[0].p50_ms, t[0].p99_ms), (0.1, 0.2));
        // errors only: no latency
        assert_eq!((t[1].p50_ms, t[1].p99_ms), (0.0, 0.0));
        // of 2: p50 the 1st, p99 the 2nd
        assert_eq!((t[2].p50_ms, t[2].p99_ms), (0.05, 0.25));
    }

    #[test]
    fn connect_times_of_every_connection() {
        let mut r = run(Proto::Http);
        r.stats.conns = [100, 200, 300, 400]
            .into_iter()
            .map(|us| ConnRecord {
                connect_us: us,
                ..conn(0, 1, 0, 0, None)
            })
            .collect();
        let c = report(&r).connect_times.expect("four connections");
        assert_eq!(c.connections, 4);
        // (100 + 200 + 300 + 400) / 4 µs
        assert_eq!(c.average_ms, 0.25);
        assert_eq!((c.fastest_ms, c.slowest_ms), (0.1, 0.4));
        // marks 0.1 ms to 0.4 ms by 0.03
        let marks: Vec<f64> = c.histogram.iter().map(|b| b.mark_ms).collect();
        assert_eq!(
            marks,
            [
                0.1, 0.13, 0.16, 0.19, 0.22, 0.25, 0.28, 0.31, 0.34, 0.37, 0.4
            ]
        );
        // 100 µs under 0.1, 200 under 0.22, 300 under 0.31, 400 under 0.4 (these four sit in
        // the middle of their HDR buckets, so the first mark does count the fastest)
        assert_eq!(counts(&c.histogram), [1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1]);
        // of 4: p10 and p25 the 1st, p50 the 2nd, p75 the 3rd, p90 and up the 4th
        hdr_all(
            &c.distribution,
            [0.1, 0.1, 0.2, 0.3, 0.4, 0.4, 0.4, 0.4, 0.4],
        );
    }

    #[test]
    fn memory_per_connection_and_per_request_in_flight() {
        let mut r = run(Proto::Grpc);
        (r.conns, r.clients) = (4, 16);
        r.memory = Some(Memory {
            rss_baseline_kib: 10_000,
            rss_connected_kib: 12_000,
            rss_steady_kib: 14_000,
            peak_rss_kib: 15_000,
        });
        let m = RunReport::from_run(&r, &endpoints(), &[], true)
            .memory
            .expect("memory");
        assert_eq!(
            (
                m.rss_baseline_kib,
                m.rss_connected_kib,
                m.rss_steady_kib,
                m.peak_rss_kib
            ),
            (10_000, 12_000, 14_000, 15_000)
        );
        // (14_000 - 10_000) KiB × 1024 = 4_096_000 B; / 4 connections; / 16 clients
        assert_eq!(m.rss_per_connection_bytes, 1_024_000.0);
        assert_eq!(m.rss_per_in_flight_bytes, 256_000.0);
        assert!(m.includes_server);

        // RSS fell below the baseline: nothing grew (no wrap-around)
        r.memory = Some(Memory {
            rss_steady_kib: 9_000,
            ..r.memory.expect("set above")
        });
        let m = report(&r).memory.expect("memory");
        assert_eq!(
            (m.rss_per_connection_bytes, m.rss_per_in_flight_bytes),
            (0.0, 0.0)
        );
        assert!(!m.includes_server);
    }

    /// HTTP/1.1: 1000 requests of 2 ms over 4 connections in 1 s; gRPC: 2000 of 1 ms over 1.
    /// Per request: HTTP/1.1 100 B out, 200 B in, 2 + 2 segments, 20 µs CPU, 5 syscalls,
    /// 1 context switch, 40 µs server CPU; gRPC 50 B, 100 B, 0.5 + 1 segments, 10 µs, 2, 0.25,
    /// 10 µs.
    fn ratio_runs() -> [ProtoRun; 2] {
        let mut h = run(Proto::Http);
        ok(&mut h.stats, 1000, Duration::from_millis(2));
        h.stats.written = 1000;
        h.stats.conns = (0..4)
            .map(|_| conn(0, 250, 25_000, 50_000, Some(tcp(500, 500, true))))
            .collect();
        h.cost.cpu.user_us = 20_000;
        h.cost.kernel.syscalls = Some(5000);
        h.cost.kernel.context_switches = Some(1000);
        h.server_cpu = Some(Ok(Duration::from_millis(40)));

        let mut g = run(Proto::Grpc);
        ok(&mut g.stats, 2000, Duration::from_millis(1));
        g.stats.written = 2000;
        g.stats.conns = vec![conn(0, 2000, 100_000, 200_000, Some(tcp(1000, 2000, true)))];
        g.cost.cpu.user_us = 20_000;
        g.cost.kernel.syscalls = Some(4000);
        g.cost.kernel.context_switches = Some(500);
        g.server_cpu = Some(Ok(Duration::from_millis(20)));
        [h, g]
    }

    fn etcd_put_config() -> Config {
        use clap::Parser;
        crate::cli::Cli::try_parse_from(["wirebench", "etcd", "put", "-n", "3000"])
            .expect("valid flags")
            .into_config()
            .expect("a run configuration")
    }

    #[test]
    fn ratios_are_grpc_over_http() {
        let cfg = etcd_put_config();
        let rep = Report::new(&cfg, &cfg.endpoints, &[], &ratio_runs(), false);
        assert_eq!(rep.schema, SCHEMA);
        assert_eq!(rep.endpoints, ["http://127.0.0.1:2379"]);
        assert_eq!(
            (rep.settings.total_requests, rep.settings.duration_s),
            (Some(3000), None)
        );
        assert_eq!(rep.runs.len(), 2);
        let x = rep.ratios.expect("both protocols ran");
        // 2000 / 1000 req/s
        assert_eq!(x.requests_per_sec, Some(2.0));
        // 1 ms / 2 ms (both read from the histogram)
        hdr(x.latency_p50.expect("p50"), 0.5);
        hdr(x.latency_p99.expect("p99"), 0.5);
        // 1 / 4 connections
        assert_eq!(x.connections, Some(0.25));
        // 50 / 100 B out, 100 / 200 B in
        assert_eq!(x.bytes_out_per_request, Some(0.5));
        assert_eq!(x.bytes_in_per_request, Some(0.5));
        // segments 0.5 / 2 out, 1 / 2 in
        assert_eq!(x.segments_out_per_request, Some(0.25));
        assert_eq!(x.segments_in_per_request, Some(0.5));
        // 2 / 5 syscalls, 0.25 / 1 context switches, 10 / 20 µs client, 10 / 40 µs server
        assert_eq!(x.syscalls_per_request, Some(0.4));
        assert_eq!(x.context_switches_per_request, Some(0.25));
        assert_eq!(x.client_cpu_us_per_request, Some(0.5));
        assert_eq!(x.server_cpu_us_per_request, Some(0.25));
        // on the wire (52 B of headers a segment): HTTP/1.1 out (100_000 + 2000 × 52) / 1000
        // = 204, in (200_000 + 2000 × 52) / 1000 = 304; gRPC out (100_000 + 1000 × 52) / 2000
        // = 76, in (200_000 + 2000 × 52) / 2000 = 152
        assert_eq!(x.wire_bytes_out_per_request, Some(76.0 / 204.0));
        assert_eq!(x.wire_bytes_in_per_request, Some(0.5));
    }

    #[test]
    fn ratios_are_null_without_a_figure_on_either_side() {
        let cfg = etcd_put_config();
        let [mut h, mut g] = ratio_runs();
        // gRPC's kernel counts unavailable; HTTP/1.1's context switches unavailable
        g.cost.kernel.syscalls = None;
        h.cost.kernel.context_switches = None;
        // HTTP/1.1 server CPU measured as 0, and no TCP_INFO on its connections
        h.server_cpu = Some(Ok(Duration::ZERO));
        for c in &mut h.stats.conns {
            c.tcp = None;
        }
        let x = Report::new(&cfg, &cfg.endpoints, &[], &[h, g], false)
            .ratios
            .expect("both protocols ran");
        assert_eq!(x.syscalls_per_request, None);
        assert_eq!(x.context_switches_per_request, None);
        // a zero HTTP/1.1 figure has no ratio (rather than infinity)
        assert_eq!(x.server_cpu_us_per_request, None);
        assert_eq!(x.segments_out_per_request, None);
        assert_eq!(x.wire_bytes_out_per_request, None);
        // the others stand
        assert_eq!(x.requests_per_sec, Some(2.0));
        assert_eq!(x.client_cpu_us_per_request, Some(0.5));

        // one protocol alone: no ratios
        let [h, _] = ratio_runs();
        assert!(
            Report::new(&cfg, &cfg.endpoints, &[], &[h], false)
                .ratios
                .is_none()
        );
    }
}
