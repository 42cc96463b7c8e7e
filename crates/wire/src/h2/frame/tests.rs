//! The frame codec's tests: round trips of every type, byte-exact encodings, one case per
//! validation rule, incomplete input, padding, field-block splitting, and a proptest of frame
//! sequences fed at arbitrary split points.

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;

use super::*;

/// What an encoder appends to an empty buffer.
fn enc(f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut out = Vec::new();
    f(&mut out);
    out
}

/// The one frame `bytes` holds, all of it consumed.
fn one(bytes: &[u8]) -> Frame<'_> {
    match decode(bytes, DEFAULT_MAX_FRAME_SIZE) {
        Ok(Some((frame, n))) => {
            assert_eq!(n, bytes.len(), "{frame:?}");
            frame
        }
        other => panic!("{bytes:02x?}: {other:?}"),
    }
}

/// The reason `bytes` is refused with, checking that its kind is the header's.
fn refused(bytes: &[u8]) -> Reason {
    match decode(bytes, DEFAULT_MAX_FRAME_SIZE) {
        Err(e) => {
            assert_eq!(e.kind, bytes[3]);
            e.reason
        }
        other => panic!("{bytes:02x?}: {other:?}"),
    }
}

const PRIO: Priority = Priority {
    dependency: 3,
    exclusive: true,
    weight: 15,
};

const ALL_SETTINGS: Settings = Settings {
    header_table_size: Some(4096),
    enable_push: Some(false),
    max_concurrent_streams: Some(100),
    initial_window_size: Some(MAX_WINDOW),
    max_frame_size: Some(MAX_FRAME_SIZE_LIMIT),
    max_header_list_size: Some(8192),
};

#[test]
fn every_type_round_trips() {
    let cases: Vec<(Vec<u8>, Frame<'static>)> = vec![
        (
            enc(|o| encode_data(o, 1, b"hello", true)),
            Frame::Data {
                stream: 1,
                data: b"hello",
                end_stream: true,
                flow_len: 5,
            },
        ),
        (
            enc(|o| encode_data(o, MAX_WINDOW, b"", false)),
            Frame::Data {
                stream: MAX_WINDOW,
                data: b"",
                end_stream: false,
                flow_len: 0,
            },
        ),
        (
            enc(|o| encode_data_padded(o, 5, b"abc", false, 4)),
            Frame::Data {
                stream: 5,
                data: b"abc",
                end_stream: false,
                flow_len: 8,
            },
        ),
        (
            enc(|o| encode_headers_frame(o, 1, b"\x82\x84", flag::END_HEADERS)),
            Frame::Headers {
                stream: 1,
                block: b"\x82\x84",
                end_stream: false,
                end_headers: true,
                priority: None,
            },
        ),
        (
            enc(|o| encode_headers_with(o, 7, b"blk", flag::END_STREAM, Some(PRIO), Some(3))),
            Frame::Headers {
                stream: 7,
                block: b"blk",
                end_stream: true,
                end_headers: false,
                priority: Some(PRIO),
            },
        ),
        (
            enc(|o| encode_priority(o, 9, PRIO)),
            Frame::Priority {
                stream: 9,
                priority: PRIO,
            },
        ),
        (
            enc(|o| encode_rst_stream(o, 3, Reason::CANCEL)),
            Frame::RstStream {
                stream: 3,
                reason: Reason::CANCEL,
            },
        ),
        (
            enc(|o| encode_settings(o, &ALL_SETTINGS)),
            Frame::Settings {
                ack: false,
                settings: ALL_SETTINGS,
            },
        ),
        (
            enc(|o| encode_settings(o, &Settings::default())),
            Frame::Settings {
                ack: false,
                settings: Settings::default(),
            },
        ),
        (
            enc(encode_settings_ack),
            Frame::Settings {
                ack: true,
                settings: Settings::default(),
            },
        ),
        (
            enc(|o| encode_push_promise(o, 1, 2, b"pp", true)),
            Frame::PushPromise {
                stream: 1,
                promised: 2,
                block: b"pp",
                end_headers: true,
            },
        ),
        (
            enc(|o| encode_push_promise_padded(o, 3, 4, b"", false, 255)),
            Frame::PushPromise {
                stream: 3,
                promised: 4,
                block: b"",
                end_headers: false,
            },
        ),
        (
            enc(|o| encode_ping(o, true, *b"12345678")),
            Frame::Ping {
                ack: true,
                data: *b"12345678",
            },
        ),
        (
            enc(|o| encode_goaway(o, 11, Reason(0xdead), b"bye")),
            Frame::GoAway {
                last_stream: 11,
                reason: Reason(0xdead),
                debug: b"bye",
            },
        ),
        (
            enc(|o| encode_window_update(o, 0, MAX_WINDOW)),
            Frame::WindowUpdate {
                stream: 0,
                increment: MAX_WINDOW,
            },
        ),
        (
            enc(|o| encode_window_update(o, 5, 0)),
            Frame::WindowUpdate {
                stream: 5,
                increment: 0,
            },
        ),
        (
            enc(|o| encode_continuation(o, 1, b"more", true)),
            Frame::Continuation {
                stream: 1,
                block: b"more",
                end_headers: true,
            },
        ),
        (
            enc(|o| encode_raw(o, 0xfa, 0xff, 0, b"whatever")),
            Frame::Unknown {
                kind: 0xfa,
                stream: 0,
                len: 8,
            },
        ),
    ];
    for (bytes, expected) in &cases {
        let frame = one(bytes);
        assert_eq!(frame, *expected);
        let head = Head::parse(bytes.first_chunk().expect("a frame has a header"));
        assert_eq!(head.len as usize, bytes.len() - HEADER_LEN);
        assert_eq!((frame.kind(), frame.stream()), (head.kind, head.stream));
    }
}

#[test]
fn encodings_are_byte_exact() {
    assert_eq!(enc(encode_settings_ack), [0, 0, 0, 4, 1, 0, 0, 0, 0]);
    assert_eq!(
        enc(|o| encode_ping(o, false, [1, 2, 3, 4, 5, 6, 7, 8])),
        [0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]
    );
    assert_eq!(
        enc(|o| encode_window_update(o, 1, 0x1000)),
        [0, 0, 4, 8, 0, 0, 0, 0, 1, 0, 0, 0x10, 0]
    );
    let s = Settings {
        max_frame_size: Some(16_384),
        initial_window_size: Some(1 << 20),
        ..Settings::default()
    };
    assert_eq!(
        enc(|o| encode_settings(o, &s)),
        [
            0, 0, 12, 4, 0, 0, 0, 0, 0, 0, 4, 0, 0x10, 0, 0, 0, 5, 0, 0, 0x40, 0
        ]
    );
    assert_eq!(
        enc(|o| encode_goaway(o, 3, Reason::PROTOCOL_ERROR, b"x")),
        [0, 0, 9, 7, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 1, b'x']
    );
    assert_eq!(
        enc(|o| encode_data_padded(o, 1, b"ab", true, 2)),
        [0, 0, 5, 0, 0x09, 0, 0, 0, 1, 2, b'a', b'b', 0, 0]
    );
    assert_eq!(
        enc(|o| encode_headers_with(o, 1, b"h", 0, Some(PRIO), None)),
        [0, 0, 6, 1, 0x20, 0, 0, 0, 1, 0x80, 0, 0, 3, 15, b'h']
    );
    // the reserved bits are never sent
    assert_eq!(
        enc(|o| encode_rst_stream(o, 0x8000_0001, Reason::CANCEL)),
        [0, 0, 4, 3, 0, 0, 0, 0, 1, 0, 0, 0, 8]
    );
    assert_eq!(
        enc(|o| encode_window_update(o, 0, u32::MAX)),
        [0, 0, 4, 8, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff]
    );
    let head = Head {
        len: MAX_FRAME_SIZE_LIMIT,
        kind: 0xab,
        flags: 0xcd,
        stream: 0x1234_5678,
    };
    let bytes = enc(|o| head.encode(o));
    assert_eq!(
        bytes,
        [0xff, 0xff, 0xff, 0xab, 0xcd, 0x12, 0x34, 0x56, 0x78]
    );
    assert_eq!(Head::parse(bytes.first_chunk().expect("9 bytes")), head);
}

/// A SETTINGS payload of (identifier, value) pairs.
fn settings_payload(params: &[(u16, u32)]) -> Vec<u8> {
    let mut p = Vec::new();
    for (id, value) in params {
        p.extend_from_slice(&id.to_be_bytes());
        p.extend_from_slice(&value.to_be_bytes());
    }
    p
}

/// The frame with the reserved bit of its stream identifier set.
fn reserved_bit(mut frame: Vec<u8>) -> Vec<u8> {
    frame[5] |= 0x80;
    frame
}

/// Any frame, by [`encode_raw`].
fn raw(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    enc(|o| encode_raw(o, kind, flags, stream, payload))
}

#[test]
fn every_validation_rule_has_its_reason() {
    use Reason as R;
    use flag::{ACK, PADDED, PRIORITY as PRIO_FLAG};
    use kind::*;
    let settings = |params: &[(u16, u32)]| raw(SETTINGS, 0, 0, &settings_payload(params));
    // (what, frame, reason, whether the header alone shows it)
    #[rustfmt::skip]
    let cases: Vec<(&str, Vec<u8>, Reason, bool)> = vec![
        ("DATA on 0", raw(DATA, 0, 0, b"x"), R::PROTOCOL_ERROR, true),
        ("HEADERS on 0", raw(HEADERS, 4, 0, b"x"), R::PROTOCOL_ERROR, true),
        ("PRIORITY on 0", raw(PRIORITY, 0, 0, &[0; 5]), R::PROTOCOL_ERROR, true),
        ("RST_STREAM on 0", raw(RST_STREAM, 0, 0, &[0; 4]), R::PROTOCOL_ERROR, true),
        ("PUSH_PROMISE on 0", raw(PUSH_PROMISE, 4, 0, &[0, 0, 0, 2]), R::PROTOCOL_ERROR, true),
        ("CONTINUATION on 0", raw(CONTINUATION, 4, 0, b"x"), R::PROTOCOL_ERROR, true),
        // only the reserved bit set: still stream 0
        ("DATA on 2^31", reserved_bit(raw(DATA, 0, 0, b"")), R::PROTOCOL_ERROR, true),
        ("SETTINGS on 1", raw(SETTINGS, 0, 1, b""), R::PROTOCOL_ERROR, true),
        ("PING on 1", raw(PING, 0, 1, &[0; 8]), R::PROTOCOL_ERROR, true),
        ("GOAWAY on 1", raw(GOAWAY, 0, 1, &[0; 8]), R::PROTOCOL_ERROR, true),
        ("PRIORITY of 4", raw(PRIORITY, 0, 1, &[0; 4]), R::FRAME_SIZE_ERROR, true),
        ("PRIORITY of 6", raw(PRIORITY, 0, 1, &[0; 6]), R::FRAME_SIZE_ERROR, true),
        ("RST_STREAM of 3", raw(RST_STREAM, 0, 1, &[0; 3]), R::FRAME_SIZE_ERROR, true),
        ("RST_STREAM of 5", raw(RST_STREAM, 0, 1, &[0; 5]), R::FRAME_SIZE_ERROR, true),
        ("PING of 7", raw(PING, 0, 0, &[0; 7]), R::FRAME_SIZE_ERROR, true),
        ("PING of 9", raw(PING, ACK, 0, &[0; 9]), R::FRAME_SIZE_ERROR, true),
        ("WINDOW_UPDATE of 3", raw(WINDOW_UPDATE, 0, 0, &[0, 0, 1]), R::FRAME_SIZE_ERROR, true),
        ("WINDOW_UPDATE of 5", raw(WINDOW_UPDATE, 0, 1, &[0, 0, 0, 1, 0]), R::FRAME_SIZE_ERROR, true),
        ("GOAWAY of 7", raw(GOAWAY, 0, 0, &[0; 7]), R::FRAME_SIZE_ERROR, true),
        ("SETTINGS of 5", raw(SETTINGS, 0, 0, &[0; 5]), R::FRAME_SIZE_ERROR, true),
        ("SETTINGS of 7", raw(SETTINGS, 0, 0, &[0; 7]), R::FRAME_SIZE_ERROR, true),
        ("SETTINGS ACK of 6", raw(SETTINGS, ACK, 0, &[0, 3, 0, 0, 0, 1]), R::FRAME_SIZE_ERROR, true),
        ("DATA PADDED of 0", raw(DATA, PADDED, 1, b""), R::FRAME_SIZE_ERROR, true),
        ("DATA pad = payload", raw(DATA, PADDED, 1, &[3, 0, 0]), R::PROTOCOL_ERROR, false),
        ("DATA pad > payload", raw(DATA, PADDED, 1, &[255]), R::PROTOCOL_ERROR, false),
        ("HEADERS PADDED of 0", raw(HEADERS, PADDED | 4, 1, b""), R::FRAME_SIZE_ERROR, true),
        ("HEADERS pad = payload", raw(HEADERS, PADDED | 4, 1, &[3, 0x82, 0]), R::PROTOCOL_ERROR, false),
        ("HEADERS PRIORITY of 4", raw(HEADERS, PRIO_FLAG | 4, 1, &[0; 4]), R::FRAME_SIZE_ERROR, true),
        ("HEADERS PADDED PRIORITY of 5", raw(HEADERS, PADDED | PRIO_FLAG, 1, &[0; 5]), R::FRAME_SIZE_ERROR, true),
        ("HEADERS pad eats priority", raw(HEADERS, PADDED | PRIO_FLAG, 1, &[1, 0, 0, 0, 0, 0]), R::PROTOCOL_ERROR, false),
        ("PUSH_PROMISE of 3", raw(PUSH_PROMISE, 4, 1, &[0, 0, 2]), R::FRAME_SIZE_ERROR, true),
        ("PUSH_PROMISE PADDED of 4", raw(PUSH_PROMISE, PADDED, 1, &[0, 0, 0, 2]), R::FRAME_SIZE_ERROR, true),
        ("PUSH_PROMISE pad eats promised", raw(PUSH_PROMISE, PADDED, 1, &[2, 0, 0, 0, 2, 0]), R::PROTOCOL_ERROR, false),
        ("ENABLE_PUSH 2", settings(&[(setting::ENABLE_PUSH, 2)]), R::PROTOCOL_ERROR, false),
        ("INITIAL_WINDOW_SIZE 2^31", settings(&[(setting::INITIAL_WINDOW_SIZE, 1 << 31)]), R::FLOW_CONTROL_ERROR, false),
        ("MAX_FRAME_SIZE 2^14-1", settings(&[(setting::MAX_FRAME_SIZE, 16_383)]), R::PROTOCOL_ERROR, false),
        ("MAX_FRAME_SIZE 2^24", settings(&[(setting::MAX_FRAME_SIZE, 1 << 24)]), R::PROTOCOL_ERROR, false),
        // a bad value after good ones still refuses the frame
        ("bad after good", settings(&[(setting::ENABLE_PUSH, 1), (0x99, 7), (setting::ENABLE_PUSH, 9)]), R::PROTOCOL_ERROR, false),
        ("DATA over max", raw(DATA, 0, 1, &[0; 16_385]), R::FRAME_SIZE_ERROR, true),
        ("unknown over max", raw(0xee, 0, 0, &[0; 16_385]), R::FRAME_SIZE_ERROR, true),
    ];
    for (what, bytes, reason, from_head) in &cases {
        assert_eq!(refused(bytes), *reason, "{what}");
        // no prefix panics; it is incomplete or the same error
        for cut in 0..bytes.len() {
            match decode(&bytes[..cut], DEFAULT_MAX_FRAME_SIZE) {
                Ok(None) => assert!(cut < HEADER_LEN || !from_head, "{what} at {cut}"),
                Err(e) => assert_eq!(e.reason, *reason, "{what} at {cut}"),
                Ok(Some(f)) => panic!("{what} at {cut}: {f:?}"),
            }
        }
        if *from_head {
            assert!(decode(&bytes[..HEADER_LEN], DEFAULT_MAX_FRAME_SIZE).is_err());
        }
    }
}

#[test]
fn limits_themselves_are_accepted() {
    let settings = raw(
        kind::SETTINGS,
        0,
        0,
        &settings_payload(&[
            (setting::INITIAL_WINDOW_SIZE, MAX_WINDOW),
            (setting::MAX_FRAME_SIZE, DEFAULT_MAX_FRAME_SIZE),
            (setting::ENABLE_PUSH, 1),
            (setting::MAX_FRAME_SIZE, MAX_FRAME_SIZE_LIMIT),
        ]),
    );
    let expected = Settings {
        initial_window_size: Some(MAX_WINDOW),
        enable_push: Some(true),
        max_frame_size: Some(MAX_FRAME_SIZE_LIMIT),
        ..Settings::default()
    };
    assert_eq!(
        one(&settings),
        Frame::Settings {
            ack: false,
            settings: expected
        }
    );
    // a pad length of the payload minus one leaves empty data
    assert_eq!(
        one(&raw(kind::DATA, flag::PADDED, 1, &[2, 0, 0])),
        Frame::Data {
            stream: 1,
            data: b"",
            end_stream: false,
            flow_len: 3
        }
    );
    // a frame of exactly max_frame_size
    let big = enc(|o| encode_data(o, 1, &[7; DEFAULT_MAX_FRAME_SIZE as usize], false));
    assert!(matches!(
        one(&big),
        Frame::Data {
            flow_len: DEFAULT_MAX_FRAME_SIZE,
            ..
        }
    ));
}

#[test]
fn self_dependency_is_returned_as_a_frame() {
    let p = Priority {
        dependency: 5,
        exclusive: false,
        weight: 0,
    };
    assert_eq!(
        one(&enc(|o| encode_priority(o, 5, p))),
        Frame::Priority {
            stream: 5,
            priority: p
        }
    );
    let headers = enc(|o| encode_headers_with(o, 5, b"x", flag::END_HEADERS, Some(p), None));
    assert!(matches!(one(&headers), Frame::Headers { priority: Some(q), .. } if q == p));
}

#[test]
fn reserved_bits_and_unknown_flags_and_settings_are_ignored() {
    let data = reserved_bit(raw(kind::DATA, 0x20 | 0x02, 1, b"d"));
    assert_eq!(
        one(&data),
        Frame::Data {
            stream: 1,
            data: b"d",
            end_stream: false,
            flow_len: 1
        }
    );
    let wu = raw(kind::WINDOW_UPDATE, 0xff, 3, &[0x80, 0, 0, 5]);
    assert_eq!(
        one(&wu),
        Frame::WindowUpdate {
            stream: 3,
            increment: 5
        }
    );
    let goaway = raw(kind::GOAWAY, 0, 0, &[0x80, 0, 0, 9, 0, 0, 0, 0]);
    assert!(matches!(one(&goaway), Frame::GoAway { last_stream: 9, .. }));
    let pp = raw(kind::PUSH_PROMISE, flag::END_HEADERS, 1, &[0x80, 0, 0, 2]);
    assert!(matches!(one(&pp), Frame::PushPromise { promised: 2, .. }));
    // PING without ACK, every other flag set
    assert!(matches!(
        one(&raw(kind::PING, 0xfe, 0, &[0; 8])),
        Frame::Ping { ack: false, .. }
    ));
    // CONTINUATION does not define PADDED: the byte stays in the block
    assert!(matches!(
        one(&raw(kind::CONTINUATION, flag::PADDED, 1, &[9, 9])),
        Frame::Continuation {
            block: &[9, 9],
            end_headers: false,
            ..
        }
    ));
    // unknown identifiers skipped; a repeated one: the last wins
    let settings = raw(
        kind::SETTINGS,
        0,
        0,
        &settings_payload(&[
            (setting::MAX_CONCURRENT_STREAMS, 1),
            (0x0, 5),
            (0x8, 1),
            (0xffff, u32::MAX),
            (setting::MAX_CONCURRENT_STREAMS, 2),
        ]),
    );
    assert_eq!(
        one(&settings),
        Frame::Settings {
            ack: false,
            settings: Settings {
                max_concurrent_streams: Some(2),
                ..Settings::default()
            }
        }
    );
    // unknown types on any stream, with any flags
    assert_eq!(
        one(&raw(0x0a, 0xff, 0x7fff_0000, b"")),
        Frame::Unknown {
            kind: 0x0a,
            stream: 0x7fff_0000,
            len: 0
        }
    );
}

#[test]
fn strict_prefixes_are_incomplete() {
    let mut wire = Vec::new();
    encode_settings(&mut wire, &ALL_SETTINGS);
    encode_settings_ack(&mut wire);
    encode_headers(&mut wire, 1, &[0x88; 40], false, 16);
    encode_data_padded(&mut wire, 1, b"body", false, 7);
    encode_data(&mut wire, 1, b"", true);
    encode_ping(&mut wire, false, [0; 8]);
    encode_goaway(&mut wire, 1, Reason::NO_ERROR, b"");
    encode_raw(&mut wire, 0x42, 0, 0, b"ext");
    // where each frame ends, from the whole input
    let mut ends = Vec::new();
    while let Some((_, n)) = decode(
        &wire[ends.last().copied().unwrap_or(0)..],
        DEFAULT_MAX_FRAME_SIZE,
    )
    .expect("valid frames")
    {
        ends.push(ends.last().copied().unwrap_or(0) + n);
    }
    assert_eq!(ends.len(), 2 + 3 + 5);
    assert_eq!(ends.last(), Some(&wire.len()));
    for cut in 0..=wire.len() {
        let mut at = 0;
        let mut count = 0;
        loop {
            match decode(&wire[at..cut], DEFAULT_MAX_FRAME_SIZE) {
                Ok(Some((_, n))) => {
                    at += n;
                    count += 1;
                }
                Ok(None) => break,
                Err(e) => panic!("cut {cut}: {e}"),
            }
        }
        // all the whole frames before the cut, and only them
        let whole = ends.iter().filter(|&&end| end <= cut).count();
        assert_eq!(count, whole, "cut {cut}");
        assert_eq!(
            at,
            if whole == 0 { 0 } else { ends[whole - 1] },
            "cut {cut}"
        );
    }
}

#[test]
fn an_oversized_length_is_refused_from_the_header_alone() {
    // DATA of 16385 bytes announced: only the 9 header bytes are there
    let head = [0x00, 0x40, 0x01, kind::DATA, 0, 0, 0, 0, 1];
    let err = decode(&head, DEFAULT_MAX_FRAME_SIZE).expect_err("over the limit");
    assert_eq!(
        (err.reason, err.kind),
        (Reason::FRAME_SIZE_ERROR, kind::DATA)
    );
    // the same header is merely incomplete under a larger limit
    assert_eq!(decode(&head, 1 << 20), Ok(None));
    // 2^24-1 announced, the most the field holds
    let head = [0xff, 0xff, 0xff, 0xee, 0, 0, 0, 0, 0];
    assert!(decode(&head, DEFAULT_MAX_FRAME_SIZE).is_err());
    assert_eq!(decode(&head, MAX_FRAME_SIZE_LIMIT), Ok(None));
    // fewer than 9 bytes are never judged
    assert_eq!(decode(&head[..8], DEFAULT_MAX_FRAME_SIZE), Ok(None));
}

#[test]
fn padding_is_removed_and_counted_for_flow_control() {
    let data = enc(|o| encode_data_padded(o, 3, b"payload", true, 200));
    assert_eq!(data.len(), HEADER_LEN + 1 + 7 + 200);
    assert_eq!(
        one(&data),
        Frame::Data {
            stream: 3,
            data: b"payload",
            end_stream: true,
            flow_len: 208
        }
    );
    // PADDED with a pad length of 0 still counts the pad length byte
    assert!(matches!(
        one(&enc(|o| encode_data_padded(o, 3, b"p", false, 0))),
        Frame::Data {
            data: b"p",
            flow_len: 2,
            ..
        }
    ));
    for priority in [None, Some(PRIO)] {
        let headers = enc(|o| encode_headers_with(o, 3, b"\x82\x86", 0x5, priority, Some(9)));
        assert_eq!(
            one(&headers),
            Frame::Headers {
                stream: 3,
                block: b"\x82\x86",
                end_stream: true,
                end_headers: true,
                priority
            }
        );
    }
    let pp = enc(|o| encode_push_promise_padded(o, 1, 4, b"blk", true, 6));
    assert!(matches!(
        one(&pp),
        Frame::PushPromise {
            promised: 4,
            block: b"blk",
            ..
        }
    ));
}

#[test]
fn a_large_block_is_split_into_continuations() {
    let block: Vec<u8> = (0..40 * 1024).map(|i| i as u8).collect();
    let wire = enc(|o| encode_headers(o, 1, &block, true, DEFAULT_MAX_FRAME_SIZE));
    let mut at = 0;
    let mut frames = Vec::new();
    let mut joined = Vec::new();
    while let Some((frame, n)) = decode(&wire[at..], DEFAULT_MAX_FRAME_SIZE).expect("valid") {
        match frame {
            Frame::Headers {
                block,
                end_stream,
                end_headers,
                priority: None,
                ..
            } => {
                frames.push((kind::HEADERS, block.len(), end_stream, end_headers));
                joined.extend_from_slice(block);
            }
            Frame::Continuation {
                block, end_headers, ..
            } => {
                frames.push((kind::CONTINUATION, block.len(), false, end_headers));
                joined.extend_from_slice(block);
            }
            other => panic!("{other:?}"),
        }
        at += n;
    }
    assert_eq!(at, wire.len());
    assert_eq!(
        frames,
        [
            (kind::HEADERS, 16_384, true, false),
            (kind::CONTINUATION, 16_384, false, false),
            (kind::CONTINUATION, 8192, false, true),
        ]
    );
    assert_eq!(joined, block);

    // a block that fits, an empty one, and a limit of 0 taken as 1
    assert_eq!(
        enc(|o| encode_headers(o, 1, b"ab", false, DEFAULT_MAX_FRAME_SIZE)),
        enc(|o| encode_headers_frame(o, 1, b"ab", flag::END_HEADERS))
    );
    assert_eq!(
        enc(|o| encode_headers(o, 1, b"", true, DEFAULT_MAX_FRAME_SIZE)),
        [0, 0, 0, 1, 0x5, 0, 0, 0, 1]
    );
    assert_eq!(
        enc(|o| encode_headers(o, 1, b"ab", false, 0)).len(),
        2 * (HEADER_LEN + 1)
    );
}

#[test]
fn reasons_and_errors_display() {
    assert_eq!(Reason::PROTOCOL_ERROR.name(), "PROTOCOL_ERROR");
    assert_eq!(Reason::HTTP_1_1_REQUIRED.to_string(), "HTTP_1_1_REQUIRED");
    assert_eq!(Reason(0xe).name(), "UNKNOWN");
    assert_eq!(Reason(0x1234).to_string(), "UNKNOWN (0x1234)");
    let all = [
        Reason::NO_ERROR,
        Reason::PROTOCOL_ERROR,
        Reason::INTERNAL_ERROR,
        Reason::FLOW_CONTROL_ERROR,
        Reason::SETTINGS_TIMEOUT,
        Reason::STREAM_CLOSED,
        Reason::FRAME_SIZE_ERROR,
        Reason::REFUSED_STREAM,
        Reason::CANCEL,
        Reason::COMPRESSION_ERROR,
        Reason::CONNECT_ERROR,
        Reason::ENHANCE_YOUR_CALM,
        Reason::INADEQUATE_SECURITY,
        Reason::HTTP_1_1_REQUIRED,
    ];
    for (code, reason) in all.iter().enumerate() {
        assert_eq!(reason.0 as usize, code);
        assert_ne!(reason.name(), "UNKNOWN");
    }
    let err = decode(&raw(kind::PING, 0, 0, &[0; 7]), DEFAULT_MAX_FRAME_SIZE).expect_err("7");
    assert_eq!(
        err.to_string(),
        "FRAME_SIZE_ERROR in a PING frame: PING length is not 8"
    );
    assert_eq!(kind::name(0x7f), "UNKNOWN");
}

/// A frame (or, for `Block`, a field block's frames) as the proptest generates it.
#[derive(Clone, Debug)]
enum Spec {
    Data(u32, Vec<u8>, bool, Option<u8>),
    Headers(u32, Vec<u8>, u8, Option<Priority>, Option<u8>),
    Block(u32, Vec<u8>, bool, u32),
    Priority(u32, Priority),
    RstStream(u32, u32),
    Settings(Settings),
    SettingsAck,
    PushPromise(u32, u32, Vec<u8>, bool, Option<u8>),
    Ping(bool, [u8; 8]),
    GoAway(u32, u32, Vec<u8>),
    WindowUpdate(u32, u32),
    Continuation(u32, Vec<u8>, bool),
    Unknown(u8, u8, u32, Vec<u8>),
}

impl Spec {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Spec::Data(s, d, end, None) => encode_data(out, *s, d, *end),
            Spec::Data(s, d, end, Some(pad)) => encode_data_padded(out, *s, d, *end, *pad),
            Spec::Headers(s, b, flags, p, pad) => encode_headers_with(out, *s, b, *flags, *p, *pad),
            Spec::Block(s, b, end, max) => encode_headers(out, *s, b, *end, *max),
            Spec::Priority(s, p) => encode_priority(out, *s, *p),
            Spec::RstStream(s, r) => encode_rst_stream(out, *s, Reason(*r)),
            Spec::Settings(s) => encode_settings(out, s),
            Spec::SettingsAck => encode_settings_ack(out),
            Spec::PushPromise(s, p, b, end, None) => encode_push_promise(out, *s, *p, b, *end),
            Spec::PushPromise(s, p, b, end, Some(pad)) => {
                encode_push_promise_padded(out, *s, *p, b, *end, *pad)
            }
            Spec::Ping(ack, d) => encode_ping(out, *ack, *d),
            Spec::GoAway(l, r, d) => encode_goaway(out, *l, Reason(*r), d),
            Spec::WindowUpdate(s, i) => encode_window_update(out, *s, *i),
            Spec::Continuation(s, b, end) => encode_continuation(out, *s, b, *end),
            Spec::Unknown(k, f, s, p) => encode_raw(out, *k, *f, *s, p),
        }
    }

    /// The frames decoding must give, with the bytes each occupies.
    fn expected(&self) -> Vec<(Frame<'_>, usize)> {
        let pad = |p: &Option<u8>| p.map_or(0, |p| 1 + usize::from(p));
        let len = |n: usize| u32::try_from(n).expect("small payload");
        vec![match self {
            Spec::Data(stream, data, end_stream, p) => sized(
                Frame::Data {
                    stream: *stream,
                    data,
                    end_stream: *end_stream,
                    flow_len: len(data.len() + pad(p)),
                },
                data.len() + pad(p),
            ),
            Spec::Headers(stream, block, flags, priority, p) => sized(
                Frame::Headers {
                    stream: *stream,
                    block,
                    end_stream: flags & flag::END_STREAM != 0,
                    end_headers: flags & flag::END_HEADERS != 0,
                    priority: *priority,
                },
                block.len() + pad(p) + if priority.is_some() { 5 } else { 0 },
            ),
            Spec::Block(stream, block, end_stream, max) => {
                let max = *max as usize;
                let count = block.len().div_ceil(max).max(1);
                let mut frames = Vec::new();
                for i in 0..count {
                    let fragment =
                        &block[(i * max).min(block.len())..((i + 1) * max).min(block.len())];
                    let end_headers = i + 1 == count;
                    let f = if i == 0 {
                        Frame::Headers {
                            stream: *stream,
                            block: fragment,
                            end_stream: *end_stream,
                            end_headers,
                            priority: None,
                        }
                    } else {
                        Frame::Continuation {
                            stream: *stream,
                            block: fragment,
                            end_headers,
                        }
                    };
                    frames.push(sized(f, fragment.len()));
                }
                return frames;
            }
            Spec::Priority(stream, priority) => sized(
                Frame::Priority {
                    stream: *stream,
                    priority: *priority,
                },
                5,
            ),
            Spec::RstStream(stream, r) => sized(
                Frame::RstStream {
                    stream: *stream,
                    reason: Reason(*r),
                },
                4,
            ),
            Spec::Settings(s) => {
                let n = [
                    s.header_table_size.is_some(),
                    s.enable_push.is_some(),
                    s.max_concurrent_streams.is_some(),
                    s.initial_window_size.is_some(),
                    s.max_frame_size.is_some(),
                    s.max_header_list_size.is_some(),
                ];
                let n = n.iter().filter(|&&b| b).count();
                sized(
                    Frame::Settings {
                        ack: false,
                        settings: *s,
                    },
                    6 * n,
                )
            }
            Spec::SettingsAck => sized(
                Frame::Settings {
                    ack: true,
                    settings: Settings::default(),
                },
                0,
            ),
            Spec::PushPromise(stream, promised, block, end_headers, p) => sized(
                Frame::PushPromise {
                    stream: *stream,
                    promised: *promised,
                    block,
                    end_headers: *end_headers,
                },
                4 + block.len() + pad(p),
            ),
            Spec::Ping(ack, data) => sized(
                Frame::Ping {
                    ack: *ack,
                    data: *data,
                },
                8,
            ),
            Spec::GoAway(last_stream, r, debug) => sized(
                Frame::GoAway {
                    last_stream: *last_stream,
                    reason: Reason(*r),
                    debug,
                },
                8 + debug.len(),
            ),
            Spec::WindowUpdate(stream, increment) => sized(
                Frame::WindowUpdate {
                    stream: *stream,
                    increment: *increment,
                },
                4,
            ),
            Spec::Continuation(stream, block, end_headers) => sized(
                Frame::Continuation {
                    stream: *stream,
                    block,
                    end_headers: *end_headers,
                },
                block.len(),
            ),
            Spec::Unknown(kind, _, stream, payload) => sized(
                Frame::Unknown {
                    kind: *kind,
                    stream: *stream,
                    len: len(payload.len()),
                },
                payload.len(),
            ),
        }]
    }
}

/// A frame with the bytes it occupies for a payload of `payload` bytes.
fn sized(f: Frame<'_>, payload: usize) -> (Frame<'_>, usize) {
    (f, HEADER_LEN + payload)
}

fn stream() -> impl Strategy<Value = u32> {
    1..=MAX_WINDOW
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..48)
}

fn priority() -> impl Strategy<Value = Priority> {
    (0..=MAX_WINDOW, any::<bool>(), any::<u8>()).prop_map(|(dependency, exclusive, weight)| {
        Priority {
            dependency,
            exclusive,
            weight,
        }
    })
}

fn settings() -> impl Strategy<Value = Settings> {
    (
        option::of(any::<u32>()),
        option::of(any::<bool>()),
        option::of(any::<u32>()),
        option::of(0..=MAX_WINDOW),
        option::of(DEFAULT_MAX_FRAME_SIZE..=MAX_FRAME_SIZE_LIMIT),
        option::of(any::<u32>()),
    )
        .prop_map(|(a, b, c, d, e, f)| Settings {
            header_table_size: a,
            enable_push: b,
            max_concurrent_streams: c,
            initial_window_size: d,
            max_frame_size: e,
            max_header_list_size: f,
        })
}

fn spec() -> impl Strategy<Value = Spec> {
    let pad = || option::of(any::<u8>());
    prop_oneof![
        (stream(), bytes(), any::<bool>(), pad()).prop_map(|(s, d, e, p)| Spec::Data(s, d, e, p)),
        (
            stream(),
            bytes(),
            any::<u8>(),
            option::of(priority()),
            pad()
        )
            .prop_map(|(s, b, f, p, pad)| Spec::Headers(s, b, f, p, pad)),
        (stream(), vec(any::<u8>(), 0..200), any::<bool>(), 1..64u32)
            .prop_map(|(s, b, e, m)| Spec::Block(s, b, e, m)),
        (stream(), priority()).prop_map(|(s, p)| Spec::Priority(s, p)),
        (stream(), any::<u32>()).prop_map(|(s, r)| Spec::RstStream(s, r)),
        settings().prop_map(Spec::Settings),
        Just(Spec::SettingsAck),
        (stream(), 0..=MAX_WINDOW, bytes(), any::<bool>(), pad())
            .prop_map(|(s, p, b, e, pad)| Spec::PushPromise(s, p, b, e, pad)),
        (any::<bool>(), any::<[u8; 8]>()).prop_map(|(a, d)| Spec::Ping(a, d)),
        (0..=MAX_WINDOW, any::<u32>(), bytes()).prop_map(|(l, r, d)| Spec::GoAway(l, r, d)),
        (0..=MAX_WINDOW, 0..=MAX_WINDOW).prop_map(|(s, i)| Spec::WindowUpdate(s, i)),
        (stream(), bytes(), any::<bool>()).prop_map(|(s, b, e)| Spec::Continuation(s, b, e)),
        (10..=255u8, any::<u8>(), 0..=MAX_WINDOW, bytes())
            .prop_map(|(k, f, s, p)| Spec::Unknown(k, f, s, p)),
    ]
}

proptest! {
    /// Frames encoded back to back and fed in arbitrary chunks decode to the same frames, in
    /// order, each occupying the bytes it was encoded into.
    #[test]
    fn frame_sequences_round_trip_at_any_split(
        specs in vec(spec(), 0..12),
        chunks in vec(0..300usize, 0..24),
    ) {
        let mut wire = Vec::new();
        for s in &specs {
            s.encode(&mut wire);
        }
        let expected: Vec<(Frame<'_>, usize)> = specs.iter().flat_map(Spec::expected).collect();
        prop_assert_eq!(expected.iter().map(|(_, n)| n).sum::<usize>(), wire.len());

        let mut buf = Vec::new();
        let mut chunks = chunks.into_iter();
        let (mut start, mut got) = (0, 0);
        while buf.len() < wire.len() {
            let n = chunks.next().unwrap_or(usize::MAX).min(wire.len() - buf.len());
            buf.extend_from_slice(&wire[buf.len()..buf.len() + n]);
            loop {
                match decode(&buf[start..], DEFAULT_MAX_FRAME_SIZE) {
                    Ok(Some((frame, n))) => {
                        prop_assert!(got < expected.len());
                        prop_assert_eq!(frame, expected[got].0);
                        prop_assert_eq!(n, expected[got].1);
                        start += n;
                        got += 1;
                    }
                    Ok(None) => break,
                    Err(e) => prop_assert!(false, "{e} after {got} frames"),
                }
            }
        }
        prop_assert_eq!(got, expected.len());
        prop_assert_eq!(start, wire.len());
    }
}
