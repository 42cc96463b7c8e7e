//! The static table (RFC 7541 §2.3.1, Appendix A) and the dynamic table (§2.3.2, §4).
//!
//! Indices (§2.3.3) start at 1 with the static table's 61 entries; index 62 is the dynamic
//! table's newest entry.

use std::collections::VecDeque;

use super::{ENTRY_OVERHEAD, field_size};

/// Appendix A: the static table, in index order (index 1 first).
pub(super) const STATIC_TABLE: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// What a table holds for a field: an entry with the same name and value, or only the name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Match {
    /// The index (§2.3.3) of an entry equal to the field.
    Exact(usize),
    /// The index of an entry with the field's name.
    Name(usize),
}

/// The static entries named `name`: the index of the first and how many there are (entries
/// of one name are adjacent in Appendix A). A `match` on the bytes: no hashing, no scan.
fn static_name(name: &[u8]) -> Option<(usize, usize)> {
    Some(match name {
        b":authority" => (1, 1),
        b":method" => (2, 2),
        b":path" => (4, 2),
        b":scheme" => (6, 2),
        b":status" => (8, 7),
        b"accept-charset" => (15, 1),
        b"accept-encoding" => (16, 1),
        b"accept-language" => (17, 1),
        b"accept-ranges" => (18, 1),
        b"accept" => (19, 1),
        b"access-control-allow-origin" => (20, 1),
        b"age" => (21, 1),
        b"allow" => (22, 1),
        b"authorization" => (23, 1),
        b"cache-control" => (24, 1),
        b"content-disposition" => (25, 1),
        b"content-encoding" => (26, 1),
        b"content-language" => (27, 1),
        b"content-length" => (28, 1),
        b"content-location" => (29, 1),
        b"content-range" => (30, 1),
        b"content-type" => (31, 1),
        b"cookie" => (32, 1),
        b"date" => (33, 1),
        b"etag" => (34, 1),
        b"expect" => (35, 1),
        b"expires" => (36, 1),
        b"from" => (37, 1),
        b"host" => (38, 1),
        b"if-match" => (39, 1),
        b"if-modified-since" => (40, 1),
        b"if-none-match" => (41, 1),
        b"if-range" => (42, 1),
        b"if-unmodified-since" => (43, 1),
        b"last-modified" => (44, 1),
        b"link" => (45, 1),
        b"location" => (46, 1),
        b"max-forwards" => (47, 1),
        b"proxy-authenticate" => (48, 1),
        b"proxy-authorization" => (49, 1),
        b"range" => (50, 1),
        b"referer" => (51, 1),
        b"refresh" => (52, 1),
        b"retry-after" => (53, 1),
        b"server" => (54, 1),
        b"set-cookie" => (55, 1),
        b"strict-transport-security" => (56, 1),
        b"transfer-encoding" => (57, 1),
        b"user-agent" => (58, 1),
        b"vary" => (59, 1),
        b"via" => (60, 1),
        b"www-authenticate" => (61, 1),
        _ => return None,
    })
}

/// The static table's best match for a field: an equal entry, else the first entry with its
/// name.
pub(super) fn static_find(name: &[u8], value: &[u8]) -> Option<Match> {
    let (first, count) = static_name(name)?;
    let exact = (first..first + count).find(|&index| STATIC_TABLE[index - 1].1 == value);
    Some(exact.map_or(Match::Name(first), Match::Exact))
}

/// The static entry at `index` (1..=61).
pub(super) fn static_entry(index: usize) -> Option<(&'static [u8], &'static [u8])> {
    STATIC_TABLE.get(index.checked_sub(1)?).copied()
}

/// Where one dynamic entry's bytes are in [`DynamicTable::bytes`]: the name, then the value.
#[derive(Clone, Copy, Debug)]
struct EntrySpan {
    offset: usize,
    name_len: usize,
    value_len: usize,
}

impl EntrySpan {
    /// The entry's size (§4.1).
    fn size(self) -> usize {
        self.name_len + self.value_len + ENTRY_OVERHEAD
    }
}

/// The dynamic table (§2.3.2): a FIFO of entries, newest first in index order, evicted from
/// the oldest end (§4.3, §4.4) to keep the sum of entry sizes within the maximum size.
///
/// The entries' bytes live in one buffer, appended at its end and evicted from its front
/// (the oldest live byte is the first span's offset). When an append would grow the buffer
/// and the evicted prefix is at least as long as the live bytes, the live bytes move to the
/// front (`copy_within`) instead: every byte is moved at most once per byte appended, the
/// buffer stays within a small multiple of the maximum size, and once it and the span queue
/// have grown to their working size, inserting and evicting allocate nothing.
#[derive(Debug)]
pub(super) struct DynamicTable {
    bytes: Vec<u8>,
    /// Oldest entry at the front.
    spans: VecDeque<EntrySpan>,
    /// Sum of the entries' sizes (§4.1).
    size: usize,
    max_size: usize,
}

impl DynamicTable {
    /// An empty table with this maximum size; nothing is allocated until the first insert.
    pub(super) fn new(max_size: usize) -> DynamicTable {
        DynamicTable {
            bytes: Vec::new(),
            spans: VecDeque::new(),
            size: 0,
            max_size,
        }
    }

    /// The sum of the entries' sizes (§4.1).
    pub(super) fn size(&self) -> usize {
        self.size
    }

    /// The maximum size (§4.2).
    pub(super) fn max_size(&self) -> usize {
        self.max_size
    }

    /// The number of entries.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.spans.len()
    }

    /// The entry at dynamic index `index` (1 = newest; the HPACK index minus 61).
    pub(super) fn get(&self, index: usize) -> Option<(&[u8], &[u8])> {
        if index == 0 {
            return None;
        }
        let position = self.spans.len().checked_sub(index)?;
        Some(self.entry(self.spans[position]))
    }

    fn entry(&self, span: EntrySpan) -> (&[u8], &[u8]) {
        let name_end = span.offset + span.name_len;
        (
            &self.bytes[span.offset..name_end],
            &self.bytes[name_end..name_end + span.value_len],
        )
    }

    /// The entries, newest first (dynamic index 1, 2, ...).
    pub(super) fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.spans.iter().rev().map(|&span| self.entry(span))
    }

    /// The best match for a field, newest entries first: an equal entry, else the newest
    /// with its name; dynamic indices (1 = newest).
    pub(super) fn find(&self, name: &[u8], value: &[u8]) -> Option<Match> {
        let mut name_match = None;
        for (index, (n, v)) in self.iter().enumerate() {
            if n == name {
                if v == value {
                    return Some(Match::Exact(index + 1));
                }
                name_match.get_or_insert(Match::Name(index + 1));
            }
        }
        name_match
    }

    /// Sets the maximum size, evicting the oldest entries until the table fits (§4.3).
    pub(super) fn set_max_size(&mut self, max_size: usize) {
        self.max_size = max_size;
        self.evict_to(max_size);
    }

    /// Adds an entry as the newest (§4.4): the oldest entries are evicted until it fits; an
    /// entry larger than the maximum size empties the table and is not added.
    pub(super) fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = field_size(name, value);
        if size > self.max_size {
            self.evict_to(0);
            return;
        }
        self.evict_to(self.max_size - size);
        let len = name.len() + value.len();
        if self.bytes.len() + len > self.bytes.capacity() {
            self.compact();
        }
        let offset = self.bytes.len();
        self.bytes.extend_from_slice(name);
        self.bytes.extend_from_slice(value);
        self.spans.push_back(EntrySpan {
            offset,
            name_len: name.len(),
            value_len: value.len(),
        });
        self.size += size;
    }

    fn evict_to(&mut self, target: usize) {
        while self.size > target {
            let Some(span) = self.spans.pop_front() else {
                break;
            };
            self.size -= span.size();
        }
        if self.spans.is_empty() {
            self.bytes.clear();
        }
    }

    /// Moves the live bytes to the front of the buffer when the evicted prefix is at least as
    /// long as they are (so the move is paid for by the appends that preceded it).
    fn compact(&mut self) {
        let Some(start) = self.spans.front().map(|span| span.offset) else {
            return;
        };
        let live = self.bytes.len() - start;
        if start < live {
            return;
        }
        self.bytes.copy_within(start.., 0);
        self.bytes.truncate(live);
        for span in &mut self.spans {
            span.offset -= start;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_lookup_agrees_with_the_table() {
        for (i, &(name, value)) in STATIC_TABLE.iter().enumerate() {
            let index = i + 1;
            let first = STATIC_TABLE.iter().position(|e| e.0 == name).unwrap() + 1;
            let count = STATIC_TABLE.iter().filter(|e| e.0 == name).count();
            assert_eq!(static_name(name), Some((first, count)), "{index}");
            assert_eq!(static_find(name, value), Some(Match::Exact(index)));
            assert_eq!(static_entry(index), Some((name, value)));
        }
        assert_eq!(static_find(b":path", b"/x"), Some(Match::Name(4)));
        assert_eq!(static_find(b":status", b"500"), Some(Match::Exact(14)));
        assert_eq!(
            static_find(b"accept-encoding", b"gzip"),
            Some(Match::Name(16))
        );
        assert_eq!(static_find(b"user-agent", b""), Some(Match::Exact(58)));
        assert_eq!(static_find(b"x-custom", b""), None);
        assert_eq!(static_find(b"Host", b""), None);
        assert_eq!(static_entry(0), None);
        assert_eq!(static_entry(62), None);
    }

    fn contents(table: &DynamicTable) -> Vec<(Vec<u8>, Vec<u8>)> {
        table
            .iter()
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect()
    }

    #[test]
    fn inserts_evict_the_oldest() {
        let mut t = DynamicTable::new(100);
        t.insert(b"a", b"1"); // 34
        t.insert(b"b", b"22"); // 35
        assert_eq!(t.size(), 69);
        assert_eq!(t.get(1), Some((&b"b"[..], &b"22"[..])));
        assert_eq!(t.get(2), Some((&b"a"[..], &b"1"[..])));
        assert_eq!(t.get(0), None);
        assert_eq!(t.get(3), None);
        t.insert(b"c", b"333"); // 36: a goes
        assert_eq!(
            contents(&t),
            [
                (b"c".to_vec(), b"333".to_vec()),
                (b"b".to_vec(), b"22".to_vec())
            ]
        );
        assert_eq!(t.size(), 71);
        assert_eq!(t.find(b"b", b"22"), Some(Match::Exact(2)));
        assert_eq!(t.find(b"b", b"x"), Some(Match::Name(2)));
        assert_eq!(t.find(b"z", b""), None);
        // an entry exactly the maximum size fits alone
        t.insert(b"d", &[b'x'; 67]);
        assert_eq!((t.len(), t.size()), (1, 100));
        // one larger empties the table
        t.insert(b"e", &[b'x'; 68]);
        assert_eq!((t.len(), t.size()), (0, 0));
    }

    #[test]
    fn shrinking_evicts_and_zero_empties() {
        let mut t = DynamicTable::new(4096);
        for i in 0..10u8 {
            t.insert(&[b'n', i], &[i; 10]); // 44 each
        }
        assert_eq!(t.size(), 440);
        t.set_max_size(100);
        assert_eq!((t.len(), t.size()), (2, 88));
        assert_eq!(t.get(1), Some((&[b'n', 9][..], &[9; 10][..])));
        t.set_max_size(0);
        assert_eq!((t.len(), t.size()), (0, 0));
        t.insert(b"a", b"b");
        assert_eq!(t.len(), 0);
    }

    /// Many inserts through a small table: the contents stay right across compactions and
    /// the buffer stops growing.
    #[test]
    fn the_buffer_is_reused() {
        let mut t = DynamicTable::new(256);
        let mut capacity = 0;
        for i in 0..10_000usize {
            let value = vec![b'a' + (i % 26) as u8; i % 50];
            t.insert(format!("k{i}").as_bytes(), &value);
            assert_eq!(t.get(1), Some((format!("k{i}").as_bytes(), &value[..])));
            assert!(t.size() <= 256);
            if i == 1000 {
                capacity = t.bytes.capacity();
            }
        }
        assert!(capacity <= 4 * 256, "{capacity}");
        assert_eq!(t.bytes.capacity(), capacity);
        let sum: usize = t.iter().map(|(n, v)| field_size(n, v)).sum();
        assert_eq!(sum, t.size());
    }
}
