//! # wirebench
//!
//! Runs the same logical operation over HTTP/1.1 and gRPC and reports what each costs:
//! latency, throughput, and at the socket bytes, syscalls, TCP segments and CPU per request.
//!
//! ## Layout
//! Imports point down: `app` → `cli` → {`engine`, `report`, `server`} → `workload` → `etcd` →
//! `client` → `net` → `wire`; `config` and `stats` are importable from above and import nothing
//! above them. `cli` feeds `app` but imports nothing of it: `app` parses.
//! - `cli`: the clap grammar, one file per command, validated into `config` types; nothing
//!   else sees raw flags.
//! - `app`: one file per command (run, call, compare, sweep, watch, serve) and `prepare`: file
//!   limits, auth token, `--target`, the built-in server, `--server-pid` → `Prepared`.
//! - `config`: the validated run description, plain data, never changed after validation.
//! - `net`: connect with socket options, `Metered` (socket bytes and syscalls), `Io` (plain or
//!   TLS, plaintext and layer accounting), TCP_INFO; the connection settings.
//! - `client`: one HTTP/1.1 keepalive connection; gRPC unary calls on raw h2.
//! - `etcd`: one etcd client over both stacks (authenticate, status, member list, put),
//!   discovery for `--target` (pure selection), the KV operations the engine drives, and the
//!   watch benchmark's watchers and its put workload; it imports nothing of engine, report or app.
//! - `workload`: the operations the engine drives (echo, etcd's), one enum, static dispatch.
//! - `engine`: thread-per-core closed-loop runner; per-thread stats merged at the end.
//! - `stats`: HDR latency histogram, outcomes, per-connection ledgers, process CPU, and
//!   per-thread kernel counts (syscalls, context switches, instructions, cycles).
//! - `report`: derived figures (one place), rendered as text or JSON; compare rounds; SVG
//!   charts; the watch report.
//! - `server`: the built-in grpc-echo compatible server (h2 and HTTP/1.1 on one port, TLS).
//! - `wirebench_wire` (crates/wire): pure codecs on `BytesMut` (HTTP/1.1 head/chunked, gRPC
//!   framing, gateway JSON, h2 sniffing).
//!
//! ## Invariants
//! - `wire` never imports tokio and never reads the clock.
//! - Every length a peer controls is checked against a named limit before allocating for it.
//! - Timestamps are taken around the client call, never inside codecs.
//! - A worker thread owns its connections and stats; nothing is shared on the request path.
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
pub mod server;
pub mod stats;
pub mod workload;

/// The protobuf messages, generated in the wire crate.
pub use wirebench_wire::proto;
