//! The frame codec's tests: heads, payloads, the reader fed whole and in pieces, encoders.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

use super::*;
use crate::h3::counts::FrameCount;

fn reader_frames(input: &[u8], piece: usize) -> (Vec<Frame>, Result<(), Error>, H3Counts) {
    let mut reader = FrameReader::default();
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    for chunk in input.chunks(piece.max(1)) {
        buf.extend_from_slice(chunk);
        loop {
            match reader.decode(&mut buf) {
                Ok(Some(frame)) => frames.push(frame),
                Ok(None) => break,
                Err(e) => return (frames, Err(e), *reader.counts()),
            }
        }
    }
    (frames, Ok(()), *reader.counts())
}

/// DATA pieces joined, one item per DATA frame, so that pieces do not matter.
fn joined(frames: Vec<Frame>) -> Vec<Frame> {
    let mut out: Vec<Frame> = Vec::new();
    let mut open = false;
    for frame in frames {
        match frame {
            Frame::Data { chunk, remaining } => {
                if let (true, Some(Frame::Data { chunk: last, .. })) = (open, out.last_mut()) {
                    *last = Bytes::from([&last[..], &chunk[..]].concat());
                } else {
                    out.push(Frame::Data {
                        chunk,
                        remaining: 0,
                    });
                }
                open = remaining > 0;
            }
            other => {
                open = false;
                out.push(other);
            }
        }
    }
    out
}

fn err(code: Code, context: &'static str) -> Error {
    Error { code, context }
}

#[test]
fn types_are_classified() {
    assert_eq!(FrameType::classify(0x00), Ok(FrameType::Data));
    assert_eq!(FrameType::classify(0x0d), Ok(FrameType::MaxPushId));
    let last = (varint::MAX - 0x21) / 0x1f * 0x1f + 0x21;
    for code in [0x21, 0x40, 0x1f * 1000 + 0x21, last] {
        assert!(is_reserved(code), "{code:#x}");
        assert_eq!(FrameType::classify(code), Ok(FrameType::Reserved));
    }
    for code in [0x0a, 0x20, 0x22, 0x3f, 0x41] {
        assert_eq!(
            FrameType::classify(code),
            Ok(FrameType::Unknown),
            "{code:#x}"
        );
    }
    for code in kind::HTTP2_ONLY {
        assert_eq!(
            FrameType::classify(code).unwrap_err().code,
            Code::FrameUnexpected
        );
    }
    assert_eq!(FrameType::GoAway.name(), "GOAWAY");
    for (i, t) in FrameType::ALL.iter().enumerate() {
        assert_eq!(*t as usize, i);
    }
}

#[test]
fn heads_decode_and_check_what_they_show() {
    assert_eq!(decode_head(&[], 100), Ok(None));
    assert_eq!(decode_head(&[0x01], 100), Ok(None));
    assert_eq!(decode_head(&[0x01, 0x40], 100), Ok(None));
    assert_eq!(
        decode_head(&[0x01, 0x40, 0x64, 0xff], 100),
        Ok(Some(Head {
            kind: FrameType::Headers,
            code: 1,
            len: 100,
            header_len: 3
        }))
    );
    // the type is checked only once the whole head is there
    assert_eq!(decode_head(&[0x06], 100), Ok(None));
    assert_eq!(
        decode_head(&[0x06, 0x00], 100),
        Err(err(
            Code::FrameUnexpected,
            "an HTTP/2 frame type HTTP/3 reserves"
        ))
    );
    let too_long = err(
        Code::ExcessiveLoad,
        "frame longer than the frame length limit",
    );
    assert_eq!(decode_head(&[0x01, 0x40, 0x65], 100), Err(too_long));
    assert_eq!(decode_head(&[0x04, 0x40, 0x65], 100), Err(too_long));
    // DATA and skipped frames have no limit
    assert!(
        decode_head(&[0x00, 0x80, 0x10, 0, 0], 100)
            .unwrap()
            .is_some()
    );
    assert!(
        decode_head(&[0x21, 0x80, 0x10, 0, 0], 100)
            .unwrap()
            .is_some()
    );
    assert!(
        decode_head(&[0x0a, 0x80, 0x10, 0, 0], 100)
            .unwrap()
            .is_some()
    );
    for code in [kind::GOAWAY, kind::CANCEL_PUSH, kind::MAX_PUSH_ID] {
        for len in [0, 9] {
            assert_eq!(
                decode_head(&[code as u8, len], 100).unwrap_err().code,
                Code::FrameError
            );
        }
    }
}

#[test]
fn settings_decode_and_refuse() {
    let mut payload = Vec::new();
    Settings::client(16_384).encode_payload(&mut payload);
    assert_eq!(
        payload,
        [0x01, 0x00, 0x06, 0x80, 0x00, 0x40, 0x00, 0x07, 0x00]
    );
    assert_eq!(Settings::client(16_384).payload_len(), payload.len());
    // a reserved identifier and an unknown one are ignored
    payload.extend_from_slice(&[0x21, 0x05, 0x08, 0x01]);
    assert_eq!(Settings::decode(&payload), Ok(Settings::client(16_384)));
    assert_eq!(Settings::decode(&[]), Ok(Settings::default()));

    let cut = err(Code::FrameError, "SETTINGS ends inside a setting");
    assert_eq!(Settings::decode(&[0x06]), Err(cut));
    assert_eq!(Settings::decode(&[0x06, 0x40]), Err(cut));
    for id in 2..=5 {
        assert_eq!(
            Settings::decode(&[id, 0]),
            Err(err(
                Code::SettingsError,
                "an HTTP/2 setting HTTP/3 reserves"
            ))
        );
    }
    let twice = err(Code::SettingsError, "a setting sent twice");
    assert_eq!(Settings::decode(&[0x01, 0, 0x01, 0]), Err(twice));
    assert_eq!(Settings::decode(&[0x21, 0, 0x08, 1, 0x21, 1]), Err(twice));
}

#[test]
fn the_reader_hands_on_frames_and_skips_grease() {
    let mut input = Vec::new();
    varint::encode(&mut input, stream_type::CONTROL);
    let mut sent = H3Counts::default();
    sent.count_frame(&encode_settings(&mut input, &Settings::client(1000)));
    sent.count_frame(&encode_reserved(&mut input, 3, b"grease"));
    // an unknown type, 0x0a, with 2 bytes
    input.extend_from_slice(&[0x0a, 0x02, 0xaa, 0xbb]);
    sent.count_frame(&Head {
        kind: FrameType::Unknown,
        code: 0x0a,
        len: 2,
        header_len: 2,
    });
    sent.count_frame(&encode_headers(&mut input, &[0, 0, 0xd1]));
    sent.count_frame(&encode_data_head(&mut input, 5));
    input.extend_from_slice(b"hello");
    sent.count_frame(&encode_data_head(&mut input, 0));
    sent.count_frame(&encode_push_promise(&mut input, 7, &[0, 0]));
    sent.count_frame(&encode_cancel_push(&mut input, 7));
    sent.count_frame(&encode_max_push_id(&mut input, 64));
    sent.count_frame(&encode_goaway(&mut input, 1 << 40));

    let expected = vec![
        Frame::Settings(Settings::client(1000)),
        Frame::Headers(Bytes::from_static(&[0, 0, 0xd1])),
        Frame::Data {
            chunk: Bytes::from_static(b"hello"),
            remaining: 0,
        },
        Frame::Data {
            chunk: Bytes::new(),
            remaining: 0,
        },
        Frame::PushPromise {
            push_id: 7,
            block: Bytes::from_static(&[0, 0]),
        },
        Frame::CancelPush(7),
        Frame::MaxPushId(64),
        Frame::GoAway(1 << 40),
    ];
    let body = &input[1..];
    let (frames, result, counts) = reader_frames(body, body.len());
    assert_eq!((frames, result, counts), (expected.clone(), Ok(()), sent));
    for piece in 1..8 {
        let (frames, result, counts) = reader_frames(body, piece);
        assert_eq!(joined(frames), expected, "pieces of {piece}");
        assert_eq!((result, counts), (Ok(()), sent));
    }
    assert_eq!(counts.frame(FrameType::Reserved).payload_bytes, 6);
    assert_eq!(counts.frame(FrameType::Unknown).count, 1);
}

#[test]
fn data_arrives_in_pieces_and_the_boundary_is_known() {
    let mut reader = FrameReader::new(10);
    let mut buf = BytesMut::new();
    encode_data_head(&mut buf, 100_000);
    buf.extend_from_slice(&[1; 10]);
    assert_eq!(
        reader.decode(&mut buf),
        Ok(Some(Frame::Data {
            chunk: Bytes::from_static(&[1; 10]),
            remaining: 99_990
        }))
    );
    assert!(!reader.at_frame_boundary());
    assert_eq!(reader.decode(&mut buf), Ok(None));
    buf.extend_from_slice(&[2; 99_990]);
    let Ok(Some(Frame::Data { chunk, remaining })) = reader.decode(&mut buf) else {
        panic!("the rest of the DATA frame");
    };
    assert_eq!((chunk.len(), remaining), (99_990, 0));
    assert!(reader.at_frame_boundary());
    assert_eq!(
        reader.counts().frame(FrameType::Data).payload_bytes,
        100_000
    );
}

#[test]
fn reader_errors_consume_nothing() {
    let cases: [(&[u8], Error); 5] = [
        (
            &[0x08, 0x00],
            err(
                Code::FrameUnexpected,
                "an HTTP/2 frame type HTTP/3 reserves",
            ),
        ),
        (
            &[0x07, 0x02, 0x05, 0x00],
            err(
                Code::FrameError,
                "CANCEL_PUSH, GOAWAY or MAX_PUSH_ID payload is not one varint",
            ),
        ),
        (
            &[0x07, 0x01, 0x40],
            err(
                Code::FrameError,
                "CANCEL_PUSH, GOAWAY or MAX_PUSH_ID payload is not one varint",
            ),
        ),
        (
            &[0x05, 0x01, 0x40],
            err(Code::FrameError, "PUSH_PROMISE ends inside its push id"),
        ),
        (
            &[0x04, 0x02, 0x02, 0x00],
            err(Code::SettingsError, "an HTTP/2 setting HTTP/3 reserves"),
        ),
    ];
    for (bytes, expected) in cases {
        let mut buf = BytesMut::from(bytes);
        assert_eq!(FrameReader::default().decode(&mut buf), Err(expected));
        assert_eq!(&buf[..], bytes, "nothing consumed");
    }
    // a buffered frame not yet whole is left alone
    let mut buf = BytesMut::from(&[0x01, 0x03, 0x00, 0x00][..]);
    let mut reader = FrameReader::default();
    assert_eq!(reader.decode(&mut buf), Ok(None));
    assert_eq!(buf.len(), 4);
    assert_eq!(*reader.counts(), H3Counts::default());
}

#[test]
#[should_panic(expected = "reserved frame type")]
fn reserved_types_past_the_varint_range_are_a_caller_bug() {
    encode_reserved(&mut Vec::new(), u64::MAX / 0x1f, b"");
}

fn settings() -> impl Strategy<Value = Settings> {
    let value = proptest::option::of(0..=varint::MAX);
    (value.clone(), value.clone(), value).prop_map(|(a, b, c)| Settings {
        qpack_max_table_capacity: a,
        max_field_section_size: b,
        qpack_blocked_streams: c,
    })
}

fn frame() -> impl Strategy<Value = Frame> {
    let id = 0..=varint::MAX;
    let bytes = || proptest::collection::vec(any::<u8>(), 0..300).prop_map(Bytes::from);
    prop_oneof![
        bytes().prop_map(|chunk| Frame::Data {
            chunk,
            remaining: 0
        }),
        bytes().prop_map(Frame::Headers),
        (id.clone(), bytes()).prop_map(|(push_id, block)| Frame::PushPromise { push_id, block }),
        settings().prop_map(Frame::Settings),
        id.clone().prop_map(Frame::GoAway),
        id.clone().prop_map(Frame::CancelPush),
        id.prop_map(Frame::MaxPushId),
    ]
}

fn encode(frame: &Frame, out: &mut Vec<u8>) -> Head {
    match frame {
        Frame::Data { chunk, .. } => {
            let head = encode_data_head(out, chunk.len() as u64);
            out.extend_from_slice(chunk);
            head
        }
        Frame::Headers(block) => encode_headers(out, block),
        Frame::PushPromise { push_id, block } => encode_push_promise(out, *push_id, block),
        Frame::Settings(s) => encode_settings(out, s),
        Frame::GoAway(id) => encode_goaway(out, *id),
        Frame::CancelPush(id) => encode_cancel_push(out, *id),
        Frame::MaxPushId(id) => encode_max_push_id(out, *id),
    }
}

proptest! {
    #[test]
    fn settings_round_trip(s in settings()) {
        let mut payload = Vec::new();
        s.encode_payload(&mut payload);
        prop_assert_eq!(payload.len(), s.payload_len());
        prop_assert_eq!(Settings::decode(&payload), Ok(s));
    }

    #[test]
    fn frames_round_trip_whole_and_in_pieces(
        frames in proptest::collection::vec(frame(), 0..8),
        grease in proptest::collection::vec(any::<u8>(), 0..20),
        piece in 1usize..64,
    ) {
        let mut input = Vec::new();
        let mut sent = H3Counts::default();
        for f in &frames {
            sent.count_frame(&encode(f, &mut input));
            sent.count_frame(&encode_reserved(&mut input, grease.len() as u64, &grease));
        }
        let (got, result, counts) = reader_frames(&input, input.len());
        prop_assert_eq!((&got, result, counts), (&frames, Ok(()), sent));
        let (got, result, counts) = reader_frames(&input, piece);
        prop_assert_eq!((joined(got), result, counts), (frames, Ok(()), sent));
    }
}

// H3Counts, fed by the encoders (counts.rs sits below frame.rs and has no test of its own)
#[test]
fn frames_are_counted_by_type_and_summed() {
    let mut out = Vec::new();
    let mut a = H3Counts::default();
    a.count_frame(&encode_headers(&mut out, &[0, 0, 0xd1]));
    a.count_frame(&encode_data_head(&mut out, 1000));
    a.count_frame(&encode_reserved(&mut out, 0, b"xy"));
    assert_eq!(
        a.frame(FrameType::Headers),
        FrameCount {
            count: 1,
            header_bytes: 2,
            payload_bytes: 3
        }
    );
    assert_eq!(a.frame(FrameType::Data).header_bytes, 3);
    assert_eq!(a.frame(FrameType::Reserved).payload_bytes, 2);
    assert_eq!(a.frame(FrameType::Unknown), FrameCount::default());
    assert_eq!(a.header_bytes(), 2 + 3 + 2);
    assert_eq!(a.total_bytes(), 7 + 3 + 1000 + 2);

    let mut sum = a;
    sum += a;
    assert_eq!(sum.frame(FrameType::Data).count, 2);
    assert_eq!(sum.total_bytes(), 2 * a.total_bytes());
}
