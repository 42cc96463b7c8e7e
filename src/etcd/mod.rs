//! Everything etcd: one client over both stacks, discovery of the cluster's roles, the KV
//! operations the engine drives, and the watchers of the watch benchmark.
//!
//! It imports only from below (`client`, `net`, `config`, `stats`, the wire crate): never the
//! engine, the report or the application, which drive it.

pub mod client;
pub mod discover;
pub mod ops;
pub mod watch;
