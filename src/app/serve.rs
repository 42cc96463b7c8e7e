//! `wirebench serve`: the built-in echo server until Ctrl-C.

use super::{RunError, exit};
use crate::engine;
use crate::net;
use crate::server::{ServeConfig, Server};

/// Serves until interrupted.
pub(super) fn serve(cfg: ServeConfig) -> Result<i32, RunError> {
    // as many connections as the hard limit allows: the soft one is often 1024
    let _ = net::raise_nofile(1024);
    let srv = Server::start(cfg.clone())
        .map_err(|e| RunError::Setup(format!("cannot listen on {}: {e}", cfg.addr)))?;
    eprintln!(
        "wirebench serve: listening on {} (gRPC grpc_echo.v1.EchoService/Echo, and POST /v1/echo over HTTP/1.1 and HTTP/2), {} threads; Ctrl-C stops",
        srv.local_addr(),
        cfg.threads
    );
    srv.wait(&engine::INTERRUPTED);
    Ok(exit::OK)
}
