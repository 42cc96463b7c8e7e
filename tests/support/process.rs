//! Running the wirebench binary (or any other command) under a deadline, and reading its report.
//!
//! Every run goes through one runner: output piped and drained on threads, the child polled
//! and reaped with wait4 (for its CPU time, which std's `Child` does not give), killed and the
//! test failed once it passes its limit. `run_command_sampling_rss` also samples the child's
//! peak RSS while it runs.

use std::ffi::OsStr;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Default bound for one run of the wirebench binary in tests.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the runner looks whether the child exited.
const POLL: Duration = Duration::from_millis(10);
/// How often it looks when it also samples the child's peak RSS.
const SAMPLE_POLL: Duration = Duration::from_millis(2);

/// Makes a child process die (SIGKILL) when the thread that spawned it exits, so a test that
/// dies without running Drop leaves no server or capture behind.
pub fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls (prctl, getppid, _exit) run between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() == 1 {
                // The parent already died between fork and prctl.
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// The wirebench binary built for these tests.
pub fn wirebench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wirebench"))
}

/// What one run of the binary did.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// the child's user + system CPU over its whole life (wait4's rusage), when known
    pub cpu: Option<Duration>,
}

impl Run {
    /// stderr without its final newline, split into lines.
    pub fn stderr_lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }
}

/// Runs wirebench with `args`, no stdin, killing it if it takes longer than `limit`.
pub fn run_bounded(args: &[&str], limit: Duration) -> Run {
    let mut cmd = wirebench();
    cmd.args(args);
    run_command(cmd, limit)
}

/// `run_bounded` on a thread of its own, for a test that acts while the run is under way.
pub fn run_bounded_on_thread(args: &[&str], limit: Duration) -> JoinHandle<Run> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    std::thread::spawn(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_bounded(&args, limit)
    })
}

/// Runs a prepared command with piped output, killing it after `limit` (and then panicking).
pub fn run_command(cmd: Command, limit: Duration) -> Run {
    let what = format!("{cmd:?}");
    try_run_command(cmd, limit).unwrap_or_else(|e| panic!("cannot run {what}: {e}"))
}

/// `run_command`, with a command that cannot be started as an error for the caller to word.
pub fn try_run_command(cmd: Command, limit: Duration) -> std::io::Result<Run> {
    supervise(cmd, limit, false, None).map(|(run, _)| run)
}

/// When to send the child SIGINT (Ctrl-C): once `after` its first stderr line that contains
/// `marker` (from its start without one), and again `then` later when given.
#[derive(Debug, Clone)]
pub struct Interrupts {
    pub marker: Option<&'static str>,
    pub after: Duration,
    pub then: Option<Duration>,
}

/// Runs wirebench with `args`, sending it SIGINT as `interrupts` says; killed (and the test
/// failed) after `limit`.
pub fn run_interrupted(args: &[&str], interrupts: &Interrupts, limit: Duration) -> Run {
    let mut cmd = wirebench();
    cmd.args(args);
    let what = format!("{cmd:?}");
    supervise(cmd, limit, false, Some(interrupts))
        .map(|(run, _)| run)
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"))
}

/// `run_command`, also sampling the child's peak RSS (VmHWM) every few milliseconds while it
/// runs; returns the run and that peak in KiB. VmHWM only grows, so only growth in the last
/// sampling interval can be missed. Panics if not one sample was taken.
pub fn run_command_sampling_rss(cmd: Command, limit: Duration) -> (Run, u64) {
    let what = format!("{cmd:?}");
    let (run, max_rss_kib) =
        supervise(cmd, limit, true, None).unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    assert!(max_rss_kib > 0, "no VmHWM sample of {what}");
    (run, max_rss_kib)
}

/// The one runner: spawns `cmd` (no stdin, output piped), polls it until it exits, reaps it
/// with wait4 and, with `sample_rss`, keeps the highest VmHWM seen; sends SIGINT as
/// `interrupts` says. Kills it and panics (with its output) once it runs longer than `limit`.
// The child is reaped with wait4 (for its rusage), which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn supervise(
    mut cmd: Command,
    limit: Duration,
    sample_rss: bool,
    interrupts: Option<&Interrupts>,
) -> std::io::Result<(Run, u64)> {
    let what = format!("{cmd:?}");
    let name = comm_name(cmd.get_program());
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    // when the marker first showed on stderr (the start, without a marker)
    let marker = interrupts.and_then(|i| i.marker);
    let marked = std::sync::Arc::new(std::sync::Mutex::new(marker.is_none().then_some(started)));
    let seen = marked.clone();
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            match err.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => s.extend_from_slice(&chunk[..n]),
            }
            if let Some(m) = marker
                && String::from_utf8_lossy(&s).contains(m)
                && let Ok(mut at) = seen.lock()
            {
                at.get_or_insert_with(Instant::now);
            }
        }
        s
    });
    let mut signals: Vec<Duration> = interrupts
        .map(|i| {
            std::iter::once(i.after)
                .chain(i.then.map(|t| i.after + t))
                .collect()
        })
        .unwrap_or_default();
    let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
    // Reaped with wait4, for the child's CPU time (std's Child has no rusage).
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    let mut max_rss_kib = 0;
    let (code, cpu) = loop {
        // Sampled before the wait: a reaped process has no VmHWM left.
        if sample_rss && let Some(kib) = vm_hwm_kib(child.id(), &name) {
            max_rss_kib = max_rss_kib.max(kib);
        }
        let mut status = 0;
        // SAFETY: rusage is plain old data that wait4 fills in.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: valid pointers to a c_int and a rusage we own; WNOHANG never blocks.
        let rc = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        assert!(rc >= 0, "wait4: {}", std::io::Error::last_os_error());
        if rc == pid {
            let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
            let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
            break (code, tv(ru.ru_utime) + tv(ru.ru_stime));
        }
        let mark = marked.lock().ok().and_then(|m| *m);
        if let (Some(&due), Some(mark)) = (signals.first(), mark)
            && mark.elapsed() >= due
        {
            // SAFETY: kill takes plain integers; the child is not reaped yet, so its pid is
            // still its own.
            unsafe { libc::kill(pid, libc::SIGINT) };
            signals.remove(0);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let peak = if sample_rss {
                format!(", peak RSS so far {max_rss_kib} KiB")
            } else {
                String::new()
            };
            panic!(
                "{what} did not finish within {limit:?} (killed{peak})\nstdout:\n{}\nstderr:\n{}",
                text(out_reader.join().unwrap_or_default()),
                text(err_reader.join().unwrap_or_default())
            );
        }
        std::thread::sleep(if sample_rss { SAMPLE_POLL } else { POLL });
    };
    let elapsed = started.elapsed();
    let run = Run {
        code,
        stdout: text(out_reader.join().unwrap_or_default()),
        stderr: text(err_reader.join().unwrap_or_default()),
        elapsed,
        cpu: Some(cpu),
    };
    Ok((run, max_rss_kib))
}

/// The name the kernel gives a process running `program` (its file name, cut to 15 bytes).
fn comm_name(program: &OsStr) -> String {
    let name = Path::new(program).file_name().unwrap_or(program);
    let mut name = name.to_string_lossy().into_owned();
    while name.len() > 15 {
        name.pop();
    }
    name
}

/// VmHWM (peak RSS) of `pid` in KiB, once it runs the program called `name`: between fork and
/// exec the child is still a copy of this test process (with its RSS), so its name tells the two
/// apart. wait4's ru_maxrss cannot be used: Linux carries the pre-exec peak over into it.
fn vm_hwm_kib(pid: u32, name: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let mut lines = status.lines();
    if lines.next()?.strip_prefix("Name:")?.trim() != name {
        return None;
    }
    let kib = lines.find_map(|l| l.strip_prefix("VmHWM:"))?;
    kib.trim().strip_suffix("kB")?.trim().parse().ok()
}

/// Runs wirebench with `args` plus `--format json`; asserts exit 0 and returns the report.
pub fn run_json(args: &[&str]) -> Value {
    run_json_within(args, RUN_TIMEOUT)
}

/// `run_json`, failing the test if the run takes longer than `limit` (the process is killed).
pub fn run_json_within(args: &[&str], limit: Duration) -> Value {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--format", "json"]);
    let run = run_bounded(&all, limit);
    assert_eq!(
        run.code,
        Some(0),
        "wirebench {} exited with {:?}\nstderr:\n{}\nstdout:\n{}",
        all.join(" "),
        run.code,
        run.stderr,
        run.stdout
    );
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| {
        panic!(
            "wirebench {}: stdout is not JSON ({e}):\n{}",
            all.join(" "),
            run.stdout
        )
    })
}

/// The report on stdout, with the whole run in the panic message when it is not JSON.
pub fn report_of(run: &Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("stdout is not a JSON report ({e}): {run:#?}"))
}

/// The run for `proto` ("http" or "grpc") in a report.
pub fn proto_run<'a>(report: &'a Value, proto: &str) -> &'a Value {
    report["runs"]
        .as_array()
        .expect("runs[] in the report")
        .iter()
        .find(|r| r["proto"] == proto)
        .unwrap_or_else(|| panic!("no {proto} run in the report: {report:#}"))
}

/// A non-negative integer field, with the report in the panic message.
pub fn u64_at(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{pointer} is not an unsigned integer in {v:#}"))
}

/// A number field, with the report in the panic message.
pub fn f64_at(v: &Value, pointer: &str) -> f64 {
    v.pointer(pointer)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{pointer} is not a number in {v:#}"))
}

/// A refusal's shape: exactly one line on stderr, starting `error:`, and nothing on stdout.
pub fn assert_one_error_line(run: &Run, what: &str) {
    let lines = run.stderr_lines();
    assert_eq!(
        lines.len(),
        1,
        "{what}: stderr must be exactly one line, got {:?}",
        run.stderr
    );
    assert!(lines[0].starts_with("error:"), "{what}: {:?}", lines[0]);
    assert!(
        run.stdout.is_empty(),
        "{what}: nothing on stdout, got {:?}",
        run.stdout
    );
}

/// Runs wirebench with `args`; asserts it exits with `code` and one error line naming `words`.
pub fn assert_refused(args: &[&str], code: i32, words: &str) {
    let run = run_bounded(args, Duration::from_secs(20));
    assert_eq!(run.code, Some(code), "{args:?}: {run:#?}");
    assert_one_error_line(&run, &format!("{args:?}"));
    assert!(run.stderr.contains(words), "{args:?}: {}", run.stderr);
}
