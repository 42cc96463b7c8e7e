#[test]
fn bytes_field_finds_the_last_occurrence_and_refuses_bad_wire_format() {
    use prost::Message;
    let r = crate::proto::echo::EchoResponse {
        body: "Hello, world!".into(),
        remote_addr: "127.0.0.1:1".into(),
        received_at: Some(prost_types::Timestamp {
            seconds: 5,
            nanos: 7,
        }),
        ..Default::default()
    };
    let mut b = r.encode_to_vec();
    assert_eq!(super::bytes_field(&b, 2), Ok(Some(&b"Hello, world!"[..])));
    assert_eq!(super::bytes_field(&b, 9), Ok(None));
    b.extend_from_slice(b"\x12\x02hi");
    assert_eq!(super::bytes_field(&b, 2), Ok(Some(&b"hi"[..])));
    for bad in [
        &b"\x12\x05abc"[..],
        b"\x12",
        b"\x0b",
        b"\x08\xff",
        b"\x00\x01",
    ] {
        assert_eq!(super::bytes_field(bad, 2), Err(()), "{bad:?}");
    }
    assert_eq!(super::bytes_field(b"", 2), Ok(None));
}

use super::*;
use proptest::prelude::*;

#[derive(Clone, PartialEq, prost::Message)]
struct T {
    #[prost(bytes = "vec", tag = "1")]
    a: Vec<u8>,
    #[prost(string, tag = "2")]
    b: String,
}

fn t_strategy() -> impl Strategy<Value = T> {
    (proptest::collection::vec(any::<u8>(), 0..300), ".{0,40}").prop_map(|(a, b)| T { a, b })
}

/// Cuts `input` at the given points and feeds it piece by piece, decoding every
/// complete message as it becomes available.
fn feed<R>(
    input: &[u8],
    splits: &[usize],
    mut decode_one: impl FnMut(&mut BytesMut) -> Result<Option<R>, Error>,
) -> (Vec<R>, BytesMut) {
    let mut cuts: Vec<usize> = splits.iter().map(|s| s % (input.len() + 1)).collect();
    cuts.push(input.len());
    cuts.sort_unstable();
    let mut src = BytesMut::new();
    let mut out = Vec::new();
    let mut fed = 0;
    for cut in cuts {
        src.extend_from_slice(&input[fed..cut]);
        fed = cut;
        while let Some(item) = decode_one(&mut src).unwrap() {
            out.push(item);
        }
    }
    (out, src)
}

/// A protobuf field as the strategy makes it: its number and its value by wire type.
#[derive(Debug, Clone)]
enum Wire {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Bytes(Vec<u8>),
}

proptest! {
    #[test]
    fn bytes_field_finds_the_last_length_delimited_occurrence(
        fields in proptest::collection::vec(
            (
                1u32..300,
                prop_oneof![
                    any::<u64>().prop_map(Wire::Varint),
                    any::<u64>().prop_map(Wire::Fixed64),
                    any::<u32>().prop_map(Wire::Fixed32),
                    proptest::collection::vec(any::<u8>(), 0..200).prop_map(Wire::Bytes),
                ],
            ),
            0..12,
        ),
        number in prop_oneof![Just(2u32), 1u32..300],
    ) {
        use prost::encoding::{WireType, encode_key, encode_varint};
        let mut msg = Vec::new();
        let mut last = None;
        for (n, value) in &fields {
            match value {
                Wire::Varint(v) => {
                    encode_key(*n, WireType::Varint, &mut msg);
                    encode_varint(*v, &mut msg);
                }
                Wire::Fixed64(v) => {
                    encode_key(*n, WireType::SixtyFourBit, &mut msg);
                    msg.extend_from_slice(&v.to_le_bytes());
                }
                Wire::Fixed32(v) => {
                    encode_key(*n, WireType::ThirtyTwoBit, &mut msg);
                    msg.extend_from_slice(&v.to_le_bytes());
                }
                Wire::Bytes(b) => {
                    encode_key(*n, WireType::LengthDelimited, &mut msg);
                    encode_varint(b.len() as u64, &mut msg);
                    msg.extend_from_slice(b);
                    if *n == number {
                        last = Some(b.clone());
                    }
                }
            }
        }
        prop_assert_eq!(
            super::bytes_field(&msg, number).map(|f| f.map(<[u8]>::to_vec)),
            Ok(last)
        );
        // cut short anywhere inside a field: not valid wire format, or the fields before
        for cut in 0..msg.len() {
            if let Ok(Some(f)) = super::bytes_field(&msg[..cut], number) {
                prop_assert!(fields.iter().any(|(n, v)| *n == number
                    && matches!(v, Wire::Bytes(b) if b[..] == *f)));
            }
        }
    }

    #[test]
    fn messages_round_trip_random_splits(
        msgs in proptest::collection::vec(t_strategy(), 0..6),
        tail in proptest::collection::vec(any::<u8>(), 0..5),
        splits in proptest::collection::vec(any::<usize>(), 0..10),
    ) {
        let mut wire = BytesMut::new();
        for m in &msgs {
            encode(m, &mut wire);
        }
        // An incomplete prefix after the last frame stays in the buffer.
        wire.extend_from_slice(&[0u8; PREFIX_LEN][..tail.len().min(PREFIX_LEN - 1)]);
        let leftover_len = tail.len().min(PREFIX_LEN - 1);

        let (decoded, rest) = feed(&wire, &splits, |src| decode_message::<T>(src, DEFAULT_MAX_MESSAGE));
        prop_assert_eq!(&decoded, &msgs);
        prop_assert_eq!(rest.len(), leftover_len);

        let (raw, rest) = feed(&wire, &splits, |src| decode(src, DEFAULT_MAX_MESSAGE));
        prop_assert_eq!(rest.len(), leftover_len);
        prop_assert_eq!(raw.len(), msgs.len());
        for (payload, m) in raw.iter().zip(&msgs) {
            prop_assert_eq!(&<T as prost::Message>::decode(payload.clone()).unwrap(), m);
            let mut reframed = BytesMut::new();
            encode_raw(payload, &mut reframed);
            let mut direct = BytesMut::new();
            encode(m, &mut direct);
            prop_assert_eq!(reframed, direct);
        }
    }

    #[test]
    fn raw_payloads_round_trip(
        payloads in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 0..8),
        splits in proptest::collection::vec(any::<usize>(), 0..10),
    ) {
        let mut wire = BytesMut::new();
        for p in &payloads {
            encode_raw(p, &mut wire);
        }
        let (decoded, rest) = feed(&wire, &splits, |src| decode(src, 200));
        prop_assert!(rest.is_empty());
        let decoded: Vec<Vec<u8>> = decoded.iter().map(|b| b.to_vec()).collect();
        prop_assert_eq!(decoded, payloads);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        input in proptest::collection::vec(any::<u8>(), 0..300),
        max in prop_oneof![Just(0usize), 0usize..64, Just(usize::MAX)],
    ) {
        let mut src = BytesMut::from(&input[..]);
        while let Ok(Some(_)) = decode(&mut src, max) {}
        let mut src = BytesMut::from(&input[..]);
        while let Ok(Some(_)) = decode_message::<T>(&mut src, max) {}
    }

    #[test]
    fn message_text_round_trip(text in any::<String>()) {
        let mut encoded = BytesMut::new();
        encode_message_text(&text, &mut encoded);
        prop_assert!(encoded.iter().all(|&b| (0x20..=0x7e).contains(&b)));
        let mut decoded = String::new();
        decode_message_text(&encoded, usize::MAX, &mut decoded);
        prop_assert_eq!(decoded, text);
    }

    #[test]
    fn message_text_decode_is_bounded_prefix(
        value in proptest::collection::vec(
            prop_oneof![any::<u8>(), Just(b'%'), Just(b'f'), Just(b'F'), Just(b'0')],
            0..600,
        ),
        max_len in 0usize..700,
    ) {
        let mut full = String::new();
        decode_message_text(&value, usize::MAX, &mut full);
        let mut bounded = String::from("keep:");
        decode_message_text(&value, max_len, &mut bounded);
        let appended = &bounded["keep:".len()..];
        prop_assert!(appended.len() <= max_len);
        prop_assert!(full.starts_with(appended));
        // Only cut when the next character would not have fitted.
        if appended.len() < full.len() {
            let next = full[appended.len()..].chars().next().unwrap();
            prop_assert!(appended.len() + next.len_utf8() > max_len);
        }
        // Same result as decoding everything at once and converting lossily.
        prop_assert_eq!(full, String::from_utf8_lossy(&naive_percent_decode(&value)).into_owned());
    }
}

fn naive_percent_decode(value: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < value.len() {
        if value[i] == b'%'
            && i + 2 < value.len()
            && let (Some(h), Some(l)) = (hex_value(value[i + 1]), hex_value(value[i + 2]))
        {
            out.push((h << 4) | l);
            i += 3;
            continue;
        }
        out.push(value[i]);
        i += 1;
    }
    out
}

#[test]
fn huge_prefix_errors_without_allocating() {
    let mut src = BytesMut::with_capacity(16);
    src.extend_from_slice(&[0, 0xff, 0xff, 0xff, 0xff]);
    let cap = src.capacity();
    assert_eq!(
        decode(&mut src, DEFAULT_MAX_MESSAGE),
        Err(Error::MessageTooLarge {
            len: u32::MAX,
            max: DEFAULT_MAX_MESSAGE as u32
        })
    );
    assert_eq!(src.capacity(), cap);
    assert_eq!(src.len(), PREFIX_LEN, "error consumed input");
    assert_eq!(
        decode_message::<T>(&mut src, DEFAULT_MAX_MESSAGE),
        Err(Error::MessageTooLarge {
            len: u32::MAX,
            max: DEFAULT_MAX_MESSAGE as u32
        })
    );
    assert_eq!(src.capacity(), cap);
    // Limit is inclusive.
    let mut src = BytesMut::from(&[0u8, 0, 0, 0, 3, 1, 2][..]);
    assert_eq!(
        decode(&mut src, 2),
        Err(Error::MessageTooLarge { len: 3, max: 2 })
    );
    assert_eq!(decode(&mut src, 3), Ok(None));
    assert!(
        src.capacity() >= PREFIX_LEN + 3,
        "rest of an accepted frame is reserved"
    );
    src.put_u8(3);
    assert_eq!(
        decode(&mut src, 3),
        Ok(Some(Bytes::from_static(&[1, 2, 3])))
    );
    assert!(src.is_empty());
    // A max beyond u32 saturates in the error and accepts everything.
    let mut src = BytesMut::from(&[0u8, 0xff, 0xff, 0xff, 0xff][..]);
    assert_eq!(
        decode(&mut src, 10),
        Err(Error::MessageTooLarge {
            len: u32::MAX,
            max: 10
        })
    );
    let mut small = BytesMut::from(&[0u8, 0, 0, 0, 0][..]);
    assert_eq!(decode(&mut small, usize::MAX), Ok(Some(Bytes::new())));
}

#[test]
fn flags_and_partial_frames() {
    for (flag, err) in [
        (1u8, Error::CompressedUnsupported),
        (2, Error::BadFlag(2)),
        (0x80, Error::BadFlag(0x80)),
        (0xff, Error::BadFlag(0xff)),
    ] {
        let mut src = BytesMut::from(&[flag, 0, 0, 0, 1, 9][..]);
        assert_eq!(decode(&mut src, 10), Err(err));
        assert_eq!(src.len(), 6);
    }
    let frame = [0u8, 0, 0, 0, 2, 7, 8, 0xaa];
    for cut in 0..7 {
        let mut src = BytesMut::from(&frame[..cut]);
        assert_eq!(decode(&mut src, 10), Ok(None));
        assert_eq!(&src[..], &frame[..cut]);
    }
    let mut src = BytesMut::from(&frame[..]);
    assert_eq!(decode(&mut src, 10), Ok(Some(Bytes::from_static(&[7, 8]))));
    assert_eq!(&src[..], &[0xaa]);
}

#[test]
fn decode_message_error_consumes_nothing() {
    // Field 1, wire type 2 (length-delimited), announcing 100 bytes that are missing.
    let mut src = BytesMut::new();
    encode_raw(&[0x0a, 100, 1], &mut src);
    let before = src.clone();
    assert_eq!(
        decode_message::<T>(&mut src, 100),
        Err(Error::Decode("invalid protobuf payload"))
    );
    assert_eq!(src, before);
    // Invalid UTF-8 in the string field is a decode error too.
    let mut src = BytesMut::new();
    encode_raw(&[0x12, 1, 0xff], &mut src);
    assert!(matches!(
        decode_message::<T>(&mut src, 100),
        Err(Error::Decode(_))
    ));
    // Empty payload is the default message.
    let mut src = BytesMut::new();
    encode_raw(&[], &mut src);
    assert_eq!(decode_message::<T>(&mut src, 0), Ok(Some(T::default())));
    assert!(src.is_empty());
}

#[test]
fn encode_layout() {
    let mut dst = BytesMut::from(&b"xy"[..]);
    encode(
        &T {
            a: vec![1, 2],
            b: "hi".into(),
        },
        &mut dst,
    );
    assert_eq!(
        &dst[..],
        &[
            b'x', b'y', 0, 0, 0, 0, 8, 0x0a, 2, 1, 2, 0x12, 2, b'h', b'i'
        ]
    );
    let mut dst = BytesMut::new();
    encode_raw(b"abc", &mut dst);
    assert_eq!(&dst[..], b"\0\0\0\0\x03abc");
}

#[test]
fn status_parsing() {
    assert_eq!(parse_status(b"0"), Ok(Code::Ok));
    assert_eq!(parse_status(b"4"), Ok(Code::DeadlineExceeded));
    assert_eq!(parse_status(b"14"), Ok(Code::Unavailable));
    assert_eq!(parse_status(b"16"), Ok(Code::Unauthenticated));
    assert_eq!(parse_status(b"17"), Ok(Code::Unknown));
    assert_eq!(parse_status(b"007"), Ok(Code::PermissionDenied));
    assert_eq!(parse_status(b"99999999999999999999"), Ok(Code::Unknown));
    for bad in [
        &b""[..],
        b"+1",
        b"-1",
        b" 1",
        b"1 ",
        b"1a",
        b"0x1",
        b"\xd9\xa1",
    ] {
        assert_eq!(parse_status(bad), Err(Error::BadStatus), "{bad:?}");
    }
}

#[test]
fn codes() {
    for v in 0..=16u32 {
        let code = Code::from_u32(v);
        assert_eq!(code.as_u32(), v);
        assert_eq!(parse_status(v.to_string().as_bytes()), Ok(code));
        assert_eq!(code.to_string(), code.as_str());
    }
    assert_eq!(Code::from_u32(17), Code::Unknown);
    assert_eq!(Code::from_u32(u32::MAX), Code::Unknown);
    assert_eq!(Code::Ok.as_str(), "OK");
    assert_eq!(Code::Cancelled.as_str(), "CANCELLED");
    assert_eq!(Code::InvalidArgument.as_str(), "INVALID_ARGUMENT");
    assert_eq!(Code::DeadlineExceeded.as_str(), "DEADLINE_EXCEEDED");
    assert_eq!(Code::ResourceExhausted.as_str(), "RESOURCE_EXHAUSTED");
    assert_eq!(Code::FailedPrecondition.as_str(), "FAILED_PRECONDITION");
    assert_eq!(Code::OutOfRange.as_str(), "OUT_OF_RANGE");
    assert_eq!(Code::DataLoss.as_str(), "DATA_LOSS");
    assert_eq!(Code::Unauthenticated.as_str(), "UNAUTHENTICATED");
}

#[test]
fn message_text_examples() {
    let mut dst = BytesMut::new();
    encode_message_text("hello 世界 100%\n", &mut dst);
    assert_eq!(&dst[..], b"hello %E4%B8%96%E7%95%8C 100%25%0A");

    let dec = |v: &[u8], max: usize| {
        let mut s = String::new();
        decode_message_text(v, max, &mut s);
        s
    };
    assert_eq!(dec(b"hello %E4%B8%96%e7%95%8c", usize::MAX), "hello 世界");
    assert_eq!(dec(b"%", 100), "%");
    assert_eq!(dec(b"%4", 100), "%4");
    assert_eq!(dec(b"%zz%41", 100), "%zzA");
    assert_eq!(dec(b"%%41", 100), "%A");
    assert_eq!(dec(b"a%FFb", 100), "a\u{FFFD}b");
    assert_eq!(dec(b"%E4%B8", 100), "\u{FFFD}");
    // Truncation at a character boundary.
    assert_eq!(dec("ab世".as_bytes(), 4), "ab");
    assert_eq!(dec("ab世".as_bytes(), 5), "ab世");
    assert_eq!(dec(b"abc", 0), "");
    // A multi-byte character straddling the internal 128-byte buffer.
    let mut long = vec![b'x'; 127];
    long.extend_from_slice("世界".as_bytes());
    let expected = format!("{}世界", "x".repeat(127));
    assert_eq!(dec(&long, usize::MAX), expected);
    // Appends rather than replacing.
    let mut s = String::from("pre:");
    decode_message_text(b"x", 10, &mut s);
    assert_eq!(s, "pre:x");
}

#[test]
fn errors_display_and_are_errors() {
    let all = [
        Error::MessageTooLarge { len: 1, max: 0 },
        Error::CompressedUnsupported,
        Error::BadFlag(7),
        Error::BadStatus,
        Error::Decode("x"),
    ];
    for e in all {
        assert!(!e.to_string().is_empty());
        let _: &dyn std::error::Error = &e;
    }
}
