//! `wirebench etcd watch`: per watch protocol, the watchers (`etcd::watch`) and the put load run
//! in their phases; the report (`report::watch`) is written, the exit code says whether events
//! were lost.

use std::sync::Arc;
use std::time::Instant;

use super::{RunError, emit, exit};
use crate::config::{Format, Proto};
use crate::engine;
use crate::etcd::watch::{self, Loss, WatchConfig, Watchers};
use crate::report::watch::{self as report, WatchReport};

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
    let epoch = Instant::now();
    let watchers = Watchers::start(cfg, proto, epoch)?;
    let puts = match watch::put::run(cfg, epoch, engine::INTERRUPTED.clone()) {
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
        epoch,
    ))
}
