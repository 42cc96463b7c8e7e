//! What one protocol run measured, merged over its worker threads: the figures the report
//! derives from.

use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use crate::stack::Proto;
use crate::stats::perf::KernelCounts;
use crate::stats::{ClockError, CpuTimes, IoCalls, Stats};

/// What one protocol run measured, merged over all threads.
#[derive(Debug)]
pub struct ProtoRun {
    pub proto: Proto,
    pub clients: usize,
    /// connections opened at start (h2: --conns; HTTP/1.1: one per client, or ceil(clients /
    /// --pipeline))
    pub conns: usize,
    /// HTTP/1.1 requests in flight per connection at most (`--pipeline`)
    pub pipeline: usize,
    /// `--requests-per-conn`
    pub requests_per_conn: Option<u64>,
    pub threads: usize,
    pub stats: Stats,
    /// when the measured window began (the start line + warmup)
    pub window_start: Instant,
    /// `window_start` on the wall clock (the report's absolute window, for `wirebench merge`)
    pub started_at: SystemTime,
    /// the measured window: from the end of the warmup until the last worker's last request
    pub elapsed: Duration,
    /// what the worker threads cost over the measured window (and apart, outside it)
    pub cost: WindowCost,
    /// the server's CPU over the measured window, or why it could not be read
    pub server_cpu: Option<Result<Duration, ClockError>>,
    /// the first successful response, as JSON
    pub sample: Option<Value>,
    pub interrupted: bool,
    /// open loop: the target rate (requests/s over all clients)
    pub rate: Option<f64>,
    /// how the clients waited for their sockets (one of `CLIENT_LOOP_*`)
    pub client_loop: &'static str,
    /// open loop: the pacers' timer ("timerfd", or tokio's 1 ms wheel when a timerfd failed)
    pub pacer_timer: Option<&'static str>,
    /// this process's memory around the run
    pub memory: Option<Memory>,
    /// `--stages` / `--client-stages`: the worker threads' CPU in each stage, summed
    pub stage_cpu: Vec<CpuTimes>,
    /// etcd: the clients moved off a member that was gone or no longer led
    pub failovers: Vec<FailoverEvent>,
    /// re-discoveries of the cluster that found nothing to move to (an election running, every
    /// member unreachable), the last reason and what each member answered it
    pub rediscovery_failures: Unresolved,
    /// the members the run could move clients to (its endpoints first), as URLs
    pub members: Vec<String>,
    /// the member each endpoint slot started on (indices into `members`; empty without them)
    pub start_members: Vec<usize>,
    /// the classes `stats.classes` counts (txn-mixed: "read", "write"); empty otherwise
    pub classes: &'static [&'static str],
    /// `--compact-interval`: what the compactor did beside the load
    pub compaction: Option<crate::stats::Compactions>,
    /// lease-keepalive: the leases granted before the run and revoked after it
    pub leases: Option<crate::stats::Leases>,
    /// `--link`: what the emulated path under this stack's run applied
    pub link: Option<wirebench_link::io::LinkReport>,
}

/// The re-discoveries of a run that found nowhere to move.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Unresolved {
    pub count: u64,
    /// the last one's reason, and what each member answered it (one line per member)
    pub last_error: Option<String>,
    pub last_answers: Vec<String>,
}

/// One endpoint slot's clients moved to another member, or waiting for the cluster to name
/// one until the run ended. Times are from the start of the run (the start line, before any
/// warmup).
#[derive(Debug, Clone, PartialEq)]
pub struct FailoverEvent {
    pub slot: usize,
    /// indices into `ProtoRun::members`; `to` None: the slot never moved (nowhere to go)
    pub from: usize,
    pub to: Option<usize>,
    /// the failure that opened the episode
    pub first_failure: Duration,
    /// when the slot was moved
    pub moved: Option<Duration>,
    /// the slot's first success after the move; None: none before the run ended
    pub first_success: Option<Duration>,
    /// the slot's failed requests from the first failure to the first success
    pub failed_between: u64,
    /// re-discoveries in the episode that found nowhere to move (an election running), and
    /// the last one's time
    pub unresolved: u64,
    pub unresolved_until: Option<Duration>,
    /// an episode that never moved: from its first failure to the end of the run
    pub waited: Option<Duration>,
}

/// The worker threads' cost, each counted on its own thread: over the measured window (CPU,
/// kernel counters, data calls), and the kernel counters outside it (setup and close).
#[derive(Debug, Clone, Default)]
pub struct WindowCost {
    pub cpu: CpuTimes,
    pub kernel: KernelCounts,
    pub outside: KernelCounts,
    pub io: IoCalls,
    /// why syscalls are not counted (perf events not permitted, ...), one line
    pub kernel_unavailable: Option<String>,
}

impl WindowCost {
    pub fn plus(self, o: WindowCost) -> WindowCost {
        WindowCost {
            cpu: self.cpu.plus(o.cpu),
            kernel: self.kernel.plus(o.kernel),
            outside: self.outside.plus(o.outside),
            io: self.io.plus(o.io),
            kernel_unavailable: self.kernel_unavailable.or(o.kernel_unavailable),
        }
    }
}

/// Resident memory of this process around one run (kiB).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Memory {
    /// once the worker threads and their runtimes exist, before the first connect
    pub rss_baseline_kib: u64,
    /// once every connection was open (before the first request)
    pub rss_connected_kib: u64,
    /// mid-run: the sample nearest the middle of the measured window
    pub rss_steady_kib: u64,
    /// VmHWM at the end: the process's peak so far (earlier runs of the process included)
    pub peak_rss_kib: u64,
}

/// HTTP/1.1 clients on each worker thread's own readiness loop.
pub const CLIENT_LOOP_EPOLL: &str = "epoll";
/// HTTP/1.1 clients on each worker thread's own loop, reading through an io_uring.
pub const CLIENT_LOOP_URING: &str = "io_uring";
/// Some threads' loops on io_uring, some on epoll (a thread whose ring could not be set up).
pub const CLIENT_LOOP_MIXED: &str = "io_uring and epoll";
/// A runtime task per client (or per connection).
pub const CLIENT_LOOP_TOKIO: &str = "tokio";

/// What the open-loop pacer slept with (`ProtoRun::pacer_timer`): a timerfd.
pub const TIMERFD: &str = "timerfd";
/// tokio's timer wheel, when a timerfd could not be made or armed: whole milliseconds.
pub const TOKIO_FALLBACK: &str = "tokio (1 ms resolution: a timerfd could not be used)";
