//! The codec's counts against numbers computed by hand, and against a sniffer fed the same
//! bytes on generated exchanges written and read in arbitrary pieces.

use proptest::prelude::*;

use super::TallyLayers;
use crate::h2::client::{Closed, Config, Connection, Events};
use crate::h2::counts::{FrameCount, H2Counts};
use crate::h2::frame::{self, FrameType, Priority, Reason, Settings, flag};
use crate::h2::hpack::{self, Encoder, Field};
use crate::h2::sniff::H2Sniffer;

/// An events sink that keeps nothing: the counts are what these tests look at.
struct Ignore;

impl Events for Ignore {
    fn field(&mut self, _: usize, _: Field<'_>, _: bool) {}
    fn headers_done(&mut self, _: usize, _: bool, _: bool) {}
    fn data(&mut self, _: usize, _: &[u8], _: bool) {}
    fn closed(&mut self, _: usize, _: Closed) {}
}

fn config(layers: TallyLayers) -> Config {
    Config {
        layers,
        ..Config::default()
    }
}

fn request() -> [(&'static [u8], &'static [u8]); 6] {
    [
        (b":method", b"POST"),
        (b":scheme", b"http"),
        (b":path", b"/a"),
        (b":authority", b"127.0.0.1:2379"),
        (b"content-type", b"application/grpc"),
        (b"te", b"trailers"),
    ]
}

/// One gRPC message: the 5-byte prefix, then `len` bytes of `fill`.
fn message(len: usize, fill: u8) -> Vec<u8> {
    let mut m = vec![0];
    m.extend_from_slice(&(len as u32).to_be_bytes());
    m.resize(5 + len, fill);
    m
}

/// A header block of `fields`, from an encoder that never touches its table (so blocks can be
/// sent in any order).
fn block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    Encoder::new(hpack::Strategy::Literal).encode(
        fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
        &mut b,
    );
    b
}

fn frames(list: &[(FrameType, u64, u64)]) -> [FrameCount; 11] {
    let mut f = [FrameCount::default(); 11];
    for &(t, count, bytes) in list {
        f[t as usize] = FrameCount { count, bytes };
    }
    f
}

/// Writes `n` bytes of the connection's output, returning them.
fn write(c: &mut Connection, n: usize) -> Vec<u8> {
    let bytes = c.output()[..n].to_vec();
    c.advance(n);
    bytes
}

#[test]
fn a_connection_counts_what_it_wrote_and_read() {
    let mut c = Connection::new(config(TallyLayers::Grpc));
    // the preface (24) and our SETTINGS (enable_push, max_header_list_size: 9 + 12)
    assert_eq!(c.output().len(), 45);
    assert_eq!(c.counts_in(&[]), Some(H2Counts::default()));

    // a write that stops inside the SETTINGS frame header: the preface and 6 pending bytes
    write(&mut c, 30);
    let want = H2Counts {
        preface_bytes: 24,
        setup_bytes: 30,
        ..H2Counts::default()
    };
    assert_eq!(c.counts_out(), Some(want));
    write(&mut c, 15);
    let mut want = H2Counts {
        preface_bytes: 24,
        frames: frames(&[(FrameType::Settings, 1, 21)]),
        frame_header_bytes: 9,
        setup_bytes: 45,
        ..H2Counts::default()
    };
    assert_eq!(c.counts_out(), Some(want));

    // the server: SETTINGS (9), WINDOW_UPDATE (13), PING (17); we answer with two ACKs
    let mut server = Vec::new();
    frame::encode_settings(&mut server, &Settings::default());
    frame::encode_window_update(&mut server, 0, 1000);
    frame::encode_ping(&mut server, false, [7; 8]);
    assert_eq!(c.recv(&server, &mut Ignore), Ok(39));
    let mut want_in = H2Counts {
        frames: frames(&[
            (FrameType::Settings, 1, 9),
            (FrameType::WindowUpdate, 1, 13),
            (FrameType::Ping, 1, 17),
        ]),
        frame_header_bytes: 27,
        setup_bytes: 39,
        ..H2Counts::default()
    };
    assert_eq!(c.counts_in(&[]), Some(want_in));
    // queued is not written: the counts out stand
    assert_eq!(c.output().len(), 9 + 17);
    assert_eq!(c.counts_out(), Some(want));

    // a call: HEADERS (9 + h) and one DATA frame of a 3-byte message (9 + 8)
    let id = c.open(0, request(), false).unwrap();
    c.send_data(id, &message(3, b'a'), true);
    let h = u64::from(u32::from_be_bytes([
        0,
        c.output()[26],
        c.output()[27],
        c.output()[28],
    ]));
    assert_eq!(c.output().len() as u64, 26 + 9 + h + 17);
    // written up to 3 bytes into the DATA payload: the prefix counted as it went
    let upto = 26 + 9 + h as usize + 9 + 3;
    write(&mut c, upto);
    want.frames = frames(&[
        (FrameType::Settings, 2, 30),
        (FrameType::Ping, 1, 17),
        (FrameType::Headers, 1, 9 + h),
        (FrameType::Data, 1, 12),
    ]);
    want.frame_header_bytes = 45;
    want.hpack_bytes = h;
    want.data_payload_bytes = 3;
    want.grpc_prefix_bytes = 3;
    want.setup_bytes = 45 + 26;
    assert_eq!(c.counts_out(), Some(want));
    let rest = c.output().len();
    write(&mut c, rest);
    want.frames[FrameType::Data as usize].bytes = 17;
    want.data_payload_bytes = 8;
    want.grpc_prefix_bytes = 5;
    want.grpc_message_bytes = 3;
    want.grpc_messages = 1;
    assert_eq!(c.counts_out(), Some(want));

    // the response: a padded HEADERS with priority fields (pad 3) continued by CONTINUATION;
    // a 6-byte message across a padded DATA frame (pad 4) and an unpadded one; a
    // WINDOW_UPDATE; the trailers; then 12 bytes of a PING frame
    let head = block(&[(":status", "200"), ("content-type", "application/grpc")]);
    let trailers = block(&[("grpc-status", "0")]);
    let priority = Priority {
        dependency: 0,
        exclusive: false,
        weight: 15,
    };
    let mut server = Vec::new();
    frame::encode_headers_with(&mut server, id, &head[..2], 0, Some(priority), Some(3));
    frame::encode_continuation(&mut server, id, &head[2..], true);
    let msg = message(6, b'x');
    frame::encode_data_padded(&mut server, id, &msg[..7], false, 4);
    frame::encode_data(&mut server, id, &msg[7..], false);
    frame::encode_window_update(&mut server, id, 100);
    frame::encode_headers(&mut server, id, &trailers, true, 16_384);
    let whole = server.len();
    frame::encode_ping(&mut server, false, [9; 8]);
    server.truncate(whole + 12);
    assert_eq!(c.recv(&server, &mut Ignore), Ok(whole));
    let (b, t) = (head.len() as u64, trailers.len() as u64);
    want_in.frames = frames(&[
        (FrameType::Settings, 1, 9),
        (FrameType::WindowUpdate, 2, 26),
        (FrameType::Ping, 2, 17 + 12),
        (FrameType::Headers, 2, (9 + 1 + 5 + 2 + 3) + (9 + t)),
        (FrameType::Continuation, 1, 9 + b - 2),
        (FrameType::Data, 2, (9 + 1 + 7 + 4) + (9 + 4)),
    ]);
    want_in.frame_header_bytes = 9 * 10;
    want_in.hpack_bytes = b + t;
    want_in.data_payload_bytes = 12 + 4;
    want_in.padding_bytes = (1 + 3) + (1 + 4);
    want_in.grpc_prefix_bytes = 5;
    want_in.grpc_message_bytes = 6;
    want_in.grpc_messages = 1;
    want_in.headers_frames_with_end_stream = 1;
    let got = c.counts_in(&server[whole..]).unwrap();
    assert_eq!(got, want_in);
    // every byte read is in a layer: the partial PING's 12 bytes included
    let frame_bytes: u64 = got.frames.iter().map(|f| f.bytes).sum();
    assert_eq!(frame_bytes, 39 + server.len() as u64);
    // without the partial frame, the whole frames only
    let mut whole_only = want_in;
    whole_only.frames[FrameType::Ping as usize] = FrameCount {
        count: 1,
        bytes: 17,
    };
    whole_only.frame_header_bytes -= 9;
    assert_eq!(c.counts_in(&[]), Some(whole_only));

    // plain HTTP/2 counts the same bytes without a gRPC layer
    let mut plain = Connection::new(config(TallyLayers::H2));
    let n = plain.output().len();
    write(&mut plain, n);
    let mut settings = Vec::new();
    frame::encode_settings(&mut settings, &Settings::default());
    plain.recv(&settings, &mut Ignore).unwrap();
    let id = plain.open(0, request(), false).unwrap();
    plain.send_data(id, &message(3, b'a'), true);
    let n = plain.output().len();
    write(&mut plain, n);
    let out = plain.counts_out().unwrap();
    assert_eq!(out.data_payload_bytes, 8);
    assert_eq!(
        (
            out.grpc_prefix_bytes,
            out.grpc_messages,
            out.data_untracked_bytes
        ),
        (0, 0, 0)
    );
    // and a connection without a ledger counts nothing
    let off = Connection::new(Config::default());
    assert_eq!((off.counts_out(), off.counts_in(&[])), (None, None));
}

#[test]
fn data_on_a_stream_the_client_reset_is_untracked() {
    let mut c = Connection::new(config(TallyLayers::Grpc));
    let mut server = Vec::new();
    frame::encode_settings(&mut server, &Settings::default());
    c.recv(&server, &mut Ignore).unwrap();
    let id = c.open(0, request(), true).unwrap();
    c.reset(id, Reason::CANCEL);
    let n = c.output().len();
    write(&mut c, n);
    // the server answered before our RST_STREAM reached it
    let start = server.len();
    frame::encode_headers(
        &mut server,
        id,
        &block(&[(":status", "200")]),
        false,
        16_384,
    );
    frame::encode_data(&mut server, id, &message(10, b'z'), true);
    c.recv(&server[start..], &mut Ignore).unwrap();
    let codec = c.counts_in(&[]).unwrap();
    let sniffer = sniffed(&server, false, true);
    // the frames are the same; the connection no longer follows the stream's messages
    assert_eq!(codec.frames, sniffer.frames);
    assert_eq!(codec.data_payload_bytes, 15);
    assert_eq!((codec.grpc_messages, codec.data_untracked_bytes), (0, 15));
    assert_eq!(
        (sniffer.grpc_messages, sniffer.data_untracked_bytes),
        (1, 0)
    );
}

/// The counts of `bytes` as a sniffer sees them.
fn sniffed(bytes: &[u8], preface: bool, grpc: bool) -> H2Counts {
    let mut s = if grpc {
        H2Sniffer::new(preface)
    } else {
        H2Sniffer::plain(preface)
    };
    s.feed(bytes);
    *s.counts()
}

// ---- the codec against a sniffer fed the same bytes ----

/// One call of a generated exchange: the request's messages, and the server's answer.
#[derive(Debug, Clone)]
struct Call {
    request: Vec<usize>,
    response: Vec<usize>,
    /// where the response's DATA content is cut into frames
    cuts: Vec<usize>,
    /// each DATA frame's padding
    pads: Vec<Option<u8>>,
    head_pad: Option<u8>,
    head_priority: bool,
    /// the head's block split into HEADERS + CONTINUATION at this byte
    head_split: Option<usize>,
    /// grpc-status trailers, or END_STREAM on the last DATA frame
    trailers: bool,
    /// the server opens the stream's window (needed when its SETTINGS made it small)
    release: bool,
}

fn call_strategy() -> impl Strategy<Value = Call> {
    let sizes = prop::collection::vec(prop_oneof![0usize..20, 0usize..3000, 0usize..12_000], 0..3);
    (
        (sizes.clone(), sizes),
        prop::collection::vec(any::<usize>(), 0..5),
        prop::collection::vec(
            prop_oneof![3 => Just(None), 1 => any::<u8>().prop_map(Some)],
            0..5,
        ),
        (
            prop::option::of(any::<u8>()),
            any::<bool>(),
            prop::option::of(any::<usize>()),
        ),
        (any::<bool>(), any::<bool>()),
    )
        .prop_map(
            |(
                (request, response),
                cuts,
                pads,
                (head_pad, head_priority, head_split),
                (trailers, release),
            )| Call {
                request,
                response,
                cuts,
                pads,
                head_pad,
                head_priority,
                head_split,
                trailers,
                release,
            },
        )
}

/// A unit of the server's bytes; units are serialized whole, interleaved.
fn call_units(id: u32, call: &Call) -> Vec<Vec<u8>> {
    let mut units = Vec::new();
    let head = block(&[(":status", "200"), ("content-type", "application/grpc")]);
    let mut u = Vec::new();
    let priority = call.head_priority.then_some(Priority {
        dependency: 0,
        exclusive: false,
        weight: 7,
    });
    match call.head_split.map(|s| s % (head.len() + 1)) {
        Some(at) => {
            frame::encode_headers_with(&mut u, id, &head[..at], 0, priority, call.head_pad);
            frame::encode_continuation(&mut u, id, &head[at..], true);
        }
        None => frame::encode_headers_with(
            &mut u,
            id,
            &head,
            flag::END_HEADERS,
            priority,
            call.head_pad,
        ),
    }
    units.push(u);
    if call.release {
        let mut u = Vec::new();
        frame::encode_window_update(&mut u, id, 1 << 20);
        units.push(u);
    }
    let content: Vec<u8> = call
        .response
        .iter()
        .enumerate()
        .flat_map(|(i, &n)| message(n, i as u8))
        .collect();
    let mut cuts: Vec<usize> = call.cuts.iter().map(|c| c % (content.len() + 1)).collect();
    // frames within our SETTINGS_MAX_FRAME_SIZE (16,384), padding included
    cuts.extend((16_000..content.len()).step_by(16_000));
    cuts.push(content.len());
    cuts.sort_unstable();
    cuts.dedup();
    let mut at = 0;
    for (i, &cut) in cuts.iter().enumerate() {
        let last = cut == content.len();
        let end = last && !call.trailers;
        let mut u = Vec::new();
        match call.pads.get(i).copied().flatten() {
            Some(pad) => frame::encode_data_padded(&mut u, id, &content[at..cut], end, pad),
            None => frame::encode_data(&mut u, id, &content[at..cut], end),
        }
        units.push(u);
        at = cut;
    }
    if call.trailers {
        let mut u = Vec::new();
        frame::encode_headers(&mut u, id, &block(&[("grpc-status", "0")]), true, 16_384);
        units.push(u);
    }
    units
}

/// Control frames the server may send at any point.
fn control_unit(kind: u8) -> Vec<u8> {
    let mut u = Vec::new();
    match kind % 5 {
        0 => frame::encode_ping(&mut u, false, [kind; 8]),
        1 => frame::encode_window_update(&mut u, 0, 1 << 20),
        2 => frame::encode_settings(&mut u, &Settings::default()),
        3 => frame::encode_priority(
            &mut u,
            1,
            Priority {
                dependency: 0,
                exclusive: false,
                weight: 1,
            },
        ),
        _ => frame::encode_raw(&mut u, 0xFA, 0, 0, &[kind; 7]),
    }
    u
}

/// The server's bytes of one exchange: its SETTINGS, then the units of the calls and the
/// control frames interleaved by `order`. With `refused`, one more unit is a DATA frame longer
/// than our SETTINGS_MAX_FRAME_SIZE: the connection fails on its header, and it and what
/// follows are what it refuses.
fn server_bytes(
    window: Option<u32>,
    calls: &[Call],
    controls: &[u8],
    order: &[u8],
    refused: bool,
) -> (Vec<u8>, Vec<u8>) {
    let mut settings = Vec::new();
    frame::encode_settings(
        &mut settings,
        &Settings {
            initial_window_size: window,
            ..Settings::default()
        },
    );
    let mut queues: Vec<std::collections::VecDeque<Vec<u8>>> =
        vec![controls.iter().map(|&k| control_unit(k)).collect()];
    for (i, call) in calls.iter().enumerate() {
        queues.push(call_units(2 * i as u32 + 1, call).into());
    }
    if refused {
        let mut u = Vec::new();
        frame::encode_raw(&mut u, 0, 0, 1, &message(16_380, 1));
        queues.push([u].into());
    }
    let mut rest = Vec::new();
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
        if let Some(unit) = queues[live[pick % live.len()]].pop_front() {
            rest.extend(unit);
        }
    }
    (settings, rest)
}

/// Runs a generated exchange through a counting connection, its output written and the
/// server's bytes read in the given pieces, and checks its counts against sniffers fed the
/// bytes written and the bytes read, at every step.
#[allow(clippy::too_many_arguments)]
fn exchange(
    grpc: bool,
    window: Option<u32>,
    calls: &[Call],
    controls: &[u8],
    order: &[u8],
    cut: Option<usize>,
    refused: bool,
    reads: &[usize],
    writes: &[usize],
) -> Result<(), TestCaseError> {
    let layers = if grpc {
        TallyLayers::Grpc
    } else {
        TallyLayers::H2
    };
    let new_sniffer = |preface| {
        if grpc {
            H2Sniffer::new(preface)
        } else {
            H2Sniffer::plain(preface)
        }
    };
    let mut c = Connection::new(config(layers));
    let (mut sniff_out, mut sniff_in) = (new_sniffer(true), new_sniffer(false));
    let (settings, mut rest) = server_bytes(window, calls, controls, order, refused);
    if let Some(cut) = cut {
        rest.truncate(cut % (rest.len() + 1));
    }
    let mut writes = writes.iter().cycle();
    // a write takes everything queued (`usize::MAX`) or stops anywhere in it
    let mut step = |c: &mut Connection, sniff_out: &mut H2Sniffer| -> Result<(), TestCaseError> {
        let n = match writes.next().copied().unwrap_or(usize::MAX) {
            usize::MAX => c.output().len(),
            n => n % (c.output().len() + 1),
        };
        sniff_out.feed(&write(c, n));
        prop_assert_eq!(c.counts_out(), Some(*sniff_out.counts()));
        Ok(())
    };

    prop_assert_eq!(c.recv(&settings, &mut Ignore), Ok(settings.len()));
    sniff_in.feed(&settings);
    step(&mut c, &mut sniff_out)?;
    for (i, call) in calls.iter().enumerate() {
        let id = c
            .open(i, request(), false)
            .expect("within the stream limit");
        let body: Vec<u8> = call
            .request
            .iter()
            .flat_map(|&n| message(n, b'q'))
            .collect();
        c.send_data(id, &body, true);
        step(&mut c, &mut sniff_out)?;
    }

    let mut buf = Vec::new();
    let mut at = 0;
    let mut reads = reads.iter().cycle();
    while at < rest.len() {
        let n = (reads.next().copied().unwrap_or(usize::MAX) % 20_000 + 1).min(rest.len() - at);
        buf.extend_from_slice(&rest[at..at + n]);
        sniff_in.feed(&rest[at..at + n]);
        at += n;
        match c.recv(&buf, &mut Ignore) {
            Ok(used) => {
                buf.drain(..used);
            }
            Err(_) => {
                prop_assert!(refused, "an exchange without a refused frame failed");
                buf.clear();
                prop_assert_eq!(c.counts_in(&buf), Some(*sniff_in.counts()));
                step(&mut c, &mut sniff_out)?;
                break;
            }
        }
        prop_assert_eq!(c.counts_in(&buf), Some(*sniff_in.counts()));
        step(&mut c, &mut sniff_out)?;
    }
    prop_assert_eq!(c.counts_in(&buf), Some(*sniff_in.counts()));
    // at the end everything queued is written
    let n = c.output().len();
    sniff_out.feed(&write(&mut c, n));
    prop_assert_eq!(c.counts_out(), Some(*sniff_out.counts()));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn the_codec_counts_what_a_sniffer_counts(
        grpc in prop::bool::weighted(0.8),
        window in prop::option::weighted(0.3, 1u32..2000),
        calls in prop::collection::vec(call_strategy(), 1..4),
        controls in prop::collection::vec(any::<u8>(), 0..6),
        order in prop::collection::vec(any::<u8>(), 0..24),
        cut in prop::option::of(any::<usize>()),
        refused in prop::bool::weighted(0.2),
        reads in prop::collection::vec(any::<usize>(), 1..8),
        writes in prop::collection::vec(prop_oneof![Just(usize::MAX), any::<usize>()], 1..8),
    ) {
        exchange(grpc, window, &calls, &controls, &order, cut, refused, &reads, &writes)?;
    }
}

#[test]
fn a_recorded_exchange_counts_the_same_as_a_sniffer() {
    // padding, priority fields, CONTINUATION, PING, WINDOW_UPDATE, SETTINGS, a message
    // split across DATA frames, a request waiting for window, and an incomplete frame at
    // the end; read and written in small pieces
    let call = Call {
        request: vec![70, 40_000],
        response: vec![10, 3000, 0],
        cuts: vec![3, 7, 2000],
        pads: vec![Some(5), None, Some(0), Some(200)],
        head_pad: Some(2),
        head_priority: true,
        head_split: Some(3),
        trailers: true,
        release: true,
    };
    let short = Call {
        request: vec![5],
        response: vec![1],
        cuts: vec![],
        pads: vec![],
        head_pad: None,
        head_priority: false,
        head_split: None,
        trailers: false,
        release: false,
    };
    let calls = [call, short];
    const ALL: usize = usize::MAX;
    for (cut, writes) in [(None, [ALL, 7, 100, ALL]), (Some(5_000), [1, ALL, 4096, 9])] {
        exchange(
            true,
            Some(1000),
            &calls,
            &[0, 1, 2, 3, 4],
            &[0, 1, 2, 1, 0, 2],
            cut,
            false,
            &[1, 9, 10, 333],
            &writes,
        )
        .unwrap();
    }
}
