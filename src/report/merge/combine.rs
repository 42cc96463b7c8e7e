//! How the parts of a merge add up: the runs of one stack side by side over the union of their
//! windows, their histograms added, and averages weighted by what each part counted.

use hdrhistogram::Histogram;

use super::{InRun, MergeError, Source};
use crate::outcome::FailureKind;
use crate::report::derive;
use crate::report::hdr::{self, Histograms};
use crate::stats::Latencies;

/// The runs of one stack (run `i` of every report) with their files, and the union of their
/// windows: what every part of the merge reads.
pub(super) struct Runs<'a> {
    pub runs: Vec<&'a InRun>,
    pub files: Vec<&'a str>,
    /// the union of the windows, in microseconds since the Unix epoch, and its length
    pub start: u64,
    pub end: u64,
    pub secs: f64,
}

impl<'a> Runs<'a> {
    /// Run `i` of every report in `sources`.
    pub fn of(sources: &'a [Source], i: usize) -> Runs<'a> {
        let runs: Vec<&InRun> = sources.iter().map(|s| &s.report.runs[i]).collect();
        let files: Vec<&str> = sources.iter().map(|s| s.file.as_str()).collect();
        let start = runs
            .iter()
            .map(|r| r.window.start_unix_us)
            .min()
            .unwrap_or(0);
        let end = runs.iter().map(|r| r.window.end_unix_us).max().unwrap_or(0);
        Runs {
            runs,
            files,
            start,
            end,
            secs: end.saturating_sub(start) as f64 / 1e6,
        }
    }

    /// The first report's run: what the merge carries over where the runs agree.
    pub fn first(&self) -> &'a InRun {
        self.runs[0]
    }

    /// Each run with the file it came from.
    pub fn with_files(&self) -> impl Iterator<Item = (&'a str, &'a InRun)> + '_ {
        self.files.iter().copied().zip(self.runs.iter().copied())
    }

    /// The histograms that `pick` finds in the runs, added together; `what` names them in an
    /// error.
    pub fn hist(
        &self,
        what: &str,
        pick: impl Fn(&'a Histograms) -> Option<&'a str>,
    ) -> Result<Histogram<u64>, MergeError> {
        merged_histogram(
            self.with_files()
                .filter_map(|(f, r)| pick(&r.histograms).map(|t| (f, t))),
            what,
        )
    }

    /// `n` over the union of the windows (None for a window of no length).
    pub fn per_sec(&self, n: u64) -> Option<f64> {
        derive::per_sec(n, self.secs)
    }

    /// The sum of `f` over the runs.
    pub fn sum(&self, f: impl Fn(&InRun) -> u64) -> u64 {
        self.runs.iter().map(|r| f(r)).sum()
    }

    /// What `pick` finds in every run, or None when a run has none.
    pub fn every<T: ?Sized>(
        &self,
        pick: impl Fn(&'a InRun) -> Option<&'a T>,
    ) -> Option<Vec<&'a T>> {
        self.runs.iter().map(|r| pick(r)).collect()
    }
}

/// The histograms of `texts` added together; `what` names them in an error.
pub(super) fn merged_histogram<'a>(
    texts: impl IntoIterator<Item = (&'a str, &'a str)>,
    what: &str,
) -> Result<Histogram<u64>, MergeError> {
    let mut sum = Latencies::default().hist;
    for (file, text) in texts {
        let h = hdr::decode(text).map_err(|cause| MergeError::Histogram {
            file: file.to_string(),
            what: what.to_string(),
            cause,
        })?;
        sum.add(&h).map_err(|cause| MergeError::HistogramRange {
            file: file.to_string(),
            what: what.to_string(),
            cause,
        })?;
    }
    Ok(sum)
}

/// An average over several parts, each weighted by its count: None when no part counts
/// anything (nothing to average), or when one that does has no average.
pub(super) fn weighted(parts: impl IntoIterator<Item = (Option<f64>, u64)>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0u64);
    for (avg, count) in parts.into_iter().filter(|&(_, count)| count > 0) {
        sum += avg? * count as f64;
        n += count;
    }
    (n > 0).then(|| sum / n as f64)
}

/// The largest of the values that exist (None: none does).
pub(super) fn max_known(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    values.into_iter().flatten().reduce(f64::max)
}

/// The smallest of the values that exist (None: none does).
pub(super) fn min_known(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    values.into_iter().flatten().reduce(f64::min)
}

/// The sum of `f` over the runs when every run has it, else None.
pub(super) fn sum_all(runs: &[&InRun], f: impl Fn(&InRun) -> Option<u64>) -> Option<u64> {
    runs.iter().map(|r| f(r)).sum()
}

/// The values a histogram holds (0 for none; an undecodable one has already been refused by
/// `merged_histogram`, which every caller runs first).
pub(super) fn recorded(text: Option<&str>) -> u64 {
    text.and_then(|t| hdr::decode(t).ok())
        .map_or(0, |h| h.len())
}

/// Milliseconds, as the report wrote them, back to the nanoseconds they came from.
pub(super) fn ns_of(ms: f64) -> u64 {
    (ms * 1e6).round() as u64
}

/// The name of a failure kind as the report wrote it, or why it is none.
pub(super) fn kind_of(file: &str, kind: &str) -> Result<&'static str, MergeError> {
    FailureKind::ALL
        .iter()
        .map(|k| k.as_str())
        .find(|k| *k == kind)
        .ok_or_else(|| MergeError::UnknownKind {
            file: file.to_string(),
            kind: kind.to_string(),
        })
}
