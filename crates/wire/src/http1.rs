//! HTTP/1.1 client-side wire codec: response-head parsing, resumable chunked-body decoding and pre-rendered request encoding.

use std::fmt;

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Largest response head accepted (status line + headers + blank line, including any
/// interim 1xx heads consumed in the same call).
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Largest number of header fields accepted in one response head.
pub const MAX_HEADERS: usize = 100;
/// Largest chunk-size line (hex size plus extensions, excluding the CRLF).
pub const MAX_CHUNK_LINE: usize = 4096;
/// Largest trailer section (all trailer field lines plus the final CRLF).
pub const MAX_TRAILER_BYTES: usize = 16 * 1024;

/// Errors produced by the HTTP/1.1 codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The response head did not complete within [`MAX_HEAD_BYTES`].
    HeadTooLarge,
    /// The response head has more than [`MAX_HEADERS`] header fields.
    TooManyHeaders,
    /// The response head is malformed or describes something unsupported.
    BadHead(&'static str),
    /// Content-Length is malformed, overflows or has conflicting values.
    BadContentLength,
    /// The announced or received body exceeds the caller's limit.
    BodyTooLarge,
    /// The chunked framing is malformed.
    BadChunk(&'static str),
    /// A chunk-size line exceeds [`MAX_CHUNK_LINE`].
    ChunkLineTooLong,
    /// The trailer section exceeds [`MAX_TRAILER_BYTES`].
    TrailersTooLarge,
    /// A request template part is invalid.
    BadTemplate(&'static str),
}

impl Error {
    /// Short stable snake_case name, suitable as a metric key.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::HeadTooLarge => "head_too_large",
            Error::TooManyHeaders => "too_many_headers",
            Error::BadHead(_) => "bad_head",
            Error::BadContentLength => "bad_content_length",
            Error::BodyTooLarge => "body_too_large",
            Error::BadChunk(_) => "bad_chunk",
            Error::ChunkLineTooLong => "chunk_line_too_long",
            Error::TrailersTooLarge => "trailers_too_large",
            Error::BadTemplate(_) => "bad_template",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::HeadTooLarge => write!(f, "response head exceeds {MAX_HEAD_BYTES} bytes"),
            Error::TooManyHeaders => write!(f, "response head has more than {MAX_HEADERS} headers"),
            Error::BadHead(ctx) => write!(f, "malformed response head: {ctx}"),
            Error::BadContentLength => f.write_str("invalid Content-Length"),
            Error::BodyTooLarge => f.write_str("response body exceeds the configured limit"),
            Error::BadChunk(ctx) => write!(f, "malformed chunked body: {ctx}"),
            Error::ChunkLineTooLong => write!(f, "chunk-size line exceeds {MAX_CHUNK_LINE} bytes"),
            Error::TrailersTooLarge => {
                write!(f, "trailer section exceeds {MAX_TRAILER_BYTES} bytes")
            }
            Error::BadTemplate(ctx) => write!(f, "invalid request template: {ctx}"),
        }
    }
}

impl std::error::Error for Error {}

/// How the body following a response head is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// No body by definition of the status code (1xx, 204, 304).
    Empty,
    /// Exactly this many bytes (from Content-Length; may be 0).
    Length(u64),
    /// Chunked transfer coding; use [`ChunkedDecoder`].
    Chunked,
    /// Body runs until the server closes the connection.
    UntilClose,
}

/// The parts of a response head that a client needs to proceed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHead {
    /// Final status code (100..=599, never 1xx).
    pub status: u16,
    /// How the body is delimited.
    pub body: BodyKind,
    /// Whether the connection may be reused after this response's body.
    pub keep_alive: bool,
    /// Bytes consumed from the buffer, including any interim 1xx heads skipped.
    pub head_len: usize,
}

/// Parses one response head at the start of `buf` with httparse.
///
/// On success removes exactly the head bytes (start line + headers + blank line) from `buf`
/// and returns the head; `Ok(None)` means more bytes are needed and `buf` is left untouched.
/// `max_body` is the caller's body limit: a Content-Length above it is
/// [`Error::BodyTooLarge`].
///
/// Framing rules:
/// * Interim 1xx heads (except 101) are consumed and parsing continues with the following
///   head in the same call; `head_len` covers all of them and [`MAX_HEAD_BYTES`] limits
///   their total. If the final head is still incomplete nothing is consumed.
/// * 101 is [`Error::BadHead`]`("upgrade not supported")`; status codes outside 100..=599
///   are `BadHead("status code out of range")`.
/// * 204 and 304 are [`BodyKind::Empty`] (Content-Length/Transfer-Encoding ignored).
///   The parser does not know the request method: for a HEAD request the caller must
///   treat the body as empty itself.
/// * Transfer-Encoding whose last coding is `chunked` is [`BodyKind::Chunked`]; any other
///   Transfer-Encoding is [`BodyKind::UntilClose`]. Transfer-Encoding wins over
///   Content-Length (which is then ignored, even if malformed), but the response is then
///   not keep-alive (RFC 9112 §6.3: such a message may be a smuggling attempt). An empty
///   Transfer-Encoding value is `BadHead`.
/// * Content-Length must be decimal digits; several headers or a comma list are accepted
///   only when all values are equal, otherwise [`Error::BadContentLength`].
/// * No length and not chunked is [`BodyKind::UntilClose`] with `keep_alive == false`.
/// * keep-alive: HTTP/1.1 unless `Connection: close`; HTTP/1.0 only with
///   `Connection: keep-alive` (and never with Transfer-Encoding). Tokens are matched
///   case-insensitively across all Connection headers; `close` wins.
///
/// No heap allocation happens on this path (headers go to a stack array).
pub fn decode_response_head(
    buf: &mut BytesMut,
    max_body: u64,
) -> Result<Option<ResponseHead>, Error> {
    let head = match parse_heads(buf, max_body)? {
        Some(head) => head,
        None => return Ok(None),
    };
    buf.advance(head.head_len);
    Ok(Some(head))
}

/// Parses interim and final heads from `buf` without consuming anything.
fn parse_heads(buf: &[u8], max_body: u64) -> Result<Option<ResponseHead>, Error> {
    // httparse never sees more than MAX_HEAD_BYTES, so a huge buffer is not rescanned.
    let window = buf.get(..MAX_HEAD_BYTES).unwrap_or(buf);
    let mut offset = 0usize;
    loop {
        let rest = window.get(offset..).unwrap_or_default();
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        let len = match response.parse(rest) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => {
                return if buf.len() >= MAX_HEAD_BYTES {
                    Err(Error::HeadTooLarge)
                } else {
                    Ok(None)
                };
            }
            Err(e) => return Err(map_httparse_error(e)),
        };
        // `len <= rest.len()`, so this cannot exceed `window.len()`.
        let head_len = offset
            .checked_add(len)
            .ok_or(Error::BadHead("head length overflow"))?;
        let status = response.code.ok_or(Error::BadHead("missing status code"))?;
        let version = response
            .version
            .ok_or(Error::BadHead("missing HTTP version"))?;
        match status {
            101 => return Err(Error::BadHead("upgrade not supported")),
            100..=199 => {
                offset = head_len;
                continue;
            }
            200..=599 => {}
            _ => return Err(Error::BadHead("status code out of range")),
        }
        let fields = scan_headers(response.headers)?;
        let mut keep_alive = match version {
            1 => !fields.conn_close,
            _ => fields.conn_keep_alive && !fields.conn_close,
        };
        let body = if status == 204 || status == 304 {
            BodyKind::Empty
        } else if fields.te_present {
            if version != 1 || fields.cl_present {
                keep_alive = false;
            }
            if fields.te_chunked {
                BodyKind::Chunked
            } else {
                keep_alive = false;
                BodyKind::UntilClose
            }
        } else {
            match fields.content_length? {
                Some(len) if len > max_body => return Err(Error::BodyTooLarge),
                Some(len) => BodyKind::Length(len),
                None => {
                    keep_alive = false;
                    BodyKind::UntilClose
                }
            }
        };
        return Ok(Some(ResponseHead {
            status,
            body,
            keep_alive,
            head_len,
        }));
    }
}

fn map_httparse_error(e: httparse::Error) -> Error {
    match e {
        httparse::Error::TooManyHeaders => Error::TooManyHeaders,
        httparse::Error::HeaderName => Error::BadHead("invalid header name"),
        httparse::Error::HeaderValue => Error::BadHead("invalid header value"),
        httparse::Error::NewLine => Error::BadHead("invalid line ending"),
        httparse::Error::Status => Error::BadHead("invalid status line"),
        httparse::Error::Token => Error::BadHead("invalid token"),
        httparse::Error::Version => Error::BadHead("invalid HTTP version"),
    }
}

/// Framing-relevant facts gathered from the header fields.
struct HeaderFacts {
    te_present: bool,
    te_chunked: bool,
    cl_present: bool,
    /// Deferred: only an error if Content-Length actually decides the framing.
    content_length: Result<Option<u64>, Error>,
    conn_close: bool,
    conn_keep_alive: bool,
}

fn scan_headers(headers: &[httparse::Header<'_>]) -> Result<HeaderFacts, Error> {
    let mut facts = HeaderFacts {
        te_present: false,
        te_chunked: false,
        cl_present: false,
        content_length: Ok(None),
        conn_close: false,
        conn_keep_alive: false,
    };
    for header in headers {
        let name = header.name;
        if name.eq_ignore_ascii_case("transfer-encoding") {
            let mut any = false;
            for coding in list_items(header.value) {
                any = true;
                facts.te_chunked = coding.eq_ignore_ascii_case(b"chunked");
            }
            if !any {
                return Err(Error::BadHead("empty Transfer-Encoding"));
            }
            facts.te_present = true;
        } else if name.eq_ignore_ascii_case("content-length") {
            facts.cl_present = true;
            facts.content_length = merge_content_length(facts.content_length, header.value);
        } else if name.eq_ignore_ascii_case("connection") {
            for token in list_items(header.value) {
                if token.eq_ignore_ascii_case(b"close") {
                    facts.conn_close = true;
                } else if token.eq_ignore_ascii_case(b"keep-alive") {
                    facts.conn_keep_alive = true;
                }
            }
        }
    }
    Ok(facts)
}

fn merge_content_length(
    current: Result<Option<u64>, Error>,
    value: &[u8],
) -> Result<Option<u64>, Error> {
    let mut current = current?;
    let mut any = false;
    // Split by hand (not `list_items`) so that empty elements are rejected.
    for item in value.split(|&b| b == b',') {
        any = true;
        let parsed = parse_decimal(trim_ows(item)).ok_or(Error::BadContentLength)?;
        match current {
            Some(previous) if previous != parsed => return Err(Error::BadContentLength),
            _ => current = Some(parsed),
        }
    }
    if any {
        Ok(current)
    } else {
        Err(Error::BadContentLength)
    }
}

/// Parses 1*DIGIT into a u64, `None` on empty input, other bytes or overflow.
fn parse_decimal(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, &b| {
        if b.is_ascii_digit() {
            acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

/// Non-empty, OWS-trimmed elements of a comma-separated header list.
fn list_items(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(trim_ows)
        .filter(|item| !item.is_empty())
}

fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

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
                    let chunk = src.split_to(n);
                    dst.extend_from_slice(&chunk);
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

/// Control characters other than HTAB (which is allowed in values and extensions).
fn is_ctl(b: u8) -> bool {
    (b < 0x20 && b != b'\t') || b == 0x7f
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
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

/// Decimal digits of `v`, rendered into the end of `buf`.
fn render_decimal(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut start = buf.len();
    for slot in buf.iter_mut().rev() {
        *slot = b'0' + (v % 10) as u8;
        start -= 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.get(start..).unwrap_or_default()
}

/// A pre-rendered request head: everything up to the Content-Length value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestTemplate {
    head: Bytes,
}

impl RequestTemplate {
    /// Validates and renders `"{method} {path} HTTP/1.1\r\nHost: {host}\r\n{name}: {value}\r\n...Content-Length: "`.
    ///
    /// `method` and header names must be tokens; `path` and `host` must be non-empty
    /// visible ASCII without spaces (percent-encode anything else); header values may
    /// contain visible ASCII, SP, HTAB and non-ASCII bytes, but no CR, LF, NUL or other
    /// control characters. `Host`, `Content-Length` and `Transfer-Encoding` may not be
    /// given as extra headers since the template writes or excludes them itself.
    pub fn new(
        method: &str,
        path: &str,
        host: &str,
        headers: &[(&str, &str)],
    ) -> Result<Self, Error> {
        if method.is_empty() || !method.bytes().all(is_tchar) {
            return Err(Error::BadTemplate("method is not a token"));
        }
        if !is_visible_ascii(path) {
            return Err(Error::BadTemplate("path must be non-empty visible ASCII"));
        }
        if !is_visible_ascii(host) {
            return Err(Error::BadTemplate("host must be non-empty visible ASCII"));
        }
        let mut len = method.len() + path.len() + host.len() + 40;
        for (name, value) in headers {
            if name.is_empty() || !name.bytes().all(is_tchar) {
                return Err(Error::BadTemplate("header name is not a token"));
            }
            if ["host", "content-length", "transfer-encoding"]
                .iter()
                .any(|reserved| name.eq_ignore_ascii_case(reserved))
            {
                return Err(Error::BadTemplate("reserved header name"));
            }
            if value.bytes().any(is_ctl) {
                return Err(Error::BadTemplate(
                    "header value contains a control character",
                ));
            }
            len += name.len() + value.len() + 4;
        }
        let mut head = Vec::with_capacity(len);
        for part in [method, " ", path, " HTTP/1.1\r\nHost: ", host, "\r\n"] {
            head.extend_from_slice(part.as_bytes());
        }
        for (name, value) in headers {
            for part in [name, ": ", value, "\r\n"] {
                head.extend_from_slice(part.as_bytes());
            }
        }
        head.extend_from_slice(b"Content-Length: ");
        Ok(RequestTemplate {
            head: Bytes::from(head),
        })
    }

    /// Appends a complete request with `body` to `dst` as one contiguous buffer:
    /// head, decimal length, `"\r\n\r\n"`, body. No allocation when `dst` has capacity.
    ///
    /// Returns the number of head bytes written (start line + headers + blank line).
    pub fn encode(&self, body: &[u8], dst: &mut BytesMut) -> usize {
        let mut digits = [0u8; 20];
        let length = render_decimal(body.len() as u64, &mut digits);
        let head = self.head.len() + length.len() + 4;
        dst.reserve(head + body.len());
        dst.put_slice(&self.head);
        dst.put_slice(length);
        dst.put_slice(b"\r\n\r\n");
        dst.put_slice(body);
        head
    }

    /// Bytes of head that [`RequestTemplate::encode`] writes for this body length.
    pub fn head_len(&self, body_len: usize) -> usize {
        let mut digits = [0u8; 20];
        self.head.len() + render_decimal(body_len as u64, &mut digits).len() + 4
    }
}

fn is_visible_ascii(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const BIG: u64 = u64::MAX;

    fn head(raw: &[u8], max_body: u64) -> Result<Option<ResponseHead>, Error> {
        let mut buf = BytesMut::from(raw);
        decode_response_head(&mut buf, max_body)
    }

    fn ok_head(raw: &[u8]) -> ResponseHead {
        head(raw, BIG).unwrap().unwrap()
    }

    /// Parses `head_bytes + body` whole and fed byte by byte from every split point;
    /// checks all agree and `buf` is left holding exactly `body`.
    fn check_splits(head_bytes: &[u8], body: &[u8], max_body: u64) -> ResponseHead {
        let mut raw = head_bytes.to_vec();
        raw.extend_from_slice(body);
        let mut whole = BytesMut::from(&raw[..]);
        let expected = decode_response_head(&mut whole, max_body).unwrap().unwrap();
        assert_eq!(expected.head_len, head_bytes.len());
        assert_eq!(&whole[..], body);
        for split in 0..head_bytes.len() {
            let mut buf = BytesMut::from(&raw[..split]);
            assert_eq!(
                decode_response_head(&mut buf, max_body),
                Ok(None),
                "split {split}"
            );
            assert_eq!(&buf[..], &raw[..split], "partial parse consumed input");
            buf.extend_from_slice(&raw[split..]);
            assert_eq!(decode_response_head(&mut buf, max_body), Ok(Some(expected)));
            assert_eq!(&buf[..], body);
        }
        // Byte-by-byte growth of one buffer.
        let mut buf = BytesMut::new();
        let mut result = None;
        for &b in &raw {
            buf.put_u8(b);
            if let Some(h) = decode_response_head(&mut buf, max_body).unwrap() {
                result = Some(h);
                break;
            }
        }
        assert_eq!(result, Some(expected));
        expected
    }

    #[test]
    fn content_length_split_everywhere() {
        let h = check_splits(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: x\r\n\r\n",
            b"hello",
            BIG,
        );
        assert_eq!(h.status, 200);
        assert_eq!(h.body, BodyKind::Length(5));
        assert!(h.keep_alive);
    }

    #[test]
    fn chunked_split_everywhere() {
        let h = check_splits(
            b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"5\r\nhello\r\n0\r\n\r\n",
            BIG,
        );
        assert_eq!(h.body, BodyKind::Chunked);
        assert!(h.keep_alive);
    }

    #[test]
    fn interim_heads_split_everywhere() {
        let h = check_splits(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n",
            b"ok",
            BIG,
        );
        assert_eq!(h.status, 200);
        assert_eq!(h.body, BodyKind::Length(2));
    }

    #[test]
    fn interim_head_alone_is_not_consumed() {
        let raw = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n";
        let mut buf = BytesMut::from(&raw[..]);
        assert_eq!(decode_response_head(&mut buf, BIG), Ok(None));
        assert_eq!(&buf[..], &raw[..]);
    }

    #[test]
    fn until_close_and_versions() {
        let h = check_splits(b"HTTP/1.1 200 OK\r\n\r\n", b"rest", BIG);
        assert_eq!(h.body, BodyKind::UntilClose);
        assert!(!h.keep_alive);

        let h = ok_head(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n");
        assert_eq!(h.body, BodyKind::Length(0));
        assert!(!h.keep_alive);

        let h = ok_head(b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 3\r\n\r\n");
        assert!(h.keep_alive);

        let h = ok_head(
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive, close\r\nContent-Length: 3\r\n\r\n",
        );
        assert!(!h.keep_alive);

        let h = ok_head(b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n");
        assert_eq!(h.body, BodyKind::UntilClose);
        assert!(!h.keep_alive);

        let h = ok_head(
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n",
        );
        assert_eq!(h.body, BodyKind::Chunked);
        assert!(!h.keep_alive);
    }

    #[test]
    fn connection_close_token_list() {
        for value in [
            "close",
            "CLOSE",
            "upgrade, Close",
            " foo ,close ",
            "x\r\nConnection: close",
        ] {
            let raw =
                format!("HTTP/1.1 200 OK\r\nConnection: {value}\r\nContent-Length: 1\r\n\r\n");
            let h = ok_head(raw.as_bytes());
            assert!(!h.keep_alive, "{value}");
        }
        for value in ["closed", "keep-alive", "close-ish, x"] {
            let raw =
                format!("HTTP/1.1 200 OK\r\nConnection: {value}\r\nContent-Length: 1\r\n\r\n");
            assert!(ok_head(raw.as_bytes()).keep_alive, "{value}");
        }
    }

    #[test]
    fn transfer_encoding_rules() {
        let h = ok_head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n");
        assert_eq!(h.body, BodyKind::Chunked);
        assert!(h.keep_alive);

        let h = ok_head(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
        );
        assert_eq!(h.body, BodyKind::Chunked);

        let h = ok_head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n");
        assert_eq!(h.body, BodyKind::UntilClose);
        assert!(!h.keep_alive);

        // Chunked wins over Content-Length (even a malformed one), but no reuse.
        let h =
            ok_head(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(h.body, BodyKind::Chunked);
        assert!(!h.keep_alive);
        let h = ok_head(
            b"HTTP/1.1 200 OK\r\nContent-Length: nope\r\nTransfer-Encoding: chunked\r\n\r\n",
        );
        assert_eq!(h.body, BodyKind::Chunked);

        assert_eq!(
            head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: ,\r\n\r\n", BIG),
            Err(Error::BadHead("empty Transfer-Encoding"))
        );
    }

    #[test]
    fn content_length_rules() {
        let ok = |v: &str| {
            let raw = format!("HTTP/1.1 200 OK\r\nContent-Length: {v}\r\n\r\n");
            head(raw.as_bytes(), BIG)
        };
        assert_eq!(ok("5").unwrap().unwrap().body, BodyKind::Length(5));
        assert_eq!(ok("5, 5").unwrap().unwrap().body, BodyKind::Length(5));
        assert_eq!(ok("007").unwrap().unwrap().body, BodyKind::Length(7));
        assert_eq!(
            ok("18446744073709551615").unwrap().unwrap().body,
            BodyKind::Length(u64::MAX)
        );
        for bad in [
            "",
            "abc",
            "+5",
            "-1",
            "5 5",
            "5,6",
            "5,",
            "0x10",
            "18446744073709551616",
        ] {
            assert_eq!(ok(bad), Err(Error::BadContentLength), "{bad:?}");
        }
        assert_eq!(
            head(
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
                BIG
            )
            .unwrap()
            .unwrap()
            .body,
            BodyKind::Length(5)
        );
        assert_eq!(
            head(
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
                BIG
            ),
            Err(Error::BadContentLength)
        );
        let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 101\r\n\r\n";
        assert_eq!(head(raw, 100), Err(Error::BodyTooLarge));
        assert_eq!(head(raw, 101).unwrap().unwrap().body, BodyKind::Length(101));
    }

    #[test]
    fn bodiless_statuses() {
        for status in ["204 No Content", "304 Not Modified"] {
            let raw = format!(
                "HTTP/1.1 {status}\r\nContent-Length: 999\r\nTransfer-Encoding: chunked\r\n\r\n"
            );
            let h = head(raw.as_bytes(), 10).unwrap().unwrap();
            assert_eq!(h.body, BodyKind::Empty);
            assert!(h.keep_alive);
        }
        let h = check_splits(b"HTTP/1.1 204 No Content\r\n\r\n", b"HTTP/1.1 200", BIG);
        assert_eq!(h.status, 204);
        assert_eq!(h.body, BodyKind::Empty);
    }

    #[test]
    fn bad_heads() {
        assert_eq!(
            head(
                b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
                BIG
            ),
            Err(Error::BadHead("upgrade not supported"))
        );
        assert_eq!(
            head(
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101 Switching\r\n\r\n",
                BIG
            ),
            Err(Error::BadHead("upgrade not supported"))
        );
        assert_eq!(
            head(b"HTTP/1.1 600 Weird\r\n\r\n", BIG),
            Err(Error::BadHead("status code out of range"))
        );
        assert_eq!(
            head(b"HTTP/1.1 099 Weird\r\n\r\n", BIG),
            Err(Error::BadHead("status code out of range"))
        );
        assert!(matches!(
            head(b"HTTP/2.0 200 OK\r\n\r\n", BIG),
            Err(Error::BadHead(_))
        ));
        assert!(matches!(
            head(b"HTTP/1.1 2x0 OK\r\n\r\n", BIG),
            Err(Error::BadHead(_))
        ));
        assert!(matches!(
            head(b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", BIG),
            Err(Error::BadHead(_))
        ));
        assert!(matches!(
            head(b"GARBAGE\r\n\r\n", BIG),
            Err(Error::BadHead(_))
        ));
    }

    fn head_of_size(total: usize) -> Vec<u8> {
        let start = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX-Pad: ";
        let pad = total - start.len() - 4;
        let mut raw = start.to_vec();
        raw.resize(start.len() + pad, b'a');
        raw.extend_from_slice(b"\r\n\r\n");
        assert_eq!(raw.len(), total);
        raw
    }

    #[test]
    fn head_size_limit() {
        let exact = head_of_size(MAX_HEAD_BYTES);
        let mut buf = BytesMut::from(&exact[..]);
        buf.extend_from_slice(b"next");
        let h = decode_response_head(&mut buf, BIG).unwrap().unwrap();
        assert_eq!(h.head_len, MAX_HEAD_BYTES);
        assert_eq!(&buf[..], b"next");

        let over = head_of_size(MAX_HEAD_BYTES + 1);
        assert_eq!(head(&over, BIG), Err(Error::HeadTooLarge));
        // Incomplete but already at the limit.
        assert_eq!(head(&over[..MAX_HEAD_BYTES], BIG), Err(Error::HeadTooLarge));
        assert_eq!(head(&over[..MAX_HEAD_BYTES - 1], BIG), Ok(None));
        // Interim heads count towards the limit.
        let mut with_interim = b"HTTP/1.1 100 Continue\r\n\r\n".to_vec();
        with_interim.extend_from_slice(&exact);
        assert_eq!(head(&with_interim, BIG), Err(Error::HeadTooLarge));
    }

    #[test]
    fn header_count_limit() {
        let build = |n: usize| {
            let mut raw = b"HTTP/1.1 200 OK\r\n".to_vec();
            for i in 0..n {
                raw.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
            }
            raw.extend_from_slice(b"\r\n");
            raw
        };
        assert!(head(&build(MAX_HEADERS), BIG).unwrap().is_some());
        assert_eq!(
            head(&build(MAX_HEADERS + 1), BIG),
            Err(Error::TooManyHeaders)
        );
    }

    #[test]
    fn error_kinds_and_display() {
        let all = [
            Error::HeadTooLarge,
            Error::TooManyHeaders,
            Error::BadHead("x"),
            Error::BadContentLength,
            Error::BodyTooLarge,
            Error::BadChunk("x"),
            Error::ChunkLineTooLong,
            Error::TrailersTooLarge,
            Error::BadTemplate("x"),
        ];
        let mut kinds: Vec<_> = all.iter().map(|e| e.kind()).collect();
        for k in &kinds {
            assert!(
                k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{k}"
            );
        }
        kinds.sort_unstable();
        kinds.dedup();
        assert_eq!(kinds.len(), all.len());
        for e in all {
            assert!(!e.to_string().is_empty());
            let _: &dyn std::error::Error = &e;
        }
    }

    // ---- chunked ----

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
        let mut digits = [0u8; 20];
        assert_eq!(render_decimal(0, &mut digits), b"0");
        assert_eq!(
            render_decimal(u64::MAX, &mut digits),
            b"18446744073709551615"
        );
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

        #[test]
        fn head_arbitrary_bytes_never_panic(
            input in proptest::collection::vec(any::<u8>(), 0..512),
            max_body in any::<u64>(),
        ) {
            let mut buf = BytesMut::from(&input[..]);
            while let Ok(Some(h)) = decode_response_head(&mut buf, max_body) {
                prop_assert!(h.head_len > 0);
                prop_assert!(h.head_len <= input.len());
            }
        }

        #[test]
        fn head_structured_bytes_never_panic(
            lines in proptest::collection::vec(
                prop_oneof![
                    Just("HTTP/1.1 200 OK".to_string()),
                    Just("HTTP/1.0 100 Continue".to_string()),
                    Just("Transfer-Encoding: chunked".to_string()),
                    Just("Content-Length: 12".to_string()),
                    Just("Connection: close".to_string()),
                    "[ -~]{0,20}",
                ],
                0..8,
            ),
            sep in prop_oneof![Just("\r\n"), Just("\n"), Just("\r")],
            cut in any::<usize>(),
        ) {
            let raw = lines.join(sep) + sep + sep;
            let raw = raw.as_bytes();
            let whole = head(raw, BIG);
            let cut = cut % (raw.len() + 1);
            let mut buf = BytesMut::from(&raw[..cut]);
            match decode_response_head(&mut buf, BIG) {
                Ok(None) => {
                    prop_assert_eq!(&buf[..], &raw[..cut]);
                    buf.extend_from_slice(&raw[cut..]);
                    prop_assert_eq!(decode_response_head(&mut buf, BIG), whole);
                }
                other => prop_assert_eq!(other, whole),
            }
        }
    }

    /// Mirrors fuzz/fuzz_targets/http1_head.rs.
    fn fuzz_head_logic(data: &[u8]) {
        let mut buf = BytesMut::from(data);
        while let Ok(Some(_)) = decode_response_head(&mut buf, 1 << 20) {}
    }

    /// Mirrors fuzz/fuzz_targets/http1_chunked.rs.
    fn fuzz_chunked_logic(data: &[u8]) {
        let Some(&first) = data.first() else { return };
        let split = usize::from(first) % data.len();
        let (a, b) = data.split_at(split);
        let mut dec = ChunkedDecoder::new(1 << 20);
        let mut src = BytesMut::from(a);
        let mut dst = BytesMut::new();
        let first_result = dec.decode(&mut src, &mut dst);
        if first_result == Ok(false) {
            src.extend_from_slice(b);
            let _ = dec.decode(&mut src, &mut dst);
        }
        dec.reset();
        let mut src = BytesMut::from(data);
        let mut dst = BytesMut::new();
        let _ = dec.decode(&mut src, &mut dst);
    }

    proptest! {
        #[test]
        fn fuzz_logic_never_panics(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            fuzz_head_logic(&data);
            fuzz_chunked_logic(&data);
        }
    }

    // ---- request template ----

    #[test]
    fn template_renders_expected_bytes() {
        let t = RequestTemplate::new(
            "POST",
            "/api?q=1",
            "example.com:8080",
            &[("X-A", "b c"), ("Accept", "*/*")],
        )
        .unwrap();
        let mut dst = BytesMut::with_capacity(256);
        let cap = dst.capacity();
        t.encode(b"hello", &mut dst);
        assert_eq!(
            &dst[..],
            &b"POST /api?q=1 HTTP/1.1\r\nHost: example.com:8080\r\nX-A: b c\r\nAccept: */*\r\nContent-Length: 5\r\n\r\nhello"[..]
        );
        assert_eq!(dst.capacity(), cap, "encode reallocated despite capacity");
        assert_eq!(t.head_len(5), dst.len() - 5);
        let mut empty = BytesMut::new();
        t.encode(b"", &mut empty);
        assert!(empty.ends_with(b"Content-Length: 0\r\n\r\n"));
        assert_eq!(t.head_len(0), empty.len());
    }

    #[test]
    fn template_rejects_bad_parts() {
        type Case<'a> = (&'a str, &'a str, &'a str, &'a [(&'a str, &'a str)]);
        let bad: &[Case<'_>] = &[
            ("", "/", "h", &[]),
            ("GE T", "/", "h", &[]),
            ("GET\r\n", "/", "h", &[]),
            ("GET", "", "h", &[]),
            ("GET", "/a b", "h", &[]),
            ("GET", "/\r\nX: y", "h", &[]),
            ("GET", "/\0", "h", &[]),
            ("GET", "/é", "h", &[]),
            ("GET", "/", "", &[]),
            ("GET", "/", "h\n", &[]),
            ("GET", "/", "h", &[("", "v")]),
            ("GET", "/", "h", &[("X:Y", "v")]),
            ("GET", "/", "h", &[("X\r\n", "v")]),
            ("GET", "/", "h", &[("X", "v\r\nInjected: 1")]),
            ("GET", "/", "h", &[("X", "v\0")]),
            ("GET", "/", "h", &[("X", "v\n")]),
            ("GET", "/", "h", &[("content-length", "1")]),
            ("GET", "/", "h", &[("Host", "other")]),
            ("GET", "/", "h", &[("Transfer-Encoding", "chunked")]),
        ];
        for (m, p, h, hs) in bad {
            assert!(
                matches!(
                    RequestTemplate::new(m, p, h, hs),
                    Err(Error::BadTemplate(_))
                ),
                "{m:?} {p:?} {h:?} {hs:?}"
            );
        }
        assert!(RequestTemplate::new("GET", "/", "h", &[("X", "tab\tand é")]).is_ok());
    }

    proptest! {
        #[test]
        fn template_round_trips_through_httparse(
            method in "[A-Z]{1,10}",
            path in "/[!-~]{0,40}",
            host in "[a-z0-9.-]{1,20}(:[0-9]{1,5})?",
            headers in proptest::collection::vec(
                ("[A-Za-z0-9!#$%&'*+.^_`|~-]{1,16}", "([!-~]([ -~]{0,30}[!-~])?)?"),
                0..10,
            ),
            body in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let reserved = ["host", "content-length", "transfer-encoding"];
            let headers: Vec<(String, String)> = headers
                .into_iter()
                .filter(|(n, _)| !reserved.iter().any(|r| n.eq_ignore_ascii_case(r)))
                .collect();
            let pairs: Vec<(&str, &str)> =
                headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            let t = RequestTemplate::new(&method, &path, &host, &pairs).unwrap();
            let mut dst = BytesMut::new();
            t.encode(&body, &mut dst);

            let mut parsed_headers = [httparse::EMPTY_HEADER; 16];
            let mut req = httparse::Request::new(&mut parsed_headers);
            let status = req.parse(&dst).unwrap();
            let httparse::Status::Complete(head_len) = status else {
                panic!("incomplete request head");
            };
            prop_assert_eq!(head_len, t.head_len(body.len()));
            prop_assert_eq!(req.method, Some(method.as_str()));
            prop_assert_eq!(req.path, Some(path.as_str()));
            prop_assert_eq!(req.version, Some(1));
            let got: Vec<(String, Vec<u8>)> = req
                .headers
                .iter()
                .map(|h| (h.name.to_string(), h.value.to_vec()))
                .collect();
            let mut want: Vec<(String, Vec<u8>)> = vec![("Host".into(), host.clone().into_bytes())];
            want.extend(headers.iter().map(|(n, v)| (n.clone(), v.clone().into_bytes())));
            want.push(("Content-Length".into(), body.len().to_string().into_bytes()));
            prop_assert_eq!(got, want);
            prop_assert_eq!(&dst[head_len..], &body[..]);
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
