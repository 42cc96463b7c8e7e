//! What the watchers of a watch run measured (`etcd::watch` fills it in), and the zero-loss
//! proof counted from it: plain data for the report.

use std::collections::HashMap;
use std::time::Instant;

use crate::outcome::Failure;
use crate::stats::{ConnRecord, Latencies};

/// What the watch thread hands back: what its watchers received and what it cost.
pub struct WatchOutcome {
    pub seen: Vec<Vec<i64>>,
    pub created: usize,
    pub creation: Latencies,
    pub latency: Latencies,
    pub events: u64,
    pub last_event: Option<Instant>,
    pub errors: HashMap<Failure, u64>,
    pub conns: Vec<ConnRecord>,
    pub responses: u64,
    pub chunks: u64,
    /// watchers confirmed again after their stream was re-created on a live member
    pub recreated: u64,
    /// every broken stream re-created on a live member
    pub moves: Vec<StreamMove>,
    /// when the first create request went out
    pub first_create: Option<Instant>,
    /// watch-latency: every event's (revision, receipt time in ns of the stamps' clock)
    pub receipts: Vec<(i64, u64)>,
}

/// A watch stream that broke and was re-created on another member, its watchers starting
/// from the revision after the last event each received.
#[derive(Debug, Clone)]
pub struct StreamMove {
    pub stream: usize,
    /// the member it was on, and the member it moved to (endpoint URLs)
    pub from: String,
    pub to: String,
    pub watchers: usize,
    /// when the stream broke
    pub broke: Instant,
    /// when etcd had confirmed every one of its watchers again (None: never)
    pub recreated: Option<Instant>,
}

/// The zero-loss proof of one run: each watcher's received revisions against the ones it
/// expects (the acknowledged puts to its keys).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Loss {
    /// expected but never received
    pub missing: u64,
    /// received more than once (each extra copy)
    pub duplicated: u64,
    /// received but not expected: a failed put that etcd applied all the same
    pub unexpected: u64,
}

impl Loss {
    /// `expected[w]` sorted (as `WatchConfig::expected` gives it), `seen[w]` in arrival order.
    pub fn count(expected: &[Vec<i64>], seen: &[Vec<i64>]) -> Loss {
        let mut l = Loss::default();
        for (i, exp) in expected.iter().enumerate() {
            let mut seen = seen.get(i).cloned().unwrap_or_default();
            seen.sort_unstable();
            let before = seen.len();
            seen.dedup();
            l.duplicated += (before - seen.len()) as u64;
            let (mut a, mut b) = (0, 0);
            while a < exp.len() || b < seen.len() {
                match (exp.get(a), seen.get(b)) {
                    (Some(x), Some(y)) if x == y => {
                        a += 1;
                        b += 1;
                    }
                    (Some(x), Some(y)) if x < y => {
                        l.missing += 1;
                        a += 1;
                    }
                    (Some(_), None) => {
                        l.missing += 1;
                        a += 1;
                    }
                    _ => {
                        l.unexpected += 1;
                        b += 1;
                    }
                }
            }
        }
        l
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_counts_missing_duplicated_and_unexpected_revisions() {
        let expected = vec![vec![10, 11, 12], vec![11], vec![]];
        let seen = vec![vec![12, 10, 10, 99], vec![11], vec![13]];
        assert_eq!(
            Loss::count(&expected, &seen),
            Loss {
                missing: 1,
                duplicated: 1,
                unexpected: 2,
            }
        );
        // a watcher that saw nothing misses all it expects
        assert_eq!(Loss::count(&expected, &[]).missing, 4);
        assert_eq!(Loss::count(&expected, &expected), Loss::default());
    }
}
