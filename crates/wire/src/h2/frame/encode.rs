//! The frame encoders (RFC 9113 §6): each appends one frame (or, for [`encode_headers`], a
//! field block's frames) to the caller's buffer and allocates nothing beyond growing it.
//!
//! Encoders write what they are given: the decoder's rules (stream 0 or not, SETTINGS value
//! ranges) are not enforced, so that tests and hostile test servers can send broken frames.
//! Every encoder panics if a payload does not fit the 24-bit length field (16 MiB - 1); the
//! peer's SETTINGS_MAX_FRAME_SIZE is the caller's to respect.

use super::{
    HEADER_LEN, Head, ID_MASK, MAX_FRAME_SIZE_LIMIT, Priority, Reason, Settings, flag, kind,
    setting,
};

/// Appends the header of a frame whose payload is `len` bytes, reserving room for the payload.
fn head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    // Local invariant: our callers frame at most what the 24-bit length holds.
    let len = u32::try_from(len)
        .ok()
        .filter(|&l| l <= MAX_FRAME_SIZE_LIMIT)
        .expect("h2 frame payload does not fit the 24-bit length: the caller must split it");
    out.reserve(HEADER_LEN + len as usize);
    Head {
        len,
        kind,
        flags,
        stream,
    }
    .encode(out);
}

/// `flag` if `on`, else 0.
fn set(on: bool, flag: u8) -> u8 {
    if on { flag } else { 0 }
}

/// A DATA frame (§6.1) without padding.
pub fn encode_data(out: &mut Vec<u8>, stream: u32, data: &[u8], end_stream: bool) {
    encode_raw(
        out,
        kind::DATA,
        set(end_stream, flag::END_STREAM),
        stream,
        data,
    );
}

/// A DATA frame (§6.1) with PADDED: a Pad Length byte, the data, then `pad_len` bytes of zero
/// padding (for tests and hostile test servers; all of it counts for flow control).
pub fn encode_data_padded(
    out: &mut Vec<u8>,
    stream: u32,
    data: &[u8],
    end_stream: bool,
    pad_len: u8,
) {
    let flags = flag::PADDED | set(end_stream, flag::END_STREAM);
    head(
        out,
        1 + data.len() + usize::from(pad_len),
        kind::DATA,
        flags,
        stream,
    );
    out.push(pad_len);
    out.extend_from_slice(data);
    out.resize(out.len() + usize::from(pad_len), 0);
}

/// A field block (§4.3) as HEADERS (§6.2) followed by as many CONTINUATION frames (§6.10) as
/// `max_frame_size` (the peer's SETTINGS_MAX_FRAME_SIZE) requires: END_STREAM on the HEADERS
/// frame only, END_HEADERS on the last frame only. An empty block is one HEADERS frame;
/// `max_frame_size` is taken in 1..=[`MAX_FRAME_SIZE_LIMIT`] (smaller values split tests'
/// blocks finely).
pub fn encode_headers(
    out: &mut Vec<u8>,
    stream: u32,
    block: &[u8],
    end_stream: bool,
    max_frame_size: u32,
) {
    let max = max_frame_size.clamp(1, MAX_FRAME_SIZE_LIMIT) as usize;
    let (first, mut rest) = block.split_at(block.len().min(max));
    let flags = set(end_stream, flag::END_STREAM) | set(rest.is_empty(), flag::END_HEADERS);
    encode_headers_frame(out, stream, first, flags);
    while !rest.is_empty() {
        let (fragment, after) = rest.split_at(rest.len().min(max));
        encode_continuation(out, stream, fragment, after.is_empty());
        rest = after;
    }
}

/// Just one HEADERS frame (§6.2) with `flags` as given and `block` as its whole payload (tests
/// and hostile test servers: e.g. without END_HEADERS). With PADDED or PRIORITY in `flags`,
/// `block` must begin with those fields; [`encode_headers_with`] writes them.
pub fn encode_headers_frame(out: &mut Vec<u8>, stream: u32, block: &[u8], flags: u8) {
    encode_raw(out, kind::HEADERS, flags, stream, block);
}

/// One HEADERS frame (§6.2) with its optional fields: the priority fields (flag PRIORITY) and
/// `pad_len` bytes of zero padding (flag PADDED). Those two bits of `flags` are replaced by
/// whether `priority` and `pad_len` are given; the other bits are sent as they are.
pub fn encode_headers_with(
    out: &mut Vec<u8>,
    stream: u32,
    block: &[u8],
    flags: u8,
    priority: Option<Priority>,
    pad_len: Option<u8>,
) {
    let flags = (flags & !(flag::PADDED | flag::PRIORITY))
        | set(priority.is_some(), flag::PRIORITY)
        | set(pad_len.is_some(), flag::PADDED);
    let pad = pad_len.map_or(0, |p| 1 + usize::from(p));
    let fields = if priority.is_some() { 5 } else { 0 };
    head(
        out,
        pad + fields + block.len(),
        kind::HEADERS,
        flags,
        stream,
    );
    if let Some(p) = pad_len {
        out.push(p);
    }
    if let Some(p) = priority {
        out.extend_from_slice(&p.to_bytes());
    }
    out.extend_from_slice(block);
    if let Some(p) = pad_len {
        out.resize(out.len() + usize::from(p), 0);
    }
}

/// A CONTINUATION frame (§6.10).
pub fn encode_continuation(out: &mut Vec<u8>, stream: u32, block: &[u8], end_headers: bool) {
    encode_raw(
        out,
        kind::CONTINUATION,
        set(end_headers, flag::END_HEADERS),
        stream,
        block,
    );
}

/// A PRIORITY frame (§6.3).
pub fn encode_priority(out: &mut Vec<u8>, stream: u32, p: Priority) {
    encode_raw(out, kind::PRIORITY, 0, stream, &p.to_bytes());
}

/// A RST_STREAM frame (§6.4).
pub fn encode_rst_stream(out: &mut Vec<u8>, stream: u32, reason: Reason) {
    encode_raw(out, kind::RST_STREAM, 0, stream, &reason.0.to_be_bytes());
}

/// A SETTINGS frame (§6.5) with the parameters that are `Some`, in identifier order (§6.5.2);
/// values are sent as given, even outside their valid ranges.
pub fn encode_settings(out: &mut Vec<u8>, s: &Settings) {
    let params = [
        (setting::HEADER_TABLE_SIZE, s.header_table_size),
        (setting::ENABLE_PUSH, s.enable_push.map(u32::from)),
        (setting::MAX_CONCURRENT_STREAMS, s.max_concurrent_streams),
        (setting::INITIAL_WINDOW_SIZE, s.initial_window_size),
        (setting::MAX_FRAME_SIZE, s.max_frame_size),
        (setting::MAX_HEADER_LIST_SIZE, s.max_header_list_size),
    ];
    let present = params.iter().filter(|(_, v)| v.is_some()).count();
    head(out, 6 * present, kind::SETTINGS, 0, 0);
    for (id, value) in params {
        if let Some(value) = value {
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&value.to_be_bytes());
        }
    }
}

/// The SETTINGS acknowledgement (§6.5.3): an empty SETTINGS frame with ACK.
pub fn encode_settings_ack(out: &mut Vec<u8>) {
    encode_raw(out, kind::SETTINGS, flag::ACK, 0, &[]);
}

/// A PUSH_PROMISE frame (§6.6) without padding.
pub fn encode_push_promise(
    out: &mut Vec<u8>,
    stream: u32,
    promised: u32,
    block: &[u8],
    end_headers: bool,
) {
    let flags = set(end_headers, flag::END_HEADERS);
    head(out, 4 + block.len(), kind::PUSH_PROMISE, flags, stream);
    out.extend_from_slice(&(promised & ID_MASK).to_be_bytes());
    out.extend_from_slice(block);
}

/// A PUSH_PROMISE frame (§6.6) with PADDED and `pad_len` bytes of zero padding (tests and
/// hostile test servers).
pub fn encode_push_promise_padded(
    out: &mut Vec<u8>,
    stream: u32,
    promised: u32,
    block: &[u8],
    end_headers: bool,
    pad_len: u8,
) {
    let flags = flag::PADDED | set(end_headers, flag::END_HEADERS);
    let len = 1 + 4 + block.len() + usize::from(pad_len);
    head(out, len, kind::PUSH_PROMISE, flags, stream);
    out.push(pad_len);
    out.extend_from_slice(&(promised & ID_MASK).to_be_bytes());
    out.extend_from_slice(block);
    out.resize(out.len() + usize::from(pad_len), 0);
}

/// A PING frame (§6.7); with `ack`, the response carrying the received data back.
pub fn encode_ping(out: &mut Vec<u8>, ack: bool, data: [u8; 8]) {
    encode_raw(out, kind::PING, set(ack, flag::ACK), 0, &data);
}

/// A GOAWAY frame (§6.8).
pub fn encode_goaway(out: &mut Vec<u8>, last_stream: u32, reason: Reason, debug: &[u8]) {
    head(out, 8 + debug.len(), kind::GOAWAY, 0, 0);
    out.extend_from_slice(&(last_stream & ID_MASK).to_be_bytes());
    out.extend_from_slice(&reason.0.to_be_bytes());
    out.extend_from_slice(debug);
}

/// A WINDOW_UPDATE frame (§6.9); stream 0 for the connection's window. The increment's top
/// (reserved) bit is not sent; 0 is sent as given.
pub fn encode_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    let increment = (increment & ID_MASK).to_be_bytes();
    encode_raw(out, kind::WINDOW_UPDATE, 0, stream, &increment);
}

/// Any frame (§4.1) with `payload` as given (tests and hostile test servers); the stream's
/// reserved bit is not sent.
pub fn encode_raw(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    head(out, payload.len(), kind, flags, stream);
    out.extend_from_slice(payload);
}
