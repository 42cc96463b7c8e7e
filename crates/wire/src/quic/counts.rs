//! The ledger's QUIC counts of one direction (`QuicCounts`): datagrams, packets by type, header
//! and AEAD tag bytes, frames by type with their bytes, undecryptable packets by reason.

use super::ErrorKind;
use super::header::PacketType;

/// A QUIC frame type as the ledger counts it (RFC 9000 §19, and the ack-frequency draft's
/// two that quinn sends); related type codes share a kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// PADDING (0x00): counted by runs of consecutive padding bytes.
    Padding,
    /// PING (0x01).
    Ping,
    /// ACK (0x02) and ACK with ECN counts (0x03).
    Ack,
    /// RESET_STREAM (0x04).
    ResetStream,
    /// STOP_SENDING (0x05).
    StopSending,
    /// CRYPTO (0x06).
    Crypto,
    /// NEW_TOKEN (0x07).
    NewToken,
    /// STREAM (0x08 to 0x0f).
    Stream,
    /// MAX_DATA (0x10).
    MaxData,
    /// MAX_STREAM_DATA (0x11).
    MaxStreamData,
    /// MAX_STREAMS, bidirectional (0x12) and unidirectional (0x13).
    MaxStreams,
    /// DATA_BLOCKED (0x14).
    DataBlocked,
    /// STREAM_DATA_BLOCKED (0x15).
    StreamDataBlocked,
    /// STREAMS_BLOCKED, bidirectional (0x16) and unidirectional (0x17).
    StreamsBlocked,
    /// NEW_CONNECTION_ID (0x18).
    NewConnectionId,
    /// RETIRE_CONNECTION_ID (0x19).
    RetireConnectionId,
    /// PATH_CHALLENGE (0x1a).
    PathChallenge,
    /// PATH_RESPONSE (0x1b).
    PathResponse,
    /// CONNECTION_CLOSE, of the transport (0x1c) and of the application (0x1d).
    ConnectionClose,
    /// HANDSHAKE_DONE (0x1e).
    HandshakeDone,
    /// DATAGRAM without (0x30) and with (0x31) a length (RFC 9221).
    Datagram,
    /// ACK_FREQUENCY (0xaf, draft-ietf-quic-ack-frequency).
    AckFrequency,
    /// IMMEDIATE_ACK (0x1f, draft-ietf-quic-ack-frequency).
    ImmediateAck,
    /// A type the walk does not know, or a frame that breaks its layout: the walk stops and
    /// the rest of the payload is counted here.
    Unknown,
}

/// The number of frame kinds, the length of [`QuicCounts::frames`].
pub const FRAME_KINDS: usize = 24;

impl FrameKind {
    /// Every kind, in declaration order (the index of [`QuicCounts::frames`]).
    pub const ALL: [FrameKind; FRAME_KINDS] = [
        FrameKind::Padding,
        FrameKind::Ping,
        FrameKind::Ack,
        FrameKind::ResetStream,
        FrameKind::StopSending,
        FrameKind::Crypto,
        FrameKind::NewToken,
        FrameKind::Stream,
        FrameKind::MaxData,
        FrameKind::MaxStreamData,
        FrameKind::MaxStreams,
        FrameKind::DataBlocked,
        FrameKind::StreamDataBlocked,
        FrameKind::StreamsBlocked,
        FrameKind::NewConnectionId,
        FrameKind::RetireConnectionId,
        FrameKind::PathChallenge,
        FrameKind::PathResponse,
        FrameKind::ConnectionClose,
        FrameKind::HandshakeDone,
        FrameKind::Datagram,
        FrameKind::AckFrequency,
        FrameKind::ImmediateAck,
        FrameKind::Unknown,
    ];

    /// The kind of a frame type code.
    pub fn of(frame_type: u64) -> FrameKind {
        match frame_type {
            0x00 => FrameKind::Padding,
            0x01 => FrameKind::Ping,
            0x02 | 0x03 => FrameKind::Ack,
            0x04 => FrameKind::ResetStream,
            0x05 => FrameKind::StopSending,
            0x06 => FrameKind::Crypto,
            0x07 => FrameKind::NewToken,
            0x08..=0x0f => FrameKind::Stream,
            0x10 => FrameKind::MaxData,
            0x11 => FrameKind::MaxStreamData,
            0x12 | 0x13 => FrameKind::MaxStreams,
            0x14 => FrameKind::DataBlocked,
            0x15 => FrameKind::StreamDataBlocked,
            0x16 | 0x17 => FrameKind::StreamsBlocked,
            0x18 => FrameKind::NewConnectionId,
            0x19 => FrameKind::RetireConnectionId,
            0x1a => FrameKind::PathChallenge,
            0x1b => FrameKind::PathResponse,
            0x1c | 0x1d => FrameKind::ConnectionClose,
            0x1e => FrameKind::HandshakeDone,
            0x1f => FrameKind::ImmediateAck,
            0x30 | 0x31 => FrameKind::Datagram,
            0xaf => FrameKind::AckFrequency,
            _ => FrameKind::Unknown,
        }
    }

    /// The frame type's name in its RFC or draft.
    pub fn name(self) -> &'static str {
        match self {
            FrameKind::Padding => "PADDING",
            FrameKind::Ping => "PING",
            FrameKind::Ack => "ACK",
            FrameKind::ResetStream => "RESET_STREAM",
            FrameKind::StopSending => "STOP_SENDING",
            FrameKind::Crypto => "CRYPTO",
            FrameKind::NewToken => "NEW_TOKEN",
            FrameKind::Stream => "STREAM",
            FrameKind::MaxData => "MAX_DATA",
            FrameKind::MaxStreamData => "MAX_STREAM_DATA",
            FrameKind::MaxStreams => "MAX_STREAMS",
            FrameKind::DataBlocked => "DATA_BLOCKED",
            FrameKind::StreamDataBlocked => "STREAM_DATA_BLOCKED",
            FrameKind::StreamsBlocked => "STREAMS_BLOCKED",
            FrameKind::NewConnectionId => "NEW_CONNECTION_ID",
            FrameKind::RetireConnectionId => "RETIRE_CONNECTION_ID",
            FrameKind::PathChallenge => "PATH_CHALLENGE",
            FrameKind::PathResponse => "PATH_RESPONSE",
            FrameKind::ConnectionClose => "CONNECTION_CLOSE",
            FrameKind::HandshakeDone => "HANDSHAKE_DONE",
            FrameKind::Datagram => "DATAGRAM",
            FrameKind::AckFrequency => "ACK_FREQUENCY",
            FrameKind::ImmediateAck => "IMMEDIATE_ACK",
            FrameKind::Unknown => "unknown",
        }
    }
}

/// Frames of one kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FrameCount {
    /// Frames (for PADDING: runs of padding bytes).
    pub count: u64,
    /// Their bytes, whole frames: type, fields and data.
    pub bytes: u64,
    /// Of those, the data a STREAM, CRYPTO or DATAGRAM frame carries (0 for other kinds).
    pub data_bytes: u64,
}

impl FrameCount {
    /// One more frame of `bytes` bytes carrying `data` bytes of data.
    pub fn add_frame(&mut self, bytes: u64, data: u64) {
        self.count += 1;
        self.bytes += bytes;
        self.data_bytes += data;
    }

    fn add(&mut self, o: &FrameCount) {
        self.count += o.count;
        self.bytes += o.bytes;
        self.data_bytes += o.data_bytes;
    }
}

/// Packets and their bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PacketBytes {
    /// Packets.
    pub packets: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// What one direction of a connection carried, by layer. Every byte of every datagram is in
/// exactly one of the header, frame, tag and undecryptable figures, so
/// [`total`](Self::total) equals `datagram_bytes`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QuicCounts {
    /// UDP datagrams.
    pub datagrams: u64,
    /// Their UDP payload bytes.
    pub datagram_bytes: u64,
    /// Packets by type (indexed by `PacketType as usize`), the undecryptable ones included
    /// when their header told the type.
    pub packets: [u64; 6],
    /// Header bytes of the decrypted packets, as they are with header protection removed:
    /// first byte, version, connection IDs, token length and token, Length, packet number.
    /// Retry and Version Negotiation packets are header but for Retry's integrity tag.
    pub header_bytes: u64,
    /// AEAD tag bytes: 16 per decrypted packet, and Retry's integrity tag.
    pub tag_bytes: u64,
    /// Frames of the decrypted payloads, by kind (indexed by `FrameKind as usize`).
    pub frames: [FrameCount; FRAME_KINDS],
    /// Packets not decrypted and their bytes, whole, by reason (indexed by
    /// `ErrorKind as usize`); bytes that could not be read as a packet count as one
    /// malformed packet.
    pub undecryptable: [PacketBytes; 3],
    /// Key updates seen (RFC 9001 §6): key phase changes that authenticated.
    pub key_updates: u64,
}

impl QuicCounts {
    /// Packets of type `t`.
    pub fn packets(&self, t: PacketType) -> u64 {
        self.packets[t as usize]
    }

    /// Frames of kind `k`.
    pub fn frame(&self, k: FrameKind) -> FrameCount {
        self.frames[k as usize]
    }

    /// Undecryptable packets of reason `r`.
    pub fn undecryptable(&self, r: ErrorKind) -> PacketBytes {
        self.undecryptable[r as usize]
    }

    /// Bytes of decrypted payload: every frame, padding and unknown bytes included.
    pub fn payload_bytes(&self) -> u64 {
        self.frames.iter().map(|f| f.bytes).sum()
    }

    /// PADDING bytes.
    pub fn padding_bytes(&self) -> u64 {
        self.frame(FrameKind::Padding).bytes
    }

    /// Undecryptable packets, whatever the reason.
    pub fn undecryptable_packets(&self) -> u64 {
        self.undecryptable.iter().map(|u| u.packets).sum()
    }

    /// Undecryptable bytes, whatever the reason.
    pub fn undecryptable_bytes(&self) -> u64 {
        self.undecryptable.iter().map(|u| u.bytes).sum()
    }

    /// Header, payload, tag and undecryptable bytes: the datagram bytes they account for.
    pub fn total(&self) -> u64 {
        self.header_bytes + self.payload_bytes() + self.tag_bytes + self.undecryptable_bytes()
    }

    /// Adds `o` in: a connection's directions, or a run's connections.
    pub fn add(&mut self, o: &QuicCounts) {
        self.datagrams += o.datagrams;
        self.datagram_bytes += o.datagram_bytes;
        for (a, b) in self.packets.iter_mut().zip(o.packets) {
            *a += b;
        }
        self.header_bytes += o.header_bytes;
        self.tag_bytes += o.tag_bytes;
        for (a, b) in self.frames.iter_mut().zip(&o.frames) {
            a.add(b);
        }
        for (a, b) in self.undecryptable.iter_mut().zip(o.undecryptable) {
            a.packets += b.packets;
            a.bytes += b.bytes;
        }
        self.key_updates += o.key_updates;
    }

    /// One undecryptable packet of `bytes` bytes, for reason `r`.
    pub fn add_undecryptable(&mut self, r: ErrorKind, bytes: usize) {
        let u = &mut self.undecryptable[r as usize];
        u.packets += 1;
        u.bytes += bytes as u64;
    }
}

impl std::ops::AddAssign<&QuicCounts> for QuicCounts {
    fn add_assign(&mut self, o: &QuicCounts) {
        self.add(o);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_index_their_table() {
        for (i, k) in FrameKind::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i);
        }
        for (i, t) in PacketType::ALL.iter().enumerate() {
            assert_eq!(*t as usize, i);
        }
        for (i, r) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
        }
        assert_eq!(FrameKind::of(0x0b), FrameKind::Stream);
        assert_eq!(FrameKind::of(0x1d), FrameKind::ConnectionClose);
        assert_eq!(FrameKind::of(0x20), FrameKind::Unknown);
        assert_eq!(FrameKind::AckFrequency.name(), "ACK_FREQUENCY");
    }

    #[test]
    fn sums_add_up() {
        let mut a = QuicCounts {
            datagrams: 1,
            datagram_bytes: 60,
            header_bytes: 10,
            tag_bytes: 16,
            ..QuicCounts::default()
        };
        a.frames[FrameKind::Stream as usize].add_frame(20, 17);
        a.add_undecryptable(ErrorKind::NoKeys, 14);
        assert_eq!(a.total(), 60);
        let mut b = a;
        b += &a;
        assert_eq!((b.total(), b.datagrams), (120, 2));
        assert_eq!(b.frame(FrameKind::Stream).data_bytes, 34);
        assert_eq!(b.undecryptable_packets(), 2);
    }
}
