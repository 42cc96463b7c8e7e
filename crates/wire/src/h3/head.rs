//! A frame head (RFC 9114 §7.1): the type and length varints, the type classified.
//!
//! [`decode_head`] checks what a frame head shows on its own: HTTP/2's frame types that
//! HTTP/3 reserved (0x02, 0x06, 0x08, 0x09) are H3_FRAME_UNEXPECTED (§7.2.8); a length over
//! the caller's limit is H3_EXCESSIVE_LOAD for every type that is buffered whole (all but
//! DATA, whose payload is handed on in pieces, and the reserved and unknown types, whose
//! payload is skipped as it arrives); a CANCEL_PUSH, GOAWAY or MAX_PUSH_ID that cannot hold
//! exactly one varint is H3_FRAME_ERROR (§7.1).

use super::{Code, Error, varint};

/// Frame type codes (RFC 9114 §7.2).
pub mod kind {
    /// DATA (§7.2.1).
    pub const DATA: u64 = 0x00;
    /// HEADERS (§7.2.2).
    pub const HEADERS: u64 = 0x01;
    /// CANCEL_PUSH (§7.2.3).
    pub const CANCEL_PUSH: u64 = 0x03;
    /// SETTINGS (§7.2.4).
    pub const SETTINGS: u64 = 0x04;
    /// PUSH_PROMISE (§7.2.5).
    pub const PUSH_PROMISE: u64 = 0x05;
    /// GOAWAY (§7.2.6).
    pub const GOAWAY: u64 = 0x07;
    /// MAX_PUSH_ID (§7.2.7).
    pub const MAX_PUSH_ID: u64 = 0x0d;
    /// HTTP/2's PRIORITY, PING, WINDOW_UPDATE and CONTINUATION: reserved, an error (§7.2.8).
    pub const HTTP2_ONLY: [u64; 4] = [0x02, 0x06, 0x08, 0x09];
}

/// Whether `code` has the form 0x1f * N + 0x21 that frame types, settings, stream types and
/// error codes reserve for greasing (RFC 9114 §7.2.8, §7.2.4.1, §6.2.3, §8.1).
pub fn is_reserved(code: u64) -> bool {
    code >= 0x21 && (code - 0x21).is_multiple_of(0x1f)
}

/// A frame type code classified. The ledger counts frames by it (`H3Counts::frames`, in
/// declaration order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FrameType {
    Data,
    Headers,
    CancelPush,
    Settings,
    PushPromise,
    GoAway,
    MaxPushId,
    /// 0x1f * N + 0x21: grease, skipped.
    Reserved,
    /// Any other code that is not HTTP/2's: skipped (§9).
    Unknown,
}

impl FrameType {
    /// Every variant in declaration order, i.e. the order of `H3Counts::frames`.
    pub const ALL: [FrameType; 9] = [
        FrameType::Data,
        FrameType::Headers,
        FrameType::CancelPush,
        FrameType::Settings,
        FrameType::PushPromise,
        FrameType::GoAway,
        FrameType::MaxPushId,
        FrameType::Reserved,
        FrameType::Unknown,
    ];

    /// Classifies a frame type code; HTTP/2's reserved codes are H3_FRAME_UNEXPECTED.
    pub fn classify(code: u64) -> Result<FrameType, Error> {
        Ok(match code {
            kind::DATA => FrameType::Data,
            kind::HEADERS => FrameType::Headers,
            kind::CANCEL_PUSH => FrameType::CancelPush,
            kind::SETTINGS => FrameType::Settings,
            kind::PUSH_PROMISE => FrameType::PushPromise,
            kind::GOAWAY => FrameType::GoAway,
            kind::MAX_PUSH_ID => FrameType::MaxPushId,
            c if kind::HTTP2_ONLY.contains(&c) => {
                return Err(Error::new(
                    Code::FrameUnexpected,
                    "an HTTP/2 frame type HTTP/3 reserves",
                ));
            }
            c if is_reserved(c) => FrameType::Reserved,
            _ => FrameType::Unknown,
        })
    }

    /// The RFC name of the type, suitable as a metric key.
    pub fn name(self) -> &'static str {
        match self {
            FrameType::Data => "DATA",
            FrameType::Headers => "HEADERS",
            FrameType::CancelPush => "CANCEL_PUSH",
            FrameType::Settings => "SETTINGS",
            FrameType::PushPromise => "PUSH_PROMISE",
            FrameType::GoAway => "GOAWAY",
            FrameType::MaxPushId => "MAX_PUSH_ID",
            FrameType::Reserved => "RESERVED",
            FrameType::Unknown => "UNKNOWN",
        }
    }

    /// Whether the payload is skipped rather than handed on.
    pub(super) fn skipped(self) -> bool {
        matches!(self, FrameType::Reserved | FrameType::Unknown)
    }

    /// Whether the payload is exactly one varint.
    pub(super) fn one_varint(self) -> bool {
        matches!(
            self,
            FrameType::CancelPush | FrameType::GoAway | FrameType::MaxPushId
        )
    }
}

/// A frame head: the type and length varints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// The type classified.
    pub kind: FrameType,
    /// The type code as sent.
    pub code: u64,
    /// The payload length.
    pub len: u64,
    /// Bytes of the two varints.
    pub header_len: usize,
}

/// Decodes the frame head at the start of `src` (nothing is consumed): `Ok(None)` until both
/// varints are there; the checks of the module documentation, with `max_len` the limit on
/// frames that are buffered whole.
pub fn decode_head(src: &[u8], max_len: u64) -> Result<Option<Head>, Error> {
    let Some((code, a)) = varint::decode(src) else {
        return Ok(None);
    };
    let Some((len, b)) = varint::decode(&src[a..]) else {
        return Ok(None);
    };
    let kind = FrameType::classify(code)?;
    if kind.one_varint() && !(1..=8).contains(&len) {
        return Err(Error::new(
            Code::FrameError,
            "CANCEL_PUSH, GOAWAY or MAX_PUSH_ID payload is not one varint",
        ));
    }
    if kind != FrameType::Data && !kind.skipped() && len > max_len {
        return Err(Error::new(
            Code::ExcessiveLoad,
            "frame longer than the frame length limit",
        ));
    }
    Ok(Some(Head {
        kind,
        code,
        len,
        header_len: a + b,
    }))
}
