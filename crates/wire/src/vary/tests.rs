use proptest::prelude::*;

use super::*;

fn render(t: &Template, d: &mut Draw) -> String {
    let mut out = Vec::new();
    t.render(d, &mut out);
    String::from_utf8(out).unwrap()
}

#[test]
fn literal_text_is_fixed_and_renders_as_itself() {
    let t = Template::parse("GET /a?b=1 }} {x}").unwrap();
    assert!(t.is_fixed());
    assert_eq!(t.fixed(), Some("GET /a?b=1 }} {x}"));
    assert_eq!(render(&t, &mut Draw::new(1)), "GET /a?b=1 }} {x}");
    let t = Template::parse(r#"a{{"{{"}}b"#).unwrap();
    assert_eq!(t.fixed(), Some("a{{b"));
    assert_eq!(t.to_string(), r#"a{{"{{"}}b"#);
    assert_eq!(Template::parse("").unwrap().fixed(), Some(""));
}

#[test]
fn each_placeholder_renders_its_value() {
    let t = Template::parse(
        "k{{seq}}-{{ client }}-{{now_ns}}-{{now_ms}}-{{now_s}}-{{.RequestNumber}}-{{.TimestampUnixNano}}",
    )
    .unwrap();
    assert!(!t.is_fixed());
    assert!(t.uses_clock());
    let mut d = Draw::for_client(7, 3);
    d.seq = 42;
    d.now_ns = 1_700_000_000_123_456_789;
    assert_eq!(
        render(&t, &mut d),
        "k42-3-1700000000123456789-1700000000123-1700000000-42-1700000000123456789"
    );
    let t = Template::parse("{{seq}}").unwrap();
    assert!(!t.uses_clock());
    d.seq = 0;
    assert_eq!(render(&t, &mut d), "0");
    d.seq = u64::MAX;
    assert_eq!(render(&t, &mut d), u64::MAX.to_string());
}

#[test]
fn rand_stays_in_its_range_and_covers_it() {
    let t = Template::parse("{{rand 3 7}}").unwrap();
    let mut d = Draw::new(9);
    let mut seen = [0u32; 8];
    for _ in 0..10_000 {
        let v: usize = render(&t, &mut d).parse().unwrap();
        assert!((3..=7).contains(&v), "{v}");
        seen[v] += 1;
    }
    // 2,000 expected each: far inside any sane bound
    assert!(
        seen[3..=7].iter().all(|&n| (1_700..2_300).contains(&n)),
        "{seen:?}"
    );
    // ghz's randomInt excludes its upper bound
    let t = Template::parse("{{randomInt 0 2}}").unwrap();
    assert_eq!(t.parts(), &[Part::Var(Var::Rand { lo: 0, hi: 1 })]);
    let t = Template::parse("{{rand 5 5}}").unwrap();
    assert_eq!(render(&t, &mut d), "5");
    let t = Template::parse(&format!("{{{{rand 0 {}}}}}", u64::MAX)).unwrap();
    render(&t, &mut d).parse::<u64>().unwrap();
}

#[test]
fn uuids_are_version_4_and_differ() {
    let t = Template::parse("{{uuid}}/{{.UUID}}/{{newUUID}}").unwrap();
    let mut d = Draw::new(1);
    let s = render(&t, &mut d);
    let ids: Vec<&str> = s.split('/').collect();
    assert_eq!(ids.len(), 3);
    for id in &ids {
        assert_eq!(id.len(), 36, "{id}");
        let groups: Vec<usize> = id.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12], "{id}");
        assert_eq!(id.as_bytes()[14], b'4', "{id}");
        assert!(
            matches!(id.as_bytes()[19], b'8' | b'9' | b'a' | b'b'),
            "{id}"
        );
        assert!(id.bytes().all(|b| b == b'-' || b.is_ascii_hexdigit()));
    }
    assert_ne!(ids[0], ids[1]);
    assert_ne!(ids[1], ids[2]);
    // the text is the next 128 random bits, version and variant set
    let mut bits = Draw::new(7);
    let (hi, lo) = (bits.next_u64(), bits.next_u64());
    let hi = hi & !(0xf << 12) | 0x4 << 12;
    let lo = lo & !(0x3 << 62) | 0x2 << 62;
    let hex = format!("{hi:016x}{lo:016x}");
    let want = format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    );
    assert_eq!(
        String::from_utf8(Draw::new(7).uuid().to_vec()).unwrap(),
        want
    );
}

#[test]
fn clients_draw_different_streams() {
    let t = Template::parse("{{rand 0 1000000000}}").unwrap();
    let a = render(&t, &mut Draw::for_client(1, 0));
    let b = render(&t, &mut Draw::for_client(1, 1));
    assert_ne!(a, b);
    assert_eq!(a, render(&t, &mut Draw::for_client(1, 0)));
}

#[test]
fn bad_placeholders_say_where_and_what() {
    let e = Template::parse("ab{{seq").unwrap_err();
    assert_eq!(e.at, 2);
    assert!(e.to_string().contains("without its"), "{e}");
    let e = Template::parse("x{{seq}}{{ nope }}").unwrap_err();
    assert_eq!(e.at, 8);
    assert!(
        e.to_string().contains("unknown placeholder {{nope}}"),
        "{e}"
    );
    assert!(e.to_string().contains("{{rand A B}}"), "{e}");
    for (text, want) in [
        ("{{rand 9 1}}", "9 is above 1"),
        ("{{rand 1}}", "takes two integers"),
        ("{{rand a 2}}", "\"a\" is not an integer"),
        ("{{randomInt 2 2}}", "must be above"),
        ("{{seq 1}}", "unknown placeholder"),
        (r#"{{"a"b"}}"#, "quoted text"),
        ("{{}}", "unknown placeholder"),
    ] {
        let e = Template::parse(text).unwrap_err();
        assert!(e.to_string().contains(want), "{text}: {e}");
    }
    let long = format!("{{{{{}}}}}", "x".repeat(300));
    assert!(
        Template::parse(&long)
            .unwrap_err()
            .to_string()
            .contains("longer")
    );
}

#[test]
fn rendering_allocates_nothing_into_a_buffer_with_room() {
    let t = Template::parse("{\"id\":\"{{uuid}}\",\"n\":{{seq}},\"r\":{{rand 1 9}}}").unwrap();
    let mut d = Draw::new(3);
    let mut out = Vec::with_capacity(256);
    let cap = out.capacity();
    let ptr = out.as_ptr();
    for seq in 0..1000 {
        out.clear();
        d.seq = seq;
        t.render(&mut d, &mut out);
    }
    assert_eq!((out.capacity(), out.as_ptr()), (cap, ptr));
}

fn var() -> impl Strategy<Value = Var> {
    prop_oneof![
        Just(Var::Seq),
        Just(Var::Client),
        Just(Var::Uuid),
        Just(Var::NowNs),
        Just(Var::NowMs),
        Just(Var::NowS),
        (any::<u64>(), any::<u64>()).prop_map(|(a, b)| Var::Rand {
            lo: a.min(b),
            hi: a.max(b)
        }),
    ]
}

fn part() -> impl Strategy<Value = Part> {
    prop_oneof![
        "[a-z{}\"/ ]{1,8}".prop_map(Part::Lit),
        var().prop_map(Part::Var),
    ]
}

proptest! {
    #[test]
    fn a_template_reads_back_from_its_own_spelling(parts in prop::collection::vec(part(), 0..8)) {
        let mut t = Template::default();
        for p in parts {
            match p {
                Part::Lit(s) => t.push_lit(&s),
                v => t.parts.push(v),
            }
        }
        let text = t.to_string();
        prop_assert_eq!(Template::parse(&text).unwrap(), t, "{}", text);
    }

    #[test]
    fn decimals_are_the_numbers_digits(v in any::<u64>(), small in 0u64..1000) {
        let mut digits = [0u8; 20];
        for n in [v, small] {
            let want = n.to_string();
            prop_assert_eq!(decimal(n, &mut digits), want.as_bytes());
        }
    }

    #[test]
    fn any_text_reads_or_says_why(text in ".{0,64}") {
        crate::fuzzing::template(text.as_bytes());
    }
}
