//! `wirebench merge`: the reports of agents that ran one workload together, as one report whose
//! counts and numerators are sums and whose percentiles come from the merged histograms.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::derive::{CostCounts, buckets_of, distribution_of, ms, per, per_sec};
use super::hdr::{self, Histograms};
use super::show::num;
use super::*;
use crate::outcome::FailureKind;
use crate::stats::{Proto, TIMERFD, TOKIO_FALLBACK};

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

/// A report as `wirebench merge` reads it: what it merges, checks or carries over.
#[derive(Debug, Deserialize)]
pub struct Input {
    pub schema: String,
    pub version: String,
    pub workload: String,
    pub endpoints: Vec<String>,
    pub agent: Option<String>,
    pub settings: InSettings,
    pub runs: Vec<InRun>,
}

#[derive(Debug, Deserialize)]
pub struct InSettings {
    pub clients: usize,
    pub conns: usize,
    pub pipeline: usize,
    pub threads: usize,
    pub total_requests: Option<u64>,
    pub duration_s: Option<f64>,
    pub warmup_s: f64,
    pub timeout_s: f64,
    pub h2_client: String,
    pub hpack: String,
}

#[derive(Debug, Deserialize)]
pub struct InRun {
    pub proto: String,
    pub clients: usize,
    pub connections: usize,
    pub pipeline: Option<usize>,
    pub threads: usize,
    pub interrupted: bool,
    pub window: Window,
    pub summary: Summary,
    pub latency_distribution: Vec<Percentile>,
    pub histograms: Histograms,
    pub status_distribution: Vec<StatusCount>,
    pub error_distribution: Vec<InError>,
    pub cost: Cost,
    pub wire: Wire,
    pub open_loop: Option<InOpenLoop>,
    #[serde(default)]
    pub streaming: Option<Streaming>,
    #[serde(default)]
    pub connection_setup: Option<ConnectionSetup>,
    pub per_endpoint: Vec<EndpointReport>,
    #[serde(default)]
    pub verify: Option<VerifyReport>,
    pub connect_times: Option<ConnectTimes>,
    #[serde(default)]
    pub agents: Option<Vec<AgentRow>>,
    pub sample_response: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub struct InError {
    pub kind: String,
    pub message: Option<String>,
    pub count: u64,
}

#[derive(Debug, Deserialize)]
pub struct InOpenLoop {
    pub target_rate: f64,
    pub expired_sends: u64,
    pub timer: Option<String>,
    pub late_sends: u64,
    pub sends_taken: u64,
    pub average_send_lag_ms: Option<f64>,
    pub max_send_lag_ms: Option<f64>,
    pub uncorrected_average_ms: Option<f64>,
    pub uncorrected_slowest_ms: Option<f64>,
}

/// One report to merge: where it came from (for the messages and the agent rows) and what it
/// holds.
#[derive(Debug)]
pub struct Source {
    pub file: String,
    pub report: Input,
}

impl Source {
    /// A report read from `file` (its contents `text`): JSON of this schema version.
    pub fn parse(file: &str, text: &str) -> Result<Source, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            if e.is_eof() {
                format!(
                    "{file}: the JSON ends early, at line {} (cut short?)",
                    e.line()
                )
            } else {
                format!("{file}: not JSON ({e})")
            }
        })?;
        let schema = value.get("schema").and_then(Value::as_str);
        match schema {
            Some(s) if s == SCHEMA => {}
            Some(s) if s.starts_with("wirebench.report.") => {
                return Err(format!(
                    "{file}: schema {s}; this wirebench merges {SCHEMA} reports (run that agent \
                     again with this version)"
                ));
            }
            Some(s) => {
                return Err(format!(
                    "{file}: a {s} document, not a run report ({SCHEMA}): merge takes the \
                     --format json reports of echo, etcd put|range|txn-put, http and grpc runs"
                ));
            }
            None => {
                return Err(format!(
                    "{file}: not a wirebench report (no \"schema\"): merge takes the --format \
                     json reports of runs"
                ));
            }
        }
        let report: Input = serde_json::from_value(value)
            .map_err(|e| format!("{file}: not a complete {SCHEMA} report: {e}"))?;
        Ok(Source {
            file: file.to_string(),
            report,
        })
    }

    /// The agent's name, or the file's name when it had none.
    fn agent(&self) -> String {
        self.report.agent.clone().unwrap_or_else(|| {
            std::path::Path::new(&self.file)
                .file_name()
                .map_or_else(|| self.file.clone(), |n| n.to_string_lossy().into_owned())
        })
    }
}

/// Refuses reports that did not run the same workload: one line naming the two files and what
/// differs.
fn check_same_workload(sources: &[Source]) -> Result<(), String> {
    let Some(first) = sources.first() else {
        return Err("nothing to merge: give the reports' files".into());
    };
    let a = &first.report;
    let sorted = |v: &[String]| {
        let mut v = v.to_vec();
        v.sort();
        v
    };
    let protos = |r: &Input| r.runs.iter().map(|x| x.proto.clone()).collect::<Vec<_>>();
    let mode = |r: &InRun| match (&r.open_loop, &r.connection_setup) {
        (Some(_), _) => "an open-loop run (--rate)".to_string(),
        (None, Some(c)) => format!("--requests-per-conn {}", c.requests_per_conn),
        (None, None) => "a closed-loop run".to_string(),
    };
    for s in &sources[1..] {
        let b = &s.report;
        let differs = |what: &str, x: &dyn std::fmt::Debug, y: &dyn std::fmt::Debug| {
            Err(format!(
                "{} and {} ran different workloads: {what} {x:?} and {y:?}",
                first.file, s.file
            ))
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
                return Err(format!(
                    "{} and {} are the same agent's run ({}): give each report once",
                    y.file,
                    x.file,
                    x.agent()
                ));
            }
        }
    }
    Ok(())
}

/// The histograms of `texts` added together; `what` names them in an error.
fn merged_histogram<'a>(
    texts: impl IntoIterator<Item = (&'a str, &'a str)>,
    what: &str,
) -> Result<Histogram<u64>, String> {
    let mut sum = Latencies::default().hist;
    for (file, text) in texts {
        let h = hdr::decode(text).map_err(|e| format!("{file}: histograms.{what}: {e}"))?;
        sum.add(&h).map_err(|e| {
            format!("{file}: histograms.{what}: its values do not fit a latency histogram ({e:?})")
        })?;
    }
    Ok(sum)
}

/// An average over several parts, each weighted by its count: None when no part counts
/// anything (nothing to average), or when one that does has no average.
fn weighted(parts: impl IntoIterator<Item = (Option<f64>, u64)>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0u64);
    for (avg, count) in parts.into_iter().filter(|&(_, count)| count > 0) {
        sum += avg? * count as f64;
        n += count;
    }
    (n > 0).then(|| sum / n as f64)
}

/// The largest of the values that exist (None: none does).
fn max_known(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    values.into_iter().flatten().reduce(f64::max)
}

/// The smallest of the values that exist (None: none does).
fn min_known(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    values.into_iter().flatten().reduce(f64::min)
}

/// The sum of `f` over the runs when every run has it, else None.
fn sum_all(runs: &[&InRun], f: impl Fn(&InRun) -> Option<u64>) -> Option<u64> {
    runs.iter().map(|r| f(r)).sum()
}

/// The values a histogram holds (0 for none; an undecodable one has already been refused by
/// `merged_histogram`, which every caller runs first).
fn recorded(text: Option<&str>) -> u64 {
    text.and_then(|t| hdr::decode(t).ok())
        .map_or(0, |h| h.len())
}

/// Milliseconds, as the report wrote them, back to the nanoseconds they came from.
fn ns_of(ms: f64) -> u64 {
    (ms * 1e6).round() as u64
}

/// The name of a failure kind as the report wrote it, or why it is none.
fn kind_of(file: &str, kind: &str) -> Result<&'static str, String> {
    FailureKind::ALL
        .iter()
        .map(|k| k.as_str())
        .find(|k| *k == kind)
        .ok_or_else(|| format!("{file}: unknown failure kind {kind:?}"))
}

/// The runs of one stack (run `i` of every report), merged.
fn merge_run(sources: &[Source], i: usize) -> Result<RunReport, String> {
    let runs: Vec<&InRun> = sources.iter().map(|s| &s.report.runs[i]).collect();
    let files: Vec<&str> = sources.iter().map(|s| s.file.as_str()).collect();
    let first = runs[0];
    let proto = match first.proto.as_str() {
        "http" => Proto::Http,
        "h2" => Proto::H2,
        "grpc" => Proto::Grpc,
        p => return Err(format!("{}: unknown stack {p:?}", files[0])),
    };
    let hist = |what: &str, pick: &dyn Fn(&Histograms) -> Option<&str>| {
        merged_histogram(
            files
                .iter()
                .zip(&runs)
                .filter_map(|(f, r)| pick(&r.histograms).map(|t| (*f, t))),
            what,
        )
    };
    let latency = hist("latency", &|h| Some(&h.latency))?;
    let start = runs
        .iter()
        .map(|r| r.window.start_unix_us)
        .min()
        .unwrap_or(0);
    let end = runs.iter().map(|r| r.window.end_unix_us).max().unwrap_or(0);
    let secs = end.saturating_sub(start) as f64 / 1e6;
    let per_sec = |n: u64| per_sec(n, secs);
    let sum = |f: &dyn Fn(&InRun) -> u64| runs.iter().map(|r| f(r)).sum::<u64>();

    // Summary: sums, the union window, the exact extremes, and the moments pooled from each
    // run's mean and stddev weighted by its successful requests.
    let with_ok: Vec<&&InRun> = runs.iter().filter(|r| r.summary.ok > 0).collect();
    let n_ok: u64 = with_ok.iter().map(|r| r.summary.ok).sum();
    let mean = weighted(with_ok.iter().map(|r| (r.summary.average_ms, r.summary.ok)));
    let second = weighted(with_ok.iter().map(|r| {
        let (m, sd) = (r.summary.average_ms, r.summary.stddev_ms);
        (m.zip(sd).map(|(m, sd)| sd * sd + m * m), r.summary.ok)
    }));
    let fastest = min_known(with_ok.iter().map(|r| r.summary.fastest_ms));
    let slowest = max_known(with_ok.iter().map(|r| r.summary.slowest_ms));
    let count = sum(&|r| r.summary.count);
    let ok = sum(&|r| r.summary.ok);
    if latency.len() != n_ok {
        return Err(format!(
            "{}: the latency histograms hold {} requests, the summaries {n_ok} successful ones",
            files.join(", "),
            latency.len()
        ));
    }
    let summary = Summary {
        count,
        ok,
        failed: sum(&|r| r.summary.failed),
        warmup_requests: sum(&|r| r.summary.warmup_requests),
        written: sum(&|r| r.summary.written),
        retried: sum(&|r| r.summary.retried),
        reauthenticated: sum(&|r| r.summary.reauthenticated),
        outcome_unknown: sum(&|r| r.summary.outcome_unknown),
        total_s: secs,
        slowest_ms: slowest,
        fastest_ms: fastest,
        average_ms: mean,
        stddev_ms: mean
            .zip(second)
            .map(|(mean, second)| (second - mean * mean).max(0.0).sqrt()),
        requests_per_sec: per_sec(super::derive::headline_count(
            runs.iter().any(|r| r.open_loop.is_some()),
            count,
            sum(&|r| r.summary.written),
        )),
        ok_per_sec: per_sec(ok),
    };

    let mut statuses: BTreeMap<&str, u64> = BTreeMap::new();
    for s in runs.iter().flat_map(|r| &r.status_distribution) {
        *statuses.entry(&s.status).or_insert(0) += s.count;
    }
    let mut status_distribution: Vec<StatusCount> = statuses
        .into_iter()
        .map(|(status, count)| StatusCount {
            status: status.to_string(),
            count,
        })
        .collect();
    status_distribution.sort_by_key(|s| std::cmp::Reverse(s.count));
    let mut errors: BTreeMap<(&'static str, Option<&str>), u64> = BTreeMap::new();
    for (file, r) in files.iter().zip(&runs) {
        for e in &r.error_distribution {
            *errors
                .entry((kind_of(file, &e.kind)?, e.message.as_deref()))
                .or_insert(0) += e.count;
        }
    }
    let mut error_distribution: Vec<ErrorCount> = errors
        .into_iter()
        .map(|((kind, message), count)| ErrorCount {
            kind,
            message: message.map(str::to_string),
            count,
        })
        .collect();
    super::derive::sort_errors(&mut error_distribution);

    let cost = merge_cost(&runs, &files);
    let wire = merge_wire(&runs);

    let open_loop = match runs
        .iter()
        .map(|r| r.open_loop.as_ref())
        .collect::<Option<Vec<_>>>()
    {
        Some(o) => {
            let unc = hist("uncorrected_latency", &|h| h.uncorrected_latency.as_deref())?;
            let timers: Vec<Option<&str>> = o.iter().map(|x| x.timer.as_deref()).collect();
            Some(OpenLoop {
                target_rate: o.iter().map(|x| x.target_rate).sum(),
                achieved_rate: per_sec(summary.written),
                expired_sends: o.iter().map(|x| x.expired_sends).sum(),
                timer: if timers.contains(&Some(TOKIO_FALLBACK)) {
                    Some(TOKIO_FALLBACK)
                } else if timers.iter().all(|t| *t == Some(TIMERFD)) {
                    Some(TIMERFD)
                } else {
                    None
                },
                late_sends: o.iter().map(|x| x.late_sends).sum(),
                sends_taken: o.iter().map(|x| x.sends_taken).sum(),
                average_send_lag_ms: weighted(
                    o.iter().map(|x| (x.average_send_lag_ms, x.sends_taken)),
                ),
                max_send_lag_ms: max_known(o.iter().map(|x| x.max_send_lag_ms)),
                uncorrected_average_ms: weighted(o.iter().zip(&runs).map(|(x, r)| {
                    (
                        x.uncorrected_average_ms,
                        recorded(r.histograms.uncorrected_latency.as_deref()),
                    )
                })),
                uncorrected_slowest_ms: max_known(o.iter().map(|x| x.uncorrected_slowest_ms)),
                uncorrected_distribution: distribution_of(&unc),
            })
        }
        None => None,
    };

    let streaming = match runs
        .iter()
        .map(|r| r.streaming.as_ref())
        .collect::<Option<Vec<_>>>()
    {
        Some(s) => {
            let first = hist("first_message", &|h| h.first_message.as_deref())?;
            let messages = s.iter().map(|x| x.messages).sum();
            Some(Streaming {
                messages,
                messages_per_call: per(messages, ok),
                messages_per_sec: per_sec(messages),
                first_message_average_ms: weighted(s.iter().zip(&runs).map(|(x, r)| {
                    (
                        x.first_message_average_ms,
                        recorded(r.histograms.first_message.as_deref()),
                    )
                })),
                first_message_distribution: distribution_of(&first),
            })
        }
        None => None,
    };

    let connection_setup = match runs
        .iter()
        .map(|r| r.connection_setup.as_ref())
        .collect::<Option<Vec<_>>>()
    {
        Some(c) => {
            let without = hist("without_setup", &|h| h.without_setup.as_deref())?;
            let tls: Option<Vec<&HandshakeCost>> = c.iter().map(|x| x.tls.as_ref()).collect();
            Some(ConnectionSetup {
                requests_per_conn: c[0].requests_per_conn,
                connections_per_request: per(wire.connections_opened, wire.requests_on_wire),
                tcp_connect_average_ms: weighted(
                    c.iter()
                        .zip(&runs)
                        .map(|(x, r)| (x.tcp_connect_average_ms, r.wire.connections_opened)),
                ),
                tls: tls.map(|t| {
                    let w = |f: fn(&HandshakeCost) -> Option<f64>| {
                        weighted(t.iter().map(|h| (f(h), h.handshakes)))
                    };
                    HandshakeCost {
                        handshakes: t.iter().map(|h| h.handshakes).sum(),
                        full: t.iter().map(|h| h.full).sum(),
                        resumed: t.iter().map(|h| h.resumed).sum(),
                        average_ms: w(|h| h.average_ms),
                        client_cpu_us: w(|h| h.client_cpu_us),
                        bytes_out: w(|h| h.bytes_out),
                        bytes_in: w(|h| h.bytes_in),
                    }
                }),
                without_setup_average_ms: weighted(c.iter().zip(&runs).map(|(x, r)| {
                    (
                        x.without_setup_average_ms,
                        recorded(r.histograms.without_setup.as_deref()),
                    )
                })),
                without_setup_distribution: distribution_of(&without),
            })
        }
        None => None,
    };

    // Endpoints by URL, in the order they first appear; each one's histogram beside it.
    let mut endpoints: Vec<(EndpointReport, Histogram<u64>)> = Vec::new();
    for (file, r) in files.iter().zip(&runs) {
        if r.per_endpoint.len() != r.histograms.per_endpoint.len() {
            return Err(format!(
                "{file}: {} endpoints but {} endpoint histograms",
                r.per_endpoint.len(),
                r.histograms.per_endpoint.len()
            ));
        }
        for (e, text) in r.per_endpoint.iter().zip(&r.histograms.per_endpoint) {
            let h = merged_histogram([(*file, text.as_str())], "per_endpoint")?;
            match endpoints.iter_mut().find(|(x, _)| x.endpoint == e.endpoint) {
                Some((x, sum)) => {
                    x.count += e.count;
                    x.ok += e.ok;
                    x.failed += e.failed;
                    if x.role != e.role {
                        x.role = None;
                    }
                    sum.add(&h)
                        .map_err(|e| format!("{file}: per_endpoint: {e:?}"))?;
                }
                None => endpoints.push((e.clone(), h)),
            }
        }
    }
    let q = |h: &Histogram<u64>, p: f64| (!h.is_empty()).then(|| ms(h.value_at_quantile(p) as f64));
    let (per_endpoint, endpoint_hists): (Vec<EndpointReport>, Vec<String>) = endpoints
        .into_iter()
        .map(|(e, h)| {
            let row = EndpointReport {
                requests_per_sec: per_sec(e.count),
                p50_ms: q(&h, 0.5),
                p90_ms: q(&h, 0.9),
                p99_ms: q(&h, 0.99),
                ..e
            };
            (row, hdr::encode(&h))
        })
        .unzip();

    let connect = match runs
        .iter()
        .map(|r| r.histograms.connect.as_deref())
        .collect::<Vec<_>>()
    {
        c if c.iter().all(Option::is_none) => None,
        _ => Some(hist("connect", &|h| h.connect.as_deref())?),
    };
    // none when no agent had a connection to time
    let connect_times = connect.as_ref().and_then(|h| {
        let times: Vec<&ConnectTimes> = runs
            .iter()
            .filter_map(|r| r.connect_times.as_ref())
            .collect();
        let fastest = min_known(times.iter().map(|c| Some(c.fastest_ms)))?;
        let slowest = max_known(times.iter().map(|c| Some(c.slowest_ms)))?;
        Some(ConnectTimes {
            connections: h.len(),
            average_ms: weighted(times.iter().map(|c| (Some(c.average_ms), c.connections)))?,
            fastest_ms: fastest,
            slowest_ms: slowest,
            histogram: buckets_of(h, ns_of(fastest), ns_of(slowest)),
            distribution: distribution_of(h),
        })
    });

    let verify = runs
        .iter()
        .map(|r| r.verify.as_ref())
        .collect::<Option<Vec<_>>>()
        .map(|v| VerifyReport {
            checked: v.iter().map(|x| x.checked).sum(),
            lost: v.iter().map(|x| x.lost).sum(),
            lost_examples: v
                .iter()
                .flat_map(|x| x.lost_examples.iter().cloned())
                .take(10)
                .collect(),
            retried: v.iter().map(|x| x.retried).sum(),
            via: v[0].via.clone(),
        });

    let mut agents = Vec::new();
    for (s, r) in sources.iter().zip(&runs) {
        match &r.agents {
            // a merged report merged again: its agents' rows
            Some(rows) => agents.extend(rows.iter().cloned()),
            None => agents.push(AgentRow {
                agent: s.agent(),
                file: s.file.clone(),
                start_unix_us: r.window.start_unix_us,
                end_unix_us: r.window.end_unix_us,
                start_late_ms: r.window.start_late_ms,
                clients: r.clients,
                connections: r.connections,
                count: r.summary.count,
                ok: r.summary.ok,
                failed: r.summary.failed,
                total_s: r.summary.total_s,
                requests_per_sec: r.summary.requests_per_sec,
                p50_ms: percentile_in(&r.latency_distribution, 50.0),
                p99_ms: percentile_in(&r.latency_distribution, 99.0),
                client_cpu_us_per_request: r.cost.client_cpu_us_per_request,
                server_cpu_us_per_request: r.cost.server_cpu_us_per_request,
            }),
        }
    }

    let same_start_at = runs
        .iter()
        .all(|r| r.window.start_at == first.window.start_at);
    Ok(RunReport {
        proto: proto.name(),
        title: proto.title(),
        clients: runs.iter().map(|r| r.clients).sum(),
        connections: runs.iter().map(|r| r.connections).sum(),
        pipeline: first.pipeline,
        threads: runs.iter().map(|r| r.threads).sum(),
        interrupted: runs.iter().any(|r| r.interrupted),
        window: Window {
            start_unix_us: start,
            end_unix_us: end,
            start_at: if same_start_at {
                first.window.start_at.clone()
            } else {
                None
            },
            start_late_ms: runs
                .iter()
                .filter_map(|r| r.window.start_late_ms)
                .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v)))),
        },
        histogram: match (summary.fastest_ms, summary.slowest_ms) {
            (Some(fastest), Some(slowest)) => buckets_of(&latency, ns_of(fastest), ns_of(slowest)),
            _ => Vec::new(),
        },
        latency_distribution: distribution_of(&latency),
        summary,
        histograms: Histograms {
            latency: hdr::encode(&latency),
            uncorrected_latency: match &open_loop {
                Some(_) => Some(hdr::encode(&hist("uncorrected_latency", &|h| {
                    h.uncorrected_latency.as_deref()
                })?)),
                None => None,
            },
            connect: connect.as_ref().map(hdr::encode),
            first_message: match &streaming {
                Some(_) => Some(hdr::encode(&hist("first_message", &|h| {
                    h.first_message.as_deref()
                })?)),
                None => None,
            },
            without_setup: match &connection_setup {
                Some(_) => Some(hdr::encode(&hist("without_setup", &|h| {
                    h.without_setup.as_deref()
                })?)),
                None => None,
            },
            per_endpoint: endpoint_hists,
        },
        status_distribution,
        error_distribution,
        cost,
        wire,
        open_loop,
        streaming,
        connection_setup,
        per_endpoint,
        agents: Some(agents),
        failover: None,
        verify,
        // per agent, as the timeline: in each agent's own report
        classes: None,
        compaction: None,
        leases: None,
        request_log: None,
        stages: None,
        timeline: Vec::new(),
        connect_times,
        memory: None,
        per_connection: Vec::new(),
        sample_response: runs.iter().find_map(|r| r.sample_response.clone()),
        // the charts are drawn from one run's report, not a merge's
        spectrum: Vec::new(),
        uncorrected_spectrum: Vec::new(),
    })
}

/// The window's cost: the numerators summed and divided by the summed requests written. The
/// server's CPU stays per agent: each agent read it over its own window, so their sum would
/// count a server shared by the agents more than once.
fn merge_cost(runs: &[&InRun], files: &[&str]) -> Cost {
    let syscalls = sum_all(runs, |r| r.cost.syscalls);
    let mut io = IoCalls::default();
    for r in runs {
        io = io.plus(r.cost.data_calls);
    }
    let kernel_unavailable = files.iter().zip(runs).find_map(|(f, r)| {
        r.cost
            .kernel_counters_unavailable
            .as_ref()
            .map(|why| format!("{f}: {why}"))
    });
    let server_measured = runs.iter().any(|r| r.cost.server_cpu_ns.is_some());
    CostCounts {
        requests: runs.iter().map(|r| r.cost.requests).sum(),
        user_us: runs.iter().map(|r| r.cost.client_cpu_user_us).sum(),
        sys_us: runs.iter().map(|r| r.cost.client_cpu_sys_us).sum(),
        syscalls,
        context_switches: sum_all(runs, |r| r.cost.context_switches),
        instructions: sum_all(runs, |r| r.cost.instructions),
        cycles: sum_all(runs, |r| r.cost.cycles),
        kernel_unavailable: match syscalls {
            Some(_) => None,
            None => kernel_unavailable.or_else(|| Some("an agent did not count them".into())),
        },
        syscalls_outside: sum_all(runs, |r| r.cost.syscalls_outside_window),
        context_switches_outside: sum_all(runs, |r| r.cost.context_switches_outside_window),
        io,
        server_cpu_ns: None,
        server_cpu_error: server_measured.then(|| {
            "per agent only (each read the server's CPU over its own window; see the agents' rows)"
                .to_string()
        }),
    }
    .cost()
}

/// The connections' figures: every count summed, every ratio divided again by the summed
/// requests its own figure names.
fn merge_wire(runs: &[&InRun]) -> Wire {
    let sum = |f: &dyn Fn(&Wire) -> u64| runs.iter().map(|r| f(&r.wire)).sum::<u64>();
    let requests = sum(&|w| w.requests_on_wire);
    let tcp_requests = sum(&|w| w.requests_with_tcp_info);
    let opened = sum(&|w| w.connections_opened);
    let (bytes_out, bytes_in) = (sum(&|w| w.bytes_out), sum(&|w| w.bytes_in));
    let (hdr_out, hdr_in) = (
        sum(&|w| w.ip_tcp_header_bytes_out),
        sum(&|w| w.ip_tcp_header_bytes_in),
    );
    let (segs_out, segs_in) = (sum(&|w| w.segments_out), sum(&|w| w.segments_in));
    let (data_out, data_in) = (sum(&|w| w.data_segments_out), sum(&|w| w.data_segments_in));
    let (write_calls, read_calls) = (sum(&|w| w.write_calls), sum(&|w| w.read_calls));
    // the known close segments summed, the unknown ones counted apart (as in a run)
    let close = CloseTotals {
        connections: sum(&|w| w.close.connections),
        drained: sum(&|w| w.close.drained),
        bytes_out: sum(&|w| w.close.bytes_out),
        bytes_in: sum(&|w| w.close.bytes_in),
        segments_out: super::sum_known(runs.iter().map(|r| r.wire.close.segments_out)),
        segments_in: super::sum_known(runs.iter().map(|r| r.wire.close.segments_in)),
        connections_without_segments: sum(&|w| w.close.connections_without_segments),
    };
    let layers = match runs
        .iter()
        .map(|r| r.wire.layers.as_ref())
        .collect::<Option<Vec<_>>>()
    {
        Some(l) => {
            let mut http1: Option<Http1Counts> = None;
            let mut h2: Option<Duplex<H2Counts>> = None;
            for x in &l {
                if let Some(c) = x.http1 {
                    *http1.get_or_insert_with(Default::default) += c;
                }
                if let Some(c) = x.h2 {
                    *h2.get_or_insert_with(Default::default) += c;
                }
            }
            let setup_out: u64 = l.iter().map(|x| x.setup_bytes_out).sum();
            let setup_in: u64 = l.iter().map(|x| x.setup_bytes_in).sum();
            Some(LayerTotals {
                http1,
                h2,
                setup_bytes_out: setup_out,
                setup_bytes_in: setup_in,
                bytes_out_per_request_after_setup: per(
                    bytes_out.saturating_sub(setup_out),
                    requests,
                ),
                bytes_in_per_request_after_setup: per(bytes_in.saturating_sub(setup_in), requests),
            })
        }
        None => None,
    };
    let tls = runs.iter().filter_map(|r| r.wire.tls).fold(None, |acc, t| {
        let mut a: TlsCounts = acc.unwrap_or_default();
        a += t;
        Some(a)
    });
    let (tcp_bytes_out, tcp_bytes_in) = (
        sum(&|w| w.bytes_out_with_tcp_info),
        sum(&|w| w.bytes_in_with_tcp_info),
    );
    Wire {
        connections_opened: opened,
        reconnects: sum(&|w| w.reconnects),
        connect_failures: sum(&|w| w.connect_failures),
        connect_error: runs.iter().rev().find_map(|r| r.wire.connect_error.clone()),
        requests_on_wire: requests,
        requests_per_connection: per(requests, opened),
        bytes_out,
        bytes_in,
        bytes_out_per_request: per(bytes_out, requests),
        bytes_in_per_request: per(bytes_in, requests),
        write_calls,
        read_calls,
        write_calls_per_request: per(write_calls, requests),
        read_calls_per_request: per(read_calls, requests),
        write_would_block: sum(&|w| w.write_would_block),
        read_would_block: sum(&|w| w.read_would_block),
        requests_with_tcp_info: tcp_requests,
        bytes_out_with_tcp_info: tcp_bytes_out,
        bytes_in_with_tcp_info: tcp_bytes_in,
        segments_out: segs_out,
        segments_in: segs_in,
        data_segments_out: data_out,
        data_segments_in: data_in,
        segments_out_per_request: per(segs_out, tcp_requests),
        segments_in_per_request: per(segs_in, tcp_requests),
        data_segments_out_per_request: per(data_out, tcp_requests),
        data_segments_in_per_request: per(data_in, tcp_requests),
        retransmits: sum(&|w| w.retransmits),
        connections_without_tcp_info: sum(&|w| w.connections_without_tcp_info),
        ip_tcp_header_bytes_out: hdr_out,
        ip_tcp_header_bytes_in: hdr_in,
        wire_bytes_out_per_request: per(tcp_bytes_out + hdr_out, tcp_requests),
        wire_bytes_in_per_request: per(tcp_bytes_in + hdr_in, tcp_requests),
        close,
        layers,
        tls,
    }
}

/// `settings` of the merged report: the agents' clients, connections and threads summed, their
/// totals summed (null when one ran for a duration), the longest duration, warmup and timeout.
fn merge_settings(sources: &[Source]) -> Result<Settings, String> {
    let s: Vec<&InSettings> = sources.iter().map(|s| &s.report.settings).collect();
    let known = |v: &str, of: &[&'static str], flag: &str| {
        of.iter()
            .copied()
            .find(|x| *x == v)
            .ok_or_else(|| format!("{}: unknown {flag} {v:?}", sources[0].file))
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
pub fn merge(sources: &[Source]) -> Result<Report, String> {
    check_same_workload(sources)?;
    let first = &sources[0].report;
    if first.runs.is_empty() {
        return Err(format!("{}: a report without runs", sources[0].file));
    }
    let runs = (0..first.runs.len())
        .map(|i| merge_run(sources, i))
        .collect::<Result<Vec<_>, _>>()?;
    let find = |p: &str| runs.iter().find(|r| r.proto == p);
    let (http, h2, grpc) = (find("http"), find("h2"), find("grpc"));
    let pair = |num: Option<&RunReport>, den: Option<&RunReport>| {
        num.zip(den).map(|(num, den)| Ratios::of(num, den))
    };
    Ok(Report {
        schema: SCHEMA,
        version: env!("CARGO_PKG_VERSION"),
        workload: first.workload.clone(),
        endpoints: first.endpoints.clone(),
        agent: None,
        settings: merge_settings(sources)?,
        ratios: pair(grpc, http),
        ratios_h2: pair(h2, http),
        ratios_grpc_h2: pair(grpc, h2),
        runs,
        per_conn_table: false,
    })
}

/// The agents' rows of a merged run, as the text report shows them.
pub fn render_agents(out: &mut String, rows: &[AgentRow]) {
    let start = rows.iter().map(|r| r.start_unix_us).min().unwrap_or(0);
    let _ = writeln!(
        out,
        "Agents (start and end from the first agent's start; Total above is their union):"
    );
    let _ = writeln!(
        out,
        "  {:<16} {:>9} {:>9} {:>9} {:>8} {:>10} {:>9} {:>9} {:>10}",
        "agent",
        "start s",
        "end s",
        "requests",
        "failed",
        "req/s",
        "p50 ms",
        "p99 ms",
        "CPU µs/req"
    );
    for r in rows {
        let late = match r.start_late_ms {
            Some(l) if l > 0.0 => format!(" ({l:.2} ms late)"),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "  {:<16} {:>9.3} {:>9.3} {:>9} {:>8} {:>10} {:>9} {:>9} {:>10}{late}",
            r.agent,
            r.start_unix_us.saturating_sub(start) as f64 / 1e6,
            r.end_unix_us.saturating_sub(start) as f64 / 1e6,
            r.count,
            r.failed,
            num(r.requests_per_sec, 1),
            num(r.p50_ms, 3),
            num(r.p99_ms, 3),
            num(r.client_cpu_us_per_request, 1)
        );
    }
    let _ = writeln!(out);
}
