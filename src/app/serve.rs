//! `wirebench serve`: the built-in echo server until Ctrl-C.

use std::path::PathBuf;

use super::{RunError, exit};
use crate::engine;
use crate::net;
use crate::server::{ServeConfig, Server};

/// What `wirebench serve` runs: the server, and where it writes HTTP/3's certificate.
#[derive(Debug)]
pub struct ServeRun {
    pub cfg: ServeConfig,
    /// `--h3-cert-out`: the certificate made at start, in PEM
    pub h3_cert_out: Option<PathBuf>,
}

/// Serves until interrupted.
pub(super) fn serve(run: ServeRun) -> Result<i32, RunError> {
    let cfg = run.cfg;
    // as many connections as the hard limit allows: the soft one is often 1024
    let _ = net::raise_nofile(1024);
    let srv = Server::start(cfg.clone())
        .map_err(|e| RunError::Setup(format!("cannot listen on {}: {e}", cfg.addr)))?;
    if let Some(path) = &run.h3_cert_out {
        // written before the "listening" line, so that whoever waits for it finds the file
        let pem = srv.h3_cert_pem().unwrap_or_default();
        std::fs::write(path, pem).map_err(|e| {
            RunError::Setup(format!(
                "--h3-cert-out: cannot write {}: {e}",
                path.display()
            ))
        })?;
    }
    let stacks = if srv.serves_h3() {
        "HTTP/1.1, HTTP/2 and HTTP/3"
    } else {
        "HTTP/1.1 and HTTP/2"
    };
    let unix = cfg
        .unix
        .as_ref()
        .map(|p| format!(" and unix:{}", p.display()))
        .unwrap_or_default();
    eprintln!(
        "wirebench serve: listening on {}{unix} (gRPC grpc_echo.v1.EchoService/Echo, and POST /v1/echo over {stacks}), {} threads; Ctrl-C stops",
        srv.local_addr(),
        cfg.threads
    );
    srv.wait(&engine::INTERRUPTED);
    Ok(exit::OK)
}
