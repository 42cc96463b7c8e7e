//! gRPC length-prefixed message framing plus `grpc-status` / `grpc-message` header codecs, and
//! the verdicts on a unary call's response (`unary`) and a server-streaming one's (`streaming`).

pub mod reflection;
pub mod streaming;
pub mod unary;

use std::fmt;

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Bytes in the message prefix: compressed flag (1) + big-endian length (4).
pub const PREFIX_LEN: usize = 5;
/// gRPC's default receive limit.
pub const DEFAULT_MAX_MESSAGE: usize = 4 * 1024 * 1024;

/// Errors produced by the gRPC codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The prefix announces more than the caller's limit (`max` saturates at `u32::MAX`).
    MessageTooLarge { len: u32, max: u32 },
    /// The compressed flag is set; no message encoding is negotiated by this client.
    CompressedUnsupported,
    /// The flag byte is neither 0 nor 1.
    BadFlag(u8),
    /// A `grpc-status` value is not an ASCII decimal number.
    BadStatus,
    /// The payload is not a valid protobuf message of the expected type.
    Decode(&'static str),
}

impl Error {}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::MessageTooLarge { len, max } => {
                write!(
                    f,
                    "gRPC message of {len} bytes exceeds the limit of {max} bytes"
                )
            }
            Error::CompressedUnsupported => {
                f.write_str("compressed gRPC messages are not supported")
            }
            Error::BadFlag(flag) => write!(f, "invalid gRPC message flag {flag:#04x}"),
            Error::BadStatus => f.write_str("invalid grpc-status value"),
            Error::Decode(ctx) => write!(f, "gRPC message decode failed: {ctx}"),
        }
    }
}

impl std::error::Error for Error {}

/// Appends 0x00, the big-endian u32 length, then the prost-encoded message.
///
/// # Panics
/// If the encoded message is larger than `u32::MAX` bytes, which the gRPC framing cannot
/// express (a caller bug, never caused by peer input).
pub fn encode<M: prost::Message>(msg: &M, dst: &mut BytesMut) {
    let len = msg.encoded_len();
    let prefix_len = u32::try_from(len).expect("gRPC message larger than u32::MAX bytes");
    dst.reserve(PREFIX_LEN + len);
    dst.put_u8(0);
    dst.put_u32(prefix_len);
    // Cannot fail: BytesMut grows on demand and the space is already reserved.
    let encoded = msg.encode(dst);
    debug_assert!(encoded.is_ok(), "prost encode into BytesMut failed");
}

/// Appends 0x00, the big-endian u32 length, then `payload` as is.
///
/// # Panics
/// If `payload` is larger than `u32::MAX` bytes (a caller bug).
pub fn encode_raw(payload: &[u8], dst: &mut BytesMut) {
    let prefix_len = u32::try_from(payload.len()).expect("gRPC message larger than u32::MAX bytes");
    dst.reserve(PREFIX_LEN + payload.len());
    dst.put_u8(0);
    dst.put_u32(prefix_len);
    dst.put_slice(payload);
}

/// Validates the prefix at the front of `src`; `Ok(Some(len))` is a payload length <= `max`.
fn check_prefix(src: &[u8], max: usize) -> Result<Option<usize>, Error> {
    let Some(&[flag, b0, b1, b2, b3]) = src.first_chunk::<PREFIX_LEN>() else {
        return Ok(None);
    };
    match flag {
        0 => {}
        1 => return Err(Error::CompressedUnsupported),
        other => return Err(Error::BadFlag(other)),
    }
    let len = u32::from_be_bytes([b0, b1, b2, b3]);
    match usize::try_from(len) {
        Ok(len) if len <= max => Ok(Some(len)),
        _ => Err(Error::MessageTooLarge {
            len,
            max: u32::try_from(max).unwrap_or(u32::MAX),
        }),
    }
}

/// Checks the prefix and, when the whole frame is present, returns its total length.
/// When only part of an acceptable frame is present, reserves room for the rest.
fn frame_len(src: &mut BytesMut, max: usize) -> Result<Option<(usize, usize)>, Error> {
    let Some(len) = check_prefix(src, max)? else {
        return Ok(None);
    };
    // len <= max, but `max` comes from the caller and may be usize::MAX.
    let total = PREFIX_LEN.checked_add(len).ok_or(Error::MessageTooLarge {
        len: u32::try_from(len).unwrap_or(u32::MAX),
        max: u32::try_from(max).unwrap_or(u32::MAX),
    })?;
    if src.len() < total {
        src.reserve(total - src.len());
        return Ok(None);
    }
    Ok(Some((len, total)))
}

/// One length-prefixed message from the front of `src`.
///
/// `Ok(None)` until 5+len bytes are there (room for the rest of an acceptable frame is
/// reserved). The flag (0 ok, 1 => [`Error::CompressedUnsupported`], other =>
/// [`Error::BadFlag`]) and `len <= max` are checked from the prefix alone, before anything
/// is reserved. On success the prefix and payload are consumed and the payload is
/// returned zero-copy; on error nothing is consumed.
pub fn decode(src: &mut BytesMut, max: usize) -> Result<Option<Bytes>, Error> {
    let Some((len, _)) = frame_len(src, max)? else {
        return Ok(None);
    };
    src.advance(PREFIX_LEN);
    Ok(Some(src.split_to(len).freeze()))
}

/// Like [`decode`], but the payload is lent to `take` and then consumed: no `Bytes` is made
/// (nor the buffer shared) for a message that is only looked at.
pub fn decode_with<R>(
    src: &mut BytesMut,
    max: usize,
    take: impl FnOnce(&[u8]) -> R,
) -> Result<Option<R>, Error> {
    let Some((_, total)) = frame_len(src, max)? else {
        return Ok(None);
    };
    let r = take(&src[PREFIX_LEN..total]);
    src.advance(total);
    Ok(Some(r))
}

/// Decodes a message type from one framed message at the front of `src`.
///
/// Same framing rules as [`decode`]; a payload that is not a valid `M` is
/// [`Error::Decode`] and, like every error, consumes nothing.
pub fn decode_message<M: prost::Message + Default>(
    src: &mut BytesMut,
    max: usize,
) -> Result<Option<M>, Error> {
    let Some((_, total)) = frame_len(src, max)? else {
        return Ok(None);
    };
    let payload = src.get(PREFIX_LEN..total).unwrap_or_default();
    let msg = M::decode(payload).map_err(|_| Error::Decode("invalid protobuf payload"))?;
    src.advance(total);
    Ok(Some(msg))
}

/// gRPC status codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
}

impl Code {
    /// The code for a numeric value; values outside 0..=16 are [`Code::Unknown`].
    pub fn from_u32(v: u32) -> Code {
        match v {
            0 => Code::Ok,
            1 => Code::Cancelled,
            2 => Code::Unknown,
            3 => Code::InvalidArgument,
            4 => Code::DeadlineExceeded,
            5 => Code::NotFound,
            6 => Code::AlreadyExists,
            7 => Code::PermissionDenied,
            8 => Code::ResourceExhausted,
            9 => Code::FailedPrecondition,
            10 => Code::Aborted,
            11 => Code::OutOfRange,
            12 => Code::Unimplemented,
            13 => Code::Internal,
            14 => Code::Unavailable,
            15 => Code::DataLoss,
            16 => Code::Unauthenticated,
            _ => Code::Unknown,
        }
    }

    /// The numeric value.
    pub fn as_u32(self) -> u32 {
        self as u32
    }

    /// The canonical upper-case name, e.g. `"DEADLINE_EXCEEDED"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Ok => "OK",
            Code::Cancelled => "CANCELLED",
            Code::Unknown => "UNKNOWN",
            Code::InvalidArgument => "INVALID_ARGUMENT",
            Code::DeadlineExceeded => "DEADLINE_EXCEEDED",
            Code::NotFound => "NOT_FOUND",
            Code::AlreadyExists => "ALREADY_EXISTS",
            Code::PermissionDenied => "PERMISSION_DENIED",
            Code::ResourceExhausted => "RESOURCE_EXHAUSTED",
            Code::FailedPrecondition => "FAILED_PRECONDITION",
            Code::Aborted => "ABORTED",
            Code::OutOfRange => "OUT_OF_RANGE",
            Code::Unimplemented => "UNIMPLEMENTED",
            Code::Internal => "INTERNAL",
            Code::Unavailable => "UNAVAILABLE",
            Code::DataLoss => "DATA_LOSS",
            Code::Unauthenticated => "UNAUTHENTICATED",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Parses a `grpc-status` header value (1*DIGIT: no sign, no whitespace) into a [`Code`].
///
/// Numbers outside 0..=16 (including ones too large for u32) are [`Code::Unknown`];
/// anything that is not 1*DIGIT is [`Error::BadStatus`].
pub fn parse_status(value: &[u8]) -> Result<Code, Error> {
    if value.is_empty() {
        return Err(Error::BadStatus);
    }
    let mut n: u32 = 0;
    for &b in value {
        if !b.is_ascii_digit() {
            return Err(Error::BadStatus);
        }
        n = n.saturating_mul(10).saturating_add(u32::from(b - b'0'));
    }
    Ok(Code::from_u32(n))
}

/// Percent-decodes a `grpc-message` value and appends it to `dst`.
///
/// Invalid escapes (`%` not followed by two hex digits) are kept literally, as the gRPC
/// spec asks; bytes that are not UTF-8 after decoding become U+FFFD. At most `max_len`
/// bytes are appended, cut at a character boundary. Works in a small stack buffer:
/// the only allocation is `dst` growing (by at most `max_len`).
pub fn decode_message_text(value: &[u8], max_len: usize, dst: &mut String) {
    dst.reserve(value.len().min(max_len));
    let mut budget = max_len;
    let mut buf = [0u8; 128];
    let mut filled = 0usize;
    let mut rest = value;
    loop {
        while let Some(slot) = buf.get_mut(filled) {
            let Some((&b, tail)) = rest.split_first() else {
                break;
            };
            let (byte, tail) = match (b, tail) {
                (b'%', &[hi, lo, ref after @ ..]) => match (hex_value(hi), hex_value(lo)) {
                    (Some(hi), Some(lo)) => ((hi << 4) | lo, after),
                    _ => (b'%', tail),
                },
                _ => (b, tail),
            };
            *slot = byte;
            filled += 1;
            rest = tail;
        }
        let last = rest.is_empty();
        let decoded = buf.get(..filled).unwrap_or_default();
        let Some(carry) = push_lossy(decoded, last, &mut budget, dst) else {
            return; // output limit reached
        };
        if last {
            return;
        }
        // Move an incomplete UTF-8 sequence (at most 3 bytes) to the front.
        buf.copy_within(filled - carry..filled, 0);
        filled = carry;
    }
}

/// Appends `bytes` to `dst` as lossy UTF-8 within `budget`.
///
/// Returns `None` once the budget is exhausted, otherwise how many trailing bytes form an
/// incomplete sequence that should be retried with more input (always 0 when `last`).
fn push_lossy(bytes: &[u8], last: bool, budget: &mut usize, dst: &mut String) -> Option<usize> {
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(text) => {
                push_bounded(text, budget, dst)?;
                return Some(0);
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                push_bounded(std::str::from_utf8(valid).unwrap_or_default(), budget, dst)?;
                match e.error_len() {
                    Some(bad) => {
                        push_bounded("\u{FFFD}", budget, dst)?;
                        rest = after.get(bad..).unwrap_or_default();
                    }
                    None if last => {
                        push_bounded("\u{FFFD}", budget, dst)?;
                        return Some(0);
                    }
                    None => return Some(after.len()),
                }
            }
        }
    }
}

/// Appends as much of `text` as fits in `budget`; `None` if it did not all fit.
fn push_bounded(text: &str, budget: &mut usize, dst: &mut String) -> Option<()> {
    if text.len() <= *budget {
        dst.push_str(text);
        *budget -= text.len();
        return Some(());
    }
    let mut end = *budget;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    dst.push_str(text.get(..end).unwrap_or_default());
    *budget = 0;
    None
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

fn needs_escape(b: u8) -> bool {
    !(0x20..=0x7e).contains(&b) || b == b'%'
}

/// Percent-encodes `text` for a `grpc-message` header (the server side): bytes outside
/// 0x20..=0x7E and `%` become `%XX` (upper-case hex); everything else is copied.
pub fn encode_message_text(text: &str, dst: &mut BytesMut) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let bytes = text.as_bytes();
    let escapes = bytes.iter().filter(|&&b| needs_escape(b)).count();
    dst.reserve(bytes.len() + 2 * escapes);
    let mut rest = bytes;
    while !rest.is_empty() {
        let plain = rest
            .iter()
            .position(|&b| needs_escape(b))
            .unwrap_or(rest.len());
        let (run, tail) = rest.split_at(plain);
        dst.put_slice(run);
        let Some((&b, tail)) = tail.split_first() else {
            break;
        };
        dst.put_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]);
        rest = tail;
    }
}

/// The last occurrence of length-delimited field `number` in an encoded protobuf message,
/// borrowed: a check of one field without decoding (and allocating) the whole message. `None`
/// when the field is absent; `Err(())` when the message is not valid protobuf wire format.
#[allow(clippy::result_unit_err)]
pub fn bytes_field(mut msg: &[u8], number: u32) -> Result<Option<&[u8]>, ()> {
    fn varint(b: &mut &[u8]) -> Result<u64, ()> {
        // one byte: every key of a field below 16 and every length below 128
        if let Some((&byte, rest)) = b.split_first()
            && byte < 0x80
        {
            *b = rest;
            return Ok(u64::from(byte));
        }
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let (&byte, rest) = b.split_first().ok_or(())?;
            *b = rest;
            if shift == 63 && byte > 1 {
                return Err(());
            }
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(())
    }
    let mut found = None;
    while !msg.is_empty() {
        let key = varint(&mut msg)?;
        let (field, wire_type) = (key >> 3, key & 7);
        if field == 0 {
            return Err(());
        }
        let skip = match wire_type {
            0 => {
                varint(&mut msg)?;
                0
            }
            1 => 8,
            5 => 4,
            2 => {
                let len = usize::try_from(varint(&mut msg)?).map_err(|_| ())?;
                if len > msg.len() {
                    return Err(());
                }
                if field == u64::from(number) {
                    found = Some(&msg[..len]);
                }
                len
            }
            _ => return Err(()),
        };
        msg = msg.get(skip..).ok_or(())?;
    }
    Ok(found)
}

#[cfg(test)]
mod tests;
