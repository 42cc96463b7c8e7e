//! Ground truth: wirebench's per-connection figures against a packet capture of the same run.
//!
//! Each test captures the server port on `lo` with tshark (tests/support/capture.rs) while one
//! wirebench run goes, then checks every connection of the JSON report (`runs[].per_connection`)
//! against the capture's connection with the same client port:
//!
//! * Every figure of a connection record is a snapshot taken when its last response had been
//!   read, before the client began to close; what crossed the wire after it is the record's
//!   `close`. So `bytes_out` / `bytes_in` + `close.bytes_out` / `close.bytes_in` equal the TCP
//!   payload the capture carried each way, exactly. The capture's figure is the length of the
//!   byte stream by sequence number: a retransmitted segment carries bytes already counted
//!   once, and the application wrote / read them once. (On loopback that still happens now and
//!   then: a tail loss probe fires when a delayed ACK is late, and the peer receives the same
//!   bytes twice.)
//! * the TCP_INFO segment counters (`tcp.segs_out`, `segs_in`, `data_segs_out`, `data_segs_in`)
//!   count exactly a prefix of the captured segments: those before the snapshot. The kernel
//!   counts every segment it transmits (tcp_transmit_skb: SYN, pure ACKs, data,
//!   retransmissions) and every segment it receives (tcp_v4_rcv: SYN-ACK, ACKs, data,
//!   duplicates), so the 3-way handshake is in both. The segments after the prefix are the
//!   close exchange (FIN, pure ACK, RST, an h2 GOAWAY) and nothing else, and `close.segs_out`
//!   / `close.segs_in` count them: exactly out; in, the peer's last ACK may come after our
//!   final TCP_INFO read (at most one pure ACK more).
//! * `tcp.retransmits` equals the segments tshark flags as retransmitted in our direction.
//! * `requests` equals the requests the capture shows on the connection (HTTP/1.1 requests,
//!   h2 streams opened by a HEADERS frame).
//! * the layer breakdown (`http1`, `h2`) equals what tshark's HTTP and HTTP/2 dissectors decode.
//!
//! tshark must be installed (scripts/test.sh installs it) and the tests run as root (capturing
//! on `lo` needs CAP_NET_RAW); neither is skipped when missing.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::Value;
use support::capture::{Capture, Conn, Dir, Packets, Segment, Side};
use support::{Etcd, proto_run, run_json, u64_at};
use wirebench::server::{ServeConfig, Server};

/// Most segments of the close exchange per direction (out: a GOAWAY, our FIN, our ACK of the
/// peer's FIN; in: the peer's GOAWAY, its ACK and its FIN).
const CLOSE_SEGMENTS: u64 = 3;

/// A connection of the capture, and its segments after the snapshot, by direction.
struct Matched<'a> {
    conn: &'a Conn,
    after_out: Vec<Segment>,
    after_in: Vec<Segment>,
}

impl Matched<'_> {
    fn after(&self, d: Dir) -> &[Segment] {
        match d {
            Dir::Out => &self.after_out,
            Dir::In => &self.after_in,
        }
    }
}

/// Disagreements with the capture, collected so that one run reports all of them.
#[derive(Default)]
struct Checks {
    failures: Vec<String>,
}

impl Checks {
    fn check(&mut self, ok: bool, msg: impl FnOnce() -> String) {
        if !ok {
            let m = msg();
            eprintln!("MISMATCH {m}");
            self.failures.push(m);
        }
    }

    fn eq(&mut self, got: u64, want: u64, what: impl FnOnce() -> String) {
        self.check(got == want, || {
            format!("{}: wirebench {got}, capture {want}", what())
        });
    }

    /// Panics with every disagreement found.
    fn finish(self, case: &str) {
        assert!(
            self.failures.is_empty(),
            "{case}: {} disagreement(s) with the capture:\n- {}",
            self.failures.len(),
            self.failures.join("\n- ")
        );
    }
}

/// The connections of a run, by local port.
fn per_connection(run: &Value) -> BTreeMap<u16, &Value> {
    let conns = run["per_connection"]
        .as_array()
        .unwrap_or_else(|| panic!("no per_connection[] in {run:#}"));
    let mut by_port = BTreeMap::new();
    for c in conns {
        let port = u16::try_from(u64_at(c, "/local_port")).expect("a port");
        assert!(
            by_port.insert(port, c).is_none(),
            "local port {port} appears twice in per_connection"
        );
    }
    assert!(!by_port.is_empty(), "no connections in {run:#}");
    by_port
}

fn dir_name(d: Dir) -> &'static str {
    match d {
        Dir::Out => "out",
        Dir::In => "in",
    }
}

/// A segment the connection's close may produce without payload: FIN, RST, pure ACK.
fn is_close_segment(s: &Segment) -> bool {
    s.len == 0
}

/// A data segment carrying nothing but an h2 GOAWAY frame.
fn is_goaway_only(s: &Segment) -> bool {
    s.len > 0 && !s.h2_types.is_empty() && s.h2_types.iter().all(|t| *t == "GOAWAY")
}

/// One line per segment for failure messages.
fn describe(segs: &[Segment]) -> String {
    if segs.is_empty() {
        return "(none)".to_string();
    }
    segs.iter()
        .map(|s| {
            format!(
                "#{} len={} seq={}{}{}{}{}{}",
                s.frame,
                s.len,
                s.seq,
                if s.syn { " SYN" } else { "" },
                if s.fin { " FIN" } else { "" },
                if s.rst { " RST" } else { "" },
                if s.retransmission { " RETRANS" } else { "" },
                if s.h2_types.is_empty() {
                    String::new()
                } else {
                    format!(" h2={:?}", s.h2_types)
                }
            )
        })
        .collect::<Vec<_>>()
        .join("\n  ")
}

/// Bytes, segments, retransmits of every connection of `run` against the capture. Returns the
/// captured connections, by port, with their segments after the snapshot, for the layer checks.
fn check_tcp<'a>(
    ck: &mut Checks,
    case: &str,
    run: &Value,
    cap: &'a Packets,
    h2: bool,
) -> BTreeMap<u16, Matched<'a>> {
    cap.assert_complete();
    let conns = per_connection(run);
    let mut matched = BTreeMap::new();
    for (&port, c) in &conns {
        let ctx = format!("{case}, connection from port {port}");
        let cc = cap.conn(port).unwrap_or_else(|| {
            panic!(
                "{ctx}: not in the capture (captured client ports: {:?})",
                cap.client_ports()
            )
        });
        // The capture must cover the whole connection: our SYN, and both FINs.
        assert!(
            cc.out.syn_seen(),
            "{ctx}: the capture has no SYN from us: it started too late"
        );
        assert!(
            cc.out.fin_seen() && cc.r#in.fin_seen(),
            "{ctx}: the capture has not both FINs: it stopped too early\n  out:\n  {}\n  in:\n  {}",
            describe(&cc.out.segments),
            describe(&cc.r#in.segments)
        );
        let close = &c["close"];
        assert!(close.is_object(), "{ctx}: no close record: {c:#}");
        assert_eq!(
            close["drained"].as_bool(),
            Some(true),
            "{ctx}: the close did not reach the server's FIN: {close:#}"
        );

        // Bytes: exact, the snapshot's and the close's together.
        for (dir, field) in [(Dir::Out, "bytes_out"), (Dir::In, "bytes_in")] {
            let side = cc.side(dir);
            let before = u64_at(c, &format!("/{field}"));
            let closing = u64_at(close, &format!("/{field}"));
            let ours = before + closing;
            ck.check(ours == side.stream_bytes, || {
                // The captured segments holding the bytes wirebench did not count (or the
                // extra ones it did): where the two streams part.
                let beyond: Vec<Segment> = side
                    .segments
                    .iter()
                    .filter(|s| s.len > 0 && s.seq + s.len - 1 > ours)
                    .cloned()
                    .collect();
                format!(
                    "{ctx}: {field} = {before} + close {closing}, the capture carried {} payload \
                     bytes {} ({} in all, {} of them retransmitted); captured segments past byte \
                     {ours}:\n  {}",
                    side.stream_bytes,
                    dir_name(dir),
                    side.payload_bytes,
                    side.retransmitted_bytes(),
                    describe(&beyond)
                )
            });
            if side.retransmitted_bytes() > 0 {
                eprintln!(
                    "{ctx}: {} bytes {} were retransmitted ({} segments); {field} counts \
                     them once, as the capture's byte stream does",
                    side.retransmitted_bytes(),
                    dir_name(dir),
                    side.retransmissions()
                );
            }
        }

        // Segments: the snapshot counts a prefix of the captured segments each way; the rest
        // is the close exchange, which the close record counts.
        let tcp = &c["tcp"];
        assert!(
            tcp.is_object(),
            "{ctx}: no TCP_INFO (tcp is null) on Linux loopback: {c:#}"
        );
        let mut after = [Vec::new(), Vec::new()];
        for (i, (dir, segs_f, data_f)) in [
            (Dir::Out, "segs_out", "data_segs_out"),
            (Dir::In, "segs_in", "data_segs_in"),
        ]
        .into_iter()
        .enumerate()
        {
            let side = cc.side(dir);
            let segs = u64_at(tcp, &format!("/{segs_f}"));
            let data = u64_at(tcp, &format!("/{data_f}"));
            let close_segs = u64_at(close, &format!("/{segs_f}"));
            let close_data = u64_at(close, &format!("/{data_f}"));
            let all = &side.segments;
            let extra = &all[(segs as usize).min(all.len())..];
            // a close segment sent again (a FIN the peer did not ACK in time) is one more
            let resent = extra.iter().filter(|s| s.retransmission).count() as u64;
            let bounded = segs <= side.segs() && side.segs() - segs <= CLOSE_SEGMENTS + resent;
            ck.check(bounded, || {
                format!(
                    "{ctx}: tcp.{segs_f} = {segs}, the capture has {} segments {} (after the \
                     snapshot only the close exchange, at most {CLOSE_SEGMENTS} and what was \
                     sent again); the last ones:\n  {}",
                    side.segs(),
                    dir_name(dir),
                    describe(&all[all.len().saturating_sub(8)..])
                )
            });
            // The segments after the snapshot: close-time ones only.
            ck.check(
                extra
                    .iter()
                    .all(|s| is_close_segment(s) || (h2 && is_goaway_only(s))),
                || {
                    format!(
                        "{ctx}: tcp.{segs_f} = {segs}, and a segment after the snapshot carries \
                         data other than an h2 GOAWAY:\n  {}",
                        describe(extra)
                    )
                },
            );
            // The close record counts them: all of ours; of the peer's, all but perhaps its
            // last ACK, which may arrive after our final TCP_INFO read.
            let late = extra.len() as u64 - close_segs.min(extra.len() as u64);
            let last_is_ack = extra.last().is_some_and(|s| s.len == 0 && !s.fin);
            ck.check(
                close_segs <= extra.len() as u64
                    && match dir {
                        Dir::Out => late == 0,
                        Dir::In => late == 0 || (late == 1 && last_is_ack),
                    },
                || {
                    format!(
                        "{ctx}: close.{segs_f} = {close_segs}, the capture has {} segments {} \
                         after the snapshot:\n  {}",
                        extra.len(),
                        dir_name(dir),
                        describe(extra)
                    )
                },
            );
            let extra_data = extra.iter().filter(|s| s.len > 0).count() as u64;
            ck.eq(data, side.data_segs() - extra_data, || {
                format!(
                    "{ctx}: tcp.{data_f} vs the captured segments with payload {} before the \
                     snapshot",
                    dir_name(dir)
                )
            });
            ck.eq(close_data, extra_data, || {
                format!(
                    "{ctx}: close.{data_f} vs the captured segments with payload {} after it",
                    dir_name(dir)
                )
            });
            eprintln!(
                "{ctx}: {} captured {} segs / {} data segs, TCP_INFO {segs} / {data}, close \
                 {close_segs} / {close_data}; after the snapshot:\n  {}",
                dir_name(dir),
                side.segs(),
                side.data_segs(),
                describe(extra)
            );
            after[i] = extra.to_vec();
        }
        // TCP_INFO is read at the snapshot: a close segment sent again after it is not in it
        let retrans = u64_at(tcp, "/retransmits");
        let resent_after = after[0].iter().filter(|s| s.retransmission).count() as u64;
        ck.eq(retrans, cc.out.retransmissions() - resent_after, || {
            format!("{ctx}: tcp.retransmits vs segments tshark flags as retransmitted out before the snapshot")
        });
        let [after_out, after_in] = after;
        matched.insert(
            port,
            Matched {
                conn: cc,
                after_out,
                after_in,
            },
        );
    }
    let extra: Vec<u16> = cap
        .client_ports()
        .into_iter()
        .filter(|p| !conns.contains_key(p))
        .collect();
    if !extra.is_empty() {
        eprintln!("{case}: captured connections not in the report (not wirebench's): {extra:?}");
    }
    matched
}

/// Every connection on the captured port must be one of the report's (an in-test server has
/// no other clients).
fn assert_all_connections_reported(case: &str, run: &Value, cap: &Packets) {
    let ours: BTreeSet<u16> = per_connection(run).keys().copied().collect();
    let captured: BTreeSet<u16> = cap.client_ports().into_iter().collect();
    assert_eq!(
        ours, captured,
        "{case}: the report's connections (left) are not the captured ones (right)"
    );
}

/// An object field of a connection that the layer breakdown adds; a failure when missing.
fn layer<'a>(ck: &mut Checks, ctx: &str, c: &'a Value, name: &str) -> Option<&'a Value> {
    let v = &c[name];
    ck.check(v.is_object(), || {
        format!(
            "{ctx}: per_connection[].{name} is {} — the layer breakdown is missing from the \
             report",
            if v.is_null() {
                "null or absent"
            } else {
                "not an object"
            }
        )
    });
    v.is_object().then_some(v)
}

/// h2 layers of every connection against tshark's HTTP/2 dissector.
fn check_h2(ck: &mut Checks, case: &str, run: &Value, conns: &BTreeMap<u16, Matched<'_>>) {
    let report = per_connection(run);
    for (&port, m) in conns {
        let cc = m.conn;
        let c = report[&port];
        let ctx = format!("{case}, connection from port {port}");
        // A unary call opens a stream with one HEADERS frame; the client sends no trailers.
        let requests = u64_at(c, "/requests");
        ck.eq(requests, cc.out.h2.count("HEADERS"), || {
            format!("{ctx}: requests vs HEADERS frames out")
        });
        let Some(h2) = layer(ck, &ctx, c, "h2") else {
            continue;
        };
        for dir in [Dir::Out, Dir::In] {
            let d = &h2[dir_name(dir)];
            let ctx = format!("{ctx}, h2.{}", dir_name(dir));
            let side: &Side = cc.side(dir);
            let t = &side.h2;
            // Frames: per type, count (the check asked for) and bytes (9 + payload).
            let ours: BTreeMap<String, (u64, u64)> = d["frames"]
                .as_object()
                .unwrap_or_else(|| panic!("{ctx}: no frames object in {d:#}"))
                .iter()
                .map(|(k, v)| (k.clone(), (u64_at(v, "/count"), u64_at(v, "/bytes"))))
                .collect();
            let mut theirs: BTreeMap<String, (u64, u64)> = t
                .frames
                .iter()
                .map(|(k, v)| (k.to_string(), (v.count, v.bytes)))
                .collect();
            // The frames of the close exchange (GOAWAY-only segments) are not in the snapshot.
            let mut closing_bytes = 0;
            for seg in m.after(dir).iter().filter(|s| s.len > 0) {
                for ty in &seg.h2_types {
                    let e = theirs.entry(ty.to_string()).or_default();
                    e.0 -= 1;
                    e.1 -= seg.len / seg.h2_types.len() as u64;
                }
                closing_bytes += seg.len;
            }
            theirs.retain(|_, v| v.0 > 0);
            let counts = |m: &BTreeMap<String, (u64, u64)>| -> BTreeMap<String, u64> {
                m.iter().map(|(k, v)| (k.clone(), v.0)).collect()
            };
            ck.check(counts(&ours) == counts(&theirs), || {
                format!(
                    "{ctx}: frame counts per type:\n    wirebench {:?}\n    tshark    {:?}",
                    counts(&ours),
                    counts(&theirs)
                )
            });
            ck.check(ours == theirs, || {
                format!(
                    "{ctx}: (count, bytes) per frame type:\n    wirebench {ours:?}\n    tshark    \
                     {theirs:?}"
                )
            });
            let frames: u64 = theirs.values().map(|v| v.0).sum();
            let frame_bytes: u64 = theirs.values().map(|v| v.1).sum();
            // The capture itself: the byte stream is the preface and whole frames, nothing else.
            assert_eq!(
                t.preface_bytes + frame_bytes + closing_bytes,
                side.stream_bytes,
                "{ctx}: tshark's frames do not add up to the captured stream"
            );
            let expect = [
                ("preface_bytes", t.preface_bytes),
                ("setup_bytes", t.setup_bytes),
                ("frame_header_bytes", 9 * frames),
                ("hpack_bytes", t.hpack_bytes),
                ("data_payload_bytes", t.data_payload_bytes),
                ("padding_bytes", t.padding_bytes),
                ("grpc_messages", t.grpc_messages),
                ("grpc_prefix_bytes", 5 * t.grpc_messages),
                ("grpc_message_bytes", t.grpc_message_bytes),
            ];
            for (field, want) in expect {
                let got = u64_at(d, &format!("/{field}"));
                ck.eq(got, want, || format!("{ctx}.{field}"));
            }
        }
    }
}

/// HTTP/1.1 layers of every connection against tshark's HTTP dissector.
fn check_http1(
    ck: &mut Checks,
    case: &str,
    run: &Value,
    conns: &BTreeMap<u16, Matched<'_>>,
    chunked: bool,
) {
    let report = per_connection(run);
    for (&port, m) in conns {
        let cc = m.conn;
        let c = report[&port];
        let ctx = format!("{case}, connection from port {port}");
        let (req, resp) = (&cc.out.http, &cc.r#in.http);
        assert!(req.messages > 0, "{ctx}: tshark decoded no request");
        // The capture's own consistency: tshark's head reconstruction (start line, header
        // lines, blank line) plus the bodies it decoded is the whole stream each way.
        assert_eq!(
            req.head_bytes + req.content_length,
            cc.out.stream_bytes,
            "{ctx}: tshark's requests do not add up to the captured stream out: {req:?}"
        );
        let resp_body = if chunked {
            assert_eq!(
                resp.chunk_bytes, resp.file_data_bytes,
                "{ctx}: Σ chunk sizes and tshark's de-chunked body disagree: {resp:?}"
            );
            resp.chunk_bytes
        } else {
            assert_eq!(
                resp.chunks, 0,
                "{ctx}: unexpected chunked response: {resp:?}"
            );
            resp.content_length
        };
        assert!(
            resp.head_bytes + resp_body <= cc.r#in.stream_bytes,
            "{ctx}: tshark's responses exceed the captured stream in: {resp:?}"
        );
        if !chunked {
            assert_eq!(
                resp.head_bytes + resp_body,
                cc.r#in.stream_bytes,
                "{ctx}: tshark's responses do not add up to the captured stream in: {resp:?}"
            );
        }

        let requests = u64_at(c, "/requests");
        ck.eq(requests, req.messages, || {
            format!("{ctx}: requests vs requests tshark decoded")
        });
        let Some(h) = layer(ck, &ctx, c, "http1") else {
            continue;
        };
        let request_body = req.content_length;
        let response_head = resp.head_bytes;
        let expect = [
            ("requests", req.messages),
            ("responses", resp.messages),
            ("request_body_bytes", request_body),
            // requests here fit one segment each: head = payload out - body
            ("request_head_bytes", cc.out.stream_bytes - request_body),
            ("response_head_bytes", response_head),
            ("response_body_bytes", resp_body),
            // whatever is neither head nor de-chunked body: chunk size lines (extensions
            // included), the CRLFs after chunk data, the last chunk and the trailer section
            (
                "chunk_framing_bytes",
                cc.r#in.stream_bytes - response_head - resp_body,
            ),
        ];
        for (field, want) in expect {
            let got = u64_at(h, &format!("/{field}"));
            ck.eq(got, want, || format!("{ctx}: http1.{field}"));
        }
    }
}

#[test]
fn etcd_put_over_http1_matches_the_capture() {
    let etcd = Etcd::start();
    let port = etcd.client_addr().port();
    let cap = Capture::start(port);
    let report = run_json(&[
        "etcd",
        "put",
        "--endpoints",
        &etcd.endpoint(),
        "--proto",
        "http",
        "-c",
        "4",
        "-n",
        "400",
    ]);
    let mut packets = cap.stop();
    packets.decode_http1();
    let case = "etcd put, HTTP/1.1";
    let run = proto_run(&report, "http");
    assert_eq!(u64_at(run, "/summary/ok"), 400, "{run:#}");
    // the default loop: its reads through an io_uring where the kernel has one
    assert_eq!(run["cost"]["client_loop"], support::auto_loop(), "{run:#}");
    let mut ck = Checks::default();
    let conns = check_tcp(&mut ck, case, run, &packets, false);
    assert_eq!(conns.len(), 4, "one connection per client");
    check_http1(&mut ck, case, run, &conns, false);
    ck.finish(case);
}

#[test]
fn etcd_put_pipelined_over_http1_matches_the_capture() {
    // 8 clients, 4 requests in flight on each of 2 connections: the gateway answers them in
    // order, and the capture's requests and responses are the ledger's
    let etcd = Etcd::start();
    let port = etcd.client_addr().port();
    let before = etcd.revision();
    let cap = Capture::start(port);
    let report = run_json(&[
        "etcd",
        "put",
        "--endpoints",
        &etcd.endpoint(),
        "--proto",
        "http",
        "-c",
        "8",
        "--pipeline",
        "4",
        "-n",
        "800",
    ]);
    let mut packets = cap.stop();
    packets.decode_http1();
    let case = "etcd put, HTTP/1.1 pipelined 4 deep";
    let run = proto_run(&report, "http");
    assert_eq!(u64_at(run, "/summary/ok"), 800, "{run:#}");
    assert_eq!(u64_at(run, "/pipeline"), 4, "{run:#}");
    // every acknowledged put applied once: nothing lost or doubled by pipelining
    assert_eq!(etcd.revision() - before, 800, "etcd revision delta");
    let mut ck = Checks::default();
    let conns = check_tcp(&mut ck, case, run, &packets, false);
    assert_eq!(conns.len(), 2, "ceil(8 / 4) connections");
    check_http1(&mut ck, case, run, &conns, false);
    ck.finish(case);
}

#[test]
fn echo_pipelined_over_http1_matches_the_capture() {
    // 16 requests in flight on one connection to the built-in server, which answers every
    // complete request of a read with one write: requests and answers travel in batches
    let (srv, url, cap) = captured_server();
    let report = run_json(&[
        "echo",
        "--target",
        &url,
        "--proto",
        "http",
        "-c",
        "16",
        "--pipeline",
        "16",
        "-n",
        "4000",
    ]);
    let mut packets = cap.stop();
    drop(srv);
    packets.decode_http1();
    let case = "echo, HTTP/1.1 pipelined 16 deep, built-in server";
    let run = proto_run(&report, "http");
    assert_eq!(u64_at(run, "/summary/ok"), 4000, "{run:#}");
    let mut ck = Checks::default();
    let conns = check_tcp(&mut ck, case, run, &packets, false);
    assert_eq!(conns.len(), 1, "-c 16 --pipeline 16 is one connection");
    check_http1(&mut ck, case, run, &conns, false);
    ck.finish(case);
    // batched both ways: far fewer data segments, writes and reads than requests (16 each at
    // best: the client writes what is ready together, the server answers a read with one
    // write, one read takes the answers together)
    let requests = u64_at(run, "/wire/requests_on_wire");
    for field in [
        "data_segments_out",
        "data_segments_in",
        "write_calls",
        "read_calls",
    ] {
        let n = u64_at(run, &format!("/wire/{field}"));
        assert!(
            n * 4 <= requests,
            "{n} {field} for {requests} pipelined requests: {run:#}"
        );
    }
}

#[test]
fn etcd_put_over_grpc_matches_the_capture() {
    let etcd = Etcd::start();
    let port = etcd.client_addr().port();
    let cap = Capture::start(port);
    let report = run_json(&[
        "etcd",
        "put",
        "--endpoints",
        &etcd.endpoint(),
        "--proto",
        "grpc",
        "-c",
        "4",
        "--conns",
        "2",
        "-n",
        "400",
    ]);
    let mut packets = cap.stop();
    packets.decode_h2();
    let case = "etcd put, gRPC";
    let run = proto_run(&report, "grpc");
    assert_eq!(u64_at(run, "/summary/ok"), 400, "{run:#}");
    let mut ck = Checks::default();
    let conns = check_tcp(&mut ck, case, run, &packets, true);
    assert_eq!(conns.len(), 2, "--conns 2");
    check_h2(&mut ck, case, run, &conns);
    ck.finish(case);
}

/// The built-in echo server on one thread and a free port, its URL, and a capture of its port
/// already running.
fn captured_server() -> (Server, String, Capture) {
    let srv = Server::start(ServeConfig {
        h3: false,
        ..ServeConfig::loopback()
    })
    .expect("start the echo server");
    let url = format!("http://{}", srv.local_addr());
    let cap = Capture::start(srv.local_addr().port());
    (srv, url, cap)
}

/// The echo workload over an h2 stack (`grpc` or plain `h2`) against the built-in server,
/// checked against the capture: TCP, and every h2 layer of every connection.
fn echo_over_h2_matches_the_capture(proto: &str, case: &str) {
    let (srv, url, cap) = captured_server();
    let report = run_json(&[
        "echo", "--target", &url, "--proto", proto, "-c", "8", "-n", "2000",
    ]);
    let mut packets = cap.stop();
    drop(srv);
    packets.decode_h2();
    let run = proto_run(&report, proto);
    assert_eq!(u64_at(run, "/summary/ok"), 2000, "{run:#}");
    assert_all_connections_reported(case, run, &packets);
    let mut ck = Checks::default();
    let conns = check_tcp(&mut ck, case, run, &packets, true);
    check_h2(&mut ck, case, run, &conns);
    ck.finish(case);
}

#[test]
fn echo_over_grpc_matches_the_capture() {
    echo_over_h2_matches_the_capture("grpc", "echo, gRPC, built-in server");
}

#[test]
fn a_bidi_stream_matches_the_capture() {
    // ping-pong on the built-in server's BidiEcho: 20 messages per stream, 100 streams over
    // one connection; the capture's h2 layers (frames, HPACK, gRPC messages) per connection
    let (srv, url, cap) = captured_server();
    let proto = format!(
        "{}/crates/wire/proto/stream.proto",
        env!("CARGO_MANIFEST_DIR")
    );
    let report = run_json(&[
        "grpc",
        &url,
        "wirebench.stream.v1.StreamEcho/BidiEcho",
        "--proto-file",
        &proto,
        "-d",
        r#"{"ping":"hello"}"#,
        "--stream-messages",
        "20",
        "-c",
        "4",
        "-n",
        "100",
    ]);
    let mut packets = cap.stop();
    drop(srv);
    packets.decode_h2();
    let case = "bidi ping-pong, built-in server";
    let run = proto_run(&report, "grpc");
    assert_eq!(u64_at(run, "/summary/ok"), 100, "{run:#}");
    assert_eq!(u64_at(run, "/streaming/messages_sent"), 2000, "{run:#}");
    assert_all_connections_reported(case, run, &packets);
    let mut ck = Checks::default();
    let conns = check_tcp(&mut ck, case, run, &packets, true);
    check_h2(&mut ck, case, run, &conns);
    ck.finish(case);
    // one HEADERS frame out per stream: 1 / 20 per message
    assert_eq!(u64_at(run, "/wire/layers/h2/out/frames/HEADERS/count"), 100);
    assert_eq!(u64_at(run, "/wire/layers/h2/out/grpc_messages"), 2000);
}

#[test]
fn echo_over_plain_h2_matches_the_capture() {
    // JSON bodies in DATA: tshark finds no gRPC message, and neither does the ledger
    echo_over_h2_matches_the_capture("h2", "echo, plain HTTP/2, built-in server");
}

/// The body the chunked server answers with, in three chunks (the second with an extension).
const CHUNKS: [(&str, &str); 3] = [
    ("8", "{\"body\":"),
    ("f;x=1", "\"Hello, world!\""),
    ("1", "}"),
];
const CHUNKED_HEAD: &str =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";

/// The whole chunked response, as one buffer (written with one call: one segment).
fn chunked_response() -> Vec<u8> {
    let mut r = CHUNKED_HEAD.as_bytes().to_vec();
    for (size_line, data) in CHUNKS {
        assert_eq!(
            usize::from_str_radix(size_line.split(';').next().unwrap(), 16).unwrap(),
            data.len()
        );
        r.extend_from_slice(format!("{size_line}\r\n{data}\r\n").as_bytes());
    }
    r.extend_from_slice(b"0\r\n\r\n");
    r
}

/// A keepalive HTTP/1.1 server on std::net, a thread per connection, that answers every
/// `POST /v1/echo` with `chunked_response()`. Stops accepting when dropped.
struct ChunkedServer {
    port: u16,
    stop: Arc<AtomicBool>,
    acceptor: Option<std::thread::JoinHandle<()>>,
}

impl ChunkedServer {
    fn start() -> ChunkedServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let acceptor = std::thread::spawn(move || {
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((s, _)) => {
                        std::thread::spawn(move || serve_chunked(s));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(2))
                    }
                    Err(e) => panic!("accept: {e}"),
                }
            }
        });
        ChunkedServer {
            port,
            stop,
            acceptor: Some(acceptor),
        }
    }
}

impl Drop for ChunkedServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
    }
}

fn serve_chunked(mut s: TcpStream) {
    s.set_nonblocking(false).unwrap();
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let response = chunked_response();
    let mut buf: Vec<u8> = Vec::new();
    let mut tmp = [0u8; 4096];
    loop {
        // One request: head up to the blank line, then Content-Length bytes of body.
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            match s.read(&mut tmp) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&tmp[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        assert!(
            head.starts_with("POST /v1/echo HTTP/1.1\r\n"),
            "chunked server: unexpected request {head:?}"
        );
        let length: usize = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().unwrap())
            })
            .unwrap_or(0);
        while buf.len() < head_end + length {
            match s.read(&mut tmp) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&tmp[..n]),
            }
        }
        buf.drain(..head_end + length);
        if s.write_all(&response).is_err() {
            return;
        }
    }
}

#[test]
fn chunked_http1_responses_match_the_capture() {
    let srv = ChunkedServer::start();
    let url = format!("http://127.0.0.1:{}", srv.port);
    let cap = Capture::start(srv.port);
    let report = run_json(&[
        "echo", "--target", &url, "--proto", "http", "-c", "2", "-n", "200",
    ]);
    let mut packets = cap.stop();
    drop(srv);
    packets.decode_http1();
    let case = "echo, HTTP/1.1, chunked responses";
    let run = proto_run(&report, "http");
    assert_eq!(
        u64_at(run, "/summary/ok"),
        200,
        "the chunked body must decode to the echo: {run:#}"
    );
    assert_all_connections_reported(case, run, &packets);
    let mut ck = Checks::default();
    let conns = check_tcp(&mut ck, case, run, &packets, false);
    assert_eq!(conns.len(), 2, "one connection per client");

    // What the server wrote, known in advance: the capture must show exactly that.
    let head = CHUNKED_HEAD.len() as u64;
    let body: u64 = CHUNKS.iter().map(|(_, d)| d.len() as u64).sum();
    let framing = chunked_response().len() as u64 - head - body;
    assert_eq!((head, body, framing), (79, 24, 24));
    for (port, m) in &conns {
        let cc = m.conn;
        let n = cc.r#in.http.messages;
        let ctx = format!("{case}, connection from port {port}");
        assert_eq!(
            (
                cc.r#in.http.head_bytes,
                cc.r#in.http.chunk_bytes,
                cc.r#in.http.chunks
            ),
            (n * head, n * body, n * 3),
            "{ctx}: tshark's view of {n} responses"
        );
        assert_eq!(cc.r#in.stream_bytes, n * (head + body + framing), "{ctx}");
    }
    check_http1(&mut ck, case, run, &conns, true);
    ck.finish(case);
}
