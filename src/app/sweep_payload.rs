//! `wirebench sweep echo | http | grpc`: the packet-size comparison. One run per payload size
//! and stack against an echo server (the built-in one unless `--target`), a URL, or a gRPC
//! method: bytes on the wire, segments, syscalls, CPU, latency and h2 WINDOW_UPDATEs per
//! request, as a table and an SVG line chart.

use std::path::PathBuf;

use serde::Serialize;

use super::{RunError, emit, exit, prepare};
use crate::config::{Config, GrpcRequest, GrpcSpec, TableFormat, WorkloadSpec};
use crate::report::show::{self, num};
use crate::report::svg::{LinePanel, render_lines};
use crate::report::verdict::Broken;
use crate::report::{RunReport, plus};
use crate::server::ServeConfig;
use crate::stack::Proto;
use crate::workload::grpc;
use wirebench_wire::h2::frame::FrameType;

/// What a payload sweep measures; it names the table's JSON schema and the chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepTarget {
    /// an echo server: the payload is the ping, echoed back
    Echo,
    /// a URL: the payload is the request body (or its `{{payload}}` part)
    Http,
    /// a gRPC method: the payload is one string or bytes field of the request
    Grpc,
}

impl SweepTarget {
    pub fn name(self) -> &'static str {
        match self {
            SweepTarget::Echo => "echo",
            SweepTarget::Http => "http",
            SweepTarget::Grpc => "grpc",
        }
    }
}

/// A validated payload sweep: one run configuration per payload size (its stacks in `protos`).
#[derive(Debug)]
pub struct PayloadSweep {
    pub target: SweepTarget,
    /// (payload bytes, the run of that size)
    pub rows: Vec<(u64, Config)>,
    /// the built-in server, when no `--target` was given (started for each payload size)
    pub embedded: Option<ServeConfig>,
    /// `sweep grpc --reflect`: the rows' requests are JSON (`GrpcRequest::ByReflection`, the
    /// same for every row) until the server's schema is known; then this field of it
    /// (`--payload-field`, or the only string or bytes one) is filled with each row's payload
    pub reflect_field: Option<Option<String>>,
    pub format: TableFormat,
    pub output: Option<PathBuf>,
    pub svg: Option<PathBuf>,
}

/// One payload size on one stack.
#[derive(Debug, Clone, Serialize)]
pub struct PayloadRow {
    pub payload_bytes: u64,
    pub proto: &'static str,
    /// `--links`: the row's emulated path (null: loopback without a link)
    pub link: Option<String>,
    /// TCP connections the row's clients used (HTTP/1.1: one per client)
    pub conns: usize,
    pub count: u64,
    pub ok: u64,
    pub failed: u64,
    /// null where the run measured none (a window of no length; no successful request)
    pub qps: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// socket bytes per request, each way (null: no request on the connections)
    pub bytes_out: Option<f64>,
    pub bytes_in: Option<f64>,
    /// both ways with the estimated IP + TCP headers (TCP_INFO segments; null: no
    /// connection's could be read)
    pub wire_bytes: Option<f64>,
    /// TCP segments per request, both ways (HTTP/3: UDP datagrams)
    pub segments: Option<f64>,
    pub syscalls: Option<f64>,
    /// null: no request written
    pub client_cpu_us: Option<f64>,
    pub server_cpu_us: Option<f64>,
    /// h2 WINDOW_UPDATE frames per request, both ways (HTTP/3: QUIC's MAX_DATA and
    /// MAX_STREAM_DATA; null over HTTP/1.1, or without a request on the connections)
    pub window_updates: Option<f64>,
    /// the row's latency histogram (HdrHistogram V2 compressed, base64, ns; JSON only)
    pub latency_hdr: String,
}

impl PayloadRow {
    fn of(payload_bytes: u64, cfg: &Config, r: &RunReport) -> PayloadRow {
        let (w, c) = (&r.wire, &r.cost);
        let window_updates = w.layers.as_ref().and_then(|l| l.h2.as_ref()).and_then(|h| {
            let n = |d: &wirebench_wire::h2::counts::H2Counts| {
                d.frames[FrameType::WindowUpdate as usize].count
            };
            // frames / requests on the wire; none without a request
            let total = n(&h.out) + n(&h.inbound);
            (w.requests_on_wire > 0).then(|| total as f64 / w.requests_on_wire as f64)
        });
        // HTTP/3: QUIC's flow-control updates, and datagrams where TCP has segments
        let quic_updates = w.h3.as_ref().map(|h| {
            let f = |rows: &[crate::report::quic::QuicFrameRate]| {
                rows.iter()
                    .filter(|r| r.frame == "MAX_DATA" || r.frame == "MAX_STREAM_DATA")
                    .filter_map(|r| r.per_request)
                    .sum::<f64>()
            };
            f(&h.quic.frames_out) + f(&h.quic.frames_in)
        });
        let datagrams = w.h3.as_ref().and_then(|h| {
            plus(
                h.udp.datagrams_out_per_request,
                h.udp.datagrams_in_per_request,
            )
        });
        PayloadRow {
            payload_bytes,
            proto: r.proto,
            link: cfg.link.as_ref().map(ToString::to_string),
            conns: r.connections,
            count: r.summary.count,
            ok: r.summary.ok,
            failed: r.summary.failed,
            qps: r.summary.requests_per_sec,
            p50_ms: r.percentile_ms(50.0),
            p99_ms: r.percentile_ms(99.0),
            bytes_out: w.bytes_out_per_request,
            bytes_in: w.bytes_in_per_request,
            wire_bytes: plus(w.wire_bytes_out_per_request, w.wire_bytes_in_per_request),
            segments: datagrams
                .or_else(|| plus(w.segments_out_per_request, w.segments_in_per_request)),
            syscalls: c.syscalls_per_request,
            client_cpu_us: c.client_cpu_us_per_request,
            server_cpu_us: c.server_cpu_us_per_request,
            window_updates: window_updates.or(quic_updates),
            latency_hdr: r.histograms.latency.clone(),
        }
    }
}

/// `sweep grpc --reflect`: the rows with their requests encoded through the schema the
/// server's reflection gives (asked once, before the first row), the payload field filled.
fn by_reflection(s: &PayloadSweep) -> Result<Option<Vec<(u64, Config)>>, RunError> {
    let Some(field) = &s.reflect_field else {
        return Ok(None);
    };
    let Some((_, first)) = s.rows.first() else {
        return Ok(Some(Vec::new()));
    };
    let WorkloadSpec::Grpc(g) = &first.spec else {
        return Ok(None);
    };
    let GrpcRequest::ByReflection { json, .. } = &g.request else {
        return Ok(None);
    };
    let m = prepare::reflected_method(first, g, &first.endpoints)?;
    let input = m.input();
    let path = grpc::payload_field(&input, field.as_deref())
        .map_err(|e| RunError::Usage(e.to_string()))?;
    let base = grpc::decode_json(&input, json).map_err(|e| RunError::Usage(e.to_string()))?;
    let (client_streaming, server_streaming) = grpc::call_kind(&m);
    let mut rows = Vec::with_capacity(s.rows.len());
    for (payload, cfg) in &s.rows {
        let n = usize::try_from(*payload)
            .map_err(|_| RunError::Usage(format!("--payload-size {payload}: too large")))?;
        let request =
            grpc::fill_field(&base, &path, n).map_err(|e| RunError::Usage(e.to_string()))?;
        let spec = WorkloadSpec::Grpc(GrpcSpec {
            request: GrpcRequest::Encoded(request),
            response: Some(m.output()),
            server_streaming,
            client_streaming,
            // the payload's field is filled per row: no placeholders
            templated: None,
            ..g.clone()
        });
        rows.push((
            *payload,
            Config {
                spec,
                ..cfg.clone()
            },
        ));
    }
    Ok(Some(rows))
}

/// Runs every payload size on every stack, writes the table (and the chart with `--svg`).
pub(super) fn sweep_payload_and_write(s: &PayloadSweep) -> Result<i32, RunError> {
    let resolved = by_reflection(s)?;
    let configs = resolved.as_deref().unwrap_or(&s.rows);
    let mut rows = Vec::new();
    let mut broken: Vec<Broken> = Vec::new();
    let total: usize = configs.iter().map(|(_, c)| c.protos.len()).sum();
    for (payload, cfg) in configs {
        if super::interrupted() {
            break;
        }
        let prepared = prepare(cfg, s.embedded.clone())?;
        for &proto in &cfg.protos {
            if super::interrupted() {
                break;
            }
            let run = prepared.run_proto(cfg, proto).map_err(RunError::Setup)?;
            let r = RunReport::from_run(&run, &prepared.endpoints, &prepared.roles, false);
            let label = format!("the row of payload {payload} B, ");
            broken.extend(
                cfg.thresholds
                    .iter()
                    .filter_map(|t| t.judge_value(&r, t.figure.value(&r), &label)),
            );
            let row = PayloadRow::of(*payload, cfg, &r);
            eprintln!(
                "wirebench sweep: {}/{total} payload {payload} B, {}{}: {} req/s, {} B on the wire per request{}",
                rows.len() + 1,
                proto.title(),
                path_label(&row),
                num(row.qps, 0),
                num(row.wire_bytes, 0),
                if row.failed > 0 {
                    format!(", {} failed", row.failed)
                } else {
                    String::new()
                }
            );
            rows.push(row);
        }
    }
    if super::interrupted() && rows.iter().all(|r| r.count == 0) {
        return Err(RunError::Interrupted);
    }
    emit(s.output.as_deref(), &render(s.format, s.target, &rows))?;
    if let Some(path) = &s.svg {
        std::fs::write(path, chart(s.target, &rows)).map_err(|source| RunError::Output {
            path: path.display().to_string(),
            source,
        })?;
    }
    let empty = rows.iter().filter(|r| r.ok == 0).count();
    if empty > 0 {
        eprintln!(
            "error: {empty} of {} rows had no successful request",
            rows.len()
        );
        return Ok(exit::FAILURE);
    }
    let thresholds = s
        .rows
        .first()
        .map(|(_, c)| c.thresholds.as_slice())
        .unwrap_or_default();
    Ok(super::stacks::judge(thresholds, broken.into_iter()))
}

/// A row's path beyond its payload and stack, when the sweep has a link or connection axis:
/// " over rtt=40ms, 8 conns".
fn path_label(r: &PayloadRow) -> String {
    let link = r
        .link
        .as_deref()
        .map_or(String::new(), |l| format!(" over {l}"));
    if link.is_empty() && r.conns <= 1 {
        return String::new();
    }
    format!("{link}, {} conns", r.conns)
}

/// Whether the table needs its link and connection columns (a link, or more than one
/// connection, in some row).
fn has_path_axes(rows: &[PayloadRow]) -> bool {
    rows.iter().any(|r| r.link.is_some() || r.conns > 1)
}

fn title(proto: &str) -> &'static str {
    match proto {
        "http" => Proto::Http.title(),
        "h2" => Proto::H2.title(),
        "h3" => Proto::H3.title(),
        _ => Proto::Grpc.title(),
    }
}

/// The table in `format`; the JSON schema names the target (`wirebench.sweep-echo.v2`,
/// `wirebench.sweep-http.v2`, `wirebench.sweep-grpc.v2`: the same rows).
pub fn render(format: TableFormat, target: SweepTarget, rows: &[PayloadRow]) -> String {
    match format {
        TableFormat::Json => {
            let schema = format!("wirebench.sweep-{}.v2", target.name());
            let v = serde_json::json!({ "schema": schema, "rows": rows });
            format!("{v:#}\n")
        }
        TableFormat::Csv => {
            let mut out = String::from(
                "payload_bytes,proto,link,conns,count,ok,failed,qps,p50_ms,p99_ms,bytes_out,bytes_in,wire_bytes,segments,syscalls,client_cpu_us,server_cpu_us,window_updates\n",
            );
            for r in rows {
                out.push_str(&format!(
                    "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                    r.payload_bytes,
                    r.proto,
                    r.link.as_deref().unwrap_or("none"),
                    r.conns,
                    r.count,
                    r.ok,
                    r.failed,
                    show::csv(r.qps, 1),
                    show::csv(r.p50_ms, 3),
                    show::csv(r.p99_ms, 3),
                    show::csv(r.bytes_out, 1),
                    show::csv(r.bytes_in, 1),
                    show::csv(r.wire_bytes, 1),
                    show::csv(r.segments, 2),
                    show::csv(r.syscalls, 2),
                    show::csv(r.client_cpu_us, 2),
                    show::csv(r.server_cpu_us, 2),
                    show::csv(r.window_updates, 2),
                ));
            }
            out
        }
        TableFormat::Markdown => markdown(rows),
    }
}

/// The markdown table; with a link or more than one connection in some row, the link and
/// connection columns beside the stack.
fn markdown(rows: &[PayloadRow]) -> String {
    let paths = has_path_axes(rows);
    let mut head = vec!["payload (B)"];
    if paths {
        head.push("link");
    }
    head.push("stack");
    if paths {
        head.push("conns");
    }
    head.extend([
        "req/s",
        "p50 ms",
        "p99 ms",
        "bytes out/req",
        "bytes in/req",
        "on the wire/req",
        "segments/req",
        "syscalls/req",
        "client CPU µs/req",
        "server CPU µs/req",
        "WINDOW_UPDATE/req",
        "failed",
    ]);
    let align: Vec<&str> = head
        .iter()
        .map(|h| match *h {
            "link" | "stack" => "---",
            _ => "--:",
        })
        .collect();
    let mut out = format!("| {} |\n|{}|\n", head.join(" | "), align.join("|"));
    for r in rows {
        let mut cells = vec![r.payload_bytes.to_string()];
        if paths {
            cells.push(r.link.clone().unwrap_or_else(|| "none".into()));
        }
        cells.push(title(r.proto).to_string());
        if paths {
            cells.push(r.conns.to_string());
        }
        cells.extend([
            num(r.qps, 0),
            num(r.p50_ms, 3),
            num(r.p99_ms, 3),
            num(r.bytes_out, 0),
            num(r.bytes_in, 0),
            num(r.wire_bytes, 0),
            num(r.segments, 2),
            num(r.syscalls, 2),
            num(r.client_cpu_us, 1),
            num(r.server_cpu_us, 1),
            num(r.window_updates, 2),
            r.failed.to_string(),
        ]);
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

/// The line chart: bytes on the wire, segments, CPU and p50 per request by payload size.
pub fn chart(target: SweepTarget, rows: &[PayloadRow]) -> String {
    let mut xs: Vec<u64> = rows.iter().map(|r| r.payload_bytes).collect();
    xs.sort_unstable();
    xs.dedup();
    // a line per stack, link and connection count
    let key = |r: &PayloadRow| (r.proto, r.link.clone(), r.conns);
    let mut stacks: Vec<(&'static str, Option<String>, usize)> = Vec::new();
    for r in rows {
        if !stacks.contains(&key(r)) {
            stacks.push(key(r));
        }
    }
    let series = |f: fn(&PayloadRow) -> Option<f64>| -> Vec<Vec<Option<f64>>> {
        stacks
            .iter()
            .map(|s| {
                xs.iter()
                    .map(|&x| {
                        rows.iter()
                            .find(|r| key(r) == *s && r.payload_bytes == x)
                            .and_then(f)
                    })
                    .collect()
            })
            .collect()
    };
    let panels = [
        LinePanel {
            title: "Wire bytes / request",
            unit: "both ways",
            values: series(|r| r.wire_bytes),
        },
        LinePanel {
            title: "TCP segments / request",
            unit: "both ways",
            values: series(|r| r.segments),
        },
        LinePanel {
            title: "Client CPU / request",
            unit: "µs",
            values: series(|r| r.client_cpu_us),
        },
        LinePanel {
            title: "Latency p50",
            unit: "ms",
            values: series(|r| r.p50_ms),
        },
        LinePanel {
            title: "Syscalls / request",
            unit: "kernel",
            values: series(|r| r.syscalls),
        },
        LinePanel {
            title: "WINDOW_UPDATEs / request",
            unit: "h2",
            values: series(|r| r.window_updates),
        },
    ];
    let paths = has_path_axes(rows);
    let titles: Vec<String> = stacks
        .iter()
        .map(|(p, link, conns)| match paths {
            true => format!(
                "{} {} ×{conns}",
                title(p),
                link.as_deref().unwrap_or("none")
            ),
            false => title(p).to_string(),
        })
        .collect();
    let titles: Vec<&str> = titles.iter().map(String::as_str).collect();
    let xs: Vec<f64> = xs.iter().map(|&x| x as f64).collect();
    let head = format!(
        "wirebench sweep {}: cost per request by payload size",
        target.name()
    );
    render_lines(&head, "payload size", &xs, &titles, &panels)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(payload: u64, proto: &'static str, wire: f64) -> PayloadRow {
        PayloadRow {
            payload_bytes: payload,
            proto,
            link: None,
            conns: 1,
            count: 10,
            ok: 10,
            failed: 0,
            qps: Some(1000.0),
            p50_ms: Some(0.1),
            p99_ms: Some(0.2),
            bytes_out: Some(wire / 2.0),
            bytes_in: Some(wire / 2.0),
            wire_bytes: Some(wire),
            segments: Some(2.0),
            syscalls: Some(3.0),
            client_cpu_us: Some(8.0),
            server_cpu_us: None,
            window_updates: (proto != "http").then_some(0.5),
            latency_hdr: String::new(),
        }
    }

    #[test]
    fn tables_and_the_chart_have_every_row() {
        let rows = vec![
            row(16, "http", 500.0),
            row(16, "grpc", 300.0),
            row(65536, "http", 66000.0),
            row(65536, "grpc", 66500.0),
        ];
        let md = render(TableFormat::Markdown, SweepTarget::Echo, &rows);
        assert_eq!(md.lines().count(), 2 + 4, "{md}");
        assert!(md.contains("| 65536 | gRPC | 1000 |"), "{md}");
        assert!(
            md.contains("| 16 | HTTP/1.1 |") && md.contains("| n/a | 0 |"),
            "{md}"
        );
        let csv = render(TableFormat::Csv, SweepTarget::Echo, &rows);
        assert_eq!(csv.lines().count(), 1 + 4);
        let json: serde_json::Value =
            serde_json::from_str(&render(TableFormat::Json, SweepTarget::Echo, &rows)).unwrap();
        assert_eq!(json["rows"].as_array().unwrap().len(), 4);
        assert_eq!(json["schema"], "wirebench.sweep-echo.v2");
        let json: serde_json::Value =
            serde_json::from_str(&render(TableFormat::Json, SweepTarget::Grpc, &rows)).unwrap();
        assert_eq!(json["schema"], "wirebench.sweep-grpc.v2");
        let svg = chart(SweepTarget::Http, &rows);
        assert!(
            svg.contains("wirebench sweep http: cost per request"),
            "{svg}"
        );
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        // one line per stack per panel, the window updates of gRPC only
        assert_eq!(svg.matches("<polyline").count(), 2 * 5 + 1, "{svg}");
        assert!(svg.contains(">64k<") && svg.contains(">16<"));
    }
}
