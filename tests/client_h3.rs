//! The HTTP/3 client (`--proto h3`) against a server this project did not write: Hypercorn on
//! aioquic (tests/interop/h3_server.py), and what a user gets wrong (no trust, no server).

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::{assert_one_error_line, run_bounded, run_json_within};

/// A self-signed certificate for 127.0.0.1 and localhost (not a CA) and its key, in `dir`.
fn certificate(dir: &std::path::Path) -> (String, String) {
    let c = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
        .expect("a certificate");
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    std::fs::write(&cert, c.cert.pem()).unwrap();
    std::fs::write(&key, c.signing_key.serialize_pem()).unwrap();
    (
        cert.to_string_lossy().into_owned(),
        key.to_string_lossy().into_owned(),
    )
}

/// tests/interop/h3_server.py: Hypercorn serving HTTP/3 (and TCP) on one port; it stops by
/// itself after two minutes.
struct Hypercorn {
    child: Child,
    port: u16,
    cert: String,
    _dir: tempfile::TempDir,
}

impl Hypercorn {
    fn start() -> Hypercorn {
        let ok = Command::new("python3")
            .args(["-c", "import hypercorn, aioquic"])
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "python3 with hypercorn and aioquic is needed: {}",
            support::PYTHON_PEERS
        );
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = certificate(dir.path());
        let port = free_udp_and_tcp_port();
        let mut cmd = Command::new("python3");
        cmd.arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/interop/h3_server.py"
        ))
        .args([&port.to_string(), &cert, &key, "120"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
        support::die_with_parent(&mut cmd);
        let mut child = cmd.spawn().expect("start h3_server.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("its stdout"))
            .read_line(&mut line)
            .expect("the server's first line");
        assert_eq!(
            line.trim(),
            format!("listening {port}"),
            "h3_server.py said {line:?}"
        );
        Hypercorn {
            child,
            port,
            cert,
            _dir: dir,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Hypercorn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port free for both TCP and UDP on 127.0.0.1 (Hypercorn binds both).
fn free_udp_and_tcp_port() -> u16 {
    loop {
        let port = support::unused_port();
        if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

fn run_of<'a>(report: &'a Value, proto: &str) -> &'a Value {
    support::proto_run(report, proto)
}

#[test]
fn hypercorn_answers_ten_thousand_echo_requests_over_h3() {
    let srv = Hypercorn::start();
    let report = run_json_within(
        &[
            "echo",
            "--target",
            &srv.url(""),
            "--proto",
            "h3",
            "--cacert",
            &srv.cert,
            "-c",
            "10",
            "-n",
            "10000",
            "--warmup",
            "0s",
        ],
        Duration::from_secs(120),
    );
    let run = run_of(&report, "h3");
    assert_eq!(run["title"], "HTTP/3", "{run:#}");
    assert_eq!(support::u64_at(run, "/summary/count"), 10_000, "{run:#}");
    assert_eq!(support::u64_at(run, "/summary/failed"), 0, "{run:#}");
    // every request went out on one QUIC connection as a stream of its own
    let conns = run["per_connection"].as_array().expect("per_connection[]");
    assert_eq!(conns.len(), 1, "{run:#}");
    let c = &conns[0];
    let h3 = &c["h3"];
    assert_eq!(support::u64_at(c, "/requests"), 10_000);
    // one HEADERS frame each way per request (Hypercorn sends no trailers), a DATA frame out
    // per request (frames[0] is DATA, frames[1] HEADERS)
    assert_eq!(
        support::u64_at(h3, "/frames_out/frames/1/count"),
        10_000,
        "{h3:#}"
    );
    assert_eq!(
        support::u64_at(h3, "/frames_out/frames/0/count"),
        10_000,
        "{h3:#}"
    );
    assert_eq!(
        support::u64_at(h3, "/frames_in/frames/1/count"),
        10_000,
        "{h3:#}"
    );
    // the socket's bytes (until the record, then the close) are quinn's, both ways
    for (dir, quinn) in [("out", "/quic/udp_bytes_out"), ("in", "/quic/udp_bytes_in")] {
        let ours = support::u64_at(c, &format!("/bytes_{dir}"))
            + support::u64_at(c, &format!("/close/bytes_{dir}"));
        assert_eq!(ours, support::u64_at(h3, quinn), "{c:#}");
    }
    // no request was cancelled: every stream ended with its response
    assert_eq!(
        support::u64_at(h3, "/quic/frames_out/reset_stream"),
        0,
        "{h3:#}"
    );
    assert_eq!(support::u64_at(h3, "/handshakes"), 1);
}

#[test]
fn hypercorn_pages_and_statuses_come_back_over_h3() {
    let srv = Hypercorn::start();
    let report = run_json_within(
        &[
            "http",
            &srv.url("/hello"),
            "--proto",
            "h3",
            "--cacert",
            &srv.cert,
            "-n",
            "50",
        ],
        Duration::from_secs(60),
    );
    let run = run_of(&report, "h3");
    assert_eq!(support::u64_at(run, "/summary/failed"), 0, "{run:#}");
    // every answer a 503: the report counts them, and the exit says none succeeded
    let run = run_bounded(
        &[
            "http",
            &srv.url("/status/503"),
            "--proto",
            "h3",
            "--cacert",
            &srv.cert,
            "-n",
            "20",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("HTTP 503"), "{}", run.stderr);
    assert!(run.stdout.contains("[503]\t20 responses"), "{}", run.stdout);
}

#[test]
fn an_untrusted_certificate_is_one_line_and_so_is_a_missing_server() {
    let srv = Hypercorn::start();
    // no --cacert: refused before anything is sent
    let run = run_bounded(
        &["http", &srv.url("/hello"), "--proto", "h3", "-n", "5"],
        Duration::from_secs(30),
    );
    assert_eq!(run.code, Some(2), "{:?}", run.stderr);
    assert_one_error_line(&run, "no trust");
    assert!(run.stderr.contains("--cacert"), "{}", run.stderr);
    // a certificate that is not the server's: the handshake fails, one line
    let other = tempfile::tempdir().unwrap();
    let (wrong, _) = certificate(other.path());
    let run = run_bounded(
        &[
            "http",
            &srv.url("/hello"),
            "--proto",
            "h3",
            "--cacert",
            &wrong,
            "-n",
            "5",
        ],
        Duration::from_secs(30),
    );
    assert_ne!(run.code, Some(0));
    assert_one_error_line(&run, "a wrong certificate");
    assert!(run.stderr.contains("certificate"), "{}", run.stderr);
    // nothing on the port: the connect fails quickly (ICMP port unreachable), one line
    let port = free_udp_and_tcp_port();
    let url = format!("https://127.0.0.1:{port}/");
    let run = run_bounded(
        &[
            "http", &url, "--proto", "h3", "--cacert", &srv.cert, "-n", "5",
        ],
        Duration::from_secs(30),
    );
    assert_ne!(run.code, Some(0));
    assert_one_error_line(&run, "no server");
    assert!(run.elapsed < Duration::from_secs(10), "{:?}", run.elapsed);
}

/// Debian's Caddy serving a directory over HTTP/3 (and TCP) on one port, with `cert`/`key`; it
/// is killed when dropped.
struct Caddy {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Caddy {
    fn start(cert: &str, key: &str, file: &[u8]) -> Caddy {
        assert!(
            Command::new("caddy")
                .arg("version")
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success()),
            "caddy is needed (apt-get install caddy; scripts/test.sh installs it)"
        );
        let dir = tempfile::tempdir().unwrap();
        let site = dir.path().join("site");
        std::fs::create_dir(&site).unwrap();
        std::fs::write(site.join("file.txt"), file).unwrap();
        let port = free_udp_and_tcp_port();
        // no admin endpoint, no automatic certificates; rustls sends no SNI for an IP address,
        // so the default SNI picks the site's certificate
        let caddyfile = format!(
            "{{\n\tadmin off\n\tdefault_sni 127.0.0.1\n\tauto_https off\n\tservers {{\n\t\tprotocols h1 h2 h3\n\t}}\n}}\nhttps://127.0.0.1:{port} {{\n\ttls {cert} {key}\n\troot * {}\n\tfile_server\n}}\n",
            site.display()
        );
        let conf = dir.path().join("Caddyfile");
        std::fs::write(&conf, caddyfile).unwrap();
        let mut cmd = Command::new("caddy");
        cmd.args(["run", "--adapter", "caddyfile", "--config"])
            .arg(&conf)
            .env("HOME", dir.path())
            .env("XDG_DATA_HOME", dir.path())
            .env("XDG_CONFIG_HOME", dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        support::die_with_parent(&mut cmd);
        let child = cmd.spawn().expect("start caddy");
        // ready once its TCP side accepts (the UDP socket is bound in the same start)
        let t0 = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "caddy did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Caddy {
            child,
            port,
            _dir: dir,
        }
    }
}

impl Drop for Caddy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn caddy_serves_a_file_ten_thousand_times_over_h3() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(dir.path());
    let body = vec![b'w'; 1000];
    let srv = Caddy::start(&cert, &key, &body);
    let url = format!("https://127.0.0.1:{}/file.txt", srv.port);
    let report = run_json_within(
        &[
            "http", &url, "--proto", "h3", "--cacert", &cert, "-c", "10", "-n", "10000",
        ],
        Duration::from_secs(120),
    );
    let run = run_of(&report, "h3");
    assert_eq!(support::u64_at(run, "/summary/ok"), 10_000, "{run:#}");
    assert_eq!(support::u64_at(run, "/summary/failed"), 0, "{run:#}");
    let c = &run["per_connection"][0];
    // every response's body came in DATA: 1000 bytes each, nothing else in DATA
    assert_eq!(
        support::u64_at(c, "/h3/frames_in/frames/0/payload_bytes"),
        10_000 * 1000,
        "{c:#}"
    );
}

#[test]
fn churned_connections_resume_their_tls_sessions_unless_told_not_to() {
    let handshakes = |extra: &[&str]| -> (u64, u64) {
        let mut args = vec![
            "echo",
            "--proto",
            "h3",
            "--requests-per-conn",
            "10",
            "-n",
            "100",
            "-c",
            "2",
        ];
        args.extend_from_slice(extra);
        let report = run_json_within(&args, Duration::from_secs(60));
        let run = run_of(&report, "h3");
        assert_eq!(support::u64_at(run, "/summary/ok"), 100, "{run:#}");
        let h = &run["wire"]["h3"]["handshake"];
        // a resumed session sends its requests in 0-RTT, which the built-in server takes
        assert_eq!(
            support::u64_at(h, "/zero_rtt"),
            support::u64_at(h, "/zero_rtt_accepted"),
            "{h:#}"
        );
        assert_eq!(
            support::u64_at(h, "/zero_rtt"),
            support::u64_at(h, "/resumed"),
            "{h:#}"
        );
        (
            support::u64_at(h, "/handshakes"),
            support::u64_at(h, "/resumed"),
        )
    };
    // every connection after the first presents a ticket the built-in server accepts; the
    // server's flight then has no Certificate (the ledger's decryption reads it)
    let (all, resumed) = handshakes(&[]);
    assert!(all >= 10, "{all} handshakes");
    assert!(resumed >= all - 2, "{resumed} of {all} resumed");
    let (all, resumed) = handshakes(&["--tls-resume", "off"]);
    assert!(all >= 10, "{all} handshakes");
    assert_eq!(resumed, 0, "--tls-resume off");
}
