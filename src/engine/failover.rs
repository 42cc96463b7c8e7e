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
use crate::stats::{FailoverEvent, Unresolved};
use wirebench_wire::grpc::Code;

/// How often the main thread asks the cluster again while clients keep failing.
pub(super) const RETRY_EVERY: Duration = Duration::from_millis(50);

/// What the application gives the engine so it can move clients: every member, and how to ask
/// the cluster which member each slot should use now.
pub struct Failover {
    /// the run's endpoints first (slot i starts on member i), then the other members
    pub members: Vec<Endpoint>,
    /// given each slot's member now, each slot's member as the cluster says it should be
    pub rediscover: Rediscover,
}

/// How a run asks the cluster again (`Failover::rediscover`).
pub type Rediscover = Box<dyn Fn(&[usize]) -> Rediscovery + Send + Sync>;

/// One asking of the cluster during a run.
pub struct Rediscovery {
    /// each slot's member; an error (no leader yet, every member unreachable) leaves the slots
    /// as they are
    pub next: Result<Vec<usize>, String>,
    /// what each member answered, in `Failover::members` order, one line each: what a run that
    /// finds nowhere to go reports
    pub answers: Vec<String>,
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
    /// re-discoveries during the open episode that found nowhere to move, and the last one's
    /// time (ns after `base`)
    unresolved: AtomicU64,
    unresolved_at: AtomicU64,
}

/// The slots' routes and episodes.
pub(super) struct Routes {
    base: Instant,
    slots: Vec<SlotState>,
    /// a worker asks for a re-discovery
    wanted: AtomicBool,
    events: Mutex<Vec<FailoverEvent>>,
    /// the re-discoveries that failed
    errors: Mutex<Unresolved>,
}

/// Whether failure `f` can mean its member is gone or no longer leads: the connection failed,
/// or etcd answered UNAVAILABLE ("no leader", "leader changed", "request timed out", a member
/// the gateway cannot reach).
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
        FailureKind::Etcd => f.code == Some(Code::Unavailable),
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
        if let Ok(next) = (f.rediscover)(&now).next {
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
        let unresolved = s.unresolved.swap(0, Ordering::Relaxed);
        let unresolved_at = s.unresolved_at.swap(0, Ordering::Relaxed);
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
                    to: Some(to),
                    first_failure: Duration::from_nanos(first),
                    moved: Some(Duration::from_nanos(at)),
                    first_success: Some(Duration::from_nanos(now)),
                    failed_between: failed,
                    unresolved,
                    unresolved_until: (unresolved_at != 0)
                        .then(|| Duration::from_nanos(unresolved_at)),
                    waited: None,
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
        let asked = (f.rediscover)(&now);
        match asked.next {
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
                // asked again on the next failure; the open episodes waited for the cluster
                let at = self.ns(Instant::now());
                for s in &self.slots {
                    if s.first_failure.load(Ordering::Relaxed) != 0 {
                        s.unresolved.fetch_add(1, Ordering::Relaxed);
                        s.unresolved_at.store(at, Ordering::Relaxed);
                    }
                }
                if let Ok(mut errs) = self.errors.lock() {
                    errs.count += 1;
                    errs.last_error = Some(e);
                    errs.last_answers = asked.answers;
                }
            }
        }
    }

    /// The failovers of the run, with the episodes still open at its end (no success yet):
    /// those that moved, and those that waited for the cluster and found nowhere to move (a
    /// failure in the last moments that no re-discovery answered is no episode to report);
    /// and the re-discoveries that failed.
    pub(super) fn finish(&self) -> (Vec<FailoverEvent>, Unresolved) {
        let mut events = self.events.lock().map(|e| e.clone()).unwrap_or_default();
        for (slot, s) in self.slots.iter().enumerate() {
            let first = s.first_failure.load(Ordering::Relaxed);
            if first == 0 {
                continue;
            }
            let unresolved = s.unresolved.load(Ordering::Relaxed);
            let unresolved_at = s.unresolved_at.load(Ordering::Relaxed);
            let moved = if s.has_moved.load(Ordering::Relaxed) {
                s.moved.lock().ok().and_then(|m| *m)
            } else {
                None
            };
            if moved.is_none() && unresolved == 0 {
                continue;
            }
            events.push(FailoverEvent {
                slot,
                from: moved.map_or(self.member(slot), |(from, _, _)| from),
                to: moved.map(|(_, to, _)| to),
                first_failure: Duration::from_nanos(first),
                moved: moved.map(|(_, _, at)| Duration::from_nanos(at)),
                first_success: None,
                failed_between: s.failed.load(Ordering::Relaxed),
                unresolved,
                unresolved_until: (unresolved_at != 0).then(|| Duration::from_nanos(unresolved_at)),
                // set by the caller, who knows where the run ended
                waited: None,
            });
        }
        events.sort_by_key(|e| e.first_failure);
        let errors = self.errors.lock().map(|e| e.clone()).unwrap_or_default();
        (events, errors)
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
            rediscover: Box::new(move |_| Rediscovery {
                next: Ok(next.clone()),
                answers: Vec::new(),
            }),
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
        let (events, errors) = r.finish();
        assert_eq!(errors.count, 0);
        assert_eq!(events.len(), 1, "{events:?}");
        let e = &events[0];
        assert_eq!((e.from, e.to, e.failed_between), (0, Some(2), 3));
        assert_eq!((e.unresolved, e.unresolved_until), (0, None));
        assert!(Some(e.first_failure) <= e.moved && e.moved <= e.first_success);
        // the episode is over: a success alone adds nothing
        r.succeeded(0);
        assert_eq!(r.finish().0.len(), 1);
    }

    #[test]
    fn a_move_is_suggested_by_the_kind_or_the_status_code_never_the_text() {
        let etcd = |code| Failure::status(FailureKind::Etcd, code, "etcdserver: no leader");
        assert!(suggests_move(&etcd(Code::Unavailable)));
        assert!(suggests_move(&Failure::new(FailureKind::Connect)));
        assert!(!suggests_move(&etcd(Code::InvalidArgument)));
        // a text that reads like one, without the code
        assert!(!suggests_move(&Failure::with(
            FailureKind::Etcd,
            "UNAVAILABLE: etcdserver: leader changed"
        )));
        // a server that is not etcd
        assert!(!suggests_move(&Failure::status(
            FailureKind::GrpcStatus,
            Code::Unavailable,
            "UNAVAILABLE"
        )));
    }

    #[test]
    fn an_episode_without_a_move_is_no_failover() {
        let r = Routes::new(2, Instant::now());
        let f = failover(vec![0, 1]);
        r.failed(
            1,
            &Failure::status(
                FailureKind::Etcd,
                Code::Unavailable,
                "etcdserver: leader changed",
            ),
            true,
        );
        r.rediscover(&f);
        r.succeeded(1);
        assert!(r.finish().0.is_empty());
        // one still failing at the end is reported open
        let f = failover(vec![0, 2]);
        r.failed(1, &Failure::new(FailureKind::Timeout), true);
        r.rediscover(&f);
        let (events, _) = r.finish();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].first_success, None);
    }

    #[test]
    fn an_episode_that_finds_nowhere_to_go_is_reported_with_the_answers() {
        let r = Routes::new(1, Instant::now());
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let electing = |n: &std::sync::atomic::AtomicUsize| Rediscovery {
            next: Err(format!(
                "no leader yet ({})",
                n.fetch_add(1, Ordering::Relaxed)
            )),
            answers: vec!["A: no answer".into(), "B: no leader (term 5)".into()],
        };
        let f = Failover {
            members: failover(vec![0]).members,
            rediscover: Box::new(move |_| electing(&asked)),
        };
        // a failure no re-discovery has answered yet is no episode to report
        r.failed(0, &Failure::new(FailureKind::Connect), true);
        assert!(r.finish().0.is_empty());
        r.rediscover(&f);
        r.failed(0, &Failure::new(FailureKind::Connect), true);
        r.rediscover(&f);
        let (events, errors) = r.finish();
        assert_eq!(events.len(), 1, "{events:?}");
        let e = &events[0];
        assert_eq!(
            (e.from, e.to, e.moved, e.first_success),
            (0, None, None, None)
        );
        assert_eq!((e.unresolved, e.failed_between), (2, 2));
        assert!(e.unresolved_until >= Some(e.first_failure));
        assert_eq!(errors.count, 2);
        assert_eq!(errors.last_error.as_deref(), Some("no leader yet (1)"));
        assert_eq!(
            errors.last_answers,
            ["A: no answer", "B: no leader (term 5)"]
        );
        // the cluster answers at last: the episode ends as a failover that waited for it
        let f = failover(vec![1]);
        r.failed(0, &Failure::new(FailureKind::Connect), true);
        r.rediscover(&f);
        r.succeeded(0);
        let (events, _) = r.finish();
        assert_eq!(events.len(), 1);
        assert_eq!((events[0].to, events[0].unresolved), (Some(1), 2));
        assert!(events[0].unresolved_until <= events[0].moved);
    }
}
