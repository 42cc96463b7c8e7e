//! HPACK, the header compression of HTTP/2 (RFC 7541), sans-IO: a [`Decoder`] for the header
//! blocks a peer sends and an [`Encoder`] for the ones we send, each owning one dynamic table
//! (§2.3.2, §4).
//!
//! A header block is decoded whole (HEADERS and CONTINUATION payloads already joined) and its
//! fields are handed to a callback borrowed from the block, the tables or the decoder's
//! scratch buffers, so decoding copies only what the dynamic table keeps and what Huffman
//! coding hides. Every length the peer controls is checked against a limit before anything is
//! decoded or copied for it: integers are capped ([`Error::IntegerOverflow`]), string
//! literals are checked against what is left of the caller's header-list budget
//! ([`Error::StringTooLong`]), and the peer's table size updates against the size we
//! announced ([`Error::TableSizeUpdate`]).
//!
//! Integers (§5.1) are accepted up to `u32::MAX` with at most five continuation bytes (five
//! times seven bits carry any `u32` past the largest prefix); anything longer or larger is
//! [`Error::IntegerOverflow`], decided before the value can overflow.

mod decoder;
mod encoder;
pub(crate) mod huffman;
mod table;

use std::fmt;

pub use decoder::Decoder;
pub use encoder::{Encoder, Strategy};

/// SETTINGS_HEADER_TABLE_SIZE's initial value (RFC 9113 §6.5.2): the dynamic table size both
/// ends start with, and the most this crate's [`Encoder`] ever uses.
pub const DEFAULT_TABLE_SIZE: usize = 4096;

/// The per-entry overhead of RFC 7541 §4.1 (also RFC 9113 §6.5.2's per-field overhead).
const ENTRY_OVERHEAD: usize = 32;

/// Most continuation bytes of one integer (§5.1); see the module documentation.
const MAX_INT_CONTINUATIONS: usize = 5;

/// One decoded header field, borrowed from the block, the table or the decoder's scratch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field<'a> {
    /// The field name, as sent (HPACK does not check its case or characters).
    pub name: &'a [u8],
    /// The field value, as sent.
    pub value: &'a [u8],
    /// Sent as a literal never indexed (RFC 7541 §6.2.3): an intermediary must forward it
    /// with the same representation.
    pub never_indexed: bool,
}

/// The size of a field for SETTINGS_MAX_HEADER_LIST_SIZE (RFC 9113 §6.5.2) and of a dynamic
/// table entry (RFC 7541 §4.1): name length + value length + 32.
pub fn field_size(name: &[u8], value: &[u8]) -> usize {
    name.len()
        .saturating_add(value.len())
        .saturating_add(ENTRY_OVERHEAD)
}

/// Why a header block could not be decoded.
///
/// Every variant but [`Error::HeaderListTooLarge`] is a malformed or hostile block: a
/// connection error of type COMPRESSION_ERROR in HTTP/2 (RFC 9113 §4.3). Decoding stops at
/// the first error, so after any error the decoder's dynamic table may differ from the peer's
/// and the decoder must not be used for further blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The block ends inside a field, an integer or a string literal.
    Truncated,
    /// An integer above `u32::MAX` or with more than five continuation bytes (§5.1).
    IntegerOverflow,
    /// An index of 0, or beyond the static and dynamic tables (§2.3.3); the index as sent.
    InvalidIndex(u32),
    /// A Huffman-coded string (§5.2) with an invalid code, the EOS symbol, more than 7 bits of
    /// padding, or padding that is not all ones.
    Huffman,
    /// A string literal longer than what is left of the header-list budget, refused from its
    /// declared length before anything is decoded or copied.
    StringTooLong,
    /// A dynamic table size update (§6.3) above the size we announced, or after the first
    /// field of the block (§4.2).
    TableSizeUpdate,
    /// The fields' sizes ([`field_size`]) add up to more than the caller's maximum.
    HeaderListTooLarge,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated => f.write_str("HPACK block ends inside a field"),
            Error::IntegerOverflow => f.write_str("HPACK integer exceeds 2^32 - 1"),
            Error::InvalidIndex(index) => write!(f, "HPACK index {index} is not in the tables"),
            Error::Huffman => f.write_str("invalid Huffman-coded HPACK string"),
            Error::StringTooLong => {
                f.write_str("HPACK string literal exceeds the header list size limit")
            }
            Error::TableSizeUpdate => f.write_str("invalid HPACK dynamic table size update"),
            Error::HeaderListTooLarge => f.write_str("header list exceeds the size limit"),
        }
    }
}

impl std::error::Error for Error {}

/// Decodes the integer (§5.1) at `block[*pos..]` with a `prefix_bits`-bit prefix (1..=8) and
/// advances `pos` past it.
pub(crate) fn decode_int(block: &[u8], pos: &mut usize, prefix_bits: u32) -> Result<u32, Error> {
    let max_prefix = (1u32 << prefix_bits) - 1;
    let Some(&first) = block.get(*pos) else {
        return Err(Error::Truncated);
    };
    *pos += 1;
    let prefix = u32::from(first) & max_prefix;
    if prefix < max_prefix {
        return Ok(prefix);
    }
    // At most 255 + 127 * (2^0 + 2^7 + ... + 2^28) < 2^36: no overflow in a u64.
    let mut value = u64::from(prefix);
    let mut shift = 0;
    for _ in 0..MAX_INT_CONTINUATIONS {
        let Some(&byte) = block.get(*pos) else {
            return Err(Error::Truncated);
        };
        *pos += 1;
        value += u64::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return u32::try_from(value).map_err(|_| Error::IntegerOverflow);
        }
    }
    Err(Error::IntegerOverflow)
}

/// Appends `value` as an integer (§5.1) with a `prefix_bits`-bit prefix (1..=8), the first
/// byte's bits above the prefix set to `flags`.
pub(crate) fn encode_int(out: &mut Vec<u8>, flags: u8, prefix_bits: u32, value: usize) {
    let max_prefix = (1usize << prefix_bits) - 1;
    if value < max_prefix {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | max_prefix as u8);
    let mut rest = value - max_prefix;
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
}

#[cfg(test)]
mod test_util;

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all_int(bytes: &[u8], prefix_bits: u32) -> Result<(u32, usize), Error> {
        let mut pos = 0;
        decode_int(bytes, &mut pos, prefix_bits).map(|v| (v, pos))
    }

    fn encoded(flags: u8, prefix_bits: u32, value: usize) -> Vec<u8> {
        let mut out = Vec::new();
        encode_int(&mut out, flags, prefix_bits, value);
        out
    }

    /// RFC 7541 C.1.1-C.1.3, both directions.
    #[test]
    fn rfc_integer_examples() {
        assert_eq!(encoded(0, 5, 10), [0b0000_1010]);
        assert_eq!(encoded(0, 5, 1337), [0b0001_1111, 0b1001_1010, 0b0000_1010]);
        assert_eq!(encoded(0, 8, 42), [42]);
        // the bits above the prefix are not part of the value
        assert_eq!(decode_all_int(&[0b1110_1010], 5), Ok((10, 1)));
        assert_eq!(decode_all_int(&[0xff, 0x9a, 0x0a, 0x77], 5), Ok((1337, 3)));
        assert_eq!(decode_all_int(&[42], 8), Ok((42, 1)));
    }

    #[test]
    fn integers_round_trip_at_the_edges() {
        for prefix_bits in 1..=8 {
            let max_prefix = (1usize << prefix_bits) - 1;
            for value in [
                0,
                max_prefix - 1,
                max_prefix,
                max_prefix + 1,
                max_prefix + 127,
                max_prefix + 128,
                1 << 20,
                u32::MAX as usize,
            ] {
                let bytes = encoded(0, prefix_bits, value);
                assert_eq!(
                    decode_all_int(&bytes, prefix_bits),
                    Ok((value as u32, bytes.len())),
                    "{value} with a {prefix_bits}-bit prefix"
                );
            }
        }
    }

    #[test]
    fn integer_overflow_and_truncation_are_refused() {
        // 2^32 does not fit
        assert_eq!(
            decode_all_int(&encoded(0, 5, 1 << 32), 5),
            Err(Error::IntegerOverflow)
        );
        // a long run of continuation bytes stops after the fifth
        let mut run = vec![0xff; 10_000];
        assert_eq!(decode_all_int(&run, 7), Err(Error::IntegerOverflow));
        // a sixth continuation byte is refused even when it would only add zeros
        run = vec![0x1f, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00];
        assert_eq!(decode_all_int(&run, 5), Err(Error::IntegerOverflow));
        assert_eq!(decode_all_int(&[0x1f, 0x9a], 5), Err(Error::Truncated));
        assert_eq!(decode_all_int(&[], 5), Err(Error::Truncated));
    }

    #[test]
    fn field_size_counts_the_overhead() {
        assert_eq!(field_size(b":authority", b"www.example.com"), 57);
        assert_eq!(field_size(b"", b""), 32);
    }

    #[test]
    fn errors_display() {
        assert_eq!(
            Error::InvalidIndex(70).to_string(),
            "HPACK index 70 is not in the tables"
        );
    }
}
