//! Outcomes of requests: the stable failure kinds, failures with their (interned) details, and
//! the statuses responses count under. Importable from every layer; imports only the wire crate.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use wirebench_wire::grpc::Code;

/// The detail of the `connect` failures a client counts for the rest of its quota when it
/// gives up (closed loop, `-n`): those requests were never sent.
pub const GAVE_UP: &str = "gave up: server unreachable for longer than --timeout";

/// What a response said about itself: an HTTP status or a gRPC status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StatusKey {
    Http(u16),
    Grpc(u32),
    /// a gRPC server answered with a non-200 HTTP status: the gRPC code the spec maps it to,
    /// and the HTTP status itself
    GrpcFromHttp {
        code: u32,
        http: u16,
    },
}

impl fmt::Display for StatusKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatusKey::Http(code) => write!(f, "{code}"),
            StatusKey::Grpc(code) => f.write_str(Code::from_u32(*code).as_str()),
            StatusKey::GrpcFromHttp { code, http } => {
                write!(f, "{} (HTTP {http})", Code::from_u32(*code).as_str())
            }
        }
    }
}

/// The stable failure kinds: their names are the JSON keys and are listed in
/// docs/METHODOLOGY.md ("Failure kinds"); a test keeps the two in step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FailureKind {
    /// no connection: the connect (or TLS / h2 handshake) failed
    Connect,
    /// no complete response within --timeout
    Timeout,
    /// the server closed the connection before the response was complete
    Closed,
    /// pipelined behind a request its connection ended on (closed, failed, timed out): never
    /// answered, never retried
    Unanswered,
    Io,
    /// a malformed HTTP/1.1 response (head, chunk framing)
    Http1,
    /// a response body beyond --max-body
    BodyTooLarge,
    RstStream,
    Goaway,
    /// an h2 protocol error (local or remote)
    H2,
    /// the QUIC connection was lost: a transport error (local or remote), an idle timeout, a
    /// reset from the server
    Quic,
    /// an HTTP/3 or QPACK protocol error (local or remote), or a request stream the server reset
    H3,
    GrpcFraming,
    /// valid framing, unexpected content
    BadResponse,
    /// an HTTP status that is not a success (and not an etcd error body)
    HttpStatus,
    /// an error etcd reported
    Etcd,
    /// a non-zero grpc-status from a non-etcd server
    GrpcStatus,
    /// etcd authentication failed (re-authenticating after "invalid auth token")
    Auth,
    /// open loop: a send still waiting --timeout after its intended time, never sent
    Late,
    /// a watch stream answered what no watch request asked for
    Watch,
    /// a watch canceled because its revision was compacted
    Compacted,
    /// a watch canceled by etcd for another reason
    Canceled,
    /// a lease keepalive answered TTL 0 (the lease is gone: revoked or expired) or for
    /// another lease
    Lease,
    /// not sent: the run was interrupted (Ctrl-C)
    Interrupted,
}

impl FailureKind {
    /// Every kind, in the order docs/METHODOLOGY.md lists them.
    pub const ALL: [FailureKind; 24] = [
        FailureKind::Connect,
        FailureKind::Timeout,
        FailureKind::Closed,
        FailureKind::Unanswered,
        FailureKind::Io,
        FailureKind::Http1,
        FailureKind::BodyTooLarge,
        FailureKind::RstStream,
        FailureKind::Goaway,
        FailureKind::H2,
        FailureKind::Quic,
        FailureKind::H3,
        FailureKind::GrpcFraming,
        FailureKind::BadResponse,
        FailureKind::HttpStatus,
        FailureKind::Etcd,
        FailureKind::GrpcStatus,
        FailureKind::Auth,
        FailureKind::Late,
        FailureKind::Watch,
        FailureKind::Compacted,
        FailureKind::Canceled,
        FailureKind::Lease,
        FailureKind::Interrupted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Connect => "connect",
            FailureKind::Timeout => "timeout",
            FailureKind::Closed => "closed",
            FailureKind::Unanswered => "unanswered",
            FailureKind::Io => "io",
            FailureKind::Http1 => "http1",
            FailureKind::BodyTooLarge => "body_too_large",
            FailureKind::RstStream => "rst_stream",
            FailureKind::Goaway => "goaway",
            FailureKind::H2 => "h2",
            FailureKind::Quic => "quic",
            FailureKind::H3 => "h3",
            FailureKind::GrpcFraming => "grpc_framing",
            FailureKind::BadResponse => "bad_response",
            FailureKind::HttpStatus => "http_status",
            FailureKind::Etcd => "etcd",
            FailureKind::GrpcStatus => "grpc_status",
            FailureKind::Auth => "auth",
            FailureKind::Late => "late",
            FailureKind::Watch => "watch",
            FailureKind::Compacted => "compacted",
            FailureKind::Canceled => "canceled",
            FailureKind::Lease => "lease",
            FailureKind::Interrupted => "interrupted",
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a request failed: a stable kind (the metric key), the gRPC status code the peer
/// answered with when it named one, and, where useful, the peer's message. The decisions taken
/// on a failure (move to another member, ask again) read the kind and the code, never the
/// message. The message is interned per thread: a failure that happened before costs no
/// allocation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Failure {
    pub kind: FailureKind,
    /// the status code of a grpc-status, or of the `code` in etcd's gateway error
    pub code: Option<Code>,
    /// the text printed after the kind (a gRPC status's own: its code's name, then its message)
    pub detail: Option<Arc<str>>,
}

/// Distinct failure messages one thread keeps for reuse; past this, a new message is allocated
/// each time it occurs (a peer sending endless distinct texts cannot grow the cache).
const INTERNED_MAX: usize = 4096;

thread_local! {
    /// The messages seen on this thread, and a buffer to format the next one into.
    static MESSAGES: RefCell<(HashSet<Arc<str>>, String)> = RefCell::new((HashSet::new(), String::new()));
}

/// `detail` as an interned string: formatted into a reused buffer, looked up, allocated only
/// the first time (or when the cache is full).
fn intern(detail: impl fmt::Display) -> Arc<str> {
    use std::fmt::Write;
    MESSAGES.with(|m| {
        let mut m = m.borrow_mut();
        let (set, buf) = &mut *m;
        buf.clear();
        let _ = write!(buf, "{detail}");
        if let Some(known) = set.get(buf.as_str()) {
            return known.clone();
        }
        let new: Arc<str> = Arc::from(buf.as_str());
        if set.len() < INTERNED_MAX {
            set.insert(new.clone());
        }
        new
    })
}

impl Failure {
    pub fn new(kind: FailureKind) -> Self {
        Failure {
            kind,
            code: None,
            detail: None,
        }
    }

    pub fn with(kind: FailureKind, detail: impl fmt::Display) -> Self {
        Failure {
            kind,
            code: None,
            detail: Some(intern(detail)),
        }
    }

    /// A failure the peer gave gRPC status `code` for, printed as `detail`.
    pub fn status(kind: FailureKind, code: Code, detail: impl fmt::Display) -> Self {
        Failure {
            code: Some(code),
            ..Failure::with(kind, detail)
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.detail {
            Some(d) => write!(f, "{}: {}", self.kind, d),
            None => f.write_str(self.kind.as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_seen_before_allocates_nothing() {
        let a = Failure::with(
            FailureKind::Timeout,
            format_args!("no response within {}s", 2),
        );
        let b = Failure::with(
            FailureKind::Timeout,
            format_args!("no response within {}s", 2),
        );
        assert_eq!(a, b);
        let (da, db) = (a.detail.unwrap(), b.detail.unwrap());
        // the same allocation, shared
        assert!(Arc::ptr_eq(&da, &db));
        assert_eq!(&*da, "no response within 2s");
        let c = Failure::with(FailureKind::Timeout, "another");
        assert!(!Arc::ptr_eq(&da, c.detail.as_ref().unwrap()));
    }

    #[test]
    fn a_status_code_is_carried_beside_the_text_it_prints() {
        let f = Failure::status(
            FailureKind::Etcd,
            Code::Unavailable,
            "UNAVAILABLE: etcdserver: no leader",
        );
        assert_eq!(f.code, Some(Code::Unavailable));
        assert_eq!(f.to_string(), "etcd: UNAVAILABLE: etcdserver: no leader");
        assert_eq!(Failure::with(FailureKind::Etcd, "x").code, None);
        // as cheap to clone and to key a map with as before: a kind, a code, a shared text
        assert!(std::mem::size_of::<Failure>() <= 24);
    }

    #[test]
    fn failure_kinds_are_the_documented_ones() {
        let doc = include_str!("../docs/METHODOLOGY.md");
        let table = &doc[doc.find("**Failure kinds**").expect("the section")..];
        let documented: Vec<&str> = table
            .lines()
            .skip_while(|l| !l.starts_with("| `"))
            .take_while(|l| l.starts_with('|'))
            .filter_map(|l| l.split('`').nth(1))
            .collect();
        let ours: Vec<&str> = FailureKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(documented, ours, "docs/METHODOLOGY.md lists other kinds");
        // stable names are metric keys: lower case and underscores only
        for k in ours {
            assert!(
                k.bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'_' || b.is_ascii_digit())
            );
        }
    }
}
