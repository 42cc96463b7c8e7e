//! `wirebench compare`: both protocols in alternating rounds; medians, ratios and findings.

use super::stacks::{first_error, run, write_svg};
use super::{Prepared, RunError, emit, exit};
use crate::config::{Config, Format};
use crate::report;

/// Runs `rounds` rounds on what was prepared and writes the comparison.
pub(super) fn compare(cfg: &Config, prepared: &Prepared, rounds: usize) -> Result<i32, RunError> {
    let mut reports: Vec<report::Report> = Vec::with_capacity(rounds);
    for round in 1..=rounds {
        if super::interrupted() {
            break;
        }
        eprintln!("wirebench compare: round {round} of {rounds}");
        let result = match &cfg.capacity {
            Some(spec) => super::capacity::run(cfg, prepared, spec),
            None => run(cfg, prepared).map(|(r, _)| r),
        };
        match result {
            // a round Ctrl-C cut short is left out of the medians, unless it is all there is
            Ok(rep) if super::interrupted() && !reports.is_empty() => {
                eprintln!(
                    "wirebench compare: interrupted: round {round} left out, {} rounds compared",
                    reports.len()
                );
                drop(rep);
            }
            Ok(rep) => reports.push(rep),
            Err(RunError::Interrupted) if !reports.is_empty() => break,
            Err(e) => return Err(e),
        }
    }
    let mut cmp =
        report::compare::CompareReport::new(cfg.spec.describe(), &reports, cfg.spec.server_name());
    cmp.interrupted |= super::interrupted();
    let text = match cfg.format {
        Format::Text => cmp.to_text(),
        Format::Json => cmp.to_json(),
    };
    emit(cfg.output.as_deref(), &text)?;
    write_svg(cfg, &cmp.stacks())?;
    // As for a run: a side with no successful request in a round is a failed comparison.
    let mut code = exit::OK;
    for (i, rep) in reports.iter().enumerate() {
        for r in rep.runs.iter().filter(|r| r.summary.ok == 0) {
            eprintln!(
                "error: round {}: no {} request succeeded ({})",
                i + 1,
                r.title,
                first_error(r)
            );
            code = exit::FAILURE;
        }
    }
    if code == exit::OK {
        code = super::stacks::judge(&cfg.thresholds, judge_medians(cfg, &reports).into_iter());
    }
    Ok(code)
}

/// The thresholds judged on each stack's median over the rounds (of each figure apart).
fn judge_medians(cfg: &Config, reports: &[report::Report]) -> Vec<report::verdict::Broken> {
    let mut broken = Vec::new();
    let Some(first) = reports.first() else {
        return broken;
    };
    for (i, run) in first.runs.iter().enumerate() {
        let rounds: Vec<&report::RunReport> =
            reports.iter().filter_map(|r| r.runs.get(i)).collect();
        for t in &cfg.thresholds {
            // as the medians of the report: none unless every round has the figure
            let values: Option<Vec<f64>> = rounds.iter().map(|r| t.figure.value(r)).collect();
            let mut values = values.unwrap_or_default();
            values.sort_by(f64::total_cmp);
            let median = match values.len() {
                0 => None,
                n if n % 2 == 1 => Some(values[n / 2]),
                n => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
            };
            if let Some(b) = t.judge_value(run, median, "the median of ") {
                broken.push(b);
            }
        }
    }
    broken
}
