//! Header block decoding (RFC 7541 §3, §6).

use super::table::{DynamicTable, STATIC_TABLE, static_entry};
use super::{ENTRY_OVERHEAD, Error, Field, decode_int, field_size, huffman};

/// Decodes the header blocks one peer sends on one connection, keeping the dynamic table in
/// step with the peer's encoder (RFC 7541 §2.2, §3).
///
/// Raw string literals and table entries are handed out borrowed, never copied; Huffman-coded
/// strings are decoded into two scratch buffers owned by the decoder (cleared, never shrunk),
/// and the dynamic table reuses its storage, so once the buffers have grown to the working
/// size decoding allocates nothing.
#[derive(Debug)]
pub struct Decoder {
    table: DynamicTable,
    /// The SETTINGS_HEADER_TABLE_SIZE we announced: the most a size update may ask for.
    max_table_size: usize,
    /// A Huffman-coded name, or a dynamic table entry's name (copied so that inserting the
    /// new entry may evict the one it names, §4.4).
    name_buf: Vec<u8>,
    /// A Huffman-coded value.
    value_buf: Vec<u8>,
    /// How many times the dynamic table changed (an entry inserted, a size update): a block
    /// decoded while this stays the same decodes the same again.
    changes: u64,
}

/// Where a field's name or value is until the field is emitted.
#[derive(Clone, Copy)]
enum Str {
    /// A static table entry's name.
    Static(&'static [u8]),
    /// A raw literal: `block[start..end]`.
    Block(usize, usize),
    /// In the decoder's scratch buffer for that half of the field.
    Scratch,
}

impl Str {
    fn bytes<'a>(self, block: &'a [u8], scratch: &'a [u8]) -> &'a [u8] {
        match self {
            Str::Static(s) => s,
            Str::Block(start, end) => &block[start..end],
            Str::Scratch => scratch,
        }
    }
}

/// The representation of a literal field (§6.2).
#[derive(Clone, Copy)]
struct Literal {
    /// Bits of the name index's prefix: 6 with incremental indexing, else 4.
    prefix_bits: u32,
    /// §6.2.1: the field becomes the dynamic table's newest entry.
    indexing: bool,
    /// §6.2.3.
    never_indexed: bool,
}

impl Decoder {
    /// A decoder whose dynamic table starts empty with `max_table_size` as its maximum size.
    ///
    /// `max_table_size`: the SETTINGS_HEADER_TABLE_SIZE we announced
    /// ([`DEFAULT_TABLE_SIZE`](super::DEFAULT_TABLE_SIZE) unless we sent another); the peer's
    /// dynamic table size updates (§6.3) may not exceed it.
    pub fn new(max_table_size: usize) -> Decoder {
        Decoder {
            table: DynamicTable::new(max_table_size),
            max_table_size,
            name_buf: Vec::new(),
            value_buf: Vec::new(),
            changes: 0,
        }
    }

    /// Decodes one complete header block (HEADERS and CONTINUATION payloads already joined),
    /// calling `emit` once per field in order.
    ///
    /// `max_list_size` bounds the sum of the fields' [`field_size`]s
    /// (SETTINGS_MAX_HEADER_LIST_SIZE, RFC 9113 §6.5.2). A string literal's declared length is
    /// checked against what is left of that budget before it is decoded or copied
    /// ([`Error::StringTooLong`]), so a hostile block cannot make the decoder allocate more
    /// than the budget; a field from the tables that does not fit is
    /// [`Error::HeaderListTooLarge`], found in constant time per field. Dynamic table size
    /// updates are accepted only before the first field (§4.2).
    ///
    /// On error decoding stops: the fields emitted so far were valid, but the dynamic table
    /// may be left in any state, so the decoder must not be used again (the connection ends
    /// with COMPRESSION_ERROR).
    pub fn decode(
        &mut self,
        block: &[u8],
        max_list_size: usize,
        mut emit: impl FnMut(Field<'_>),
    ) -> Result<(), Error> {
        let mut pos = 0;
        let mut list_size = 0;
        let mut first_field = true;
        while let Some(&first) = block.get(pos) {
            let size = if first & 0x80 != 0 {
                // §6.1: indexed header field
                let index = decode_int(block, &mut pos, 7)?;
                let (name, value) = self.entry(index)?;
                let size = field_size(name, value);
                if size > max_list_size - list_size {
                    return Err(Error::HeaderListTooLarge);
                }
                emit(Field {
                    name,
                    value,
                    never_indexed: false,
                });
                size
            } else if first & 0xe0 == 0x20 {
                // §6.3: dynamic table size update
                let size = decode_int(block, &mut pos, 5)? as usize;
                if !first_field || size > self.max_table_size {
                    return Err(Error::TableSizeUpdate);
                }
                self.table.set_max_size(size);
                self.changes += 1;
                continue;
            } else {
                let literal = if first & 0x40 != 0 {
                    // §6.2.1
                    Literal {
                        prefix_bits: 6,
                        indexing: true,
                        never_indexed: false,
                    }
                } else {
                    // §6.2.2 (0000) and §6.2.3 (0001)
                    Literal {
                        prefix_bits: 4,
                        indexing: false,
                        never_indexed: first & 0x10 != 0,
                    }
                };
                self.literal(
                    block,
                    &mut pos,
                    literal,
                    max_list_size - list_size,
                    &mut emit,
                )?
            };
            list_size += size;
            first_field = false;
        }
        Ok(())
    }

    /// How many times the dynamic table has changed (inserts and size updates): the same
    /// block decoded at the same count hands out the same fields and leaves the table as it
    /// was if it did the first time.
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// The current dynamic table size: the sum of its entries' sizes (§4.1).
    pub fn table_size(&self) -> usize {
        self.table.size()
    }

    /// The entry at HPACK index `index` (§2.3.3).
    fn entry(&self, index: u32) -> Result<(&[u8], &[u8]), Error> {
        let i = index as usize;
        let entry = if i <= STATIC_TABLE.len() {
            static_entry(i)
        } else {
            self.table.get(i - STATIC_TABLE.len())
        };
        entry.ok_or(Error::InvalidIndex(index))
    }

    /// Decodes a literal field (§6.2) whose first byte is at `block[*pos]`, emits it, and
    /// returns its size; `budget` is what is left of the header-list budget.
    fn literal(
        &mut self,
        block: &[u8],
        pos: &mut usize,
        literal: Literal,
        budget: usize,
        emit: &mut impl FnMut(Field<'_>),
    ) -> Result<usize, Error> {
        // Bytes the name and value may take together.
        let room = budget.saturating_sub(ENTRY_OVERHEAD);
        let name_index = decode_int(block, pos, literal.prefix_bits)?;
        let name = if name_index == 0 {
            read_string(block, pos, room, &mut self.name_buf)?
        } else {
            let index = name_index as usize;
            if let Some((name, _)) = static_entry(index) {
                Str::Static(name)
            } else {
                let (name, _) = self
                    .table
                    .get(index - STATIC_TABLE.len())
                    .ok_or(Error::InvalidIndex(name_index))?;
                self.name_buf.clear();
                self.name_buf.extend_from_slice(name);
                Str::Scratch
            }
        };
        let name_len = name.bytes(block, &self.name_buf).len();
        if name_len > room {
            return Err(Error::HeaderListTooLarge);
        }
        let value = read_string(block, pos, room - name_len, &mut self.value_buf)?;

        let name = name.bytes(block, &self.name_buf);
        let value = value.bytes(block, &self.value_buf);
        let size = field_size(name, value);
        // Only an empty field with less than 32 bytes of budget left gets here too big.
        if size > budget {
            return Err(Error::HeaderListTooLarge);
        }
        emit(Field {
            name,
            value,
            never_indexed: literal.never_indexed,
        });
        if literal.indexing {
            self.table.insert(name, value);
            self.changes += 1;
        }
        Ok(size)
    }
}

/// Reads the string literal (§5.2) at `block[*pos..]`, at most `room` bytes once decoded: a
/// raw one is left in the block, a Huffman-coded one is decoded into `scratch`.
fn read_string(
    block: &[u8],
    pos: &mut usize,
    room: usize,
    scratch: &mut Vec<u8>,
) -> Result<Str, Error> {
    let Some(&first) = block.get(*pos) else {
        return Err(Error::Truncated);
    };
    let huffman = first & 0x80 != 0;
    let len = decode_int(block, pos, 7)?;
    // The fewest bytes `len` bytes can stand for: all of them when raw; with Huffman coding,
    // every code is at most 30 bits and the padding at most 7.
    let least = if huffman {
        (u64::from(len) * 8).saturating_sub(7) / 30
    } else {
        u64::from(len)
    };
    if least > room as u64 {
        return Err(Error::StringTooLong);
    }
    let len = len as usize;
    let start = *pos;
    if len > block.len() - start {
        return Err(Error::Truncated);
    }
    *pos = start + len;
    if huffman {
        huffman::decode(&block[start..start + len], room, scratch)?;
        Ok(Str::Scratch)
    } else {
        Ok(Str::Block(start, start + len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::h2::hpack::DEFAULT_TABLE_SIZE;
    use crate::h2::hpack::test_util::*;

    const BIG: usize = 1 << 20;

    fn table(d: &Decoder) -> Vec<(Vec<u8>, Vec<u8>)> {
        d.table
            .iter()
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect()
    }

    fn entries(list: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
        list.iter()
            .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
            .collect()
    }

    /// One step of an Appendix C sequence: the block, the fields, the dynamic table after it
    /// (newest first) and its size.
    type Step<'a> = (
        &'a str,
        &'a [(&'a str, &'a str)],
        &'a [(&'a str, &'a str)],
        usize,
    );

    fn run_sequence(table_size: usize, steps: &[Step<'_>]) {
        let mut d = Decoder::new(table_size);
        for (i, &(block, fields, after, size)) in steps.iter().enumerate() {
            assert_eq!(
                decode_all(&mut d, &hex(block), BIG),
                Ok(pairs(fields)),
                "step {i}"
            );
            assert_eq!(table(&d), entries(after), "step {i}");
            assert_eq!(d.table_size(), size, "step {i}");
        }
    }

    /// RFC 7541 C.2.1: literal with incremental indexing.
    #[test]
    fn rfc_c2_1_literal_with_indexing() {
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        let block = hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572");
        let fields = decode_all(&mut d, &block, BIG).unwrap();
        assert_eq!(fields, pairs(&[("custom-key", "custom-header")]));
        assert_eq!(table(&d), entries(&[("custom-key", "custom-header")]));
        assert_eq!(d.table_size(), 55);
    }

    /// RFC 7541 C.2.2: literal without indexing.
    #[test]
    fn rfc_c2_2_literal_without_indexing() {
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        let block = hex("040c 2f73 616d 706c 652f 7061 7468");
        let fields = decode_all(&mut d, &block, BIG).unwrap();
        assert_eq!(fields, pairs(&[(":path", "/sample/path")]));
        assert_eq!(d.table_size(), 0);
    }

    /// RFC 7541 C.2.3: literal never indexed.
    #[test]
    fn rfc_c2_3_literal_never_indexed() {
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        let block = hex("1008 7061 7373 776f 7264 0673 6563 7265 74");
        let fields = decode_all(&mut d, &block, BIG).unwrap();
        assert_eq!(fields, [(b"password".to_vec(), b"secret".to_vec(), true)]);
        assert_eq!(d.table_size(), 0);
    }

    /// RFC 7541 C.2.4: indexed field.
    #[test]
    fn rfc_c2_4_indexed() {
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        let fields = decode_all(&mut d, &[0x82], BIG).unwrap();
        assert_eq!(fields, pairs(&[(":method", "GET")]));
        assert_eq!(d.table_size(), 0);
    }

    #[test]
    fn rfc_c3_requests_without_huffman() {
        run_sequence(
            DEFAULT_TABLE_SIZE,
            &[
                (C3[0], REQ1, REQ_TABLE1, 57),
                (C3[1], REQ2, REQ_TABLE2, 110),
                (C3[2], REQ3, REQ_TABLE3, 164),
            ],
        );
    }

    #[test]
    fn rfc_c4_requests_with_huffman() {
        run_sequence(
            DEFAULT_TABLE_SIZE,
            &[
                (C4[0], REQ1, REQ_TABLE1, 57),
                (C4[1], REQ2, REQ_TABLE2, 110),
                (C4[2], REQ3, REQ_TABLE3, 164),
            ],
        );
    }

    #[test]
    fn rfc_c5_responses_without_huffman() {
        run_sequence(
            256,
            &[
                (C5[0], RESP1, RESP_TABLE1, 222),
                (C5[1], RESP2, RESP_TABLE2, 222),
                (C5[2], RESP3, RESP_TABLE3, 215),
            ],
        );
    }

    #[test]
    fn rfc_c6_responses_with_huffman() {
        run_sequence(
            256,
            &[
                (C6[0], RESP1, RESP_TABLE1, 222),
                (C6[1], RESP2, RESP_TABLE2, 222),
                (C6[2], RESP3, RESP_TABLE3, 215),
            ],
        );
    }

    #[test]
    fn indices_outside_the_tables_are_refused() {
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        assert_eq!(
            decode_all(&mut d, &[0x80], BIG),
            Err(Error::InvalidIndex(0))
        );
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        // 62: the dynamic table is empty
        assert_eq!(
            decode_all(&mut d, &[0xbe], BIG),
            Err(Error::InvalidIndex(62))
        );
        // a literal naming a missing dynamic entry
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        assert_eq!(
            decode_all(&mut d, &[0x7f, 0x00, 0x00], BIG),
            Err(Error::InvalidIndex(63))
        );
        // index 61 is the last static entry; one entry makes 62 valid and 63 not
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        let fields = decode_all(&mut d, &hex("bd 4001 6101 62 be"), BIG).unwrap();
        assert_eq!(
            fields,
            pairs(&[("www-authenticate", ""), ("a", "b"), ("a", "b")])
        );
        assert_eq!(
            decode_all(&mut d, &[0xbf], BIG),
            Err(Error::InvalidIndex(63))
        );
        // a huge index
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        assert_eq!(
            decode_all(&mut d, &hex("ff 80ff ffff 0f"), BIG),
            Err(Error::InvalidIndex(u32::MAX))
        );
    }

    #[test]
    fn truncated_blocks_are_refused() {
        let whole = hex(C3[2]);
        for cut in 1..whole.len() {
            // C.3.3 refers to the entries the first two requests add
            let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
            decode_all(&mut d, &hex(C3[0]), BIG).unwrap();
            decode_all(&mut d, &hex(C3[1]), BIG).unwrap();
            let got = decode_all(&mut d, &whole[..cut], BIG);
            // a cut between two fields is a shorter valid block
            if let Err(e) = got {
                assert_eq!(e, Error::Truncated, "cut at {cut}");
            }
        }
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        assert_eq!(decode_all(&mut d, &[0x40], BIG), Err(Error::Truncated));
        assert_eq!(
            decode_all(&mut d, &[0x40, 0x01], BIG),
            Err(Error::Truncated)
        );
        assert_eq!(
            decode_all(&mut d, &[0x84, 0xff], BIG),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn table_size_updates() {
        // to 0 and back, both at the start: allowed, and 0 empties the table
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        decode_all(&mut d, &hex(C3[0]), BIG).unwrap();
        assert_eq!(d.table_size(), 57);
        let fields = decode_all(&mut d, &hex("20 3fe1 1f 82"), BIG).unwrap();
        assert_eq!(fields, pairs(&[(":method", "GET")]));
        assert_eq!(d.table_size(), 0);
        assert_eq!(d.table.max_size(), 4096);
        // shrinking evicts the oldest entries
        decode_all(&mut d, &hex("4001 6101 62 4001 6301 64"), BIG).unwrap();
        decode_all(&mut d, &hex("3f03"), BIG).unwrap(); // 34: one entry fits
        assert_eq!(table(&d), entries(&[("c", "d")]));
        // above what we announced
        let mut d = Decoder::new(256);
        assert_eq!(
            decode_all(&mut d, &hex("3fe2 01"), BIG), // 257
            Err(Error::TableSizeUpdate)
        );
        let mut d = Decoder::new(256);
        assert_eq!(decode_all(&mut d, &hex("3fe1"), BIG), Err(Error::Truncated));
        let mut d = Decoder::new(256);
        decode_all(&mut d, &hex("3fe1 01"), BIG).unwrap(); // 256
        assert_eq!(d.table.max_size(), 256);
        // after a field
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        assert_eq!(
            decode_all(&mut d, &hex("82 20"), BIG),
            Err(Error::TableSizeUpdate)
        );
        // a size update alone is a valid (empty) block
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        assert_eq!(decode_all(&mut d, &hex("20"), BIG), Ok(Vec::new()));
    }

    /// One entry as large as the table, then thousands of one-byte references to it: refused
    /// once the list budget is spent, after a handful of fields.
    #[test]
    fn hpack_bomb_is_refused_by_the_list_budget() {
        // name "a", a raw value of 4000 bytes: an entry of 4033
        let mut block = hex("4001 61 7fa1 1e");
        block.extend(std::iter::repeat_n(b'x', 4000));
        block.extend(std::iter::repeat_n(0xbe, 100_000));
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        let mut emitted = 0;
        let result = d.decode(&block, 64 * 1024, |_| emitted += 1);
        assert_eq!(result, Err(Error::HeaderListTooLarge));
        // 64 KiB / 4033 bytes per field
        assert_eq!(emitted, 16);
    }

    #[test]
    fn hostile_string_lengths_are_refused_before_reading() {
        // a literal name of 2^31 bytes in a 7-byte block: refused by the budget, not read
        let block = [0x00, 0x7f, 0x81, 0xff, 0xff, 0xff, 0x07];
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        assert_eq!(decode_all(&mut d, &block, BIG), Err(Error::StringTooLong));
        // the same length Huffman-coded
        let block = [0x00, 0xff, 0x81, 0xff, 0xff, 0xff, 0x07];
        assert_eq!(decode_all(&mut d, &block, BIG), Err(Error::StringTooLong));
        // within the budget but past the end of the block
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        assert_eq!(
            decode_all(&mut d, &hex("0005 6162"), BIG),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn the_list_budget_counts_every_field() {
        // C.3.1 is 4 fields: 42 + 43 + 38 + 57 = 180 bytes
        let block = hex(C3[0]);
        assert!(decode_all(&mut Decoder::new(4096), &block, 180).is_ok());
        assert_eq!(
            decode_all(&mut Decoder::new(4096), &block, 179),
            Err(Error::StringTooLong)
        );
        // an indexed field over the budget
        assert_eq!(
            decode_all(&mut Decoder::new(4096), &[0x82, 0x82], 80),
            Err(Error::HeaderListTooLarge)
        );
        // an empty literal with less than 32 bytes left
        assert_eq!(
            decode_all(&mut Decoder::new(4096), &hex("0000 00"), 31),
            Err(Error::HeaderListTooLarge)
        );
        // a value just over: "custom-key: custom-header" is 55
        let block = hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572");
        assert!(decode_all(&mut Decoder::new(4096), &block, 55).is_ok());
        assert_eq!(
            decode_all(&mut Decoder::new(4096), &block, 54),
            Err(Error::StringTooLong)
        );
        // a dynamic name over the budget
        let mut d = Decoder::new(4096);
        decode_all(&mut d, &block, BIG).unwrap();
        assert_eq!(
            decode_all(&mut d, &hex("7e00"), 41),
            Err(Error::HeaderListTooLarge)
        );
    }

    #[test]
    fn huffman_errors_surface() {
        // a Huffman value of one 0xff byte: 8 bits of padding
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        assert_eq!(
            decode_all(&mut d, &hex("04 81 ff"), BIG),
            Err(Error::Huffman)
        );
        // a Huffman value whose declared length runs past the block
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        assert_eq!(
            decode_all(&mut d, &hex("04 82 ff"), BIG),
            Err(Error::Truncated)
        );
    }

    /// A literal with incremental indexing may name the entry its insertion evicts (§4.4).
    #[test]
    fn a_new_entry_may_name_the_entry_it_evicts() {
        let mut d = Decoder::new(40);
        // "ab": "" (34), then a literal named by index 62 with value "xyz" (37): evicts it
        let fields = decode_all(&mut d, &hex("4002 6162 00 7e03 7879 7a"), BIG).unwrap();
        assert_eq!(fields, pairs(&[("ab", ""), ("ab", "xyz")]));
        assert_eq!(table(&d), entries(&[("ab", "xyz")]));
        let fields = decode_all(&mut d, &[0xbe], BIG).unwrap();
        assert_eq!(fields, pairs(&[("ab", "xyz")]));
    }

    #[test]
    fn never_indexed_flag_is_only_for_0001() {
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        let fields: Vec<Owned> =
            decode_all(&mut d, &hex("1401 61 0401 62 4401 63 be"), BIG).unwrap();
        let flags: Vec<bool> = fields.iter().map(|f| f.2).collect();
        assert_eq!(flags, [true, false, false, false]);
    }
}
