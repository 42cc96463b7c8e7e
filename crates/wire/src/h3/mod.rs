//! HTTP/3 (RFC 9114) protocol cores for a client, sans-IO: QUIC variable-length integers, the
//! frame codec, QPACK without a dynamic table, and the counts the ledger keeps of them.
//!
//! - `varint`: QUIC variable-length integers (RFC 9000 §16).
//! - `head`: frame heads (RFC 9114 §7.1), the frame type codes and their classification.
//! - `frame`: frame payloads (§7.2), SETTINGS, GOAWAY, the reader that skips reserved and
//!   unknown frames, the encoders, the unidirectional stream types (§6.2).
//! - `qpack`: field sections (RFC 9204) encoded and decoded with the static table only.
//! - `counts`: `H3Counts`, frames by type with their header and payload bytes.
//!
//! Every error is an [`Error`]: the RFC's error code ([`Code`]) that the connection would
//! close with, and a fixed context naming what broke.

pub mod counts;
pub mod frame;
pub mod head;
pub mod qpack;
pub mod varint;

use std::fmt;

/// An HTTP/3 or QPACK error code (RFC 9114 §8.1, RFC 9204 §6), the ones this crate raises
/// and the ones a connection may need to send or name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// H3_NO_ERROR (0x100).
    NoError,
    /// H3_GENERAL_PROTOCOL_ERROR (0x101).
    GeneralProtocolError,
    /// H3_INTERNAL_ERROR (0x102).
    InternalError,
    /// H3_STREAM_CREATION_ERROR (0x103).
    StreamCreationError,
    /// H3_CLOSED_CRITICAL_STREAM (0x104).
    ClosedCriticalStream,
    /// H3_FRAME_UNEXPECTED (0x105): a frame not allowed here, e.g. an HTTP/2 frame type.
    FrameUnexpected,
    /// H3_FRAME_ERROR (0x106): a frame that breaks its layout or size rules.
    FrameError,
    /// H3_EXCESSIVE_LOAD (0x107): here, a frame or field section over our local limit.
    ExcessiveLoad,
    /// H3_ID_ERROR (0x108).
    IdError,
    /// H3_SETTINGS_ERROR (0x109): a SETTINGS payload that is invalid.
    SettingsError,
    /// H3_MISSING_SETTINGS (0x10a).
    MissingSettings,
    /// H3_REQUEST_REJECTED (0x10b).
    RequestRejected,
    /// H3_REQUEST_CANCELLED (0x10c).
    RequestCancelled,
    /// H3_REQUEST_INCOMPLETE (0x10d).
    RequestIncomplete,
    /// H3_MESSAGE_ERROR (0x10e).
    MessageError,
    /// H3_CONNECT_ERROR (0x10f).
    ConnectError,
    /// H3_VERSION_FALLBACK (0x110).
    VersionFallback,
    /// QPACK_DECOMPRESSION_FAILED (0x200): a field section that cannot be decoded.
    QpackDecompressionFailed,
    /// QPACK_ENCODER_STREAM_ERROR (0x201).
    QpackEncoderStreamError,
    /// QPACK_DECODER_STREAM_ERROR (0x202).
    QpackDecoderStreamError,
}

impl Code {
    /// The code's value on the wire.
    pub fn value(self) -> u64 {
        match self {
            Code::NoError => 0x100,
            Code::GeneralProtocolError => 0x101,
            Code::InternalError => 0x102,
            Code::StreamCreationError => 0x103,
            Code::ClosedCriticalStream => 0x104,
            Code::FrameUnexpected => 0x105,
            Code::FrameError => 0x106,
            Code::ExcessiveLoad => 0x107,
            Code::IdError => 0x108,
            Code::SettingsError => 0x109,
            Code::MissingSettings => 0x10a,
            Code::RequestRejected => 0x10b,
            Code::RequestCancelled => 0x10c,
            Code::RequestIncomplete => 0x10d,
            Code::MessageError => 0x10e,
            Code::ConnectError => 0x10f,
            Code::VersionFallback => 0x110,
            Code::QpackDecompressionFailed => 0x200,
            Code::QpackEncoderStreamError => 0x201,
            Code::QpackDecoderStreamError => 0x202,
        }
    }

    /// The RFC's name of the code.
    pub fn name(self) -> &'static str {
        match self {
            Code::NoError => "H3_NO_ERROR",
            Code::GeneralProtocolError => "H3_GENERAL_PROTOCOL_ERROR",
            Code::InternalError => "H3_INTERNAL_ERROR",
            Code::StreamCreationError => "H3_STREAM_CREATION_ERROR",
            Code::ClosedCriticalStream => "H3_CLOSED_CRITICAL_STREAM",
            Code::FrameUnexpected => "H3_FRAME_UNEXPECTED",
            Code::FrameError => "H3_FRAME_ERROR",
            Code::ExcessiveLoad => "H3_EXCESSIVE_LOAD",
            Code::IdError => "H3_ID_ERROR",
            Code::SettingsError => "H3_SETTINGS_ERROR",
            Code::MissingSettings => "H3_MISSING_SETTINGS",
            Code::RequestRejected => "H3_REQUEST_REJECTED",
            Code::RequestCancelled => "H3_REQUEST_CANCELLED",
            Code::RequestIncomplete => "H3_REQUEST_INCOMPLETE",
            Code::MessageError => "H3_MESSAGE_ERROR",
            Code::ConnectError => "H3_CONNECT_ERROR",
            Code::VersionFallback => "H3_VERSION_FALLBACK",
            Code::QpackDecompressionFailed => "QPACK_DECOMPRESSION_FAILED",
            Code::QpackEncoderStreamError => "QPACK_ENCODER_STREAM_ERROR",
            Code::QpackDecoderStreamError => "QPACK_DECODER_STREAM_ERROR",
        }
    }
}

/// Why HTTP/3 bytes were refused: the error code a connection closes with, and what broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Error {
    /// The RFC's error code.
    pub code: Code,
    /// What broke, fixed text.
    pub context: &'static str,
}

impl Error {
    pub(crate) const fn new(code: Code, context: &'static str) -> Error {
        Error { code, context }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (0x{:x}): {}",
            self.code.name(),
            self.code.value(),
            self.context
        )
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_carry_the_rfc_values() {
        assert_eq!(Code::FrameUnexpected.value(), 0x105);
        assert_eq!(Code::FrameError.value(), 0x106);
        assert_eq!(Code::SettingsError.value(), 0x109);
        assert_eq!(Code::QpackDecompressionFailed.value(), 0x200);
        assert_eq!(
            Error::new(Code::FrameError, "GOAWAY payload is not one varint").to_string(),
            "H3_FRAME_ERROR (0x106): GOAWAY payload is not one varint"
        );
    }
}
