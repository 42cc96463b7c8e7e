//! The Link section: the emulated path's spec, what the emulator did each way, its own error
//! and CPU, and TCP's view of the same connections.

use std::fmt::Write;

use crate::report::link::{LinkDirection, LinkSection};

/// The section's lines, appended to `out` (a run's report, or `wirebench link`'s account).
pub fn render_link(out: &mut String, l: &LinkSection) {
    let _ = writeln!(
        out,
        "Link {} (emulated: client {} → host {}):",
        l.spec, l.client, l.host
    );
    let _ = writeln!(
        out,
        "  {:<6}{:>10}{:>13}{:>9}{:>8}{:>8}{:>8}{:>7}{:>9}{:>12}{:>12}{:>11}{:>11}",
        "",
        "packets",
        "bytes",
        "random",
        "burst",
        "queue",
        "other",
        "loss",
        "q peak",
        "delay p50",
        "delay p99",
        "error p50",
        "error p99"
    );
    direction(out, "up", &l.up);
    direction(out, "down", &l.down);
    let _ = writeln!(
        out,
        "  emulator CPU {:.3} s user + {:.3} s sys{}{}",
        l.emulator_cpu_user_s,
        l.emulator_cpu_sys_s,
        l.emulator_cpu_us_per_packet
            .map_or(String::new(), |v| format!(", {v:.2} µs per packet")),
        if l.emulator_realtime {
            ""
        } else {
            " (no real-time scheduling: timing less precise)"
        }
    );
    let t = &l.tcp;
    // `wirebench link`: the program's connections are not wirebench's to read
    if t.connections == 0 {
        let _ = writeln!(out);
        return;
    }
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2} ms"));
    let n = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    let _ = writeln!(
        out,
        "  TCP_INFO over {} connections: rtt p50 {}, max {}, min_rtt {}; cwnd p50 {}, max {} segments; {} retransmitted",
        t.connections,
        ms(t.rtt_p50_ms),
        ms(t.rtt_max_ms),
        ms(t.min_rtt_ms),
        n(t.cwnd_p50),
        n(t.cwnd_max),
        t.retransmits
    );
    let _ = writeln!(out);
}

fn direction(out: &mut String, name: &str, d: &LinkDirection) {
    let _ = writeln!(
        out,
        "  {:<6}{:>10}{:>13}{:>9}{:>8}{:>8}{:>8}{:>7}{:>9}{:>9.2} ms{:>9.2} ms{:>8.1} µs{:>8.1} µs{}",
        name,
        d.packets,
        d.bytes,
        d.dropped_random,
        d.dropped_burst,
        d.dropped_queue,
        d.dropped_other,
        d.loss_observed
            .map_or("-".to_string(), |v| format!("{:.2}%", v * 100.0)),
        d.queue_peak_packets,
        d.applied_delay_p50_ms,
        d.applied_delay_p99_ms,
        d.timing_error_p50_us,
        d.timing_error_p99_us,
        if d.held_at_end > 0 {
            format!(" ({} held at the end)", d.held_at_end)
        } else {
            String::new()
        }
    );
}
