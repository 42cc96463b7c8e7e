//! `wirebench etcd watch`: runs the watch benchmark (`crate::watch`) and writes its report.

use super::{RunError, emit, exit};
use crate::config::Format;
use crate::watch::{self, WatchConfig};

/// Runs, writes the report; fails on lost or doubled events, or when no put was acknowledged.
pub(super) fn watch_and_write(cfg: &WatchConfig) -> Result<i32, RunError> {
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
