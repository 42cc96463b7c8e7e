//! `wirebench compare`: both protocols in alternating rounds; medians, ratios and findings.

use std::sync::atomic::Ordering;

use super::run::{first_error, run, write_svg};
use super::{Prepared, RunError, emit, exit};
use crate::config::{Config, Format};
use crate::engine;
use crate::report;

/// Runs `rounds` rounds on what was prepared and writes the comparison.
pub(super) fn compare(cfg: &Config, prepared: &Prepared, rounds: usize) -> Result<i32, RunError> {
    let mut reports = Vec::with_capacity(rounds);
    for round in 1..=rounds {
        if engine::INTERRUPTED.load(Ordering::Relaxed) {
            break;
        }
        eprintln!("wirebench compare: round {round} of {rounds}");
        reports.push(run(cfg, prepared)?.0);
    }
    let cmp =
        report::compare::CompareReport::new(cfg.spec.describe(), &reports, cfg.spec.server_name());
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
    Ok(code)
}
