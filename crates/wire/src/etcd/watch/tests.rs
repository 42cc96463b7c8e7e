use super::*;
use proptest::prelude::*;

// Captured from etcd 3.4.23's gateway (`curl -sN -X POST /v3/watch`), byte for byte.
const REAL_CREATED: &[u8] = br#"{"result":{"header":{"cluster_id":"7801232528081817440","member_id":"13458989633860879742","revision":"1","raft_term":"2"},"created":true}}"#;
const REAL_PUT: &[u8] = br#"{"result":{"header":{"cluster_id":"7801232528081817440","member_id":"13458989633860879742","revision":"2","raft_term":"2"},"events":[{"kv":{"key":"Zm9v","create_revision":"2","mod_revision":"2","version":"1","value":"YmFy"}}]}}"#;
const REAL_DELETE: &[u8] = br#"{"result":{"header":{"cluster_id":"7801232528081817440","member_id":"13458989633860879742","revision":"4","raft_term":"2"},"events":[{"type":"DELETE","kv":{"key":"Zm9v","mod_revision":"4"}}]}}"#;
const REAL_DELETE_PREV_KV: &[u8] = br#"{"result":{"header":{"cluster_id":"7801232528081817440","member_id":"13458989633860879742","revision":"8","raft_term":"2"},"events":[{"type":"DELETE","kv":{"key":"YQ==","mod_revision":"8"},"prev_kv":{"key":"YQ==","create_revision":"5","mod_revision":"6","version":"2","value":"Mg=="}}]}}"#;
const REAL_CREATED_ID7: &[u8] = br#"{"result":{"header":{"cluster_id":"7801232528081817440","member_id":"13458989633860879742","revision":"4","raft_term":"2"},"watch_id":"7","created":true}}"#;
const REAL_COMPACTED: &[u8] = br#"{"result":{"header":{"cluster_id":"7801232528081817440","member_id":"13458989633860879742","raft_term":"2"},"canceled":true,"compact_revision":"6"}}"#;
const REAL_DUP_ID: &[u8] = br#"{"result":{"header":{"cluster_id":"7801232528081817440","member_id":"13458989633860879742","revision":"8","raft_term":"2"},"watch_id":"-1","created":true,"canceled":true,"cancel_reason":"mvcc: duplicate watch ID provided on the WatchStream"}}"#;
/// Mid-stream error: its own chunk, no trailing newline, then the last chunk.
const REAL_STREAM_ERROR: &[u8] = br#"{"error":{"grpc_code":8,"http_code":429,"message":"grpc: received message larger than max (2600010 vs. 2097152)","http_status":"Too Many Requests"}}"#;
/// Pre-stream error: HTTP 500 with Content-Length, no trailing newline.
const REAL_BODY_ERROR: &[u8] = br#"{"error":"json: cannot unmarshal number into Go value of type []uint8","message":"json: cannot unmarshal number into Go value of type []uint8","code":2}"#;

fn response(watch_id: i64, revision: i64, created: bool, events: Vec<WatchEvent>) -> WatchLine {
    WatchLine::Response {
        watch_id,
        revision,
        created,
        canceled: false,
        compact_revision: 0,
        cancel_reason: None,
        fragment: false,
        events,
    }
}

fn ev(delete: bool, key: &[u8], mod_revision: i64, value: &[u8]) -> WatchEvent {
    WatchEvent {
        delete,
        key: key.to_vec(),
        mod_revision,
        value: value.to_vec(),
    }
}

#[test]
fn parses_real_gateway_lines() {
    assert_eq!(parse_line(REAL_CREATED), Ok(response(0, 1, true, vec![])));
    assert_eq!(
        parse_line(REAL_PUT),
        Ok(response(0, 2, false, vec![ev(false, b"foo", 2, b"bar")]))
    );
    assert_eq!(
        parse_line(REAL_DELETE),
        Ok(response(0, 4, false, vec![ev(true, b"foo", 4, b"")]))
    );
    assert_eq!(
        parse_line(REAL_DELETE_PREV_KV),
        Ok(response(0, 8, false, vec![ev(true, b"a", 8, b"")]))
    );
    assert_eq!(
        parse_line(REAL_CREATED_ID7),
        Ok(response(7, 4, true, vec![]))
    );
    assert_eq!(
        parse_line(REAL_COMPACTED),
        Ok(WatchLine::Response {
            watch_id: 0,
            revision: 0,
            created: false,
            canceled: true,
            compact_revision: 6,
            cancel_reason: None,
            fragment: false,
            events: vec![],
        })
    );
    assert_eq!(
        parse_line(REAL_DUP_ID),
        Ok(WatchLine::Response {
            watch_id: -1,
            revision: 8,
            created: true,
            canceled: true,
            compact_revision: 0,
            cancel_reason: Some("mvcc: duplicate watch ID provided on the WatchStream".into()),
            fragment: false,
            events: vec![],
        })
    );
    assert_eq!(
        parse_line(REAL_STREAM_ERROR),
        Ok(WatchLine::Error {
            code: Some(8),
            message: "grpc: received message larger than max (2600010 vs. 2097152)".into(),
        })
    );
    assert_eq!(
        parse_line(REAL_BODY_ERROR),
        Ok(WatchLine::Error {
            code: Some(2),
            message: "json: cannot unmarshal number into Go value of type []uint8".into(),
        })
    );
}

#[test]
fn splits_a_real_stream_and_drains_the_unterminated_error() {
    let mut buf = BytesMut::new();
    for l in [REAL_CREATED, REAL_PUT, REAL_DELETE] {
        buf.extend_from_slice(l);
        buf.extend_from_slice(b"\n");
    }
    buf.extend_from_slice(REAL_STREAM_ERROR);
    assert_eq!(next_line(&mut buf).unwrap().as_deref(), Some(REAL_CREATED));
    assert_eq!(next_line(&mut buf).unwrap().as_deref(), Some(REAL_PUT));
    assert_eq!(next_line(&mut buf).unwrap().as_deref(), Some(REAL_DELETE));
    assert_eq!(next_line(&mut buf), Ok(None));
    assert_eq!(&buf[..], REAL_STREAM_ERROR);
    let tail = next_line_eof(&mut buf).unwrap().unwrap();
    assert_eq!(&tail[..], REAL_STREAM_ERROR);
    assert!(matches!(
        parse_line(&tail),
        Ok(WatchLine::Error { code: Some(8), .. })
    ));
    assert!(buf.is_empty());
    assert_eq!(next_line_eof(&mut buf), Ok(None));
}

#[test]
fn rejects_bad_lines() {
    assert_eq!(
        parse_line(br#"{"header":{}}"#),
        Err(Error::BadJson("neither result nor error"))
    );
    assert_eq!(
        parse_line(b"{}"),
        Err(Error::BadJson("neither result nor error"))
    );
    assert_eq!(
        parse_line(br#"{"result":null}"#),
        Err(Error::BadJson("neither result nor error"))
    );
    assert_eq!(
        parse_line(b"{\"result\":"),
        Err(Error::BadJson("truncated json"))
    );
    assert_eq!(
        parse_line(b"nope"),
        Err(Error::BadJson("not a json object"))
    );
    assert_eq!(parse_line(b" {x}"), Err(Error::BadJson("syntax error")));
    assert_eq!(parse_line(b""), Err(Error::BadJson("not a json object")));
    assert_eq!(parse_line(b"[]"), Err(Error::BadJson("not a json object")));
    assert_eq!(
        parse_line(br#"{"result":{"events":[{"kv":{"key":"!!"}}]}}"#),
        Err(Error::BadField("kv.key"))
    );
    assert_eq!(
        parse_line(br#"{"result":{"events":[{"kv":{"value":"YQ"}}]}}"#),
        Err(Error::BadField("kv.value"))
    );
    assert_eq!(
        parse_line(br#"{"result":{"events":[{"kv":{"mod_revision":"1x"}}]}}"#),
        Err(Error::BadField("kv.mod_revision"))
    );
    assert_eq!(
        parse_line(br#"{"result":{"events":[{"type":"PATCH"}]}}"#),
        Err(Error::BadField("events.type"))
    );
    assert_eq!(
        parse_line(br#"{"result":{"header":{"revision":"99999999999999999999"}}}"#),
        Err(Error::BadField("header.revision"))
    );
    assert_eq!(
        parse_line(br#"{"result":{"created":"yes"}}"#),
        Err(Error::BadJson("unexpected json shape"))
    );
    assert_eq!(
        parse_line(br#"{"result":{"watch_id":""}}"#),
        Err(Error::BadField("watch_id"))
    );
    assert_eq!(
        Error::BadJson("x").to_string(),
        "malformed watch stream line: x"
    );
}

#[test]
fn accepts_escapes_in_base64_and_explicit_put() {
    // `\/` is legal JSON for '/'; the Cow fields take the owned path.
    let line = br#"{"result":{"events":[{"type":"PUT","kv":{"key":"\/w==","value":"Zm9v"}}],"fragment":true}}"#;
    let WatchLine::Response {
        events, fragment, ..
    } = parse_line(line).unwrap()
    else {
        panic!("not a response");
    };
    assert!(fragment);
    assert_eq!(events, vec![ev(false, &[0xff], 0, b"foo")]);
}

#[test]
fn renders_like_the_gateway() {
    let mut b = BytesMut::new();
    render_response_line(0, 1, true, &[], &mut b);
    assert_eq!(
        &b[..],
        b"{\"result\":{\"header\":{\"revision\":\"1\"},\"created\":true}}\n"
    );
    b.clear();
    render_response_line(
        7,
        4,
        false,
        &[ev(false, b"foo", 2, b"bar"), ev(true, b"foo", 4, b"")],
        &mut b,
    );
    assert_eq!(
        &b[..],
        &br#"{"result":{"header":{"revision":"4"},"watch_id":"7","events":[{"kv":{"key":"Zm9v","mod_revision":"2","value":"YmFy"}},{"type":"DELETE","kv":{"key":"Zm9v","mod_revision":"4"}}]}}
"#[..]
    );
    b.clear();
    render_response_line(0, 0, false, &[ev(false, b"", 0, b"")], &mut b);
    assert_eq!(
        &b[..],
        b"{\"result\":{\"header\":{},\"events\":[{\"kv\":{}}]}}\n"
    );
}

#[test]
fn renders_create_requests() {
    let mut b = BytesMut::new();
    render_create_request(b"foo", None, 0, None, &mut b);
    assert_eq!(&b[..], br#"{"create_request":{"key":"Zm9v"}}"#);
    b.clear();
    render_create_request(b"b", Some(b"c"), 12, Some(7), &mut b);
    assert_eq!(
        &b[..],
        br#"{"create_request":{"key":"Yg==","range_end":"Yw==","start_revision":"12","watch_id":"7"}}"#
    );
    b.clear();
    render_create_request(b"", Some(b"\0"), -3, Some(0), &mut b);
    assert_eq!(
        &b[..],
        br#"{"create_request":{"key":"","range_end":"AA==","start_revision":"-3","watch_id":"0"}}"#
    );
    let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
    assert_eq!(v["create_request"]["start_revision"], "-3");
}

#[test]
fn next_line_handles_crlf_blank_lines_and_partial_input() {
    let mut b = BytesMut::from(&b"\n\r\n\nab\r\n\ncd\nef"[..]);
    assert_eq!(next_line(&mut b).unwrap().as_deref(), Some(&b"ab"[..]));
    assert_eq!(next_line(&mut b).unwrap().as_deref(), Some(&b"cd"[..]));
    assert_eq!(next_line(&mut b), Ok(None));
    assert_eq!(&b[..], b"ef");
    b.extend_from_slice(b"\r");
    assert_eq!(next_line(&mut b), Ok(None));
    assert_eq!(&b[..], b"ef\r");
    b.extend_from_slice(b"\n");
    assert_eq!(next_line(&mut b).unwrap().as_deref(), Some(&b"ef"[..]));
    assert!(b.is_empty());
    // Only blank lines: consumed, nothing returned.
    let mut b = BytesMut::from(&b"\n\r\n\n"[..]);
    assert_eq!(next_line(&mut b), Ok(None));
    assert!(b.is_empty());
    // A lone '\r' at EOF is not a line either.
    let mut b = BytesMut::from(&b"\r"[..]);
    assert_eq!(next_line_eof(&mut b), Ok(None));
}

#[test]
fn line_limit_is_exact() {
    // Exactly `limit` bytes before the newline is fine, even before the '\n' arrives.
    let mut b = BytesMut::from(&b"abcd"[..]);
    assert_eq!(next_line_limited(&mut b, 4), Ok(None));
    b.extend_from_slice(b"\nxy");
    assert_eq!(
        next_line_limited(&mut b, 4).unwrap().as_deref(),
        Some(&b"abcd"[..])
    );
    assert_eq!(&b[..], b"xy");
    // One more byte without a newline is too long; nothing is consumed.
    let mut b = BytesMut::from(&b"abcde"[..]);
    assert_eq!(next_line_limited(&mut b, 4), Err(Error::LineTooLong));
    assert_eq!(next_line_eof_limited(&mut b, 4), Err(Error::LineTooLong));
    assert_eq!(&b[..], b"abcde");
    // Also when the newline is already buffered past the limit.
    let mut b = BytesMut::from(&b"abcde\nx\n"[..]);
    assert_eq!(next_line_limited(&mut b, 4), Err(Error::LineTooLong));
    // Lines before an over-long one still come out first.
    let mut b = BytesMut::from(&b"ab\nabcdefgh"[..]);
    assert_eq!(
        next_line_limited(&mut b, 4).unwrap().as_deref(),
        Some(&b"ab"[..])
    );
    assert_eq!(next_line_limited(&mut b, 4), Err(Error::LineTooLong));
    // Limit 0 admits only blank lines.
    let mut b = BytesMut::from(&b"\n\nx"[..]);
    assert_eq!(next_line_limited(&mut b, 0), Err(Error::LineTooLong));
    assert_eq!(&b[..], b"x");
}

#[test]
fn real_max_line_is_enforced() {
    let mut b = BytesMut::from(&[b'x'; MAX_LINE][..]);
    assert_eq!(next_line(&mut b), Ok(None));
    b.extend_from_slice(b"x");
    assert_eq!(next_line(&mut b), Err(Error::LineTooLong));
    assert_eq!(parse_line(&b), Err(Error::LineTooLong));
    assert_eq!(b.len(), MAX_LINE + 1);
}

#[test]
fn every_split_point_yields_the_same_lines() {
    let mut stream = BytesMut::new();
    for l in [REAL_CREATED, REAL_PUT, REAL_DELETE_PREV_KV] {
        stream.extend_from_slice(l);
        stream.extend_from_slice(b"\r\n\n");
    }
    let want = [REAL_CREATED, REAL_PUT, REAL_DELETE_PREV_KV];
    for cut in 0..=stream.len() {
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for piece in [&stream[..cut], &stream[cut..]] {
            buf.extend_from_slice(piece);
            while let Some(l) = next_line(&mut buf).unwrap() {
                got.push(l);
            }
        }
        assert!(buf.is_empty(), "cut {cut}");
        assert_eq!(got.len(), want.len(), "cut {cut}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!(&g[..], w, "cut {cut}");
        }
    }
}

fn arb_event() -> impl Strategy<Value = WatchEvent> {
    (
        any::<bool>(),
        proptest::collection::vec(any::<u8>(), 0..40),
        any::<i64>(),
        proptest::collection::vec(any::<u8>(), 0..60),
    )
        .prop_map(|(delete, key, mod_revision, value)| WatchEvent {
            delete,
            key,
            mod_revision,
            value,
        })
}

fn arb_response() -> impl Strategy<Value = (i64, i64, bool, Vec<WatchEvent>)> {
    (
        any::<i64>(),
        any::<i64>(),
        any::<bool>(),
        proptest::collection::vec(arb_event(), 0..5),
    )
}

proptest! {
    #[test]
    fn render_parse_round_trips((watch_id, revision, created, events) in arb_response()) {
        let mut b = BytesMut::new();
        render_response_line(watch_id, revision, created, &events, &mut b);
        prop_assert_eq!(b.last(), Some(&b'\n'));
        prop_assert_eq!(b.iter().filter(|&&c| c == b'\n').count(), 1);
        let line = next_line(&mut b).unwrap().unwrap();
        prop_assert!(b.is_empty());
        prop_assert_eq!(parse_line(&line), Ok(response(watch_id, revision, created, events)));
    }

    #[test]
    fn chunked_arrival_yields_the_same_lines(
        responses in proptest::collection::vec(arb_response(), 0..8),
        blanks in proptest::collection::vec(0u8..4, 8),
        cuts in proptest::collection::vec(0usize..4096, 0..40),
    ) {
        // Rendered lines, some followed by blank or CRLF-only lines, cut into random chunks.
        let mut stream = BytesMut::new();
        let mut want = Vec::new();
        for (i, (w, r, c, evs)) in responses.iter().enumerate() {
            let start = stream.len();
            render_response_line(*w, *r, *c, evs, &mut stream);
            want.push(stream[start..stream.len() - 1].to_vec());
            match blanks[i] {
                1 => stream.extend_from_slice(b"\n"),
                2 => stream.extend_from_slice(b"\r\n\n"),
                _ => {}
            }
        }
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
        points.push(0);
        points.push(stream.len());
        points.sort_unstable();
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for pair in points.windows(2) {
            buf.extend_from_slice(&stream[pair[0]..pair[1]]);
            while let Some(l) = next_line(&mut buf).unwrap() {
                got.push(l.to_vec());
            }
        }
        prop_assert!(buf.is_empty());
        prop_assert_eq!(&got, &want);
        for (l, (w, r, c, evs)) in got.iter().zip(responses) {
            prop_assert_eq!(parse_line(l), Ok(response(w, r, c, evs)));
        }
    }

    #[test]
    fn create_requests_are_gateway_json(
        key in proptest::collection::vec(any::<u8>(), 0..40),
        end in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)),
        start in any::<i64>(),
        id in proptest::option::of(any::<i64>()),
    ) {
        let mut b = BytesMut::new();
        render_create_request(&key, end.as_deref(), start, id, &mut b);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        let c = &v["create_request"];
        prop_assert_eq!(B64.decode(c["key"].as_str().unwrap()).unwrap(), key);
        prop_assert_eq!(
            c.get("range_end").map(|e| B64.decode(e.as_str().unwrap()).unwrap()),
            end
        );
        prop_assert_eq!(
            c.get("start_revision").map(|s| s.as_str().unwrap().parse::<i64>().unwrap()),
            (start != 0).then_some(start)
        );
        prop_assert_eq!(
            c.get("watch_id").map(|s| s.as_str().unwrap().parse::<i64>().unwrap()),
            id
        );
    }

    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_line(&data);
        let mut buf = BytesMut::from(&data[..]);
        while let Ok(Some(l)) = next_line_limited(&mut buf, 64) {
            prop_assert!(l.len() <= 64 && !l.is_empty() && !l.contains(&b'\n'));
            let _ = parse_line(&l);
        }
        let _ = next_line_eof_limited(&mut buf, 64);
    }

    #[test]
    fn mutated_real_lines_never_panic(idx in 0usize..9, pos in any::<usize>(), byte in any::<u8>()) {
        let lines = [REAL_CREATED, REAL_PUT, REAL_DELETE, REAL_DELETE_PREV_KV, REAL_CREATED_ID7,
            REAL_COMPACTED, REAL_DUP_ID, REAL_STREAM_ERROR, REAL_BODY_ERROR];
        let mut l = lines[idx].to_vec();
        let p = pos % l.len();
        l[p] = byte;
        let _ = parse_line(&l);
        l.truncate(p);
        let _ = parse_line(&l);
    }
}
