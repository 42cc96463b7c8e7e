//! The HTTP/3 ledger against a capture: every UDP datagram the client sent and received, and
//! (decrypted with `--tls-keylog`) every QUIC frame by type, as tshark sees them on loopback.

mod support;

use std::collections::BTreeMap;

use serde_json::Value;
use support::capture::Capture;
use support::{proto_run, run_json, u64_at};
use wirebench::server::{ServeConfig, Server};

/// The QUIC frame types (RFC 9000 §19) of the ledger's `quic.frames_*` keys, as tshark numbers
/// them; a key's count is the sum over its codes.
const FRAME_TYPES: [(&str, &[u64]); 12] = [
    ("ack", &[0x02, 0x03]),
    ("crypto", &[0x06]),
    ("stream", &[0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f]),
    ("max_data", &[0x10]),
    ("max_stream_data", &[0x11]),
    ("max_streams", &[0x12, 0x13]),
    ("new_connection_id", &[0x18]),
    ("retire_connection_id", &[0x19]),
    ("ping", &[0x01]),
    ("reset_stream", &[0x04]),
    ("connection_close", &[0x1c, 0x1d]),
    ("handshake_done", &[0x1e]),
];

fn count(frames: &BTreeMap<u64, u64>, codes: &[u64]) -> u64 {
    codes
        .iter()
        .map(|c| frames.get(c).copied().unwrap_or(0))
        .sum()
}

#[test]
fn h3_datagrams_bytes_and_quic_frames_match_the_capture() {
    let srv = Server::start(ServeConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 1,
        max_conn_age: None,
        max_conn_idle: None,
        max_concurrent_streams: None,
        tls: None,
        faults: Default::default(),
        h3: true,
    })
    .expect("start the echo server");
    let dir = tempfile::tempdir().unwrap();
    let cert = dir.path().join("cert.pem");
    std::fs::write(&cert, srv.h3_cert_pem().expect("a generated certificate")).unwrap();
    let keylog = dir.path().join("keys");
    let port = srv.local_addr().port();
    let cap = Capture::start_udp(port);
    let report = run_json(&[
        "echo",
        "--target",
        &format!("http://{}", srv.local_addr()),
        "--proto",
        "h3",
        "--cacert",
        cert.to_str().unwrap(),
        "--tls-keylog",
        keylog.to_str().unwrap(),
        "--conns",
        "2",
        "-c",
        "8",
        "-n",
        "2000",
    ]);
    let packets = cap.stop_raw();
    drop(srv);
    let run = proto_run(&report, "h3");
    assert_eq!(u64_at(run, "/summary/ok"), 2000, "{run:#}");
    let udp = packets.udp();
    let conns: Vec<&Value> = run["per_connection"]
        .as_array()
        .expect("per_connection")
        .iter()
        .collect();
    assert_eq!(conns.len(), 2, "{run:#}");
    assert_eq!(udp.len(), 2, "the capture's client ports: {:?}", udp.keys());
    for c in &conns {
        let port = u16::try_from(u64_at(c, "/local_port")).unwrap();
        let ((dg_out, bytes_out), (dg_in, bytes_in)) = udp[&port];
        // the socket's bytes until the record, then the close: every datagram each way
        let ours_out = u64_at(c, "/bytes_out") + u64_at(c, "/close/bytes_out");
        let ours_in = u64_at(c, "/bytes_in") + u64_at(c, "/close/bytes_in");
        assert_eq!(ours_out, bytes_out, "UDP payload bytes out, port {port}");
        assert_eq!(ours_in, bytes_in, "UDP payload bytes in, port {port}");
        let q = &c["h3"]["quic"];
        assert_eq!(
            u64_at(q, "/datagrams_out"),
            dg_out,
            "datagrams out, port {port}"
        );
        assert_eq!(
            u64_at(q, "/datagrams_in"),
            dg_in,
            "datagrams in, port {port}"
        );
        assert_eq!(
            u64_at(q, "/udp_bytes_out"),
            bytes_out,
            "quinn's bytes out, port {port}"
        );
    }
    // decrypted: quinn's frame counts by type against tshark's, both connections summed
    let (out, inbound) = packets.quic_frames(&keylog);
    assert!(
        count(&out, &[0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f]) >= 2000,
        "{out:?}"
    );
    for (name, codes) in FRAME_TYPES {
        let sum = |dir: &str| -> u64 {
            conns
                .iter()
                .map(|c| u64_at(c, &format!("/h3/quic/frames_{dir}/{name}")))
                .sum()
        };
        assert_eq!(sum("out"), count(&out, codes), "{name} frames out: {out:?}");
        assert_eq!(
            sum("in"),
            count(&inbound, codes),
            "{name} frames in: {inbound:?}"
        );
    }
}
