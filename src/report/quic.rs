//! The HTTP/3 part of a run's wire ledger (`wire.h3`): UDP datagrams and bytes, QUIC's own
//! account (packets, loss, frames, RTT) and what it adds, the HTTP/3 frames and QPACK, and the
//! QUIC handshakes; what JSON serializes and text and HTML render (derived in `derive::quic`).

use serde::{Deserialize, Serialize};

use crate::stats::H3Record;

/// The HTTP/3 connections of a run. Every per-request figure is a sum over these connections
/// divided by `requests`, the requests written on them (null when they carried none); the
/// per-handshake figures are divided by `handshake.handshakes`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct H3Wire {
    /// requests written on the HTTP/3 connections (warmup and failed ones included): the
    /// denominator
    pub requests: u64,
    /// the connections' records summed (`per_connection[].h3`, added): what a merge adds up
    pub totals: H3Record,
    /// UDP payload bytes our socket sent and received on these connections (as `bytes_out` and
    /// `bytes_in` of their records)
    pub udp_bytes_out: u64,
    pub udp_bytes_in: u64,
    /// IP + UDP headers, estimated: datagrams × (8 + 20 for IPv4, or 8 + 40 for IPv6)
    pub ip_udp_header_bytes_out: u64,
    pub ip_udp_header_bytes_in: u64,
    pub udp: UdpFigures,
    pub quic: QuicFigures,
    pub http3: Http3Figures,
    pub handshake: QuicHandshake,
}

/// UDP per request.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct UdpFigures {
    /// datagrams (a datagram is one IP packet)
    pub datagrams_out_per_request: Option<f64>,
    pub datagrams_in_per_request: Option<f64>,
    /// UDP payload bytes
    pub bytes_out_per_request: Option<f64>,
    pub bytes_in_per_request: Option<f64>,
    /// UDP payload + estimated IP/UDP headers
    pub wire_bytes_out_per_request: Option<f64>,
    pub wire_bytes_in_per_request: Option<f64>,
    /// UDP payload bytes per datagram (null: no datagram)
    pub bytes_per_datagram_out: Option<f64>,
    pub bytes_per_datagram_in: Option<f64>,
}

/// QUIC's own account (quinn's statistics) and what it adds to the HTTP/3 bytes.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct QuicFigures {
    /// QUIC packets sent per request (several may share a datagram)
    pub packets_out_per_request: Option<f64>,
    /// packets declared lost (their frames re-sent in new packets), and of those sent
    pub packets_lost: u64,
    pub loss_percent: Option<f64>,
    pub bytes_lost_per_request: Option<f64>,
    pub congestion_events: u64,
    /// QUIC frames per request by type, each way (every type, in RFC 9000 order): the ledger's
    /// decryption of every datagram when it ran (`decrypted`; with each type's bytes), else
    /// quinn's own counts (no bytes)
    pub frames_out: Vec<QuicFrameRate>,
    pub frames_in: Vec<QuicFrameRate>,
    /// the ledger decrypted a copy of every datagram (ledger on): the layers below are its
    #[serde(default)]
    pub decrypted: bool,
    /// of the UDP payload, per request: packet headers (header protection removed: first byte,
    /// version, connection IDs, token, length, packet number), AEAD tags (16 per packet),
    /// PADDING, and packets the ledger could not open (none, unless keys went missing)
    #[serde(default)]
    pub packet_header_bytes_out_per_request: Option<f64>,
    #[serde(default)]
    pub packet_header_bytes_in_per_request: Option<f64>,
    #[serde(default)]
    pub aead_tag_bytes_out_per_request: Option<f64>,
    #[serde(default)]
    pub aead_tag_bytes_in_per_request: Option<f64>,
    #[serde(default)]
    pub padding_bytes_out_per_request: Option<f64>,
    #[serde(default)]
    pub padding_bytes_in_per_request: Option<f64>,
    /// the UDP payload the decryption read, per request: the connections' whole lives, their
    /// closes' CONNECTION_CLOSE included (the UDP row above stops at the records, before them)
    #[serde(default)]
    pub decrypted_bytes_out_per_request: Option<f64>,
    #[serde(default)]
    pub decrypted_bytes_in_per_request: Option<f64>,
    #[serde(default)]
    pub undecryptable_packets_out: u64,
    #[serde(default)]
    pub undecryptable_packets_in: u64,
    /// QUIC packets each way by type (the ledger's decryption): initial, 0rtt, handshake,
    /// retry, version negotiation, 1rtt
    #[serde(default)]
    pub packets_by_type_out: Vec<(String, u64)>,
    #[serde(default)]
    pub packets_by_type_in: Vec<(String, u64)>,
    /// QUIC's own bytes per request: UDP payload − (HTTP/3 frames + stream types + QPACK
    /// and ignored streams' bytes): packet headers, AEAD tags, STREAM frame headers, ACK,
    /// CRYPTO and every other QUIC frame, padding
    pub overhead_out_per_request: Option<f64>,
    pub overhead_in_per_request: Option<f64>,
    /// means over the connections (null: none): smoothed RTT, min RTT (ms), cwnd (bytes)
    pub rtt_ms: Option<f64>,
    pub min_rtt_ms: Option<f64>,
    pub cwnd_bytes: Option<f64>,
}

/// One QUIC frame type one way.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QuicFrameRate {
    /// RFC 9000 name: "STREAM", "ACK", ...
    pub frame: String,
    pub count: u64,
    pub per_request: Option<f64>,
    /// whole frames' bytes, and of them the data a STREAM, CRYPTO or DATAGRAM frame carries,
    /// per request (null: counted by quinn, which keeps no bytes)
    #[serde(default)]
    pub bytes_per_request: Option<f64>,
    #[serde(default)]
    pub data_bytes_per_request: Option<f64>,
}

/// The HTTP/3 layer per request.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Http3Figures {
    /// HTTP/3 frames by type each way (every type, in `FrameType::ALL` order)
    pub frames_out: Vec<H3FrameRate>,
    pub frames_in: Vec<H3FrameRate>,
    /// heads and payloads of every HTTP/3 frame
    pub frame_bytes_out_per_request: Option<f64>,
    pub frame_bytes_in_per_request: Option<f64>,
    /// QPACK field sections (the HEADERS payloads) and the fields they carry uncompressed
    /// (name + value octets of every line)
    pub qpack_section_bytes_out_per_request: Option<f64>,
    pub qpack_section_bytes_in_per_request: Option<f64>,
    pub field_bytes_out_per_request: Option<f64>,
    pub field_bytes_in_per_request: Option<f64>,
    /// section bytes / field bytes (null: no field)
    pub qpack_ratio_out: Option<f64>,
    pub qpack_ratio_in: Option<f64>,
    /// the unidirectional streams' type varints
    pub stream_type_bytes_out_per_request: Option<f64>,
    pub stream_type_bytes_in_per_request: Option<f64>,
    /// the server's QPACK encoder and decoder streams, and the streams read and dropped
    pub qpack_stream_bytes_in_per_request: Option<f64>,
    pub ignored_stream_bytes_in_per_request: Option<f64>,
}

/// One HTTP/3 frame type one way.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct H3FrameRate {
    /// "DATA", "HEADERS", "SETTINGS", ..., "RESERVED" (grease), "UNKNOWN"
    pub frame: String,
    pub count: u64,
    pub per_request: Option<f64>,
    /// type + length varints, and payload, per request
    pub header_bytes_per_request: Option<f64>,
    pub payload_bytes_per_request: Option<f64>,
}

/// The QUIC handshakes (from the first datagram until quinn reported the connection
/// established), per handshake.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct QuicHandshake {
    pub handshakes: u64,
    pub full: u64,
    pub resumed: u64,
    /// handshakes that sent requests in 0-RTT, and those the server took them in
    #[serde(default)]
    pub zero_rtt: u64,
    #[serde(default)]
    pub zero_rtt_accepted: u64,
    /// mean time (null: none completed)
    pub average_ms: Option<f64>,
    /// UDP payload bytes and datagrams until done, each way
    pub bytes_out: Option<f64>,
    pub bytes_in: Option<f64>,
    pub datagrams_out: Option<f64>,
    pub datagrams_in: Option<f64>,
}

/// IP + UDP header bytes of `datagrams` datagrams: UDP 8, IPv4 20 or IPv6 40 (no IP options,
/// no extension headers).
pub fn ip_udp_header_bytes(datagrams: u64, ipv6: bool) -> u64 {
    datagrams * (8 + if ipv6 { 40 } else { 20 })
}
