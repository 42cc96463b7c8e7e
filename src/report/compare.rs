//! `wirebench compare`: both protocols in alternating rounds, medians, ratios, and findings in
//! plain words computed from the numbers.

use std::fmt::Write;

use serde::Serialize;

use crate::report::svg::Panel;
use crate::report::{Report, RunReport};

/// The headline figures of one protocol run, per request where it says so.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Figures {
    /// the measured window of the run
    pub total_s: f64,
    pub requests_per_sec: f64,
    pub latency_p50_ms: f64,
    pub latency_p99_ms: f64,
    pub connections: f64,
    pub bytes_out_per_request: f64,
    pub bytes_in_per_request: f64,
    pub wire_bytes_out_per_request: f64,
    pub wire_bytes_in_per_request: f64,
    pub segments_out_per_request: f64,
    pub segments_in_per_request: f64,
    pub syscalls_per_request: f64,
    pub client_cpu_us_per_request: f64,
    pub server_cpu_us_per_request: Option<f64>,
}

impl Figures {
    pub fn of(r: &RunReport) -> Figures {
        let w = &r.wire;
        Figures {
            total_s: r.summary.total_s,
            requests_per_sec: r.summary.requests_per_sec,
            latency_p50_ms: r.percentile_ms(50.0),
            latency_p99_ms: r.percentile_ms(99.0),
            connections: w.connections_opened as f64,
            bytes_out_per_request: w.bytes_out_per_request,
            bytes_in_per_request: w.bytes_in_per_request,
            wire_bytes_out_per_request: w.wire_bytes_out_per_request,
            wire_bytes_in_per_request: w.wire_bytes_in_per_request,
            segments_out_per_request: w.segments_out_per_request,
            segments_in_per_request: w.segments_in_per_request,
            syscalls_per_request: w.write_calls_per_request + w.read_calls_per_request,
            client_cpu_us_per_request: w.client_cpu_us_per_request,
            server_cpu_us_per_request: w.server_cpu_us_per_request,
        }
    }

    /// The median of each figure over rounds (the mean of the middle two for an even count).
    pub fn median(all: &[Figures]) -> Figures {
        fn med(mut v: Vec<f64>) -> f64 {
            if v.is_empty() {
                return 0.0;
            }
            v.sort_by(f64::total_cmp);
            let n = v.len();
            if n % 2 == 1 {
                v[n / 2]
            } else {
                (v[n / 2 - 1] + v[n / 2]) / 2.0
            }
        }
        let m = |f: fn(&Figures) -> f64| med(all.iter().map(f).collect());
        let servers: Vec<f64> = all
            .iter()
            .filter_map(|f| f.server_cpu_us_per_request)
            .collect();
        Figures {
            total_s: m(|f| f.total_s),
            requests_per_sec: m(|f| f.requests_per_sec),
            latency_p50_ms: m(|f| f.latency_p50_ms),
            latency_p99_ms: m(|f| f.latency_p99_ms),
            connections: m(|f| f.connections),
            bytes_out_per_request: m(|f| f.bytes_out_per_request),
            bytes_in_per_request: m(|f| f.bytes_in_per_request),
            wire_bytes_out_per_request: m(|f| f.wire_bytes_out_per_request),
            wire_bytes_in_per_request: m(|f| f.wire_bytes_in_per_request),
            segments_out_per_request: m(|f| f.segments_out_per_request),
            segments_in_per_request: m(|f| f.segments_in_per_request),
            syscalls_per_request: m(|f| f.syscalls_per_request),
            client_cpu_us_per_request: m(|f| f.client_cpu_us_per_request),
            server_cpu_us_per_request: (servers.len() == all.len() && !all.is_empty())
                .then(|| med(servers)),
        }
    }

    /// The chart panels for this pair of figures.
    pub fn panels(h: &Figures, g: &Figures) -> Vec<Panel> {
        vec![
            Panel {
                title: "Total time",
                unit: "s",
                http: Some(h.total_s),
                grpc: Some(g.total_s),
            },
            Panel {
                title: "Throughput",
                unit: "req/s",
                http: Some(h.requests_per_sec),
                grpc: Some(g.requests_per_sec),
            },
            Panel {
                title: "Latency p99",
                unit: "ms",
                http: Some(h.latency_p99_ms),
                grpc: Some(g.latency_p99_ms),
            },
            Panel {
                title: "Bytes on the wire",
                unit: "B/req, out+in",
                http: Some(h.wire_bytes_out_per_request + h.wire_bytes_in_per_request),
                grpc: Some(g.wire_bytes_out_per_request + g.wire_bytes_in_per_request),
            },
            Panel {
                title: "TCP segments",
                unit: "per req, out+in",
                http: Some(h.segments_out_per_request + h.segments_in_per_request),
                grpc: Some(g.segments_out_per_request + g.segments_in_per_request),
            },
            Panel {
                title: "Client CPU",
                unit: "µs/req",
                http: Some(h.client_cpu_us_per_request),
                grpc: Some(g.client_cpu_us_per_request),
            },
            Panel {
                title: "Server CPU",
                unit: "µs/req",
                http: h.server_cpu_us_per_request,
                grpc: g.server_cpu_us_per_request,
            },
        ]
    }
}

#[derive(Debug, Serialize)]
pub struct RoundFigures {
    pub round: usize,
    pub proto: &'static str,
    pub figures: Figures,
}

#[derive(Debug, Serialize)]
pub struct CompareReport {
    pub schema: &'static str,
    pub workload: String,
    pub rounds: usize,
    pub per_round: Vec<RoundFigures>,
    pub median_http: Figures,
    pub median_grpc: Figures,
    pub findings: Vec<String>,
}

/// "2.1×" for a ratio; the caller words which side is larger.
fn times(r: f64) -> String {
    format!("{r:.1}×")
}

/// One sentence comparing a per-request cost where more is worse.
fn cost_line(what: &str, unit: &str, h: f64, g: f64) -> Option<String> {
    if h <= 0.0 || g <= 0.0 {
        return None;
    }
    let (more, less, hi, lo) = if h >= g {
        ("HTTP/1.1", "gRPC", h, g)
    } else {
        ("gRPC", "HTTP/1.1", g, h)
    };
    Some(format!(
        "{more} cost {} the {what} of {less} ({hi:.1} vs {lo:.1} {unit}).",
        times(hi / lo)
    ))
}

/// Findings in plain words, each computed from the medians.
pub fn findings(h: &Figures, g: &Figures, server: &str) -> Vec<String> {
    let mut f = Vec::new();
    f.push(format!(
        "HTTP/1.1 used {} connection{}, gRPC {}.",
        h.connections,
        if h.connections == 1.0 { "" } else { "s" },
        g.connections
    ));
    if h.requests_per_sec > 0.0 && g.requests_per_sec > 0.0 {
        let (fast, slow, a, b) = if g.requests_per_sec >= h.requests_per_sec {
            ("gRPC", "HTTP/1.1", g.requests_per_sec, h.requests_per_sec)
        } else {
            ("HTTP/1.1", "gRPC", h.requests_per_sec, g.requests_per_sec)
        };
        f.push(format!(
            "{fast} completed {} the requests per second of {slow} ({a:.0} vs {b:.0}).",
            times(a / b)
        ));
    }
    let (hb, gb) = (
        h.wire_bytes_out_per_request + h.wire_bytes_in_per_request,
        g.wire_bytes_out_per_request + g.wire_bytes_in_per_request,
    );
    let (hs, gs) = (
        h.segments_out_per_request + h.segments_in_per_request,
        g.segments_out_per_request + g.segments_in_per_request,
    );
    if hb > 0.0 && gb > 0.0 && hs > 0.0 && gs > 0.0 {
        let (big, small, bb, sb, bs, ss) = if hb >= gb {
            ("HTTP/1.1", "gRPC", hb, gb, hs, gs)
        } else {
            ("gRPC", "HTTP/1.1", gb, hb, gs, hs)
        };
        f.push(format!(
            "{big} put {} the bytes per request on the wire of {small} ({bb:.0} vs {sb:.0} B, IP+TCP headers included) in {} the TCP segments ({bs:.2} vs {ss:.2}).",
            times(bb / sb),
            times(bs / ss)
        ));
    }
    f.extend(cost_line(
        "syscalls per request",
        "calls",
        h.syscalls_per_request,
        g.syscalls_per_request,
    ));
    f.extend(cost_line(
        "client CPU per request",
        "µs",
        h.client_cpu_us_per_request,
        g.client_cpu_us_per_request,
    ));
    if let (Some(hs), Some(gs)) = (h.server_cpu_us_per_request, g.server_cpu_us_per_request) {
        f.extend(cost_line(
            &format!("{server} CPU per request"),
            "µs",
            hs,
            gs,
        ));
    }
    if h.latency_p99_ms > 0.0 && g.latency_p99_ms > 0.0 {
        f.push(format!(
            "p99 latency: HTTP/1.1 {:.3} ms, gRPC {:.3} ms.",
            h.latency_p99_ms, g.latency_p99_ms
        ));
    }
    f
}

impl CompareReport {
    pub fn new(workload: String, rounds: &[Report], server: &str) -> CompareReport {
        let mut per_round = Vec::new();
        let (mut hs, mut gs) = (Vec::new(), Vec::new());
        for (i, rep) in rounds.iter().enumerate() {
            for run in &rep.runs {
                let fig = Figures::of(run);
                if run.proto == "http" {
                    hs.push(fig)
                } else {
                    gs.push(fig)
                }
                per_round.push(RoundFigures {
                    round: i + 1,
                    proto: run.proto,
                    figures: fig,
                });
            }
        }
        let (median_http, median_grpc) = (Figures::median(&hs), Figures::median(&gs));
        CompareReport {
            schema: "wirebench.compare.v1",
            workload,
            rounds: rounds.len(),
            per_round,
            findings: findings(&median_http, &median_grpc, server),
            median_http,
            median_grpc,
        }
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "compare — {} — {} rounds (HTTP/1.1, gRPC alternating)",
            self.workload, self.rounds
        );
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "  {:<6} {:<9} {:>8} {:>10} {:>9} {:>9} {:>10} {:>9} {:>9} {:>9}",
            "round",
            "proto",
            "total s",
            "req/s",
            "p50 ms",
            "p99 ms",
            "B/req",
            "segs/req",
            "cpu µs",
            "srv µs"
        );
        for r in &self.per_round {
            let f = &r.figures;
            let _ = writeln!(
                out,
                "  {:<6} {:<9} {:>8.2} {:>10.0} {:>9.3} {:>9.3} {:>10.1} {:>9.2} {:>9.1} {:>9}",
                r.round,
                r.proto,
                f.total_s,
                f.requests_per_sec,
                f.latency_p50_ms,
                f.latency_p99_ms,
                f.wire_bytes_out_per_request + f.wire_bytes_in_per_request,
                f.segments_out_per_request + f.segments_in_per_request,
                f.client_cpu_us_per_request,
                f.server_cpu_us_per_request
                    .map_or("-".into(), |v| format!("{v:.1}"))
            );
        }
        let (h, g) = (&self.median_http, &self.median_grpc);
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Medians:                     HTTP/1.1         gRPC    ratio (gRPC/HTTP)"
        );
        let mut row = |name: &str, a: f64, b: f64| {
            let r = if a > 0.0 {
                format!("{:.2}x", b / a)
            } else {
                "-".into()
            };
            let _ = writeln!(out, "  {name:<24} {a:>12.2} {b:>12.2} {r:>8}");
        };
        row("Total (s)", h.total_s, g.total_s);
        row("Requests/sec", h.requests_per_sec, g.requests_per_sec);
        row("Latency p50 (ms)", h.latency_p50_ms, g.latency_p50_ms);
        row("Latency p99 (ms)", h.latency_p99_ms, g.latency_p99_ms);
        row("Connections", h.connections, g.connections);
        row(
            "Bytes out / request",
            h.bytes_out_per_request,
            g.bytes_out_per_request,
        );
        row(
            "Bytes in / request",
            h.bytes_in_per_request,
            g.bytes_in_per_request,
        );
        row(
            "Wire bytes / request",
            h.wire_bytes_out_per_request + h.wire_bytes_in_per_request,
            g.wire_bytes_out_per_request + g.wire_bytes_in_per_request,
        );
        row(
            "Segments / request",
            h.segments_out_per_request + h.segments_in_per_request,
            g.segments_out_per_request + g.segments_in_per_request,
        );
        row(
            "Syscalls / request",
            h.syscalls_per_request,
            g.syscalls_per_request,
        );
        row(
            "Client CPU / req (µs)",
            h.client_cpu_us_per_request,
            g.client_cpu_us_per_request,
        );
        if let (Some(a), Some(b)) = (h.server_cpu_us_per_request, g.server_cpu_us_per_request) {
            row("Server CPU / req (µs)", a, b);
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "Findings:");
        for f in &self.findings {
            let _ = writeln!(out, "  - {f}");
        }
        out
    }

    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("compare report serializes");
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(rps: f64, bytes: f64, segs: f64, cpu: f64, srv: Option<f64>, conns: f64) -> Figures {
        Figures {
            total_s: 1.0,
            requests_per_sec: rps,
            latency_p50_ms: 1.0,
            latency_p99_ms: 2.0,
            connections: conns,
            bytes_out_per_request: bytes / 2.0,
            bytes_in_per_request: bytes / 2.0,
            wire_bytes_out_per_request: bytes / 2.0,
            wire_bytes_in_per_request: bytes / 2.0,
            segments_out_per_request: segs / 2.0,
            segments_in_per_request: segs / 2.0,
            syscalls_per_request: 2.0,
            client_cpu_us_per_request: cpu,
            server_cpu_us_per_request: srv,
        }
    }

    #[test]
    fn medians_are_per_figure() {
        let m = Figures::median(&[
            fig(1.0, 10.0, 1.0, 5.0, Some(1.0), 1.0),
            fig(3.0, 30.0, 3.0, 1.0, Some(3.0), 1.0),
            fig(2.0, 20.0, 2.0, 9.0, Some(2.0), 1.0),
        ]);
        assert_eq!(m.requests_per_sec, 2.0);
        assert_eq!(m.client_cpu_us_per_request, 5.0);
        assert_eq!(m.server_cpu_us_per_request, Some(2.0));
        let even = Figures::median(&[
            fig(1.0, 10.0, 1.0, 5.0, None, 1.0),
            fig(3.0, 30.0, 3.0, 1.0, None, 1.0),
        ]);
        assert_eq!(even.requests_per_sec, 2.0);
        assert_eq!(even.server_cpu_us_per_request, None);
    }

    #[test]
    fn findings_follow_the_numbers() {
        let h = fig(10_000.0, 620.0, 2.0, 30.0, Some(42.0), 10.0);
        let g = fig(20_000.0, 200.0, 0.8, 10.0, Some(20.0), 1.0);
        let f = findings(&h, &g, "etcd");
        assert_eq!(f[0], "HTTP/1.1 used 10 connections, gRPC 1.");
        assert!(
            f[1].starts_with("gRPC completed 2.0× the requests per second of HTTP/1.1"),
            "{}",
            f[1]
        );
        assert!(
            f[2].starts_with("HTTP/1.1 put 3.1× the bytes per request"),
            "{}",
            f[2]
        );
        assert!(f[2].contains("in 2.5× the TCP segments"), "{}", f[2]);
        assert!(
            f.iter()
                .any(|l| l.starts_with("HTTP/1.1 cost 3.0× the client CPU per request")),
            "{f:?}"
        );
        assert!(
            f.iter()
                .any(|l| l.starts_with("HTTP/1.1 cost 2.1× the etcd CPU per request")),
            "{f:?}"
        );
        // and the other way round
        let f = findings(&g, &h, "etcd");
        assert!(f[1].starts_with("HTTP/1.1 completed 2.0×"), "{}", f[1]);
    }
}
