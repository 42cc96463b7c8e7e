//! The Huffman code of string literals (RFC 7541 §5.2, Appendix B).
//!
//! The code is canonical (codes of one length are consecutive and ordered by symbol, each
//! length's codes follow the previous length's), which the decoder relies on and a test
//! checks. Decoding looks up the next 9 bits in a 512-entry table, which resolves every
//! symbol of 5 to 9 bits (all the common ones) in one step, and finds a longer code's length
//! by comparing the next 32 bits against each length's upper bound. Both tables are built at
//! compile time from [`CODES`].

use super::{Error, encode_int};

/// The code of each symbol 0..=255 and of EOS (256), right-aligned, with its length in bits,
/// as Appendix B lists them.
#[rustfmt::skip]
const CODES: [(u32, u8); 257] = [
    (0x1ff8, 13), //   0
    (0x7fffd8, 23), //   1
    (0xfffffe2, 28), //   2
    (0xfffffe3, 28), //   3
    (0xfffffe4, 28), //   4
    (0xfffffe5, 28), //   5
    (0xfffffe6, 28), //   6
    (0xfffffe7, 28), //   7
    (0xfffffe8, 28), //   8
    (0xffffea, 24), //   9
    (0x3ffffffc, 30), //  10
    (0xfffffe9, 28), //  11
    (0xfffffea, 28), //  12
    (0x3ffffffd, 30), //  13
    (0xfffffeb, 28), //  14
    (0xfffffec, 28), //  15
    (0xfffffed, 28), //  16
    (0xfffffee, 28), //  17
    (0xfffffef, 28), //  18
    (0xffffff0, 28), //  19
    (0xffffff1, 28), //  20
    (0xffffff2, 28), //  21
    (0x3ffffffe, 30), //  22
    (0xffffff3, 28), //  23
    (0xffffff4, 28), //  24
    (0xffffff5, 28), //  25
    (0xffffff6, 28), //  26
    (0xffffff7, 28), //  27
    (0xffffff8, 28), //  28
    (0xffffff9, 28), //  29
    (0xffffffa, 28), //  30
    (0xffffffb, 28), //  31
    (0x14, 6), //  32 ' '
    (0x3f8, 10), //  33 '!'
    (0x3f9, 10), //  34 '"'
    (0xffa, 12), //  35 '#'
    (0x1ff9, 13), //  36 '$'
    (0x15, 6), //  37 '%'
    (0xf8, 8), //  38 '&'
    (0x7fa, 11), //  39 '\''
    (0x3fa, 10), //  40 '('
    (0x3fb, 10), //  41 ')'
    (0xf9, 8), //  42 '*'
    (0x7fb, 11), //  43 '+'
    (0xfa, 8), //  44 ','
    (0x16, 6), //  45 '-'
    (0x17, 6), //  46 '.'
    (0x18, 6), //  47 '/'
    (0x0, 5), //  48 '0'
    (0x1, 5), //  49 '1'
    (0x2, 5), //  50 '2'
    (0x19, 6), //  51 '3'
    (0x1a, 6), //  52 '4'
    (0x1b, 6), //  53 '5'
    (0x1c, 6), //  54 '6'
    (0x1d, 6), //  55 '7'
    (0x1e, 6), //  56 '8'
    (0x1f, 6), //  57 '9'
    (0x5c, 7), //  58 ':'
    (0xfb, 8), //  59 ';'
    (0x7ffc, 15), //  60 '<'
    (0x20, 6), //  61 '='
    (0xffb, 12), //  62 '>'
    (0x3fc, 10), //  63 '?'
    (0x1ffa, 13), //  64 '@'
    (0x21, 6), //  65 'A'
    (0x5d, 7), //  66 'B'
    (0x5e, 7), //  67 'C'
    (0x5f, 7), //  68 'D'
    (0x60, 7), //  69 'E'
    (0x61, 7), //  70 'F'
    (0x62, 7), //  71 'G'
    (0x63, 7), //  72 'H'
    (0x64, 7), //  73 'I'
    (0x65, 7), //  74 'J'
    (0x66, 7), //  75 'K'
    (0x67, 7), //  76 'L'
    (0x68, 7), //  77 'M'
    (0x69, 7), //  78 'N'
    (0x6a, 7), //  79 'O'
    (0x6b, 7), //  80 'P'
    (0x6c, 7), //  81 'Q'
    (0x6d, 7), //  82 'R'
    (0x6e, 7), //  83 'S'
    (0x6f, 7), //  84 'T'
    (0x70, 7), //  85 'U'
    (0x71, 7), //  86 'V'
    (0x72, 7), //  87 'W'
    (0xfc, 8), //  88 'X'
    (0x73, 7), //  89 'Y'
    (0xfd, 8), //  90 'Z'
    (0x1ffb, 13), //  91 '['
    (0x7fff0, 19), //  92 '\\'
    (0x1ffc, 13), //  93 ']'
    (0x3ffc, 14), //  94 '^'
    (0x22, 6), //  95 '_'
    (0x7ffd, 15), //  96 '`'
    (0x3, 5), //  97 'a'
    (0x23, 6), //  98 'b'
    (0x4, 5), //  99 'c'
    (0x24, 6), // 100 'd'
    (0x5, 5), // 101 'e'
    (0x25, 6), // 102 'f'
    (0x26, 6), // 103 'g'
    (0x27, 6), // 104 'h'
    (0x6, 5), // 105 'i'
    (0x74, 7), // 106 'j'
    (0x75, 7), // 107 'k'
    (0x28, 6), // 108 'l'
    (0x29, 6), // 109 'm'
    (0x2a, 6), // 110 'n'
    (0x7, 5), // 111 'o'
    (0x2b, 6), // 112 'p'
    (0x76, 7), // 113 'q'
    (0x2c, 6), // 114 'r'
    (0x8, 5), // 115 's'
    (0x9, 5), // 116 't'
    (0x2d, 6), // 117 'u'
    (0x77, 7), // 118 'v'
    (0x78, 7), // 119 'w'
    (0x79, 7), // 120 'x'
    (0x7a, 7), // 121 'y'
    (0x7b, 7), // 122 'z'
    (0x7ffe, 15), // 123 '{'
    (0x7fc, 11), // 124 '|'
    (0x3ffd, 14), // 125 '}'
    (0x1ffd, 13), // 126 '~'
    (0xffffffc, 28), // 127
    (0xfffe6, 20), // 128
    (0x3fffd2, 22), // 129
    (0xfffe7, 20), // 130
    (0xfffe8, 20), // 131
    (0x3fffd3, 22), // 132
    (0x3fffd4, 22), // 133
    (0x3fffd5, 22), // 134
    (0x7fffd9, 23), // 135
    (0x3fffd6, 22), // 136
    (0x7fffda, 23), // 137
    (0x7fffdb, 23), // 138
    (0x7fffdc, 23), // 139
    (0x7fffdd, 23), // 140
    (0x7fffde, 23), // 141
    (0xffffeb, 24), // 142
    (0x7fffdf, 23), // 143
    (0xffffec, 24), // 144
    (0xffffed, 24), // 145
    (0x3fffd7, 22), // 146
    (0x7fffe0, 23), // 147
    (0xffffee, 24), // 148
    (0x7fffe1, 23), // 149
    (0x7fffe2, 23), // 150
    (0x7fffe3, 23), // 151
    (0x7fffe4, 23), // 152
    (0x1fffdc, 21), // 153
    (0x3fffd8, 22), // 154
    (0x7fffe5, 23), // 155
    (0x3fffd9, 22), // 156
    (0x7fffe6, 23), // 157
    (0x7fffe7, 23), // 158
    (0xffffef, 24), // 159
    (0x3fffda, 22), // 160
    (0x1fffdd, 21), // 161
    (0xfffe9, 20), // 162
    (0x3fffdb, 22), // 163
    (0x3fffdc, 22), // 164
    (0x7fffe8, 23), // 165
    (0x7fffe9, 23), // 166
    (0x1fffde, 21), // 167
    (0x7fffea, 23), // 168
    (0x3fffdd, 22), // 169
    (0x3fffde, 22), // 170
    (0xfffff0, 24), // 171
    (0x1fffdf, 21), // 172
    (0x3fffdf, 22), // 173
    (0x7fffeb, 23), // 174
    (0x7fffec, 23), // 175
    (0x1fffe0, 21), // 176
    (0x1fffe1, 21), // 177
    (0x3fffe0, 22), // 178
    (0x1fffe2, 21), // 179
    (0x7fffed, 23), // 180
    (0x3fffe1, 22), // 181
    (0x7fffee, 23), // 182
    (0x7fffef, 23), // 183
    (0xfffea, 20), // 184
    (0x3fffe2, 22), // 185
    (0x3fffe3, 22), // 186
    (0x3fffe4, 22), // 187
    (0x7ffff0, 23), // 188
    (0x3fffe5, 22), // 189
    (0x3fffe6, 22), // 190
    (0x7ffff1, 23), // 191
    (0x3ffffe0, 26), // 192
    (0x3ffffe1, 26), // 193
    (0xfffeb, 20), // 194
    (0x7fff1, 19), // 195
    (0x3fffe7, 22), // 196
    (0x7ffff2, 23), // 197
    (0x3fffe8, 22), // 198
    (0x1ffffec, 25), // 199
    (0x3ffffe2, 26), // 200
    (0x3ffffe3, 26), // 201
    (0x3ffffe4, 26), // 202
    (0x7ffffde, 27), // 203
    (0x7ffffdf, 27), // 204
    (0x3ffffe5, 26), // 205
    (0xfffff1, 24), // 206
    (0x1ffffed, 25), // 207
    (0x7fff2, 19), // 208
    (0x1fffe3, 21), // 209
    (0x3ffffe6, 26), // 210
    (0x7ffffe0, 27), // 211
    (0x7ffffe1, 27), // 212
    (0x3ffffe7, 26), // 213
    (0x7ffffe2, 27), // 214
    (0xfffff2, 24), // 215
    (0x1fffe4, 21), // 216
    (0x1fffe5, 21), // 217
    (0x3ffffe8, 26), // 218
    (0x3ffffe9, 26), // 219
    (0xffffffd, 28), // 220
    (0x7ffffe3, 27), // 221
    (0x7ffffe4, 27), // 222
    (0x7ffffe5, 27), // 223
    (0xfffec, 20), // 224
    (0xfffff3, 24), // 225
    (0xfffed, 20), // 226
    (0x1fffe6, 21), // 227
    (0x3fffe9, 22), // 228
    (0x1fffe7, 21), // 229
    (0x1fffe8, 21), // 230
    (0x7ffff3, 23), // 231
    (0x3fffea, 22), // 232
    (0x3fffeb, 22), // 233
    (0x1ffffee, 25), // 234
    (0x1ffffef, 25), // 235
    (0xfffff4, 24), // 236
    (0xfffff5, 24), // 237
    (0x3ffffea, 26), // 238
    (0x7ffff4, 23), // 239
    (0x3ffffeb, 26), // 240
    (0x7ffffe6, 27), // 241
    (0x3ffffec, 26), // 242
    (0x3ffffed, 26), // 243
    (0x7ffffe7, 27), // 244
    (0x7ffffe8, 27), // 245
    (0x7ffffe9, 27), // 246
    (0x7ffffea, 27), // 247
    (0x7ffffeb, 27), // 248
    (0xffffffe, 28), // 249
    (0x7ffffec, 27), // 250
    (0x7ffffed, 27), // 251
    (0x7ffffee, 27), // 252
    (0x7ffffef, 27), // 253
    (0x7fffff0, 27), // 254
    (0x3ffffee, 26), // 255
    (0x3fffffff, 30), // 256 EOS
];

/// The end-of-string symbol: never sent; its leading bits are the padding.
const EOS: u16 = 256;
/// The longest code, in bits.
const MAX_LEN: usize = 30;
/// Bits resolved by one lookup in [`FAST`].
const FAST_BITS: u32 = 9;

/// For the next 9 bits: `symbol | length << 9` when they start with a code of at most 9 bits,
/// else 0.
const FAST: [u16; 1 << FAST_BITS] = build_fast();

/// Symbols ordered by (code length, symbol): canonical code order.
const SORTED: [u16; 257] = build_sorted();

/// Per code length: the first code of that length, where that length's symbols start in
/// [`SORTED`], and the end of its codes as a 32-bit left-aligned bound (exclusive; `u64`
/// because the last bound is 2^32).
const BY_LEN: [(u32, u16, u64); MAX_LEN + 1] = build_by_len();

const fn build_fast() -> [u16; 1 << FAST_BITS] {
    let mut fast = [0u16; 1 << FAST_BITS];
    let mut sym = 0;
    while sym < CODES.len() {
        let (code, len) = CODES[sym];
        if len as u32 <= FAST_BITS {
            let free = FAST_BITS - len as u32;
            let base = (code << free) as usize;
            let mut low = 0;
            while low < 1 << free {
                fast[base + low] = sym as u16 | (len as u16) << FAST_BITS;
                low += 1;
            }
        }
        sym += 1;
    }
    fast
}

const fn build_sorted() -> [u16; 257] {
    let mut sorted = [0u16; 257];
    let mut next = 0;
    let mut len = 1;
    while len <= MAX_LEN {
        let mut sym = 0;
        while sym < CODES.len() {
            if CODES[sym].1 as usize == len {
                sorted[next] = sym as u16;
                next += 1;
            }
            sym += 1;
        }
        len += 1;
    }
    sorted
}

const fn build_by_len() -> [(u32, u16, u64); MAX_LEN + 1] {
    let mut by_len = [(0u32, 0u16, 0u64); MAX_LEN + 1];
    let mut start = 0;
    // the canonical first code of a length with no codes: the previous length's end, shifted
    let mut next_code: u32 = 0;
    let mut len = 1;
    while len <= MAX_LEN {
        let mut count = 0;
        let mut first = u32::MAX;
        let mut sym = 0;
        while sym < CODES.len() {
            if CODES[sym].1 as usize == len {
                if CODES[sym].0 < first {
                    first = CODES[sym].0;
                }
                count += 1;
            }
            sym += 1;
        }
        if count == 0 {
            first = next_code;
        }
        let end = first as u64 + count as u64;
        by_len[len] = (first, start as u16, end << (32 - len));
        start += count;
        next_code = (end as u32) << 1;
        len += 1;
    }
    by_len
}

/// The symbol and code length at the front of `peek` (the next 32 bits, left-aligned, zeros
/// past the end of the input). Every 32-bit pattern starts with some code: the code is
/// complete.
fn lookup(peek: u32) -> (u16, u32) {
    let fast = FAST[(peek >> (32 - FAST_BITS)) as usize];
    if fast != 0 {
        return (fast & 0x1ff, u32::from(fast >> FAST_BITS));
    }
    let mut len = FAST_BITS as usize + 1;
    // The last bound is 2^32, above any peek, so this ends by MAX_LEN.
    while len < MAX_LEN && u64::from(peek) >= BY_LEN[len].2 {
        len += 1;
    }
    let (first, start, _) = BY_LEN[len];
    let offset = (peek >> (32 - len)) - first;
    (SORTED[usize::from(start) + offset as usize], len as u32)
}

/// The length in bytes of `s` Huffman-coded, padding included.
pub(crate) fn encoded_len(s: &[u8]) -> usize {
    let bits: usize = s
        .iter()
        .map(|&b| usize::from(CODES[usize::from(b)].1))
        .sum();
    bits.div_ceil(8)
}

/// Appends `s` Huffman-coded, padded with the leading bits of EOS (all ones): its
/// [`encoded_len`] bytes.
#[cfg(test)]
pub(crate) fn encode(s: &[u8], out: &mut Vec<u8>) {
    let at = out.len();
    out.resize(at + encoded_len(s), 0);
    encode_into(s, &mut out[at..]);
}

/// Appends the string literal `s` (HPACK §5.2, QPACK §4.1.2) after the bits `flags`, its H bit
/// just above a `prefix_bits`-bit length: Huffman-coded when that is strictly shorter, as is
/// otherwise. Returns the string's octets as sent and whether they are Huffman-coded.
///
/// Where both lengths fit the prefix's first byte (short strings: every varying value), the
/// string is coded once, straight into `out`, and sent as is when the code would not be
/// shorter: no pass to count the coded length first.
pub(crate) fn literal(out: &mut Vec<u8>, flags: u8, prefix_bits: u32, s: &[u8]) -> (usize, bool) {
    let h = 1u8 << prefix_bits;
    if s.len() < usize::from(h - 1) {
        let at = out.len();
        out.resize(at + 1 + s.len(), 0);
        // strictly shorter: at most s.len() - 1 bytes
        let room = s.len().saturating_sub(1);
        if !s.is_empty()
            && let Some(n) = encode_into(s, &mut out[at + 1..at + 1 + room])
        {
            out[at] = flags | h | n as u8;
            out.truncate(at + 1 + n);
            return (n, true);
        }
        out[at] = flags | s.len() as u8;
        out[at + 1..].copy_from_slice(s);
        return (s.len(), false);
    }
    let coded = encoded_len(s);
    if coded < s.len() {
        encode_int(out, flags | h, prefix_bits, coded);
        let at = out.len();
        out.resize(at + coded, 0);
        encode_into(s, &mut out[at..]);
        (coded, true)
    } else {
        encode_int(out, flags, prefix_bits, s.len());
        out.extend_from_slice(s);
        (s.len(), false)
    }
}

/// Writes `s` Huffman-coded and padded into the front of `dst`; returns its length, or `None`
/// when the code is longer than `dst` (what was written is then of no use). The bits gather
/// in a 64-bit word that goes out 32 at a time.
fn encode_into(s: &[u8], dst: &mut [u8]) -> Option<usize> {
    let mut n = 0;
    // Fewer than 32 pending bits plus one code of at most 30 fit in a u64; what lies above the
    // pending bits is never read, so it is not cleared.
    let mut acc: u64 = 0;
    let mut bits = 0u32;
    for &b in s {
        let (code, len) = CODES[usize::from(b)];
        acc = acc << len | u64::from(code);
        bits += u32::from(len);
        if bits >= 32 {
            bits -= 32;
            dst.get_mut(n..n + 4)?
                .copy_from_slice(&((acc >> bits) as u32).to_be_bytes());
            n += 4;
        }
    }
    // the last bits, left-aligned in a word and padded with ones
    let tail =
        ((acc << (32 - bits)) as u32 | u32::MAX.checked_shr(bits).unwrap_or(0)).to_be_bytes();
    let rest = bits.div_ceil(8) as usize;
    dst.get_mut(n..n + rest)?.copy_from_slice(&tail[..rest]);
    Some(n + rest)
}

/// Decodes the Huffman-coded `src` into `out` (cleared first). More than `limit` decoded
/// bytes is [`Error::StringTooLong`]; an invalid code, EOS, or bad padding is
/// [`Error::Huffman`].
pub(crate) fn decode(src: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), Error> {
    out.clear();
    // Codes are at least 5 bits long.
    out.reserve((src.len() * 8 / 5).min(limit));
    // The next `bits` bits of the input, right-aligned; nothing above them.
    let mut acc: u64 = 0;
    let mut bits = 0u32;
    let mut pos = 0;
    loop {
        // Refill to at least 56 bits while input lasts: more than the longest code.
        while bits < 56 {
            let Some(&byte) = src.get(pos) else {
                break;
            };
            acc = acc << 8 | u64::from(byte);
            bits += 8;
            pos += 1;
        }
        if bits == 0 {
            return Ok(());
        }
        let peek = if bits >= 32 {
            (acc >> (bits - 32)) as u32
        } else {
            (acc << (32 - bits)) as u32
        };
        let (sym, len) = lookup(peek);
        if len > bits {
            // Only at the end of the input (there are 56 bits otherwise): what is left must
            // be padding, at most 7 bits of EOS's prefix (all ones, which starts no shorter
            // code, so it always lands here).
            if bits > 7 || acc != (1 << bits) - 1 {
                return Err(Error::Huffman);
            }
            return Ok(());
        }
        if sym == EOS {
            return Err(Error::Huffman);
        }
        if out.len() == limit {
            return Err(Error::StringTooLong);
        }
        out.push(sym as u8);
        bits -= len;
        acc &= (1 << bits) - 1;
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::h2::hpack::test_util::hex;

    fn decoded(src: &[u8]) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        decode(src, usize::MAX, &mut out).map(|()| out)
    }

    fn encoded(s: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode(s, &mut out);
        assert_eq!(out.len(), encoded_len(s));
        out
    }

    /// Kraft's sum is exactly 1: a complete prefix code, so every bit pattern starts with a
    /// code and no code is wasted.
    #[test]
    fn the_code_is_complete() {
        // Sum of 2^(30 - len) must be 2^30.
        let sum: u64 = CODES.iter().map(|&(_, len)| 1u64 << (30 - len)).sum();
        assert_eq!(sum, 1 << 30);
        for (sym, &(code, len)) in CODES.iter().enumerate() {
            assert!((5..=30).contains(&len), "symbol {sym}");
            assert!(u64::from(code) < 1 << len, "symbol {sym}");
        }
        // EOS is 30 ones
        assert_eq!(CODES[256], (0x3fff_ffff, 30));
    }

    /// The decoder's tables assume a canonical code: rebuilding the codes from the lengths
    /// alone gives back Appendix B.
    #[test]
    fn the_code_is_canonical() {
        let mut code = 0u32;
        let mut prev_len = u32::from(CODES[usize::from(SORTED[0])].1);
        for &sym in &SORTED {
            let (expected, len) = CODES[usize::from(sym)];
            code <<= u32::from(len) - prev_len;
            prev_len = u32::from(len);
            assert_eq!(code, expected, "symbol {sym}");
            code += 1;
        }
    }

    #[test]
    fn every_byte_round_trips() {
        for b in 0..=255u8 {
            let one = encoded(&[b]);
            assert_eq!(decoded(&one), Ok(vec![b]), "byte {b}");
            let three = encoded(&[b, b'a', b]);
            assert_eq!(decoded(&three), Ok(vec![b, b'a', b]), "byte {b}");
        }
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decoded(&encoded(&all)), Ok(all));
    }

    /// The Huffman-coded strings of RFC 7541 C.4 and C.6, both directions.
    #[test]
    fn rfc_strings() {
        let cases = [
            ("f1e3 c2e5 f23a 6ba0 ab90 f4ff", "www.example.com"),
            ("a8eb 1064 9cbf", "no-cache"),
            ("25a8 49e9 5ba9 7d7f", "custom-key"),
            ("25a8 49e9 5bb8 e8b4 bf", "custom-value"),
            ("6402", "302"),
            ("640e ff", "307"),
            ("aec3 771a 4b", "private"),
            (
                "d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff",
                "Mon, 21 Oct 2013 20:13:21 GMT",
            ),
            (
                "d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff",
                "Mon, 21 Oct 2013 20:13:22 GMT",
            ),
            (
                "9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3",
                "https://www.example.com",
            ),
            ("9bd9 ab", "gzip"),
            (
                "94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 \
                 3160 65c0 03ed 4ee5 b106 3d50 07",
                "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
            ),
        ];
        for (coded, text) in cases {
            assert_eq!(encoded(text.as_bytes()), hex(coded), "{text}");
            assert_eq!(decoded(&hex(coded)), Ok(text.as_bytes().to_vec()), "{text}");
        }
    }

    #[test]
    fn bad_padding_and_eos_are_refused() {
        // 'a' (00011) then 3 bits of ones: fine
        assert_eq!(decoded(&[0b0001_1111]), Ok(b"a".to_vec()));
        // 'a' then padding 011: not all ones
        assert_eq!(decoded(&[0b0001_1011]), Err(Error::Huffman));
        // 'a' then padding 000: not all ones (and no complete code)
        assert_eq!(decoded(&[0b0001_1000]), Err(Error::Huffman));
        // 8 bits of ones: padding longer than 7 bits
        assert_eq!(decoded(&[0xff]), Err(Error::Huffman));
        assert_eq!(decoded(&[0b0001_1111, 0xff]), Err(Error::Huffman));
        // EOS itself (30 ones) then 2 bits of padding
        assert_eq!(decoded(&[0xff, 0xff, 0xff, 0xff]), Err(Error::Huffman));
        // EOS between two symbols: 'a' EOS 'a' = 00011 1{30} 00011 + 4 bits of padding
        let mut bits = String::from("00011");
        bits.push_str(&"1".repeat(30));
        bits.push_str("00011");
        bits.push_str("1111");
        let bytes: Vec<u8> = (0..bits.len() / 8)
            .map(|i| u8::from_str_radix(&bits[i * 8..i * 8 + 8], 2).unwrap())
            .collect();
        assert_eq!(decoded(&bytes), Err(Error::Huffman));
        // the empty string is valid
        assert_eq!(decoded(&[]), Ok(Vec::new()));
    }

    #[test]
    fn the_limit_is_enforced_while_decoding() {
        let coded = encoded(b"no-cache");
        let mut out = Vec::new();
        assert_eq!(decode(&coded, 8, &mut out), Ok(()));
        assert_eq!(decode(&coded, 7, &mut out), Err(Error::StringTooLong));
    }

    /// The literal as the two-pass rule makes it: the coded length counted first, Huffman when
    /// strictly shorter.
    fn literal_by_counting(flags: u8, prefix_bits: u32, s: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let coded = encoded_len(s);
        if coded < s.len() {
            encode_int(&mut out, flags | 1 << prefix_bits, prefix_bits, coded);
            encode(s, &mut out);
        } else {
            encode_int(&mut out, flags, prefix_bits, s.len());
            out.extend_from_slice(s);
        }
        out
    }

    #[test]
    fn a_literal_is_coded_once_and_sent_as_is_when_the_code_is_no_shorter() {
        // "a" codes to 5 bits, one byte: not shorter; "aa" to 10 bits, two bytes: not shorter;
        // "aaa" to 15 bits, two bytes: shorter; "\0" to 13 bits: longer
        let cases: [(&[u8], &[u8]); 5] = [
            (b"", &[0x00]),
            (b"a", &[0x01, b'a']),
            (b"aa", &[0x02, b'a', b'a']),
            (b"aaa", &[0x82, 0x18, 0xc7]),
            (b"\0", &[0x01, 0]),
        ];
        for (s, want) in cases {
            let mut out = vec![0xee];
            assert_eq!(
                literal(&mut out, 0x00, 7, s),
                (want.len() - 1, want[0] & 0x80 != 0),
                "{s:?}"
            );
            assert_eq!(&out[1..], want, "{s:?}");
        }
        // a UUID: 36 characters in 27 bytes, after what was there
        let uuid = b"6f1c2a9e-4b7d-4c1e-9a3f-2d5e8b7c0a14";
        let mut out = vec![0xee];
        assert_eq!(literal(&mut out, 0x00, 7, uuid), (encoded_len(uuid), true));
        assert_eq!(out[..2], [0xee, 0x80 | encoded_len(uuid) as u8]);
        assert_eq!(decoded(&out[2..]), Ok(uuid.to_vec()));
    }

    proptest! {
        #[test]
        fn a_literal_equals_the_two_pass_rule(
            s in proptest::collection::vec(any::<u8>(), 0..300),
            prefix_bits in 3u32..=7,
        ) {
            let flags = 0xffu8.checked_shl(prefix_bits + 1).unwrap_or(0);
            let mut out = vec![0x5a];
            let (len, coded) = literal(&mut out, flags, prefix_bits, &s);
            let want = literal_by_counting(flags, prefix_bits, &s);
            prop_assert_eq!(&out[1..], &want[..]);
            prop_assert_eq!(coded, want[0] & 1 << prefix_bits != 0);
            prop_assert_eq!(len, if coded { encoded_len(&s) } else { s.len() });
        }

        #[test]
        fn arbitrary_strings_round_trip(s in proptest::collection::vec(any::<u8>(), 0..200)) {
            prop_assert_eq!(decoded(&encoded(&s)), Ok(s));
        }

        #[test]
        fn arbitrary_input_never_panics(s in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(text) = decoded(&s) {
                // a valid coding is the canonical one: re-encoding gives the same bytes
                prop_assert_eq!(encoded(&text), s);
            }
        }
    }
}
