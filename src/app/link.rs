//! `wirebench link`: a program runs inside the link's namespace (the host's address in
//! `$WIREBENCH_LINK_HOST`); when it ends, the link's account goes to stderr and its exit code
//! is wirebench's.

use std::os::unix::process::{CommandExt, ExitStatusExt};

use super::RunError;
use crate::report::link::LinkSection;
use wirebench_link::spec::LinkSpec;

/// What `wirebench link` runs: the path and the program.
#[derive(Debug)]
pub struct LinkRun {
    pub spec: LinkSpec,
    /// the account as JSON instead of text
    pub json: bool,
    pub command: Vec<std::ffi::OsString>,
}

/// Runs the program through the link; its exit code (128 + the signal that ended it).
pub(super) fn run(r: &LinkRun) -> Result<i32, RunError> {
    let link = wirebench_link::io::start(&r.spec).map_err(|e| RunError::Setup(e.to_string()))?;
    let ns = link.net().ns_fd();
    let (program, args) = r
        .command
        .split_first()
        .ok_or_else(|| RunError::Usage("wirebench link needs a program after --".into()))?;
    let mut cmd = std::process::Command::new(program);
    cmd.args(args)
        .env("WIREBENCH_LINK_HOST", link.net().host.to_string())
        .env("WIREBENCH_LINK_CLIENT", link.net().client.to_string());
    // SAFETY: between fork and exec only async-signal-safe calls: setns and prctl on the
    // child itself; `ns` stays open in the parent (and so in the child) until after the spawn.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(ns, libc::CLONE_NEWNET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // the program goes when wirebench goes (a killed wirebench leaves nothing running
            // in the namespace, so the namespace goes too)
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| RunError::Setup(format!("cannot run {}: {e}", program.to_string_lossy())))?;
    let status = wait_passing_ctrl_c(&mut child)
        .map_err(|e| RunError::Setup(format!("waiting for {}: {e}", program.to_string_lossy())))?;
    let report = link.finish().map_err(|e| RunError::Setup(e.to_string()))?;
    let section = LinkSection::of(&report, &[]);
    if r.json {
        let json = serde_json::to_string_pretty(&section).unwrap_or_default();
        eprintln!("{json}");
    } else {
        let mut out = String::new();
        crate::report::text::render_link(&mut out, &section);
        eprint!("{out}");
    }
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

/// Waits for the program; a Ctrl-C that reached wirebench alone is passed on to it once (a
/// terminal's reaches both), and the program decides when it ends.
fn wait_passing_ctrl_c(
    child: &mut std::process::Child,
) -> std::io::Result<std::process::ExitStatus> {
    let mut passed = false;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if super::interrupted() && !passed {
            passed = true;
            // SAFETY: kill takes a pid and a signal; the child is ours and not yet reaped.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
