//! The runs of one stack merged into one `RunReport`: the summary from sums and pooled moments,
//! the distributions from the added histograms, the outcomes by key, the agents' own rows.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use super::combine::{Runs, kind_of, max_known, min_known, ns_of, weighted};
use super::counters::{merge_cost, merge_wire};
use super::{AgentRow, InRun, MergeError, Source, sections};
use crate::report::derive::{buckets_of, distribution_of, headline_count, sort_errors};
use crate::report::hdr::{self, Histograms};
use crate::report::{
    ErrorCount, RunReport, StatusCount, Summary, VerifyReport, Window, percentile_in,
};

/// The runs of one stack (run `i` of every report), merged.
pub(super) fn merge_run(sources: &[Source], i: usize) -> Result<RunReport, MergeError> {
    let r = Runs::of(sources, i);
    let first = r.first();
    let latency = r.hist("latency", |h| Some(&h.latency))?;
    let summary = summary(&r, &latency)?;
    let status_distribution = statuses(&r);
    let error_distribution = errors(&r)?;
    let cost = merge_cost(&r.runs, &r.files);
    let wire = merge_wire(&r.runs);
    let open_loop = sections::open_loop(&r, summary.written)?;
    let streaming = sections::streaming(&r, summary.ok)?;
    let connection_setup = sections::connection_setup(&r, &wire)?;
    let (per_endpoint, endpoint_hists) = sections::endpoints(&r)?;
    let (connect, connect_times) = sections::connect_times(&r)?;
    let histograms = Histograms {
        latency: hdr::encode(&latency),
        uncorrected_latency: encoded(&open_loop),
        connect: connect.as_ref().map(hdr::encode),
        first_message: streaming.as_ref().map(|(_, h, _)| hdr::encode(h)),
        message_latency: streaming
            .as_ref()
            .and_then(|(_, _, (m, _))| m.as_ref().map(hdr::encode)),
        last_to_response: streaming
            .as_ref()
            .and_then(|(_, _, (_, l))| l.as_ref().map(hdr::encode)),
        without_setup: encoded(&connection_setup),
        per_endpoint: endpoint_hists,
    };
    Ok(RunReport {
        proto: first.proto.name(),
        title: first.proto.title(),
        clients: r.runs.iter().map(|x| x.clients).sum(),
        connections: r.runs.iter().map(|x| x.connections).sum(),
        pipeline: first.pipeline,
        threads: r.runs.iter().map(|x| x.threads).sum(),
        interrupted: r.runs.iter().any(|x| x.interrupted),
        window: window(&r),
        histogram: match (summary.fastest_ms, summary.slowest_ms) {
            (Some(fastest), Some(slowest)) => buckets_of(&latency, ns_of(fastest), ns_of(slowest)),
            _ => Vec::new(),
        },
        latency_distribution: distribution_of(&latency),
        summary,
        histograms,
        status_distribution,
        error_distribution,
        cost,
        wire,
        open_loop: open_loop.map(|(o, _)| o),
        streaming: streaming.map(|(s, _, _)| s),
        connection_setup: connection_setup.map(|(c, _)| c),
        per_endpoint,
        agents: Some(agents(sources, &r)),
        failover: None,
        verify: verify(&r),
        // per agent, as the timeline: in each agent's own report
        classes: None,
        compaction: None,
        leases: None,
        link: None,
        capacity: None,
        request_log: None,
        stages: None,
        timeline: Vec::new(),
        connect_times,
        memory: None,
        per_connection: Vec::new(),
        sample_response: r.runs.iter().find_map(|x| x.sample_response.clone()),
        // the charts are drawn from one run's report, not a merge's
        spectrum: Vec::new(),
        uncorrected_spectrum: Vec::new(),
    })
}

/// The union of the windows; `--start-at` when every agent had the same, and the latest start.
fn window(r: &Runs) -> Window {
    let first = r.first();
    let same_start_at = r
        .runs
        .iter()
        .all(|x| x.window.start_at == first.window.start_at);
    Window {
        start_unix_us: r.start,
        end_unix_us: r.end,
        start_at: if same_start_at {
            first.window.start_at.clone()
        } else {
            None
        },
        start_late_ms: r
            .runs
            .iter()
            .filter_map(|x| x.window.start_late_ms)
            .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v)))),
    }
}

/// Sums, the union window, the exact extremes, and the moments pooled from each run's mean and
/// stddev weighted by its successful requests; refused when `latency`, the merged histogram,
/// does not hold every success.
fn summary(r: &Runs, latency: &Histogram<u64>) -> Result<Summary, MergeError> {
    let with_ok: Vec<&&InRun> = r.runs.iter().filter(|x| x.summary.ok > 0).collect();
    let n_ok: u64 = with_ok.iter().map(|x| x.summary.ok).sum();
    let mean = weighted(with_ok.iter().map(|x| (x.summary.average_ms, x.summary.ok)));
    let second = weighted(with_ok.iter().map(|x| {
        let (m, sd) = (x.summary.average_ms, x.summary.stddev_ms);
        (m.zip(sd).map(|(m, sd)| sd * sd + m * m), x.summary.ok)
    }));
    let fastest = min_known(with_ok.iter().map(|x| x.summary.fastest_ms));
    let slowest = max_known(with_ok.iter().map(|x| x.summary.slowest_ms));
    let count = r.sum(|x| x.summary.count);
    let ok = r.sum(|x| x.summary.ok);
    if latency.len() != n_ok {
        return Err(MergeError::Counts {
            files: r.files.join(", "),
            held: latency.len(),
            ok: n_ok,
        });
    }
    Ok(Summary {
        count,
        ok,
        failed: r.sum(|x| x.summary.failed),
        warmup_requests: r.sum(|x| x.summary.warmup_requests),
        written: r.sum(|x| x.summary.written),
        retried: r.sum(|x| x.summary.retried),
        reauthenticated: r.sum(|x| x.summary.reauthenticated),
        outcome_unknown: r.sum(|x| x.summary.outcome_unknown),
        total_s: r.secs,
        slowest_ms: slowest,
        fastest_ms: fastest,
        average_ms: mean,
        stddev_ms: mean
            .zip(second)
            .map(|(mean, second)| (second - mean * mean).max(0.0).sqrt()),
        requests_per_sec: r.per_sec(headline_count(
            r.runs.iter().any(|x| x.open_loop.is_some()),
            count,
            r.sum(|x| x.summary.written),
        )),
        ok_per_sec: r.per_sec(ok),
    })
}

/// The status counts summed by status, the most frequent first.
fn statuses(r: &Runs) -> Vec<StatusCount> {
    let mut statuses: BTreeMap<&str, u64> = BTreeMap::new();
    for s in r.runs.iter().flat_map(|x| &x.status_distribution) {
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
    status_distribution
}

/// The failures summed by kind and message, in the report's order; refused when a kind is
/// unknown.
fn errors(r: &Runs) -> Result<Vec<ErrorCount>, MergeError> {
    let mut errors: BTreeMap<(&'static str, Option<&str>), u64> = BTreeMap::new();
    for (file, x) in r.with_files() {
        for e in &x.error_distribution {
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
    sort_errors(&mut error_distribution);
    Ok(error_distribution)
}

/// `--verify`, when every run verified: the lookups summed, the first 10 lost writes.
fn verify(r: &Runs) -> Option<VerifyReport> {
    r.every(|x| x.verify.as_ref()).map(|v| VerifyReport {
        checked: v.iter().map(|x| x.checked).sum(),
        lost: v.iter().map(|x| x.lost).sum(),
        lost_examples: v
            .iter()
            .flat_map(|x| x.lost_examples.iter().cloned())
            .take(10)
            .collect(),
        retried: v.iter().map(|x| x.retried).sum(),
        via: v[0].via.clone(),
    })
}

/// One row per agent's run, with its own headline figures; a merged report merged again
/// brings its agents' rows.
fn agents(sources: &[Source], r: &Runs) -> Vec<AgentRow> {
    let mut agents = Vec::new();
    for (s, x) in sources.iter().zip(&r.runs) {
        match &x.agents {
            Some(rows) => agents.extend(rows.iter().cloned()),
            None => agents.push(AgentRow {
                agent: s.agent(),
                file: s.file.clone(),
                start_unix_us: x.window.start_unix_us,
                end_unix_us: x.window.end_unix_us,
                start_late_ms: x.window.start_late_ms,
                clients: x.clients,
                connections: x.connections,
                count: x.summary.count,
                ok: x.summary.ok,
                failed: x.summary.failed,
                total_s: x.summary.total_s,
                requests_per_sec: x.summary.requests_per_sec,
                p50_ms: percentile_in(&x.latency_distribution, 50.0),
                p99_ms: percentile_in(&x.latency_distribution, 99.0),
                client_cpu_us_per_request: x.cost.client_cpu_us_per_request,
                server_cpu_us_per_request: x.cost.server_cpu_us_per_request,
            }),
        }
    }
    agents
}

/// The histogram of a section the merge has, encoded (None: the merge has no such section).
fn encoded<T>(section: &Option<(T, Histogram<u64>)>) -> Option<String> {
    section.as_ref().map(|(_, h)| hdr::encode(h))
}
