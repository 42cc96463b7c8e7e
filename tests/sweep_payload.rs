//! `wirebench sweep http` and `wirebench sweep grpc` against the built-in server (`wirebench
//! serve`): a row per payload size and stack, every request answered, the bytes sent growing
//! with the payload; bad input exits 2 with one line. (`sweep grpc --reflect` is tested in
//! client_grpc_any.rs, against a server with reflection.)

mod support;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use support::{ServeProcess, assert_refused, f64_at, run_bounded, u64_at, unused_port};

const LIMIT: Duration = Duration::from_secs(120);
const SIZES: [u64; 3] = [16, 4096, 65536];

/// The sweeps one at a time: they do not share the two cores with each other.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn echo_proto() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("crates/wire/proto/echo.proto")
        .to_string_lossy()
        .into_owned()
}

/// The sweep's JSON table (exit 0 required), its schema checked.
fn sweep(args: &[&str], schema: &str) -> Vec<Value> {
    let mut all = vec!["sweep"];
    all.extend_from_slice(args);
    all.extend(["--format", "json"]);
    let run = run_bounded(&all, LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    let v: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(v["schema"], schema, "{v:#}");
    v["rows"].as_array().expect("rows").clone()
}

/// The rows of `proto` have the sizes in order, every request OK, and the bytes sent per
/// request grow by at least the payload's growth.
fn check_rows(rows: &[Value], proto: &str, sizes: &[u64], n: u64) -> Vec<Value> {
    let mine: Vec<Value> = rows
        .iter()
        .filter(|r| r["proto"] == proto)
        .cloned()
        .collect();
    let got: Vec<u64> = mine.iter().map(|r| u64_at(r, "/payload_bytes")).collect();
    assert_eq!(got, sizes, "{proto}: {rows:#?}");
    for r in &mine {
        assert_eq!(u64_at(r, "/count"), n, "{proto}: {r}");
        assert_eq!(u64_at(r, "/ok"), n, "{proto}: {r}");
        assert_eq!(u64_at(r, "/failed"), 0, "{proto}: {r}");
        // the row's histogram: every successful request, its p99 the row's
        let h = wirebench::report::hdr::decode(r["latency_hdr"].as_str().expect("latency_hdr"))
            .unwrap_or_else(|e| panic!("{proto}: {e}"));
        assert_eq!(h.len(), n, "{proto}: {r}");
        assert_eq!(
            h.value_at_quantile(0.99) as f64 / 1e6,
            f64_at(r, "/p99_ms"),
            "{proto}: {r}"
        );
    }
    for pair in mine.windows(2) {
        let grew = f64_at(&pair[1], "/bytes_out") - f64_at(&pair[0], "/bytes_out");
        let payload =
            (u64_at(&pair[1], "/payload_bytes") - u64_at(&pair[0], "/payload_bytes")) as f64;
        assert!(grew >= payload, "{proto}: {grew} < {payload}: {pair:#?}");
    }
    mine
}

#[test]
fn an_http_sweep_sends_each_payload_as_the_body_over_both_stacks() {
    let _one = serial();
    let server = ServeProcess::start(&[]);
    let pid = server.pid().to_string();
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("http.svg");
    let rows = sweep(
        &[
            "http",
            &server.url("/v1/echo"),
            "-d",
            r#"{"ping":"{{payload}}"}"#,
            "--payload-size",
            "16,4k,64k",
            "--proto",
            "http,h2",
            "-n",
            "100",
            "-c",
            "2",
            "--server-pid",
            &pid,
            "--svg",
            svg.to_str().unwrap(),
        ],
        "wirebench.sweep-http.v2",
    );
    assert_eq!(rows.len(), 6, "{rows:#?}");
    for proto in ["http", "h2"] {
        let mine = check_rows(&rows, proto, &SIZES, 100);
        // the server echoes the ping: the answers grow too
        assert!(
            f64_at(&mine[2], "/bytes_in") > 65536.0,
            "{proto}: {}",
            mine[2]
        );
        for r in &mine {
            assert!(f64_at(r, "/server_cpu_us") > 0.0, "{proto}: {r}");
        }
        match proto {
            "http" => assert!(mine[2]["window_updates"].is_null(), "{}", mine[2]),
            _ => assert!(f64_at(&mine[2], "/window_updates") >= 1.0, "{}", mine[2]),
        }
    }
    let chart = std::fs::read_to_string(&svg).unwrap();
    assert!(
        chart.starts_with("<svg") && chart.contains("wirebench sweep http"),
        "{chart}"
    );

    // without a template the body is the payload alone (which the echo endpoint refuses: 400)
    let rows = sweep(
        &[
            "http",
            &server.url("/v1/echo"),
            "--payload-size",
            "100,1100",
            "--ok-status",
            "400",
            "-n",
            "20",
        ],
        "wirebench.sweep-http.v2",
    );
    let mine = check_rows(&rows, "http", &[100, 1100], 20);
    // the same head but one more digit of Content-Length: the body is exactly the payload
    let grew = f64_at(&mine[1], "/bytes_out") - f64_at(&mine[0], "/bytes_out");
    assert_eq!(grew, 1001.0, "{mine:#?}");
}

#[test]
fn a_grpc_sweep_fills_the_request_field_with_each_payload() {
    let _one = serial();
    let server = ServeProcess::start(&[]);
    let target = server.target();
    let proto = echo_proto();
    // the field named, and found as the request's only string field
    for field in [&["--payload-field", "ping"][..], &[]] {
        let mut args = vec![
            "grpc",
            &target,
            "grpc_echo.v1.EchoService/Echo",
            "--proto-file",
            &proto,
            "--payload-size",
            "16,4k,64k",
            "-n",
            "100",
            "-c",
            "2",
        ];
        args.extend_from_slice(field);
        let rows = sweep(&args, "wirebench.sweep-grpc.v2");
        assert_eq!(rows.len(), 3, "{rows:#?}");
        let mine = check_rows(&rows, "grpc", &SIZES, 100);
        assert!(f64_at(&mine[2], "/bytes_in") > 65536.0, "{}", mine[2]);
        assert!(f64_at(&mine[2], "/window_updates") >= 1.0, "{}", mine[2]);
        // the built-in server in another process: no server CPU without --server-pid
        assert!(mine[0]["server_cpu_us"].is_null(), "{}", mine[0]);
    }
}

#[test]
fn bad_payload_sweeps_exit_2_with_one_line() {
    // a dead port: a case validation let through would fail at once with exit 1
    let t = format!("127.0.0.1:{}", unused_port());
    let url = format!("http://{t}/v1/echo");
    let (t, url) = (t.as_str(), url.as_str());
    let m = "grpc_echo.v1.EchoService/Echo";
    let echo = echo_proto();
    let rich = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop/rich.proto")
        .to_string_lossy()
        .into_owned();
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("request.bin");
    std::fs::write(&bin, b"\x0a\x02hi").unwrap();
    let bin = bin.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["http", url, "--payload-size", ""], "--payload-size"),
        (vec!["http", url, "--payload-size", "16,"], "--payload-size"),
        (
            vec!["http", url, "--payload-size", "1x"],
            "'1x' for '--payload-size",
        ),
        (
            vec!["http", url, "--payload-size", "512M"],
            "--payload-size 536870912: at most",
        ),
        (
            vec!["http", url, "-d", "{}"],
            "-d: the body template has no {{payload}}",
        ),
        (vec!["http", url, "--proto", "grpc"], "for a gRPC method"),
        (vec!["http", "127.0.0.1:9/x"], "expected http://"),
        (
            vec!["grpc", t, m, "--payload-size", "1k"],
            "needs its schema: --proto-file",
        ),
        (
            vec!["grpc", t, m, "--data-bin", bin],
            "(--data-bin alone has none)",
        ),
        (
            vec![
                "grpc",
                t,
                m,
                "--proto-file",
                &echo,
                "--payload-size",
                "100M",
            ],
            "--payload-size 104857600: at most",
        ),
        (
            vec![
                "grpc",
                t,
                m,
                "--proto-file",
                &echo,
                "--payload-field",
                "pong",
            ],
            "--payload-field pong: grpc_echo.v1.EchoRequest has no field \"pong\" (its string and bytes fields: ping)",
        ),
        (
            vec!["grpc", t, m, "--proto-file", &echo, "-d", r#"{"pong":1}"#],
            "pong",
        ),
        (
            vec!["grpc", t, "rich.v1.Mirror/Reflect", "--proto-file", &rich],
            "--payload-field is needed: rich.v1.Thing has several string and bytes fields: name, blob, word",
        ),
        (
            vec![
                "grpc",
                t,
                "rich.v1.Mirror/Reflect",
                "--proto-file",
                &rich,
                "--payload-field",
                "count",
            ],
            "--payload-field count: rich.v1.Thing.count is a uint64 field",
        ),
        (
            vec![
                "grpc",
                t,
                "rich.v1.Mirror/Reflect",
                "--proto-file",
                &rich,
                "--payload-field",
                "parts.name",
            ],
            "rich.v1.Thing.parts is a repeated field",
        ),
        (
            vec!["grpc", t, m, "--reflect", "--proto-file", &echo],
            "give the schema one way",
        ),
    ];
    for (args, words) in cases {
        let mut all = vec!["sweep"];
        all.extend_from_slice(&args);
        assert_refused(&all, 2, words);
    }
}
