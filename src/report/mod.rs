//! Turns merged measurements into report figures (one derivation, shared by every format).

pub mod compare;
pub mod svg;
pub mod text;

use serde::Serialize;
use serde_json::Value;

use crate::config::{Config, Stop};
use crate::engine::ProtoRun;
use crate::stats::{ConnRecord, H2Layers, Http1Layers, Latencies, TlsLayer};

/// Version of the JSON layout below; bumped on any incompatible change (docs/json-schema.md).
pub const SCHEMA: &str = "wirebench.report.v1";

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
    /// measured requests / measured window (the window ends with the last response)
    pub achieved_rate: f64,
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
    pub rss_before_kib: u64,
    pub rss_connected_kib: u64,
    pub peak_rss_kib: u64,
    /// (RSS with every connection open - RSS before) / connections at start: client state per
    /// connection (buffers, TLS, h2, tasks), worker threads' stacks included
    pub rss_per_connection_bytes: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// measured requests: ok + failed (warmup excluded)
    pub count: u64,
    pub ok: u64,
    pub failed: u64,
    pub warmup_requests: u64,
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

/// Socket-level cost, from the per-connection ledgers and TCP_INFO.
#[derive(Debug, Clone, Serialize)]
pub struct Wire {
    pub connections_opened: u64,
    pub reconnects: u64,
    /// requests written to a socket (warmup and failed ones included): the divisor below
    pub requests_on_wire: u64,
    pub requests_per_connection: f64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub bytes_out_per_request: f64,
    pub bytes_in_per_request: f64,
    pub write_calls_per_request: f64,
    pub read_calls_per_request: f64,
    pub write_would_block: u64,
    pub read_would_block: u64,
    pub segments_out_per_request: f64,
    pub segments_in_per_request: f64,
    pub data_segments_out_per_request: f64,
    pub data_segments_in_per_request: f64,
    pub retransmits: u64,
    /// connections whose TCP_INFO could not be read (their segments are not counted)
    pub connections_without_tcp_info: u64,
    pub client_cpu_user_us: u64,
    pub client_cpu_sys_us: u64,
    /// worker threads' CPU over the measured window / measured requests
    pub client_cpu_us_per_request: f64,
    /// the built-in server's CPU over the measured window / measured requests (when in-process)
    pub server_cpu_us_per_request: Option<f64>,
    /// IP + TCP headers, estimated: segments x (IP header + 20 + 12 with timestamps)
    pub ip_tcp_header_bytes_out: u64,
    pub ip_tcp_header_bytes_in: u64,
    /// (socket bytes + estimated IP/TCP headers) / requests on wire
    pub wire_bytes_out_per_request: f64,
    pub wire_bytes_in_per_request: f64,
    /// protocol layers summed over all connections (absent with --ledger off)
    pub layers: Option<LayerTotals>,
    /// TLS summed over all connections (absent without TLS)
    pub tls: Option<TlsLayer>,
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
    pub syscalls_per_request: Option<f64>,
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

/// Failures by kind and message, most frequent first.
pub fn error_counts(
    errors: &std::collections::HashMap<crate::stats::Failure, u64>,
) -> Vec<ErrorCount> {
    let mut v: Vec<ErrorCount> = errors
        .iter()
        .map(|(f, &count)| ErrorCount {
            kind: f.kind,
            message: f.detail.as_deref().map(str::to_string),
            count,
        })
        .collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then(a.kind.cmp(b.kind)));
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
            st.count() as f64 / secs
        } else {
            0.0
        },
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

fn memory(run: &ProtoRun) -> Option<MemoryReport> {
    let m = run.memory?;
    Some(MemoryReport {
        rss_before_kib: m.rss_before_kib,
        rss_connected_kib: m.rss_connected_kib,
        peak_rss_kib: m.peak_rss_kib,
        rss_per_connection_bytes: per(
            m.rss_connected_kib.saturating_sub(m.rss_before_kib) * 1024,
            run.conns as u64,
        ),
    })
}

impl RunReport {
    /// `endpoints`: the run's endpoints; `roles`: their etcd roles when discovered.
    pub fn from_run(
        run: &ProtoRun,
        endpoints: &[crate::config::Endpoint],
        roles: &[String],
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
            wire: wire(run, &ipv6),
            open_loop: open_loop(run),
            per_endpoint: per_endpoint(run, &urls, roles),
            timeline: timeline(run),
            connect_times: connect_times(&st.conns),
            memory: memory(run),
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
/// the latencies at or below its mark (HDR-bucket resolution: 0.1%).
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
        let value = (lat.hist.median_equivalent(v.value_iterated_to()) as f64).clamp(lo, hi);
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
    let tcp_sum = |f: fn(&crate::net::TcpInfo) -> u64| {
        conns
            .iter()
            .filter_map(|c| c.tcp.as_ref())
            .map(f)
            .sum::<u64>()
    };
    let requests = sum(|c| c.requests);
    let measured = run.stats.count();
    let headers = |out: bool| -> u64 {
        conns
            .iter()
            .filter_map(|c| {
                let t = c.tcp.as_ref()?;
                let v6 = ipv6.get(c.endpoint).copied().unwrap_or(false);
                Some(ip_tcp_header_bytes(
                    if out { t.segs_out } else { t.segs_in },
                    v6,
                    t.timestamps,
                ))
            })
            .sum()
    };
    let (hdr_out, hdr_in) = (headers(true), headers(false));
    Wire {
        ip_tcp_header_bytes_out: hdr_out,
        ip_tcp_header_bytes_in: hdr_in,
        wire_bytes_out_per_request: per(sum(|c| c.bytes_out) + hdr_out, requests),
        wire_bytes_in_per_request: per(sum(|c| c.bytes_in) + hdr_in, requests),
        layers: layer_totals(conns, requests),
        tls: conns
            .iter()
            .filter_map(|c| c.tls.as_ref())
            .fold(None, |acc: Option<TlsLayer>, t| {
                let mut a = acc.unwrap_or_default();
                a.add(t);
                Some(a)
            }),
        connections_opened: conns.len() as u64,
        reconnects: run.stats.reconnects,
        requests_on_wire: requests,
        requests_per_connection: per(requests, conns.len() as u64),
        bytes_out: sum(|c| c.bytes_out),
        bytes_in: sum(|c| c.bytes_in),
        bytes_out_per_request: per(sum(|c| c.bytes_out), requests),
        bytes_in_per_request: per(sum(|c| c.bytes_in), requests),
        write_calls_per_request: per(sum(|c| c.write_calls), requests),
        read_calls_per_request: per(sum(|c| c.read_calls), requests),
        write_would_block: sum(|c| c.write_would_block),
        read_would_block: sum(|c| c.read_would_block),
        segments_out_per_request: per(tcp_sum(|t| t.segs_out), requests),
        segments_in_per_request: per(tcp_sum(|t| t.segs_in), requests),
        data_segments_out_per_request: per(tcp_sum(|t| t.data_segs_out), requests),
        data_segments_in_per_request: per(tcp_sum(|t| t.data_segs_in), requests),
        retransmits: tcp_sum(|t| t.retransmits),
        connections_without_tcp_info: conns.iter().filter(|c| c.tcp.is_none()).count() as u64,
        client_cpu_user_us: run.cpu.user_us,
        client_cpu_sys_us: run.cpu.sys_us,
        client_cpu_us_per_request: per(run.cpu.total_us(), measured),
        server_cpu_us_per_request: run.server_cpu.map(|d| per(d.as_micros() as u64, measured)),
    }
}

impl Report {
    pub fn new(cfg: &Config, runs: &[ProtoRun]) -> Report {
        let runs: Vec<RunReport> = runs
            .iter()
            .map(|r| RunReport::from_run(r, &cfg.endpoints, &cfg.roles))
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
                syscalls_per_request: ratio(
                    g.wire.write_calls_per_request + g.wire.read_calls_per_request,
                    h.wire.write_calls_per_request + h.wire.read_calls_per_request,
                ),
                client_cpu_us_per_request: ratio(
                    g.wire.client_cpu_us_per_request,
                    h.wire.client_cpu_us_per_request,
                ),
                server_cpu_us_per_request: match (
                    g.wire.server_cpu_us_per_request,
                    h.wire.server_cpu_us_per_request,
                ) {
                    (Some(g), Some(h)) => ratio(g, h),
                    _ => None,
                },
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
            workload: cfg.workload.describe(),
            endpoints: cfg.endpoints.iter().map(|e| e.url.clone()).collect(),
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
