//! `--metrics-addr`'s page: the live board's figures per stack in Prometheus' text exposition
//! format (0.0.4): `# HELP` and `# TYPE` once per family, `_total` counters, a histogram.

use std::fmt::Write;

use crate::outcome::FailureKind;
use crate::stats::live::{LATENCY_BOUNDS_NS, StackFigures};

/// The page's Content-Type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A label value with `\`, `"` and newlines escaped.
fn label(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A number as Prometheus reads it (integers without a fraction).
fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// The page: every stack's figures so far; `finished` once the report is written (the
/// figures are then the report's). `version` goes in `wirebench_build_info`.
pub fn render(stacks: &[StackFigures], finished: bool, version: &str) -> String {
    let mut o = String::with_capacity(4096);
    family(
        &mut o,
        "wirebench_build_info",
        "gauge",
        "Always 1; the wirebench version in a label.",
    );
    let _ = writeln!(
        o,
        "wirebench_build_info{{version=\"{}\"}} 1",
        label(version)
    );
    family(
        &mut o,
        "wirebench_run_finished",
        "gauge",
        "1 once the report is written: the figures are then final and equal the report's.",
    );
    let _ = writeln!(o, "wirebench_run_finished {}", u8::from(finished));

    requests(&mut o, stacks);
    let counter = |o: &mut String, name: &str, help: &str, v: &dyn Fn(&StackFigures) -> u64| {
        family(o, name, "counter", help);
        for s in stacks {
            let _ = writeln!(o, "{name}{{stack=\"{}\"}} {}", s.proto.name(), v(s));
        }
    };
    counter(
        &mut o,
        "wirebench_requests_written_total",
        "Measured requests written to a socket (the denominator of the per-request cost).",
        &|s| s.figures.written,
    );

    latency(&mut o, stacks);

    counter(
        &mut o,
        "wirebench_sent_bytes_total",
        "Socket bytes the worker threads' connections wrote (setup and warmup included).",
        &|s| s.figures.bytes_out,
    );
    counter(
        &mut o,
        "wirebench_received_bytes_total",
        "Socket bytes the worker threads' connections read (setup and warmup included).",
        &|s| s.figures.bytes_in,
    );
    cost(&mut o, stacks);
    counter(
        &mut o,
        "wirebench_connections_opened_total",
        "TCP connections the worker threads opened.",
        &|s| s.figures.connections,
    );
    counter(
        &mut o,
        "wirebench_connect_failures_total",
        "Connection attempts that failed during the run.",
        &|s| s.figures.connect_failures,
    );
    o
}

/// The requests by status and the failures by kind.
fn requests(o: &mut String, stacks: &[StackFigures]) {
    family(
        o,
        "wirebench_requests_total",
        "counter",
        "Measured requests completed, by the status of their response (none: failed before any status).",
    );
    for s in stacks {
        let stack = s.proto.name();
        let f = &s.figures;
        for (k, n) in &f.statuses {
            let _ = writeln!(
                o,
                "wirebench_requests_total{{stack=\"{stack}\",status=\"{}\"}} {n}",
                label(&k.to_string())
            );
        }
        // always there, so the series never vanishes between scrapes
        let _ = writeln!(
            o,
            "wirebench_requests_total{{stack=\"{stack}\",status=\"none\"}} {}",
            f.without_status()
        );
    }
    family(
        o,
        "wirebench_request_errors_total",
        "counter",
        "Measured requests that failed, by failure kind (docs/METHODOLOGY.md).",
    );
    for s in stacks {
        let stack = s.proto.name();
        for (kind, n) in FailureKind::ALL.iter().zip(s.figures.errors) {
            if n > 0 {
                let _ = writeln!(
                    o,
                    "wirebench_request_errors_total{{stack=\"{stack}\",kind=\"{}\"}} {n}",
                    kind.as_str()
                );
            }
        }
    }
}

/// The latency histogram of the successful requests.
fn latency(o: &mut String, stacks: &[StackFigures]) {
    let name = "wirebench_request_duration_seconds";
    family(
        o,
        name,
        "histogram",
        "Latency of the successful measured requests (open loop: from the intended send time).",
    );
    for s in stacks {
        let stack = s.proto.name();
        let f = &s.figures;
        for (bound, n) in LATENCY_BOUNDS_NS.iter().zip(f.latency_le) {
            let _ = writeln!(
                o,
                "{name}_bucket{{stack=\"{stack}\",le=\"{}\"}} {n}",
                num(*bound as f64 / 1e9)
            );
        }
        let _ = writeln!(
            o,
            "{name}_bucket{{stack=\"{stack}\",le=\"+Inf\"}} {}",
            f.latency_count
        );
        let _ = writeln!(
            o,
            "{name}_sum{{stack=\"{stack}\"}} {}",
            num(f.latency_sum_ns as f64 / 1e9)
        );
        let _ = writeln!(o, "{name}_count{{stack=\"{stack}\"}} {}", f.latency_count);
    }
}

/// The worker threads' syscalls (when counted) and CPU in the measured window.
fn cost(o: &mut String, stacks: &[StackFigures]) {
    if stacks.iter().any(|s| s.figures.syscalls.is_some()) {
        family(
            o,
            "wirebench_syscalls_total",
            "counter",
            "Syscalls of the worker threads in the measured window, counted by the kernel.",
        );
        for s in stacks {
            if let Some(n) = s.figures.syscalls {
                let _ = writeln!(
                    o,
                    "wirebench_syscalls_total{{stack=\"{}\"}} {n}",
                    s.proto.name()
                );
            }
        }
    }
    family(
        o,
        "wirebench_cpu_seconds_total",
        "counter",
        "CPU time of the worker threads in the measured window.",
    );
    for s in stacks {
        let stack = s.proto.name();
        let cpu = s.figures.cpu;
        let _ = writeln!(
            o,
            "wirebench_cpu_seconds_total{{stack=\"{stack}\",mode=\"user\"}} {}",
            num(cpu.user_us as f64 / 1e6)
        );
        let _ = writeln!(
            o,
            "wirebench_cpu_seconds_total{{stack=\"{stack}\",mode=\"system\"}} {}",
            num(cpu.sys_us as f64 / 1e6)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::StatusKey;
    use crate::stack::Proto;
    use crate::stats::live::Snapshot;

    #[test]
    fn families_are_whole_and_samples_well_formed() {
        let mut f = Snapshot {
            ok: 3,
            failed: 2,
            statuses: vec![(StatusKey::Http(200), 3), (StatusKey::Http(503), 1)],
            latency_count: 3,
            latency_sum_ns: 1_500_000,
            syscalls: Some(30),
            written: 4,
            ..Snapshot::default()
        };
        f.latency_le[5] = 2;
        f.latency_le[6..].fill(3);
        f.errors[1] = 1; // timeout
        let http_status = crate::outcome::FailureKind::ALL
            .iter()
            .position(|k| *k == crate::outcome::FailureKind::HttpStatus)
            .expect("a kind");
        f.errors[http_status] = 1;
        let g = Snapshot {
            statuses: vec![(
                StatusKey::GrpcFromHttp {
                    code: 14,
                    http: 503,
                },
                1,
            )],
            failed: 1,
            syscalls: None,
            ..Snapshot::default()
        };
        let page = render(
            &[
                StackFigures {
                    proto: Proto::Http,
                    figures: f,
                },
                StackFigures {
                    proto: Proto::Grpc,
                    figures: g,
                },
            ],
            true,
            "0.1.0",
        );
        assert!(page.contains("wirebench_requests_total{stack=\"http\",status=\"200\"} 3\n"));
        assert!(page.contains("wirebench_requests_total{stack=\"http\",status=\"none\"} 1\n"));
        assert!(page.contains(
            "wirebench_requests_total{stack=\"grpc\",status=\"UNAVAILABLE (HTTP 503)\"} 1\n"
        ));
        assert!(
            page.contains("kind=\"timeout\"} 1\n") && page.contains("kind=\"http_status\"} 1\n")
        );
        assert!(page.contains(
            "wirebench_request_duration_seconds_bucket{stack=\"http\",le=\"0.0005\"} 2\n"
        ));
        assert!(
            page.contains(
                "wirebench_request_duration_seconds_bucket{stack=\"http\",le=\"+Inf\"} 3\n"
            )
        );
        assert!(page.contains("wirebench_request_duration_seconds_sum{stack=\"http\"} 0.0015\n"));
        // the stack without a syscall count has no sample; the other has one
        assert!(page.contains("wirebench_syscalls_total{stack=\"http\"} 30\n"));
        assert!(!page.contains("wirebench_syscalls_total{stack=\"grpc\"}"));
        assert!(page.contains("wirebench_run_finished 1\n"));
        // every sample belongs to the family declared last, and each family is declared once
        let mut declared = std::collections::HashSet::new();
        let mut current = String::new();
        for line in page.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let name = rest.split(' ').next().unwrap().to_string();
                assert!(declared.insert(name.clone()), "{name} declared twice");
                current = name;
            } else if !line.starts_with('#') {
                let metric = line.split(['{', ' ']).next().unwrap();
                let base = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|s| metric.strip_suffix(s).filter(|b| *b == current))
                    .unwrap_or(metric);
                assert_eq!(base, current, "{line}");
                let value = line.rsplit(' ').next().unwrap();
                assert!(value.parse::<f64>().is_ok(), "{line}");
            }
        }
        assert!(declared.len() >= 10);
    }
}
