//! Connections that carry one request at a time per caller: HTTP/1.1 keepalive, gRPC and
//! plain HTTP/2 on h2 (`grpc`, on either h2 client), and plain requests on HTTP/3 (`h3`).
//! `call` is what a request on a multiplexed connection sends and how it ends, on either.

pub mod call;
pub mod grpc;
pub mod h3;
pub mod http1;
pub mod stream;

use std::future::Future;
use std::io;
use std::time::Duration;

use crate::outcome::{Failure, FailureKind};

/// First reconnect delay after a failed connect; doubles up to `BACKOFF_MAX` (the engine's
/// clients pace their reconnects with these).
pub const BACKOFF_MIN: Duration = Duration::from_millis(10);
pub const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// A failure kind for an IO error, with the OS's words as detail.
pub fn io_failure(e: &io::Error) -> Failure {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => {
            Failure::with(FailureKind::Closed, "connection closed mid-response")
        }
        io::ErrorKind::ConnectionReset => {
            Failure::with(FailureKind::Io, "connection reset by peer")
        }
        io::ErrorKind::BrokenPipe => Failure::with(FailureKind::Io, "broken pipe"),
        _ => Failure::with(FailureKind::Io, e),
    }
}

/// The runtime `block_on` needs could not be started.
#[derive(Debug, thiserror::Error)]
#[error("cannot start a runtime: {0}")]
pub struct RuntimeError(#[from] io::Error);

/// Runs `fut` to completion on a fresh current-thread runtime with a `LocalSet` (the h2 drivers
/// are local tasks): the one-off calls before a run (etcd's authenticate, status, member list,
/// put), the watch benchmark's own threads.
pub fn block_on<F: Future>(fut: F) -> Result<F::Output, RuntimeError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(tokio::task::LocalSet::new().block_on(&rt, fut))
}
