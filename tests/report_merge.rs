//! Distributed runs: three agents as separate processes (each from its own `--bind` address,
//! started together by `--start-at`) against one `wirebench serve`, their reports merged by
//! `wirebench merge`; the merged counts against the agents' sums and the merged percentiles
//! against the three histograms added independently (the hdrhistogram crate here, and
//! HdrHistogram_py, another implementation). A report's histograms read by HdrHistogram_py
//! give the percentiles wirebench printed. And merge's and --start-at's refusals.
//!
//! Needs python3 with PyPI's `hdrhistogram` (scripts/test.sh installs it into its virtual
//! environment); a missing one fails the test with that hint.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use serde_json::Value;

use support::{
    Run, ServeProcess, assert_one_error_line, f64_at, run_bounded, run_bounded_on_thread,
    run_command, u64_at,
};

/// The test's own decoding of a report's histogram: base64, then the crate's V2 reader.
fn decode(text: &str) -> Histogram<u64> {
    let bytes = B64.decode(text).expect("base64");
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .expect("an HdrHistogram V2 histogram")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?} is not JSON: {e}"))
}

/// `tests/interop/hdr_check.py` with `args`: HdrHistogram_py's view of reports.
fn hdr_check(args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/hdr_check.py");
    let mut cmd = Command::new("python3");
    cmd.arg(&script).args(args);
    let run = run_command(cmd, Duration::from_secs(60));
    assert_eq!(
        run.code,
        Some(0),
        "hdr_check.py {args:?} failed (it needs PyPI's hdrhistogram: {}): {}",
        support::PYTHON_PEERS,
        run.stderr
    );
    serde_json::from_str(&run.stdout).expect("hdr_check.py prints JSON")
}

/// The values of a distribution (`[{percentile, latency_ms}]`) in ns, as the report has them.
fn ns_of(dist: &Value) -> Vec<u64> {
    dist.as_array()
        .expect("a distribution")
        .iter()
        .map(|p| (p["latency_ms"].as_f64().expect("latency_ms") * 1e6).round() as u64)
        .collect()
}

fn u64s(v: &Value) -> Vec<u64> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|x| x.as_u64().expect("an integer"))
        .collect()
}

/// Unix seconds, with microseconds, `ahead` from now.
fn unix_in(ahead: Duration) -> String {
    let t = (SystemTime::now() + ahead)
        .duration_since(UNIX_EPOCH)
        .unwrap();
    format!("{}.{:06}", t.as_secs(), t.subsec_micros())
}

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

#[test]
fn three_agents_merge_into_their_sums_and_their_histograms_added() {
    let server = ServeProcess::start(&["--threads", "1"]);
    let target = format!("http://{}", server.target());
    let dir = tempdir();
    // every agent is set up well before then (a connection each)
    let start_at = unix_in(Duration::from_secs(4));
    let agents = [
        ("agent-1", "127.0.0.2", "2", "1500"),
        ("agent-2", "127.0.0.3", "3", "2000"),
        ("agent-3", "127.0.0.4", "4", "2500"),
    ];
    let files: Vec<PathBuf> = agents
        .iter()
        .map(|(name, ..)| dir.path().join(format!("{name}.json")))
        .collect();
    let handles: Vec<_> = agents
        .iter()
        .zip(&files)
        .map(|((name, bind, clients, n), file)| {
            run_bounded_on_thread(
                &[
                    "echo",
                    "--target",
                    &target,
                    "--proto",
                    "grpc",
                    "-c",
                    clients,
                    "-n",
                    n,
                    "--threads",
                    "1",
                    "--bind",
                    bind,
                    "--agent",
                    name,
                    "--start-at",
                    &start_at,
                    "--format",
                    "json",
                    "-o",
                    file.to_str().unwrap(),
                ],
                Duration::from_secs(120),
            )
        })
        .collect();
    for (h, (name, ..)) in handles.into_iter().zip(&agents) {
        let run = h.join().expect("the agent's thread");
        assert_eq!(run.code, Some(0), "{name}: {run:#?}");
    }
    let reports: Vec<Value> = files.iter().map(|f| read_json(f)).collect();
    let at_us = (start_at.parse::<f64>().unwrap() * 1e6) as u64;
    for (r, (name, bind, _, n)) in reports.iter().zip(&agents) {
        assert_eq!(r["agent"], *name);
        let run = &r["runs"][0];
        assert_eq!(u64_at(run, "/summary/count"), n.parse::<u64>().unwrap());
        // every connection came from the agent's own address
        for c in run["per_connection"].as_array().unwrap() {
            assert_eq!(c["local_ip"], *bind, "{name}: {c:#}");
        }
        // the window began at --start-at (never before it), and the report says how late
        let start = u64_at(run, "/window/start_unix_us");
        let late_ms = f64_at(run, "/window/start_late_ms");
        assert!(
            start >= at_us,
            "{name}: window from {start}, asked for {at_us}"
        );
        assert!(
            ((start - at_us) as f64 / 1e3 - late_ms).abs() < 0.01,
            "{name}: {start} - {at_us} vs {late_ms} ms"
        );
        assert!(
            late_ms < 1000.0,
            "{name}: {late_ms} ms late on an idle setup"
        );
    }

    // merged by wirebench, as JSON and as text
    let merged_file = dir.path().join("merged.json");
    let mut args: Vec<&str> = vec!["merge"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let mut json_args = args.clone();
    json_args.extend(["--format", "json", "-o", merged_file.to_str().unwrap()]);
    let run = run_bounded(&json_args, Duration::from_secs(60));
    assert_eq!(run.code, Some(0), "{run:#?}");
    let merged = read_json(&merged_file);
    let m = &merged["runs"][0];
    let sum = |pointer: &str| {
        reports
            .iter()
            .map(|r| u64_at(&r["runs"][0], pointer))
            .sum::<u64>()
    };
    for pointer in [
        "/summary/count",
        "/summary/ok",
        "/summary/failed",
        "/summary/written",
        "/cost/requests",
        "/cost/client_cpu_user_us",
        "/cost/client_cpu_sys_us",
        "/wire/requests_on_wire",
        "/wire/bytes_out",
        "/wire/bytes_in",
        "/wire/segments_out",
        "/wire/segments_in",
        "/wire/connections_opened",
    ] {
        assert_eq!(u64_at(m, pointer), sum(pointer), "{pointer}");
    }
    assert_eq!(u64_at(m, "/summary/count"), 6000);
    if m["cost"]["syscalls"].is_u64() {
        assert_eq!(u64_at(m, "/cost/syscalls"), sum("/cost/syscalls"));
    }
    // per request: the summed numerators over the summed requests
    let cpu = sum("/cost/client_cpu_user_us") + sum("/cost/client_cpu_sys_us");
    let per_cpu = cpu as f64 / sum("/cost/requests") as f64;
    assert!((f64_at(m, "/cost/client_cpu_us_per_request") - per_cpu).abs() < 1e-9 * per_cpu);
    let segs = sum("/wire/segments_out") as f64 / sum("/wire/requests_with_tcp_info") as f64;
    assert!((f64_at(m, "/wire/segments_out_per_request") - segs).abs() < 1e-12 * segs.max(1.0));
    // Total is the union of the windows, req/s the count over it
    let first = reports
        .iter()
        .map(|r| u64_at(&r["runs"][0], "/window/start_unix_us"))
        .min()
        .unwrap();
    let last = reports
        .iter()
        .map(|r| u64_at(&r["runs"][0], "/window/end_unix_us"))
        .max()
        .unwrap();
    let total_s = (last - first) as f64 / 1e6;
    assert_eq!(f64_at(m, "/summary/total_s"), total_s);
    assert!((f64_at(m, "/summary/requests_per_sec") - 6000.0 / total_s).abs() < 1e-9);

    // the percentiles: the three histograms added here, with the crate, independently
    let mut added = decode(
        reports[0]["runs"][0]["histograms"]["latency"]
            .as_str()
            .unwrap(),
    );
    for r in &reports[1..] {
        added
            .add(decode(
                r["runs"][0]["histograms"]["latency"].as_str().unwrap(),
            ))
            .unwrap();
    }
    assert_eq!(added.len(), u64_at(m, "/summary/ok"));
    let percentiles: Vec<f64> = m["latency_distribution"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["percentile"].as_f64().unwrap())
        .collect();
    let want: Vec<u64> = percentiles
        .iter()
        .map(|p| added.value_at_quantile(p / 100.0))
        .collect();
    assert_eq!(ns_of(&m["latency_distribution"]), want);
    // ... and with HdrHistogram_py, another implementation
    let mut py_args = vec!["--merge"];
    py_args.extend(files.iter().map(|f| f.to_str().unwrap()));
    let py = hdr_check(&py_args);
    assert_eq!(u64_at(&py, "/merged/total"), u64_at(m, "/summary/ok"));
    assert_eq!(u64s(&py["merged"]["ceil"]), want);
    // the merged report's own histogram is the sum
    assert_eq!(decode(m["histograms"]["latency"].as_str().unwrap()), added);

    // one row per agent
    let rows = m["agents"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|a| a["agent"].as_str().unwrap()).collect();
    assert_eq!(names, ["agent-1", "agent-2", "agent-3"]);
    for (row, r) in rows.iter().zip(&reports) {
        assert_eq!(row["count"], r["runs"][0]["summary"]["count"]);
    }
    // the text report: the merged count and the agents' table
    let run = run_bounded(&args, Duration::from_secs(60));
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        run.stdout.contains("  Count:        6000\n"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("Agents ("), "{}", run.stdout);
    for (name, ..) in &agents {
        assert!(
            run.stdout.contains(&format!("\n  {name} ")),
            "{name}: {}",
            run.stdout
        );
    }
}

/// The text report's "P % in V ms" lines, as (percentile, printed value).
fn printed_distribution(text: &str) -> Vec<(f64, String)> {
    text.lines()
        .skip_while(|l| !l.starts_with("Latency distribution"))
        .skip(1)
        .take_while(|l| l.contains(" % in "))
        .map(|l| {
            let (p, v) = l.trim().split_once(" % in ").unwrap();
            (p.parse().unwrap(), v.to_string())
        })
        .collect()
}

/// As the text report prints milliseconds.
fn fmt_ms(ns: u64) -> String {
    let v = ns as f64 / 1e6;
    if v < 10.0 {
        format!("{v:.3} ms")
    } else {
        format!("{v:.2} ms")
    }
}

#[test]
fn an_open_loop_report_reads_the_same_in_hdrhistogram_py() {
    let server = ServeProcess::start(&["--threads", "1"]);
    let target = format!("http://{}", server.target());
    let dir = tempdir();
    let file = dir.path().join("open.json");
    let run = run_bounded(
        &[
            "echo",
            "--target",
            &target,
            "--proto",
            "http",
            "-c",
            "4",
            "-n",
            "2000",
            "--rate",
            "4000",
            "--threads",
            "1",
            "--format",
            "json",
            "-o",
            file.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    let report = read_json(&file);
    let r = &report["runs"][0];
    let py = hdr_check(&[file.to_str().unwrap()]);
    let p = &py["runs"][0];
    // V2 compressed in ns: the crate's bounds and precision come back
    assert_eq!(u64_at(p, "/latency/lowest_trackable"), 1);
    assert_eq!(u64_at(p, "/latency/highest_trackable"), 3_600_000_000_000);
    assert_eq!(u64_at(p, "/latency/significant_figures"), 3);
    // the corrected latencies (the report's distribution) and the uncorrected ones
    assert_eq!(u64_at(p, "/latency/total"), u64_at(r, "/summary/ok"));
    assert_eq!(
        u64s(&p["latency"]["ceil"]),
        ns_of(&r["latency_distribution"])
    );
    assert_eq!(
        u64_at(p, "/uncorrected_latency/total"),
        u64_at(r, "/summary/ok")
    );
    assert_eq!(
        u64s(&p["uncorrected_latency"]["ceil"]),
        ns_of(&r["open_loop"]["uncorrected_distribution"])
    );
    // the fastest and the slowest request, exact in the summary, are in the histogram's
    // lowest and highest buckets
    let bucket = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
    let fastest = (f64_at(r, "/summary/fastest_ms") * 1e6).round() as u64;
    let slowest = (f64_at(r, "/summary/slowest_ms") * 1e6).round() as u64;
    assert_eq!(
        u64_at(p, "/latency/lowest_recorded"),
        bucket.lowest_equivalent(fastest)
    );
    assert_eq!(
        u64_at(p, "/latency/highest_recorded"),
        bucket.highest_equivalent(slowest)
    );
    // the connect times and the one endpoint
    assert_eq!(
        u64_at(p, "/connect/total"),
        u64_at(r, "/connect_times/connections")
    );
    assert_eq!(
        u64s(&p["connect"]["ceil"]),
        ns_of(&r["connect_times"]["distribution"])
    );
    assert_eq!(
        u64_at(&p["per_endpoint"][0], "/total"),
        u64_at(r, "/summary/ok")
    );
    // HdrHistogram_py's own percentile takes the rank rounded to nearest instead of wirebench's
    // (and Java's) ceil: the request one lower where the fraction is below one half, never
    // another, and never above
    let ceil = u64s(&p["latency"]["ceil"]);
    let lib = u64s(&p["latency"]["library"]);
    assert_eq!(lib, u64s(&p["latency"]["nearest"]));
    assert!(
        lib.iter().zip(&ceil).all(|(l, c)| l <= c),
        "{lib:?} {ceil:?}"
    );
    // and what wirebench printed as text for this report (merge of one)
    let run = run_bounded(&["merge", file.to_str().unwrap()], Duration::from_secs(60));
    assert_eq!(run.code, Some(0), "{run:#?}");
    let printed = printed_distribution(&run.stdout);
    assert_eq!(printed.len(), 9, "{}", run.stdout);
    for ((pct, shown), ns) in printed.iter().zip(&ceil) {
        assert_eq!(*shown, fmt_ms(*ns), "p{pct}");
    }
}

/// A refusal: exit `code` and one `error:` line naming `words`.
fn refused(run: &Run, code: i32, words: &str) {
    assert_eq!(run.code, Some(code), "{run:#?}");
    assert_one_error_line(run, words);
    assert!(run.stderr.contains(words), "{words:?}: {}", run.stderr);
}

#[test]
fn merge_and_start_at_refuse_bad_input_in_one_line() {
    let server = ServeProcess::start(&["--threads", "1"]);
    let target = format!("http://{}", server.target());
    let dir = tempdir();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let report = |file: &str, ping: &str| {
        let run = run_bounded(
            &[
                "echo",
                "--target",
                &target,
                "--proto",
                "grpc",
                "-n",
                "50",
                "--threads",
                "1",
                "--ping",
                ping,
                "--format",
                "json",
                "-o",
                &path(file),
            ],
            Duration::from_secs(60),
        );
        assert_eq!(run.code, Some(0), "{run:#?}");
        std::fs::read_to_string(path(file)).unwrap()
    };
    let a = report("a.json", "hello");
    report("b.json", "hello");
    report("other.json", "a longer ping");
    let merge = |files: &[&str]| {
        let mut args = vec!["merge".to_string()];
        args.extend(files.iter().map(|f| path(f)));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_bounded(&args, Duration::from_secs(30))
    };
    // two agents without names: each row is named after its file
    let run = merge(&["a.json", "b.json"]);
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(run.stdout.contains("\n  a.json "), "{}", run.stdout);
    assert!(
        run.stdout.contains("  Count:        100\n"),
        "{}",
        run.stdout
    );

    let write = |name: &str, text: &str| std::fs::write(path(name), text).unwrap();
    write("cut.json", &a[..a.len() / 3]);
    refused(
        &merge(&["a.json", "cut.json"]),
        1,
        "cut.json: the JSON ends early",
    );
    write(
        "v3.json",
        &a.replace("wirebench.report.v4", "wirebench.report.v3"),
    );
    refused(
        &merge(&["a.json", "v3.json"]),
        1,
        "v3.json: schema wirebench.report.v3",
    );
    refused(
        &merge(&["a.json", "other.json"]),
        1,
        "ran different workloads: workload \"echo: ping of 5 B\" and \"echo: ping of 13 B\"",
    );
    let mut v: Value = serde_json::from_str(&a).unwrap();
    v["runs"][0]["histograms"]["latency"] = "SElTVEZBQUFub3RoaW5n".into();
    write("bad.json", &v.to_string());
    refused(
        &merge(&["bad.json", "b.json"]),
        1,
        "bad.json: histograms.latency: not an HdrHistogram",
    );
    refused(&merge(&["a.json", "a.json"]), 1, "are the same agent's run");
    refused(
        &merge(&["a.json", "missing.json"]),
        1,
        "missing.json: No such file",
    );
    // usage
    refused(
        &run_bounded(&["merge"], Duration::from_secs(10)),
        2,
        "REPORT",
    );
    refused(
        &run_bounded(
            &["merge", "--format", "xml", &path("a.json")],
            Duration::from_secs(10),
        ),
        2,
        "xml",
    );
    let echo = |extra: &[&str]| {
        let mut args = vec!["echo", "--target", &target, "-n", "10"];
        args.extend_from_slice(extra);
        run_bounded(&args, Duration::from_secs(30))
    };
    refused(&echo(&["--start-at", "soon"]), 2, "\"soon\"");
    refused(
        &echo(&["--start-at", "2025-13-01T00:00:00Z"]),
        2,
        "no such date",
    );
    refused(
        &echo(&["--start-at", &unix_in(Duration::from_secs(3600))]),
        2,
        "choose one stack",
    );
    let in_ms = format!("{}000", unix_in(Duration::ZERO).split('.').next().unwrap());
    refused(
        &echo(&["--proto", "grpc", "--start-at", &in_ms]),
        2,
        "more than 24 h ahead",
    );
    refused(&echo(&["--proto", "grpc", "--agent", ""]), 2, "--agent");
    refused(
        &run_bounded(
            &["compare", "echo", "--agent", "a"],
            Duration::from_secs(10),
        ),
        2,
        "--agent names one run's report",
    );
    // a time already past: the run starts at once and says how late it was
    let run = echo(&[
        "--proto",
        "grpc",
        "--start-at",
        &unix_in(Duration::ZERO),
        "--format",
        "json",
    ]);
    assert_eq!(run.code, Some(0), "{run:#?}");
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(
        f64_at(&v["runs"][0], "/window/start_late_ms") > 0.0,
        "{v:#}"
    );
}
