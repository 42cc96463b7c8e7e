//! The watchers of `wirebench etcd watch` and what they prove: gRPC bidi streams or HTTP/1.1
//! chunked streams, event latency from the send time stamped in each value, and a count of
//! missing, duplicated and unexpected events.
//!
//! The watchers own a thread (a current-thread runtime) and the put load another, so the put
//! side never delays event delivery. Both stamp times against one `Instant` (the run's epoch),
//! so "put sent -> event received" needs no clock sync. The application runs the phases
//! (`app::watch`): watchers created, puts, the drain; `report::watch` derives the figures.

mod config;
mod grpc;
mod http;
pub mod put;
mod run;
mod state;

pub use config::{STAMP_LEN, WatchConfig};
pub use put::{PutOutcome, put_load};
pub use run::Watchers;
pub use state::{Loss, WatchOutcome};
