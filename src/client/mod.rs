//! Connections that carry one request at a time per caller: HTTP/1.1 keepalive and gRPC on h2.

pub mod grpc;
pub mod http1;

use std::io;

use crate::stats::Failure;

/// A failure kind for an IO error, with the OS's words as detail.
pub fn io_failure(e: &io::Error) -> Failure {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => Failure::with("closed", "connection closed mid-response"),
        io::ErrorKind::ConnectionReset => Failure::with("io", "connection reset by peer"),
        io::ErrorKind::BrokenPipe => Failure::with("io", "broken pipe"),
        _ => Failure::with("io", e),
    }
}
