//! `--find-max`: the capacity search against the built-in server holding each request 2 ms
//! (`serve --delay 2ms`), where -c clients in flight bound the capacity by c / 2 ms; the
//! answer against the rate the same clients reach in a closed loop, measured here; its bounds
//! (steps, time, Ctrl-C), a client that is the limit, and bad input.

mod support;

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;
use support::{
    Cluster, Interrupts, ServeProcess, proto_run, report_of, run_bounded, run_interrupted,
};

const LIMIT: Duration = Duration::from_secs(120);
/// 128 + SIGINT, as docs/exit-codes.md says.
const INTERRUPTED: i32 = 130;
/// The server's delay per request, as `serve --delay` gets it.
const DELAY: Duration = Duration::from_millis(2);

/// These tests measure timing: one at a time, so they do not share the two cores.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A search's flags: short steps, so each search takes seconds, and an objective every rate
/// the server keeps up with meets (`set` it for a sharper one).
fn search_args<'a>(target: &'a str, clients: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "echo",
        "--target",
        target,
        "-c",
        clients,
        "--find-max",
        "p99<50ms",
        "--start-rate",
        "500",
        "--step",
        "1s",
        "--settle",
        "300ms",
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    args
}

/// The built-in server holding each request `DELAY`, on one thread.
fn delayed_server() -> ServeProcess {
    ServeProcess::start(&["--delay", "2ms", "--no-h3", "--threads", "1"])
}

/// The rates of a search's steps, in order.
fn rates(c: &Value) -> Vec<f64> {
    c["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["rate"].as_f64().unwrap())
        .collect()
}

/// `args` with `flag`'s value replaced.
fn set<'a>(mut args: Vec<&'a str>, flag: &str, value: &'a str) -> Vec<&'a str> {
    let at = args.iter().position(|a| *a == flag).expect("the flag");
    args[at + 1] = value;
    args
}

/// A run's capacity section, after checking what every search must hold: each step's
/// requests are counted, the run in the report is the confirmation at the answer, and the
/// answer is the highest rate met below the lowest broken.
fn capacity(run: &Value) -> &Value {
    let c = &run["capacity"];
    let steps = c["steps"].as_array().unwrap_or_else(|| panic!("{run:#}"));
    let sum: u64 = steps.iter().map(|s| s["requests"].as_u64().unwrap()).sum();
    assert_eq!(c["requests"].as_u64(), Some(sum), "{c:#}");
    for s in steps {
        assert!(s["requests"].as_u64().unwrap() > 0, "{s:#}");
        let met = s["met"].as_bool().unwrap();
        assert_eq!(met, s["broke"].as_array().unwrap().is_empty(), "{s:#}");
    }
    if let Some(answer) = c["answer_rps"].as_f64() {
        let met = steps
            .iter()
            .filter(|s| s["met"] == true && s["phase"] != "confirm")
            .map(|s| s["rate"].as_f64().unwrap());
        assert_eq!(met.fold(0.0, f64::max), answer, "{c:#}");
        if let Some(broken) = c["broken_rps"].as_f64() {
            assert!(broken > answer, "{c:#}");
        }
        // the run the report shows is the last confirmation that met, else the step at the
        // answer that met
        let last = steps.last().unwrap();
        if last["phase"] == "confirm" {
            assert_eq!(last["rate"].as_f64(), Some(answer), "{c:#}");
        }
        assert_eq!(run["open_loop"]["target_rate"].as_f64(), Some(answer));
        let shown = steps
            .iter()
            .rev()
            .find(|s| s["met"] == true && s["rate"].as_f64() == Some(answer))
            .unwrap();
        assert_eq!(run["summary"]["count"], shown["requests"], "{c:#}");
    }
    c
}

/// The rate each stack of `protos` reaches with `clients` in flight in a closed loop against
/// `target` (2 s): the most the target answers with that many in flight, which no open-loop
/// rate can exceed for long.
fn closed_loop_rates(target: &str, clients: &str, protos: &str) -> Vec<(String, f64)> {
    let run = run_bounded(
        &[
            "echo",
            "--target",
            target,
            "-c",
            clients,
            "--proto",
            protos,
            "--threads",
            "1",
            "-z",
            "2s",
            "--format",
            "json",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    let report = report_of(&run);
    report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let rate = r["summary"]["ok_per_sec"].as_f64().unwrap();
            (r["proto"].as_str().unwrap().to_string(), rate)
        })
        .collect()
}

/// The objective. Optimized: p99 < 5 ms. A debug build holds each request 2.9 ms
/// rather than 2.1 at the median (its own processing on both ends), so one stall of the machine
/// breaks a p99 under 5 ms at any rate: p90 < 5 ms there. `scripts/long.sh` runs this test
/// optimized.
const OBJECTIVE: &str = if cfg!(debug_assertions) {
    "p90<5ms"
} else {
    "p99<5ms"
};
/// How far below the closed loop's rate the answer may land. On this kind of machine (two
/// virtual CPUs) the answer under p99 < 5 ms, optimized, landed at 82-99% of the closed loop's
/// rate: near it, the stalls of the machine break the objective on some runs and not others.
/// A debug build's answers under p90 < 5 ms landed at 79.7-99% (79.7% once in CI: 1437.5 req/s
/// against 1804 for HTTP/1.1 at -c 4, the step at 1500 broken by a p90 of 6.7 ms; 82% for gRPC
/// at -c 4 in one of three runs after it), one bisection step lower than the rest.
const BELOW: f64 = if cfg!(debug_assertions) { 0.25 } else { 0.2 };

#[test]
fn the_answer_lands_near_the_rate_the_clients_reach_and_below_clients_over_the_delay() {
    let _one = serial();
    let server = delayed_server();
    let target = server.url("");
    for (clients, protos) in [("4", "both"), ("8", "grpc")] {
        // each request is held 2 ms: c in flight answer at most c / 2 ms
        let bound = clients.parse::<f64>().unwrap() / DELAY.as_secs_f64();
        let reached = closed_loop_rates(&target, clients, protos);
        let mut args = search_args(&target, clients, &["--proto", protos, "--threads", "1"]);
        if !cfg!(debug_assertions) {
            args = set(args, "--step", "2s");
            args.extend(["--retries", "2"]);
        }
        let run = run_bounded(&set(args, "--find-max", OBJECTIVE), LIMIT);
        assert_eq!(run.code, Some(0), "{run:#?}");
        let report = report_of(&run);
        for (proto, knee) in &reached {
            assert!(
                *knee <= bound,
                "{proto} -c {clients}: {knee} req/s above {bound}"
            );
            let r = proto_run(&report, proto);
            let c = capacity(r);
            assert_eq!(c["ending"], "converged", "{proto} -c {clients}: {c:#}");
            let answer = c["answer_rps"].as_f64().unwrap();
            // no rate above c / delay is sustained: each request is held that long
            assert!(
                answer >= (1.0 - BELOW) * knee && answer <= bound,
                "{proto} -c {clients}: {answer} req/s against {knee} in a closed loop: {c:#}"
            );
            assert_eq!(c["confirmation"]["runs"], 1, "{c:#}");
            // the steps rose by doubling from --start-rate before the first break
            let rates = rates(c);
            assert_eq!(&rates[..2], &[500.0, 1000.0], "{proto}: {rates:?}");
            eprintln!(
                "{proto} -c {clients}: {answer} req/s; closed loop {knee:.0}; c / delay {bound}"
            );
        }
        if protos == "both" {
            let ratio = report["ratios"]["capacity_rps"].as_f64().unwrap();
            let (h, g) = (
                proto_run(&report, "http")["capacity"]["answer_rps"].as_f64(),
                proto_run(&report, "grpc")["capacity"]["answer_rps"].as_f64(),
            );
            assert!((ratio - g.unwrap() / h.unwrap()).abs() < 1e-9);
        }
    }
}

#[test]
fn the_text_report_shows_the_answer_and_the_steps() {
    let _one = serial();
    let server = delayed_server();
    let target = server.url("");
    let mut args = search_args(&target, "4", &["--proto", "grpc", "--max-steps", "3"]);
    args.retain(|a| *a != "json" && *a != "--format");
    let run = run_bounded(&args, LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    let out = &run.stdout;
    assert!(out.contains("Capacity (--find-max p99<50ms): "), "{out}");
    assert!(out.contains("stopped at --max-steps"), "{out}");
    for rate in ["500", "1000", "2000"] {
        assert!(
            out.lines()
                .any(|l| l.split_whitespace().nth(2) == Some(rate)),
            "no step at {rate}: {out}"
        );
    }
    assert!(
        run.stderr.contains("warning: gRPC: stopped at --max-steps"),
        "{}",
        run.stderr
    );
}

#[test]
fn no_rate_that_meets_exits_3_after_halving_to_the_floor() {
    let _one = serial();
    let server = delayed_server();
    let target = server.url("");
    // the server holds each request 2 ms: a p99 under 1 ms is never met
    let args = search_args(&target, "4", &["--proto", "http"]);
    let mut args = set(set(args, "--start-rate", "100"), "--find-max", "p99<1ms");
    // every step breaks the same way: measured once each
    args.extend(["--retries", "0"]);
    let run = run_bounded(&args, LIMIT);
    assert_eq!(run.code, Some(3), "{run:#?}");
    let report = report_of(&run);
    let c = capacity(proto_run(&report, "http"));
    assert_eq!(c["ending"], "none_met", "{c:#}");
    assert!(c["answer_rps"].is_null(), "{c:#}");
    // 100, 50, 25, then the floor: 20 requests in a 1 s step
    let rates = rates(c);
    assert_eq!(rates, [100.0, 50.0, 25.0, 20.0], "{c:#}");
    assert!(
        run.stderr
            .lines()
            .any(|l| l == "error: --find-max: no HTTP/1.1 rate tried met p99<1ms"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_search_stops_at_max_duration_and_at_ctrl_c_with_the_best_answer_so_far() {
    let _one = serial();
    let server = delayed_server();
    let target = server.url("");
    // three 1.3 s steps fit in 5 s, with their connects; not a fourth
    let run = run_bounded(
        &search_args(&target, "4", &["--proto", "grpc", "--max-duration", "5s"]),
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(run.elapsed < Duration::from_secs(8), "{:?}", run.elapsed);
    let report = report_of(&run);
    let c = capacity(proto_run(&report, "grpc"));
    assert_eq!(c["ending"], "time", "{c:#}");
    let steps = c["steps"].as_array().unwrap().len();
    assert!((2..=3).contains(&steps), "{c:#}");
    assert!(c["elapsed_s"].as_f64().unwrap() <= 5.0, "{c:#}");

    // Ctrl-C once the second step has reported
    let run = run_interrupted(
        &search_args(&target, "4", &["--proto", "grpc"]),
        &Interrupts {
            marker: Some("gRPC step 2 at"),
            after: Duration::from_millis(500),
            then: None,
        },
        LIMIT,
    );
    assert_eq!(run.code, Some(INTERRUPTED), "{run:#?}");
    let report = report_of(&run);
    let r = proto_run(&report, "grpc");
    let c = capacity(r);
    assert_eq!(c["ending"], "interrupted", "{c:#}");
    // 500 and 1000 req/s were met before the third step was cut short
    assert_eq!(c["answer_rps"].as_f64(), Some(1000.0), "{c:#}");
    let steps = c["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3, "{c:#}");
    assert_eq!(steps[2]["interrupted"], true, "{c:#}");
    assert!(c["confirmation"].is_null(), "{c:#}");
    assert!(run.elapsed < Duration::from_secs(10), "{:?}", run.elapsed);
}

#[test]
fn a_client_that_cannot_pace_the_rate_is_reported_as_the_limit() {
    let _one = serial();
    let server = ServeProcess::start(&["--no-h3", "--threads", "1"]);
    let target = server.url("");
    // one client thread asked for 500,000 requests a second: its schedule falls behind
    let run = run_bounded(
        &[
            "echo",
            "--target",
            &target,
            "--proto",
            "http",
            "-c",
            "50",
            "--threads",
            "1",
            "--find-max",
            "p99<1s",
            "--start-rate",
            "500000",
            "--step",
            "500ms",
            // no settle: the measured sends start at once, so the first ones are answered
            // (a settle's 100,000 sends would hold the thread past the window)
            "--settle",
            "0s",
            "--format",
            "json",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    let report = report_of(&run);
    let c = capacity(proto_run(&report, "http"));
    assert_eq!(c["ending"], "client_bound", "{c:#}");
    let step = &c["steps"][0];
    assert_eq!(step["client_bound"], true, "{step:#}");
    assert!(step["overdue_share"].as_f64().unwrap() > 0.5, "{step:#}");
    assert!(
        run.stderr
            .contains("warning: HTTP/1.1: the client was the limit"),
        "{}",
        run.stderr
    );
}

#[test]
fn bad_search_flags_are_one_line_and_exit_2() {
    for (extra, words) in [
        (
            vec!["--find-max", "p98<5ms"],
            "--find-max \"p98<5ms\": unknown figure",
        ),
        (
            vec!["--find-max", "p99"],
            "--find-max \"p99\": no comparison",
        ),
        (
            vec!["--find-max", "p99<5ms", "--rate", "100"],
            "--find-max chooses each step's rate and length: drop --rate",
        ),
        (vec!["--find-max", "p99<5ms", "-z", "10s"], "drop -z"),
        (
            vec!["--find-max", "p99<5ms", "--precision", "0"],
            "--precision \"0\"",
        ),
        (
            vec!["--find-max", "p99<5ms", "--start-rate", "0"],
            "--start-rate must be a number of requests per second",
        ),
        (
            vec!["--find-max", "p99<5ms", "--max-steps", "0"],
            "--max-steps must be between 1 and 100",
        ),
        (
            vec!["--find-max", "p99<5ms", "--max-duration", "1s"],
            "--max-duration 1s is shorter than one step",
        ),
        (
            vec!["--find-max", "h2.p99<5ms", "--proto", "grpc"],
            "--find-max \"h2.p99<5ms\": the h2 stack does not run",
        ),
    ] {
        let mut args = vec!["echo", "--target", "http://127.0.0.1:9"];
        args.extend(extra.iter().copied());
        let run = run_bounded(&args, Duration::from_secs(20));
        assert_eq!(run.code, Some(2), "{args:?}: {run:#?}");
        let lines = run.stderr_lines();
        assert_eq!(lines.len(), 1, "{args:?}: {run:#?}");
        assert!(lines[0].contains(words), "{args:?}: {}", lines[0]);
    }
}

/// The search's flags for etcd and the other short searches: an objective every rate met so
/// far meets, four steps (200, 400, 800, 1,600 req/s), each 500 ms after 200 ms.
const FOUR_STEPS: &[&str] = &[
    "--find-max",
    "p99<200ms",
    "--start-rate",
    "200",
    "--step",
    "500ms",
    "--settle",
    "200ms",
    "--max-steps",
    "4",
];

#[test]
fn every_put_of_every_step_reaches_etcds_revision_and_the_sweep_gets_its_columns() {
    let _one = serial();
    let cluster = Cluster::start();
    let eps = cluster.endpoints_arg();

    // each step's puts, measured and settle, are each one revision: the whole search counted
    let before = cluster.revision();
    let mut args = vec![
        "etcd",
        "put",
        "--endpoints",
        &eps,
        "--proto",
        "both",
        "-c",
        "4",
        "--format",
        "json",
    ];
    args.extend_from_slice(FOUR_STEPS);
    let run = run_bounded(&args, LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    let report = report_of(&run);
    let mut puts = 0;
    for proto in ["http", "grpc"] {
        let c = capacity(proto_run(&report, proto));
        assert_eq!(c["ending"], "steps", "{proto}: {c:#}");
        let steps = c["steps"].as_array().unwrap();
        // four steps, then the confirmation at the best rate met
        assert_eq!(steps.len(), 5, "{proto}: {c:#}");
        for s in steps {
            assert_eq!(s["errors"], 0, "{proto}: {s:#}");
            puts += s["requests"].as_i64().unwrap() + s["settle_requests"].as_i64().unwrap();
        }
    }
    assert_eq!(cluster.revision() - before, puts, "{report:#}");

    // a sweep: a capacity column per cell, leader against all members, both stacks
    let before = cluster.revision();
    let mut args = vec![
        "sweep",
        "etcd",
        "put",
        "--endpoints",
        &eps,
        "--clients",
        "4",
        "--key-size",
        "8",
        "--target",
        "leader,all",
        "--proto",
        "http,grpc",
        "--format",
        "json",
    ];
    args.extend_from_slice(FOUR_STEPS);
    let run = run_bounded(&args, LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    let sweep: Value = serde_json::from_str(&run.stdout).expect("the sweep's JSON");
    let rows = sweep["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 4, "{sweep:#}");
    let mut measured = 0;
    for r in rows {
        let k = &r["capacity"];
        assert_eq!(k["ending"], "steps", "{r:#}");
        assert_eq!(k["steps"], 5, "{r:#}");
        assert_eq!(k["answer_rps"].as_f64(), Some(1600.0), "{r:#}");
        // the row's figures are its run at the answer
        assert!(r["qps"].as_f64().unwrap() > 0.9 * 1600.0, "{r:#}");
        measured += k["requests"].as_i64().unwrap();
    }
    assert!(cluster.revision() - before > measured, "{sweep:#}");
    assert!(
        sweep["workload"]
            .as_str()
            .unwrap()
            .contains("capacity per row: --find-max p99<200ms"),
        "{sweep:#}"
    );
}

#[test]
fn compare_rounds_each_search_and_compare_the_answers() {
    let _one = serial();
    let mut args = vec![
        "compare", "--rounds", "2", "echo", "--proto", "both", "-c", "4", "--format", "json",
    ];
    args.extend_from_slice(FOUR_STEPS);
    let run = run_bounded(&args, LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    let v: Value = serde_json::from_str(&run.stdout).expect("compare's JSON");
    let rounds = v["per_round"].as_array().unwrap();
    assert_eq!(rounds.len(), 4, "{v:#}");
    for r in rounds {
        assert_eq!(r["figures"]["capacity_rps"].as_f64(), Some(1600.0), "{r:#}");
    }
    for median in ["median_http", "median_grpc"] {
        assert_eq!(v[median]["capacity_rps"].as_f64(), Some(1600.0), "{v:#}");
    }
}

#[test]
fn through_a_link_the_answer_is_below_clients_over_the_round_trip() {
    let _one = serial();
    // the built-in server answers at once; the path holds each request 10 ms: 4 in flight
    // answer at most 400 req/s
    let run = run_bounded(
        &[
            "echo",
            "--proto",
            "grpc",
            "-c",
            "4",
            "--link",
            "rtt=10ms",
            "--find-max",
            "p99<40ms",
            "--start-rate",
            "100",
            "--step",
            "1s",
            "--settle",
            "300ms",
            "--format",
            "json",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    let report = report_of(&run);
    let r = proto_run(&report, "grpc");
    let c = capacity(r);
    assert_eq!(c["ending"], "converged", "{c:#}");
    let answer = c["answer_rps"].as_f64().unwrap();
    assert!((300.0..=400.0).contains(&answer), "{answer}: {c:#}");
    assert_eq!(r["link"]["spec"], "rtt=10ms", "{r:#}");
}
