//! The two h2 clients side by side: the same calls through the wire crate's client and through
//! the `h2` crate's, against the built-in server and against grpcio's interop server where it is
//! installed, must give the same decoded responses and the same payload-layer bytes (gRPC
//! prefixes and messages, DATA payload): out, the same; in, each client's the messages it
//! decoded (the built-in server's answers carry timestamps, whose size varies with the time;
//! grpcio's are the same bytes to both). Their HPACK bytes differ by design. Messages from empty
//! to 1 MiB take DATA across the default 65,535-byte windows in both directions, so flow control
//! (our WINDOW_UPDATEs and the server's) is part of what is compared.

mod support;

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use prost::Message;
use wirebench::client::block_on;
use wirebench::client::grpc::{self, Call, Conn, H2Client, H2Config};
use wirebench::net::NetConfig;
use wirebench::outcome::FailureKind;
use wirebench::server::{ServeConfig, Server};
use wirebench::stats::ConnRecord;
use wirebench_wire::grpc as grpc_wire;
use wirebench_wire::proto::echo::{EchoRequest, EchoResponse};

/// Ping sizes: empty, the usual greeting, one frame's worth, beyond one window, 1 MiB.
const SIZES: [usize; 6] = [0, 13, 16_384, 16_385, 70_000, 1 << 20];

/// One call's answer: the echoed body and the request headers the server saw.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    body: String,
    headers: Vec<(String, String)>,
}

fn server() -> Server {
    Server::start(ServeConfig {
        h3: false,
        ..ServeConfig::loopback()
    })
    .expect("start the echo server")
}

/// Every ping of `pings` as a unary Echo call on one connection of `client`, `parallel` calls at
/// a time (concurrent streams), then the bytes of the response messages and the connection's
/// record.
fn calls(
    addr: SocketAddr,
    client: H2Client,
    pings: &[String],
    parallel: usize,
) -> (Vec<Answer>, u64, ConnRecord) {
    block_on(async {
        let h2 = H2Config {
            client,
            max_recv_message: 8 << 20,
            ..H2Config::default()
        };
        let conn = Conn::connect(
            &wirebench::net::Dest::Inet(addr),
            "127.0.0.1",
            0,
            &NetConfig::default(),
            &h2,
        )
        .await
        .expect("connect");
        let uri = format!("http://{addr}/grpc_echo.v1.EchoService/Echo")
            .parse()
            .unwrap();
        let call = Call::new(uri, Vec::new(), FailureKind::GrpcStatus);
        let mut answers = Vec::new();
        let mut received = 0;
        for batch in pings.chunks(parallel) {
            let futures = batch.iter().map(|ping| {
                let mut send = conn.handle();
                let (call, ledger) = (&call, conn.ledger());
                let mut frame = BytesMut::new();
                grpc_wire::encode(&EchoRequest { ping: ping.clone() }, &mut frame);
                async move {
                    let mut rx = BytesMut::new();
                    grpc::unary(&mut send, ledger, call, frame.freeze(), &mut rx, 8 << 20)
                        .await
                        .map(|m: Bytes| {
                            let len = m.len() as u64;
                            (EchoResponse::decode(m).expect("an EchoResponse"), len)
                        })
                }
            });
            for r in join_all(futures.collect()).await {
                let (r, len) = r.unwrap_or_else(|e| panic!("{client:?}: {:?}", e.failure));
                received += len;
                let mut headers: Vec<(String, String)> = r.headers.into_iter().collect();
                headers.sort();
                answers.push(Answer {
                    body: r.body,
                    headers,
                });
            }
        }
        let record = conn.close(std::time::Duration::from_secs(1)).await;
        (answers, received, record)
    })
    .expect("a runtime")
}

/// Polls every future until all are done (concurrent streams from one task).
async fn join_all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    use std::task::Poll;
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, out) in futures.iter_mut().zip(outputs.iter_mut()) {
            if out.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => *out = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs
        .into_iter()
        .map(|o| o.expect("polled to the end"))
        .collect()
}

fn pings() -> Vec<String> {
    SIZES
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            (0..n)
                .map(|k| char::from(b'a' + ((i + k) % 26) as u8))
                .collect()
        })
        .collect()
}

#[test]
fn both_clients_get_the_same_answers_and_payload_bytes_from_the_built_in_server() {
    let srv = server();
    let pings = pings();
    for parallel in [1, 3] {
        let (wire, wire_got, wire_rec) = calls(srv.local_addr(), H2Client::Wire, &pings, parallel);
        let (h2, h2_got, h2_rec) = calls(srv.local_addr(), H2Client::H2, &pings, parallel);
        assert_eq!(wire.len(), pings.len());
        for (answer, ping) in wire.iter().zip(&pings) {
            assert_eq!(&answer.body, ping, "the echo of a {}-byte ping", ping.len());
        }
        assert_eq!(wire, h2, "decoded responses differ ({parallel} at a time)");

        let (w, h) = (
            wire_rec.h2.expect("h2 layers"),
            h2_rec.h2.expect("h2 layers"),
        );
        // the requests are the same bytes
        let (wo, ho) = (w.out, h.out);
        assert_eq!(
            (
                wo.grpc_messages,
                wo.grpc_prefix_bytes,
                wo.grpc_message_bytes
            ),
            (
                ho.grpc_messages,
                ho.grpc_prefix_bytes,
                ho.grpc_message_bytes
            ),
            "gRPC layer out"
        );
        assert_eq!(wo.data_payload_bytes, ho.data_payload_bytes, "DATA out");
        // the responses are not: the server stamps each with the time, whose protobuf varint
        // is a byte shorter in the first 268 ms of a second; each client's layer in is the
        // messages it decoded
        for (client, d, got) in [("wire", w.inbound, wire_got), ("h2", h.inbound, h2_got)] {
            assert_eq!(
                (d.grpc_messages, d.grpc_prefix_bytes, d.grpc_message_bytes),
                (pings.len() as u64, 5 * pings.len() as u64, got),
                "gRPC layer in, {client} client"
            );
            assert_eq!(
                d.data_payload_bytes,
                d.grpc_prefix_bytes + d.grpc_message_bytes,
                "DATA in, {client} client"
            );
        }
        for d in [w.out, w.inbound] {
            assert_eq!(d.data_untracked_bytes, 0);
            assert_eq!(d.malformed, None);
        }
        // both directions crossed the default windows: the wire client sent WINDOW_UPDATEs
        assert!(
            w.out
                .frame(wirebench_wire::h2::frame::FrameType::WindowUpdate)
                .count
                > 0
        );
        assert!(w.out.grpc_message_bytes > (1 << 20));
        assert_eq!(w.out.grpc_messages, pings.len() as u64);
    }
}

/// `tests/interop/echo_server.py` (grpcio) as a child, killed on drop.
struct Grpcio {
    child: std::process::Child,
    addr: SocketAddr,
}

impl Grpcio {
    /// Panics (never skips) when grpcio is missing: an interop test that skips itself would
    /// pass exactly where it checks nothing. scripts/test.sh installs it (support::PYTHON_PEERS).
    fn start() -> Grpcio {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/echo_server.py");
        let mut cmd = Command::new("python3");
        cmd.args([script, "--seconds", "120"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        support::die_with_parent(&mut cmd);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("python3 {script}: {e}; {}", support::PYTHON_PEERS));
        let stdout = child.stdout.take().expect("piped");
        let mut line = String::new();
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| {
                let _ = child.kill();
                panic!(
                    "{script} did not start: {line:?} (grpcio missing? {})",
                    support::PYTHON_PEERS
                )
            });
        Grpcio { child, addr }
    }
}

impl Drop for Grpcio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn both_clients_get_the_same_answers_from_grpcio() {
    let server = Grpcio::start();
    let pings = pings();
    for parallel in [1, 3] {
        let (wire, wire_got, wire_rec) = calls(server.addr, H2Client::Wire, &pings, parallel);
        let (h2, h2_got, h2_rec) = calls(server.addr, H2Client::H2, &pings, parallel);
        // grpcio's answers carry no time: the same bytes to both
        assert_eq!(wire_got, h2_got);
        for (answer, ping) in wire.iter().zip(&pings) {
            assert_eq!(&answer.body, ping, "the echo of a {}-byte ping", ping.len());
        }
        // the metadata grpcio reports is the same for both (user-agent aside: neither sends one)
        assert_eq!(wire, h2, "decoded responses differ ({parallel} at a time)");
        let (w, h) = (
            wire_rec.h2.expect("h2 layers"),
            h2_rec.h2.expect("h2 layers"),
        );
        for (dir, w, h) in [("out", w.out, h.out), ("in", w.inbound, h.inbound)] {
            assert_eq!(
                (w.grpc_messages, w.grpc_message_bytes),
                (h.grpc_messages, h.grpc_message_bytes),
                "gRPC layer {dir}"
            );
        }
    }
}
