//! `wirebench merge`: the agents' reports read, merged into one (`report::merge`), printed.

use std::path::PathBuf;

use super::stacks::judged;
use super::{RunError, emit, exit};
use crate::config::Format;
use crate::report::merge::{self, AgentRow, Source};
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
    Source::parse(&name, &text).map_err(|e| e.to_string())
}

/// The agents' windows overlap for less than this share of their union: worth a word, since
/// the merged rates are over the union.
const FAIR_OVERLAP: f64 = 0.9;

/// When the agents did not run together (no common `--start-at`, different durations), what
/// that does to the merged rates, in one line.
fn apart(rows: &[AgentRow]) -> Option<String> {
    let start = rows.iter().map(|r| r.start_unix_us).min()?;
    let end = rows.iter().map(|r| r.end_unix_us).max()?;
    let common_start = rows.iter().map(|r| r.start_unix_us).max()?;
    let common_end = rows.iter().map(|r| r.end_unix_us).min()?;
    let union = end.saturating_sub(start) as f64 / 1e6;
    let common = common_end.saturating_sub(common_start) as f64 / 1e6;
    (rows.len() > 1 && common < FAIR_OVERLAP * union).then(|| {
        format!(
            "the agents ran together for {common:.2} s of the {union:.2} s from the first start \
             to the last end, and the merged rates are over those {union:.2} s (--start-at \
             and -z align the windows)"
        )
    })
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
    let report = merge::merge(&sources).map_err(|e| RunError::Setup(e.to_string()))?;
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
    for r in &report.runs {
        if let Some(note) = r.agents.as_deref().and_then(apart) {
            eprintln!("warning: {}: {note}", r.title);
        }
    }
    let text = match m.format {
        Format::Text => crate::report::text::render(&report),
        Format::Json => report.to_json(),
    };
    emit(m.output.as_deref(), &text)?;
    Ok(judged(&report, &m.thresholds, " on any agent", exit::OK))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(start_s: f64, end_s: f64) -> AgentRow {
        AgentRow {
            agent: "a".into(),
            file: "a.json".into(),
            start_unix_us: (start_s * 1e6) as u64,
            end_unix_us: (end_s * 1e6) as u64,
            start_late_ms: None,
            clients: 1,
            connections: 1,
            count: 1,
            ok: 1,
            failed: 0,
            total_s: end_s - start_s,
            requests_per_sec: Some(1.0),
            p50_ms: Some(1.0),
            p99_ms: Some(1.0),
            client_cpu_us_per_request: Some(1.0),
            server_cpu_us_per_request: None,
        }
    }

    #[test]
    fn agents_that_did_not_run_together_get_a_word() {
        // aligned within a few ms: nothing to say
        assert_eq!(apart(&[row(100.0, 110.0), row(100.002, 110.001)]), None);
        assert_eq!(apart(&[row(100.0, 110.0)]), None);
        // one agent 5 s late: 5 s together of 15
        let note = apart(&[row(100.0, 110.0), row(105.0, 115.0)]).unwrap();
        assert!(note.contains("5.00 s of the 15.00 s"), "{note}");
        // one after the other: none together
        let note = apart(&[row(100.0, 101.0), row(102.0, 103.0)]).unwrap();
        assert!(note.contains("0.00 s of the 3.00 s"), "{note}");
    }
}
