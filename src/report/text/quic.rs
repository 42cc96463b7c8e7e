//! The HTTP/3 rows of the Wire block (UDP datagrams, QUIC packets and loss, on the wire, RTT,
//! the close, the handshakes) in place of the TCP ones, and the HTTP/3 layers block.

use std::fmt::Write;

use crate::report::quic::{H3FrameRate, H3Wire, QuicFrameRate};
use crate::report::show::{self, num};
use crate::report::{CloseTotals, ConnectTimes};

/// The rows that stand where a TCP stack's segments, connect time, retransmits and
/// on-the-wire rows stand: `connect`, the connect times (to the end of the handshake).
pub(super) fn render_quic_rows(out: &mut String, h: &H3Wire, connect: Option<&ConnectTimes>) {
    if let Some(c) = connect {
        let p = |q: f64| crate::report::percentile_in(&c.distribution, q);
        let _ = writeln!(
            out,
            "  QUIC handshake time:      p50 {}, p99 {}, slowest {} ({} connections; socket to \
             connection established)",
            show::ms(p(50.0)),
            show::ms(p(99.0)),
            show::ms(c.slowest_ms),
            c.connections
        );
    }
    let u = &h.udp;
    let _ = writeln!(
        out,
        "  UDP datagrams out / req:  {} ({} B payload each)",
        num(u.datagrams_out_per_request, 2),
        num(u.bytes_per_datagram_out, 1)
    );
    let _ = writeln!(
        out,
        "  UDP datagrams in / req:   {} ({} B payload each)",
        num(u.datagrams_in_per_request, 2),
        num(u.bytes_per_datagram_in, 1)
    );
    let q = &h.quic;
    let _ = writeln!(
        out,
        "  QUIC packets out / req:   {}; lost {} ({} %, {} B/request), {} congestion events",
        num(q.packets_out_per_request, 2),
        q.packets_lost,
        num(q.loss_percent, 2),
        num(q.bytes_lost_per_request, 1),
        q.congestion_events
    );
    let _ = writeln!(
        out,
        "  On the wire / request:    {} out, {} in (with est. IP+UDP headers: {} + {} B)",
        num(u.wire_bytes_out_per_request, 1),
        num(u.wire_bytes_in_per_request, 1),
        h.ip_udp_header_bytes_out,
        h.ip_udp_header_bytes_in
    );
    let _ = writeln!(
        out,
        "  RTT (QUIC's estimate):    {} ms smoothed, {} ms min; cwnd {} B (means over {} \
         connections)",
        num(q.rtt_ms, 3),
        num(q.min_rtt_ms, 3),
        num(q.cwnd_bytes, 0),
        h.totals.quic.connections
    );
}

/// The close exchanges of QUIC connections: bytes, no segments.
pub(super) fn render_quic_close(out: &mut String, c: &CloseTotals) {
    if c.connections == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "  Close (apart):            {} B out, {} B in over {} connections (CONNECTION_CLOSE; \
         {} ended within the bound)",
        c.bytes_out, c.bytes_in, c.connections, c.drained
    );
}

/// The handshakes, in place of the TLS row (QUIC carries TLS 1.3 in CRYPTO frames).
pub(super) fn render_quic_handshake(out: &mut String, h: &H3Wire) {
    let s = &h.handshake;
    let _ = writeln!(
        out,
        "  QUIC handshake:           {} ({} full, {} resumed), {} ms average; until done {} B in \
         {} datagrams out, {} B in {} datagrams in, per handshake",
        s.handshakes,
        s.full,
        s.resumed,
        num(s.average_ms, 2),
        num(s.bytes_out, 0),
        num(s.datagrams_out, 1),
        num(s.bytes_in, 0),
        num(s.datagrams_in, 1)
    );
    if s.zero_rtt > 0 {
        let _ = writeln!(
            out,
            "  0-RTT:                    requests sent early on {} handshakes, taken by the \
             server on {}",
            s.zero_rtt, s.zero_rtt_accepted
        );
    }
}

/// The HTTP/3 layers block: the UDP payload per request parted into the HTTP/3 layer and
/// QUIC's own bytes, the QPACK ratio, and the frames of both layers.
pub(super) fn render_h3_layers(out: &mut String, h: &H3Wire) {
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "HTTP/3 layers (bytes per request, out / in; over the {} requests on the QUIC \
         connections):",
        h.requests
    );
    let mut row = |name: &str, o: Option<f64>, i: Option<f64>| {
        let _ = writeln!(out, "  {name:<26}{:>9} /{:>9}", num(o, 1), num(i, 1));
    };
    let f = |rows: &[H3FrameRate], name: &str, payload: bool| {
        rows.iter().find(|r| r.frame == name).and_then(|r| {
            if payload {
                r.payload_bytes_per_request
            } else {
                r.header_bytes_per_request
            }
        })
    };
    // every frame but HEADERS and DATA, heads and payloads
    let control = |rows: &[H3FrameRate]| {
        rows.iter()
            .filter(|r| r.frame != "HEADERS" && r.frame != "DATA")
            .map(|r| crate::report::plus(r.header_bytes_per_request, r.payload_bytes_per_request))
            .sum::<Option<f64>>()
    };
    let (fo, fi) = (&h.http3.frames_out, &h.http3.frames_in);
    let l = &h.http3;
    row(
        "HEADERS frame heads",
        f(fo, "HEADERS", false),
        f(fi, "HEADERS", false),
    );
    row(
        "QPACK field sections",
        f(fo, "HEADERS", true),
        f(fi, "HEADERS", true),
    );
    row(
        "DATA frame heads",
        f(fo, "DATA", false),
        f(fi, "DATA", false),
    );
    row(
        "bodies (DATA payload)",
        f(fo, "DATA", true),
        f(fi, "DATA", true),
    );
    row("other HTTP/3 frames", control(fo), control(fi));
    row(
        "stream types",
        l.stream_type_bytes_out_per_request,
        l.stream_type_bytes_in_per_request,
    );
    row(
        "QPACK / dropped streams",
        Some(0.0).filter(|_| h.requests > 0),
        crate::report::plus(
            l.qpack_stream_bytes_in_per_request,
            l.ignored_stream_bytes_in_per_request,
        ),
    );
    row(
        "QUIC's own (remainder)",
        h.quic.overhead_out_per_request,
        h.quic.overhead_in_per_request,
    );
    row(
        "= UDP payload",
        h.udp.bytes_out_per_request,
        h.udp.bytes_in_per_request,
    );
    let pct = |r: Option<f64>| num(r.map(|r| r * 100.0), 0);
    let _ = writeln!(
        out,
        "  QPACK sections are {}% / {}% of the uncompressed fields ({} / {} B of fields per request)",
        pct(l.qpack_ratio_out),
        pct(l.qpack_ratio_in),
        num(l.field_bytes_out_per_request, 1),
        num(l.field_bytes_in_per_request, 1)
    );
    let _ = writeln!(
        out,
        "  QUIC's own = UDP payload - (HTTP/3 frames + stream types + QPACK and dropped streams): \
         packet headers, AEAD tags, STREAM frame headers, ACK, CRYPTO and other QUIC frames, \
         padding"
    );
    for (dir, rows) in [("out", fo), ("in", fi)] {
        let list: Vec<String> = rows
            .iter()
            .filter(|r| r.count > 0)
            .map(|r| format!("{} {}", r.frame, r.count))
            .collect();
        let _ = writeln!(out, "  HTTP/3 frames {dir}: {}", or_none(&list));
    }
    if h.quic.decrypted {
        render_quic_layers(out, h);
        return;
    }
    for (dir, rows) in [("out", &h.quic.frames_out), ("in", &h.quic.frames_in)] {
        let mut seen: Vec<_> = rows.iter().filter(|r| r.count > 0).collect();
        seen.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.frame.cmp(&b.frame)));
        let list: Vec<String> = seen
            .iter()
            .map(|r| format!("{} {}", r.frame, num(r.per_request, 2)))
            .collect();
        let _ = writeln!(
            out,
            "  QUIC frames {dir} / request (quinn's count): {}",
            or_none(&list)
        );
    }
}

/// The QUIC layers of the UDP payload as the ledger's decryption of every datagram read them:
/// packet headers, AEAD tags, every frame type with its bytes (STREAM's headers and data
/// apart), padding.
fn render_quic_layers(out: &mut String, h: &H3Wire) {
    let q = &h.quic;
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "QUIC layers (bytes per request, out / in; every datagram decrypted by the ledger):"
    );
    let mut row = |name: &str, o: Option<f64>, i: Option<f64>| {
        let _ = writeln!(out, "  {name:<26}{:>9} /{:>9}", num(o, 1), num(i, 1));
    };
    let frame = |rows: &[QuicFrameRate], name: &str| rows.iter().find(|r| r.frame == name).cloned();
    let bytes = |r: Option<QuicFrameRate>| r.and_then(|r| r.bytes_per_request);
    let (fo, fi) = (&q.frames_out, &q.frames_in);
    row(
        "packet headers",
        q.packet_header_bytes_out_per_request,
        q.packet_header_bytes_in_per_request,
    );
    row(
        "AEAD tags",
        q.aead_tag_bytes_out_per_request,
        q.aead_tag_bytes_in_per_request,
    );
    let stream_head = |r: Option<QuicFrameRate>| {
        r.and_then(|r| Some(r.bytes_per_request? - r.data_bytes_per_request?))
    };
    row(
        "STREAM frame headers",
        stream_head(frame(fo, "STREAM")),
        stream_head(frame(fi, "STREAM")),
    );
    row(
        "STREAM data (HTTP/3)",
        frame(fo, "STREAM").and_then(|r| r.data_bytes_per_request),
        frame(fi, "STREAM").and_then(|r| r.data_bytes_per_request),
    );
    row(
        "ACK frames",
        bytes(frame(fo, "ACK")),
        bytes(frame(fi, "ACK")),
    );
    row(
        "CRYPTO frames (TLS)",
        bytes(frame(fo, "CRYPTO")),
        bytes(frame(fi, "CRYPTO")),
    );
    let others = |rows: &[QuicFrameRate]| {
        rows.iter()
            .filter(|r| !matches!(r.frame.as_str(), "STREAM" | "ACK" | "CRYPTO" | "PADDING"))
            .map(|r| r.bytes_per_request)
            .sum::<Option<f64>>()
    };
    row("other QUIC frames", others(fo), others(fi));
    row(
        "PADDING",
        q.padding_bytes_out_per_request,
        q.padding_bytes_in_per_request,
    );
    row(
        "= UDP payload, close in",
        q.decrypted_bytes_out_per_request,
        q.decrypted_bytes_in_per_request,
    );
    if q.undecryptable_packets_out + q.undecryptable_packets_in > 0 {
        let _ = writeln!(
            out,
            "  not decrypted: {} packets out, {} in (their bytes are in none of the rows)",
            q.undecryptable_packets_out, q.undecryptable_packets_in
        );
    }
    let _ = writeln!(
        out,
        "  STREAM data holds the HTTP/3 layers above, and again what was retransmitted"
    );
    for (dir, rows) in [("out", fo), ("in", fi)] {
        let mut seen: Vec<_> = rows.iter().filter(|r| r.count > 0).collect();
        seen.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.frame.cmp(&b.frame)));
        let list: Vec<String> = seen
            .iter()
            .map(|r| {
                format!(
                    "{} {} ({} B)",
                    r.frame,
                    num(r.per_request, 2),
                    num(r.bytes_per_request, 1)
                )
            })
            .collect();
        let _ = writeln!(out, "  QUIC frames {dir} / request: {}", or_none(&list));
    }
    for (dir, types) in [
        ("out", &q.packets_by_type_out),
        ("in", &q.packets_by_type_in),
    ] {
        let list: Vec<String> = types
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(t, n)| format!("{t} {n}"))
            .collect();
        let _ = writeln!(out, "  QUIC packets {dir}: {}", or_none(&list));
    }
}

fn or_none(list: &[String]) -> String {
    if list.is_empty() {
        "none".to_string()
    } else {
        list.join(", ")
    }
}
