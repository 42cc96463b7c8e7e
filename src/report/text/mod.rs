//! The text report: ghz / etcd-benchmark layout per protocol, a Wire block, and the ratio table,
//! one file per group of sections: `summary` (head, summary, latency, agents, endpoints,
//! outcomes), `load` (open loop, stages, connection setup, streaming), `etcd` (failover,
//! classes, compaction, leases, verify), `cost`, `wire` (wire, close, TLS, layers, per
//! connection), `quic` (HTTP/3's rows in the wire block, its layers) and `comparison` (the
//! stacks side by side).

mod comparison;
mod cost;
mod etcd;
mod link;
mod load;
mod quic;
mod summary;
mod wire;

use std::fmt::Write;

use crate::report::{Report, RunReport};

pub(super) use etcd::render_compaction;
pub use link::render_link;

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    for run in &report.runs {
        render_run(&mut out, report, run);
    }
    comparison::render_comparison(&mut out, &report.runs);
    out
}

/// One run, its sections in the order they print; a section the run lacks prints nothing.
fn render_run(out: &mut String, report: &Report, run: &RunReport) {
    summary::render_head(out, report, run);
    if let Some(c) = &run.capacity {
        crate::report::capacity::render_text(out, c);
    }
    summary::render_summary(out, &run.summary);
    summary::render_latency(out, run);
    if let Some(rows) = &run.agents {
        summary::render_agents(out, rows);
    }
    if let Some(o) = &run.open_loop {
        load::render_open_loop(out, o);
    }
    if let Some(rows) = &run.stages {
        load::render_stages(out, rows, run.open_loop.is_some());
    }
    if let Some(f) = &run.failover
        && (!f.events.is_empty() || f.rediscovery_failures > 0)
    {
        etcd::render_failover(out, f);
    }
    if let Some(classes) = &run.classes {
        etcd::render_classes(out, classes, run.summary.count);
    }
    if let Some(c) = &run.compaction {
        etcd::render_compaction(out, c);
    }
    if let Some(l) = &run.leases {
        etcd::render_leases(out, l);
    }
    if let Some(v) = &run.verify {
        etcd::render_verify(out, v);
    }
    if let Some(l) = &run.link {
        link::render_link(out, l);
    }
    if let Some(c) = &run.connection_setup {
        load::render_connection_setup(out, c);
    }
    if let Some(s) = &run.streaming {
        load::render_streaming(out, s, &run.wire);
    }
    summary::render_endpoints(out, run);
    summary::render_outcomes(out, run);
    cost::render_cost(out, run);
    wire::render_wire(out, run, report.per_conn_table);
    if let Some(l) = &run.request_log {
        let _ = writeln!(
            out,
            "Request log: {} rows (one per measured request); the workers waited {:.1} ms for the writer ({} times, the longest thread {:.1} ms)",
            l.rows, l.writer_wait_ms, l.writer_waits, l.longest_thread_wait_ms
        );
    }
    let _ = writeln!(out);
}
