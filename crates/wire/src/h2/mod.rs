//! HTTP/2 (RFC 9113) protocol cores, sans-IO: the frame codec, HPACK (RFC 7541), the client
//! side of a connection built on them, which counts the ledger's layers of its own frames
//! (`tally`), and the passive classifier that counts them in bytes it only sees (`sniff`).
//!
//! - `frame`: the frame codec and the one set of frame constants (preface, header length,
//!   types, flags, settings), `FrameType`.
//! - `hpack`: header compression (encoder, decoder, Huffman code, static and dynamic tables).
//! - `counts`: `H2Counts`, the ledger's h2 layer counts of one direction, whoever counts them.
//! - `grpc_framing`: one stream's gRPC message framing, followed across its DATA frames.
//! - `stream_id`: maps keyed by stream id.
//! - `sniff`: `H2Sniffer`, the passive classifier, one per direction.
//! - `tally`: the client connection's counts of its own frames, with the sniffer's rules.
//! - `client`: the client side of one connection.

pub mod client;
pub mod counts;
pub mod frame;
pub(crate) mod grpc_framing;
pub mod hpack;
pub mod sniff;
pub(crate) mod stream_id;
pub mod tally;
