//! The walk over a decrypted packet payload's frames (RFC 9000 §19): each frame counted by kind
//! with its bytes, STREAM frames handed to a [`StreamVisitor`].

use super::Dir;
use super::counts::{FRAME_KINDS, FrameCount, FrameKind};
use super::header::PacketType;
use crate::h3::varint;

/// Sees the STREAM frames of the decrypted packets, e.g. to count the HTTP/3 bytes inside
/// the streams. The default does nothing; the walk allocates nothing for it.
pub trait StreamVisitor {
    /// A STREAM frame of stream `id` carrying `data` at `offset`, `fin` if it ends the
    /// stream, in a packet of direction `dir`. Retransmitted data comes again.
    fn stream(&mut self, dir: Dir, id: u64, offset: u64, data: &[u8], fin: bool) {
        let _ = (dir, id, offset, data, fin);
    }

    /// A CRYPTO frame carrying `data` at `offset` of the TLS handshake stream of the packet's
    /// level (`packet`: its type), in direction `dir`.
    fn crypto(&mut self, dir: Dir, packet: PacketType, offset: u64, data: &[u8]) {
        let _ = (dir, packet, offset, data);
    }
}

/// The visitor that looks at nothing.
impl StreamVisitor for () {}

/// A reader of frame fields; `None` when a field runs past the payload.
struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    fn varint(&mut self) -> Option<u64> {
        let (value, n) = varint::decode(&self.buf[self.pos..])?;
        self.pos += n;
        Some(value)
    }

    fn varints(&mut self, n: usize) -> Option<()> {
        for _ in 0..n {
            self.varint()?;
        }
        Some(())
    }

    fn take(&mut self, n: u64) -> Option<&'a [u8]> {
        let n = usize::try_from(n).ok()?;
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len())?;
        let bytes = &self.buf[self.pos..end];
        self.pos = end;
        Some(bytes)
    }

    fn rest(&mut self) -> &'a [u8] {
        let bytes = &self.buf[self.pos..];
        self.pos = self.buf.len();
        bytes
    }

    /// A length varint and the bytes it counts.
    fn with_len(&mut self) -> Option<&'a [u8]> {
        let len = self.varint()?;
        self.take(len)
    }
}

/// Counts every frame of `payload` into `frames` (indexed by `FrameKind as usize`), handing
/// STREAM frames to `visitor`. Consecutive PADDING bytes are one run. The first frame of a
/// type it does not know, or that breaks its layout, ends the walk: the rest of the payload is
/// one `Unknown`. Every payload byte is counted once.
pub fn walk(
    payload: &[u8],
    frames: &mut [FrameCount; FRAME_KINDS],
    dir: Dir,
    packet: PacketType,
    visitor: &mut impl StreamVisitor,
) {
    let mut pos = 0;
    while pos < payload.len() {
        let rest = &payload[pos..];
        if rest[0] == 0 {
            let run = rest.iter().take_while(|&&b| b == 0).count();
            frames[FrameKind::Padding as usize].add_frame(run as u64, 0);
            pos += run;
            continue;
        }
        match frame(rest, dir, packet, visitor) {
            Some((kind, len, data)) => {
                frames[kind as usize].add_frame(len as u64, data as u64);
                pos += len;
            }
            None => {
                frames[FrameKind::Unknown as usize].add_frame(rest.len() as u64, 0);
                return;
            }
        }
    }
}

/// The frame that starts `buf`: its kind, its bytes and the data bytes it carries.
fn frame(
    buf: &[u8],
    dir: Dir,
    packet: PacketType,
    visitor: &mut impl StreamVisitor,
) -> Option<(FrameKind, usize, usize)> {
    let mut f = Fields { buf, pos: 0 };
    let ty = f.varint()?;
    let kind = FrameKind::of(ty);
    let mut data = 0;
    match ty {
        // PING, HANDSHAKE_DONE, IMMEDIATE_ACK
        0x01 | 0x1e | 0x1f => {}
        0x02 | 0x03 => {
            // largest, delay, range count, first range, then (gap, length) per range; each
            // range takes at least two bytes, so a forged count ends at the payload's end
            f.varints(2)?;
            let ranges = f.varint()?;
            f.varint()?;
            for _ in 0..ranges {
                f.varints(2)?;
            }
            if ty == 0x03 {
                f.varints(3)?;
            }
        }
        // RESET_STREAM: id, error, final size
        0x04 => f.varints(3)?,
        // STOP_SENDING, MAX_STREAM_DATA, STREAM_DATA_BLOCKED: id and a value
        0x05 | 0x11 | 0x15 => f.varints(2)?,
        0x06 => {
            let offset = f.varint()?;
            let bytes = f.with_len()?;
            data = bytes.len();
            visitor.crypto(dir, packet, offset, bytes);
        }
        0x07 => {
            f.with_len()?;
        }
        0x08..=0x0f => {
            let id = f.varint()?;
            let offset = if ty & 0x04 != 0 { f.varint()? } else { 0 };
            let bytes = if ty & 0x02 != 0 {
                f.with_len()?
            } else {
                f.rest()
            };
            data = bytes.len();
            visitor.stream(dir, id, offset, bytes, ty & 0x01 != 0);
        }
        // MAX_DATA, MAX_STREAMS, DATA_BLOCKED, STREAMS_BLOCKED, RETIRE_CONNECTION_ID
        0x10 | 0x12 | 0x13 | 0x14 | 0x16 | 0x17 | 0x19 => f.varints(1)?,
        0x18 => {
            f.varints(2)?;
            let len = f.take(1)?[0];
            if len == 0 || usize::from(len) > super::header::MAX_CID_LEN {
                return None;
            }
            f.take(u64::from(len) + 16)?;
        }
        // PATH_CHALLENGE, PATH_RESPONSE
        0x1a | 0x1b => {
            f.take(8)?;
        }
        0x1c => {
            f.varints(2)?;
            f.with_len()?;
        }
        0x1d => {
            f.varint()?;
            f.with_len()?;
        }
        0x30 => data = f.rest().len(),
        0x31 => data = f.with_len()?.len(),
        // ACK_FREQUENCY: sequence, ack-eliciting threshold, max ack delay, reordering threshold
        0xaf => f.varints(4)?,
        _ => return None,
    }
    Some((kind, f.pos, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(payload: &[u8]) -> [FrameCount; FRAME_KINDS] {
        let mut frames = [FrameCount::default(); FRAME_KINDS];
        walk(payload, &mut frames, Dir::Out, PacketType::OneRtt, &mut ());
        frames
    }

    fn fc(count: u64, bytes: u64, data_bytes: u64) -> FrameCount {
        FrameCount {
            count,
            bytes,
            data_bytes,
        }
    }

    #[derive(Default)]
    struct Seen(Vec<(u64, u64, Vec<u8>, bool)>);

    impl StreamVisitor for Seen {
        fn stream(&mut self, _: Dir, id: u64, offset: u64, data: &[u8], fin: bool) {
            self.0.push((id, offset, data.to_vec(), fin));
        }
    }

    #[test]
    fn every_frame_is_counted_with_its_bytes() {
        let mut p = vec![0, 0, 0, 0x01]; // a padding run, PING
        p.extend([0x03, 5, 0, 1, 0, 1, 1, 7, 8, 9]); // ACK with ECN, one more range
        p.extend([0x06, 0, 3, b'a', b'b', b'c']); // CRYPTO
        p.extend([0x0e, 4, 0x40, 0x80, 2, b'h', b'i']); // STREAM with OFF and LEN
        p.extend([0x18, 1, 0, 2, 0xaa, 0xbb]);
        p.extend([0x55; 16]); // NEW_CONNECTION_ID
        p.extend([0x40, 0xaf, 1, 2, 0x40, 25, 3]); // ACK_FREQUENCY
        p.extend([0x1f, 0x1e, 0x1d, 0, 1, b'x']); // IMMEDIATE_ACK, HANDSHAKE_DONE, CLOSE
        p.extend([0x31, 2, 9, 9, 0, 0]); // DATAGRAM, padding
        p.extend([0x09, 8, b'e', b'n', b'd']); // STREAM to the end, FIN
        let mut seen = Seen::default();
        let mut frames = [FrameCount::default(); FRAME_KINDS];
        walk(&p, &mut frames, Dir::In, PacketType::OneRtt, &mut seen);
        let get = |k: FrameKind| frames[k as usize];
        assert_eq!(get(FrameKind::Padding), fc(2, 5, 0));
        assert_eq!(get(FrameKind::Ping), fc(1, 1, 0));
        assert_eq!(get(FrameKind::Ack), fc(1, 10, 0));
        assert_eq!(get(FrameKind::Crypto), fc(1, 6, 3));
        assert_eq!(get(FrameKind::Stream), fc(2, 12, 5));
        assert_eq!(get(FrameKind::NewConnectionId), fc(1, 22, 0));
        assert_eq!(get(FrameKind::AckFrequency), fc(1, 7, 0));
        assert_eq!(get(FrameKind::ImmediateAck), fc(1, 1, 0));
        assert_eq!(get(FrameKind::HandshakeDone), fc(1, 1, 0));
        assert_eq!(get(FrameKind::ConnectionClose), fc(1, 4, 0));
        assert_eq!(get(FrameKind::Datagram), fc(1, 4, 2));
        assert_eq!(get(FrameKind::Unknown), fc(0, 0, 0));
        let sum: u64 = frames.iter().map(|f| f.bytes).sum();
        assert_eq!(sum, p.len() as u64);
        assert_eq!(
            seen.0,
            vec![
                (4, 128, b"hi".to_vec(), false),
                (8, 0, b"end".to_vec(), true)
            ]
        );
    }

    #[test]
    fn unknown_and_broken_frames_end_the_walk() {
        // an unknown type after a PING
        let f = counts(&[0x01, 0x21, 1, 2, 3]);
        assert_eq!(f[FrameKind::Ping as usize], fc(1, 1, 0));
        assert_eq!(f[FrameKind::Unknown as usize], fc(1, 4, 0));
        // a CRYPTO frame longer than the payload
        let f = counts(&[0x06, 0, 9, 1]);
        assert_eq!(f[FrameKind::Unknown as usize], fc(1, 4, 0));
        assert_eq!(f[FrameKind::Crypto as usize], fc(0, 0, 0));
        // an ACK announcing 2^62 ranges
        let f = counts(&[
            0x02, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 1, 1,
        ]);
        assert_eq!(f[FrameKind::Unknown as usize], fc(1, 14, 0));
        // a NEW_CONNECTION_ID of a 21-byte ID
        let f = counts(&[0x18, 0, 0, 21]);
        assert_eq!(f[FrameKind::Unknown as usize], fc(1, 4, 0));
    }
}
