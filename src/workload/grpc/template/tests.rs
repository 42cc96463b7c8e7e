use std::sync::LazyLock;

use bytes::BytesMut;
use proptest::prelude::*;
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, Value};
use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver};
use wirebench_wire::vary::Draw;

use super::{MessageTemplate, MessageTemplateError};

const PROTO: &str = r#"
syntax = "proto3";
package t;
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";
import "old.proto";

enum Color { RED = 0; GREEN = 1; }
message Inner { string n = 1; int64 m = 2; }
message Item { string s = 1; uint32 u = 2; Inner deep = 3; }
message Req {
  string name = 1;
  int32 i32 = 2;
  int64 i64 = 3;
  uint64 u64 = 4;
  sint32 s32 = 5;
  sint64 s64 = 6;
  fixed64 f64 = 7;
  sfixed32 sf32 = 8;
  Inner inner = 9;
  repeated Item items = 10;
  map<string, string> labels = 11;
  repeated string tags = 12;
  bytes blob = 13;
  Color color = 14;
  bool flag = 15;
  repeated int32 nums = 16;
  optional int64 maybe = 17;
  uint32 u32 = 18;
  fixed32 f32 = 19;
  sfixed64 sf64 = 20;
  double ratio = 21;
  float ratio32 = 22;
  google.protobuf.Int64Value wrapped = 23;
  google.protobuf.StringValue wname = 24;
  old.Old old = 25;
  map<string, uint64> ucounts = 26;
  oneof pick { int64 picked = 27; string picked_s = 28; }
  google.protobuf.Struct meta = 29;
  map<string, double> scores = 30;
  google.protobuf.UInt64Value wu64 = 31;
}
"#;

/// proto2: repeated numbers not packed, optional numbers with presence.
const OLD_PROTO: &str = r#"
syntax = "proto2";
package old;
message Old { repeated uint64 loose = 1; optional int64 o = 2; }
"#;

struct Source;

impl FileResolver for Source {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        if name == "t.proto" {
            File::from_source(name, PROTO)
        } else if name == "old.proto" {
            File::from_source(name, OLD_PROTO)
        } else {
            Err(protox::Error::file_not_found(name))
        }
    }
}

fn req() -> MessageDescriptor {
    static POOL: LazyLock<DescriptorPool> = LazyLock::new(|| {
        let mut files = ChainFileResolver::new();
        files.add(Source);
        files.add(GoogleFileResolver::new());
        let mut c = protox::Compiler::with_file_resolver(files);
        c.include_imports(true).open_file("t.proto").unwrap();
        c.descriptor_pool()
    });
    POOL.get_message_by_name("t.Req").unwrap()
}

fn compiled(json: &str) -> MessageTemplate {
    match MessageTemplate::compile(&req(), json) {
        Ok(Some(t)) => t,
        Ok(None) => panic!("no template for {json}"),
        Err(e) => panic!("{json}: {e}"),
    }
}

fn error(json: &str) -> String {
    match MessageTemplate::compile(&req(), json) {
        Err(e) => e.to_string(),
        Ok(t) => panic!("{json} compiled: {t:?}"),
    }
}

/// prost-reflect's message from `json` (no placeholders).
fn decoded(json: &str) -> DynamicMessage {
    let mut de = serde_json::Deserializer::from_str(json);
    let m = DynamicMessage::deserialize(req(), &mut de).unwrap_or_else(|e| panic!("{json}: {e}"));
    de.end().unwrap();
    m
}

/// `json` with `{{seq}}`, `{{client}}` and `{{now_ns}}` written in.
fn written(json: &str, seq: u64, client: u64, now: u64) -> String {
    json.replace("{{seq}}", &seq.to_string())
        .replace("{{client}}", &client.to_string())
        .replace("{{now_ns}}", &now.to_string())
}

fn draw(seq: u64, client: u64, now: u64) -> Draw {
    let mut d = Draw::for_client(7, client);
    d.seq = seq;
    d.now_ns = now;
    d
}

fn render(t: &MessageTemplate, d: &mut Draw) -> Vec<u8> {
    let mut out = BytesMut::new();
    t.render(d, &mut out);
    out.to_vec()
}

/// The render of `json` for these values is prost-reflect's encoding of `json` with them.
fn assert_exact(t: &MessageTemplate, json: &str, seq: u64, client: u64, now: u64) {
    let got = render(t, &mut draw(seq, client, now));
    let want = decoded(&written(json, seq, client, now)).encode_to_vec();
    assert_eq!(got, want, "{json} with seq {seq} client {client} now {now}");
}

const EDGES: [u64; 9] = [
    0,
    9,
    10,
    127,
    128,
    16383,
    16384,
    (u32::MAX as u64) + 1,
    u64::MAX,
];

/// Placeholders in strings at every depth and in unsigned 64-bit fields: any u64 is a value.
const UNSIGNED: &str = r#"{
  "name": "user-{{seq}}-x", "u64": {{seq}}, "f64": "{{client}}",
  "inner": {"n": "{{now_ns}}", "m": 5},
  "items": [{"s": "a{{client}}b{{seq}}"}, {"s": "fixed", "u": 7},
            {"s": "{{now_ns}}", "deep": {"n": "d{{seq}}"}}],
  "labels": {"k": "v-{{seq}}"}, "tags": ["t", "{{client}}", "{{seq}}{{seq}}"],
  "blob": "AAEC", "color": "GREEN", "flag": true, "nums": [1, 2, 300], "ratio": 1.5,
  "wname": "w{{seq}}", "meta": {"a": "{{client}}"}, "old": {"loose": [{{seq}}, 0, {{client}}]},
  "ucounts": {"c": {{now_ns}}}, "wu64": "{{client}}", "scores": {"x": 2.5}
}"#;

/// Placeholders in signed and 32-bit fields: seq up to i32::MAX, client up to u32::MAX, now
/// up to i64::MAX.
const SIGNED: &str = r#"{
  "i32": {{seq}}, "s32": "{{seq}}", "sf32": {{seq}}, "u32": {{client}}, "f32": "{{client}}",
  "i64": {{now_ns}}, "s64": {{now_ns}}, "sf64": "{{now_ns}}", "maybe": {{now_ns}},
  "wrapped": {{now_ns}}, "picked": {{seq}}, "inner": {"m": {{now_ns}}},
  "items": [{"u": {{client}}}], "name": "n{{seq}}"
}"#;

#[test]
fn no_placeholder_is_none() {
    let json = r#"{"name": "plain {x} }}", "i64": 5, "labels": {"a": "b"}}"#;
    assert!(MessageTemplate::compile(&req(), json).unwrap().is_none());
    assert!(MessageTemplate::compile(&req(), "{}").unwrap().is_none());
}

#[test]
fn unsigned_and_strings_render_as_prost_reflect_encodes() {
    let t = compiled(UNSIGNED);
    assert!(t.uses_clock());
    for &seq in &EDGES {
        for &client in &EDGES {
            for &now in &EDGES {
                assert_exact(&t, UNSIGNED, seq, client, now);
            }
        }
    }
}

#[test]
fn signed_and_32_bit_render_as_prost_reflect_encodes() {
    let t = compiled(SIGNED);
    let within = |max: u64| {
        let mut v: Vec<u64> = EDGES.iter().copied().filter(|&v| v <= max).collect();
        v.push(max);
        v
    };
    for &seq in &within(i32::MAX as u64) {
        for &client in &within(u32::MAX.into()) {
            for &now in &within(i64::MAX as u64) {
                assert_exact(&t, SIGNED, seq, client, now);
            }
        }
    }
}

#[test]
fn values_out_of_a_field_range_wrap() {
    let json = r#"{"i32": {{seq}}, "u32": {{client}}, "i64": {{now_ns}}, "s64": "{{now_ns}}",
        "sf32": {{client}}, "s32": {{seq}}, "maybe": {{seq}}}"#;
    let t = compiled(json);
    let cases: [(u64, u64, u64, &str); 3] = [
        (
            (1 << 32) + 5,
            1 << 32,
            u64::MAX,
            r#"{"i32": 5, "u32": 0, "i64": -1, "s64": "-1", "sf32": 0, "s32": 5, "maybe": 4294967301}"#,
        ),
        (
            1 << 31,
            u32::MAX.into(),
            1 << 63,
            r#"{"i32": -2147483648, "u32": 4294967295, "i64": "-9223372036854775808",
                "s64": "-9223372036854775808", "sf32": -1, "s32": -2147483648,
                "maybe": 2147483648}"#,
        ),
        (
            1 << 32,
            (1 << 33) + 1,
            0,
            r#"{"u32": 1, "sf32": 1, "maybe": 4294967296}"#,
        ),
    ];
    for (seq, client, now, want) in cases {
        let got = render(&t, &mut draw(seq, client, now));
        assert_eq!(got, decoded(want).encode_to_vec(), "{want}");
    }
}

#[test]
fn zero_is_left_out_without_explicit_presence_only() {
    let json = r#"{"i64": {{seq}}, "maybe": {{seq}}, "picked": {{seq}},
        "old": {"loose": [{{seq}}], "o": {{seq}}}, "ucounts": {"z": {{seq}}},
        "inner": {"m": {{seq}}}, "wrapped": {{seq}}}"#;
    let t = compiled(json);
    assert_exact(&t, json, 0, 0, 0);
    assert_exact(&t, json, 1, 0, 0);
    let m = DynamicMessage::decode(req(), &render(&t, &mut draw(0, 0, 0))[..]).unwrap();
    let present = |name: &str| m.has_field_by_name(name);
    assert!(!present("i64"));
    assert!(present("maybe") && present("picked") && present("inner") && present("wrapped"));
    let old = m.get_field_by_name("old").unwrap();
    let old = old.as_message().unwrap();
    assert_eq!(
        old.get_field_by_name("loose").unwrap().as_list().unwrap(),
        &[Value::U64(0)]
    );
    assert!(old.has_field_by_name("o"));
}

#[test]
fn lengths_that_grow_past_a_varint_byte_are_moved() {
    let long = "x".repeat(16_380);
    let mid = "y".repeat(120);
    let json = format!(
        r#"{{"name": "{long}{{{{seq}}}}", "inner": {{"n": "{mid}{{{{seq}}}}"}},
            "items": [{{"s": "{mid}{{{{client}}}}", "deep": {{"n": "{mid}{{{{seq}}}}"}}}}]}}"#
    );
    let t = compiled(&json);
    for seq in [0, 9, 99, 1_234_567, 12_345_678, 10_000, u64::MAX] {
        for client in [0, 1_234_567, 12_345_678] {
            assert_exact(&t, &json, seq, client, 0);
        }
    }
}

#[test]
fn render_appends_after_what_the_buffer_holds() {
    let t = compiled(UNSIGNED);
    let mut out = BytesMut::from(&[0u8, 1, 2, 3, 4][..]);
    t.render(&mut draw(300, 2, 5), &mut out);
    assert_eq!(&out[..5], &[0, 1, 2, 3, 4]);
    let want = decoded(&written(UNSIGNED, 300, 2, 5)).encode_to_vec();
    assert_eq!(&out[5..], &want[..]);
}

#[test]
fn escapes_and_quoted_texts_read_as_json_and_the_grammar_read_them() {
    let json = r#"{"name": "a\"b\\c\n\u00e9\u0001-{{seq}}-é", "tags": ["{{\"{{\"}}x{{seq}}"]}"#;
    let t = compiled(json);
    for seq in [0, 42] {
        let want =
            format!(r#"{{"name": "a\"b\\c\n\u00e9\u0001-{seq}-é", "tags": ["{{{{x{seq}"]}}"#);
        assert_eq!(
            render(&t, &mut draw(seq, 0, 0)),
            decoded(&want).encode_to_vec()
        );
    }
    // only quoted texts: a template without holes, their text written
    let t = compiled(r#"{"name": "{{\"{{\"}}seq}}", "i64": 3}"#);
    let want = decoded(r#"{"name": "{{seq}}", "i64": 3}"#).encode_to_vec();
    assert_eq!(render(&t, &mut draw(5, 0, 0)), want);
}

#[test]
fn maps_of_several_entries_hold_the_same_message() {
    let json = r#"{"labels": {"a": "{{seq}}", "b": "x{{client}}", "c": "fixed"},
        "ucounts": {"p": {{seq}}, "q": 3, "r": {{client}}}}"#;
    let t = compiled(json);
    for (seq, client) in [(0, 0), (1, 2), (300, u64::MAX)] {
        let got = DynamicMessage::decode(req(), &render(&t, &mut draw(seq, client, 0))[..]);
        assert_eq!(got.unwrap(), decoded(&written(json, seq, client, 0)));
    }
}

fn text(m: &DynamicMessage, path: &[&str]) -> String {
    let mut m = m.clone();
    for step in &path[..path.len() - 1] {
        m = m
            .get_field_by_name(step)
            .unwrap()
            .as_message()
            .unwrap()
            .clone();
    }
    let last = m.get_field_by_name(path[path.len() - 1]).unwrap();
    last.as_str().unwrap().to_string()
}

fn uuid_shaped(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            14 => *c == b'4',
            _ => c.is_ascii_digit() || (b'a'..=b'f').contains(c),
        })
}

#[test]
fn rand_and_uuid_are_in_range_and_shaped() {
    let t = compiled(
        r#"{"name": "{{uuid}}", "inner": {"n": "id-{{uuid}}", "m": {{rand 5 10}}},
            "tags": ["{{rand 1 3}}", "{{newUUID}}"], "u64": "{{rand 0 18446744073709551615}}",
            "i32": {{randomInt 100 200}}}"#,
    );
    let mut d = Draw::for_client(99, 3);
    let mut seen = std::collections::HashSet::new();
    for seq in 0..300 {
        d.seq = seq;
        let m = DynamicMessage::decode(req(), &render(&t, &mut d)[..]).unwrap();
        let name = text(&m, &["name"]);
        assert!(uuid_shaped(&name), "{name}");
        seen.insert(name);
        let n = text(&m, &["inner", "n"]);
        assert!(n.starts_with("id-") && uuid_shaped(&n[3..]), "{n}");
        let inner = m.get_field_by_name("inner").unwrap();
        let mv = inner.as_message().unwrap().get_field_by_name("m").unwrap();
        assert!((5..=10).contains(&mv.as_i64().unwrap()));
        let tags = m.get_field_by_name("tags").unwrap();
        let tags = tags.as_list().unwrap();
        let r: u64 = tags[0].as_str().unwrap().parse().unwrap();
        assert!((1..=3).contains(&r));
        assert!(uuid_shaped(tags[1].as_str().unwrap()));
        let i = m.get_field_by_name("i32").unwrap().as_i32().unwrap();
        assert!((100..200).contains(&i));
    }
    assert_eq!(seen.len(), 300);
}

#[test]
fn values_are_drawn_in_field_number_order() {
    // JSON order: inner (field 9) first, name (field 1) second; drawn: name, then inner.n
    let t =
        compiled(r#"{"inner": {"n": "{{uuid}}"}, "name": "{{uuid}}", "i64": {{rand 1 1000000}}}"#);
    let mut d = Draw::new(11);
    let mut expect = d.clone();
    let m = DynamicMessage::decode(req(), &render(&t, &mut d)[..]).unwrap();
    let first = String::from_utf8(expect.uuid().to_vec()).unwrap();
    let rand = expect.between(1, 1_000_000);
    let second = String::from_utf8(expect.uuid().to_vec()).unwrap();
    assert_eq!(text(&m, &["name"]), first);
    assert_eq!(
        m.get_field_by_name("i64").unwrap().as_i64(),
        Some(rand as i64)
    );
    assert_eq!(text(&m, &["inner", "n"]), second);
}

#[test]
fn uses_clock_when_a_placeholder_reads_the_time() {
    assert!(!compiled(r#"{"name": "{{seq}}{{uuid}}{{rand 1 2}}{{client}}"}"#).uses_clock());
    assert!(compiled(r#"{"i64": {{now_ms}}}"#).uses_clock());
    assert!(compiled(r#"{"name": "t={{now_s}}"}"#).uses_clock());
    assert!(compiled(r#"{"items": [{"s": "{{.TimestampUnixNano}}"}]}"#).uses_clock());
}

#[test]
fn errors_name_the_field_and_why() {
    let cases: &[(&str, &[&str])] = &[
        (r#"{"labels": {"{{seq}}": "x"}}"#, &["`labels`", "JSON key"]),
        (r#"{"{{seq}}": 1}"#, &["the message", "JSON key"]),
        (r#"{"inner": {{{seq}}: 1}}"#, &["`inner`", "JSON key"]),
        (
            r#"{"blob": "{{seq}}"}"#,
            &["`blob`", "bytes fields are base64"],
        ),
        (r#"{"flag": {{seq}}}"#, &["`flag`", "a bool field"]),
        (
            r#"{"color": "{{seq}}"}"#,
            &["`color`", "an enum t.Color field"],
        ),
        (r#"{"ratio": {{seq}}}"#, &["`ratio`", "a double field"]),
        (r#"{"ratio32": "{{seq}}"}"#, &["`ratio32`", "a float field"]),
        (
            r#"{"scores": {"a": {{seq}}}}"#,
            &["`scores.a`", "a double field"],
        ),
        (
            r#"{"nums": [1, {{seq}}]}"#,
            &["`nums[1]`", "packed repeated int32"],
        ),
        (
            r#"{"i64": "{{uuid}}"}"#,
            &["`i64`", "{{uuid}} in an int64 field"],
        ),
        (
            r#"{"wrapped": {{uuid}}}"#,
            &["`wrapped`", "{{uuid}} in an int64 field"],
        ),
        (
            r#"{"inner": {"n": "a", "m": "x{{seq}}"}}"#,
            &["`inner.m`", "text around"],
        ),
        (r#"{"i32": -{{seq}}}"#, &["`i32`", "text around"]),
        (r#"{"u64": {{seq}}{{seq}}}"#, &["`u64`", "text around"]),
        (
            r#"{"items": [{"s": "a"}, {"u": "{{uuid}}"}]}"#,
            &["`items[1].u`", "uuid"],
        ),
        (
            r#"{"name": "{{nope}}"}"#,
            &["`name`", "unknown placeholder {{nope}}"],
        ),
        (
            r#"{"tags": ["a", "b{{seq"]}"#,
            &["`tags[1]`", "without its"],
        ),
        (r#"{"i64": {{rand 5 1}}}"#, &["`i64`", "5 is above 1"]),
        (r#"{"name": {{seq}}}"#, &["`name`", "inside its quotes"]),
        (r#"{"nope": "{{seq}}"}"#, &["not a t.Req", "nope"]),
        (r#"{"name": "{{seq}}",}"#, &["not a t.Req"]),
        (r#"{"name": "{{seq}}"} x"#, &["not a t.Req", "trailing"]),
        (r#"{"inner": "{{seq}}"}"#, &["not a t.Req", "{{seq}}"]),
        (
            r#"{"meta": {"a": {{seq}}}}"#,
            &["`meta.a`", "could not place {{seq}}"],
        ),
        (r#"{"tags": "{{seq}}"}"#, &["not a t.Req"]),
    ];
    for (json, wants) in cases {
        let e = error(json);
        assert!(!e.contains('\n'), "{e}");
        for w in *wants {
            assert!(e.contains(w), "{json}: {e:?} lacks {w:?}");
        }
    }
    let e = MessageTemplate::compile(&req(), r#"{"blob": "{{seq}}"}"#).unwrap_err();
    assert!(matches!(e, MessageTemplateError::InBytes { .. }));
}

#[test]
fn a_struct_value_string_and_wrappers_take_placeholders() {
    let json = r#"{"meta": {"a": "m{{seq}}"}, "wname": "{{client}}", "wrapped": "{{seq}}"}"#;
    let t = compiled(json);
    for seq in [0, 1, 1 << 40] {
        assert_exact(&t, json, seq, 77, 0);
    }
}

#[test]
fn a_user_number_like_a_probe_is_left_alone() {
    let json = r#"{"u64": 2050752512, "i64": {{seq}}, "name": "2050752512", "f64": 2050752513}"#;
    let t = compiled(json);
    for seq in [0, 5, 2_050_752_512] {
        assert_exact(&t, json, seq, 0, 0);
    }
}

#[test]
fn render_allocates_nothing_when_the_buffer_has_room() {
    let long = "x".repeat(200);
    let json = format!(r#"{{"name": "{long}{{{{seq}}}}", "items": [{{"s": "{{{{uuid}}}}"}}]}}"#);
    for t in [compiled(UNSIGNED), compiled(SIGNED), compiled(&json)] {
        let mut out = BytesMut::with_capacity(1 << 16);
        let (cap, ptr) = (out.capacity(), out.as_ptr());
        let mut d = Draw::for_client(1, 2);
        for i in 0..1000u64 {
            out.clear();
            d.seq = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (i % 64);
            d.now_ns = i << 20;
            t.render(&mut d, &mut out);
            assert!(!out.is_empty());
            assert_eq!((out.capacity(), out.as_ptr()), (cap, ptr));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn any_unsigned_values_render_exactly(seq: u64, client: u64, now: u64) {
        let t = compiled(UNSIGNED);
        let got = render(&t, &mut draw(seq, client, now));
        prop_assert_eq!(got, decoded(&written(UNSIGNED, seq, client, now)).encode_to_vec());
    }

    #[test]
    fn any_in_range_values_render_exactly(
        seq in 0..=i32::MAX as u64,
        client in 0..=u64::from(u32::MAX),
        now in 0..=i64::MAX as u64,
    ) {
        let t = compiled(SIGNED);
        let got = render(&t, &mut draw(seq, client, now));
        prop_assert_eq!(got, decoded(&written(SIGNED, seq, client, now)).encode_to_vec());
    }
}
