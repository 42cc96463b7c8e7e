//! A run's head, summary, latency histogram and distribution, agents (a merged run), endpoints,
//! and status and error distributions.

use std::fmt::Write;

use crate::report::merge::AgentRow;
use crate::report::show::{self, num};
use crate::report::{Report, RunReport, Summary};

/// The title line, the clients and connections, and (`--agent`, `--start-at`) who measured
/// from when.
pub(super) fn render_head(out: &mut String, report: &Report, run: &RunReport) {
    let _ = writeln!(out, "{} — {}", run.title, report.workload);
    let conns = if run.proto == "http" {
        match run.pipeline {
            Some(n) if n > 1 => format!(
                "{} connections (HTTP/1.1, pipelined: up to {n} requests in flight on each)",
                run.connections
            ),
            _ => format!("{} connections (HTTP/1.1: one per client)", run.connections),
        }
    } else if run.proto == "h3" {
        format!(
            "{} connection(s) carrying the clients as concurrent QUIC streams (HTTP/3)",
            run.connections
        )
    } else {
        let hpack = match report.settings.h2_client {
            "wire" => format!(", HPACK {}", report.settings.hpack),
            _ => String::new(),
        };
        format!(
            "{} connection(s) carrying the clients as concurrent h2 streams (h2 client: {}{hpack})",
            run.connections, report.settings.h2_client
        )
    };
    let _ = writeln!(
        out,
        "  {} clients, {}, {} threads{}",
        run.clients,
        conns,
        run.threads,
        if run.interrupted {
            " — INTERRUPTED"
        } else {
            ""
        }
    );
    if report.agent.is_some() || run.window.start_at.is_some() {
        let at = match (&run.window.start_at, run.window.start_late_ms) {
            (Some(at), Some(late)) if late > 0.0 => {
                format!("measured from --start-at {at}, {late:.3} ms late")
            }
            (Some(at), _) => format!("measured from --start-at {at}"),
            _ => String::new(),
        };
        let sep = if report.agent.is_some() && !at.is_empty() {
            "; "
        } else {
            ""
        };
        let name = report
            .agent
            .as_deref()
            .map_or(String::new(), |a| format!("agent {a}"));
        let _ = writeln!(out, "  {name}{sep}{at}");
    }
}

pub(super) fn render_summary(out: &mut String, s: &Summary) {
    let _ = writeln!(out);
    let _ = writeln!(out, "Summary:");
    let _ = writeln!(out, "  Count:        {}", s.count);
    if s.failed > 0 {
        let _ = writeln!(out, "  OK:           {}", s.ok);
        let _ = writeln!(out, "  Failed:       {}", s.failed);
        if s.outcome_unknown > 0 {
            let _ = writeln!(
                out,
                "  Unknown:      {} (written, then failed: the server may have acted on them)",
                s.outcome_unknown
            );
        }
    }
    if s.retried > 0 {
        let _ = writeln!(
            out,
            "  Retried:      {} (refused unprocessed, sent again on a new connection)",
            s.retried
        );
    }
    if s.reauthenticated > 0 {
        let _ = writeln!(
            out,
            "  Re-auth:      {} (invalid auth token, sent again with a new one)",
            s.reauthenticated
        );
    }
    if s.warmup_requests > 0 {
        let _ = writeln!(out, "  Warmup:       {} (not counted)", s.warmup_requests);
    }
    let _ = writeln!(out, "  Total:        {:.2} s", s.total_s);
    let _ = writeln!(out, "  Slowest:      {}", show::ms(s.slowest_ms));
    let _ = writeln!(out, "  Fastest:      {}", show::ms(s.fastest_ms));
    let _ = writeln!(out, "  Average:      {}", show::ms(s.average_ms));
    let _ = writeln!(out, "  Stddev:       {}", show::ms(s.stddev_ms));
    let _ = writeln!(out, "  Requests/sec: {}", num(s.requests_per_sec, 2));
    let _ = writeln!(out);
}

/// The response time histogram and the latency distribution (none without a success).
pub(super) fn render_latency(out: &mut String, run: &RunReport) {
    if !run.histogram.is_empty() {
        let _ = writeln!(out, "Response time histogram:");
        let max = run
            .histogram
            .iter()
            .map(|b| b.count)
            .max()
            .unwrap_or(0)
            .max(1);
        let width = 2 + run
            .histogram
            .iter()
            .map(|b| b.count.to_string().len())
            .max()
            .unwrap_or(1);
        for b in &run.histogram {
            let bar = ((b.count * 40 + max / 2) / max) as usize;
            let _ = writeln!(
                out,
                "  {:>8.3} {:<width$} |{}",
                b.mark_ms,
                format!("[{}]", b.count),
                "∎".repeat(bar)
            );
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Latency distribution{}:",
            if run.open_loop.is_some() {
                " (from the intended send time, coordinated omission corrected)"
            } else {
                ""
            }
        );
        for p in &run.latency_distribution {
            let _ = writeln!(out, "  {} % in {}", p.percentile, show::ms(p.latency_ms));
        }
        let _ = writeln!(out);
    }
}

/// The agents' rows of a merged run, as the text report shows them.
pub(super) fn render_agents(out: &mut String, rows: &[AgentRow]) {
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

/// Outcomes by endpoint: with several endpoints, or roles found by `--target`.
pub(super) fn render_endpoints(out: &mut String, run: &RunReport) {
    if run.per_endpoint.len() > 1 || run.per_endpoint.iter().any(|e| e.role.is_some()) {
        let _ = writeln!(out, "Endpoints:");
        let _ = writeln!(
            out,
            "  {:<28} {:<9} {:>9} {:>8} {:>10} {:>9} {:>9} {:>9}",
            "endpoint", "role", "requests", "failed", "req/s", "p50 ms", "p90 ms", "p99 ms"
        );
        for e in &run.per_endpoint {
            let _ = writeln!(
                out,
                "  {:<28} {:<9} {:>9} {:>8} {:>10} {:>9} {:>9} {:>9}",
                e.endpoint,
                e.role.as_deref().unwrap_or("-"),
                e.count,
                e.failed,
                num(e.requests_per_sec, 1),
                num(e.p50_ms, 3),
                num(e.p90_ms, 3),
                num(e.p99_ms, 3)
            );
        }
        let _ = writeln!(out);
    }
}

/// The status code distribution and, when requests failed, the error distribution.
pub(super) fn render_outcomes(out: &mut String, run: &RunReport) {
    let _ = writeln!(out, "Status code distribution:");
    for st in &run.status_distribution {
        let _ = writeln!(out, "  [{}]\t{} responses", st.status, st.count);
    }
    if !run.error_distribution.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "Error distribution:");
        for e in &run.error_distribution {
            match &e.message {
                Some(m) => {
                    let _ = writeln!(out, "  [{}]\t{}: {}", e.count, e.kind, m);
                }
                None => {
                    let _ = writeln!(out, "  [{}]\t{}", e.count, e.kind);
                }
            }
        }
    }
}
