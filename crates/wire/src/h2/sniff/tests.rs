//! The sniffer against frames built by hand and generated connections fed in arbitrary pieces.

use proptest::prelude::*;

use super::*;
use crate::h2::counts::FrameCount;
use crate::h2::frame::flag::END_HEADERS;

fn frame(ty: u8, flags: u8, sid: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).unwrap();
    let mut v = Vec::with_capacity(HEADER_LEN + payload.len());
    v.extend_from_slice(&len.to_be_bytes()[1..]);
    v.push(ty);
    v.push(flags);
    v.extend_from_slice(&sid.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

#[test]
fn counts_read_back_as_reports_write_them() {
    let mut s = H2Sniffer::new(true);
    let mut bytes = PREFACE.to_vec();
    bytes.extend(frame(0x4, 0, 0, &[]));
    bytes.extend(frame(0x1, END_HEADERS, 1, &[0x82, 0x86]));
    bytes.extend(frame(0x0, 0, 1, &[0, 0, 0, 0, 2, 8, 1]));
    s.feed(&bytes);
    let mut c = *s.counts();
    c.header_list_bytes = 42;
    let json = serde_json::to_string(&c).unwrap();
    let back: H2Counts = serde_json::from_str(&json).unwrap();
    // what the report carries comes back whole (the two fields it leaves out are 0 / none)
    assert_eq!(
        back,
        H2Counts {
            headers_frames_with_end_stream: 0,
            malformed: None,
            ..c
        }
    );
    assert_eq!(back.frame(FrameType::Data).count, 1);
    assert_eq!(back.grpc_messages, 1);
    let bad = json.replace("\"DATA\"", "\"DATUM\"");
    let e = serde_json::from_str::<H2Counts>(&bad).unwrap_err();
    assert!(e.to_string().contains("DATUM"), "{e}");
}

/// A PADDED frame: pad-length byte, `lead`, `body`, then `pad` zero bytes.
fn padded(ty: u8, flags: u8, sid: u32, lead: &[u8], body: &[u8], pad: u8) -> Vec<u8> {
    let mut p = vec![pad];
    p.extend_from_slice(lead);
    p.extend_from_slice(body);
    p.extend(std::iter::repeat_n(0, usize::from(pad)));
    frame(ty, flags | PADDED, sid, &p)
}

/// One uncompressed gRPC message with `len` body bytes.
fn grpc(len: usize) -> Vec<u8> {
    let mut v = vec![0];
    v.extend_from_slice(&u32::try_from(len).unwrap().to_be_bytes());
    v.extend((0..len).map(|i| i as u8));
    v
}

fn sniff(expect_preface: bool, input: &[u8]) -> H2Sniffer {
    let mut s = H2Sniffer::new(expect_preface);
    s.feed(input);
    assert_eq!(s.fed(), input.len() as u64);
    assert_balanced(&s);
    s
}

fn stat(s: &H2Sniffer, ty: FrameType) -> FrameCount {
    s.counts().frames[ty as usize]
}

fn assert_balanced(s: &H2Sniffer) {
    let c = s.counts();
    let frame_bytes: u64 = c.frames.iter().map(|f| f.bytes).sum();
    let frame_count: u64 = c.frames.iter().map(|f| f.count).sum();
    assert_eq!(c.frame_header_bytes, 9 * frame_count);
    assert_eq!(
        s.fed(),
        c.preface_bytes + frame_bytes + c.unparsed_bytes + s.pending()
    );
    assert!(c.setup_bytes <= s.fed());
    assert!(
        c.data_payload_bytes >= c.grpc_prefix_bytes + c.grpc_message_bytes + c.data_untracked_bytes
    );
}

#[test]
fn names_and_types_round_trip() {
    for (i, ty) in FrameType::ALL.iter().enumerate() {
        assert_eq!(*ty as usize, i);
        if *ty != FrameType::Unknown {
            assert_eq!(FrameType::from_u8(i as u8), *ty);
        }
    }
    assert_eq!(FrameType::from_u8(0xFA), FrameType::Unknown);
    assert_eq!(FrameType::RstStream.name(), "RST_STREAM");
    assert_eq!(FrameType::GoAway.name(), "GOAWAY");
    assert_eq!(FrameType::Unknown.name(), "UNKNOWN");
}

#[test]
fn client_unary_call() {
    let mut input = PREFACE.to_vec();
    input.extend(frame(4, 0, 0, &[0; 18]));
    input.extend(frame(8, 0, 0, &[0, 0, 0xff, 0]));
    input.extend(frame(1, END_HEADERS, 1, &[0x82; 30]));
    input.extend(frame(0, END_STREAM, 1, &grpc(20)));
    let s = sniff(true, &input);
    let mut want = H2Counts {
        preface_bytes: 24,
        frame_header_bytes: 36,
        hpack_bytes: 30,
        data_payload_bytes: 25,
        grpc_prefix_bytes: 5,
        grpc_message_bytes: 20,
        grpc_messages: 1,
        setup_bytes: 24 + 27 + 13,
        ..H2Counts::default()
    };
    want.frames[FrameType::Settings as usize] = FrameCount {
        count: 1,
        bytes: 27,
    };
    want.frames[FrameType::WindowUpdate as usize] = FrameCount {
        count: 1,
        bytes: 13,
    };
    want.frames[FrameType::Headers as usize] = FrameCount {
        count: 1,
        bytes: 39,
    };
    want.frames[FrameType::Data as usize] = FrameCount {
        count: 1,
        bytes: 34,
    };
    assert_eq!(*s.counts(), want);
    assert_eq!(s.fed(), 137);
    assert!(s.streams.is_empty());
}

#[test]
fn server_message_split_across_frames_then_trailers() {
    let msg = grpc(30);
    let mut input = frame(4, 0, 0, &[0; 6]);
    input.extend(frame(4, 0x1, 0, &[]));
    input.extend(frame(1, END_HEADERS, 1, &[0x88; 20]));
    input.extend(frame(0, 0, 1, &msg[..12]));
    input.extend(frame(0, 0, 1, &msg[12..]));
    input.extend(frame(1, END_HEADERS | END_STREAM, 1, &[0x40; 15]));
    let s = sniff(false, &input);
    let c = s.counts();
    assert_eq!(c.preface_bytes, 0);
    assert_eq!(
        stat(&s, FrameType::Settings),
        FrameCount {
            count: 2,
            bytes: 24
        }
    );
    assert_eq!(
        stat(&s, FrameType::Headers),
        FrameCount {
            count: 2,
            bytes: 53
        }
    );
    assert_eq!(
        stat(&s, FrameType::Data),
        FrameCount {
            count: 2,
            bytes: 53
        }
    );
    assert_eq!(c.frame_header_bytes, 54);
    assert_eq!(c.hpack_bytes, 35);
    assert_eq!(c.data_payload_bytes, 35);
    assert_eq!(c.grpc_prefix_bytes, 5);
    assert_eq!(c.grpc_message_bytes, 30);
    assert_eq!(c.grpc_messages, 1);
    assert_eq!(c.data_untracked_bytes, 0);
    assert_eq!(c.padding_bytes, 0);
    assert_eq!(c.setup_bytes, 24);
    assert_eq!(c.headers_frames_with_end_stream, 1);
    assert_eq!(c.malformed, None);
    assert_eq!(c.unparsed_bytes, 0);
    assert!(s.streams.is_empty());
}

#[test]
fn padded_data_headers_and_push_promise() {
    let mut input = padded(1, END_HEADERS | PRIORITY, 1, &[0, 0, 0, 3, 15], &[7; 10], 7);
    input.extend(padded(0, END_STREAM, 1, &[], &grpc(3), 4));
    input.extend(padded(5, END_HEADERS, 1, &[0, 0, 0, 2], &[9; 6], 2));
    let s = sniff(false, &input);
    let c = s.counts();
    assert_eq!(
        stat(&s, FrameType::Headers),
        FrameCount {
            count: 1,
            bytes: 9 + 23
        }
    );
    assert_eq!(
        stat(&s, FrameType::Data),
        FrameCount {
            count: 1,
            bytes: 9 + 13
        }
    );
    assert_eq!(
        stat(&s, FrameType::PushPromise),
        FrameCount {
            count: 1,
            bytes: 9 + 13
        }
    );
    assert_eq!(c.hpack_bytes, 10 + 6);
    assert_eq!(c.padding_bytes, 8 + 5 + 3);
    assert_eq!(c.data_payload_bytes, 13);
    assert_eq!(c.grpc_prefix_bytes, 5);
    assert_eq!(c.grpc_message_bytes, 3);
    assert_eq!(c.grpc_messages, 1);
    assert_eq!(c.data_untracked_bytes, 0);
    assert_eq!(c.setup_bytes, 0);
    assert_eq!(c.malformed, None);
}

#[test]
fn zero_padding_and_empty_padded_data() {
    let mut input = frame(1, END_HEADERS, 3, &[1]);
    input.extend(padded(0, 0, 3, &[], &[], 0));
    input.extend(padded(0, END_STREAM, 3, &[], &[], 9));
    let s = sniff(false, &input);
    let c = s.counts();
    assert_eq!(
        stat(&s, FrameType::Data),
        FrameCount {
            count: 2,
            bytes: 9 + 1 + 9 + 10
        }
    );
    assert_eq!(c.padding_bytes, 11);
    assert_eq!(c.data_payload_bytes, 11);
    assert_eq!(c.grpc_prefix_bytes + c.data_untracked_bytes, 0);
    assert!(s.streams.is_empty());
}

#[test]
fn continuation_fragments_count_as_hpack() {
    let mut input = frame(1, 0, 1, &[1; 10]);
    input.extend(frame(9, 0, 1, &[2; 8]));
    input.extend(frame(9, END_HEADERS, 1, &[3; 5]));
    let s = sniff(false, &input);
    assert_eq!(s.counts().hpack_bytes, 23);
    assert_eq!(
        stat(&s, FrameType::Continuation),
        FrameCount {
            count: 2,
            bytes: 31
        }
    );
}

#[test]
fn several_messages_in_one_data_frame() {
    let mut body = grpc(4);
    body.extend(grpc(0));
    body.extend(grpc(7));
    body.extend(&grpc(9)[..3]);
    let mut input = frame(1, END_HEADERS, 1, &[0x83]);
    input.extend(frame(0, 0, 1, &body));
    let s = sniff(false, &input);
    let c = s.counts();
    assert_eq!(c.grpc_messages, 3);
    assert_eq!(c.grpc_prefix_bytes, 18);
    assert_eq!(c.grpc_message_bytes, 11);
    assert_eq!(c.data_payload_bytes, 29);
}

#[test]
fn control_frames_and_unknown_type() {
    let mut input = frame(6, 0, 0, &[1; 8]);
    input.extend(frame(6, 0x1, 0, &[1; 8]));
    input.extend(frame(7, 0, 0, &[0, 0, 0, 1, 0, 0, 0, 0, b'b', b'y', b'e']));
    input.extend(frame(3, 0, 5, &[0, 0, 0, 8]));
    input.extend(frame(2, 0, 5, &[0, 0, 0, 0, 16]));
    // The PADDED bit means nothing on an unknown type.
    input.extend(frame(0xFA, PADDED | PRIORITY, 5, &[0xff; 11]));
    let s = sniff(false, &input);
    let c = s.counts();
    for (t, count, bytes) in [
        (FrameType::Ping, 2, 34),
        (FrameType::GoAway, 1, 20),
        (FrameType::RstStream, 1, 13),
        (FrameType::Priority, 1, 14),
        (FrameType::Unknown, 1, 20),
    ] {
        assert_eq!(stat(&s, t), FrameCount { count, bytes }, "{t:?}");
    }
    assert_eq!(c.padding_bytes + c.hpack_bytes + c.data_payload_bytes, 0);
    assert_eq!(c.setup_bytes, s.fed());
    assert_eq!(c.malformed, None);
}

#[test]
fn rst_stream_drops_partial_message_state() {
    let msg = grpc(50);
    let mut input = frame(1, END_HEADERS, 1, &[0x83]);
    input.extend(frame(0, 0, 1, &msg[..20]));
    input.extend(frame(3, 0, 1, &[0, 0, 0, 8]));
    // After the reset, DATA on the stream is untracked until it is opened again.
    input.extend(frame(0, 0, 1, &msg[20..30]));
    input.extend(frame(1, END_HEADERS, 1, &[0x83]));
    input.extend(frame(0, END_STREAM, 1, &grpc(2)));
    let s = sniff(false, &input);
    let c = s.counts();
    assert_eq!(c.grpc_messages, 2);
    assert_eq!(c.grpc_prefix_bytes, 10);
    assert_eq!(c.grpc_message_bytes, 15 + 2);
    assert_eq!(c.data_untracked_bytes, 10);
    assert!(s.streams.is_empty());
}

#[test]
fn data_without_headers_or_bad_flag_is_untracked() {
    let mut input = frame(0, 0, 7, &grpc(3));
    input.extend(frame(1, END_HEADERS, 9, &[0x83]));
    let mut bad = grpc(4);
    bad[0] = 2;
    input.extend(frame(0, 0, 9, &bad));
    input.extend(frame(0, END_STREAM, 9, &grpc(4)));
    let s = sniff(false, &input);
    let c = s.counts();
    assert_eq!(c.data_untracked_bytes, 8 + 9 + 9);
    assert_eq!(c.grpc_messages, 0);
    assert_eq!(c.grpc_prefix_bytes, 0);
}

#[test]
fn stream_map_is_bounded_and_evicts_the_oldest() {
    let mut input = Vec::new();
    for i in 0..=MAX_TRACKED_STREAMS as u32 {
        input.extend(frame(1, END_HEADERS, 2 * i + 1, &[0x83]));
    }
    input.extend(frame(0, 0, 1, &grpc(1)));
    input.extend(frame(0, 0, 2 * MAX_TRACKED_STREAMS as u32 + 1, &grpc(1)));
    let s = sniff(false, &input);
    assert_eq!(s.streams.len(), MAX_TRACKED_STREAMS);
    assert_eq!(s.counts().data_untracked_bytes, 6);
    assert_eq!(s.counts().grpc_messages, 1);
}

#[test]
fn setup_ends_at_first_headers_type_byte() {
    let mut input = PREFACE.to_vec();
    input.extend(frame(4, 0, 0, &[]));
    let headers = frame(1, END_HEADERS, 1, &[0x83]);
    let mut s = H2Sniffer::new(true);
    s.feed(&input);
    assert_eq!(s.counts().setup_bytes, 33);
    s.feed(&headers[..3]);
    assert_eq!(s.counts().setup_bytes, 36);
    assert_eq!(s.pending(), 3);
    s.feed(&headers[3..4]);
    assert_eq!(s.counts().setup_bytes, 33);
    s.feed(&headers[4..]);
    s.feed(&frame(4, 0, 0, &[]));
    assert_eq!(s.counts().setup_bytes, 33);
    assert_balanced(&s);
}

#[test]
fn preface_mismatch_is_malformed() {
    let mut input = PREFACE[..10].to_vec();
    input.extend_from_slice(b"XYZ");
    let s = sniff(true, &input);
    assert_eq!(s.counts().malformed, Some("preface mismatch"));
    assert_eq!(s.counts().unparsed_bytes, 13);
    assert_eq!(s.counts().preface_bytes, 0);
    // HTTP/1.1 on a direction that expects the preface.
    let s = sniff(true, b"GET / HTTP/1.1\r\n");
    assert_eq!(s.counts().unparsed_bytes, 16);
}

#[test]
fn broken_framing_stops_parsing() {
    let good = frame(4, 0, 0, &[]);
    let cases: [(Vec<u8>, &str); 4] = [
        (
            frame(0, PADDED, 1, &[]),
            "PADDED frame without a pad length byte",
        ),
        (
            frame(1, PRIORITY, 1, &[0; 4]),
            "PRIORITY flag with payload shorter than 5",
        ),
        (
            frame(5, PADDED, 1, &[0, 0, 0]),
            "PUSH_PROMISE payload shorter than the promised stream id",
        ),
        (
            frame(1, PADDED | PRIORITY, 1, &[2, 0, 0, 0, 0, 0, 0]),
            "pad length exceeds frame payload",
        ),
    ];
    for (bad, why) in cases {
        let mut input = good.clone();
        input.extend(&bad);
        input.extend(&good);
        let s = sniff(false, &input);
        let c = s.counts();
        assert_eq!(c.malformed, Some(why));
        assert_eq!(stat(&s, FrameType::Settings).count, 1);
        let frames: u64 = c.frames.iter().map(|f| f.count).sum();
        assert_eq!(frames, 1);
        assert_eq!(c.unparsed_bytes, input.len() as u64 - 9);
    }
}

#[test]
fn pending_counts_partial_header_and_pad_wait() {
    let f = padded(0, 0, 1, &[], &[1, 2], 3);
    let mut s = H2Sniffer::new(false);
    s.feed(&f[..9]);
    assert_eq!(s.pending(), 9);
    assert_eq!(s.counts().frame_header_bytes, 0);
    s.feed(&f[9..10]);
    assert_eq!(s.pending(), 0);
    assert_eq!(s.counts().frame_header_bytes, 9);
    s.feed(&f[10..]);
    assert_balanced(&s);
    assert_eq!(s.counts().data_untracked_bytes, 2);
}

// ---- property tests ----

/// Frames serialized while computing the counts a sniffer must report.
#[derive(Default)]
struct Gen {
    out: Vec<u8>,
    want: H2Counts,
    payloads: u64,
    data_padding: u64,
    first_headers: Option<u64>,
    /// Streams that must still hold gRPC state at the end.
    open: std::collections::BTreeSet<u32>,
}

impl Gen {
    fn push(&mut self, ty: u8, flags: u8, sid: u32, pad: Option<u8>, body: &[u8]) {
        let ft = FrameType::from_u8(ty);
        let lead: &[u8] = match ft {
            FrameType::Headers if flags & PRIORITY != 0 => &[0, 0, 0, 0, 16],
            FrameType::PushPromise => &[0, 0, 0, 2],
            _ => &[],
        };
        let paddable = matches!(
            ft,
            FrameType::Data | FrameType::Headers | FrameType::PushPromise
        );
        let bytes = match pad {
            Some(p) if paddable => padded(ty, flags, sid, lead, body, p),
            _ => {
                let mut p = lead.to_vec();
                p.extend_from_slice(body);
                let flags = if paddable { flags & !PADDED } else { flags };
                frame(ty, flags, sid, &p)
            }
        };
        if ft == FrameType::Headers && self.first_headers.is_none() {
            self.first_headers = Some(self.out.len() as u64);
        }
        let payload = (bytes.len() - HEADER_LEN) as u64;
        let padding = payload - (lead.len() + body.len()) as u64;
        let w = &mut self.want;
        w.frames[ft as usize].count += 1;
        w.frames[ft as usize].bytes += bytes.len() as u64;
        w.frame_header_bytes += 9;
        w.padding_bytes += padding;
        match ft {
            FrameType::Data => {
                w.data_payload_bytes += payload;
                self.data_padding += padding;
            }
            FrameType::Headers | FrameType::PushPromise | FrameType::Continuation => {
                w.hpack_bytes += body.len() as u64;
            }
            _ => {}
        }
        if ft == FrameType::Headers && flags & END_STREAM != 0 {
            w.headers_frames_with_end_stream += 1;
        }
        match ft {
            FrameType::Headers if flags & END_STREAM == 0 => {
                self.open.insert(sid);
            }
            FrameType::Data | FrameType::Headers if flags & END_STREAM != 0 => {
                self.open.remove(&sid);
            }
            FrameType::RstStream => {
                self.open.remove(&sid);
            }
            _ => {}
        }
        self.payloads += payload;
        self.out.extend(bytes);
    }
}

/// One unit of the generated connection; units are serialized whole, in an interleaved order.
#[derive(Debug, Clone)]
enum Unit {
    Control {
        ty: u8,
        flags: u8,
        sid: u32,
        len: usize,
    },
    Headers {
        sid: u32,
        flags: u8,
        pad: Option<u8>,
        block: usize,
        conts: Vec<usize>,
    },
    PushPromise {
        pad: Option<u8>,
        block: usize,
    },
    Data {
        sid: u32,
        flags: u8,
        pad: Option<u8>,
        body: Vec<u8>,
    },
}

#[derive(Debug, Clone)]
struct Call {
    msgs: Vec<usize>,
    cuts: Vec<usize>,
    pads: Vec<Option<u8>>,
    end: u8,
}

fn pad_strategy() -> impl Strategy<Value = Option<u8>> {
    prop_oneof![3 => Just(None), 1 => any::<u8>().prop_map(Some)]
}

fn other_strategy() -> impl Strategy<Value = Unit> {
    let control = (
        prop::sample::select(vec![2u8, 3, 4, 6, 7, 8, 0x0a, 0xFA]),
        any::<u8>(),
        100u32..108,
        0usize..2000,
    )
        .prop_map(|(ty, flags, sid, len)| Unit::Control {
            ty,
            flags,
            sid,
            len,
        });
    let headers = (
        100u32..108,
        prop::sample::select(vec![0u8, END_STREAM, PRIORITY, END_STREAM | PRIORITY]),
        pad_strategy(),
        0usize..2000,
        prop::collection::vec(0usize..300, 0..3),
    )
        .prop_map(|(sid, flags, pad, block, conts)| Unit::Headers {
            sid,
            flags,
            pad,
            block,
            conts,
        });
    let push =
        (pad_strategy(), 0usize..2000).prop_map(|(pad, block)| Unit::PushPromise { pad, block });
    let junk =
        (pad_strategy(), prop::collection::vec(any::<u8>(), 0..300)).prop_map(|(pad, body)| {
            Unit::Data {
                sid: 7,
                flags: 0,
                pad,
                body,
            }
        });
    prop_oneof![control, headers, push, junk]
}

fn call_strategy() -> impl Strategy<Value = Call> {
    (
        prop::collection::vec(prop_oneof![Just(0usize), 0usize..20, 0usize..2000], 0..4),
        prop::collection::vec(any::<usize>(), 0..6),
        prop::collection::vec(pad_strategy(), 0..6),
        0u8..3,
    )
        .prop_map(|(msgs, cuts, pads, end)| Call {
            msgs,
            cuts,
            pads,
            end,
        })
}

/// Turns a call into its units: HEADERS, DATA frames cut at random points, then END_STREAM.
fn call_units(sid: u32, call: &Call, want: &mut H2Counts) -> Vec<Unit> {
    let mut content = Vec::new();
    for &m in &call.msgs {
        content.extend(grpc(m));
        want.grpc_messages += 1;
        want.grpc_prefix_bytes += 5;
        want.grpc_message_bytes += m as u64;
    }
    let mut cuts: Vec<usize> = call.cuts.iter().map(|c| c % (content.len() + 1)).collect();
    cuts.push(content.len());
    cuts.sort_unstable();
    let mut units = vec![Unit::Headers {
        sid,
        flags: 0,
        pad: None,
        block: 3,
        conts: Vec::new(),
    }];
    let mut at = 0;
    for (i, cut) in cuts.into_iter().enumerate() {
        let last = cut == content.len();
        let flags = if last && call.end == 1 { END_STREAM } else { 0 };
        units.push(Unit::Data {
            sid,
            flags,
            pad: call.pads.get(i).copied().flatten(),
            body: content[at..cut].to_vec(),
        });
        at = cut;
        if last {
            break;
        }
    }
    if call.end == 2 {
        units.push(Unit::Headers {
            sid,
            flags: END_STREAM,
            pad: None,
            block: 2,
            conts: Vec::new(),
        });
    }
    units
}

fn serialize(g: &mut Gen, unit: &Unit) {
    match unit {
        Unit::Control {
            ty,
            flags,
            sid,
            len,
        } => {
            g.push(*ty, *flags, *sid, None, &vec![0xAB; *len]);
        }
        Unit::Headers {
            sid,
            flags,
            pad,
            block,
            conts,
        } => {
            let eh = if conts.is_empty() { END_HEADERS } else { 0 };
            g.push(1, flags | eh, *sid, *pad, &vec![0x82; *block]);
            for (i, c) in conts.iter().enumerate() {
                let eh = if i + 1 == conts.len() { END_HEADERS } else { 0 };
                g.push(9, eh, *sid, None, &vec![0x41; *c]);
            }
        }
        Unit::PushPromise { pad, block } => g.push(5, END_HEADERS, 1, *pad, &vec![0x84; *block]),
        Unit::Data {
            sid,
            flags,
            pad,
            body,
        } => g.push(0, *flags, *sid, *pad, body),
    }
}

/// Builds a connection direction and the counts it must produce.
fn build(preface: bool, others: &[Unit], calls: &[Call], order: &[u8]) -> Gen {
    let mut g = Gen::default();
    if preface {
        g.out.extend_from_slice(PREFACE);
        g.want.preface_bytes = 24;
    }
    let mut queues: Vec<std::collections::VecDeque<Unit>> = vec![others.iter().cloned().collect()];
    for (i, call) in calls.iter().enumerate() {
        let units = call_units(2 * i as u32 + 1, call, &mut g.want);
        queues.push(units.into());
    }
    for u in &queues[0] {
        if let Unit::Data { body, .. } = u {
            g.want.data_untracked_bytes += body.len() as u64;
        }
    }
    let mut k = 0;
    loop {
        let live: Vec<usize> = (0..queues.len())
            .filter(|&i| !queues[i].is_empty())
            .collect();
        if live.is_empty() {
            break;
        }
        let pick = order.get(k % order.len().max(1)).copied().unwrap_or(0) as usize;
        k += 1;
        let q = live[pick % live.len()];
        let unit = queues[q].pop_front().unwrap();
        serialize(&mut g, &unit);
    }
    g.want.setup_bytes = g.first_headers.unwrap_or(g.out.len() as u64);
    g
}

fn feed_split(expect: bool, input: &[u8], splits: &[usize]) -> H2Sniffer {
    feed_split_into(H2Sniffer::new(expect), input, splits)
}

fn feed_split_into(mut s: H2Sniffer, input: &[u8], splits: &[usize]) -> H2Sniffer {
    let mut cuts: Vec<usize> = splits.iter().map(|s| s % (input.len() + 1)).collect();
    cuts.push(input.len());
    cuts.sort_unstable();
    let mut at = 0;
    for c in cuts {
        s.feed(&input[at..c]);
        at = c;
    }
    s
}

proptest! {
    #[test]
    fn well_formed_frames_count_exactly(
        preface in any::<bool>(),
        others in prop::collection::vec(other_strategy(), 0..12),
        calls in prop::collection::vec(call_strategy(), 0..4),
        order in prop::collection::vec(any::<u8>(), 0..16),
        splits in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let g = build(preface, &others, &calls, &order);
        let (input, want, payloads, data_padding) = (&g.out, &g.want, g.payloads, g.data_padding);
        let whole = sniff(preface, input);
        let c = whole.counts();
        prop_assert_eq!(c, want);
        prop_assert_eq!(whole.fed(), c.preface_bytes + c.frame_header_bytes + payloads);
        let frame_bytes: u64 = c.frames.iter().map(|f| f.bytes).sum();
        prop_assert_eq!(frame_bytes, c.frame_header_bytes + payloads);
        prop_assert_eq!(
            c.data_payload_bytes,
            c.grpc_prefix_bytes + c.grpc_message_bytes + c.data_untracked_bytes + data_padding
        );
        prop_assert_eq!(whole.pending(), 0);
        let open: std::collections::BTreeSet<u32> = whole.streams.keys().copied().collect();
        prop_assert_eq!(&open, &g.open);

        let split = feed_split(preface, input, &splits);
        prop_assert_eq!(split.counts(), c);
        let mut bytewise = H2Sniffer::new(preface);
        for b in input {
            bytewise.feed(std::slice::from_ref(b));
            prop_assert!(bytewise.counts().setup_bytes <= bytewise.fed());
        }
        prop_assert_eq!(bytewise.counts(), c);

        // plain HTTP/2: the same frames, DATA all body, no gRPC layer
        let mut plain = H2Sniffer::plain(preface);
        plain.feed(input);
        let mut want_plain = *want;
        want_plain.grpc_prefix_bytes = 0;
        want_plain.grpc_message_bytes = 0;
        want_plain.grpc_messages = 0;
        want_plain.data_untracked_bytes = 0;
        prop_assert_eq!(plain.counts(), &want_plain);
        prop_assert!(plain.streams.is_empty());
        let split = feed_split_into(H2Sniffer::plain(preface), input, &splits);
        prop_assert_eq!(split.counts(), &want_plain);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        expect in any::<bool>(),
        input in prop::collection::vec(any::<u8>(), 0..2000),
        splits in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let whole = sniff(expect, &input);
        let split = feed_split(expect, &input, &splits);
        prop_assert_eq!(split.fed(), input.len() as u64);
        assert_balanced(&split);
        prop_assert_eq!(split.counts(), whole.counts());
    }

    #[test]
    fn arbitrary_frames_never_panic(
        expect in any::<bool>(),
        frames in prop::collection::vec(
            (0u8..12, any::<u8>(), 0u32..6, prop::collection::vec(any::<u8>(), 0..80)),
            0..24,
        ),
        truncate in any::<usize>(),
        splits in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let mut input = if expect { PREFACE.to_vec() } else { Vec::new() };
        for (ty, flags, sid, payload) in &frames {
            input.extend(frame(*ty, *flags, *sid, payload));
        }
        input.truncate(truncate % (input.len() + 1));
        let whole = sniff(expect, &input);
        let split = feed_split(expect, &input, &splits);
        assert_balanced(&split);
        prop_assert_eq!(split.counts(), whole.counts());
        prop_assert!(whole.streams.len() <= MAX_TRACKED_STREAMS);
    }
}
