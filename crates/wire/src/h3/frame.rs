//! The HTTP/3 frame codec (RFC 9114 §7): the payloads a client reads, a [`FrameReader`] for one
//! stream, and encoders that append to a `BufMut`; frame heads are [`super::head`]'s (re-exported
//! here). Which frames a stream may carry (SETTINGS first and once on the control stream,
//! HEADERS and DATA on request streams, §7.2) needs the stream's state and is the caller's.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::counts::H3Counts;
pub use super::head::{FrameType, Head, decode_head, is_reserved, kind};
use super::{Code, Error, varint};

#[cfg(test)]
mod tests;

/// The frame length limit [`FrameReader::new`] applies to every frame it buffers whole.
pub const DEFAULT_MAX_FRAME_LEN: u64 = 64 * 1024;

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2): the varint a stream opens with.
pub mod stream_type {
    /// The control stream (§6.2.1).
    pub const CONTROL: u64 = 0x00;
    /// A push stream (§6.2.2).
    pub const PUSH: u64 = 0x01;
    /// The QPACK encoder stream.
    pub const QPACK_ENCODER: u64 = 0x02;
    /// The QPACK decoder stream.
    pub const QPACK_DECODER: u64 = 0x03;
}

/// SETTINGS identifiers (RFC 9114 §7.2.4.1, RFC 9204 §5).
pub mod setting {
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY.
    pub const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
    /// SETTINGS_MAX_FIELD_SECTION_SIZE.
    pub const MAX_FIELD_SECTION_SIZE: u64 = 0x06;
    /// SETTINGS_QPACK_BLOCKED_STREAMS.
    pub const QPACK_BLOCKED_STREAMS: u64 = 0x07;
    /// HTTP/2's settings with no HTTP/3 counterpart: receiving one is H3_SETTINGS_ERROR.
    pub const HTTP2_ONLY: std::ops::RangeInclusive<u64> = 0x02..=0x05;
}

/// The SETTINGS parameters this crate knows (RFC 9114 §7.2.4.1, RFC 9204 §5); `None` for
/// one not sent (its default applies: 0, unlimited, 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settings {
    /// SETTINGS_QPACK_MAX_TABLE_CAPACITY.
    pub qpack_max_table_capacity: Option<u64>,
    /// SETTINGS_MAX_FIELD_SECTION_SIZE.
    pub max_field_section_size: Option<u64>,
    /// SETTINGS_QPACK_BLOCKED_STREAMS.
    pub qpack_blocked_streams: Option<u64>,
}

impl Settings {
    /// A client that never lets the peer use a dynamic table: capacity 0 and no blocked
    /// streams, said explicitly, and the largest field section it accepts.
    pub fn client(max_field_section_size: u64) -> Settings {
        Settings {
            qpack_max_table_capacity: Some(0),
            max_field_section_size: Some(max_field_section_size),
            qpack_blocked_streams: Some(0),
        }
    }

    /// Decodes a SETTINGS payload: a setting cut short is H3_FRAME_ERROR; HTTP/2's identifiers
    /// 0x02-0x05 and an identifier sent twice are H3_SETTINGS_ERROR; other identifiers are
    /// ignored (§7.2.4).
    pub fn decode(payload: &[u8]) -> Result<Settings, Error> {
        let mut settings = Settings::default();
        let mut others = Vec::new();
        let mut rest = payload;
        while !rest.is_empty() {
            let pair = varint::decode(rest).and_then(|(id, a)| {
                varint::decode(&rest[a..]).map(|(value, b)| (id, value, a + b))
            });
            let Some((id, value, n)) = pair else {
                return Err(Error::new(
                    Code::FrameError,
                    "SETTINGS ends inside a setting",
                ));
            };
            rest = &rest[n..];
            let slot = match id {
                setting::QPACK_MAX_TABLE_CAPACITY => &mut settings.qpack_max_table_capacity,
                setting::MAX_FIELD_SECTION_SIZE => &mut settings.max_field_section_size,
                setting::QPACK_BLOCKED_STREAMS => &mut settings.qpack_blocked_streams,
                id if setting::HTTP2_ONLY.contains(&id) => {
                    return Err(Error::new(
                        Code::SettingsError,
                        "an HTTP/2 setting HTTP/3 reserves",
                    ));
                }
                id => {
                    others.push(id);
                    continue;
                }
            };
            if slot.replace(value).is_some() {
                return Err(Error::new(Code::SettingsError, "a setting sent twice"));
            }
        }
        others.sort_unstable();
        if others.windows(2).any(|w| w[0] == w[1]) {
            return Err(Error::new(Code::SettingsError, "a setting sent twice"));
        }
        Ok(settings)
    }

    fn pairs(&self) -> impl Iterator<Item = (u64, u64)> {
        [
            (
                setting::QPACK_MAX_TABLE_CAPACITY,
                self.qpack_max_table_capacity,
            ),
            (setting::MAX_FIELD_SECTION_SIZE, self.max_field_section_size),
            (setting::QPACK_BLOCKED_STREAMS, self.qpack_blocked_streams),
        ]
        .into_iter()
        .filter_map(|(id, value)| Some((id, value?)))
    }

    /// The bytes of the payload [`Settings::encode_payload`] writes.
    pub fn payload_len(&self) -> usize {
        self.pairs()
            .map(|(id, value)| varint::encoded_len(id) + varint::encoded_len(value))
            .sum()
    }

    /// Appends the payload: the settings that are `Some`, in identifier order.
    ///
    /// # Panics
    /// If a value is above [`varint::MAX`].
    pub fn encode_payload(&self, out: &mut impl BufMut) {
        for (id, value) in self.pairs() {
            varint::encode(out, id);
            varint::encode(out, value);
        }
    }
}

/// What a [`FrameReader`] hands on. Reserved and unknown frames are skipped, not handed on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A piece of a DATA payload as it arrived, and the bytes of that frame still to come; a
    /// DATA frame of length 0 is one empty piece with nothing to come.
    Data { chunk: Bytes, remaining: u64 },
    /// A HEADERS payload: an encoded field section.
    Headers(Bytes),
    /// A PUSH_PROMISE: the push id and the encoded field section.
    PushPromise { push_id: u64, block: Bytes },
    /// A SETTINGS frame's parameters.
    Settings(Settings),
    /// A GOAWAY frame's stream or push id.
    GoAway(u64),
    /// A CANCEL_PUSH frame's push id.
    CancelPush(u64),
    /// A MAX_PUSH_ID frame's push id.
    MaxPushId(u64),
}

/// Where a [`FrameReader`] is in its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Data { remaining: u64 },
    Skip { kind: FrameType, remaining: u64 },
}

/// The frames of one stream (a request stream or the control stream, past its stream type),
/// read from the bytes as they arrive, counted in an [`H3Counts`].
///
/// After an error the stream is done for: the connection closes with the error's code.
#[derive(Debug, Clone)]
pub struct FrameReader {
    max_len: u64,
    state: State,
    counts: H3Counts,
}

impl Default for FrameReader {
    fn default() -> FrameReader {
        FrameReader::new(DEFAULT_MAX_FRAME_LEN)
    }
}

impl FrameReader {
    /// A reader that refuses frames longer than `max_len` among those it buffers whole.
    pub fn new(max_len: u64) -> FrameReader {
        FrameReader {
            max_len,
            state: State::Head,
            counts: H3Counts::default(),
        }
    }

    /// The frames counted so far: heads when accepted, payload bytes as they are consumed.
    pub fn counts(&self) -> &H3Counts {
        &self.counts
    }

    /// Whether the stream may end here: not inside a frame (§7.1: a stream that ends cleanly
    /// inside a frame is H3_FRAME_ERROR). Bytes still in the caller's buffer are a frame cut
    /// short too.
    pub fn at_frame_boundary(&self) -> bool {
        self.state == State::Head
    }

    /// Reads the next frame or DATA piece from `buf`: `Ok(None)` when more bytes are needed.
    /// Skipped frames' bytes are consumed as they come; a buffered frame is consumed whole,
    /// and only when it decodes.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, Error> {
        loop {
            match self.state {
                State::Head => {}
                State::Data { remaining } => {
                    if buf.is_empty() {
                        return Ok(None);
                    }
                    let n = remaining.min(buf.len() as u64);
                    let chunk = buf.split_to(n as usize).freeze();
                    self.counts.count_payload(FrameType::Data, n);
                    let remaining = remaining - n;
                    self.state = if remaining == 0 {
                        State::Head
                    } else {
                        State::Data { remaining }
                    };
                    return Ok(Some(Frame::Data { chunk, remaining }));
                }
                State::Skip { kind, remaining } => {
                    let n = remaining.min(buf.len() as u64);
                    buf.advance(n as usize);
                    self.counts.count_payload(kind, n);
                    if n < remaining {
                        self.state = State::Skip {
                            kind,
                            remaining: remaining - n,
                        };
                        return Ok(None);
                    }
                    self.state = State::Head;
                }
            }
            let Some(head) = decode_head(buf, self.max_len)? else {
                return Ok(None);
            };
            if head.kind == FrameType::Data || head.kind.skipped() {
                buf.advance(head.header_len);
                self.counts.count_head(&head);
                if head.kind == FrameType::Data {
                    self.state = State::Data {
                        remaining: head.len,
                    };
                    if head.len == 0 {
                        self.state = State::Head;
                        let chunk = Bytes::new();
                        return Ok(Some(Frame::Data {
                            chunk,
                            remaining: 0,
                        }));
                    }
                } else {
                    self.state = State::Skip {
                        kind: head.kind,
                        remaining: head.len,
                    };
                }
                continue;
            }
            // within max_len, which the caller keeps to what it can buffer
            let len = head.len as usize;
            if buf.len() - head.header_len < len {
                return Ok(None);
            }
            let payload = &buf[head.header_len..head.header_len + len];
            let frame = decode_payload(head.kind, payload)?;
            buf.advance(head.header_len);
            let payload = buf.split_to(len).freeze();
            self.counts.count_head(&head);
            self.counts.count_payload(head.kind, head.len);
            return Ok(Some(match frame {
                Parsed::Headers => Frame::Headers(payload),
                Parsed::PushPromise(push_id, at) => Frame::PushPromise {
                    push_id,
                    block: payload.slice(at..),
                },
                Parsed::Frame(frame) => frame,
            }));
        }
    }
}

/// A buffered payload decoded, before it is sliced out of the buffer.
enum Parsed {
    Headers,
    /// The push id and where the field section starts.
    PushPromise(u64, usize),
    Frame(Frame),
}

fn decode_payload(kind: FrameType, payload: &[u8]) -> Result<Parsed, Error> {
    let one_varint = || match varint::decode(payload) {
        Some((value, n)) if n == payload.len() => Ok(value),
        _ => Err(Error::new(
            Code::FrameError,
            "CANCEL_PUSH, GOAWAY or MAX_PUSH_ID payload is not one varint",
        )),
    };
    Ok(match kind {
        FrameType::Headers => Parsed::Headers,
        FrameType::PushPromise => {
            let Some((push_id, n)) = varint::decode(payload) else {
                return Err(Error::new(
                    Code::FrameError,
                    "PUSH_PROMISE ends inside its push id",
                ));
            };
            Parsed::PushPromise(push_id, n)
        }
        FrameType::Settings => Parsed::Frame(Frame::Settings(Settings::decode(payload)?)),
        FrameType::GoAway => Parsed::Frame(Frame::GoAway(one_varint()?)),
        FrameType::CancelPush => Parsed::Frame(Frame::CancelPush(one_varint()?)),
        FrameType::MaxPushId => Parsed::Frame(Frame::MaxPushId(one_varint()?)),
        // decode() hands DATA on and skips the rest before getting here
        FrameType::Data | FrameType::Reserved | FrameType::Unknown => {
            unreachable!("{kind:?} is not buffered")
        }
    })
}

/// Appends a frame head and returns it.
fn encode_head(out: &mut impl BufMut, kind: FrameType, code: u64, len: u64) -> Head {
    varint::encode(out, code);
    varint::encode(out, len);
    Head {
        kind,
        code,
        len,
        header_len: varint::encoded_len(code) + varint::encoded_len(len),
    }
}

/// Appends the head of a DATA frame of `len` payload bytes (the caller appends them).
pub fn encode_data_head(out: &mut impl BufMut, len: u64) -> Head {
    encode_head(out, FrameType::Data, kind::DATA, len)
}

/// Appends a HEADERS frame carrying the encoded field section `block`.
pub fn encode_headers(out: &mut impl BufMut, block: &[u8]) -> Head {
    let head = encode_head(out, FrameType::Headers, kind::HEADERS, block.len() as u64);
    out.put_slice(block);
    head
}

/// Appends a PUSH_PROMISE frame (a server's; here for tests and round trips).
pub fn encode_push_promise(out: &mut impl BufMut, push_id: u64, block: &[u8]) -> Head {
    let len = (varint::encoded_len(push_id) + block.len()) as u64;
    let head = encode_head(out, FrameType::PushPromise, kind::PUSH_PROMISE, len);
    varint::encode(out, push_id);
    out.put_slice(block);
    head
}

/// Appends a SETTINGS frame.
pub fn encode_settings(out: &mut impl BufMut, settings: &Settings) -> Head {
    let len = settings.payload_len() as u64;
    let head = encode_head(out, FrameType::Settings, kind::SETTINGS, len);
    settings.encode_payload(out);
    head
}

fn encode_one_varint(out: &mut impl BufMut, kind: FrameType, code: u64, value: u64) -> Head {
    let head = encode_head(out, kind, code, varint::encoded_len(value) as u64);
    varint::encode(out, value);
    head
}

/// Appends a GOAWAY frame with its stream or push id.
pub fn encode_goaway(out: &mut impl BufMut, id: u64) -> Head {
    encode_one_varint(out, FrameType::GoAway, kind::GOAWAY, id)
}

/// Appends a CANCEL_PUSH frame.
pub fn encode_cancel_push(out: &mut impl BufMut, push_id: u64) -> Head {
    encode_one_varint(out, FrameType::CancelPush, kind::CANCEL_PUSH, push_id)
}

/// Appends a MAX_PUSH_ID frame.
pub fn encode_max_push_id(out: &mut impl BufMut, push_id: u64) -> Head {
    encode_one_varint(out, FrameType::MaxPushId, kind::MAX_PUSH_ID, push_id)
}

/// Appends a reserved frame of type 0x1f * `n` + 0x21 (grease, §7.2.8) with `payload`.
///
/// # Panics
/// If the type code is above [`varint::MAX`].
pub fn encode_reserved(out: &mut impl BufMut, n: u64, payload: &[u8]) -> Head {
    let code = n
        .checked_mul(0x1f)
        .and_then(|c| c.checked_add(0x21))
        .filter(|&c| c <= varint::MAX)
        .expect("a reserved frame type above 2^62 - 1");
    let head = encode_head(out, FrameType::Reserved, code, payload.len() as u64);
    out.put_slice(payload);
    head
}
