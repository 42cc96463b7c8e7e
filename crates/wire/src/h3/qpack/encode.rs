//! Encoded field sections (RFC 9204 §4.5) with the static table only: the prefix 0x00 0x00,
//! then per field line an indexed line, a literal with a static name reference, or a literal
//! with a literal name; a string is Huffman-coded when that is shorter.

use super::QpackCounts;
use super::static_table::{self, Match};
use crate::h2::hpack::{encode_int, huffman};

/// Appends the encoded field section of `fields` (names as they go on the wire: lowercase for
/// HTTP/3) to `out`, and counts it. No line refers to the dynamic table and none is marked
/// never-indexed (no intermediary could index it: there is no table).
pub fn encode_section<'a>(
    fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
    out: &mut Vec<u8>,
    counts: &mut QpackCounts,
) {
    let start = out.len();
    // Required Insert Count 0; Sign 0, Delta Base 0
    out.extend_from_slice(&[0x00, 0x00]);
    let mut c = QpackCounts {
        sections: 1,
        prefix_bytes: 2,
        ..QpackCounts::default()
    };
    for (name, value) in fields {
        c.field_bytes += (name.len() + value.len()) as u64;
        match static_table::find(name, value) {
            Match::Field(index) => {
                // 1 T=1 index(6+)
                encode_int(out, 0xc0, 6, usize::from(index));
                c.indexed_lines += 1;
            }
            Match::Name(index) => {
                // 0 1 N=0 T=1 index(4+)
                encode_int(out, 0x50, 4, usize::from(index));
                c.value_bytes += string(out, 0x00, 7, value, &mut c.huffman_bytes);
                c.name_ref_lines += 1;
            }
            Match::None => {
                // 0 0 1 N=0 H length(3+)
                c.name_bytes += string(out, 0x20, 3, name, &mut c.huffman_bytes);
                c.value_bytes += string(out, 0x00, 7, value, &mut c.huffman_bytes);
                c.literal_name_lines += 1;
            }
        }
    }
    c.section_bytes = (out.len() - start) as u64;
    *counts += c;
}

/// Appends the string literal `s` (§4.1.2) after the bits `flags`, with its H bit just above
/// a `prefix_bits`-bit length; returns the string's octets as sent, adding them to `huffman`
/// when Huffman-coded.
fn string(out: &mut Vec<u8>, flags: u8, prefix_bits: u32, s: &[u8], huffman: &mut u64) -> u64 {
    let (len, coded) = huffman::literal(out, flags, prefix_bits, s);
    if coded {
        *huffman += len as u64;
    }
    len as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(fields: &[(&[u8], &[u8])]) -> (Vec<u8>, QpackCounts) {
        let mut out = Vec::new();
        let mut counts = QpackCounts::default();
        encode_section(fields.iter().copied(), &mut out, &mut counts);
        (out, counts)
    }

    /// RFC 9204 Appendix B.1, the one example without the dynamic table: `:path=/index.html`
    /// as a literal with a static name reference (index 1), the value not Huffman-coded.
    /// Huffman coding would take 8 bytes for its 11, so our encoder writes the shorter form;
    /// the RFC's bytes are checked by the decoder's test.
    #[test]
    fn rfc_9204_b1_name_reference() {
        let (out, counts) = encoded(&[(b":path", b"/index.html")]);
        // 0x51 = 01 N=0 T=1 index 1; then H=1, length 8, the Huffman code of "/index.html"
        assert_eq!(&out[..3], [0x00, 0x00, 0x51]);
        assert_eq!(out[3], 0x80 | 8);
        assert_eq!(out.len(), 4 + 8);
        assert_eq!(counts.name_ref_lines, 1);
        assert_eq!((counts.value_bytes, counts.huffman_bytes), (8, 8));
    }

    #[test]
    fn a_request_uses_each_representation() {
        let (out, counts) = encoded(&[
            (b":method", b"GET"),
            (b":scheme", b"https"),
            (b":authority", b"a"),
            (b"x-b", b"c"),
        ]);
        assert_eq!(
            out,
            [
                0x00,
                0x00,      // prefix
                0xc0 | 17, // :method GET
                0xc0 | 23, // :scheme https
                0x50,
                0x01,
                b'a', // :authority, index 0, value "a" raw
                0x23,
                b'x',
                b'-',
                b'b',
                0x01,
                b'c', // literal name, raw
            ]
        );
        assert_eq!(
            counts,
            QpackCounts {
                sections: 1,
                section_bytes: out.len() as u64,
                prefix_bytes: 2,
                indexed_lines: 2,
                name_ref_lines: 1,
                literal_name_lines: 1,
                name_bytes: 3,
                value_bytes: 2,
                huffman_bytes: 0,
                field_bytes: 10 + 12 + 11 + 4,
            }
        );
    }

    #[test]
    fn long_indices_and_lengths_use_continuation_bytes() {
        // x-frame-options sameorigin is index 98: 63 + 35
        let (out, _) = encoded(&[(b"x-frame-options", b"sameorigin")]);
        assert_eq!(out, [0, 0, 0xff, 35]);
        // a literal name of 7 bytes or more overflows the 3-bit prefix; Huffman would not
        // shorten these
        let name = b"~~~~~~~~~";
        let (out, _) = encoded(&[(name, b"")]);
        assert_eq!(&out[2..4], [0x27, 2]);
        assert_eq!(&out[4..13], name);
        assert_eq!(out[13], 0);
    }
}
