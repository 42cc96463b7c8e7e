use super::*;

fn request(method: &str, body: Option<&[u8]>) -> HttpRequestSpec {
    HttpRequestSpec {
        head: Arc::new(HttpHead {
            method: method.into(),
            path: "/p?q=1".into(),
            headers: vec![("Accept".into(), "*/*".into())],
        }),
        body: body.map(Bytes::copy_from_slice),
    }
}

fn spec(method: &str, bodies: &[&[u8]]) -> HttpSpec {
    let requests = if bodies.is_empty() {
        vec![request(method, None)]
    } else {
        bodies.iter().map(|b| request(method, Some(b))).collect()
    };
    HttpSpec {
        requests,
        weights: Vec::new(),
        ok_status: (200, 299),
    }
}

fn endpoint() -> Endpoint {
    crate::config::parse_url("http://127.0.0.1:9/").unwrap().0
}

#[test]
fn bodies_go_in_turn_and_get_without_a_body_has_no_length() {
    let mut w = HttpWorkload::new(&spec("POST", &[b"a", b"bcd"]), &[endpoint()]).unwrap();
    let mut out = BytesMut::new();
    for idx in 0..3 {
        let head = w.encode_http(idx, 0, &mut out);
        let want: &[u8] = if idx % 2 == 0 { b"a" } else { b"bcd" };
        assert!(out.ends_with(want), "{idx}");
        assert_eq!(head, out.len() - want.len());
        out.clear();
    }
    let mut w = HttpWorkload::new(&spec("GET", &[]), &[endpoint()]).unwrap();
    w.encode_http(0, 0, &mut out);
    assert_eq!(
        &out[..],
        &b"GET /p?q=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nAccept: */*\r\n\r\n"[..]
    );
    // an empty POST still says its length
    let mut w = HttpWorkload::new(&spec("POST", &[]), &[endpoint()]).unwrap();
    out.clear();
    w.encode_http(0, 0, &mut out);
    assert!(out.ends_with(b"Content-Length: 0\r\n\r\n"));
}

fn h2_fields(w: &mut HttpWorkload) -> Vec<(String, String)> {
    w.next_h2(0, 0)
        .1
        .fields()
        .map(|(k, v)| {
            (
                String::from_utf8(k.to_vec()).unwrap(),
                String::from_utf8(v.to_vec()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_http2_request_has_the_same_method_path_and_headers() {
    let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
    let mut s = spec("POST", &[b"abc"]);
    Arc::make_mut(&mut s.requests[0].head).headers = vec![
        ("X-Trace".into(), "1".into()),
        ("Connection".into(), "close".into()),
        ("TE".into(), "gzip".into()),
    ];
    let mut w = HttpWorkload::new(&s, &[endpoint()]).unwrap();
    assert!(w.next_h2(0, 0).1.is_plain());
    assert_eq!(
        h2_fields(&mut w),
        vec![
            pair(":method", "POST"),
            pair(":scheme", "http"),
            pair(":path", "/p?q=1"),
            pair(":authority", "127.0.0.1:9"),
            pair("x-trace", "1"),
            pair("content-length", "3"),
        ]
    );
    assert_eq!(&w.next_h2(0, 0).0[..], b"abc");
    // bodies of different lengths: END_STREAM alone delimits them
    let mut w = HttpWorkload::new(&spec("PUT", &[b"a", b"bc"]), &[endpoint()]).unwrap();
    assert!(h2_fields(&mut w).iter().all(|(k, _)| k != "content-length"));
    assert_eq!(&w.next_h2(1, 0).0[..], b"bc");
    // a GET without a body says no length, as over HTTP/1.1
    let mut w = HttpWorkload::new(&spec("GET", &[]), &[endpoint()]).unwrap();
    let f = h2_fields(&mut w);
    assert_eq!(f[0], pair(":method", "GET"));
    assert!(f.iter().all(|(k, _)| k != "content-length"), "{f:?}");
}

#[test]
fn a_large_body_is_sampled_cut() {
    let w = crate::workload::Workload::Http(
        HttpWorkload::new(&spec("GET", &[]), &[endpoint()]).unwrap(),
    );
    assert_eq!(w.sample_http(br#"{"a":1}"#), serde_json::json!({"a": 1}));
    assert_eq!(w.sample_http(b"plain"), serde_json::json!("plain"));
    let big = vec![b'x'; 100_000];
    let v = w.sample_http(&big);
    let text = v.as_str().unwrap();
    assert!(
        text.ends_with("... (100000 B in all)"),
        "{}",
        &text[text.len() - 40..]
    );
    assert!(text.len() < 66_000);
}

#[test]
fn the_status_range_decides() {
    let mut s = spec("GET", &[]);
    let w = HttpWorkload::new(&s, &[endpoint()]).unwrap();
    assert_eq!(w.check_http(204), Ok(StatusKey::Http(204)));
    let (key, f) = w.check_http(301).unwrap_err();
    assert_eq!(key, StatusKey::Http(301));
    assert_eq!(f.kind, FailureKind::HttpStatus);
    assert!(f.to_string().contains("HTTP 301 (OK is 200-299)"), "{f}");
    s.ok_status = (200, 399);
    let w = HttpWorkload::new(&s, &[endpoint()]).unwrap();
    assert_eq!(w.check_http(301), Ok(StatusKey::Http(301)));
    assert!(w.check_http(404).is_err());
}

fn varying(path: &str, header: &str, body: &str) -> HttpSpec {
    HttpSpec {
        requests: vec![HttpRequestSpec {
            head: Arc::new(HttpHead {
                method: "POST".into(),
                path: path.into(),
                headers: vec![
                    ("X-Id".into(), header.into()),
                    ("Accept".into(), "*/*".into()),
                    ("Connection".into(), "keep-alive".into()),
                ],
            }),
            body: Some(Bytes::copy_from_slice(body.as_bytes())),
        }],
        weights: Vec::new(),
        ok_status: (200, 299),
    }
}

#[test]
fn placeholders_render_per_request_over_http1() {
    let s = varying(
        "/k/{{seq}}?c={{client}}",
        "id-{{seq}}",
        "{\"n\":{{seq}},\"r\":{{rand 1 9}}}",
    );
    let mut w = HttpWorkload::new(&s, &[endpoint()]).unwrap().for_client(2);
    let mut out = BytesMut::new();
    for idx in [0u64, 7, 12345] {
        out.clear();
        let head_len = w.encode_http(idx, 0, &mut out);
        let mut buf = out.clone();
        let head = wirebench_wire::http1::decode_request_head(&mut buf, Default::default())
            .unwrap()
            .unwrap();
        assert_eq!(head.head_len(), head_len);
        assert_eq!(head.path(), format!("/k/{idx}?c=2"));
        let fields: Vec<(String, String)> = head
            .headers()
            .map(|(k, v)| (k.to_string(), String::from_utf8(v.to_vec()).unwrap()))
            .collect();
        assert_eq!(fields[0], ("Host".to_string(), "127.0.0.1:9".to_string()));
        assert_eq!(fields[1], ("X-Id".to_string(), format!("id-{idx}")));
        let body = String::from_utf8(buf.to_vec()).unwrap();
        let len: usize = fields
            .iter()
            .find(|(k, _)| k == "Content-Length")
            .unwrap()
            .1
            .parse()
            .unwrap();
        assert_eq!(len, body.len(), "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["n"], idx);
        assert!((1..=9).contains(&v["r"].as_u64().unwrap()), "{body}");
    }
}

#[test]
fn placeholders_render_per_request_over_http2() {
    let s = varying("/k/{{seq}}", "id-{{seq}}", "n={{seq}}");
    let shared = HttpWorkload::new(&s, &[endpoint()]).unwrap();
    // the shared pattern is never sent: each client renders into its own copy
    let mut w = shared.for_client(0);
    for idx in [3u64, 40] {
        let (body, call) = w.next_h2(idx, 0);
        assert_eq!(&body[..], format!("n={idx}").as_bytes());
        // :path (2) and x-id (4) are encoded each time
        assert_eq!(call.varying_fields(), 0b10100);
        let fields: Vec<(String, String)> = call
            .fields()
            .map(|(k, v)| {
                (
                    String::from_utf8(k.to_vec()).unwrap(),
                    String::from_utf8(v.to_vec()).unwrap(),
                )
            })
            .collect();
        assert_eq!(fields[2], (":path".to_string(), format!("/k/{idx}")));
        assert_eq!(fields[4], ("x-id".to_string(), format!("id-{idx}")));
        assert_eq!(fields[5], ("accept".to_string(), "*/*".to_string()));
        // the body's length varies: END_STREAM alone ends it
        assert!(
            fields.iter().all(|(k, _)| k != "content-length"),
            "{fields:?}"
        );
        assert_eq!(fields.len(), 6, "{fields:?}");
    }
    // fixed requests keep their shared, keyed call and no renders
    let mut fixed = HttpWorkload::new(&spec("POST", &[b"a"]), &[endpoint()])
        .unwrap()
        .for_client(0);
    assert!(fixed.renders.is_none());
    assert_eq!(fixed.next_h2(0, 0).1.varying_fields(), 0);
}

#[test]
fn a_bad_placeholder_names_its_part() {
    let e = HttpWorkload::new(&varying("/{{nope}}", "x", ""), &[endpoint()]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("the path: at byte 1: unknown placeholder {{nope}}"),
        "{e}"
    );
    let e = HttpWorkload::new(&varying("/", "{{rand 2 1}}", ""), &[endpoint()]).unwrap_err();
    assert!(e.to_string().starts_with("header X-Id: at byte 0"), "{e}");
    let e = HttpWorkload::new(&varying("/", "x", "{{seq"), &[endpoint()]).unwrap_err();
    assert!(e.to_string().starts_with("the body: at byte 0"), "{e}");
    // a header value's literal part is still checked as one
    let e = HttpWorkload::new(&varying("/", "a\u{7}{{seq}}", ""), &[endpoint()]).unwrap_err();
    assert!(e.to_string().contains("control character"), "{e}");
}

#[test]
fn weighted_requests_go_in_their_proportion() {
    let mut s = spec("POST", &[b"a", b"b"]);
    Arc::make_mut(&mut s.requests[1].head).path = "/other".into();
    s.weights = vec![3, 1];
    let mut w = HttpWorkload::new(&s, &[endpoint()]).unwrap().for_client(0);
    let mut out = BytesMut::new();
    let mut counts = [0; 2];
    for idx in 0..400 {
        out.clear();
        w.encode_http(idx, 0, &mut out);
        counts[usize::from(out.ends_with(b"b"))] += 1;
    }
    assert_eq!(counts, [300, 100]);
    // HEAD mixed with other methods is refused
    let mut s = spec("GET", &[]);
    s.requests.push(request("HEAD", None));
    assert!(matches!(
        HttpWorkload::new(&s, &[endpoint()]),
        Err(HttpError::MixedHead)
    ));
}
