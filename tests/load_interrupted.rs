//! Ctrl-C (SIGINT) sent to the real binary mid-run: it stops sending, lets the requests in
//! flight finish, prints the report marked interrupted and exits 130; the report's counts
//! equal what the server saw (etcd's revision counter: every put it acknowledged was applied,
//! and nothing written goes uncounted). A second Ctrl-C exits at once; one before the first
//! request prints one line.

mod support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::{Etcd, Interrupts, Run, ServeProcess, f64_at, proto_run, run_interrupted, u64_at};

const LIMIT: Duration = Duration::from_secs(90);
/// 128 + SIGINT, as docs/exit-codes.md says.
const INTERRUPTED: i32 = 130;

/// The tests one at a time: each leaves the two cores to its own run.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// SIGINT `after` the first stderr line holding `marker`.
fn at(marker: &'static str, after: Duration) -> Interrupts {
    Interrupts {
        marker: Some(marker),
        after,
        then: None,
    }
}

/// The run's JSON report, after checking that it was interrupted, printed, and exited 130.
fn interrupted_report(run: &Run) -> Value {
    assert_eq!(run.code, Some(INTERRUPTED), "{run:#?}");
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {run:#?}"))
}

/// A put run's counts against etcd's revision counter: the puts Ctrl-C found in flight were
/// answered, so every put written was acknowledged and applied, once.
fn check_puts(r: &Value, delta: i64, what: &str) {
    assert_eq!(r["interrupted"], true, "{what}: {r:#}");
    let s = &r["summary"];
    let (ok, written) = (u64_at(s, "/ok"), u64_at(s, "/written"));
    assert!(ok > 0, "{what}: {s:#}");
    assert_eq!(u64_at(s, "/failed"), 0, "{what}: {s:#}");
    assert_eq!(written, ok, "{what}: {s:#}");
    assert_eq!(ok as i64, delta, "{what}: revision delta {delta}, {s:#}");
}

/// `etcd put` for up to 60 s, interrupted `after` its measured window began (the `--interval`
/// line at 500 ms marks it); returns the report and the revision delta.
fn put_interrupted(etcd: &Etcd, extra: &[&str]) -> (Value, i64) {
    let endpoint = etcd.endpoint();
    let before = etcd.revision();
    let mut args = vec![
        "etcd",
        "put",
        "--endpoints",
        &endpoint,
        "--proto",
        "http",
        "-c",
        "8",
        "-z",
        "60s",
        "--interval",
        "500ms",
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let started = Instant::now();
    let run = run_interrupted(&args, &at("0.5s", Duration::from_millis(700)), LIMIT);
    assert!(started.elapsed() < Duration::from_secs(20), "{run:#?}");
    let report = interrupted_report(&run);
    let delta = etcd.revision() - before;
    (proto_run(&report, "http").clone(), delta)
}

#[test]
fn closed_loop_stops_reports_every_put_and_exits_130() {
    let _one = serial();
    let etcd = Etcd::start();
    let (r, delta) = put_interrupted(&etcd, &[]);
    check_puts(&r, delta, "closed loop");
    // the window ended at the interrupt, not at -z
    assert!(f64_at(&r, "/summary/total_s") < 10.0, "{r:#}");
}

#[test]
fn open_loop_stops_reports_every_put_and_exits_130() {
    let _one = serial();
    let etcd = Etcd::start();
    let (r, delta) = put_interrupted(&etcd, &["--rate", "2000"]);
    check_puts(&r, delta, "open loop");
    // no send expired: Ctrl-C ends the schedule, it does not fail its remaining sends
    assert_eq!(u64_at(&r, "/open_loop/expired_sends"), 0, "{r:#}");
    // the headline rate is the requests written over the window
    let rate = f64_at(&r, "/summary/requests_per_sec");
    let written = u64_at(&r, "/summary/written") as f64 / f64_at(&r, "/summary/total_s");
    assert!(
        (rate - written).abs() <= written * 1e-9,
        "{rate} vs {written}"
    );
}

#[test]
fn a_watch_run_stops_its_puts_and_still_proves_every_event() {
    let _one = serial();
    let etcd = Etcd::start();
    let before = etcd.revision();
    let endpoint = etcd.endpoint();
    let run = run_interrupted(
        &[
            "etcd",
            "watch",
            "--endpoints",
            &endpoint,
            "--proto",
            "both",
            "--watchers",
            "20",
            "--put-total",
            "1000000",
            "--put-rate",
            "2000",
            "--put-clients",
            "4",
            "--format",
            "json",
        ],
        // 20 watches are created in milliseconds: the puts are under way
        &Interrupts {
            marker: None,
            after: Duration::from_secs(3),
            then: None,
        },
        LIMIT,
    );
    let report = interrupted_report(&run);
    let runs = report["runs"].as_array().unwrap();
    // the second stack never started
    assert_eq!(runs.len(), 1, "{report:#}");
    let r = &runs[0];
    assert_eq!(r["interrupted"], true, "{r:#}");
    let puts = &r["puts"];
    let ok = u64_at(puts, "/ok");
    assert!(ok > 0, "{puts:#}");
    assert_eq!(u64_at(puts, "/failed"), 0, "{puts:#}");
    assert_eq!(
        ok + u64_at(puts, "/not_sent"),
        1_000_000,
        "every put is ok, failed or not sent: {puts:#}"
    );
    assert!(
        puts["not_sent_reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "interrupted"),
        "{puts:#}"
    );
    assert_eq!(ok as i64, etcd.revision() - before, "{puts:#}");
    // every watcher saw every acknowledged put, once
    assert_eq!(u64_at(r, "/expected_events"), ok * 20, "{r:#}");
    assert_eq!(u64_at(r, "/events"), ok * 20, "{r:#}");
    assert_eq!(u64_at(r, "/missing"), 0, "{r:#}");
    assert_eq!(u64_at(r, "/duplicated"), 0, "{r:#}");
}

#[test]
fn a_sweep_stops_between_rows_and_its_rows_count_every_put() {
    let _one = serial();
    let etcd = Etcd::start();
    let before = etcd.revision();
    let endpoint = etcd.endpoint();
    let run = run_interrupted(
        &[
            "sweep",
            "etcd",
            "put",
            "--endpoints",
            &endpoint,
            "--target",
            "first",
            "--key-size",
            "64",
            "--clients",
            "1,4,8,16",
            "--proto",
            "http,grpc",
            "-z",
            "2s",
            "--format",
            "json",
        ],
        // the first row is done: the second is under way
        &at("wirebench sweep: 1/8", Duration::from_millis(800)),
        LIMIT,
    );
    let report = interrupted_report(&run);
    assert_eq!(report["interrupted"], true, "{report:#}");
    let rows = report["rows"].as_array().unwrap();
    assert!((2..8).contains(&rows.len()), "{report:#}");
    assert_eq!(rows.last().unwrap()["interrupted"], true, "{report:#}");
    assert!(
        rows[..rows.len() - 1]
            .iter()
            .all(|r| r["interrupted"] == false)
    );
    let ok: u64 = rows.iter().map(|r| u64_at(r, "/ok")).sum();
    assert!(rows.iter().all(|r| u64_at(r, "/failed") == 0), "{report:#}");
    assert_eq!(ok as i64, etcd.revision() - before, "{report:#}");
}

#[test]
fn ctrl_c_before_the_first_request_prints_one_line() {
    let _one = serial();
    let server = ServeProcess::start(&["--threads", "1"]);
    let target = format!("http://{}", server.target());
    // the run waits at its start line for --start-at (Unix seconds), a minute away
    let start = std::time::SystemTime::now() + Duration::from_secs(60);
    let start = start
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
        .to_string();
    let run = run_interrupted(
        &[
            "echo",
            "--target",
            &target,
            "--proto",
            "http",
            "-n",
            "100",
            "--start-at",
            &start,
        ],
        &Interrupts {
            marker: None,
            after: Duration::from_secs(1),
            then: None,
        },
        LIMIT,
    );
    assert_eq!(run.code, Some(INTERRUPTED), "{run:#?}");
    assert_eq!(run.stdout, "", "{run:#?}");
    assert_eq!(
        run.stderr_lines(),
        ["wirebench: interrupted before the first request: nothing to report"],
        "{run:#?}"
    );
    assert!(run.elapsed < Duration::from_secs(10), "{run:#?}");
}

#[test]
fn a_second_ctrl_c_exits_at_once() {
    let _one = serial();
    // every answer takes 5 s: after the first Ctrl-C the run waits for the requests in flight
    let server = ServeProcess::start(&["--threads", "1", "--delay", "5s"]);
    let target = format!("http://{}", server.target());
    let run = run_interrupted(
        &[
            "echo",
            "--target",
            &target,
            "--proto",
            "http",
            "-c",
            "2",
            "-z",
            "60s",
            "--timeout",
            "30s",
        ],
        &Interrupts {
            marker: None,
            after: Duration::from_secs(1),
            then: Some(Duration::from_millis(500)),
        },
        LIMIT,
    );
    assert_eq!(run.code, Some(INTERRUPTED), "{run:#?}");
    // no report: the second Ctrl-C did not wait for the answers
    assert_eq!(run.stdout, "", "{run:#?}");
    assert!(run.elapsed < Duration::from_secs(4), "{run:#?}");
}
