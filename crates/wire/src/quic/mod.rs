//! A QUIC v1 packet sniffer for the ledger (RFC 9000, RFC 9001), sans-IO: it decrypts a copy
//! of every datagram a client sends and receives and counts header, AEAD tag and frame bytes.
//!
//! quinn-proto counts frames but not their bytes, so the HTTP/3 client hands the sniffer its
//! datagrams and the TLS secrets rustls logs, and reads the counts back per direction.
//!
//! - `header`: packet headers (RFC 9000 §17): where a packet lies in its datagram, packet
//!   number decoding (§A.3).
//! - `keys`: the keys of RFC 9001 §5: initial secrets, HKDF-Expand-Label, header protection,
//!   packet protection, the next generation of a key update (§6), the Retry integrity tag.
//! - `level`: the keys of one encryption level and direction: the suite guess, key updates.
//! - `frames`: the frame walk (RFC 9000 §19) and the [`StreamVisitor`].
//! - `counts`: [`QuicCounts`], what the ledger reads.
//! - `sniffer`: the [`Sniffer`] that ties them together.
//!
//! # Using it
//!
//! One [`Sniffer`] per connection, the client's view: [`Dir::Out`] is client to server.
//!
//! ```
//! use wirebench_wire::quic::{Dir, Sniffer};
//!
//! let mut sniffer = Sniffer::new();
//! // from rustls' KeyLog (`log(label, client_random, secret)`), as the secrets come
//! sniffer.secret("CLIENT_HANDSHAKE_TRAFFIC_SECRET", &[7; 32]).unwrap();
//! // every UDP payload sent, when it is sent
//! sniffer.datagram(Dir::Out, &[0x40, 1, 2, 3]);
//! // every UDP payload received, after the endpoint has handled it (so that the secrets its
//! // handling yields, e.g. the handshake secrets from a ServerHello, are already known)
//! sniffer.datagram(Dir::In, &[0x40, 1, 2, 3]);
//! let out = sniffer.counts(Dir::Out);
//! assert_eq!(out.total(), out.datagram_bytes);
//! ```
//!
//! The initial keys come from the Destination Connection ID of the client's first Initial
//! (and again from its next Initial after a Retry); the others from the KeyLog labels
//! `CLIENT_EARLY_TRAFFIC_SECRET`, `CLIENT_HANDSHAKE_TRAFFIC_SECRET`,
//! `SERVER_HANDSHAKE_TRAFFIC_SECRET`, `CLIENT_TRAFFIC_SECRET_0` and `SERVER_TRAFFIC_SECRET_0`
//! (other labels are ignored). The cipher suite may be named ([`Sniffer::set_suite`]); if not,
//! a 48-byte secret means AES-256-GCM and a 32-byte one AES-128-GCM or ChaCha20-Poly1305, the
//! first packet that authenticates telling which. The Destination Connection ID length of
//! short headers is learnt from the long headers: the client's Source Connection ID is the
//! server's destination, and the reverse (so connection IDs the peers issue later are taken to
//! keep their length, as quinn's do); a caller that knows it can set it
//! ([`Sniffer::set_short_dcid_len`]). Packets that cannot be decrypted (no keys yet, a failed
//! authentication, a malformed header) are counted as undecryptable bytes, by reason, and are
//! not kept for keys that come later; nothing in a datagram makes the sniffer panic.
//!
//! In steady state a datagram costs no allocation: each packet is copied into one scratch
//! buffer, unprotected and decrypted there.

pub mod counts;
pub mod frames;
pub mod handshake;
pub mod header;
pub mod keys;
mod level;
pub mod sniffer;
#[cfg(test)]
mod tests;

use std::fmt;

pub use counts::{FrameCount, FrameKind, PacketBytes, QuicCounts};
pub use frames::StreamVisitor;
pub use handshake::HandshakeScan;
pub use header::PacketType;
pub use keys::Suite;
pub use sniffer::Sniffer;

/// The direction of a datagram, seen from the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dir {
    /// Client to server: what the client sends.
    Out = 0,
    /// Server to client: what the client receives.
    In = 1,
}

impl Dir {
    /// Both directions, `Out` first.
    pub const BOTH: [Dir; 2] = [Dir::Out, Dir::In];
}

/// Why a packet or secret was not taken; the sniffer counts undecryptable packets by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The keys the packet needs are not known (yet), or the connection ID length of a short
    /// header is not.
    NoKeys = 0,
    /// The packet failed to authenticate with every key that could be its.
    Auth = 1,
    /// The bytes break the layout of RFC 9000 §17 (or are of a version other than 1), or a
    /// secret has a length no suite has.
    Malformed = 2,
}

impl ErrorKind {
    /// Every kind, in the order of [`QuicCounts::undecryptable`].
    pub const ALL: [ErrorKind; 3] = [ErrorKind::NoKeys, ErrorKind::Auth, ErrorKind::Malformed];
}

/// What went wrong, and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Error {
    /// The kind, which counts are kept by.
    pub kind: ErrorKind,
    /// What broke, fixed text.
    pub context: &'static str,
}

impl Error {
    pub(crate) const fn no_keys(context: &'static str) -> Error {
        Error {
            kind: ErrorKind::NoKeys,
            context,
        }
    }

    pub(crate) const fn auth(context: &'static str) -> Error {
        Error {
            kind: ErrorKind::Auth,
            context,
        }
    }

    pub(crate) const fn malformed(context: &'static str) -> Error {
        Error {
            kind: ErrorKind::Malformed,
            context,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "QUIC {:?}: {}", self.kind, self.context)
    }
}

impl std::error::Error for Error {}
