//! Response heads: status, body framing and keep-alive from one httparse pass.

use bytes::{Buf, BytesMut};

use super::{Error, MAX_HEAD_BYTES, MAX_HEADERS, map_httparse_error, scan_headers};

/// How the body following a response head is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// No body by definition of the status code (1xx, 204, 304).
    Empty,
    /// Exactly this many bytes (from Content-Length; may be 0).
    Length(u64),
    /// Chunked transfer coding; use [`ChunkedDecoder`](super::ChunkedDecoder).
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
    let head = match parse_heads(buf, max_body, false)? {
        Some(head) => head,
        None => return Ok(None),
    };
    buf.advance(head.head_len);
    Ok(Some(head))
}

/// [`decode_response_head`] of the response to a HEAD request, which has no body whatever its
/// header fields say (RFC 9112 §6.3): always [`BodyKind::Empty`], its Content-Length and
/// Transfer-Encoding describing the body a GET would have got, so they neither bound nor end
/// the connection.
pub fn decode_head_response(buf: &mut BytesMut) -> Result<Option<ResponseHead>, Error> {
    let head = match parse_heads(buf, u64::MAX, true)? {
        Some(head) => head,
        None => return Ok(None),
    };
    buf.advance(head.head_len);
    Ok(Some(head))
}

/// Parses interim and final heads from `buf` without consuming anything; `to_head`: the
/// response to a HEAD request. The outcome depends on `buf[..head_len]` alone (what follows
/// the head's blank line is never looked at).
pub(super) fn parse_heads(
    buf: &[u8],
    max_body: u64,
    to_head: bool,
) -> Result<Option<ResponseHead>, Error> {
    // httparse never sees more than MAX_HEAD_BYTES, so a huge buffer is not rescanned.
    let window = buf.get(..MAX_HEAD_BYTES).unwrap_or(buf);
    let mut offset = 0usize;
    loop {
        let rest = window.get(offset..).unwrap_or_default();
        // left uninitialized: httparse writes the ones it parses (a fresh array of 100 empty
        // headers would cost more than parsing a short head)
        let mut headers = [const { std::mem::MaybeUninit::uninit() }; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut []);
        let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
            &mut response,
            rest,
            &mut headers,
        );
        let len = match parsed {
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
        let body = if status == 204 || status == 304 || to_head {
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

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;
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

    proptest! {
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
}
