//! The built-in server over HTTP/3: the JSON echo, 404, injected failures and padding, many
//! requests on one connection, 413, GOAWAY and closes, a clean stop; and `wirebench serve
//! --h3-cert-out`, whose certificate a client trusts. The client is quinn with the h3 crate,
//! written here, trusting exactly the certificate the server presents.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::Value;
use support::ServeProcess;
use wirebench::server::faults::Faults;
use wirebench::server::{ServeConfig, Server};

type SendRequest = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// How long one exchange may take on a busy host.
const EXCHANGE: Duration = Duration::from_secs(20);

fn server(faults: Faults, threads: usize) -> Server {
    Server::start(ServeConfig {
        threads,
        faults,
        ..ServeConfig::loopback()
    })
    .expect("start the echo server")
}

/// A client connection: its endpoint (kept alive with it), the requests' handle, and a task
/// that ends when the connection does.
struct Client {
    _endpoint: quinn::Endpoint,
    send: SendRequest,
    closed: tokio::task::JoinHandle<()>,
}

async fn connect(addr: SocketAddr, cert: CertificateDer<'static>) -> Client {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).expect("a certificate rustls takes");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let mut endpoint = quinn::Endpoint::client((addr.ip(), 0).into()).expect("a client endpoint");
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(quic)));
    let conn = tokio::time::timeout(EXCHANGE, endpoint.connect(addr, "localhost").unwrap())
        .await
        .expect("the handshake in time")
        .expect("the handshake");
    let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(conn))
        .await
        .expect("an h3 connection");
    let closed = tokio::spawn(async move {
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    Client {
        _endpoint: endpoint,
        send,
        closed,
    }
}

/// The answer to one request: its status and body.
async fn exchange(
    send: &mut SendRequest,
    path: &str,
    headers: &[(&str, &str)],
    body: Bytes,
) -> (u16, Bytes) {
    let mut req = http::Request::post(format!("https://localhost{path}"))
        .header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let work = async {
        let mut stream = send.send_request(req.body(()).unwrap()).await?;
        // a body over the server's limit: it answers before the end and stops reading
        for chunk in body.chunks(64 << 10) {
            if stream
                .send_data(Bytes::copy_from_slice(chunk))
                .await
                .is_err()
            {
                break;
            }
        }
        let _ = stream.finish().await;
        let resp = stream.recv_response().await?;
        let mut got = Vec::new();
        while let Some(mut chunk) = stream.recv_data().await? {
            while chunk.has_remaining() {
                let c = chunk.chunk();
                got.extend_from_slice(c);
                let n = c.len();
                chunk.advance(n);
            }
        }
        Ok::<_, h3::error::StreamError>((resp.status().as_u16(), Bytes::from(got)))
    };
    tokio::time::timeout(EXCHANGE, work)
        .await
        .expect("an answer in time")
        .expect("an answer")
}

async fn echo(send: &mut SendRequest, ping: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let body = serde_json::json!({ "ping": ping }).to_string();
    let (status, body) = exchange(send, "/v1/echo", headers, Bytes::from(body)).await;
    let json = serde_json::from_slice(&body).expect("a JSON answer");
    (status, json)
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn http3_answers_the_json_echo_and_its_faults() {
    let srv = server(Faults::default(), 2);
    assert!(srv.serves_h3());
    let cert = srv.h3_cert_der().expect("a certificate made at start");
    let addr = srv.local_addr();
    rt().block_on(async {
        let mut c = connect(addr, cert).await;
        let (status, json) = echo(&mut c.send, "hello over h3", &[("x-trace", "7")]).await;
        assert_eq!(status, 200, "{json}");
        assert_eq!(json["body"], "hello over h3", "{json}");
        assert_eq!(json["headers"]["x-trace"], "7", "{json}");
        assert_eq!(json["headers"][":authority"], "localhost", "{json}");
        assert!(
            json["remote_addr"]
                .as_str()
                .is_some_and(|a| a.starts_with("127.0.0.1:"))
        );

        let (status, body) = exchange(&mut c.send, "/v2/nothing", &[], Bytes::new()).await;
        assert_eq!(status, 404, "{body:?}");

        let (status, json) = echo(&mut c.send, "x", &[("wirebench-fail", "100%")]).await;
        assert_eq!(status, 503, "{json}");
        assert_eq!(json["error"], "injected failure");

        let (status, json) = echo(&mut c.send, "x", &[("wirebench-fail", "often")]).await;
        assert_eq!(status, 400, "{json}");

        let body = serde_json::json!({ "ping": "pad" }).to_string();
        let padded = [("wirebench-response-size", "4k")];
        let (status, body) = exchange(&mut c.send, "/v1/echo", &padded, Bytes::from(body)).await;
        assert_eq!(status, 200);
        assert!((4090..=4100).contains(&body.len()), "{} bytes", body.len());
        let json: Value = serde_json::from_slice(&body).unwrap();
        assert!(json["headers"].get("wirebench-response-size").is_none());

        // ten requests at once on the one connection
        let asks: Vec<_> = (0..10)
            .map(|i| {
                let mut send = c.send.clone();
                tokio::spawn(async move { echo(&mut send, &format!("ping {i}"), &[]).await })
            })
            .collect();
        for (i, ask) in asks.into_iter().enumerate() {
            let (status, json) = ask.await.unwrap();
            assert_eq!(status, 200);
            assert_eq!(json["body"], format!("ping {i}"));
        }

        // over the limit: 413, before the whole body is read
        let big = Bytes::from(vec![b'x'; wirebench::server::MAX_REQUEST + 1]);
        let (status, _) = exchange(&mut c.send, "/v1/echo", &[], big).await;
        assert_eq!(status, 413);

        // the connection still serves, then closes after an answer that asks for it
        let (status, _) = echo(&mut c.send, "last", &[("wirebench-close", "100%")]).await;
        assert_eq!(status, 200);
        tokio::time::timeout(EXCHANGE, c.closed)
            .await
            .expect("the server closes the connection")
            .unwrap();
    });
    let t = Instant::now();
    srv.stop();
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "stop took {:?}",
        t.elapsed()
    );
}

#[test]
fn http3_sends_goaway_after_the_requests_asked_for() {
    let srv = server(
        Faults {
            goaway_after: Some(2),
            ..Faults::default()
        },
        1,
    );
    let cert = srv.h3_cert_der().unwrap();
    let addr = srv.local_addr();
    rt().block_on(async {
        let mut c = connect(addr, cert).await;
        for ping in ["one", "two"] {
            let (status, json) = echo(&mut c.send, ping, &[]).await;
            assert_eq!(status, 200, "{json}");
        }
        // GOAWAY, both answered: the connection ends
        tokio::time::timeout(EXCHANGE, c.closed)
            .await
            .expect("the connection ends after GOAWAY")
            .unwrap();
        // a new connection is served
        let mut c = connect(addr, srv.h3_cert_der().unwrap()).await;
        let (status, _) = echo(&mut c.send, "three", &[]).await;
        assert_eq!(status, 200);
    });
}

#[test]
fn http3_presents_the_tls_certificate_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    let tls = wirebench::net::tls::server_config(&cert, &key).expect("the TLS configuration");
    let srv = Server::start(ServeConfig {
        tls: Some(tls),
        ..ServeConfig::loopback()
    })
    .unwrap();
    assert!(srv.serves_h3());
    // the certificate is the caller's own: nothing made to hand out
    assert!(srv.h3_cert_der().is_none());
    let addr = srv.local_addr();
    rt().block_on(async {
        let mut c = connect(addr, made.cert.der().clone()).await;
        let (status, json) = echo(&mut c.send, "over the given certificate", &[]).await;
        assert_eq!(status, 200, "{json}");
    });
}

#[test]
fn without_h3_there_is_no_certificate() {
    let srv = Server::start(ServeConfig {
        h3: false,
        ..ServeConfig::loopback()
    })
    .unwrap();
    assert!(!srv.serves_h3());
    assert!(srv.h3_cert_der().is_none());
    // the UDP port is free
    std::net::UdpSocket::bind(srv.local_addr()).expect("no UDP socket on the server's port");
}

#[test]
fn serve_writes_its_h3_certificate_for_a_client() {
    let dir = tempfile::tempdir().unwrap();
    let pem = dir.path().join("h3.pem");
    let srv = ServeProcess::start(&["--threads", "2", "--h3-cert-out", pem.to_str().unwrap()]);
    assert!(srv.log().contains("HTTP/3"), "{}", srv.log());
    let certs: Vec<_> = CertificateDer::pem_file_iter(&pem)
        .expect("the PEM file")
        .collect::<Result<_, _>>()
        .expect("PEM that parses");
    assert_eq!(certs.len(), 1);
    let addr: SocketAddr = srv.target().parse().unwrap();
    rt().block_on(async {
        let mut c = connect(addr, certs[0].clone()).await;
        let (status, json) = echo(&mut c.send, "from a file", &[]).await;
        assert_eq!(status, 200, "{json}");
        assert_eq!(json["body"], "from a file");
    });
}

#[test]
fn serve_refuses_a_certificate_file_it_would_not_write() {
    let out = support::run_bounded(
        &["serve", "--no-h3", "--h3-cert-out", "/tmp/never.pem"],
        Duration::from_secs(30),
    );
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("--no-h3"), "{}", out.stderr);
}
