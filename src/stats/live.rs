//! Live figures of a run in progress (`--metrics-addr`): each worker thread's cumulative
//! snapshot, posted on a `Board` by a timer task on that thread, and the board's sums per stack.

use std::sync::Mutex;

use crate::outcome::{Failure, FailureKind, StatusKey};
use crate::stack::Proto;
use crate::stats::{CpuTimes, Latencies, Stats};

/// Upper bounds of the latency histogram's buckets, in ns (10 µs to 10 s, 1-2.5-5 per
/// decade); `+Inf` follows them.
pub const LATENCY_BOUNDS_NS: [u64; 19] = [
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// One thread's figures since its run began (outcomes, latency, CPU and syscalls since the
/// measured window began; bytes and connections since the thread began), or their sum over
/// threads and runs. Every field only grows while a run goes.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub ok: u64,
    pub failed: u64,
    /// requests by the status their response had (the report's status distribution)
    pub statuses: Vec<(StatusKey, u64)>,
    /// failed requests by kind (the report's error distribution, without the messages), in
    /// `FailureKind::ALL`'s order
    pub errors: [u64; FailureKind::ALL.len()],
    /// successful requests with latency at most each of `LATENCY_BOUNDS_NS` (cumulative, as
    /// Prometheus buckets are)
    pub latency_le: [u64; LATENCY_BOUNDS_NS.len()],
    pub latency_count: u64,
    pub latency_sum_ns: u128,
    /// socket bytes of the thread's connections
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// kernel-counted syscalls over the measured window (None: perf events not permitted)
    pub syscalls: Option<u64>,
    pub cpu: CpuTimes,
    /// measured requests written to a socket
    pub written: u64,
    pub connections: u64,
    pub connect_failures: u64,
}

impl Snapshot {
    /// What `stats` holds now, with the thread's socket bytes, connections, window CPU and
    /// syscalls read by the caller.
    pub fn of(stats: &Stats, io: Io) -> Snapshot {
        let mut errors = [0u64; FailureKind::ALL.len()];
        for (f, n) in &stats.errors {
            errors[kind_index(f)] += n;
        }
        let mut s = Snapshot {
            ok: stats.ok,
            failed: stats.failed,
            statuses: stats.statuses.iter().map(|(k, v)| (*k, *v)).collect(),
            errors,
            latency_le: buckets(&stats.latency),
            latency_count: stats.latency.count,
            latency_sum_ns: stats.latency.sum_ns,
            written: stats.written,
            connect_failures: stats.connect_failures,
            ..Snapshot::default()
        };
        s.bytes_out = io.bytes_out;
        s.bytes_in = io.bytes_in;
        s.syscalls = io.syscalls;
        s.cpu = io.cpu;
        s.connections = io.connections;
        s
    }

    /// Adds `o` (another thread's, another run's).
    pub fn add(&mut self, o: &Snapshot) {
        self.ok += o.ok;
        self.failed += o.failed;
        for &(k, v) in &o.statuses {
            match self.statuses.iter_mut().find(|(m, _)| *m == k) {
                Some((_, n)) => *n += v,
                None => self.statuses.push((k, v)),
            }
        }
        self.statuses.sort_unstable_by_key(|(k, _)| *k);
        for (a, b) in self.errors.iter_mut().zip(o.errors) {
            *a += b;
        }
        for (a, b) in self.latency_le.iter_mut().zip(o.latency_le) {
            *a += b;
        }
        self.latency_count += o.latency_count;
        self.latency_sum_ns += o.latency_sum_ns;
        self.bytes_out += o.bytes_out;
        self.bytes_in += o.bytes_in;
        self.syscalls = self.syscalls.zip(o.syscalls).map(|(a, b)| a + b);
        self.cpu = self.cpu.plus(o.cpu);
        self.written += o.written;
        self.connections += o.connections;
        self.connect_failures += o.connect_failures;
    }

    /// Requests that failed before any response status (timeouts, connects, ...).
    pub fn without_status(&self) -> u64 {
        let with: u64 = self.statuses.iter().map(|(_, n)| n).sum();
        (self.ok + self.failed).saturating_sub(with)
    }
}

/// What a snapshot takes from outside `Stats`: read on the worker thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct Io {
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub syscalls: Option<u64>,
    pub cpu: CpuTimes,
    pub connections: u64,
}

fn kind_index(f: &Failure) -> usize {
    FailureKind::ALL
        .iter()
        .position(|k| *k == f.kind)
        .unwrap_or(0)
}

/// The cumulative bucket counts of `l` (a bucket's values are placed by the HDR histogram's
/// highest equivalent value: 3 significant digits).
fn buckets(l: &Latencies) -> [u64; LATENCY_BOUNDS_NS.len()] {
    let mut le = [0u64; LATENCY_BOUNDS_NS.len()];
    if l.count == 0 {
        return le;
    }
    let mut at = 0;
    let mut below = 0u64;
    for v in l.hist.iter_recorded() {
        let value = v.value_iterated_to();
        while at < le.len() && value > LATENCY_BOUNDS_NS[at] {
            le[at] = below;
            at += 1;
        }
        if at == le.len() {
            break;
        }
        below += v.count_at_value();
    }
    for slot in &mut le[at..] {
        *slot = below;
    }
    le
}

/// The sum of `parts` (None when there is none: a missing syscall count stays missing only
/// when a part lacks it).
fn sum<'a>(mut parts: impl Iterator<Item = &'a Snapshot>) -> Option<Snapshot> {
    let mut total = parts.next()?.clone();
    for p in parts {
        total.add(p);
    }
    Some(total)
}

/// One stack's place on the board: the runs of it that ended, and the threads of the one
/// going on.
#[derive(Debug, Default)]
struct StackBoard {
    proto: Option<Proto>,
    /// the runs of it that ended, summed (None: none yet)
    ended: Option<Snapshot>,
    threads: Vec<Option<Snapshot>>,
}

/// The live figures of every stack a process measures: posted by the workers' timer tasks
/// (one short lock per thread and tick), read by the metrics endpoint.
#[derive(Debug, Default)]
pub struct Board {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    stacks: Vec<StackBoard>,
    finished: bool,
}

/// One stack's sums, as the metrics endpoint renders them.
#[derive(Debug, Clone)]
pub struct StackFigures {
    pub proto: Proto,
    pub figures: Snapshot,
}

impl Board {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A run of `proto` on `threads` threads begins: an earlier run of the same stack is kept
    /// in its sums.
    pub fn begin(&self, proto: Proto, threads: usize) {
        let mut g = self.lock();
        let i = match g.stacks.iter().position(|s| s.proto == Some(proto)) {
            Some(i) => i,
            None => {
                g.stacks.push(StackBoard {
                    proto: Some(proto),
                    ..StackBoard::default()
                });
                g.stacks.len() - 1
            }
        };
        let s = &mut g.stacks[i];
        let ended = sum(s.ended.iter().chain(s.threads.iter().flatten()));
        s.ended = ended;
        s.threads = vec![None; threads];
    }

    /// Thread `thread` of the run of `proto` going on has measured `snap` so far.
    pub fn post(&self, proto: Proto, thread: usize, snap: Snapshot) {
        let mut g = self.lock();
        if let Some(s) = g.stacks.iter_mut().find(|s| s.proto == Some(proto))
            && let Some(slot) = s.threads.get_mut(thread)
        {
            *slot = Some(snap);
        }
    }

    /// The report is written: the figures are final.
    pub fn finish(&self) {
        self.lock().finished = true;
    }

    /// Whether `finish` was called.
    pub fn finished(&self) -> bool {
        self.lock().finished
    }

    /// Each stack's figures so far, in the order the stacks began.
    pub fn figures(&self) -> Vec<StackFigures> {
        let g = self.lock();
        g.stacks
            .iter()
            .filter_map(|s| {
                let proto = s.proto?;
                let figures =
                    sum(s.ended.iter().chain(s.threads.iter().flatten())).unwrap_or_default();
                Some(StackFigures { proto, figures })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::At;
    use std::time::Duration;

    #[test]
    fn buckets_are_cumulative_and_count_every_success() {
        let mut st = Stats::default();
        for us in [5u64, 20, 20, 90, 3_000, 20_000_000] {
            st.record_ok(
                At::default(),
                Duration::from_micros(us),
                StatusKey::Http(200),
            );
        }
        st.record_failure(At::default(), None, Failure::new(FailureKind::Timeout));
        let s = Snapshot::of(&st, Io::default());
        // 10 µs: 5; 25 µs: + 20, 20; 100 µs: + 90; 5 ms: + 3 ms; 10 s: still 5 (20 s is above)
        assert_eq!(s.latency_le[0], 1);
        assert_eq!(s.latency_le[1], 3);
        assert_eq!(s.latency_le[3], 4);
        assert_eq!(s.latency_le[8], 5);
        assert_eq!(s.latency_le[18], 5);
        assert_eq!(s.latency_count, 6);
        assert_eq!(s.latency_sum_ns, 20_003_135_000);
        assert_eq!((s.ok, s.failed, s.without_status()), (6, 1, 1));
        assert_eq!(s.errors[1], 1, "timeout is the second kind");
    }

    #[test]
    fn the_board_sums_threads_and_keeps_ended_runs() {
        let b = Board::default();
        let snap = |ok| Snapshot {
            ok,
            statuses: vec![(StatusKey::Http(200), ok)],
            syscalls: Some(ok * 3),
            ..Snapshot::default()
        };
        b.begin(Proto::Http, 2);
        b.post(Proto::Http, 0, snap(5));
        b.post(Proto::Http, 1, snap(7));
        // a thread that does not exist is ignored
        b.post(Proto::Http, 9, snap(100));
        b.begin(Proto::Grpc, 1);
        b.post(Proto::Grpc, 0, snap(1));
        let f = b.figures();
        assert_eq!(f.len(), 2);
        assert_eq!((f[0].proto, f[0].figures.ok), (Proto::Http, 12));
        assert_eq!(f[0].figures.statuses, [(StatusKey::Http(200), 12)]);
        assert_eq!(f[0].figures.syscalls, Some(36));
        // a second run of a stack adds to the first: counters never go down
        b.begin(Proto::Http, 1);
        b.post(Proto::Http, 0, snap(2));
        assert_eq!(b.figures()[0].figures.ok, 14);
        assert!(!b.finished());
        b.finish();
        assert!(b.finished());
    }
}
