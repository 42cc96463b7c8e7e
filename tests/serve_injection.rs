//! Fault injection in the built-in server (`wirebench serve --delay --fail --response-size
//! --close --goaway-after`, and the same per request by header / gRPC metadata), measured by
//! the real binary over every stack: the injected share of errors, the injected delay and its
//! shapes, padded replies and payload sizes, closes and GOAWAYs.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::{
    ServeProcess, assert_refused, f64_at, proto_run, run_bounded, run_json_within, u64_at,
};

const LIMIT: Duration = Duration::from_secs(120);

/// The tests one at a time: the timed ones share the two cores with no other run.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}
const STACKS: [&str; 3] = ["http", "h2", "grpc"];

fn against(server: &ServeProcess, protos: &str, extra: &[&str]) -> Value {
    let target = format!("http://{}", server.target());
    let mut args = vec!["echo", "--target", &target, "--proto", protos];
    args.extend_from_slice(extra);
    run_json_within(&args, LIMIT)
}

/// A run that may fail every request (exit 1): its JSON report.
fn report_of(args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.extend(["--format", "json"]);
    let run = run_bounded(&args, LIMIT);
    assert!(matches!(run.code, Some(0 | 1)), "{run:#?}");
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {run:#?}"))
}

/// The latency at percentile `q` of a run, ms.
fn percentile(run: &Value, q: f64) -> f64 {
    run["latency_distribution"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["percentile"] == q)
        .and_then(|p| p["latency_ms"].as_f64())
        .unwrap_or_else(|| panic!("no p{q} in {:#}", run["latency_distribution"]))
}

/// What a delay may add to the latency on top of itself, ms: the timer's own lateness (about
/// 0.1 ms) and the wake-ups of a server and a client that slept through the wait, which the
/// same load without a delay never does. Measured on two cores (a VM, debug build, nothing
/// else running) at one request in flight: 0.23 to 1.20 ms above the undelayed median (35
/// runs of each stack), 0.7 on average; the shapes' percentiles, up to 1.0 ms.
const DELAY_ALLOWANCE_MS: f64 = 1.75;
/// How far below a delay shape's own percentile the measured one may sit, ms: the sampling
/// of 1,500 delays (an exponential's median moves by about 0.13 ms between runs; measured as
/// above: at most 0.15 ms below).
const SAMPLING_MS: f64 = 0.75;

#[test]
fn ten_percent_injected_errors_show_as_ten_percent_of_that_status() {
    let _one = serial();
    let server = ServeProcess::start(&[
        "--threads",
        "1",
        "--fail",
        "10%",
        "--fail-http-status",
        "502",
        "--fail-grpc-code",
        "8",
    ]);
    let report = against(&server, "http,h2,grpc", &["-n", "5000", "-c", "8"]);
    for (proto, status) in [
        ("http", "502"),
        ("h2", "502"),
        ("grpc", "RESOURCE_EXHAUSTED"),
    ] {
        let run = proto_run(&report, proto);
        let failed = u64_at(run, "/summary/failed");
        let share = failed as f64 / u64_at(run, "/summary/count") as f64;
        assert!((0.08..=0.12).contains(&share), "{proto}: {share}");
        let of_status: u64 = run["status_distribution"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["status"] == status)
            .map(|s| u64_at(s, "/count"))
            .sum();
        assert_eq!(
            of_status, failed,
            "{proto}: {:#}",
            run["status_distribution"]
        );
    }
}

#[test]
fn an_injected_delay_and_its_shapes_have_the_latency_asked_for() {
    let _one = serial();
    // fixed 5 ms, one request in flight (nothing queues, so the same load without the delay
    // is the rest of the latency): no answer comes sooner than 5 ms, and the median moves by
    // the delay, 5 ms, plus at most DELAY_ALLOWANCE_MS
    let load = ["-n", "200", "-c", "1"];
    let server = ServeProcess::start(&["--threads", "1"]);
    let bare = against(&server, "http,h2,grpc", &load);
    drop(server);
    let server = ServeProcess::start(&["--threads", "1", "--delay", "5ms"]);
    let report = against(&server, "http,h2,grpc", &load);
    for proto in STACKS {
        let run = proto_run(&report, proto);
        let fastest = f64_at(run, "/summary/fastest_ms");
        assert!(fastest >= 5.0, "{proto}: an answer in {fastest} ms");
        let (p, base) = (
            percentile(run, 50.0),
            percentile(proto_run(&bare, proto), 50.0),
        );
        assert!(
            (5.0..=5.0 + DELAY_ALLOWANCE_MS).contains(&(p - base)),
            "{proto}: p50 {p} ms, {base} ms without the delay"
        );
    }
    drop(server);
    // uniform and exponential shapes with a 5 ms mean, four requests in flight: each shape
    // measured again once if the first measurement misses (a timing test on a shared machine:
    // a moment's load elsewhere adds milliseconds to one run's tail); two misses fail
    for attempt in 1..=2 {
        match delay_shapes() {
            Ok(()) => return,
            Err(e) if attempt == 1 => eprintln!("measured again: {e}"),
            Err(e) => panic!("{e}"),
        }
    }
}

/// Uniform and exponential delays with a 5 ms mean at four requests in flight (the delays of
/// one connection's streams overlap): percentiles of the latency, less the same load's median
/// without a delay, where the shape puts them (at most SAMPLING_MS below, at most
/// DELAY_ALLOWANCE_MS above); a uniform delay is never below its minimum; the mean delay within
/// 10% in a release build, 20% in a debug one, whose client and server add their own spread
/// (measured as above: up to 0.95 ms, the wake-ups again). The first miss, as an error.
fn delay_shapes() -> Result<(), String> {
    let shape = ["-n", "1500", "-c", "4"];
    let server = ServeProcess::start(&["--threads", "1"]);
    let bare = against(&server, "http,h2,grpc", &shape);
    drop(server);
    // each shape, its least delay, and three of its percentiles: a uniform delay's 10th, 50th
    // and 90th (1 + 8u ms), an exponential one's 10th, 25th and 50th (-5 ln(1 - u) ms; its
    // upper ones move by 0.3 to 0.4 ms between runs of 1,500)
    let exp = |u: f64| -5.0 * (1.0 - u).ln();
    let shapes = [
        (
            "uniform:1ms-9ms",
            1.0,
            [(10.0, 1.8), (50.0, 5.0), (90.0, 8.2)],
        ),
        (
            "exp:5ms",
            0.0,
            [(10.0, exp(0.1)), (25.0, exp(0.25)), (50.0, exp(0.5))],
        ),
    ];
    let within = if cfg!(debug_assertions) { 1.0 } else { 0.5 };
    for (delay, least, wanted) in shapes {
        let server = ServeProcess::start(&["--threads", "1", "--delay", delay]);
        let report = against(&server, "http,h2,grpc", &shape);
        for proto in STACKS {
            let (run, base) = (proto_run(&report, proto), proto_run(&bare, proto));
            let fastest = f64_at(run, "/summary/fastest_ms");
            if fastest < least {
                return Err(format!("{delay} {proto}: an answer in {fastest} ms"));
            }
            let rest = percentile(base, 50.0);
            for (q, want) in wanted {
                let got = percentile(run, q) - rest;
                if !(want - SAMPLING_MS..=want + DELAY_ALLOWANCE_MS).contains(&got) {
                    return Err(format!(
                        "{delay} {proto}: p{q} {got} ms above the undelayed median ({rest} ms), \
                         want {want} ms"
                    ));
                }
            }
            let mean = f64_at(run, "/summary/average_ms") - f64_at(base, "/summary/average_ms");
            if (mean - 5.0).abs() > within {
                return Err(format!(
                    "{delay} {proto}: mean delay {mean} ms (the average less the undelayed one)"
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn requests_override_the_defaults_and_control_headers_are_not_echoed() {
    // not timed itself, but its load would share the cores with the timed ones
    let _one = serial();
    // the embedded server, no defaults: every request asks for its own failure
    let report = report_of(&[
        "echo",
        "--proto",
        "http,h2,grpc",
        "-n",
        "50",
        "-H",
        "wirebench-fail:100%",
    ]);
    for proto in STACKS {
        let run = proto_run(&report, proto);
        assert_eq!(u64_at(run, "/summary/failed"), 50, "{proto}");
    }
    // one call with a delay and a header of its own: the echo carries x-k, not the control
    let out = run_bounded(
        &["call", "echo", "-H", "wirebench-delay:1ms", "-H", "x-k:v"],
        LIMIT,
    );
    assert_eq!(out.code, Some(0), "{out:#?}");
    let v: Value = serde_json::from_str(&out.stdout).expect("JSON");
    let headers = &v["headers"];
    assert_eq!(headers["x-k"], "v", "{v:#}");
    assert!(headers.get("wirebench-delay").is_none(), "{v:#}");
    // a control header that does not parse is answered with a clear error
    let report = report_of(&[
        "echo",
        "--proto",
        "http,grpc",
        "-n",
        "5",
        "-H",
        "wirebench-delay:soon",
    ]);
    let http = proto_run(&report, "http");
    assert_eq!(u64_at(http, "/summary/failed"), 5);
    assert!(
        http["error_distribution"][0]["message"]
            .as_str()
            .unwrap()
            .contains("wirebench-delay"),
        "{:#}",
        http["error_distribution"]
    );
    let grpc = proto_run(&report, "grpc");
    assert_eq!(grpc["status_distribution"][0]["status"], "INVALID_ARGUMENT");
}

#[test]
fn payload_and_response_sizes_grow_the_bytes_per_request() {
    let _one = serial();
    let mut last = [0u64; 3];
    for size in ["16", "4k", "64k"] {
        let report = run_json_within(
            &[
                "echo",
                "--proto",
                "http,h2,grpc",
                "-n",
                "200",
                "--payload-size",
                size,
                "--response-size",
                "32k",
            ],
            LIMIT,
        );
        for (i, proto) in STACKS.iter().enumerate() {
            let run = proto_run(&report, proto);
            assert_eq!(u64_at(run, "/summary/ok"), 200, "{proto} {size}");
            let out = f64_at(run, "/wire/bytes_out_per_request") as u64;
            let inb = f64_at(run, "/wire/bytes_in_per_request") as u64;
            assert!(
                out > last[i],
                "{proto} {size}: {out} B out, was {}",
                last[i]
            );
            last[i] = out;
            // the reply is padded to about 32 KiB, or carries the larger ping back
            assert!(inb >= 32_000, "{proto} {size}: {inb} B in");
        }
    }
}

#[test]
fn injected_closes_and_goaways_replace_connections() {
    let _one = serial();
    let server = ServeProcess::start(&["--threads", "1", "--close", "100%"]);
    let report = against(&server, "http", &["-n", "100", "-c", "1"]);
    let run = proto_run(&report, "http");
    // every answer is followed by a close: the next request on that connection finds it gone
    assert!(u64_at(run, "/summary/ok") >= 40, "{run:#}");
    assert!(
        u64_at(run, "/wire/connections_opened") >= 40,
        "{:#}",
        run["wire"]
    );
    drop(server);
    let server = ServeProcess::start(&["--threads", "1", "--goaway-after", "10"]);
    let report = against(&server, "grpc", &["-n", "200", "-c", "1"]);
    let run = proto_run(&report, "grpc");
    // GOAWAY is graceful: every call succeeds, on a new connection every 10
    assert_eq!(u64_at(run, "/summary/ok"), 200, "{run:#}");
    assert!(
        u64_at(run, "/wire/connections_opened") >= 20,
        "{:#}",
        run["wire"]
    );
}

#[test]
fn bad_fault_flags_exit_2() {
    for (args, words) in [
        (&["serve", "--delay", "soon"][..], "--delay"),
        (&["serve", "--delay", "uniform:9ms-1ms"], "minimum is above"),
        (&["serve", "--fail", "200%"], "probability"),
        (&["serve", "--fail-http-status", "200"], "400 to 599"),
        (&["serve", "--fail-grpc-code", "0"], "1 to 16"),
        (&["serve", "--goaway-after", "0"], "at least 1"),
        (&["serve", "--response-size", "1G"], "at most"),
        (
            &["echo", "--ping", "a", "--payload-size", "10"],
            "choose one",
        ),
        (&["echo", "--payload-size", "100M"], "at most"),
    ] {
        assert_refused(args, 2, words);
    }
}

#[test]
fn a_payload_sweep_has_every_row_and_bytes_grow_with_the_payload() {
    let _one = serial();
    let dir = std::env::temp_dir().join(format!("wirebench-sweep-echo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("payloads.svg");
    let run = run_bounded(
        &[
            "sweep",
            "echo",
            "--payload-size",
            "16,4k,64k",
            "--proto",
            "http,h2,grpc",
            "-n",
            "100",
            "-c",
            "2",
            "--format",
            "json",
            "--svg",
            svg.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    let v: Value = serde_json::from_str(&run.stdout).expect("JSON");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 9, "{v:#}");
    for proto in STACKS {
        let mine: Vec<&Value> = rows.iter().filter(|r| r["proto"] == proto).collect();
        let sizes: Vec<u64> = mine.iter().map(|r| u64_at(r, "/payload_bytes")).collect();
        assert_eq!(sizes, [16, 4096, 65536], "{proto}");
        let wire: Vec<f64> = mine
            .iter()
            .map(|r| r["wire_bytes"].as_f64().unwrap())
            .collect();
        assert!(wire[0] < wire[1] && wire[1] < wire[2], "{proto}: {wire:?}");
        // the echo carries the payload back: at least twice the payload on the wire
        assert!(wire[2] > 2.0 * 65536.0, "{proto}: {wire:?}");
        for r in &mine {
            assert_eq!(u64_at(r, "/ok"), 100, "{proto}: {r}");
        }
        // h2 flow control: a 64 KiB body each way moves the 65,535-byte windows
        match proto {
            "http" => assert!(mine[2]["window_updates"].is_null()),
            _ => assert!(
                mine[2]["window_updates"].as_f64().unwrap() >= 1.0,
                "{proto}: {}",
                mine[2]
            ),
        }
    }
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(
        chart.starts_with("<svg") && chart.contains("<polyline"),
        "{chart}"
    );
    std::fs::remove_dir_all(&dir).ok();
    assert_refused(&["sweep", "echo", "--payload-size", "10M"], 2, "at most");
}
