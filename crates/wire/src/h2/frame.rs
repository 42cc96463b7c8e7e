//! The HTTP/2 frame codec (RFC 9113 §4 and §6): the 9-byte frame header, [`decode`] for one
//! frame at the start of a buffer, and encoders that append frames to the caller's `Vec<u8>`.
//!
//! [`decode`] checks what a frame shows on its own, each violation a connection error
//! (§5.4.1) with its [`Reason`]: the length against the SETTINGS_MAX_FRAME_SIZE we announced,
//! the stream-id rule and the fixed or minimum length of each type, padding, and SETTINGS
//! values. What needs the connection's state is the caller's: stream states (§5.1), that
//! CONTINUATION follows HEADERS or PUSH_PROMISE without interleaving (§6.10), PUSH_PROMISE
//! when push is disabled and the promised id's validity (§6.6), a WINDOW_UPDATE increment of 0
//! (a stream or a connection error depending on the stream, §6.9), a stream depending on
//! itself (§5.3.1), flow control (§6.9.1).
//!
//! Decoding borrows: payload slices point into the input and nothing is allocated. Unknown
//! frame types, unknown flags, unknown SETTINGS identifiers and reserved bits are ignored, as
//! §4.1, §5.5 and §6.5.2 require.
//!
//! The constants here (the preface, the header length, frame types, flags, settings) and
//! [`Head`], the header parsed, are the ones every h2 file uses: the client, the sniffer and
//! the tally.

use std::fmt;

mod encode;
#[cfg(test)]
mod tests;

pub use encode::{
    encode_continuation, encode_data, encode_data_padded, encode_goaway, encode_headers,
    encode_headers_frame, encode_headers_with, encode_ping, encode_priority, encode_push_promise,
    encode_push_promise_padded, encode_raw, encode_rst_stream, encode_settings,
    encode_settings_ack, encode_window_update,
};

/// The client connection preface (§3.4), sent before the client's first SETTINGS frame.
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Bytes in every frame header: length (3), type (1), flags (1), stream identifier (4) (§4.1).
pub const HEADER_LEN: usize = 9;
/// The initial SETTINGS_MAX_FRAME_SIZE, and the smallest value it can take (§6.5.2).
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 16_384;
/// The largest SETTINGS_MAX_FRAME_SIZE, and the largest length the 24-bit field holds (§4.2).
pub const MAX_FRAME_SIZE_LIMIT: u32 = (1 << 24) - 1;
/// The largest flow-control window and WINDOW_UPDATE increment (§6.9.1).
pub const MAX_WINDOW: u32 = (1 << 31) - 1;
/// The initial flow-control window of the connection and of every stream (§6.9.2).
pub const DEFAULT_WINDOW: u32 = 65_535;

/// The 31 bits of a stream identifier, a window increment or a stream dependency: the top bit
/// is reserved (§4.1) or the exclusive flag (§6.2).
const ID_MASK: u32 = MAX_WINDOW;

/// Frame type codes (RFC 9113 §6).
pub mod kind {
    /// DATA (§6.1).
    pub const DATA: u8 = 0;
    /// HEADERS (§6.2).
    pub const HEADERS: u8 = 1;
    /// PRIORITY (§6.3), deprecated but still parsed.
    pub const PRIORITY: u8 = 2;
    /// RST_STREAM (§6.4).
    pub const RST_STREAM: u8 = 3;
    /// SETTINGS (§6.5).
    pub const SETTINGS: u8 = 4;
    /// PUSH_PROMISE (§6.6).
    pub const PUSH_PROMISE: u8 = 5;
    /// PING (§6.7).
    pub const PING: u8 = 6;
    /// GOAWAY (§6.8).
    pub const GOAWAY: u8 = 7;
    /// WINDOW_UPDATE (§6.9).
    pub const WINDOW_UPDATE: u8 = 8;
    /// CONTINUATION (§6.10).
    pub const CONTINUATION: u8 = 9;

    /// The RFC name of a frame type code, "UNKNOWN" for the codes §6 does not define (§4.1).
    pub fn name(kind: u8) -> &'static str {
        super::FrameType::from_u8(kind).name()
    }
}

/// A frame type code classified (RFC 9113 §6): the ten types §6 defines, every other code
/// `Unknown`. The ledger counts frames by it (`H2Counts::frames`, in declaration order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FrameType {
    Data,
    Headers,
    Priority,
    RstStream,
    Settings,
    PushPromise,
    Ping,
    GoAway,
    WindowUpdate,
    Continuation,
    Unknown,
}

impl FrameType {
    /// Every variant in declaration order, i.e. the order of `H2Counts::frames`.
    pub const ALL: [FrameType; 11] = [
        FrameType::Data,
        FrameType::Headers,
        FrameType::Priority,
        FrameType::RstStream,
        FrameType::Settings,
        FrameType::PushPromise,
        FrameType::Ping,
        FrameType::GoAway,
        FrameType::WindowUpdate,
        FrameType::Continuation,
        FrameType::Unknown,
    ];

    /// Classifies a frame header's type byte.
    pub fn from_u8(t: u8) -> Self {
        match t {
            kind::DATA => FrameType::Data,
            kind::HEADERS => FrameType::Headers,
            kind::PRIORITY => FrameType::Priority,
            kind::RST_STREAM => FrameType::RstStream,
            kind::SETTINGS => FrameType::Settings,
            kind::PUSH_PROMISE => FrameType::PushPromise,
            kind::PING => FrameType::Ping,
            kind::GOAWAY => FrameType::GoAway,
            kind::WINDOW_UPDATE => FrameType::WindowUpdate,
            kind::CONTINUATION => FrameType::Continuation,
            _ => FrameType::Unknown,
        }
    }

    /// The RFC name of the type, suitable as a metric key.
    pub fn name(self) -> &'static str {
        match self {
            FrameType::Data => "DATA",
            FrameType::Headers => "HEADERS",
            FrameType::Priority => "PRIORITY",
            FrameType::RstStream => "RST_STREAM",
            FrameType::Settings => "SETTINGS",
            FrameType::PushPromise => "PUSH_PROMISE",
            FrameType::Ping => "PING",
            FrameType::GoAway => "GOAWAY",
            FrameType::WindowUpdate => "WINDOW_UPDATE",
            FrameType::Continuation => "CONTINUATION",
            FrameType::Unknown => "UNKNOWN",
        }
    }
}

/// Flags (RFC 9113 §6): each is defined for some frame types only; the others ignore it.
pub mod flag {
    /// DATA, HEADERS: the last frame the sender sends on the stream (§6.1, §6.2).
    pub const END_STREAM: u8 = 0x1;
    /// SETTINGS, PING: an acknowledgement (§6.5, §6.7).
    pub const ACK: u8 = 0x1;
    /// HEADERS, PUSH_PROMISE, CONTINUATION: the field block ends in this frame (§6.2).
    pub const END_HEADERS: u8 = 0x4;
    /// DATA, HEADERS, PUSH_PROMISE: a Pad Length byte and padding are present (§6.1).
    pub const PADDED: u8 = 0x8;
    /// HEADERS: the exclusive flag, stream dependency and weight are present (§6.2).
    pub const PRIORITY: u8 = 0x20;
}

/// SETTINGS parameter identifiers (RFC 9113 §6.5.2).
pub mod setting {
    /// SETTINGS_HEADER_TABLE_SIZE.
    pub const HEADER_TABLE_SIZE: u16 = 0x1;
    /// SETTINGS_ENABLE_PUSH.
    pub const ENABLE_PUSH: u16 = 0x2;
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub const MAX_CONCURRENT_STREAMS: u16 = 0x3;
    /// SETTINGS_INITIAL_WINDOW_SIZE.
    pub const INITIAL_WINDOW_SIZE: u16 = 0x4;
    /// SETTINGS_MAX_FRAME_SIZE.
    pub const MAX_FRAME_SIZE: u16 = 0x5;
    /// SETTINGS_MAX_HEADER_LIST_SIZE.
    pub const MAX_HEADER_LIST_SIZE: u16 = 0x6;
}

/// An error code (RFC 9113 §7) of RST_STREAM and GOAWAY, as a newtype so that unknown codes
/// survive (§7: they must not trigger special behavior and may be treated as INTERNAL_ERROR).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Reason(pub u32);

impl Reason {
    /// A graceful shutdown, not an error (§7).
    pub const NO_ERROR: Reason = Reason(0x0);
    /// An unspecific protocol error (§7).
    pub const PROTOCOL_ERROR: Reason = Reason(0x1);
    /// An unexpected internal error (§7).
    pub const INTERNAL_ERROR: Reason = Reason(0x2);
    /// The peer violated flow control (§7).
    pub const FLOW_CONTROL_ERROR: Reason = Reason(0x3);
    /// SETTINGS were not acknowledged in time (§7).
    pub const SETTINGS_TIMEOUT: Reason = Reason(0x4);
    /// A frame after the stream was half-closed (§7).
    pub const STREAM_CLOSED: Reason = Reason(0x5);
    /// A frame with an invalid size (§7).
    pub const FRAME_SIZE_ERROR: Reason = Reason(0x6);
    /// The stream was refused before any application processing (§7).
    pub const REFUSED_STREAM: Reason = Reason(0x7);
    /// The stream is no longer needed (§7).
    pub const CANCEL: Reason = Reason(0x8);
    /// The field-compression context cannot be maintained (§7).
    pub const COMPRESSION_ERROR: Reason = Reason(0x9);
    /// The CONNECT request's connection was reset or abnormally closed (§7).
    pub const CONNECT_ERROR: Reason = Reason(0xa);
    /// The peer behaves in a way that may generate excessive load (§7).
    pub const ENHANCE_YOUR_CALM: Reason = Reason(0xb);
    /// The transport lacks the minimum security requirements (§7, §9.2).
    pub const INADEQUATE_SECURITY: Reason = Reason(0xc);
    /// HTTP/1.1 must be used instead of HTTP/2 (§7).
    pub const HTTP_1_1_REQUIRED: Reason = Reason(0xd);

    /// The code's name in §7, "UNKNOWN" for codes it does not define.
    pub fn name(self) -> &'static str {
        match self.0 {
            0x0 => "NO_ERROR",
            0x1 => "PROTOCOL_ERROR",
            0x2 => "INTERNAL_ERROR",
            0x3 => "FLOW_CONTROL_ERROR",
            0x4 => "SETTINGS_TIMEOUT",
            0x5 => "STREAM_CLOSED",
            0x6 => "FRAME_SIZE_ERROR",
            0x7 => "REFUSED_STREAM",
            0x8 => "CANCEL",
            0x9 => "COMPRESSION_ERROR",
            0xa => "CONNECT_ERROR",
            0xb => "ENHANCE_YOUR_CALM",
            0xc => "INADEQUATE_SECURITY",
            0xd => "HTTP_1_1_REQUIRED",
            _ => "UNKNOWN",
        }
    }

    /// What the code means, in a few words (after §7), for failure messages.
    pub fn meaning(self) -> &'static str {
        match self.0 {
            0x0 => "graceful shutdown",
            0x1 => "protocol error",
            0x2 => "internal error",
            0x3 => "flow-control error",
            0x4 => "settings not acknowledged in time",
            0x5 => "frame on a closed stream",
            0x6 => "frame size error",
            0x7 => "stream refused before processing",
            0x8 => "stream canceled",
            0x9 => "compression state error",
            0xa => "CONNECT tunnel error",
            0xb => "excessive load (enhance your calm)",
            0xc => "inadequate TLS security",
            0xd => "HTTP/1.1 required",
            _ => "unknown error code",
        }
    }
}

/// The name (§7); an unknown code as "UNKNOWN (0x...)" with its number.
impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            "UNKNOWN" => write!(f, "UNKNOWN ({:#x})", self.0),
            name => f.write_str(name),
        }
    }
}

/// The 9-byte frame header (RFC 9113 §4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    /// The payload length (24 bits), excluding these 9 bytes.
    pub len: u32,
    /// The frame type (see [`kind`]).
    pub kind: u8,
    /// The type-specific flags (see [`flag`]).
    pub flags: u8,
    /// The stream identifier, reserved bit cleared.
    pub stream: u32,
}

impl Head {
    /// Parses a frame header; the reserved bit of the stream identifier is ignored (§4.1).
    pub fn parse(b: &[u8; HEADER_LEN]) -> Head {
        Head {
            len: u32::from_be_bytes([0, b[0], b[1], b[2]]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & ID_MASK,
        }
    }

    /// Appends the 9 bytes of the header, the reserved bit unset (§4.1).
    ///
    /// # Panics
    ///
    /// If `len` does not fit the 24-bit length field (above [`MAX_FRAME_SIZE_LIMIT`]): the
    /// caller must split its payload.
    pub fn encode(&self, out: &mut Vec<u8>) {
        assert!(
            self.len <= MAX_FRAME_SIZE_LIMIT,
            "h2 frame payload of {} bytes does not fit the 24-bit length",
            self.len
        );
        let [_, l0, l1, l2] = self.len.to_be_bytes();
        let [s0, s1, s2, s3] = (self.stream & ID_MASK).to_be_bytes();
        out.extend_from_slice(&[l0, l1, l2, self.kind, self.flags, s0, s1, s2, s3]);
    }
}

/// The priority fields of HEADERS and PRIORITY frames (RFC 9113 §5.3.2, §6.3), which RFC 9113
/// deprecates but still frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Priority {
    /// The stream this one depends on (31 bits).
    pub dependency: u32,
    /// The exclusive flag (the top bit of the dependency field).
    pub exclusive: bool,
    /// The weight field as sent: the weight minus one (weights are 1..=256).
    pub weight: u8,
}

impl Priority {
    /// Parses the 5 bytes of the fields.
    fn parse(b: &[u8; 5]) -> Priority {
        let dep = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        Priority {
            dependency: dep & ID_MASK,
            exclusive: dep & !ID_MASK != 0,
            weight: b[4],
        }
    }

    /// The 5 bytes of the fields.
    fn to_bytes(self) -> [u8; 5] {
        let dep = (self.dependency & ID_MASK) | if self.exclusive { !ID_MASK } else { 0 };
        let [d0, d1, d2, d3] = dep.to_be_bytes();
        [d0, d1, d2, d3, self.weight]
    }
}

/// SETTINGS parameters (RFC 9113 §6.5.2); `None` = not present in the frame. Unknown
/// identifiers are ignored; when an identifier repeats, the last value wins (§6.5.3 processes
/// them in order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// SETTINGS_HEADER_TABLE_SIZE (0x1): the HPACK dynamic table size the sender allows.
    pub header_table_size: Option<u32>,
    /// SETTINGS_ENABLE_PUSH (0x2): only 0 and 1 are valid.
    pub enable_push: Option<bool>,
    /// SETTINGS_MAX_CONCURRENT_STREAMS (0x3).
    pub max_concurrent_streams: Option<u32>,
    /// SETTINGS_INITIAL_WINDOW_SIZE (0x4): at most [`MAX_WINDOW`].
    pub initial_window_size: Option<u32>,
    /// SETTINGS_MAX_FRAME_SIZE (0x5): from [`DEFAULT_MAX_FRAME_SIZE`] to
    /// [`MAX_FRAME_SIZE_LIMIT`].
    pub max_frame_size: Option<u32>,
    /// SETTINGS_MAX_HEADER_LIST_SIZE (0x6): advisory.
    pub max_header_list_size: Option<u32>,
}

/// One decoded frame (RFC 9113 §6); payload slices borrow from the input buffer, padding
/// removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// DATA (§6.1).
    Data {
        /// The stream (never 0).
        stream: u32,
        /// The data, without Pad Length and padding.
        data: &'a [u8],
        /// END_STREAM.
        end_stream: bool,
        /// The whole payload length, Pad Length byte and padding included: what flow control
        /// counts (§6.9.1). `flow_len - data.len()` is 0 without padding, else 1 + the pad
        /// length.
        flow_len: u32,
    },
    /// HEADERS (§6.2).
    Headers {
        /// The stream (never 0).
        stream: u32,
        /// The field block fragment, without padding and priority fields.
        block: &'a [u8],
        /// END_STREAM.
        end_stream: bool,
        /// END_HEADERS: no CONTINUATION follows.
        end_headers: bool,
        /// The priority fields, when the PRIORITY flag is set. A dependency on the frame's own
        /// stream is returned as is: it is a stream error (§5.3.1) the caller raises, after
        /// decoding the field block so the HPACK state stays in step (§4.3).
        priority: Option<Priority>,
    },
    /// PRIORITY (§6.3). A dependency on the frame's own stream is returned as is: it is a
    /// stream error (§5.3.1) for the caller to raise or ignore.
    Priority {
        /// The stream (never 0).
        stream: u32,
        /// The priority fields.
        priority: Priority,
    },
    /// RST_STREAM (§6.4).
    RstStream {
        /// The stream (never 0).
        stream: u32,
        /// The error code.
        reason: Reason,
    },
    /// SETTINGS (§6.5); always on stream 0.
    Settings {
        /// ACK: an acknowledgement, with empty `settings`.
        ack: bool,
        /// The parameters present, validated (§6.5.2).
        settings: Settings,
    },
    /// PUSH_PROMISE (§6.6).
    PushPromise {
        /// The stream the promise is associated with (never 0).
        stream: u32,
        /// The promised stream identifier, reserved bit cleared; its validity is the caller's.
        promised: u32,
        /// The field block fragment, without padding.
        block: &'a [u8],
        /// END_HEADERS: no CONTINUATION follows.
        end_headers: bool,
    },
    /// PING (§6.7); always on stream 0.
    Ping {
        /// ACK: a response, to carry the same data back.
        ack: bool,
        /// The opaque data.
        data: [u8; 8],
    },
    /// GOAWAY (§6.8); always on stream 0.
    GoAway {
        /// The last stream identifier the sender may have processed, reserved bit cleared.
        last_stream: u32,
        /// The error code.
        reason: Reason,
        /// The additional debug data.
        debug: &'a [u8],
    },
    /// WINDOW_UPDATE (§6.9).
    WindowUpdate {
        /// The stream, 0 for the connection's window.
        stream: u32,
        /// The increment, reserved bit cleared. 0 is returned as is: the caller decides
        /// between a stream and a connection error (§6.9).
        increment: u32,
    },
    /// CONTINUATION (§6.10).
    Continuation {
        /// The stream (never 0).
        stream: u32,
        /// The field block fragment.
        block: &'a [u8],
        /// END_HEADERS: the field block ends here.
        end_headers: bool,
    },
    /// A frame of a type §6 does not define, which the receiver must ignore (§4.1, §5.5)
    /// (except in a field block, where only CONTINUATION may come, §6.10: the caller's).
    Unknown {
        /// The type code.
        kind: u8,
        /// The stream identifier.
        stream: u32,
        /// The payload length.
        len: u32,
    },
}

impl Frame<'_> {
    /// The frame's type code (§6).
    pub fn kind(&self) -> u8 {
        match self {
            Frame::Data { .. } => kind::DATA,
            Frame::Headers { .. } => kind::HEADERS,
            Frame::Priority { .. } => kind::PRIORITY,
            Frame::RstStream { .. } => kind::RST_STREAM,
            Frame::Settings { .. } => kind::SETTINGS,
            Frame::PushPromise { .. } => kind::PUSH_PROMISE,
            Frame::Ping { .. } => kind::PING,
            Frame::GoAway { .. } => kind::GOAWAY,
            Frame::WindowUpdate { .. } => kind::WINDOW_UPDATE,
            Frame::Continuation { .. } => kind::CONTINUATION,
            Frame::Unknown { kind, .. } => *kind,
        }
    }

    /// The stream identifier of the frame header (§4.1): 0 for SETTINGS, PING and GOAWAY; for
    /// PUSH_PROMISE the associated stream, not the promised one.
    pub fn stream(&self) -> u32 {
        match *self {
            Frame::Data { stream, .. }
            | Frame::Headers { stream, .. }
            | Frame::Priority { stream, .. }
            | Frame::RstStream { stream, .. }
            | Frame::PushPromise { stream, .. }
            | Frame::WindowUpdate { stream, .. }
            | Frame::Continuation { stream, .. }
            | Frame::Unknown { stream, .. } => stream,
            Frame::Settings { .. } | Frame::Ping { .. } | Frame::GoAway { .. } => 0,
        }
    }
}

/// A frame that cannot be decoded: always a connection error (RFC 9113 §5.4.1) with this
/// reason, to be answered with GOAWAY. (A PRIORITY frame of the wrong length is a stream error
/// in §6.3; it is reported here too, as §5.4 lets an endpoint treat any stream error as a
/// connection error.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Error {
    /// The error code for GOAWAY.
    pub reason: Reason,
    /// The frame's type code.
    pub kind: u8,
    /// What is wrong, e.g. "PING length is not 8".
    pub what: &'static str,
}

/// E.g. "FRAME_SIZE_ERROR in a PING frame: PING length is not 8".
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} in a {} frame: {}",
            self.reason,
            kind::name(self.kind),
            self.what
        )
    }
}

impl std::error::Error for Error {}

/// Decodes the frame at the start of `buf` (RFC 9113 §4.1, §6), if all of it is there:
/// `Ok(None)` = need more bytes (nothing is consumed, nothing allocated). Returns the frame and
/// the number of bytes it occupies ([`HEADER_LEN`] + its length).
///
/// `max_frame_size` is the SETTINGS_MAX_FRAME_SIZE we announced: a longer frame is a
/// FRAME_SIZE_ERROR (§4.2) as soon as its header is in, before the payload arrives, so a
/// hostile length never makes the caller buffer 16 MiB. The other errors the header alone
/// shows (stream-id rules, fixed and minimum lengths) are also returned from the header alone;
/// the payload's (padding, SETTINGS values) once the whole frame is in.
pub fn decode(buf: &[u8], max_frame_size: u32) -> Result<Option<(Frame<'_>, usize)>, Error> {
    let Some(head) = buf.first_chunk::<HEADER_LEN>() else {
        return Ok(None);
    };
    let head = Head::parse(head);
    check_head(&head, max_frame_size)?;
    // `len` is at most 2^24 - 1, so this cannot overflow a usize of 32 bits or more.
    let end = HEADER_LEN + head.len as usize;
    let Some(payload) = buf.get(HEADER_LEN..end) else {
        return Ok(None);
    };
    Ok(Some((decode_payload(head, payload)?, end)))
}

/// The error of a frame of `head`'s type.
fn error(head: &Head, reason: Reason, what: &'static str) -> Error {
    Error {
        reason,
        kind: head.kind,
        what,
    }
}

/// Whether `head` has `flag` set.
fn has(head: &Head, flag: u8) -> bool {
    head.flags & flag != 0
}

/// The checks a frame header allows on its own: size (§4.2), stream identifier and length per
/// type (§6).
fn check_head(head: &Head, max_frame_size: u32) -> Result<(), Error> {
    let fail = |reason, what| Err(error(head, reason, what));
    if head.len > max_frame_size {
        return fail(
            Reason::FRAME_SIZE_ERROR,
            "length exceeds SETTINGS_MAX_FRAME_SIZE",
        );
    }
    let len = head.len;
    let padded = u32::from(has(head, flag::PADDED));
    match head.kind {
        kind::DATA
        | kind::HEADERS
        | kind::PRIORITY
        | kind::RST_STREAM
        | kind::PUSH_PROMISE
        | kind::CONTINUATION
            if head.stream == 0 =>
        {
            fail(Reason::PROTOCOL_ERROR, "stream identifier is 0")
        }
        kind::SETTINGS | kind::PING | kind::GOAWAY if head.stream != 0 => {
            fail(Reason::PROTOCOL_ERROR, "stream identifier is not 0")
        }
        kind::DATA if len < padded => fail(
            Reason::FRAME_SIZE_ERROR,
            "PADDED frame too short for the pad length",
        ),
        kind::HEADERS if len < padded + if has(head, flag::PRIORITY) { 5 } else { 0 } => fail(
            Reason::FRAME_SIZE_ERROR,
            "frame too short for the pad length and priority fields",
        ),
        kind::PRIORITY if len != 5 => fail(Reason::FRAME_SIZE_ERROR, "PRIORITY length is not 5"),
        kind::RST_STREAM if len != 4 => {
            fail(Reason::FRAME_SIZE_ERROR, "RST_STREAM length is not 4")
        }
        kind::SETTINGS if has(head, flag::ACK) && len != 0 => {
            fail(Reason::FRAME_SIZE_ERROR, "SETTINGS ACK with a payload")
        }
        kind::SETTINGS if !len.is_multiple_of(6) => fail(
            Reason::FRAME_SIZE_ERROR,
            "SETTINGS length is not a multiple of 6",
        ),
        kind::PUSH_PROMISE if len < padded + 4 => fail(
            Reason::FRAME_SIZE_ERROR,
            "frame too short for the pad length and promised stream",
        ),
        kind::PING if len != 8 => fail(Reason::FRAME_SIZE_ERROR, "PING length is not 8"),
        kind::GOAWAY if len < 8 => fail(Reason::FRAME_SIZE_ERROR, "GOAWAY shorter than 8"),
        kind::WINDOW_UPDATE if len != 4 => {
            fail(Reason::FRAME_SIZE_ERROR, "WINDOW_UPDATE length is not 4")
        }
        _ => Ok(()),
    }
}

/// The frame of a whole payload whose header passed [`check_head`].
fn decode_payload(head: Head, payload: &[u8]) -> Result<Frame<'_>, Error> {
    // The length checks were done on the header; a payload they did not cover becomes this
    // error instead of a panic.
    let short = || error(&head, Reason::FRAME_SIZE_ERROR, "payload too short");
    let stream = head.stream;
    Ok(match head.kind {
        kind::DATA => Frame::Data {
            stream,
            data: unpad(&head, payload, 0)?,
            end_stream: has(&head, flag::END_STREAM),
            flow_len: head.len,
        },
        kind::HEADERS => {
            let fixed = if has(&head, flag::PRIORITY) { 5 } else { 0 };
            let rest = unpad(&head, payload, fixed)?;
            let (priority, block) = if fixed == 0 {
                (None, rest)
            } else {
                let (p, block) = rest.split_first_chunk::<5>().ok_or_else(short)?;
                (Some(Priority::parse(p)), block)
            };
            Frame::Headers {
                stream,
                block,
                end_stream: has(&head, flag::END_STREAM),
                end_headers: has(&head, flag::END_HEADERS),
                priority,
            }
        }
        kind::PRIORITY => Frame::Priority {
            stream,
            priority: Priority::parse(payload.first_chunk().ok_or_else(short)?),
        },
        kind::RST_STREAM => Frame::RstStream {
            stream,
            reason: Reason(be32(payload.first_chunk().ok_or_else(short)?)),
        },
        kind::SETTINGS => Frame::Settings {
            ack: has(&head, flag::ACK),
            settings: parse_settings(&head, payload)?,
        },
        kind::PUSH_PROMISE => {
            let rest = unpad(&head, payload, 4)?;
            let (promised, block) = rest.split_first_chunk::<4>().ok_or_else(short)?;
            Frame::PushPromise {
                stream,
                promised: be32(promised) & ID_MASK,
                block,
                end_headers: has(&head, flag::END_HEADERS),
            }
        }
        kind::PING => Frame::Ping {
            ack: has(&head, flag::ACK),
            data: *payload.first_chunk().ok_or_else(short)?,
        },
        kind::GOAWAY => {
            let (last, debug) = payload.split_first_chunk::<4>().ok_or_else(short)?;
            let (reason, debug) = debug.split_first_chunk::<4>().ok_or_else(short)?;
            Frame::GoAway {
                last_stream: be32(last) & ID_MASK,
                reason: Reason(be32(reason)),
                debug,
            }
        }
        kind::WINDOW_UPDATE => Frame::WindowUpdate {
            stream,
            increment: be32(payload.first_chunk().ok_or_else(short)?) & ID_MASK,
        },
        kind::CONTINUATION => Frame::Continuation {
            stream,
            block: payload,
            end_headers: has(&head, flag::END_HEADERS),
        },
        kind => Frame::Unknown {
            kind,
            stream,
            len: head.len,
        },
    })
}

/// A big-endian u32.
fn be32(b: &[u8; 4]) -> u32 {
    u32::from_be_bytes(*b)
}

/// The payload without Pad Length and padding when PADDED is set (§6.1, §6.2, §6.6), keeping
/// room for `fixed` bytes of fields before the content: padding that eats into them or past
/// the payload is a PROTOCOL_ERROR.
fn unpad<'a>(head: &Head, payload: &'a [u8], fixed: usize) -> Result<&'a [u8], Error> {
    if !has(head, flag::PADDED) {
        return Ok(payload);
    }
    let Some((&pad, rest)) = payload.split_first() else {
        return Err(error(
            head,
            Reason::FRAME_SIZE_ERROR,
            "PADDED frame too short for the pad length",
        ));
    };
    match rest.len().checked_sub(fixed + usize::from(pad)) {
        Some(content) => Ok(&rest[..fixed + content]),
        None => Err(error(
            head,
            Reason::PROTOCOL_ERROR,
            "pad length exceeds payload",
        )),
    }
}

/// The parameters of a SETTINGS payload whose length is a multiple of 6 (§6.5.1), validated
/// (§6.5.2); unknown identifiers are ignored.
fn parse_settings(head: &Head, payload: &[u8]) -> Result<Settings, Error> {
    let fail = |reason, what| Err(error(head, reason, what));
    let mut s = Settings::default();
    let (params, _) = payload.as_chunks::<6>();
    for &[i0, i1, v0, v1, v2, v3] in params {
        let value = u32::from_be_bytes([v0, v1, v2, v3]);
        match u16::from_be_bytes([i0, i1]) {
            setting::HEADER_TABLE_SIZE => s.header_table_size = Some(value),
            setting::ENABLE_PUSH => match value {
                0 | 1 => s.enable_push = Some(value == 1),
                _ => return fail(Reason::PROTOCOL_ERROR, "SETTINGS_ENABLE_PUSH not 0 or 1"),
            },
            setting::MAX_CONCURRENT_STREAMS => s.max_concurrent_streams = Some(value),
            setting::INITIAL_WINDOW_SIZE if value > MAX_WINDOW => {
                return fail(
                    Reason::FLOW_CONTROL_ERROR,
                    "SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1",
                );
            }
            setting::INITIAL_WINDOW_SIZE => s.initial_window_size = Some(value),
            setting::MAX_FRAME_SIZE
                if !(DEFAULT_MAX_FRAME_SIZE..=MAX_FRAME_SIZE_LIMIT).contains(&value) =>
            {
                return fail(
                    Reason::PROTOCOL_ERROR,
                    "SETTINGS_MAX_FRAME_SIZE outside 2^14..2^24-1",
                );
            }
            setting::MAX_FRAME_SIZE => s.max_frame_size = Some(value),
            setting::MAX_HEADER_LIST_SIZE => s.max_header_list_size = Some(value),
            _ => {}
        }
    }
    Ok(s)
}
