//! Chunked transfer coding: the resumable decoder and the chunk encoders.

use bytes::{Buf, BufMut, BytesMut};

use super::{Error, MAX_CHUNK_LINE, MAX_TRAILER_BYTES, is_ctl, is_tchar};

/// Where the chunked decoder is within the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading the hex digits of a chunk-size line.
    Size,
    /// Whitespace after the size digits, before `;` or CR.
    SizeWs,
    /// Inside chunk extensions, up to CR.
    SizeExt,
    /// Saw CR at the end of a size line.
    SizeLf,
    /// Copying chunk payload; `ChunkedDecoder::size` bytes remain.
    Data,
    /// Expecting the CR after chunk payload.
    DataCr,
    /// Expecting the LF after chunk payload.
    DataLf,
    /// At the start of a trailer line (or the final CRLF).
    TrailerStart,
    /// Inside a trailer field name.
    TrailerName,
    /// Inside a trailer field value.
    TrailerValue,
    /// Saw CR at the end of a trailer line.
    TrailerLf,
    /// Saw the CR of the final CRLF.
    FinalLf,
    /// The whole body has been consumed.
    Done,
    /// A previous call failed; the error is repeated.
    Failed(Error),
}

/// Resumable chunked-body decoder: can be fed the input split at any byte boundary.
///
/// Line endings must be CRLF: a bare LF anywhere in the framing is
/// [`Error::BadChunk`]`("bare LF in chunked framing")`. Chunk extensions are accepted
/// (any bytes except control characters other than HTAB) and discarded; whitespace is
/// allowed between the size and `;` or CR. Trailer fields must look like `token ":" value`
/// and are discarded. After an error the decoder stays failed and returns the same error
/// until [`ChunkedDecoder::reset`].
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    max_body: u64,
    state: State,
    /// Size being parsed, then the payload bytes still to copy.
    size: u64,
    /// Bytes of the current size line so far (excluding CRLF).
    line_len: usize,
    /// Bytes of the trailer section so far.
    trailer_len: usize,
    framing: u64,
    data: u64,
    /// data chunks seen (the last, empty chunk not counted)
    chunks: u64,
}

/// Makes room for `n` more bytes in `dst`, whose total can never pass `max_body` (the size
/// lines are checked first): doubling, as `BytesMut` grows, until a doubling would pass the
/// limit; then exactly to the limit (BytesMut would double to twice it).
fn grow_within(dst: &mut BytesMut, n: usize, max_body: u64) {
    let need = dst.len() + n;
    if need <= dst.capacity() {
        return;
    }
    let limit = usize::try_from(max_body).unwrap_or(usize::MAX).max(need);
    if dst.capacity().saturating_mul(2).max(need) > limit {
        let mut exact = BytesMut::with_capacity(limit);
        exact.extend_from_slice(dst);
        *dst = exact;
    }
}

impl ChunkedDecoder {
    /// A decoder that rejects bodies with more than `max_body` payload bytes.
    pub fn new(max_body: u64) -> Self {
        ChunkedDecoder {
            max_body,
            state: State::Size,
            size: 0,
            line_len: 0,
            trailer_len: 0,
            framing: 0,
            data: 0,
            chunks: 0,
        }
    }

    /// Moves chunk data from `src` to the end of `dst`, consuming framing (size lines with
    /// optional `;ext`, CRLFs, last-chunk, trailer fields, final CRLF) as it goes.
    ///
    /// Returns `Ok(true)` once the whole body including trailers is consumed (bytes after
    /// it stay in `src`), `Ok(false)` if it needs more input (everything usable was
    /// consumed). A chunk whose size would take the total above `max_body` is rejected
    /// as soon as its size line is complete, before any of its data is copied.
    /// On error, bytes before the offending byte have been consumed.
    pub fn decode(&mut self, src: &mut BytesMut, dst: &mut BytesMut) -> Result<bool, Error> {
        loop {
            match self.state {
                State::Done => return Ok(true),
                State::Failed(e) => return Err(e),
                State::Data => {
                    if src.is_empty() {
                        return Ok(false);
                    }
                    let n = usize::try_from(self.size).map_or(src.len(), |s| s.min(src.len()));
                    grow_within(dst, n, self.max_body);
                    dst.extend_from_slice(&src[..n]);
                    src.advance(n);
                    let n = n as u64;
                    self.data += n;
                    self.size -= n;
                    if self.size == 0 {
                        self.state = State::DataCr;
                    }
                }
                _ => {
                    if src.is_empty() {
                        return Ok(false);
                    }
                    let mut used = 0usize;
                    let mut outcome = Ok(());
                    for &b in src.iter() {
                        if let Err(e) = self.step(b) {
                            outcome = Err(e);
                            break;
                        }
                        used += 1;
                        if matches!(self.state, State::Data | State::Done) {
                            break;
                        }
                    }
                    src.advance(used);
                    self.framing = self.framing.saturating_add(used as u64);
                    if let Err(e) = outcome {
                        self.state = State::Failed(e);
                        return Err(e);
                    }
                }
            }
        }
    }

    /// Advances the framing state machine by one byte.
    fn step(&mut self, b: u8) -> Result<(), Error> {
        const BARE_LF: Error = Error::BadChunk("bare LF in chunked framing");
        const EXPECTED_LF: Error = Error::BadChunk("expected LF after CR");
        const BAD_TRAILER: Error = Error::BadChunk("invalid trailer field");
        const MISSING_CRLF: Error = Error::BadChunk("missing CRLF after chunk data");
        match self.state {
            State::Size => match b {
                b'\r' if self.line_len == 0 => {
                    return Err(Error::BadChunk("missing chunk size"));
                }
                b'\r' => self.state = State::SizeLf,
                b'\n' => return Err(BARE_LF),
                _ => {
                    self.bump_line()?;
                    if let Some(digit) = hex_value(b) {
                        self.size = self
                            .size
                            .checked_mul(16)
                            .and_then(|s| s.checked_add(u64::from(digit)))
                            .ok_or(Error::BadChunk("chunk size overflow"))?;
                    } else if self.line_len == 1 {
                        return Err(Error::BadChunk("missing chunk size"));
                    } else if b == b';' {
                        self.state = State::SizeExt;
                    } else if b == b' ' || b == b'\t' {
                        self.state = State::SizeWs;
                    } else {
                        return Err(Error::BadChunk("invalid chunk size"));
                    }
                }
            },
            State::SizeWs => match b {
                b'\r' => self.state = State::SizeLf,
                b'\n' => return Err(BARE_LF),
                b' ' | b'\t' => self.bump_line()?,
                b';' => {
                    self.bump_line()?;
                    self.state = State::SizeExt;
                }
                _ => return Err(Error::BadChunk("invalid chunk size")),
            },
            State::SizeExt => match b {
                b'\r' => self.state = State::SizeLf,
                b'\n' => return Err(BARE_LF),
                _ if is_ctl(b) => return Err(Error::BadChunk("invalid chunk extension")),
                _ => self.bump_line()?,
            },
            State::SizeLf => {
                if b != b'\n' {
                    return Err(EXPECTED_LF);
                }
                let total = self.data.checked_add(self.size);
                if total.is_none_or(|t| t > self.max_body) {
                    return Err(Error::BodyTooLarge);
                }
                self.line_len = 0;
                self.state = if self.size == 0 {
                    self.trailer_len = 0;
                    State::TrailerStart
                } else {
                    self.chunks += 1;
                    State::Data
                };
            }
            // Handled in bulk by `decode`; never stepped.
            State::Data => {}
            State::DataCr => {
                if b != b'\r' {
                    return Err(MISSING_CRLF);
                }
                self.state = State::DataLf;
            }
            State::DataLf => {
                if b != b'\n' {
                    return Err(MISSING_CRLF);
                }
                self.size = 0;
                self.state = State::Size;
            }
            State::TrailerStart
            | State::TrailerName
            | State::TrailerValue
            | State::TrailerLf
            | State::FinalLf => {
                self.trailer_len += 1;
                if self.trailer_len > MAX_TRAILER_BYTES {
                    return Err(Error::TrailersTooLarge);
                }
                self.state = match (self.state, b) {
                    (State::TrailerLf, b'\n') => State::TrailerStart,
                    (State::FinalLf, b'\n') => State::Done,
                    (State::TrailerLf | State::FinalLf, _) => return Err(EXPECTED_LF),
                    (_, b'\n') => return Err(BARE_LF),
                    (State::TrailerStart, b'\r') => State::FinalLf,
                    (State::TrailerStart | State::TrailerName, _) if is_tchar(b) => {
                        State::TrailerName
                    }
                    (State::TrailerName, b':') => State::TrailerValue,
                    (State::TrailerValue, b'\r') => State::TrailerLf,
                    (State::TrailerValue, _) if !is_ctl(b) => State::TrailerValue,
                    _ => return Err(BAD_TRAILER),
                };
            }
            // `decode` never steps in these states.
            State::Done | State::Failed(_) => {}
        }
        Ok(())
    }

    fn bump_line(&mut self) -> Result<(), Error> {
        self.line_len += 1;
        if self.line_len > MAX_CHUNK_LINE {
            Err(Error::ChunkLineTooLong)
        } else {
            Ok(())
        }
    }

    /// Size lines, CRLFs, last chunk and trailers consumed so far.
    pub fn framing_bytes(&self) -> u64 {
        self.framing
    }

    /// Chunk payload bytes moved to `dst` so far.
    pub fn data_bytes(&self) -> u64 {
        self.data
    }

    /// Data chunks whose size line has been read (the terminating zero-size chunk excluded).
    pub fn chunks(&self) -> u64 {
        self.chunks
    }

    /// Whether the whole body has been consumed.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Ready for the next body, same limit.
    pub fn reset(&mut self) {
        *self = ChunkedDecoder::new(self.max_body);
    }
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Appends `data` as one chunk: `"{len:x}\r\n{data}\r\n"`.
///
/// Empty `data` writes nothing, since a zero-size chunk would end the body; use
/// [`encode_last_chunk`] for that.
pub fn encode_chunk(data: &[u8], dst: &mut BytesMut) {
    if data.is_empty() {
        return;
    }
    let mut digits = [0u8; 16];
    let size = render_hex(data.len() as u64, &mut digits);
    dst.reserve(size.len() + data.len() + 4);
    dst.put_slice(size);
    dst.put_slice(b"\r\n");
    dst.put_slice(data);
    dst.put_slice(b"\r\n");
}

/// Appends the last chunk with an empty trailer section: `"0\r\n\r\n"`.
pub fn encode_last_chunk(dst: &mut BytesMut) {
    dst.put_slice(b"0\r\n\r\n");
}

/// Lowercase hex digits of `v`, rendered into the end of `buf`.
fn render_hex(mut v: u64, buf: &mut [u8; 16]) -> &[u8] {
    let mut start = buf.len();
    for slot in buf.iter_mut().rev() {
        *slot = b"0123456789abcdef"[(v & 0xf) as usize];
        start -= 1;
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    buf.get(start..).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dechunked_buffer_never_grows_past_the_body_limit() {
        // 100 chunks of 1000 bytes under a 100,000-byte limit: doubling would reach 131,072
        let limit = 100_000;
        let mut src = BytesMut::new();
        for _ in 0..100 {
            encode_chunk(&[b'z'; 1000], &mut src);
        }
        encode_last_chunk(&mut src);
        let mut d = ChunkedDecoder::new(limit);
        let mut dst = BytesMut::new();
        assert_eq!(d.decode(&mut src, &mut dst), Ok(true));
        assert_eq!(dst.len(), 100_000);
        assert!(dst.capacity() <= 100_000, "{}", dst.capacity());
    }
    use proptest::prelude::*;

    const BIG: u64 = u64::MAX;

    fn dechunk(raw: &[u8], max_body: u64) -> (Result<bool, Error>, BytesMut, BytesMut) {
        let mut src = BytesMut::from(raw);
        let mut dst = BytesMut::new();
        let mut dec = ChunkedDecoder::new(max_body);
        let r = dec.decode(&mut src, &mut dst);
        (r, dst, src)
    }

    #[test]
    fn chunked_basic_with_leftover() {
        let raw = b"5\r\nhello\r\n6;name=val;x=\"q\"\r\n world\r\n0\r\n\r\nHTTP/1.1";
        let mut src = BytesMut::from(&raw[..]);
        let mut dst = BytesMut::new();
        let mut dec = ChunkedDecoder::new(BIG);
        assert_eq!(dec.decode(&mut src, &mut dst), Ok(true));
        assert_eq!(&dst[..], b"hello world");
        assert_eq!(&src[..], b"HTTP/1.1");
        assert_eq!(dec.data_bytes(), 11);
        assert_eq!(
            dec.framing_bytes() + dec.data_bytes(),
            (raw.len() - 8) as u64
        );
        assert!(dec.is_done());
        // Done is sticky and consumes nothing more.
        assert_eq!(dec.decode(&mut src, &mut dst), Ok(true));
        assert_eq!(&src[..], b"HTTP/1.1");

        dec.reset();
        assert!(!dec.is_done());
        assert_eq!(dec.data_bytes(), 0);
        assert_eq!(dec.framing_bytes(), 0);
        let mut src =
            BytesMut::from(&b"A\r\n0123456789\r\n0\r\nExpires: never\r\nX-Y:z\r\n\r\n"[..]);
        let mut dst = BytesMut::new();
        assert_eq!(dec.decode(&mut src, &mut dst), Ok(true));
        assert_eq!(&dst[..], b"0123456789");
        assert!(src.is_empty());
    }

    #[test]
    fn chunked_needs_more() {
        let raw = b"5\r\nhel";
        let mut src = BytesMut::from(&raw[..]);
        let mut dst = BytesMut::new();
        let mut dec = ChunkedDecoder::new(BIG);
        assert_eq!(dec.decode(&mut src, &mut dst), Ok(false));
        assert!(src.is_empty());
        assert_eq!(&dst[..], b"hel");
        src.extend_from_slice(b"lo\r\n0\r\n\r");
        assert_eq!(dec.decode(&mut src, &mut dst), Ok(false));
        src.extend_from_slice(b"\n");
        assert_eq!(dec.decode(&mut src, &mut dst), Ok(true));
        assert_eq!(&dst[..], b"hello");
    }

    #[test]
    fn chunked_errors() {
        let cases: &[(&[u8], Error)] = &[
            (
                b"5\nhello\r\n",
                Error::BadChunk("bare LF in chunked framing"),
            ),
            (
                b"5\r\nhello\n0\r\n\r\n",
                Error::BadChunk("missing CRLF after chunk data"),
            ),
            (
                b"5\r\nhelloX\r\n",
                Error::BadChunk("missing CRLF after chunk data"),
            ),
            (
                b"5\r\nhello\rX",
                Error::BadChunk("missing CRLF after chunk data"),
            ),
            (b"\r\n", Error::BadChunk("missing chunk size")),
            (b";ext\r\n", Error::BadChunk("missing chunk size")),
            (b"g\r\n", Error::BadChunk("missing chunk size")),
            (b"5g\r\n", Error::BadChunk("invalid chunk size")),
            (b"5 g\r\n", Error::BadChunk("invalid chunk size")),
            (b"5;a\x01\r\n", Error::BadChunk("invalid chunk extension")),
            (b"5\rX", Error::BadChunk("expected LF after CR")),
            (
                b"10000000000000000\r\n",
                Error::BadChunk("chunk size overflow"),
            ),
            (
                b"0\r\nBad Name: x\r\n\r\n",
                Error::BadChunk("invalid trailer field"),
            ),
            (b"0\r\n:x\r\n\r\n", Error::BadChunk("invalid trailer field")),
            (
                b"0\r\nA: \x00\r\n\r\n",
                Error::BadChunk("invalid trailer field"),
            ),
            (
                b"0\r\nA: b\n\r\n",
                Error::BadChunk("bare LF in chunked framing"),
            ),
            (b"0\r\n\n", Error::BadChunk("bare LF in chunked framing")),
            (b"0\r\n\rX", Error::BadChunk("expected LF after CR")),
        ];
        for (raw, err) in cases {
            let (r, _, _) = dechunk(raw, BIG);
            assert_eq!(r, Err(*err), "{:?}", String::from_utf8_lossy(raw));
        }
        // 16 hex digits fit in u64; leading zeros never overflow.
        let (r, _, _) = dechunk(b"ffffffffffffffff\r\n", BIG);
        assert_eq!(r, Ok(false));
        let mut zeros = vec![b'0'; 100];
        zeros.extend_from_slice(b"3\r\nabc\r\n0\r\n\r\n");
        let (r, dst, _) = dechunk(&zeros, BIG);
        assert_eq!(r, Ok(true));
        assert_eq!(&dst[..], b"abc");
        // Whitespace before the extension or the CRLF is tolerated.
        let (r, dst, _) = dechunk(b"3 \t; a=b\r\nabc\r\n0 \r\n\r\n", BIG);
        assert_eq!(r, Ok(true));
        assert_eq!(&dst[..], b"abc");
    }

    #[test]
    fn chunked_failure_is_sticky() {
        let mut src = BytesMut::from(&b"5\r\nhelloXX"[..]);
        let mut dst = BytesMut::new();
        let mut dec = ChunkedDecoder::new(BIG);
        let err = dec.decode(&mut src, &mut dst).unwrap_err();
        assert_eq!(&src[..], b"XX");
        src.clear();
        src.extend_from_slice(b"\r\n0\r\n\r\n");
        assert_eq!(dec.decode(&mut src, &mut dst), Err(err));
        dec.reset();
        let mut src = BytesMut::from(&b"0\r\n\r\n"[..]);
        assert_eq!(dec.decode(&mut src, &mut dst), Ok(true));
    }

    #[test]
    fn chunked_limits() {
        // Body limit is checked when the size line completes, before data arrives.
        let (r, dst, _) = dechunk(b"5\r\nhello\r\n6\r\n", 10);
        assert_eq!(r, Err(Error::BodyTooLarge));
        assert_eq!(&dst[..], b"hello");
        let (r, _, _) = dechunk(b"5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n", 10);
        assert_eq!(r, Ok(true));
        let (r, _, _) = dechunk(b"ffffffffffffffff\r\n", u64::MAX - 1);
        assert_eq!(r, Err(Error::BodyTooLarge));

        let mut line = b"1;".to_vec();
        line.resize(MAX_CHUNK_LINE, b'x');
        line.extend_from_slice(b"\r\nZ\r\n0\r\n\r\n");
        let (r, dst, _) = dechunk(&line, BIG);
        assert_eq!(r, Ok(true));
        assert_eq!(&dst[..], b"Z");

        let mut line = b"1;".to_vec();
        line.resize(MAX_CHUNK_LINE + 1, b'x');
        let (r, _, _) = dechunk(&line, BIG);
        assert_eq!(r, Err(Error::ChunkLineTooLong));
        let (r, _, _) = dechunk(&vec![b'0'; MAX_CHUNK_LINE + 1], BIG);
        assert_eq!(r, Err(Error::ChunkLineTooLong));

        let trailer = |value_len: usize| {
            let mut raw = b"0\r\nX: ".to_vec();
            raw.resize(raw.len() + value_len, b'v');
            raw.extend_from_slice(b"\r\n\r\n");
            raw
        };
        // "X: " + value + CRLF + CRLF == MAX_TRAILER_BYTES
        let fits = MAX_TRAILER_BYTES - 7;
        assert_eq!(dechunk(&trailer(fits), BIG).0, Ok(true));
        assert_eq!(
            dechunk(&trailer(fits + 1), BIG).0,
            Err(Error::TrailersTooLarge)
        );
    }

    #[test]
    fn encode_chunk_format() {
        let mut dst = BytesMut::new();
        encode_chunk(b"", &mut dst);
        assert!(dst.is_empty());
        encode_chunk(&[7u8; 26], &mut dst);
        encode_last_chunk(&mut dst);
        let mut expected = b"1a\r\n".to_vec();
        expected.extend_from_slice(&[7u8; 26]);
        expected.extend_from_slice(b"\r\n0\r\n\r\n");
        assert_eq!(&dst[..], &expected[..]);
        let mut digits = [0u8; 16];
        assert_eq!(render_hex(0, &mut digits), b"0");
        assert_eq!(render_hex(u64::MAX, &mut digits), b"ffffffffffffffff");
    }

    /// Feeds `input` to a fresh decoder in the given pieces (split points), as a caller
    /// reading from a socket would: leftover bytes stay in `src` for the next read.
    fn feed_split(
        input: &[u8],
        splits: &[usize],
        max_body: u64,
    ) -> (Result<bool, Error>, BytesMut, BytesMut, ChunkedDecoder) {
        let mut cuts: Vec<usize> = splits.iter().map(|s| s % (input.len() + 1)).collect();
        cuts.push(input.len());
        cuts.sort_unstable();
        let mut dec = ChunkedDecoder::new(max_body);
        let mut src = BytesMut::new();
        let mut dst = BytesMut::new();
        let mut fed = 0;
        let mut result = Ok(false);
        for cut in cuts {
            src.extend_from_slice(&input[fed..cut]);
            fed = cut;
            result = dec.decode(&mut src, &mut dst);
            if result != Ok(false) {
                break;
            }
        }
        src.extend_from_slice(&input[fed..]);
        (result, dst, src, dec)
    }

    #[derive(Debug, Clone)]
    struct ChunkSpec {
        data: Vec<u8>,
        ext: Option<String>,
        upper: bool,
    }

    fn chunk_spec() -> impl Strategy<Value = ChunkSpec> {
        (
            prop_oneof![
                3 => proptest::collection::vec(any::<u8>(), 0..64),
                1 => proptest::collection::vec(any::<u8>(), 64..700),
            ],
            proptest::option::of("[ \t]{0,2};[a-z]{1,5}(=[a-zA-Z0-9\"]{0,8})?"),
            any::<bool>(),
        )
            .prop_map(|(data, ext, upper)| ChunkSpec { data, ext, upper })
    }

    fn encode_specs(chunks: &[ChunkSpec], trailers: &[(String, String)]) -> (Vec<u8>, Vec<u8>) {
        let mut out = BytesMut::new();
        let mut payload = Vec::new();
        for c in chunks {
            if c.data.is_empty() {
                continue; // a zero-size chunk would end the body
            }
            payload.extend_from_slice(&c.data);
            if c.ext.is_none() && !c.upper {
                encode_chunk(&c.data, &mut out);
            } else {
                let size = if c.upper {
                    format!("{:X}", c.data.len())
                } else {
                    format!("{:x}", c.data.len())
                };
                out.extend_from_slice(size.as_bytes());
                out.extend_from_slice(c.ext.as_deref().unwrap_or("").as_bytes());
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(&c.data);
                out.extend_from_slice(b"\r\n");
            }
        }
        if trailers.is_empty() {
            encode_last_chunk(&mut out);
        } else {
            out.extend_from_slice(b"0\r\n");
            for (name, value) in trailers {
                out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
            }
            out.extend_from_slice(b"\r\n");
        }
        (out.to_vec(), payload)
    }

    proptest! {
        #[test]
        fn chunked_round_trip_random_splits(
            chunks in proptest::collection::vec(chunk_spec(), 0..12),
            trailers in proptest::collection::vec(("[A-Za-z][A-Za-z0-9-]{0,10}", "[ -~]{0,20}"), 0..3),
            leftover in proptest::collection::vec(any::<u8>(), 0..16),
            splits in proptest::collection::vec(any::<usize>(), 0..8),
        ) {
            let (encoded, payload) = encode_specs(&chunks, &trailers);
            let mut input = encoded.clone();
            input.extend_from_slice(&leftover);
            let (result, dst, src, dec) = feed_split(&input, &splits, BIG);
            prop_assert_eq!(result, Ok(true));
            prop_assert_eq!(&dst[..], &payload[..]);
            prop_assert_eq!(&src[..], &leftover[..]);
            prop_assert_eq!(dec.data_bytes(), payload.len() as u64);
            prop_assert_eq!(dec.framing_bytes() + dec.data_bytes(), encoded.len() as u64);
        }

        #[test]
        fn chunked_arbitrary_bytes_never_panic_and_split_invariant(
            input in proptest::collection::vec(any::<u8>(), 0..256),
            splits in proptest::collection::vec(any::<usize>(), 0..8),
            max_body in prop_oneof![Just(u64::MAX), 0u64..64],
        ) {
            let (whole, whole_dst, _, whole_dec) = feed_split(&input, &[], max_body);
            let (split, split_dst, _, split_dec) = feed_split(&input, &splits, max_body);
            prop_assert_eq!(whole, split);
            prop_assert_eq!(whole_dst, split_dst);
            prop_assert_eq!(whole_dec.framing_bytes(), split_dec.framing_bytes());
            prop_assert_eq!(whole_dec.data_bytes(), split_dec.data_bytes());
        }

        #[test]
        fn chunked_mostly_valid_bytes_never_panic(
            input in proptest::collection::vec(
                prop_oneof![Just(b'\r'), Just(b'\n'), Just(b'0'), Just(b'1'), Just(b'f'), Just(b';'), Just(b':'), Just(b'a'), Just(b' ')],
                0..256,
            ),
            splits in proptest::collection::vec(any::<usize>(), 0..8),
        ) {
            let (whole, whole_dst, _, _) = feed_split(&input, &[], 1 << 20);
            let (split, split_dst, _, _) = feed_split(&input, &splits, 1 << 20);
            prop_assert_eq!(whole, split);
            prop_assert_eq!(whole_dst, split_dst);
        }
    }

    #[test]
    fn counts_data_chunks() {
        let mut enc = BytesMut::new();
        encode_chunk(b"abc", &mut enc);
        encode_chunk(b"de", &mut enc);
        encode_chunk(b"f", &mut enc);
        encode_last_chunk(&mut enc);
        let mut d = ChunkedDecoder::new(1024);
        let mut out = BytesMut::new();
        assert_eq!(d.decode(&mut enc, &mut out), Ok(true));
        assert_eq!(&out[..], b"abcdef");
        assert_eq!(d.chunks(), 3);
        d.reset();
        assert_eq!(d.chunks(), 0);
    }
}
