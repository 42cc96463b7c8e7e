//! `wirebench call`: one request, its response printed as JSON.

use std::time::Duration;

use clap::{Args, Subcommand};

use super::Action;
use super::common::{
    CallProto, Consistency, FormatArg, LimitArgs, RunArgs, Stacks, TlsArgs, parse_endpoints,
};
use super::echo::EchoArgs;
use super::error::ArgError;
use super::etcd::etcd_range;
use super::grpc::GrpcArgs;
use super::http::HttpArgs;
use crate::config::{Config, Endpoint, Target, WorkloadSpec, parse_duration};

#[derive(Debug, Subcommand)]
pub enum CallCmd {
    /// Call Echo on a grpc-echo compatible server
    Echo {
        #[command(flatten)]
        echo: EchoArgs,
        #[command(flatten)]
        call: CallArgs,
    },
    /// Call etcd
    Etcd {
        #[command(subcommand)]
        op: CallEtcd,
    },
    /// One request to any HTTP server; prints the body (JSON when it is)
    Http {
        #[command(flatten)]
        http: HttpArgs,
        #[command(flatten)]
        call: CallArgs,
    },
    /// One call of any unary gRPC method; prints the response as JSON through the schema
    Grpc {
        #[command(flatten)]
        grpc: GrpcArgs,
        /// List the services and methods the server's reflection names instead (no METHOD)
        #[arg(long)]
        list: bool,
        #[command(flatten)]
        call: CallArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum CallEtcd {
    /// Read one key
    Range {
        #[arg(value_name = "KEY")]
        range_key: String,
        #[arg(long, value_delimiter = ',', default_value = "http://127.0.0.1:2379")]
        endpoints: Vec<String>,
        #[arg(long, value_enum, default_value_t = Consistency::L)]
        consistency: Consistency,
        #[command(flatten)]
        call: CallArgs,
    },
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// Which stack carries the call: http, h2 (plain HTTP/2; `call http` and `call echo`) or
    /// grpc [default: grpc; http for `call http`]
    #[arg(long, value_enum)]
    pub proto: Option<CallProto>,
    /// Timeout for the call
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub timeout: Duration,
    #[command(flatten)]
    pub tls: TlsArgs,
}

impl CallCmd {
    pub(super) fn into_action(self) -> Result<Action, ArgError> {
        match self {
            CallCmd::Echo { echo, call } => {
                let (spec, endpoints, embedded) = echo.resolve()?;
                Ok(Action::Call {
                    cfg: call.into_config(spec, endpoints)?,
                    embedded,
                })
            }
            CallCmd::Http { http, call } => {
                let (spec, endpoints) = http.spec()?;
                Ok(Action::Call {
                    cfg: call.into_config(spec, endpoints)?,
                    embedded: None,
                })
            }
            CallCmd::Grpc {
                grpc,
                list: true,
                call,
            } => {
                let (spec, endpoints) = grpc.listing()?;
                Ok(Action::ListGrpc {
                    cfg: call.into_config(spec, endpoints)?,
                })
            }
            CallCmd::Grpc { grpc, call, .. } => {
                let (spec, endpoints) = grpc.spec()?;
                Ok(Action::Call {
                    cfg: call.into_config(spec, endpoints)?,
                    embedded: None,
                })
            }
            CallCmd::Etcd {
                op:
                    CallEtcd::Range {
                        range_key,
                        endpoints,
                        consistency,
                        call,
                    },
            } => {
                let op = etcd_range(range_key, consistency, Default::default())?;
                Ok(Action::Call {
                    cfg: call.into_config(WorkloadSpec::Etcd(op), parse_endpoints(&endpoints)?)?,
                    embedded: None,
                })
            }
        }
    }
}

impl CallArgs {
    /// One client, one request, to the first endpoint (no `--target` discovery).
    fn into_config(self, spec: WorkloadSpec, endpoints: Vec<Endpoint>) -> Result<Config, ArgError> {
        if self.timeout.is_zero() {
            return Err(ArgError::NotPositive { flag: "timeout" });
        }
        let default = match spec {
            WorkloadSpec::Http(_) => CallProto::Http,
            _ => CallProto::Grpc,
        };
        let proto = Stacks(vec![self.proto.unwrap_or(default).proto()]);
        let run = RunArgs {
            limits: LimitArgs {
                total: Some(1),
                timeout: self.timeout,
                connect_timeout: self.timeout,
                threads: Some(1),
                ..LimitArgs::default()
            },
            format: FormatArg::Json,
            seed: Some(0),
            ..RunArgs::plain(proto, 1, self.tls)
        };
        run.into_config(spec, endpoints, Target::First)
    }
}
