//! `wirebench compare`: both protocols in alternating rounds, on etcd or an echo server.

use clap::Subcommand;

use super::Action;
use super::common::RunArgs;
use super::echo::EchoArgs;
use super::etcd::{EtcdCmd, etcd_config};
use crate::config::{Proto, Target};

#[derive(Debug, Subcommand)]
pub enum CompareCmd {
    /// etcd put or range
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
}

impl CompareCmd {
    pub(super) fn into_action(self, rounds: usize) -> Result<Action, String> {
        if rounds == 0 {
            return Err("--rounds must be at least 1".into());
        }
        let (mut cfg, embedded) = match self {
            CompareCmd::Etcd { op } => (etcd_config(op)?, None),
            CompareCmd::Echo { echo, run } => {
                let (spec, endpoints, embedded) = echo.resolve()?;
                (run.into_config(spec, endpoints, Target::All)?, embedded)
            }
        };
        // both protocols, whatever --proto said
        cfg.protos = vec![Proto::Http, Proto::Grpc];
        Ok(Action::Compare {
            cfg,
            embedded,
            rounds,
        })
    }
}
