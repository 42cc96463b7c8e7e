//! QUIC v1 packet headers (RFC 9000 §17) read before header protection is removed: each
//! packet's type, connection IDs and extent in its datagram, and packet number decoding (§A.3).

use super::Error;
use crate::h3::varint;

/// QUIC version 1.
pub const VERSION_1: u32 = 1;
/// The longest connection ID QUIC v1 allows (RFC 9000 §17.2).
pub const MAX_CID_LEN: usize = 20;
/// The AEAD tag of every protected packet: 16 bytes for every QUIC v1 suite.
pub const TAG_LEN: usize = 16;
/// The header protection sample (RFC 9001 §5.4.2).
pub const SAMPLE_LEN: usize = 16;
/// The key phase bit of a short header's first byte (RFC 9000 §17.3.1).
pub const KEY_PHASE: u8 = 0x04;

/// A packet's type (RFC 9000 §17).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PacketType {
    /// Initial (long header type 0).
    Initial = 0,
    /// 0-RTT (long header type 1).
    ZeroRtt = 1,
    /// Handshake (long header type 2).
    Handshake = 2,
    /// Retry (long header type 3).
    Retry = 3,
    /// Version Negotiation (a long header of version 0).
    VersionNegotiation = 4,
    /// 1-RTT (short header).
    OneRtt = 5,
}

impl PacketType {
    /// Every type, in the order of `QuicCounts::packets`.
    pub const ALL: [PacketType; 6] = [
        PacketType::Initial,
        PacketType::ZeroRtt,
        PacketType::Handshake,
        PacketType::Retry,
        PacketType::VersionNegotiation,
        PacketType::OneRtt,
    ];

    /// The type's name in RFC 9000.
    pub fn name(self) -> &'static str {
        match self {
            PacketType::Initial => "Initial",
            PacketType::ZeroRtt => "0-RTT",
            PacketType::Handshake => "Handshake",
            PacketType::Retry => "Retry",
            PacketType::VersionNegotiation => "Version Negotiation",
            PacketType::OneRtt => "1-RTT",
        }
    }

    /// The packet number space of a protected type: Initial 0, Handshake 1, application
    /// data (0-RTT and 1-RTT) 2.
    pub fn space(self) -> usize {
        match self {
            PacketType::Initial => 0,
            PacketType::Handshake => 1,
            _ => 2,
        }
    }
}

/// Where a packet lies in its datagram, read from its header as it is on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout<'a> {
    /// The packet's type.
    pub ty: PacketType,
    /// Its Destination Connection ID.
    pub dcid: &'a [u8],
    /// Its Source Connection ID (empty in a short header).
    pub scid: &'a [u8],
    /// Where the packet number starts, in a protected packet; in a Retry, where the integrity
    /// tag starts, and in a Version Negotiation packet its length: the header's end either way.
    pub pn_offset: usize,
    /// The packet's bytes: a long header's Length field or the datagram's end.
    pub len: usize,
}

impl Layout<'_> {
    /// Whether the packet's payload is protected (all but Retry and Version Negotiation).
    pub fn is_protected(&self) -> bool {
        !matches!(self.ty, PacketType::Retry | PacketType::VersionNegotiation)
    }
}

/// A reader of header fields that stops at the end of its bytes.
struct Fields<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    fn take(&mut self, n: usize, context: &'static str) -> Result<&'a [u8], Error> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.buf.len())
            .ok_or(Error::malformed(context))?;
        let bytes = &self.buf[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn cid(&mut self, context: &'static str) -> Result<&'a [u8], Error> {
        let len = self.take(1, context)?[0];
        self.take(usize::from(len), context)
    }

    fn varint(&mut self, context: &'static str) -> Result<u64, Error> {
        let (value, n) = varint::decode(&self.buf[self.pos..]).ok_or(Error::malformed(context))?;
        self.pos += n;
        Ok(value)
    }
}

/// Reads the header of the packet that starts `datagram`. `short_dcid_len` is the
/// Destination Connection ID length of short headers in this direction, if known yet.
///
/// A short header runs to the datagram's end, a long one as far as its Length field says
/// (Retry and Version Negotiation to the datagram's end). Versions other than 1 (and 0, for
/// Version Negotiation) cannot be read past their connection IDs and are refused.
pub fn parse(datagram: &[u8], short_dcid_len: Option<usize>) -> Result<Layout<'_>, Error> {
    let Some(&first) = datagram.first() else {
        return Err(Error::malformed("empty packet"));
    };
    if first & 0x80 == 0 {
        let n = short_dcid_len.ok_or(Error::no_keys(
            "short header before its connection ID length is known",
        ))?;
        let dcid = datagram
            .get(1..1 + n)
            .ok_or(Error::malformed("short header cut short"))?;
        return Ok(Layout {
            ty: PacketType::OneRtt,
            dcid,
            scid: &[],
            pn_offset: 1 + n,
            len: datagram.len(),
        });
    }
    let mut f = Fields {
        buf: datagram,
        pos: 1,
    };
    let version = f.take(4, "long header cut short")?;
    let version = u32::from_be_bytes([version[0], version[1], version[2], version[3]]);
    let dcid = f.cid("long header cut short in a connection ID")?;
    let scid = f.cid("long header cut short in a connection ID")?;
    if version == 0 {
        return Ok(Layout {
            ty: PacketType::VersionNegotiation,
            dcid,
            scid,
            pn_offset: datagram.len(),
            len: datagram.len(),
        });
    }
    if version != VERSION_1 {
        return Err(Error::malformed("a QUIC version other than 1"));
    }
    if dcid.len() > MAX_CID_LEN || scid.len() > MAX_CID_LEN {
        return Err(Error::malformed("connection ID over 20 bytes"));
    }
    let ty = [
        PacketType::Initial,
        PacketType::ZeroRtt,
        PacketType::Handshake,
        PacketType::Retry,
    ][usize::from(first >> 4 & 3)];
    if ty == PacketType::Retry {
        let pn_offset = datagram
            .len()
            .checked_sub(TAG_LEN)
            .filter(|&tag_at| tag_at >= f.pos)
            .ok_or(Error::malformed("Retry shorter than its integrity tag"))?;
        return Ok(Layout {
            ty,
            dcid,
            scid,
            pn_offset,
            len: datagram.len(),
        });
    }
    if ty == PacketType::Initial {
        let token_len = f.varint("Initial cut short in its token length")?;
        let token_len = usize::try_from(token_len).unwrap_or(usize::MAX);
        f.take(token_len, "Initial cut short in its token")?;
    }
    let length = f.varint("long header cut short in its length")?;
    let pn_offset = f.pos;
    let length = usize::try_from(length).unwrap_or(usize::MAX);
    f.take(length, "packet longer than its datagram")?;
    Ok(Layout {
        ty,
        dcid,
        scid,
        pn_offset,
        len: f.pos,
    })
}

/// The full packet number of a truncated one of `pn_len` bytes, against the largest packet
/// number received so far in its space (RFC 9000 §A.3; `None`: none yet).
pub fn decode_pn(largest: Option<u64>, truncated: u64, pn_len: usize) -> u64 {
    let expected = largest.map_or(0, |l| l.saturating_add(1));
    let win = 1u64 << (8 * pn_len.clamp(1, 4));
    let hwin = win / 2;
    let candidate = (expected & !(win - 1)) | (truncated & (win - 1));
    if expected >= hwin && candidate <= expected - hwin && candidate < (1 << 62) - win {
        candidate + win
    } else if candidate > expected.saturating_add(hwin) && candidate >= win {
        candidate - win
    } else {
        candidate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 9000 §A.3's example, and the edges of the window.
    #[test]
    fn packet_numbers_decode_against_the_largest() {
        assert_eq!(decode_pn(Some(0xa82f30ea), 0x9b32, 2), 0xa82f9b32);
        assert_eq!(decode_pn(None, 2, 4), 2);
        assert_eq!(decode_pn(None, 0, 1), 0);
        assert_eq!(decode_pn(Some(654_360_563), 0xbff4, 3), 654_360_564);
        // just past a wrap of the one-byte window, and a late packet from before it
        assert_eq!(decode_pn(Some(0xfe), 0x01, 1), 0x101);
        assert_eq!(decode_pn(Some(0x101), 0xfe, 1), 0xfe);
        assert_eq!(decode_pn(Some((1 << 62) - 1), 0xff, 1), (1 << 62) - 1);
    }

    #[test]
    fn headers_are_read_or_refused() {
        // a short header needs its DCID length
        assert_eq!(
            parse(&[0x40, 1, 2], None).unwrap_err().kind,
            super::super::ErrorKind::NoKeys
        );
        let short = parse(&[0x40, 1, 2, 3], Some(2)).unwrap();
        assert_eq!(
            (short.dcid, short.pn_offset, short.len),
            (&[1, 2][..], 3, 4)
        );
        // Initial: version 1, DCID 1 byte, SCID 0, token 1 byte, Length 2, then 2 bytes
        let initial = [0xc0, 0, 0, 0, 1, 1, 9, 0, 1, 7, 2, 0xaa, 0xbb, 0xcc];
        let l = parse(&initial, None).unwrap();
        assert_eq!(
            (l.ty, l.dcid, l.pn_offset, l.len),
            (PacketType::Initial, &[9][..], 11, 13)
        );
        assert!(parse(&initial[..12], None).is_err());
        // an unknown version
        assert!(parse(&[0xc0, 0, 0, 0, 2, 0, 0, 0], None).is_err());
        // Version Negotiation takes the datagram
        let vn = parse(&[0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], None).unwrap();
        assert_eq!((vn.ty, vn.len), (PacketType::VersionNegotiation, 11));
    }
}
