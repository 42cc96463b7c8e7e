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
fn a_request_rendered_once_is_the_encoded_one() {
    let t = RequestTemplate::new("POST", "/v1/echo", "h:1", &[("A", "b")]).unwrap();
    let bodyless = t.clone().omit_empty_length();
    for (t, body) in [(&t, &b"{\"ping\":\"x\"}"[..]), (&t, b""), (&bodyless, b"")] {
        let (mut encoded, mut rendered) = (BytesMut::new(), BytesMut::from(&b"before"[..]));
        let head = t.encode(body, &mut encoded);
        let r = t.render(body);
        assert_eq!(r.encode(&mut rendered), head);
        assert_eq!(&rendered[..6], b"before", "appended, not replaced");
        assert_eq!(&rendered[6..], &encoded[..]);
    }
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
    assert_eq!(decimal(0, &mut digits), b"0");
    assert_eq!(decimal(u64::MAX, &mut digits), b"18446744073709551615");
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
