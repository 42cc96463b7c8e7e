//! `--find-max`: the capacity search's answer and its steps, as the report carries them (JSON
//! `runs[].capacity`), and its text section. The search itself is `app::capacity`; every
//! figure of a step comes from that step's own run report (`Step::of`).

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use super::RunReport;
use super::show::num;
use crate::threshold::Threshold;

/// A step whose worker threads were this busy (CPU over the window, all threads) measured
/// the client, not the target.
pub const CLIENT_BUSY: f64 = 0.9;
/// A step whose schedule released this share of its sends late (`OpenLoop::overdue_sends`)
/// measured the client, not the target.
pub const CLIENT_OVERDUE: f64 = 0.1;
/// A step sustained its rate when it wrote at least this share of it.
pub const ACHIEVED: f64 = 0.9;
/// A step whose sends waited for a free client this often was queueing at the target: a
/// break it shows is the target's, not a stall's, and is not measured again.
pub const QUEUED: f64 = 0.1;

/// Which part of the search a step belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// doubling from --start-rate until an objective breaks (or halving when the first breaks)
    Rise,
    /// halving the interval between the highest rate met and the lowest broken
    Bisect,
    /// a final run at the answer
    Confirm,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Rise => "rise",
            Phase::Bisect => "bisect",
            Phase::Confirm => "confirm",
        }
    }
}

/// One measured step: a run at `rate` after the settle time.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Step {
    pub phase: Phase,
    /// the open-loop rate asked for, requests/s
    pub rate: f64,
    /// measured requests written / the measured window (null: none written)
    pub achieved_rps: Option<f64>,
    /// measured requests (the step's own count; every step's requests are in `requests`)
    pub requests: u64,
    pub errors: u64,
    /// requests sent in the settle time before the window: not measured, but they reached
    /// the target (an etcd put's revision counts them)
    #[serde(default)]
    pub settle_requests: u64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub client_cpu_us_per_request: Option<f64>,
    pub server_cpu_us_per_request: Option<f64>,
    /// the worker threads' CPU over the window / (window × threads)
    pub client_busy: Option<f64>,
    /// measured sends the schedule released 2 ms or more after their time, / the measured
    /// sends it released
    pub overdue_share: Option<f64>,
    /// measured sends that came due while all -c clients were busy (`late_sends`), / the
    /// measured sends released: the target's queue
    #[serde(default)]
    pub queued_share: Option<f64>,
    /// the client's own limit showed: busy ≥ 90% or ≥ 10% of its sends released late
    pub client_bound: bool,
    /// every objective held and the rate was sustained (achieved ≥ 90% of it)
    pub met: bool,
    /// what broke, one line each ("p99<5ms: 7.31 ms", "achieved 1,702 of 2,000 req/s")
    pub broke: Vec<String>,
    /// Ctrl-C cut the step short: not judged
    pub interrupted: bool,
    /// the rate broke in the step before and was measured again (`--retries`): it counts as
    /// broken only when every try broke
    #[serde(default)]
    pub retry: bool,
}

/// How the search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// the interval between met and broken came within --precision
    Converged,
    /// the client reached its own limit before the target broke an objective: the answer is
    /// a floor of the target's capacity
    ClientBound,
    /// no rate tried met every objective (down to the lowest that still sends enough)
    NoneMet,
    /// --max-steps was reached first
    Steps,
    /// --max-duration was reached first
    Time,
    /// the highest rate wirebench sends (--rate's bound) met every objective
    RateCeiling,
    /// Ctrl-C: the best answer so far
    Interrupted,
}

impl Ending {
    pub fn says(self) -> &'static str {
        match self {
            Ending::Converged => "converged within --precision",
            Ending::ClientBound => {
                "the client was the limit (its threads busy or its sends late) before the target broke an objective: the answer is a floor of the target's capacity"
            }
            Ending::NoneMet => "no rate tried met every objective",
            Ending::Steps => "stopped at --max-steps before converging: the best answer so far",
            Ending::Time => "stopped at --max-duration before converging: the best answer so far",
            Ending::RateCeiling => {
                "the highest rate wirebench paces met every objective: the answer is a floor"
            }
            Ending::Interrupted => "interrupted (Ctrl-C): the best answer so far",
        }
    }
}

/// The spread of the confirmation runs at the answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spread {
    pub runs: usize,
    /// confirmations that met every objective
    pub met: usize,
    pub achieved_rps_min: Option<f64>,
    pub achieved_rps_max: Option<f64>,
    pub p99_ms_min: Option<f64>,
    pub p99_ms_max: Option<f64>,
}

/// A stack's capacity under the objectives.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Capacity {
    /// the objectives, as given
    pub objectives: Vec<String>,
    pub start_rate: f64,
    /// --precision, a fraction
    pub precision: f64,
    /// the highest rate that met every objective in its step (null: none did)
    pub answer_rps: Option<f64>,
    /// the lowest rate that broke one (null: none did)
    pub broken_rps: Option<f64>,
    pub ending: Ending,
    /// the steps in order, confirmations last
    pub steps: Vec<Step>,
    /// the confirmations at the answer (null: no answer, or no time left for one)
    pub confirmation: Option<Spread>,
    /// measured requests over every step
    pub requests: u64,
    /// the search's wall time, settle times and connects included
    pub elapsed_s: f64,
}

impl Capacity {
    /// Whether the answer held in every confirmation (false without one).
    pub fn confirmed(&self) -> bool {
        self.confirmation
            .as_ref()
            .is_some_and(|c| c.runs > 0 && c.met == c.runs)
    }
}

impl Step {
    /// The step at `rate` judged from its run report against `objectives`.
    pub fn of(phase: Phase, rate: f64, run: &RunReport, objectives: &[Threshold]) -> Step {
        let open = run.open_loop.as_ref();
        let achieved_rps = open.and_then(|o| o.achieved_rate);
        let window_s = (run
            .window
            .end_unix_us
            .saturating_sub(run.window.start_unix_us)) as f64
            / 1e6;
        let cpu_us = (run.cost.client_cpu_user_us + run.cost.client_cpu_sys_us) as f64;
        let client_busy = (window_s > 0.0 && run.threads > 0)
            .then(|| cpu_us / 1e6 / (window_s * run.threads as f64));
        // shares of the measured sends the schedule released: those a client took, and those
        // that waited past --timeout for one
        let released = open.map_or(0, |o| o.sends_taken + o.expired_sends);
        let share = |n: fn(&super::parts::OpenLoop) -> u64| {
            open.filter(|_| released > 0)
                .map(|o| n(o) as f64 / released as f64)
        };
        let overdue_share = share(|o| o.overdue_sends);
        let queued_share = share(|o| o.late_sends);
        let client_bound = client_busy.is_some_and(|b| b >= CLIENT_BUSY)
            || overdue_share.is_some_and(|s| s >= CLIENT_OVERDUE);
        let mut broke: Vec<String> = objectives
            .iter()
            .filter_map(|t| t.judge(run))
            .map(|b| match b.value {
                Some(v) => format!("{}: {}{}", b.threshold, super::verdict::trim(v), b.unit),
                None => format!("{}: not measured", b.threshold),
            })
            .collect();
        if !sustains(achieved_rps, rate) {
            broke.push(format!(
                "achieved {} of {} req/s",
                num(achieved_rps, 0),
                num(rate, 0)
            ));
        }
        Step {
            phase,
            rate,
            achieved_rps,
            requests: run.summary.count,
            errors: run.summary.failed,
            settle_requests: run.summary.warmup_requests,
            p50_ms: run.percentile_ms(50.0),
            p99_ms: run.percentile_ms(99.0),
            client_cpu_us_per_request: run.cost.client_cpu_us_per_request,
            server_cpu_us_per_request: run.cost.server_cpu_us_per_request,
            client_busy,
            overdue_share,
            queued_share,
            client_bound,
            met: broke.is_empty() && !run.interrupted,
            broke,
            interrupted: run.interrupted,
            retry: false,
        }
    }

    /// Whether the step wrote at least `ACHIEVED` of its rate.
    pub fn sustained(&self) -> bool {
        sustains(self.achieved_rps, self.rate)
    }

    /// The step's phase in a table, "again" after it for a retry.
    pub fn label(&self) -> String {
        if self.retry {
            format!("{} again", self.phase.name())
        } else {
            self.phase.name().to_string()
        }
    }

    /// The step's verdict in a table: met, what broke, or interrupted; and whether the client
    /// was the limit.
    pub fn verdict(&self) -> String {
        let bound = if self.client_bound {
            " (client-bound)"
        } else {
            ""
        };
        if self.interrupted {
            format!("interrupted{bound}")
        } else if self.met {
            format!("met{bound}")
        } else {
            format!("broke {}{bound}", self.broke.join("; "))
        }
    }

    /// Whether a broken step is worth measuring again: it wrote its rate and its sends seldom
    /// waited for a free client, so what broke may have been a stall rather than the target's
    /// queue (which a second try would only measure again).
    pub fn may_be_a_stall(&self) -> bool {
        !self.met
            && !self.client_bound
            && self.sustained()
            && !self.queued_share.is_some_and(|q| q >= QUEUED)
    }
}

/// Whether `achieved` requests/s is at least `ACHIEVED` of `rate`.
fn sustains(achieved: Option<f64>, rate: f64) -> bool {
    achieved.is_some_and(|a| a >= ACHIEVED * rate)
}

/// A share as a whole percentage, "-" without one.
pub fn percent(share: Option<f64>) -> String {
    share.map_or("-".to_string(), |b| format!("{:.0}%", b * 100.0))
}

/// The steps table's heads, in the text and the HTML reports.
pub const STEP_HEADS: [&str; 13] = [
    "#",
    "phase",
    "rate",
    "achieved",
    "requests",
    "errors",
    "p50 ms",
    "p99 ms",
    "CPU c µs",
    "CPU s µs",
    "busy",
    "queued",
    "verdict",
];

impl Step {
    /// The step's row of the steps table, under [`STEP_HEADS`]; `i` its number from 1.
    pub fn cells(&self, i: usize) -> [String; 13] {
        let n = |v: Option<f64>, digits| num(v.filter(|v| v.is_finite()), digits);
        [
            i.to_string(),
            self.label(),
            n(Some(self.rate), 0),
            n(self.achieved_rps, 0),
            self.requests.to_string(),
            self.errors.to_string(),
            n(self.p50_ms, 3),
            n(self.p99_ms, 3),
            n(self.client_cpu_us_per_request, 1),
            n(self.server_cpu_us_per_request, 1),
            percent(self.client_busy),
            percent(self.queued_share),
            self.verdict(),
        ]
    }
}

/// One line of the text report's steps table: the phase left-aligned, the figures right, the
/// verdict last.
fn text_row<S: AsRef<str>>(out: &mut String, cells: [S; 13]) {
    const WIDTHS: [usize; 12] = [3, 13, 10, 10, 9, 7, 9, 9, 9, 9, 6, 6];
    out.push_str("  ");
    for (k, (c, w)) in cells.iter().zip(WIDTHS).enumerate() {
        let c = c.as_ref();
        let _ = if k == 1 {
            write!(out, "{c:<w$} ")
        } else {
            write!(out, "{c:>w$} ")
        };
    }
    let _ = writeln!(out, " {}", cells[12].as_ref());
}

/// The capacity section of a run's text report.
pub fn render_text(out: &mut String, c: &Capacity) {
    let answer = match c.answer_rps {
        Some(a) => format!("{} req/s", num(a, 0)),
        None => "none".to_string(),
    };
    let _ = writeln!(
        out,
        "Capacity (--find-max {}): {answer}",
        c.objectives.join(" --find-max ")
    );
    let _ = writeln!(out, "  {}", c.ending.says());
    if let Some(b) = c.broken_rps {
        let _ = writeln!(
            out,
            "  lowest rate that broke an objective: {} req/s",
            num(b, 0)
        );
    }
    match &c.confirmation {
        Some(s) => {
            let _ = writeln!(
                out,
                "  confirmed in {} of {} run(s) at the answer: achieved {}-{} req/s, p99 {}-{} ms",
                s.met,
                s.runs,
                num(s.achieved_rps_min, 0),
                num(s.achieved_rps_max, 0),
                num(s.p99_ms_min, 3),
                num(s.p99_ms_max, 3)
            );
        }
        None if c.answer_rps.is_some() => {
            let _ = writeln!(out, "  not confirmed (no time left for a confirmation run)");
        }
        None => {}
    }
    let _ = writeln!(
        out,
        "  {} steps, {} measured requests, {:.1} s",
        c.steps.len(),
        c.requests,
        c.elapsed_s
    );
    text_row(out, STEP_HEADS);
    for (i, s) in c.steps.iter().enumerate() {
        text_row(out, s.cells(i + 1));
    }
    let _ = writeln!(out);
}

#[cfg(test)]
mod tests;
