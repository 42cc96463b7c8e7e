//! `--fail-if` verdicts: the thresholds (`crate::threshold`, parsed with the configuration)
//! judged on a run's report: the figure's value in a `RunReport`, and what a broken one prints.

use std::fmt;

use serde_json::Value;

use super::RunReport;
pub use crate::threshold::{Figure, Op, Threshold};

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
                "threshold {} broken by {}: the report has no value for it (nothing measured \
                 to judge)",
                self.threshold, self.run
            ),
        }
    }
}

/// `v` with at most four decimals, trailing zeros dropped.
pub(super) fn trim(v: f64) -> String {
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
    /// request written, no kernel counters, a path to a field this run does not have or that
    /// is null): such a threshold cannot be judged, and breaks saying so.
    pub fn value(&self, run: &RunReport) -> Option<f64> {
        match self {
            Figure::Percentile(p) => run.percentile_ms(*p),
            Figure::Rps => run.summary.requests_per_sec,
            Figure::Errors => super::derive::per(run.summary.failed, run.summary.count),
            Figure::Cpu => run.cost.client_cpu_us_per_request,
            Figure::Bytes => super::plus(
                run.wire.wire_bytes_out_per_request,
                run.wire.wire_bytes_in_per_request,
            ),
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
