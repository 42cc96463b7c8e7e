//! Test support, shared by the integration tests; each test binary uses a subset.
//!
//! - `etcd`: `Etcd`, a throwaway single-member etcd per test (start, stop, restart, pause), and
//!   the gateway calls (status, range, put) the harness makes to it.
//! - `cluster`: `Cluster`, three etcd members that elect a leader among themselves.
//! - `process`: running the wirebench binary (or any command) under a deadline: `Run`,
//!   `run_bounded`, `run_command` (the child's CPU through wait4), `run_command_sampling_rss`
//!   (its peak RSS too), `run_json`, `die_with_parent`; reading reports: `proto_run`, `u64_at`,
//!   `f64_at`, `report_of`.
//! - `serve`: `ServeProcess`, `wirebench serve` on an ephemeral port.
//! - `capture`: tshark on loopback as ground truth.
//! - `seccomp`: `deny_syscalls` makes chosen syscalls fail in a child, for the paths that only
//!   unprivileged or containerised runs would otherwise take.
//! - `http_client`: the hand-written HTTP/1.1 POST of the harness's gateway calls, on
//!   `std::net::TcpStream`, so the harness shares no code with the tool under test.
//! - `http_server`: the tests' own loopback servers: an accept loop, a thread per connection,
//!   reading a request by hand.
//! - `ports`: free loopback ports.
//!
//! The names the tests use are re-exported here (`support::Etcd`, `support::run_json`, ...).

#![allow(dead_code)] // each test binary uses a different subset

pub mod capture;
pub mod cluster;
pub mod etcd;
pub mod http_client;
pub mod http_server;
pub mod ports;
pub mod process;
pub mod seccomp;
pub mod serve;

/// The loop `--io-loop auto` puts unpipelined HTTP/1.1 clients on here: "io_uring" where the
/// kernel gives the loop a ring with deferred task work (Linux 6.1+), else "epoll". CI's
/// kernel has it: a CI run without one fails here rather than test epoll twice.
pub fn auto_loop() -> &'static str {
    if wirebench::net::uring::Uring::available() {
        "io_uring"
    } else {
        assert!(
            std::env::var_os("CI").is_none(),
            "no io_uring with deferred task work (Linux 6.1+) for the client loop"
        );
        "epoll"
    }
}

/// Where the tests' Python peers (grpcio with its tools and reflection, Hypercorn,
/// HdrHistogram_py) come from, for the message of a test that cannot find them.
pub const PYTHON_PEERS: &str = "scripts/test.sh installs them into its own virtual environment, \
     ~/.cache/wirebench/venv (WIREBENCH_VENV), and runs the tests with its bin/ first on PATH; \
     for one test by hand: PATH=~/.cache/wirebench/venv/bin:$PATH cargo test --test NAME";

// Each test binary uses a different subset of these, too.
#[allow(unused_imports)]
pub use self::{
    cluster::Cluster,
    etcd::{Etcd, Paused},
    ports::unused_port,
    process::{
        Interrupts, RUN_TIMEOUT, Run, assert_one_error_line, assert_refused, die_with_parent,
        f64_at, proto_run, report_of, run_bounded, run_bounded_on_thread, run_command,
        run_command_sampling_rss, run_interrupted, run_json, run_json_within, try_run_command,
        u64_at, wirebench,
    },
    serve::{ServeProcess, parse_listening},
};
