//! `wirebench call`: one request; prints the response as JSON, or the failure as one line.

use super::run::run;
use super::{Prepared, RunError, exit};
use crate::config::Config;

/// Sends the one request and prints its answer.
pub(super) fn call(cfg: &Config, prepared: &Prepared) -> Result<i32, RunError> {
    let (_, runs) = run(cfg, prepared)?;
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
