//! Thread-per-core runner: each thread a current-thread runtime owning its connections, clients
//! and stats; closed loop, bounded by a total or a duration; merged once at the end.
//!
//! The files, leaves first: `plan` (who owns what), `pace` (the open-loop schedule), `ramp`
//! (`--client-stages`), `failover`, `meeting`, `closer`, `interval`, `progress`; `worker` (a
//! thread's shared state and what its clients record); `session` (the one client loop and the
//! `Session` trait a stack fills); the stacks `http1` (and `http1_loop`, the same clients on a thread's own readiness
//! loop), `pipeline`, `grpc`, `bidi`; `thread` (a
//! worker thread's life, which picks the stack); `run` (the main thread's side of a run).

mod bidi;
mod closer;
mod failover;
mod grpc;
mod http1;
mod http1_loop;
mod interval;
mod meeting;
mod pace;
mod pipe_loop;
mod pipeline;
mod plan;
mod progress;
mod ramp;
mod run_proto;
mod session;
mod thread;
mod worker;

pub use failover::{Failover, Rediscovery};
pub use run_proto::{run_proto, run_proto_with};

/// Why a run could not start or finish (a request's own failure is a `Failure`, counted).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("connect to {addr}: {source}")]
    Connect {
        addr: crate::net::Dest,
        source: std::io::Error,
    },
    #[error("cannot start a runtime: {0}")]
    Runtime(std::io::Error),
    #[error("cannot start the interval printer: {0}")]
    IntervalPrinter(std::io::Error),
    #[error("cannot start a worker thread: {0}")]
    Thread(std::io::Error),
    #[error("a worker thread panicked (a bug: please report it)")]
    Panicked,
    #[error(transparent)]
    Stack(#[from] crate::workload::StackMismatch),
}

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use crate::client::grpc::H2Config;
use crate::config::Stop;
use crate::net::NetConfig;
use crate::stack::Proto;
use crate::workload::OnStack;

/// Set by SIGINT: clients stop sending, in-flight requests finish, the report is printed.
pub static INTERRUPTED: LazyLock<Arc<AtomicBool>> = LazyLock::new(Arc::default);

/// A run stopped from outside (besides `-n` / `-z`): the caller sees when its measured window
/// starts and tells its clients to stop sending, as Ctrl-C would (requests in flight finish).
/// A watch-get run's range load goes exactly while its watchers catch up this way.
#[derive(Debug, Default)]
pub struct Control {
    started: AtomicBool,
    stop: AtomicBool,
}

impl Control {
    /// Whether the run has reached its start line (every connection open).
    pub fn started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    /// No client starts another request.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// Read-only run parameters shared by all worker threads.
struct Ctx {
    proto: Proto,
    clients: usize,
    stop: Stop,
    warmup: Duration,
    timeout: Duration,
    net: NetConfig,
    pub(super) h2: H2Config,
    max_body: u64,
    /// HTTP/1.1 requests in flight per connection (1: one connection per client)
    pipeline: usize,
    /// `--requests-per-conn`: connections close after this many requests; none is opened at
    /// setup, and a request's latency includes the connect that precedes it
    requests_per_conn: Option<u64>,
    /// open loop: requests/s over all threads (with `--stages`, the schedule's average)
    rate: Option<f64>,
    /// `--stages` or `--client-stages`
    staged: Option<crate::config::Staged>,
    /// where each stage ends, from the start of the measured window (empty without stages)
    stage_ends: Vec<Duration>,
    /// `--interval`: each thread hands its interval counts to the printer here
    interval: Option<(Duration, interval::Sink)>,
    /// connections opened per second at setup (all threads together)
    connect_rate: Option<f64>,
    /// worker threads that have clients
    threads: usize,
    /// HTTP/1.1 layer accounting on or off (h2 carries its own switch in `h2`)
    layers: crate::net::Layers,
    /// per member (the run's endpoints first: slot i starts on member i)
    addrs: Vec<crate::net::Dest>,
    /// `host:port` per member (re-authentication requests)
    authorities: Vec<String>,
    /// host per member (TLS server name)
    hosts: Vec<String>,
    /// which member each endpoint slot goes to now, when clients can be moved (a cluster)
    routes: Option<failover::Routes>,
    /// credentials, to authenticate again when the target refuses the token
    auth: Option<(String, String)>,
    /// the workload on this run's stack, which each client copies
    work: OnStack,
    /// what becomes of what successful requests acknowledge
    acks: Acks,
    /// the live board, the request log and a stop from outside, when asked for
    taps: Taps,
}

impl Ctx {
    /// Whether clients stop sending: Ctrl-C, or the caller's `Control::stop`.
    fn halted(&self) -> bool {
        INTERRUPTED.load(Ordering::Relaxed)
            || self
                .taps
                .control
                .as_ref()
                .is_some_and(|c| c.stop.load(Ordering::Relaxed))
    }
}

/// What a run hands on while it goes, besides its `ProtoRun`: each thread's live snapshot
/// (`--metrics-addr`) and its request log rows (`--log-requests`); and what it takes: a stop
/// from outside (`Control`).
#[derive(Clone, Default)]
pub struct Taps {
    pub live: Option<Arc<crate::stats::live::Board>>,
    pub log: Option<Arc<crate::stats::reqlog::RequestLog>>,
    pub control: Option<Arc<Control>>,
}

/// What the engine keeps of the revisions successful writes acknowledge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Acks {
    /// the watch benchmark's puts: revisions per key (the watchers' expected events)
    ByKey,
    /// `--verify`: every put's key index and revision, checked after the run
    Listed,
    Dropped,
}

impl Ctx {
    /// The member endpoint slot `slot` goes to now.
    fn member(&self, slot: usize) -> usize {
        self.routes.as_ref().map_or(slot, |r| r.member(slot))
    }
}

/// The clients (and, for gRPC, connections) one thread owns.
#[derive(Debug, Default)]
struct Assignment {
    /// this thread's index among the threads that have clients
    thread: usize,
    /// (client id, connection index into `conns` for shared connections, endpoint for
    /// unpipelined HTTP/1.1)
    clients: Vec<(usize, usize)>,
    /// shared connections (h2, pipelined HTTP/1.1): endpoint of each
    conns: Vec<usize>,
}
