//! `wirebench man`: the man pages, generated from the clap grammar: wirebench(1) on stdout, or
//! with `--dir` one page per command (wirebench-echo(1), wirebench-etcd-put(1), ...).

use std::path::PathBuf;

use clap::{Args, Command};

use super::Action;

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write one page per command into DIR (wirebench.1, wirebench-echo.1,
    /// wirebench-etcd-put.1, ...) and print their paths, instead of printing wirebench.1
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

impl ManArgs {
    /// The page of `cmd` (the whole grammar) on stdout, or every command's page for `--dir`.
    pub(super) fn into_action(self, cmd: Command) -> Action {
        // `wirebench help` is clap's, not a command of ours: no page for it
        let mut cmd = cmd.disable_help_subcommand(true);
        cmd.build();
        match self.dir {
            None => Action::Print(page(cmd)),
            Some(dir) => {
                let mut files = Vec::new();
                pages(cmd, &mut files);
                Action::WriteFiles { dir, files }
            }
        }
    }
}

/// `cmd`'s page and those of its subcommands, depth first, each named as `man` looks it up.
fn pages(cmd: Command, files: &mut Vec<(String, String)>) {
    let name = format!("{}.1", cmd.get_display_name().unwrap_or(cmd.get_name()));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        pages(sub.clone(), files);
    }
    files.push((name, page(cmd)));
}

/// One command's page, roff for section 1, in ASCII: a character beyond it (the help's ×
/// and µ) is written as roff's `\[uXXXX]`, which every formatter reads whatever its input
/// encoding.
fn page(cmd: Command) -> String {
    let mut roff = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut roff)
        // the only error render passes on is its writer's, and a Vec takes every byte
        .expect("rendering into a Vec cannot fail");
    let mut page = String::with_capacity(roff.len());
    for c in String::from_utf8_lossy(&roff).chars() {
        if c.is_ascii() {
            page.push(c);
        } else {
            page.push_str(&format!("\\[u{:04X}]", u32::from(c)));
        }
    }
    page
}
