//! `--html FILE`: the report as one self-contained page (its tables, the charts inline as
//! SVG, the text report; no script, no stylesheet or font fetched).

use std::fmt::Write;

use super::capacity::Capacity;
use super::show::num;
use super::{Report, RunReport};

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A figure for a cell: `n/a` when not measured.
fn cell(v: Option<f64>, decimals: usize) -> String {
    num(v.filter(|v| v.is_finite()), decimals)
}

const STYLE: &str = "body{font-family:'DejaVu Sans',Arial,sans-serif;margin:24px 32px;color:#222;\
max-width:1200px}h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:28px;\
border-bottom:1px solid #ddd;padding-bottom:4px}.meta{color:#555;font-size:13px}\
table{border-collapse:collapse;font-size:13px;margin:8px 0}th,td{border:1px solid #ddd;\
padding:3px 10px;text-align:right}th:first-child,td:first-child{text-align:left}\
th{background:#f4f4f4}svg{max-width:100%;height:auto;display:block;margin:8px 0}\
pre{font-size:12px;background:#f8f8f8;padding:10px;overflow-x:auto}.note{color:#555;font-size:13px}\
td.words{text-align:left}";

/// One table: a header row of `stacks` after `first`, then `rows` (a name and a cell per
/// stack).
fn table(out: &mut String, first: &str, stacks: &[&RunReport], rows: &[(String, Vec<String>)]) {
    out.push_str("<table><tr>");
    let _ = write!(out, "<th>{}</th>", esc(first));
    for r in stacks {
        let _ = write!(out, "<th>{}</th>", esc(r.title));
    }
    out.push_str("</tr>\n");
    for (name, cells) in rows {
        let _ = write!(out, "<tr><td>{}</td>", esc(name));
        for c in cells {
            let _ = write!(out, "<td>{}</td>", esc(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

fn row(
    name: &str,
    stacks: &[&RunReport],
    f: impl Fn(&RunReport) -> String,
) -> (String, Vec<String>) {
    (name.to_string(), stacks.iter().map(|r| f(r)).collect())
}

/// The page: `report`'s tables, the charts (`svgs`: whole SVG documents, drawn in order) and
/// the text report (`text`), in one file.
pub fn render(report: &Report, svgs: &[String], text: &str) -> String {
    let stacks: Vec<&RunReport> = report.runs.iter().collect();
    let stacks = &stacks[..];
    let mut o = String::with_capacity(64 * 1024 + text.len());
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = writeln!(
        o,
        "<title>wirebench: {}</title><style>{STYLE}</style></head><body>",
        esc(&report.workload)
    );
    let _ = writeln!(o, "<h1>{}</h1>", esc(&report.workload));
    let s = &report.settings;
    let stop = match (s.total_requests, s.duration_s) {
        (Some(n), _) => format!("{n} requests per stack"),
        (_, Some(d)) => format!("{d} s per stack"),
        _ => String::new(),
    };
    let _ = writeln!(
        o,
        "<p class=\"meta\">wirebench {} &middot; {} &middot; {} clients, {} connection(s), {} threads &middot; {} &middot; warmup {} s &middot; timeout {} s</p>",
        esc(report.version),
        esc(&report.endpoints.join(", ")),
        s.clients,
        s.conns,
        s.threads,
        esc(&stop),
        s.warmup_s,
        s.timeout_s
    );

    summary(&mut o, stacks);
    latency(&mut o, stacks);
    capacity(&mut o, stacks);
    o.push_str("<h2>Charts</h2>\n");
    for svg in svgs {
        o.push_str(svg);
    }

    statuses(&mut o, stacks);
    cost(&mut o, stacks);
    wire(&mut o, stacks);
    h3(&mut o, stacks);
    link(&mut o, stacks);
    stages(&mut o, stacks);
    per_endpoint(&mut o, stacks);
    request_log(&mut o, stacks);
    let _ = write!(
        o,
        "<h2>The text report</h2>\n<details><summary>as printed</summary><pre>{}</pre></details>\n</body></html>\n",
        esc(text)
    );
    o
}

/// The summary table: counts, rate, latency figures, open-loop sends.
fn summary(o: &mut String, stacks: &[&RunReport]) {
    o.push_str("<h2>Summary</h2>\n");
    let p = |v: Option<f64>| cell(v, 3);
    let mut rows = vec![
        row("Count", stacks, |r| r.summary.count.to_string()),
        row("OK", stacks, |r| r.summary.ok.to_string()),
        row("Failed", stacks, |r| r.summary.failed.to_string()),
        row("Total (s)", stacks, |r| format!("{:.2}", r.summary.total_s)),
        row("Requests/sec", stacks, |r| {
            cell(r.summary.requests_per_sec, 1)
        }),
        row("Fastest (ms)", stacks, |r| p(r.summary.fastest_ms)),
        row("Average (ms)", stacks, |r| p(r.summary.average_ms)),
        row("Slowest (ms)", stacks, |r| p(r.summary.slowest_ms)),
        row("Stddev (ms)", stacks, |r| p(r.summary.stddev_ms)),
        row("Connections", stacks, |r| r.connections.to_string()),
    ];
    if stacks.iter().any(|r| r.open_loop.is_some()) {
        rows.push(row("Target rate (/s)", stacks, |r| {
            cell(r.open_loop.as_ref().map(|o| o.target_rate), 1)
        }));
        rows.push(row("Late sends", stacks, |r| {
            cell(r.open_loop.as_ref().map(|o| o.late_sends as f64), 0)
        }));
    }
    table(o, "", stacks, &rows);
}

/// The latency distribution table, and the open-loop note.
fn latency(o: &mut String, stacks: &[&RunReport]) {
    o.push_str("<h2>Latency distribution (ms)</h2>\n");
    let rows: Vec<(String, Vec<String>)> = super::PERCENTILES
        .iter()
        .map(|&pc| row(&format!("{pc} %"), stacks, |r| cell(r.percentile_ms(pc), 3)))
        .collect();
    table(o, "percentile", stacks, &rows);
    if stacks.iter().any(|r| r.open_loop.is_some()) {
        o.push_str(
            "<p class=\"note\">Open loop: latency from each request's intended send time \
             (coordinated omission corrected); the charts draw the uncorrected figures dashed.</p>\n",
        );
    }
}

/// The capacity searches (`--find-max`), when there were any: a row per stack, then each
/// stack's steps (the charts that follow begin with their latency against rate).
fn capacity(o: &mut String, stacks: &[&RunReport]) {
    let searched: Vec<(&str, &Capacity)> = stacks
        .iter()
        .filter_map(|r| r.capacity.as_ref().map(|c| (r.title, c)))
        .collect();
    if searched.is_empty() {
        return;
    }
    o.push_str("<h2>Capacity</h2>\n<table><tr><th>stack</th><th>objectives</th><th>answer (req/s)</th><th>ending</th><th>lowest broken (req/s)</th><th>steps</th><th>confirmed</th><th>achieved at the answer (req/s)</th><th>p99 at the answer (ms)</th></tr>\n");
    for (title, c) in &searched {
        let (confirmed, achieved, p99) = match &c.confirmation {
            Some(s) => (
                format!("{} of {}", s.met, s.runs),
                format!(
                    "{}-{}",
                    cell(s.achieved_rps_min, 0),
                    cell(s.achieved_rps_max, 0)
                ),
                format!("{}-{}", cell(s.p99_ms_min, 3), cell(s.p99_ms_max, 3)),
            ),
            None => ("not confirmed".into(), "-".into(), "-".into()),
        };
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td class=\"words\">{}</td><td>{}</td><td class=\"words\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(title),
            esc(&c.objectives.join(", ")),
            c.answer_rps.map_or("none".into(), |a| cell(Some(a), 0)),
            esc(c.ending.says()),
            c.broken_rps.map_or("none".into(), |b| cell(Some(b), 0)),
            c.steps.len(),
            confirmed,
            achieved,
            p99
        );
    }
    o.push_str("</table>\n");
    for (title, c) in &searched {
        let _ = writeln!(
            o,
            "<p><b>{} steps</b> ({} measured requests, {:.1} s)</p>",
            esc(title),
            c.requests,
            c.elapsed_s
        );
        o.push_str("<table><tr>");
        for h in super::capacity::STEP_HEADS {
            let _ = write!(o, "<th>{h}</th>");
        }
        o.push_str("</tr>\n");
        for (i, s) in c.steps.iter().enumerate() {
            let [figures @ .., verdict] = s.cells(i + 1);
            o.push_str("<tr>");
            for f in figures {
                let _ = write!(o, "<td>{}</td>", esc(&f));
            }
            let _ = writeln!(o, "<td class=\"words\">{}</td></tr>", esc(&verdict));
        }
        o.push_str("</table>\n");
    }
}

/// Each stack's statuses and errors.
fn statuses(o: &mut String, stacks: &[&RunReport]) {
    o.push_str("<h2>Status and errors</h2>\n");
    for r in stacks {
        let _ = write!(o, "<p><b>{}</b>: ", esc(r.title));
        let statuses: Vec<String> = r
            .status_distribution
            .iter()
            .map(|s| format!("[{}] {}", s.status, s.count))
            .collect();
        o.push_str(&esc(&if statuses.is_empty() {
            "no response".to_string()
        } else {
            statuses.join(", ")
        }));
        for e in &r.error_distribution {
            let _ = write!(
                o,
                "<br>{} &times; {}{}",
                e.count,
                esc(e.kind),
                e.message
                    .as_ref()
                    .map(|m| format!(": {}", esc(m)))
                    .unwrap_or_default()
            );
        }
        o.push_str("</p>\n");
    }
}

/// The cost per request table.
fn cost(o: &mut String, stacks: &[&RunReport]) {
    o.push_str("<h2>Cost per request (measured window, worker threads)</h2>\n");
    let rows = vec![
        row("Requests written", stacks, |r| r.cost.requests.to_string()),
        row("Client CPU (µs)", stacks, |r| {
            cell(r.cost.client_cpu_us_per_request, 2)
        }),
        row("Syscalls", stacks, |r| cell(r.cost.syscalls_per_request, 2)),
        row("Context switches", stacks, |r| {
            cell(r.cost.context_switches_per_request, 3)
        }),
        row("Reads", stacks, |r| cell(r.cost.reads_per_request, 2)),
        row("Writes", stacks, |r| cell(r.cost.writes_per_request, 2)),
        row("Server CPU (µs)", stacks, |r| {
            cell(r.cost.server_cpu_us_per_request, 2)
        }),
    ];
    table(o, "", stacks, &rows);
}

/// The wire table: bytes, segments and connections per request.
fn wire(o: &mut String, stacks: &[&RunReport]) {
    o.push_str("<h2>Wire (per request on the connections)</h2>\n");
    let rows = vec![
        row("Bytes out", stacks, |r| {
            cell(r.wire.bytes_out_per_request, 1)
        }),
        row("Bytes in", stacks, |r| cell(r.wire.bytes_in_per_request, 1)),
        row("TCP segments out", stacks, |r| {
            cell(r.wire.segments_out_per_request, 2)
        }),
        row("TCP segments in", stacks, |r| {
            cell(r.wire.segments_in_per_request, 2)
        }),
        row("Packets out (TCP segments | UDP datagrams)", stacks, |r| {
            cell(r.wire.packets_per_request().0, 2)
        }),
        row("Packets in (TCP segments | UDP datagrams)", stacks, |r| {
            cell(r.wire.packets_per_request().1, 2)
        }),
        row("On the wire out (B)", stacks, |r| {
            cell(r.wire.wire_bytes_out_per_request, 1)
        }),
        row("On the wire in (B)", stacks, |r| {
            cell(r.wire.wire_bytes_in_per_request, 1)
        }),
        row("Connections opened", stacks, |r| {
            r.wire.connections_opened.to_string()
        }),
    ];
    table(o, "", stacks, &rows);
}

/// The HTTP/3 table, when a stack ran over QUIC: UDP, QUIC's own account, the HTTP/3 layer
/// and the handshakes, per request out / in (per handshake for the handshake rows).
fn h3(o: &mut String, stacks: &[&RunReport]) {
    let stacks: Vec<&RunReport> = stacks
        .iter()
        .copied()
        .filter(|r| r.wire.h3.is_some())
        .collect();
    let stacks = &stacks[..];
    if stacks.is_empty() {
        return;
    }
    o.push_str("<h2>HTTP/3 and QUIC (per request, out / in)</h2>\n");
    type Get = fn(&super::quic::H3Wire) -> (Option<f64>, Option<f64>);
    let pair = |name: &str, digits: usize, f: Get| {
        row(name, stacks, |r| {
            r.wire.h3.as_ref().map_or("-".to_string(), |h| {
                let (a, b) = f(h);
                format!("{} / {}", cell(a, digits), cell(b, digits))
            })
        })
    };
    /// The head or payload bytes per request of the frames of type `name`.
    fn frame(rows: &[super::quic::H3FrameRate], name: &str, payload: bool) -> Option<f64> {
        let r = rows.iter().find(|r| r.frame == name)?;
        if payload {
            r.payload_bytes_per_request
        } else {
            r.header_bytes_per_request
        }
    }
    let rows = vec![
        pair("UDP datagrams", 2, |h| {
            (
                h.udp.datagrams_out_per_request,
                h.udp.datagrams_in_per_request,
            )
        }),
        pair("UDP payload (B)", 1, |h| {
            (h.udp.bytes_out_per_request, h.udp.bytes_in_per_request)
        }),
        pair("On the wire, est. IP+UDP headers (B)", 1, |h| {
            (
                h.udp.wire_bytes_out_per_request,
                h.udp.wire_bytes_in_per_request,
            )
        }),
        pair("HEADERS frame heads (B)", 1, |h| {
            (
                frame(&h.http3.frames_out, "HEADERS", false),
                frame(&h.http3.frames_in, "HEADERS", false),
            )
        }),
        pair("QPACK field sections (B)", 1, |h| {
            (
                h.http3.qpack_section_bytes_out_per_request,
                h.http3.qpack_section_bytes_in_per_request,
            )
        }),
        pair("DATA frame heads (B)", 1, |h| {
            (
                frame(&h.http3.frames_out, "DATA", false),
                frame(&h.http3.frames_in, "DATA", false),
            )
        }),
        pair("Bodies, DATA payload (B)", 1, |h| {
            (
                frame(&h.http3.frames_out, "DATA", true),
                frame(&h.http3.frames_in, "DATA", true),
            )
        }),
        pair("All HTTP/3 frames (B)", 1, |h| {
            (
                h.http3.frame_bytes_out_per_request,
                h.http3.frame_bytes_in_per_request,
            )
        }),
        pair("QUIC's own: UDP payload - HTTP/3 layer (B)", 1, |h| {
            (
                h.quic.overhead_out_per_request,
                h.quic.overhead_in_per_request,
            )
        }),
        pair("QPACK section / fields", 2, |h| {
            (h.http3.qpack_ratio_out, h.http3.qpack_ratio_in)
        }),
        pair("QUIC packets sent / lost (%)", 2, |h| {
            (h.quic.packets_out_per_request, h.quic.loss_percent)
        }),
        pair("RTT smoothed / min (ms)", 3, |h| {
            (h.quic.rtt_ms, h.quic.min_rtt_ms)
        }),
        pair("Handshake: UDP bytes", 0, |h| {
            (h.handshake.bytes_out, h.handshake.bytes_in)
        }),
        pair("Handshake: datagrams", 1, |h| {
            (h.handshake.datagrams_out, h.handshake.datagrams_in)
        }),
        row("Handshake: average (ms), resumed", stacks, |r| {
            r.wire.h3.as_ref().map_or("-".to_string(), |h| {
                format!(
                    "{}, {} of {}",
                    cell(h.handshake.average_ms, 2),
                    h.handshake.resumed,
                    h.handshake.handshakes
                )
            })
        }),
    ];
    table(o, "", stacks, &rows);
}

/// The Link table (`--link`): what the emulated path applied under each stack.
fn link(o: &mut String, stacks: &[&RunReport]) {
    let Some(first) = stacks.iter().find_map(|r| r.link.as_ref()) else {
        return;
    };
    let _ = writeln!(o, "<h2>Link {}</h2>", esc(&first.spec));
    let l = |r: &RunReport, f: &dyn Fn(&super::link::LinkSection) -> String| {
        r.link.as_ref().map_or("-".to_string(), f)
    };
    let rows = vec![
        row("Packets up / down", stacks, |r| {
            l(r, &|k| format!("{} / {}", k.up.packets, k.down.packets))
        }),
        row("Bytes up / down", stacks, |r| {
            l(r, &|k| format!("{} / {}", k.up.bytes, k.down.bytes))
        }),
        row("Dropped up: random / burst / queue", stacks, |r| {
            l(r, &|k| {
                format!(
                    "{} / {} / {}",
                    k.up.dropped_random, k.up.dropped_burst, k.up.dropped_queue
                )
            })
        }),
        row("Dropped down: random / burst / queue", stacks, |r| {
            l(r, &|k| {
                format!(
                    "{} / {} / {}",
                    k.down.dropped_random, k.down.dropped_burst, k.down.dropped_queue
                )
            })
        }),
        row("Delay applied p50 up / down (ms)", stacks, |r| {
            l(r, &|k| {
                format!(
                    "{:.2} / {:.2}",
                    k.up.applied_delay_p50_ms, k.down.applied_delay_p50_ms
                )
            })
        }),
        row("Emulator error p99 up / down (µs)", stacks, |r| {
            l(r, &|k| {
                format!(
                    "{:.1} / {:.1}",
                    k.up.timing_error_p99_us, k.down.timing_error_p99_us
                )
            })
        }),
        row("Emulator CPU per packet (µs)", stacks, |r| {
            l(r, &|k| cell(k.emulator_cpu_us_per_packet, 2))
        }),
        row("TCP rtt p50 (ms)", stacks, |r| {
            l(r, &|k| cell(k.tcp.rtt_p50_ms, 2))
        }),
        row("TCP cwnd p50 (segments)", stacks, |r| {
            l(r, &|k| k.tcp.cwnd_p50.map_or("-".into(), |v| v.to_string()))
        }),
        row("TCP retransmits", stacks, |r| {
            l(r, &|k| k.tcp.retransmits.to_string())
        }),
    ];
    table(o, "", stacks, &rows);
}

/// The stages table (`--stages` / `--client-stages`), when the run had stages.
fn stages(o: &mut String, stacks: &[&RunReport]) {
    if let Some(first) = stacks.first()
        && let Some(st) = &first.stages
    {
        o.push_str("<h2>Stages</h2>\n<table><tr><th>stack</th><th>#</th><th>stage</th><th>seconds</th><th>scheduled</th><th>count</th><th>errors</th><th>req/s</th><th>p50 ms</th><th>p99 ms</th></tr>\n");
        for r in stacks {
            for row in r.stages.as_deref().unwrap_or(st) {
                let _ = writeln!(
                    o,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1}-{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(r.title),
                    row.stage,
                    esc(&row.spec),
                    row.start_s,
                    row.end_s,
                    row.scheduled.map_or("-".into(), |n| n.to_string()),
                    row.count,
                    row.errors,
                    cell(row.requests_per_sec, 1),
                    cell(row.p50_ms, 3),
                    cell(row.p99_ms, 3)
                );
            }
        }
        o.push_str("</table>\n");
    }
}

/// The per-endpoint table, when a stack ran against more than one endpoint.
fn per_endpoint(o: &mut String, stacks: &[&RunReport]) {
    if stacks.iter().any(|r| r.per_endpoint.len() > 1) {
        o.push_str("<h2>Per endpoint</h2>\n<table><tr><th>stack</th><th>endpoint</th><th>role</th><th>count</th><th>failed</th><th>req/s</th><th>p50 ms</th><th>p99 ms</th></tr>\n");
        for r in stacks {
            for e in &r.per_endpoint {
                let _ = writeln!(
                    o,
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(r.title),
                    esc(&e.endpoint),
                    esc(e.role.as_deref().unwrap_or("-")),
                    e.count,
                    e.failed,
                    cell(e.requests_per_sec, 1),
                    cell(e.p50_ms, 3),
                    cell(e.p99_ms, 3)
                );
            }
        }
        o.push_str("</table>\n");
    }
}

/// The request log's figures (`--log-requests`), when there was one.
fn request_log(o: &mut String, stacks: &[&RunReport]) {
    if stacks.iter().any(|r| r.request_log.is_some()) {
        o.push_str("<h2>Request log</h2>\n");
        let rows = vec![
            row("Rows", stacks, |r| {
                cell(r.request_log.as_ref().map(|l| l.rows as f64), 0)
            }),
            row("Waited for the writer (ms)", stacks, |r| {
                cell(r.request_log.as_ref().map(|l| l.writer_wait_ms), 1)
            }),
        ];
        table(o, "", stacks, &rows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::searches;

    #[test]
    fn the_page_has_the_capacity_tables_and_the_curve() {
        let report = searches::report();
        let curve = super::super::svg::capacity_curve(&report).expect("a chart");
        let page = render(&report, std::slice::from_ref(&curve), "the text");
        let at = |s: &str| page.find(s).unwrap_or_else(|| panic!("{s}: {page}"));
        // the section comes before the charts, which begin with the curve
        assert!(at("<h2>Capacity</h2>") < at("<h2>Charts</h2>"));
        assert!(at("<h2>Charts</h2>") < at(&curve));
        // a row per stack: objectives, answer, ending, lowest broken, steps, confirmations
        for row in [
            "<tr><td>HTTP/1.1</td><td class=\"words\">p99&lt;5ms, errors&lt;0.1%</td><td>600</td><td class=\"words\">converged within --precision</td><td>700</td><td>7</td><td>1 of 1</td><td>598-598</td><td>3.300-3.300</td></tr>",
            "<tr><td>gRPC</td><td class=\"words\">p99&lt;5ms, errors&lt;0.1%</td><td>1200</td><td class=\"words\">converged within --precision</td><td>1600</td><td>7</td><td>1 of 1</td><td>1198-1198</td><td>2.600-2.600</td></tr>",
        ] {
            assert!(page.contains(row), "{row}: {page}");
        }
        // each stack's steps, as the text report lists them
        assert!(page.contains("<b>HTTP/1.1 steps</b>") && page.contains("<b>gRPC steps</b>"));
        assert!(page.contains(
            "<tr><td>4</td><td>rise</td><td>800</td><td>700</td><td>3500</td><td>0</td><td>2.000</td><td>9.000</td><td>20.0</td><td>10.0</td><td>20%</td><td>0%</td><td class=\"words\">broke p99&lt;5ms: 9 ms</td></tr>"
        ), "{page}");
        assert!(page.contains("<td>7</td><td>confirm</td><td>1200</td>"));
        assert_eq!(page.matches(">met</td>").count(), 11);
    }

    #[test]
    fn no_capacity_section_without_a_search() {
        let mut report = searches::report();
        for r in &mut report.runs {
            r.capacity = None;
        }
        let page = render(&report, &[], "the text");
        assert!(!page.contains("Capacity"), "{page}");
    }
}
