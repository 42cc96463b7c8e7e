//! `--fail-if`: a completed run that breaks a threshold exits 3 with one line per broken
//! threshold (and still prints its report); one that meets them exits 0; a bad threshold exits
//! 2 before anything runs.

mod support;

use std::time::Duration;

use support::{assert_refused, run_bounded};

const LIMIT: Duration = Duration::from_secs(60);

fn echo(extra: &[&str]) -> support::Run {
    let mut args = vec!["echo", "-n", "300", "-c", "2", "--format", "json"];
    args.extend_from_slice(extra);
    run_bounded(&args, LIMIT)
}

#[test]
fn thresholds_that_hold_exit_0() {
    let run = echo(&[
        "--fail-if",
        "p99<60s",
        "--fail-if",
        "errors<1%",
        "--fail-if",
        "grpc.rps>1",
        "--fail-if",
        "summary.ok>=300",
        "--fail-if",
        "http.wire.requests_on_wire>=300",
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr_lines().is_empty(), "{}", run.stderr);
}

#[test]
fn a_broken_threshold_exits_3_with_one_line_each() {
    let run = echo(&[
        "--fail-if",
        "rps>1000000000",
        "--fail-if",
        "grpc.p50<1ns",
        "--fail-if",
        "errors<=0%",
    ]);
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    let lines = run.stderr_lines();
    // rps breaks on both stacks, p50 on gRPC only; errors (none) holds
    assert_eq!(lines.len(), 3, "{}", run.stderr);
    for l in &lines {
        assert!(l.starts_with("error: threshold "), "{l}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l.contains("rps>1000000000 broken by HTTP/1.1: "))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("rps>1000000000 broken by gRPC: "))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("grpc.p50<1ns broken by gRPC: ") && l.ends_with(" ms"))
    );
    // the report is printed all the same
    let report: serde_json::Value = serde_json::from_str(&run.stdout).expect("a JSON report");
    assert_eq!(report["runs"].as_array().map(Vec::len), Some(2));
    // a figure this run does not have breaks the threshold, and says so
    let run = echo(&["--proto", "http", "--fail-if", "open_loop.achieved_rate>1"]);
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert!(
        run.stderr.contains("the report has no value for it"),
        "{}",
        run.stderr
    );
}

#[test]
fn compare_judges_the_medians() {
    let run = run_bounded(
        &[
            "compare",
            "--rounds",
            "2",
            "echo",
            "-n",
            "200",
            "--fail-if",
            "http.rps>1000000000",
            "--format",
            "json",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    let lines: Vec<&str> = run
        .stderr_lines()
        .into_iter()
        .filter(|l| l.starts_with("error:"))
        .collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].contains("broken by the median of HTTP/1.1: "),
        "{}",
        lines[0]
    );
}

#[test]
fn bad_thresholds_exit_2() {
    assert_refused(&["echo", "--fail-if", "p98<5ms"], 2, "unknown figure");
    assert_refused(&["echo", "--fail-if", "p99"], 2, "no comparison");
    assert_refused(
        &["echo", "--fail-if", "p99<soon"],
        2,
        "not a non-negative number",
    );
    assert_refused(
        &["echo", "--proto", "http", "--fail-if", "grpc.p99<5ms"],
        2,
        "the grpc stack does not run",
    );
}
