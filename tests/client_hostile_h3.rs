//! Misbehaving HTTP/3 servers: the real binary against QUIC servers that flood a response with
//! DATA, send a field section far over every limit, reset every request stream, open their
//! control stream with the wrong frame, or stop acknowledging anything after the handshake.
//! Every run must end on its own, never panic, keep its peak RSS bounded, and count each
//! request as failed under a clear kind; nothing succeeds, so it exits 1 with the JSON report
//! on stdout and one "error:" line on stderr.
//!
//! The servers are quinn's server side writing hand-made HTTP/3 frames, so they share no code
//! with the client under test (neither the wire crate's frames nor its QPACK).

mod support;

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{die_with_parent, proto_run, run_command_sampling_rss, u64_at, wirebench};

/// Hard limit for one run of the binary.
const LIMIT: Duration = Duration::from_secs(40);
/// Peak resident set size a run may reach, whatever the server sends.
const MAX_RSS_KIB: u64 = 200 * 1024;

/// What the hostile server does with each request stream, after reading the request.
#[derive(Clone, Copy)]
enum Behavior {
    /// HEADERS 200, then DATA frames of 64 KiB without end
    Flood,
    /// a HEADERS frame whose length says 1 MiB (and 1 MiB of bytes behind it)
    HugeFieldSection,
    /// RESET_STREAM with H3_INTERNAL_ERROR
    Reset,
    /// the control stream opens with a DATA frame instead of SETTINGS
    BadControlStream,
    /// answers nothing (the proxy in front of it drops what it sends after the handshake)
    Silent,
    /// answers every request well (the echo's JSON); its TLS resumes sessions but takes no
    /// early data, so a resuming client's 0-RTT is refused and must go again
    RefusesEarlyData,
}

/// The control stream's type (0x00), then SETTINGS with no parameters (type 0x04, length 0).
const CONTROL_SETTINGS: &[u8] = &[0x00, 0x04, 0x00];
/// The control stream's type, then a DATA frame (type 0x00, length 1): not allowed there.
const CONTROL_DATA: &[u8] = &[0x00, 0x00, 0x01, 0x61];
/// HEADERS carrying `:status: 200` as a QPACK indexed field line (static index 25): prefix
/// 0x00 0x00, then 0xc0 | 25.
const HEADERS_200: &[u8] = &[0x01, 0x03, 0x00, 0x00, 0xd9];

/// A QUIC server on quinn for 127.0.0.1, speaking HTTP/3 by hand as `behavior` says; stops
/// when the test ends (its thread is detached). Returns its address and the PEM of its
/// certificate, written to `dir`.
fn hostile_server(behavior: Behavior, dir: &std::path::Path) -> (SocketAddr, String) {
    let c = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
        .expect("a certificate");
    let cert_path = dir.join("cert.pem");
    std::fs::write(&cert_path, c.cert.pem()).unwrap();
    let cert = c.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(c.signing_key.serialize_der().into());
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert], key)
    .unwrap();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    // RefusesEarlyData: the first connection's tickets allow early data; every later one is
    // served by a configuration that takes none (the same session store: it resumes)
    let mut refusing = tls.clone();
    refusing.max_early_data_size = 0;
    if matches!(behavior, Behavior::RefusesEarlyData) {
        tls.max_early_data_size = u32::MAX;
    }
    let quic = |tls: rustls::ServerConfig| {
        let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
        quinn::ServerConfig::with_crypto(Arc::new(crypto))
    };
    let (config, refusing) = (quic(tls), Arc::new(quic(refusing)));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let endpoint = quinn::Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap();
            tx.send(endpoint.local_addr().unwrap()).unwrap();
            while let Some(incoming) = endpoint.accept().await {
                if matches!(behavior, Behavior::RefusesEarlyData) {
                    endpoint.set_server_config(Some((*refusing).clone()));
                }
                tokio::spawn(async move {
                    if let Ok(conn) = incoming.await {
                        let _ = serve(conn, behavior).await;
                    }
                });
            }
        });
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the server's address");
    (addr, cert_path.to_string_lossy().into_owned())
}

async fn serve(
    conn: quinn::Connection,
    behavior: Behavior,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut control = conn.open_uni().await?;
    let first = match behavior {
        Behavior::BadControlStream => CONTROL_DATA,
        _ => CONTROL_SETTINGS,
    };
    control.write_all(first).await?;
    loop {
        let (mut send, mut recv) = conn.accept_bi().await?;
        tokio::spawn(async move {
            // the request: HEADERS and DATA to its FIN
            let _ = recv.read_to_end(1 << 20).await;
            match behavior {
                Behavior::Flood => {
                    let _ = send.write_all(HEADERS_200).await;
                    // DATA, length 65536 (a 4-byte varint: 0x80 0x01 0x00 0x00), then its bytes
                    let mut frame = vec![0x00, 0x80, 0x01, 0x00, 0x00];
                    frame.resize(5 + 65536, b'x');
                    while send.write_all(&frame).await.is_ok() {}
                }
                Behavior::HugeFieldSection => {
                    // HEADERS, length 1 MiB (0x80 0x10 0x00 0x00), then the bytes
                    let mut frame = vec![0x01, 0x80, 0x10, 0x00, 0x00];
                    frame.resize(5 + (1 << 20), 0x51);
                    let _ = send.write_all(&frame).await;
                    let _ = send.finish();
                }
                Behavior::Reset => {
                    let _ = send.reset(quinn::VarInt::from_u32(0x102));
                }
                Behavior::RefusesEarlyData => {
                    let body = br#"{"body":"Hello, world!","headers":{}}"#;
                    let mut frames = HEADERS_200.to_vec();
                    frames.extend([0x00, body.len() as u8]);
                    frames.extend_from_slice(body);
                    let _ = send.write_all(&frames).await;
                    let _ = send.finish();
                }
                Behavior::BadControlStream | Behavior::Silent => {
                    // hold the stream open, answer nothing
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
            }
        });
    }
}

/// A UDP relay in front of `server`: everything from the client goes through, and what the
/// server sends goes back for `open_for`, then nothing (the server seems to acknowledge
/// nothing). Returns the relay's address.
fn one_way_after(server: SocketAddr, open_for: Duration) -> SocketAddr {
    let front = UdpSocket::bind("127.0.0.1:0").unwrap();
    let back = UdpSocket::bind("127.0.0.1:0").unwrap();
    back.connect(server).unwrap();
    let addr = front.local_addr().unwrap();
    let client: Arc<std::sync::Mutex<Option<SocketAddr>>> = Arc::default();
    let started = Instant::now();
    {
        let (front, back, client) = (
            front.try_clone().unwrap(),
            back.try_clone().unwrap(),
            client.clone(),
        );
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            while let Ok((n, from)) = front.recv_from(&mut buf) {
                *client.lock().unwrap() = Some(from);
                let _ = back.send(&buf[..n]);
            }
        });
    }
    std::thread::spawn(move || {
        let mut buf = [0u8; 65536];
        while let Ok(n) = back.recv(&mut buf) {
            if started.elapsed() > open_for {
                continue;
            }
            if let Some(to) = *client.lock().unwrap() {
                let _ = front.send_to(&buf[..n], to);
            }
        }
    });
    addr
}

/// Runs `wirebench echo --target https://ADDR --proto h3 --cacert CERT -n N --timeout T
/// --format json` and checks what every case must: it ends, no panic, bounded RSS, exit 1 with
/// one error line, every request counted as failed. Returns the run's report.
fn all_fail(addr: SocketAddr, cert: &str, n: u64, extra: &[&str]) -> Value {
    let target = format!("https://{addr}");
    let n_arg = n.to_string();
    let mut args = vec![
        "echo", "--target", &target, "--proto", "h3", "--cacert", cert, "-n", &n_arg, "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    if !args.contains(&"--timeout") {
        args.extend(["--timeout", "2s"]);
    }
    let mut cmd = wirebench();
    cmd.args(&args);
    die_with_parent(&mut cmd);
    let (run, max_rss_kib) = run_command_sampling_rss(cmd, LIMIT);
    let ctx = format!(
        "wirebench {}\nexit {:?} after {:?}, peak RSS {max_rss_kib} KiB\nstderr:\n{}",
        args.join(" "),
        run.code,
        run.elapsed,
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"), "panic: {ctx}");
    assert!(max_rss_kib < MAX_RSS_KIB, "peak RSS: {ctx}");
    assert_eq!(run.code, Some(1), "{ctx}");
    let lines = run.stderr_lines();
    assert!(
        lines.len() == 1 && lines[0].starts_with("error: no HTTP/3 request succeeded"),
        "one error line expected: {ctx}"
    );
    let report: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {ctx}"));
    let r = proto_run(&report, "h3").clone();
    assert_eq!(u64_at(&r, "/summary/ok"), 0, "{ctx}");
    assert_eq!(u64_at(&r, "/summary/failed"), n, "{ctx}");
    r
}

/// Every failure's kind is one of `kinds`, and its message names one of `words`.
fn assert_errors(run: &Value, kinds: &[&str], words: &[&str]) {
    let errors = run["error_distribution"]
        .as_array()
        .expect("error_distribution");
    assert!(!errors.is_empty());
    for e in errors {
        let kind = e["kind"].as_str().unwrap_or_default();
        let message = e["message"].as_str().unwrap_or_default();
        assert!(kinds.contains(&kind), "{kind}: {message}: {errors:#?}");
        assert!(
            words.iter().any(|w| message.contains(w)),
            "{kind}: {message:?} names none of {words:?}"
        );
    }
}

#[test]
fn a_flood_of_data_stops_at_the_body_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, cert) = hostile_server(Behavior::Flood, dir.path());
    let run = all_fail(addr, &cert, 4, &["-c", "2", "--max-body", "1M"]);
    assert_errors(&run, &["body_too_large"], &["response body beyond"]);
}

#[test]
fn a_field_section_over_every_limit_closes_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, cert) = hostile_server(Behavior::HugeFieldSection, dir.path());
    let run = all_fail(addr, &cert, 4, &["-c", "1"]);
    assert_errors(&run, &["h3", "connect"], &["H3_", "QPACK", "frame"]);
}

#[test]
fn reset_streams_are_counted_with_their_code() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, cert) = hostile_server(Behavior::Reset, dir.path());
    let run = all_fail(addr, &cert, 20, &["-c", "4"]);
    assert_errors(&run, &["h3"], &["reset the request stream (0x102)"]);
}

#[test]
fn a_control_stream_without_settings_closes_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, cert) = hostile_server(Behavior::BadControlStream, dir.path());
    let run = all_fail(addr, &cert, 4, &["-c", "1"]);
    assert_errors(&run, &["h3", "connect"], &["H3_MISSING_SETTINGS"]);
}

#[test]
fn refused_early_data_is_sent_again_and_every_request_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, cert) = hostile_server(Behavior::RefusesEarlyData, dir.path());
    let target = format!("https://{addr}");
    let report = support::run_json_within(
        &[
            "echo",
            "--target",
            &target,
            "--proto",
            "h3",
            "--cacert",
            &cert,
            "--requests-per-conn",
            "5",
            "-c",
            "2",
            "-n",
            "50",
        ],
        LIMIT,
    );
    let r = proto_run(&report, "h3");
    assert_eq!(u64_at(r, "/summary/ok"), 50, "{r:#}");
    let h = &r["wire"]["h3"]["handshake"];
    // every connection after the first resumed; the second, with the first's ticket, sent
    // its requests early and was refused (they went again in 1-RTT: all 50 succeeded); the
    // later tickets allow no early data
    assert!(u64_at(h, "/resumed") >= 8, "{h:#}");
    assert_eq!(u64_at(h, "/zero_rtt"), 1, "{h:#}");
    assert_eq!(u64_at(h, "/zero_rtt_accepted"), 0, "{h:#}");
}

#[test]
fn a_server_that_stops_acknowledging_ends_in_timeouts() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, cert) = hostile_server(Behavior::Silent, dir.path());
    let relay = one_way_after(addr, Duration::from_millis(500));
    let run = all_fail(relay, &cert, 6, &["-c", "3", "--timeout", "1s"]);
    assert_errors(
        &run,
        &["timeout", "quic"],
        &["timeout", "no response", "idle"],
    );
}
