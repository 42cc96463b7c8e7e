//! The Cost block: the measured window's CPU, syscalls and counters per request written.

use std::fmt::Write;

use crate::report::RunReport;
use crate::report::derive::per;
use crate::report::show::{num, or_na};

pub(super) fn render_cost(out: &mut String, run: &RunReport) {
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
    if let Some(l) = &c.client_loop {
        let how = match l.as_str() {
            crate::stats::CLIENT_LOOP_EPOLL => "one epoll readiness loop per thread",
            crate::stats::CLIENT_LOOP_URING => "one loop per thread, reads through an io_uring",
            crate::stats::CLIENT_LOOP_MIXED => "one loop per thread, io_uring where it could",
            _ => "a runtime task per client or connection",
        };
        let _ = writeln!(out, "  Client loop:              {l} ({how})");
    }
    // a ring's reads are reads, but no syscalls: apart
    let ring = c.data_calls.ring_reads;
    let (reads, through_ring) = match ring {
        0 => (c.reads_per_request, String::new()),
        _ => (
            per(c.data_calls.reads.saturating_sub(ring), c.requests),
            format!(
                " (and {} through the io_uring)",
                num(per(ring, c.requests), 2)
            ),
        ),
    };
    let data = format!(
        "reads {} + {} would-block{through_ring}, writes {} + {} would-block",
        num(reads, 2),
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
