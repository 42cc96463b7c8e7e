//! The HTTP/3 ledger against a capture: every UDP datagram the client sent and received, and
//! (decrypted with `--tls-keylog`) every QUIC frame by type, as tshark sees them on loopback.

mod support;

use std::collections::BTreeMap;

use serde_json::Value;
use support::capture::Capture;
use support::{proto_run, run_json, u64_at};
use wirebench::server::{ServeConfig, Server};

/// The QUIC frame types (RFC 9000 §19) by the ledger's names: quinn's key in
/// `quic.frames_*`, the sniffer's index in `sniffed_*.frames` (`FrameKind`'s order), and the
/// codes tshark gives them; a count is the sum over the codes.
const FRAME_TYPES: [(&str, usize, &[u64]); 13] = [
    ("padding", 0, &[0x00]),
    ("ping", 1, &[0x01]),
    ("ack", 2, &[0x02, 0x03]),
    ("reset_stream", 3, &[0x04]),
    ("crypto", 5, &[0x06]),
    (
        "stream",
        7,
        &[0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f],
    ),
    ("max_data", 8, &[0x10]),
    ("max_stream_data", 9, &[0x11]),
    ("max_streams", 10, &[0x12, 0x13]),
    ("new_connection_id", 14, &[0x18]),
    ("retire_connection_id", 15, &[0x19]),
    ("connection_close", 18, &[0x1c, 0x1d]),
    ("handshake_done", 19, &[0x1e]),
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
        // a GSO send crosses loopback as one packet: the capture must see every datagram
        udp_offload: false,
        ..ServeConfig::loopback()
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
        "--udp-offload",
        "off",
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
        let h3 = &c["h3"];
        assert_eq!(
            u64_at(h3, "/datagrams_out"),
            dg_out,
            "datagrams out, port {port}"
        );
        assert_eq!(
            u64_at(h3, "/datagrams_in"),
            dg_in,
            "datagrams in, port {port}"
        );
        assert_eq!(
            u64_at(h3, "/quic/udp_bytes_out"),
            bytes_out,
            "quinn's bytes, {port}"
        );
        // the ledger's decryption saw every datagram, and opened every packet
        for (dir, dg, bytes) in [("out", dg_out, bytes_out), ("in", dg_in, bytes_in)] {
            let s = &h3[&format!("sniffed_{dir}")];
            assert_eq!(
                u64_at(s, "/datagrams"),
                dg,
                "sniffed datagrams {dir}, port {port}"
            );
            assert_eq!(
                u64_at(s, "/datagram_bytes"),
                bytes,
                "sniffed bytes {dir}, {port}"
            );
            let undecrypted: u64 = (0..3)
                .map(|i| u64_at(s, &format!("/undecryptable/{i}/packets")))
                .sum();
            assert_eq!(
                undecrypted, 0,
                "packets the ledger could not open {dir}: {s:#}"
            );
        }
    }
    // decrypted by tshark with the key log: the ledger's frame counts by type, both
    // connections summed
    let (out, inbound) = packets.quic_frames(&keylog);
    let stream = &[0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f];
    assert!(count(&out, stream) >= 2000, "{out:?}");
    for (name, index, codes) in FRAME_TYPES {
        let sum = |dir: &str| -> u64 {
            conns
                .iter()
                .map(|c| u64_at(c, &format!("/h3/sniffed_{dir}/frames/{index}/count")))
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
