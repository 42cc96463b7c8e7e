//! Load shapes against the built-in echo server: `--stages` (the open-loop schedule follows the
//! ramps, counted by intended send time), `--client-stages` (clients join and leave with the
//! level; their connects are setup) and `--interval` (the lines add up to the report).

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{assert_refused, proto_run, report_of, run_bounded, u64_at};

const LIMIT: Duration = Duration::from_secs(90);

/// The timing-sensitive runs go one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn stages_of(run: &Value) -> &Vec<Value> {
    run["stages"].as_array().expect("stage rows")
}

#[test]
fn an_open_loop_schedule_follows_its_stages() {
    let _one = serial();
    // a step to 200/s held for 1 s, then a ramp to 600/s over 2 s: 200, 300 and 500 sends due
    // in the three seconds
    let run = run_bounded(
        &[
            "echo",
            "--proto",
            "http,grpc",
            "--stages",
            "0s:200,1s:200,2s:600",
            "-c",
            "16",
            "--warmup",
            "300ms",
            "--format",
            "json",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let report = report_of(&run);
    assert_eq!(report["settings"]["stages"]["of"], "rate", "{report:#}");
    for proto in ["http", "grpc"] {
        let r = proto_run(&report, proto);
        let due: Vec<u64> = r["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["scheduled"].as_u64().expect("scheduled per second"))
            .collect();
        assert!(due.len() >= 3, "{proto}: {due:?}");
        for (s, want) in [200u64, 300, 500].into_iter().enumerate() {
            assert!(
                due[s].abs_diff(want) <= 1,
                "{proto}: second {s} had {} sends due, the stages say {want}: {due:?}",
                due[s]
            );
        }
        assert_eq!(due.iter().sum::<u64>(), 1000, "{proto}: {due:?}");
        // 30% of 200/s of warmup came first and is left out
        assert!(u64_at(r, "/summary/warmup_requests") >= 59, "{proto}");
        let rows = stages_of(r);
        // the step has no row: stages 2 and 3
        let idx: Vec<u64> = rows.iter().map(|s| s["stage"].as_u64().unwrap()).collect();
        assert_eq!(idx, [2, 3], "{proto}");
        let sched: Vec<u64> = rows
            .iter()
            .map(|s| s["scheduled"].as_u64().unwrap())
            .collect();
        assert_eq!(sched, [200, 800], "{proto}");
        let count: u64 = rows.iter().map(|s| s["count"].as_u64().unwrap()).sum();
        assert_eq!(count, u64_at(r, "/summary/count"), "{proto}");
        assert_eq!(count, 1000, "{proto}");
        assert_eq!(rows[1]["spec"], "2s:600");
        assert_eq!(rows[1]["from"].as_f64(), Some(200.0));
        for s in rows {
            assert!(
                s["client_cpu_us_per_request"].as_f64().unwrap() > 0.0,
                "{s}"
            );
            assert!(s["p99_ms"].as_f64().unwrap() > 0.0, "{s}");
        }
        let stage_of: Vec<u64> = r["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["stage"].as_u64().unwrap())
            .collect();
        assert_eq!(&stage_of[..3], [2, 3, 3], "{proto}");
    }
}

#[test]
fn clients_join_and_leave_with_the_level() {
    let _one = serial();
    // every answer waits 20 ms: a client makes about 50 requests a second, so a stage's rate
    // is its client count × 50
    let run = run_bounded(
        &[
            "echo",
            "--proto",
            "http,grpc",
            "--client-stages",
            "0s:2,1s:2,0s:6,1s:6",
            "-H",
            "wirebench-delay:20ms",
            "--threads",
            "2",
            "--format",
            "json",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let report = report_of(&run);
    assert_eq!(report["settings"]["clients"], 6);
    for proto in ["http", "grpc"] {
        let r = proto_run(&report, proto);
        let rows = stages_of(r);
        assert_eq!(rows.len(), 2, "{proto}");
        let (a, b) = (
            rows[0]["requests_per_sec"].as_f64().unwrap(),
            rows[1]["requests_per_sec"].as_f64().unwrap(),
        );
        assert!(
            (70.0..=105.0).contains(&a) && (2.4..=3.3).contains(&(b / a)),
            "{proto}: 2 clients {a} req/s, 6 clients {b} req/s"
        );
        assert_eq!(u64_at(r, "/summary/failed"), 0, "{proto}");
        // the requests' latency is the server's delay, never a connect
        assert!(
            r["summary"]["slowest_ms"].as_f64().unwrap() < 60.0,
            "{proto}"
        );
    }
    // HTTP/1.1: the 4 clients of the second stage connected when they joined: 6 connections,
    // none of them a reconnect, their connect times in the connect-time figures
    let http = proto_run(&report, "http");
    assert_eq!(u64_at(http, "/connect_times/connections"), 6, "{http:#}");
    assert_eq!(u64_at(http, "/wire/reconnects"), 0, "{http:#}");
}

#[test]
fn interval_lines_add_up_to_the_report() {
    let _one = serial();
    for shape in [
        &["-n", "20000", "-c", "4"][..],
        &["--stages", "0s:2000,1s:2000,1s:0", "-c", "8"][..],
    ] {
        let mut args = vec![
            "echo",
            "--proto",
            "http,grpc",
            "--interval",
            "250ms",
            "--interval-format",
            "csv",
            "--format",
            "json",
        ];
        args.extend_from_slice(shape);
        let run = run_bounded(&args, LIMIT);
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        let report = report_of(&run);
        let lines = run.stderr_lines();
        assert_eq!(
            lines.first().copied(),
            Some(
                "stack,t_s,width_s,ok,errors,requests_per_sec,p50_ms,p99_ms,bytes_out_per_sec,bytes_in_per_sec"
            ),
            "{}",
            run.stderr
        );
        assert_eq!(
            lines.iter().filter(|l| l.starts_with("stack,")).count(),
            1,
            "one header"
        );
        for proto in ["http", "grpc"] {
            let mine: Vec<Vec<&str>> = lines
                .iter()
                .filter(|l| l.starts_with(&format!("{proto},")))
                .map(|l| l.split(',').collect())
                .collect();
            assert!(!mine.is_empty(), "{proto}: {}", run.stderr);
            let ok: u64 = mine.iter().map(|f| f[3].parse::<u64>().unwrap()).sum();
            let errors: u64 = mine.iter().map(|f| f[4].parse::<u64>().unwrap()).sum();
            let r = proto_run(&report, proto);
            assert_eq!(
                ok,
                u64_at(r, "/summary/ok"),
                "{proto} {shape:?}: {}",
                run.stderr
            );
            assert_eq!(errors, u64_at(r, "/summary/failed"), "{proto}");
            // bytes moved: every busy interval moved some both ways
            for f in &mine {
                if f[3] != "0" {
                    assert!(f[8].parse::<f64>().unwrap() > 0.0, "{f:?}");
                    assert!(f[9].parse::<f64>().unwrap() > 0.0, "{f:?}");
                }
            }
            // intervals start 250 ms apart
            for (i, f) in mine.iter().enumerate() {
                let t: f64 = f[1].parse().unwrap();
                assert!((t - 0.25 * i as f64).abs() < 1e-6, "{f:?}");
            }
        }
    }
}

#[test]
fn plain_interval_lines_name_the_stack() {
    let run = run_bounded(
        &[
            "echo",
            "--proto",
            "grpc",
            "-z",
            "600ms",
            "--interval",
            "200ms",
            "--format",
            "json",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines = run.stderr_lines();
    assert!((3..=5).contains(&lines.len()), "{}", run.stderr);
    for l in lines {
        assert!(l.trim_start().starts_with("grpc "), "{l}");
        assert!(l.contains(" req/s") && l.contains("p99 "), "{l}");
    }
}

#[test]
fn bad_shapes_exit_2_with_one_line() {
    for (args, words) in [
        (&["echo", "--stages", "10s"][..], "--stages \"10s\""),
        (&["echo", "--stages", "-1s:10"][..], "negative duration"),
        (&["echo", "--stages", "0s:100"][..], "last 0s"),
        (&["echo", "--stages", "1s:x"][..], "not a number"),
        (&["echo", "--client-stages", "1s:2.5"][..], "whole number"),
        (&["echo", "--stages", "1s:10", "--rate", "5"][..], "--rate"),
        (&["echo", "--stages", "1s:10", "-n", "5"][..], "--total"),
        (
            &["echo", "--client-stages", "1s:10", "-c", "5"][..],
            "--clients",
        ),
        (
            &["echo", "--client-stages", "1s:10", "--stages", "1s:10"][..],
            "--stages",
        ),
        (
            &["echo", "--stages", "1s:10", "--warmup", "1s"][..],
            "--warmup",
        ),
        (&["echo", "--interval", "1ms"][..], "--interval"),
        (&["echo", "--interval", "soon"][..], "--interval"),
        (&["echo", "--interval-format", "csv"][..], "--interval"),
    ] {
        assert_refused(args, 2, words);
    }
}
