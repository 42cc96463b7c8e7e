//! The text report: ghz / etcd-benchmark layout per protocol, a Wire block, and the ratio table.

use std::fmt::Write;

use super::show::{self, num, or_na};
use crate::report::{LayerTotals, Report, RunReport, Wire, plus};
use wirebench_wire::h2::counts::H2Counts;
use wirebench_wire::h2::frame::FrameType;

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    for run in &report.runs {
        render_run(&mut out, report, run);
    }
    render_comparison(&mut out, &report.runs);
    out
}

/// The stacks that ran side by side (two or three of HTTP/1.1, HTTP/2, gRPC, in that order):
/// each figure per stack, then each later stack's figure divided by each earlier one's, so
/// with all three the table parts h2 framing and multiplexing (HTTP/2 / HTTP/1.1) from
/// protobuf against JSON (gRPC / HTTP/2).
fn render_comparison(out: &mut String, runs: &[RunReport]) {
    let cols: Vec<&RunReport> = ["http", "h2", "grpc"]
        .iter()
        .filter_map(|p| runs.iter().find(|r| r.proto == *p))
        .collect();
    if cols.len() < 2 {
        return;
    }
    let short = |r: &RunReport| r.title;
    let pairs = super::ratio_pairs(cols.len());
    let names: Vec<String> = pairs
        .iter()
        .map(|&(n, d)| format!("{} / {}", short(cols[n]), short(cols[d])))
        .collect();
    let _ = writeln!(out, "Comparison (ratio = {}):", names.join(", "));
    let mut head = format!("  {:<26}", "");
    for c in &cols {
        let _ = write!(head, " {:>12}", short(c));
    }
    for (&(n, d), name) in pairs.iter().zip(&names) {
        let label = if pairs.len() == 1 {
            "ratio".to_string()
        } else {
            format!("{}/{}", cols[n].proto, cols[d].proto)
        };
        let _ = write!(head, " {:>w$}", label, w = 8.max(name.len().min(9)));
    }
    let _ = writeln!(out, "{}", head.trim_end());
    // one row: the figure per stack (shown, and as a number for the ratio; `None`: n/a)
    let mut row = |name: &str, fig: &dyn Fn(&RunReport) -> (String, Option<f64>)| {
        let figs: Vec<(String, Option<f64>)> = cols.iter().map(|c| fig(c)).collect();
        let mut line = format!("  {name:<26}");
        for (shown, _) in &figs {
            let _ = write!(line, " {shown:>12}");
        }
        for (&(n, d), pname) in pairs.iter().zip(&names) {
            let r = super::derive::ratio(figs[n].1, figs[d].1);
            let w = 8.max(pname.len().min(9));
            let _ = write!(line, " {:>w$}", show::ratio(r));
        }
        let _ = writeln!(out, "{line}");
    };
    // the figure shown with `digits` decimals (n/a where nothing was measured) and kept for
    // the ratio (a ratio only over a positive divisor)
    let fig = |v: Option<f64>, digits: usize| (num(v, digits), v);
    row("Requests/sec", &|r| fig(r.summary.requests_per_sec, 1));
    row("Latency p50 (ms)", &|r| fig(r.percentile_ms(50.0), 3));
    row("Latency p99 (ms)", &|r| fig(r.percentile_ms(99.0), 3));
    row("Connections", &|r| {
        let n = r.wire.connections_opened;
        (n.to_string(), Some(n as f64))
    });
    row("Bytes out / request", &|r| {
        fig(r.wire.bytes_out_per_request, 1)
    });
    row("Bytes in / request", &|r| {
        fig(r.wire.bytes_in_per_request, 1)
    });
    row("TCP segments out / request", &|r| {
        fig(r.wire.segments_out_per_request, 2)
    });
    row("TCP segments in / request", &|r| {
        fig(r.wire.segments_in_per_request, 2)
    });
    row("Syscalls / request", &|r| {
        fig(r.cost.syscalls_per_request, 2)
    });
    row("  reads + writes", &|r| {
        fig(plus(r.cost.reads_per_request, r.cost.writes_per_request), 2)
    });
    row("  would-block", &|r| {
        fig(
            plus(
                r.cost.read_would_block_per_request,
                r.cost.write_would_block_per_request,
            ),
            2,
        )
    });
    row("  other", &|r| fig(r.cost.other_syscalls_per_request, 2));
    row("Context switches / request", &|r| {
        fig(r.cost.context_switches_per_request, 2)
    });
    row("Client CPU / request (µs)", &|r| {
        fig(r.cost.client_cpu_us_per_request, 1)
    });
    if cols
        .iter()
        .any(|c| c.cost.server_cpu_us_per_request.is_some())
    {
        row("Server CPU / request (µs)", &|r| {
            fig(r.cost.server_cpu_us_per_request, 1)
        });
    }
}

fn render_run(out: &mut String, report: &Report, run: &RunReport) {
    let s = &run.summary;
    let _ = writeln!(out, "{} — {}", run.title, report.workload);
    let conns = if run.proto == "http" {
        match run.pipeline {
            Some(n) if n > 1 => format!(
                "{} connections (HTTP/1.1, pipelined: up to {n} requests in flight on each)",
                run.connections
            ),
            _ => format!("{} connections (HTTP/1.1: one per client)", run.connections),
        }
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
    if let Some(rows) = &run.agents {
        super::merge::render_agents(out, rows);
    }
    if let Some(o) = &run.open_loop {
        render_open_loop(out, o);
    }
    if let Some(rows) = &run.stages {
        render_stages(out, rows, run.open_loop.is_some());
    }
    if let Some(f) = &run.failover
        && (!f.events.is_empty() || f.rediscovery_failures > 0)
    {
        render_failover(out, f);
    }
    if let Some(classes) = &run.classes {
        render_classes(out, classes, s.count);
    }
    if let Some(c) = &run.compaction {
        render_compaction(out, c);
    }
    if let Some(l) = &run.leases {
        render_leases(out, l);
    }
    if let Some(v) = &run.verify {
        let _ = writeln!(
            out,
            "Verify: {} acknowledged writes looked up at their revisions (via {}): {} lost",
            v.checked, v.via, v.lost
        );
        if v.retried > 0 {
            let _ = writeln!(
                out,
                "  {} lookups asked again (an election's error, or a member lost or silent)",
                v.retried
            );
        }
        for l in &v.lost_examples {
            let _ = writeln!(
                out,
                "  lost: key {} acknowledged at revision {}, mod revision there {}",
                l.key_index,
                l.revision,
                l.found.map_or("none".to_string(), |f| f.to_string())
            );
        }
        let _ = writeln!(out);
    }
    if let Some(c) = &run.connection_setup {
        render_connection_setup(out, c);
    }
    if let Some(s) = &run.streaming {
        let _ = writeln!(
            out,
            "Streaming: {} messages, {} per call, {} messages/s",
            s.messages,
            num(s.messages_per_call, 2),
            num(s.messages_per_sec, 1)
        );
        let first: Vec<String> = s
            .first_message_distribution
            .iter()
            .filter(|p| [50.0, 90.0, 99.0].contains(&p.percentile))
            .map(|p| format!("p{} {}", p.percentile, show::ms(p.latency_ms)))
            .collect();
        let _ = writeln!(
            out,
            "  latency to the first message: average {}, {} (to the last: the distribution above)",
            show::ms(s.first_message_average_ms),
            if first.is_empty() {
                "no call had a message".to_string()
            } else {
                first.join(", ")
            }
        );
        let _ = writeln!(out);
    }
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
    render_cost(out, run);
    let w = &run.wire;
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Wire (per request = over the {} requests written on the connections, warmup included; \
         each connection until its close):",
        w.requests_on_wire
    );
    let _ = writeln!(
        out,
        "  Connections opened:       {} ({} reconnects)",
        w.connections_opened, w.reconnects
    );
    if w.connect_failures > 0 {
        let _ = writeln!(
            out,
            "  Connect failures:         {} (last: {})",
            w.connect_failures,
            w.connect_error.as_deref().unwrap_or("-")
        );
    }
    let _ = writeln!(
        out,
        "  Requests / connection:    {}",
        num(w.requests_per_connection, 1)
    );
    if let Some(c) = &run.connect_times {
        let p = |q: f64| crate::report::percentile_in(&c.distribution, q);
        let _ = writeln!(
            out,
            "  TCP connect time:         p50 {}, p99 {}, slowest {} ({} connections)",
            show::ms(p(50.0)),
            show::ms(p(99.0)),
            show::ms(c.slowest_ms),
            c.connections
        );
    }
    if let Some(m) = &run.memory {
        let per_stream = if run.proto == "grpc" {
            format!(
                ", {} B per stream in flight",
                num(m.rss_per_in_flight_bytes, 0)
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  Memory:                   {:.1} MiB RSS mid-run, {:.1} MiB before connecting: \
             {} B per connection{per_stream}{}; peak {:.1} MiB",
            m.rss_steady_kib as f64 / 1024.0,
            m.rss_baseline_kib as f64 / 1024.0,
            num(m.rss_per_connection_bytes, 0),
            if m.includes_server {
                " (the built-in server runs in this process: both ends included)"
            } else {
                ""
            },
            m.peak_rss_kib as f64 / 1024.0
        );
    }
    let _ = writeln!(
        out,
        "  Bytes out / request:      {} ({} in all)",
        num(w.bytes_out_per_request, 1),
        w.bytes_out
    );
    let _ = writeln!(
        out,
        "  Bytes in / request:       {} ({} in all)",
        num(w.bytes_in_per_request, 1),
        w.bytes_in
    );
    let tcp_note = if w.connections_without_tcp_info > 0 {
        format!(
            " [over the {} requests of the connections with TCP_INFO]",
            w.requests_with_tcp_info
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "  TCP segments out / req:   {} ({} with data){tcp_note}",
        num(w.segments_out_per_request, 2),
        num(w.data_segments_out_per_request, 2)
    );
    let _ = writeln!(
        out,
        "  TCP segments in / req:    {} ({} with data)",
        num(w.segments_in_per_request, 2),
        num(w.data_segments_in_per_request, 2)
    );
    if w.retransmits > 0 || w.connections_without_tcp_info > 0 {
        let _ = writeln!(
            out,
            "  Retransmits:              {} ({} connections without TCP_INFO)",
            w.retransmits, w.connections_without_tcp_info
        );
    }
    let _ = writeln!(
        out,
        "  On the wire / request:    {} out, {} in (with est. IP+TCP headers: {} + {} B)",
        num(w.wire_bytes_out_per_request, 1),
        num(w.wire_bytes_in_per_request, 1),
        w.ip_tcp_header_bytes_out,
        w.ip_tcp_header_bytes_in
    );
    render_close(out, w);
    if let Some(t) = &w.tls {
        let per = |v: u64| num(super::derive::per(v, w.requests_on_wire), 1);
        let _ = writeln!(
            out,
            "  TLS:                      {} handshakes, {} ms average; record overhead {} out, {} in B/request",
            t.handshakes,
            num(
                super::derive::per(t.handshake_us, t.handshakes).map(|us| us / 1000.0),
                2
            ),
            per(t.record_overhead_out),
            per(t.record_overhead_in)
        );
    }
    if let Some(l) = &w.layers {
        render_layers(out, l, w.requests_on_wire, run.proto == "h2");
    }
    if report.per_conn_table {
        render_per_conn(out, run);
    }
    if let Some(l) = &run.request_log {
        let _ = writeln!(
            out,
            "Request log: {} rows (one per measured request); the workers waited {:.1} ms for the writer ({} times, the longest thread {:.1} ms)",
            l.rows, l.writer_wait_ms, l.writer_waits, l.longest_thread_wait_ms
        );
    }
    let _ = writeln!(out);
}

fn render_cost(out: &mut String, run: &RunReport) {
    let c = &run.cost;
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Cost (measured window, worker threads only; per request = over the {} measured requests \
         written):",
        c.requests
    );
    let _ = writeln!(
        out,
        "  Client CPU / request:     {} (user {} ms, sys {} ms)",
        or_na(c.client_cpu_us_per_request, |v| format!("{v:.1} µs")),
        c.client_cpu_user_us / 1000,
        c.client_cpu_sys_us / 1000
    );
    let data = format!(
        "reads {} + {} would-block, writes {} + {} would-block",
        num(c.reads_per_request, 2),
        num(c.read_would_block_per_request, 2),
        num(c.writes_per_request, 2),
        num(c.write_would_block_per_request, 2)
    );
    match c.syscalls {
        Some(n) => {
            let _ = writeln!(
                out,
                "  Syscalls / request:       {} ({n} counted by the kernel)",
                num(c.syscalls_per_request, 2)
            );
            let _ = writeln!(
                out,
                "    of which socket data:   {data}; other {}",
                num(c.other_syscalls_per_request, 2)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "  Syscalls / request:       not available ({})",
                c.kernel_counters_unavailable
                    .as_deref()
                    .unwrap_or("the kernel did not count them")
            );
            let _ = writeln!(out, "    socket data calls:      {data}");
        }
    }
    if let Some(n) = c.context_switches {
        let _ = writeln!(
            out,
            "  Context switches / req:   {} ({n})",
            num(c.context_switches_per_request, 3)
        );
    }
    // not counted (no hardware counters), or counted and n/a per request (none written)
    let hw = |n: Option<u64>, per: Option<f64>| match n {
        Some(_) => num(per, 0),
        None => "not available".to_string(),
    };
    let _ = writeln!(
        out,
        "  Instructions / request:   {}; cycles / request: {}",
        hw(c.instructions, c.instructions_per_request),
        hw(c.cycles, c.cycles_per_request)
    );
    if let Some(n) = c.syscalls_outside_window {
        let _ = writeln!(
            out,
            "  Outside the window:       {n} syscalls, {} context switches (setup and close)",
            or_na(c.context_switches_outside_window, |n| n.to_string())
        );
    }
    match (c.server_cpu_ns, &c.server_cpu_error) {
        (Some(_), _) => {
            let _ = writeln!(
                out,
                "  Server CPU / request:     {}",
                or_na(c.server_cpu_us_per_request, |v| format!("{v:.1} µs"))
            );
        }
        (None, Some(e)) => {
            let _ = writeln!(out, "  Server CPU / request:     not available ({e})");
        }
        (None, None) => {}
    }
}

fn render_close(out: &mut String, w: &Wire) {
    let c = &w.close;
    if c.connections == 0 {
        return;
    }
    let count = |n: Option<u64>| or_na(n, |n| n.to_string());
    let unknown = match c.connections_without_segments {
        0 => String::new(),
        n => format!(" (not counting the {n} without TCP_INFO)"),
    };
    let _ = writeln!(
        out,
        "  Close (apart):            {} B out, {} B in, {} + {} segments{unknown} over {} \
         connections ({} closed by the server's FIN within the bound)",
        c.bytes_out,
        c.bytes_in,
        count(c.segments_out),
        count(c.segments_in),
        c.connections,
        c.drained
    );
}

fn render_per_conn(out: &mut String, run: &RunReport) {
    let _ = writeln!(out);
    let _ = writeln!(out, "Per connection:");
    let _ = writeln!(
        out,
        "  {:>6} {:>3} {:>8} {:>10} {:>10} {:>8} {:>8} {:>8} {:>8} {:>5} {:>7} {:>6} {:>9}",
        "port",
        "ep",
        "requests",
        "bytes out",
        "bytes in",
        "writes",
        "reads",
        "segs out",
        "segs in",
        "retr",
        "rtt µs",
        "mss",
        "life ms"
    );
    for c in &run.per_connection {
        // TCP_INFO not read: its figures are n/a, not 0
        let t = |f: fn(&crate::stats::TcpInfo) -> u64| or_na(c.tcp.as_ref(), |t| f(t).to_string());
        let _ = writeln!(
            out,
            "  {:>6} {:>3} {:>8} {:>10} {:>10} {:>8} {:>8} {:>8} {:>8} {:>5} {:>7} {:>6} {:>9.1}",
            c.local_port,
            c.endpoint,
            c.requests,
            c.bytes_out,
            c.bytes_in,
            c.write_calls,
            c.read_calls,
            t(|t| t.segs_out),
            t(|t| t.segs_in),
            t(|t| t.retransmits),
            t(|t| t.rtt_us),
            t(|t| t.mss),
            c.lifetime_us as f64 / 1000.0
        );
    }
}

/// `plain`: plain HTTP/2, whose DATA is bodies (no gRPC rows).
fn render_layers(out: &mut String, l: &LayerTotals, requests: u64, plain: bool) {
    let per = |v: u64| super::derive::per(v, requests);
    let _ = writeln!(out);
    let _ = writeln!(out, "Layers (bytes per request, out / in):");
    let mut row = |name: &str, o: Option<f64>, i: Option<f64>| {
        let _ = writeln!(out, "  {name:<26}{:>9} /{:>9}", num(o, 1), num(i, 1));
    };
    if let Some(h) = &l.http1 {
        row(
            "start line + headers",
            per(h.request_head_bytes),
            per(h.response_head_bytes),
        );
        row(
            "body",
            per(h.request_body_bytes),
            per(h.response_body_bytes),
        );
        row("chunk framing", per(0), per(h.chunk_framing_bytes));
    }
    if let Some(h) = &l.h2 {
        let (o, i) = (&h.out, &h.inbound);
        let dh = |d: &H2Counts| d.frame(FrameType::Data).count * 9;
        let hh = |d: &H2Counts| {
            (d.frame(FrameType::Headers).count + d.frame(FrameType::Continuation).count) * 9
        };
        row("HEADERS frame headers", per(hh(o)), per(hh(i)));
        row(
            "HPACK header blocks",
            per(o.hpack_bytes),
            per(i.hpack_bytes),
        );
        row("DATA frame headers", per(dh(o)), per(dh(i)));
        if plain {
            row(
                "bodies (DATA payload)",
                per(o.data_payload_bytes),
                per(i.data_payload_bytes),
            );
        } else {
            row(
                "gRPC 5-byte prefixes",
                per(o.grpc_prefix_bytes),
                per(i.grpc_prefix_bytes),
            );
            row(
                "protobuf messages",
                per(o.grpc_message_bytes),
                per(i.grpc_message_bytes),
            );
        }
        // control frames after setup (setup frames are reported once, below)
        let ctl = |d: &H2Counts| {
            d.control_frame_bytes()
                .saturating_sub(d.setup_bytes.saturating_sub(d.preface_bytes))
        };
        row("control frames", per(ctl(o)), per(ctl(i)));
        let share = |d: &H2Counts| {
            num(
                super::derive::per(d.hpack_bytes, d.header_list_bytes).map(|r| r * 100.0),
                0,
            )
        };
        let _ = writeln!(
            out,
            "  HPACK blocks are {}% / {}% of the uncompressed header lists",
            share(o),
            share(i)
        );
        let _ = writeln!(
            out,
            "  setup, once per connection: {} B out, {} B in (the frames before the first HEADERS: preface, SETTINGS and ACKs, PING, WINDOW_UPDATE)",
            l.setup_bytes_out, l.setup_bytes_in
        );
        for (dir, d) in [("out", o), ("in", i)] {
            // the types seen, by name
            let mut seen: Vec<(&str, u64)> = FrameType::ALL
                .iter()
                .map(|&t| (t.name(), d.frame(t).count))
                .filter(|&(_, n)| n > 0)
                .collect();
            seen.sort_unstable();
            let list: Vec<String> = seen.iter().map(|(k, n)| format!("{k} {n}")).collect();
            let _ = writeln!(out, "  frames {dir}: {}", list.join(", "));
        }
    }
}

fn render_connection_setup(out: &mut String, c: &crate::report::ConnectionSetup) {
    let _ = writeln!(
        out,
        "Connection setup (--requests-per-conn {}: the latency above includes each request's connect):",
        c.requests_per_conn
    );
    let _ = writeln!(
        out,
        "  Connections / request:    {}; TCP connect {} average",
        num(c.connections_per_request, 3),
        show::ms(c.tcp_connect_average_ms)
    );
    if let Some(t) = &c.tls {
        let _ = writeln!(
            out,
            "  TLS handshakes:           {} ({} full, {} resumed), {} average, client CPU {} µs, {} B out + {} B in each",
            t.handshakes,
            t.full,
            t.resumed,
            show::ms(t.average_ms),
            num(t.client_cpu_us, 1),
            num(t.bytes_out, 0),
            num(t.bytes_in, 0)
        );
    }
    let _ = writeln!(
        out,
        "  Without the setup:        average {}",
        show::ms(c.without_setup_average_ms)
    );
    for p in &c.without_setup_distribution {
        if [50.0, 90.0, 99.0].contains(&p.percentile) {
            let _ = writeln!(out, "    {} % in {}", p.percentile, show::ms(p.latency_ms));
        }
    }
    let _ = writeln!(out);
}

/// txn-mixed: each class's figures (the summary above covers them all); `count`: the run's.
fn render_classes(out: &mut String, classes: &[crate::report::ClassReport], count: u64) {
    let _ = writeln!(out, "By class (the summary above covers them all):");
    let _ = writeln!(
        out,
        "  {:<6} {:>8} {:>8} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "class", "count", "ok", "failed", "req/s", "average", "p50", "p90", "p99"
    );
    let p = |c: &crate::report::ClassReport, q: f64| {
        show::ms(crate::report::percentile_in(&c.latency_distribution, q))
    };
    for c in classes {
        let _ = writeln!(
            out,
            "  {:<6} {:>8} {:>8} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10}",
            c.class,
            c.count,
            c.ok,
            c.failed,
            num(c.requests_per_sec, 2),
            show::ms(c.average_ms),
            p(c, 50.0),
            p(c, 90.0),
            p(c, 99.0)
        );
    }
    let classed: u64 = classes.iter().map(|c| c.count).sum();
    if classed < count {
        let _ = writeln!(
            out,
            "  {} requests failed before they were made (no class: connect, late)",
            count - classed
        );
    }
    let _ = writeln!(out);
}

/// `--compact-interval`: the compactor's requests beside the load.
pub(super) fn render_compaction(out: &mut String, c: &crate::report::CompactionReport) {
    let _ = writeln!(
        out,
        "Compaction: every {:.3} s to (current revision - {}): {} requests, {} ok, {} failed, {} skipped{}",
        c.interval_s,
        c.index_delta,
        c.requests,
        c.ok,
        c.failed,
        c.skipped,
        c.last_revision
            .map_or_else(String::new, |r| format!("; last compacted at revision {r}"))
    );
    if let Some(e) = &c.last_error {
        let _ = writeln!(out, "  last error: {e}");
    }
    let _ = writeln!(out);
}

/// lease-keepalive: the clients' leases, granted before the run and revoked after it.
fn render_leases(out: &mut String, l: &crate::report::LeaseReport) {
    let _ = writeln!(
        out,
        "Leases: {} granted before the run (TTL {} s, outside the figures), {} revoked after it{}{}",
        l.granted,
        l.ttl_s,
        l.revoked,
        if l.gone > 0 {
            format!(", {} already gone", l.gone)
        } else {
            String::new()
        },
        if l.revoke_failed > 0 {
            format!(", {} left to expire", l.revoke_failed)
        } else {
            String::new()
        }
    );
    if let Some(e) = &l.revoke_error {
        let _ = writeln!(out, "  revoking: {e}");
    }
    let _ = writeln!(out);
}

fn render_failover(out: &mut String, f: &crate::report::FailoverReport) {
    let _ = writeln!(out, "Failover (seconds from the start):");
    for e in &f.events {
        let _ = writeln!(out, "  {}", e.line());
    }
    if f.rediscovery_failures > 0 {
        let _ = writeln!(
            out,
            "  {} re-discoveries found nothing to move to (last: {})",
            f.rediscovery_failures,
            f.last_rediscovery_error.as_deref().unwrap_or("-")
        );
        for a in &f.last_answers {
            let _ = writeln!(out, "    {a}");
        }
    }
    let _ = writeln!(out);
}

fn render_stages(out: &mut String, rows: &[crate::report::StageRow], open_loop: bool) {
    let _ = writeln!(
        out,
        "Stages (outcomes by the stage they completed in{}):",
        if open_loop {
            "; scheduled: sends due in it"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "  {:>3} {:<14} {:>15} {:>9} {:>9} {:>7} {:>10} {:>9} {:>9} {:>10}",
        "#",
        "stage",
        "seconds",
        "scheduled",
        "count",
        "errors",
        "req/s",
        "p50 ms",
        "p99 ms",
        "CPU µs/req"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "  {:>3} {:<14} {:>15} {:>9} {:>9} {:>7} {:>10} {:>9} {:>9} {:>10}",
            r.stage,
            r.spec,
            format!("{:.1}-{:.1}", r.start_s, r.end_s),
            r.scheduled.map_or("-".to_string(), |n| n.to_string()),
            r.count,
            r.errors,
            num(r.requests_per_sec, 1),
            num(r.p50_ms, 3),
            num(r.p99_ms, 3),
            num(r.client_cpu_us_per_request, 1)
        );
    }
    let _ = writeln!(out);
}

fn render_open_loop(out: &mut String, o: &crate::report::OpenLoop) {
    let _ = writeln!(
        out,
        "Open loop: target {:.1} req/s, achieved {} req/s (requests written), average send lag {}",
        o.target_rate,
        num(o.achieved_rate, 1),
        show::ms(o.average_send_lag_ms)
    );
    if let Some(t) = o.timer.filter(|t| *t != crate::stats::TIMERFD) {
        let _ = writeln!(
            out,
            "  the schedule ran on {t}: sends may go up to a millisecond after their time"
        );
    }
    if o.expired_sends > 0 {
        let _ = writeln!(
            out,
            "  {} sends waited longer than --timeout for a free client and were never sent \
             (failed as `late`; not in the achieved rate)",
            o.expired_sends
        );
    }
    if o.late_sends > 0 {
        let _ = writeln!(
            out,
            "  {} sends found no free client at their intended time (all -c busy, or the thread \
             was held up) and went late; their wait is in the corrected latency (largest send lag {})",
            o.late_sends,
            show::ms(o.max_send_lag_ms)
        );
    } else {
        let _ = writeln!(
            out,
            "  every send found a free client (largest send lag {})",
            show::ms(o.max_send_lag_ms)
        );
    }
    let _ = writeln!(
        out,
        "Uncorrected latency (from the actual send time): average {}, slowest {}",
        show::ms(o.uncorrected_average_ms),
        show::ms(o.uncorrected_slowest_ms)
    );
    let line: Vec<String> = o
        .uncorrected_distribution
        .iter()
        .filter(|p| [50.0, 90.0, 99.0, 99.9].contains(&p.percentile))
        .map(|p| format!("p{} {}", p.percentile, show::ms(p.latency_ms)))
        .collect();
    let _ = writeln!(out, "  {}", line.join(", "));
    let _ = writeln!(out);
}
