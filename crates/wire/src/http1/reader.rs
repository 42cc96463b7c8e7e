//! The client role: reads one whole response per request out of the caller's read buffer,
//! deciding the body framing, completion, the body limit, keep-alive and the buffer's growth.

use bytes::{Buf, BytesMut};

use super::response::parse_heads;
use super::{BodyKind, ChunkedDecoder, Error, MAX_HEAD_BYTES, ResponseHead};

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
/// A head up to this long is remembered with what it said (`ResponseReader`'s memo).
pub const MEMO_MAX: usize = 512;

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
///
/// The last head parsed (up to [`MEMO_MAX`] bytes, interim heads included) is kept with what
/// it said: a response that begins with the same bytes has the same head, taken without
/// parsing (a head's parse depends on its own bytes alone, and the reader's `max_body` and
/// HEAD setting never change). A server that answers alike says the same head every time, but
/// for a Date once a second.
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
    /// the last head's bytes (empty: none yet, or it was longer than `MEMO_MAX`) and its parse
    memo: Vec<u8>,
    memo_head: Option<ResponseHead>,
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
            memo: Vec::new(),
            memo_head: None,
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
                consume(buf, n);
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
                Phase::Head => match self.head(buf) {
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

    /// The head at the front of `buf`, consumed: the memo's when `buf` begins with its bytes,
    /// else parsed as `decode_response_head` (`decode_head_response` for HEAD requests) parses
    /// it, and remembered.
    fn head(&mut self, buf: &mut BytesMut) -> Result<Option<ResponseHead>, Error> {
        // nothing read yet (a driver polls once before its first read)
        if buf.is_empty() {
            return Ok(None);
        }
        let head = match self.memo_head {
            Some(head) if buf.starts_with(&self.memo) => head,
            _ => {
                let max_body = if self.to_head {
                    u64::MAX
                } else {
                    self.max_body
                };
                let Some(head) = parse_heads(buf, max_body, self.to_head)? else {
                    return Ok(None);
                };
                self.memo.clear();
                self.memo_head = None;
                if let Some(bytes) = buf.get(..head.head_len).filter(|b| b.len() <= MEMO_MAX) {
                    self.memo.extend_from_slice(bytes);
                    self.memo_head = Some(head);
                }
                head
            }
        };
        consume(buf, head.head_len);
        Ok(Some(head))
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

/// Drops the first `n` bytes of `buf` (all of them when it holds no more): a buffer read to
/// its end starts over where it is, without `advance`'s bookkeeping (the common case: a
/// connection's response, and nothing behind it).
fn consume(buf: &mut BytesMut, n: usize) {
    if n >= buf.len() {
        buf.clear();
    } else {
        buf.advance(n);
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
mod tests;
