//! HTTP/3 (`--proto h3`): quinn-proto's QUIC connection (sans-IO) under our own UDP IO, the
//! wire crate's HTTP/3 frames and QPACK above it. Plain requests only (POST /v1/echo, any URL):
//! gRPC has no HTTP/3 mapping.
//!
//! Its files, each importing only those before it: `request` (a request's slot and how its
//! response's frames are judged), `control` (the unidirectional streams: ours with SETTINGS,
//! the server's control and QPACK streams), `state` (what the driver and the callers share, and
//! the driver's handling of quinn's events), `conn` (the connection, its driver and the
//! callers' handle).

mod conn;
mod control;
mod request;
mod state;

pub use conn::{H3Handle, QuicWindows, connect};
