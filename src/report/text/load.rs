//! How the load was offered: open loop, stages, connection setup, server streaming.

use std::fmt::Write;

use crate::report::show::{self, num};
use crate::report::{ConnectionSetup, OpenLoop, StageRow, Streaming};

pub(super) fn render_open_loop(out: &mut String, o: &OpenLoop) {
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

pub(super) fn render_stages(out: &mut String, rows: &[StageRow], open_loop: bool) {
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

pub(super) fn render_connection_setup(out: &mut String, c: &ConnectionSetup) {
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

/// Server-streaming calls: messages, and the latency to the first one.
pub(super) fn render_streaming(out: &mut String, s: &Streaming) {
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
