//! The QUIC sniffer's check: arbitrary datagrams in both directions, with keys and without.

use crate::quic::keys::{self, Keys, Suite};
use crate::quic::{Dir, FrameKind, PacketType, Sniffer, StreamVisitor};

/// The KeyLog labels the sniffer takes.
const LABELS: [&str; 5] = [
    "CLIENT_EARLY_TRAFFIC_SECRET",
    "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
    "SERVER_HANDSHAKE_TRAFFIC_SECRET",
    "CLIENT_TRAFFIC_SECRET_0",
    "SERVER_TRAFFIC_SECRET_0",
];

/// Checks what a STREAM frame hands over: its data within the frame's limits.
struct Bounds(u64);

impl StreamVisitor for Bounds {
    fn stream(&mut self, _: Dir, _: u64, offset: u64, data: &[u8], _: bool) {
        assert!(data.len() < 1 << 16);
        let _ = offset.checked_add(data.len() as u64);
        self.0 += data.len() as u64;
    }
}

/// The QUIC sniffer fed arbitrary datagrams. The first byte sets it up: bit 0 installs the
/// five secrets (48 bytes with bit 1, else 32), bits 4 and 5 name a suite (none, AES-128-GCM,
/// ChaCha20-Poly1305, AES-256-GCM), bit 3 starts with a valid client Initial so that the
/// initial keys meet what follows. The rest is datagrams, each a byte (the direction in its
/// low bit, the length in the other seven) and that many bytes (the last cut short by the
/// end). After every datagram, each direction's bytes must add up, and the visitor must have
/// seen the STREAM data counted.
pub fn quic_sniff(data: &[u8]) {
    let Some((&first, mut rest)) = data.split_first() else {
        return;
    };
    let mut s = Sniffer::new();
    let suite = [
        None,
        Some(Suite::Aes128Gcm),
        Some(Suite::ChaCha20Poly1305),
        Some(Suite::Aes256Gcm),
    ][usize::from(first >> 4 & 3)];
    if let Some(suite) = suite {
        s.set_suite(suite);
    }
    if first & 1 != 0 {
        let len = if first & 2 != 0 { 48 } else { 32 };
        let fits = suite.is_none_or(|s| s.secret_len() == len);
        for label in LABELS {
            assert_eq!(s.secret(label, &[first; 48][..len]).is_ok(), fits);
        }
    }
    if first & 8 != 0 {
        s.datagram(Dir::Out, &client_initial(&[first; 8]));
        let c = s.counts(Dir::Out);
        assert_eq!(c.packets(PacketType::Initial), 1);
        assert_eq!(c.undecryptable_packets(), 0);
        assert_eq!(c.frame(FrameKind::Ping).count, 1);
    }
    let mut seen = Bounds(0);
    while let Some((&head, tail)) = rest.split_first() {
        let (datagram, next) = tail.split_at(usize::from(head >> 1).min(tail.len()));
        rest = next;
        let dir = if head & 1 == 0 { Dir::Out } else { Dir::In };
        s.datagram_with(dir, datagram, &mut seen);
        let mut stream_data = 0;
        for dir in Dir::BOTH {
            let c = s.counts(dir);
            assert_eq!(c.total(), c.datagram_bytes, "{dir:?}");
            assert_eq!(c.tag_bytes % 16, 0);
            for f in &c.frames {
                assert!(f.data_bytes <= f.bytes && f.count <= f.bytes);
            }
            stream_data += c.frame(FrameKind::Stream).data_bytes;
        }
        assert_eq!(stream_data, seen.0);
    }
}

/// A client Initial to `dcid` holding a PING and padding, packet number 0.
fn client_initial(dcid: &[u8; 8]) -> Vec<u8> {
    let mut p = vec![0xc0, 0, 0, 0, 1, 8];
    p.extend_from_slice(dcid);
    // no SCID, no token, Length 58 (1 + 41 + 16) in two bytes, packet number 0 in one
    p.extend_from_slice(&[0, 0, 0x40, 58, 0]);
    let header_len = p.len();
    p.push(0x01);
    p.resize(header_len + 41, 0);
    let (client, _) = keys::initial_secrets(dcid);
    Keys::new(Suite::Aes128Gcm, &client)
        .protect(0, header_len, &mut p)
        .expect("long enough for a sample");
    p
}
