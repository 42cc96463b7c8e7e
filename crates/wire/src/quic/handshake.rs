//! What the server's TLS handshake was, read from its Handshake-level CRYPTO frames as the
//! sniffer hands them over: a full handshake carries a Certificate message, a resumed one
//! (a PSK from an earlier session) goes from EncryptedExtensions to Finished without one.

use super::Dir;
use super::frames::StreamVisitor;
use super::header::PacketType;

/// TLS handshake message types (RFC 8446 §4).
const CERTIFICATE: u8 = 11;
const FINISHED: u8 = 20;

/// The largest handshake message the scan skips over: a certificate chain is far below it.
const MAX_MESSAGE: u32 = 1 << 20;

/// Follows the server's Handshake-level CRYPTO stream in order (data arriving out of order or
/// beyond what was seen makes the answer unknown) and tells whether a Certificate came before
/// the server's Finished.
#[derive(Debug, Default, Clone)]
pub struct HandshakeScan {
    /// the stream offset read up to
    next: u64,
    /// bytes of the current message header collected (type + 24-bit length)
    head: [u8; 4],
    have: usize,
    /// bytes of the current message body still to skip
    skip: u32,
    certificate: bool,
    finished: bool,
    lost: bool,
}

impl HandshakeScan {
    pub fn new() -> HandshakeScan {
        HandshakeScan::default()
    }

    /// `Some(true)`: the server's Finished came without a Certificate (a resumed session);
    /// `Some(false)`: with one; `None`: not seen (yet), or the stream could not be followed.
    pub fn resumed(&self) -> Option<bool> {
        (self.finished && !self.lost).then_some(!self.certificate)
    }

    fn feed(&mut self, offset: u64, data: &[u8]) {
        if self.finished || self.lost {
            return;
        }
        if offset > self.next {
            // a gap: the scan cannot resynchronise on message boundaries
            self.lost = true;
            return;
        }
        // data seen before (a retransmission) is skipped
        let seen = (self.next - offset) as usize;
        if seen >= data.len() {
            return;
        }
        let mut rest = &data[seen..];
        self.next += rest.len() as u64;
        while !rest.is_empty() && !self.finished {
            if self.skip > 0 {
                let n = (self.skip as usize).min(rest.len());
                self.skip -= n as u32;
                rest = &rest[n..];
                continue;
            }
            let n = (4 - self.have).min(rest.len());
            self.head[self.have..self.have + n].copy_from_slice(&rest[..n]);
            self.have += n;
            rest = &rest[n..];
            if self.have < 4 {
                return;
            }
            self.have = 0;
            let len = u32::from_be_bytes([0, self.head[1], self.head[2], self.head[3]]);
            if len > MAX_MESSAGE {
                self.lost = true;
                return;
            }
            match self.head[0] {
                CERTIFICATE => self.certificate = true,
                FINISHED => self.finished = true,
                _ => {}
            }
            self.skip = len;
        }
    }
}

impl StreamVisitor for HandshakeScan {
    fn crypto(&mut self, dir: Dir, packet: PacketType, offset: u64, data: &[u8]) {
        if dir == Dir::In && packet == PacketType::Handshake {
            self.feed(offset, data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(ty: u8, len: usize) -> Vec<u8> {
        let mut m = vec![ty, 0, (len >> 8) as u8, len as u8];
        m.resize(4 + len, 0xaa);
        m
    }

    #[test]
    fn a_certificate_before_finished_is_a_full_handshake_in_any_split() {
        // EncryptedExtensions, Certificate, CertificateVerify, Finished
        let stream: Vec<u8> = [msg(8, 10), msg(11, 300), msg(15, 72), msg(20, 32)].concat();
        for cut in [1, 3, 4, 5, 100, 300, stream.len() - 1] {
            let mut s = HandshakeScan::new();
            s.crypto(Dir::In, PacketType::Handshake, 0, &stream[..cut]);
            // known once the Finished message's header is in (at byte 398)
            let known = (cut >= 398).then_some(false);
            assert_eq!(s.resumed(), known, "cut {cut}");
            // a retransmission of the first part, then the rest
            s.crypto(Dir::In, PacketType::Handshake, 0, &stream[..cut]);
            s.crypto(Dir::In, PacketType::Handshake, cut as u64, &stream[cut..]);
            assert_eq!(s.resumed(), Some(false), "cut {cut}");
        }
    }

    #[test]
    fn finished_without_a_certificate_is_a_resumed_session() {
        let stream: Vec<u8> = [msg(8, 6), msg(20, 32)].concat();
        let mut s = HandshakeScan::new();
        // other levels and our own direction are not the server's handshake flight
        s.crypto(Dir::In, PacketType::Initial, 0, &msg(11, 5));
        s.crypto(Dir::Out, PacketType::Handshake, 0, &msg(11, 5));
        s.crypto(Dir::In, PacketType::Handshake, 0, &stream);
        assert_eq!(s.resumed(), Some(true));
    }

    #[test]
    fn a_gap_or_a_huge_length_makes_it_unknown() {
        let mut s = HandshakeScan::new();
        s.crypto(Dir::In, PacketType::Handshake, 10, &msg(20, 32));
        assert_eq!(s.resumed(), None);
        let mut s = HandshakeScan::new();
        s.crypto(Dir::In, PacketType::Handshake, 0, &[8, 0xff, 0xff, 0xff]);
        s.crypto(Dir::In, PacketType::Handshake, 4, &msg(20, 32));
        assert_eq!(s.resumed(), None);
    }
}
