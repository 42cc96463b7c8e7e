//! TLS with rustls against real etcd (server TLS and client-certificate auth) and the built-in
//! server, certificates generated at test time.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use support::{f64_at, proto_run, run_bounded, run_json_within, u64_at};

/// A CA and, signed by it, a server certificate for 127.0.0.1/localhost and a client certificate.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "wirebench test CA");
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
        for (name, sans) in [
            ("server", vec!["127.0.0.1", "localhost"]),
            ("client", vec!["client"]),
        ] {
            let key = KeyPair::generate().unwrap();
            let mut params =
                CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                    .unwrap();
            params.distinguished_name.push(DnType::CommonName, name);
            let cert = params.signed_by(&key, &ca).unwrap();
            std::fs::write(dir.path().join(format!("{name}.pem")), cert.pem()).unwrap();
            std::fs::write(dir.path().join(format!("{name}.key")), key.serialize_pem()).unwrap();
        }
        Pki { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn s(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }
}

/// etcd serving clients over TLS only; `client_auth` also demands a client certificate.
struct TlsEtcd {
    child: Child,
    port: u16,
    _data: tempfile::TempDir,
}

impl Drop for TlsEtcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_etcd(pki: &Pki, client_auth: bool) -> TlsEtcd {
    let data = tempfile::Builder::new()
        .tempdir_in(if Path::new("/dev/shm").is_dir() {
            "/dev/shm"
        } else {
            "/tmp"
        })
        .unwrap();
    let (port, peer) = (support::unused_port(), support::unused_port());
    let mut cmd = Command::new("/usr/bin/etcd");
    cmd.args(["--name", "tls", "--data-dir"])
        .arg(data.path())
        .args([
            "--listen-client-urls",
            &format!("https://127.0.0.1:{port}"),
            "--advertise-client-urls",
            &format!("https://127.0.0.1:{port}"),
            "--listen-peer-urls",
            &format!("http://127.0.0.1:{peer}"),
            "--initial-advertise-peer-urls",
            &format!("http://127.0.0.1:{peer}"),
            "--initial-cluster",
            &format!("tls=http://127.0.0.1:{peer}"),
            "--cert-file",
            &pki.s("server.pem"),
            "--key-file",
            &pki.s("server.key"),
            "--log-level",
            "error",
            "--logger",
            "zap",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if client_auth {
        cmd.args(["--client-cert-auth", "--trusted-ca-file", &pki.s("ca.pem")]);
    }
    support::die_with_parent(&mut cmd);
    let child = cmd
        .spawn()
        .expect("start etcd (run scripts/test.sh to install it)");
    let etcd = TlsEtcd {
        child,
        port,
        _data: data,
    };
    // Ready once a TLS call through wirebench itself answers.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut args = vec![
            "call".to_string(),
            "etcd".into(),
            "range".into(),
            "k".into(),
            "--endpoints".into(),
            etcd.endpoint(),
            "--cacert".into(),
            pki.s("ca.pem"),
            "--timeout".into(),
            "1s".into(),
        ];
        if client_auth {
            args.extend([
                "--cert".into(),
                pki.s("client.pem"),
                "--key".into(),
                pki.s("client.key"),
            ]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        if run_bounded(&args, Duration::from_secs(10)).code == Some(0) {
            return etcd;
        }
        assert!(
            Instant::now() < deadline,
            "etcd with TLS did not become ready"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

impl TlsEtcd {
    fn endpoint(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }
}

fn check_tls_run(report: &serde_json::Value, n: u64) {
    check_tls_runs(report, n, &["http", "grpc"]);
}

fn check_tls_runs(report: &serde_json::Value, n: u64, protos: &[&str]) {
    for &proto in protos {
        let run = proto_run(report, proto);
        assert_eq!(
            u64_at(run, "/summary/ok"),
            n,
            "{proto}: {:#}",
            run["error_distribution"]
        );
        let conns = u64_at(run, "/wire/connections_opened");
        assert_eq!(u64_at(run, "/wire/tls/handshakes"), conns, "{proto}");
        assert!(u64_at(run, "/wire/tls/record_overhead_out") > 0, "{proto}");
        assert!(u64_at(run, "/wire/tls/record_overhead_in") > 0, "{proto}");
        // the layers are counted on plaintext: h2 frames still parse behind TLS
        if proto != "http" {
            let frames = &run["wire"]["layers"]["h2"]["out"]["frames"]["HEADERS"]["count"];
            assert!(
                frames.as_u64().unwrap_or(0) >= n,
                "{proto}: {:#}",
                run["wire"]["layers"]
            );
        }
    }
}

#[test]
fn etcd_over_tls_and_with_client_certificates() {
    let pki = Pki::new();
    let limit = Duration::from_secs(60);
    let etcd = start_etcd(&pki, false);
    let ep = etcd.endpoint();
    let report = run_json_within(
        &[
            "etcd",
            "put",
            "--endpoints",
            &ep,
            "-c",
            "4",
            "-n",
            "400",
            "--cacert",
            &pki.s("ca.pem"),
        ],
        limit,
    );
    check_tls_run(&report, 400);
    let report = run_json_within(
        &[
            "etcd",
            "range",
            "k",
            "--endpoints",
            &ep,
            "-n",
            "100",
            "--insecure-skip-verify",
        ],
        limit,
    );
    check_tls_run(&report, 100);
    // a CA that did not sign the server: a clear connect failure, exit 1
    let other = Pki::new();
    let run = run_bounded(
        &[
            "etcd",
            "put",
            "--endpoints",
            &ep,
            "-n",
            "10",
            "--cacert",
            &other.s("ca.pem"),
        ],
        limit,
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("TLS handshake"), "{}", run.stderr);
    drop(etcd);

    let etcd = start_etcd(&pki, true);
    let ep = etcd.endpoint();
    let report = run_json_within(
        &[
            "etcd",
            "put",
            "--endpoints",
            &ep,
            "-c",
            "4",
            "-n",
            "400",
            "--cacert",
            &pki.s("ca.pem"),
            "--cert",
            &pki.s("client.pem"),
            "--key",
            &pki.s("client.key"),
        ],
        limit,
    );
    check_tls_run(&report, 400);
    // without a client certificate etcd refuses the requests
    let run = run_bounded(
        &[
            "etcd",
            "put",
            "--endpoints",
            &ep,
            "-n",
            "10",
            "--cacert",
            &pki.s("ca.pem"),
        ],
        limit,
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
}

/// `wirebench serve` with the PKI's server certificate on a free port, and its https URL.
fn serve_tls(pki: &Pki) -> (Child, String) {
    let port = support::unused_port();
    let mut cmd = support::wirebench();
    cmd.args([
        "serve",
        "--addr",
        &format!("127.0.0.1:{port}"),
        "--threads",
        "1",
        "--tls-cert",
    ])
    .arg(pki.path("server.pem"))
    .arg("--tls-key")
    .arg(pki.path("server.key"))
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    support::die_with_parent(&mut cmd);
    let server = cmd.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    (server, format!("https://localhost:{port}"))
}

#[test]
fn the_builtin_server_over_tls() {
    let pki = Pki::new();
    let (mut server, target) = serve_tls(&pki);
    let report = run_json_within(
        &[
            "echo",
            "--target",
            &target,
            "-c",
            "4",
            "-n",
            "1000",
            "--cacert",
            &pki.s("ca.pem"),
            "--proto",
            "http,h2,grpc",
        ],
        Duration::from_secs(60),
    );
    let _ = server.kill();
    let _ = server.wait();
    // plain HTTP/2 over TLS: ALPN h2, the JSON echo
    check_tls_runs(&report, 1000, &["http", "h2", "grpc"]);
}

/// The revision etcd reports, read with `call etcd range` over TLS.
fn revision(ep: &str, pki: &Pki) -> u64 {
    let out = run_bounded(
        &[
            "call",
            "etcd",
            "range",
            "k",
            "--endpoints",
            ep,
            "--cacert",
            &pki.s("ca.pem"),
        ],
        Duration::from_secs(20),
    );
    assert_eq!(out.code, Some(0), "{out:#?}");
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    v["header"]["revision"]
        .as_str()
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no header.revision in {v:#}"))
}

#[test]
fn etcds_gateway_is_reached_over_tls_with_alpn_h2() {
    let pki = Pki::new();
    let limit = Duration::from_secs(60);
    let etcd = start_etcd(&pki, false);
    let ep = etcd.endpoint();
    let before = revision(&ep, &pki);
    let report = run_json_within(
        &[
            "etcd",
            "put",
            "--endpoints",
            &ep,
            "--proto",
            "h2",
            "-c",
            "4",
            "-n",
            "400",
            "--warmup",
            "0s",
            "--cacert",
            &pki.s("ca.pem"),
        ],
        limit,
    );
    check_tls_runs(&report, 400, &["h2"]);
    let run = proto_run(&report, "h2");
    assert_eq!(run["title"], "HTTP/2");
    // JSON bodies on h2 streams, not gRPC
    let out = &run["wire"]["layers"]["h2"]["out"];
    assert_eq!(out["grpc_messages"], 0, "{out:#}");
    assert_eq!(out["frames"]["DATA"]["count"], 400, "{out:#}");
    // every acknowledged put is one revision (ground truth: etcd's own counter)
    assert_eq!(revision(&ep, &pki), before + 400);
    // range over the same path
    let report = run_json_within(
        &[
            "etcd",
            "range",
            "k",
            "--endpoints",
            &ep,
            "--proto",
            "h2",
            "-n",
            "100",
            "--cacert",
            &pki.s("ca.pem"),
        ],
        limit,
    );
    check_tls_runs(&report, 100, &["h2"]);
    // in plaintext etcd hands HTTP/2 to gRPC: refused before the run, one line
    support::assert_refused(
        &[
            "etcd",
            "put",
            "--endpoints",
            "http://127.0.0.1:9",
            "--proto",
            "h2",
        ],
        2,
        "over TLS only",
    );
}

/// `--requests-per-conn` figures of one run over TLS: every connection carried `per_conn`
/// requests (the last at most that), each made a handshake, and the report says how many of
/// them resumed a session.
fn check_churn(run: &serde_json::Value, proto: &str, n: u64, per_conn: u64) -> (u64, u64) {
    let ctx = format!("{proto}: {:#}", run["connection_setup"]);
    assert_eq!(u64_at(run, "/summary/ok"), n, "{ctx}");
    let setup = &run["connection_setup"];
    assert_eq!(u64_at(setup, "/requests_per_conn"), per_conn, "{ctx}");
    let opened = u64_at(run, "/wire/connections_opened");
    let written = u64_at(run, "/wire/requests_on_wire");
    // no connection before the start: every one was opened for requests, and each carried
    // `per_conn` of them but the last of each client (HTTP/1.1) or of the shared one (h2)
    let least = written.div_ceil(per_conn);
    assert!(
        opened >= least && opened <= least + 4,
        "{opened} connections: {ctx}"
    );
    let ratio = setup["connections_per_request"].as_f64().unwrap();
    assert!(
        (ratio - opened as f64 / written as f64).abs() < 1e-9,
        "{ctx}"
    );
    let tls = &setup["tls"];
    let handshakes = u64_at(tls, "/handshakes");
    assert_eq!(handshakes, opened, "{ctx}");
    let (full, resumed) = (u64_at(tls, "/full"), u64_at(tls, "/resumed"));
    assert_eq!(full + resumed, handshakes, "{ctx}");
    assert!(tls["client_cpu_us"].as_f64().unwrap() > 0.0, "{ctx}");
    assert!(tls["bytes_in"].as_f64().unwrap() > 0.0, "{ctx}");
    // the latency includes the setup, the other figure does not
    let with = f64_at(run, "/summary/average_ms");
    let without = setup["without_setup_average_ms"].as_f64().unwrap();
    assert!(without > 0.0 && without < with, "{ctx}");
    (full, resumed)
}

#[test]
fn a_connection_per_request_over_tls_shows_the_handshake_cost() {
    let pki = Pki::new();
    let limit = Duration::from_secs(60);
    let etcd = start_etcd(&pki, false);
    let ep = etcd.endpoint();
    let before = revision(&ep, &pki);
    let ca = pki.s("ca.pem");
    let put = |extra: &[&str]| {
        let mut args = vec![
            "etcd",
            "put",
            "--endpoints",
            &ep,
            "--proto",
            "http,grpc",
            "-c",
            "4",
            "-n",
            "200",
            "--cacert",
            &ca,
            "--requests-per-conn",
            "1",
        ];
        args.extend_from_slice(extra);
        run_json_within(&args, limit)
    };
    // sessions resumed (rustls' default): after the first handshakes, most resume
    let report = put(&[]);
    for proto in ["http", "grpc"] {
        let (full, resumed) = check_churn(proto_run(&report, proto), proto, 200, 1);
        assert!(resumed >= 100, "{proto}: {full} full, {resumed} resumed");
    }
    // --tls-resume off: every handshake is full, and costs more bytes than a resumed one
    let off = put(&["--tls-resume", "off"]);
    for proto in ["http", "grpc"] {
        let (full, resumed) = check_churn(proto_run(&off, proto), proto, 200, 1);
        assert_eq!((full, resumed), (200, 0), "{proto}");
        let bytes =
            |r: &serde_json::Value| r["connection_setup"]["tls"]["bytes_in"].as_f64().unwrap();
        assert!(
            bytes(proto_run(&off, proto)) > bytes(proto_run(&report, proto)),
            "{proto}: a full handshake brings the certificate"
        );
    }
    // four runs of 200 acknowledged puts
    assert_eq!(revision(&ep, &pki) - before, 800, "etcd revision delta");
    drop(etcd);
}

#[test]
fn the_builtin_server_churns_connections_over_tls() {
    let pki = Pki::new();
    let (mut server, target) = serve_tls(&pki);
    let report = run_json_within(
        &[
            "echo",
            "--target",
            &target,
            "-c",
            "4",
            "-n",
            "300",
            "--cacert",
            &pki.s("ca.pem"),
            "--proto",
            "http,h2,grpc",
            "--requests-per-conn",
            "10",
        ],
        Duration::from_secs(60),
    );
    let _ = server.kill();
    let _ = server.wait();
    for proto in ["http", "h2", "grpc"] {
        check_churn(proto_run(&report, proto), proto, 300, 10);
    }
}
