//! `wirebench compare`: two or three stacks in alternating rounds, on etcd or an echo server.

use clap::Subcommand;

use super::Action;
use super::common::{RunArgs, Stacks};
use super::echo::EchoArgs;
use super::error::ArgError;
use super::etcd::{EtcdCmd, etcd_config};
use super::http::HttpArgs;
use crate::config::Target;
use crate::stack::Proto;

#[derive(Debug, Subcommand)]
pub enum CompareCmd {
    /// an etcd load: put, range, txn-put, txn-mixed or lease-keepalive
    Etcd {
        #[command(subcommand)]
        op: EtcdCmd,
    },
    /// a grpc-echo compatible server (the built-in one when no --target is given)
    Echo {
        #[command(flatten)]
        echo: EchoArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// any HTTP server, by URL: HTTP/1.1 and HTTP/2 unless --proto says otherwise
    Http {
        #[command(flatten)]
        http: HttpArgs,
        #[command(flatten)]
        run: RunArgs,
    },
}

impl CompareCmd {
    pub(super) fn into_action(self, rounds: usize) -> Result<Action, ArgError> {
        if rounds == 0 {
            return Err(ArgError::Zero { flag: "rounds" });
        }
        let (cfg, embedded) = match self {
            CompareCmd::Etcd { op } => (etcd_config(op)?, None),
            CompareCmd::Echo { echo, run } => {
                let (spec, endpoints, embedded) = echo.resolve()?;
                (run.into_config(spec, endpoints, Target::All)?, embedded)
            }
            CompareCmd::Http { http, mut run } => {
                let (spec, endpoints) = http.spec()?;
                run.proto
                    .get_or_insert(Stacks(vec![Proto::Http, Proto::H2]));
                (run.into_config(spec, endpoints, Target::All)?, None)
            }
        };
        if cfg.outputs.any() {
            return Err(ArgError::Conflict(
                "--metrics-addr, --log-requests, --html, --latency-svg, --timeline-svg and \
                 --curve-svg are for one run (echo, etcd, http, grpc), not compare's rounds",
            ));
        }
        if cfg.agent.is_some() {
            return Err(ArgError::Conflict(
                "--agent names one run's report for wirebench merge; compare runs rounds",
            ));
        }
        // --proto names the stacks (both by default): at least two, to compare
        if cfg.protos.len() < 2 {
            return Err(ArgError::OneStack(cfg.protos[0].name()));
        }
        Ok(Action::Compare {
            cfg,
            embedded,
            rounds,
        })
    }
}
