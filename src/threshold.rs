//! `--fail-if`: a condition a finished run must meet (as k6's thresholds), parsed; judged on the
//! report by `report::verdict`.
//!
//! A threshold is `[STACK.]FIGURE OP VALUE`: STACK one of `http`, `h2`, `grpc` (without it, every
//! stack that ran is judged), FIGURE a name below or the dotted path of any numeric field of a
//! run in the JSON report (`summary.ok_per_sec`, `wire.bytes_in_per_request`), OP one of `<`,
//! `<=`, `>`, `>=`, VALUE a number with the figure's unit where it has one (`5ms`, `250us`,
//! `0.1%`).

/// Why a `--fail-if` is not a threshold: the line to print, quoting it as given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThresholdError {
    #[error("{flag} {text:?}: no comparison: write FIGURE<VALUE, e.g. p99<5ms")]
    NoComparison { flag: &'static str, text: String },
    #[error("{flag} {text:?}: no figure before the comparison")]
    NoFigure { flag: &'static str, text: String },
    #[error(
        "{flag} {text:?}: unknown figure {figure:?}: use p50, p90, p99, p999, rps, errors, \
         cpu, bytes, syscalls, or the dotted path of a numeric field of a run in the JSON report \
         (summary.ok_per_sec)"
    )]
    UnknownFigure {
        flag: &'static str,
        text: String,
        figure: String,
    },
    /// `value`: the value as given, units and all
    #[error("{flag} {text:?}: {value:?} is not a non-negative number")]
    NotANumber {
        flag: &'static str,
        text: String,
        value: String,
    },
}

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
    pub fn holds(self, value: f64, limit: f64) -> bool {
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

impl Threshold {
    /// Parses one `--fail-if` value.
    pub fn parse(text: &str) -> Result<Threshold, ThresholdError> {
        Threshold::parse_as("--fail-if", text)
    }

    /// Parses one value of `flag` (`--fail-if`, or `--find-max`'s objectives), which its
    /// errors name.
    pub fn parse_as(flag: &'static str, text: &str) -> Result<Threshold, ThresholdError> {
        let given = || text.to_string();
        let t = text.trim();
        let (at, op) = ["<=", ">=", "<", ">"]
            .iter()
            .filter_map(|o| t.find(o).map(|i| (i, *o)))
            .min_by_key(|&(i, o)| (i, std::cmp::Reverse(o.len())))
            .ok_or_else(|| ThresholdError::NoComparison {
                flag,
                text: given(),
            })?;
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
            return Err(ThresholdError::NoFigure {
                flag,
                text: given(),
            });
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
                    return Err(ThresholdError::UnknownFigure {
                        flag,
                        text: given(),
                        figure: path.to_string(),
                    });
                }
                Figure::Path(keys)
            }
            other => {
                return Err(ThresholdError::UnknownFigure {
                    flag,
                    text: given(),
                    figure: other.to_string(),
                });
            }
        };
        let limit = parse_value(&figure, value).ok_or_else(|| ThresholdError::NotANumber {
            flag,
            text: given(),
            value: value.to_string(),
        })?;
        Ok(Threshold {
            text: t.to_string(),
            stack,
            figure,
            op,
            limit,
        })
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
/// rest bare numbers; None when it is not a non-negative number.
fn parse_value(figure: &Figure, value: &str) -> Option<f64> {
    let number = |s: &str| -> Option<f64> {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
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
            Some(number(n)? * scale)
        }
        Figure::Errors => match value.strip_suffix('%') {
            Some(n) => Some(number(n)? / 100.0),
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
            let e = Threshold::parse(text).unwrap_err().to_string();
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
