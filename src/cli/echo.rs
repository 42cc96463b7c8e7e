//! `wirebench echo` (and the echo side of `call` and `compare`): a grpc-echo compatible server,
//! the built-in one unless `--target` names others.

use clap::Args;

use super::Action;
use super::common::{RunArgs, nonzero, parse_endpoints, parse_headers};
use crate::config::{Endpoint, Target, WorkloadSpec};
use crate::server::ServeConfig;

#[derive(Debug, Args)]
pub struct EchoArgs {
    /// Server to measure (http://host:port[,...]); default: start the built-in server
    #[arg(long, value_delimiter = ',')]
    pub target: Vec<String>,
    /// The ping string sent in every EchoRequest
    #[arg(long, default_value = "Hello, world!")]
    pub ping: String,
    /// Extra header / gRPC metadata, NAME:VALUE (repeatable)
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Threads of the built-in server (when no --target)
    #[arg(long, default_value_t = 1)]
    pub server_threads: usize,
}

impl EchoArgs {
    /// `wirebench echo`: a load run.
    pub(super) fn into_run(self, run: RunArgs) -> Result<Action, String> {
        let (spec, endpoints, embedded) = self.resolve()?;
        let cfg = run.into_config(spec, endpoints, Target::All)?;
        Ok(Action::Run { cfg, embedded })
    }

    /// The workload, the endpoints (empty when the built-in server is the target), and the
    /// built-in server's configuration when it is.
    pub(super) fn resolve(
        self,
    ) -> Result<(WorkloadSpec, Vec<Endpoint>, Option<ServeConfig>), String> {
        let headers = parse_headers(&self.headers)?;
        let spec = WorkloadSpec::Echo {
            ping: self.ping,
            headers,
        };
        if self.target.is_empty() {
            let serve = ServeConfig {
                addr: ([127, 0, 0, 1], 0).into(),
                threads: nonzero("server-threads", self.server_threads)?,
                max_conn_age: None,
                max_conn_idle: None,
                max_concurrent_streams: None,
                tls: None,
            };
            Ok((spec, Vec::new(), Some(serve)))
        } else {
            Ok((spec, parse_endpoints(&self.target)?, None))
        }
    }
}
