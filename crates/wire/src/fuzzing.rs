//! The fuzz targets' checks, one function per target of fuzz/ (each target calls its function
//! on libFuzzer's bytes), built for cargo-fuzz (`--cfg fuzzing`) and for this crate's tests,
//! which run every check on the committed seeds and on proptest's bytes, so `cargo test` on a
//! stable toolchain exercises the same assertions the fuzzer does.
//!
//! A check panics when an invariant of a core breaks: a decoder that consumed input on
//! failure, an outcome that depends on how the bytes were split, a count that does not add up.

use bytes::{Bytes, BytesMut};

use crate::etcd::gateway::{GwError, GwResponse, KeepAliveError, keepalive_answer};
use crate::etcd::watch::{WatchLine, next_line, next_line_eof, parse_line, render_response_line};
use crate::grpc::{decode, decode_message_text, parse_status};
use crate::h2::client::{self, Closed, Connection, Events};
use crate::h2::counts::H2Counts;
use crate::h2::frame::{self, Frame, HEADER_LEN, Head, Reason};
use crate::h2::hpack::{self, Decoder, Encoder, Field, Strategy};
use crate::h2::sniff::H2Sniffer;
use crate::h2::tally::TallyLayers;
use crate::http1::{
    self, BodyKind, ChunkedDecoder, Error, RequestLimits, ResponseReader, decode_head_response,
    decode_request_head, decode_response_head,
};

mod echo;
mod h3;
mod quic;
mod targets;
mod template;

pub use echo::{echo_agrees, echo_json};
pub use h3::{h3_frames, qpack_decode};
pub use quic::quic_sniff;
pub use targets::{assert_spread, targets_file};
pub use template::template;

/// A check: panics when the bytes break an invariant.
pub type Check = fn(&[u8]);

/// Every check with its target's name (the folder of its seeds in fuzz/corpus).
pub const CHECKS: [(&str, Check); 17] = [
    ("http1_head", http1_head),
    ("http1_chunked", http1_chunked),
    ("http1_request", http1_request),
    ("http1_response", http1_response),
    ("grpc_deframe", grpc_deframe),
    ("gateway_json", gateway_json),
    ("h2_sniff", h2_sniff),
    ("h2_frames", h2_frames),
    ("watch_lines", watch_lines),
    ("hpack_decode", hpack_decode),
    ("h2_client", h2_client),
    ("h3_frames", h3_frames),
    ("qpack_decode", qpack_decode),
    ("quic_sniff", quic_sniff),
    ("echo_json", echo_json),
    ("template", template),
    ("targets_file", targets_file),
];

/// The response-head decoder: heads decoded from the input until it stops.
pub fn http1_head(data: &[u8]) {
    let mut buf = BytesMut::from(data);
    // Each success consumes at least one byte, so this terminates.
    while let Ok(Some(head)) = decode_response_head(&mut buf, 1 << 20) {
        assert!(head.head_len > 0 && head.head_len <= data.len());
    }
    // as responses to HEAD requests: no body, whatever the heads say
    let mut buf = BytesMut::from(data);
    while let Ok(Some(head)) = decode_head_response(&mut buf) {
        assert!(head.head_len > 0 && head.head_len <= data.len());
        assert_eq!(head.body, BodyKind::Empty);
    }
}

/// The chunked-body decoder fed in two pieces (split at the first byte's value) and whole:
/// the same outcome, bytes and counts.
pub fn http1_chunked(data: &[u8]) {
    let Some(&first) = data.first() else {
        return;
    };
    let (a, b) = data.split_at(usize::from(first) % data.len());
    let mut dec = ChunkedDecoder::new(1 << 20);

    let mut src = BytesMut::from(a);
    let mut dst = BytesMut::new();
    let mut split_result = dec.decode(&mut src, &mut dst);
    if split_result == Ok(false) {
        src.extend_from_slice(b);
        split_result = dec.decode(&mut src, &mut dst);
    }
    let split_counts = (dec.framing_bytes(), dec.data_bytes());
    let split_dst = dst;

    dec.reset();
    let mut src = BytesMut::from(data);
    let mut dst = BytesMut::new();
    let whole_result = dec.decode(&mut src, &mut dst);

    // Feeding in pieces must not change the outcome.
    assert_eq!(split_result, whole_result);
    assert_eq!(split_dst, dst);
    assert_eq!(split_counts, (dec.framing_bytes(), dec.data_bytes()));
    if whole_result == Ok(true) {
        let consumed = dec.framing_bytes() + dec.data_bytes();
        assert_eq!(consumed + src.len() as u64, data.len() as u64);
    }
}

/// The server's request-head decoder: heads and bodies decoded back to back until it stops,
/// then the input fed in two pieces (split at the first byte's value) against whole.
pub fn http1_request(data: &[u8]) {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let limits = RequestLimits {
        max_head_bytes: 64 + usize::from(first) * 4,
        max_headers: usize::from(first % 70),
        max_body: u64::from(first),
    };

    let mut buf = BytesMut::from(input);
    let mut consumed = 0;
    while let Ok(Some(head)) = decode_request_head(&mut buf, limits) {
        assert!(head.head_len() > 0 && head.head_len() <= limits.max_head_bytes);
        assert!(head.headers().len() <= limits.max_headers);
        consumed += head.head_len();
        let _ = (head.method(), head.path());
        match head.decode_body(&mut buf) {
            Ok(Some(body)) => consumed += body.len(),
            _ => break,
        }
    }
    // nothing is lost: every byte is in a head, a body or still in the buffer
    assert_eq!(consumed + buf.len(), input.len());

    let mut whole = BytesMut::from(input);
    let expected = decode_request_head(&mut whole, limits);
    let cut = usize::from(first) % (input.len() + 1);
    let mut split = BytesMut::from(&input[..cut]);
    let got = match decode_request_head(&mut split, limits) {
        Ok(None) => {
            // an incomplete head consumes nothing
            assert_eq!(&split[..], &input[..cut]);
            split.extend_from_slice(&input[cut..]);
            decode_request_head(&mut split, limits)
        }
        other => other,
    };
    assert_eq!(got, expected);
}

/// The client's response reader as its driver runs it: reads of sizes taken from the first
/// byte, never more than the room the reader left, then EOF. Split and whole must agree, and
/// the buffer must never grow past the body limit's bound.
pub fn http1_response(data: &[u8]) {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let max_body = u64::from(first) * 64;
    let eof = first & 1 == 1;
    let read = usize::from(first % 13) + 1;
    let mut reader = ResponseReader::new(max_body);
    let split = drive_reader(&mut reader, input, read, max_body, eof);
    let whole = drive_reader(
        &mut ResponseReader::new(max_body),
        input,
        usize::MAX,
        max_body,
        eof,
    );
    assert_eq!(split, whole);
    // a kept-alive connection's next response, read by the same reader (which remembers the
    // first head) and by a fresh one, reads the same
    if let Some((Ok(r), _, rest)) = &whole
        && r.keep_alive
    {
        let again = drive_reader(&mut reader, rest, read, max_body, eof);
        let fresh = drive_reader(
            &mut ResponseReader::new(max_body),
            rest,
            read,
            max_body,
            eof,
        );
        assert_eq!(again, fresh);
    }
}

/// The outcome, the body, and what is left after a complete response.
type Read = (Result<http1::Response, Error>, Vec<u8>, Vec<u8>);

fn drive_reader(
    reader: &mut ResponseReader,
    input: &[u8],
    read: usize,
    max_body: u64,
    eof: bool,
) -> Option<Read> {
    let mut buf = BytesMut::new();
    let mut dechunked = BytesMut::new();
    let bound = max_body as usize + http1::MAX_HEAD_BYTES + http1::READ_CHUNK;
    let mut fed = 0;
    let outcome = loop {
        match reader.poll(&mut buf, &mut dechunked) {
            Ok(Some(response)) => break Ok(response),
            Err(e) => break Err(e),
            Ok(None) => {}
        }
        let spare = buf.capacity() - buf.len();
        assert!(spare >= http1::MIN_ROOM);
        assert!(buf.capacity() <= bound.max(2 * http1::READ_CHUNK));
        if fed == input.len() {
            if !eof {
                return None;
            }
            break reader.eof(&buf);
        }
        let n = read.min(spare).min(input.len() - fed);
        buf.extend_from_slice(&input[fed..fed + n]);
        fed += n;
    };
    Some(match outcome {
        Ok(response) => {
            let body = response.body(&buf, &dechunked).to_vec();
            assert_eq!(body.len(), response.body_len());
            assert!(body.len() as u64 <= max_body);
            reader.next_response(&mut buf);
            let mut rest = buf.to_vec();
            rest.extend_from_slice(&input[fed..]);
            (Ok(response), body, rest)
        }
        // what was not read after an error depends on the read sizes
        Err(e) => (Err(e), Vec::new(), Vec::new()),
    })
}

/// gRPC message deframing, grpc-status parsing and grpc-message percent-decoding.
pub fn grpc_deframe(data: &[u8]) {
    const MAX: usize = 1024 * 1024;
    let mut src = BytesMut::from(data);
    let mut whole = Vec::new();
    while let Ok(Some(payload)) = decode(&mut src, MAX) {
        assert!(payload.len() <= MAX);
        whole.push(payload);
    }

    // a server stream fed the same bytes in two pieces takes the same messages
    let mut stream = crate::grpc::streaming::StreamingResponse::new(MAX);
    let at = data.first().map_or(0, |&b| usize::from(b)).min(data.len());
    let mut rx = BytesMut::new();
    let mut taken = Vec::new();
    for part in [&data[..at], &data[at..]] {
        rx.extend_from_slice(part);
        if stream
            .data(&mut rx, |m| taken.push(Bytes::copy_from_slice(m)))
            .is_err()
        {
            break;
        }
    }
    assert_eq!(taken, whole);
    assert_eq!(stream.messages(), whole.len() as u64);

    let _ = parse_status(data);

    let mut text = String::new();
    decode_message_text(data, 1024, &mut text);
    assert!(text.len() <= 1024);
}

/// etcd gateway response bodies (and a lease keepalive's line): the borrowed checks never panic
/// on any bytes.
pub fn gateway_json(data: &[u8]) {
    if let Ok(r) = serde_json::from_slice::<GwResponse>(data) {
        let _ = r.header.and_then(|h| h.revision).map(str::len);
    }
    if let Ok(e) = serde_json::from_slice::<GwError>(data) {
        let _ = e.text().len();
    }
    // a lease keepalive's line: an answer, etcd's words (no longer than the input they came
    // from), or malformed; never a panic
    if let Err(KeepAliveError::Stream(m)) = keepalive_answer(data) {
        assert!(m.len() <= data.len());
    }
}

/// HTTP/2 byte classification: never panics, and any split of the input gives the same
/// counts.
pub fn h2_sniff(data: &[u8]) {
    let expect_preface = data.len().is_multiple_of(2);
    let mut whole = H2Sniffer::new(expect_preface);
    whole.feed(data);
    assert_eq!(whole.fed(), data.len() as u64);

    let at = data.first().map_or(0, |&b| usize::from(b)).min(data.len());
    let (head, tail) = data.split_at(at);
    let mut split = H2Sniffer::new(expect_preface);
    split.feed(head);
    split.feed(tail);
    assert_eq!(split.fed(), whole.fed());
    assert_eq!(split.counts(), whole.counts());

    let c = whole.counts();
    let frame_bytes: u64 = c.frames.iter().map(|f| f.bytes).sum();
    assert_eq!(
        whole.fed(),
        c.preface_bytes + frame_bytes + c.unparsed_bytes + whole.pending()
    );

    // plain HTTP/2 counts the same frames, without a gRPC layer
    let mut plain = H2Sniffer::plain(expect_preface);
    plain.feed(head);
    plain.feed(tail);
    let p = plain.counts();
    assert_eq!(p.frames, c.frames);
    assert_eq!(p.data_payload_bytes, c.data_payload_bytes);
    assert_eq!(p.hpack_bytes, c.hpack_bytes);
    assert_eq!(p.unparsed_bytes, c.unparsed_bytes);
    assert_eq!(
        p.grpc_prefix_bytes + p.grpc_message_bytes + p.data_untracked_bytes,
        0
    );
}

/// The h2 frame codec: frames decoded back to back (after the client preface, if the input
/// starts with it) until one is incomplete or refused, under a SETTINGS_MAX_FRAME_SIZE taken
/// from the first byte. Each frame occupies its header's 9 + length bytes, a strict prefix of
/// it is incomplete, and re-encoding it gives bytes that decode to the same frame (without the
/// padding of HEADERS and PUSH_PROMISE, which the frame does not keep).
pub fn h2_frames(data: &[u8]) {
    let Some((&first, mut input)) = data.split_first() else {
        return;
    };
    let max = match first & 3 {
        0 => frame::DEFAULT_MAX_FRAME_SIZE,
        1 => frame::DEFAULT_MAX_FRAME_SIZE * 2,
        2 => 1 << 20,
        _ => frame::MAX_FRAME_SIZE_LIMIT,
    };
    if let Some(rest) = input.strip_prefix(&frame::PREFACE[..]) {
        input = rest;
    }
    let mut again = Vec::new();
    while let Ok(Some((decoded, n))) = frame::decode(input, max) {
        let head = Head::parse(input.first_chunk().expect("a decoded frame has its header"));
        assert_eq!(n, HEADER_LEN + head.len as usize);
        assert!(n <= input.len() && head.len <= max);
        assert_eq!((decoded.kind(), decoded.stream()), (head.kind, head.stream));
        let cut = usize::from(first) % n;
        assert_eq!(frame::decode(&input[..cut], max), Ok(None));

        again.clear();
        reencode(&decoded, &input[HEADER_LEN..n], &mut again);
        match frame::decode(&again, max) {
            Ok(Some((re, m))) => {
                assert_eq!(re, decoded);
                assert_eq!(m, again.len());
            }
            other => panic!("{decoded:?} re-encoded as {again:02x?}: {other:?}"),
        }
        input = &input[n..];
    }
}

/// Encodes a decoded frame with the encoders (an unknown one with its original `payload`).
fn reencode(f: &Frame<'_>, payload: &[u8], out: &mut Vec<u8>) {
    use crate::h2::frame::flag::{END_HEADERS, END_STREAM};
    let set = |on: bool, flag: u8| if on { flag } else { 0 };
    match *f {
        Frame::Data {
            stream,
            data,
            end_stream,
            flow_len,
        } => match (flow_len as usize).checked_sub(data.len() + 1) {
            None => frame::encode_data(out, stream, data, end_stream),
            Some(pad) => {
                let pad = u8::try_from(pad).expect("the pad length is one byte");
                frame::encode_data_padded(out, stream, data, end_stream, pad);
            }
        },
        Frame::Headers {
            stream,
            block,
            end_stream,
            end_headers,
            priority,
        } => {
            let flags = set(end_stream, END_STREAM) | set(end_headers, END_HEADERS);
            frame::encode_headers_with(out, stream, block, flags, priority, None);
        }
        Frame::Priority { stream, priority } => frame::encode_priority(out, stream, priority),
        Frame::RstStream { stream, reason } => frame::encode_rst_stream(out, stream, reason),
        Frame::Settings { ack: true, .. } => frame::encode_settings_ack(out),
        Frame::Settings { settings, .. } => frame::encode_settings(out, &settings),
        Frame::PushPromise {
            stream,
            promised,
            block,
            end_headers,
        } => frame::encode_push_promise(out, stream, promised, block, end_headers),
        Frame::Ping { ack, data } => frame::encode_ping(out, ack, data),
        Frame::GoAway {
            last_stream,
            reason,
            debug,
        } => frame::encode_goaway(out, last_stream, reason, debug),
        Frame::WindowUpdate { stream, increment } => {
            frame::encode_window_update(out, stream, increment)
        }
        Frame::Continuation {
            stream,
            block,
            end_headers,
        } => frame::encode_continuation(out, stream, block, end_headers),
        Frame::Unknown { kind, stream, .. } => frame::encode_raw(out, kind, 0, stream, payload),
    }
}

/// The client connection fed a server's bytes: after an empty SETTINGS from the server, three
/// streams are opened (one with a body larger than the default window), then the input is the
/// rest of what the server sends, fed whole and in pieces (the first byte picks their size).
/// Both ways give the same events, the same result and the same bytes to write; what is queued
/// stays within a bound of what came in; no stream is left open twice or over the limit. The
/// connection's own layer counts are a sniffer's fed the same bytes: all of them out, the
/// frames in (whose gRPC messages it follows only on the streams it knows).
pub fn h2_client(data: &[u8]) {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let whole = drive_client(input, input.len().max(1));
    let pieces = drive_client(input, usize::from(first % 64) + 1);
    assert_eq!(
        whole, pieces,
        "the outcome depends on how the bytes were split"
    );
}

/// What a connection did with `input` fed `piece` bytes at a time: its events, the result,
/// everything it wrote.
fn drive_client(input: &[u8], piece: usize) -> (Vec<String>, Result<(), client::Error>, Vec<u8>) {
    struct Log(Vec<String>);
    impl Events for Log {
        fn field(&mut self, token: usize, f: Field<'_>, trailers: bool) {
            self.0.push(format!(
                "{token} field {:?}={:?} {trailers}",
                f.name, f.value
            ));
        }
        fn headers_done(&mut self, token: usize, trailers: bool, end_stream: bool) {
            self.0.push(format!("{token} done {trailers} {end_stream}"));
        }
        fn data(&mut self, token: usize, data: &[u8], end_stream: bool) {
            self.0
                .push(format!("{token} data {} {end_stream}", data.len()));
        }
        fn closed(&mut self, token: usize, why: Closed) {
            self.0.push(format!("{token} closed {why:?}"));
        }
        fn pong(&mut self, data: [u8; 8]) {
            self.0.push(format!("pong {data:?}"));
        }
        fn go_away(&mut self, last: u32, reason: Reason, debug: &[u8]) {
            self.0
                .push(format!("goaway {last} {reason} {}", debug.len()));
        }
    }
    let mut c = Connection::new(client::Config {
        layers: TallyLayers::Grpc,
        ..client::Config::default()
    });
    let mut log = Log(Vec::new());
    let mut written = Vec::new();
    let mut settings = Vec::new();
    let mut sniff_in = H2Sniffer::new(false);
    frame::encode_settings(&mut settings, &frame::Settings::default());
    assert_eq!(c.recv(&settings, &mut log), Ok(settings.len()));
    sniff_in.feed(&settings);
    let fields: [(&[u8], &[u8]); 4] = [
        (b":method", b"POST"),
        (b":scheme", b"http"),
        (b":path", b"/x"),
        (b":authority", b"a"),
    ];
    for token in 0..3 {
        let id = c
            .open(token, fields, false)
            .expect("a fresh connection opens streams");
        let body = vec![token as u8; if token == 2 { 70_000 } else { 10 }];
        c.send_data(id, &body, token != 1);
    }
    written.extend_from_slice(c.output());
    c.advance(c.output().len());

    let mut buf = Vec::new();
    let mut result = Ok(());
    for chunk in input.chunks(piece) {
        buf.extend_from_slice(chunk);
        sniff_in.feed(chunk);
        let r = c.recv(&buf, &mut log);
        let queued = c.output().len();
        // acknowledgements are bounded by what came in (a PING answered is as long as the
        // PING), the stream's waiting body by what the windows let out
        assert!(queued <= 2 * buf.len() + 80_000, "{queued} bytes queued");
        assert!(c.active_streams() <= 3);
        written.extend_from_slice(c.output());
        c.advance(queued);
        match r {
            Ok(n) => {
                buf.drain(..n);
            }
            Err(e) => {
                result = Err(e);
                buf.clear();
                break;
            }
        }
    }
    let mut sniff_out = H2Sniffer::new(true);
    sniff_out.feed(&written);
    assert_eq!(c.counts_out(), Some(*sniff_out.counts()), "counts out");
    let counted = c.counts_in(&buf).expect("the connection counts");
    assert_eq!(
        without_grpc(counted),
        without_grpc(*sniff_in.counts()),
        "counts in"
    );
    (log.0, result, written)
}

/// The counts with the gRPC layer folded into one figure: the DATA content it covers.
fn without_grpc(mut c: H2Counts) -> H2Counts {
    c.data_untracked_bytes += c.grpc_prefix_bytes + c.grpc_message_bytes;
    c.grpc_prefix_bytes = 0;
    c.grpc_message_bytes = 0;
    c.grpc_messages = 0;
    c
}

/// HPACK decoding: the first byte picks the decoder's table size (≤ 64 KiB), the encoder's
/// strategy and when its table size changes; the rest is a series of blocks, each a length
/// byte then that many bytes (the last one cut short by the end of the input). The blocks go
/// through one decoder until one fails (a failed decoder is done for); the fields of each
/// decoded block must fit the list budget, and re-encoded by one encoder and decoded by a
/// second decoder they must come back the same.
pub fn hpack_decode(data: &[u8]) {
    const MAX_LIST: usize = 16 * 1024;
    const TABLE_SIZES: [usize; 8] = [4096, 0, 1, 256, 1024, 4096, 16384, 65536];
    const ENCODER_SIZES: [usize; 4] = [0, 256, 4096, 100_000];
    let Some((&first, mut rest)) = data.split_first() else {
        return;
    };
    let strategy =
        [Strategy::Index, Strategy::Literal, Strategy::NeverIndexed][usize::from(first >> 3) % 3];
    let mut decoder = Decoder::new(TABLE_SIZES[usize::from(first & 7)]);
    let mut encoder = Encoder::new(strategy);
    let mut again = Decoder::new(hpack::DEFAULT_TABLE_SIZE);
    let mut block_index = 0;
    let mut fields: Vec<(Vec<u8>, Vec<u8>, bool)> = Vec::new();
    let mut encoded = Vec::new();
    while let Some((&len, tail)) = rest.split_first() {
        let (block, next) = tail.split_at(usize::from(len).min(tail.len()));
        rest = next;

        fields.clear();
        let decoded = decoder.decode(block, MAX_LIST, |f| {
            fields.push((f.name.to_vec(), f.value.to_vec(), f.never_indexed));
        });
        let sum: usize = fields.iter().map(|(n, v, _)| hpack::field_size(n, v)).sum();
        // fields emitted before an error were within the budget too
        assert!(sum <= MAX_LIST, "{sum} bytes of fields");
        if decoded.is_err() {
            return;
        }

        if ((first >> 5) >> (block_index % 3)) & 1 == 1 {
            encoder.set_max_table_size(ENCODER_SIZES[block_index % 4]);
        }
        encoded.clear();
        encoder.encode(
            fields.iter().map(|(n, v, _)| (&n[..], &v[..])),
            &mut encoded,
        );
        let mut round_trip = Vec::with_capacity(fields.len());
        let result = again.decode(&encoded, MAX_LIST, |f| {
            round_trip.push((f.name.to_vec(), f.value.to_vec()));
        });
        assert_eq!(result, Ok(()), "re-encoded block refused");
        assert_eq!(round_trip.len(), fields.len());
        for ((name, value), (n, v, _)) in round_trip.iter().zip(&fields) {
            assert_eq!((name, value), (n, v));
        }
        assert_eq!(again.table_size(), encoder.table_size());
        block_index += 1;
    }
}

/// Watch-stream lines: the bytes split (whole and in two pieces), every line parsed, and what
/// the renderer keeps survives a render -> parse round trip.
pub fn watch_lines(data: &[u8]) {
    let mut whole = Vec::new();
    drain_lines(&mut BytesMut::from(data), &mut whole);

    // Arrival in two pieces must give the same lines as long as no line is cut mid-way by EOF.
    let Some(&first) = data.first() else {
        return;
    };
    let (a, b) = data.split_at(usize::from(first) % data.len());
    let mut buf = BytesMut::from(a);
    let mut split = Vec::new();
    while let Ok(Some(l)) = next_line(&mut buf) {
        split.push(l.to_vec());
    }
    buf.extend_from_slice(b);
    drain_lines(&mut buf, &mut split);
    assert_eq!(split, whole);
}

/// Splits all lines (including an unterminated tail), parsing each; returns the raw lines.
fn drain_lines(buf: &mut BytesMut, lines: &mut Vec<Vec<u8>>) {
    loop {
        let line = match next_line(buf) {
            Ok(Some(l)) => l,
            Ok(None) => match next_line_eof(buf) {
                Ok(Some(l)) => l,
                _ => return,
            },
            Err(_) => return,
        };
        lines.push(line.to_vec());
        if let Ok(WatchLine::Response {
            watch_id,
            revision,
            created,
            events,
            ..
        }) = parse_line(&line)
        {
            // What the renderer keeps must survive a render -> parse round trip.
            let mut out = BytesMut::new();
            render_response_line(watch_id, revision, created, &events, &mut out);
            let again = next_line(&mut out).ok().flatten().expect("rendered line");
            match parse_line(&again) {
                Ok(WatchLine::Response {
                    watch_id: w,
                    revision: r,
                    created: c,
                    events: e,
                    ..
                }) => assert_eq!((w, r, c, e), (watch_id, revision, created, events)),
                other => panic!("rendered line did not parse: {other:?}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::CHECKS;

    /// The h2 client seed of whole responses gets through them: its check sees events, not
    /// only an early error.
    #[test]
    fn the_h2_client_seed_completes_its_responses() {
        let seed = include_bytes!("../../../fuzz/corpus/h2_client/seed-responses");
        let (events, result, written) = super::drive_client(&seed[1..], seed.len());
        assert_eq!(result, Ok(()), "{events:?}");
        for token in 0..3 {
            assert!(
                events.contains(&format!("{token} done true true")),
                "{events:?}"
            );
        }
        assert!(
            written.len() > 70_000,
            "the large body went out once the windows opened"
        );
    }

    /// Every committed seed through its target's check: the seeds are inputs the cores accept
    /// or refuse cleanly, and each folder in fuzz/corpus has a check.
    #[test]
    fn every_seed_passes_its_check() {
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus");
        let mut seeds = 0;
        for (name, check) in CHECKS {
            let dir = corpus.join(name);
            let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir:?}: {e}"));
            for entry in entries {
                let path = entry.unwrap().path();
                if path
                    .file_name()
                    .is_some_and(|f| f.to_string_lossy().starts_with("seed-"))
                {
                    check(&std::fs::read(&path).unwrap());
                    seeds += 1;
                }
            }
        }
        assert!(seeds >= CHECKS.len(), "{seeds} seeds");
        // link_spec's check is the link crate's (`wirebench_link::spec::fuzz_check`), whose
        // tests run its seeds
        let folders = std::fs::read_dir(&corpus)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|name| name != "link_spec")
            .count();
        assert_eq!(
            folders,
            CHECKS.len(),
            "a corpus folder without a check, or the reverse"
        );
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_pass_every_check(
            data in proptest::collection::vec(any::<u8>(), 0..400),
        ) {
            for (_, check) in CHECKS {
                check(&data);
            }
        }
    }
}
