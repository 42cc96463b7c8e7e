//! The application: parse, prepare, run the command, print, exit code; one file per command.

pub mod call;
pub mod compare;
pub mod prepare;
pub mod run;
pub mod serve;
pub mod sweep;
pub mod watch;

use std::io::Write;
use std::sync::Arc;

use clap::Parser;

use crate::cli::{Action, Cli};
use crate::engine;

pub use prepare::{Prepared, prepare};

/// Exit codes (documented in README.md).
pub mod exit {
    /// The run completed and at least one request succeeded per protocol.
    pub const OK: i32 = 0;
    /// The run could not start or nothing succeeded (unreachable server, every request failed).
    pub const FAILURE: i32 = 1;
    /// Invalid flags.
    pub const USAGE: i32 = 2;
}

/// Why a run produced no usable report.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Setup(String),
    #[error("cannot write the report to {path}: {source}")]
    Output {
        path: String,
        source: std::io::Error,
    },
}

/// The whole command line tool: parse, run, print, exit code.
pub fn main_with_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return exit::OK;
            }
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                let _ = e.print();
                return exit::USAGE;
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
            return exit::USAGE;
        }
    };
    let action = match cli.into_action() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    install_sigint();
    let result = match action {
        Action::Serve(cfg) => serve::serve(cfg),
        Action::Watch(cfg) => watch::watch_and_write(&cfg),
        Action::Sweep(s) => sweep::sweep_and_write(&s),
        Action::Run { cfg, embedded } => {
            prepare(&cfg, embedded).and_then(|p| run::run_and_write(&cfg, &p))
        }
        Action::Call { cfg, embedded } => {
            prepare(&cfg, embedded).and_then(|p| call::call(&cfg, &p))
        }
        Action::Compare {
            cfg,
            embedded,
            rounds,
        } => prepare(&cfg, embedded).and_then(|p| compare::compare(&cfg, &p, rounds)),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            exit::FAILURE
        }
    }
}

/// Writes `text` to the output file, or stdout.
fn emit(output: Option<&std::path::Path>, text: &str) -> Result<(), RunError> {
    match output {
        Some(path) => std::fs::write(path, text).map_err(|source| RunError::Output {
            path: path.display().to_string(),
            source,
        }),
        None => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
            Ok(())
        }
    }
}

/// First Ctrl-C: stop sending and report what was measured. Second: exit at once.
fn install_sigint() {
    let flag = Arc::clone(&engine::INTERRUPTED);
    let _ = signal_hook::flag::register_conditional_shutdown(
        signal_hook::consts::SIGINT,
        130,
        flag.clone(),
    );
    let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, flag);
}
