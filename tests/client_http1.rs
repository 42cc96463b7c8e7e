//! `wirebench http URL` against servers: Python's `http.server` (which this project did not
//! write: HTTP/1.0 answers, a connection per request, a redirect for a directory without its
//! slash), Hypercorn (HTTP/1.1 and h2c on one port, also not ours) and the built-in server's
//! `POST /v1/echo`; bad input exits 2 with one line.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{assert_refused, run_bounded, run_json, u64_at};

/// A Python HTTP server on a free loopback port, killed on drop: `http.server` serving a
/// directory of its own, or tests/interop/h2c_server.py (Hypercorn).
struct PyServer {
    child: Child,
    port: u16,
    _dir: Option<tempfile::TempDir>,
}

impl PyServer {
    /// Python's http.server, serving index.html ("hello\n") and sub/a.txt.
    fn start() -> PyServer {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("index.html"), b"hello\n").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/a.txt"), b"a\n").unwrap();
        let port = support::unused_port();
        let mut cmd = Command::new("python3");
        cmd.args([
            "-m",
            "http.server",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
        ])
        .arg("--directory")
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        support::die_with_parent(&mut cmd);
        let child = cmd.spawn().expect("python3 -m http.server");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let started = Instant::now();
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "http.server did not listen on {addr}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        PyServer {
            child,
            port,
            _dir: Some(dir),
        }
    }

    /// tests/interop/h2c_server.py: a Hypercorn ASGI app speaking HTTP/1.1 and h2c with prior
    /// knowledge on one port; it stops by itself after two minutes.
    fn hypercorn() -> PyServer {
        PyServer::hypercorn_recording(None)
    }

    /// `hypercorn`, appending a JSON line per request to `/record/...` to `record`.
    fn hypercorn_recording(record: Option<&std::path::Path>) -> PyServer {
        let ok = Command::new("python3")
            .args(["-c", "import hypercorn"])
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "python3 with hypercorn is needed: {}",
            support::PYTHON_PEERS
        );
        let port = support::unused_port();
        let mut cmd = Command::new("python3");
        cmd.arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/interop/h2c_server.py"
        ))
        .args([&port.to_string(), "120"])
        .args(record)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
        support::die_with_parent(&mut cmd);
        let mut child = cmd.spawn().expect("start h2c_server.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("its stdout"))
            .read_line(&mut line)
            .expect("the server's first line");
        assert_eq!(
            line.trim(),
            format!("listening {port}"),
            "h2c_server.py said {line:?}"
        );
        PyServer {
            child,
            port,
            _dir: None,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The h2 frame counts of one direction of a run's ledger.
fn frames(run: &Value, dir: &str, ty: &str) -> u64 {
    run.pointer(&format!("/wire/layers/h2/{dir}/frames/{ty}/count"))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

#[test]
fn hypercorn_is_loaded_over_http1_and_h2c_side_by_side() {
    let srv = PyServer::hypercorn();
    let report = run_json(&[
        "http",
        &srv.url("/hello"),
        "--proto",
        "http,h2",
        "-c",
        "4",
        "-n",
        "400",
        "--warmup",
        "0s",
    ]);
    let runs = report["runs"].as_array().expect("runs[]");
    assert_eq!(runs.len(), 2, "{report:#}");
    assert_eq!(runs[0]["proto"], "http");
    let h2 = &runs[1];
    assert_eq!(h2["proto"], "h2");
    assert_eq!(h2["title"], "HTTP/2");
    for run in runs {
        assert_eq!(u64_at(run, "/summary/ok"), 400, "{:#}", run["summary"]);
        assert_eq!(statuses(run), vec![("200".to_string(), 400)]);
    }
    // one connection carries the four clients as streams
    assert_eq!(
        u64_at(h2, "/wire/connections_opened"),
        1,
        "{:#}",
        h2["wire"]
    );
    // a GET without a body: HEADERS with END_STREAM, no DATA out; "hello\n" back in DATA
    assert_eq!(
        frames(h2, "out", "HEADERS"),
        400,
        "{:#}",
        h2["wire"]["layers"]
    );
    assert_eq!(frames(h2, "out", "DATA"), 0);
    assert_eq!(u64_at(h2, "/wire/layers/h2/in/data_payload_bytes"), 400 * 6);
    // plain HTTP/2 has no gRPC layer
    assert_eq!(u64_at(h2, "/wire/layers/h2/in/grpc_messages"), 0);
    assert_eq!(u64_at(h2, "/wire/layers/h2/in/data_untracked_bytes"), 0);
    assert!(
        report["ratios_h2"]["bytes_out_per_request"].is_f64(),
        "{report:#}"
    );
    assert!(report["ratios"].is_null());
    assert!(report.get("ratios_grpc_h2").is_none());
    // compare takes a URL too: HTTP/1.1 and HTTP/2 by default
    let cmp = run_json(&[
        "compare",
        "--rounds",
        "2",
        "http",
        &srv.url("/hello"),
        "-n",
        "100",
    ]);
    assert_eq!(
        cmp["per_round"].as_array().map(Vec::len),
        Some(4),
        "{cmp:#}"
    );
    for m in ["median_http", "median_h2"] {
        assert_eq!(cmp[m]["count"], 100.0, "{m}: {cmp:#}");
    }
    // each round's histogram: its successful requests
    for r in cmp["per_round"].as_array().unwrap() {
        let text = r["latency_hdr"].as_str().expect("latency_hdr");
        let h = wirebench::report::hdr::decode(text).expect("a histogram");
        let f = &r["figures"];
        let ok = f["count"].as_f64().unwrap() - f["failed"].as_f64().unwrap();
        assert_eq!(h.len() as f64, ok, "{r}");
        assert_eq!(
            h.value_at_quantile(0.99) as f64 / 1e6,
            f["latency_p99_ms"].as_f64().unwrap(),
            "{r}"
        );
    }
    assert!(cmp.get("median_grpc").is_none());
}

#[test]
fn h2c_bodies_statuses_and_head_against_hypercorn() {
    let srv = PyServer::hypercorn();
    // POST: the body goes out in DATA with its length, and comes back
    let body = r#"{"a":[1,2,3]}"#;
    let report = run_json(&[
        "http",
        &srv.url("/echo"),
        "--proto",
        "h2",
        "-d",
        body,
        "-H",
        "Content-Type: application/json",
        "-n",
        "100",
        "--warmup",
        "0s",
    ]);
    let run = &report["runs"][0];
    assert_eq!(u64_at(run, "/summary/ok"), 100, "{:#}", run["summary"]);
    assert_eq!(frames(run, "out", "DATA"), 100);
    let n = body.len() as u64;
    assert_eq!(
        u64_at(run, "/wire/layers/h2/out/data_payload_bytes"),
        100 * n
    );
    assert_eq!(
        u64_at(run, "/wire/layers/h2/in/data_payload_bytes"),
        100 * n
    );
    assert_eq!(run["sample_response"], serde_json::json!({"a": [1, 2, 3]}));
    // `call http --proto h2`: the one response, as JSON
    let out = run_bounded(
        &[
            "call",
            "http",
            &srv.url("/echo"),
            "--proto",
            "h2",
            "-d",
            body,
        ],
        support::RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{out:#?}");
    assert_eq!(
        out.stdout.trim(),
        r#"{
  "a": [
    1,
    2,
    3
  ]
}"#
    );
    // a status outside the OK range is a failure counted under its status
    let out = run_bounded(
        &[
            "http",
            &srv.url("/status/404"),
            "--proto",
            "h2",
            "-n",
            "20",
            "--format",
            "json",
        ],
        support::RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).expect("a JSON report");
    assert_eq!(statuses(&report["runs"][0]), vec![("404".to_string(), 20)]);
    // HEAD: Hypercorn says content-length 6 and sends no DATA; the response ends with its HEADERS
    let report = run_json(&[
        "http",
        &srv.url("/hello"),
        "-X",
        "HEAD",
        "--proto",
        "h2",
        "-n",
        "30",
        "--timeout",
        "5s",
    ]);
    let run = &report["runs"][0];
    assert_eq!(u64_at(run, "/summary/ok"), 30, "{:#}", run["summary"]);
    assert_eq!(u64_at(run, "/wire/layers/h2/in/data_payload_bytes"), 0);
}

fn statuses(run: &Value) -> Vec<(String, u64)> {
    run["status_distribution"]
        .as_array()
        .expect("status_distribution[]")
        .iter()
        .map(|s| {
            (
                s["status"].as_str().unwrap().to_string(),
                s["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_python_http_server_is_loaded_over_http1() {
    let py = PyServer::start();
    let report = run_json(&["http", &py.url("/index.html"), "-c", "2", "-n", "200"]);
    let run = &report["runs"][0];
    assert_eq!(run["proto"], "http", "{run:#}");
    assert_eq!(u64_at(run, "/summary/ok"), 200, "{:#}", run["summary"]);
    assert_eq!(statuses(run), vec![("200".to_string(), 200)]);
    // HTTP/1.0 answers close the connection: one per request
    assert_eq!(
        u64_at(run, "/wire/connections_opened"),
        200,
        "{:#}",
        run["wire"]
    );
    // a GET without a body: no Content-Length line, so exactly this request each time
    let request = format!(
        "GET /index.html HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
        py.port
    );
    assert_eq!(
        u64_at(run, "/wire/bytes_out"),
        200 * request.len() as u64,
        "{:#}",
        run["wire"]
    );
}

#[test]
fn head_requests_read_no_body_whatever_the_headers_say() {
    let py = PyServer::start();
    // http.server answers HEAD with the file's Content-Length and no body: read as a body, each
    // response would wait for 6 bytes that never come
    let report = run_json(&[
        "http",
        &py.url("/index.html"),
        "-X",
        "HEAD",
        "-n",
        "50",
        "--timeout",
        "5s",
    ]);
    let run = &report["runs"][0];
    assert_eq!(u64_at(run, "/summary/ok"), 50, "{:#}", run["summary"]);
    assert_eq!(u64_at(run, "/summary/failed"), 0);
    let request = format!(
        "HEAD /index.html HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
        py.port
    );
    assert_eq!(u64_at(run, "/wire/bytes_out"), 50 * request.len() as u64);
}

#[test]
fn redirects_are_counted_not_followed() {
    let py = PyServer::start();
    // a directory without its slash: 301 to /sub/
    let out = run_bounded(
        &["http", &py.url("/sub"), "-n", "20", "--format", "json"],
        support::RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(1), "failed requests exit 1: {}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).expect("a JSON report");
    let run = &report["runs"][0];
    assert_eq!(statuses(run), vec![("301".to_string(), 20)]);
    assert_eq!(u64_at(run, "/summary/failed"), 20);
    let errors = run["error_distribution"].to_string();
    assert!(
        errors.contains("http_status") && errors.contains("HTTP 301 (OK is 200-299)"),
        "{errors}"
    );
    // widened, the same answers count as OK
    let report = run_json(&[
        "http",
        &py.url("/sub"),
        "-n",
        "20",
        "--ok-status",
        "200-399",
    ]);
    let run = &report["runs"][0];
    assert_eq!(u64_at(run, "/summary/ok"), 20, "{:#}", run["summary"]);
    assert_eq!(statuses(run), vec![("301".to_string(), 20)]);
}

#[test]
fn bodies_from_a_file_go_in_turn_to_the_builtin_server() {
    let srv = support::ServeProcess::start(&[]);
    let url = srv.url("/v1/echo");
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/v1/echo")
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("bodies.txt");
    let bodies = [r#"{"ping":"a"}"#, r#"{"ping":"bcdef"}"#, r#"{"ping":""}"#];
    let mut f = std::fs::File::create(&lines).unwrap();
    for b in bodies {
        writeln!(f, "{b}").unwrap();
    }
    drop(f);
    let report = run_json(&[
        "http",
        &url,
        "--data-lines",
        lines.to_str().unwrap(),
        "-H",
        "Content-Type: application/json",
        "-c",
        "1",
        "-n",
        "30",
        "--warmup",
        "0s",
    ]);
    let run = &report["runs"][0];
    assert_eq!(u64_at(run, "/summary/ok"), 30, "{:#}", run["summary"]);
    assert_eq!(statuses(run), vec![("200".to_string(), 30)]);
    // POST by default with a body; each body 10 times; the bytes are exactly these requests
    let sent: u64 = bodies
        .iter()
        .map(|b| {
            let req = format!(
                "POST /v1/echo HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{b}",
                b.len()
            );
            10 * req.len() as u64
        })
        .sum();
    assert_eq!(u64_at(run, "/wire/bytes_out"), sent, "{:#}", run["wire"]);
    assert_eq!(u64_at(run, "/wire/connections_opened"), 1);
    // `call http`: the one response's body, printed as JSON
    let out = support::run_bounded(
        &["call", "http", &url, "-d", r#"{"ping":"one"}"#],
        support::RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{out:#?}");
    let body: Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(body["body"], "one", "{body}");
    assert_refused(
        &["call", "http", &srv.url("/nope")],
        1,
        "HTTP 404 (OK is 200-299)",
    );
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, b"").unwrap();
    let empty = empty.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["http", "127.0.0.1:9/x"],
            "expected http://host[:port]/path",
        ),
        (
            &["http", "ftp://127.0.0.1:9/"],
            "the scheme must be http or https",
        ),
        (
            &["http", "http://127.0.0.1:9/", "--proto", "grpc"],
            "--proto http, h2 or http,h2",
        ),
        (
            &[
                "http",
                "http://127.0.0.1:9/",
                "--proto",
                "h2",
                "--h2-client",
                "h2",
            ],
            "runs on the wire client",
        ),
        (
            &["http", "http://127.0.0.1:9/", "--ok-status", "2xx"],
            "--ok-status",
        ),
        (
            &["http", "http://127.0.0.1:9/", "-H", "Host: x"],
            "reserved header name",
        ),
        (
            &["http", "http://127.0.0.1:9/", "-X", "GE T"],
            "method is not a token",
        ),
        (
            &["http", "http://127.0.0.1:9/", "--data-lines", empty],
            "no lines",
        ),
        (
            &[
                "http",
                "http://127.0.0.1:9/",
                "--data-file",
                "/nonexistent/x",
            ],
            "--data-file",
        ),
        (
            &[
                "http",
                "http://127.0.0.1:9/",
                "-d",
                "x",
                "--data-file",
                "/x",
            ],
            "cannot be used with",
        ),
        (
            &["http", "http://127.0.0.1:9/{{nope}}"],
            "the path: at byte 1: unknown placeholder {{nope}}",
        ),
        (
            &["http", "http://127.0.0.1:9/", "-d", "{{rand 9 1}}"],
            "the body: at byte 0: {{rand 9 1}}: 9 is above 1",
        ),
        (
            &["http", "http://127.0.0.1:9/", "-H", "X-Id: {{seq"],
            "header X-Id: at byte 0",
        ),
        (&["http"], "required arguments were not provided: <URL>"),
        (&["http", "--targets", "/nonexistent/t"], "--targets"),
    ];
    for (args, words) in cases {
        assert_refused(args, 2, words);
    }
    // an unreachable server is a run error: exit 1, one line
    let url = format!("http://127.0.0.1:{}/", support::unused_port());
    assert_refused(&["http", &url, "-n", "1"], 1, "Connection refused");
}

/// The requests' records of a `/record/...` run, one JSON object per request.
fn records(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("the server's record")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// The number after `prefix` in `text` (up to the next non-digit).
fn number_after(text: &str, prefix: &str) -> u64 {
    let at = text
        .find(prefix)
        .unwrap_or_else(|| panic!("{prefix} in {text}"))
        + prefix.len();
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("a number after {prefix} in {text}"))
}

#[test]
fn the_server_sees_each_rendered_value_over_http1_and_h2c() {
    let dir = tempfile::tempdir().unwrap();
    for proto in ["http", "h2"] {
        let record = dir.path().join(format!("{proto}.jsonl"));
        let srv = PyServer::hypercorn_recording(Some(&record));
        let report = run_json(&[
            "http",
            &srv.url("/record/{{seq}}?c={{client}}"),
            "--proto",
            proto,
            "-H",
            "X-Id: id-{{seq}}",
            "-d",
            r#"{"n":{{seq}},"u":"{{uuid}}","r":{{rand 5 9}}}"#,
            "-c",
            "3",
            "-n",
            "300",
            "--warmup",
            "0s",
        ]);
        let run = &report["runs"][0];
        assert_eq!(u64_at(run, "/summary/ok"), 300, "{:#}", run["summary"]);
        let seen = records(&record);
        assert_eq!(seen.len(), 300, "{proto}");
        let (mut seqs, mut clients, mut uuids, mut rands) = (
            std::collections::BTreeSet::new(),
            std::collections::BTreeSet::new(),
            std::collections::BTreeSet::new(),
            std::collections::BTreeSet::new(),
        );
        for r in &seen {
            let path = r["path"].as_str().unwrap();
            let seq = number_after(path, "/record/");
            let client = number_after(path, "?c=");
            // one request's seq is the same in its path, its header and its body
            assert_eq!(r["x-id"], format!("id-{seq}"), "{r}");
            let body: Value = serde_json::from_str(r["body"].as_str().unwrap()).unwrap();
            assert_eq!(body["n"], seq, "{r}");
            // request i of client c is numbered c + 3k
            assert_eq!(seq % 3, client, "{r}");
            let u = body["u"].as_str().unwrap();
            assert!(u.len() == 36 && u.as_bytes()[14] == b'4', "{u}");
            rands.insert(body["r"].as_u64().unwrap());
            assert_eq!(r["method"], "POST");
            assert_eq!(r["http"], if proto == "h2" { "2" } else { "1.1" }, "{r}");
            seqs.insert(seq);
            clients.insert(client);
            uuids.insert(u.to_string());
        }
        assert_eq!(
            (seqs.len(), uuids.len()),
            (300, 300),
            "{proto}: every value differs"
        );
        assert_eq!(clients.into_iter().collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(rands.into_iter().collect::<Vec<_>>(), [5, 6, 7, 8, 9]);
    }
}

#[test]
fn a_targets_file_sends_each_target_by_its_weight() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("record.jsonl");
    let srv = PyServer::hypercorn_recording(Some(&record));
    std::fs::write(dir.path().join("body.json"), r#"{"k":"{{seq}}"}"#).unwrap();
    let targets = dir.path().join("targets.txt");
    std::fs::write(
        &targets,
        format!(
            "# weight: 3\nPOST {}\nX-Id: a-{{{{seq}}}}\n@body.json\n\nGET {}\nX-Id: b-{{{{seq}}}}\n",
            srv.url("/record/a/{{seq}}"),
            srv.url("/record/b?x={{seq}}&r={{rand 1 9}}"),
        ),
    )
    .unwrap();
    let report = run_json(&[
        "http",
        "--targets",
        targets.to_str().unwrap(),
        "-c",
        "1",
        "-n",
        "400",
        "--warmup",
        "0s",
    ]);
    let run = &report["runs"][0];
    assert_eq!(u64_at(run, "/summary/ok"), 400, "{:#}", run["summary"]);
    let seen = records(&record);
    assert_eq!(seen.len(), 400);
    let mut counts = [0u32; 2];
    for (i, r) in seen.iter().enumerate() {
        let path = r["path"].as_str().unwrap();
        let a = path.starts_with("/record/a/");
        counts[usize::from(!a)] += 1;
        // one client: the requests arrive in their order, numbered 0, 1, 2, ...
        if a {
            assert_eq!(number_after(path, "/record/a/"), i as u64, "{r}");
            assert_eq!(r["x-id"], format!("a-{i}"));
            assert_eq!(r["method"], "POST");
            assert_eq!(r["body"], format!(r#"{{"k":"{i}"}}"#));
        } else {
            assert_eq!(number_after(path, "?x="), i as u64, "{r}");
            assert!((1..=9).contains(&number_after(path, "&r=")), "{r}");
            assert_eq!(r["x-id"], format!("b-{i}"));
            assert_eq!(
                (r["method"].as_str(), r["body"].as_str()),
                (Some("GET"), Some(""))
            );
        }
    }
    assert_eq!(counts, [300, 100]);
    // every target goes to one origin
    std::fs::write(
        &targets,
        format!("GET {}\n\nGET http://127.0.0.1:1/x\n", srv.url("/record/a")),
    )
    .unwrap();
    assert_refused(
        &["http", "--targets", targets.to_str().unwrap()],
        2,
        "line 3: http://127.0.0.1:1/x is another origin",
    );
}
