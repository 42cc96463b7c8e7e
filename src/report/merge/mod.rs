//! `wirebench merge`: the reports of agents that ran one workload together, as one report whose
//! counts and numerators are sums and whose percentiles come from the merged histograms.
//!
//! `input` reads a report back (`Source`); `stack` merges the runs of one stack, with the
//! optional sections in `sections` and the window's cost and the connections' counters in
//! `counters`; `combine` holds how parts add up (weighted averages, histograms).

mod combine;
mod counters;
mod input;
mod sections;
mod stack;

use serde::{Deserialize, Serialize};

use super::hdr::HdrError;
use super::{Ratios, Report, SCHEMA, Settings};
pub use input::{InError, InOpenLoop, InRun, InSettings, Input, Source};

/// Why reports cannot be merged: the line to print, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("{file}: the JSON ends early, at line {line} (cut short?)")]
    CutShort { file: String, line: usize },
    #[error("{file}: not JSON ({source})")]
    NotJson {
        file: String,
        source: serde_json::Error,
    },
    #[error(
        "{file}: schema {schema}; this wirebench merges {SCHEMA} reports (run that agent again \
         with this version)"
    )]
    OtherVersion { file: String, schema: String },
    #[error(
        "{file}: a {schema} document, not a run report ({SCHEMA}): merge takes the --format \
         json reports of echo, etcd put|range|txn-put, http and grpc runs"
    )]
    NotARunReport { file: String, schema: String },
    #[error(
        "{file}: not a wirebench report (no \"schema\"): merge takes the --format json \
         reports of runs"
    )]
    NoSchema { file: String },
    #[error("{file}: not a complete {SCHEMA} report: {source}")]
    Incomplete {
        file: String,
        source: serde_json::Error,
    },
    #[error("{file}: unknown stack {proto:?}")]
    UnknownStack { file: String, proto: String },
    #[error("nothing to merge: give the reports' files")]
    Nothing,
    /// the two values as the message shows them
    #[error("{first} and {other} ran different workloads: {what} {first_value} and {other_value}")]
    Different {
        first: String,
        other: String,
        what: String,
        first_value: String,
        other_value: String,
    },
    #[error("{first} and {again} are the same agent's run ({agent}): give each report once")]
    SameRun {
        first: String,
        again: String,
        agent: String,
    },
    #[error("{0}: a report without runs")]
    NoRuns(String),
    #[error("{file}: unknown {flag} {value:?}")]
    UnknownSetting {
        file: String,
        flag: &'static str,
        value: String,
    },
    #[error("{file}: histograms.{what}: {cause}")]
    Histogram {
        file: String,
        what: String,
        cause: HdrError,
    },
    #[error("{file}: histograms.{what}: its values do not fit a latency histogram ({cause:?})")]
    HistogramRange {
        file: String,
        what: String,
        cause: hdrhistogram::errors::AdditionError,
    },
    #[error("{file}: per_endpoint: {cause:?}")]
    EndpointRange {
        file: String,
        cause: hdrhistogram::errors::AdditionError,
    },
    #[error("{file}: {endpoints} endpoints but {histograms} endpoint histograms")]
    EndpointHistograms {
        file: String,
        endpoints: usize,
        histograms: usize,
    },
    #[error("{file}: unknown failure kind {kind:?}")]
    UnknownKind { file: String, kind: String },
    /// `files`: every report's, joined
    #[error(
        "{files}: the latency histograms hold {held} requests, the summaries {ok} successful ones"
    )]
    Counts { files: String, held: u64, ok: u64 },
}

/// One agent's run in a merged report (`runs[].agents[]`): who, when, and its own headline
/// figures beside the merged ones.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgentRow {
    /// `--agent`, or the report's file name when the agent had none
    pub agent: String,
    /// the report it came from, as given to `wirebench merge`
    pub file: String,
    pub start_unix_us: u64,
    pub end_unix_us: u64,
    /// `--start-at`: how much later than asked the agent's window began
    pub start_late_ms: Option<f64>,
    pub clients: usize,
    pub connections: usize,
    pub count: u64,
    pub ok: u64,
    pub failed: u64,
    pub total_s: f64,
    /// the agent's own figures, null where it measured none (as in its report)
    pub requests_per_sec: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub client_cpu_us_per_request: Option<f64>,
    /// the server's CPU over this agent's own window (`--server-pid`, the built-in server)
    pub server_cpu_us_per_request: Option<f64>,
}

/// Refuses reports that did not run the same workload: one line naming the two files and what
/// differs.
fn check_same_workload(sources: &[Source]) -> Result<(), MergeError> {
    let Some(first) = sources.first() else {
        return Err(MergeError::Nothing);
    };
    let a = &first.report;
    let sorted = |v: &[String]| {
        let mut v = v.to_vec();
        v.sort();
        v
    };
    let protos = |r: &Input| r.runs.iter().map(|x| x.proto.name()).collect::<Vec<_>>();
    let mode = |r: &InRun| match (&r.open_loop, &r.connection_setup) {
        (Some(_), _) => "an open-loop run (--rate)".to_string(),
        (None, Some(c)) => format!("--requests-per-conn {}", c.requests_per_conn),
        (None, None) => "a closed-loop run".to_string(),
    };
    for s in &sources[1..] {
        let b = &s.report;
        let differs = |what: &str, x: &dyn std::fmt::Debug, y: &dyn std::fmt::Debug| {
            Err(MergeError::Different {
                first: first.file.clone(),
                other: s.file.clone(),
                what: what.to_string(),
                first_value: format!("{x:?}"),
                other_value: format!("{y:?}"),
            })
        };
        if a.workload != b.workload {
            return differs("workload", &a.workload, &b.workload);
        }
        if sorted(&a.endpoints) != sorted(&b.endpoints) {
            return differs("target", &a.endpoints, &b.endpoints);
        }
        if protos(a) != protos(b) {
            return differs("stacks", &protos(a), &protos(b));
        }
        let (sa, sb) = (&a.settings, &b.settings);
        if (&sa.h2_client, &sa.hpack, sa.pipeline) != (&sb.h2_client, &sb.hpack, sb.pipeline) {
            return differs(
                "--h2-client, --hpack, --pipeline",
                &(&sa.h2_client, &sa.hpack, sa.pipeline),
                &(&sb.h2_client, &sb.hpack, sb.pipeline),
            );
        }
        for (x, y) in a.runs.iter().zip(&b.runs) {
            if mode(x) != mode(y) {
                return differs("the run", &mode(x), &mode(y));
            }
        }
    }
    // the same run given twice would count its requests twice
    for (i, x) in sources.iter().enumerate() {
        for y in &sources[..i] {
            let same_agent = x.report.agent.is_some() && x.report.agent == y.report.agent;
            let same_run = x.report.runs.iter().zip(&y.report.runs).all(|(p, q)| {
                p.window.start_unix_us == q.window.start_unix_us
                    && p.window.end_unix_us == q.window.end_unix_us
            });
            if same_agent || same_run {
                return Err(MergeError::SameRun {
                    first: y.file.clone(),
                    again: x.file.clone(),
                    agent: x.agent(),
                });
            }
        }
    }
    Ok(())
}

/// `settings` of the merged report: the agents' clients, connections and threads summed, their
/// totals summed (null when one ran for a duration), the longest duration, warmup and timeout.
fn merge_settings(sources: &[Source]) -> Result<Settings, MergeError> {
    let s: Vec<&InSettings> = sources.iter().map(|s| &s.report.settings).collect();
    let known = |v: &str, of: &[&'static str], flag: &'static str| {
        of.iter()
            .copied()
            .find(|x| *x == v)
            .ok_or_else(|| MergeError::UnknownSetting {
                file: sources[0].file.clone(),
                flag,
                value: v.to_string(),
            })
    };
    let max = |f: fn(&InSettings) -> f64| s.iter().map(|x| f(x)).fold(0.0, f64::max);
    Ok(Settings {
        clients: s.iter().map(|x| x.clients).sum(),
        conns: s.iter().map(|x| x.conns).sum(),
        pipeline: s[0].pipeline,
        threads: s.iter().map(|x| x.threads).sum(),
        total_requests: s.iter().map(|x| x.total_requests).sum(),
        duration_s: s
            .iter()
            .map(|x| x.duration_s)
            .collect::<Option<Vec<f64>>>()
            .map(|d| d.into_iter().fold(0.0, f64::max)),
        warmup_s: max(|x| x.warmup_s),
        timeout_s: max(|x| x.timeout_s),
        h2_client: known(&s[0].h2_client, &["wire", "h2"], "--h2-client")?,
        hpack: known(&s[0].hpack, &["index", "literal", "never"], "--hpack")?,
        stages: None,
        interval_s: None,
    })
}

/// The reports of `sources` (the same workload, run by several agents) as one report.
pub fn merge(sources: &[Source]) -> Result<Report, MergeError> {
    check_same_workload(sources)?;
    let first = &sources[0].report;
    if first.runs.is_empty() {
        return Err(MergeError::NoRuns(sources[0].file.clone()));
    }
    let runs = (0..first.runs.len())
        .map(|i| stack::merge_run(sources, i))
        .collect::<Result<Vec<_>, _>>()?;
    let [ratios, ratios_h2, ratios_grpc_h2, ratios_h3, ratios_h3_h2] = Ratios::all(&runs);
    Ok(Report {
        schema: SCHEMA,
        version: env!("CARGO_PKG_VERSION"),
        workload: first.workload.clone(),
        endpoints: first.endpoints.clone(),
        agent: None,
        settings: merge_settings(sources)?,
        ratios,
        ratios_h2,
        ratios_grpc_h2,
        ratios_h3,
        ratios_h3_h2,
        runs,
        per_conn_table: false,
    })
}
