//! The stacks that ran side by side, as one table of figures and their ratios.

use std::fmt::Write;

use crate::report::RunReport;
use crate::report::derive::ratio;
use crate::report::plus;
use crate::report::show::{self, num};

/// The stacks that ran side by side (two to four of HTTP/1.1, HTTP/2, gRPC, HTTP/3, in that
/// order): each figure per stack, then each later stack's figure divided by each earlier
/// one's, so with the first three the table parts h2 framing and multiplexing (HTTP/2 /
/// HTTP/1.1) from protobuf against JSON (gRPC / HTTP/2). With HTTP/3, packets are TCP
/// segments or UDP datagrams, and bytes on the wire include the estimated IP and TCP or UDP
/// headers, so that its ratios to the TCP stacks hold.
pub(super) fn render_comparison(out: &mut String, runs: &[RunReport]) {
    let cols: Vec<&RunReport> = ["http", "h2", "grpc", "h3"]
        .iter()
        .filter_map(|p| runs.iter().find(|r| r.proto == *p))
        .collect();
    if cols.len() < 2 {
        return;
    }
    let short = |r: &RunReport| r.title;
    let pairs = crate::report::ratio_pairs(cols.len());
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
            let r = ratio(figs[n].1, figs[d].1);
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
    if cols.iter().any(|c| c.wire.h3.is_some()) {
        row("Packets out / request", &|r| {
            fig(r.wire.packets_per_request().0, 2)
        });
        row("Packets in / request", &|r| {
            fig(r.wire.packets_per_request().1, 2)
        });
        row("On the wire out / request", &|r| {
            fig(r.wire.wire_bytes_out_per_request, 1)
        });
        row("On the wire in / request", &|r| {
            fig(r.wire.wire_bytes_in_per_request, 1)
        });
    }
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
