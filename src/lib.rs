//! # wirebench
//!
//! Runs the same logical operation over HTTP/1.1 and gRPC and reports what each costs:
//! latency, throughput, and at the socket bytes, syscalls, TCP segments and CPU per request.
//!
//! ## Layout
//! - `cli`: clap flags, validated into a `config::Config`; nothing else sees raw flags.
//! - `config`: the validated run configuration (endpoints, load, socket and h2 settings).
//! - `wire`: pure codecs on `BytesMut` (HTTP/1.1 head/chunked, gRPC framing, gateway JSON).
//! - `net`: connect with socket options, `Metered` IO that counts bytes and syscalls, TCP_INFO.
//! - `client`: one HTTP/1.1 keepalive connection; gRPC unary calls on raw h2.
//! - `workload`: what request N is for each protocol and how its response is judged.
//! - `engine`: thread-per-core closed-loop runner; per-thread stats merged at the end.
//! - `stats`: HDR latency histogram, outcomes, per-connection ledgers, process CPU.
//! - `report`: derived figures (one place), rendered as text or JSON.
//!
//! ## Invariants
//! - `wire` never imports tokio and never reads the clock.
//! - Every length a peer controls is checked against a named limit before allocating for it.
//! - Timestamps are taken around the client call, never inside codecs.
//! - A worker thread owns its connections and stats; nothing is shared on the request path.
//! - One HTTP/1.1 request is one contiguous buffer, written with one write call.

pub mod cli;
pub mod client;
pub mod config;
pub mod engine;
pub mod net;
pub mod report;
pub mod stats;
pub mod wire;
pub mod workload;

/// Code generated from `proto/` by prost-build.
pub mod proto {
    #[allow(clippy::all, missing_docs)]
    pub mod etcd {
        include!(concat!(env!("OUT_DIR"), "/etcdserverpb.rs"));
    }
    #[allow(clippy::all, missing_docs)]
    pub mod echo {
        include!(concat!(env!("OUT_DIR"), "/grpc_echo.v1.rs"));
    }
}

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use clap::Parser;

use config::{Config, Format};
use engine::ProtoRun;
use report::Report;

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

/// Runs every configured protocol in turn; the report covers them all.
pub fn run(cfg: &Config) -> Result<(Report, Vec<ProtoRun>), RunError> {
    let mut runs = Vec::with_capacity(cfg.protos.len());
    for &proto in &cfg.protos {
        if engine::INTERRUPTED.load(Ordering::Relaxed) {
            break;
        }
        runs.push(engine::run_proto(cfg, proto).map_err(RunError::Setup)?);
    }
    let report = Report::new(cfg, &runs);
    Ok((report, runs))
}

/// The whole command line tool: parse, run, print, exit code.
pub fn main_with_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> i32 {
    let cli = match cli::Cli::try_parse_from(args) {
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
            let text = e.render().to_string();
            let line = text.lines().next().unwrap_or("error: invalid arguments");
            eprintln!("{line}");
            return exit::USAGE;
        }
    };
    let cfg = match cli.into_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::USAGE;
        }
    };
    install_sigint();
    match run_and_write(&cfg) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            exit::FAILURE
        }
    }
}

fn run_and_write(cfg: &Config) -> Result<i32, RunError> {
    let (report, runs) = run(cfg)?;
    let text = match cfg.format {
        Format::Text => report::text::render(&report),
        Format::Json => report.to_json(),
    };
    match &cfg.output {
        Some(path) => std::fs::write(path, text).map_err(|source| RunError::Output {
            path: path.display().to_string(),
            source,
        })?,
        None => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
    }
    let mut code = exit::OK;
    for r in &runs {
        if r.stats.ok == 0 && r.stats.count() > 0 {
            let first = r
                .stats
                .errors
                .iter()
                .max_by_key(|(_, n)| **n)
                .map(|(f, _)| f.to_string())
                .unwrap_or_default();
            eprintln!("error: no {} request succeeded ({first})", r.proto.title());
            code = exit::FAILURE;
        }
    }
    Ok(code)
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
