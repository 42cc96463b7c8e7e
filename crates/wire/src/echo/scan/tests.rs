use proptest::prelude::*;
use serde_json::{Map, Value};

use super::*;
use crate::fuzzing::echo_agrees;

/// An answer of the built-in server, 388 bytes.
const TYPICAL: &[u8] = include_bytes!("../../../../../fuzz/corpus/echo_json/seed-typical");
const PING: &[u8] = b"Hello, world!";

fn scan(json: &str, ping: &str) -> Result<bool, ScanError> {
    echoed_body_matches(json.as_bytes(), ping.as_bytes())
}

#[test]
fn the_typical_answer_echoes_its_ping_and_no_other() {
    assert_eq!(echoed_body_matches(TYPICAL, PING), Ok(true));
    for other in [
        "Hello, world?",
        "Hello",
        "Hello, world!!",
        "",
        "hello, world!",
    ] {
        assert_eq!(
            echoed_body_matches(TYPICAL, other.as_bytes()),
            Ok(false),
            "{other}"
        );
    }
    let mut spaced = b" \r\n\t".to_vec();
    spaced.extend_from_slice(TYPICAL);
    spaced.extend_from_slice(b"\n  ");
    assert_eq!(echoed_body_matches(&spaced, PING), Ok(true));
}

#[test]
fn a_ping_found_plain_once_checks_as_the_one_call_does() {
    assert!(ping_is_plain(b"Hello, world!") && ping_is_plain(b""));
    for odd in [&b"a\"b"[..], b"a\\b", b"a\nb", b"\x01"] {
        assert!(!ping_is_plain(odd), "{odd:?}");
    }
    let cases: [(&[u8], &[u8]); 5] = [
        (TYPICAL, PING),
        (TYPICAL, b"Hello"),
        (br#"{"body":"a\"b"}"#, b"a\"b"),
        (br#"{"a":1,"body":"p"}"#, b"p"),
        (br#"{"body":"p","a":1"#, b"p"),
    ];
    for (json, ping) in cases {
        assert_eq!(
            echo_answer_matches_plain(json, ping, ping_is_plain(ping)),
            echo_answer_matches(json, ping),
            "{:?} / {:?}",
            String::from_utf8_lossy(json),
            String::from_utf8_lossy(ping)
        );
    }
}

#[test]
fn the_quick_look_reads_the_body_member_and_the_close() {
    let quick = |json: &str, ping: &str| echo_answer_matches(json.as_bytes(), ping.as_bytes());
    assert_eq!(echo_answer_matches(TYPICAL, PING), Ok(true));
    assert_eq!(echo_answer_matches(TYPICAL, b"Hello"), Ok(false));
    assert_eq!(quick(r#" {"body":"p"} "#, "p"), Ok(true));
    assert_eq!(quick(r#"{"body":"p" , "a":1}"#, "p"), Ok(true));
    // the rest is not read: what the scan refuses after the body member passes
    assert_eq!(quick(r#"{"body":"p","a":tru}"#, "p"), Ok(true));
    assert!(scan(r#"{"body":"p","a":tru}"#, "p").is_err());
    // ...but the object must close at the end of the text
    for cut in [r#"{"body":"p","a":1"#, r#"{"body":"p""#, r#"{"body":"p"}x"#] {
        assert!(quick(cut, "p").is_err(), "{cut}");
    }
    // a body that is not the ping as is, or not first, is scanned: the scan's verdicts
    assert_eq!(quick(r#"{"body":"pq"}"#, "p"), Ok(false));
    assert_eq!(quick(r#"{"body":"\u0070"}"#, "p"), Ok(true));
    assert_eq!(quick(r#"{"a":1,"body":"p"}"#, "p"), Ok(true));
    assert_eq!(
        quick(r#"{"a":1,"body":"p","body":"p"}"#, "p"),
        Err(ScanError::DuplicateBody { at: 18 })
    );
    // a ping with a quote cannot be compared as is: the scan unescapes the body
    assert_eq!(quick(r#"{"body":"a\"b"}"#, "a\"b"), Ok(true));
    assert_eq!(quick(r#"{"body":"a\\"}"#, "a\\"), Ok(true));
    assert_eq!(quick(r#"{"body":"a\\"}"#, "a\\\\"), Ok(false));
}

#[test]
fn every_prefix_of_the_typical_answer_is_refused() {
    for end in 0..TYPICAL.len() {
        let r = echoed_body_matches(&TYPICAL[..end], PING);
        assert!(r.is_err(), "{end}: {r:?}");
        echo_agrees(&TYPICAL[..end], PING);
    }
}

#[test]
fn keys_and_the_body_are_compared_unescaped() {
    assert_eq!(scan(r#"{"b\u006fdy":"x"}"#, "x"), Ok(true));
    assert_eq!(scan(r#"{"\u0062\u006F\u0064\u0079":"x"}"#, "x"), Ok(true));
    assert_eq!(
        scan(r#"{"body":"Hello, \u0077orld!"}"#, "Hello, world!"),
        Ok(true)
    );
    assert_eq!(
        scan(r#"{"body":"Hello, \u0077orld!"}"#, "Hello, w"),
        Ok(false)
    );
    assert_eq!(
        scan(r#"{"body":"\"\\\/\b\f\n\r\t"}"#, "\"\\/\u{8}\u{c}\n\r\t"),
        Ok(true)
    );
    assert_eq!(
        scan(r#"{"body":"\u00e9\u20AC\ud83d\ude00"}"#, "é€😀"),
        Ok(true)
    );
    assert_eq!(scan(r#"{"body":"é€😀"}"#, "é€😀"), Ok(true));
    assert_eq!(scan(r#"{"body":"\u0000"}"#, "\0"), Ok(true));
    // a key that only looks like `body` before unescaping is another key
    assert_eq!(scan(r#"{"bod\\y":"x"}"#, ""), Ok(true));
    assert_eq!(scan(r#"{"Body":"x"}"#, "x"), Ok(false));
}

#[test]
fn a_missing_body_is_empty() {
    assert_eq!(scan("{}", ""), Ok(true));
    assert_eq!(scan("{}", "x"), Ok(false));
    assert_eq!(scan(r#" { "a" : 1 , "b" : [ ] } "#, ""), Ok(true));
    assert_eq!(scan(r#"{"a":1}"#, "a"), Ok(false));
    assert_eq!(scan(r#"{"body":""}"#, ""), Ok(true));
}

#[test]
fn only_the_top_level_body_counts_and_only_once() {
    let nested = r#"{"headers":{"body":"x"},"list":[{"body":"x"}],"body":"y"}"#;
    assert_eq!(scan(nested, "y"), Ok(true));
    assert_eq!(scan(nested, "x"), Ok(false));
    assert_eq!(scan(r#"{"headers":{"body":"x"}}"#, "x"), Ok(false));
    assert_eq!(
        scan(r#"{"body":"x","a":1,"body":"x"}"#, "x"),
        Err(ScanError::DuplicateBody { at: 18 })
    );
    assert!(matches!(
        scan(r#"{"body":"x","b\u006fdy":"y"}"#, "x"),
        Err(ScanError::DuplicateBody { .. })
    ));
}

#[test]
fn a_body_of_another_type_is_refused() {
    for value in ["1", "null", "true", "{}", r#"["x"]"#, r#"{"body":"x"}"#] {
        let json = format!(r#"{{"body":{value}}}"#);
        assert_eq!(
            scan(&json, "x"),
            Err(ScanError::BodyType { at: 8 }),
            "{json}"
        );
        echo_agrees(json.as_bytes(), b"x");
    }
}

#[test]
fn only_whitespace_may_follow_the_object() {
    for json in [r#"{"body":"x"} x"#, "{}{}", "{},", "{}\0", "{} \u{a0}"] {
        assert!(
            matches!(scan(json, "x"), Err(ScanError::Trailing { .. })),
            "{json}"
        );
        echo_agrees(json.as_bytes(), b"x");
    }
}

#[test]
fn the_top_level_is_an_object() {
    // serde would read `["x"]` as a struct's fields in order; an echo answer is an object
    assert_eq!(
        scan(r#"["x"]"#, "x"),
        Err(ScanError::Expected {
            what: Wanted::Object,
            at: 0
        })
    );
    for json in ["", "  ", r#""x""#, "1", "null"] {
        assert!(scan(json, "x").is_err(), "{json:?}");
    }
}

#[test]
fn bad_escapes_are_refused_everywhere() {
    for escape in [r"\x", r"\u12", r"\u12g4", r"\U0041", r"\'", r"\u"] {
        for json in [
            format!(r#"{{"body":"a{escape}b"}}"#),
            format!(r#"{{"a{escape}":1}}"#),
            format!(r#"{{"a":["{escape}"]}}"#),
            format!(r#"{{"a":{{"k{escape}":1}}}}"#),
        ] {
            let r = scan(&json, "a");
            assert!(
                matches!(r, Err(ScanError::Escape { .. } | ScanError::Eof { .. })),
                "{json}: {r:?}"
            );
            echo_agrees(json.as_bytes(), b"a");
        }
    }
    assert_eq!(scan(r#"{"a":"\q"}"#, ""), Err(ScanError::Escape { at: 6 }));
}

#[test]
fn lone_surrogates_are_refused_where_the_text_is_read() {
    for s in [
        r"\ud800",
        r"\udc00",
        r"\ud800\u0041",
        r"\ud800\ud800",
        r"\ud800x",
        r"\ud800\n",
    ] {
        for json in [format!(r#"{{"body":"{s}"}}"#), format!(r#"{{"{s}":1}}"#)] {
            assert!(
                matches!(scan(&json, ""), Err(ScanError::LoneSurrogate { .. })),
                "{json}"
            );
            echo_agrees(json.as_bytes(), b"");
        }
        // skipped strings are only checked for their form, as serde does
        for json in [
            format!(r#"{{"a":"{s}"}}"#),
            format!(r#"{{"a":{{"{s}":["{s}"]}}}}"#),
        ] {
            assert_eq!(scan(&json, ""), Ok(true), "{json}");
            echo_agrees(json.as_bytes(), b"");
        }
    }
}

#[test]
fn control_characters_in_strings_are_refused() {
    for c in ['\0', '\n', '\t', '\u{1f}'] {
        for json in [
            format!(r#"{{"body":"a{c}"}}"#),
            format!(r#"{{"a{c}":1}}"#),
            format!(r#"{{"a":"long enough for a word: {c}"}}"#),
        ] {
            assert!(
                matches!(scan(&json, "a"), Err(ScanError::Control { .. })),
                "{json:?}"
            );
            echo_agrees(json.as_bytes(), b"a");
        }
    }
    assert_eq!(
        scan("{\"a\":\"x\x01\"}", ""),
        Err(ScanError::Control { at: 7 })
    );
    // DEL is no control character to JSON
    assert_eq!(scan("{\"body\":\"\x7f\"}", "\x7f"), Ok(true));
}

#[test]
fn numbers_follow_the_grammar() {
    for good in [
        "0",
        "-0",
        "1",
        "-12",
        "1.5",
        "0.25e-3",
        "1E+10",
        "1e5",
        "123456789012345678901234567890",
    ] {
        let json = format!(r#"{{"a":{good},"b":[{good}]}}"#);
        assert_eq!(scan(&json, ""), Ok(true), "{json}");
        echo_agrees(json.as_bytes(), b"");
    }
    for bad in [
        "01", "1.", "-", "1e", "1e+", ".5", "+1", "-01", "0x10", "1.e3", "--1", "-a",
    ] {
        let json = format!(r#"{{"a":{bad}}}"#);
        assert!(scan(&json, "").is_err(), "{json}");
        echo_agrees(json.as_bytes(), b"");
    }
    assert_eq!(scan(r#"{"a":1.}"#, ""), Err(ScanError::Number { at: 5 }));
}

#[test]
fn literals_are_whole_words() {
    assert_eq!(scan(r#"{"a":[true,false,null]}"#, ""), Ok(true));
    for bad in ["tru", "True", "nul", "nulll", "fals", "t"] {
        let json = format!(r#"{{"a":{bad}}}"#);
        assert!(scan(&json, "").is_err(), "{json}");
        echo_agrees(json.as_bytes(), b"");
    }
    assert_eq!(scan(r#"{"a":nu"#, ""), Err(ScanError::Eof { at: 7 }));
}

#[test]
fn the_structure_is_checked() {
    for json in [
        r#"{"a" 1}"#,
        r#"{"a":1 "b":2}"#,
        r#"{"a":1,}"#,
        r#"{"a":[1,]}"#,
        r#"{"a":[1 2]}"#,
        r#"{"a":{"b":1,}}"#,
        r#"{"a":{1:2}}"#,
        r#"{1:2}"#,
        r#"{"a":}"#,
        r#"{"a":[}"#,
        r#"{"a":{]}"#,
        r#"{"a":[1}"#,
        r#"{"a":{"b":1]}"#,
        r#"{,}"#,
        r#"{"a":1,,"b":2}"#,
    ] {
        assert!(scan(json, "").is_err(), "{json}");
        echo_agrees(json.as_bytes(), b"");
    }
    assert_eq!(
        scan(r#"{"a":1 "b":2}"#, ""),
        Err(ScanError::Expected {
            what: Wanted::CommaOrBrace,
            at: 7
        })
    );
}

#[test]
fn nesting_stops_at_the_limit() {
    let nested = |levels: usize| {
        // the top-level object is one level
        let inner = levels - 1;
        format!(r#"{{"a":{}{}}}"#, "[".repeat(inner), "]".repeat(inner))
    };
    assert_eq!(scan(&nested(MAX_DEPTH), ""), Ok(true));
    assert_eq!(
        scan(&nested(MAX_DEPTH + 1), ""),
        Err(ScanError::TooDeep {
            at: 5 + MAX_DEPTH - 1
        })
    );
    // deep input is refused without recursion
    assert!(scan(&nested(100_000), "").is_err());
    let objects = format!(r#"{{"a":{}1{}}}"#, r#"{"a":"#.repeat(200), "}".repeat(200));
    assert!(matches!(scan(&objects, ""), Err(ScanError::TooDeep { .. })));
}

#[test]
fn invalid_utf8_is_refused() {
    assert_eq!(
        echoed_body_matches(b"{\"a\":\"\xff\"}", b""),
        Err(ScanError::Utf8 { at: 6 })
    );
    assert_eq!(
        echoed_body_matches(b"{\"body\":\"\xc3\"}", b""),
        Err(ScanError::Utf8 { at: 9 })
    );
}

#[test]
fn errors_read_as_one_line() {
    let shown = [
        (
            ScanError::Expected {
                what: Wanted::CommaOrBrace,
                at: 57,
            },
            "expected ',' or '}' at byte 57",
        ),
        (
            ScanError::Control { at: 12 },
            "control character in a string at byte 12",
        ),
        (
            ScanError::DuplicateBody { at: 3 },
            "duplicate field `body` at byte 3",
        ),
        (
            ScanError::BodyType { at: 8 },
            "invalid type for `body` at byte 8: expected a string",
        ),
        (
            ScanError::TooDeep { at: 9 },
            "nesting deeper than 128 levels at byte 9",
        ),
    ];
    for (e, text) in shown {
        assert_eq!(e.to_string(), text);
    }
}

/// The byte-at-a-time search `next_special` stands for.
fn next_special_slowly(b: &[u8], i: usize) -> usize {
    (i..b.len()).find(|&j| special(b[j])).unwrap_or(b.len())
}

/// A JSON value of a few levels, its strings full of what needs escaping.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        text().prop_map(Value::String),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((key(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn text() -> impl Strategy<Value = String> {
    "[ -~\\x00-\\x1f\\x7fé€\\x{1F600}]{0,12}"
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("body".to_string()),
        Just("headers".to_string()),
        text()
    ]
}

/// A top-level object's text: members in order, mostly one `body` among them (now and then
/// none, two, or one that is no string), whitespace between the tokens, nested values compact
/// or pretty.
fn answer() -> impl Strategy<Value = (Vec<u8>, Option<String>)> {
    let body_value = prop_oneof![8 => text().prop_map(Value::String), 1 => value()];
    let others = proptest::collection::vec(
        (key().prop_filter("not body", |k| k != "body"), value()),
        0..6,
    );
    let bodies = proptest::collection::vec(body_value, 2);
    (
        others,
        prop_oneof![1 => Just(0), 8 => Just(1), 1 => Just(2)],
        bodies,
        any::<usize>(),
        prop_oneof![Just(""), Just(" "), Just("\r\n\t ")],
        any::<bool>(),
    )
        .prop_map(|(mut members, count, bodies, at, ws, pretty)| {
            for (n, body) in bodies.into_iter().take(count).enumerate() {
                members.insert((at >> (8 * n)) % (members.len() + 1), ("body".into(), body));
            }
            (members, ws, pretty)
        })
        .prop_map(|(members, ws, pretty)| {
            let render = |v: &Value| {
                if pretty {
                    serde_json::to_vec_pretty(v)
                } else {
                    serde_json::to_vec(v)
                }
                .expect("a Value renders")
            };
            let mut out = format!("{ws}{{{ws}").into_bytes();
            for (n, (k, v)) in members.iter().enumerate() {
                if n > 0 {
                    out.extend_from_slice(format!("{ws},{ws}").as_bytes());
                }
                out.extend_from_slice(&render(&Value::String(k.clone())));
                out.extend_from_slice(format!("{ws}:{ws}").as_bytes());
                out.extend_from_slice(&render(v));
            }
            out.extend_from_slice(format!("{ws}}}{ws}").as_bytes());
            let body = members.iter().find_map(|(k, v)| match v {
                Value::String(s) if k == "body" => Some(s.clone()),
                _ => None,
            });
            (out, body)
        })
}

/// `json` with characters of its strings written as `\u` escapes (upper or lower case hex,
/// surrogate pairs beyond the BMP), `/` as `\/`, and now and then a lone surrogate (high or
/// low) added, as
/// `choices` say (one per character of a string, in turn).
fn escaped(json: &[u8], choices: &[u8]) -> Vec<u8> {
    let text = std::str::from_utf8(json).expect("serde_json writes UTF-8");
    let mut out = String::with_capacity(json.len() * 2);
    // `raw`: characters of an escape still to copy as they are
    let (mut in_string, mut raw) = (false, 0);
    let mut next = choices.iter().cycle();
    for c in text.chars() {
        if !in_string || raw > 0 || c == '\\' || c == '"' {
            match c {
                _ if raw > 0 => raw = if raw == 1 && c == 'u' { 4 } else { raw - 1 },
                '\\' if in_string => raw = 1,
                '"' => in_string = !in_string,
                _ => {}
            }
            out.push(c);
            continue;
        }
        let choice = next.next().copied().unwrap_or(0);
        let unicode = |out: &mut String| {
            let mut units = [0; 2];
            for unit in c.encode_utf16(&mut units) {
                if choice & 0x80 == 0 {
                    out.push_str(&format!("\\u{unit:04x}"));
                } else {
                    out.push_str(&format!("\\u{unit:04X}"));
                }
            }
        };
        match choice % 8 {
            0 | 1 => unicode(&mut out),
            2 if c == '/' => out.push_str("\\/"),
            3 if choice >= 0xe0 => {
                out.push_str(if choice & 8 == 0 {
                    "\\ud800"
                } else {
                    "\\uDC00"
                });
                if choice & 16 == 0 {
                    out.push(c);
                } else {
                    unicode(&mut out);
                }
            }
            _ => out.push(c),
        }
    }
    out.into_bytes()
}

/// One edit of `json`, `op` saying which: a byte replaced, inserted, removed, the text cut
/// short, a byte appended (the new byte `byte`, or one that means something to JSON), a byte
/// of the structure (or a quote or backslash) removed or replaced by another such byte.
fn mutate(json: &mut Vec<u8>, at: usize, op: u8, byte: u8) {
    const JSON_BYTES: &[u8] = b"{}[]\",:\\ 0-.eu";
    let byte = match byte % 4 {
        0 => JSON_BYTES[usize::from(byte / 4) % JSON_BYTES.len()],
        _ => byte,
    };
    let marks: Vec<usize> = (0..json.len())
        .filter(|&i| b"{}[],:\"\\".contains(&json[i]))
        .collect();
    let mark = (!marks.is_empty()).then(|| marks[at % marks.len()]);
    let at = at % (json.len() + 1);
    match (op, mark) {
        (0, _) if at < json.len() => json[at] = byte,
        (1, _) => json.insert(at, byte),
        (2, _) if at < json.len() => {
            json.remove(at);
        }
        (4, _) => json.push(byte),
        (5, Some(m)) => {
            json.remove(m);
        }
        (6, Some(m)) => json[m] = b"{}[],:\" "[usize::from(byte) % 8],
        _ => json.truncate(at),
    }
}

proptest! {
    #[test]
    fn next_special_finds_the_first_special_byte(
        b in proptest::collection::vec(prop_oneof![any::<u8>(), 0x20u8..0x7f, Just(b'"')], 0..64),
        from in 0usize..70,
    ) {
        let from = from.min(b.len());
        prop_assert_eq!(next_special(&b, from), next_special_slowly(&b, from));
    }

    #[test]
    fn answers_are_judged_as_serde_judges_them(
        (json, body) in answer(),
        choices in proptest::collection::vec(any::<u8>(), 1..32),
        other_ping in text(),
        ping_is_body in any::<bool>(),
    ) {
        let json = escaped(&json, &choices);
        let ping = match body {
            Some(body) if ping_is_body => body,
            _ => other_ping,
        };
        echo_agrees(&json, ping.as_bytes());
        // every generated text is valid JSON: the scan refuses only lone surrogates read as text
        if let Err(e) = echoed_body_matches(&json, ping.as_bytes()) {
            prop_assert!(
                matches!(e, ScanError::LoneSurrogate { .. } | ScanError::DuplicateBody { .. } | ScanError::BodyType { .. }),
                "{}: {}", e, String::from_utf8_lossy(&json)
            );
        }
    }

    #[test]
    fn mutated_answers_are_judged_as_serde_judges_them(
        (json, body) in answer(),
        choices in proptest::collection::vec(any::<u8>(), 1..32),
        edits in proptest::collection::vec((any::<usize>(), 0u8..7, any::<u8>()), 1..4),
        ping_is_body in any::<bool>(),
    ) {
        let mut json = escaped(&json, &choices);
        for (at, op, byte) in edits {
            mutate(&mut json, at, op, byte);
        }
        let ping = body.filter(|_| ping_is_body).unwrap_or_default();
        echo_agrees(&json, ping.as_bytes());
        crate::fuzzing::echo_json(&json);
    }

    #[test]
    fn numbers_are_judged_as_serde_judges_them(
        number in prop_oneof![
            "-?(0|[1-9][0-9]{0,3})(\\.[0-9]{1,3})?([eE][+-]?[0-9]{1,3})?",
            "[-+.eE0-9]{0,7}",
        ],
    ) {
        for json in [
            format!(r#"{{"a":{number}}}"#),
            format!(r#"{{"a":[{number}],"body":"x"}}"#),
            format!(r#"{{"a":{{"b":{number} }}}}"#),
        ] {
            echo_agrees(json.as_bytes(), b"x");
        }
    }
}
