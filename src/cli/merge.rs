//! `wirebench merge`: the flags of merging agents' reports into one.

use std::path::PathBuf;

use clap::Args;

use super::Action;
use super::common::FormatArg;
use super::error::ArgError;
use super::heading;
use crate::app::merge::Merge;
use crate::config::Format;

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The agents' reports (`--format json`) of one workload: the same command, target,
    /// stacks and sizes, each agent once
    #[arg(required = true, value_name = "REPORT")]
    pub reports: Vec<PathBuf>,
    /// Report format
    #[arg(long, value_enum, default_value_t = FormatArg::Text, help_heading = heading::OUTPUT)]
    pub format: FormatArg,
    /// Write the merged report to this file instead of stdout
    #[arg(short = 'o', long, help_heading = heading::OUTPUT)]
    pub output: Option<PathBuf>,
    /// A condition the merged figures must meet, as for a run (e.g. 'p99<5ms'); a broken one
    /// exits 3
    #[arg(long = "fail-if", value_name = "THRESHOLD", help_heading = heading::THRESHOLDS)]
    pub fail_if: Vec<String>,
}

impl MergeArgs {
    pub(super) fn into_action(self) -> Result<Action, ArgError> {
        let thresholds = self
            .fail_if
            .iter()
            .map(|t| crate::threshold::Threshold::parse(t).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Action::Merge(Merge {
            files: self.reports,
            format: match self.format {
                FormatArg::Text => Format::Text,
                FormatArg::Json => Format::Json,
            },
            output: self.output,
            thresholds,
        }))
    }
}
