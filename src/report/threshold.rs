//! `--fail-if`: conditions a finished run must meet (as k6's thresholds), judged on the report.
//!
//! A threshold is `[STACK.]FIGURE OP VALUE`: STACK one of `http`, `h2`, `grpc` (without it, every
//! stack that ran is judged), FIGURE a name below or the dotted path of any numeric field of a
//! run in the JSON report (`summary.ok_per_sec`, `wire.bytes_in_per_request`), OP one of `<`,
//! `<=`, `>`, `>=`, VALUE a number with the figure's unit where it has one (`5ms`, `250us`,
//! `0.1%`).

use std::fmt;

use serde_json::Value;

use super::RunReport;

/// A figure a threshold names.
#[derive(Debug, Clone, PartialEq)]
pub enum Figure {
    /// a latency percentile (50, 90, 99, 99.9), in ms
    Percentile(f64),
    /// requests per second (count / total)
    Rps,
    /// failed / count, as a fraction
    Errors,
    /// client CPU per request, µs
    Cpu,
    /// bytes on the wire per request, both directions (estimated IP + TCP headers included)
    Bytes,
    /// kernel-counted syscalls per request
    Syscalls,
    /// a numeric field of the run's JSON, by its dotted path
    Path(Vec<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Op::Lt => value < limit,
            Op::Le => value <= limit,
            Op::Gt => value > limit,
            Op::Ge => value >= limit,
        }
    }
}

/// One `--fail-if`, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// as the user wrote it
    pub text: String,
    /// `http`, `h2` or `grpc`; None: every stack
    pub stack: Option<&'static str>,
    pub figure: Figure,
    pub op: Op,
    /// in the figure's report unit (ms, fraction, µs, ...)
    pub limit: f64,
}

/// A threshold a run broke.
#[derive(Debug, Clone, PartialEq)]
pub struct Broken {
    pub threshold: String,
    /// the run's title (HTTP/1.1, HTTP/2, gRPC) or "median" for a comparison
    pub run: String,
    /// the figure's value, in its unit, or None when the report has no value for it
    pub value: Option<f64>,
    pub unit: &'static str,
}

impl fmt::Display for Broken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value {
            Some(v) => write!(
                f,
                "threshold {} broken by {}: {}{}",
                self.threshold,
                self.run,
                trim(v),
                self.unit
            ),
            None => write!(
                f,
                "threshold {} broken by {}: the report has no value for it",
                self.threshold, self.run
            ),
        }
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

impl Figure {
    fn unit(&self) -> &'static str {
        match self {
            Figure::Percentile(_) => " ms",
            Figure::Errors => "",
            Figure::Cpu => " µs",
            Figure::Bytes => " B",
            Figure::Rps | Figure::Syscalls | Figure::Path(_) => "",
        }
    }

    /// The figure's value in `run`; None when the run has none (no successful request, no
    /// kernel counters, a path to a field this run does not have).
    pub fn value(&self, run: &RunReport) -> Option<f64> {
        match self {
            Figure::Percentile(p) => run
                .latency_distribution
                .iter()
                .find(|x| x.percentile == *p)
                .map(|x| x.latency_ms),
            Figure::Rps => Some(run.summary.requests_per_sec),
            Figure::Errors => (run.summary.count > 0)
                .then(|| run.summary.failed as f64 / run.summary.count as f64),
            Figure::Cpu => (run.cost.requests > 0).then_some(run.cost.client_cpu_us_per_request),
            Figure::Bytes => {
                let w = &run.wire;
                (w.requests_with_tcp_info > 0)
                    .then_some(w.wire_bytes_out_per_request + w.wire_bytes_in_per_request)
            }
            Figure::Syscalls => run.cost.syscalls_per_request,
            Figure::Path(path) => {
                let json = serde_json::to_value(run).ok()?;
                let mut v = &json;
                for key in path {
                    v = match v {
                        Value::Object(m) => m.get(key)?,
                        Value::Array(a) => a.get(key.parse::<usize>().ok()?)?,
                        _ => return None,
                    };
                }
                v.as_f64()
            }
        }
    }
}

impl Threshold {
    /// Parses one `--fail-if` value; the error is the line to print.
    pub fn parse(text: &str) -> Result<Threshold, String> {
        let bad = |why: String| format!("--fail-if {text:?}: {why}");
        let t = text.trim();
        let (at, op) = ["<=", ">=", "<", ">"]
            .iter()
            .filter_map(|o| t.find(o).map(|i| (i, *o)))
            .min_by_key(|&(i, o)| (i, std::cmp::Reverse(o.len())))
            .ok_or_else(|| bad("no comparison: write FIGURE<VALUE, e.g. p99<5ms".into()))?;
        let (name, value) = (t[..at].trim(), t[at + op.len()..].trim());
        let op = match op {
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            _ => Op::Ge,
        };
        let (stack, name) = match name.split_once('.') {
            Some((s @ ("http" | "h2" | "grpc"), rest)) => (
                Some(match s {
                    "http" => "http",
                    "h2" => "h2",
                    _ => "grpc",
                }),
                rest,
            ),
            _ => (None, name),
        };
        if name.is_empty() {
            return Err(bad("no figure before the comparison".into()));
        }
        let figure = match name {
            "p50" => Figure::Percentile(50.0),
            "p90" => Figure::Percentile(90.0),
            "p99" => Figure::Percentile(99.0),
            "p999" => Figure::Percentile(99.9),
            "rps" => Figure::Rps,
            "errors" => Figure::Errors,
            "cpu" => Figure::Cpu,
            "bytes" => Figure::Bytes,
            "syscalls" => Figure::Syscalls,
            path if path.contains('.') => {
                let keys: Vec<String> = path.split('.').map(str::to_string).collect();
                if keys.iter().any(String::is_empty) || !known_root(&keys[0]) {
                    return Err(bad(format!(
                        "unknown figure {path:?}: use p50, p90, p99, p999, rps, errors, cpu, \
                         bytes, syscalls, or the dotted path of a numeric field of a run in the \
                         JSON report (summary.ok_per_sec)"
                    )));
                }
                Figure::Path(keys)
            }
            other => {
                return Err(bad(format!(
                    "unknown figure {other:?}: use p50, p90, p99, p999, rps, errors, cpu, bytes, \
                     syscalls, or the dotted path of a numeric field of a run in the JSON report \
                     (summary.ok_per_sec)"
                )));
            }
        };
        let limit = parse_value(&figure, value).map_err(bad)?;
        Ok(Threshold {
            text: t.to_string(),
            stack,
            figure,
            op,
            limit,
        })
    }

    /// Judges `run` (a run of stack `proto`): None when the threshold does not apply to it or
    /// holds.
    pub fn judge(&self, run: &RunReport) -> Option<Broken> {
        self.judge_value(run, self.figure.value(run), "")
    }

    /// Judges `value`, the figure of `run` or of several runs of its stack (`what` says which:
    /// "the median of "); None when the threshold does not apply to `run`'s stack or holds.
    pub fn judge_value(&self, run: &RunReport, value: Option<f64>, what: &str) -> Option<Broken> {
        if self.stack.is_some_and(|s| s != run.proto) {
            return None;
        }
        if value.is_some_and(|v| self.op.holds(v, self.limit)) {
            return None;
        }
        Some(Broken {
            threshold: self.text.clone(),
            run: format!("{what}{}", run.title),
            value: value.map(|v| display_value(&self.figure, v)),
            unit: match self.figure {
                Figure::Errors => "%",
                _ => self.figure.unit(),
            },
        })
    }
}

/// Errors are judged as a fraction and shown as a percentage.
fn display_value(figure: &Figure, v: f64) -> f64 {
    match figure {
        Figure::Errors => v * 100.0,
        _ => v,
    }
}

/// The top-level keys of a run in the JSON report that a path may start with.
fn known_root(key: &str) -> bool {
    matches!(
        key,
        "summary"
            | "cost"
            | "wire"
            | "open_loop"
            | "streaming"
            | "connection_setup"
            | "memory"
            | "connect_times"
            | "latency_distribution"
            | "per_endpoint"
            | "timeline"
            | "per_connection"
            | "histogram"
            | "status_distribution"
            | "error_distribution"
            | "clients"
            | "connections"
            | "threads"
            | "pipeline"
    )
}

/// The limit in the figure's report unit: latency in ms (`5ms`, `250us`, `1.5s`, a bare number
/// is ms), errors as a fraction (`0.1%` or `0.001`), cpu in µs (`12us`, `12µs` or bare), the
/// rest bare numbers.
fn parse_value(figure: &Figure, value: &str) -> Result<f64, String> {
    let number = |s: &str| -> Result<f64, String> {
        match s.trim().parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            _ => Err(format!("{value:?} is not a non-negative number")),
        }
    };
    match figure {
        Figure::Percentile(_) => {
            let (n, scale) = if let Some(n) = value.strip_suffix("ms") {
                (n, 1.0)
            } else if let Some(n) = value.strip_suffix("us").or(value.strip_suffix("µs")) {
                (n, 1e-3)
            } else if let Some(n) = value.strip_suffix("ns") {
                (n, 1e-6)
            } else if let Some(n) = value.strip_suffix('s') {
                (n, 1e3)
            } else {
                (value, 1.0)
            };
            Ok(number(n)? * scale)
        }
        Figure::Errors => match value.strip_suffix('%') {
            Some(n) => Ok(number(n)? / 100.0),
            None => number(value),
        },
        Figure::Cpu => {
            let n = value
                .strip_suffix("us")
                .or(value.strip_suffix("µs"))
                .unwrap_or(value);
            number(n)
        }
        Figure::Bytes => number(value.strip_suffix('B').unwrap_or(value)),
        Figure::Rps | Figure::Syscalls | Figure::Path(_) => number(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse_with_units_and_stacks() {
        let t = Threshold::parse("p99<5ms").unwrap();
        assert_eq!(
            (t.stack, &t.figure, t.op, t.limit),
            (None, &Figure::Percentile(99.0), Op::Lt, 5.0)
        );
        let t = Threshold::parse("grpc.p999 <= 250us").unwrap();
        assert_eq!(t.stack, Some("grpc"));
        assert_eq!((t.figure.clone(), t.op), (Figure::Percentile(99.9), Op::Le));
        assert!((t.limit - 0.25).abs() < 1e-12);
        assert_eq!(Threshold::parse("errors<0.1%").unwrap().limit, 0.001);
        assert_eq!(Threshold::parse("errors<0.001").unwrap().limit, 0.001);
        assert_eq!(Threshold::parse("rps>1000").unwrap().op, Op::Gt);
        assert_eq!(Threshold::parse("rps>=1000").unwrap().op, Op::Ge);
        assert_eq!(Threshold::parse("p50<1.5s").unwrap().limit, 1500.0);
        assert_eq!(Threshold::parse("cpu<12us").unwrap().limit, 12.0);
        let t = Threshold::parse("http.summary.ok_per_sec>10").unwrap();
        assert_eq!(t.stack, Some("http"));
        assert_eq!(
            t.figure,
            Figure::Path(vec!["summary".into(), "ok_per_sec".into()])
        );
    }

    #[test]
    fn bad_thresholds_name_the_problem() {
        for (text, words) in [
            ("p98<5ms", "unknown figure \"p98\""),
            ("p99", "no comparison"),
            ("<5", "no figure"),
            ("p99<fast", "not a non-negative number"),
            ("rps>-1", "not a non-negative number"),
            ("nosuch.field>1", "unknown figure"),
            ("summary..ok>1", "unknown figure"),
        ] {
            let e = Threshold::parse(text).unwrap_err();
            assert!(
                e.contains(words) && e.starts_with("--fail-if"),
                "{text}: {e}"
            );
        }
    }

    #[test]
    fn ops_hold_as_written() {
        assert!(Op::Lt.holds(1.0, 2.0) && !Op::Lt.holds(2.0, 2.0));
        assert!(Op::Le.holds(2.0, 2.0) && !Op::Le.holds(2.1, 2.0));
        assert!(Op::Gt.holds(3.0, 2.0) && !Op::Gt.holds(2.0, 2.0));
        assert!(Op::Ge.holds(2.0, 2.0) && !Op::Ge.holds(1.9, 2.0));
    }
}
