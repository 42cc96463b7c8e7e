//! What one connection carried, as taken from its ledger: socket counters, TCP_INFO, the
//! protocol layers, TLS, and the close exchange apart; and the data calls of a thread.

use serde::Serialize;

use wirebench_wire::h2sniff::H2Counts;

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
    pub http1: Option<Http1Counts>,
    /// h2 layers per direction (gRPC connections, ledger on)
    pub h2: Option<Duplex<H2Counts>>,
    /// TLS connections: handshake time and record overhead (socket bytes - plaintext)
    pub tls: Option<TlsCounts>,
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TlsCounts {
    pub handshakes: u64,
    pub handshake_us: u64,
    pub plaintext_out: u64,
    pub plaintext_in: u64,
    /// bytes on the socket beyond the plaintext: handshake, record headers, AEAD tags, alerts
    pub record_overhead_out: u64,
    pub record_overhead_in: u64,
}

impl std::ops::AddAssign for TlsCounts {
    fn add_assign(&mut self, o: TlsCounts) {
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Http1Counts {
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

impl std::ops::AddAssign for Http1Counts {
    fn add_assign(&mut self, o: Http1Counts) {
        self.requests += o.requests;
        self.responses += o.responses;
        self.request_head_bytes += o.request_head_bytes;
        self.request_body_bytes += o.request_body_bytes;
        self.response_head_bytes += o.response_head_bytes;
        self.response_body_bytes += o.response_body_bytes;
        self.chunk_framing_bytes += o.chunk_framing_bytes;
    }
}

/// One value per direction of a connection: what we sent, what we received.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Duplex<T> {
    pub out: T,
    #[serde(rename = "in")]
    pub inbound: T,
}

impl<T: std::ops::AddAssign> std::ops::AddAssign for Duplex<T> {
    fn add_assign(&mut self, o: Duplex<T>) {
        self.out += o.out;
        self.inbound += o.inbound;
    }
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
