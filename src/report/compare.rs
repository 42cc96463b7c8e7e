//! `wirebench compare`: two to four stacks (HTTP/1.1, HTTP/2, gRPC, HTTP/3) in alternating rounds,
//! medians, ratios, and findings in plain words computed from the numbers.

use std::fmt::Write;

use serde::Serialize;

use crate::report::show::{self, num};
use crate::report::svg::Panel;
use crate::report::{Report, RunReport, plus};

/// The headline figures of one protocol run, per request where it says so (each with the
/// denominator its report names: requests written in the window for CPU and syscalls,
/// requests on the connections for bytes and segments). A figure is None where the run
/// measured none (no denominator, no latency, no count), as null in its report.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Figures {
    /// the measured window of the run
    pub total_s: f64,
    /// measured requests (ok + failed) / window
    pub requests_per_sec: Option<f64>,
    /// successful requests / window: what the findings compare
    pub ok_per_sec: Option<f64>,
    pub count: f64,
    pub failed: f64,
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    pub connections: f64,
    pub bytes_out_per_request: Option<f64>,
    pub bytes_in_per_request: Option<f64>,
    pub wire_bytes_out_per_request: Option<f64>,
    pub wire_bytes_in_per_request: Option<f64>,
    pub segments_out_per_request: Option<f64>,
    pub segments_in_per_request: Option<f64>,
    /// HTTP/3: UDP datagrams (null on the TCP stacks)
    pub datagrams_out_per_request: Option<f64>,
    pub datagrams_in_per_request: Option<f64>,
    /// counted by the kernel; None where it could not count
    pub syscalls_per_request: Option<f64>,
    /// socket reads and writes (EAGAIN included), the data part of the syscalls
    pub data_calls_per_request: Option<f64>,
    pub context_switches_per_request: Option<f64>,
    pub client_cpu_us_per_request: Option<f64>,
    pub server_cpu_us_per_request: Option<f64>,
    /// `--find-max`: the highest rate that met every objective (null without a search)
    pub capacity_rps: Option<f64>,
}

impl Figures {
    pub fn of(r: &RunReport) -> Figures {
        let (w, c) = (&r.wire, &r.cost);
        Figures {
            total_s: r.summary.total_s,
            requests_per_sec: r.summary.requests_per_sec,
            ok_per_sec: r.summary.ok_per_sec,
            count: r.summary.count as f64,
            failed: r.summary.failed as f64,
            latency_p50_ms: r.percentile_ms(50.0),
            latency_p99_ms: r.percentile_ms(99.0),
            connections: w.connections_opened as f64,
            bytes_out_per_request: w.bytes_out_per_request,
            bytes_in_per_request: w.bytes_in_per_request,
            wire_bytes_out_per_request: w.wire_bytes_out_per_request,
            wire_bytes_in_per_request: w.wire_bytes_in_per_request,
            segments_out_per_request: w.segments_out_per_request,
            segments_in_per_request: w.segments_in_per_request,
            datagrams_out_per_request: w.h3.as_ref().and_then(|h| h.udp.datagrams_out_per_request),
            datagrams_in_per_request: w.h3.as_ref().and_then(|h| h.udp.datagrams_in_per_request),
            syscalls_per_request: c.syscalls_per_request,
            data_calls_per_request: plus(
                plus(c.reads_per_request, c.writes_per_request),
                plus(
                    c.read_would_block_per_request,
                    c.write_would_block_per_request,
                ),
            ),
            context_switches_per_request: c.context_switches_per_request,
            client_cpu_us_per_request: c.client_cpu_us_per_request,
            server_cpu_us_per_request: c.server_cpu_us_per_request,
            capacity_rps: r.capacity.as_ref().and_then(|c| c.answer_rps),
        }
    }

    /// The median of each figure over rounds (the mean of the middle two for an even count);
    /// an optional figure has a median only when every round has it (a plain one over no
    /// rounds is 0).
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
        let mo = |f: fn(&Figures) -> Option<f64>| {
            let v: Option<Vec<f64>> = all.iter().map(f).collect();
            v.filter(|v| !v.is_empty()).map(med)
        };
        Figures {
            total_s: m(|f| f.total_s),
            requests_per_sec: mo(|f| f.requests_per_sec),
            ok_per_sec: mo(|f| f.ok_per_sec),
            count: m(|f| f.count),
            failed: m(|f| f.failed),
            latency_p50_ms: mo(|f| f.latency_p50_ms),
            latency_p99_ms: mo(|f| f.latency_p99_ms),
            connections: m(|f| f.connections),
            bytes_out_per_request: mo(|f| f.bytes_out_per_request),
            bytes_in_per_request: mo(|f| f.bytes_in_per_request),
            wire_bytes_out_per_request: mo(|f| f.wire_bytes_out_per_request),
            wire_bytes_in_per_request: mo(|f| f.wire_bytes_in_per_request),
            segments_out_per_request: mo(|f| f.segments_out_per_request),
            segments_in_per_request: mo(|f| f.segments_in_per_request),
            datagrams_out_per_request: mo(|f| f.datagrams_out_per_request),
            datagrams_in_per_request: mo(|f| f.datagrams_in_per_request),
            syscalls_per_request: mo(|f| f.syscalls_per_request),
            data_calls_per_request: mo(|f| f.data_calls_per_request),
            context_switches_per_request: mo(|f| f.context_switches_per_request),
            client_cpu_us_per_request: mo(|f| f.client_cpu_us_per_request),
            server_cpu_us_per_request: mo(|f| f.server_cpu_us_per_request),
            capacity_rps: mo(|f| f.capacity_rps),
        }
    }

    /// The chart panels of these stacks' figures (one value per stack in each panel).
    pub fn panels(stacks: &[&Figures]) -> Vec<Panel> {
        let panel = |title, unit, f: &dyn Fn(&Figures) -> Option<f64>| Panel {
            title,
            unit,
            values: stacks.iter().map(|x| f(x)).collect(),
        };
        vec![
            panel("Total time", "s", &|x| Some(x.total_s)),
            panel("Throughput", "req/s", &|x| x.requests_per_sec),
            panel("Latency p99", "ms", &|x| x.latency_p99_ms),
            panel("Bytes on the wire", "B/req, out+in", &|x| x.wire_bytes()),
            panel(
                if stacks.iter().any(|x| x.datagrams().is_some()) {
                    "Packets (TCP segments | UDP datagrams)"
                } else {
                    "TCP segments"
                },
                "per req, out+in",
                &|x| x.packets(),
            ),
            panel("Client CPU", "µs/req", &|x| x.client_cpu_us_per_request),
            panel("Server CPU", "µs/req", &|x| x.server_cpu_us_per_request),
        ]
    }

    /// Bytes on the wire per request, out + in.
    pub fn wire_bytes(&self) -> Option<f64> {
        plus(
            self.wire_bytes_out_per_request,
            self.wire_bytes_in_per_request,
        )
    }

    /// TCP segments per request, out + in.
    pub fn segments(&self) -> Option<f64> {
        plus(self.segments_out_per_request, self.segments_in_per_request)
    }

    /// UDP datagrams per request, out + in (HTTP/3).
    pub fn datagrams(&self) -> Option<f64> {
        plus(
            self.datagrams_out_per_request,
            self.datagrams_in_per_request,
        )
    }

    /// IP packets per request, out + in: TCP segments, or UDP datagrams.
    pub fn packets(&self) -> Option<f64> {
        self.segments().or_else(|| self.datagrams())
    }
}

#[derive(Debug, Serialize)]
pub struct RoundFigures {
    pub round: usize,
    pub proto: &'static str,
    #[serde(skip)]
    pub title: &'static str,
    pub figures: Figures,
    /// the round's latency histogram (HdrHistogram V2 compressed, base64, ns)
    pub latency_hdr: String,
}

#[derive(Debug, Serialize)]
pub struct CompareReport {
    pub schema: &'static str,
    pub workload: String,
    pub rounds: usize,
    /// Ctrl-C stopped the comparison: `rounds` are those that ran to their end (or the one
    /// cut short, when none did)
    pub interrupted: bool,
    pub per_round: Vec<RoundFigures>,
    /// the medians of each stack that ran
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_http: Option<Figures>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_h2: Option<Figures>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_grpc: Option<Figures>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub median_h3: Option<Figures>,
    pub findings: Vec<String>,
}

/// "2.1×" for a ratio; the caller words which side is larger.
fn times(r: f64) -> String {
    format!("{r:.1}×")
}

/// One stack's title and figures.
pub type Stack<'a> = (&'a str, &'a Figures);

/// One sentence comparing a per-request cost where more is worse: `a`'s value `x` against
/// `b`'s `y` (none unless both were measured and are positive).
fn cost_line(
    what: &str,
    unit: &str,
    (a, x): (&str, Option<f64>),
    (b, y): (&str, Option<f64>),
) -> Option<String> {
    let (x, y) = (x?, y?);
    if x <= 0.0 || y <= 0.0 {
        return None;
    }
    let (more, less, hi, lo) = if x >= y { (a, b, x, y) } else { (b, a, y, x) };
    Some(format!(
        "{more} cost {} the {what} of {less} ({hi:.1} vs {lo:.1} {unit}).",
        times(hi / lo)
    ))
}

/// Findings in plain words, each computed from the medians of `stacks` (in run order): what
/// each stack used and lost, then every later stack against every earlier one.
pub fn findings(stacks: &[Stack<'_>], server: &str) -> Vec<String> {
    let mut f = Vec::new();
    if let [(first, x), rest @ ..] = stacks {
        let mut line = format!(
            "{first} used {} connection{}",
            x.connections,
            if x.connections == 1.0 { "" } else { "s" }
        );
        for (name, y) in rest {
            let _ = write!(line, ", {name} {}", y.connections);
        }
        line.push('.');
        f.push(line);
    }
    for (name, x) in stacks {
        if x.failed > 0.0 {
            f.push(format!(
                "{name}: {:.0} of {:.0} requests failed (median round); throughput counts the \
                 successful ones, latency is over them, costs are per request written.",
                x.failed, x.count
            ));
        }
    }
    for &(n, d) in super::ratio_pairs(stacks.len()) {
        pair_findings(&mut f, stacks[d], stacks[n], server);
    }
    let p99: Option<Vec<f64>> = stacks.iter().map(|(_, x)| x.latency_p99_ms).collect();
    if let Some(p99) = p99.filter(|v| v.iter().all(|&ms| ms > 0.0)) {
        let each: Vec<String> = stacks
            .iter()
            .zip(p99)
            .map(|((name, _), ms)| format!("{name} {ms:.3} ms"))
            .collect();
        f.push(format!("p99 latency: {}.", each.join(", ")));
    }
    f
}

/// The findings of one pair of stacks.
fn pair_findings(f: &mut Vec<String>, (a, h): Stack<'_>, (b, g): Stack<'_>, server: &str) {
    if let (Some(ho), Some(go)) = (h.ok_per_sec, g.ok_per_sec)
        && ho > 0.0
        && go > 0.0
    {
        let (fast, slow, x, y) = if go >= ho {
            (b, a, go, ho)
        } else {
            (a, b, ho, go)
        };
        f.push(format!(
            "{fast} completed {} the successful requests per second of {slow} ({x:.0} vs {y:.0}).",
            times(x / y)
        ));
    }
    // HTTP/3 beside a TCP stack: packets are segments or datagrams, headers IP+TCP or IP+UDP
    let udp = h.datagrams().is_some() || g.datagrams().is_some();
    let (headers, packets) = if udp {
        (
            "IP and TCP or UDP headers",
            "packets (TCP segments, UDP datagrams)",
        )
    } else {
        ("IP+TCP headers", "TCP segments")
    };
    if let (Some(hb), Some(gb), Some(hs), Some(gs)) =
        (h.wire_bytes(), g.wire_bytes(), h.packets(), g.packets())
        && hb > 0.0
        && gb > 0.0
        && hs > 0.0
        && gs > 0.0
    {
        let (big, small, bb, sb, bs, ss) = if hb >= gb {
            (a, b, hb, gb, hs, gs)
        } else {
            (b, a, gb, hb, gs, hs)
        };
        f.push(format!(
            "{big} put {} the bytes per request on the wire of {small} ({bb:.0} vs {sb:.0} B, {headers} included) in {} the {packets} ({bs:.2} vs {ss:.2}).",
            times(bb / sb),
            times(bs / ss)
        ));
    }
    if h.syscalls_per_request.is_some() && g.syscalls_per_request.is_some() {
        f.extend(cost_line(
            "syscalls per request (counted by the kernel)",
            "calls",
            (a, h.syscalls_per_request),
            (b, g.syscalls_per_request),
        ));
    } else {
        f.extend(cost_line(
            "socket reads and writes per request (the kernel's full syscall count was not available)",
            "calls",
            (a, h.data_calls_per_request),
            (b, g.data_calls_per_request),
        ));
    }
    f.extend(cost_line(
        "client CPU per request",
        "µs",
        (a, h.client_cpu_us_per_request),
        (b, g.client_cpu_us_per_request),
    ));
    f.extend(cost_line(
        &format!("{server} CPU per request"),
        "µs",
        (a, h.server_cpu_us_per_request),
        (b, g.server_cpu_us_per_request),
    ));
}

impl CompareReport {
    pub fn new(workload: String, rounds: &[Report], server: &str) -> CompareReport {
        let mut per_round = Vec::new();
        for (i, rep) in rounds.iter().enumerate() {
            for run in &rep.runs {
                per_round.push(RoundFigures {
                    round: i + 1,
                    proto: run.proto,
                    title: run.title,
                    figures: Figures::of(run),
                    latency_hdr: run.histograms.latency.clone(),
                });
            }
        }
        let median = |proto: &str| {
            let all: Vec<Figures> = per_round
                .iter()
                .filter(|r| r.proto == proto)
                .map(|r| r.figures)
                .collect();
            (!all.is_empty()).then(|| Figures::median(&all))
        };
        let mut cmp = CompareReport {
            schema: "wirebench.compare.v2",
            workload,
            rounds: rounds.len(),
            interrupted: rounds
                .iter()
                .any(|r| r.runs.iter().any(|run| run.interrupted)),
            median_http: median("http"),
            median_h2: median("h2"),
            median_grpc: median("grpc"),
            median_h3: median("h3"),
            per_round,
            findings: Vec::new(),
        };
        cmp.findings = findings(&cmp.stacks(), server);
        cmp
    }

    /// The stacks that ran, in run order, with their medians.
    pub fn stacks(&self) -> Vec<Stack<'_>> {
        [
            ("HTTP/1.1", &self.median_http),
            ("HTTP/2", &self.median_h2),
            ("gRPC", &self.median_grpc),
            ("HTTP/3", &self.median_h3),
        ]
        .into_iter()
        .filter_map(|(name, m)| m.as_ref().map(|m| (name, m)))
        .collect()
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let stacks = self.stacks();
        let names: Vec<&str> = stacks.iter().map(|(n, _)| *n).collect();
        let _ = writeln!(
            out,
            "compare — {} — {} rounds ({} alternating){}",
            self.workload,
            self.rounds,
            names.join(", "),
            if self.interrupted {
                " — INTERRUPTED"
            } else {
                ""
            }
        );
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "  {:<6} {:<9} {:>8} {:>10} {:>7} {:>9} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9}",
            "round",
            "proto",
            "total s",
            "req/s",
            "failed",
            "p50 ms",
            "p99 ms",
            "B/req",
            "pkts/req",
            "sys/req",
            "cpu µs",
            "srv µs"
        );
        for r in &self.per_round {
            let f = &r.figures;
            let _ = writeln!(
                out,
                "  {:<6} {:<9} {:>8.2} {:>10} {:>7} {:>9} {:>9} {:>10} {:>9} {:>9} {:>9} {:>9}",
                r.round,
                r.proto,
                f.total_s,
                num(f.requests_per_sec, 0),
                f.failed,
                num(f.latency_p50_ms, 3),
                num(f.latency_p99_ms, 3),
                num(f.wire_bytes(), 1),
                num(f.packets(), 2),
                num(f.syscalls_per_request, 2),
                num(f.client_cpu_us_per_request, 1),
                num(f.server_cpu_us_per_request, 1)
            );
        }
        let pairs = super::ratio_pairs(stacks.len());
        let ratio_names: Vec<String> = pairs
            .iter()
            .map(|&(n, d)| format!("{}/{}", stacks[n].0, stacks[d].0))
            .collect();
        let _ = writeln!(out);
        let mut head = format!("{:<26}", "Medians:");
        for name in &names {
            let _ = write!(head, " {name:>12}");
        }
        if pairs.len() == 1 {
            let _ = write!(head, "    ratio ({})", ratio_names[0]);
        } else {
            for r in &ratio_names {
                let _ = write!(head, " {r:>15}");
            }
        }
        let _ = writeln!(out, "{}", head.trim_end());
        // a row where some stack has the figure: n/a for the others, and no ratio ("-") with
        // a side that has none or a divisor that is not positive
        let mut row = |name: &str, f: &dyn Fn(&Figures) -> Option<f64>| {
            let v: Vec<Option<f64>> = stacks.iter().map(|(_, x)| f(x)).collect();
            if v.iter().all(Option::is_none) {
                return;
            }
            let mut line = format!("  {name:<24}");
            for x in &v {
                let _ = write!(line, " {:>12}", num(*x, 2));
            }
            for &(n, d) in pairs {
                let r = show::ratio(super::derive::ratio(v[n], v[d]));
                let w = if pairs.len() == 1 { 8 } else { 15 };
                let _ = write!(line, " {r:>w$}");
            }
            let _ = writeln!(out, "{line}");
        };
        row("Capacity (req/s)", &|x| x.capacity_rps);
        row("Total (s)", &|x| Some(x.total_s));
        row("Requests/sec", &|x| x.requests_per_sec);
        row("OK/sec", &|x| x.ok_per_sec);
        row("Latency p50 (ms)", &|x| x.latency_p50_ms);
        row("Latency p99 (ms)", &|x| x.latency_p99_ms);
        row("Connections", &|x| Some(x.connections));
        row("Bytes out / request", &|x| x.bytes_out_per_request);
        row("Bytes in / request", &|x| x.bytes_in_per_request);
        row("Wire bytes / request", &|x| x.wire_bytes());
        row("Segments / request", &|x| x.segments());
        row("Datagrams / request", &|x| x.datagrams());
        row("Syscalls / request", &|x| x.syscalls_per_request);
        row("  socket data calls", &|x| x.data_calls_per_request);
        row("Context switches / req", &|x| {
            x.context_switches_per_request
        });
        row("Client CPU / req (µs)", &|x| x.client_cpu_us_per_request);
        row("Server CPU / req (µs)", &|x| x.server_cpu_us_per_request);
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
            requests_per_sec: Some(rps),
            ok_per_sec: Some(rps),
            count: rps,
            failed: 0.0,
            latency_p50_ms: Some(1.0),
            latency_p99_ms: Some(2.0),
            connections: conns,
            bytes_out_per_request: Some(bytes / 2.0),
            bytes_in_per_request: Some(bytes / 2.0),
            wire_bytes_out_per_request: Some(bytes / 2.0),
            wire_bytes_in_per_request: Some(bytes / 2.0),
            segments_out_per_request: Some(segs / 2.0),
            segments_in_per_request: Some(segs / 2.0),
            datagrams_out_per_request: None,
            datagrams_in_per_request: None,
            syscalls_per_request: Some(2.0),
            data_calls_per_request: Some(2.0),
            context_switches_per_request: None,
            client_cpu_us_per_request: Some(cpu),
            server_cpu_us_per_request: srv,
            capacity_rps: None,
        }
    }

    #[test]
    fn medians_are_per_figure() {
        let m = Figures::median(&[
            fig(1.0, 10.0, 1.0, 5.0, Some(1.0), 1.0),
            fig(3.0, 30.0, 3.0, 1.0, Some(3.0), 1.0),
            fig(2.0, 20.0, 2.0, 9.0, Some(2.0), 1.0),
        ]);
        assert_eq!(m.requests_per_sec, Some(2.0));
        assert_eq!(m.client_cpu_us_per_request, Some(5.0));
        assert_eq!(m.server_cpu_us_per_request, Some(2.0));
        let even = Figures::median(&[
            fig(1.0, 10.0, 1.0, 5.0, None, 1.0),
            fig(3.0, 30.0, 3.0, 1.0, None, 1.0),
        ]);
        assert_eq!(even.requests_per_sec, Some(2.0));
        assert_eq!(even.server_cpu_us_per_request, None);
    }

    #[test]
    fn figures_of_a_run_report() {
        use std::time::Duration;

        use crate::report::tests::{conn, hdr, ok_ms, report, run, tcp};
        use crate::stack::Proto;
        use crate::stats::IoCalls;

        let mut r = run(Proto::Http);
        r.elapsed = Duration::from_secs(2);
        // 8 OK of 1..=8 ms and 2 failed, 10 written; 20 requests on the one connection
        // (warmup included), IPv4 without timestamps: 40 B of headers a segment
        ok_ms(&mut r.stats, 1..=8);
        (r.stats.failed, r.stats.written) = (2, 10);
        r.stats.conns = vec![conn(0, 20, 2000, 4000, Some(tcp(40, 20, false)))];
        r.cost.cpu.user_us = 100;
        r.cost.kernel.syscalls = Some(50);
        r.cost.io = IoCalls {
            reads: 10,
            writes: 10,
            read_would_block: 5,
            write_would_block: 5,
            ..IoCalls::ZERO
        };
        let f = Figures::of(&report(&r));
        // 10 / 2 s, 8 / 2 s
        assert_eq!(
            (f.total_s, f.requests_per_sec, f.ok_per_sec),
            (2.0, Some(5.0), Some(4.0))
        );
        assert_eq!((f.count, f.failed), (10.0, 2.0));
        // of 8: p50 the 4th, p99 the 8th
        hdr(f.latency_p50_ms, 4.0);
        hdr(f.latency_p99_ms, 8.0);
        assert_eq!(f.connections, 1.0);
        // per request on the wire: 2000 / 20, 4000 / 20; 40 / 20 and 20 / 20 segments
        assert_eq!(
            (f.bytes_out_per_request, f.bytes_in_per_request),
            (Some(100.0), Some(200.0))
        );
        assert_eq!(
            (f.segments_out_per_request, f.segments_in_per_request),
            (Some(2.0), Some(1.0))
        );
        // (2000 + 40 × 40) / 20, (4000 + 20 × 40) / 20
        assert_eq!(
            (f.wire_bytes_out_per_request, f.wire_bytes_in_per_request),
            (Some(180.0), Some(240.0))
        );
        // per request written: 50 / 10 syscalls, (10 + 10 + 5 + 5) / 10 data calls, 100 / 10 µs
        assert_eq!(f.syscalls_per_request, Some(5.0));
        assert_eq!(f.data_calls_per_request, Some(3.0));
        assert_eq!(f.client_cpu_us_per_request, Some(10.0));
        // not counted: absent, not 0
        assert_eq!(f.context_switches_per_request, None);
        assert_eq!(f.server_cpu_us_per_request, None);
    }

    #[test]
    fn an_optional_figure_has_a_median_only_when_every_round_has_it() {
        let round = |sys: Option<f64>, cs: Option<f64>| Figures {
            syscalls_per_request: sys,
            context_switches_per_request: cs,
            ..fig(1.0, 10.0, 1.0, 5.0, Some(1.0), 1.0)
        };
        // syscalls in every round: the median of 1, 3, 2; context switches missing in one
        let m = Figures::median(&[
            round(Some(1.0), Some(4.0)),
            round(Some(3.0), None),
            round(Some(2.0), Some(6.0)),
        ]);
        assert_eq!(m.syscalls_per_request, Some(2.0));
        assert_eq!(m.context_switches_per_request, None);
        // one round without syscalls: no median (not the median of the other two)
        let m = Figures::median(&[
            round(Some(1.0), Some(4.0)),
            round(None, Some(6.0)),
            round(Some(2.0), Some(5.0)),
        ]);
        assert_eq!(m.syscalls_per_request, None);
        assert_eq!(m.context_switches_per_request, Some(5.0));
        // an even count: the mean of the middle two, (1 + 3) / 2 and (4 + 6) / 2
        let m = Figures::median(&[round(Some(1.0), Some(4.0)), round(Some(3.0), Some(6.0))]);
        assert_eq!(
            (m.syscalls_per_request, m.context_switches_per_request),
            (Some(2.0), Some(5.0))
        );
        // no rounds at all: every measured figure absent (the counts 0)
        let m = Figures::median(&[]);
        assert_eq!(
            (m.syscalls_per_request, m.server_cpu_us_per_request),
            (None, None)
        );
        assert_eq!(
            (m.requests_per_sec, m.client_cpu_us_per_request),
            (None, None)
        );
        assert_eq!((m.count, m.connections), (0.0, 0.0));
    }

    #[test]
    fn h3_is_compared_in_packets_and_bytes_on_the_wire() {
        let h2 = fig(15_000.0, 400.0, 3.0, 20.0, None, 1.0);
        // HTTP/3: no segments, 2 datagrams (1 + 1) per request
        let h3 = Figures {
            segments_out_per_request: None,
            segments_in_per_request: None,
            datagrams_out_per_request: Some(1.0),
            datagrams_in_per_request: Some(1.0),
            ..fig(12_000.0, 500.0, 0.0, 25.0, None, 1.0)
        };
        assert_eq!((h3.segments(), h3.packets()), (None, Some(2.0)));
        assert_eq!(h2.packets(), Some(3.0));
        let f = findings(&[("HTTP/2", &h2), ("HTTP/3", &h3)], "the server");
        assert!(
            f.iter().any(|l| l.starts_with(
                "HTTP/3 put 1.2× the bytes per request on the wire of HTTP/2 (500 vs 400 B, IP \
                 and TCP or UDP headers included) in 0.7× the packets (TCP segments, UDP \
                 datagrams) (2.00 vs 3.00)."
            )),
            "{f:?}"
        );
        let cmp = CompareReport {
            schema: "wirebench.compare.v2",
            workload: "w".into(),
            rounds: 1,
            interrupted: false,
            per_round: Vec::new(),
            median_http: None,
            median_h2: Some(h2),
            median_grpc: None,
            median_h3: Some(h3),
            findings: Vec::new(),
        };
        let names: Vec<&str> = cmp.stacks().iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["HTTP/2", "HTTP/3"]);
        let t = cmp.to_text();
        assert!(t.contains("  Datagrams / request"), "{t}");
    }

    #[test]
    fn findings_follow_the_numbers() {
        let h = fig(10_000.0, 620.0, 2.0, 30.0, Some(42.0), 10.0);
        let g = fig(20_000.0, 200.0, 0.8, 10.0, Some(20.0), 1.0);
        let f = findings(&[("HTTP/1.1", &h), ("gRPC", &g)], "etcd");
        assert_eq!(f[0], "HTTP/1.1 used 10 connections, gRPC 1.");
        assert!(
            f[1].starts_with("gRPC completed 2.0× the successful requests per second of HTTP/1.1"),
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
        let f = findings(&[("HTTP/1.1", &g), ("gRPC", &h)], "etcd");
        assert!(f[1].starts_with("HTTP/1.1 completed 2.0×"), "{}", f[1]);
        // three stacks: every later one against every earlier one
        let h2 = fig(15_000.0, 400.0, 1.0, 20.0, Some(30.0), 1.0);
        let f = findings(&[("HTTP/1.1", &h), ("HTTP/2", &h2), ("gRPC", &g)], "etcd");
        assert_eq!(f[0], "HTTP/1.1 used 10 connections, HTTP/2 1, gRPC 1.");
        for want in [
            "HTTP/2 completed 1.5× the successful requests per second of HTTP/1.1",
            "gRPC completed 2.0× the successful requests per second of HTTP/1.1",
            "gRPC completed 1.3× the successful requests per second of HTTP/2",
            "HTTP/2 cost 2.0× the client CPU per request of gRPC",
        ] {
            assert!(f.iter().any(|l| l.starts_with(want)), "{want}: {f:?}");
        }
        assert_eq!(
            f.last().unwrap(),
            "p99 latency: HTTP/1.1 2.000 ms, HTTP/2 2.000 ms, gRPC 2.000 ms."
        );
    }
}
