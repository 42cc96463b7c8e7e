//! `wirebench serve`: the built-in echo server on its own.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::common::nonzero;
use crate::config::parse_duration;
use crate::server::ServeConfig;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: String,
    /// Threads, each accepting on its own SO_REUSEPORT listener (default: cores)
    #[arg(long)]
    pub threads: Option<usize>,
    /// Close connections at this age, ±10% (GOAWAY on h2, Connection: close on HTTP/1.1)
    #[arg(long, value_parser = parse_duration)]
    pub max_conn_age: Option<Duration>,
    /// Close connections idle for this long
    #[arg(long, value_parser = parse_duration)]
    pub max_conn_idle: Option<Duration>,
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced on h2 connections
    #[arg(long)]
    pub max_concurrent_streams: Option<u32>,
    /// Serve TLS with this certificate chain (PEM); with --tls-key
    #[arg(long)]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM)
    #[arg(long)]
    pub tls_key: Option<PathBuf>,
}

impl ServeArgs {
    pub(super) fn into_config(self) -> Result<ServeConfig, String> {
        let addr = std::net::ToSocketAddrs::to_socket_addrs(&self.addr)
            .map_err(|e| format!("--addr {}: {e}", self.addr))?
            .next()
            .ok_or_else(|| format!("--addr {}: no address", self.addr))?;
        let threads = match self.threads {
            Some(t) => nonzero("threads", t)?,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        for (name, d) in [
            ("max-conn-age", self.max_conn_age),
            ("max-conn-idle", self.max_conn_idle),
        ] {
            if d.is_some_and(|d| d.is_zero()) {
                return Err(format!("--{name} must be positive"));
            }
        }
        if self.max_concurrent_streams == Some(0) {
            return Err("--max-concurrent-streams must be at least 1".into());
        }
        Ok(ServeConfig {
            addr,
            threads,
            max_conn_age: self.max_conn_age,
            max_conn_idle: self.max_conn_idle,
            max_concurrent_streams: self.max_concurrent_streams,
            tls: match (&self.tls_cert, &self.tls_key) {
                (Some(c), Some(k)) => Some(crate::net::tls::server_config(c, k)?),
                (None, None) => None,
                _ => return Err("--tls-cert and --tls-key go together".into()),
            },
        })
    }
}
