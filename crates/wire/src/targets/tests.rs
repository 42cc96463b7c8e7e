use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::*;
use crate::fuzzing::assert_spread;

fn target(line: usize, method: &str, url: &str) -> Target {
    Target {
        method: method.into(),
        url: url.into(),
        headers: Vec::new(),
        body: Body::None,
        weight: 1,
        line,
    }
}

fn headers(fields: &[(&str, &str)]) -> Vec<(String, String)> {
    fields
        .iter()
        .map(|&(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

/// The error `text` is refused with, and its message.
fn refused(text: &str) -> (TargetsError, String) {
    let e = parse(text).expect_err(text);
    let message = e.to_string();
    (e, message)
}

#[test]
fn reads_requests_headers_bodies_and_comments() {
    let text = "# a file for both tools\n\
                GET http://localhost:8080/a?b=c\n\
                Accept: */*\n\
                # a comment between headers\n\
                X-Trace:  one \n\
                X-Trace:\ttwo\t\n\
                \n\
                \n\
                \tPOST   https://h:8443/p  \n\
                Content-Type: application/json\n\
                @ bodies/p.json \n\
                # after the body, a comment\n\
                \n\
                HEAD HTTP://H/\n";
    let mut a = target(2, "GET", "http://localhost:8080/a?b=c");
    a.headers = headers(&[("Accept", "*/*"), ("X-Trace", "one"), ("X-Trace", "two")]);
    let mut b = target(9, "POST", "https://h:8443/p");
    b.headers = headers(&[("Content-Type", "application/json")]);
    b.body = Body::File("bodies/p.json".into());
    let c = target(14, "HEAD", "HTTP://H/");
    assert_eq!(parse(text), Ok(vec![a, b, c]));
}

#[test]
fn reads_crlf_lines_and_header_values_as_written() {
    let text = "GET http://a/\r\nX-Empty:\r\nX-Colon: a:b: c\r\nX-Tab: a\tb\r\n\r\n\r\nPUT http://b/\r\n@x\r\n";
    let mut a = target(1, "GET", "http://a/");
    a.headers = headers(&[("X-Empty", ""), ("X-Colon", "a:b: c"), ("X-Tab", "a\tb")]);
    let mut b = target(7, "PUT", "http://b/");
    b.body = Body::File("x".into());
    assert_eq!(parse(text), Ok(vec![a, b]));
    // without a final line break, and with blank lines of spaces
    assert_eq!(
        parse("  \n\t\nGET http://a/\r"),
        Ok(vec![target(3, "GET", "http://a/")])
    );
}

#[test]
fn weights_come_from_the_comment_before_a_target() {
    let text = "#weight:3\nGET http://a/\n\n#   weight :  250  \n\n# a plain comment\nGET http://b/\n\
                \n# weights are a comment to vegeta\n# Weight: 9 is a comment too\nGET http://c/\n";
    let weights: Vec<(usize, u32)> = parse(text)
        .unwrap()
        .iter()
        .map(|t| (t.line, t.weight))
        .collect();
    assert_eq!(weights, [(2, 3), (7, 250), (11, 1)]);
    let heaviest = format!("# weight: {MAX_WEIGHT}\nGET http://a/\n");
    assert_eq!(parse(&heaviest).unwrap()[0].weight, MAX_WEIGHT);
}

#[test]
fn refuses_bad_weights_and_misplaced_weight_comments() {
    for bad in [
        "0",
        "1000001",
        "-1",
        "+2",
        "2.5",
        "",
        "x",
        "99999999999999999999",
    ] {
        let (e, message) = refused(&format!(
            "GET http://a/\n\n# weight: {bad}\nGET http://b/\n"
        ));
        assert_eq!(e.line(), Some(3));
        assert_eq!(
            message,
            format!("line 3: weight must be 1 to 1000000, got {bad:?}")
        );
    }
    let (e, message) = refused("GET http://a/\n\n# weight: 2\n\n");
    assert_eq!(e, TargetsError::WeightWithoutTarget { line: 3 });
    assert_eq!(
        message,
        "line 3: a weight comment must be followed by a target"
    );
    let (e, _) = refused("# weight: 2\n");
    assert_eq!(e, TargetsError::WeightWithoutTarget { line: 1 });
    let (e, message) = refused("GET http://a/\nA: b\n# weight: 2\n\nGET http://b/\n");
    assert_eq!(e, TargetsError::WeightInTarget { line: 3 });
    assert_eq!(
        message,
        "line 3: a weight comment goes before its target's request line"
    );
    let (e, _) = refused("# weight: 2\n\n# weight: 3\nGET http://b/\n");
    assert_eq!(e, TargetsError::SecondWeight { line: 3 });
}

#[test]
fn refuses_bad_request_lines_and_urls() {
    let (e, message) = refused("GET http://a/\n\n\n\n\n\nFoo\n");
    assert_eq!(e.line(), Some(7));
    assert_eq!(message, "line 7: expected \"METHOD URL\", got \"Foo\"");
    // a header after a blank line, as if the blank line were inside the target
    let (e, message) = refused("GET http://a/\n\nHost: a\n");
    assert_eq!(
        e,
        TargetsError::RequestLine {
            line: 3,
            got: "Host: a".into()
        }
    );
    assert_eq!(message, "line 3: expected \"METHOD URL\", got \"Host: a\"");
    // a long line is quoted cut short
    let long = format!("{} http://a/", "G(".repeat(50));
    let (_, message) = refused(&long);
    assert!(message.ends_with("G(G(...\""), "{message}");
    assert!(message.len() < 120, "{message}");

    for (line, why) in [
        ("GET /path", "must start with http:// or https://"),
        ("GET ftp://a/", "must start with http:// or https://"),
        (
            "GET http://a/ b",
            "holds whitespace (outside a {{...}} placeholder)",
        ),
        (
            "GET http://a/{{rand 1 2}} b",
            "holds whitespace (outside a {{...}} placeholder)",
        ),
        (
            "GET http://a/{{rand 1 2",
            "holds whitespace (outside a {{...}} placeholder)",
        ),
        ("GET http://a/\u{7f}", "holds a control character"),
        ("GET http://a/\rb", "holds a control character"),
    ] {
        let (e, message) = refused(line);
        assert_eq!(e, TargetsError::Url { line: 1, why }, "{line:?}");
        assert_eq!(message, format!("line 1: the URL {why}"));
    }
    // a placeholder's arguments are apart by spaces: the URL keeps them
    let t = parse("GET http://a/x?r={{rand 1 9}}&s={{seq}}\n").unwrap();
    assert_eq!(t[0].url, "http://a/x?r={{rand 1 9}}&s={{seq}}");
}

#[test]
fn refuses_bad_headers() {
    let (e, message) = refused("GET http://a/\nA: b\nno colon\n");
    assert_eq!(e, TargetsError::HeaderWithoutColon { line: 3 });
    assert_eq!(message, "line 3: header line without ':'");
    // a request line with no blank line before it
    let (e, _) = refused("GET http://a/\nGET http://b/\n");
    assert_eq!(e, TargetsError::HeaderName { line: 2 });
    for name in ["", "a b", "a(b", "é"] {
        let (e, message) = refused(&format!("GET http://a/\n{name}: v\n"));
        assert_eq!(e, TargetsError::HeaderName { line: 2 }, "{name:?}");
        assert_eq!(message, "line 2: the header name is not an HTTP token");
    }
    for value in ["a\u{0}b", "a\rb", "\u{1b}[0m", "a\u{85}"] {
        let (e, message) = refused(&format!("GET http://a/\nA: {value}\n"));
        assert_eq!(e, TargetsError::HeaderValue { line: 2 }, "{value:?}");
        assert_eq!(
            message,
            "line 2: the header value holds a control character"
        );
    }
}

#[test]
fn the_body_line_ends_its_target() {
    let (e, message) = refused("GET http://a/\n@b\nA: c\n");
    assert_eq!(e, TargetsError::BodyNotLast { line: 3 });
    assert_eq!(
        message,
        "line 3: a body (@file) must follow the headers of its target"
    );
    let (e, _) = refused("GET http://a/\n@b\n@c\n");
    assert_eq!(e, TargetsError::BodyNotLast { line: 3 });
    let (e, _) = refused("GET http://a/\n@b\nGET http://b/\n");
    assert_eq!(e, TargetsError::BodyNotLast { line: 3 });
    let (e, message) = refused("GET http://a/\n@ \n");
    assert_eq!(
        e,
        TargetsError::BodyPath {
            line: 2,
            why: "is empty"
        }
    );
    assert_eq!(message, "line 2: the body file name after '@' is empty");
    let (e, _) = refused("GET http://a/\n@a\u{1}b\n");
    assert_eq!(e.line(), Some(2));
}

#[test]
fn refuses_a_file_without_targets() {
    for text in ["", "\n\n", "# only\n# comments\n", " \r\n\t\r\n"] {
        let (e, message) = refused(text);
        assert_eq!(e, TargetsError::NoTargets, "{text:?}");
        assert_eq!(message, "no targets");
        assert_eq!(e.line(), None);
    }
}

#[test]
fn refuses_long_lines_too_many_targets_and_too_much_weight() {
    let long = format!("GET http://a/{}", "x".repeat(MAX_LINE - 13));
    assert_eq!(long.len(), MAX_LINE);
    assert_eq!(parse(&long).map(|t| t.len()), Ok(1));
    // the CR of a CRLF line break does not count
    assert_eq!(parse(&format!("{long}\r\n")).map(|t| t.len()), Ok(1));
    let (e, message) = refused(&format!("\n{long}x\n"));
    assert_eq!(e, TargetsError::LineTooLong { line: 2 });
    assert_eq!(message, "line 2: longer than 65536 bytes");
    // even where it would be a comment
    let (e, _) = refused(&format!("GET http://a/\n#{long}\n"));
    assert_eq!(e, TargetsError::LineTooLong { line: 2 });

    let many = "GET http://a/\n\n".repeat(MAX_TARGETS);
    assert_eq!(parse(&many).map(|t| t.len()), Ok(MAX_TARGETS));
    let (e, message) = refused(&format!("{many}GET http://a/\n"));
    let line = 2 * MAX_TARGETS + 1;
    assert_eq!(e, TargetsError::TooManyTargets { line });
    assert_eq!(message, format!("line {line}: more than 100000 targets"));

    let full = "# weight: 600000\nGET http://a/\n\n# weight: 400000\nGET http://b/\n";
    assert_eq!(parse(full).map(|t| t.len()), Ok(2));
    let (e, message) = refused(&format!("{full}\nGET http://c/\n"));
    assert_eq!(e, TargetsError::TotalWeight { line: 7 });
    assert_eq!(message, "line 7: the weights add up to more than 1000000");
}

#[test]
fn reads_json_lines() {
    let text = "# vegeta -format=json\n\
        {\"method\": \"GET\", \"url\": \"http://a/x\", \"header\": {\"B\": [\"2\"], \"A\": [\"1\", \"3\"]}}\n\
        \n\
        {\"method\":\"POST\",\"url\":\"https://b/\",\"body\":\"AAH+/w==\",\"weight\":3,\"extra\":[{\"x\":1}]}\r\n\
        {\"url\":\"http://c/\",\"method\":\"PUT\",\"header\":null,\"body\":null,\"weight\":null}\n\
        {\"method\":\"PUT\",\"url\":\"http://d/\",\"header\":{\"E\":null,\"F\":[]},\"body\":\"\"}";
    let mut a = target(2, "GET", "http://a/x");
    // the line's order, not sorted
    a.headers = headers(&[("B", "2"), ("A", "1"), ("A", "3")]);
    let mut b = target(4, "POST", "https://b/");
    b.body = Body::Bytes(vec![0, 1, 0xfe, 0xff]);
    b.weight = 3;
    let c = target(5, "PUT", "http://c/");
    let mut d = target(6, "PUT", "http://d/");
    d.body = Body::Bytes(Vec::new());
    assert_eq!(parse(text), Ok(vec![a, b, c, d]));
}

#[test]
fn refuses_bad_json_lines() {
    let refused_line = |line: &str| {
        refused(&format!(
            "{{\"method\":\"GET\",\"url\":\"http://a/\"}}\n{line}\n"
        ))
    };
    let (e, message) = refused_line("{\"method\":\"GET\"}");
    assert_eq!(
        e,
        TargetsError::JsonField {
            line: 2,
            why: "\"url\" is missing"
        }
    );
    assert_eq!(message, "line 2: \"url\" is missing");
    let (_, message) = refused_line("{\"url\":\"http://a/\"}");
    assert_eq!(message, "line 2: \"method\" is missing");
    let (_, message) = refused_line("{\"method\":\"G T\",\"url\":\"http://a/\"}");
    assert_eq!(message, "line 2: \"method\" is not an HTTP token");
    let (_, message) = refused_line("{\"method\":\"GET\",\"url\":\"/a\"}");
    assert_eq!(
        message,
        "line 2: the URL must start with http:// or https://"
    );
    for body in ["AAH+/w", "AAH-_w==", "A===", "AAH+/w==\\n"] {
        let (e, message) = refused_line(&format!(
            "{{\"method\":\"GET\",\"url\":\"http://a/\",\"body\":\"{body}\"}}"
        ));
        assert_eq!(e.line(), Some(2), "{body}");
        assert_eq!(message, "line 2: \"body\" is not base64 (RFC 4648, padded)");
    }
    for weight in ["0", "-1", "1.5", "1000001", "4294967296"] {
        let (_, message) = refused_line(&format!(
            "{{\"method\":\"GET\",\"url\":\"http://a/\",\"weight\":{weight}}}"
        ));
        assert_eq!(
            message,
            format!("line 2: weight must be 1 to 1000000, got {weight:?}")
        );
    }
    let (e, _) =
        refused_line("{\"method\":\"GET\",\"url\":\"http://a/\",\"header\":{\"a b\":[\"c\"]}}");
    assert_eq!(e, TargetsError::HeaderName { line: 2 });
    let (e, _) =
        refused_line("{\"method\":\"GET\",\"url\":\"http://a/\",\"header\":{\"A\":[\"\\r\"]}}");
    assert_eq!(e, TargetsError::HeaderValue { line: 2 });
    // syntax and types: serde_json's reason, the column apart
    let (e, message) = refused_line("{\"method\":\"GET\",\"url\":\"http://a/\"");
    assert!(
        matches!(
            e,
            TargetsError::Json {
                line: 2,
                column: 33,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        message,
        "line 2: bad JSON at column 33: EOF while parsing an object"
    );
    let (e, message) =
        refused_line("{\"method\":\"GET\",\"url\":\"http://a/\",\"header\":{\"A\":\"1\"}}");
    assert_eq!(e.line(), Some(2));
    assert!(
        message.starts_with("line 2: bad JSON at column "),
        "{message}"
    );
    let (_, message) = refused_line("{\"method\":\"GET\",\"url\":\"http://a/\"} {}");
    assert!(message.contains("trailing characters"), "{message}");
    let (e, message) = refused_line("# weight: 3");
    assert_eq!(e, TargetsError::WeightCommentInJson { line: 2 });
    assert_eq!(
        message,
        "line 2: a weight comment in a JSON-lines file (a JSON target's \"weight\" gives it)"
    );
}

#[test]
fn refuses_a_file_of_two_formats() {
    let (e, message) = refused("GET http://a/\n\n{\"method\":\"GET\",\"url\":\"http://b/\"}\n");
    assert_eq!(e, TargetsError::JsonInHttp { line: 3 });
    assert_eq!(
        message,
        "line 3: a JSON target in an http-format file (its first target is not a JSON line)"
    );
    let (e, _) = refused("GET http://a/\n  {\"method\":\"GET\"}\n");
    assert_eq!(e, TargetsError::JsonInHttp { line: 2 });
    let (e, message) =
        refused("# json\n{\"method\":\"GET\",\"url\":\"http://b/\"}\n\nGET http://a/\n");
    assert_eq!(e, TargetsError::NotJson { line: 4 });
    assert_eq!(
        message,
        "line 4: expected a JSON object (the file's first target is a JSON line)"
    );
}

#[test]
fn writes_what_it_reads() {
    let text = "# weight: 2\nGET http://a/\nA: 1\nA:\n@b c\n\nPOST https://d/\n";
    let read = parse(text).unwrap();
    assert_eq!(
        write_http(&read),
        "# weight: 2\nGET http://a/\nA: 1\nA: \n@b c\n\nPOST https://d/\n"
    );
    // a Bytes body has no http form and is left out
    let mut t = target(1, "PUT", "http://e/");
    t.body = Body::Bytes(b"x".to_vec());
    assert_eq!(write_http(&[t]), "PUT http://e/\n");
}

#[test]
fn the_schedule_spreads_each_target_by_its_weight() {
    let order = schedule(&[5, 1, 1]);
    assert_eq!(order.len(), 7);
    for (i, turns) in [5, 1, 1].into_iter().enumerate() {
        assert_eq!(order.iter().filter(|&&o| o as usize == i).count(), turns);
    }
    // every prefix: target 0 within 1 of 5k/7 (in fact ⌊5k/7⌋ or ⌈5k/7⌉)
    for k in 1..=order.len() {
        let had = order[..k].iter().filter(|&&o| o == 0).count() as f64;
        let due = 5.0 * k as f64 / 7.0;
        assert!((had - due).abs() <= 1.0, "prefix {k} of {order:?}");
        assert!(
            had >= due.floor() && had <= due.ceil(),
            "prefix {k} of {order:?}"
        );
    }
    assert_spread(&[5, 1, 1], &order);
    assert_eq!(order, [0, 0, 0, 1, 0, 0, 2]);

    assert_eq!(schedule(&[]), Vec::<u32>::new());
    assert_eq!(schedule(&[1]), [0]);
    assert_eq!(schedule(&[0, 2, 0]), [1, 1]);
    assert_eq!(schedule(&[1, 1, 1]), [0, 1, 2]);
    // the largest cycle parse allows, over many targets
    let mut weights = vec![1; 99_990];
    weights[7] = MAX_WEIGHT - 99_989;
    let order = schedule(&weights);
    assert_spread(&weights, &order);
    let weights = [MAX_WEIGHT / 2 - 1, 1, MAX_WEIGHT / 2];
    assert_spread(&weights, &schedule(&weights));
}

#[test]
fn the_seeds_read_as_their_names_say() {
    let seed = |name| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus/targets_file")
            .join(name);
        parse(&std::fs::read_to_string(path).unwrap())
    };
    let http = seed("seed-http").unwrap();
    assert_eq!(http.iter().map(|t| t.weight).collect::<Vec<_>>(), [3, 1, 1]);
    assert_eq!(http[1].body, Body::File("bodies/item.json".into()));
    let crlf = seed("seed-crlf").unwrap();
    assert_eq!(crlf[1].headers, headers(&[("Content-Type", "text/plain")]));
    assert_eq!(crlf[1].body, Body::File("body.txt".into()));
    let json = seed("seed-json").unwrap();
    assert_eq!(json[1].body, Body::Bytes(b"{\"id\": 7}".to_vec()));
    assert_eq!(json[1].weight, 4);
    assert_eq!(
        seed("seed-weight-without-target"),
        Err(TargetsError::WeightWithoutTarget { line: 3 })
    );
}

/// Targets as the http format writes them: tokens not starting with `#`, values without
/// spaces or tabs around them, bodies in files.
fn http_targets() -> impl Strategy<Value = Vec<Target>> {
    let token = "[!$%&'*+.^_`|~0-9A-Za-z-][!#$%&'*+.^_`|~0-9A-Za-z-]{0,11}";
    let url = "(http|https|HTTP)://[a-z0-9.:/?=&%_~#@\\[\\]{}é-]{0,30}";
    let value =
        "[ -~\t\u{e9}\u{4e2d}]{0,20}".prop_map(|v: String| v.trim_matches([' ', '\t']).to_string());
    let body = prop_oneof![
        Just(Body::None),
        "[A-Za-z0-9_./]([A-Za-z0-9_./@# -]{0,20}[A-Za-z0-9_./])?".prop_map(Body::File),
    ];
    let weight = prop_oneof![Just(1u32), 1..=1000u32, 1..=50_000u32];
    let one = (
        token,
        url,
        proptest::collection::vec((token, value), 0..5),
        body,
        weight,
    )
        .prop_map(|(method, url, headers, body, weight)| Target {
            method,
            url,
            headers,
            body,
            weight,
            line: 0,
        });
    proptest::collection::vec(one, 1..20)
}

fn without_lines(mut targets: Vec<Target>) -> Vec<Target> {
    targets.iter_mut().for_each(|t| t.line = 0);
    targets
}

/// Targets written as JSON lines, as vegeta writes them (each line's keys in its own order).
fn write_json(targets: &[Target]) -> String {
    let mut out = String::new();
    for t in targets {
        let mut header: Vec<(String, Vec<String>)> = Vec::new();
        for (n, v) in &t.headers {
            match header.iter_mut().find(|(name, _)| name == n) {
                Some((_, values)) => values.push(v.clone()),
                None => header.push((n.clone(), vec![v.clone()])),
            }
        }
        let header: Map<String, Value> = header.into_iter().map(|(n, v)| (n, json!(v))).collect();
        let mut line = json!({"method": t.method, "url": t.url, "header": header});
        if let Body::Bytes(b) = &t.body {
            line["body"] = json!(B64.encode(b));
        }
        if t.weight != 1 {
            line["weight"] = json!(t.weight);
        }
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

proptest! {
    #[test]
    fn http_targets_read_back_as_written(targets in http_targets()) {
        let text = write_http(&targets);
        let read = parse(&text).map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;
        prop_assert_eq!(without_lines(read), targets);
        // the fuzz target's check on text that reads (arbitrary bytes seldom do)
        crate::fuzzing::targets_file(text.as_bytes());
    }

    #[test]
    fn json_targets_read_back_as_written(
        targets in http_targets(),
        bodies in proptest::collection::vec(
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)), 20),
    ) {
        let targets: Vec<Target> = targets
            .into_iter()
            .zip(bodies)
            .map(|(mut t, body)| {
                t.body = body.map_or(Body::None, Body::Bytes);
                // a JSON line's header order is by name, its values in order
                t.headers.sort_by(|a, b| a.0.cmp(&b.0));
                t
            })
            .collect();
        let text = write_json(&targets);
        let read = parse(&text).map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;
        let lines: Vec<usize> = read.iter().map(|t| t.line).collect();
        prop_assert_eq!(lines, (1..=targets.len()).collect::<Vec<_>>());
        prop_assert_eq!(without_lines(read), targets);
        crate::fuzzing::targets_file(text.as_bytes());
    }

    #[test]
    fn any_weights_are_spread_evenly(weights in proptest::collection::vec(0..60u32, 0..30)) {
        assert_spread(&weights, &schedule(&weights));
    }
}
