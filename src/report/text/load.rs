//! How the load was offered: open loop, stages, connection setup, server streaming.

use std::fmt::Write;

use crate::report::show::{self, num};
use crate::report::{ConnectionSetup, OpenLoop, StageRow, Streaming, Wire};

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

/// Streaming calls: messages each way, the latency to the first one, a ping-pong's to each
/// reply, a client stream's from its last message to the response, and the frames and bytes
/// per message.
pub(super) fn render_streaming(out: &mut String, s: &Streaming, wire: &Wire) {
    let sent = if s.messages_sent > 0 {
        format!(
            "; {} sent, {} per call",
            s.messages_sent,
            num(s.messages_sent_per_call, 2)
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "Streaming: {} messages received, {} per call, {} messages/s{sent}",
        s.messages,
        num(s.messages_per_call, 2),
        num(s.messages_per_sec, 1)
    );
    let some = |d: &[crate::report::Percentile]| -> String {
        let p: Vec<String> = d
            .iter()
            .filter(|p| [50.0, 90.0, 99.0].contains(&p.percentile))
            .map(|p| format!("p{} {}", p.percentile, show::ms(p.latency_ms)))
            .collect();
        p.join(", ")
    };
    let first = some(&s.first_message_distribution);
    let _ = writeln!(
        out,
        "  latency to the first message: average {}, {} (to the end: the distribution above)",
        show::ms(s.first_message_average_ms),
        if first.is_empty() {
            "no call had a message".to_string()
        } else {
            first
        }
    );
    if !s.message_latency_distribution.is_empty() {
        let _ = writeln!(
            out,
            "  each message to its reply (ping-pong): average {}, {}",
            show::ms(s.message_latency_average_ms),
            some(&s.message_latency_distribution)
        );
    }
    if !s.last_to_response_distribution.is_empty() {
        let _ = writeln!(
            out,
            "  last message to the response (client stream): average {}, {}",
            show::ms(s.last_to_response_average_ms),
            some(&s.last_to_response_distribution)
        );
    }
    render_per_message(out, s, wire);
    let _ = writeln!(out);
}

/// The h2 frames and socket bytes per message: ours over the messages sent (over the calls
/// for a server-streaming method, which sends one each), the server's over those received.
fn render_per_message(out: &mut String, s: &Streaming, wire: &Wire) {
    use wirebench_wire::h2::frame::FrameType;
    let sent = if s.messages_sent > 0 {
        s.messages_sent
    } else {
        wire.requests_on_wire
    };
    let h2 = wire.layers.as_ref().and_then(|l| l.h2.as_ref());
    let per = |n: u64, d: u64| num(crate::report::derive::per(n, d), 3);
    let frames = |d: &wirebench_wire::h2::counts::H2Counts, n: u64| {
        let data = d.frame(FrameType::Data).count;
        format!(
            "HEADERS {}, DATA {} ({} messages per DATA frame), WINDOW_UPDATE {}",
            per(d.frame(FrameType::Headers).count, n),
            per(data, n),
            num(crate::report::derive::per(d.grpc_messages, data), 2),
            per(d.frame(FrameType::WindowUpdate).count, n)
        )
    };
    let (f_out, f_in) = match h2 {
        Some(h) => (
            format!("{}; ", frames(&h.out, sent)),
            format!("{}; ", frames(&h.inbound, s.messages)),
        ),
        None => (String::new(), String::new()),
    };
    // a server-streaming call sends one request: ours are per call
    let ours = if s.messages_sent > 0 {
        "per message out"
    } else {
        "per call out"
    };
    let _ = writeln!(
        out,
        "  {ours}: {f_out}{} B; per message in: {f_in}{} B",
        num(crate::report::derive::per(wire.bytes_out, sent), 1),
        num(crate::report::derive::per(wire.bytes_in, s.messages), 1)
    );
}
