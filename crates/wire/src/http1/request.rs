//! Requests: the client's pre-rendered templates and the server's request-head decoder.

use std::fmt;

use bytes::{BufMut, Bytes, BytesMut};

use crate::vary::decimal;

use super::{Error, MAX_HEAD_BYTES, is_ctl, is_tchar, map_httparse_error, scan_headers};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestTemplate {
    head: Bytes,
    /// where `Content-Length: ` starts in `head`
    length_at: usize,
    /// an empty body goes without a Content-Length line
    omit_empty_length: bool,
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
        let length_at = head.len();
        head.extend_from_slice(b"Content-Length: ");
        Ok(RequestTemplate {
            head: Bytes::from(head),
            length_at,
            omit_empty_length: false,
        })
    }

    /// The same template, but a request with an empty body is sent without a Content-Length
    /// line, as RFC 9110 §8.6 asks of a method that anticipates no content (GET, HEAD, DELETE,
    /// OPTIONS): what such a client sends, byte for byte.
    pub fn omit_empty_length(mut self) -> Self {
        self.omit_empty_length = true;
        self
    }

    /// Appends a complete request with `body` to `dst` as one contiguous buffer:
    /// head, decimal length, `"\r\n\r\n"`, body. No allocation when `dst` has capacity.
    ///
    /// Returns the number of head bytes written (start line + headers + blank line).
    pub fn encode(&self, body: &[u8], dst: &mut BytesMut) -> usize {
        if body.is_empty() && self.omit_empty_length {
            let head = self.length_at + 2;
            dst.reserve(head);
            dst.put_slice(&self.head[..self.length_at]);
            dst.put_slice(b"\r\n");
            return head;
        }
        let mut digits = [0u8; 20];
        let length = decimal(body.len() as u64, &mut digits);
        let head = self.head.len() + length.len() + 4;
        dst.reserve(head + body.len());
        dst.put_slice(&self.head);
        dst.put_slice(length);
        dst.put_slice(b"\r\n\r\n");
        dst.put_slice(body);
        head
    }

    /// The whole request with `body`, encoded once, for a client that sends the same request
    /// again and again (one copy a request instead of an encode): its bytes and its head's
    /// length, as [`RequestTemplate::encode`] gives them.
    pub fn render(&self, body: &[u8]) -> Rendered {
        let mut bytes = BytesMut::new();
        let head_len = self.encode(body, &mut bytes);
        Rendered {
            bytes: bytes.freeze(),
            head_len,
        }
    }

    /// Bytes of head that [`RequestTemplate::encode`] writes for this body length.
    pub fn head_len(&self, body_len: usize) -> usize {
        if body_len == 0 && self.omit_empty_length {
            return self.length_at + 2;
        }
        let mut digits = [0u8; 20];
        self.head.len() + decimal(body_len as u64, &mut digits).len() + 4
    }
}

/// A request encoded once ([`RequestTemplate::render`]).
#[derive(Debug, Clone)]
pub struct Rendered {
    bytes: Bytes,
    head_len: usize,
}

impl Rendered {
    /// Appends the request to `dst`; returns its head's length.
    pub fn encode(&self, dst: &mut BytesMut) -> usize {
        dst.extend_from_slice(&self.bytes);
        self.head_len
    }
}

fn is_visible_ascii(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic())
}

/// Largest number of header fields [`decode_request_head`] accepts (the most a
/// [`RequestLimits::max_headers`] can ask for).
pub const MAX_REQUEST_HEADERS: usize = 64;

/// What a request head may cost before it is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLimits {
    /// Largest head (request line + headers + blank line); httparse never sees more.
    pub max_head_bytes: usize,
    /// Largest number of header fields; capped at [`MAX_REQUEST_HEADERS`].
    pub max_headers: usize,
    /// Largest Content-Length accepted.
    pub max_body: u64,
}

impl Default for RequestLimits {
    /// [`MAX_HEAD_BYTES`], [`MAX_REQUEST_HEADERS`], no body limit.
    fn default() -> Self {
        RequestLimits {
            max_head_bytes: MAX_HEAD_BYTES,
            max_headers: MAX_REQUEST_HEADERS,
            max_body: u64::MAX,
        }
    }
}

/// Why a request is refused: the server side's counterpart of [`Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestError {
    /// The head did not complete within [`RequestLimits::max_head_bytes`].
    HeadTooLarge,
    /// The head has more than [`RequestLimits::max_headers`] header fields.
    TooManyHeaders,
    /// The request line or a header field is malformed, or the framing is ambiguous.
    BadHead(&'static str),
    /// Content-Length is malformed, overflows or has conflicting values.
    BadContentLength,
    /// Content-Length exceeds [`RequestLimits::max_body`].
    BodyTooLarge,
    /// The body is chunked: [`RequestHead::decode_body`] frames Content-Length bodies only.
    ChunkedBody,
}

impl RequestError {
    /// The status code that refuses the request (RFC 9110 §15.5, RFC 6585 §5).
    pub fn status(&self) -> u16 {
        match self {
            RequestError::HeadTooLarge => 431,
            RequestError::TooManyHeaders
            | RequestError::BadHead(_)
            | RequestError::BadContentLength => 400,
            RequestError::BodyTooLarge => 413,
            RequestError::ChunkedBody => 411,
        }
    }

    /// The request side's name for an error of the head parsing shared with responses.
    fn from_field_error(e: Error) -> RequestError {
        match e {
            Error::HeadTooLarge => RequestError::HeadTooLarge,
            Error::TooManyHeaders => RequestError::TooManyHeaders,
            Error::BadHead(ctx) => RequestError::BadHead(ctx),
            Error::BadContentLength => RequestError::BadContentLength,
            Error::BodyTooLarge => RequestError::BodyTooLarge,
            // not produced by field parsing
            Error::BadChunk(_)
            | Error::ChunkLineTooLong
            | Error::TrailersTooLarge
            | Error::BadTemplate(_)
            | Error::Truncated => RequestError::BadHead("invalid header field"),
        }
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::HeadTooLarge => f.write_str("request head too large"),
            RequestError::TooManyHeaders => f.write_str("too many headers in the request head"),
            RequestError::BadHead(ctx) => write!(f, "malformed request head: {ctx}"),
            RequestError::BadContentLength => f.write_str("invalid Content-Length"),
            RequestError::BodyTooLarge => f.write_str("request body too large"),
            RequestError::ChunkedBody => f.write_str("chunked request bodies are not supported"),
        }
    }
}

impl std::error::Error for RequestError {}

/// How the body following a request head is delimited (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestBody {
    /// Exactly this many bytes: Content-Length, or 0 without it.
    Length(u64),
    /// Transfer-Encoding ending in `chunked`; decode it with [`ChunkedDecoder`](super::ChunkedDecoder).
    Chunked,
}

/// Where one part of the head sits in [`RequestHead::raw`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Span {
    start: usize,
    end: usize,
}

impl Span {
    /// The span of `part`, a subslice of `base` (as httparse hands them out).
    fn of(base: &[u8], part: &[u8]) -> Span {
        let start = (part.as_ptr() as usize).wrapping_sub(base.as_ptr() as usize);
        Span {
            start,
            end: start.wrapping_add(part.len()),
        }
    }

    fn get(self, raw: &[u8]) -> &[u8] {
        raw.get(self.start..self.end).unwrap_or_default()
    }
}

/// A decoded request head: the head's bytes, frozen once, and where each part is in them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHead {
    raw: Bytes,
    method: Span,
    path: Span,
    headers: [(Span, Span); MAX_REQUEST_HEADERS],
    header_count: usize,
    /// Minor version: 1 for HTTP/1.1, 0 for HTTP/1.0.
    pub version: u8,
    /// How the body is delimited.
    pub body: RequestBody,
    /// Whether the connection may carry another request after this one's response.
    pub keep_alive: bool,
}

impl RequestHead {
    /// The method token, e.g. `POST`.
    pub fn method(&self) -> &str {
        // httparse checked the method is a token: ASCII.
        std::str::from_utf8(self.method.get(&self.raw)).unwrap_or_default()
    }

    /// The request target as sent, e.g. `/v1/echo?x=1`.
    pub fn path(&self) -> &str {
        // httparse checked the target is visible ASCII.
        std::str::from_utf8(self.path.get(&self.raw)).unwrap_or_default()
    }

    /// The header fields in order, names as sent (tokens), values without surrounding OWS.
    pub fn headers(&self) -> impl ExactSizeIterator<Item = (&str, &[u8])> + '_ {
        let fields = self.headers.get(..self.header_count).unwrap_or_default();
        fields.iter().map(|&(name, value)| {
            // httparse checked names are tokens: ASCII.
            let name = std::str::from_utf8(name.get(&self.raw)).unwrap_or_default();
            (name, value.get(&self.raw))
        })
    }

    /// The whole head as received (request line, headers, blank line), shared, not copied.
    pub fn raw(&self) -> &Bytes {
        &self.raw
    }

    /// Bytes the head took from the buffer.
    pub fn head_len(&self) -> usize {
        self.raw.len()
    }

    /// The body, once `buf` (positioned just after the head) holds all of it: split off `buf`
    /// without copying. `Ok(None)`: more bytes needed, nothing consumed. A chunked body is
    /// [`RequestError::ChunkedBody`]: this decoder frames Content-Length bodies only.
    pub fn decode_body(&self, buf: &mut BytesMut) -> Result<Option<BytesMut>, RequestError> {
        let RequestBody::Length(len) = self.body else {
            return Err(RequestError::ChunkedBody);
        };
        let len = usize::try_from(len).map_err(|_| RequestError::BodyTooLarge)?;
        if buf.len() < len {
            return Ok(None);
        }
        Ok(Some(buf.split_to(len)))
    }
}

/// Decodes one request head at the start of `buf`.
///
/// On success splits exactly the head off `buf` (frozen: the returned head shares, not
/// copies, its bytes) and leaves the body and anything after it in `buf`; `Ok(None)` means
/// more bytes are needed and `buf` is left untouched.
///
/// Rules (RFC 9112, as [`decode_response_head`](super::decode_response_head) applies them):
/// * httparse never sees more than `limits.max_head_bytes`: a head not complete within them
///   is [`RequestError::HeadTooLarge`], however the bytes arrived.
/// * Transfer-Encoding whose last coding is `chunked` is [`RequestBody::Chunked`] (and wins
///   over Content-Length, which is then ignored); any other Transfer-Encoding is
///   [`RequestError::BadHead`] (§6.3: the length cannot be determined).
/// * Content-Length must be decimal digits; several headers or a comma list are accepted only
///   when all values are equal ([`RequestError::BadContentLength`]); above `limits.max_body`
///   it is [`RequestError::BodyTooLarge`]. No Content-Length is a 0-byte body.
/// * keep-alive: HTTP/1.1 unless `Connection: close`; HTTP/1.0 only with
///   `Connection: keep-alive`; `close` wins.
pub fn decode_request_head(
    buf: &mut BytesMut,
    limits: RequestLimits,
) -> Result<Option<RequestHead>, RequestError> {
    let Some((len, mut head)) = parse_request(buf, limits)? else {
        return Ok(None);
    };
    head.raw = buf.split_to(len).freeze();
    Ok(Some(head))
}

/// Parses the head at the start of `buf` without consuming anything: its length, and the
/// head with every part located but `raw` still empty.
fn parse_request(
    buf: &[u8],
    limits: RequestLimits,
) -> Result<Option<(usize, RequestHead)>, RequestError> {
    let window = buf.get(..limits.max_head_bytes).unwrap_or(buf);
    let mut fields = [httparse::EMPTY_HEADER; MAX_REQUEST_HEADERS];
    let allowed = limits.max_headers.min(MAX_REQUEST_HEADERS);
    let mut req = httparse::Request::new(fields.get_mut(..allowed).unwrap_or_default());
    let head_len = match req.parse(window) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => {
            return if buf.len() >= limits.max_head_bytes {
                Err(RequestError::HeadTooLarge)
            } else {
                Ok(None)
            };
        }
        Err(e) => return Err(RequestError::from_field_error(map_httparse_error(e))),
    };
    let method = req.method.ok_or(RequestError::BadHead("missing method"))?;
    let path = req
        .path
        .ok_or(RequestError::BadHead("missing request target"))?;
    let version = req
        .version
        .ok_or(RequestError::BadHead("missing HTTP version"))?;
    let facts = scan_headers(req.headers).map_err(RequestError::from_field_error)?;
    let body = if facts.te_present {
        if !facts.te_chunked {
            return Err(RequestError::BadHead(
                "Transfer-Encoding does not end in chunked",
            ));
        }
        RequestBody::Chunked
    } else {
        match facts
            .content_length
            .map_err(RequestError::from_field_error)?
        {
            Some(len) if len > limits.max_body => return Err(RequestError::BodyTooLarge),
            Some(len) => RequestBody::Length(len),
            None => RequestBody::Length(0),
        }
    };
    let keep_alive = match version {
        1 => !facts.conn_close,
        _ => facts.conn_keep_alive && !facts.conn_close,
    };
    let mut headers = [(Span::default(), Span::default()); MAX_REQUEST_HEADERS];
    for (slot, field) in headers.iter_mut().zip(req.headers.iter()) {
        *slot = (
            Span::of(window, field.name.as_bytes()),
            Span::of(window, field.value),
        );
    }
    let head = RequestHead {
        raw: Bytes::new(),
        method: Span::of(window, method.as_bytes()),
        path: Span::of(window, path.as_bytes()),
        headers,
        header_count: req.headers.len(),
        version,
        body,
        keep_alive,
    };
    Ok(Some((head_len, head)))
}

#[cfg(test)]
mod tests;
