//! What one connection carried, as taken from its ledger: socket counters, TCP_INFO, the
//! protocol layers, TLS, and the close exchange apart; and the data calls of a thread.

use std::collections::BTreeMap;

use serde::Serialize;

use wirebench_wire::h2sniff::{FrameType, H2Counts};

/// The ledger of one TCP connection, taken when it closed (or at the end of the run).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ConnRecord {
    /// index of the endpoint it went to
    pub endpoint: usize,
    /// source address (see `--bind`)
    pub local_ip: Option<std::net::IpAddr>,
    pub local_port: u16,
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub write_calls: u64,
    pub read_calls: u64,
    pub write_would_block: u64,
    pub read_would_block: u64,
    /// requests (HTTP/1.1) or streams (gRPC) carried
    pub requests: u64,
    pub lifetime_us: u64,
    /// TCP connect time (SYN sent to established), before any TLS or h2 handshake
    pub connect_us: u64,
    /// TCP_INFO read just before close; absent if the kernel would not say
    pub tcp: Option<TcpInfo>,
    /// HTTP/1.1 layers (HTTP/1.1 connections, ledger on)
    pub http1: Option<Http1Layers>,
    /// h2 layers per direction (gRPC connections, ledger on)
    pub h2: Option<H2Layers>,
    /// TLS connections: handshake time and record overhead (socket bytes - plaintext)
    pub tls: Option<TlsLayer>,
    /// the close exchange, after the snapshot every other figure of the record is taken at
    pub close: Option<CloseRecord>,
}

/// What crossed a connection after its snapshot (taken when its last response had been read,
/// before the client began to close): our GOAWAY / close_notify and FIN, the peer's answer and
/// FIN. Counted apart so that per-request figures hold no close traffic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CloseRecord {
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// TCP_INFO after the close minus TCP_INFO at the snapshot (absent when either is)
    pub segs_out: Option<u64>,
    pub segs_in: Option<u64>,
    pub data_segs_out: Option<u64>,
    pub data_segs_in: Option<u64>,
    /// the peer's FIN was read within the bound; false: the close was cut off
    pub drained: bool,
    pub duration_us: u64,
}

/// The TLS layer of one connection (or summed over several).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TlsLayer {
    pub handshakes: u64,
    pub handshake_us: u64,
    pub plaintext_out: u64,
    pub plaintext_in: u64,
    /// bytes on the socket beyond the plaintext: handshake, record headers, AEAD tags, alerts
    pub record_overhead_out: u64,
    pub record_overhead_in: u64,
}

impl TlsLayer {
    pub fn add(&mut self, o: &TlsLayer) {
        self.handshakes += o.handshakes;
        self.handshake_us += o.handshake_us;
        self.plaintext_out += o.plaintext_out;
        self.plaintext_in += o.plaintext_in;
        self.record_overhead_out += o.record_overhead_out;
        self.record_overhead_in += o.record_overhead_in;
    }
}

/// What wirebench keeps of `TCP_INFO` for one connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TcpInfo {
    /// all segments sent, pure ACKs and retransmits included (tcpi_segs_out)
    pub segs_out: u64,
    /// all segments received (tcpi_segs_in)
    pub segs_in: u64,
    /// segments carrying payload sent (tcpi_data_segs_out)
    pub data_segs_out: u64,
    /// segments carrying payload received (tcpi_data_segs_in)
    pub data_segs_in: u64,
    /// segments retransmitted over the connection's life (tcpi_total_retrans)
    pub retransmits: u64,
    /// smoothed round-trip time, microseconds (tcpi_rtt)
    pub rtt_us: u64,
    /// send maximum segment size, bytes (tcpi_snd_mss)
    pub mss: u64,
    /// whether TCP timestamps were negotiated (12 option bytes on every segment)
    pub timestamps: bool,
}

/// HTTP/1.1 bytes by layer on one connection (or summed over several).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Http1Layers {
    pub requests: u64,
    pub responses: u64,
    /// start line + headers + blank line
    pub request_head_bytes: u64,
    pub request_body_bytes: u64,
    pub response_head_bytes: u64,
    /// payload, de-chunked
    pub response_body_bytes: u64,
    /// chunk size lines, CRLFs, last chunk and trailers
    pub chunk_framing_bytes: u64,
}

impl Http1Layers {
    pub fn add(&mut self, o: &Http1Layers) {
        self.requests += o.requests;
        self.responses += o.responses;
        self.request_head_bytes += o.request_head_bytes;
        self.request_body_bytes += o.request_body_bytes;
        self.response_head_bytes += o.response_head_bytes;
        self.response_body_bytes += o.response_body_bytes;
        self.chunk_framing_bytes += o.chunk_framing_bytes;
    }
}

/// Frames of one type: how many, and their bytes (9-byte header + payload).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct FrameTally {
    pub count: u64,
    pub bytes: u64,
}

/// One direction of an h2 connection, by layer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct H2Dir {
    /// the 24-byte client preface (client to server only)
    pub preface_bytes: u64,
    /// everything before the first HEADERS frame: preface, SETTINGS, their ACKs, the setup PING
    pub setup_bytes: u64,
    pub frame_header_bytes: u64,
    /// HPACK-compressed header block bytes (HEADERS and CONTINUATION fragments)
    pub hpack_bytes: u64,
    /// the same header lists uncompressed (name + value octets, pseudo-headers included)
    pub header_list_bytes: u64,
    pub data_payload_bytes: u64,
    pub padding_bytes: u64,
    pub grpc_prefix_bytes: u64,
    pub grpc_message_bytes: u64,
    pub grpc_messages: u64,
    /// DATA bytes whose gRPC framing could not be followed
    pub data_untracked_bytes: u64,
    /// bytes after the framing broke (a protocol error), if it did
    pub unparsed_bytes: u64,
    /// per frame type name ("DATA", "HEADERS", ...), only types seen
    pub frames: BTreeMap<&'static str, FrameTally>,
}

impl H2Dir {
    pub fn from_counts(c: &H2Counts, header_list_bytes: u64) -> H2Dir {
        let frames = FrameType::ALL
            .iter()
            .zip(c.frames.iter())
            .filter(|(_, f)| f.count > 0)
            .map(|(t, f)| {
                (
                    t.name(),
                    FrameTally {
                        count: f.count,
                        bytes: f.bytes,
                    },
                )
            })
            .collect();
        H2Dir {
            preface_bytes: c.preface_bytes,
            setup_bytes: c.setup_bytes,
            frame_header_bytes: c.frame_header_bytes,
            hpack_bytes: c.hpack_bytes,
            header_list_bytes,
            data_payload_bytes: c.data_payload_bytes,
            padding_bytes: c.padding_bytes,
            grpc_prefix_bytes: c.grpc_prefix_bytes,
            grpc_message_bytes: c.grpc_message_bytes,
            grpc_messages: c.grpc_messages,
            data_untracked_bytes: c.data_untracked_bytes,
            unparsed_bytes: c.unparsed_bytes,
            frames,
        }
    }

    pub fn add(&mut self, o: &H2Dir) {
        self.preface_bytes += o.preface_bytes;
        self.setup_bytes += o.setup_bytes;
        self.frame_header_bytes += o.frame_header_bytes;
        self.hpack_bytes += o.hpack_bytes;
        self.header_list_bytes += o.header_list_bytes;
        self.data_payload_bytes += o.data_payload_bytes;
        self.padding_bytes += o.padding_bytes;
        self.grpc_prefix_bytes += o.grpc_prefix_bytes;
        self.grpc_message_bytes += o.grpc_message_bytes;
        self.grpc_messages += o.grpc_messages;
        self.data_untracked_bytes += o.data_untracked_bytes;
        self.unparsed_bytes += o.unparsed_bytes;
        for (k, v) in &o.frames {
            let e = self.frames.entry(k).or_default();
            e.count += v.count;
            e.bytes += v.bytes;
        }
    }

    /// Bytes of frames that are neither DATA nor HEADERS/CONTINUATION: connection control.
    pub fn control_frame_bytes(&self) -> u64 {
        self.frames
            .iter()
            .filter(|(k, _)| !matches!(**k, "DATA" | "HEADERS" | "CONTINUATION"))
            .map(|(_, f)| f.bytes)
            .sum()
    }
}

/// Both directions of an h2 connection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct H2Layers {
    pub out: H2Dir,
    #[serde(rename = "in")]
    pub inbound: H2Dir,
}

/// Data calls on this thread's sockets: reads and writes that moved bytes (a read of EOF
/// counts), and those the kernel answered EAGAIN. Every socket read and write wirebench makes
/// goes through `net::Metered` (or the close drain), which counts them here per thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct IoCalls {
    pub reads: u64,
    pub writes: u64,
    pub read_would_block: u64,
    pub write_would_block: u64,
}

impl IoCalls {
    pub const ZERO: IoCalls = IoCalls {
        reads: 0,
        writes: 0,
        read_would_block: 0,
        write_would_block: 0,
    };

    pub fn since(self, earlier: IoCalls) -> IoCalls {
        IoCalls {
            reads: self.reads.saturating_sub(earlier.reads),
            writes: self.writes.saturating_sub(earlier.writes),
            read_would_block: self
                .read_would_block
                .saturating_sub(earlier.read_would_block),
            write_would_block: self
                .write_would_block
                .saturating_sub(earlier.write_would_block),
        }
    }

    pub fn plus(self, o: IoCalls) -> IoCalls {
        IoCalls {
            reads: self.reads + o.reads,
            writes: self.writes + o.writes,
            read_would_block: self.read_would_block + o.read_would_block,
            write_would_block: self.write_would_block + o.write_would_block,
        }
    }

    pub fn total(self) -> u64 {
        self.reads + self.writes + self.read_would_block + self.write_would_block
    }
}
