//! The client role: reads one whole response per request out of the caller's read buffer,
//! deciding the body framing, completion, the body limit, keep-alive and the buffer's growth.

use bytes::{Buf, BytesMut};

use super::{
    BodyKind, ChunkedDecoder, Error, MAX_HEAD_BYTES, ResponseHead, decode_head_response,
    decode_response_head,
};

/// The read buffer a driver starts a connection with: most responses of a benchmark fit it.
pub const READ_START: usize = 1024;
/// The least spare capacity a read gets.
pub const MIN_ROOM: usize = 512;
/// Past this many buffered bytes a read's room stops growing with the buffer (doubling
/// continues by `BytesMut::reserve` up to `EXACT_GROWTH_FROM`).
pub const READ_CHUNK: usize = 16 * 1024;
/// After a response larger than this, a response 8 times smaller that leaves the buffer empty
/// replaces it by a `READ_START` one: one large body does not pin its memory to the connection.
pub const SHRINK_FROM: usize = 64 * 1024;
/// From this buffered size on, the read buffer grows by explicit, limit-capped doubling.
pub const EXACT_GROWTH_FROM: usize = 1 << 20;

/// Where the body of a complete [`Response`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyAt {
    /// The first `n` bytes of the read buffer: Content-Length and until-close bodies (the
    /// head is already consumed), and bodiless responses (`n == 0`).
    Buffer(usize),
    /// All `n` bytes of the de-chunk buffer.
    Dechunked(usize),
}

/// A complete response; its body stays where [`BodyAt`] says until
/// [`ResponseReader::next_response`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// Final status code (200..=599).
    pub status: u16,
    /// How the body was delimited.
    pub framing: BodyKind,
    /// Whether the connection may carry another request.
    pub keep_alive: bool,
    /// Head bytes, interim 1xx heads included.
    pub head_len: usize,
    /// Where the body is.
    pub body: BodyAt,
    /// Chunk size lines, CRLFs, last chunk and trailers (0 unless chunked).
    pub chunk_framing: u64,
}

impl Response {
    /// Body bytes (de-chunked).
    pub fn body_len(&self) -> usize {
        match self.body {
            BodyAt::Buffer(n) | BodyAt::Dechunked(n) => n,
        }
    }

    /// The body, out of the buffers given to [`ResponseReader::poll`].
    pub fn body<'a>(&self, buf: &'a [u8], dechunked: &'a [u8]) -> &'a [u8] {
        match self.body {
            BodyAt::Buffer(n) => buf.get(..n).unwrap_or_default(),
            BodyAt::Dechunked(n) => dechunked.get(..n).unwrap_or_default(),
        }
    }
}

/// Where the reader is within the response.
#[derive(Debug, Clone, Copy)]
enum Phase {
    Head,
    /// Content-Length: the body is complete once the buffer holds `len` bytes.
    Length {
        head: ResponseHead,
        len: usize,
    },
    Chunked {
        head: ResponseHead,
    },
    /// No framing: the body ends when the server closes.
    UntilClose {
        head: ResponseHead,
    },
    Done(Response),
    Failed(Error),
}

/// Reads one response at a time out of a caller's read buffer (sans-IO).
///
/// The driver, per request: [`next_response`](Self::next_response) (drops the previous
/// response's bytes), writes the request, then calls [`poll`](Self::poll) until it returns
/// the response. `Ok(None)` means: read more bytes, appending to the buffer (it has been given
/// room for the read), then poll again; if the read hits EOF, call [`eof`](Self::eof)
/// instead, which completes a body that runs until close and fails anything else.
///
/// Decisions made here:
/// * framing and keep-alive from [`decode_response_head`]; interim 1xx heads skipped;
/// * the body limit (`max_body`): a Content-Length above it fails from the head alone, a
///   chunked body as soon as a chunk-size line would cross it, an until-close body once more
///   than `max_body` bytes are buffered;
/// * growth: a read gets at least [`MIN_ROOM`] bytes of room, and as much room as the buffer
///   holds (up to [`READ_CHUNK`]), so a response that does not fit doubles the buffer: sized to
///   the exchange, a few reads for a large body. While the buffer holds less than
///   [`EXACT_GROWTH_FROM`], `BytesMut::reserve` (reclaiming consumed space); above, doubling
///   capped at `max_body + MAX_HEAD_BYTES + READ_CHUNK` (never at twice the limit, as `reserve`
///   would);
/// * shrinking: after a response of more than [`SHRINK_FROM`] bytes, the first response less
///   than an eighth of the largest since the last shrink that leaves the buffer empty makes
///   [`next_response`](Self::next_response) replace it by a [`READ_START`] one.
///
/// Chunked bodies are de-chunked into the caller's `dechunked` buffer (cleared first);
/// all other bodies are left in place at the front of the read buffer: no copy.
/// After an error the reader repeats it until `next_response`.
#[derive(Debug, Clone)]
pub struct ResponseReader {
    max_body: u64,
    /// the requests are HEAD: no response has a body
    to_head: bool,
    phase: Phase,
    chunked: ChunkedDecoder,
    /// the largest response since the buffer was last shrunk (what its size answers to)
    largest: usize,
    /// the least room a read gets (`MIN_ROOM`, or more for a pipelining driver)
    min_room: usize,
}

impl ResponseReader {
    /// A reader whose bodies may be at most `max_body` bytes (de-chunked).
    pub fn new(max_body: u64) -> Self {
        // a body is held in memory: it cannot be larger than the address space
        let max_body = max_body.min(usize::MAX as u64);
        ResponseReader {
            max_body,
            to_head: false,
            phase: Phase::Head,
            chunked: ChunkedDecoder::new(max_body),
            largest: 0,
            min_room: MIN_ROOM,
        }
    }

    /// The same reader, giving every read at least `room` bytes (at least `MIN_ROOM`), however
    /// little the current response still needs: a pipelining driver's next responses are
    /// already on their way, and one read should take them together.
    pub fn with_min_room(mut self, room: usize) -> Self {
        self.min_room = room.max(MIN_ROOM);
        self
    }

    /// The same reader for the responses to HEAD requests: none has a body
    /// ([`decode_head_response`]).
    pub fn for_head_requests(mut self) -> Self {
        self.to_head = true;
        self
    }

    /// Readies the reader for the next response: drops the previous complete response's
    /// body from the front of `buf` (bytes after it stay: they begin the next response).
    /// Mid-response (the driver gave up on one), nothing is dropped.
    pub fn next_response(&mut self, buf: &mut BytesMut) {
        if let Phase::Done(r) = self.phase {
            if let BodyAt::Buffer(n) = r.body {
                buf.advance(n.min(buf.len()));
            }
            // the buffer grew only as large responses needed: shrink back after a small one
            let size = r.head_len + r.body_len() + r.chunk_framing as usize;
            if buf.is_empty() && self.largest > SHRINK_FROM && size < self.largest / 8 {
                *buf = BytesMut::with_capacity(READ_START);
                self.largest = size;
            } else {
                self.largest = self.largest.max(size);
            }
        }
        self.phase = Phase::Head;
    }

    /// Advances over the bytes in `buf`: `Ok(Some(response))` once it is complete (repeated on
    /// further calls), `Ok(None)` when more bytes are needed (`buf` then has room for a read).
    ///
    /// Consumes the head(s) and chunk framing as it goes; a buffer split anywhere reads the
    /// same as whole.
    pub fn poll(
        &mut self,
        buf: &mut BytesMut,
        dechunked: &mut BytesMut,
    ) -> Result<Option<Response>, Error> {
        loop {
            let next = match self.phase {
                Phase::Done(response) => return Ok(Some(response)),
                Phase::Failed(e) => return Err(e),
                Phase::Head if self.to_head => match decode_head_response(buf) {
                    Ok(Some(head)) => self.begin_body(head, dechunked),
                    Ok(None) => break,
                    Err(e) => Phase::Failed(e),
                },
                Phase::Head => match decode_response_head(buf, self.max_body) {
                    Ok(Some(head)) => self.begin_body(head, dechunked),
                    Ok(None) => break,
                    Err(e) => Phase::Failed(e),
                },
                Phase::Length { head, len } if buf.len() >= len => {
                    Phase::Done(complete(head, BodyAt::Buffer(len), 0))
                }
                Phase::Length { .. } => break,
                Phase::Chunked { head } => match self.chunked.decode(buf, dechunked) {
                    Ok(true) => {
                        let body = BodyAt::Dechunked(dechunked.len());
                        Phase::Done(complete(head, body, self.chunked.framing_bytes()))
                    }
                    Ok(false) => break,
                    Err(e) => Phase::Failed(e),
                },
                Phase::UntilClose { .. } if buf.len() as u64 > self.max_body => {
                    Phase::Failed(Error::BodyTooLarge)
                }
                Phase::UntilClose { .. } => break,
            };
            self.phase = next;
        }
        // how much of this response is in so far, and (Content-Length) how much is still to come
        let (progress, left) = match self.phase {
            Phase::Length { len, .. } => (buf.len(), Some(len.saturating_sub(buf.len()))),
            Phase::Chunked { .. } => (buf.len() + dechunked.len(), None),
            _ => (buf.len(), None),
        };
        make_room(buf, self.max_body, progress, left, self.min_room);
        Ok(None)
    }

    /// The connection reached EOF with `buf` as it is: completes a body that runs until
    /// close, otherwise [`Error::Truncated`].
    pub fn eof(&mut self, buf: &BytesMut) -> Result<Response, Error> {
        let outcome = match self.phase {
            Phase::Done(response) => Ok(response),
            Phase::Failed(e) => Err(e),
            Phase::UntilClose { .. } if buf.len() as u64 > self.max_body => {
                Err(Error::BodyTooLarge)
            }
            Phase::UntilClose { head } => Ok(complete(head, BodyAt::Buffer(buf.len()), 0)),
            Phase::Head | Phase::Length { .. } | Phase::Chunked { .. } => Err(Error::Truncated),
        };
        self.phase = match outcome {
            Ok(response) => Phase::Done(response),
            Err(e) => Phase::Failed(e),
        };
        outcome
    }

    fn begin_body(&mut self, head: ResponseHead, dechunked: &mut BytesMut) -> Phase {
        match head.body {
            BodyKind::Empty => Phase::Done(complete(head, BodyAt::Buffer(0), 0)),
            // decode_response_head checked len <= max_body <= usize::MAX
            BodyKind::Length(len) => match usize::try_from(len) {
                Ok(len) => Phase::Length { head, len },
                Err(_) => Phase::Failed(Error::BodyTooLarge),
            },
            BodyKind::Chunked => {
                self.chunked.reset();
                dechunked.clear();
                Phase::Chunked { head }
            }
            BodyKind::UntilClose => Phase::UntilClose { head },
        }
    }
}

fn complete(head: ResponseHead, body: BodyAt, chunk_framing: u64) -> Response {
    Response {
        status: head.status,
        framing: head.body,
        keep_alive: head.keep_alive,
        head_len: head.head_len,
        body,
        chunk_framing,
    }
}

/// Gives `buf` room for the next read (the growth policy of [`ResponseReader`]).
///
/// A read gets as much room as the response has brought so far (`progress`: doubling, so a
/// large body takes few reads), never more than `READ_CHUNK` past what the buffer holds, no
/// more than the rest of a Content-Length body (`left`) needs, and never less than `min_room`.
fn make_room(
    buf: &mut BytesMut,
    max_body: u64,
    progress: usize,
    left: Option<usize>,
    min_room: usize,
) {
    let mut want = progress.min(buf.len().max(READ_CHUNK));
    if let Some(left) = left {
        want = want.min(left);
    }
    let want = want.max(min_room);
    if buf.capacity() - buf.len() >= want {
        return;
    }
    if buf.len() < EXACT_GROWTH_FROM {
        // BytesMut's own growth (a reallocation at least doubles); it also reclaims the space
        // of consumed responses.
        buf.reserve(want);
        return;
    }
    // A large body: double, but never past what the body limit can use (BytesMut would
    // double to twice the limit).
    let limit = usize::try_from(max_body)
        .unwrap_or(usize::MAX)
        .saturating_add(MAX_HEAD_BYTES + READ_CHUNK);
    let want = buf
        .capacity()
        .saturating_mul(2)
        .min(limit)
        .max(buf.len() + READ_CHUNK);
    let mut bigger = BytesMut::with_capacity(want);
    bigger.extend_from_slice(buf);
    *buf = bigger;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http1::{encode_chunk, encode_last_chunk};
    use proptest::prelude::*;

    const BIG: u64 = u64::MAX;

    #[test]
    fn responses_to_head_requests_have_no_body_whatever_they_say() {
        // a length larger than the limit, chunked, no length: each ends at its blank line and
        // keeps the connection; the next response follows at once
        let heads: [&[u8]; 3] = [
            b"HTTP/1.1 200 OK\r\nContent-Length: 999999\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"HTTP/1.1 404 Not Found\r\n\r\n",
        ];
        let mut reader = ResponseReader::new(16).for_head_requests();
        let mut buf = BytesMut::from(&heads.concat()[..]);
        let mut dechunked = BytesMut::new();
        for (i, head) in heads.iter().enumerate() {
            let r = reader.poll(&mut buf, &mut dechunked).unwrap().unwrap();
            assert_eq!(r.framing, BodyKind::Empty, "{i}");
            assert_eq!(
                (r.body_len(), r.head_len, r.keep_alive),
                (0, head.len(), true),
                "{i}"
            );
            reader.next_response(&mut buf);
        }
        assert!(buf.is_empty());
        // `Connection: close` still closes
        let mut buf = BytesMut::from(&b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"[..]);
        let r = reader.poll(&mut buf, &mut dechunked).unwrap().unwrap();
        assert!(!r.keep_alive);
        // the same bytes for a GET: the limit refuses the first
        let mut get = ResponseReader::new(16);
        let mut buf = BytesMut::from(heads[0]);
        assert_eq!(get.poll(&mut buf, &mut dechunked), Err(Error::BodyTooLarge));
    }

    /// What a driver saw: the outcome, the body, what is left, and the most capacity the
    /// buffer had (not compared: it depends on the read sizes).
    #[derive(Debug)]
    struct Read {
        outcome: Result<Response, Error>,
        body: Vec<u8>,
        /// bytes of the input never consumed or read (after the response, or after an error)
        rest: Vec<u8>,
        max_capacity: usize,
    }

    /// Drives a fresh reader over `input` as the client's driver does: poll; on `Ok(None)`
    /// "read" up to the next of `reads` bytes (cycled; 0 is 1), never more than the spare
    /// capacity the reader left; EOF once the input is used up. `None`: still waiting at the
    /// end of the input and `eof` is false.
    fn drive(input: &[u8], reads: &[usize], max_body: u64, eof: bool) -> Option<Read> {
        let mut reader = ResponseReader::new(max_body);
        let mut buf = BytesMut::new();
        let mut dechunked = BytesMut::new();
        drive_with(&mut reader, &mut buf, &mut dechunked, input, reads, eof)
    }

    fn drive_with(
        reader: &mut ResponseReader,
        buf: &mut BytesMut,
        dechunked: &mut BytesMut,
        input: &[u8],
        reads: &[usize],
        eof: bool,
    ) -> Option<Read> {
        let mut fed = 0;
        let mut max_capacity = buf.capacity();
        let mut sizes = reads.iter().copied().chain(std::iter::repeat(usize::MAX));
        let outcome = loop {
            match reader.poll(buf, dechunked) {
                Ok(Some(response)) => break Ok(response),
                Err(e) => break Err(e),
                Ok(None) => {}
            }
            let spare = buf.capacity() - buf.len();
            assert!(spare >= MIN_ROOM, "a read got {spare} bytes of room");
            max_capacity = max_capacity.max(buf.capacity());
            if fed == input.len() {
                if !eof {
                    return None;
                }
                break reader.eof(buf);
            }
            let n = sizes
                .next()
                .unwrap_or(1)
                .max(1)
                .min(spare)
                .min(input.len() - fed);
            let cap = buf.capacity();
            buf.extend_from_slice(&input[fed..fed + n]);
            assert_eq!(buf.capacity(), cap, "a read reallocated the buffer");
            fed += n;
        };
        let body = match &outcome {
            Ok(r) => r.body(buf, dechunked).to_vec(),
            Err(_) => Vec::new(),
        };
        // after an error, what was not read depends on the read sizes
        let rest = match &outcome {
            Ok(r) => {
                let mut rest = buf.get(r.body.buffered()..).unwrap_or_default().to_vec();
                rest.extend_from_slice(&input[fed..]);
                rest
            }
            Err(_) => Vec::new(),
        };
        Some(Read {
            outcome,
            body,
            rest,
            max_capacity,
        })
    }

    impl PartialEq for Read {
        fn eq(&self, other: &Read) -> bool {
            (&self.outcome, &self.body, &self.rest) == (&other.outcome, &other.body, &other.rest)
        }
    }

    impl BodyAt {
        fn buffered(self) -> usize {
            match self {
                BodyAt::Buffer(n) => n,
                BodyAt::Dechunked(_) => 0,
            }
        }
    }

    fn whole(input: &[u8], eof: bool) -> Read {
        drive(input, &[], BIG, eof).expect("a complete response")
    }

    /// Every split point of `input` reads the same as the whole.
    fn same_at_every_split(input: &[u8], max_body: u64, eof: bool) -> Read {
        let expected = drive(input, &[], max_body, eof).expect("an outcome");
        for cut in 0..=input.len() {
            let got = drive(input, &[cut], max_body, eof).expect("an outcome");
            assert_eq!(got, expected, "split at {cut}");
        }
        let one_by_one = drive(input, &[1; 4096], max_body, eof).expect("an outcome");
        assert_eq!(one_by_one, expected, "byte by byte");
        expected
    }

    #[test]
    fn content_length_body_stays_in_the_buffer() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
        let mut input = head.to_vec();
        input.extend_from_slice(b"helloHTTP/1.1 204");
        let r = same_at_every_split(&input, BIG, false);
        let response = r.outcome.unwrap();
        assert_eq!(response.status, 200);
        assert_eq!(response.framing, BodyKind::Length(5));
        assert!(response.keep_alive);
        assert_eq!(response.head_len, head.len());
        assert_eq!(response.body, BodyAt::Buffer(5));
        assert_eq!(response.chunk_framing, 0);
        assert_eq!(r.body, b"hello");
        assert_eq!(r.rest, b"HTTP/1.1 204");
    }

    #[test]
    fn chunked_body_is_dechunked_with_its_framing_counted() {
        let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        let chunks = b"5\r\nhello\r\n6;x=y\r\n world\r\n0\r\nT: v\r\n\r\n";
        let mut input = head.to_vec();
        input.extend_from_slice(chunks);
        input.extend_from_slice(b"next");
        let r = same_at_every_split(&input, BIG, false);
        let response = r.outcome.unwrap();
        assert_eq!(response.framing, BodyKind::Chunked);
        assert_eq!(response.body, BodyAt::Dechunked(11));
        assert_eq!(r.body, b"hello world");
        assert_eq!(response.chunk_framing, (chunks.len() - 11) as u64);
        assert_eq!(r.rest, b"next");
    }

    #[test]
    fn until_close_body_ends_at_eof() {
        let input = b"HTTP/1.1 200 OK\r\nServer: x\r\n\r\nall of this";
        let r = same_at_every_split(input, BIG, true);
        let response = r.outcome.unwrap();
        assert_eq!(response.framing, BodyKind::UntilClose);
        assert!(!response.keep_alive);
        assert_eq!(r.body, b"all of this");
        // without EOF it is never complete
        assert_eq!(drive(input, &[], BIG, false), None);
    }

    #[test]
    fn bodiless_interim_and_closing_responses() {
        let r = same_at_every_split(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\nX",
            BIG,
            false,
        );
        let response = r.outcome.unwrap();
        assert_eq!(response.status, 204);
        assert_eq!(response.head_len, 25 + 46);
        assert_eq!(response.body, BodyAt::Buffer(0));
        assert_eq!(r.rest, b"X");

        let r = whole(
            b"HTTP/1.1 429 Too Many\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}",
            false,
        );
        let response = r.outcome.unwrap();
        assert_eq!(response.status, 429);
        assert!(!response.keep_alive);
        assert_eq!(r.body, b"{}");
    }

    #[test]
    fn closing_early_is_truncated() {
        for input in [
            &b""[..],
            b"HTTP/1.1 200 OK\r\nContent-Ty",
            b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"body\": \"",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n",
        ] {
            let r = same_at_every_split(input, BIG, true);
            assert_eq!(r.outcome, Err(Error::Truncated), "{input:?}");
        }
    }

    #[test]
    fn errors_are_the_decoders_and_sticky() {
        let cases: &[(&[u8], Error)] = &[
            (
                b"\x00\x01garbage\r\n\r\n",
                Error::BadHead("invalid HTTP version"),
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                Error::BadChunk("missing chunk size"),
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
                Error::BadContentLength,
            ),
        ];
        for (input, e) in cases {
            let r = same_at_every_split(input, BIG, true);
            assert_eq!(r.outcome, Err(*e), "{input:?}");
        }
        let mut reader = ResponseReader::new(BIG);
        let mut buf = BytesMut::from(&b"HTTP/1.1 2x0\r\n\r\n"[..]);
        let mut dechunked = BytesMut::new();
        let e = reader.poll(&mut buf, &mut dechunked).unwrap_err();
        buf.clear();
        buf.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(reader.poll(&mut buf, &mut dechunked), Err(e));
        assert_eq!(reader.eof(&buf), Err(e));
        reader.next_response(&mut buf);
        assert_eq!(
            reader
                .poll(&mut buf, &mut dechunked)
                .unwrap()
                .unwrap()
                .status,
            200
        );
    }

    #[test]
    fn a_head_past_the_limit_is_refused() {
        let mut input = b"HTTP/1.1 200 OK\r\nX-Pad: ".to_vec();
        input.resize(MAX_HEAD_BYTES + 100, b'a');
        input.extend_from_slice(b"\r\nContent-Length: 0\r\n\r\n");
        for reads in [&[][..], &[READ_CHUNK; 10], &[1000; 100]] {
            let r = drive(&input, reads, BIG, true).unwrap();
            assert_eq!(r.outcome, Err(Error::HeadTooLarge));
            assert!(r.max_capacity <= 8 * READ_CHUNK, "{}", r.max_capacity);
        }
    }

    #[test]
    fn body_limit() {
        let length = |n: usize| {
            let mut raw = format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n").into_bytes();
            raw.resize(raw.len() + n, b'b');
            raw
        };
        assert_eq!(whole(&length(100), false).outcome.unwrap().body_len(), 100);
        let r = drive(&length(101), &[], 100, true).unwrap();
        assert_eq!(r.outcome, Err(Error::BodyTooLarge));
        assert!(drive(&length(100), &[], 100, true).unwrap().outcome.is_ok());

        let until_close = |n: usize| {
            let mut raw = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
            raw.resize(raw.len() + n, b'u');
            raw
        };
        let r = same_at_every_split(&until_close(100), 100, true);
        assert_eq!(r.outcome.unwrap().body_len(), 100);
        let r = same_at_every_split(&until_close(101), 100, true);
        assert_eq!(r.outcome, Err(Error::BodyTooLarge));

        let mut chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        let mut enc = BytesMut::new();
        encode_chunk(&[b'c'; 60], &mut enc);
        encode_chunk(&[b'c'; 40], &mut enc);
        chunked.extend_from_slice(&enc);
        let mut over = chunked.clone();
        chunked.extend_from_slice(b"0\r\n\r\n");
        over.extend_from_slice(b"1\r\nc\r\n0\r\n\r\n");
        assert_eq!(
            same_at_every_split(&chunked, 100, true)
                .outcome
                .unwrap()
                .body_len(),
            100
        );
        assert_eq!(
            same_at_every_split(&over, 100, true).outcome,
            Err(Error::BodyTooLarge)
        );
    }

    #[test]
    fn growth_stays_within_the_body_limit() {
        // A 5 MiB until-close body under a 5 MiB limit, read in socket-sized pieces.
        let limit = 5 << 20;
        let mut input = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
        input.resize(input.len() + limit, b'x');
        let r = drive(&input, &[64 * 1024; 1000], limit as u64, true).unwrap();
        assert_eq!(r.outcome.unwrap().body_len(), limit);
        let bound = limit + MAX_HEAD_BYTES + READ_CHUNK;
        assert!(r.max_capacity <= bound, "{} > {bound}", r.max_capacity);
        // BytesMut's own doubling would have reached 8 MiB.
        assert!(r.max_capacity > limit);

        // Small responses never grow the buffer past its first size, and never reallocate it.
        let mut reader = ResponseReader::new(BIG);
        let mut buf = BytesMut::with_capacity(READ_START);
        let mut dechunked = BytesMut::new();
        let one = b"HTTP/1.1 200 OK\r\nContent-Length: 27\r\n\r\n{\"header\":{\"revision\":\"5\"}}";
        for _ in 0..1000 {
            reader.next_response(&mut buf);
            let r = drive_with(&mut reader, &mut buf, &mut dechunked, one, &[], false).unwrap();
            assert_eq!(r.body.len(), 27);
            assert!(buf.capacity() <= READ_START, "{}", buf.capacity());
        }
    }

    #[test]
    fn a_large_body_grows_the_buffer_in_few_reads_and_the_next_small_one_shrinks_it() {
        let mut reader = ResponseReader::new(BIG);
        let mut buf = BytesMut::with_capacity(READ_START);
        let mut dechunked = BytesMut::new();
        let mut large = b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n".to_vec();
        large.resize(large.len() + 1_000_000, b'L');
        // reads as large as the room offered: doubling, about log2(1 MB / 1 KiB) of them
        let (mut reads, mut fed) = (0, 0);
        loop {
            match reader.poll(&mut buf, &mut dechunked).unwrap() {
                Some(r) => {
                    assert_eq!(r.body_len(), 1_000_000);
                    break;
                }
                None => {
                    let n = (buf.capacity() - buf.len()).min(large.len() - fed);
                    buf.extend_from_slice(&large[fed..fed + n]);
                    fed += n;
                    reads += 1;
                }
            }
        }
        assert!(reads <= 80, "{reads} reads for a 1 MB body");
        let grown = buf.capacity();
        assert!((1_000_000..=4 << 20).contains(&grown), "{grown}");
        // a steady large workload keeps its buffer: the same response again fits it whole
        reader.next_response(&mut buf);
        buf.reserve(large.len());
        assert!(buf.capacity() <= 4 << 20, "{}", buf.capacity());
        buf.extend_from_slice(&large);
        assert!(reader.poll(&mut buf, &mut dechunked).unwrap().is_some());
        reader.next_response(&mut buf);
        assert!(buf.capacity() > READ_START, "kept after a large response");
        // a small one after it: the buffer goes back to its first size
        let small = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        buf.extend_from_slice(small);
        assert!(reader.poll(&mut buf, &mut dechunked).unwrap().is_some());
        reader.next_response(&mut buf);
        assert_eq!(buf.capacity(), READ_START);
    }

    #[test]
    fn next_response_drops_exactly_the_previous_response() {
        let mut reader = ResponseReader::new(BIG);
        let mut buf = BytesMut::from(&b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none"[..]);
        buf.extend_from_slice(b"HTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\ntwo");
        let mut dechunked = BytesMut::new();
        let first = reader.poll(&mut buf, &mut dechunked).unwrap().unwrap();
        assert_eq!(first.body(&buf, &dechunked), b"one");
        // complete: polling again repeats it and consumes nothing
        assert_eq!(reader.poll(&mut buf, &mut dechunked), Ok(Some(first)));
        reader.next_response(&mut buf);
        let second = reader.poll(&mut buf, &mut dechunked).unwrap().unwrap();
        assert_eq!(second.status, 201);
        assert_eq!(second.body(&buf, &dechunked), b"two");
        reader.next_response(&mut buf);
        assert!(buf.is_empty());

        // Given up mid-response: nothing is dropped.
        let mut buf = BytesMut::from(&b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc"[..]);
        assert_eq!(reader.poll(&mut buf, &mut dechunked), Ok(None));
        reader.next_response(&mut buf);
        assert_eq!(&buf[..3], b"abc");
    }

    /// One response as a server might frame it.
    #[derive(Debug, Clone)]
    enum Framing {
        Length,
        Chunked(Vec<usize>),
        UntilClose,
    }

    fn framing() -> impl Strategy<Value = Framing> {
        prop_oneof![
            Just(Framing::Length),
            proptest::collection::vec(1usize..50, 0..6).prop_map(Framing::Chunked),
            Just(Framing::UntilClose),
        ]
    }

    /// Renders a response: interim heads, status, framing, headers; returns it and its body.
    fn render(
        interim: bool,
        status: u16,
        framing: &Framing,
        close: bool,
        body: &[u8],
    ) -> (Vec<u8>, usize) {
        let mut out = Vec::new();
        if interim {
            out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
        }
        out.extend_from_slice(format!("HTTP/1.1 {status} X\r\nServer: t\r\n").as_bytes());
        if close {
            out.extend_from_slice(b"Connection: close\r\n");
        }
        match framing {
            Framing::Length => {
                out.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes())
            }
            Framing::Chunked(_) => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
            Framing::UntilClose => {}
        }
        out.extend_from_slice(b"\r\n");
        let head_len = out.len();
        match framing {
            Framing::Chunked(sizes) => {
                let mut enc = BytesMut::new();
                let mut rest = body;
                for &size in sizes {
                    let (chunk, tail) = rest.split_at(size.min(rest.len()));
                    encode_chunk(chunk, &mut enc);
                    rest = tail;
                }
                // the remainder as one more chunk
                encode_chunk(rest, &mut enc);
                encode_last_chunk(&mut enc);
                out.extend_from_slice(&enc);
            }
            _ => out.extend_from_slice(body),
        }
        (out, head_len)
    }

    proptest! {
        #[test]
        fn any_response_split_anywhere_reads_as_whole(
            interim in any::<bool>(),
            status in prop_oneof![Just(200u16), Just(201), Just(404), Just(503)],
            framing in framing(),
            close in any::<bool>(),
            body in proptest::collection::vec(any::<u8>(), 0..300),
            reads in proptest::collection::vec(0usize..64, 0..10),
        ) {
            let (input, head_len) = render(interim, status, &framing, close, &body);
            let until_close = matches!(framing, Framing::UntilClose);
            let whole = drive(&input, &[], BIG, until_close).unwrap();
            let split = drive(&input, &reads, BIG, until_close).unwrap();
            prop_assert_eq!(&split, &whole);
            let response = whole.outcome.unwrap();
            prop_assert_eq!(response.status, status);
            prop_assert_eq!(&whole.body, &body);
            prop_assert_eq!(response.head_len, head_len);
            prop_assert_eq!(response.keep_alive, !close && !until_close);
            prop_assert_eq!(
                response.head_len as u64 + response.body_len() as u64 + response.chunk_framing,
                input.len() as u64
            );
            prop_assert!(whole.rest.is_empty());
        }

        #[test]
        fn arbitrary_bytes_read_the_same_split_and_whole(
            input in proptest::collection::vec(any::<u8>(), 0..400),
            reads in proptest::collection::vec(0usize..64, 0..10),
            max_body in prop_oneof![Just(BIG), 0u64..64],
            eof in any::<bool>(),
        ) {
            prop_assert_eq!(
                drive(&input, &reads, max_body, eof),
                drive(&input, &[], max_body, eof)
            );
        }

        #[test]
        fn mostly_valid_bytes_read_the_same_split_and_whole(
            head in prop_oneof![
                Just(&b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"[..]),
                Just(&b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n"[..]),
                Just(&b"HTTP/1.0 200 OK\r\n\r\n"[..]),
            ],
            tail in proptest::collection::vec(
                prop_oneof![Just(b'\r'), Just(b'\n'), Just(b'0'), Just(b'1'), Just(b'a'), Just(b';')],
                0..64,
            ),
            reads in proptest::collection::vec(0usize..16, 0..10),
        ) {
            let mut input = head.to_vec();
            input.extend_from_slice(&tail);
            prop_assert_eq!(drive(&input, &reads, 32, true), drive(&input, &[], 32, true));
        }
    }
}
