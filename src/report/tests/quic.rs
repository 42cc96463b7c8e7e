//! HTTP/3 runs: `wire.h3` from hand-built QUIC connection records against numbers computed by
//! hand (per request, the remainder, the header estimate), the text report's QUIC rows and
//! layers block, the ratios to a TCP stack, and a merge of reports with (and without) it.

use super::runs::etcd_put_config;
use super::*;
use crate::report::derive::H3Sums;
use crate::report::merge::{Source, merge};
use crate::report::quic::{H3FrameRate, QuicFrameRate};
use crate::stats::{H3Record, QuicFrames, QuicStats};
use wirebench_wire::h3::counts::{FrameCount as H3Count, H3Counts};
use wirebench_wire::h3::head::FrameType as H3Frame;
use wirebench_wire::h3::qpack::QpackCounts;

/// HTTP/3 frames from (type, count, header bytes, payload bytes).
fn frames(list: &[(H3Frame, u64, u64, u64)]) -> H3Counts {
    let mut c = H3Counts::default();
    for &(t, count, header_bytes, payload_bytes) in list {
        c.frames[t as usize] = H3Count {
            count,
            header_bytes,
            payload_bytes,
        };
    }
    c
}

/// One connection's record: 100 requests' worth of frames (the same every time), its RTT
/// figures and whether its handshake resumed apart.
fn h3_record(rtt_us: u64, min_rtt_us: u64, cwnd: u64, resumed: bool) -> H3Record {
    H3Record {
        // out: 100 HEADERS (2 + 24 B each) and SETTINGS; 2611 B of frames
        frames_out: frames(&[
            (H3Frame::Headers, 100, 200, 2400),
            (H3Frame::Settings, 1, 2, 9),
        ]),
        // in: 100 HEADERS (2 + 60 B), 100 DATA (2 + 10 B), SETTINGS; 7411 B of frames
        frames_in: frames(&[
            (H3Frame::Headers, 100, 200, 6000),
            (H3Frame::Data, 100, 200, 1000),
            (H3Frame::Settings, 1, 2, 9),
        ]),
        qpack_out: QpackCounts {
            sections: 100,
            section_bytes: 2400,
            field_bytes: 6000,
            ..QpackCounts::default()
        },
        qpack_in: QpackCounts {
            sections: 100,
            section_bytes: 6000,
            field_bytes: 12_000,
            ..QpackCounts::default()
        },
        stream_type_bytes_out: 1,
        stream_type_bytes_in: 3,
        qpack_stream_bytes_in: 2,
        ignored_stream_bytes_in: 0,
        // no decryption and no socket count: quinn's figures stand in (older reports)
        sniffed_out: Default::default(),
        sniffed_in: Default::default(),
        datagrams_out: 0,
        datagrams_in: 0,
        quic: QuicStats {
            datagrams_out: 150,
            datagrams_in: 300,
            udp_bytes_out: 10_000,
            udp_bytes_in: 20_000,
            packets_out: 160,
            packets_lost: 8,
            bytes_lost: 800,
            congestion_events: 1,
            frames_out: QuicFrames {
                ack: 120,
                stream: 101,
                crypto: 2,
                ..QuicFrames::default()
            },
            frames_in: QuicFrames {
                ack: 50,
                stream: 301,
                crypto: 2,
                handshake_done: 1,
                ..QuicFrames::default()
            },
            rtt_us,
            min_rtt_us,
            cwnd,
            connections: 1,
        },
        handshakes: 1,
        handshake_us: 5000,
        handshake_bytes_out: 2400,
        handshake_bytes_in: 3000,
        handshake_datagrams_out: 2,
        handshake_datagrams_in: 3,
        resumed: u64::from(resumed),
        zero_rtt: 0,
        zero_rtt_accepted: 0,
    }
}

/// A QUIC connection to `endpoint` (0: IPv4, 1: IPv6) that carried 100 requests in 10,000 B
/// of UDP payload out and 20,000 in.
fn h3_conn(endpoint: usize, record: H3Record) -> ConnRecord {
    ConnRecord {
        connect_us: 5000,
        h3: Some(record),
        ..conn(endpoint, 100, 10_000, 20_000, None)
    }
}

/// An HTTP/3 run over two connections, one to each endpoint.
fn h3_run() -> ProtoRun {
    let mut r = run(Proto::H3);
    ok_ms(&mut r.stats, 1..=10);
    r.stats.written = 10;
    r.stats.conns = vec![
        h3_conn(0, h3_record(2000, 1000, 12_000, false)),
        h3_conn(1, h3_record(4000, 3000, 24_000, true)),
    ];
    r
}

/// The row of the QUIC frames named `frame`.
fn quic_row<'a>(rows: &'a [QuicFrameRate], frame: &str) -> &'a QuicFrameRate {
    rows.iter()
        .find(|r| r.frame == frame)
        .expect("every type has a row")
}

/// The row of the HTTP/3 frames named `frame`.
fn h3_row<'a>(rows: &'a [H3FrameRate], frame: &str) -> &'a H3FrameRate {
    rows.iter()
        .find(|r| r.frame == frame)
        .expect("every type has a row")
}

#[test]
fn h3_figures_are_sums_over_the_quic_connections_per_request() {
    let rep = report(&h3_run());
    let w = &rep.wire;
    let h = w.h3.as_ref().expect("an HTTP/3 run has wire.h3");
    assert_eq!(h.requests, 200);
    assert_eq!((h.udp_bytes_out, h.udp_bytes_in), (20_000, 40_000));
    // 150 datagrams out, 300 in per connection: 28 B a datagram on IPv4, 48 on IPv6
    assert_eq!(h.ip_udp_header_bytes_out, 150 * 28 + 150 * 48);
    assert_eq!(h.ip_udp_header_bytes_in, 300 * 28 + 300 * 48);
    let u = &h.udp;
    assert_eq!(
        (u.datagrams_out_per_request, u.datagrams_in_per_request),
        (Some(1.5), Some(3.0))
    );
    assert_eq!(
        (u.bytes_out_per_request, u.bytes_in_per_request),
        (Some(100.0), Some(200.0))
    );
    // (20000 + 11400) / 200, (40000 + 22800) / 200
    assert_eq!(
        (u.wire_bytes_out_per_request, u.wire_bytes_in_per_request),
        (Some(157.0), Some(314.0))
    );
    // the run's on-the-wire figures are HTTP/3's, so that ratios to a TCP stack hold
    assert_eq!(
        (w.wire_bytes_out_per_request, w.wire_bytes_in_per_request),
        (Some(157.0), Some(314.0))
    );
    assert_eq!(w.packets_per_request(), (Some(1.5), Some(3.0)));
    // no TCP: no segment figure, and no connection "without TCP_INFO"
    assert_eq!(w.segments_out_per_request, None);
    assert_eq!(w.connections_without_tcp_info, 0);
    assert!(w.layers.is_none());

    let q = &h.quic;
    assert_eq!(q.packets_out_per_request, Some(1.6));
    // 16 of 320 packets lost
    assert_eq!((q.packets_lost, q.loss_percent), (16, Some(5.0)));
    assert_eq!(q.bytes_lost_per_request, Some(8.0));
    assert_eq!(q.congestion_events, 2);
    assert_eq!(quic_row(&q.frames_out, "ACK").per_request, Some(1.2));
    assert_eq!(quic_row(&q.frames_out, "STREAM").per_request, Some(1.01));
    assert_eq!(quic_row(&q.frames_in, "HANDSHAKE_DONE").count, 2);
    assert_eq!(q.frames_out.len(), 22);
    // means over the two connections
    assert_eq!(
        (q.rtt_ms, q.min_rtt_ms, q.cwnd_bytes),
        (Some(3.0), Some(2.0), Some(18_000.0))
    );
    // QUIC's own: 10000 - (2611 B of frames + 1 type byte) out, 20000 - (7411 + 3 + 2 of the
    // QPACK streams) in, per connection, over 200 requests
    assert_eq!(
        (q.overhead_out_per_request, q.overhead_in_per_request),
        (Some(2.0 * 7388.0 / 200.0), Some(2.0 * 12_584.0 / 200.0))
    );

    let l = &h.http3;
    let headers = h3_row(&l.frames_out, "HEADERS");
    assert_eq!(headers.count, 200);
    assert_eq!(
        (
            headers.per_request,
            headers.header_bytes_per_request,
            headers.payload_bytes_per_request
        ),
        (Some(1.0), Some(2.0), Some(24.0))
    );
    assert_eq!(
        h3_row(&l.frames_in, "DATA").payload_bytes_per_request,
        Some(10.0)
    );
    assert_eq!(l.frames_in.len(), 9);
    assert_eq!(
        (l.qpack_ratio_out, l.qpack_ratio_in),
        (Some(0.4), Some(0.5))
    );
    assert_eq!(l.field_bytes_in_per_request, Some(120.0));
    // the layers add up to the UDP payload
    let sum_out = l.frame_bytes_out_per_request.unwrap()
        + l.stream_type_bytes_out_per_request.unwrap()
        + q.overhead_out_per_request.unwrap();
    let sum_in = l.frame_bytes_in_per_request.unwrap()
        + l.stream_type_bytes_in_per_request.unwrap()
        + l.qpack_stream_bytes_in_per_request.unwrap()
        + l.ignored_stream_bytes_in_per_request.unwrap()
        + q.overhead_in_per_request.unwrap();
    assert!((sum_out - 100.0).abs() < 1e-9, "{sum_out}");
    assert!((sum_in - 200.0).abs() < 1e-9, "{sum_in}");

    let s = &h.handshake;
    assert_eq!((s.handshakes, s.full, s.resumed), (2, 1, 1));
    assert_eq!(s.average_ms, Some(5.0));
    assert_eq!((s.bytes_out, s.bytes_in), (Some(2400.0), Some(3000.0)));
    assert_eq!((s.datagrams_out, s.datagrams_in), (Some(2.0), Some(3.0)));
}

#[test]
fn h3_without_requests_or_a_tcp_run_has_no_h3_figure() {
    // a QUIC connection that carried nothing: counts stay, per-request figures are null
    let mut r = run(Proto::H3);
    let mut c = h3_conn(0, h3_record(2000, 1000, 12_000, false));
    c.requests = 0;
    r.stats.conns = vec![c];
    let rep = report(&r);
    let h = rep.wire.h3.as_ref().unwrap();
    assert_eq!(h.requests, 0);
    assert_eq!(h.udp.datagrams_out_per_request, None);
    assert_eq!(h.quic.overhead_out_per_request, None);
    assert_eq!(h.quic.packets_lost, 8);
    assert_eq!(h.handshake.average_ms, Some(5.0));
    assert_eq!(rep.wire.wire_bytes_out_per_request, None);
    // a TCP run: no h3 section, none in JSON
    let mut r = run(Proto::H2);
    r.stats.conns = vec![conn(0, 10, 100, 200, Some(tcp(4, 4, false)))];
    let rep = report(&r);
    assert!(rep.wire.h3.is_none());
    let json = serde_json::to_value(&rep.wire).unwrap();
    assert!(json.get("h3").is_none(), "{json}");
}

/// The text report of `runs`.
fn text(runs: &[ProtoRun]) -> String {
    let cfg = etcd_put_config();
    crate::report::text::render(&Report::new(&cfg, &endpoints(), &[], runs, false))
}

#[test]
fn the_text_report_shows_quic_rows_and_the_h3_layers_instead_of_tcp() {
    let t = text(&[h3_run()]);
    let head = t.lines().nth(1).unwrap();
    assert!(head.contains("concurrent QUIC streams"), "{head}");
    assert!(!head.contains("h2") && !head.contains("HPACK"), "{head}");
    for gone in [
        "TCP segments",
        "TCP connect time",
        "Retransmits",
        "IP+TCP",
        "TLS:",
        "Layers (bytes per request",
    ] {
        assert!(!t.contains(gone), "{gone}:\n{t}");
    }
    for row in [
        "QUIC handshake time:",
        "UDP datagrams out / req:  1.50 (66.7 B payload each)",
        "UDP datagrams in / req:   3.00 (66.7 B payload each)",
        "QUIC packets out / req:   1.60; lost 16 (5.00 %, 8.0 B/request), 2 congestion events",
        "On the wire / request:    157.0 out, 314.0 in (with est. IP+UDP headers: 11400 + 22800 B)",
        "RTT (QUIC's estimate):    3.000 ms smoothed, 2.000 ms min; cwnd 18000 B",
        "QUIC handshake:           2 (1 full, 1 resumed), 5.00 ms average",
        "HTTP/3 layers (bytes per request, out / in; over the 200 requests",
        "QPACK field sections           24.0 /     60.0",
        "DATA frame heads                0.0 /      2.0",
        "QUIC's own (remainder)         73.9 /    125.8",
        "= UDP payload                 100.0 /    200.0",
        "QPACK sections are 40% / 50% of the uncompressed fields",
        "HTTP/3 frames in: DATA 200, HEADERS 200, SETTINGS 2",
        "QUIC frames out / request (quinn's count): ACK 1.20, STREAM 1.01, CRYPTO 0.02",
    ] {
        assert!(t.contains(row), "{row}:\n{t}");
    }
}

#[test]
fn decrypted_records_give_the_quic_layers_and_the_sockets_datagrams() {
    use wirebench_wire::quic::{FrameKind, PacketType, QuicCounts};
    // out: 120 1-RTT packets of 10,000 B: headers 1200, tags 1920, STREAM 101 frames of
    // 6300 B (6000 data), ACK 120 frames of 480 B, PADDING 100 B
    let mut out = QuicCounts {
        datagrams: 100,
        datagram_bytes: 10_000,
        header_bytes: 1200,
        tag_bytes: 1920,
        ..QuicCounts::default()
    };
    out.packets[PacketType::OneRtt as usize] = 120;
    out.frames[FrameKind::Stream as usize] = wirebench_wire::quic::FrameCount {
        count: 101,
        bytes: 6300,
        data_bytes: 6000,
    };
    out.frames[FrameKind::Ack as usize] = wirebench_wire::quic::FrameCount {
        count: 120,
        bytes: 480,
        data_bytes: 0,
    };
    out.frames[FrameKind::Padding as usize] = wirebench_wire::quic::FrameCount {
        count: 1,
        bytes: 100,
        data_bytes: 0,
    };
    assert_eq!(out.total(), 10_000);
    let rec = H3Record {
        sniffed_out: out,
        sniffed_in: out,
        datagrams_out: 100,
        datagrams_in: 100,
        ..h3_record(2000, 1000, 12_000, false)
    };
    let mut r = run(Proto::H3);
    ok_ms(&mut r.stats, 1..=10);
    r.stats.written = 10;
    r.stats.conns = vec![h3_conn(0, rec)];
    let t = text(std::slice::from_ref(&r));
    for row in [
        // the socket's datagrams, not quinn's 150
        "UDP datagrams out / req:  1.00 (100.0 B payload each)",
        "QUIC layers (bytes per request, out / in; every datagram decrypted by the ledger):",
        "packet headers                 12.0 /     12.0",
        "AEAD tags                      19.2 /     19.2",
        "STREAM frame headers            3.0 /      3.0",
        "STREAM data (HTTP/3)           60.0 /     60.0",
        "ACK frames                      4.8 /      4.8",
        "PADDING                         1.0 /      1.0",
        "= UDP payload, close in       100.0 /    100.0",
        "QUIC frames out / request: ACK 1.20 (4.8 B), STREAM 1.01 (63.0 B), PADDING 0.01 (1.0 B)",
        "QUIC packets out: 1-RTT 120",
    ] {
        assert!(t.contains(row), "{row}:\n{t}");
    }
    assert!(!t.contains("quinn's count"), "{t}");
}

#[test]
fn h3_beside_a_tcp_stack_has_ratios_of_bytes_on_the_wire_and_packets() {
    // HTTP/2: 100 requests, 150 + 300 segments of 40 B headers
    let mut h2 = run(Proto::H2);
    ok_ms(&mut h2.stats, 1..=10);
    h2.stats.written = 10;
    h2.stats.conns = vec![conn(0, 100, 10_000, 20_000, Some(tcp(150, 300, false)))];
    // HTTP/3: the IPv4 connection alone, 100 requests
    let mut h3 = h3_run();
    h3.stats.conns.truncate(1);
    let cfg = etcd_put_config();
    let rep = Report::new(&cfg, &endpoints(), &[], &[h2, h3], false);
    let r = rep.ratios_h3_h2.as_ref().expect("HTTP/3 / HTTP/2");
    // (10000 + 150 × 28) / 100 against (10000 + 150 × 40) / 100
    let close = |got: Option<f64>, want: f64| {
        assert!((got.unwrap() - want).abs() < 1e-9, "{got:?} vs {want}")
    };
    close(r.wire_bytes_out_per_request, 142.0 / 160.0);
    close(r.wire_bytes_in_per_request, 284.0 / 320.0);
    // 1.5 datagrams against 1.5 segments out, 3 against 3 in
    close(r.packets_out_per_request, 1.0);
    close(r.packets_in_per_request, 1.0);
    assert_eq!(r.segments_out_per_request, None);
    assert!(rep.ratios_h3.is_none());
    let t = crate::report::text::render(&rep);
    for row in [
        "Packets out / request",
        "On the wire out / request         160.0        142.0",
    ] {
        assert!(t.contains(row), "{row}:\n{t}");
    }
}

/// The JSON report of an HTTP/3 `run` by agent `name`.
fn json(run: ProtoRun, name: &str) -> String {
    let mut cfg = etcd_put_config();
    cfg.protos = vec![Proto::H3];
    cfg.agent = Some(name.to_string());
    Report::new(&cfg, &endpoints(), &[], &[run], false).to_json()
}

#[test]
fn merged_h3_figures_are_those_of_every_connection_summed() {
    let a = h3_run();
    let mut b = h3_run();
    b.started_at += Duration::from_secs(5);
    b.stats.conns[0].requests = 300;
    b.stats.conns[1].h3 = Some(h3_record(10_000, 500, 6000, true));
    let every: Vec<ConnRecord> = a
        .stats
        .conns
        .iter()
        .chain(&b.stats.conns)
        .cloned()
        .collect();
    let texts = [json(a, "a"), json(b, "b")];
    let sources: Vec<Source> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| Source::parse(&format!("a{i}.json"), t).unwrap())
        .collect();
    let m = merge(&sources).unwrap();
    let got = m.runs[0].wire.h3.as_ref().expect("merged wire.h3");
    // what one run over all four connections derives
    let want = H3Sums::of(&every, &[false, true]).unwrap().figures();
    assert_eq!(got.requests, 600);
    assert_eq!(got.totals.quic.connections, 4);
    assert_eq!(
        serde_json::to_value(got).unwrap(),
        serde_json::to_value(&want).unwrap()
    );
    assert_eq!(
        m.runs[0].wire.wire_bytes_out_per_request,
        want.udp.wire_bytes_out_per_request
    );
    // and the merged report merges again
    let again = m.to_json();
    let s = Source::parse("m.json", &again).unwrap();
    assert_eq!(
        s.report.runs[0].wire.h3.as_ref().map(|h| h.requests),
        Some(600)
    );
}

#[test]
fn a_report_without_wire_h3_still_loads_and_merges() {
    let mut v: serde_json::Value = serde_json::from_str(&json(h3_run(), "old")).unwrap();
    let wire = v["runs"][0]["wire"].as_object_mut().unwrap();
    assert!(wire.remove("h3").is_some());
    let s = Source::parse("old.json", &v.to_string()).unwrap();
    assert!(s.report.runs[0].wire.h3.is_none());
    let m = merge(&[s]).unwrap();
    assert!(m.runs[0].wire.h3.is_none());
}
