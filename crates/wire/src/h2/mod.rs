//! HTTP/2 (RFC 9113) protocol cores, sans-IO: the frame codec, HPACK (RFC 7541), and the
//! client side of a connection built on them, which counts the ledger's layers of its own
//! frames (`tally`).

pub mod client;
pub mod frame;
pub mod hpack;
pub mod tally;
