//! The measured window's cost against ground truth: syscalls and context switches against
//! `perf stat` over the same process, CPU against the kernel's accounting of the child, the
//! server's CPU (`--server-pid`) against that process's own clock, and the paths taken where
//! the kernel refuses: perf events not permitted, no timerfd, a server process that exits.
//!
//! The client runs against a separate `wirebench serve`, so that perf stat, which counts the
//! whole client process, counts the client alone.

mod support;

use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use support::seccomp::deny_syscalls;
use support::{RUN_TIMEOUT, ServeProcess, f64_at, proto_run, run_command, u64_at, wirebench};

/// Timing-sensitive checks share two cores badly: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

static PERF_EVENT_OPEN: &[libc::c_long] = &[libc::SYS_perf_event_open];
static TIMERFD_CREATE: &[libc::c_long] = &[libc::SYS_timerfd_create];
static IO_URING_SETUP: &[libc::c_long] = &[libc::SYS_io_uring_setup];

/// One count of perf stat's CSV output (`COUNT,UNIT,EVENT,...`) for `event`.
fn perf_count(csv: &str, event: &str) -> f64 {
    csv.lines()
        .find_map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            (f.get(2) == Some(&event)).then(|| f[0].parse::<f64>().ok())?
        })
        .unwrap_or_else(|| panic!("no {event} in perf stat's output:\n{csv}"))
}

/// Two ways of computing one ratio agree (to floating-point rounding).
fn same(a: f64, b: f64) {
    assert!((a - b).abs() <= 1e-9 * b.abs().max(1.0), "{a} vs {b}");
}

fn json(run: &support::Run) -> Value {
    assert_eq!(run.code, Some(0), "stderr:\n{}", run.stderr);
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\nstderr:\n{}", run.stdout, run.stderr))
}

/// The window's count plus the count outside it, as wirebench printed them, equal what perf
/// counted over the whole process within 2% (the main thread's own few hundred syscalls).
fn syscalls_match_perf_stat(proto: &str) {
    let _one = serial();
    let server = ServeProcess::start(&["--threads", "1"]);
    let target = format!("http://{}", server.target());
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("perf.csv");
    let mut cmd = Command::new("/usr/bin/perf");
    cmd.arg("stat")
        .args(["-x,", "-e", "raw_syscalls:sys_enter,context-switches"])
        .arg("-o")
        .arg(&csv)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_wirebench"))
        .args(["echo", "--target", &target, "--proto", proto, "-c", "10"])
        .args(["--conns", "10", "-n", "30000", "--format", "json"]);
    support::die_with_parent(&mut cmd);
    let out = run_command(cmd, RUN_TIMEOUT);
    let report = json(&out);
    let csv = std::fs::read_to_string(&csv).expect("perf stat's output");
    let run = proto_run(&report, proto);
    let cost = &run["cost"];
    let window = u64_at(cost, "/syscalls");
    let outside = u64_at(cost, "/syscalls_outside_window");
    let perf = perf_count(&csv, "raw_syscalls:sys_enter");
    let ours = (window + outside) as f64;
    assert!(
        ours <= perf && (perf - ours) / perf <= 0.02,
        "{proto}: wirebench counted {window} + {outside} syscalls, perf stat {perf}\n{cost:#}"
    );
    // the kernel saw more than the data calls that were syscalls (a ring's reads are not):
    // the waits (epoll_wait, io_uring_enter) at least
    let requests = u64_at(cost, "/requests");
    assert_eq!(requests, 30_000, "{proto}");
    let data = &cost["data_calls"];
    let data_calls: u64 = ["reads", "writes", "read_would_block", "write_would_block"]
        .iter()
        .map(|k| u64_at(data, &format!("/{k}")))
        .sum::<u64>()
        - u64_at(data, "/ring_reads");
    assert!(data_calls < window, "{proto}: {cost:#}");
    assert!(
        u64_at(data, "/writes") >= requests / 10,
        "{proto}: {cost:#}"
    );
    same(
        f64_at(cost, "/syscalls_per_request"),
        window as f64 / requests as f64,
    );
    // context switches: the worker threads' are part of the process's
    let switches =
        u64_at(cost, "/context_switches") + u64_at(cost, "/context_switches_outside_window");
    assert!(
        switches as f64 <= perf_count(&csv, "context-switches"),
        "{proto}: {switches} context switches vs perf's\n{csv}"
    );
    // this VM has no hardware counters: null, never 0
    assert!(cost["instructions"].is_null() || u64_at(cost, "/instructions") > 0);
    // CPU: the window's user + system time is within the process's, as the kernel accounted it
    // at exit (wait4: perf and its child wirebench; perf itself mostly sleeps), and most of it.
    let process = out.cpu.expect("the child's rusage");
    let cpu = Duration::from_micros(
        u64_at(cost, "/client_cpu_user_us") + u64_at(cost, "/client_cpu_sys_us"),
    );
    assert!(
        cpu <= process && cpu * 2 >= process,
        "{proto}: client CPU {cpu:?} in the window, the process {process:?}"
    );
}

/// `--io-loop auto` reads through an io_uring: its reads are the ring's, no syscall of their
/// own, so a request costs the kernel a read less than on the epoll loop (the same waits,
/// `io_uring_enter` for `epoll_wait`); with `io_uring_setup` refused, the run goes on epoll
/// and says so.
#[test]
fn the_loop_reads_through_a_ring_and_without_one_on_epoll() {
    let _one = serial();
    let server = ServeProcess::start(&["--threads", "1"]);
    let target = format!("http://{}", server.target());
    let run = |io_loop: &str, deny: bool| -> Value {
        let mut cmd = wirebench();
        cmd.args(["echo", "--target", &target, "--proto", "http", "-c", "4"])
            .args(["-n", "20000", "--io-loop", io_loop, "--format", "json"]);
        if deny {
            deny_syscalls(&mut cmd, IO_URING_SETUP, libc::ENOSYS);
        }
        support::die_with_parent(&mut cmd);
        let report = json(&run_command(cmd, RUN_TIMEOUT));
        let run = proto_run(&report, "http");
        assert_eq!(u64_at(run, "/summary/ok"), 20_000, "{run:#}");
        run["cost"].clone()
    };
    let (ring, epoll, refused) = (run("auto", false), run("epoll", false), run("auto", true));
    assert_eq!(ring["client_loop"], support::auto_loop());
    assert_eq!(epoll["client_loop"], "epoll");
    assert_eq!(refused["client_loop"], "epoll", "{refused:#}");
    for cost in [&epoll, &refused] {
        assert_eq!(u64_at(cost, "/data_calls/ring_reads"), 0, "{cost:#}");
    }
    if ring["client_loop"] != "io_uring" {
        return;
    }
    // every read the ring's, one write a request each way
    let reads = u64_at(&ring, "/data_calls/reads");
    assert_eq!(u64_at(&ring, "/data_calls/ring_reads"), reads, "{ring:#}");
    assert!(reads >= 20_000, "{ring:#}");
    assert_eq!(u64_at(&ring, "/data_calls/read_would_block"), 0, "{ring:#}");
    for cost in [&ring, &epoll] {
        same(f64_at(cost, "/writes_per_request"), 1.0);
    }
    let per = |c: &Value| f64_at(c, "/syscalls_per_request");
    assert!(
        per(&ring) < per(&epoll) - 0.5,
        "io_uring {} vs epoll {} syscalls a request",
        per(&ring),
        per(&epoll)
    );
}

/// `--io-loop auto` reads through a ring on a thread of 16 connections or fewer, and waits on
/// epoll on a thread of more (where the ring costs more a request); the count is each thread's.
#[test]
fn the_loop_waits_on_epoll_past_sixteen_connections_a_thread() {
    let _one = serial();
    let server = ServeProcess::start(&["--threads", "1"]);
    let target = format!("http://{}", server.target());
    let run = |conns: &str, threads: &str| -> Value {
        let mut cmd = wirebench();
        cmd.args(["echo", "--target", &target, "--proto", "http", "-c", conns])
            .args(["--threads", threads, "-n", "4000", "--format", "json"]);
        support::die_with_parent(&mut cmd);
        let report = json(&run_command(cmd, RUN_TIMEOUT));
        let run = proto_run(&report, "http");
        assert_eq!(u64_at(run, "/summary/ok"), 4000, "{run:#}");
        run["cost"].clone()
    };
    for (conns, threads, expect) in [
        ("16", "1", support::auto_loop()),
        ("17", "1", "epoll"),
        ("32", "2", support::auto_loop()),
        ("34", "2", "epoll"),
    ] {
        let cost = run(conns, threads);
        let ctx = format!("-c {conns} --threads {threads}: {cost:#}");
        assert_eq!(cost["client_loop"], expect, "{ctx}");
        let ring_reads = u64_at(&cost, "/data_calls/ring_reads");
        if expect == "io_uring" {
            assert_eq!(ring_reads, u64_at(&cost, "/data_calls/reads"), "{ctx}");
        } else {
            assert_eq!(ring_reads, 0, "{ctx}");
        }
    }
}

#[test]
fn http1_syscalls_match_perf_stat() {
    syscalls_match_perf_stat("http");
}

#[test]
fn grpc_syscalls_match_perf_stat() {
    syscalls_match_perf_stat("grpc");
}

#[test]
fn kernel_counts_not_permitted_are_said_and_null() {
    let _one = serial();
    for format in ["json", "text"] {
        let mut cmd = wirebench();
        cmd.args(["echo", "-n", "2000", "-c", "2", "--format", format]);
        deny_syscalls(&mut cmd, PERF_EVENT_OPEN, libc::EACCES);
        support::die_with_parent(&mut cmd);
        let out = run_command(cmd, RUN_TIMEOUT);
        assert_eq!(out.code, Some(0), "{format}: {}", out.stderr);
        if format == "text" {
            let line = out
                .stdout
                .lines()
                .find(|l| l.trim_start().starts_with("Syscalls / request:"))
                .unwrap_or_else(|| panic!("no syscall line:\n{}", out.stdout));
            assert!(
                line.contains("not available (") && line.contains("perf_event_open"),
                "{line}"
            );
            assert!(out.stdout.contains("socket data calls:"), "{}", out.stdout);
            let row = out
                .stdout
                .lines()
                .find(|l| l.trim_start().starts_with("Syscalls / request  "))
                .unwrap_or_else(|| panic!("no comparison row:\n{}", out.stdout));
            assert!(row.contains("n/a"), "{row}");
            continue;
        }
        let report: Value = serde_json::from_str(&out.stdout).unwrap();
        for proto in ["http", "grpc"] {
            let cost = &proto_run(&report, proto)["cost"];
            for k in [
                "syscalls",
                "syscalls_per_request",
                "context_switches",
                "syscalls_outside_window",
                "instructions",
                "cycles",
                "other_syscalls_per_request",
            ] {
                assert!(cost[k].is_null(), "{proto}: {k} should be null: {cost:#}");
            }
            let why = cost["kernel_counters_unavailable"].as_str().unwrap_or("");
            assert!(why.contains("perf_event_open"), "{proto}: {why}");
            // the data calls are still counted
            assert!(u64_at(cost, "/data_calls/writes") > 0, "{proto}");
        }
        assert!(report["ratios"]["syscalls_per_request"].is_null());
    }
}

#[test]
fn the_pacer_says_when_it_has_no_timerfd() {
    let _one = serial();
    let args = [
        "echo", "--rate", "500", "-z", "1s", "-c", "4", "--proto", "http",
    ];
    // with a timerfd (the normal path)
    let mut cmd = wirebench();
    cmd.args(args).args(["--format", "json"]);
    let report = json(&run_command(cmd, RUN_TIMEOUT));
    assert_eq!(
        proto_run(&report, "http")["open_loop"]["timer"],
        "timerfd",
        "{report:#}"
    );
    // without one: tokio's millisecond timer, and the report says so
    for format in ["json", "text"] {
        let mut cmd = wirebench();
        cmd.args(args).args(["--format", format]);
        deny_syscalls(&mut cmd, TIMERFD_CREATE, libc::ENOSYS);
        support::die_with_parent(&mut cmd);
        let out = run_command(cmd, RUN_TIMEOUT);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        if format == "text" {
            assert!(
                out.stdout.contains("1 ms resolution"),
                "the text report does not say the timer fell back:\n{}",
                out.stdout
            );
        } else {
            let report: Value = serde_json::from_str(&out.stdout).unwrap();
            let timer = proto_run(&report, "http")["open_loop"]["timer"]
                .as_str()
                .unwrap_or("")
                .to_string();
            assert!(timer.starts_with("tokio"), "{timer}");
        }
    }
}

/// CPU time of every thread of `pid` so far, in ns (schedstat's first field: time on a CPU).
fn process_cpu_ns(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("the server's tasks")
        .filter_map(|t| {
            let path = t.ok()?.path().join("schedstat");
            let s = std::fs::read_to_string(path).ok()?;
            s.split_whitespace().next()?.parse::<u64>().ok()
        })
        .sum()
}

#[test]
fn server_pid_cpu_is_the_servers_own_clock() {
    let _one = serial();
    let server = ServeProcess::start(&["--threads", "1"]);
    let target = format!("http://{}", server.target());
    let pid = server.pid().to_string();
    let before = process_cpu_ns(server.pid());
    let mut cmd = wirebench();
    cmd.args(["echo", "--target", &target, "--proto", "http", "-c", "4"])
        .args(["-n", "20000", "--server-pid", &pid, "--format", "json"]);
    let report = json(&run_command(cmd, RUN_TIMEOUT));
    let used = process_cpu_ns(server.pid()) - before;
    let cost = &proto_run(&report, "http")["cost"];
    let ns = u64_at(cost, "/server_cpu_ns");
    // The window is inside the run: at most what the server used meanwhile (its threads live
    // on, so schedstat sees all of it), and most of it (setup and close are short).
    assert!(
        ns <= used + 1_000_000 && ns * 10 >= used * 7,
        "server CPU in the window {ns} ns, over the whole run {used} ns"
    );
    same(
        f64_at(cost, "/server_cpu_us_per_request"),
        ns as f64 / 1000.0 / 20_000.0,
    );
}

#[test]
fn a_server_pid_that_exits_mid_run_is_reported_not_zero() {
    let _one = serial();
    let server = ServeProcess::start(&["--threads", "1"]);
    let target = format!("http://{}", server.target());
    let mut sleeper = Command::new("sleep").arg("0.5").spawn().expect("sleep");
    let pid = sleeper.id().to_string();
    let reaper = std::thread::spawn(move || sleeper.wait());
    let mut cmd = wirebench();
    cmd.args(["echo", "--target", &target, "--proto", "http", "-c", "2"])
        .args(["-z", "1500ms", "--server-pid", &pid, "--format", "json"]);
    let report = json(&run_command(cmd, RUN_TIMEOUT));
    let _ = reaper.join();
    let cost = &proto_run(&report, "http")["cost"];
    assert!(cost["server_cpu_ns"].is_null(), "{cost:#}");
    assert!(cost["server_cpu_us_per_request"].is_null(), "{cost:#}");
    let why = cost["server_cpu_error"].as_str().unwrap_or("");
    assert!(why.contains(&pid) && why.contains("exited"), "{why}");

    // a pid that is not there at all: one line before anything runs
    let gone = support::run_bounded(
        &["echo", "--target", &target, "--server-pid", "4194303"],
        RUN_TIMEOUT,
    );
    assert_eq!(gone.code, Some(2), "{}", gone.stderr);
    assert_eq!(gone.stderr_lines().len(), 1, "{}", gone.stderr);
    assert!(
        gone.stderr.contains("--server-pid 4194303"),
        "{}",
        gone.stderr
    );
}
