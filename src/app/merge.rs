//! `wirebench merge`: the agents' reports read, merged into one (`report::merge`), printed.

use std::path::PathBuf;

use super::run::{first_error, judge};
use super::{RunError, emit, exit};
use crate::config::Format;
use crate::report::merge::{self, Source};
use crate::threshold::Threshold;

/// The largest report file read (a report's per-connection records grow with its connections).
const MAX_REPORT: u64 = 1 << 30;

/// What to merge and how to print it.
#[derive(Debug)]
pub struct Merge {
    pub files: Vec<PathBuf>,
    pub format: Format,
    pub output: Option<PathBuf>,
    /// `--fail-if`, judged on the merged runs
    pub thresholds: Vec<Threshold>,
}

/// One report file, read and parsed.
fn read(path: &std::path::Path) -> Result<Source, String> {
    let name = path.display().to_string();
    let len = std::fs::metadata(path)
        .map_err(|e| format!("{name}: {e}"))?
        .len();
    if len > MAX_REPORT {
        return Err(format!(
            "{name}: {len} bytes, more than the {} MiB a report may have",
            MAX_REPORT >> 20
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("{name}: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{name}: not UTF-8 text"))?;
    Source::parse(&name, &text)
}

/// Merges, writes the merged report; fails when a stack had no success at all, or on a broken
/// `--fail-if`.
pub(super) fn merge_and_write(m: &Merge) -> Result<i32, RunError> {
    let sources = m
        .files
        .iter()
        .map(|f| read(f))
        .collect::<Result<Vec<_>, _>>()
        .map_err(RunError::Setup)?;
    let report = merge::merge(&sources).map_err(RunError::Setup)?;
    for t in &m.thresholds {
        if let Some(s) = t.stack
            && !report.runs.iter().any(|r| r.proto == s)
        {
            return Err(RunError::Usage(format!(
                "--fail-if {:?}: the reports have no {s} run",
                t.text
            )));
        }
    }
    let text = match m.format {
        Format::Text => crate::report::text::render(&report),
        Format::Json => report.to_json(),
    };
    emit(m.output.as_deref(), &text)?;
    let mut code = exit::OK;
    for r in report.runs.iter().filter(|r| r.summary.ok == 0) {
        eprintln!(
            "error: no {} request succeeded on any agent ({})",
            r.title,
            first_error(r)
        );
        code = exit::FAILURE;
    }
    if code == exit::OK {
        code = judge(
            &m.thresholds,
            report
                .runs
                .iter()
                .flat_map(|r| m.thresholds.iter().filter_map(|t| t.judge(r))),
        );
    }
    Ok(code)
}
