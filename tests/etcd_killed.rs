//! Fault injection against a real etcd: the server is SIGKILLed in the middle of a run (and in
//! one case restarted on the same ports and data directory). wirebench must keep going, count
//! the failures under the right kinds, recover once etcd is back, and end on time.
//!
//! etcd's store revision is the outside check: every applied put advances it by one, so the puts
//! wirebench counted as OK can be no more than the revision delta, and the delta can exceed them
//! by no more than the failed requests (puts etcd applied whose responses were lost).

mod support;

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use support::{Etcd, Run, proto_run, report_of, run_bounded_on_thread, u64_at};

/// Error kinds a killed or restarting etcd may legitimately cause.
const FAULT_KINDS: [&str; 8] = [
    "io",
    "closed",
    "connect",
    "timeout",
    "goaway",
    "h2",
    "rst_stream",
    "etcd",
];

/// When etcd is killed, counted from starting wirebench.
const KILL_AFTER: Duration = Duration::from_millis(1500);
/// How long etcd stays down before the restart.
const DOWN_FOR: Duration = Duration::from_millis(1500);
/// The run's --timeout (also how long a client in total mode keeps trying to reconnect).
const TIMEOUT: Duration = Duration::from_secs(2);
/// The run's -z.
const DURATION: Duration = Duration::from_secs(6);
/// Slack on top of the bounds derived from the run's settings (process start, teardown, a
/// loaded CI machine, and up to one capped 1 s reconnect backoff).
const MARGIN: Duration = Duration::from_secs(2);
/// The test kills wirebench after this long (it would fail the bounds above long before).
const HARD_LIMIT: Duration = Duration::from_secs(20);

/// Starts `wirebench etcd put ... --format json` on a background thread.
fn spawn_put(endpoint: &str, proto: &str, stop: [&str; 2]) -> JoinHandle<Run> {
    run_bounded_on_thread(
        &[
            "etcd",
            "put",
            "--endpoints",
            endpoint,
            "--proto",
            proto,
            "-c",
            "4",
            stop[0],
            stop[1],
            "--timeout",
            "2s",
            "--connect-timeout",
            "1s",
            "--format",
            "json",
        ],
        HARD_LIMIT,
    )
}

fn sleep_until(t: Instant) {
    std::thread::sleep(t.saturating_duration_since(Instant::now()));
}

/// `error_distribution` as (kind, message, count).
fn errors(run: &Value) -> Vec<(String, String, u64)> {
    run["error_distribution"]
        .as_array()
        .unwrap_or_else(|| panic!("error_distribution[] in {run:#}"))
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap_or_default().to_string(),
                e["message"].as_str().unwrap_or_default().to_string(),
                u64_at(e, "/count"),
            )
        })
        .collect()
}

/// The figures of a fault run the tests look at.
struct Outcome {
    ok: u64,
    failed: u64,
    /// error_distribution as (kind, message, count)
    errors: Vec<(String, String, u64)>,
    reconnects: u64,
}

/// Checks what every fault test expects of a report and returns its figures.
fn check_common(run: &Run, proto: &str, ctx: &str) -> Outcome {
    assert!(
        !run.stderr.contains("panicked"),
        "{ctx}: wirebench panicked: {run:#?}"
    );
    let report = report_of(run);
    let r = proto_run(&report, proto);
    let s = &r["summary"];
    let (count, ok, failed) = (u64_at(s, "/count"), u64_at(s, "/ok"), u64_at(s, "/failed"));
    let dist = errors(r);
    let ctx = format!("{ctx}\nsummary: {s:#}\nerror_distribution: {dist:#?}");
    assert_eq!(count, ok + failed, "{ctx}");
    // Killing etcd must show: as failed requests, or (duration mode, where a turn that finds
    // no connection is no request) as failed connection attempts. A client thread that was off
    // the CPU when etcd died may read every in-flight response and then the EOF, and meet the
    // outage only on its next turn.
    let connect_failures = u64_at(r, "/wire/connect_failures");
    assert!(
        failed + connect_failures > 0,
        "killing etcd must fail some requests or connection attempts; {ctx}"
    );
    assert_eq!(
        dist.iter().map(|e| e.2).sum::<u64>(),
        failed,
        "error_distribution must add up to summary.failed; {ctx}"
    );
    for (kind, message, n) in &dist {
        assert!(
            FAULT_KINDS.contains(&kind.as_str()),
            "unexpected error kind {kind:?} ({message:?}, {n}x); {ctx}"
        );
    }
    Outcome {
        ok,
        failed,
        errors: dist,
        reconnects: u64_at(r, "/wire/reconnects"),
    }
}

/// `-z 6s`: etcd is killed after 1.5 s and restarted on the same ports 1.5 s later; the run
/// recovers, counts the outage as failures and ends on time.
fn killed_and_restarted(proto: &str) {
    let mut etcd = Etcd::start();
    let endpoint = etcd.endpoint();
    let r_start = etcd.revision();

    let t0 = Instant::now();
    let bench = spawn_put(&endpoint, proto, ["-z", "6s"]);
    sleep_until(t0 + KILL_AFTER);
    let r_kill = etcd.revision();
    etcd.stop();
    let killed_at = t0.elapsed();
    sleep_until(t0 + KILL_AFTER + DOWN_FOR);
    etcd.restart();
    let restarted_at = t0.elapsed();
    let r_restart = etcd.revision();
    let run = bench
        .join()
        .expect("the wirebench run panicked (see above)");
    let r_end = etcd.revision();

    let ctx = format!(
        "--proto {proto} -z 6s: killed at {killed_at:?}, back (with a leader) at \
         {restarted_at:?}, run took {:?}, exit {:?}; revisions: start {r_start}, before the kill \
         {r_kill}, after the restart {r_restart}, end {r_end}\nstderr: {}",
        run.elapsed, run.code, run.stderr
    );
    let limit = DURATION + TIMEOUT + MARGIN * 2;
    assert!(
        run.elapsed < limit,
        "the run must end within {limit:?}; {ctx}"
    );
    assert_eq!(run.code, Some(0), "{ctx}\nstdout: {}", run.stdout);
    let Outcome {
        ok,
        failed,
        errors: dist,
        reconnects,
    } = check_common(&run, proto, &ctx);
    let ctx = format!("{ctx}\nok {ok}, failed {failed}\nerror_distribution: {dist:#?}");

    assert!(
        reconnects > 0,
        "connections must have been replaced (wire.reconnects = 0); {ctx}"
    );
    // In duration mode a turn that finds no connection is no request: the connect attempts
    // while etcd was down are counted apart, not in Count (their number would only measure the
    // backoff). What is in Count and was not written is at most a few per client.
    let report = report_of(&run);
    let r = proto_run(&report, proto);
    let (count, written) = (u64_at(r, "/summary/count"), u64_at(r, "/summary/written"));
    let connect_failures = u64_at(r, "/wire/connect_failures");
    eprintln!("{proto}: count {count}, written {written}, connect failures {connect_failures}");
    assert!(
        connect_failures >= 4,
        "{connect_failures} connect failures while etcd was down; {ctx}"
    );
    assert!(
        count - written <= 8,
        "{} requests in Count were never written ({connect_failures} connect failures); {ctx}",
        count - written
    );
    // etcd applied puts after it came back ...
    assert!(r_end > r_kill, "no put applied after the restart; {ctx}");
    assert!(r_end > r_restart, "no put applied after the restart; {ctx}");
    // ... and wirebench counted their responses: more OK puts than etcd had applied by the kill.
    let applied_before_kill = (r_kill - r_start) as u64;
    assert!(
        ok > applied_before_kill,
        "summary.ok ({ok}) must exceed the {applied_before_kill} puts applied before the kill; {ctx}"
    );
    // Every OK put was applied; every applied put was OK or is among the failed (response lost).
    let applied = (r_end - r_start) as u64;
    assert!(
        ok <= applied,
        "{ok} OK puts but etcd applied only {applied}; {ctx}"
    );
    assert!(
        applied <= ok + failed,
        "etcd applied {applied} puts, more than {ok} OK + {failed} failed; {ctx}"
    );
}

#[test]
fn etcd_killed_and_restarted_mid_run_http() {
    killed_and_restarted("http");
}

#[test]
fn etcd_killed_and_restarted_mid_run_grpc() {
    killed_and_restarted("grpc");
}

/// `-n 1000000`: etcd is killed after 1.5 s and stays down; every client gives up once it has
/// been unable to connect for longer than --timeout, counting its remaining quota as failed.
fn stopped_in_total_mode(proto: &str) {
    const N: u64 = 1_000_000;
    let mut etcd = Etcd::start();
    let endpoint = etcd.endpoint();
    let r_start = etcd.revision();

    let t0 = Instant::now();
    let bench = spawn_put(&endpoint, proto, ["-n", "1000000"]);
    sleep_until(t0 + KILL_AFTER);
    let r_kill = etcd.revision();
    etcd.stop();
    let killed_at = t0.elapsed();
    let run = bench
        .join()
        .expect("the wirebench run panicked (see above)");
    // Bring etcd back only to read what it applied.
    etcd.restart();
    let r_end = etcd.revision();

    let ctx = format!(
        "--proto {proto} -n {N}: killed at {killed_at:?}, run took {:?}, exit {:?}; revisions: \
         start {r_start}, before the kill {r_kill}, end {r_end}\nstderr: {}",
        run.elapsed, run.code, run.stderr
    );
    let limit = killed_at + TIMEOUT + MARGIN;
    assert!(
        run.elapsed < limit,
        "the run must end by itself within {limit:?} (kill + --timeout + margin); {ctx}"
    );
    assert!(
        r_kill > r_start,
        "puts must have succeeded before the kill; {ctx}"
    );
    assert_eq!(run.code, Some(0), "{ctx}\nstdout: {}", run.stdout);
    let Outcome {
        ok,
        failed,
        errors: dist,
        ..
    } = check_common(&run, proto, &ctx);
    let ctx = format!("{ctx}\nok {ok}, failed {failed}\nerror_distribution: {dist:#?}");

    assert!(ok > 0, "{ctx}");
    assert_eq!(
        ok + failed,
        N,
        "the clients' unsent quota must be counted as failed; {ctx}"
    );
    let gave_up: u64 = dist
        .iter()
        .filter(|(kind, message, _)| kind == "connect" && message.contains("gave up"))
        .map(|e| e.2)
        .sum();
    assert!(
        gave_up > 0,
        "expected a \"connect\" failure saying the clients gave up; {ctx}"
    );
    let applied = (r_end - r_start) as u64;
    assert!(
        ok <= applied,
        "{ok} OK puts but etcd applied only {applied}; {ctx}"
    );
    assert!(
        applied <= ok + (failed - gave_up),
        "etcd applied {applied} puts, more than {ok} OK + {} sent and failed; {ctx}",
        failed - gave_up
    );
}

#[test]
fn stopped_etcd_in_total_mode_ends_within_timeout_http() {
    stopped_in_total_mode("http");
}

#[test]
fn stopped_etcd_in_total_mode_ends_within_timeout_grpc() {
    stopped_in_total_mode("grpc");
}
