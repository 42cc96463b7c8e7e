//! `wirebench serve`: the built-in echo server on its own.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::common::{OnOff, nonzero};
use super::error::ArgError;
use super::heading;
use crate::app::serve::ServeRun;
use crate::config::parse_duration;
use crate::server::ServeConfig;
use crate::server::faults::{Delay, Faults, parse_probability, parse_response_size};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: String,
    /// Also listen on this Unix domain socket (HTTP/1.1, h2, gRPC), for `unix:///PATH` targets;
    /// a stale socket file there is replaced, and the file removed at the end
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    /// Threads, each accepting on its own SO_REUSEPORT listener (default: cores)
    #[arg(long)]
    pub threads: Option<usize>,
    /// Close connections at this age, ±10% (GOAWAY on h2, Connection: close on HTTP/1.1)
    #[arg(long, value_parser = parse_duration, help_heading = heading::CONNECTIONS)]
    pub max_conn_age: Option<Duration>,
    /// Close connections idle for this long
    #[arg(long, value_parser = parse_duration, help_heading = heading::CONNECTIONS)]
    pub max_conn_idle: Option<Duration>,
    /// UDP segmentation offload (GSO) for HTTP/3's sends: off, one datagram per send (what a
    /// loopback capture needs to see every datagram)
    #[arg(long, value_enum, default_value_t = OnOff::On, help_heading = heading::CONNECTIONS)]
    pub udp_offload: OnOff,
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced on h2 connections
    #[arg(long, help_heading = heading::HTTP2)]
    pub max_concurrent_streams: Option<u32>,
    /// Serve TLS with this certificate chain (PEM); with --tls-key
    #[arg(long, help_heading = heading::TLS)]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM)
    #[arg(long, help_heading = heading::TLS)]
    pub tls_key: Option<PathBuf>,
    /// Wait this long before answering each request: 5ms, uniform:1ms-9ms, exp:5ms (the mean);
    /// a request's `wirebench-delay` header or metadata overrides it
    #[arg(long, value_parser = Delay::parse, help_heading = heading::FAULTS)]
    pub delay: Option<Delay>,
    /// Answer this share of the requests with an error (HTTP 503, gRPC UNAVAILABLE, or the
    /// codes below): 10% or 0.1; `wirebench-fail` overrides it
    #[arg(long, value_parser = parse_probability, help_heading = heading::FAULTS)]
    pub fail: Option<f64>,
    /// The HTTP status of an injected failure (HTTP/1.1 and plain HTTP/2)
    #[arg(long, default_value_t = 503, help_heading = heading::FAULTS)]
    pub fail_http_status: u16,
    /// The gRPC status code of an injected failure (a number, 1 to 16)
    #[arg(long, default_value_t = 14, help_heading = heading::FAULTS)]
    pub fail_grpc_code: u32,
    /// Pad each echo reply to about this many bytes (an EchoResponse field, or a JSON member,
    /// that grpc-echo clients ignore); `wirebench-response-size` overrides it
    #[arg(long, value_parser = parse_response_size, help_heading = heading::FAULTS)]
    pub response_size: Option<usize>,
    /// Close the TCP connection after answering this share of the requests (every stack);
    /// `wirebench-close` overrides it
    #[arg(long, value_parser = parse_probability, help_heading = heading::FAULTS)]
    pub close: Option<f64>,
    /// h2 and HTTP/3: send GOAWAY after this many streams on a connection
    #[arg(long, help_heading = heading::FAULTS)]
    pub goaway_after: Option<u64>,
    /// Do not answer HTTP/3 (QUIC on UDP at the same port number)
    #[arg(long)]
    pub no_h3: bool,
    /// Write the certificate HTTP/3 presents, made at start when no --tls-cert is given, to this
    /// file in PEM (for a client's --cacert)
    #[arg(long, value_name = "FILE")]
    pub h3_cert_out: Option<PathBuf>,
}

impl ServeArgs {
    /// The server's configuration and where `serve` writes its HTTP/3 certificate.
    pub(super) fn into_run(self) -> Result<ServeRun, ArgError> {
        if self.h3_cert_out.is_some() {
            if self.no_h3 {
                return Err(ArgError::Conflict(
                    "--h3-cert-out and --no-h3: no HTTP/3, no certificate for it",
                ));
            }
            if self.tls_cert.is_some() {
                return Err(ArgError::Conflict(
                    "--h3-cert-out and --tls-cert: HTTP/3 presents --tls-cert's certificate",
                ));
            }
        }
        let h3_cert_out = self.h3_cert_out.clone();
        Ok(ServeRun {
            cfg: self.into_config()?,
            h3_cert_out,
        })
    }

    fn into_config(self) -> Result<ServeConfig, ArgError> {
        let addr = std::net::ToSocketAddrs::to_socket_addrs(&self.addr)
            .map_err(|source| ArgError::Addr {
                addr: self.addr.clone(),
                source,
            })?
            .next()
            .ok_or_else(|| ArgError::AddrNone(self.addr.clone()))?;
        let threads = match self.threads {
            Some(t) => nonzero("threads", t)?,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        for (flag, d) in [
            ("max-conn-age", self.max_conn_age),
            ("max-conn-idle", self.max_conn_idle),
        ] {
            if d.is_some_and(|d| d.is_zero()) {
                return Err(ArgError::NotPositive { flag });
            }
        }
        if self.max_concurrent_streams == Some(0) {
            return Err(ArgError::Zero {
                flag: "max-concurrent-streams",
            });
        }
        if !(400..=599).contains(&self.fail_http_status) {
            return Err(ArgError::FailHttpStatus(self.fail_http_status));
        }
        if !(1..=16).contains(&self.fail_grpc_code) {
            return Err(ArgError::FailGrpcCode(self.fail_grpc_code));
        }
        let fail_grpc_code = wirebench_wire::grpc::Code::from_u32(self.fail_grpc_code);
        if self.goaway_after == Some(0) {
            return Err(ArgError::Zero {
                flag: "goaway-after",
            });
        }
        Ok(ServeConfig {
            addr,
            threads,
            max_conn_age: self.max_conn_age,
            max_conn_idle: self.max_conn_idle,
            max_concurrent_streams: self.max_concurrent_streams,
            tls: match (&self.tls_cert, &self.tls_key) {
                (Some(c), Some(k)) => {
                    Some(crate::net::tls::server_config(c, k).map_err(|e| e.to_string())?)
                }
                (None, None) => None,
                _ => return Err(ArgError::Conflict("--tls-cert and --tls-key go together")),
            },
            faults: Faults {
                delay: self.delay,
                fail: self.fail.unwrap_or(0.0),
                fail_http_status: self.fail_http_status,
                fail_grpc_code,
                response_size: self.response_size,
                close: self.close.unwrap_or(0.0),
                goaway_after: self.goaway_after,
            },
            h3: !self.no_h3,
            udp_offload: self.udp_offload == OnOff::On,
            unix: self.unix,
        })
    }
}
