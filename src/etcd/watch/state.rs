//! What the watchers measure and the zero-loss proof: per-watch-thread state shared by its
//! stream tasks, the revisions each watcher still expects, and missing / duplicated /
//! unexpected events counted from them.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::Notify;

use crate::outcome::{Failure, FailureKind};
use crate::stats::{ConnRecord, Latencies, StreamMove, WatchOutcome};
use crate::workload::etcd::{epoch_ns, since_stamp};

/// Per-watch-thread state shared by its stream tasks.
pub(super) struct WatchState {
    /// revisions seen per watcher
    pub(super) seen: RefCell<Vec<Vec<i64>>>,
    pub(super) create_sent: RefCell<Vec<Option<Instant>>>,
    pub(super) created: Cell<usize>,
    pub(super) creation: RefCell<Latencies>,
    pub(super) latency: RefCell<Latencies>,
    pub(super) events: Cell<u64>,
    pub(super) last_event: Cell<Option<Instant>>,
    pub(super) errors: RefCell<HashMap<Failure, u64>>,
    pub(super) conns: RefCell<Vec<ConnRecord>>,
    /// HTTP/1.1 chunks received on the watch connections
    pub(super) chunks: Cell<u64>,
    pub(super) stop: Notify,
    pub(super) stopped: Cell<bool>,
    /// h2 DATA frames or HTTP chunk-framing bytes come from the ledgers; this counts messages
    pub(super) responses: Cell<u64>,
    /// set once the puts are done: what each watcher must still receive
    pub(super) expected: RefCell<Option<Expected>>,
    /// per watcher, the revision a re-created watch starts at: the one after the last event it
    /// received, or after its creation's header revision (0: not known yet)
    pub(super) resume: RefCell<Vec<i64>>,
    /// per watcher, whether etcd confirmed it once (later confirmations are re-creations)
    pub(super) confirmed: RefCell<Vec<bool>>,
    /// watchers created again on a live member after their stream broke
    pub(super) recreated: Cell<u64>,
    /// each broken stream re-created on a live member
    pub(super) moves: RefCell<Vec<StreamMove>>,
    /// watch-latency: every event's revision and receipt time (None: not kept)
    pub(super) receipts: Option<RefCell<Vec<(i64, u64)>>>,
}

/// Per watcher, the revisions of the acknowledged puts it must see (sorted) and which of them
/// arrived. The drain waits for these, not for a count of events: an event of a put that failed
/// (timed out, yet applied by etcd) must not stand in for one that is still on its way.
pub(super) struct Expected {
    pub(super) revisions: Arc<Vec<Vec<i64>>>,
    pub(super) seen: Vec<Vec<bool>>,
    pub(super) outstanding: u64,
}

impl Expected {
    pub(super) fn new(revisions: Arc<Vec<Vec<i64>>>, seen_so_far: &[Vec<i64>]) -> Expected {
        let seen = revisions.iter().map(|r| vec![false; r.len()]).collect();
        let outstanding = revisions.iter().map(|r| r.len() as u64).sum();
        let mut e = Expected {
            revisions,
            seen,
            outstanding,
        };
        for (w, revs) in seen_so_far.iter().enumerate() {
            for &rev in revs {
                e.arrived(w, rev);
            }
        }
        e
    }

    fn arrived(&mut self, w: usize, revision: i64) {
        let (Some(revs), Some(seen)) = (self.revisions.get(w), self.seen.get_mut(w)) else {
            return;
        };
        if let Ok(i) = revs.binary_search(&revision)
            && let Some(s) = seen.get_mut(i)
            && !*s
        {
            *s = true;
            self.outstanding -= 1;
        }
    }
}

impl WatchState {
    /// The state of `watchers` watchers; `receipts`: keep every event's receipt time.
    pub(super) fn new(watchers: usize, receipts: bool) -> WatchState {
        WatchState {
            seen: RefCell::new(vec![Vec::new(); watchers]),
            create_sent: RefCell::new(vec![None; watchers]),
            created: Cell::new(0),
            creation: RefCell::new(Latencies::default()),
            latency: RefCell::new(Latencies::default()),
            events: Cell::new(0),
            last_event: Cell::new(None),
            errors: RefCell::new(HashMap::new()),
            conns: RefCell::new(Vec::new()),
            chunks: Cell::new(0),
            stop: Notify::new(),
            stopped: Cell::new(false),
            responses: Cell::new(0),
            expected: RefCell::new(None),
            resume: RefCell::new(vec![0; watchers]),
            confirmed: RefCell::new(vec![false; watchers]),
            recreated: Cell::new(0),
            moves: RefCell::new(Vec::new()),
            receipts: receipts.then(|| RefCell::new(Vec::new())),
        }
    }

    /// Watchers that replay history from `revision` (etcd benchmark's unsynced watchers):
    /// their first creation starts there too.
    pub(super) fn start_at(&self, revision: i64) {
        self.resume.borrow_mut().fill(revision);
    }

    /// The revision watcher `w` is (re-)created at: 0 means "from now".
    pub(super) fn start_revision(&self, w: usize) -> i64 {
        self.resume.borrow().get(w).copied().unwrap_or(0)
    }

    /// What the watchers measured, taken out of the state.
    pub(super) fn outcome(&self) -> WatchOutcome {
        WatchOutcome {
            seen: self.seen.take(),
            created: self.created.get(),
            creation: self.creation.take(),
            latency: self.latency.take(),
            events: self.events.get(),
            last_event: self.last_event.get(),
            errors: self.errors.take(),
            conns: self.conns.take(),
            responses: self.responses.get(),
            chunks: self.chunks.get(),
            recreated: self.recreated.get(),
            moves: self.moves.take(),
            first_create: self.create_sent.borrow().iter().flatten().min().copied(),
            receipts: self
                .receipts
                .as_ref()
                .map(RefCell::take)
                .unwrap_or_default(),
        }
    }

    /// Revisions the watchers still expect and have not received.
    pub(super) fn outstanding(&self) -> u64 {
        self.expected.borrow().as_ref().map_or(0, |e| e.outstanding)
    }

    /// Ends every stream task and waits for them.
    pub(super) async fn stop_all(&self, tasks: Vec<tokio::task::JoinHandle<()>>) {
        self.stopped.set(true);
        self.stop.notify_waiters();
        for t in tasks {
            let _ = t.await;
        }
    }

    /// Once a moved stream has every watcher confirmed again (`done`), its move is complete.
    pub(super) fn recreated_all(&self, moved: Option<usize>, done: bool) {
        if let (Some(i), true) = (moved, done)
            && let Some(m) = self.moves.borrow_mut().get_mut(i)
            && m.recreated.is_none()
        {
            m.recreated = Some(Instant::now());
        }
    }

    pub(super) fn error(&self, f: Failure) {
        *self.errors.borrow_mut().entry(f).or_insert(0) += 1;
    }

    /// etcd confirmed watcher `w` at `revision`: its first creation is measured, a later one
    /// is a re-creation.
    fn created(&self, w: usize, revision: i64, now: Instant) {
        let first = match self.confirmed.borrow_mut().get_mut(w) {
            Some(c) => !std::mem::replace(c, true),
            None => return,
        };
        if !first {
            self.recreated.set(self.recreated.get() + 1);
            return;
        }
        if let Some(r) = self.resume.borrow_mut().get_mut(w)
            && *r == 0
        {
            *r = revision + 1;
        }
        let sent = self.create_sent.borrow().get(w).copied().flatten();
        if let Some(sent) = sent {
            self.creation.borrow_mut().record(now.duration_since(sent));
        }
        self.created.set(self.created.get() + 1);
    }

    fn event(&self, w: usize, revision: i64, value: &[u8], now: Instant) {
        if let Some(r) = self.resume.borrow_mut().get_mut(w) {
            *r = (*r).max(revision + 1);
        }
        if let Some(seen) = self.seen.borrow_mut().get_mut(w) {
            seen.push(revision);
        }
        if let Some(e) = self.expected.borrow_mut().as_mut() {
            e.arrived(w, revision);
        }
        if let Some(r) = &self.receipts {
            r.borrow_mut().push((revision, epoch_ns(now)));
        }
        if let Some(latency) = since_stamp(value, now) {
            self.latency.borrow_mut().record(latency);
        }
        self.events.set(self.events.get() + 1);
        self.last_event.set(Some(now));
    }

    /// Handles one WatchResponse of a stream whose watchers are created in `pending` order
    /// (`ids`: the watch id etcd gave each created one).
    pub(super) fn response<E>(
        &self,
        r: Response<'_, E>,
        pending: &mut VecDeque<usize>,
        ids: &mut HashMap<i64, usize>,
    ) where
        E: Iterator<Item = (bool, i64, Vec<u8>)>,
    {
        let Response {
            watch_id,
            revision,
            created,
            canceled,
            compact_revision,
            cancel_reason,
            events,
        } = r;
        let now = Instant::now();
        self.responses.set(self.responses.get() + 1);
        if created {
            if let Some(w) = pending.pop_front() {
                ids.insert(watch_id, w);
                self.created(w, revision, now);
            } else {
                self.error(Failure::with(
                    FailureKind::Watch,
                    "created response without a create request",
                ));
            }
        }
        if compact_revision > 0 {
            self.error(Failure::with(
                FailureKind::Compacted,
                format_args!("watch {watch_id}: compacted at revision {compact_revision}"),
            ));
        }
        if canceled {
            let why = if cancel_reason.is_empty() {
                "no reason given"
            } else {
                cancel_reason
            };
            self.error(Failure::with(FailureKind::Canceled, why));
        }
        let Some(&w) = ids.get(&watch_id) else {
            if !created {
                for _ in events {
                    self.error(Failure::with(
                        FailureKind::Watch,
                        "event for an unknown watch id",
                    ));
                }
            }
            return;
        };
        for (delete, revision, value) in events {
            if delete {
                self.error(Failure::with(FailureKind::Watch, "unexpected DELETE event"));
            }
            self.event(w, revision, &value, now);
        }
    }
}

/// One WatchResponse, from either stack: what `WatchState::response` reads of it.
pub(super) struct Response<'a, E> {
    pub watch_id: i64,
    pub revision: i64,
    pub created: bool,
    pub canceled: bool,
    pub compact_revision: i64,
    pub cancel_reason: &'a str,
    /// each event: (a DELETE, its mod revision, its value)
    pub events: E,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_expected_revisions_count_toward_the_drain() {
        // watcher 0 expects 10, 11, 12; it already saw 10 and an unexpected 99
        let revisions = Arc::new(vec![vec![10, 11, 12], vec![]]);
        let mut e = Expected::new(revisions, &[vec![10, 99], vec![]]);
        assert_eq!(e.outstanding, 2);
        // an unexpected event (a timed-out put etcd applied) is no stand-in for 11 or 12
        e.arrived(0, 98);
        e.arrived(1, 11);
        // a duplicate counts once
        e.arrived(0, 10);
        assert_eq!(e.outstanding, 2);
        e.arrived(0, 12);
        e.arrived(0, 11);
        assert_eq!(e.outstanding, 0);
        e.arrived(0, 11);
        e.arrived(7, 11);
        assert_eq!(e.outstanding, 0);
    }
}
