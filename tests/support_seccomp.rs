//! The seccomp test helper makes exactly the chosen syscalls fail, in the child only.

mod support;

use std::process::{Command, Output};

use wirebench::stats::perf::{Counter, KernelCounts, ThreadCounters};

use support::seccomp::deny_syscalls;

static PERF_EVENT_OPEN: &[libc::c_long] = &[libc::SYS_perf_event_open];
static TIMERFD_CREATE: &[libc::c_long] = &[libc::SYS_timerfd_create];
/// Set in the environment of the filtered child that `perf_denial_is_reported` starts.
const CHILD_ENV: &str = "WIREBENCH_SECCOMP_CHILD";

fn run(mut cmd: Command) -> Output {
    support::die_with_parent(&mut cmd);
    cmd.output().unwrap_or_else(|e| panic!("run {cmd:?}: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn perf_stat() -> Command {
    let mut cmd = Command::new("/usr/bin/perf");
    cmd.args(["stat", "-x,", "-e", "raw_syscalls:sys_enter", "true"]);
    cmd
}

/// The count from perf stat's CSV output (`COUNT,UNIT,EVENT,...`) for `event`.
fn perf_count(output: &str, event: &str) -> Option<u64> {
    output.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(',').collect();
        (fields.get(2) == Some(&event)).then(|| fields[0].parse().ok())?
    })
}

#[test]
fn perf_stat_fails_when_perf_event_open_is_denied() {
    // Allowed: one CSV line "COUNT,,raw_syscalls:sys_enter,..." on stderr.
    let out = run(perf_stat());
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    let count = perf_count(&stderr, "raw_syscalls:sys_enter")
        .unwrap_or_else(|| panic!("no count in perf's output: {stderr}"));
    assert!(count > 0, "{stderr}");

    // Denied with EACCES, perf 6.1 gives up with exit status 255 and its paranoid lecture
    // (it takes EACCES for perf_event_paranoid), printing no count at all.
    let mut cmd = perf_stat();
    deny_syscalls(&mut cmd, PERF_EVENT_OPEN, libc::EACCES);
    let out = run(cmd);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(255), "{stderr}");
    assert!(
        stderr.contains("Access to performance monitoring and observability operations is limited"),
        "{stderr}"
    );
    assert!(!stderr.contains(",raw_syscalls:sys_enter,"), "{stderr}");
}

#[test]
fn timerfd_create_fails_with_enosys() {
    let script = "import ctypes; libc = ctypes.CDLL(None, use_errno=True); \
                  print(libc.timerfd_create(1, 0), ctypes.get_errno())";
    let python = || {
        let mut cmd = Command::new("python3");
        cmd.args(["-c", script]);
        cmd
    };
    let out = run(python());
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let fd: i32 = stdout
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(-1);
    assert!(fd >= 0, "unfiltered timerfd_create: {stdout}");

    let mut cmd = python();
    deny_syscalls(&mut cmd, TIMERFD_CREATE, libc::ENOSYS);
    let out = run(cmd);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), format!("-1 {}", libc::ENOSYS));
}

/// Runs `reports_denied_perf_events` in a copy of this test binary whose perf_event_open
/// fails with EACCES, as in a container or under perf_event_paranoid as a normal user.
#[test]
fn perf_denial_is_reported() {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = Command::new(exe);
    cmd.args([
        "reports_denied_perf_events",
        "--exact",
        "--ignored",
        "--nocapture",
    ])
    .env(CHILD_ENV, "1");
    deny_syscalls(&mut cmd, PERF_EVENT_OPEN, libc::EACCES);
    let out = run(cmd);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("1 passed"), "{stdout}");
    // The module itself prints nothing; libtest writes only to stdout.
    assert_eq!(stderr, "");
    let expected = "kernel syscall counts not available: perf_event_open: Permission denied (";
    assert!(stdout.contains(expected), "{stdout}");
}

/// The filtered child's half of `perf_denial_is_reported`; does nothing anywhere else.
#[test]
#[ignore = "run by perf_denial_is_reported under a seccomp filter"]
fn reports_denied_perf_events() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let counters = ThreadCounters::open();
    let before = counters.read();
    std::thread::sleep(std::time::Duration::from_millis(1));
    assert_eq!(counters.read().since(before), KernelCounts::default());
    for counter in Counter::ALL {
        let why = counters.unavailable(counter);
        println!("{why:?}");
        assert!(
            why.is_some_and(|w| w.contains("perf_event_open: Permission denied")),
            "{counter:?}: {why:?}"
        );
    }
}
