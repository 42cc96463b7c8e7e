//! etcd with authentication: `--user` over both protocols, the password from the environment,
//! clear failures, and re-authentication when etcd stops accepting the token mid-run.

mod support;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};
use support::http_server::{self, read_request};
use support::{
    Etcd, http_client, proto_run, run_bounded, run_bounded_on_thread, run_json_within, u64_at,
};

/// POSTs JSON to etcd's gateway (optionally with a token); returns status and parsed body.
fn post(etcd: &Etcd, path: &str, body: &Value, token: Option<&str>) -> (u16, Value) {
    let auth: Vec<(&str, &str)> = token.map(|t| ("Authorization", t)).into_iter().collect();
    let (status, body) =
        http_client::post_with_headers(etcd.client_addr(), path, &auth, &body.to_string())
            .unwrap_or_else(|e| panic!("POST {path}: {e}"));
    let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
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
        let runner = run_bounded_on_thread(
            &[
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
            ],
            Duration::from_secs(30),
        );
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
fn read_path(s: &mut TcpStream) -> Option<String> {
    let head = read_request(s).ok()??;
    head.split(' ').nth(1).map(str::to_string)
}

/// A gateway that hands out one token, rejects every put with "invalid auth token", and never
/// answers a second authentication: the re-authentication has to give up by itself.
#[test]
fn re_authentication_is_bounded_by_the_timeout() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static AUTHS: AtomicUsize = AtomicUsize::new(0);
    let addr = http_server::spawn(|mut s| {
        while let Some(path) = read_path(&mut s) {
            let (status, body) = if path == "/v3/auth/authenticate" {
                if AUTHS.fetch_add(1, Ordering::SeqCst) > 0 {
                    // hold the connection, answer nothing
                    while read_path(&mut s).is_some() {}
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
    let url = format!("http://{addr}");
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

#[test]
fn lease_keepalive_with_a_user_grants_and_keeps_its_leases_over_both_protocols() {
    let etcd = Etcd::start();
    enable_auth(&etcd);
    let report = run_json_within(
        &[
            "etcd",
            "lease-keepalive",
            "--endpoints",
            &etcd.endpoint(),
            "-c",
            "2",
            "-n",
            "200",
            "--user",
            "root:pw",
        ],
        Duration::from_secs(60),
    );
    for proto in ["http", "grpc"] {
        let r = proto_run(&report, proto);
        assert_eq!(u64_at(r, "/summary/ok"), 200, "{proto}: {r:#}");
        assert_eq!(u64_at(r, "/leases/granted"), 2, "{proto}");
        assert_eq!(u64_at(r, "/leases/revoked"), 2, "{proto}");
    }
}
