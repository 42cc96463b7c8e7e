//! Moving clients off a member that is gone: each endpoint slot of the run points at one
//! member of the cluster, and the main thread points it elsewhere when the clients' failures
//! say the member is gone (or no longer leads) and the cluster, asked again, names another.
//!
//! Workers only touch atomics: a failure that can mean the member is gone opens an episode on
//! its slot (its first failure's time) and asks for a re-discovery; a success closes the
//! episode, as a failover when the slot was moved meanwhile. Connections to the slot's old
//! member are replaced before their next request.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::config::Endpoint;
use crate::outcome::{Failure, FailureKind};
use crate::stats::FailoverEvent;

/// How often the main thread asks the cluster again while clients keep failing.
pub(super) const RETRY_EVERY: Duration = Duration::from_millis(50);

/// What the application gives the engine so it can move clients: every member, and how to ask
/// the cluster which member each slot should use now.
pub struct Failover {
    /// the run's endpoints first (slot i starts on member i), then the other members
    pub members: Vec<Endpoint>,
    /// given each slot's member now, each slot's member as the cluster says it should be; an
    /// error (no leader yet, every member unreachable) leaves the slots as they are
    #[allow(clippy::type_complexity)]
    pub rediscover: Box<dyn Fn(&[usize]) -> Result<Vec<usize>, String> + Send + Sync>,
}

/// One slot's state, shared by the workers and the main thread.
#[derive(Default)]
struct SlotState {
    member: AtomicUsize,
    /// ns after `base` of the open episode's first failure (0: none open)
    first_failure: AtomicU64,
    /// failures in the open episode
    failed: AtomicU64,
    /// the slot was moved during the open episode: (from, to, ns after `base`)
    moved: Mutex<Option<(usize, usize, u64)>>,
    has_moved: AtomicBool,
}

/// The slots' routes and episodes.
pub(super) struct Routes {
    base: Instant,
    slots: Vec<SlotState>,
    /// a worker asks for a re-discovery
    wanted: AtomicBool,
    events: Mutex<Vec<FailoverEvent>>,
    /// the re-discoveries that failed, and the last reason
    errors: Mutex<(u64, Option<String>)>,
}

/// Whether failure `f` can mean its member is gone or no longer leads.
fn suggests_move(f: &Failure) -> bool {
    match f.kind {
        FailureKind::Connect
        | FailureKind::Timeout
        | FailureKind::Closed
        | FailureKind::Unanswered
        | FailureKind::Io
        | FailureKind::RstStream
        | FailureKind::Goaway
        | FailureKind::H2 => true,
        FailureKind::Etcd => f.detail.as_deref().is_some_and(|d| {
            let d = d.to_ascii_lowercase();
            d.contains("leader") || d.contains("timed out") || d.contains("unavailable")
        }),
        _ => false,
    }
}

impl Routes {
    /// Routes for `slots` endpoint slots, slot i on member i.
    pub(super) fn new(slots: usize, base: Instant) -> Routes {
        Routes {
            base,
            slots: (0..slots)
                .map(|i| SlotState {
                    member: AtomicUsize::new(i),
                    ..SlotState::default()
                })
                .collect(),
            wanted: AtomicBool::new(false),
            events: Mutex::default(),
            errors: Mutex::default(),
        }
    }

    /// Before a run: the slots whose member no longer answers (gone since the run before, on
    /// another stack) start on the member the cluster names instead; no episode is recorded.
    pub(super) fn settle(&self, f: &Failover) {
        let now: Vec<usize> = (0..self.slots.len()).map(|i| self.member(i)).collect();
        if let Ok(next) = (f.rediscover)(&now) {
            for (s, to) in self.slots.iter().zip(next) {
                if to < f.members.len() {
                    s.member.store(to, Ordering::Release);
                }
            }
        }
    }

    /// The moment the routes' times count from.
    pub(super) fn base(&self) -> Instant {
        self.base
    }

    /// The member slot `slot` goes to now.
    pub(super) fn member(&self, slot: usize) -> usize {
        self.slots[slot].member.load(Ordering::Relaxed)
    }

    fn ns(&self, at: Instant) -> u64 {
        (at.saturating_duration_since(self.base).as_nanos() as u64).max(1)
    }

    /// A request of slot `slot` failed with `f` (`request`: false for a connect attempt that
    /// is no request, closed loop in duration mode: it asks, but is not counted).
    pub(super) fn failed(&self, slot: usize, f: &Failure, request: bool) {
        let s = &self.slots[slot];
        let n = u64::from(request);
        if s.first_failure.load(Ordering::Relaxed) != 0 {
            s.failed.fetch_add(n, Ordering::Relaxed);
        } else if suggests_move(f) {
            let now = self.ns(Instant::now());
            if s.first_failure
                .compare_exchange(0, now, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                s.failed.store(n, Ordering::Relaxed);
            } else {
                s.failed.fetch_add(n, Ordering::Relaxed);
            }
        }
        if suggests_move(f) {
            self.wanted.store(true, Ordering::Release);
        }
    }

    /// A request of slot `slot` succeeded: the open episode ends, a failover if the slot moved.
    pub(super) fn succeeded(&self, slot: usize) {
        let s = &self.slots[slot];
        let first = s.first_failure.load(Ordering::Relaxed);
        if first == 0 {
            return;
        }
        if s.first_failure
            .compare_exchange(first, 0, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        let failed = s.failed.swap(0, Ordering::Relaxed);
        if !s.has_moved.swap(false, Ordering::AcqRel) {
            return;
        }
        let moved = s.moved.lock().ok().and_then(|mut m| m.take());
        if let Some((from, to, at)) = moved {
            let now = self.ns(Instant::now());
            if let Ok(mut ev) = self.events.lock() {
                ev.push(FailoverEvent {
                    slot,
                    from,
                    to,
                    first_failure: Duration::from_nanos(first),
                    moved: Duration::from_nanos(at),
                    first_success: Some(Duration::from_nanos(now)),
                    failed_between: failed,
                });
            }
        }
    }

    /// The main thread: asks the cluster again when a worker wanted it; moves the slots it
    /// names elsewhere.
    pub(super) fn rediscover(&self, f: &Failover) {
        if !self.wanted.swap(false, Ordering::AcqRel) {
            return;
        }
        let now: Vec<usize> = (0..self.slots.len()).map(|i| self.member(i)).collect();
        match (f.rediscover)(&now) {
            Ok(next) => {
                let at = self.ns(Instant::now());
                for (slot, (&was, &to)) in now.iter().zip(&next).enumerate() {
                    if was == to || to >= f.members.len() {
                        continue;
                    }
                    let s = &self.slots[slot];
                    // the move is recorded before the slot points elsewhere, so the first
                    // success there finds it
                    if let Ok(mut m) = s.moved.lock() {
                        // a second move in one episode keeps the episode's first origin
                        let from = m.map_or(was, |(from, _, _)| from);
                        *m = Some((from, to, at));
                    }
                    s.has_moved.store(true, Ordering::Release);
                    s.member.store(to, Ordering::Release);
                }
            }
            Err(e) => {
                // asked again on the next failure
                if let Ok(mut errs) = self.errors.lock() {
                    errs.0 += 1;
                    errs.1 = Some(e);
                }
            }
        }
    }

    /// The failovers of the run, with the ones still open at its end (no success yet), and the
    /// re-discoveries that failed.
    pub(super) fn finish(&self) -> (Vec<FailoverEvent>, u64, Option<String>) {
        let mut events = self.events.lock().map(|e| e.clone()).unwrap_or_default();
        for (slot, s) in self.slots.iter().enumerate() {
            let first = s.first_failure.load(Ordering::Relaxed);
            if first == 0 || !s.has_moved.load(Ordering::Relaxed) {
                continue;
            }
            if let Some((from, to, at)) = s.moved.lock().ok().and_then(|m| *m) {
                events.push(FailoverEvent {
                    slot,
                    from,
                    to,
                    first_failure: Duration::from_nanos(first),
                    moved: Duration::from_nanos(at),
                    first_success: None,
                    failed_between: s.failed.load(Ordering::Relaxed),
                });
            }
        }
        events.sort_by_key(|e| e.first_failure);
        let (n, last) = self
            .errors
            .lock()
            .map(|e| (e.0, e.1.clone()))
            .unwrap_or_default();
        (events, n, last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failover(next: Vec<usize>) -> Failover {
        Failover {
            members: [
                "http://127.0.0.1:1",
                "http://127.0.0.1:2",
                "http://127.0.0.1:3",
            ]
            .iter()
            .map(|u| Endpoint::parse(u).unwrap())
            .collect(),
            rediscover: Box::new(move |_| Ok(next.clone())),
        }
    }

    #[test]
    fn a_moved_slot_reports_one_failover_when_it_succeeds_again() {
        let r = Routes::new(1, Instant::now());
        let f = failover(vec![2]);
        // a failure that says nothing of the member asks for nothing
        r.failed(0, &Failure::new(FailureKind::BadResponse), true);
        r.rediscover(&f);
        assert_eq!(r.member(0), 0);
        r.failed(0, &Failure::new(FailureKind::Closed), true);
        r.failed(0, &Failure::new(FailureKind::Connect), true);
        r.rediscover(&f);
        assert_eq!(r.member(0), 2);
        r.failed(0, &Failure::new(FailureKind::Connect), true);
        // a connect that is no request asks, uncounted
        r.failed(0, &Failure::new(FailureKind::Connect), false);
        r.succeeded(0);
        let (events, errors, _) = r.finish();
        assert_eq!(errors, 0);
        assert_eq!(events.len(), 1, "{events:?}");
        let e = &events[0];
        assert_eq!((e.from, e.to, e.failed_between), (0, 2, 3));
        assert!(e.first_failure <= e.moved && Some(e.moved) <= e.first_success);
        // the episode is over: a success alone adds nothing
        r.succeeded(0);
        assert_eq!(r.finish().0.len(), 1);
    }

    #[test]
    fn an_episode_without_a_move_is_no_failover() {
        let r = Routes::new(2, Instant::now());
        let f = failover(vec![0, 1]);
        r.failed(
            1,
            &Failure::with(FailureKind::Etcd, "etcdserver: leader changed"),
            true,
        );
        r.rediscover(&f);
        r.succeeded(1);
        assert!(r.finish().0.is_empty());
        // one still failing at the end is reported open
        let f = failover(vec![0, 2]);
        r.failed(1, &Failure::new(FailureKind::Timeout), true);
        r.rediscover(&f);
        let (events, _, _) = r.finish();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].first_success, None);
    }
}
