//! A report as `wirebench merge` reads it back: `Deserialize` views of what it merges, checks or
//! carries over, and `Source`, one report file checked to be a run report of this schema.

use serde::Deserialize;
use serde_json::Value;

use super::{AgentRow, MergeError};
use crate::report::hdr::Histograms;
use crate::report::{
    ConnectTimes, ConnectionSetup, Cost, EndpointReport, Percentile, SCHEMA, StatusCount,
    Streaming, Summary, VerifyReport, Window, Wire,
};
use crate::stack::Proto;

/// A report as `wirebench merge` reads it: what it merges, checks or carries over.
#[derive(Debug, Deserialize)]
pub struct Input {
    pub schema: String,
    pub version: String,
    pub workload: String,
    pub endpoints: Vec<String>,
    pub agent: Option<String>,
    pub settings: InSettings,
    pub runs: Vec<InRun>,
}

#[derive(Debug, Deserialize)]
pub struct InSettings {
    pub clients: usize,
    pub conns: usize,
    pub pipeline: usize,
    pub threads: usize,
    pub total_requests: Option<u64>,
    pub duration_s: Option<f64>,
    pub warmup_s: f64,
    pub timeout_s: f64,
    pub h2_client: String,
    pub hpack: String,
}

#[derive(Debug, Deserialize)]
pub struct InRun {
    pub proto: Proto,
    pub clients: usize,
    pub connections: usize,
    pub pipeline: Option<usize>,
    pub threads: usize,
    pub interrupted: bool,
    pub window: Window,
    pub summary: Summary,
    pub latency_distribution: Vec<Percentile>,
    pub histograms: Histograms,
    pub status_distribution: Vec<StatusCount>,
    pub error_distribution: Vec<InError>,
    pub cost: Cost,
    pub wire: Wire,
    pub open_loop: Option<InOpenLoop>,
    #[serde(default)]
    pub streaming: Option<Streaming>,
    #[serde(default)]
    pub connection_setup: Option<ConnectionSetup>,
    pub per_endpoint: Vec<EndpointReport>,
    #[serde(default)]
    pub verify: Option<VerifyReport>,
    pub connect_times: Option<ConnectTimes>,
    #[serde(default)]
    pub agents: Option<Vec<AgentRow>>,
    pub sample_response: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub struct InError {
    pub kind: String,
    pub message: Option<String>,
    pub count: u64,
}

#[derive(Debug, Deserialize)]
pub struct InOpenLoop {
    pub target_rate: f64,
    pub expired_sends: u64,
    pub timer: Option<String>,
    pub late_sends: u64,
    /// absent in reports written before it was counted
    #[serde(default)]
    pub overdue_sends: u64,
    pub sends_taken: u64,
    pub average_send_lag_ms: Option<f64>,
    pub max_send_lag_ms: Option<f64>,
    pub uncorrected_average_ms: Option<f64>,
    pub uncorrected_slowest_ms: Option<f64>,
}

/// One report to merge: where it came from (for the messages and the agent rows) and what it
/// holds.
#[derive(Debug)]
pub struct Source {
    pub file: String,
    pub report: Input,
}

impl Source {
    /// A report read from `file` (its contents `text`): JSON of this schema version.
    pub fn parse(file: &str, text: &str) -> Result<Source, MergeError> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            if e.is_eof() {
                MergeError::CutShort {
                    file: file.to_string(),
                    line: e.line(),
                }
            } else {
                MergeError::NotJson {
                    file: file.to_string(),
                    source: e,
                }
            }
        })?;
        let schema = value.get("schema").and_then(Value::as_str);
        match schema {
            Some(s) if s == SCHEMA => {}
            Some(s) if s.starts_with("wirebench.report.") => {
                return Err(MergeError::OtherVersion {
                    file: file.to_string(),
                    schema: s.to_string(),
                });
            }
            Some(s) => {
                return Err(MergeError::NotARunReport {
                    file: file.to_string(),
                    schema: s.to_string(),
                });
            }
            None => {
                return Err(MergeError::NoSchema {
                    file: file.to_string(),
                });
            }
        }
        if let Some(proto) = unknown_stack(&value) {
            return Err(MergeError::UnknownStack {
                file: file.to_string(),
                proto,
            });
        }
        let report: Input = serde_json::from_value(value).map_err(|e| MergeError::Incomplete {
            file: file.to_string(),
            source: e,
        })?;
        Ok(Source {
            file: file.to_string(),
            report,
        })
    }

    /// The agent's name, or the file's name when it had none.
    pub(super) fn agent(&self) -> String {
        self.report.agent.clone().unwrap_or_else(|| {
            std::path::Path::new(&self.file)
                .file_name()
                .map_or_else(|| self.file.clone(), |n| n.to_string_lossy().into_owned())
        })
    }
}

/// The `proto` of a run of `report` that names no stack this wirebench knows, if one does.
fn unknown_stack(report: &Value) -> Option<String> {
    let runs = report.get("runs")?.as_array()?;
    runs.iter()
        .filter_map(|r| r.get("proto")?.as_str())
        .find(|p| Proto::ALL.iter().all(|k| k.name() != *p))
        .map(str::to_string)
}
