//! `wirebench link SPEC -- COMMAND ARGS…`: any program run through an emulated path.

use clap::Args;

use super::error::ArgError;
use super::heading;
use crate::app::{Action, LinkRun};

#[derive(Debug, Args)]
pub struct LinkArgs {
    /// The path (comma-separated): rtt=40ms or delay=20ms, jitter=2ms, loss=1%, burst=P/R,
    /// rate=100mbit, queue=100 or 256k; -up / -down for one direction
    pub spec: String,
    /// Print the link's account as JSON on stderr instead of text
    #[arg(long, help_heading = heading::OUTPUT)]
    pub json: bool,
    /// The program and its arguments, after `--`; the host's address is in
    /// $WIREBENCH_LINK_HOST
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

impl LinkArgs {
    pub(super) fn into_action(self) -> Result<Action, ArgError> {
        let spec: wirebench_link::spec::LinkSpec = self.spec.parse()?;
        Ok(Action::Link(LinkRun {
            spec,
            json: self.json,
            command: self.command,
        }))
    }
}
