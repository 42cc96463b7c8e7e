//! `wirebench echo` (and the echo side of `call` and `compare`): a grpc-echo compatible server,
//! the built-in one unless `--target` names others.

use clap::Args;

use super::Action;
use super::common::{RunArgs, nonzero, parse_endpoints, parse_headers};
use super::error::ArgError;
use super::heading;
use crate::config::{Endpoint, Target, WorkloadSpec};
use crate::server::ServeConfig;

#[derive(Debug, Args)]
pub struct EchoArgs {
    /// Server to measure (http://host:port[,...]); default: start the built-in server
    #[arg(long, value_delimiter = ',')]
    pub target: Vec<String>,
    /// The ping string sent in every EchoRequest [default: Hello, world!]
    #[arg(long, help_heading = heading::REQUEST)]
    pub ping: Option<String>,
    /// A ping of this many bytes instead (1k, 64k, 1M): the payload size
    #[arg(long, value_parser = crate::config::parse_size, help_heading = heading::REQUEST)]
    pub payload_size: Option<u64>,
    /// Ask the built-in server to pad each reply to about this many bytes (the
    /// wirebench-response-size header / metadata; other echo servers ignore it)
    #[arg(
        long,
        value_parser = crate::server::faults::parse_response_size,
        help_heading = heading::REQUEST
    )]
    pub response_size: Option<usize>,
    /// Extra header / gRPC metadata, NAME:VALUE (repeatable)
    #[arg(short = 'H', long = "header", help_heading = heading::REQUEST)]
    pub headers: Vec<String>,
    /// Threads of the built-in server (when no --target)
    #[arg(long, default_value_t = 1)]
    pub server_threads: usize,
}

impl EchoArgs {
    /// `wirebench echo`: a load run.
    pub(super) fn into_run(self, run: RunArgs) -> Result<Action, ArgError> {
        let (spec, endpoints, embedded) = self.resolve()?;
        // --udp-offload holds for the built-in server's sends too
        let offload = run.udp_offload == super::common::OnOff::On;
        let embedded = embedded.map(|s| ServeConfig {
            udp_offload: offload,
            ..s
        });
        let cfg = run.into_config(spec, endpoints, Target::All)?;
        Ok(Action::Run { cfg, embedded })
    }

    /// The workload, the endpoints (empty when the built-in server is the target), and the
    /// built-in server's configuration when it is.
    pub(super) fn resolve(
        self,
    ) -> Result<(WorkloadSpec, Vec<Endpoint>, Option<ServeConfig>), ArgError> {
        let mut headers = parse_headers(&self.headers)?;
        if let Some(n) = self.response_size {
            headers.push((
                crate::server::faults::RESPONSE_SIZE_HEADER.to_string(),
                n.to_string(),
            ));
        }
        let ping = match (self.ping, self.payload_size) {
            (Some(_), Some(_)) => {
                return Err(ArgError::Conflict(
                    "--ping and --payload-size: choose one (the ping is the payload)",
                ));
            }
            (_, Some(n)) if n > crate::server::MAX_REQUEST as u64 / 2 => {
                return Err(ArgError::PingTooLarge {
                    n,
                    max: crate::server::MAX_REQUEST / 2,
                    mib: crate::server::MAX_REQUEST >> 20,
                });
            }
            (_, Some(n)) => crate::workload::filler(n as usize),
            (Some(p), None) => p,
            (None, None) => "Hello, world!".to_string(),
        };
        let spec = WorkloadSpec::Echo { ping, headers };
        if self.target.is_empty() {
            let serve = ServeConfig {
                threads: nonzero("server-threads", self.server_threads)?,
                ..ServeConfig::loopback()
            };
            Ok((spec, Vec::new(), Some(serve)))
        } else {
            Ok((spec, parse_endpoints(&self.target)?, None))
        }
    }
}
