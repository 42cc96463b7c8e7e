//! What a call on a multiplexed connection (h2 on either client, or HTTP/3) sends and how it
//! ends: its target (a gRPC method, or a plain request), what the caller is told while it
//! runs, and the failure a verdict of the wire crate's gRPC cores becomes (its grpc-status
//! carried as a code).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::{Method, Uri};

use crate::net::Ledger;
use crate::outcome::{Failure, FailureKind, StatusKey};
use wirebench_wire::grpc::unary::Verdict;
use wirebench_wire::grpc::{self, Code};

/// A unary call's target, built once: full URI (scheme, authority, path), extra metadata, and
/// the failure kind a non-OK grpc-status is counted under (e.g. "etcd"). Or, made by
/// [`Call::plain`], a plain HTTP/2 request: method, URI and headers, with a body of its own
/// (no gRPC framing), answered by a status and a body.
///
/// Its header fields never change after `new`: the wire client keeps their HPACK block under
/// `key` (clones share it, as they share the fields). Unless it is made [`Call::varying`]: then
/// its `:path` or some metadata values are rendered per request into its own buffers, and those
/// fields are encoded each time ([`Call::varying_fields`]), the block up to them still kept.
#[derive(Debug, Clone)]
pub struct Call {
    pub(super) uri: Uri,
    pub(super) metadata: Vec<(HeaderName, HeaderValue)>,
    pub status_kind: FailureKind,
    /// uncompressed size of the request's header list (`fields`, pseudo-headers included)
    pub(super) header_list_bytes: u64,
    /// a varying call's: the header list's size without its varying values
    fixed_list_bytes: u64,
    pub(super) key: u64,
    /// a plain HTTP/2 request with this method; `None`: a gRPC call
    plain: Option<Method>,
    /// the parts rendered per request; `None`: the fields never change
    vary: Option<Box<Varying>>,
}

/// The parts of a [`Call::varying`] call rendered per request: its `:path` and metadata
/// values, each buffer reused from one request to the next.
#[derive(Debug, Clone, Default)]
pub struct Varying {
    /// the rendered `:path` (origin form: path and query), when it varies
    pub path: Option<Vec<u8>>,
    /// by metadata index: the rendered value, when it varies
    pub values: Vec<Option<Vec<u8>>>,
}

/// The next `Call::key`.
static NEXT_CALL_KEY: AtomicU64 = AtomicU64::new(0);

impl Call {
    pub fn new(
        uri: Uri,
        metadata: Vec<(HeaderName, HeaderValue)>,
        status_kind: FailureKind,
    ) -> Call {
        Call::build(uri, metadata, status_kind, None)
    }

    /// A plain HTTP/2 request: `method` on `uri` (scheme, authority, path and query) with
    /// `headers` (lower-case names; no connection-specific ones, RFC 9113 §8.2.2).
    pub fn plain(method: Method, uri: Uri, headers: Vec<(HeaderName, HeaderValue)>) -> Call {
        Call::build(uri, headers, FailureKind::HttpStatus, Some(method))
    }

    fn build(
        uri: Uri,
        metadata: Vec<(HeaderName, HeaderValue)>,
        status_kind: FailureKind,
        plain: Option<Method>,
    ) -> Call {
        let mut call = Call {
            uri,
            metadata,
            status_kind,
            header_list_bytes: 0,
            fixed_list_bytes: 0,
            key: NEXT_CALL_KEY.fetch_add(1, Ordering::Relaxed),
            plain,
            vary: None,
        };
        call.measure();
        call
    }

    /// The same call with its `:path` (when `path`) and the metadata values at `values`
    /// rendered per request: [`Call::varied`] lends their buffers.
    pub fn varying(mut self, path: bool, values: &[usize]) -> Call {
        let mut v = Varying {
            path: path.then(Vec::new),
            values: vec![None; self.metadata.len()],
        };
        for &i in values {
            if let Some(slot) = v.values.get_mut(i) {
                *slot = Some(Vec::new());
            }
        }
        self.vary = Some(Box::new(v));
        // the varying parts are empty for now: what they add is counted per request
        self.fixed_list_bytes = self
            .fields()
            .map(|(name, value)| (name.len() + value.len()) as u64)
            .sum();
        self
    }

    /// The buffers of a varying call's parts, to render the next request's into (cleared
    /// first); `None` for a constant call. [`Call::measure`] after filling them.
    pub fn varied(&mut self) -> Option<&mut Varying> {
        self.vary.as_deref_mut()
    }

    /// Counts the header list again (after the varying parts were rendered): the fixed part's
    /// size, counted once, and the varying values'.
    pub fn measure(&mut self) {
        let Some(v) = &self.vary else {
            self.header_list_bytes = self
                .fields()
                .map(|(name, value)| (name.len() + value.len()) as u64)
                .sum();
            return;
        };
        let varying: usize = v.path.as_ref().map_or(0, Vec::len)
            + v.values.iter().flatten().map(Vec::len).sum::<usize>();
        self.header_list_bytes = self.fixed_list_bytes + varying as u64;
    }

    /// The key the header block (up to its first varying field) is kept under.
    pub fn key(&self) -> u64 {
        self.key
    }

    /// The position in [`Call::fields`] of the first metadata field: after the four
    /// pseudo-headers, and (gRPC) content-type and te.
    fn metadata_at(&self) -> usize {
        if self.plain.is_some() { 4 } else { 6 }
    }

    /// The positions in [`Call::fields`] of the fields rendered per request, as bits (bit
    /// *i*: the *i*-th field); 0 for a constant call.
    pub fn varying_fields(&self) -> u64 {
        let Some(v) = &self.vary else {
            return 0;
        };
        let metadata_at = self.metadata_at();
        let mut bits = u64::from(v.path.is_some()) << 2;
        for (i, value) in v.values.iter().enumerate() {
            if value.is_some() && metadata_at + i < 64 {
                bits |= 1 << (metadata_at + i);
            }
        }
        bits
    }

    /// The values of the fields [`Call::varying_fields`] names, in their order: the rendered
    /// `:path` and metadata values.
    pub fn varying_values(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let metadata_at = self.metadata_at();
        let v = self.vary.as_deref();
        let path = v.and_then(|v| v.path.as_deref());
        let values = v.map_or(&[][..], |v| &v.values[..]);
        path.into_iter().chain(
            values
                .iter()
                .take(64usize.saturating_sub(metadata_at))
                .filter_map(Option::as_deref),
        )
    }

    /// Metadata value `i` as this request sends it.
    pub(super) fn value(&self, i: usize) -> &[u8] {
        let varied = self
            .vary
            .as_ref()
            .and_then(|v| v.values.get(i))
            .and_then(Option::as_deref);
        varied.unwrap_or_else(|| self.metadata[i].1.as_bytes())
    }

    /// Whether this is a plain HTTP/2 request rather than a gRPC call.
    pub fn is_plain(&self) -> bool {
        self.plain.is_some()
    }

    /// The request's header fields: the pseudo-headers, then (gRPC) content-type and te and the
    /// metadata, or (plain) the headers.
    pub fn fields(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        const GRPC: [(&[u8], &[u8]); 2] =
            [(b"content-type", b"application/grpc"), (b"te", b"trailers")];
        let scheme = self.uri.scheme_str().unwrap_or("http");
        let path = match self.vary.as_ref().and_then(|v| v.path.as_deref()) {
            Some(p) => p,
            None => self
                .uri
                .path_and_query()
                .map_or("/", |p| p.as_str())
                .as_bytes(),
        };
        let authority = self.uri.authority().map_or("", |a| a.as_str());
        let method = self.plain.as_ref().map_or("POST", Method::as_str);
        let grpc = if self.plain.is_some() {
            &[][..]
        } else {
            &GRPC[..]
        };
        [
            (&b":method"[..], method.as_bytes()),
            (b":scheme", scheme.as_bytes()),
            (b":path", path),
            (b":authority", authority.as_bytes()),
        ]
        .into_iter()
        .chain(grpc.iter().copied())
        .chain(
            self.metadata
                .iter()
                .enumerate()
                .map(|(i, (k, _))| (k.as_str().as_bytes(), self.value(i))),
        )
    }
}

/// One request of a call: its target, its bytes (a framed gRPC message, or a plain request's
/// body), and the largest response message (or body) accepted.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub call: &'a Call,
    pub bytes: &'a Bytes,
    pub max_message: usize,
}

/// How a failed call ended: the gRPC status when there was one, and why.
#[derive(Debug)]
pub struct CallError {
    pub status: Option<StatusKey>,
    pub failure: Failure,
    /// the connection itself is broken (GOAWAY, IO error), not just this stream
    pub conn_broken: bool,
    /// the server cannot have processed the request (refused, above GOAWAY's last stream, or
    /// never sent), so it is safe to retry on another connection
    pub unprocessed: bool,
}

impl CallError {
    pub fn plain(failure: Failure) -> CallError {
        CallError {
            status: None,
            failure,
            conn_broken: false,
            unprocessed: false,
        }
    }

    /// A call that never went out: its connection is going away or gone.
    pub(super) fn never_sent(failure: Failure) -> CallError {
        CallError {
            status: None,
            failure,
            conn_broken: true,
            unprocessed: true,
        }
    }
}

/// How a streaming call went (`client::stream`; a ping-pong's counts while the wire client's
/// driver runs it).
#[derive(Debug, Default)]
pub struct StreamEnd {
    /// our messages queued
    pub sent: u64,
    /// the server's messages
    pub received: u64,
    pub first_at: Option<std::time::Instant>,
    /// when our last message was queued
    pub last_sent_at: Option<std::time::Instant>,
    /// the first messages received, for the report's sample
    pub kept: Vec<Bytes>,
}

/// What a call tells its caller besides its outcome.
#[derive(Debug, Default)]
pub struct Progress {
    /// the request was handed to h2 (its HEADERS queued)
    pub sent: Cell<bool>,
    /// the response's :status (0 before a final head); a plain request's verdict needs it
    pub status: Cell<u16>,
}

/// Counts a stream in flight on the connection while it lives (the close waits for none).
pub(super) struct InFlight<'a>(&'a Ledger);

impl<'a> InFlight<'a> {
    pub(super) fn new(l: &'a Ledger) -> InFlight<'a> {
        l.in_flight.set(l.in_flight.get() + 1);
        InFlight(l)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0
            .in_flight
            .set(self.0.in_flight.get().saturating_sub(1));
    }
}

/// The head of a streaming call's response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamHead {
    pub status: u16,
    /// the head carried a grpc-status: a trailers-only answer, the stream is over
    pub trailers_only: bool,
    /// that grpc-status, parsed
    pub grpc_status: Option<Result<Code, grpc::Error>>,
    /// its grpc-message, percent-decoded
    pub message: Option<String>,
}

/// A verdict as a call error, `message` the grpc-message that came with it (still
/// percent-encoded).
pub(super) fn judged(v: Verdict, message: Option<&[u8]>, kind: FailureKind) -> CallError {
    let (status, failure) = match v {
        Verdict::HttpStatus { http, code } => (
            Some(StatusKey::GrpcFromHttp {
                code: code.as_u32(),
                http,
            }),
            Failure::with(FailureKind::HttpStatus, v),
        ),
        Verdict::Status(code) => (
            Some(StatusKey::Grpc(code.as_u32())),
            status_failure(code, message, kind),
        ),
        Verdict::Framing(e) => (None, Failure::with(FailureKind::GrpcFraming, e)),
        Verdict::NoMessage
        | Verdict::NoTrailers
        | Verdict::NoStatus
        | Verdict::Truncated
        | Verdict::MoreThanOne => (None, Failure::with(FailureKind::BadResponse, v)),
    };
    CallError {
        status,
        ..CallError::plain(failure)
    }
}

thread_local! {
    /// Where a grpc-message is percent-decoded.
    static MESSAGE: RefCell<String> = const { RefCell::new(String::new()) };
}

/// A non-zero grpc-status as a failure of `kind` carrying `code`, with its grpc-message when
/// there is one: printed `CODE` or `CODE: message`.
fn status_failure(code: Code, text: Option<&[u8]>, kind: FailureKind) -> Failure {
    MESSAGE.with(|buf| {
        // a reused buffer: the text is interned by Failure, so a repeated message allocates nothing
        let mut message = buf.borrow_mut();
        message.clear();
        if let Some(m) = text {
            grpc::decode_message_text(m, 1024, &mut message);
        }
        if message.is_empty() {
            Failure::status(kind, code, code.as_str())
        } else {
            Failure::status(kind, code, format_args!("{}: {}", code.as_str(), message))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_varying_call_sends_and_counts_what_was_rendered() {
        let uri: Uri = "http://h:1/a/b".parse().unwrap();
        let metadata = vec![
            (
                HeaderName::from_static("x-a"),
                HeaderValue::from_static("fixed"),
            ),
            (
                HeaderName::from_static("x-b"),
                HeaderValue::from_static("{{seq}}"),
            ),
        ];
        let mut call = Call::new(uri, metadata, FailureKind::GrpcStatus).varying(true, &[1]);
        assert_eq!(
            call.varying_fields(),
            0b1000_0100,
            ":path and the second metadata"
        );
        for (path, value) in [("/p/1", "1"), ("/p/123456", "123456")] {
            let v = call.varied().unwrap();
            v.path.as_mut().unwrap().clear();
            v.path.as_mut().unwrap().extend_from_slice(path.as_bytes());
            let b = v.values[1].as_mut().unwrap();
            b.clear();
            b.extend_from_slice(value.as_bytes());
            call.measure();
            let fields: Vec<(&[u8], &[u8])> = call.fields().collect();
            let values: Vec<&[u8]> = call.varying_values().collect();
            assert_eq!(values, [path.as_bytes(), value.as_bytes()]);
            assert_eq!(fields[2], (&b":path"[..], path.as_bytes()));
            assert_eq!(fields[6], (&b"x-a"[..], &b"fixed"[..]));
            assert_eq!(fields[7], (&b"x-b"[..], value.as_bytes()));
            let sum: u64 = fields.iter().map(|(n, v)| (n.len() + v.len()) as u64).sum();
            assert_eq!(call.header_list_bytes, sum);
        }
    }
}
