//! The verdict on a unary call's response, judged as its parts arrive: the response headers,
//! the DATA bytes, then the trailers; sans-IO, fed by the caller's h2 driver.
//!
//! A good response is `:status` 200, then exactly one message of at most the receive limit,
//! then trailers with `grpc-status: 0`; or, for an error, a trailers-only response (the status
//! in the headers). The message's announced length is judged as soon as its 5-byte prefix is
//! here, so an oversized message is refused after a few bytes, not after the limit's worth.

use std::fmt;

use bytes::{Bytes, BytesMut};

use super::{Code, Error, PREFIX_LEN, decode};

/// Why a unary response is not a good one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// the server answered with this HTTP status instead of 200; `code` is the gRPC status the
    /// gRPC spec maps it to
    HttpStatus { http: u16, code: Code },
    /// a non-zero grpc-status (its grpc-message, if any, is for the caller to decode)
    Status(Code),
    /// the framing is broken: an oversized or malformed message, or an invalid grpc-status
    Framing(Error),
    /// a trailers-only response with grpc-status 0: OK, but no message
    NoMessage,
    /// the stream ended without trailers
    NoTrailers,
    /// trailers without a grpc-status
    NoStatus,
    /// the stream ended inside the message
    Truncated,
    /// bytes after the message
    MoreThanOne,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::HttpStatus { http, .. } => write!(f, "HTTP {http} from a gRPC server"),
            Verdict::Status(code) => f.write_str(code.as_str()),
            Verdict::Framing(e) => e.fmt(f),
            Verdict::NoMessage => f.write_str("OK without a response message"),
            Verdict::NoTrailers => f.write_str("stream ended without trailers"),
            Verdict::NoStatus => f.write_str("trailers without grpc-status"),
            Verdict::Truncated => f.write_str("truncated response message"),
            Verdict::MoreThanOne => f.write_str("more than one response message"),
        }
    }
}

/// The gRPC spec's mapping of an HTTP status (from a non-gRPC hop) to a gRPC code.
pub fn http_to_grpc(status: u16) -> Code {
    match status {
        400 => Code::Internal,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::Unimplemented,
        429 | 502 | 503 | 504 => Code::Unavailable,
        _ => Code::Unknown,
    }
}

/// The response head of any call: `:status` 200, and a grpc-status only in a trailers-only
/// answer. `Ok(true)`: the body follows; `Ok(false)`: a trailers-only answer with status 0.
pub(super) fn judge_head(
    status: u16,
    grpc_status: Option<Result<Code, Error>>,
) -> Result<bool, Verdict> {
    if status != 200 {
        return Err(Verdict::HttpStatus {
            http: status,
            code: http_to_grpc(status),
        });
    }
    match grpc_status {
        None => Ok(true),
        Some(v) => match v.map_err(Verdict::Framing)? {
            Code::Ok => Ok(false),
            code => Err(Verdict::Status(code)),
        },
    }
}

/// One unary response being received. The message bytes go into the caller's buffer.
#[derive(Debug)]
pub struct UnaryResponse {
    max_message: usize,
}

impl UnaryResponse {
    /// A response whose message may be at most `max_message` bytes (the receive limit).
    pub fn new(max_message: usize) -> UnaryResponse {
        UnaryResponse { max_message }
    }

    /// The response headers: their `:status` and `grpc-status` (parsed by [`parse_status`]), if
    /// present. `Ok(true)`: the
    /// body (DATA, then trailers) follows; with a grpc-status here the response is
    /// trailers-only and always a verdict.
    pub fn headers(
        &self,
        status: u16,
        grpc_status: Option<Result<Code, Error>>,
    ) -> Result<bool, Verdict> {
        match judge_head(status, grpc_status)? {
            true => Ok(true),
            false => Err(Verdict::NoMessage),
        }
    }

    /// A DATA chunk: appended to `rx`, which holds the response's bytes so far. Refused once
    /// the bytes, or the length the prefix announces, exceed the limit.
    pub fn data(&self, rx: &mut BytesMut, chunk: &[u8]) -> Result<(), Verdict> {
        let too_large = |len: usize| {
            Verdict::Framing(Error::MessageTooLarge {
                len: u32::try_from(len).unwrap_or(u32::MAX),
                max: u32::try_from(self.max_message).unwrap_or(u32::MAX),
            })
        };
        if rx.len() + chunk.len() > self.max_message + PREFIX_LEN {
            return Err(too_large(rx.len() + chunk.len()));
        }
        make_room(rx, chunk, self.max_message);
        rx.extend_from_slice(chunk);
        if let Some(&[flag, a, b, c, d]) = rx.get(..PREFIX_LEN) {
            let announced = u32::from_be_bytes([a, b, c, d]);
            if flag <= 1 && announced as usize > self.max_message {
                return Err(too_large(announced as usize));
            }
        }
        Ok(())
    }

    /// The end of the stream: its trailers' grpc-status (`None` for no trailers at all is
    /// `trailers: false`). The one message, sliced out of `rx`, when everything was right.
    pub fn finish(
        &self,
        rx: &mut BytesMut,
        trailers: bool,
        grpc_status: Option<Result<Code, Error>>,
    ) -> Result<Bytes, Verdict> {
        if !trailers {
            return Err(Verdict::NoTrailers);
        }
        match grpc_status.transpose().map_err(Verdict::Framing)? {
            None => return Err(Verdict::NoStatus),
            Some(Code::Ok) => {}
            Some(code) => return Err(Verdict::Status(code)),
        }
        let message = decode(rx, self.max_message)
            .map_err(Verdict::Framing)?
            .ok_or(Verdict::Truncated)?;
        if !rx.is_empty() {
            return Err(Verdict::MoreThanOne);
        }
        Ok(message)
    }
}

/// How far ahead of the bytes at hand a message's prefix reserves room.
const PRESIZE_MAX: usize = 16 << 10;

/// Room in `rx` for the message that `chunk` continues while its prefix is not complete: its
/// whole frame once the prefix announces an acceptable length (at most `PRESIZE_MAX` ahead;
/// a large message grows as it comes), else the chunk. The buffer of the last response is
/// reused when it is large enough and no longer shared; otherwise a new one is made, rounded
/// up to 16 bytes, so responses that differ by a byte or two do not double it as `reserve`
/// would (with 100,000 calls in flight, each holds one).
fn make_room(rx: &mut BytesMut, chunk: &[u8], max: usize) {
    let have = rx.len();
    if have >= PREFIX_LEN {
        return;
    }
    let mut prefix = [0u8; PREFIX_LEN];
    let n = (PREFIX_LEN - have).min(chunk.len());
    prefix[..have].copy_from_slice(rx);
    prefix[have..have + n].copy_from_slice(&chunk[..n]);
    let mut want = have + chunk.len();
    if let (true, [0, a, b, c, d]) = (have + n == PREFIX_LEN, prefix) {
        let announced = u32::from_be_bytes([a, b, c, d]) as usize;
        if announced <= max {
            want = want.max(PREFIX_LEN + announced.min(PRESIZE_MAX));
        }
    }
    if !rx.try_reclaim(want - have) {
        let mut fresh = BytesMut::with_capacity(want.next_multiple_of(16));
        fresh.extend_from_slice(rx);
        *rx = fresh;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grpc::parse_status;

    fn framed(payload: &[u8]) -> Vec<u8> {
        let mut v = vec![0u8];
        v.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn a_good_response_in_any_chunks() {
        let whole = framed(b"hello");
        for split in 0..=whole.len() {
            let r = UnaryResponse::new(64);
            assert_eq!(r.headers(200, None), Ok(true));
            let mut rx = BytesMut::new();
            r.data(&mut rx, &whole[..split]).unwrap();
            r.data(&mut rx, &whole[split..]).unwrap();
            let m = r.finish(&mut rx, true, Some(parse_status(b"0"))).unwrap();
            assert_eq!(&m[..], b"hello");
            assert!(rx.is_empty());
        }
    }

    #[test]
    fn the_buffer_is_sized_once_for_responses_of_about_one_size() {
        let r = UnaryResponse::new(1 << 20);
        let mut rx = BytesMut::new();
        for len in [150usize, 151, 149, 152, 150] {
            let whole = framed(&vec![7u8; len]);
            r.data(&mut rx, &whole[..3]).unwrap();
            r.data(&mut rx, &whole[3..]).unwrap();
            // room for the whole frame, rounded to 16 bytes, not doubled
            assert!(
                (PREFIX_LEN + len..=160).contains(&(rx.capacity())),
                "{}",
                rx.capacity()
            );
            let m = r.finish(&mut rx, true, Some(parse_status(b"0"))).unwrap();
            assert_eq!(m.len(), len);
        }
        // a message still held elsewhere keeps its bytes
        let whole = framed(&[1u8; 100]);
        r.data(&mut rx, &whole).unwrap();
        let held = r.finish(&mut rx, true, Some(parse_status(b"0"))).unwrap();
        let other = framed(&[2u8; 100]);
        r.data(&mut rx, &other).unwrap();
        assert_eq!(rx.capacity(), 112);
        assert_eq!(&held[..], &[1u8; 100][..]);
        assert_eq!(
            &r.finish(&mut rx, true, Some(parse_status(b"0"))).unwrap()[..],
            &[2u8; 100][..]
        );
        // the prefix alone reserves at most PRESIZE_MAX
        let mut rx = BytesMut::new();
        r.data(&mut rx, &framed(&vec![0u8; 100_000])[..5]).unwrap();
        assert_eq!(
            rx.capacity(),
            (PRESIZE_MAX + PREFIX_LEN).next_multiple_of(16)
        );
    }

    #[test]
    fn headers_judge_the_http_status_and_trailers_only_answers() {
        let r = UnaryResponse::new(64);
        assert_eq!(
            r.headers(404, None),
            Err(Verdict::HttpStatus {
                http: 404,
                code: Code::Unimplemented
            })
        );
        assert_eq!(
            r.headers(200, Some(parse_status(b"5"))),
            Err(Verdict::Status(Code::NotFound))
        );
        assert_eq!(
            r.headers(200, Some(parse_status(b"0"))),
            Err(Verdict::NoMessage)
        );
        assert_eq!(
            r.headers(200, Some(parse_status(b"x"))),
            Err(Verdict::Framing(Error::BadStatus))
        );
        assert_eq!(http_to_grpc(503), Code::Unavailable);
        assert_eq!(http_to_grpc(500), Code::Unknown);
    }

    #[test]
    fn an_oversized_message_is_refused_from_its_prefix() {
        let r = UnaryResponse::new(16);
        let mut rx = BytesMut::new();
        // the prefix alone announces 4 GiB - 1
        let e = r.data(&mut rx, b"\0\xff\xff\xff\xff").unwrap_err();
        assert_eq!(
            e,
            Verdict::Framing(Error::MessageTooLarge {
                len: u32::MAX,
                max: 16
            })
        );
        // more bytes than the limit, whatever the prefix says
        let mut rx = BytesMut::new();
        let e = r.data(&mut rx, &[0u8; 22]).unwrap_err();
        assert!(matches!(
            e,
            Verdict::Framing(Error::MessageTooLarge { len: 22, max: 16 })
        ));
    }

    #[test]
    fn the_end_of_the_stream_is_judged() {
        let r = UnaryResponse::new(64);
        let msg = framed(b"ab");
        let with = |bytes: &[u8]| BytesMut::from(bytes);
        assert_eq!(
            r.finish(&mut with(&msg), false, None),
            Err(Verdict::NoTrailers)
        );
        assert_eq!(
            r.finish(&mut with(&msg), true, None),
            Err(Verdict::NoStatus)
        );
        assert_eq!(
            r.finish(&mut with(&msg), true, Some(parse_status(b"14"))),
            Err(Verdict::Status(Code::Unavailable))
        );
        assert_eq!(
            r.finish(&mut with(&msg[..4]), true, Some(parse_status(b"0"))),
            Err(Verdict::Truncated)
        );
        let mut two = msg.clone();
        two.extend_from_slice(&msg);
        assert_eq!(
            r.finish(&mut with(&two), true, Some(parse_status(b"0"))),
            Err(Verdict::MoreThanOne)
        );
        assert_eq!(
            r.finish(&mut with(b"\x02\0\0\0\0"), true, Some(parse_status(b"0"))),
            Err(Verdict::Framing(Error::BadFlag(2)))
        );
        assert_eq!(
            Verdict::NoMessage.to_string(),
            "OK without a response message"
        );
    }
}
