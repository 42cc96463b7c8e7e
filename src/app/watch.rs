//! `wirebench etcd watch`: per watch protocol, the watchers (`etcd::watch`) and the put load
//! (the engine's run of `workload::etcd::WatchPuts`) run in their phases; the report
//! (`report::watch`) is written, the exit code says whether events were lost.

use std::sync::Arc;
use std::time::Duration;

use super::{RunError, emit, exit};
use crate::config::{Config, EtcdOp, Format, Load, Proto, Stop, Target, WorkloadSpec};
use crate::engine;
use crate::etcd::watch::{Loss, WatchConfig, Watchers};
use crate::report::watch::{self as report, PutOutcome, WatchReport};
use crate::workload::Workload;
use crate::workload::etcd::WatchPuts;
use crate::workload::etcd::client::MAX_RESPONSE;

/// Runs, writes the report; fails on lost or doubled events, or when no put was acknowledged.
pub(super) fn watch_and_write(cfg: &WatchConfig) -> Result<i32, RunError> {
    let runs = run(cfg).map_err(RunError::Setup)?;
    let text = match cfg.format {
        Format::Text => report::render_text(cfg, &runs),
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

/// Runs the configured watch protocols one after the other.
pub fn run(cfg: &WatchConfig) -> Result<Vec<WatchReport>, String> {
    let cfg = Arc::new(cfg.clone());
    cfg.protos.iter().map(|&p| run_one(&cfg, p)).collect()
}

/// One watch run: every watch created first, then the put load while the watchers receive,
/// then the drain for the revisions of the acknowledged puts.
fn run_one(cfg: &Arc<WatchConfig>, proto: Proto) -> Result<WatchReport, String> {
    let watchers = Watchers::start(cfg, proto)?;
    let puts = match put_load(cfg) {
        Ok(p) => p,
        Err(e) => {
            let _ = watchers.finish(Arc::default());
            return Err(e);
        }
    };
    // Every watcher should see every acknowledged put to the keys it watches.
    let expected = Arc::new(cfg.expected(&puts.revisions));
    let expected_events: u64 = expected.iter().map(|v| v.len() as u64).sum();
    let w = watchers.finish(expected.clone())?;
    let loss = Loss::count(&expected, &w.seen);
    Ok(WatchReport::new(
        cfg,
        proto,
        w,
        &puts,
        expected_events,
        loss,
    ))
}

/// Runs the put load of `cfg` through the engine (alone, when no watchers run): `--put-total`
/// stamped puts over `--put-proto` to the first endpoint. Every put ends counted in exactly one
/// of `ok`, `failed` and `not_sent`; an error is a setup error (a connection, the request).
pub fn put_load(cfg: &WatchConfig) -> Result<PutOutcome, String> {
    let workload = Workload::WatchPuts(Box::new(WatchPuts::new(cfg)?));
    let endpoints = &cfg.endpoints[..1];
    let run = engine::run_proto(
        &put_config(cfg),
        &workload,
        endpoints,
        cfg.put_proto,
        None,
        None,
    )?;
    PutOutcome::from_run(cfg, run)
}

/// The engine's configuration of the put load: `--put-clients` as -c on one thread (gRPC: one
/// connection they share), `--put-total` as -n, `--put-rate` as --rate, `--put-timeout` as the
/// per-request timeout; no warmup.
fn put_config(cfg: &WatchConfig) -> Config {
    Config {
        endpoints: cfg.endpoints[..1].to_vec(),
        protos: vec![cfg.put_proto],
        load: Load {
            clients: cfg.put_clients,
            conns: 1,
            pipeline: 1,
            requests_per_conn: None,
            threads: 1,
            stop: Stop::Total(cfg.put_total),
            warmup: Duration::ZERO,
            start_at: None,
            timeout: cfg.put_timeout,
            rate: cfg.put_rate,
            connect_rate: None,
            stages: None,
            interval: None,
        },
        net: cfg.net.clone(),
        h2: cfg.h2,
        max_body: MAX_RESPONSE as u64,
        // what runs is the workload handed to the engine; the spec only describes it
        spec: WorkloadSpec::Etcd(EtcdOp::Put {
            key_size: 0,
            val_size: cfg.val_size,
            key_space_size: cfg.watched_keys as u64,
            sequential_keys: true,
        }),
        seed: 0,
        agent: None,
        format: cfg.format,
        output: None,
        server_pid: None,
        per_conn: false,
        svg: None,
        thresholds: Vec::new(),
        auth: None,
        target: Target::First,
        verify: false,
    }
}
