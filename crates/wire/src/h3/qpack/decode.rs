//! Decoding encoded field sections (RFC 9204 §4.5) for a decoder that allowed no dynamic
//! table: every representation is parsed, and any reference to the dynamic table is
//! QPACK_DECOMPRESSION_FAILED.
//!
//! A section is decoded whole (one HEADERS payload) and each field handed to a callback,
//! borrowed from the section, the static table or the decoder's scratch buffers (for Huffman-
//! coded strings). The fields' sizes (name + value + 32, RFC 9114 §4.2.2) are held to the
//! caller's limit, the SETTINGS_MAX_FIELD_SECTION_SIZE it sent; a string is refused from its
//! declared length before it is decoded. Going over the limit is H3_EXCESSIVE_LOAD; every
//! other error is QPACK_DECOMPRESSION_FAILED.

use super::{QpackCounts, static_table};
use crate::h2::hpack::{self, decode_int, field_size, huffman};
use crate::h3::{Code, Error};

/// The per-field overhead of a field section's size (RFC 9114 §4.2.2).
const FIELD_OVERHEAD: u64 = 32;

/// A field section decoder: scratch buffers for Huffman-coded names and values, reused.
#[derive(Debug, Default)]
pub struct Decoder {
    name: Vec<u8>,
    value: Vec<u8>,
}

/// Where a decoded string is.
enum Str {
    /// Raw, in the section at this range.
    Block(usize, usize),
    /// Huffman-decoded into a scratch buffer (the name's or the value's).
    Scratch,
    /// A static table entry's.
    Static(&'static [u8]),
}

fn failed(context: &'static str) -> Error {
    Error::new(Code::QpackDecompressionFailed, context)
}

fn too_large() -> Error {
    Error::new(
        Code::ExcessiveLoad,
        "field section over MAX_FIELD_SECTION_SIZE",
    )
}

/// An HPACK primitive's error as QPACK's (§4.1 shares them).
fn primitive(e: hpack::Error) -> Error {
    match e {
        hpack::Error::StringTooLong => too_large(),
        hpack::Error::Huffman => failed("invalid Huffman-coded string"),
        hpack::Error::IntegerOverflow => failed("integer above 2^32 - 1"),
        _ => failed("field section ends inside a representation"),
    }
}

impl Decoder {
    /// A decoder with empty scratch buffers.
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Decodes the field section `block`, calling `emit(name, value)` for each field line in
    /// order, and adds what it was to `counts` (only if it decodes). Fields are emitted before
    /// a later line fails; the caller discards them then.
    pub fn decode(
        &mut self,
        block: &[u8],
        max_size: u64,
        counts: &mut QpackCounts,
        mut emit: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), Error> {
        let mut pos = 0;
        let insert_count = decode_int(block, &mut pos, 8).map_err(primitive)?;
        if insert_count != 0 {
            return Err(failed(
                "Required Insert Count is not 0: a dynamic table reference",
            ));
        }
        let negative = block.get(pos).is_some_and(|b| b & 0x80 != 0);
        decode_int(block, &mut pos, 7).map_err(primitive)?;
        if negative {
            // Base = 0 - Delta Base - 1 < 0 (§4.5.1.2)
            return Err(failed("negative Base"));
        }
        let mut c = QpackCounts {
            sections: 1,
            section_bytes: block.len() as u64,
            prefix_bytes: pos as u64,
            ..QpackCounts::default()
        };
        let mut used = 0u64;
        while let Some(&first) = block.get(pos) {
            let room = max_size
                .saturating_sub(used)
                .checked_sub(FIELD_OVERHEAD)
                .ok_or_else(too_large)?;
            let (name, value) = if first & 0x80 != 0 {
                // 1 T index(6+): an indexed field line
                let index = decode_int(block, &mut pos, 6).map_err(primitive)?;
                if first & 0x40 == 0 {
                    return Err(failed("indexed field line refers to the dynamic table"));
                }
                c.indexed_lines += 1;
                let (name, value) = static_entry(index)?;
                (Str::Static(name), Str::Static(value))
            } else if first & 0x40 != 0 {
                // 0 1 N T index(4+): a literal with a name reference
                let index = decode_int(block, &mut pos, 4).map_err(primitive)?;
                if first & 0x10 == 0 {
                    return Err(failed("literal field line refers to the dynamic table"));
                }
                let (name, _) = static_entry(index)?;
                let room = room.checked_sub(name.len() as u64).ok_or_else(too_large)?;
                let value = self.string(block, &mut pos, 7, room, false, &mut c)?;
                c.name_ref_lines += 1;
                (Str::Static(name), value)
            } else if first & 0x20 != 0 {
                // 0 0 1 N H length(3+): a literal with a literal name
                let name = self.string(block, &mut pos, 3, room, true, &mut c)?;
                let name_len = self.len(&name) as u64;
                let value = self.string(block, &mut pos, 7, room - name_len, false, &mut c)?;
                c.literal_name_lines += 1;
                (name, value)
            } else {
                // 0 0 0 1 index(4+) and 0 0 0 0 N index(3+): post-Base forms
                return Err(failed(
                    "post-Base representation: a dynamic table reference",
                ));
            };
            let name = self.bytes(block, &name, true);
            let value = self.bytes(block, &value, false);
            used += field_size(name, value) as u64;
            if used > max_size {
                return Err(too_large());
            }
            c.field_bytes += (name.len() + value.len()) as u64;
            emit(name, value);
        }
        *counts += c;
        Ok(())
    }

    /// Reads the string literal at `block[*pos..]` whose H bit is just above a
    /// `prefix_bits`-bit length, at most `room` octets once decoded, and counts it.
    fn string(
        &mut self,
        block: &[u8],
        pos: &mut usize,
        prefix_bits: u32,
        room: u64,
        is_name: bool,
        c: &mut QpackCounts,
    ) -> Result<Str, Error> {
        let Some(&first) = block.get(*pos) else {
            return Err(failed("field section ends inside a representation"));
        };
        let huffman = first & 1 << prefix_bits != 0;
        let len = decode_int(block, pos, prefix_bits).map_err(primitive)?;
        // The fewest octets `len` bytes stand for: all of them raw; Huffman codes are at most
        // 30 bits, the padding at most 7.
        let least = if huffman {
            (u64::from(len) * 8).saturating_sub(7) / 30
        } else {
            u64::from(len)
        };
        if least > room {
            return Err(too_large());
        }
        let start = *pos;
        let len = len as usize;
        if len > block.len() - start {
            return Err(failed("field section ends inside a string"));
        }
        *pos = start + len;
        *if is_name {
            &mut c.name_bytes
        } else {
            &mut c.value_bytes
        } += len as u64;
        if !huffman {
            return Ok(Str::Block(start, start + len));
        }
        c.huffman_bytes += len as u64;
        let scratch = if is_name {
            &mut self.name
        } else {
            &mut self.value
        };
        // room fits: it is at most what is left of a usize-sized limit or of the section
        let room = usize::try_from(room).unwrap_or(usize::MAX);
        huffman::decode(&block[start..*pos], room, scratch).map_err(primitive)?;
        Ok(Str::Scratch)
    }

    fn len(&self, s: &Str) -> usize {
        match *s {
            Str::Block(a, b) => b - a,
            Str::Scratch => self.name.len(),
            Str::Static(s) => s.len(),
        }
    }

    fn bytes<'a>(&'a self, block: &'a [u8], s: &Str, is_name: bool) -> &'a [u8] {
        match *s {
            Str::Block(a, b) => &block[a..b],
            Str::Scratch if is_name => &self.name,
            Str::Scratch => &self.value,
            Str::Static(s) => s,
        }
    }
}

fn static_entry(index: u32) -> Result<(&'static [u8], &'static [u8]), Error> {
    static_table::get(u64::from(index)).ok_or_else(|| failed("static index past the table"))
}

#[cfg(test)]
mod tests {
    use super::*;

    type Fields = Vec<(Vec<u8>, Vec<u8>)>;

    fn decoded(block: &[u8], max_size: u64) -> Result<(Fields, QpackCounts), Error> {
        let mut fields = Vec::new();
        let mut counts = QpackCounts::default();
        Decoder::new().decode(block, max_size, &mut counts, |n, v| {
            fields.push((n.to_vec(), v.to_vec()))
        })?;
        Ok((fields, counts))
    }

    fn code(block: &[u8]) -> (Code, &'static str) {
        let e = decoded(block, 1 << 20).unwrap_err();
        (e.code, e.context)
    }

    /// RFC 9204 Appendix B.1, verbatim: a literal with a static name reference.
    #[test]
    fn rfc_9204_b1_name_reference() {
        let block = [
            0x00, 0x00, 0x51, 0x0b, 0x2f, 0x69, 0x6e, 0x64, 0x65, 0x78, 0x2e, 0x68, 0x74, 0x6d,
            0x6c,
        ];
        let (fields, counts) = decoded(&block, 1 << 20).unwrap();
        assert_eq!(fields, [(b":path".to_vec(), b"/index.html".to_vec())]);
        assert_eq!(counts.prefix_bytes, 2);
        assert_eq!((counts.name_ref_lines, counts.value_bytes), (1, 11));
        assert_eq!(counts.field_bytes, 16);
    }

    #[test]
    fn every_static_form_and_huffman() {
        let mut block = vec![0x00, 0x00, 0xc0 | 25, 0xff, 35];
        // literal name "ab", Huffman-coded: H=1 (0x08), length 2
        block.push(0x28 | 2);
        block.extend_from_slice(&[0x1c, 0x7f]); // 'a' 00011, 'b' 100011, 5 bits padding
        block.extend_from_slice(&[0x01, b'v']);
        let (fields, counts) = decoded(&block, 1 << 20).unwrap();
        assert_eq!(
            fields,
            [
                (b":status".to_vec(), b"200".to_vec()),
                (b"x-frame-options".to_vec(), b"sameorigin".to_vec()),
                (b"ab".to_vec(), b"v".to_vec()),
            ]
        );
        assert_eq!((counts.indexed_lines, counts.literal_name_lines), (2, 1));
        assert_eq!((counts.name_bytes, counts.huffman_bytes), (2, 2));
        // any Delta Base with Sign 0 is a valid Base when nothing refers to the table
        assert!(decoded(&[0x00, 0x7f, 0x05, 0xd1], 1 << 20).is_ok());
        assert_eq!(decoded(&[0x00, 0x00], 0).unwrap().0, []);
    }

    #[test]
    fn dynamic_table_references_are_refused() {
        let failed = Code::QpackDecompressionFailed;
        assert_eq!(code(&[0x01, 0x00]).0, failed); // Required Insert Count 1
        assert_eq!(code(&[0x00, 0x80]).1, "negative Base");
        assert_eq!(code(&[0x00, 0x00, 0x80]).0, failed); // indexed, T=0
        assert_eq!(code(&[0x00, 0x00, 0x40, 0x00]).0, failed); // name reference, T=0
        assert_eq!(code(&[0x00, 0x00, 0x10]).0, failed); // indexed post-Base
        assert_eq!(code(&[0x00, 0x00, 0x00, 0x00]).0, failed); // name reference post-Base
    }

    #[test]
    fn malformed_sections_are_refused() {
        let cases: [(&[u8], &str); 8] = [
            (&[], "field section ends inside a representation"),
            (&[0x00], "field section ends inside a representation"),
            (&[0x00, 0x00, 0xc0 | 63, 36], "static index past the table"),
            (&[0x00, 0x00, 0x5f, 84], "static index past the table"),
            (
                &[0x00, 0x00, 0x51, 0x05, b'a'],
                "field section ends inside a string",
            ),
            (
                &[0x00, 0x00, 0x51],
                "field section ends inside a representation",
            ),
            (
                &[0x00, 0x00, 0x51, 0x81, 0x00],
                "invalid Huffman-coded string",
            ),
            (
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0x0f],
                "integer above 2^32 - 1",
            ),
        ];
        for (block, context) in cases {
            assert_eq!(
                code(block),
                (Code::QpackDecompressionFailed, context),
                "{block:02x?}"
            );
        }
    }

    #[test]
    fn the_size_limit_counts_32_per_field() {
        let block = [0x00, 0x00, 0xc0 | 17, 0x51, 0x01, b'/'];
        // :method GET = 42, :path / = 38
        assert!(decoded(&block, 80).is_ok());
        let e = decoded(&block, 79).unwrap_err();
        assert_eq!(e.code, Code::ExcessiveLoad);
        // a long string is refused from its declared length, before it arrives
        let e = decoded(&[0x00, 0x00, 0x51, 0x7f, 0xff, 0xff, 0x03], 1 << 10).unwrap_err();
        assert_eq!(e.code, Code::ExcessiveLoad);
        // Huffman-coded too: 1000 bytes decode to at least 266
        let e = decoded(&[0x00, 0x00, 0x51, 0xff, 0xe9, 0x06], 200).unwrap_err();
        assert_eq!(e.code, Code::ExcessiveLoad);
    }
}
