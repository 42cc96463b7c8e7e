//! The etcd features above the engine's workloads: discovery of a cluster's roles (`--target`)
//! the watchers of the watch benchmark, and `--verify`'s lookups of acknowledged puts. The etcd client over both stacks and the KV
//! operations the engine drives are the etcd workload (`workload::etcd`), below both.
//!
//! It imports only from below (`workload`, `client`, `net`, `config`, `stats`, the wire crate):
//! never the engine, the report or the application, which drive it.

pub mod discover;
pub mod verify;
pub mod watch;
