//! QPACK (RFC 9204) for a client that allows no dynamic table: it sends
//! SETTINGS_QPACK_MAX_TABLE_CAPACITY 0 and SETTINGS_QPACK_BLOCKED_STREAMS 0, so it never
//! opens a conversation on the encoder and decoder streams, and every field section either
//! way refers to the static table only.
//!
//! - `static_table`: the 99 entries of Appendix A and their lookups.
//! - `encode`: field sections we send. The encoder never uses the dynamic table (the peer's
//!   capacity is irrelevant): every section starts with Required Insert Count 0 and Base 0,
//!   then an indexed line for a field in the static table, a literal with a static name
//!   reference for a name in it, a literal with a literal name otherwise.
//! - `decode`: field sections we receive, every representation parsed; any reference to the
//!   dynamic table is QPACK_DECOMPRESSION_FAILED, since we allowed none.
//!
//! Strings use HPACK's Huffman code and prefixed integers (`h2::hpack`), which QPACK shares
//! (RFC 9204 §4.1). Both sides count what the bytes were in a [`QpackCounts`].

pub mod decode;
pub mod encode;
pub mod static_table;

pub use decode::Decoder;
pub use encode::encode_section;

/// What the bytes of encoded field sections were, counted by the encoder or the decoder.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct QpackCounts {
    /// Field sections.
    pub sections: u64,
    /// All their bytes.
    pub section_bytes: u64,
    /// Bytes of the prefixes (Required Insert Count, Base): 2 per section from our encoder.
    pub prefix_bytes: u64,
    /// Indexed field lines (static table).
    pub indexed_lines: u64,
    /// Literal field lines with a (static) name reference.
    pub name_ref_lines: u64,
    /// Literal field lines with a literal name.
    pub literal_name_lines: u64,
    /// Octets of literal names as sent (after their length prefix).
    pub name_bytes: u64,
    /// Octets of literal values as sent (after their length prefix).
    pub value_bytes: u64,
    /// Of `name_bytes + value_bytes`, those of Huffman-coded strings.
    pub huffman_bytes: u64,
    /// The fields uncompressed: name + value octets of every line, indexed ones included.
    pub field_bytes: u64,
}

impl std::ops::AddAssign for QpackCounts {
    fn add_assign(&mut self, o: QpackCounts) {
        self.sections += o.sections;
        self.section_bytes += o.section_bytes;
        self.prefix_bytes += o.prefix_bytes;
        self.indexed_lines += o.indexed_lines;
        self.name_ref_lines += o.name_ref_lines;
        self.literal_name_lines += o.literal_name_lines;
        self.name_bytes += o.name_bytes;
        self.value_bytes += o.value_bytes;
        self.huffman_bytes += o.huffman_bytes;
        self.field_bytes += o.field_bytes;
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A header list as a client sends: lowercase token names (some pseudo, some in the
    /// static table), visible-ASCII values.
    fn field() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
        let name = prop_oneof![
            "[a-z][a-z0-9-]{0,20}",
            Just(":method".to_string()),
            Just(":path".to_string()),
            Just("content-type".to_string()),
            Just("x-frame-options".to_string()),
        ];
        let value = prop_oneof![
            "[!-~]{0,40}",
            Just("GET".to_string()),
            Just("sameorigin".to_string()),
            Just(String::new()),
        ];
        (name, value).prop_map(|(n, v)| (n.into_bytes(), v.into_bytes()))
    }

    proptest! {
        #[test]
        fn encode_then_decode_gives_the_fields_back(
            fields in proptest::collection::vec(field(), 0..20),
        ) {
            let mut block = Vec::new();
            let mut sent = QpackCounts::default();
            encode_section(fields.iter().map(|(n, v)| (&n[..], &v[..])), &mut block, &mut sent);
            let mut got = Vec::new();
            let mut received = QpackCounts::default();
            Decoder::new()
                .decode(&block, u64::MAX, &mut received, |n, v| got.push((n.to_vec(), v.to_vec())))
                .unwrap();
            prop_assert_eq!(&got, &fields);
            // both ends see the same representations
            prop_assert_eq!(sent, received);
            prop_assert_eq!(sent.section_bytes, block.len() as u64);
            let lines = sent.indexed_lines + sent.name_ref_lines + sent.literal_name_lines;
            prop_assert_eq!(lines, fields.len() as u64);
        }
    }
}
