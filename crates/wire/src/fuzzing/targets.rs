//! The targets file's check: any text reads without a panic, what reads is within the limits,
//! an http-format file reads back the same from what `write_http` writes of it, and the
//! weights' schedule spreads each target as it promises.

use crate::targets::{self, Body, MAX_TARGETS, MAX_WEIGHT, Target, is_token, url_problem};

/// The largest cycle the check schedules (a larger one is checked by the tests, not per input).
const MAX_CHECKED_CYCLE: u64 = 100_000;

/// The bytes as a targets file's text (invalid UTF-8 replaced). When it reads: between 1 and
/// [`MAX_TARGETS`] targets, each with a weight of at least 1, a token for a method, an
/// http(s) URL and token header names, the weights' sum within [`MAX_WEIGHT`]; an http-format
/// file's targets written with `write_http` read back the same (but for their lines); and the
/// schedule of their weights spreads every target evenly.
pub fn targets_file(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(read) = targets::parse(&text) else {
        return;
    };
    assert!(!read.is_empty() && read.len() <= MAX_TARGETS);
    let mut last_line = 0;
    for t in &read {
        assert!(t.weight >= 1, "{t:?}");
        assert!(is_token(&t.method), "{t:?}");
        assert_eq!(url_problem(&t.url), None, "{t:?}");
        assert!(t.headers.iter().all(|(name, _)| is_token(name)), "{t:?}");
        assert!(t.line > last_line, "lines out of order: {t:?}");
        last_line = t.line;
    }
    let weights: Vec<u32> = read.iter().map(|t| t.weight).collect();
    let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    assert!(total <= u64::from(MAX_WEIGHT));

    if !is_json_lines(&text) {
        assert!(read.iter().all(|t| !matches!(t.body, Body::Bytes(_))));
        let written = targets::write_http(&read);
        let again = targets::parse(&written)
            .unwrap_or_else(|e| panic!("{written:?} written, then refused: {e}"));
        assert_eq!(without_lines(again), without_lines(read), "{written:?}");
    }
    if total <= MAX_CHECKED_CYCLE {
        assert_spread(&weights, &targets::schedule(&weights));
    }
}

/// Whether the first line neither blank nor a comment starts a JSON object.
fn is_json_lines(text: &str) -> bool {
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l).trim_matches([' ', '\t']))
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .is_some_and(|l| l.starts_with('{'))
}

fn without_lines(mut targets: Vec<Target>) -> Vec<Target> {
    for t in &mut targets {
        t.line = 0;
    }
    targets
}

/// `order` is one cycle of `weights`: each index `weight` times, and after any first `k` turns
/// target `i` has had `⌊k·wᵢ/S⌋` or `⌈k·wᵢ/S⌉` of them. A target's count changes only at its
/// own turns, so it is enough to check the lower bound just before each and the upper bound
/// just after.
pub fn assert_spread(weights: &[u32], order: &[u32]) {
    let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    assert_eq!(order.len() as u64, total);
    let mut had = vec![0u64; weights.len()];
    for (k, &i) in order.iter().enumerate() {
        let (k, i) = (k as u64, i as usize);
        let w = u64::from(weights[i]);
        assert!(
            had[i] >= k * w / total,
            "target {i} late at turn {k}: {order:?}"
        );
        had[i] += 1;
        assert!(
            had[i] <= ((k + 1) * w).div_ceil(total),
            "target {i} early at turn {k}: {order:?}"
        );
    }
    for (i, &w) in weights.iter().enumerate() {
        assert_eq!(had[i], u64::from(w), "target {i}'s turns in the cycle");
    }
}
