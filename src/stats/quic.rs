//! The ledger's record of an HTTP/3 connection (or a sum of them): its HTTP/3 frames and QPACK
//! sections each way, its unidirectional streams' bytes, its handshake, and QUIC's own account
//! (quinn's frame counts, packets sent and lost, the RTT estimate).

use wirebench_wire::h3::counts::H3Counts;
use wirebench_wire::h3::qpack::QpackCounts;
use wirebench_wire::quic::QuicCounts;

/// QUIC frames of each type one way, as quinn counted them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QuicFrames {
    pub ack: u64,
    pub crypto: u64,
    pub stream: u64,
    pub max_data: u64,
    pub max_stream_data: u64,
    pub max_streams: u64,
    pub data_blocked: u64,
    pub stream_data_blocked: u64,
    pub streams_blocked: u64,
    pub new_connection_id: u64,
    pub retire_connection_id: u64,
    pub new_token: u64,
    pub ping: u64,
    pub reset_stream: u64,
    pub stop_sending: u64,
    pub connection_close: u64,
    pub handshake_done: u64,
    pub path_challenge: u64,
    pub path_response: u64,
    pub ack_frequency: u64,
    pub immediate_ack: u64,
    pub datagram: u64,
}

impl QuicFrames {
    fn from_quinn(f: &quinn_proto::FrameStats) -> QuicFrames {
        QuicFrames {
            ack: f.acks,
            crypto: f.crypto,
            stream: f.stream,
            max_data: f.max_data,
            max_stream_data: f.max_stream_data,
            max_streams: f.max_streams_bidi + f.max_streams_uni,
            data_blocked: f.data_blocked,
            stream_data_blocked: f.stream_data_blocked,
            streams_blocked: f.streams_blocked_bidi + f.streams_blocked_uni,
            new_connection_id: f.new_connection_id,
            retire_connection_id: f.retire_connection_id,
            new_token: f.new_token,
            ping: f.ping,
            reset_stream: f.reset_stream,
            stop_sending: f.stop_sending,
            connection_close: f.connection_close,
            handshake_done: u64::from(f.handshake_done),
            path_challenge: f.path_challenge,
            path_response: f.path_response,
            ack_frequency: f.ack_frequency,
            immediate_ack: f.immediate_ack,
            datagram: f.datagram,
        }
    }

    /// Every type's count with its RFC 9000 name (MAX_STREAMS and STREAMS_BLOCKED both
    /// directions of streams), in the order of the struct.
    pub fn named(&self) -> [(&'static str, u64); 22] {
        let f = self;
        [
            ("ACK", f.ack),
            ("CRYPTO", f.crypto),
            ("STREAM", f.stream),
            ("MAX_DATA", f.max_data),
            ("MAX_STREAM_DATA", f.max_stream_data),
            ("MAX_STREAMS", f.max_streams),
            ("DATA_BLOCKED", f.data_blocked),
            ("STREAM_DATA_BLOCKED", f.stream_data_blocked),
            ("STREAMS_BLOCKED", f.streams_blocked),
            ("NEW_CONNECTION_ID", f.new_connection_id),
            ("RETIRE_CONNECTION_ID", f.retire_connection_id),
            ("NEW_TOKEN", f.new_token),
            ("PING", f.ping),
            ("RESET_STREAM", f.reset_stream),
            ("STOP_SENDING", f.stop_sending),
            ("CONNECTION_CLOSE", f.connection_close),
            ("HANDSHAKE_DONE", f.handshake_done),
            ("PATH_CHALLENGE", f.path_challenge),
            ("PATH_RESPONSE", f.path_response),
            ("ACK_FREQUENCY", f.ack_frequency),
            ("IMMEDIATE_ACK", f.immediate_ack),
            ("DATAGRAM", f.datagram),
        ]
    }

    /// Every frame counted.
    pub fn total(&self) -> u64 {
        let f = self;
        f.ack
            + f.crypto
            + f.stream
            + f.max_data
            + f.max_stream_data
            + f.max_streams
            + f.data_blocked
            + f.stream_data_blocked
            + f.streams_blocked
            + f.new_connection_id
            + f.retire_connection_id
            + f.new_token
            + f.ping
            + f.reset_stream
            + f.stop_sending
            + f.connection_close
            + f.handshake_done
            + f.path_challenge
            + f.path_response
            + f.ack_frequency
            + f.immediate_ack
            + f.datagram
    }
}

impl std::ops::AddAssign for QuicFrames {
    fn add_assign(&mut self, o: QuicFrames) {
        self.ack += o.ack;
        self.crypto += o.crypto;
        self.stream += o.stream;
        self.max_data += o.max_data;
        self.max_stream_data += o.max_stream_data;
        self.max_streams += o.max_streams;
        self.data_blocked += o.data_blocked;
        self.stream_data_blocked += o.stream_data_blocked;
        self.streams_blocked += o.streams_blocked;
        self.new_connection_id += o.new_connection_id;
        self.retire_connection_id += o.retire_connection_id;
        self.new_token += o.new_token;
        self.ping += o.ping;
        self.reset_stream += o.reset_stream;
        self.stop_sending += o.stop_sending;
        self.connection_close += o.connection_close;
        self.handshake_done += o.handshake_done;
        self.path_challenge += o.path_challenge;
        self.path_response += o.path_response;
        self.ack_frequency += o.ack_frequency;
        self.immediate_ack += o.immediate_ack;
        self.datagram += o.datagram;
    }
}

/// QUIC's account of a connection (quinn's statistics), or a sum of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QuicStats {
    /// UDP datagrams and payload bytes, as quinn counted them
    pub datagrams_out: u64,
    pub datagrams_in: u64,
    pub udp_bytes_out: u64,
    pub udp_bytes_in: u64,
    /// QUIC packets sent, and those declared lost (retransmitted as new packets)
    pub packets_out: u64,
    pub packets_lost: u64,
    pub bytes_lost: u64,
    pub congestion_events: u64,
    pub frames_out: QuicFrames,
    pub frames_in: QuicFrames,
    /// the smoothed RTT estimate (a sum over connections: divide by `connections`)
    pub rtt_us: u64,
    pub min_rtt_us: u64,
    pub cwnd: u64,
    pub connections: u64,
}

impl QuicStats {
    pub fn from_quinn(s: &quinn_proto::ConnectionStats) -> QuicStats {
        QuicStats {
            datagrams_out: s.udp_tx.datagrams,
            datagrams_in: s.udp_rx.datagrams,
            udp_bytes_out: s.udp_tx.bytes,
            udp_bytes_in: s.udp_rx.bytes,
            packets_out: s.path.sent_packets,
            packets_lost: s.path.lost_packets,
            bytes_lost: s.path.lost_bytes,
            congestion_events: s.path.congestion_events,
            frames_out: QuicFrames::from_quinn(&s.frame_tx),
            frames_in: QuicFrames::from_quinn(&s.frame_rx),
            rtt_us: s.path.rtt.as_micros() as u64,
            min_rtt_us: s.path.min_rtt.as_micros() as u64,
            cwnd: s.path.cwnd,
            connections: 1,
        }
    }
}

impl std::ops::AddAssign for QuicStats {
    fn add_assign(&mut self, o: QuicStats) {
        self.datagrams_out += o.datagrams_out;
        self.datagrams_in += o.datagrams_in;
        self.udp_bytes_out += o.udp_bytes_out;
        self.udp_bytes_in += o.udp_bytes_in;
        self.packets_out += o.packets_out;
        self.packets_lost += o.packets_lost;
        self.bytes_lost += o.bytes_lost;
        self.congestion_events += o.congestion_events;
        self.frames_out += o.frames_out;
        self.frames_in += o.frames_in;
        self.rtt_us += o.rtt_us;
        self.min_rtt_us += o.min_rtt_us;
        self.cwnd += o.cwnd;
        self.connections += o.connections;
    }
}

/// One HTTP/3 connection's layers, or a sum of connections'.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct H3Record {
    /// HTTP/3 frames of every stream (request and control streams) each way
    pub frames_out: H3Counts,
    pub frames_in: H3Counts,
    /// QPACK field sections each way
    pub qpack_out: QpackCounts,
    pub qpack_in: QpackCounts,
    /// the stream-type varints of the unidirectional streams
    pub stream_type_bytes_out: u64,
    pub stream_type_bytes_in: u64,
    /// bytes of the server's QPACK encoder and decoder streams
    pub qpack_stream_bytes_in: u64,
    /// bytes of streams the server opened that we read and dropped (reserved types)
    pub ignored_stream_bytes_in: u64,
    pub quic: QuicStats,
    /// every datagram each way as the ledger's own decryption of a copy read it: packets by
    /// type, header and AEAD tag bytes, QUIC frames by type with their bytes (ledger on)
    #[serde(default)]
    pub sniffed_out: QuicCounts,
    #[serde(default)]
    pub sniffed_in: QuicCounts,
    /// our socket's UDP datagrams each way (a GSO send or GRO receive counted by its segments)
    #[serde(default)]
    pub datagrams_out: u64,
    #[serde(default)]
    pub datagrams_in: u64,
    /// the handshakes: their time (a sum), UDP bytes and datagrams until done, resumed ones
    pub handshakes: u64,
    pub handshake_us: u64,
    pub handshake_bytes_out: u64,
    pub handshake_bytes_in: u64,
    pub handshake_datagrams_out: u64,
    pub handshake_datagrams_in: u64,
    pub resumed: u64,
    /// handshakes that sent requests in 0-RTT, and those whose 0-RTT the server accepted
    #[serde(default)]
    pub zero_rtt: u64,
    #[serde(default)]
    pub zero_rtt_accepted: u64,
}

impl std::ops::AddAssign for H3Record {
    fn add_assign(&mut self, o: H3Record) {
        self.frames_out += o.frames_out;
        self.frames_in += o.frames_in;
        self.qpack_out += o.qpack_out;
        self.qpack_in += o.qpack_in;
        self.stream_type_bytes_out += o.stream_type_bytes_out;
        self.stream_type_bytes_in += o.stream_type_bytes_in;
        self.qpack_stream_bytes_in += o.qpack_stream_bytes_in;
        self.ignored_stream_bytes_in += o.ignored_stream_bytes_in;
        self.quic += o.quic;
        self.sniffed_out += &o.sniffed_out;
        self.sniffed_in += &o.sniffed_in;
        self.datagrams_out += o.datagrams_out;
        self.datagrams_in += o.datagrams_in;
        self.handshakes += o.handshakes;
        self.handshake_us += o.handshake_us;
        self.handshake_bytes_out += o.handshake_bytes_out;
        self.handshake_bytes_in += o.handshake_bytes_in;
        self.handshake_datagrams_out += o.handshake_datagrams_out;
        self.handshake_datagrams_in += o.handshake_datagrams_in;
        self.resumed += o.resumed;
        self.zero_rtt += o.zero_rtt;
        self.zero_rtt_accepted += o.zero_rtt_accepted;
    }
}
