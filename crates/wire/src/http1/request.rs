//! Requests: the client's pre-rendered templates and the server's request-head decoder.

use std::fmt;

use bytes::{BufMut, Bytes, BytesMut};

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
        if body_len == 0 && self.omit_empty_length {
            return self.length_at + 2;
        }
        let mut digits = [0u8; 20];
        self.head.len() + render_decimal(body_len as u64, &mut digits).len() + 4
    }
}

fn is_visible_ascii(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic())
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
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_bodyless_request_may_go_without_content_length() {
        let t = RequestTemplate::new("GET", "/x", "h:1", &[("Accept", "*/*")])
            .unwrap()
            .omit_empty_length();
        let mut dst = BytesMut::new();
        assert_eq!(t.encode(b"", &mut dst), dst.len());
        assert_eq!(
            &dst[..],
            &b"GET /x HTTP/1.1\r\nHost: h:1\r\nAccept: */*\r\n\r\n"[..]
        );
        assert_eq!(t.head_len(0), dst.len());
        // a body still gets its length
        dst.clear();
        let head = t.encode(b"ab", &mut dst);
        assert_eq!(
            &dst[..],
            &b"GET /x HTTP/1.1\r\nHost: h:1\r\nAccept: */*\r\nContent-Length: 2\r\n\r\nab"[..]
        );
        assert_eq!((head, t.head_len(2)), (dst.len() - 2, dst.len() - 2));
        // without the option an empty body is Content-Length: 0
        let t = RequestTemplate::new("POST", "/x", "h:1", &[]).unwrap();
        dst.clear();
        t.encode(b"", &mut dst);
        assert!(dst.ends_with(b"Content-Length: 0\r\n\r\n"));
    }

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
    fn render_decimal_edges() {
        let mut digits = [0u8; 20];
        assert_eq!(render_decimal(0, &mut digits), b"0");
        assert_eq!(
            render_decimal(u64::MAX, &mut digits),
            b"18446744073709551615"
        );
    }

    // ---- request heads ----

    const ECHO_HEAD: &[u8] = b"POST /v1/echo HTTP/1.1\r\nHost: h:1\r\nContent-Type: application/json\r\nX-A: 1\r\nx-a:  2 \r\nContent-Length: 12\r\n\r\n";
    const ECHO_BODY: &[u8] = b"{\"ping\":\"x\"}";

    fn limits() -> RequestLimits {
        RequestLimits::default()
    }

    fn req(raw: &[u8]) -> Result<Option<RequestHead>, RequestError> {
        decode_request_head(&mut BytesMut::from(raw), limits())
    }

    fn ok_req(raw: &[u8]) -> RequestHead {
        req(raw).unwrap().unwrap()
    }

    fn headers_of(head: &RequestHead) -> Vec<(String, Vec<u8>)> {
        head.headers()
            .map(|(n, v)| (n.to_string(), v.to_vec()))
            .collect()
    }

    #[test]
    fn head_split_everywhere_consumes_nothing_until_complete() {
        let mut raw = ECHO_HEAD.to_vec();
        raw.extend_from_slice(ECHO_BODY);
        raw.extend_from_slice(b"GET / HTTP/1.1\r\n");
        for cut in 0..ECHO_HEAD.len() {
            let mut buf = BytesMut::from(&raw[..cut]);
            assert_eq!(
                decode_request_head(&mut buf, limits()),
                Ok(None),
                "cut {cut}"
            );
            assert_eq!(&buf[..], &raw[..cut], "a partial head consumed input");
        }
        let mut buf = BytesMut::from(&raw[..]);
        let head = decode_request_head(&mut buf, limits()).unwrap().unwrap();
        assert_eq!(head.method(), "POST");
        assert_eq!(head.path(), "/v1/echo");
        assert_eq!(head.version, 1);
        assert_eq!(head.body, RequestBody::Length(12));
        assert!(head.keep_alive);
        assert_eq!(head.head_len(), ECHO_HEAD.len());
        assert_eq!(&head.raw()[..], ECHO_HEAD);
        assert_eq!(
            headers_of(&head),
            [
                ("Host", &b"h:1"[..]),
                ("Content-Type", b"application/json"),
                ("X-A", b"1"),
                ("x-a", b"2"),
                ("Content-Length", b"12"),
            ]
            .map(|(n, v)| (n.to_string(), v.to_vec()))
        );
        assert_eq!(head.headers().len(), 5);

        // The body: nothing until all of it is there, then split off exactly.
        for cut in 0..ECHO_BODY.len() {
            let mut partial = BytesMut::from(&ECHO_BODY[..cut]);
            assert_eq!(head.decode_body(&mut partial), Ok(None));
            assert_eq!(&partial[..], &ECHO_BODY[..cut]);
        }
        let body = head.decode_body(&mut buf).unwrap().unwrap();
        assert_eq!(&body[..], ECHO_BODY);
        assert_eq!(&buf[..], b"GET / HTTP/1.1\r\n");
        assert_eq!(decode_request_head(&mut buf, limits()), Ok(None));
    }

    #[test]
    fn bodiless_and_pipelined_requests() {
        let mut buf = BytesMut::from(&b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.0\r\n\r\n"[..]);
        let a = decode_request_head(&mut buf, limits()).unwrap().unwrap();
        assert_eq!(
            (a.path(), a.body, a.keep_alive),
            ("/a", RequestBody::Length(0), true)
        );
        assert_eq!(a.decode_body(&mut buf).unwrap().unwrap().len(), 0);
        let b = decode_request_head(&mut buf, limits()).unwrap().unwrap();
        assert_eq!((b.path(), b.version, b.keep_alive), ("/b", 0, false));
        assert!(buf.is_empty());
    }

    #[test]
    fn keep_alive_rules() {
        let cases: &[(&[u8], bool)] = &[
            (b"GET / HTTP/1.1\r\n\r\n", true),
            (b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", false),
            (
                b"GET / HTTP/1.1\r\nConnection: Upgrade, CLOSE\r\n\r\n",
                false,
            ),
            (
                b"GET / HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n",
                false,
            ),
            (b"GET / HTTP/1.1\r\nConnection: closed\r\n\r\n", true),
            (b"GET / HTTP/1.0\r\n\r\n", false),
            (b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true),
            (
                b"GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n",
                false,
            ),
        ];
        for (raw, keep) in cases {
            assert_eq!(
                ok_req(raw).keep_alive,
                *keep,
                "{:?}",
                String::from_utf8_lossy(raw)
            );
        }
    }

    #[test]
    fn body_framing_rules() {
        let framing = |headers: &str| {
            let raw = format!("POST / HTTP/1.1\r\n{headers}\r\n");
            req(raw.as_bytes()).map(|h| h.map(|h| h.body))
        };
        assert_eq!(framing(""), Ok(Some(RequestBody::Length(0))));
        assert_eq!(
            framing("Content-Length: 007\r\n"),
            Ok(Some(RequestBody::Length(7)))
        );
        assert_eq!(
            framing("Content-Length: 5, 5\r\nContent-Length: 5\r\n"),
            Ok(Some(RequestBody::Length(5)))
        );
        for bad in ["", "x", "+5", "-1", "5,6", "5 5", "18446744073709551616"] {
            assert_eq!(
                framing(&format!("Content-Length: {bad}\r\n")),
                Err(RequestError::BadContentLength),
                "{bad:?}"
            );
        }
        assert_eq!(
            framing("Content-Length: 5\r\nContent-Length: 6\r\n"),
            Err(RequestError::BadContentLength)
        );
        assert_eq!(
            framing("Transfer-Encoding: chunked\r\n"),
            Ok(Some(RequestBody::Chunked))
        );
        // chunked wins over any Content-Length, even a malformed one
        assert_eq!(
            framing("Content-Length: nope\r\nTransfer-Encoding: gzip, chunked\r\n"),
            Ok(Some(RequestBody::Chunked))
        );
        for bad in ["gzip", "chunked, gzip", ","] {
            assert!(
                matches!(
                    framing(&format!("Transfer-Encoding: {bad}\r\n")),
                    Err(RequestError::BadHead(_))
                ),
                "{bad:?}"
            );
        }
        let chunked = ok_req(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!(
            chunked.decode_body(&mut BytesMut::from(&b"0\r\n\r\n"[..])),
            Err(RequestError::ChunkedBody)
        );
    }

    fn head_with_headers(n: usize) -> Vec<u8> {
        let mut raw = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..n {
            raw.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
        }
        raw.extend_from_slice(b"\r\n");
        raw
    }

    fn head_of_size(total: usize) -> Vec<u8> {
        let start = b"GET / HTTP/1.1\r\nX-Pad: ";
        let mut raw = start.to_vec();
        raw.resize(total - 4, b'a');
        raw.extend_from_slice(b"\r\n\r\n");
        raw
    }

    #[test]
    fn limits_are_enforced() {
        assert_eq!(
            ok_req(&head_with_headers(MAX_REQUEST_HEADERS))
                .headers()
                .len(),
            64
        );
        assert_eq!(
            req(&head_with_headers(MAX_REQUEST_HEADERS + 1)),
            Err(RequestError::TooManyHeaders)
        );
        let few = RequestLimits {
            max_headers: 2,
            ..limits()
        };
        let mut two = BytesMut::from(&head_with_headers(2)[..]);
        assert!(decode_request_head(&mut two, few).unwrap().is_some());
        let mut three = BytesMut::from(&head_with_headers(3)[..]);
        assert_eq!(
            decode_request_head(&mut three, few),
            Err(RequestError::TooManyHeaders)
        );

        let exact = head_of_size(MAX_HEAD_BYTES);
        assert_eq!(ok_req(&exact).head_len(), MAX_HEAD_BYTES);
        let over = head_of_size(MAX_HEAD_BYTES + 1);
        // complete, but past the limit: refused however the bytes arrived
        assert_eq!(req(&over), Err(RequestError::HeadTooLarge));
        assert_eq!(
            req(&over[..MAX_HEAD_BYTES]),
            Err(RequestError::HeadTooLarge)
        );
        assert_eq!(req(&over[..MAX_HEAD_BYTES - 1]), Ok(None));

        let small = RequestLimits {
            max_body: 10,
            ..limits()
        };
        let mut ten = BytesMut::from(&b"POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n"[..]);
        assert!(decode_request_head(&mut ten, small).unwrap().is_some());
        let mut eleven = BytesMut::from(&b"POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n"[..]);
        assert_eq!(
            decode_request_head(&mut eleven, small),
            Err(RequestError::BodyTooLarge)
        );
        assert_eq!(eleven.len(), 39, "an error consumes nothing");
    }

    #[test]
    fn malformed_heads() {
        for raw in [
            &b"\x00\x01garbage\r\n\r\n"[..],
            b"GET / HTTP/2.0\r\n\r\n",
            b"GE T / HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
            b"GET / HTTP/1.1\r\nX: a\x00b\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n\r\n",
        ] {
            assert!(
                matches!(req(raw), Err(RequestError::BadHead(_))),
                "{:?}: {:?}",
                String::from_utf8_lossy(raw),
                req(raw)
            );
        }
    }

    #[test]
    fn request_errors_statuses_and_display() {
        let all = [
            RequestError::HeadTooLarge,
            RequestError::TooManyHeaders,
            RequestError::BadHead("x"),
            RequestError::BadContentLength,
            RequestError::BodyTooLarge,
            RequestError::ChunkedBody,
        ];
        let statuses: Vec<u16> = all.iter().map(|e| e.status()).collect();
        assert_eq!(statuses, [431, 400, 400, 400, 413, 411]);
        for e in all {
            assert!(!e.to_string().is_empty());
            let _: &dyn std::error::Error = &e;
        }
    }

    /// Feeds `raw` in two pieces split at `cut`, as a server reading twice would.
    fn decode_split(
        raw: &[u8],
        cut: usize,
        limits: RequestLimits,
    ) -> (Result<Option<RequestHead>, RequestError>, BytesMut) {
        let cut = cut % (raw.len() + 1);
        let mut buf = BytesMut::from(&raw[..cut]);
        match decode_request_head(&mut buf, limits) {
            Ok(None) => {
                assert_eq!(&buf[..], &raw[..cut], "a partial head consumed input");
                buf.extend_from_slice(&raw[cut..]);
                let r = decode_request_head(&mut buf, limits);
                (r, buf)
            }
            other => {
                buf.extend_from_slice(&raw[cut..]);
                (other, buf)
            }
        }
    }

    proptest! {
        #[test]
        fn any_templated_request_decodes_to_its_head_and_body(
            method in "[A-Z]{1,10}",
            path in "/[!-~]{0,40}",
            host in "[a-z0-9.-]{1,20}(:[0-9]{1,5})?",
            headers in proptest::collection::vec(
                ("[A-Za-z0-9!#$%&'*+.^_`|~-]{1,16}", "([!-~]([ -~]{0,30}[!-~])?)?"),
                0..10,
            ),
            body in proptest::collection::vec(any::<u8>(), 0..300),
            cut in any::<usize>(),
        ) {
            let reserved = ["host", "content-length", "transfer-encoding", "connection"];
            let headers: Vec<(String, String)> = headers
                .into_iter()
                .filter(|(n, _)| !reserved.iter().any(|r| n.eq_ignore_ascii_case(r)))
                .collect();
            let pairs: Vec<(&str, &str)> =
                headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            let t = RequestTemplate::new(&method, &path, &host, &pairs).unwrap();
            let mut wire = BytesMut::new();
            let head_len = t.encode(&body, &mut wire);
            wire.extend_from_slice(b"next");

            let (head, mut rest) = decode_split(&wire, cut, limits());
            let head = head.unwrap().unwrap();
            prop_assert_eq!(head.method(), method.as_str());
            prop_assert_eq!(head.path(), path.as_str());
            prop_assert_eq!(head.version, 1);
            prop_assert!(head.keep_alive);
            prop_assert_eq!(head.head_len(), head_len);
            prop_assert_eq!(head.body, RequestBody::Length(body.len() as u64));
            let mut want = vec![("Host".to_string(), host.clone().into_bytes())];
            want.extend(headers.iter().map(|(n, v)| (n.clone(), v.clone().into_bytes())));
            want.push(("Content-Length".into(), body.len().to_string().into_bytes()));
            prop_assert_eq!(headers_of(&head), want);
            let got = head.decode_body(&mut rest).unwrap().unwrap();
            prop_assert_eq!(&got[..], &body[..]);
            prop_assert_eq!(&rest[..], b"next");
        }

        #[test]
        fn arbitrary_bytes_decode_the_same_split_and_whole(
            input in proptest::collection::vec(any::<u8>(), 0..512),
            cut in any::<usize>(),
            max_headers in 0usize..80,
        ) {
            let limits = RequestLimits { max_headers, max_body: 100, ..limits() };
            let mut whole = BytesMut::from(&input[..]);
            let expected = decode_request_head(&mut whole, limits);
            let (split, rest) = decode_split(&input, cut, limits);
            prop_assert_eq!(&split, &expected);
            if let Ok(Some(head)) = &expected {
                prop_assert!(head.head_len() > 0 && head.head_len() <= input.len());
                prop_assert_eq!(&rest[..], &whole[..]);
                let _ = head.decode_body(&mut whole);
            }
        }

        #[test]
        fn structured_bytes_never_panic(
            lines in proptest::collection::vec(
                prop_oneof![
                    Just("POST /v1/echo HTTP/1.1".to_string()),
                    Just("GET / HTTP/1.0".to_string()),
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
            let mut whole = BytesMut::from(raw.as_bytes());
            let expected = decode_request_head(&mut whole, limits());
            prop_assert_eq!(decode_split(raw.as_bytes(), cut, limits()).0, expected);
        }
    }
}
