//! etcd with authentication: `--user` over both protocols, the password from the environment,
//! clear failures, and re-authentication when etcd stops accepting the token mid-run.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};
use support::{Etcd, proto_run, run_bounded, run_json_within, u64_at};

/// POSTs JSON to etcd's gateway (optionally with a token); returns status and parsed body.
fn post(etcd: &Etcd, path: &str, body: &Value, token: Option<&str>) -> (u16, Value) {
    let body = body.to_string();
    let auth = token
        .map(|t| format!("Authorization: {t}\r\n"))
        .unwrap_or_default();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let mut s = TcpStream::connect(etcd.client_addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp);
    let text = String::from_utf8_lossy(&resp);
    let status: u16 = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let json = text
        .split("\r\n\r\n")
        .nth(1)
        .and_then(|b| serde_json::from_str(b.trim()).ok())
        .unwrap_or(Value::Null);
    (status, json)
}

fn enable_auth(etcd: &Etcd) {
    assert_eq!(
        post(
            etcd,
            "/v3/auth/user/add",
            &json!({"name": "root", "password": "pw"}),
            None
        )
        .0,
        200
    );
    assert_eq!(
        post(
            etcd,
            "/v3/auth/user/grant",
            &json!({"user": "root", "role": "root"}),
            None
        )
        .0,
        200
    );
    assert_eq!(post(etcd, "/v3/auth/enable", &json!({}), None).0, 200);
}

fn root_token(etcd: &Etcd) -> String {
    let (status, body) = post(
        etcd,
        "/v3/auth/authenticate",
        &json!({"name": "root", "password": "pw"}),
        None,
    );
    assert_eq!(status, 200, "{body}");
    body["token"].as_str().expect("token").to_string()
}

#[test]
fn put_and_range_with_a_user_over_both_protocols() {
    let etcd = Etcd::start();
    enable_auth(&etcd);
    let ep = etcd.endpoint();
    let limit = Duration::from_secs(60);
    let report = run_json_within(
        &[
            "etcd",
            "put",
            "--endpoints",
            &ep,
            "-c",
            "4",
            "-n",
            "500",
            "--user",
            "root:pw",
        ],
        limit,
    );
    for proto in ["http", "grpc"] {
        let run = proto_run(&report, proto);
        assert_eq!(
            u64_at(run, "/summary/ok"),
            500,
            "{proto}: {:#}",
            run["error_distribution"]
        );
    }
    let report = run_json_within(
        &[
            "etcd",
            "range",
            "nokey",
            "--endpoints",
            &ep,
            "-n",
            "100",
            "--user",
            "root:pw",
        ],
        limit,
    );
    for proto in ["http", "grpc"] {
        assert_eq!(
            u64_at(proto_run(&report, proto), "/summary/ok"),
            100,
            "{proto}"
        );
    }

    // the password from the environment
    let mut cmd = support::wirebench();
    cmd.args([
        "etcd",
        "put",
        "--endpoints",
        &ep,
        "-n",
        "50",
        "--proto",
        "http",
        "--user",
        "root",
        "--format",
        "json",
    ])
    .env("WIREBENCH_ETCD_PASSWORD", "pw");
    let run = support::run_command(cmd, limit);
    assert_eq!(run.code, Some(0), "{}", run.stderr);

    // a wrong password: one line, exit 1, before any load
    let run = run_bounded(
        &[
            "etcd",
            "put",
            "--endpoints",
            &ep,
            "-n",
            "50",
            "--user",
            "root:nope",
        ],
        limit,
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(run.stderr_lines().len(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("authenticate as root"),
        "{}",
        run.stderr
    );

    // no user: every request fails with etcd's own words
    let run = run_bounded(
        &[
            "etcd",
            "put",
            "--endpoints",
            &ep,
            "-n",
            "20",
            "--proto",
            "grpc",
            "--format",
            "json",
        ],
        limit,
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let errors = &proto_run(&report, "grpc")["error_distribution"];
    assert_eq!(errors[0]["kind"], "etcd", "{errors:#}");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap_or("")
            .contains("user name is empty"),
        "{errors:#}"
    );
}

#[test]
fn a_revoked_token_is_replaced_mid_run() {
    let etcd = Etcd::start();
    enable_auth(&etcd);
    let ep = etcd.endpoint();
    for proto in ["grpc", "http"] {
        let args: Vec<String> = [
            "etcd",
            "put",
            "--endpoints",
            &ep,
            "-c",
            "2",
            "-z",
            "3s",
            "--proto",
            proto,
            "--user",
            "root:pw",
            "--format",
            "json",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let runner = std::thread::spawn(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run_bounded(&args, Duration::from_secs(30))
        });
        std::thread::sleep(Duration::from_millis(1200));
        // Disabling and enabling auth revokes every token wirebench holds.
        let token = root_token(&etcd);
        assert_eq!(
            post(&etcd, "/v3/auth/disable", &json!({}), Some(&token)).0,
            200
        );
        assert_eq!(post(&etcd, "/v3/auth/enable", &json!({}), None).0, 200);
        let run = runner.join().unwrap();
        assert_eq!(run.code, Some(0), "{proto}: {}", run.stderr);
        let report: Value = serde_json::from_str(&run.stdout).unwrap();
        let r = proto_run(&report, proto);
        assert!(u64_at(r, "/summary/reauthenticated") >= 1, "{proto}: {r:#}");
        assert!(u64_at(r, "/summary/ok") > 0, "{proto}: {r:#}");
        // a request sent again after re-authenticating is one measured request, written once
        // as far as the per-request denominator goes (its second write is in the wire figures)
        assert_eq!(
            u64_at(r, "/summary/written"),
            u64_at(r, "/summary/count"),
            "{proto}: {}",
            r["summary"]
        );
        // Requests in the short window while auth was off fail as etcd says; nothing else.
        for e in r["error_distribution"].as_array().unwrap() {
            let kind = e["kind"].as_str().unwrap();
            assert!(
                kind == "auth" || kind == "etcd",
                "{proto}: unexpected failure {e}"
            );
        }
    }
}

/// Reads one HTTP/1.1 request (head and Content-Length body); its path, or None at EOF.
fn read_request(s: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).ok()? == 0 {
            return None;
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).to_string();
    let len: usize = head
        .to_ascii_lowercase()
        .lines()
        .find_map(|l| {
            l.strip_prefix("content-length:")
                .map(|v| v.trim().to_string())
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).ok()?;
    head.split(' ').nth(1).map(str::to_string)
}

/// A gateway that hands out one token, rejects every put with "invalid auth token", and never
/// answers a second authentication: the re-authentication has to give up by itself.
#[test]
fn re_authentication_is_bounded_by_the_timeout() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static AUTHS: AtomicUsize = AtomicUsize::new(0);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { break };
            std::thread::spawn(move || {
                while let Some(path) = read_request(&mut s) {
                    let (status, body) = if path == "/v3/auth/authenticate" {
                        if AUTHS.fetch_add(1, Ordering::SeqCst) > 0 {
                            // hold the connection, answer nothing
                            while read_request(&mut s).is_some() {}
                            return;
                        }
                        (200, r#"{"header":{},"token":"t1"}"#.to_string())
                    } else {
                        let e = "etcdserver: invalid auth token";
                        (
                            401,
                            json!({"error": e, "message": e, "code": 16}).to_string(),
                        )
                    };
                    let resp = format!(
                        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if s.write_all(resp.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let run = run_bounded(
        &[
            "etcd",
            "put",
            "--endpoints",
            &url,
            "--proto",
            "http",
            "--user",
            "root:pw",
            "-n",
            "2",
            "-c",
            "1",
            "--timeout",
            "1s",
            "--format",
            "json",
        ],
        Duration::from_secs(20),
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.elapsed < Duration::from_secs(6), "{:?}", run.elapsed);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let r = proto_run(&report, "http");
    assert_eq!(u64_at(r, "/summary/failed"), 2, "{r:#}");
    let kinds: Vec<(&str, &str)> = r["error_distribution"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap(),
                e["message"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(
        kinds
            .iter()
            .any(|(k, m)| *k == "timeout" && m.contains("re-authentication")),
        "{kinds:?}"
    );
}
