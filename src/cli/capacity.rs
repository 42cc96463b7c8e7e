//! `--find-max` and the flags that bound its search, on every load command.

use std::time::Duration;

use clap::Args;

use super::error::ArgError;
use super::heading;
use crate::config::capacity::CapacitySpec;
use crate::config::{MAX_RATE, parse_duration};
use crate::stack::Proto;
use crate::threshold::Threshold;

/// The most steps a search may be allowed.
const MAX_STEPS: usize = 100;
/// The most confirmation runs.
const MAX_CONFIRM: usize = 20;
/// The most times a broken rate is measured again.
const MAX_RETRIES: usize = 10;

#[derive(Debug, Args, Default)]
pub struct CapacityArgs {
    /// Find the highest open-loop rate that meets OBJECTIVE, in --fail-if's grammar (p99<10ms,
    /// errors<0.1%; repeatable, all must hold): steps doubling from --start-rate until one
    /// breaks, then bisection to --precision, then a confirmation run at the answer. Each step
    /// settles for --settle, then measures --step; -c caps the requests in flight
    #[arg(long = "find-max", value_name = "OBJECTIVE", help_heading = heading::CAPACITY)]
    pub find_max: Vec<String>,
    /// The first step's rate, requests/s
    #[arg(long, default_value_t = 100.0, help_heading = heading::CAPACITY)]
    pub start_rate: f64,
    /// Stop bisecting when the lowest broken rate is within this of the highest met (5% or
    /// 0.05)
    #[arg(long, default_value = "5%", help_heading = heading::CAPACITY)]
    pub precision: String,
    /// Each step's measured window
    #[arg(long, value_parser = parse_duration, default_value = "5s", help_heading = heading::CAPACITY)]
    pub step: Duration,
    /// Requests sent at a step's rate before its window, left out of its figures
    #[arg(long, value_parser = parse_duration, default_value = "1s", help_heading = heading::CAPACITY)]
    pub settle: Duration,
    /// The most steps, confirmations not counted
    #[arg(long, default_value_t = 20, help_heading = heading::CAPACITY)]
    pub max_steps: usize,
    /// The whole search, confirmations included: no step starts that would end later
    #[arg(long, value_parser = parse_duration, default_value = "2m", help_heading = heading::CAPACITY)]
    pub max_duration: Duration,
    /// Confirmation runs at the answer (their spread is reported)
    #[arg(long, default_value_t = 1, help_heading = heading::CAPACITY)]
    pub confirm: usize,
    /// Measure a rate that broke an objective this many times more before it counts as
    /// broken (a stall of the machine or the network can break a rate, never meet one)
    #[arg(long, default_value_t = 1, help_heading = heading::CAPACITY)]
    pub retries: usize,
}

/// `got` of `--flag` within `lo..=hi`.
fn in_range(flag: &'static str, got: usize, lo: usize, hi: usize) -> Result<(), ArgError> {
    if (lo..=hi).contains(&got) {
        Ok(())
    } else {
        Err(ArgError::OutOfRange {
            flag,
            lo: lo as u64,
            hi: hi as u64,
            got: got as u64,
        })
    }
}

impl CapacityArgs {
    /// The search asked for (None without --find-max), its objectives judged on the stacks
    /// that run; `rate_given`: --rate, --stages, --client-stages, -n or -z was given, which a
    /// search replaces.
    pub(super) fn spec(
        &self,
        protos: &[Proto],
        rate_given: Option<&'static str>,
    ) -> Result<Option<CapacitySpec>, ArgError> {
        if self.find_max.is_empty() {
            return Ok(None);
        }
        if let Some(flag) = rate_given {
            return Err(ArgError::Rejected(format!(
                "--find-max chooses each step's rate and length: drop {flag} (--step and --settle set a step's length)"
            )));
        }
        let objectives = self
            .find_max
            .iter()
            .map(|t| Threshold::parse_as("--find-max", t))
            .collect::<Result<Vec<_>, _>>()?;
        for t in &objectives {
            if let Some(stack) = t.stack
                && !protos.iter().any(|p| p.name() == stack)
            {
                return Err(ArgError::Rejected(format!(
                    "--find-max {:?}: the {stack} stack does not run (--proto)",
                    t.text
                )));
            }
        }
        if !(self.start_rate.is_finite() && self.start_rate > 0.0 && self.start_rate <= MAX_RATE) {
            return Err(ArgError::Rate {
                flag: "start-rate",
                max: MAX_RATE,
                got: self.start_rate,
            });
        }
        let precision = parse_precision(&self.precision)?;
        if self.step < Duration::from_millis(100) {
            return Err(ArgError::Rejected(format!(
                "--step {:?}: at least 100ms",
                self.step
            )));
        }
        in_range("max-steps", self.max_steps, 1, MAX_STEPS)?;
        in_range("confirm", self.confirm, 0, MAX_CONFIRM)?;
        in_range("retries", self.retries, 0, MAX_RETRIES)?;
        if self.max_duration < self.step + self.settle {
            return Err(ArgError::Rejected(format!(
                "--max-duration {:?} is shorter than one step (--settle {:?} + --step {:?})",
                self.max_duration, self.settle, self.step
            )));
        }
        Ok(Some(CapacitySpec {
            objectives,
            start_rate: self.start_rate,
            precision,
            step: self.step,
            settle: self.settle,
            max_steps: self.max_steps,
            max_duration: self.max_duration,
            confirm: self.confirm,
            retries: self.retries,
        }))
    }
}

/// `5%` or `0.05`: a fraction above 0 and at most 1.
fn parse_precision(s: &str) -> Result<f64, ArgError> {
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(n) => n.trim().parse::<f64>().ok().map(|v| v / 100.0),
        None => t.parse::<f64>().ok(),
    };
    match v {
        Some(v) if v.is_finite() && v > 0.0 && v <= 1.0 => Ok(v),
        _ => Err(ArgError::Rejected(format!(
            "--precision {s:?}: give a share above 0 and at most 100% (5% or 0.05)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_reads_percent_and_fraction() {
        assert_eq!(parse_precision("5%").unwrap(), 0.05);
        assert_eq!(parse_precision("0.1").unwrap(), 0.1);
        for bad in ["0", "0%", "150%", "-1%", "x", ""] {
            assert!(parse_precision(bad).is_err(), "{bad}");
        }
    }
}
