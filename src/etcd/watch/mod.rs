//! The watchers of `wirebench etcd watch` and what they prove: gRPC bidi streams or HTTP/1.1
//! chunked streams, event latency from the send time stamped in each value, and a count of
//! missing, duplicated and unexpected events.
//!
//! The watchers own a thread (a current-thread runtime) and the put load (the engine's run of
//! `workload::etcd::WatchPuts`) others, so the put side never delays event delivery. Both read one
//! process-wide `Instant` (the epoch), so "put sent -> event received" needs no clock sync. The
//! application runs the phases (`app::watch`): watchers created, puts, the drain;
//! `report::watch` derives the figures.

mod config;
mod grpc;
mod http;
mod run;
mod state;

pub use crate::stats::{Loss, WatchOutcome};
pub use crate::workload::etcd::{STAMP_LEN, stamp};
pub use config::WatchConfig;
pub use run::Watchers;
