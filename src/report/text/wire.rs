//! The Wire block: connections, bytes and segments per request, the close exchanges, TLS,
//! the protocol layers, and the per-connection table.

use std::fmt::Write;

use crate::report::derive;
use crate::report::show::{self, num, or_na};
use crate::report::{LayerTotals, RunReport, Wire};
use wirebench_wire::{h2::counts::H2Counts, h2::frame::FrameType};

/// The Wire block; `per_conn_table`: with a row per connection.
pub(super) fn render_wire(out: &mut String, run: &RunReport, per_conn_table: bool) {
    let w = &run.wire;
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Wire (per request = over the {} requests written on the connections, warmup included; \
         each connection until its close):",
        w.requests_on_wire
    );
    let _ = writeln!(
        out,
        "  Connections opened:       {} ({} reconnects)",
        w.connections_opened, w.reconnects
    );
    if w.connect_failures > 0 {
        let _ = writeln!(
            out,
            "  Connect failures:         {} (last: {})",
            w.connect_failures,
            w.connect_error.as_deref().unwrap_or("-")
        );
    }
    let _ = writeln!(
        out,
        "  Requests / connection:    {}",
        num(w.requests_per_connection, 1)
    );
    if let Some(c) = run.connect_times.as_ref().filter(|_| w.h3.is_none()) {
        let p = |q: f64| crate::report::percentile_in(&c.distribution, q);
        let _ = writeln!(
            out,
            "  {:<26}p50 {}, p99 {}, slowest {} ({} connections)",
            if w.requests_with_tcp_info == 0 && w.unix_socket_connections > 0 {
                "Connect time:"
            } else {
                "TCP connect time:"
            },
            show::ms(p(50.0)),
            show::ms(p(99.0)),
            show::ms(c.slowest_ms),
            c.connections
        );
    }
    if let Some(m) = &run.memory {
        let per_stream = if run.proto == "grpc" {
            format!(
                ", {} B per stream in flight",
                num(m.rss_per_in_flight_bytes, 0)
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  Memory:                   {:.1} MiB RSS mid-run, {:.1} MiB before connecting: \
             {} B per connection{per_stream}{}; peak {:.1} MiB",
            m.rss_steady_kib as f64 / 1024.0,
            m.rss_baseline_kib as f64 / 1024.0,
            num(m.rss_per_connection_bytes, 0),
            if m.includes_server {
                " (the built-in server runs in this process: both ends included)"
            } else {
                ""
            },
            m.peak_rss_kib as f64 / 1024.0
        );
    }
    let _ = writeln!(
        out,
        "  Bytes out / request:      {} ({} in all)",
        num(w.bytes_out_per_request, 1),
        w.bytes_out
    );
    let _ = writeln!(
        out,
        "  Bytes in / request:       {} ({} in all)",
        num(w.bytes_in_per_request, 1),
        w.bytes_in
    );
    if let Some(h) = &w.h3 {
        super::quic::render_quic_rows(out, h, run.connect_times.as_ref());
        super::quic::render_quic_close(out, &w.close);
        super::quic::render_quic_handshake(out, h);
        super::quic::render_h3_layers(out, h);
    } else {
        render_tcp(out, w, run.proto == "h2");
    }
    if per_conn_table {
        render_per_conn(out, run);
    }
}

/// The TCP rows: segments, retransmits, on the wire, the close, TLS and the layers (`plain`:
/// plain HTTP/2's, whose DATA is bodies).
fn render_tcp(out: &mut String, w: &Wire, plain: bool) {
    if w.unix_socket_connections > 0 {
        let _ = writeln!(
            out,
            "  Unix socket:              {} connections: no TCP segments, retransmits or IP/TCP \
             headers (n/a); bytes as the socket carried them",
            w.unix_socket_connections
        );
    }
    if w.unix_socket_connections > 0 && w.requests_with_tcp_info == 0 {
        // nothing but Unix sockets: the TCP rows would all be n/a
        render_close(out, w);
        render_tls_and_layers(out, w, plain);
        return;
    }
    let tcp_note = if w.connections_without_tcp_info > 0 {
        format!(
            " [over the {} requests of the connections with TCP_INFO]",
            w.requests_with_tcp_info
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "  TCP segments out / req:   {} ({} with data){tcp_note}",
        num(w.segments_out_per_request, 2),
        num(w.data_segments_out_per_request, 2)
    );
    let _ = writeln!(
        out,
        "  TCP segments in / req:    {} ({} with data)",
        num(w.segments_in_per_request, 2),
        num(w.data_segments_in_per_request, 2)
    );
    if w.retransmits > 0 || w.connections_without_tcp_info > 0 {
        let _ = writeln!(
            out,
            "  Retransmits:              {} ({} connections without TCP_INFO)",
            w.retransmits, w.connections_without_tcp_info
        );
    }
    let _ = writeln!(
        out,
        "  On the wire / request:    {} out, {} in (with est. IP+TCP headers: {} + {} B)",
        num(w.wire_bytes_out_per_request, 1),
        num(w.wire_bytes_in_per_request, 1),
        w.ip_tcp_header_bytes_out,
        w.ip_tcp_header_bytes_in
    );
    render_close(out, w);
    render_tls_and_layers(out, w, plain);
}

/// TLS and the protocol layers, over TCP or a Unix socket.
fn render_tls_and_layers(out: &mut String, w: &Wire, plain: bool) {
    if let Some(t) = &w.tls {
        let per = |v: u64| num(derive::per(v, w.requests_on_wire), 1);
        let _ = writeln!(
            out,
            "  TLS:                      {} handshakes, {} ms average; record overhead {} out, {} in B/request",
            t.handshakes,
            num(
                derive::per(t.handshake_us, t.handshakes).map(|us| us / 1000.0),
                2
            ),
            per(t.record_overhead_out),
            per(t.record_overhead_in)
        );
    }
    if let Some(l) = &w.layers {
        render_layers(out, l, w.requests_on_wire, plain);
    }
}

fn render_close(out: &mut String, w: &Wire) {
    let c = &w.close;
    if c.connections == 0 {
        return;
    }
    if w.requests_with_tcp_info == 0 && w.unix_socket_connections > 0 {
        let _ = writeln!(
            out,
            "  Close (apart):            {} B out, {} B in over {} connections ({} closed by the \
             server's end within the bound)",
            c.bytes_out, c.bytes_in, c.connections, c.drained
        );
        return;
    }
    let count = |n: Option<u64>| or_na(n, |n| n.to_string());
    let unknown = match c.connections_without_segments {
        0 => String::new(),
        n => format!(" (not counting the {n} without TCP_INFO)"),
    };
    let _ = writeln!(
        out,
        "  Close (apart):            {} B out, {} B in, {} + {} segments{unknown} over {} \
         connections ({} closed by the server's FIN within the bound)",
        c.bytes_out,
        c.bytes_in,
        count(c.segments_out),
        count(c.segments_in),
        c.connections,
        c.drained
    );
}

fn render_per_conn(out: &mut String, run: &RunReport) {
    let _ = writeln!(out);
    let _ = writeln!(out, "Per connection:");
    let _ = writeln!(
        out,
        "  {:>6} {:>3} {:>8} {:>10} {:>10} {:>8} {:>8} {:>8} {:>8} {:>5} {:>7} {:>6} {:>9}",
        "port",
        "ep",
        "requests",
        "bytes out",
        "bytes in",
        "writes",
        "reads",
        "segs out",
        "segs in",
        "retr",
        "rtt µs",
        "mss",
        "life ms"
    );
    for c in &run.per_connection {
        // TCP_INFO not read: its figures are n/a, not 0
        let t = |f: fn(&crate::stats::TcpInfo) -> u64| or_na(c.tcp.as_ref(), |t| f(t).to_string());
        let _ = writeln!(
            out,
            "  {:>6} {:>3} {:>8} {:>10} {:>10} {:>8} {:>8} {:>8} {:>8} {:>5} {:>7} {:>6} {:>9.1}",
            c.local_port,
            c.endpoint,
            c.requests,
            c.bytes_out,
            c.bytes_in,
            c.write_calls,
            c.read_calls,
            t(|t| t.segs_out),
            t(|t| t.segs_in),
            t(|t| t.retransmits),
            t(|t| t.rtt_us),
            t(|t| t.mss),
            c.lifetime_us as f64 / 1000.0
        );
    }
}

/// `plain`: plain HTTP/2, whose DATA is bodies (no gRPC rows).
fn render_layers(out: &mut String, l: &LayerTotals, requests: u64, plain: bool) {
    let per = |v: u64| derive::per(v, requests);
    let _ = writeln!(out);
    let _ = writeln!(out, "Layers (bytes per request, out / in):");
    let mut row = |name: &str, o: Option<f64>, i: Option<f64>| {
        let _ = writeln!(out, "  {name:<26}{:>9} /{:>9}", num(o, 1), num(i, 1));
    };
    if let Some(h) = &l.http1 {
        row(
            "start line + headers",
            per(h.request_head_bytes),
            per(h.response_head_bytes),
        );
        row(
            "body",
            per(h.request_body_bytes),
            per(h.response_body_bytes),
        );
        row("chunk framing", per(0), per(h.chunk_framing_bytes));
    }
    if let Some(h) = &l.h2 {
        let (o, i) = (&h.out, &h.inbound);
        let dh = |d: &H2Counts| d.frame(FrameType::Data).count * 9;
        let hh = |d: &H2Counts| {
            (d.frame(FrameType::Headers).count + d.frame(FrameType::Continuation).count) * 9
        };
        row("HEADERS frame headers", per(hh(o)), per(hh(i)));
        row(
            "HPACK header blocks",
            per(o.hpack_bytes),
            per(i.hpack_bytes),
        );
        row("DATA frame headers", per(dh(o)), per(dh(i)));
        if plain {
            row(
                "bodies (DATA payload)",
                per(o.data_payload_bytes),
                per(i.data_payload_bytes),
            );
        } else {
            row(
                "gRPC 5-byte prefixes",
                per(o.grpc_prefix_bytes),
                per(i.grpc_prefix_bytes),
            );
            row(
                "protobuf messages",
                per(o.grpc_message_bytes),
                per(i.grpc_message_bytes),
            );
        }
        // control frames after setup (setup frames are reported once, below)
        let ctl = |d: &H2Counts| {
            d.control_frame_bytes()
                .saturating_sub(d.setup_bytes.saturating_sub(d.preface_bytes))
        };
        row("control frames", per(ctl(o)), per(ctl(i)));
        let share = |d: &H2Counts| {
            num(
                derive::per(d.hpack_bytes, d.header_list_bytes).map(|r| r * 100.0),
                0,
            )
        };
        let _ = writeln!(
            out,
            "  HPACK blocks are {}% / {}% of the uncompressed header lists",
            share(o),
            share(i)
        );
        let _ = writeln!(
            out,
            "  setup, once per connection: {} B out, {} B in (the frames before the first HEADERS: preface, SETTINGS and ACKs, PING, WINDOW_UPDATE)",
            l.setup_bytes_out, l.setup_bytes_in
        );
        for (dir, d) in [("out", o), ("in", i)] {
            // the types seen, by name
            let mut seen: Vec<(&str, u64)> = FrameType::ALL
                .iter()
                .map(|&t| (t.name(), d.frame(t).count))
                .filter(|&(_, n)| n > 0)
                .collect();
            seen.sort_unstable();
            let list: Vec<String> = seen.iter().map(|(k, n)| format!("{k} {n}")).collect();
            let _ = writeln!(out, "  frames {dir}: {}", list.join(", "));
        }
    }
}
