//! Command line: the clap grammar, one file per command, validated into `config` types (raw
//! flags never travel past here; nothing here knows how a command runs).

mod call;
mod capacity;
mod common;
mod compare;
mod completions;
mod echo;
mod error;
mod etcd;
mod grpc;
mod heading;
mod http;
mod limits;
mod link;
mod load;
mod man;
mod merge;
mod outputs;
mod serve;
mod sweep;
mod sweep_payload;
mod targets;
mod watch;

use clap::{CommandFactory, Parser, Subcommand};

use crate::app::{self, Action};
use crate::config::Config;

pub use call::{CallArgs, CallCmd, CallEtcd};
pub use common::TableArg;
pub use common::{
    CallProto, Consistency, FormatArg, LimitArgs, OnOff, PASSWORD_ENV, ProtoArg, RunArgs, TlsArgs,
};
pub use compare::CompareCmd;
pub use completions::CompletionsArgs;
pub use echo::EchoArgs;
pub use error::ArgError;
pub use etcd::EtcdCmd;
pub use grpc::GrpcArgs;
pub use http::HttpArgs;
pub use man::ManArgs;
pub use merge::MergeArgs;
pub use serve::ServeArgs;
pub use sweep::{SweepArgs, SweepCmd, SweepEtcd};
pub use watch::WatchArgs;

#[derive(Debug, Parser)]
#[command(
    name = "wirebench",
    version,
    about = "Measure what a protocol really costs: the same operation over HTTP/1.1 and gRPC, \
             with latency, throughput, bytes, packets, syscalls and CPU per request."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Benchmark etcd v3: the gRPC API and its HTTP/1.1 JSON gateway
    Etcd {
        #[command(subcommand)]
        op: EtcdCmd,
    },
    /// Benchmark a grpc-echo compatible server (the built-in one when no --target is given)
    Echo {
        #[command(flatten)]
        echo: EchoArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Benchmark any unary gRPC method: the request as JSON through a .proto file, or as bytes
    Grpc {
        #[command(flatten)]
        grpc: GrpcArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Benchmark any HTTP server: one URL over HTTP/1.1 (method, headers, bodies)
    Http {
        #[command(flatten)]
        http: HttpArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Serve grpc-echo's EchoService over h2, and POST /v1/echo over HTTP/1.1, HTTP/2 and HTTP/3, on one port
    Serve(ServeArgs),
    /// Send one request and print the response as JSON (grpcurl style)
    Call {
        #[command(subcommand)]
        what: CallCmd,
    },
    /// Run the product of clients × key sizes × targets × protocols against etcd and print a
    /// table (etcd's benchmark columns plus p99, bytes, packets and CPU per op), or payload
    /// sizes against an echo server, a URL or a gRPC method
    Sweep {
        #[command(subcommand)]
        what: SweepCmd,
    },
    /// Merge the JSON reports of agents that ran one workload together (--agent, --start-at)
    /// into one: counts summed, percentiles from the merged histograms, a row per agent
    Merge(MergeArgs),
    /// Run both protocols in alternating rounds (HTTP/1.1, gRPC, HTTP/1.1, ...): medians,
    /// ratios and findings
    Compare {
        /// Rounds per protocol
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        #[command(subcommand)]
        what: CompareCmd,
    },
    /// Run any program (curl, h2load, a peer) through an emulated network path, the host's
    /// address in $WIREBENCH_LINK_HOST; the link's account goes to stderr
    Link(link::LinkArgs),
    /// Print a completion script for a shell (bash, zsh, fish, elvish, powershell)
    Completions(CompletionsArgs),
    /// Print the man page, or write one page per command into a directory (--dir)
    Man(ManArgs),
}

/// The whole command line tool: parse, run, print, exit code.
pub fn main_with_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return app::exit::OK;
            }
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                let _ = e.print();
                return app::exit::USAGE;
            }
            // clap spreads one error over several lines (what, usage, hint): keep the what.
            let text = e.render().to_string();
            let line = text
                .lines()
                .map(str::trim)
                .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
                .filter(|l| !l.is_empty() && !l.starts_with("tip:"))
                .collect::<Vec<_>>()
                .join(" ");
            eprintln!(
                "{}",
                if line.is_empty() {
                    "error: invalid arguments"
                } else {
                    &line
                }
            );
            return app::exit::USAGE;
        }
    };
    let action = match cli.into_action() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return app::exit::USAGE;
        }
    };
    app::execute(action)
}

impl Cli {
    /// Validates the flags into what to do; the error is one line for the user.
    pub fn into_action(self) -> Result<Action, ArgError> {
        match self.command {
            Command::Etcd { op } => op.into_action(),
            Command::Echo { echo, run } => echo.into_run(run),
            Command::Http { http, run } => http.into_run(run),
            Command::Grpc { grpc, run } => grpc.into_run(run),
            Command::Compare { rounds, what } => what.into_action(rounds),
            Command::Serve(args) => Ok(Action::Serve(args.into_run()?)),
            Command::Sweep { what } => what.into_action(),
            Command::Call { what } => what.into_action(),
            Command::Merge(args) => args.into_action(),
            Command::Link(args) => args.into_action(),
            Command::Completions(args) => Ok(args.into_action(Cli::command())),
            Command::Man(args) => Ok(args.into_action(Cli::command())),
        }
    }

    /// The run configuration of a load command (tests use this).
    pub fn into_config(self) -> Result<Config, ArgError> {
        match self.into_action()? {
            Action::Run { cfg, .. } | Action::Call { cfg, .. } | Action::Compare { cfg, .. } => {
                Ok(cfg)
            }
            Action::Serve(_)
            | Action::Link(_)
            | Action::Watch(_)
            | Action::Sweep(_)
            | Action::SweepPayload(_)
            | Action::Merge(_)
            | Action::ListGrpc { .. }
            | Action::Print(_)
            | Action::WriteFiles { .. } => Err(ArgError::NoLoad),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::Stop;
    use crate::stack::Proto;

    fn config(args: &[&str]) -> Result<Config, String> {
        let mut v = vec!["wirebench"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v)
            .map_err(|e| e.to_string())?
            .into_config()
            .map_err(|e| e.to_string())
    }

    #[test]
    fn proto_takes_a_comma_list_of_stacks() {
        let protos = |p: &str| config(&["echo", "--proto", p]).map(|c| c.protos);
        let both = Ok(vec![Proto::Http, Proto::Grpc]);
        assert_eq!(protos("http,grpc"), both);
        assert_eq!(protos("grpc, http"), both);
        assert_eq!(protos("both"), both);
        assert_eq!(protos("grpc"), Ok(vec![Proto::Grpc]));
        assert_eq!(protos("http,http"), Ok(vec![Proto::Http]));
        // three stacks, always run HTTP/1.1, HTTP/2, gRPC
        assert_eq!(
            protos("grpc,h2,http"),
            Ok(vec![Proto::Http, Proto::H2, Proto::Grpc])
        );
        assert_eq!(
            protos("h2,both"),
            Ok(vec![Proto::Http, Proto::H2, Proto::Grpc])
        );
        for (bad, words) in [
            ("h4", "choose a comma list of http, h2, grpc and h3"),
            ("echo.proto", "--proto-file"),
            ("http,", "choose"),
            ("", "choose"),
        ] {
            let e = protos(bad).unwrap_err();
            assert!(e.contains(words), "{bad:?}: {e}");
        }
        // the default depends on the command
        assert_eq!(
            config(&["echo"]).unwrap().protos,
            vec![Proto::Http, Proto::Grpc]
        );
        assert_eq!(
            config(&["http", "http://127.0.0.1:9/"]).unwrap().protos,
            vec![Proto::Http]
        );
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        // clap checks argument ids, conflicts and defaults here instead of at run time.
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn defaults_follow_etcd_benchmark() {
        let c = config(&["etcd", "put"]).unwrap();
        assert_eq!(c.load.clients, 1);
        assert_eq!(c.load.conns, 1);
        assert_eq!(c.load.stop, Stop::Total(10_000));
        assert_eq!(c.protos, vec![Proto::Http, Proto::Grpc]);
        assert_eq!(c.endpoints[0].authority, "127.0.0.1:2379");
    }

    #[test]
    fn rejects_bad_combinations() {
        assert!(config(&["etcd", "put", "-n", "0"]).is_err());
        assert!(config(&["etcd", "put", "-n", "5", "-z", "1s"]).is_err());
        assert!(config(&["etcd", "put", "-c", "2", "--conns", "3"]).is_err());
        assert!(config(&["etcd", "put", "-c", "2", "--conns", "3", "--proto", "http"]).is_ok());
        assert!(config(&["etcd", "put", "--key-size", "1", "--key-space-size", "100"]).is_err());
        assert!(config(&["etcd", "put", "--max-frame-size", "100"]).is_err());
        assert!(config(&["etcd", "put", "--endpoints", "https://x:1"]).is_err());
        assert!(config(&["etcd", "range", ""]).is_err());
        assert!(config(&["etcd", "put", "--timeout", "0s"]).is_err());
    }

    #[test]
    fn duration_mode() {
        let c = config(&["etcd", "range", "k", "-z", "2s", "--consistency", "s"]).unwrap();
        assert_eq!(c.load.stop, Stop::Duration(Duration::from_secs(2)));
    }
}
