//! `unix:///path` targets (and `wirebench http --unix-socket`): HTTP/1.1, h2 and gRPC over a
//! Unix domain socket, against the built-in server (`serve --unix PATH`) and Debian's nginx,
//! whose access log counts every request's bytes on its side; what has no meaning on a Unix
//! socket is refused in one line.

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{ServeProcess, assert_refused, proto_run, run_bounded, run_json_within, u64_at};

const LIMIT: Duration = Duration::from_secs(120);

/// A run over a Unix socket: every request answered, every connection on the socket, and no
/// TCP figure (segments, retransmits, headers) but n/a.
fn assert_unix_run(run: &Value, requests: u64) {
    assert_eq!(u64_at(run, "/summary/count"), requests, "{run:#}");
    assert_eq!(u64_at(run, "/summary/failed"), 0, "{run:#}");
    let opened = u64_at(run, "/wire/connections_opened");
    assert!(opened >= 1, "{run:#}");
    assert_eq!(
        u64_at(run, "/wire/unix_socket_connections"),
        opened,
        "{run:#}"
    );
    assert_eq!(u64_at(run, "/wire/connections_without_tcp_info"), 0);
    assert_eq!(u64_at(run, "/wire/segments_out"), 0);
    assert_eq!(u64_at(run, "/wire/ip_tcp_header_bytes_out"), 0);
    assert!(run["wire"]["segments_out_per_request"].is_null(), "{run:#}");
    assert!(
        run["wire"]["wire_bytes_out_per_request"].is_null(),
        "{run:#}"
    );
    assert!(u64_at(run, "/wire/bytes_out") > 0 && u64_at(run, "/wire/bytes_in") > 0);
}

#[test]
fn the_three_stacks_reach_the_built_in_server_on_a_unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("echo.sock");
    let sock_s = sock.to_str().unwrap();
    let target = format!("unix://{sock_s}");
    let server = ServeProcess::start(&["--threads", "2", "--no-h3", "--unix", sock_s]);
    assert!(
        server.log().contains(&format!("unix:{sock_s}")),
        "{}",
        server.log()
    );
    let report = run_json_within(
        &[
            "echo",
            "--target",
            &target,
            "--proto",
            "http,h2,grpc",
            "-n",
            "3000",
            "-c",
            "6",
        ],
        LIMIT,
    );
    for proto in ["http", "h2", "grpc"] {
        assert_unix_run(proto_run(&report, proto), 3000);
    }
    // HTTP/1.1: one connection per client, each on the socket
    assert_eq!(
        u64_at(proto_run(&report, "http"), "/wire/unix_socket_connections"),
        6
    );
    // the text report names the socket and prints no TCP row
    let run = run_bounded(
        &["echo", "--target", &target, "--proto", "grpc", "-n", "200"],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(run.stdout.contains("Unix socket:"), "{}", run.stdout);
    assert!(run.stdout.contains("Connect time:"), "{}", run.stdout);
    assert!(!run.stdout.contains("TCP segments out"), "{}", run.stdout);
    // a server killed without its cleanup leaves the socket file: the next one takes its place
    drop(server);
    assert!(sock.exists());
    let server = ServeProcess::start(&["--threads", "1", "--no-h3", "--unix", sock_s]);
    let report = run_json_within(
        &["echo", "--target", &target, "--proto", "http", "-n", "100"],
        LIMIT,
    );
    assert_unix_run(proto_run(&report, "http"), 100);
    // while a server answers there, a second one is refused, in one line
    assert_refused(
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--no-h3",
            "--unix",
            sock_s,
        ],
        1,
        "in use",
    );
    drop(server);
}

#[test]
fn what_a_unix_socket_cannot_have_is_refused_in_one_line() {
    let missing = "unix:///nonexistent/wirebench.sock";
    for (args, words) in [
        (
            &["echo", "--target", missing, "--proto", "h3"][..],
            "no HTTP/3",
        ),
        (
            &["echo", "--target", missing, "--bind", "127.0.0.1"][..],
            "no source address",
        ),
        (
            &["echo", "--target", missing, "--link", "rtt=10ms"][..],
            "--link",
        ),
        (&["etcd", "put", "--endpoints", missing][..], "not unix://"),
        (&["echo", "--target", "unix://"][..], "unix:///path"),
    ] {
        assert_refused(args, 2, words);
    }
    // no server there: the connect's own reason, one line, a failed run
    let run = run_bounded(
        &["echo", "--target", missing, "-n", "10"],
        Duration::from_secs(30),
    );
    assert_eq!(run.code, Some(1), "{run:#?}");
    support::assert_one_error_line(&run, "no socket");
    assert!(run.stderr.contains("No such file"), "{}", run.stderr);
}

/// Debian's nginx on two Unix sockets (HTTP/1.1, and h2 without TLS), answering the echo path
/// itself and passing gRPC on to `grpc_backend` over TCP; its access log has each request's
/// `$request_length $bytes_sent $status`. Killed when dropped.
struct Nginx {
    child: Child,
    dir: tempfile::TempDir,
}

impl Nginx {
    fn start(grpc_backend: &str) -> Nginx {
        assert!(
            Command::new("nginx")
                .arg("-v")
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success()),
            "nginx is needed (apt-get install nginx; scripts/test.sh installs it)"
        );
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
             error_log {d}/error.log;\nevents {{ worker_connections 256; }}\nhttp {{\n\
             log_format counted '$request_length $bytes_sent $status';\n\
             access_log {d}/access.log counted;\n\
             client_body_temp_path {d}/body;\nproxy_temp_path {d}/proxy;\n\
             fastcgi_temp_path {d}/fastcgi;\nuwsgi_temp_path {d}/uwsgi;\nscgi_temp_path {d}/scgi;\n\
             keepalive_requests 1000000;\n\
             server {{\n listen unix:{d}/h1.sock;\n listen unix:{d}/h2.sock http2;\n\
             location = /v1/echo {{ default_type application/json; \
             return 200 '{{\"body\":\"Hello, world!\"}}'; }}\n\
             location /grpc_echo.v1.EchoService/ {{ grpc_pass grpc://{grpc_backend}; }}\n}}\n}}\n"
        );
        let path = dir.path().join("nginx.conf");
        std::fs::write(&path, conf).unwrap();
        let mut cmd = Command::new("nginx");
        cmd.arg("-c")
            .arg(&path)
            .arg("-e")
            .arg(dir.path().join("error.log"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        support::die_with_parent(&mut cmd);
        let child = cmd.spawn().expect("start nginx");
        let t0 = Instant::now();
        for s in ["h1.sock", "h2.sock"] {
            while std::os::unix::net::UnixStream::connect(dir.path().join(s)).is_err() {
                assert!(
                    t0.elapsed() < Duration::from_secs(20),
                    "nginx did not start"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Nginx { child, dir }
    }

    fn socket(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// The access log's lines: (request length, bytes sent, status).
    fn log(&self) -> Vec<(u64, u64, u16)> {
        access_log(&self.dir.path().join("access.log"))
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn access_log(path: &Path) -> Vec<(u64, u64, u16)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let n = |i: usize| f[i].parse::<u64>().unwrap_or_else(|e| panic!("{l:?}: {e}"));
            (n(0), n(1), n(2) as u16)
        })
        .collect()
}

#[test]
fn nginx_on_a_unix_socket_counts_the_bytes_we_count() {
    let backend = ServeProcess::start(&["--threads", "1", "--no-h3"]);
    let nginx = Nginx::start(&backend.target());
    let h1 = nginx.socket("h1.sock");
    // GETs over HTTP/1.1: the bytes each way equal what nginx logged for the requests, exactly
    // (its $request_length: request line and headers; $bytes_sent: the whole answer)
    let report = run_json_within(
        &[
            "http",
            "http://localhost/v1/echo",
            "--unix-socket",
            &h1,
            "-n",
            "2000",
            "-c",
            "4",
        ],
        LIMIT,
    );
    let run = proto_run(&report, "http");
    assert_unix_run(run, 2000);
    // nginx writes each log line as its request ends; the last may trail the client's close
    let t0 = Instant::now();
    let mut log = nginx.log();
    while log.len() < 2000 && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
        log = nginx.log();
    }
    assert_eq!(log.len(), 2000);
    assert!(log.iter().all(|&(_, _, s)| s == 200), "{log:?}");
    let (asked, sent): (u64, u64) = log.iter().fold((0, 0), |(a, b), &(q, s, _)| (a + q, b + s));
    assert_eq!(u64_at(run, "/wire/bytes_out"), asked, "{run:#}");
    assert_eq!(u64_at(run, "/wire/bytes_in"), sent, "{run:#}");
    // the echo over each stack: HTTP/1.1 and h2 answered by nginx, gRPC passed through it
    let report = run_json_within(
        &[
            "echo",
            "--target",
            &format!("unix://{h1}"),
            "--proto",
            "http",
            "-n",
            "1000",
            "-c",
            "4",
        ],
        LIMIT,
    );
    assert_unix_run(proto_run(&report, "http"), 1000);
    let report = run_json_within(
        &[
            "echo",
            "--target",
            &format!("unix://{}", nginx.socket("h2.sock")),
            "--proto",
            "h2,grpc",
            "-n",
            "1000",
            "-c",
            "4",
        ],
        LIMIT,
    );
    for proto in ["h2", "grpc"] {
        assert_unix_run(proto_run(&report, proto), 1000);
    }
}
