//! Open loop (`--rate`) against the built-in server: the schedule is kept, and a stalled server
//! shows in the latency measured from the intended send time but not in the uncorrected one.
//! Also: source addresses (`--bind`), many connections (open-file limit, connect times), and the
//! per-second timeline.

mod support;

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use support::{ServeProcess, f64_at, proto_run, run_json_within, u64_at};

/// These tests measure timing: one at a time, so they do not share the two cores with each other.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Percentile `p` of a latency distribution in the JSON report.
fn percentile(dist: &Value, p: f64) -> f64 {
    dist.as_array()
        .expect("a distribution")
        .iter()
        .find(|x| x["percentile"].as_f64() == Some(p))
        .and_then(|x| x["latency_ms"].as_f64())
        .unwrap_or_else(|| panic!("no p{p} in {dist}"))
}

#[test]
fn a_fixed_rate_is_kept_within_one_percent() {
    let _one = serial();
    let report = run_json_within(
        &[
            "echo", "--rate", "2000", "-z", "5s", "-c", "20", "--proto", "both",
        ],
        Duration::from_secs(60),
    );
    for proto in ["http", "grpc"] {
        let run = proto_run(&report, proto);
        // 5 s at 2000/s: exactly 10,000 sends are scheduled
        assert_eq!(u64_at(run, "/summary/count"), 10_000, "{proto}");
        assert_eq!(u64_at(run, "/summary/failed"), 0, "{proto}");
        let achieved = f64_at(run, "/open_loop/achieved_rate");
        assert!(
            (achieved - 2000.0).abs() <= 20.0,
            "{proto}: achieved {achieved}/s for a 2000/s target"
        );
        assert_eq!(f64_at(run, "/open_loop/target_rate"), 2000.0);
        assert_eq!(run["open_loop"]["timer"], "timerfd", "{proto}");
        // each request's corrected latency counts from no later than its actual send
        for p in [50.0, 90.0, 99.0, 99.9] {
            let c = percentile(&run["latency_distribution"], p);
            let u = percentile(&run["open_loop"]["uncorrected_distribution"], p);
            assert!(
                c >= u,
                "{proto}: p{p} corrected {c} ms < uncorrected {u} ms"
            );
        }
        // the timeline: five one-second buckets of about 2000 each (the last may hold the tail)
        let timeline = run["timeline"].as_array().unwrap();
        assert!(timeline.len() >= 5, "{proto}: {timeline:?}");
        let total: u64 = timeline
            .iter()
            .map(|b| b["ok"].as_u64().unwrap() + b["errors"].as_u64().unwrap())
            .sum();
        assert_eq!(total, 10_000, "{proto}");
        for b in &timeline[1..4] {
            let rps = b["requests_per_sec"].as_f64().unwrap();
            assert!((1900.0..=2100.0).contains(&rps), "{proto}: {b}");
            assert!(b["p99_ms"].as_f64().unwrap() > 0.0, "{proto}: {b}");
        }
    }
}

/// The server is stopped (SIGSTOP) for 500 ms in the middle of a 1000/s run with 10 clients.
/// About 500 sends come due while it is stopped: measured from their intended time they waited
/// up to 500 ms, which is 1 in 8 requests, so the corrected p99 lands inside the stall. Measured
/// from when they actually went out, only the ~10 requests in flight at the stop waited: 0.25%,
/// below the p99.
fn stall_shows_only_in_corrected_latency(proto: &str, extra: &[&str]) {
    let _one = serial();
    let server = ServeProcess::start(&["--threads", "1"]);
    let target = format!("http://{}", server.target());
    let args: Vec<String> = [
        "echo", "--target", &target, "--proto", proto, "--rate", "1000", "-z", "4s", "-c", "10",
    ]
    .iter()
    .chain(extra)
    .map(|s| s.to_string())
    .collect();
    let runner = std::thread::spawn(move || {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        run_json_within(&refs, Duration::from_secs(60))
    });
    std::thread::sleep(Duration::from_millis(1800));
    server.signal("STOP");
    std::thread::sleep(Duration::from_millis(500));
    server.signal("CONT");
    let report = runner.join().expect("the run");
    let run = proto_run(&report, proto);
    assert_eq!(u64_at(run, "/summary/failed"), 0, "{proto}: {run}");
    let corrected = percentile(&run["latency_distribution"], 99.0);
    let uncorrected = percentile(&run["open_loop"]["uncorrected_distribution"], 99.0);
    assert!(
        corrected >= 250.0,
        "{proto}: corrected p99 {corrected} ms should show the 500 ms stall"
    );
    assert!(
        uncorrected < 100.0,
        "{proto}: uncorrected p99 {uncorrected} ms should not show the stall"
    );
    // the stalled requests themselves are there in both: the slowest is about 500 ms
    let slowest = f64_at(run, "/open_loop/uncorrected_slowest_ms");
    assert!(
        slowest >= 400.0,
        "{proto}: uncorrected slowest {slowest} ms"
    );
    // every client was stuck: the sends due meanwhile went late, and the report says so
    assert!(
        u64_at(run, "/open_loop/late_sends") >= 300,
        "{proto}: {}",
        run["open_loop"]
    );
}

#[test]
fn a_stalled_server_shows_in_corrected_p99_only_grpc() {
    stall_shows_only_in_corrected_latency("grpc", &[]);
}

#[test]
fn a_stalled_server_shows_in_corrected_p99_only_http() {
    stall_shows_only_in_corrected_latency("http", &[]);
}

#[test]
fn a_stalled_server_shows_in_corrected_p99_only_pipelined_http() {
    // 10 clients on 2 connections, up to 5 requests in flight on each
    stall_shows_only_in_corrected_latency("http", &["--pipeline", "5"]);
}

#[test]
fn a_fixed_rate_is_kept_with_pipelining() {
    let _one = serial();
    let report = run_json_within(
        &[
            "echo",
            "--rate",
            "2000",
            "-z",
            "2s",
            "-c",
            "16",
            "--pipeline",
            "8",
            "--proto",
            "http",
        ],
        Duration::from_secs(60),
    );
    let run = proto_run(&report, "http");
    assert_eq!(u64_at(run, "/summary/count"), 4000, "{run}");
    assert_eq!(u64_at(run, "/summary/failed"), 0, "{run}");
    assert_eq!(u64_at(run, "/connections"), 2, "ceil(16 / 8)");
    let achieved = f64_at(run, "/open_loop/achieved_rate");
    assert!(
        (achieved - 2000.0).abs() <= 20.0,
        "achieved {achieved}/s for a 2000/s target"
    );
}

#[test]
fn bind_spreads_connections_over_source_addresses() {
    let _one = serial();
    let report = run_json_within(
        &[
            "echo",
            "--proto",
            "both",
            "-c",
            "8",
            "--conns",
            "4",
            "-n",
            "400",
            "--bind",
            "127.0.0.2-127.0.0.3",
        ],
        Duration::from_secs(60),
    );
    for proto in ["http", "grpc"] {
        let run = proto_run(&report, proto);
        assert_eq!(u64_at(run, "/summary/ok"), 400, "{proto}");
        let sources: BTreeSet<&str> = run["per_connection"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["local_ip"].as_str().unwrap())
            .collect();
        assert_eq!(
            sources,
            BTreeSet::from(["127.0.0.2", "127.0.0.3"]),
            "{proto}"
        );
    }
}

#[test]
fn thousands_of_connections_raise_the_file_limit_and_report_connect_times() {
    let _one = serial();
    // 3000 HTTP/1.1 connections and their server ends are 6000+ descriptors: more than the
    // usual soft limit of 1024, so this only passes when the limit is raised.
    let report = run_json_within(
        &[
            "echo",
            "--proto",
            "http",
            "-c",
            "3000",
            "-n",
            "6000",
            "--connect-rate",
            "20000",
        ],
        Duration::from_secs(120),
    );
    let run = proto_run(&report, "http");
    assert_eq!(u64_at(run, "/summary/ok"), 6000);
    assert_eq!(u64_at(run, "/connect_times/connections"), 3000);
    let p50 = percentile(&run["connect_times"]["distribution"], 50.0);
    assert!(p50 > 0.0 && p50 < 1000.0, "connect p50 {p50} ms");
    // Memory per connection: (mid-run RSS - RSS before the first connect) / connections. Both
    // ends of 3000 connections live in this process (the built-in server), each with its
    // buffers: tens of KiB, not MiB.
    let mem = &run["memory"];
    let kib = |k: &str| u64_at(mem, &format!("/{k}"));
    assert_eq!(mem["includes_server"], true, "{mem}");
    assert!(kib("rss_connected_kib") > kib("rss_baseline_kib"), "{mem}");
    let per_conn = f64_at(mem, "/rss_per_connection_bytes");
    let grown = (kib("rss_steady_kib") - kib("rss_baseline_kib")) * 1024;
    assert_eq!(per_conn, grown as f64 / 3000.0, "{mem}");
    assert!(
        (4096.0..256.0 * 1024.0).contains(&per_conn),
        "{per_conn} B per connection: {mem}"
    );
    // VmHWM as the kernel keeps it (it folds per-thread RSS changes in lazily, by a few MiB)
    assert!(kib("peak_rss_kib") + 4096 >= kib("rss_steady_kib"), "{mem}");
}

/// A server that accepts connections, reads what comes, and never answers.
fn black_hole() -> std::net::SocketAddr {
    support::http_server::spawn(|mut s| support::http_server::drain(&mut s))
}

/// Sends that never happened (no free client within --timeout) are failures of their own kind,
/// and the achieved rate counts only requests written.
#[test]
fn the_achieved_rate_counts_requests_written_not_ticks() {
    let _one = serial();
    let target = format!("http://{}", black_hole());
    let run = support::run_bounded(
        &[
            "echo",
            "--target",
            &target,
            "--proto",
            "http",
            "--rate",
            "1000",
            "-z",
            "1s",
            "-c",
            "2",
            "--timeout",
            "200ms",
            "--format",
            "json",
        ],
        Duration::from_secs(30),
    );
    assert_eq!(run.code, Some(1), "nothing succeeds: {}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let r = proto_run(&report, "http");
    // every scheduled send has an outcome
    assert_eq!(u64_at(r, "/summary/count"), 1000, "{}", r["summary"]);
    // two clients, each waiting 200 ms per request: about 10 requests written per second
    let written = u64_at(r, "/summary/written");
    assert!((2..=16).contains(&written), "{written} written");
    let o = &r["open_loop"];
    let achieved = f64_at(o, "/achieved_rate");
    let total = f64_at(r, "/summary/total_s");
    assert!(
        (achieved - written as f64 / total).abs() < 1e-6,
        "achieved {achieved}/s, {written} written in {total} s"
    );
    assert!(
        achieved < 50.0,
        "achieved {achieved}/s against a server that never answers"
    );
    let expired = u64_at(o, "/expired_sends");
    assert!(expired + written >= 950, "{o}");
    let late: u64 = r["error_distribution"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "late")
        .map(|e| e["count"].as_u64().unwrap())
        .sum();
    assert_eq!(late, expired, "{}", r["error_distribution"]);
}

#[test]
fn connect_rate_ramps_the_connections_up() {
    let _one = serial();
    // 200 connections at 400/s take half a second to open; without the ramp, a few ms
    let run = support::run_bounded(
        &[
            "echo",
            "--proto",
            "http",
            "-c",
            "200",
            "-n",
            "200",
            "--connect-rate",
            "400",
            "--format",
            "json",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.elapsed >= Duration::from_millis(480),
        "200 connections at 400/s opened in {:?}",
        run.elapsed
    );
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let slowest = f64_at(proto_run(&report, "http"), "/connect_times/slowest_ms");
    assert!(slowest < 400.0, "one connect took {slowest} ms");
}
