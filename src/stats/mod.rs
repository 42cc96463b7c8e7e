//! Per-worker measurements (latency, outcomes, connection records, CPU and memory) and their
//! merge. Importable from every layer; imports only `outcome` and the wire crate.

mod etcd;
mod latency;
pub mod live;
pub mod perf;
mod process;
mod proto_run;
mod quic;
mod records;
pub mod reqlog;
mod watch;

pub use etcd::{Compactions, Leases};
pub use latency::{Latencies, TimeSlot, Timeline};
pub use process::{ClockError, CpuTimes, ProcessClock, Rss, RssSampler, memory, thread_cpu};
pub use proto_run::{
    CLIENT_LOOP_EPOLL, CLIENT_LOOP_MIXED, CLIENT_LOOP_TOKIO, CLIENT_LOOP_URING, FailoverEvent,
    Memory, ProtoRun, TIMERFD, TOKIO_FALLBACK, Unresolved, WindowCost,
};
pub use quic::{H3Record, QuicFrames, QuicStats};
pub use records::{
    CloseRecord, ConnRecord, ConnSet, Duplex, Http1Counts, IoCalls, TcpInfo, TlsCounts,
};
pub use watch::{Loss, StreamMove, WatchOutcome};

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use crate::outcome::{Failure, StatusKey};

/// Where and when an outcome happened: the endpoint it went to, and its offset from the start of
/// the measured window (for the timeline).
#[derive(Debug, Clone, Copy, Default)]
pub struct At {
    pub endpoint: usize,
    pub offset: Duration,
    /// `--stages` / `--client-stages`: the stage `offset` falls in
    pub stage: Option<usize>,
}

/// Outcomes of the requests sent to one endpoint.
#[derive(Debug, Clone, Default)]
pub struct EndpointStats {
    pub ok: u64,
    pub failed: u64,
    pub latency: Latencies,
}

/// One successful streaming call's figures.
#[derive(Debug, Clone, Copy, Default)]
pub struct StreamFigures {
    pub sent: u64,
    pub received: u64,
    /// from the call's start to its first message
    pub first: Option<Duration>,
    /// client-streaming: from the last message sent to the response
    pub last_to_response: Option<Duration>,
}

/// Everything one worker thread measured.
#[derive(Debug, Default)]
pub struct Stats {
    /// latency of successful requests; in open loop from the intended send time (corrected)
    pub latency: Latencies,
    /// open loop only: latency from the actual send time (what a closed-loop tool would report)
    pub uncorrected: Option<Latencies>,
    /// `--requests-per-conn` only: latency from the moment the request's connection was ready
    /// (`latency` includes the connect and TLS handshake of a request that opened one)
    pub without_setup: Option<Latencies>,
    /// streaming calls only: the messages the successful calls received, and each call's
    /// latency to its first message (`latency` is to the last, the call's end)
    pub messages: u64,
    pub first_message: Option<Latencies>,
    /// client-streaming and bidi calls: the messages the successful calls sent
    pub messages_sent: u64,
    /// bidi ping-pong: each message's time to its reply (every call's, as they came)
    pub message_latency: Option<Latencies>,
    /// client-streaming calls: from the last message sent to the response
    pub last_to_response: Option<Latencies>,
    pub ok: u64,
    pub failed: u64,
    /// requests sent during warmup (excluded from everything but the wire counters)
    pub warmup: u64,
    pub statuses: BTreeMap<StatusKey, u64>,
    pub errors: HashMap<Failure, u64>,
    /// connections replaced mid-run (server closed, error, timeout)
    pub reconnects: u64,
    /// gRPC requests re-sent on a new connection because the server did not process them
    pub retried: u64,
    /// requests re-sent after re-authenticating ("invalid auth token")
    pub reauthenticated: u64,
    /// measured requests written to a socket (a gRPC request retried counts once): the
    /// denominator of the measured window's per-request figures
    pub written: u64,
    /// connection attempts that failed mid-run (each turn that found no connection), and the
    /// last reason; in duration mode they are not requests, so Count leaves them out
    pub connect_failures: u64,
    pub connect_error: Option<Failure>,
    /// open loop: measured sends whose intended time came while every client was busy
    pub late: u64,
    /// open loop: measured sends the schedule released 2 ms or more after their intended time
    /// (the thread was busy elsewhere when its timer came due)
    pub overdue: u64,
    /// open loop: measured sends that waited longer than --timeout for a free client and were
    /// never sent (each is also a `late` failure)
    pub expired: u64,
    /// open loop: the largest delay between a send's intended and actual time
    pub max_send_lag: Duration,
    /// open loop: measured sends and their delays summed (for the average)
    pub lagged_sends: u64,
    pub send_lag_sum: Duration,
    pub per_endpoint: Vec<EndpointStats>,
    pub timeline: Timeline,
    /// `--stages` / `--client-stages`: outcomes by the stage they completed in (and, open
    /// loop, the sends scheduled in it); empty without stages
    pub stages: Vec<TimeSlot>,
    /// `--interval`: the outcomes since the interval began; taken and replaced by the
    /// thread's interval task at each interval's end (never merged)
    pub interval: Option<TimeSlot>,
    /// one record per connection (past `ConnSet::KEPT` per thread, folds of several)
    pub conns: Vec<ConnRecord>,
    /// the connect times of the connections in folded records
    pub folded_connect: Latencies,
    /// per key index, the revisions etcd assigned to the acknowledged puts of a workload that
    /// reports them (the watch benchmark's put load); empty, never allocated, for the others
    pub revisions: Vec<Vec<i64>>,
    /// `--verify`: (key index, revision) of every acknowledged write, checked after the run
    pub acks: Vec<(u64, i64)>,
    /// the watch benchmark's puts: (revision, when its acknowledgement arrived, in ns of the
    /// stamps' clock), for the watch-latency clock that starts there
    pub acked_at: Vec<(i64, u64)>,
    /// `--log-requests`: the rows the threads logged and their waits for the writer
    pub log: reqlog::Tally,
    /// txn-mixed: the measured requests by class (reads, writes), indexed as the workload
    /// names them; empty, never allocated, for a workload of one kind
    pub classes: Vec<EndpointStats>,
    /// endpoint 0's latencies are `latency` itself until a success at another endpoint is
    /// recorded (then each endpoint's are recorded apart, endpoint 0's starting from a copy):
    /// a run against one endpoint records each latency once (`endpoint_latency`)
    split: bool,
}

impl Stats {
    fn endpoint(&mut self, i: usize) -> &mut EndpointStats {
        if self.per_endpoint.len() <= i {
            self.per_endpoint.resize_with(i + 1, EndpointStats::default);
        }
        &mut self.per_endpoint[i]
    }

    /// The latencies of the successes at endpoint `i` (None: no request went there).
    pub fn endpoint_latency(&self, i: usize) -> Option<&Latencies> {
        let e = self.per_endpoint.get(i)?;
        Some(if i == 0 && !self.split {
            &self.latency
        } else {
            &e.latency
        })
    }

    /// From now on each endpoint's latencies are recorded apart: endpoint 0's so far (all of
    /// them, as no other endpoint had one) start its own.
    fn split_endpoints(&mut self) {
        self.split = true;
        let so_far = self.latency.clone();
        self.endpoint(0).latency = so_far;
    }

    fn stage(&mut self, i: usize) -> &mut TimeSlot {
        if self.stages.len() <= i {
            self.stages.resize_with(i + 1, TimeSlot::precise);
        }
        &mut self.stages[i]
    }

    pub fn record_ok(&mut self, at: At, latency: Duration, status: StatusKey) {
        if at.endpoint != 0 && !self.split {
            self.split_endpoints();
        }
        self.ok += 1;
        self.latency.record(latency);
        // found without `entry`'s bookkeeping: a run has a status or two, the same one each time
        match self.statuses.get_mut(&status) {
            Some(n) => *n += 1,
            None => {
                self.statuses.insert(status, 1);
            }
        }
        let split = self.split;
        let e = self.endpoint(at.endpoint);
        e.ok += 1;
        if split {
            e.latency.record(latency);
        }
        self.timeline.slot(at.offset).record(latency);
        if let Some(i) = at.stage {
            self.stage(i).record(latency);
        }
        if let Some(slot) = &mut self.interval {
            slot.record(latency);
        }
    }

    /// Open loop: a measured send was scheduled at `at` (sent, or expired unsent).
    pub fn record_scheduled(&mut self, at: At) {
        self.timeline.slot(at.offset).sent += 1;
        if let Some(i) = at.stage {
            self.stage(i).sent += 1;
        }
    }

    /// A measured request of class `class` (txn-mixed: 0 a read, 1 a write): its latency when
    /// it succeeded, None when it failed.
    pub fn record_class(&mut self, class: u8, latency: Option<Duration>) {
        let i = usize::from(class);
        if self.classes.len() <= i {
            self.classes.resize_with(i + 1, EndpointStats::default);
        }
        let c = &mut self.classes[i];
        match latency {
            Some(d) => {
                c.ok += 1;
                c.latency.record(d);
            }
            None => c.failed += 1,
        }
    }

    /// An acknowledged put to key index `key` got revision `revision`.
    pub fn record_revision(&mut self, key: usize, revision: i64) {
        if self.revisions.len() <= key {
            self.revisions.resize_with(key + 1, Vec::new);
        }
        self.revisions[key].push(revision);
    }

    /// A successful streaming call: its messages each way, its latency to the first message
    /// (`None`: a stream of no messages), and for a client-streaming call the time from its last
    /// message to the response.
    pub fn record_stream(&mut self, s: &StreamFigures) {
        self.messages += s.received;
        self.messages_sent += s.sent;
        let hist = self.first_message.get_or_insert_with(Latencies::default);
        if let Some(d) = s.first {
            hist.record(d);
        }
        if let Some(d) = s.last_to_response {
            self.last_to_response
                .get_or_insert_with(Latencies::default)
                .record(d);
        }
    }

    /// A ping-pong reply, `d` after its message.
    pub fn record_message(&mut self, d: Duration) {
        self.message_latency
            .get_or_insert_with(Latencies::default)
            .record(d);
    }

    /// Open loop: the same request's latency from its actual send time.
    pub fn record_without_setup(&mut self, latency: Duration) {
        self.without_setup
            .get_or_insert_with(Latencies::default)
            .record(latency);
    }

    pub fn record_uncorrected(&mut self, latency: Duration) {
        self.uncorrected
            .get_or_insert_with(Latencies::default)
            .record(latency);
    }

    pub fn record_failure(&mut self, at: At, status: Option<StatusKey>, failure: Failure) {
        self.record_failures(at, 1, failure);
        if let Some(s) = status {
            *self.statuses.entry(s).or_insert(0) += 1;
        }
    }

    /// `n` requests that failed the same way (e.g. not sent: server unreachable).
    pub fn record_failures(&mut self, at: At, n: u64, failure: Failure) {
        if n == 0 {
            return;
        }
        self.failed += n;
        *self.errors.entry(failure).or_insert(0) += n;
        self.endpoint(at.endpoint).failed += n;
        self.timeline.slot(at.offset).failed += n;
        if let Some(i) = at.stage {
            self.stage(i).failed += n;
        }
        if let Some(slot) = &mut self.interval {
            slot.failed += n;
        }
    }

    pub fn merge(&mut self, other: Stats) {
        // before `latency` takes the other's: endpoint 0's so far are this one's alone
        if other.split && !self.split {
            self.split_endpoints();
        }
        if self.revisions.len() < other.revisions.len() {
            self.revisions.resize_with(other.revisions.len(), Vec::new);
        }
        for (mine, theirs) in self.revisions.iter_mut().zip(other.revisions) {
            mine.extend(theirs);
        }
        self.acks.extend(other.acks);
        self.acked_at.extend(other.acked_at);
        if self.classes.len() < other.classes.len() {
            self.classes
                .resize_with(other.classes.len(), EndpointStats::default);
        }
        for (mine, theirs) in self.classes.iter_mut().zip(&other.classes) {
            mine.ok += theirs.ok;
            mine.failed += theirs.failed;
            mine.latency.merge(&theirs.latency);
        }
        self.latency.merge(&other.latency);
        if let Some(u) = &other.uncorrected {
            self.uncorrected
                .get_or_insert_with(Latencies::default)
                .merge(u);
        }
        if let Some(u) = &other.without_setup {
            self.without_setup
                .get_or_insert_with(Latencies::default)
                .merge(u);
        }
        for (mine, theirs) in [
            (&mut self.first_message, &other.first_message),
            (&mut self.message_latency, &other.message_latency),
            (&mut self.last_to_response, &other.last_to_response),
        ] {
            if let Some(f) = theirs {
                mine.get_or_insert_with(Latencies::default).merge(f);
            }
        }
        self.messages += other.messages;
        self.messages_sent += other.messages_sent;
        self.ok += other.ok;
        self.failed += other.failed;
        self.warmup += other.warmup;
        for (k, v) in other.statuses {
            *self.statuses.entry(k).or_insert(0) += v;
        }
        for (k, v) in other.errors {
            *self.errors.entry(k).or_insert(0) += v;
        }
        self.reconnects += other.reconnects;
        self.retried += other.retried;
        self.reauthenticated += other.reauthenticated;
        self.written += other.written;
        self.connect_failures += other.connect_failures;
        if other.connect_error.is_some() {
            self.connect_error = other.connect_error;
        }
        self.late += other.late;
        self.overdue += other.overdue;
        self.expired += other.expired;
        self.max_send_lag = self.max_send_lag.max(other.max_send_lag);
        self.lagged_sends += other.lagged_sends;
        self.send_lag_sum += other.send_lag_sum;
        let split = self.split;
        for (i, e) in other.per_endpoint.iter().enumerate() {
            let theirs = if i == 0 && !other.split {
                &other.latency
            } else {
                &e.latency
            };
            let mine = self.endpoint(i);
            mine.ok += e.ok;
            mine.failed += e.failed;
            // unsplit on both sides, endpoint 0's are `latency`, merged below
            if split {
                mine.latency.merge(theirs);
            }
        }
        self.timeline.merge(other.timeline);
        for (i, st) in other.stages.iter().enumerate() {
            self.stage(i).add(st);
        }
        self.conns.extend(other.conns);
        self.folded_connect.merge(&other.folded_connect);
        self.log.add(other.log);
    }

    pub fn count(&self) -> u64 {
        self.ok + self.failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::FailureKind;

    #[test]
    fn revisions_are_kept_per_key_and_merged() {
        let mut a = Stats::default();
        assert!(a.revisions.is_empty());
        a.record_revision(2, 7);
        a.record_revision(0, 3);
        let mut b = Stats::default();
        b.record_revision(3, 9);
        b.record_revision(2, 8);
        a.merge(b);
        assert_eq!(a.revisions, [vec![3], vec![], vec![7, 8], vec![9]]);
    }

    #[test]
    fn classes_are_counted_apart_and_merged() {
        let mut a = Stats::default();
        assert!(a.classes.is_empty());
        a.record_class(1, Some(Duration::from_micros(40)));
        a.record_class(1, None);
        let mut b = Stats::default();
        b.record_class(0, Some(Duration::from_micros(10)));
        b.record_class(1, Some(Duration::from_micros(20)));
        a.merge(b);
        let counts: Vec<(u64, u64)> = a.classes.iter().map(|c| (c.ok, c.failed)).collect();
        assert_eq!(counts, [(1, 0), (2, 1)]);
        assert_eq!(a.classes[1].latency.min_ns, 20_000);
        assert_eq!(a.classes[0].latency.count, 1);
    }

    #[test]
    fn one_endpoints_latencies_are_recorded_once_and_split_at_a_second_endpoint() {
        let at = |endpoint| At {
            endpoint,
            offset: Duration::ZERO,
            stage: None,
        };
        let ok = |st: &mut Stats, endpoint, ms| {
            st.record_ok(
                at(endpoint),
                Duration::from_millis(ms),
                StatusKey::Http(200),
            );
        };
        // endpoint 0 alone: its latencies are the overall ones, not recorded twice
        let one = || {
            let mut a = Stats::default();
            ok(&mut a, 0, 1);
            ok(&mut a, 0, 3);
            a
        };
        let a = one();
        assert_eq!(a.endpoint_latency(0).unwrap().count, 2);
        assert_eq!(a.per_endpoint[0].latency.count, 0);
        assert!(a.endpoint_latency(1).is_none());
        // a success at endpoint 1 splits them: endpoint 0's so far go with it
        let two = || {
            let mut b = Stats::default();
            ok(&mut b, 0, 5);
            ok(&mut b, 1, 7);
            ok(&mut b, 0, 9);
            b
        };
        let b = two();
        let counts = |st: &Stats| {
            (0..2)
                .map(|i| {
                    st.endpoint_latency(i)
                        .map(|l| (l.count, l.max_ns / 1_000_000))
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(counts(&b), [Some((2, 9)), Some((1, 7))]);
        assert_eq!(b.latency.count, 3);
        // merged either way round, and unsplit with unsplit
        let mut ab = one();
        ab.merge(two());
        let mut ba = two();
        ba.merge(one());
        for st in [&ab, &ba] {
            assert_eq!(counts(st), [Some((4, 9)), Some((1, 7))]);
            assert_eq!(st.latency.count, 5);
        }
        let mut aa = one();
        aa.merge(one());
        assert_eq!(aa.endpoint_latency(0).unwrap().count, 4);
        assert_eq!(aa.latency.count, 4);
    }

    #[test]
    fn merge_adds_everything() {
        let mut a = Stats::default();
        let mut b = Stats::default();
        let at = |endpoint, s| At {
            endpoint,
            offset: Duration::from_secs(s),
            stage: Some((s / 2) as usize),
        };
        a.record_ok(at(0, 0), Duration::from_micros(10), StatusKey::Http(200));
        b.record_ok(at(1, 2), Duration::from_micros(30), StatusKey::Http(200));
        b.record_failure(
            at(1, 2),
            Some(StatusKey::Http(500)),
            Failure::with(FailureKind::HttpStatus, "boom"),
        );
        b.record_failure(at(0, 1), None, Failure::new(FailureKind::Timeout));
        a.merge(b);
        assert_eq!((a.ok, a.failed, a.count()), (2, 2, 4));
        let eps: Vec<(u64, u64)> = a.per_endpoint.iter().map(|e| (e.ok, e.failed)).collect();
        assert_eq!(eps, [(1, 1), (1, 1)]);
        let secs: Vec<(u64, u64)> = a.timeline.slots.iter().map(|b| (b.ok, b.failed)).collect();
        assert_eq!(secs, [(1, 0), (0, 1), (1, 1)]);
        assert_eq!(a.statuses[&StatusKey::Http(200)], 2);
        assert_eq!(a.statuses[&StatusKey::Http(500)], 1);
        assert_eq!(a.errors[&Failure::new(FailureKind::Timeout)], 1);
        assert_eq!(a.latency.min_ns, 10_000);
        assert_eq!(a.latency.max_ns, 30_000);
        // stages of 2 s: seconds 0 and 1 in the first, 2 in the second
        let stages: Vec<(u64, u64)> = a.stages.iter().map(|b| (b.ok, b.failed)).collect();
        assert_eq!(stages, [(1, 1), (1, 1)]);
    }
}
