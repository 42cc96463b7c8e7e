//! # wirebench
//!
//! Runs the same logical operation over HTTP/1.1 and gRPC and reports what each costs:
//! latency, throughput, and at the socket bytes, syscalls, TCP segments and CPU per request.
//!
//! ## Layout
//! Imports point down: `cli` → `app` → {`engine`, `etcd`, `report`, `server`} → `workload` →
//! `client` → `net` → `wirebench_wire`; `config`, `outcome`, `rng` and `stats` are importable
//! from above and import nothing above them (`config` → `client` and `net` for the connection
//! settings, `stats` → `outcome`). No cycle between modules.
//! - `cli`: the clap grammar, one file per command, validated into an `app::Action` holding
//!   `config` types; nothing else sees raw flags.
//! - `app`: one file per command (run, call, compare, sweep, watch, serve, merge) and `prepare`: file
//!   limits, auth token, `--target`, the built-in server, `--server-pid` → `Prepared`;
//!   `outputs`: what a run writes besides its report (opened before, finished after), and
//!   `metrics`: the bounded `/metrics` endpoint.
//! - `engine`: thread-per-core runner: `plan` (threads, quotas), `worker` (one thread's clients
//!   and measured window), `run` (the main thread's side), `pace` (open loop).
//! - `etcd`: discovery for `--target` (pure selection), the watch benchmark's watchers,
//!   `--verify`'s lookups, `--compact-interval`'s compactor and lease-keepalive's leases; it
//!   imports nothing of engine, report or app.
//! - `report`: derived figures (one place), rendered as text or JSON; compare rounds; SVG
//!   charts (headline bars, latency by percentile, timeline); the HTML page; the live figures
//!   as Prometheus text; the watch report; the histograms as the JSON carries them (`hdr`) and
//!   the merge of several agents' reports (`merge`).
//! - `server`: the built-in grpc-echo compatible server (h2 and HTTP/1.1 on one port, TLS).
//! - `workload`: what request N is and how its answer is judged (echo, etcd's KV, transactions,
//!   lease keepalives and the watch puts), one enum, static dispatch; `workload::etcd::client`:
//!   one etcd client over both stacks (authenticate, status, member list, put; compact and
//!   leases over gRPC).
//! - `client`: thin IO drivers around the wire cores: HTTP/1.1 keepalive, gRPC and plain
//!   HTTP/2 on raw h2 (either h2 client), the h2 settings.
//! - `net`: connect with socket options, `Metered` (socket bytes and syscalls), `Io` (plain or
//!   TLS, plaintext and layer accounting), TCP_INFO; the socket settings.
//! - `config`: the validated run description, plain data, never changed after validation;
//!   `config::stages`: `--stages` / `--client-stages` parsed and their math (level, integral,
//!   inverse, each client's active stretches); `config::clock`: `--start-at`'s times.
//! - `outcome`: the typed failure kinds, gRPC status codes and status keys; details interned
//!   per thread.
//! - `rng`: one small seedable generator (keys, values, injected faults); imports nothing.
//! - `threshold`: `--fail-if` parsed (figure, comparison, limit), part of the configuration;
//!   `report::verdict` judges it on a report.
//! - `stats`: HDR latency, per-layer counters, per-connection records, process CPU, per-thread
//!   kernel counts; what one protocol run measured (`ProtoRun`); the live board of per-thread
//!   snapshots (`live`) and the request log's buffers and writer (`reqlog`).
//! - `wirebench_wire` (crates/wire): the sans-IO protocol cores (HTTP/1.1 request, response and
//!   chunked, gRPC framing and the unary verdict, gateway JSON, watch lines, the h2 client
//!   connection, which counts its own layers, h2 sniffing) and the protobuf types; no tokio,
//!   no clock, no IO in its dependency tree.
//!
//! ## Invariants
//! - `wire` never imports tokio and never reads the clock.
//! - Every length a peer controls is checked against a named limit before allocating for it.
//! - Timestamps are taken around the client call, never inside codecs.
//! - A worker thread owns its connections and stats; nothing is shared on the request path
//!   (with `--log-requests`, a full buffer of 1,024 rows goes to the writer over a bounded
//!   channel).
//! - One HTTP/1.1 request is one contiguous buffer, written with one write call.
//! - A `Config` is not changed once validated: what a run learns is in `app::Prepared`.

pub mod app;
pub mod cli;
pub mod client;
pub mod config;
pub mod engine;
pub mod etcd;
pub mod net;
pub mod outcome;
pub mod report;
pub mod rng;
pub mod server;
pub mod stack;
pub mod stats;
pub mod threshold;
pub mod workload;

/// The protobuf messages, generated in the wire crate.
pub use wirebench_wire::proto;
