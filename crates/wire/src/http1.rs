//! HTTP/1.1 wire cores: request templates and request heads, response heads, the client's
//! response reader and the resumable chunked-body decoder; no IO.
//!
//! - [`response`]: [`decode_response_head`] (status, body framing, keep-alive).
//! - [`reader`]: [`ResponseReader`], the client role: one whole response at a time, with the
//!   body limit and the read-buffer growth policy.
//! - [`chunked`]: [`ChunkedDecoder`], [`encode_chunk`], [`encode_last_chunk`].
//! - [`request`]: [`RequestTemplate`] (the client's pre-rendered requests) and
//!   [`decode_request_head`] (the server role: method, path, headers, body framing).

use std::fmt;

pub mod chunked;
pub mod reader;
pub mod request;
pub mod response;

pub use chunked::{ChunkedDecoder, encode_chunk, encode_last_chunk};
pub use reader::{
    BodyAt, EXACT_GROWTH_FROM, MIN_ROOM, READ_CHUNK, READ_START, Response, ResponseReader,
    SHRINK_FROM,
};
pub use request::{
    MAX_REQUEST_HEADERS, Rendered, RequestBody, RequestError, RequestHead, RequestLimits,
    RequestTemplate, decode_request_head,
};
pub use response::{BodyKind, ResponseHead, decode_head_response, decode_response_head};

/// Largest response head accepted (status line + headers + blank line, including any
/// interim 1xx heads consumed in the same call); also the default request-head limit.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Largest number of header fields accepted in one response head.
pub const MAX_HEADERS: usize = 100;
/// Largest chunk-size line (hex size plus extensions, excluding the CRLF).
pub const MAX_CHUNK_LINE: usize = 4096;
/// Largest trailer section (all trailer field lines plus the final CRLF).
pub const MAX_TRAILER_BYTES: usize = 16 * 1024;

/// Errors of the client side: response heads, bodies, chunked framing, request templates.
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
    /// The peer closed the connection before the response was complete.
    Truncated,
}

impl Error {}

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
            Error::Truncated => f.write_str("connection closed before the response was complete"),
        }
    }
}

impl std::error::Error for Error {}

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

/// Control characters other than HTAB (which is allowed in values and extensions).
fn is_ctl(b: u8) -> bool {
    (b < 0x20 && b != b'\t') || b == 0x7f
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_display_and_are_errors() {
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
            Error::Truncated,
        ];
        for e in all {
            assert!(!e.to_string().is_empty());
            let _: &dyn std::error::Error = &e;
        }
    }
}
