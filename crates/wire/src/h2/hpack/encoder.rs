//! Header block encoding (RFC 7541 §3, §6), with a choice of representations.

use super::table::{DynamicTable, Match, STATIC_TABLE, static_find};
use super::{DEFAULT_TABLE_SIZE, encode_int, field_size, huffman};

/// How request header fields are represented (the user's `--hpack` flag).
///
/// Whatever the strategy, a field equal to a static table entry (`:method: GET`,
/// `:scheme: https`, ...) is sent as that entry's index (§6.1): it costs nothing and every
/// client does it. Names in the static table are always sent as indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Fields equal to a static or dynamic table entry are indexed (§6.1); the others are
    /// literals with incremental indexing (§6.2.1), so the next request finds them: repeated
    /// requests cost about one byte per field, pseudo-headers like `:path` included. A field
    /// larger than the whole table is sent without indexing, as inserting it would only
    /// empty the table. The name of a literal is indexed when a table has it.
    #[default]
    Index,
    /// The dynamic table is never used: fields not equal to a static entry are literals
    /// without indexing (§6.2.2).
    Literal,
    /// Like [`Strategy::Literal`], but the literals are never indexed (§6.2.3): intermediaries
    /// must not index them either.
    NeverIndexed,
}

impl Strategy {
    /// The flag's spelling: `"index"`, `"literal"` or `"never"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Index => "index",
            Strategy::Literal => "literal",
            Strategy::NeverIndexed => "never",
        }
    }

    /// The strategy [`Strategy::as_str`] spells `s`, if any.
    pub fn parse(s: &str) -> Option<Strategy> {
        match s {
            "index" => Some(Strategy::Index),
            "literal" => Some(Strategy::Literal),
            "never" => Some(Strategy::NeverIndexed),
            _ => None,
        }
    }
}

/// Encodes the header blocks we send on one connection, keeping its dynamic table in step
/// with the peer's decoder (RFC 7541 §2.2, §3).
///
/// The dynamic table uses at most [`DEFAULT_TABLE_SIZE`] bytes whatever the peer allows.
/// String literals are Huffman-coded (§5.2) when that is strictly shorter. Names are sent as
/// given: HTTP/2 wants them lowercase (RFC 9113 §8.2.1), which is the caller's business.
///
/// With the same fields each time, encoding allocates nothing once the table holds them
/// (given an `out` with room).
#[derive(Debug)]
pub struct Encoder {
    strategy: Strategy,
    table: DynamicTable,
    /// The maximum table size the peer's decoder uses now: the last one signalled, or the
    /// initial 4096 (§4.2).
    signalled: usize,
    /// The smallest maximum size set since the last block.
    lowest: usize,
    /// Bumped whenever the table or the size updates owed change: a block encoded in one epoch
    /// is the same bytes for the same fields while the epoch lasts.
    epoch: u64,
    /// Blocks whose encoding left the epoch as it was, by their caller's key.
    cache: Vec<CachedBlock>,
}

/// How many keyed blocks an encoder keeps (a client sends one or a few constant header lists).
const CACHED_BLOCKS: usize = 4;

#[derive(Debug)]
struct CachedBlock {
    key: u64,
    epoch: u64,
    /// the block's bytes, a varying list's without its varying values
    bytes: Vec<u8>,
    /// a varying list's: where each varying value goes in `bytes`, in the fields' order
    holes: Vec<usize>,
}

impl Encoder {
    /// An encoder with an empty dynamic table of [`DEFAULT_TABLE_SIZE`] bytes, the peer's
    /// initial SETTINGS_HEADER_TABLE_SIZE.
    pub fn new(strategy: Strategy) -> Encoder {
        Encoder {
            strategy,
            table: DynamicTable::new(DEFAULT_TABLE_SIZE),
            signalled: DEFAULT_TABLE_SIZE,
            lowest: DEFAULT_TABLE_SIZE,
            epoch: 0,
            cache: Vec::new(),
        }
    }

    /// The peer's SETTINGS_HEADER_TABLE_SIZE arrived (RFC 9113 §6.5.2): the table's maximum
    /// size becomes `min(n, 4096)`, evicting the oldest entries if it shrank (§4.3), and the
    /// next block starts with dynamic table size updates (§6.3): the smallest size set since
    /// the last block if the table shrank below it in between, then the final one (§4.2).
    pub fn set_max_table_size(&mut self, n: usize) {
        let size = n.min(DEFAULT_TABLE_SIZE);
        self.table.set_max_size(size);
        self.lowest = self.lowest.min(size);
        self.epoch += 1;
    }

    /// Appends the encoding of one whole header block to `out`, in the order given.
    pub fn encode<'a>(
        &mut self,
        fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
        out: &mut Vec<u8>,
    ) {
        self.size_updates(out);
        for (name, value) in fields {
            self.field(name, value, out);
        }
    }

    /// [`Encoder::encode`] of a header list the caller names by `key` (the same key must mean
    /// the same fields): while the table has not changed since that list was last encoded
    /// without changing it, its bytes are copied instead of looked up field by field. With
    /// [`Strategy::Index`] the first block inserts the fields and the second is kept; with
    /// the literal strategies the first is. Allocates only when a block is first kept.
    pub fn encode_keyed<'a>(
        &mut self,
        key: u64,
        fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
        out: &mut Vec<u8>,
    ) {
        self.encode_keyed_varying(key, || fields, 0, std::iter::empty(), out);
    }

    /// [`Encoder::encode_keyed`] of a header list whose fields at the positions set in
    /// `varying` (bit *i*: the *i*-th field; positions from 64 on never vary) change their
    /// values from one block to the next, names and places staying: those are sent as literals
    /// with an indexed name where a table has it, without indexing (never indexed with
    /// [`Strategy::NeverIndexed`]; RFC 7541 §6.2.2, §6.2.3), since indexing values that never
    /// repeat would only churn the table. With the table as it was, every other byte of the
    /// block stays: the block is kept under `key` with holes where the values go, and copied
    /// around them.
    ///
    /// `fields` makes the whole list and is called only when the block is encoded anew;
    /// `values` are the varying fields' values in order (what `fields` gives at those
    /// positions), all a kept block needs.
    pub fn encode_keyed_varying<'a, I>(
        &mut self,
        key: u64,
        fields: impl FnOnce() -> I,
        varying: u64,
        values: impl IntoIterator<Item = &'a [u8]>,
        out: &mut Vec<u8>,
    ) where
        I: IntoIterator<Item = (&'a [u8], &'a [u8])>,
    {
        let epoch = self.epoch;
        if let Some(c) = self.cache.iter().find(|c| c.key == key && c.epoch == epoch) {
            let mut at = 0;
            for (&offset, value) in c.holes.iter().zip(values) {
                out.extend_from_slice(&c.bytes[at..offset]);
                string(out, value);
                at = offset;
            }
            out.extend_from_slice(&c.bytes[at..]);
            return;
        }
        let start = out.len();
        self.size_updates(out);
        // the varying values' places in `out`
        let mut values = Vec::new();
        for (i, (name, value)) in fields().into_iter().enumerate() {
            if i < 64 && varying >> i & 1 == 1 {
                self.varying_name(name, value, out);
                let at = out.len();
                string(out, value);
                values.push((at, out.len()));
            } else {
                self.field(name, value, out);
            }
        }
        if self.epoch != epoch {
            return;
        }
        let at = match self.cache.iter().position(|c| c.key == key) {
            Some(i) => i,
            None if self.cache.len() < CACHED_BLOCKS => {
                self.cache.push(CachedBlock {
                    key,
                    epoch,
                    bytes: Vec::new(),
                    holes: Vec::new(),
                });
                self.cache.len() - 1
            }
            // the stalest one goes
            None => (0..self.cache.len())
                .min_by_key(|&i| self.cache[i].epoch)
                .unwrap_or(0),
        };
        let c = &mut self.cache[at];
        c.key = key;
        c.epoch = epoch;
        c.bytes.clear();
        c.holes.clear();
        let mut from = start;
        for (value_start, value_end) in values {
            c.bytes.extend_from_slice(&out[from..value_start]);
            c.holes.push(c.bytes.len());
            from = value_end;
        }
        c.bytes.extend_from_slice(&out[from..]);
    }

    /// The strategy given to [`Encoder::new`].
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// The current dynamic table size: the sum of its entries' sizes (§4.1).
    pub fn table_size(&self) -> usize {
        self.table.size()
    }

    /// The size updates owed since the last block (§4.2, §6.3).
    fn size_updates(&mut self, out: &mut Vec<u8>) {
        let target = self.table.max_size();
        let dipped = self.lowest < self.signalled && self.lowest < target;
        if dipped {
            encode_int(out, 0x20, 5, self.lowest);
        }
        if dipped || target != self.signalled {
            encode_int(out, 0x20, 5, target);
            self.epoch += 1;
        }
        self.signalled = target;
        self.lowest = target;
    }

    /// The start of a field whose value changes from block to block (its value string
    /// follows): a literal's flags and its name, indexed when a table has the name, whatever
    /// the value, so the bytes do not depend on it.
    fn varying_name(&self, name: &[u8], value: &[u8], out: &mut Vec<u8>) {
        let name_index = match static_find(name, value) {
            Some(Match::Exact(index) | Match::Name(index)) => Some(index),
            None => match self.table.find(name, value) {
                Some(Match::Exact(index) | Match::Name(index)) => Some(STATIC_TABLE.len() + index),
                None => None,
            },
        };
        let flags = match self.strategy {
            Strategy::NeverIndexed => 0x10,
            Strategy::Index | Strategy::Literal => 0x00,
        };
        match name_index {
            Some(index) => encode_int(out, flags, 4, index),
            None => {
                encode_int(out, flags, 4, 0);
                string(out, name);
            }
        }
    }

    fn field(&mut self, name: &[u8], value: &[u8], out: &mut Vec<u8>) {
        let static_name = match static_find(name, value) {
            Some(Match::Exact(index)) => {
                encode_int(out, 0x80, 7, index);
                return;
            }
            Some(Match::Name(index)) => Some(index),
            None => None,
        };
        match self.strategy {
            Strategy::Index => {
                let dynamic = self.table.find(name, value);
                let dynamic_name = match dynamic {
                    Some(Match::Exact(index)) => {
                        encode_int(out, 0x80, 7, STATIC_TABLE.len() + index);
                        return;
                    }
                    Some(Match::Name(index)) => Some(STATIC_TABLE.len() + index),
                    None => None,
                };
                let name_index = static_name.or(dynamic_name);
                if field_size(name, value) <= self.table.max_size() {
                    literal(out, 0x40, 6, name_index, name, value);
                    self.table.insert(name, value);
                    self.epoch += 1;
                } else {
                    literal(out, 0x00, 4, name_index, name, value);
                }
            }
            Strategy::Literal => literal(out, 0x00, 4, static_name, name, value),
            Strategy::NeverIndexed => literal(out, 0x10, 4, static_name, name, value),
        }
    }
}

/// A literal field (§6.2): `flags` and a `prefix_bits`-bit name index (0: a literal name).
fn literal(
    out: &mut Vec<u8>,
    flags: u8,
    prefix_bits: u32,
    name_index: Option<usize>,
    name: &[u8],
    value: &[u8],
) {
    match name_index {
        Some(index) => encode_int(out, flags, prefix_bits, index),
        None => {
            encode_int(out, flags, prefix_bits, 0);
            string(out, name);
        }
    }
    string(out, value);
}

/// A string literal (§5.2), Huffman-coded when that is strictly shorter.
fn string(out: &mut Vec<u8>, s: &[u8]) {
    huffman::literal(out, 0x00, 7, s);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    // `Strategy` below is the encoder's; proptest's trait is only needed for its methods.
    use proptest::strategy::Strategy as _;

    use super::{Encoder, Strategy};
    use crate::h2::hpack::table::{Match, static_find};
    use crate::h2::hpack::test_util::*;
    use crate::h2::hpack::{DEFAULT_TABLE_SIZE, Decoder, Error, field_size};

    const BIG: usize = 1 << 20;

    fn encode_pairs(e: &mut Encoder, list: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        e.encode(
            list.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
            &mut out,
        );
        out
    }

    #[test]
    fn varying_values_leave_the_table_and_the_kept_prefix_as_they_were() {
        for strategy in [Strategy::Index, Strategy::Literal, Strategy::NeverIndexed] {
            let mut e = Encoder::new(strategy);
            let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
            let mut blocks = Vec::new();
            let mut sizes = Vec::new();
            for n in 0..4 {
                let id = format!("id-{n}-{}", "x".repeat(n));
                let path = format!("/k/{n}");
                let list = [
                    (":method", "POST"),
                    (":path", path.as_str()),
                    ("te", "trailers"),
                    ("x-id", id.as_str()),
                    ("accept", "*/*"),
                ];
                let mut out = Vec::new();
                // positions 1 and 3 vary
                e.encode_keyed_varying(
                    7,
                    || list.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
                    0b1010,
                    [list[1].1.as_bytes(), list[3].1.as_bytes()],
                    &mut out,
                );
                let got: Vec<(Vec<u8>, Vec<u8>)> = decode_all(&mut d, &out, BIG)
                    .unwrap()
                    .into_iter()
                    .map(|(n, v, _)| (n, v))
                    .collect();
                let want: Vec<(Vec<u8>, Vec<u8>)> = list
                    .iter()
                    .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
                    .collect();
                assert_eq!(got, want, "{strategy:?} block {n}");
                sizes.push(e.table_size());
                blocks.push(out);
            }
            // the varying values never enter the table: it holds what the first block put there
            assert!(
                sizes.iter().all(|&s| s == sizes[0]),
                "{strategy:?}: {sizes:?}"
            );
            assert_eq!(d.table_size(), e.table_size());
            // the block is kept with holes for the two values; from the second block on, each
            // is the kept bytes with its values in the holes
            let c = e.cache.iter().find(|c| c.key == 7).expect("a kept block");
            assert_eq!(c.holes.len(), 2, "{strategy:?}");
            assert!(
                blocks[1..]
                    .iter()
                    .all(|b| b.starts_with(&c.bytes[..c.holes[0]]))
            );
            assert!(
                blocks[1..]
                    .iter()
                    .all(|b| b.ends_with(&c.bytes[c.holes[1]..]))
            );
            // a literal without indexing (never indexed with that strategy) for x-id
            let never = strategy == Strategy::NeverIndexed;
            let flags: Vec<bool> = decode_all(&mut Decoder::new(4096), &blocks[0], BIG)
                .unwrap()
                .iter()
                .map(|f| f.2)
                .collect();
            assert_eq!(flags[3], never, "{strategy:?}");
        }
    }

    #[test]
    fn a_constant_list_is_copied_from_the_second_block_on() {
        let list = [(":method", "POST"), (":path", "/a.B/C"), ("te", "trailers")];
        let fields = || list.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()));
        let mut e = Encoder::new(Strategy::Index);
        let mut blocks = Vec::new();
        for _ in 0..3 {
            let mut out = Vec::new();
            e.encode_keyed(9, fields(), &mut out);
            blocks.push((out, e.cache.len()));
        }
        // the first inserts (nothing kept), the second is all indexed and kept, the third copied
        assert_eq!(blocks[0].1, 0);
        assert_eq!(blocks[1].1, 1);
        assert_eq!(blocks[1].0, blocks[2].0);
        assert_ne!(blocks[0].0, blocks[1].0);
        // a resize makes the kept block stale: the next is encoded again (with the update)
        e.set_max_table_size(64);
        let mut out = Vec::new();
        e.encode_keyed(9, fields(), &mut out);
        assert_eq!(out[0] & 0xe0, 0x20, "a size update first");
        assert_ne!(out, blocks[2].0);
    }

    #[test]
    fn strategy_names() {
        for s in [Strategy::Index, Strategy::Literal, Strategy::NeverIndexed] {
            assert_eq!(Strategy::parse(s.as_str()), Some(s));
            assert_eq!(Encoder::new(s).strategy(), s);
        }
        assert_eq!(Strategy::parse("Index"), None);
        assert_eq!(Strategy::default(), Strategy::Index);
    }

    /// With Strategy::Index the encoder makes the RFC's choices for C.4 and C.6 (static names,
    /// Huffman where shorter, incremental indexing), so the bytes match exactly, but for one
    /// string: C.6.2 Huffman-codes "307" in 3 bytes, no shorter than raw, which this encoder
    /// sends raw.
    #[test]
    fn rfc_c4_and_c6_byte_exact() {
        let mut e = Encoder::new(Strategy::Index);
        for (list, block) in REQUESTS.iter().zip(C4) {
            assert_eq!(encode_pairs(&mut e, list), hex(block));
        }
        assert_eq!(e.table_size(), 164);

        let mut e = Encoder::new(Strategy::Index);
        e.set_max_table_size(256);
        // the size update from 4096 to 256 that C.6 leaves to the HTTP/2 settings
        let first = [hex("3fe1 01"), hex(C6[0])].concat();
        assert_eq!(encode_pairs(&mut e, RESPONSES[0]), first);
        assert_eq!(hex(C6[1]), hex("4883 640e ffc1 c0bf"));
        assert_eq!(
            encode_pairs(&mut e, RESPONSES[1]),
            hex("4803 3330 37c1 c0bf")
        );
        assert_eq!(encode_pairs(&mut e, RESPONSES[2]), hex(C6[2]));
        assert_eq!(e.table_size(), 215);
    }

    /// C.2, C.3 and C.5's field lists (whose RFC encodings skip Huffman coding, which this
    /// encoder uses whenever it is shorter) round-trip through every strategy.
    #[test]
    fn rfc_lists_round_trip() {
        let c2: [&[(&str, &str)]; 3] = [
            &[("custom-key", "custom-header")],
            &[(":path", "/sample/path")],
            &[("password", "secret")],
        ];
        for strategy in [Strategy::Index, Strategy::Literal, Strategy::NeverIndexed] {
            for (size, lists) in [
                (4096, &c2[..]),
                (4096, &REQUESTS[..]),
                (256, &RESPONSES[..]),
            ] {
                let mut e = Encoder::new(strategy);
                e.set_max_table_size(size);
                let mut d = Decoder::new(size);
                for list in lists {
                    let block = encode_pairs(&mut e, list);
                    let got: Vec<_> = decode_all(&mut d, &block, BIG)
                        .unwrap()
                        .into_iter()
                        .map(|(n, v, _)| (n, v))
                        .collect();
                    let want: Vec<_> = pairs(list).into_iter().map(|(n, v, _)| (n, v)).collect();
                    assert_eq!(got, want, "{strategy:?}");
                    assert_eq!(d.table_size(), e.table_size(), "{strategy:?}");
                }
            }
        }
    }

    /// A repeated request costs one byte per field with Strategy::Index, `:path` included.
    #[test]
    fn repeated_requests_cost_a_byte_per_field() {
        let request = [
            (":method", "POST"),
            (":scheme", "https"),
            (":path", "/etcdserverpb.KV/Range"),
            (":authority", "127.0.0.1:2379"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
        ];
        let mut e = Encoder::new(Strategy::Index);
        let first = encode_pairs(&mut e, &request);
        assert!(first.len() > 30);
        let mut out = Vec::with_capacity(64);
        for _ in 0..3 {
            out.clear();
            e.encode(
                request.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
                &mut out,
            );
            assert_eq!(out.len(), request.len());
        }
        // Literal never grows the table, and says the same thing every time
        let mut e = Encoder::new(Strategy::Literal);
        let first = encode_pairs(&mut e, &request);
        assert_eq!(encode_pairs(&mut e, &request), first);
        assert_eq!(e.table_size(), 0);
        assert_eq!(first[0..2], [0x83, 0x87]); // :method POST, :scheme https
        assert_eq!(first[2], 0x04); // :path by static name, without indexing
    }

    #[test]
    fn never_indexed_marks_literals_only() {
        let list = [(":method", "GET"), (":path", "/a"), ("x-secret", "s")];
        let mut e = Encoder::new(Strategy::NeverIndexed);
        let block = encode_pairs(&mut e, &list);
        let got = decode_all(&mut Decoder::new(4096), &block, BIG).unwrap();
        let flags: Vec<bool> = got.iter().map(|f| f.2).collect();
        assert_eq!(flags, [false, true, true]);
    }

    #[test]
    fn size_updates_follow_the_settings() {
        let list = [("x-a", "1")];
        let mut e = Encoder::new(Strategy::Index);
        // no change: no update
        e.set_max_table_size(4096);
        e.set_max_table_size(1 << 20); // more than we use: still 4096
        assert_eq!(encode_pairs(&mut e, &list)[0], 0x40);
        // shrink to 0 and back between two blocks: 0 then 4096 (§4.2)
        e.set_max_table_size(0);
        e.set_max_table_size(4096);
        assert_eq!(e.table_size(), 0);
        let block = encode_pairs(&mut e, &[]);
        assert_eq!(block, hex("20 3fe1 1f"));
        // shrink to 100, then 50, then up to 300: 50 then 300
        e.set_max_table_size(100);
        e.set_max_table_size(50);
        e.set_max_table_size(300);
        assert_eq!(encode_pairs(&mut e, &[]), hex("3f13 3f8d 02"));
        // grow: one update
        e.set_max_table_size(8000);
        assert_eq!(encode_pairs(&mut e, &[]), hex("3fe1 1f"));
        // and only once
        assert_eq!(encode_pairs(&mut e, &[]), Vec::<u8>::new());
        // a field larger than a zero-sized table is not indexed
        e.set_max_table_size(0);
        let block = encode_pairs(&mut e, &list);
        assert_eq!(block[..2], [0x20, 0x00]);
        assert_eq!(e.table_size(), 0);
    }

    /// A pool of names and values to pick from: static names, pseudo-headers, static values,
    /// empty values and arbitrary bytes, so fields repeat and match the tables in every way.
    fn field() -> impl proptest::strategy::Strategy<Value = (Vec<u8>, Vec<u8>)> {
        let name = prop_oneof![
            prop::sample::select(vec![
                ":method",
                ":path",
                ":status",
                ":authority",
                "accept-encoding",
                "content-type",
                "user-agent",
                "x-custom",
                "x-other",
            ])
            .prop_map(|s| s.as_bytes().to_vec()),
            proptest::collection::vec(any::<u8>(), 0..20),
        ];
        let value = prop_oneof![
            prop::sample::select(vec!["", "GET", "/", "200", "gzip, deflate", "v1", "v2"])
                .prop_map(|s| s.as_bytes().to_vec()),
            proptest::collection::vec(any::<u8>(), 0..40),
            proptest::collection::vec(any::<u8>(), 100..300),
        ];
        (name, value)
    }

    fn block_fields() -> impl proptest::strategy::Strategy<Value = Vec<(Vec<u8>, Vec<u8>)>> {
        proptest::collection::vec(field(), 0..12).prop_flat_map(|fresh| {
            // repeat some fields of the block to exercise exact dynamic matches
            let n = fresh.len();
            proptest::collection::vec(any::<prop::sample::Index>(), 0..6).prop_map(move |picks| {
                let mut fields = fresh.clone();
                if n > 0 {
                    fields.extend(picks.iter().map(|p| fresh[p.index(n)].clone()));
                }
                fields
            })
        })
    }

    proptest! {
        /// Keyed blocks are byte for byte what plain encoding gives, whatever the order of the
        /// lists (a few, each under its key, more than the cache keeps) and the table resizes
        /// in between; a list sent again unchanged is copied from the cache.
        #[test]
        fn keyed_blocks_equal_plain_ones(
            strategy in prop::sample::select(vec![
                Strategy::Index,
                Strategy::Literal,
                Strategy::NeverIndexed,
            ]),
            lists in proptest::collection::vec(block_fields(), 1..7),
            steps in proptest::collection::vec(
                (
                    0usize..7,
                    proptest::option::of(prop::sample::select(vec![0usize, 64, 256, 4096])),
                ),
                1..40,
            ),
        ) {
            let mut keyed = Encoder::new(strategy);
            let mut plain = Encoder::new(strategy);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for (pick, resize) in steps {
                if let Some(n) = resize {
                    keyed.set_max_table_size(n);
                    plain.set_max_table_size(n);
                }
                let key = pick % lists.len();
                let fields = &lists[key];
                a.clear();
                b.clear();
                keyed.encode_keyed(key as u64, fields.iter().map(|(n, v)| (&n[..], &v[..])), &mut a);
                plain.encode(fields.iter().map(|(n, v)| (&n[..], &v[..])), &mut b);
                prop_assert_eq!(&a, &b);
                prop_assert_eq!(keyed.table_size(), plain.table_size());
                prop_assert!(keyed.cache.len() <= super::CACHED_BLOCKS);
            }
        }

        /// Several blocks through one encoder and one decoder, the table size changing in
        /// between: the fields come back as given, never-indexed exactly where they should,
        /// and both tables agree in size after every block.
        #[test]
        fn blocks_round_trip(
            strategy in prop::sample::select(vec![
                Strategy::Index,
                Strategy::Literal,
                Strategy::NeverIndexed,
            ]),
            blocks in proptest::collection::vec(
                (
                    block_fields(),
                    proptest::option::of(prop::sample::select(vec![
                        0usize, 1, 32, 64, 100, 256, 1000, 4096, 8192,
                    ])),
                ),
                1..6,
            ),
        ) {
            let mut e = Encoder::new(strategy);
            let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
            let mut out = Vec::new();
            for (fields, resize) in &blocks {
                if let Some(n) = resize {
                    e.set_max_table_size(*n);
                }
                out.clear();
                e.encode(fields.iter().map(|(n, v)| (&n[..], &v[..])), &mut out);
                let got = decode_all(&mut d, &out, BIG);
                let got = got.map_err(|e| TestCaseError::fail(format!("{e}")))?;
                prop_assert_eq!(got.len(), fields.len());
                for ((name, value, never), (n, v)) in got.iter().zip(fields) {
                    prop_assert_eq!(name, n);
                    prop_assert_eq!(value, v);
                    let literal = !matches!(static_find(n, v), Some(Match::Exact(_)));
                    prop_assert_eq!(*never, strategy == Strategy::NeverIndexed && literal);
                }
                prop_assert_eq!(d.table_size(), e.table_size());
                if strategy != Strategy::Index {
                    prop_assert_eq!(e.table_size(), 0);
                }
            }
        }

        /// Any list the budget allows decodes; one byte less is refused, never mis-decoded.
        #[test]
        fn the_budget_is_exact(fields in block_fields()) {
            let total: usize = fields.iter().map(|(n, v)| field_size(n, v)).sum();
            let mut out = Vec::new();
            Encoder::new(Strategy::Index)
                .encode(fields.iter().map(|(n, v)| (&n[..], &v[..])), &mut out);
            prop_assert!(decode_all(&mut Decoder::new(4096), &out, total).is_ok());
            if total > 0 {
                let err = decode_all(&mut Decoder::new(4096), &out, total - 1).unwrap_err();
                prop_assert!(
                    matches!(err, Error::StringTooLong | Error::HeaderListTooLarge),
                    "{:?}", err
                );
            }
        }
    }
}
