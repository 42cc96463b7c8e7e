//! # wirebench
//!
//! Runs the same logical operation over HTTP/1.1 and gRPC and reports what each costs:
//! latency, throughput, and at the socket bytes, syscalls, TCP segments and CPU per request.
//!
//! ## Layout
//! - `cli`: clap flags, validated into a `config::Config`; nothing else sees raw flags.
//! - `config`: the validated run configuration (endpoints, load, socket and h2 settings).
//! - `discover`: etcd leader discovery for `--target`: member status and list, pure selection.
//! - `wire`: pure codecs on `BytesMut` (HTTP/1.1 head/chunked, gRPC framing, gateway JSON).
//! - `net`: connect with socket options, `Metered` (socket bytes and syscalls), `Io` (plain or
//!   TLS, plaintext and layer accounting), TCP_INFO.
//! - `client`: one HTTP/1.1 keepalive connection; gRPC unary calls on raw h2.
//! - `workload`: what request N is for each protocol and how its response is judged.
//! - `engine`: thread-per-core closed-loop runner; per-thread stats merged at the end.
//! - `stats`: HDR latency histogram, outcomes, per-connection ledgers, process CPU, and
//!   per-thread kernel counts (syscalls, context switches, instructions, cycles).
//! - `report`: derived figures (one place), rendered as text or JSON; compare rounds; SVG charts.
//! - `server`: the built-in grpc-echo compatible server (h2 and HTTP/1.1 on one port, TLS).
//! - `watch`: the etcd watch benchmark (watch thread, put thread, zero-loss accounting).
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
pub mod discover;
pub mod engine;
pub mod net;
pub mod report;
pub mod server;
pub mod stats;
pub mod sweep;
pub mod watch;
pub mod workload;

/// The protobuf messages, generated in the wire crate.
pub use wirebench_wire::proto;

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

/// Runs every configured protocol in turn; the report covers them all. `server` is the
/// in-process server when it is the target: its threads' CPU is reported as server CPU.
pub fn run(
    cfg: &Config,
    server: Option<&server::Server>,
) -> Result<(Report, Vec<ProtoRun>), RunError> {
    let mut runs = Vec::with_capacity(cfg.protos.len());
    let clock = server_clock(cfg)?;
    // Server CPU: the in-process server's thread clocks, or another process's CPU clock.
    let in_process = server.map(|s| move || Ok(s.cpu_time()));
    let by_pid = clock.map(|c| move || c.read());
    ensure_fds(cfg, server.is_some())?;
    for &proto in &cfg.protos {
        if engine::INTERRUPTED.load(Ordering::Relaxed) {
            break;
        }
        let cpu: Option<&dyn Fn() -> Result<std::time::Duration, String>> =
            match (&in_process, &by_pid) {
                (Some(f), _) => Some(f),
                (None, Some(f)) => Some(f),
                (None, None) => None,
            };
        runs.push(engine::run_proto(cfg, proto, cpu).map_err(RunError::Setup)?);
    }
    let report = Report::new(cfg, &runs, server.is_some());
    Ok((report, runs))
}

/// `--server-pid`'s CPU clock, or a one-line error when the process cannot be read.
pub(crate) fn server_clock(cfg: &Config) -> Result<Option<stats::ProcessClock>, RunError> {
    cfg.server_pid
        .map(stats::ProcessClock::open)
        .transpose()
        .map_err(RunError::Setup)
}

/// Raises the open-file limit for the connections a run opens (twice over when the built-in
/// server holds the other ends), or says in one line why it cannot.
pub(crate) fn ensure_fds(cfg: &Config, embedded: bool) -> Result<(), RunError> {
    /// descriptors beyond the connections: runtimes, timers, std streams, the server's listeners
    const SPARE: u64 = 256;
    let needed = cfg
        .protos
        .iter()
        .map(|p| {
            // gRPC keeps a duplicate of each socket for TCP_INFO at close
            let (conns, per_conn) = match p {
                config::Proto::Http => (cfg.load.clients, 1),
                config::Proto::Grpc => (cfg.load.conns.min(cfg.load.clients), 2),
            };
            conns as u64 * (per_conn + u64::from(embedded))
        })
        .max()
        .unwrap_or(0);
    net::raise_nofile(needed + SPARE)
        .map(|_| ())
        .map_err(RunError::Setup)
}

/// With `--user`: gets an etcd auth token before the run (over HTTP/1.1 through the gateway when
/// only HTTP/1.1 runs, over gRPC otherwise) and sends it with every request.
fn authenticate(cfg: &mut Config) -> Result<(), RunError> {
    let Some((user, password)) = cfg.auth.clone() else {
        return Ok(());
    };
    let ep = cfg.endpoints[0].clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Setup(format!("cannot start a runtime: {e}")))?;
    let local = tokio::task::LocalSet::new();
    let over_http = cfg.protos == [config::Proto::Http];
    let token = local.block_on(&rt, async {
        let connect_err = |e: std::io::Error| format!("connect to {}: {e}", ep.addr);
        if over_http {
            let mut conn = client::http1::Conn::connect(
                ep.addr,
                &ep.host,
                0,
                &cfg.net,
                1 << 20,
                net::Layers::Off,
            )
            .await
            .map_err(connect_err)?;
            workload::etcd::authenticate_http(&mut conn, &ep.authority, &user, &password)
                .await
                .map_err(|f| f.to_string())
        } else {
            let conn = client::grpc::Conn::connect(ep.addr, &ep.host, 0, &cfg.net, &cfg.h2)
                .await
                .map_err(connect_err)?;
            let mut send = conn.handle();
            let t = workload::etcd::authenticate_grpc(
                &mut send,
                conn.ledger(),
                &ep.authority,
                &user,
                &password,
            )
            .await
            .map_err(|f| f.to_string());
            drop(send);
            conn.close(std::time::Duration::from_secs(1)).await;
            t
        }
    });
    let token = token.map_err(|e| RunError::Setup(format!("authenticate as {user}: {e}")))?;
    cfg.set_token(token).map_err(RunError::Setup)
}

/// Resolves `--target` into the endpoints the run uses and labels them leader / follower. With
/// `all` and several endpoints the labels are a bonus: a discovery failure leaves them out.
pub fn apply_target(cfg: &mut Config) -> Result<(), RunError> {
    use discover::Target;
    let target = cfg.target;
    if !matches!(cfg.spec, config::WorkloadSpec::Etcd(_)) {
        return Ok(());
    }
    if target == Target::First {
        let first = vec![cfg.endpoints[0].clone()];
        return cfg.set_endpoints(first).map_err(RunError::Setup);
    }
    if target == Target::All && cfg.endpoints.len() < 2 {
        return Ok(());
    }
    let over_grpc = cfg.protos.contains(&config::Proto::Grpc);
    let view = match discover::discover(
        &cfg.endpoints,
        over_grpc,
        &cfg.net,
        &cfg.h2,
        cfg.token.as_deref(),
    ) {
        Ok(v) => v,
        Err(_) if target == Target::All => return Ok(()),
        Err(e) => return Err(RunError::Setup(format!("--target {}: {e}", target.name()))),
    };
    let chosen = match discover::resolve(&cfg.endpoints, target, &view) {
        Ok(c) => c,
        Err(_) if target == Target::All => return Ok(()),
        Err(e) => return Err(RunError::Setup(format!("--target {}: {e}", target.name()))),
    };
    let leader = view.statuses.first().map(|s| s.leader).unwrap_or_default();
    let roles = chosen
        .iter()
        .map(|ep| {
            let status = cfg
                .endpoints
                .iter()
                .position(|given| given.addr == ep.addr)
                .and_then(|i| view.statuses.iter().find(|s| s.endpoint == i));
            match status {
                Some(s) if s.member_id == leader => "leader",
                Some(_) => "follower",
                // not a given endpoint: the leader found in the member list
                None => "leader",
            }
            .to_string()
        })
        .collect();
    cfg.set_endpoints(chosen).map_err(RunError::Setup)?;
    cfg.roles = roles;
    Ok(())
}

/// Starts the built-in server and points `cfg` at it.
fn start_embedded(
    cfg: &mut Config,
    serve: server::ServeConfig,
) -> Result<server::Server, RunError> {
    let srv = server::Server::start(serve)
        .map_err(|e| RunError::Setup(format!("cannot start the built-in server: {e}")))?;
    let ep = config::Endpoint::parse(&format!("http://{}", srv.local_addr()))
        .map_err(RunError::Setup)?;
    cfg.set_endpoints(vec![ep]).map_err(RunError::Setup)?;
    Ok(srv)
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
        cli::Action::Serve(cfg) => serve(cfg),
        cli::Action::Watch(cfg) => watch_and_write(&cfg),
        cli::Action::Sweep(mut s) => authenticate(&mut s.base).and_then(|()| sweep_and_write(&s)),
        cli::Action::Run { mut cfg, embedded } => embedded
            .map(|s| start_embedded(&mut cfg, s))
            .transpose()
            .and_then(|srv| {
                authenticate(&mut cfg)?;
                if srv.is_none() {
                    apply_target(&mut cfg)?;
                }
                run_and_write(&cfg, srv.as_ref())
            }),
        cli::Action::Call { mut cfg, embedded } => embedded
            .map(|s| start_embedded(&mut cfg, s))
            .transpose()
            .and_then(|srv| call(&cfg, srv.as_ref())),
        cli::Action::Compare {
            mut cfg,
            embedded,
            rounds,
        } => embedded
            .map(|s| start_embedded(&mut cfg, s))
            .transpose()
            .and_then(|srv| {
                authenticate(&mut cfg)?;
                if srv.is_none() {
                    apply_target(&mut cfg)?;
                }
                compare(&cfg, srv.as_ref(), rounds)
            }),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            exit::FAILURE
        }
    }
}

fn watch_and_write(cfg: &watch::WatchConfig) -> Result<i32, RunError> {
    let runs = watch::run(cfg).map_err(RunError::Setup)?;
    let text = match cfg.format {
        Format::Text => watch::render_text(cfg, &runs),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&serde_json::json!({
                "schema": "wirebench.watch.v1",
                "runs": runs,
            }))
            .unwrap_or_default();
            s.push('\n');
            s
        }
    };
    emit(cfg.output.as_deref(), &text)?;
    // Failed or unsent puts alone do not fail the run (they are in the report, and the zero-loss
    // check covers only the puts etcd acknowledged); lost or doubled events do, and so does a run
    // in which no put was acknowledged at all (nothing was measured).
    let mut code = exit::OK;
    for r in &runs {
        if r.missing > 0 || r.duplicated > 0 {
            eprintln!(
                "error: watch over {}: {} events missing, {} duplicated",
                r.title, r.missing, r.duplicated
            );
            code = exit::FAILURE;
        } else if r.puts.ok == 0 {
            eprintln!(
                "error: watch over {}: no put was acknowledged ({} failed, {} not sent)",
                r.title, r.puts.failed, r.puts.not_sent
            );
            code = exit::FAILURE;
        }
    }
    Ok(code)
}

fn sweep_and_write(s: &sweep::SweepConfig) -> Result<i32, RunError> {
    let rows = sweep::run(s, |i, n, r| {
        eprintln!(
            "wirebench sweep: {i}/{n} key {} B, {} clients, {}, {}: {:.0} req/s, p90 {:.2} ms{}",
            r.key_size,
            r.clients,
            r.target,
            r.proto,
            r.qps,
            r.p90_ms,
            if r.failed > 0 {
                format!(", {} failed", r.failed)
            } else {
                String::new()
            }
        );
    })
    .map_err(RunError::Setup)?;
    emit(s.output.as_deref(), &sweep::render(s, &rows))?;
    let empty: Vec<_> = rows.iter().filter(|r| r.ok == 0).collect();
    if let Some(r) = empty.first() {
        eprintln!(
            "error: {} of {} rows had no successful request (first: key {} B, {} clients, {}, {})",
            empty.len(),
            rows.len(),
            r.key_size,
            r.clients,
            r.target,
            r.proto
        );
        return Ok(exit::FAILURE);
    }
    Ok(exit::OK)
}

fn serve(cfg: server::ServeConfig) -> Result<i32, RunError> {
    // as many connections as the hard limit allows: the soft one is often 1024
    let _ = net::raise_nofile(1024);
    let srv = server::Server::start(cfg.clone())
        .map_err(|e| RunError::Setup(format!("cannot listen on {}: {e}", cfg.addr)))?;
    eprintln!(
        "wirebench serve: listening on {} (gRPC grpc_echo.v1.EchoService/Echo and HTTP/1.1 POST /v1/echo), {} threads; Ctrl-C stops",
        srv.local_addr(),
        cfg.threads
    );
    srv.wait(&engine::INTERRUPTED);
    Ok(exit::OK)
}

/// One request; prints the response as JSON, or the failure as one line.
fn call(cfg: &Config, server: Option<&server::Server>) -> Result<i32, RunError> {
    let (_, runs) = run(cfg, server)?;
    let Some(r) = runs.first() else {
        return Ok(exit::FAILURE);
    };
    match &r.sample {
        Some(v) if r.stats.ok == 1 => {
            let text = serde_json::to_string_pretty(v).unwrap_or_default();
            println!("{text}");
            Ok(exit::OK)
        }
        _ => {
            let why = r
                .stats
                .errors
                .keys()
                .next()
                .map(|f| f.to_string())
                .unwrap_or_else(|| "no response".into());
            eprintln!("error: {} call failed: {why}", r.proto.title());
            Ok(exit::FAILURE)
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

fn write_svg(
    cfg: &Config,
    http: Option<report::compare::Figures>,
    grpc: Option<report::compare::Figures>,
) -> Result<(), RunError> {
    let Some(path) = &cfg.svg else { return Ok(()) };
    let blank = report::compare::Figures::default();
    let mut panels = report::compare::Figures::panels(
        http.as_ref().unwrap_or(&blank),
        grpc.as_ref().unwrap_or(&blank),
    );
    for p in &mut panels {
        if http.is_none() {
            p.http = None;
        }
        if grpc.is_none() {
            p.grpc = None;
        }
    }
    let svg = report::svg::render(&cfg.workload.describe(), &panels);
    std::fs::write(path, svg).map_err(|source| RunError::Output {
        path: path.display().to_string(),
        source,
    })
}

fn compare(cfg: &Config, server: Option<&server::Server>, rounds: usize) -> Result<i32, RunError> {
    let mut reports = Vec::with_capacity(rounds);
    for round in 1..=rounds {
        if engine::INTERRUPTED.load(Ordering::Relaxed) {
            break;
        }
        eprintln!("wirebench compare: round {round} of {rounds}");
        reports.push(run(cfg, server)?.0);
    }
    let cmp = report::compare::CompareReport::new(
        cfg.workload.describe(),
        &reports,
        cfg.spec.server_name(),
    );
    let text = match cfg.format {
        Format::Text => cmp.to_text(),
        Format::Json => cmp.to_json(),
    };
    emit(cfg.output.as_deref(), &text)?;
    write_svg(cfg, Some(cmp.median_http), Some(cmp.median_grpc))?;
    // As for a run: a side with no successful request in a round is a failed comparison.
    let mut code = exit::OK;
    for (i, rep) in reports.iter().enumerate() {
        for r in rep.runs.iter().filter(|r| r.summary.ok == 0) {
            eprintln!(
                "error: round {}: no {} request succeeded ({})",
                i + 1,
                r.title,
                first_error(r)
            );
            code = exit::FAILURE;
        }
    }
    Ok(code)
}

/// The most frequent failure of a run, or the last connect error, for a one-line message.
fn first_error(r: &report::RunReport) -> String {
    r.error_distribution
        .first()
        .map(|e| match &e.message {
            Some(m) => format!("{}: {m}", e.kind),
            None => e.kind.to_string(),
        })
        .or_else(|| r.wire.connect_error.clone())
        .unwrap_or_else(|| "no request was sent".into())
}

fn run_and_write(cfg: &Config, server: Option<&server::Server>) -> Result<i32, RunError> {
    let (report, _) = run(cfg, server)?;
    let text = match cfg.format {
        Format::Text => report::text::render(&report),
        Format::Json => report.to_json(),
    };
    emit(cfg.output.as_deref(), &text)?;
    let fig = |p: &str| {
        report
            .runs
            .iter()
            .find(|r| r.proto == p)
            .map(report::compare::Figures::of)
    };
    write_svg(cfg, fig("http"), fig("grpc"))?;
    let mut code = exit::OK;
    for r in report.runs.iter().filter(|r| r.summary.ok == 0) {
        eprintln!(
            "error: no {} request succeeded ({})",
            r.title,
            first_error(r)
        );
        code = exit::FAILURE;
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
