//! The built-in echo server and the echo workload, end to end: both protocols, `call`, many
//! streams on one connection, the server's stream limit, and connections closed by age.

mod support;

use std::time::{Duration, SystemTime};

use serde_json::Value;
use support::{f64_at, proto_run, run_bounded, run_json, run_json_within, u64_at};
use wirebench::server::{ServeConfig, Server};

fn server(max_conn_age: Option<Duration>, max_concurrent_streams: Option<u32>) -> (Server, String) {
    let srv = Server::start(ServeConfig {
        max_conn_age,
        max_concurrent_streams,
        h3: false,
        ..ServeConfig::loopback()
    })
    .expect("start the echo server");
    let url = format!("http://{}", srv.local_addr());
    (srv, url)
}

/// Nanoseconds since the epoch of an RFC 3339 UTC timestamp ("...Z"), as protobuf JSON writes.
fn epoch_nanos(ts: &str) -> i128 {
    let (date, time) = ts
        .strip_suffix('Z')
        .and_then(|t| t.split_once('T'))
        .expect("RFC 3339 UTC");
    let d: Vec<i64> = date.split('-').map(|x| x.parse().unwrap()).collect();
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let t: Vec<i64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
    // days from civil (proleptic Gregorian)
    let (y, m) = if d[1] <= 2 {
        (d[0] - 1, d[1] + 9)
    } else {
        (d[0], d[1] - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d[2] - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + t[0] * 3600 + t[1] * 60 + t[2];
    let nanos: i128 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<9}").parse().unwrap()
    };
    i128::from(secs) * 1_000_000_000 + nanos
}

#[test]
fn echo_runs_both_protocols_against_the_builtin_server() {
    let args = ["echo", "-n", "20000", "-c", "4", "--format", "json"];
    let out = run_bounded(&args, support::RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).expect("a JSON report");
    let mut in_window = Duration::ZERO;
    for proto in ["http", "grpc"] {
        let run = proto_run(&report, proto);
        assert_eq!(u64_at(run, "/summary/ok"), 20_000, "{proto}");
        assert_eq!(u64_at(run, "/summary/failed"), 0, "{proto}");
        assert_eq!(run["sample_response"]["body"], "Hello, world!", "{proto}");
        // every measured request was written: the window's denominator
        assert_eq!(u64_at(run, "/cost/requests"), 20_000, "{proto}");
        let client =
            u64_at(run, "/cost/client_cpu_user_us") + u64_at(run, "/cost/client_cpu_sys_us");
        let server = u64_at(run, "/cost/server_cpu_ns") / 1000;
        assert_eq!(
            f64_at(run, "/cost/client_cpu_us_per_request"),
            client as f64 / 20_000.0,
            "{proto}"
        );
        in_window += Duration::from_micros(client + server);
    }
    // Client and in-process server CPU over both windows are part of the process's CPU as the
    // kernel accounted it at exit (wait4), and most of it: the rest is setup, close, printing.
    let process = out.cpu.expect("the child's rusage");
    assert!(
        in_window <= process + Duration::from_millis(20),
        "client + server CPU in the windows {in_window:?} > the process's {process:?}"
    );
    assert!(
        in_window * 2 >= process,
        "client + server CPU in the windows {in_window:?} is not most of the process's {process:?}"
    );
    assert!(report["ratios"]["server_cpu_us_per_request"].is_number());
    // HTTP/1.1: one connection per client; gRPC: the default single connection.
    assert_eq!(
        u64_at(proto_run(&report, "http"), "/wire/connections_opened"),
        4
    );
    assert_eq!(
        u64_at(proto_run(&report, "grpc"), "/wire/connections_opened"),
        1
    );
}

#[test]
fn echo_compares_http1_h2_and_grpc_side_by_side() {
    let report = run_json(&[
        "echo",
        "--proto",
        "grpc,h2,http",
        "-n",
        "3000",
        "-c",
        "4",
        "--warmup",
        "0s",
    ]);
    let protos: Vec<&str> = report["runs"]
        .as_array()
        .expect("runs[]")
        .iter()
        .map(|r| r["proto"].as_str().unwrap())
        .collect();
    // always in this order, whatever the order given
    assert_eq!(protos, ["http", "h2", "grpc"]);
    for proto in protos {
        let run = proto_run(&report, proto);
        assert_eq!(u64_at(run, "/summary/ok"), 3000, "{proto}");
        assert_eq!(run["sample_response"]["body"], "Hello, world!", "{proto}");
    }
    // HTTP/2 carries the HTTP/1.1 JSON body in DATA, all four clients on one connection
    let h2 = proto_run(&report, "h2");
    let json = r#"{"ping":"Hello, world!"}"#.len() as u64;
    assert_eq!(u64_at(h2, "/wire/requests_on_wire"), 3000);
    assert_eq!(
        u64_at(h2, "/wire/layers/h2/out/data_payload_bytes"),
        3000 * json,
        "{:#}",
        h2["wire"]["layers"]
    );
    assert_eq!(u64_at(h2, "/wire/layers/h2/out/grpc_messages"), 0);
    assert_eq!(u64_at(h2, "/wire/connections_opened"), 1);
    assert_eq!(
        h2["status_distribution"][0]["status"], "200",
        "{:#}",
        h2["status_distribution"]
    );
    // the three ratios of each figure: gRPC / HTTP/1.1 = (HTTP/2 / HTTP/1.1) x (gRPC / HTTP/2)
    let r = |name: &str| f64_at(&report, &format!("/{name}/bytes_out_per_request"));
    let (grpc, h2, grpc_h2) = (r("ratios"), r("ratios_h2"), r("ratios_grpc_h2"));
    assert!(
        (grpc - h2 * grpc_h2).abs() < 1e-9 * grpc,
        "{grpc} {h2} {grpc_h2}"
    );
    // the text report's table has a column per stack and per ratio
    let out = run_bounded(
        &["echo", "--proto", "http,h2,grpc", "-n", "300"],
        support::RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stdout
            .contains("Comparison (ratio = HTTP/2 / HTTP/1.1, gRPC / HTTP/1.1, gRPC / HTTP/2):"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("bodies (DATA payload)"),
        "{}",
        out.stdout
    );
    // compare takes the stacks of --proto: two or three
    let cmp = run_json(&[
        "compare", "--rounds", "1", "echo", "--proto", "http,h2", "-n", "200",
    ]);
    assert!(cmp["median_h2"]["requests_per_sec"].is_f64(), "{cmp:#}");
    assert!(cmp["median_http"]["requests_per_sec"].is_f64(), "{cmp:#}");
    assert!(cmp.get("median_grpc").is_none(), "{cmp:#}");
    let findings = cmp["findings"].to_string();
    assert!(
        findings.contains("HTTP/1.1 used 1 connection, HTTP/2 1."),
        "{findings}"
    );
    support::assert_refused(
        &["compare", "echo", "--proto", "grpc"],
        2,
        "compare needs two or three stacks",
    );
}

#[test]
fn call_prints_the_echo_response_with_ordered_timestamps() {
    for proto in ["grpc", "http", "h2"] {
        let run = run_bounded(
            &[
                "call", "echo", "--ping", "hi there", "-H", "x-k:v", "--proto", proto,
            ],
            Duration::from_secs(30),
        );
        assert_eq!(run.code, Some(0), "{proto}: {}", run.stderr);
        let v: Value = serde_json::from_str(&run.stdout).expect("call prints JSON");
        assert_eq!(v["body"], "hi there", "{proto}");
        assert_eq!(v["headers"]["x-k"], "v", "{proto}: {v:#}");
        let remote = v["remote_addr"].as_str().expect("remote_addr");
        assert!(remote.starts_with("127.0.0.1:"), "{proto}: {remote}");
        let names = [
            "received_at",
            "handler_reached_at",
            "handler_responded_at",
            "sent_at",
        ];
        let times: Vec<i128> = names
            .iter()
            .map(|n| {
                epoch_nanos(
                    v[n].as_str()
                        .unwrap_or_else(|| panic!("{proto}: no {n} in {v:#}")),
                )
            })
            .collect();
        assert!(
            times.windows(2).all(|w| w[0] <= w[1]),
            "{proto}: timestamps out of order: {v:#}"
        );
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as i128;
        assert!(
            (now - times[0]).abs() < 60_000_000_000,
            "{proto}: received_at is not now: {v:#}"
        );
    }
    let grpc = run_bounded(&["call", "echo", "--ping", "x"], Duration::from_secs(30));
    let v: Value = serde_json::from_str(&grpc.stdout).unwrap();
    assert_eq!(v["headers"]["content-type"], "application/grpc");
    assert!(
        v["headers"][":authority"]
            .as_str()
            .is_some_and(|a| a.starts_with("127.0.0.1:"))
    );
}

#[test]
fn call_to_nothing_fails_with_one_line() {
    let port = support::unused_port();
    let target = format!("http://127.0.0.1:{port}");
    let run = run_bounded(
        &["call", "echo", "--target", &target],
        Duration::from_secs(20),
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("connect"), "{}", run.stderr);
}

#[test]
fn a_thousand_streams_share_one_connection() {
    let (_srv, url) = server(None, None);
    let report = run_json(&[
        "echo", "--target", &url, "--proto", "grpc", "-c", "1000", "--conns", "1", "-n", "20000",
    ]);
    let run = proto_run(&report, "grpc");
    assert_eq!(u64_at(run, "/summary/ok"), 20_000);
    assert_eq!(u64_at(run, "/wire/connections_opened"), 1);
    assert_eq!(u64_at(run, "/wire/requests_on_wire"), 20_000);
}

#[test]
fn the_servers_stream_limit_is_respected() {
    // A client that opened more than 10 streams would get them refused (REFUSED_STREAM), which
    // shows up as retried or failed requests.
    let (_srv, url) = server(None, Some(10));
    let report = run_json(&[
        "echo", "--target", &url, "--proto", "grpc", "-c", "100", "--conns", "1", "-n", "5000",
    ]);
    let run = proto_run(&report, "grpc");
    assert_eq!(u64_at(run, "/summary/ok"), 5000);
    assert_eq!(u64_at(run, "/summary/failed"), 0);
    assert_eq!(u64_at(run, "/summary/retried"), 0);
}

#[test]
fn connections_closed_by_age_lose_no_request() {
    let (_srv, url) = server(Some(Duration::from_secs(1)), None);
    let report = run_json_within(
        &[
            "echo", "--target", &url, "--proto", "grpc", "-z", "10s", "-c", "8",
        ],
        Duration::from_secs(40),
    );
    let run = proto_run(&report, "grpc");
    assert!(u64_at(run, "/summary/ok") > 1000, "{run:#}");
    assert_eq!(
        u64_at(run, "/summary/failed"),
        0,
        "{:#}",
        run["error_distribution"]
    );
    // about one connection per second of the run
    let conns = u64_at(run, "/wire/connections_opened");
    assert!(
        (6..=20).contains(&conns),
        "{conns} connections in 10 s with a 1 s age"
    );

    let report = run_json_within(
        &[
            "echo", "--target", &url, "--proto", "http", "-z", "3s", "-c", "4",
        ],
        Duration::from_secs(30),
    );
    let run = proto_run(&report, "http");
    assert_eq!(
        u64_at(run, "/summary/failed"),
        0,
        "{:#}",
        run["error_distribution"]
    );
    assert!(u64_at(run, "/wire/reconnects") >= 4, "{run:#}");
}

#[test]
fn compare_fails_when_one_side_fails_every_request() {
    // The echo answer over HTTP/1.1 (about 420 B) is beyond --max-body 100; gRPC is unaffected.
    let run = run_bounded(
        &[
            "compare",
            "--rounds",
            "1",
            "echo",
            "-n",
            "200",
            "--max-body",
            "100",
            "--format",
            "json",
        ],
        support::RUN_TIMEOUT,
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let errors: Vec<&str> = run
        .stderr_lines()
        .into_iter()
        .filter(|l| l.starts_with("error:"))
        .collect();
    assert_eq!(errors.len(), 1, "{}", run.stderr);
    assert!(
        errors[0].contains("no HTTP/1.1 request succeeded") && errors[0].contains("body"),
        "{}",
        errors[0]
    );
    // the report is still written, and its findings say what the medians are made of
    let report: Value = serde_json::from_str(&run.stdout).expect("the compare report");
    let findings: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(
        findings
            .iter()
            .any(|f| f.starts_with("HTTP/1.1: 200 of 200 requests failed")),
        "{findings:#?}"
    );
    assert!(
        !findings
            .iter()
            .any(|f| f.contains("successful requests per second")),
        "no throughput comparison against a side without successes: {findings:#?}"
    );
}

#[test]
fn the_window_starts_where_the_warmup_ends() {
    // The window runs from start + warmup (the instant the workers start measuring) to the last
    // measured response; in duration mode no request starts after start + warmup + D, so the
    // window is at least D and exceeds it by one request's tail.
    for proto in ["http", "grpc"] {
        let report = run_json(&[
            "echo", "--proto", proto, "-c", "2", "-z", "600ms", "--warmup", "300ms",
        ]);
        let r = proto_run(&report, proto);
        let total = f64_at(r, "/summary/total_s");
        assert!((0.6..0.8).contains(&total), "{proto}: Total {total} s");
        assert!(u64_at(r, "/summary/warmup_requests") > 0, "{proto}");
        let count = u64_at(r, "/summary/count");
        let rps = f64_at(r, "/summary/requests_per_sec");
        assert!((rps - count as f64 / total).abs() < 1e-6, "{proto}");
        // warmup requests are in no measured figure
        assert_eq!(u64_at(r, "/cost/requests"), count, "{proto}");
    }
}

#[test]
fn pipelined_requests_of_one_read_are_answered_with_one_write() {
    use std::io::{Read, Write};
    let srv = support::ServeProcess::start(&["--threads", "1"]);
    let addr = srv.target();
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = r#"{"ping":"p"}"#;
    let one = format!(
        "POST /v1/echo HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    // 16 requests in one write: one segment on loopback, one read on the server
    s.write_all(one.repeat(16).as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut answers = 0;
    let mut buf = [0u8; 65536];
    while answers < 16 {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "the server closed after {answers} answers");
        got.extend_from_slice(&buf[..n]);
        // complete answers so far: each head says its body's length
        answers = 0;
        let mut at = 0;
        while let Some(end) = got[at..].windows(4).position(|w| w == b"\r\n\r\n") {
            let head = std::str::from_utf8(&got[at..at + end]).unwrap();
            assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .expect("Content-Length")
                .parse()
                .unwrap();
            if got.len() < at + end + 4 + len {
                break;
            }
            at += end + 4 + len;
            answers += 1;
        }
    }
    assert_eq!(answers, 16);
    // the sixteen answers came in one segment: the server wrote them with one call
    let tcp = wirebench::net::tcp_info(&s).expect("TCP_INFO");
    assert_eq!(tcp.data_segs_in, 1, "{tcp:?}");
}

/// The server's listeners share their port (SO_REUSEPORT): a second `serve` on the port of one
/// that runs, or on a port anything else listens on, is refused with one line instead of
/// joining it and taking part of its connections.
#[test]
fn a_second_server_on_a_taken_port_is_refused() {
    let first = support::ServeProcess::start(&["--threads", "2", "--no-h3"]);
    let addr = first.target();
    support::assert_refused(
        &["serve", "--addr", &addr, "--threads", "1", "--no-h3"],
        1,
        "something listens there already",
    );
    // a listener of another program (no SO_REUSEPORT) too
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = other.local_addr().unwrap().to_string();
    support::assert_refused(
        &["serve", "--addr", &taken, "--threads", "1", "--no-h3"],
        1,
        "something listens there already",
    );
    // the first server still answers, alone
    let report = run_json(&[
        "echo",
        "--target",
        &format!("http://{addr}"),
        "--proto",
        "http",
        "-n",
        "200",
    ]);
    assert_eq!(u64_at(proto_run(&report, "http"), "/summary/ok"), 200);
}
