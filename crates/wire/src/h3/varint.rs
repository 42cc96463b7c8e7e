//! QUIC variable-length integers (RFC 9000 §16): a 2-bit length prefix (1, 2, 4 or 8 bytes)
//! and 6, 14, 30 or 62 bits of value, big-endian.
//!
//! Decoding cannot fail, only run short: every byte string of the announced length is a value.
//! A value may be sent in more bytes than it needs, and is accepted so (RFC 9000 §16 leaves
//! minimal encoding to the few places that ask for it; HTTP/3 frames do not).

use bytes::BufMut;

/// The largest value a variable-length integer holds: 2^62 - 1.
pub const MAX: u64 = (1 << 62) - 1;

/// The bytes `value` takes encoded in the fewest bytes: 1, 2, 4 or 8.
///
/// # Panics
/// If `value` is above [`MAX`]: a caller's bug, not peer input.
pub fn encoded_len(value: u64) -> usize {
    match value {
        0..0x40 => 1,
        0x40..0x4000 => 2,
        0x4000..0x4000_0000 => 4,
        0x4000_0000..=MAX => 8,
        _ => panic!("{value} does not fit in a QUIC variable-length integer"),
    }
}

/// Appends `value` in the fewest bytes.
///
/// # Panics
/// If `value` is above [`MAX`]: a caller's bug, not peer input.
pub fn encode(out: &mut impl BufMut, value: u64) {
    match encoded_len(value) {
        1 => out.put_u8(value as u8),
        2 => out.put_u16(0x4000 | value as u16),
        4 => out.put_u32(0x8000_0000 | value as u32),
        _ => out.put_u64(0xc000_0000_0000_0000 | value),
    }
}

/// Decodes the integer at the start of `src`: its value and the bytes it took, or `None` if
/// `src` ends before the integer does.
pub fn decode(src: &[u8]) -> Option<(u64, usize)> {
    let first = *src.first()?;
    let len = 1usize << (first >> 6);
    let bytes = src.get(..len)?;
    let mut value = u64::from(first & 0x3f);
    for &b in &bytes[1..] {
        value = value << 8 | u64::from(b);
    }
    Some((value, len))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn encoded(value: u64) -> Vec<u8> {
        let mut out = Vec::new();
        encode(&mut out, value);
        out
    }

    /// RFC 9000 Appendix A.1's examples, both directions (the 2-byte encoding of 37 too).
    #[test]
    fn rfc_9000_examples() {
        let examples: [(&[u8], u64); 4] = [
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ];
        for (bytes, value) in examples {
            assert_eq!(decode(bytes), Some((value, bytes.len())));
            assert_eq!(encoded(value), bytes);
            assert_eq!(encoded_len(value), bytes.len());
        }
        assert_eq!(decode(&[0x40, 0x25]), Some((37, 2)));
    }

    #[test]
    fn lengths_change_at_the_boundaries() {
        for (value, len) in [
            (0, 1),
            (63, 1),
            (64, 2),
            (16_383, 2),
            (16_384, 4),
            ((1 << 30) - 1, 4),
            (1 << 30, 8),
            (MAX, 8),
        ] {
            assert_eq!(encoded_len(value), len, "{value}");
            assert_eq!(decode(&encoded(value)), Some((value, len)));
        }
    }

    #[test]
    fn short_input_is_none() {
        assert_eq!(decode(&[]), None);
        assert_eq!(decode(&[0x40]), None);
        assert_eq!(decode(&[0x9d, 0x7f, 0x3e]), None);
        assert_eq!(decode(&[0xc2, 0, 0, 0, 0, 0, 0]), None);
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn values_above_the_max_are_a_caller_bug() {
        encoded_len(MAX + 1);
    }

    proptest! {
        #[test]
        fn round_trip(value in 0..=MAX, tail in proptest::collection::vec(any::<u8>(), 0..4)) {
            let mut bytes = encoded(value);
            let len = bytes.len();
            bytes.extend_from_slice(&tail);
            prop_assert_eq!(decode(&bytes), Some((value, len)));
            prop_assert_eq!(decode(&bytes[..len - 1]), None);
        }
    }
}
