//! The etcd features above the engine's workloads: discovery of a cluster's roles (`--target`),
//! the watchers of the watch benchmark, `--verify`'s lookups of acknowledged writes, the
//! compactor of `--compact-interval` and lease-keepalive's leases (both calling a `Cluster`).
//! The etcd client over both stacks and the operations the engine drives are the etcd workload
//! (`workload::etcd`), below both.
//!
//! It imports only from below (`workload`, `client`, `net`, `config`, `stats`, the wire crate):
//! never the engine, the report or the application, which drive it.

mod cluster;
pub mod compact;
pub mod discover;
pub mod lease;
pub mod verify;
pub mod watch;

pub use cluster::Cluster;
