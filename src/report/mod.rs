//! Turns merged measurements into report figures (one derivation, shared by every format).

pub mod capacity;
pub mod compare;
mod derive;
pub mod hdr;
pub mod html;
pub mod link;
pub mod merge;
mod parts;
pub mod prometheus;
pub mod quic;
pub mod show;
pub mod svg;
pub mod text;
pub mod verdict;
pub mod watch;

use serde::Serialize;
use serde_json::Value;

use crate::config::{Config, Endpoint, Stop};
use crate::stats::IoCalls;
use crate::stats::ProtoRun;
use crate::stats::{ConnRecord, Duplex, EndpointStats, Http1Counts, Latencies, TlsCounts};
use wirebench_wire::h2::counts::H2Counts;

use derive::ratio;
pub use derive::{error_counts, ip_tcp_header_bytes, percentile_in, plus};
use parts::sum_known;
pub use parts::{
    Bucket, ClassReport, CloseTotals, CompactionReport, ConnectTimes, ConnectionSetup, Cost,
    EndpointReport, ErrorCount, FailoverReport, FailoverRow, HandshakeCost, LayerTotals,
    LeaseReport, LostWrite, MemoryReport, OpenLoop, Percentile, RequestLogReport, StageRow,
    StatusCount, Streaming, Summary, TimelinePoint, VerifyReport, Window, Wire,
};

/// Version of the JSON layout below; bumped on any incompatible change (docs/json-schema.md).
/// A figure computed over a denominator or a sample is `Option<f64>`: null where nothing was
/// measured (no request written, no connection, no latency, a window of no length), never 0.
pub const SCHEMA: &str = "wirebench.report.v4";

/// Percentiles of the latency distribution, as etcd's benchmark and ghz print them (plus 99.99).
pub const PERCENTILES: [f64; 9] = [10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99];

#[derive(Debug, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub version: &'static str,
    pub workload: String,
    pub endpoints: Vec<String>,
    /// `--agent`: this process's name in a distributed run (null in a merged report, whose
    /// runs list their agents)
    pub agent: Option<String>,
    pub settings: Settings,
    pub runs: Vec<RunReport>,
    /// present when HTTP/1.1 and gRPC ran: gRPC figure divided by HTTP/1.1 figure
    pub ratios: Option<Ratios>,
    /// present when HTTP/1.1 and plain HTTP/2 ran: HTTP/2 figure divided by HTTP/1.1 figure
    /// (what h2 framing and multiplexing change, the JSON bodies the same)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratios_h2: Option<Ratios>,
    /// present when plain HTTP/2 and gRPC ran: gRPC figure divided by HTTP/2 figure (protobuf
    /// and gRPC framing against JSON, on the same h2 client)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratios_grpc_h2: Option<Ratios>,
    /// present when HTTP/1.1 and HTTP/3 ran: HTTP/3 figure divided by HTTP/1.1 figure
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratios_h3: Option<Ratios>,
    /// present when plain HTTP/2 and HTTP/3 ran: HTTP/3 figure divided by HTTP/2 figure (QUIC
    /// and QPACK against TCP, TLS and HPACK, the requests the same)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratios_h3_h2: Option<Ratios>,
    /// text only: print the per-connection table
    #[serde(skip)]
    pub per_conn_table: bool,
}

#[derive(Debug, Serialize)]
pub struct Settings {
    pub clients: usize,
    pub conns: usize,
    /// HTTP/1.1 requests in flight per connection (`--pipeline`)
    pub pipeline: usize,
    pub threads: usize,
    /// -n; absent in duration mode
    pub total_requests: Option<u64>,
    /// -z; absent in total mode
    pub duration_s: Option<f64>,
    pub warmup_s: f64,
    pub timeout_s: f64,
    /// the h2 client gRPC runs on (`--h2-client`): "wire" or "h2"
    pub h2_client: &'static str,
    /// how the wire client encodes request headers (`--hpack`): "index", "literal", "never"
    pub hpack: &'static str,
    /// `--stages` / `--client-stages`
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stages: Option<StagesSetting>,
    /// `--interval`, seconds
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_s: Option<f64>,
}

/// `--stages` / `--client-stages` as the run used them.
#[derive(Debug, Serialize)]
pub struct StagesSetting {
    /// "rate" (`--stages`, requests/s) or "clients" (`--client-stages`)
    pub of: &'static str,
    pub stages: Vec<StageSetting>,
}

#[derive(Debug, Serialize)]
pub struct StageSetting {
    pub duration_s: f64,
    pub target: f64,
}

#[derive(Debug, Serialize)]
pub struct RunReport {
    pub proto: &'static str,
    pub title: &'static str,
    pub clients: usize,
    /// connections opened at start
    pub connections: usize,
    /// HTTP/1.1: the most requests in flight per connection (`--pipeline`; 1 unpipelined);
    /// null on h2, which multiplexes
    pub pipeline: Option<usize>,
    pub threads: usize,
    pub interrupted: bool,
    /// the measured window on the wall clock
    pub window: Window,
    pub summary: Summary,
    pub histogram: Vec<Bucket>,
    pub latency_distribution: Vec<Percentile>,
    /// every latency histogram of the run, HdrHistogram V2 compressed, base64, in ns
    pub histograms: hdr::Histograms,
    pub status_distribution: Vec<StatusCount>,
    pub error_distribution: Vec<ErrorCount>,
    /// the measured window's cost per request written in it
    pub cost: Cost,
    pub wire: Wire,
    /// open loop (`--rate`) only
    pub open_loop: Option<OpenLoop>,
    /// server-streaming calls only (`wirebench grpc` on such a method)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streaming: Option<Streaming>,
    /// `--requests-per-conn` only: what opening connections cost the requests
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_setup: Option<ConnectionSetup>,
    /// outcomes by endpoint, in `--endpoints` order (after `--target` selection)
    pub per_endpoint: Vec<EndpointReport>,
    /// a merged report only: one row per agent's run
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<merge::AgentRow>>,
    /// etcd on a cluster: the clients moved off a member that was gone or no longer led
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failover: Option<FailoverReport>,
    /// etcd `--verify`: the acknowledged writes looked up in etcd's history
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<VerifyReport>,
    /// etcd txn-mixed: the measured requests of each class (read, write) apart; the summary
    /// covers them all
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classes: Option<Vec<ClassReport>>,
    /// etcd `--compact-interval`: what the compactor did beside the load
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction: Option<CompactionReport>,
    /// etcd lease-keepalive: the leases the clients kept alive, granted before the run and
    /// revoked after it
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leases: Option<LeaseReport>,
    /// `--link`: what the emulated path applied under this stack's run
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<link::LinkSection>,
    /// `--stages` / `--client-stages` only: one row per stage with a duration, outcomes by
    /// the stage they completed in
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stages: Option<Vec<StageRow>>,
    /// `--find-max`: the capacity search, its steps and answer (the rest of the run is its
    /// last confirmation that met at the answer, else the step that met there)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<capacity::Capacity>,
    /// outcomes by completion time from the start of the measured window
    pub timeline: Vec<TimelinePoint>,
    /// TCP connect times of the connections opened (SYN to established)
    pub connect_times: Option<ConnectTimes>,
    pub memory: Option<MemoryReport>,
    pub per_connection: Vec<ConnRecord>,
    pub sample_response: Option<Value>,
    /// `--log-requests`: the rows this run logged and how long its threads waited for the
    /// writer
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_log: Option<RequestLogReport>,
    /// the latency percentile spectrum drawn by the charts (HDR's percentile iteration up to
    /// 99.999); open loop: corrected
    #[serde(skip)]
    pub spectrum: Vec<Percentile>,
    /// open loop: the same from the actual send times
    #[serde(skip)]
    pub uncorrected_spectrum: Vec<Percentile>,
}

/// The ratios a side-by-side table shows for `n` stacks in run order (HTTP/1.1, HTTP/2,
/// gRPC, HTTP/3): (numerator, denominator) indices, each later stack over each earlier one.
pub fn ratio_pairs(n: usize) -> &'static [(usize, usize)] {
    match n {
        0 | 1 => &[],
        2 => &[(1, 0)],
        3 => &[(1, 0), (2, 0), (2, 1)],
        _ => &[(1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2)],
    }
}

/// One stack's headline figures divided by another's (gRPC / HTTP/1.1 in `ratios`).
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
    /// IP packets per request: TCP segments, or UDP datagrams for HTTP/3
    pub packets_out_per_request: Option<f64>,
    pub packets_in_per_request: Option<f64>,
    /// `--find-max`: the capacity answers' ratio (null without a search, or an answer)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_rps: Option<f64>,
}

impl Ratios {
    /// `num`'s figures over `den`'s.
    fn of(num: &RunReport, den: &RunReport) -> Ratios {
        Ratios {
            requests_per_sec: ratio(num.summary.requests_per_sec, den.summary.requests_per_sec),
            latency_p50: ratio(num.percentile_ms(50.0), den.percentile_ms(50.0)),
            latency_p99: ratio(num.percentile_ms(99.0), den.percentile_ms(99.0)),
            connections: ratio(
                Some(num.wire.connections_opened as f64),
                Some(den.wire.connections_opened as f64),
            ),
            bytes_out_per_request: ratio(
                num.wire.bytes_out_per_request,
                den.wire.bytes_out_per_request,
            ),
            bytes_in_per_request: ratio(
                num.wire.bytes_in_per_request,
                den.wire.bytes_in_per_request,
            ),
            segments_out_per_request: ratio(
                num.wire.segments_out_per_request,
                den.wire.segments_out_per_request,
            ),
            segments_in_per_request: ratio(
                num.wire.segments_in_per_request,
                den.wire.segments_in_per_request,
            ),
            syscalls_per_request: ratio(
                num.cost.syscalls_per_request,
                den.cost.syscalls_per_request,
            ),
            context_switches_per_request: ratio(
                num.cost.context_switches_per_request,
                den.cost.context_switches_per_request,
            ),
            client_cpu_us_per_request: ratio(
                num.cost.client_cpu_us_per_request,
                den.cost.client_cpu_us_per_request,
            ),
            server_cpu_us_per_request: ratio(
                num.cost.server_cpu_us_per_request,
                den.cost.server_cpu_us_per_request,
            ),
            wire_bytes_out_per_request: ratio(
                num.wire.wire_bytes_out_per_request,
                den.wire.wire_bytes_out_per_request,
            ),
            wire_bytes_in_per_request: ratio(
                num.wire.wire_bytes_in_per_request,
                den.wire.wire_bytes_in_per_request,
            ),
            packets_out_per_request: ratio(
                num.wire.packets_per_request().0,
                den.wire.packets_per_request().0,
            ),
            packets_in_per_request: ratio(
                num.wire.packets_per_request().1,
                den.wire.packets_per_request().1,
            ),
            capacity_rps: ratio(
                num.capacity.as_ref().and_then(|c| c.answer_rps),
                den.capacity.as_ref().and_then(|c| c.answer_rps),
            ),
        }
    }

    /// Every ratio a report carries, from its runs: (gRPC / HTTP/1.1, HTTP/2 / HTTP/1.1,
    /// gRPC / HTTP/2, HTTP/3 / HTTP/1.1, HTTP/3 / HTTP/2), each where both ran.
    fn all(runs: &[RunReport]) -> [Option<Ratios>; 5] {
        let find = |p: &str| runs.iter().find(|r| r.proto == p);
        let (http, h2, grpc, h3) = (find("http"), find("h2"), find("grpc"), find("h3"));
        let pair = |num: Option<&RunReport>, den: Option<&RunReport>| {
            num.zip(den).map(|(num, den)| Ratios::of(num, den))
        };
        [
            pair(grpc, http),
            pair(h2, http),
            pair(grpc, h2),
            pair(h3, http),
            pair(h3, h2),
        ]
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
            .map(|r| {
                let mut report = RunReport::from_run(r, endpoints, roles, includes_server);
                report.window.start_at =
                    cfg.load.start_at.map(crate::config::clock::format_rfc3339);
                report.window.start_late_ms = cfg.load.start_at.map(|at| {
                    r.started_at
                        .duration_since(at)
                        .map_or(0.0, |late| late.as_secs_f64() * 1e3)
                });
                if let Some(st) = &cfg.load.stages {
                    derive::staged(&mut report, r, st);
                }
                report
            })
            .collect();
        let [ratios, ratios_h2, ratios_grpc_h2, ratios_h3, ratios_h3_h2] = Ratios::all(&runs);
        let (total_requests, duration_s) = match cfg.load.stop {
            Stop::Total(n) => (Some(n), None),
            Stop::Duration(d) => (None, Some(d.as_secs_f64())),
        };
        Report {
            schema: SCHEMA,
            version: env!("CARGO_PKG_VERSION"),
            workload: cfg.spec.describe(),
            endpoints: endpoints.iter().map(|e| e.url.clone()).collect(),
            agent: cfg.agent.clone(),
            settings: Settings {
                clients: cfg.load.clients,
                conns: cfg.load.conns,
                pipeline: cfg.load.pipeline,
                threads: cfg.load.threads,
                total_requests,
                duration_s,
                warmup_s: cfg.load.warmup.as_secs_f64(),
                timeout_s: cfg.load.timeout.as_secs_f64(),
                h2_client: cfg.h2.client.as_str(),
                hpack: cfg.h2.hpack.as_str(),
                stages: cfg.load.stages.as_ref().map(|st| StagesSetting {
                    of: match st {
                        crate::config::Staged::Rate(_) => "rate",
                        crate::config::Staged::Clients(_) => "clients",
                    },
                    stages: st
                        .stages()
                        .stages
                        .iter()
                        .map(|s| StageSetting {
                            duration_s: s.duration.as_secs_f64(),
                            target: s.target,
                        })
                        .collect(),
                }),
                interval_s: cfg.load.interval.map(|i| i.every.as_secs_f64()),
            },
            runs,
            ratios,
            ratios_h2,
            ratios_grpc_h2,
            ratios_h3,
            ratios_h3_h2,
            per_conn_table: cfg.per_conn,
        }
    }

    /// `--find-max`: each run's capacity search (in run order), and the ratios again with
    /// the answers in them.
    pub fn attach_capacity(&mut self, capacities: Vec<capacity::Capacity>) {
        for (run, c) in self.runs.iter_mut().zip(capacities) {
            run.capacity = Some(c);
        }
        [
            self.ratios,
            self.ratios_h2,
            self.ratios_grpc_h2,
            self.ratios_h3,
            self.ratios_h3_h2,
        ] = Ratios::all(&self.runs);
    }

    pub fn to_json(&self) -> String {
        // Serializing plain structs of numbers and strings cannot fail.
        let mut s = serde_json::to_string_pretty(self).expect("report serializes");
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests;
