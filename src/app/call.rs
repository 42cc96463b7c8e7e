//! `wirebench call`: one request; prints the response as JSON, or the failure as one line.

use super::stacks::run;
use super::{Prepared, RunError, exit};
use crate::config::{Config, WorkloadSpec};
use crate::workload::reflect::Reflected;

/// Sends the one request and prints its answer.
pub(super) fn call(cfg: &Config, prepared: &Prepared) -> Result<i32, RunError> {
    let (_, runs) = run(cfg, prepared)?;
    let Some(r) = runs.first() else {
        return Ok(exit::FAILURE);
    };
    match &r.sample {
        Some(v) if r.stats.ok == 1 => {
            let mut text = serde_json::to_string_pretty(v).unwrap_or_default();
            text.push('\n');
            // a reader that went away (`| head`) is no failure of the call
            super::emit(None, &text)?;
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

/// Prints the methods the first endpoint's reflection service names, one per line.
pub(super) fn list_grpc(cfg: &Config) -> Result<i32, RunError> {
    let WorkloadSpec::Grpc(g) = &cfg.spec else {
        return Err(RunError::Setup("--list needs a gRPC target".into()));
    };
    let lines = Reflected::new(cfg, g, &cfg.endpoints[0])
        .list()
        .map_err(|e| RunError::Setup(e.to_string()))?;
    let mut text = lines.join("\n");
    text.push('\n');
    super::emit(None, &text)?;
    Ok(exit::OK)
}
