//! `wirebench completions SHELL`: a completion script for a shell, generated from the clap
//! grammar.

use clap::Args;
use clap_complete::Shell;

use super::Action;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell whose script to print
    #[arg(value_enum)]
    pub shell: Shell,
}

impl CompletionsArgs {
    /// The script that completes `cmd` (the whole grammar), printed on stdout.
    pub(super) fn into_action(self, mut cmd: clap::Command) -> Action {
        let mut script = Vec::new();
        clap_complete::generate(self.shell, &mut cmd, "wirebench", &mut script);
        Action::Print(String::from_utf8_lossy(&script).into_owned())
    }
}
