//! The application: prepare, run the command the command line asked for (`Action`), print,
//! exit code; one file per command.

pub mod call;
mod capacity;
pub mod compare;
pub mod link;
pub mod merge;
pub mod metrics;
pub mod outputs;
pub mod prepare;
pub mod serve;
pub mod stacks;
pub mod sweep;
pub mod sweep_payload;
pub mod watch;

use std::io::Write;
use std::sync::Arc;

use crate::config::{Config, SweepConfig, WatchConfig};
use crate::engine;
use crate::server::ServeConfig;

pub use link::LinkRun;
pub use prepare::{Prepared, prepare};

/// What the command line asks for, validated.
#[derive(Debug)]
pub enum Action {
    /// A program run through an emulated path.
    Link(LinkRun),
    /// A load run; with `embedded`, the built-in server is started first and becomes the target.
    Run {
        cfg: Config,
        embedded: Option<ServeConfig>,
    },
    /// One request, response printed as JSON.
    Call {
        cfg: Config,
        embedded: Option<ServeConfig>,
    },
    /// The methods a gRPC server's reflection names, one per line (`call grpc --list`): the
    /// first endpoint of `cfg`, with its metadata, authority, connection settings and timeout.
    ListGrpc {
        cfg: Config,
    },
    Serve(serve::ServeRun),
    /// An etcd watch run.
    Watch(WatchConfig),
    /// A sweep: one run per cell, one table.
    Sweep(SweepConfig),
    /// A payload sweep (echo, a URL, a gRPC method) over payload sizes and stacks.
    SweepPayload(sweep_payload::PayloadSweep),
    /// Agents' reports of one workload merged into one.
    Merge(merge::Merge),
    /// Alternating rounds of both protocols.
    Compare {
        cfg: Config,
        embedded: Option<ServeConfig>,
        rounds: usize,
    },
    /// Text printed on stdout as it is (a completion script, a man page).
    Print(String),
    /// Files (name, contents) written into `dir`, created if need be, each path printed (the
    /// man pages).
    WriteFiles {
        dir: std::path::PathBuf,
        files: Vec<(String, String)>,
    },
}

/// Exit codes (documented in docs/exit-codes.md).
pub mod exit {
    /// The run completed and at least one request succeeded per protocol.
    pub const OK: i32 = 0;
    /// The run could not start or nothing succeeded (unreachable server, every request failed).
    pub const FAILURE: i32 = 1;
    /// Invalid flags.
    pub const USAGE: i32 = 2;
    /// The run completed but broke a `--fail-if` threshold.
    pub const THRESHOLD: i32 = 3;
    /// Ctrl-C (SIGINT) stopped the run: its report is printed, marked interrupted, unless no
    /// request had been sent (128 + SIGINT, as a shell reports it).
    pub const INTERRUPTED: i32 = 130;
}

/// Why a run produced no usable report.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Setup(String),
    /// what was asked for does not exist there (a method the server's schema lacks): exit 2
    #[error("{0}")]
    Usage(String),
    #[error("cannot write the report to {path}: {source}")]
    Output {
        path: String,
        source: std::io::Error,
    },
    /// a file `wirebench man --dir` writes (or its directory)
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    /// Ctrl-C came before the first request was sent: there is nothing to report
    #[error("interrupted before the first request: nothing to report")]
    Interrupted,
}

/// Whether Ctrl-C has stopped the run.
pub(crate) fn interrupted() -> bool {
    engine::INTERRUPTED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Runs what the command line asked for: prepare, run, print; the exit code.
pub fn execute(action: Action) -> i32 {
    install_sigint();
    // serving ends with Ctrl-C: that is its normal end
    let serving = matches!(action, Action::Serve(_));
    let result = match action {
        Action::Serve(cfg) => serve::serve(cfg),
        Action::Link(r) => link::run(&r),
        Action::Watch(cfg) => watch::watch_and_write(&cfg),
        Action::Sweep(s) => sweep::sweep_and_write(&s),
        Action::SweepPayload(s) => sweep_payload::sweep_payload_and_write(&s),
        Action::Run { cfg, embedded } => {
            prepare(&cfg, embedded).and_then(|p| match &cfg.capacity {
                Some(spec) => capacity::run_and_write(&cfg, &p, spec),
                None => stacks::run_and_write(&cfg, &p),
            })
        }
        Action::Call { cfg, embedded } => {
            prepare(&cfg, embedded).and_then(|p| call::call(&cfg, &p))
        }
        Action::ListGrpc { cfg } => call::list_grpc(&cfg),
        Action::Merge(m) => merge::merge_and_write(&m),
        Action::Compare {
            cfg,
            embedded,
            rounds,
        } => prepare(&cfg, embedded).and_then(|p| compare::compare(&cfg, &p, rounds)),
        Action::Print(text) => emit(None, &text).map(|()| exit::OK),
        Action::WriteFiles { dir, files } => write_files(&dir, &files),
    };
    let code = match result {
        Ok(code) => code,
        Err(RunError::Interrupted) => {
            eprintln!("wirebench: {}", RunError::Interrupted);
            exit::INTERRUPTED
        }
        Err(e) => {
            eprintln!("error: {e}");
            match e {
                RunError::Usage(_) => exit::USAGE,
                _ => exit::FAILURE,
            }
        }
    };
    // an interrupted run says so in its exit code, whatever else it found
    if interrupted() && !serving {
        exit::INTERRUPTED
    } else {
        code
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

/// Writes each (name, contents) into `dir`, creating it first, and prints each path.
fn write_files(dir: &std::path::Path, files: &[(String, String)]) -> Result<i32, RunError> {
    let failed = |path: &std::path::Path, source| RunError::Write {
        path: path.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(|e| failed(dir, e))?;
    let mut listing = String::new();
    for (name, contents) in files {
        let path = dir.join(name);
        std::fs::write(&path, contents).map_err(|e| failed(&path, e))?;
        listing.push_str(&format!("{}\n", path.display()));
    }
    emit(None, &listing).map(|()| exit::OK)
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
