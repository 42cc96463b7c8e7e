use super::*;
use crate::h2::frame::flag;

/// What the connection handed over, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Ev {
    Field(usize, String, String, bool),
    Done(usize, bool, bool),
    Data(usize, Vec<u8>, bool),
    Closed(usize, Closed),
    Pong([u8; 8]),
    GoAway(u32, Reason),
}

#[derive(Default)]
struct Log(Vec<Ev>);

impl Events for Log {
    fn field(&mut self, token: usize, f: Field<'_>, trailers: bool) {
        let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        self.0
            .push(Ev::Field(token, s(f.name), s(f.value), trailers));
    }
    fn headers_done(&mut self, token: usize, trailers: bool, end_stream: bool) {
        self.0.push(Ev::Done(token, trailers, end_stream));
    }
    fn data(&mut self, token: usize, data: &[u8], end_stream: bool) {
        self.0.push(Ev::Data(token, data.to_vec(), end_stream));
    }
    fn closed(&mut self, token: usize, why: Closed) {
        self.0.push(Ev::Closed(token, why));
    }
    fn pong(&mut self, data: [u8; 8]) {
        self.0.push(Ev::Pong(data));
    }
    fn go_away(&mut self, last: u32, reason: Reason, _debug: &[u8]) {
        self.0.push(Ev::GoAway(last, reason));
    }
}

/// The server side of the tests: frames built by hand.
struct Peer {
    enc: Encoder,
    out: Vec<u8>,
}

impl Peer {
    fn new() -> Peer {
        Peer {
            enc: Encoder::new(Strategy::Index),
            out: Vec::new(),
        }
    }
    fn settings(&mut self, s: Settings) -> &mut Self {
        frame::encode_settings(&mut self.out, &s);
        self
    }
    fn block(&mut self, fields: &[(&str, &str)]) -> Vec<u8> {
        let mut block = Vec::new();
        self.enc.encode(
            fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
            &mut block,
        );
        block
    }
    fn headers(&mut self, stream: u32, fields: &[(&str, &str)], end: bool) -> &mut Self {
        let block = self.block(fields);
        frame::encode_headers(&mut self.out, stream, &block, end, 16_384);
        self
    }
    /// DATA in frames of at most 16,384 bytes, END_STREAM on the last.
    fn data(&mut self, stream: u32, data: &[u8], end: bool) -> &mut Self {
        let mut chunks = data.chunks(16_384).peekable();
        if data.is_empty() {
            frame::encode_data(&mut self.out, stream, data, end);
        }
        while let Some(chunk) = chunks.next() {
            frame::encode_data(&mut self.out, stream, chunk, end && chunks.peek().is_none());
        }
        self
    }
    /// A whole gRPC-style response: head, one DATA, trailers.
    fn response(&mut self, stream: u32, body: &[u8]) -> &mut Self {
        self.headers(
            stream,
            &[(":status", "200"), ("content-type", "application/grpc")],
            false,
        )
        .data(stream, body, false)
        .headers(stream, &[("grpc-status", "0")], true)
    }
    fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.out)
    }
}

/// A connection that has seen the server's (empty) SETTINGS, its own output written.
fn ready(cfg: Config) -> Connection {
    let mut c = Connection::new(cfg);
    let mut p = Peer::new();
    let bytes = p.settings(Settings::default()).take();
    assert_eq!(c.recv(&bytes, &mut Log::default()), Ok(bytes.len()));
    let n = c.output().len();
    c.advance(n);
    c
}

fn request(path: &str) -> [(&[u8], &[u8]); 6] {
    [
        (b":method", b"POST"),
        (b":scheme", b"http"),
        (b":path", path.as_bytes()),
        (b":authority", b"127.0.0.1:2379"),
        (b"content-type", b"application/grpc"),
        (b"te", b"trailers"),
    ]
}

/// The frames of the connection's output (after the preface, if there), drained.
fn frames_out(c: &mut Connection) -> Vec<(u8, u8, u32, Vec<u8>)> {
    let mut out = c.output().to_vec();
    c.advance(out.len());
    if out.starts_with(frame::PREFACE) {
        out.drain(..frame::PREFACE.len());
    }
    let mut frames = Vec::new();
    let mut at = 0;
    while at < out.len() {
        let head = frame::Head::parse(out[at..at + 9].try_into().unwrap());
        let payload = out[at + 9..at + 9 + head.len as usize].to_vec();
        frames.push((head.kind, head.flags, head.stream, payload));
        at += 9 + head.len as usize;
    }
    frames
}

fn feed(c: &mut Connection, bytes: &[u8]) -> (Result<usize, Error>, Vec<Ev>) {
    let mut log = Log::default();
    let r = c.recv(bytes, &mut log);
    (r, log.0)
}

#[test]
fn the_preface_announces_our_settings_and_the_connection_window() {
    let mut c = Connection::new(Config {
        initial_window_size: 1 << 20,
        initial_conn_window_size: 4 << 20,
        ..Config::default()
    });
    assert!(c.output().starts_with(frame::PREFACE));
    let frames = frames_out(&mut c);
    assert_eq!(frames.len(), 2);
    let (kind, flags, stream, payload) = &frames[0];
    assert_eq!((*kind, *flags, *stream), (frame::kind::SETTINGS, 0, 0));
    let mut settings = Vec::new();
    frame::encode_settings(
        &mut settings,
        &Settings {
            enable_push: Some(false),
            initial_window_size: Some(1 << 20),
            max_header_list_size: Some(64 << 10),
            ..Settings::default()
        },
    );
    assert_eq!(payload[..], settings[9..]);
    assert_eq!(frames[1].0, frame::kind::WINDOW_UPDATE);
    assert_eq!(frames[1].3, ((4u32 << 20) - 65_535).to_be_bytes());
}

#[test]
fn streams_wait_for_the_servers_settings_which_are_acknowledged() {
    let mut c = Connection::new(Config::default());
    assert_eq!(c.open(0, request("/a"), true), Err(OpenError::NotReady));
    let mut p = Peer::new();
    let bytes = p
        .settings(Settings {
            max_concurrent_streams: Some(100),
            ..Settings::default()
        })
        .take();
    let _ = frames_out(&mut c);
    assert_eq!(feed(&mut c, &bytes), (Ok(bytes.len()), vec![]));
    assert!(c.is_ready());
    assert_eq!(c.max_streams(), 100);
    let frames = frames_out(&mut c);
    assert_eq!(frames, vec![(frame::kind::SETTINGS, flag::ACK, 0, vec![])]);
    let ack = {
        let mut b = Vec::new();
        frame::encode_settings_ack(&mut b);
        b
    };
    assert!(!c.settings_acked());
    feed(&mut c, &ack).0.unwrap();
    assert!(c.settings_acked());
    assert_eq!(
        feed(&mut c, &ack).0,
        Err(protocol("SETTINGS ACK without SETTINGS"))
    );
}

#[test]
fn a_unary_call_goes_out_and_its_response_comes_back_in_order() {
    let mut c = ready(Config::default());
    let id = c
        .open(7, request("/grpc_echo.v1.EchoService/Echo"), false)
        .unwrap();
    assert_eq!(id, 1);
    c.send_data(id, b"\0\0\0\0\x03abc", true);
    let frames = frames_out(&mut c);
    assert_eq!(frames.len(), 2);
    assert_eq!(
        (frames[0].0, frames[0].1, frames[0].2),
        (frame::kind::HEADERS, flag::END_HEADERS, 1)
    );
    let mut dec = Decoder::new(4096);
    let mut fields = Vec::new();
    dec.decode(&frames[0].3, 1 << 16, |f| {
        fields.push((f.name.to_vec(), f.value.to_vec()))
    })
    .unwrap();
    let want: Vec<_> = request("/grpc_echo.v1.EchoService/Echo")
        .iter()
        .map(|(n, v)| (n.to_vec(), v.to_vec()))
        .collect();
    assert_eq!(fields, want);
    assert_eq!(
        frames[1],
        (
            frame::kind::DATA,
            flag::END_STREAM,
            1,
            b"\0\0\0\0\x03abc".to_vec()
        )
    );

    let mut p = Peer::new();
    let bytes = p.response(1, b"\0\0\0\0\x01x").take();
    let (r, evs) = feed(&mut c, &bytes);
    assert_eq!(r, Ok(bytes.len()));
    let f = |n: &str, v: &str, t| Ev::Field(7, n.into(), v.into(), t);
    assert_eq!(
        evs,
        vec![
            f(":status", "200", false),
            f("content-type", "application/grpc", false),
            Ev::Done(7, false, false),
            Ev::Data(7, b"\0\0\0\0\x01x".to_vec(), false),
            f("grpc-status", "0", true),
            Ev::Done(7, true, true),
        ]
    );
    assert_eq!(c.active_streams(), 0);
}

#[test]
fn the_index_strategy_sends_repeated_headers_as_one_byte_each() {
    let mut sizes = Vec::new();
    for strategy in [Strategy::Index, Strategy::Literal, Strategy::NeverIndexed] {
        let mut c = ready(Config {
            hpack: strategy,
            ..Config::default()
        });
        let mut per_request = Vec::new();
        for _ in 0..3 {
            c.open(0, request("/grpc_echo.v1.EchoService/Echo"), true)
                .unwrap();
            let frames = frames_out(&mut c);
            per_request.push(frames[0].3.len());
        }
        sizes.push((strategy, per_request));
    }
    let index = &sizes[0].1;
    assert!(index[0] > 20, "{sizes:?}");
    assert_eq!(index[1], 6, "six fields, six indexed bytes: {sizes:?}");
    assert_eq!(index[2], 6);
    for (_, literal) in &sizes[1..] {
        assert_eq!(literal[0], literal[1], "{sizes:?}");
        assert!(literal[1] > 20, "{sizes:?}");
    }
}

#[test]
fn data_beyond_the_peers_windows_waits_and_goes_out_when_they_open() {
    let mut c = ready(Config::default());
    let id = c.open(0, request("/upload"), false).unwrap();
    let body = vec![7u8; 100_000];
    c.send_data(id, &body, true);
    let frames = frames_out(&mut c);
    let sent: usize = frames
        .iter()
        .filter(|f| f.0 == frame::kind::DATA)
        .map(|f| f.3.len())
        .sum();
    assert_eq!(sent, 65_535);
    assert!(frames.iter().all(|f| f.1 & flag::END_STREAM == 0));
    assert!(
        frames
            .iter()
            .filter(|f| f.0 == frame::kind::DATA)
            .all(|f| f.3.len() <= 16_384)
    );

    // the connection opens, the stream not yet: nothing moves
    let mut b = Vec::new();
    frame::encode_window_update(&mut b, 0, 1 << 20);
    feed(&mut c, &b).0.unwrap();
    assert!(frames_out(&mut c).is_empty());
    // the stream opens by less than what is left
    b.clear();
    frame::encode_window_update(&mut b, id, 20_000);
    feed(&mut c, &b).0.unwrap();
    let frames = frames_out(&mut c);
    let n: usize = frames.iter().map(|f| f.3.len()).sum();
    assert_eq!(n, 20_000);
    assert!(frames.iter().all(|f| f.1 & flag::END_STREAM == 0));
    b.clear();
    frame::encode_window_update(&mut b, id, 20_000);
    feed(&mut c, &b).0.unwrap();
    let frames = frames_out(&mut c);
    let n: usize = frames.iter().map(|f| f.3.len()).sum();
    assert_eq!(n, 100_000 - 85_535);
    assert_eq!(frames.last().unwrap().1, flag::END_STREAM);
}

#[test]
fn a_larger_initial_window_from_settings_releases_waiting_data() {
    let mut c = ready(Config::default());
    let mut b = Vec::new();
    frame::encode_window_update(&mut b, 0, 1 << 20);
    feed(&mut c, &b).0.unwrap();
    let id = c.open(0, request("/upload"), false).unwrap();
    c.send_data(id, &[1u8; 70_000], true);
    let _ = frames_out(&mut c);
    let mut p = Peer::new();
    let bytes = p
        .settings(Settings {
            initial_window_size: Some(100_000),
            ..Settings::default()
        })
        .take();
    feed(&mut c, &bytes).0.unwrap();
    let frames = frames_out(&mut c);
    let data: usize = frames
        .iter()
        .filter(|f| f.0 == frame::kind::DATA)
        .map(|f| f.3.len())
        .sum();
    assert_eq!(data, 70_000 - 65_535);
    assert_eq!(frames.last().unwrap().0, frame::kind::SETTINGS, "the ACK");
}

#[test]
fn received_data_is_replenished_once_half_a_window_is_used() {
    let mut c = ready(Config::default());
    let id = c.open(3, request("/download"), true).unwrap();
    let _ = frames_out(&mut c);
    let mut p = Peer::new();
    let bytes = p
        .headers(id, &[(":status", "200")], false)
        .data(id, &[0; 16_000], false)
        .data(id, &[0; 16_000], false)
        .take();
    feed(&mut c, &bytes).0.unwrap();
    assert!(frames_out(&mut c).is_empty(), "32,000 < half of 65,535");
    let bytes = p.data(id, &[0; 1_000], false).take();
    feed(&mut c, &bytes).0.unwrap();
    let frames = frames_out(&mut c);
    assert_eq!(
        frames,
        vec![
            (
                frame::kind::WINDOW_UPDATE,
                0,
                0,
                33_000u32.to_be_bytes().to_vec()
            ),
            (
                frame::kind::WINDOW_UPDATE,
                0,
                id,
                33_000u32.to_be_bytes().to_vec()
            ),
        ]
    );
    // an ended stream gets no update, the connection does
    let bytes = p
        .data(id, &[0; 16_384], false)
        .data(id, &[0; 16_384], true)
        .take();
    let (r, evs) = feed(&mut c, &bytes);
    r.unwrap();
    assert!(matches!(evs.last(), Some(Ev::Data(3, _, true))));
    let frames = frames_out(&mut c);
    assert_eq!(frames.len(), 1);
    assert_eq!(frames[0].2, 0);
    assert_eq!(c.active_streams(), 0);
}

#[test]
fn data_beyond_a_window_is_a_flow_control_error() {
    let mut c = ready(Config {
        initial_window_size: 1000,
        ..Config::default()
    });
    let id = c.open(1, request("/x"), true).unwrap();
    let _ = frames_out(&mut c);
    let mut p = Peer::new();
    let bytes = p
        .headers(id, &[(":status", "200")], false)
        .data(id, &[0; 1001], false)
        .take();
    let (r, evs) = feed(&mut c, &bytes);
    r.unwrap();
    assert_eq!(
        evs.last(),
        Some(&Ev::Closed(
            1,
            Closed::Error(Reason::FLOW_CONTROL_ERROR, "DATA beyond the stream window")
        ))
    );
    let frames = frames_out(&mut c);
    assert_eq!(frames[0].0, frame::kind::RST_STREAM);
    assert_eq!(frames[0].3, Reason::FLOW_CONTROL_ERROR.0.to_be_bytes());

    // the connection window: 65,535 by default, whatever the streams say; one frame larger
    let mut c = ready(Config {
        initial_window_size: 1 << 20,
        max_frame_size: 100_000,
        ..Config::default()
    });
    let id = c.open(1, request("/x"), true).unwrap();
    let mut p = Peer::new();
    let mut bytes = p.headers(id, &[(":status", "200")], false).take();
    frame::encode_data(&mut bytes, id, &[0; 65_536], false);
    let (r, _) = feed(&mut c, &bytes);
    assert_eq!(r.unwrap_err().reason, Reason::FLOW_CONTROL_ERROR);
    let frames = frames_out(&mut c);
    assert_eq!(frames.last().unwrap().0, frame::kind::GOAWAY);
}

#[test]
fn window_updates_past_two_to_the_31_are_flow_control_errors() {
    let mut c = ready(Config::default());
    let id = c.open(5, request("/x"), true).unwrap();
    let mut b = Vec::new();
    frame::encode_window_update(&mut b, id, frame::MAX_WINDOW);
    let (r, evs) = feed(&mut c, &b);
    r.unwrap();
    assert_eq!(
        evs,
        vec![Ev::Closed(
            5,
            Closed::Error(Reason::FLOW_CONTROL_ERROR, "stream window above 2^31-1")
        )]
    );
    b.clear();
    frame::encode_window_update(&mut b, 0, frame::MAX_WINDOW);
    assert_eq!(
        feed(&mut c, &b).0.unwrap_err().reason,
        Reason::FLOW_CONTROL_ERROR
    );
    // and a connection error is final
    assert!(c.is_closing());
    assert!(c.recv(&[], &mut Log::default()).is_err());
    assert_eq!(c.open(0, request("/x"), true), Err(OpenError::Closing));

    let mut c = ready(Config::default());
    c.open(5, request("/x"), true).unwrap();
    let mut b = Vec::new();
    frame::encode_window_update(&mut b, 1, frame::MAX_WINDOW - 65_535);
    feed(&mut c, &b).0.unwrap();
    let mut p = Peer::new();
    let bytes = p
        .settings(Settings {
            initial_window_size: Some(65_536),
            ..Settings::default()
        })
        .take();
    assert_eq!(
        feed(&mut c, &bytes).0.unwrap_err().reason,
        Reason::FLOW_CONTROL_ERROR
    );
}

#[test]
fn goaway_refuses_the_streams_above_its_last_id_and_ends_new_ones() {
    let mut c = ready(Config::default());
    for token in 0..3 {
        c.open(token, request("/x"), true).unwrap();
    }
    let mut b = Vec::new();
    frame::encode_goaway(&mut b, 1, Reason::NO_ERROR, b"bye");
    let (r, evs) = feed(&mut c, &b);
    r.unwrap();
    assert_eq!(
        evs,
        vec![
            Ev::GoAway(1, Reason::NO_ERROR),
            Ev::Closed(1, Closed::Refused),
            Ev::Closed(2, Closed::Refused)
        ]
    );
    assert_eq!(c.open(9, request("/x"), true), Err(OpenError::Closing));
    assert_eq!(c.active_streams(), 1);
    let mut p = Peer::new();
    let bytes = p.response(1, b"ok").take();
    let (r, evs) = feed(&mut c, &bytes);
    r.unwrap();
    assert_eq!(evs.last(), Some(&Ev::Done(0, true, true)));
    assert_eq!(c.active_streams(), 0);
}

#[test]
fn a_reset_stream_is_reported_with_its_reason() {
    let mut c = ready(Config::default());
    c.open(4, request("/x"), true).unwrap();
    let mut b = Vec::new();
    frame::encode_rst_stream(&mut b, 1, Reason::REFUSED_STREAM);
    assert_eq!(
        feed(&mut c, &b).1,
        vec![Ev::Closed(4, Closed::Reset(Reason::REFUSED_STREAM))]
    );
    assert_eq!(c.active_streams(), 0);
    // a frame on a stream we never opened is a connection error
    b.clear();
    frame::encode_rst_stream(&mut b, 3, Reason::CANCEL);
    assert_eq!(
        feed(&mut c, &b).0.unwrap_err().reason,
        Reason::PROTOCOL_ERROR
    );
}

#[test]
fn the_servers_stream_limit_holds() {
    let mut c = Connection::new(Config::default());
    let mut p = Peer::new();
    let bytes = p
        .settings(Settings {
            max_concurrent_streams: Some(1),
            ..Settings::default()
        })
        .take();
    feed(&mut c, &bytes).0.unwrap();
    let id = c.open(0, request("/x"), true).unwrap();
    assert_eq!(c.open(1, request("/x"), true), Err(OpenError::Busy));
    let bytes = p.response(id, b"").take();
    feed(&mut c, &bytes).0.unwrap();
    assert_eq!(c.open(1, request("/x"), true), Ok(3));
}

#[test]
fn our_reset_forgets_the_stream_and_its_late_frames_are_dropped() {
    let mut c = ready(Config::default());
    let id = c.open(0, request("/x"), true).unwrap();
    c.reset(id, Reason::CANCEL);
    let frames = frames_out(&mut c);
    assert_eq!(frames.last().unwrap().0, frame::kind::RST_STREAM);
    let mut p = Peer::new();
    let bytes = p.response(id, &[0; 40_000]).take();
    let (r, evs) = feed(&mut c, &bytes);
    assert_eq!(r, Ok(bytes.len()));
    assert!(evs.is_empty(), "{evs:?}");
    // the connection window is still replenished for the dropped DATA (two frames of 16,384
    // reach half of it; the rest waits for more)
    let frames = frames_out(&mut c);
    assert_eq!(
        frames,
        vec![(
            frame::kind::WINDOW_UPDATE,
            0,
            0,
            32_768u32.to_be_bytes().to_vec()
        )]
    );
    // HPACK stayed in step: the next response's indexed fields decode
    let id = c.open(1, request("/x"), true).unwrap();
    let bytes = p.response(id, b"y").take();
    let (r, evs) = feed(&mut c, &bytes);
    r.unwrap();
    assert_eq!(evs[0], Ev::Field(1, ":status".into(), "200".into(), false));
}

#[test]
fn a_header_block_across_continuation_frames_is_joined() {
    let mut c = ready(Config::default());
    let id = c.open(2, request("/x"), true).unwrap();
    let mut p = Peer::new();
    let long = "v".repeat(40_000);
    let block = p.block(&[(":status", "200"), ("x-long", &long)]);
    let mut b = Vec::new();
    frame::encode_headers(&mut b, id, &block, true, 16_384);
    // fed a few bytes at a time
    let mut log = Log::default();
    let mut buf = Vec::new();
    for chunk in b.chunks(1000) {
        buf.extend_from_slice(chunk);
        let n = c.recv(&buf, &mut log).unwrap();
        buf.drain(..n);
    }
    assert!(buf.is_empty());
    assert_eq!(log.0[1], Ev::Field(2, "x-long".into(), long, false));
    assert_eq!(log.0[2], Ev::Done(2, false, true));
}

#[test]
fn hostile_header_blocks_end_the_connection_by_kind() {
    // CONTINUATION without end
    let mut c = ready(Config::default());
    let id = c.open(0, request("/x"), true).unwrap();
    let mut b = Vec::new();
    frame::encode_headers_frame(&mut b, id, b"\x88", 0);
    for _ in 0..=MAX_CONTINUATIONS {
        frame::encode_continuation(&mut b, id, b"", false);
    }
    assert_eq!(
        feed(&mut c, &b).0,
        Err(calm("too many CONTINUATION frames"))
    );

    // a block larger than the list limit, in CONTINUATION frames
    let mut c = ready(Config {
        max_header_list_size: 4096,
        ..Config::default()
    });
    let id = c.open(0, request("/x"), true).unwrap();
    let mut b = Vec::new();
    frame::encode_headers_frame(&mut b, id, &[0; 3000], 0);
    frame::encode_continuation(&mut b, id, &[0; 3000], false);
    assert_eq!(
        feed(&mut c, &b).0,
        Err(calm("header block above the header list limit"))
    );

    // interrupted by another frame
    let mut c = ready(Config::default());
    let id = c.open(0, request("/x"), true).unwrap();
    let mut b = Vec::new();
    frame::encode_headers_frame(&mut b, id, b"\x88", 0);
    frame::encode_ping(&mut b, false, [0; 8]);
    assert_eq!(
        feed(&mut c, &b).0.unwrap_err().reason,
        Reason::PROTOCOL_ERROR
    );

    // an HPACK bomb: one large entry, then many references to it
    let mut c = ready(Config {
        max_header_list_size: 16 << 10,
        ..Config::default()
    });
    let id = c.open(0, request("/x"), true).unwrap();
    // :status 200 (static index 8); a literal "x" with incremental indexing whose value is
    // 3,000 bytes; then 10,000 one-byte references to it (index 62)
    let mut block = vec![0x88, 0x40, 0x01, b'x', 0x7f];
    let mut rest = 3000u32 - 127;
    while rest >= 128 {
        block.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    block.push(rest as u8);
    block.extend(std::iter::repeat_n(b'a', 3000));
    block.extend(std::iter::repeat_n(0xbe, 10_000));
    let mut b = Vec::new();
    frame::encode_headers(&mut b, id, &block, true, 16_384);
    assert_eq!(
        feed(&mut c, &b).0,
        Err(calm("a header list above the header list limit"))
    );

    // garbage
    let mut c = ready(Config::default());
    let id = c.open(0, request("/x"), true).unwrap();
    let mut b = Vec::new();
    frame::encode_headers(
        &mut b,
        id,
        &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
        true,
        16_384,
    );
    assert_eq!(
        feed(&mut c, &b).0.unwrap_err().reason,
        Reason::COMPRESSION_ERROR
    );
}

#[test]
fn ping_and_settings_floods_end_the_connection_with_bounded_output() {
    // pings answered but never written out
    let mut c = ready(Config::default());
    let mut b = Vec::new();
    for i in 0..10_000u64 {
        frame::encode_ping(&mut b, false, i.to_be_bytes());
    }
    let (r, _) = feed(&mut c, &b);
    assert_eq!(r.unwrap_err().reason, Reason::ENHANCE_YOUR_CALM);
    assert!(c.output().len() <= (64 << 10) + 100, "{}", c.output().len());

    // answers written out as they come, but nothing else ever happens
    let mut c = ready(Config::default());
    let mut result = Ok(0);
    for _ in 0..20_000 {
        let mut b = Vec::new();
        frame::encode_settings(&mut b, &Settings::default());
        result = c.recv(&b, &mut Log::default());
        let n = c.output().len();
        c.advance(n);
        if result.is_err() {
            break;
        }
    }
    assert_eq!(result, Err(calm("too many frames without progress")));

    // a ping answered is a pong to us
    let mut c = ready(Config::default());
    c.ping(*b"12345678");
    let mut b = Vec::new();
    frame::encode_ping(&mut b, true, *b"12345678");
    assert_eq!(feed(&mut c, &b).1, vec![Ev::Pong(*b"12345678")]);
}

#[test]
fn frames_on_closed_streams_are_dropped_within_a_budget() {
    let mut c = ready(Config {
        max_idle_frames: 100,
        ..Config::default()
    });
    let id = c.open(0, request("/x"), true).unwrap();
    let mut p = Peer::new();
    let bytes = p.response(id, b"").take();
    feed(&mut c, &bytes).0.unwrap();
    let mut b = Vec::new();
    for _ in 0..100 {
        frame::encode_window_update(&mut b, id, 1);
        frame::encode_rst_stream(&mut b, id, Reason::CANCEL);
    }
    assert_eq!(
        feed(&mut c, &b).0,
        Err(calm("too many frames without progress"))
    );
}

/// A frame a flood sends, the `i`th, for the stream `id` left waiting (it may queue a PING of
/// ours first, for the answers to ours).
type Flood = fn(&mut Connection, &mut Peer, u32, u64, &mut Vec<u8>);

/// Frames that move no stream of ours, by kind.
const FLOODS: [(&str, Flood); 10] = [
    ("unsolicited PING ACKs", |_, _, _, i, b| {
        frame::encode_ping(b, true, i.to_be_bytes())
    }),
    ("PING ACKs answering ours", |c, _, _, i, b| {
        c.ping(i.to_be_bytes());
        frame::encode_ping(b, true, i.to_be_bytes());
    }),
    ("PINGs", |_, _, _, i, b| {
        frame::encode_ping(b, false, i.to_be_bytes())
    }),
    ("GOAWAYs keeping the stream", |_, _, id, _, b| {
        frame::encode_goaway(b, id, Reason::NO_ERROR, b"")
    }),
    ("SETTINGS", |_, _, _, _, b| {
        frame::encode_settings(b, &Settings::default())
    }),
    ("connection WINDOW_UPDATEs", |_, _, _, _, b| {
        frame::encode_window_update(b, 0, 1)
    }),
    ("stream WINDOW_UPDATEs", |_, _, id, _, b| {
        frame::encode_window_update(b, id, 1)
    }),
    ("PRIORITY", |_, _, id, _, b| {
        let p = frame::Priority {
            dependency: 0,
            exclusive: false,
            weight: 15,
        };
        frame::encode_priority(b, id, p)
    }),
    ("unknown types", |_, _, _, _, b| {
        frame::encode_raw(b, 0x20, 0, 0, b"x")
    }),
    ("informational heads", |_, p, id, _, b| {
        b.extend(p.headers(id, &[(":status", "103")], false).take())
    }),
];

/// A connection counting at most `max_idle` frames without progress, whose stream (returned)
/// waits for its response head right after another stream completed: no frame without
/// progress is counted yet.
fn waiting(max_idle: u32) -> (Connection, Peer, u32) {
    let mut c = ready(Config {
        max_idle_frames: max_idle,
        ..Config::default()
    });
    let done = c.open(0, request("/x"), true).unwrap();
    let id = c.open(1, request("/x"), true).unwrap();
    let mut p = Peer::new();
    let bytes = p.response(done, b"ok").take();
    feed(&mut c, &bytes).0.unwrap();
    let n = c.output().len();
    c.advance(n);
    (c, p, id)
}

/// Feeds `flood`'s frames one at a time, writing the answers out, until one is refused or
/// `limit` were taken: how many were taken, and the refusal.
fn flood(
    c: &mut Connection,
    p: &mut Peer,
    id: u32,
    flood: Flood,
    limit: u64,
) -> (u64, Option<Error>) {
    for i in 0..limit {
        let mut b = Vec::new();
        flood(c, p, id, i, &mut b);
        let r = c.recv(&b, &mut Log::default());
        let n = c.output().len();
        c.advance(n);
        if let Err(e) = r {
            return (i, Some(e));
        }
    }
    (limit, None)
}

#[test]
fn every_frame_that_moves_no_stream_counts_toward_the_bound() {
    let mixed: Flood = |c, p, id, i, b| (FLOODS[i as usize % FLOODS.len()].1)(c, p, id, i, b);
    for (name, build) in FLOODS.into_iter().chain([("all of them", mixed)]) {
        let (mut c, mut p, id) = waiting(100);
        let (taken, e) = flood(&mut c, &mut p, id, build, 10_000);
        assert_eq!(
            (taken, e),
            (100, Some(calm("too many frames without progress"))),
            "{name}"
        );
        assert_eq!(c.error(), Some(calm("too many frames without progress")));
    }
}

#[test]
fn a_response_interleaved_with_control_frames_completes() {
    // every kind but the informational heads (the heads here are final), GOAWAY keeping all
    let kinds = &FLOODS[..9];
    let mut c = ready(Config {
        max_idle_frames: 100,
        ..Config::default()
    });
    let ids: Vec<u32> = (0..5)
        .map(|t| c.open(t, request("/x"), true).unwrap())
        .collect();
    let last = *ids.last().unwrap();
    let mut p = Peer::new();
    let mut i = 0u64;
    let mut log = Vec::new();
    let mut chatter = |c: &mut Connection, p: &mut Peer| {
        // 99 in a row: the first SETTINGS counted one
        for _ in 0..99 {
            let mut b = Vec::new();
            (kinds[i as usize % kinds.len()].1)(c, p, last, i, &mut b);
            i += 1;
            feed(c, &b).0.unwrap();
            let n = c.output().len();
            c.advance(n);
        }
    };
    for &id in &ids {
        for part in 0..3 {
            chatter(&mut c, &mut p);
            let bytes = match part {
                0 => p.headers(id, &[(":status", "200")], false).take(),
                1 => p.data(id, b"ok", false).take(),
                _ => p.headers(id, &[("grpc-status", "0")], true).take(),
            };
            let (r, evs) = feed(&mut c, &bytes);
            r.unwrap();
            log.extend(evs);
        }
    }
    assert_eq!(c.error(), None);
    assert_eq!(c.active_streams(), 0);
    for t in 0..5 {
        assert!(log.contains(&Ev::Done(t, true, true)), "{t}: {log:?}");
    }
}

#[test]
fn window_updates_are_progress_only_when_they_let_data_out() {
    let mut c = ready(Config {
        max_idle_frames: 10,
        ..Config::default()
    });
    let id = c.open(0, request("/upload"), false).unwrap();
    c.send_data(id, &vec![7u8; 100_000], true);
    frames_out(&mut c);
    // both windows are used up: the stream's update lets nothing out, the connection's does
    for round in 0..20u64 {
        let mut b = Vec::new();
        for i in 0..8 {
            frame::encode_ping(&mut b, true, (round * 8 + i).to_be_bytes());
        }
        frame::encode_window_update(&mut b, id, 100);
        feed(&mut c, &b).0.unwrap();
        assert!(frames_out(&mut c).iter().all(|f| f.0 == frame::kind::PING));
        b.clear();
        frame::encode_window_update(&mut b, 0, 100);
        feed(&mut c, &b).0.unwrap();
        let out: usize = frames_out(&mut c).iter().map(|f| f.3.len()).sum();
        assert_eq!(out, 100, "{round}");
    }
    // updates of the connection alone open nothing the stream can use
    let mut b = Vec::new();
    for _ in 0..11 {
        frame::encode_window_update(&mut b, 0, 1);
    }
    assert_eq!(
        feed(&mut c, &b).0,
        Err(calm("too many frames without progress"))
    );
}

#[test]
fn a_goaway_refuses_exactly_the_streams_above_its_last_id_and_repeats_change_nothing() {
    let mut c = ready(Config::default());
    // tokens 0..6 on ids 1..=11, in slots 0..6
    for token in 0..6 {
        c.open(token, request("/x"), true).unwrap();
    }
    let mut p = Peer::new();
    let bytes = p.response(1, b"ok").take();
    feed(&mut c, &bytes).0.unwrap();
    c.reset(7, Reason::CANCEL);
    // the freed slots take the newest streams: slot order is no longer id order
    assert_eq!(c.open(6, request("/x"), true), Ok(13));
    assert_eq!(c.open(7, request("/x"), true), Ok(15));
    assert_eq!(c.active_streams(), 6);

    let mut b = Vec::new();
    frame::encode_goaway(&mut b, 11, Reason::NO_ERROR, b"");
    let (r, evs) = feed(&mut c, &b);
    r.unwrap();
    assert_eq!(
        evs,
        vec![
            Ev::GoAway(11, Reason::NO_ERROR),
            Ev::Closed(6, Closed::Refused),
            Ev::Closed(7, Closed::Refused)
        ]
    );
    assert_eq!(c.active_streams(), 4);

    // the same last id again, many times: reported, and nothing else moves
    let mut b = Vec::new();
    for _ in 0..1000 {
        frame::encode_goaway(&mut b, 11, Reason::NO_ERROR, b"");
    }
    let (r, evs) = feed(&mut c, &b);
    r.unwrap();
    assert!(evs.iter().all(|e| *e == Ev::GoAway(11, Reason::NO_ERROR)));
    assert_eq!(evs.len(), 1000);
    assert_eq!(c.active_streams(), 4);
    assert_eq!(c.goaway_received(), Some(11));

    // a lower one refuses the streams between, in the order they opened (7 is gone already)
    let mut b = Vec::new();
    frame::encode_goaway(&mut b, 4, Reason::NO_ERROR, b"");
    let (r, evs) = feed(&mut c, &b);
    r.unwrap();
    assert_eq!(
        evs,
        vec![
            Ev::GoAway(4, Reason::NO_ERROR),
            Ev::Closed(2, Closed::Refused),
            Ev::Closed(4, Closed::Refused),
            Ev::Closed(5, Closed::Refused)
        ]
    );
    assert_eq!(c.active_streams(), 1);
    assert_eq!(c.goaway_received(), Some(4));

    // the one kept completes
    let bytes = p.response(3, b"ok").take();
    let (r, evs) = feed(&mut c, &bytes);
    r.unwrap();
    assert_eq!(evs.last(), Some(&Ev::Done(1, true, true)));
    assert_eq!(c.active_streams(), 0);

    // raising the last id is a connection error
    let mut b = Vec::new();
    frame::encode_goaway(&mut b, 5, Reason::NO_ERROR, b"");
    assert_eq!(
        feed(&mut c, &b).0,
        Err(protocol("a GOAWAY raises the last stream id"))
    );
}

#[test]
fn protocol_violations_are_connection_errors() {
    type Build = Box<dyn Fn(&mut Vec<u8>, u32)>;
    let cases: Vec<(&str, Build)> = vec![
        (
            "push",
            Box::new(|b, id| frame::encode_push_promise(b, id, 2, b"\x88", true)),
        ),
        (
            "server stream",
            Box::new(|b, _| frame::encode_headers(b, 2, b"\x88", true, 16_384)),
        ),
        (
            "idle stream",
            Box::new(|b, _| frame::encode_data(b, 99, b"x", true)),
        ),
        (
            "stray continuation",
            Box::new(|b, id| frame::encode_continuation(b, id, b"\x88", true)),
        ),
        (
            "zero connection window update",
            Box::new(|b, _| frame::encode_window_update(b, 0, 0)),
        ),
    ];
    for (name, build) in cases {
        let mut c = ready(Config::default());
        let id = c.open(0, request("/x"), true).unwrap();
        let mut b = Vec::new();
        build(&mut b, id);
        let (r, _) = feed(&mut c, &b);
        assert_eq!(
            r.map_err(|e| e.reason),
            Err(Reason::PROTOCOL_ERROR),
            "{name}"
        );
        assert_eq!(
            frames_out(&mut c).last().unwrap().0,
            frame::kind::GOAWAY,
            "{name}"
        );
    }
    // the server's first frame must be SETTINGS
    let mut c = Connection::new(Config::default());
    let mut b = Vec::new();
    frame::encode_ping(&mut b, false, [0; 8]);
    assert_eq!(
        feed(&mut c, &b).0.unwrap_err().reason,
        Reason::PROTOCOL_ERROR
    );
}

#[test]
fn malformed_responses_are_stream_errors() {
    type Case<'a> = (&'a [(&'a str, &'a str)], bool, &'a str);
    let cases: [Case; 6] = [
        (
            &[("content-type", "x")],
            true,
            "a response head without :status",
        ),
        (&[(":status", "20")], true, ":status is not three digits"),
        (
            &[(":status", "200"), (":status", "200")],
            true,
            ":status twice",
        ),
        (
            &[(":status", "200"), ("Upper", "x")],
            true,
            "a field name that is empty, upper-case or has controls",
        ),
        (
            &[(":status", "200"), ("connection", "close")],
            true,
            "a connection-specific field",
        ),
        (
            &[(":path", "/"), (":status", "200")],
            true,
            "a pseudo-header other than :status in a response",
        ),
    ];
    for (fields, end, what) in cases {
        let mut c = ready(Config::default());
        let id = c.open(0, request("/x"), true).unwrap();
        let mut p = Peer::new();
        let bytes = p.headers(id, fields, end).take();
        let (r, evs) = feed(&mut c, &bytes);
        assert!(r.is_ok(), "{what}");
        assert_eq!(
            evs.last(),
            Some(&Ev::Closed(0, Closed::Error(Reason::PROTOCOL_ERROR, what))),
            "{evs:?}"
        );
        assert_eq!(
            frames_out(&mut c).last().unwrap().0,
            frame::kind::RST_STREAM
        );
    }
    // pseudo-headers in trailers, trailers without END_STREAM
    for (trailers, end, what) in [
        (
            &[(":status", "200")][..],
            true,
            "a pseudo-header in trailers",
        ),
        (
            &[("grpc-status", "0")][..],
            false,
            "trailers without END_STREAM",
        ),
    ] {
        let mut c = ready(Config::default());
        let id = c.open(0, request("/x"), true).unwrap();
        let mut p = Peer::new();
        let bytes = p
            .headers(id, &[(":status", "200")], false)
            .headers(id, trailers, end)
            .take();
        let (_, evs) = feed(&mut c, &bytes);
        assert_eq!(
            evs.last(),
            Some(&Ev::Closed(0, Closed::Error(Reason::PROTOCOL_ERROR, what)))
        );
    }
    // DATA before the head
    let mut c = ready(Config::default());
    let id = c.open(0, request("/x"), true).unwrap();
    let mut p = Peer::new();
    let bytes = p.data(id, b"x", true).take();
    assert_eq!(
        feed(&mut c, &bytes).1,
        vec![Ev::Closed(
            0,
            Closed::Error(Reason::PROTOCOL_ERROR, "DATA outside the response body")
        )]
    );
}

#[test]
fn an_informational_head_is_followed_by_the_final_one() {
    let mut c = ready(Config::default());
    let id = c.open(0, request("/x"), true).unwrap();
    let mut p = Peer::new();
    let bytes = p
        .headers(id, &[(":status", "103")], false)
        .headers(id, &[(":status", "200")], false)
        .data(id, b"body", true)
        .take();
    let (r, evs) = feed(&mut c, &bytes);
    r.unwrap();
    assert_eq!(evs[1], Ev::Done(0, false, false));
    assert_eq!(evs[3], Ev::Done(0, false, false));
    assert_eq!(evs[4], Ev::Data(0, b"body".to_vec(), true));
}

#[test]
fn the_events_do_not_depend_on_how_the_bytes_were_split() {
    let mut p = Peer::new();
    let settings = p.settings(Settings::default()).take();
    let mut bytes = Vec::new();
    for id in [1, 3, 5] {
        bytes.extend(p.response(id, &[id as u8; 300]).take());
    }
    frame::encode_ping(&mut bytes, true, [1; 8]);
    let run = |split: usize| {
        let mut c = Connection::new(Config::default());
        let mut log = Log::default();
        assert_eq!(c.recv(&settings, &mut log), Ok(settings.len()));
        for t in 0..3 {
            c.open(t, request("/x"), true).unwrap();
        }
        let _ = frames_out(&mut c);
        let mut buf = Vec::new();
        for chunk in bytes.chunks(split) {
            buf.extend_from_slice(chunk);
            let n = c.recv(&buf, &mut log).unwrap();
            buf.drain(..n);
        }
        assert!(buf.is_empty());
        (log.0, frames_out(&mut c), c.active_streams())
    };
    let whole = run(bytes.len());
    assert_eq!(whole.0.len(), 3 * 6 + 1);
    assert_eq!(whole.2, 0);
    for split in [1, 2, 7, 9, 10, 100] {
        assert_eq!(run(split), whole, "split {split}");
    }
}

/// The events of a response on a new stream of `c` (token `token`): head `head` from `p`'s
/// encoder, then trailers `grpc-status: 0` with END_STREAM.
fn respond(c: &mut Connection, p: &mut Peer, token: usize, head: &[(&str, &str)]) -> Vec<Ev> {
    let id = c.open(token, request("/x"), true).unwrap();
    let _ = frames_out(c);
    let bytes = p
        .headers(id, head, false)
        .headers(id, &[("grpc-status", "0")], true)
        .take();
    let (r, evs) = feed(c, &bytes);
    assert_eq!(r, Ok(bytes.len()));
    evs
}

/// What a well-formed head and its trailers hand over, in order.
fn well_formed(token: usize, head: &[(&str, &str)]) -> Vec<Ev> {
    let f = |(n, v): &(&str, &str), t| Ev::Field(token, n.to_string(), v.to_string(), t);
    let mut evs: Vec<Ev> = head.iter().map(|x| f(x, false)).collect();
    evs.push(Ev::Done(token, false, false));
    evs.push(f(&("grpc-status", "0"), true));
    evs.push(Ev::Done(token, true, true));
    evs
}

#[test]
fn a_remembered_block_is_decoded_again_once_the_table_changed() {
    let mut c = ready(Config::default());
    // raw blocks: `:status: 200` (static 8) and the newest dynamic entry (62)
    let newest = [0x88u8, 0xbe];
    let literal = |name: &[u8], value: &[u8]| {
        // §6.2.1: a literal with incremental indexing, new name
        let mut b = vec![0x40, name.len() as u8];
        b.extend_from_slice(name);
        b.push(value.len() as u8);
        b.extend_from_slice(value);
        b
    };
    let run = |c: &mut Connection, token: usize, block: &[u8]| {
        let id = c.open(token, request("/x"), true).unwrap();
        let _ = frames_out(c);
        let mut bytes = Vec::new();
        frame::encode_headers(&mut bytes, id, block, true, 16_384);
        let (r, evs) = feed(c, &bytes);
        assert_eq!(r, Ok(bytes.len()));
        evs
    };
    let field = |t, n: &str, v: &str| Ev::Field(t, n.into(), v.into(), false);
    let head = |t, v: &str| {
        vec![
            field(t, ":status", "200"),
            field(t, "x-a", v),
            Ev::Done(t, false, true),
        ]
    };
    assert_eq!(
        run(&mut c, 0, &[&[0x88][..], &literal(b"x-a", b"1")].concat()),
        head(0, "1")
    );
    // the same two bytes twice: decoded, then remembered
    assert_eq!(run(&mut c, 1, &newest), head(1, "1"));
    assert_eq!(run(&mut c, 2, &newest), head(2, "1"));
    // trailers that insert change what the newest entry is: the remembered head's bytes then
    // say something else
    let id = c.open(3, request("/x"), true).unwrap();
    let _ = frames_out(&mut c);
    let mut bytes = Vec::new();
    frame::encode_headers(&mut bytes, id, &newest, false, 16_384);
    frame::encode_headers(&mut bytes, id, &literal(b"x-a", b"2"), true, 16_384);
    let (r, evs) = feed(&mut c, &bytes);
    assert_eq!(r, Ok(bytes.len()));
    assert_eq!(
        evs,
        [
            field(3, ":status", "200"),
            field(3, "x-a", "1"),
            Ev::Done(3, false, false),
            Ev::Field(3, "x-a".into(), "2".into(), true),
            Ev::Done(3, true, true),
        ]
    );
    assert_eq!(run(&mut c, 4, &newest), head(4, "2"));
    assert_eq!(run(&mut c, 5, &newest), head(5, "2"));
    // so does a size update that empties the table: the newest entry is then no entry
    let id = c.open(6, request("/x"), true).unwrap();
    let mut bytes = Vec::new();
    frame::encode_headers(&mut bytes, id, &[0x20, 0x88], true, 16_384);
    frame::encode_headers(&mut bytes, id + 2, &newest, true, 16_384);
    c.open(7, request("/x"), true).unwrap();
    let (r, _) = feed(&mut c, &bytes);
    assert!(r.is_err(), "index 62 of an empty table");
}

proptest::proptest! {
    #[test]
    fn repeated_heads_hand_over_what_decoding_them_does(
        picks in proptest::collection::vec(0usize..5, 1..24),
    ) {
        // the peer's encoder indexes every field: a head's first block inserts (not
        // remembered), the next ones are indexed (the same bytes while the table holds)
        let heads: [&[(&str, &str)]; 5] = [
            &[(":status", "200"), ("content-type", "application/grpc")],
            &[(":status", "200"), ("content-type", "application/grpc"), ("x-a", "1")],
            &[(":status", "404")],
            &[(":status", "200"), ("x-b", "a longer value to move the table along")],
            &[(":status", "200"), ("Upper", "x")],
        ];
        let mut c = ready(Config::default());
        let mut p = Peer::new();
        for (token, &k) in picks.iter().enumerate() {
            let evs = respond(&mut c, &mut p, token, heads[k]);
            if k == 4 {
                // malformed: `:status` handed over, then the stream error; the trailers that
                // follow the reset are dropped
                proptest::prop_assert_eq!(
                    evs,
                    vec![
                        Ev::Field(token, ":status".into(), "200".into(), false),
                        Ev::Closed(
                            token,
                            Closed::Error(
                                Reason::PROTOCOL_ERROR,
                                "a field name that is empty, upper-case or has controls",
                            ),
                        ),
                    ]
                );
            } else {
                proptest::prop_assert_eq!(evs, well_formed(token, heads[k]));
            }
        }
    }
}
