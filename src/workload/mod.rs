//! What to send and how to judge the answer, per protocol; one instance per client.

pub mod echo;
pub mod etcd;
pub mod grpc;
pub mod http;
pub mod reflect;

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use serde_json::Value;

use crate::config::{Endpoint, GrpcRequest, WorkloadSpec};
use crate::outcome::{Failure, FailureKind, StatusKey};

/// The etcd operations (plain data, defined with the rest of the configuration).
pub use crate::config::EtcdOp;
pub use echo::EchoWorkload;
/// etcd's put and range, and the watch benchmark's puts.
pub use etcd::{Ack, EtcdWorkload, WatchPuts};
pub use grpc::GrpcWorkload;
pub use http::HttpWorkload;

/// The most of a response body a report's sample keeps.
const SAMPLE_MAX: usize = 64 << 10;

/// The payload of `n` bytes the payload sweeps send (the echo ping, an HTTP body, a gRPC string
/// or bytes field): `n` ASCII `x`, the same for every target and safe inside a JSON string.
pub fn filler(n: usize) -> String {
    "x".repeat(n)
}

/// A verdict on one HTTP response: the status it counts under, and a failure if it was one.
pub type HttpVerdict = Result<StatusKey, (StatusKey, Failure)>;

/// The operations the engine can drive. An enum rather than a trait object: static dispatch on
/// the hot path and one place that lists them.
#[derive(Debug, Clone)]
///
/// Small (16 bytes), as every client carries one: the etcd workloads, which hold per-client
/// buffers, are boxed; the echo workload is one shared pointer.
pub enum Workload {
    Etcd(Box<EtcdWorkload>),
    /// the watch benchmark's put load: stamped values, revisions acknowledged
    WatchPuts(Box<WatchPuts>),
    Echo(EchoWorkload),
    /// any HTTP server, over HTTP/1.1 or plain HTTP/2 (`cli` refuses gRPC for it, so the gRPC
    /// methods below never see it)
    Http(HttpWorkload),
    /// any unary gRPC method; gRPC only (`cli` refuses HTTP/1.1 for it)
    Grpc(GrpcWorkload),
}

impl Workload {
    /// `spec` rendered for `endpoints`; `token`: an etcd auth token (ignored by the echo
    /// workload).
    pub fn new(
        spec: &WorkloadSpec,
        endpoints: &[Endpoint],
        seed: u64,
        token: Option<&str>,
    ) -> Result<Workload, String> {
        Ok(match spec {
            WorkloadSpec::Etcd(op) => Workload::Etcd(Box::new(
                EtcdWorkload::new(op.clone(), endpoints, seed, token).map_err(|e| e.to_string())?,
            )),
            WorkloadSpec::Echo { ping, headers } => Workload::Echo(
                EchoWorkload::new(ping.clone(), headers, endpoints).map_err(|e| e.to_string())?,
            ),
            WorkloadSpec::Http(h) => {
                Workload::Http(HttpWorkload::new(h, endpoints).map_err(|e| e.to_string())?)
            }
            WorkloadSpec::Grpc(g) => {
                Workload::Grpc(GrpcWorkload::new(g, endpoints).map_err(|e| e.to_string())?)
            }
        })
    }

    /// Whether `spec` renders for `endpoints`: the errors `new` would give without a token,
    /// found without generating keys and values.
    pub fn check(spec: &WorkloadSpec, endpoints: &[Endpoint]) -> Result<(), String> {
        match spec {
            WorkloadSpec::Etcd(op) => EtcdWorkload::check(op, endpoints).map_err(|e| e.to_string()),
            WorkloadSpec::Echo { ping, headers } => {
                EchoWorkload::new(ping.clone(), headers, endpoints)
                    .map(drop)
                    .map_err(|e| e.to_string())
            }
            WorkloadSpec::Http(h) => HttpWorkload::new(h, endpoints)
                .map(drop)
                .map_err(|e| e.to_string()),
            // the request is encoded during setup, once reflection gave the schema
            WorkloadSpec::Grpc(g) if matches!(g.request, GrpcRequest::ByReflection { .. }) => {
                Ok(())
            }
            WorkloadSpec::Grpc(g) => GrpcWorkload::new(g, endpoints)
                .map(drop)
                .map_err(|e| e.to_string()),
        }
    }

    /// Appends HTTP/1.1 request number `idx` for endpoint `ep` to `dst`; returns its head length.
    pub fn encode_http(&mut self, idx: u64, ep: usize, dst: &mut BytesMut) -> usize {
        match self {
            Workload::Etcd(w) => w.encode_http(idx, ep, dst),
            Workload::WatchPuts(w) => w.encode_http(idx, dst),
            Workload::Echo(w) => w.encode_http(ep, dst),
            Workload::Http(w) => w.encode_http(idx, ep, dst),
            Workload::Grpc(_) => unreachable!("a gRPC method runs over gRPC only"),
        }
    }

    /// The verdict on an HTTP/1.1 response: its status, and what it acknowledged.
    pub fn check_http(
        &self,
        status: u16,
        body: &[u8],
    ) -> Result<(StatusKey, Ack), (StatusKey, Failure)> {
        match self {
            Workload::Etcd(w) => w.check_http(status, body),
            Workload::WatchPuts(w) => w.check_http(status, body),
            Workload::Echo(w) => w.check_http(status, body).map(|s| (s, None)),
            Workload::Http(w) => w.check_http(status).map(|s| (s, None)),
            Workload::Grpc(_) => unreachable!("a gRPC method runs over gRPC only"),
        }
    }

    /// Plain HTTP/2 request number `idx` for endpoint `ep`: its body and its request
    /// (method, path, headers), lent together.
    pub fn next_h2(&mut self, idx: u64, ep: usize) -> (&Bytes, &crate::client::grpc::Call) {
        match self {
            Workload::Etcd(w) => w.next_h2(idx, ep),
            Workload::Echo(w) => (w.json_body(), w.h2_call(ep)),
            Workload::Http(w) => (w.body(idx), w.h2_call(ep)),
            Workload::WatchPuts(_) | Workload::Grpc(_) => {
                unreachable!("`cli` runs no watch puts and no gRPC method over plain HTTP/2")
            }
        }
    }

    /// The gRPC method for endpoint `ep`.
    pub fn call(&self, ep: usize) -> &crate::client::grpc::Call {
        match self {
            Workload::Etcd(w) => w.call(ep),
            Workload::WatchPuts(w) => w.call(),
            Workload::Echo(w) => w.call(ep),
            Workload::Http(_) => unreachable!("an HTTP target runs over HTTP/1.1 only"),
            Workload::Grpc(w) => w.call(ep),
        }
    }

    /// Makes gRPC request number `idx`, which `grpc_request` then lends.
    pub fn next_grpc(&mut self, idx: u64) {
        match self {
            Workload::Etcd(w) => w.next_grpc(idx),
            Workload::WatchPuts(w) => w.next_grpc(idx),
            Workload::Echo(_) | Workload::Http(_) | Workload::Grpc(_) => {}
        }
    }

    /// The gRPC request `next_grpc` made, framed (5-byte prefix + protobuf).
    pub fn grpc_request(&self) -> &Bytes {
        match self {
            Workload::Etcd(w) => w.grpc_request(),
            Workload::WatchPuts(w) => w.grpc_request(),
            Workload::Echo(w) => w.grpc_request(),
            Workload::Http(_) => unreachable!("an HTTP target runs over HTTP/1.1 only"),
            Workload::Grpc(w) => w.grpc_request(),
        }
    }

    /// The verdict on a gRPC response message: what it acknowledged, or why it failed.
    pub fn check_grpc(&self, message: &Bytes) -> Result<Ack, Failure> {
        match self {
            Workload::Etcd(w) => w.check_grpc(message),
            Workload::WatchPuts(w) => w.check_grpc(message),
            Workload::Echo(w) => w.check_grpc(message).map(|()| None),
            Workload::Http(_) => unreachable!("an HTTP target runs over HTTP/1.1 only"),
            // the framing and the status were judged: one message, grpc-status 0
            Workload::Grpc(_) => Ok(None),
        }
    }

    /// A successful response as gateway-style JSON, for the report's sample.
    /// The body as JSON when it is JSON of at most `SAMPLE_MAX` bytes, else as text, cut at
    /// `SAMPLE_MAX` (a report holds one sample; any server may answer megabytes).
    pub fn sample_http(&self, body: &[u8]) -> Value {
        if body.len() <= SAMPLE_MAX
            && let Ok(v) = serde_json::from_slice(body)
        {
            return v;
        }
        let head = String::from_utf8_lossy(&body[..body.len().min(SAMPLE_MAX)]).into_owned();
        if body.len() > SAMPLE_MAX {
            Value::String(format!("{head}... ({} B in all)", body.len()))
        } else {
            Value::String(head)
        }
    }

    pub fn sample_grpc(&self, message: &Bytes) -> Value {
        match self {
            Workload::Etcd(w) => w.sample_grpc(message),
            Workload::WatchPuts(w) => w.sample_grpc(message),
            Workload::Echo(w) => w.sample_grpc(message),
            Workload::Http(_) => unreachable!("an HTTP target runs over HTTP/1.1 only"),
            Workload::Grpc(w) => w.sample_grpc(message),
        }
    }

    /// A fresh instance for client `client` (own scratch buffers and random stream).
    pub fn for_client(&self, client: u64) -> Workload {
        match self {
            Workload::Etcd(w) => Workload::Etcd(Box::new(w.for_client(client))),
            Workload::WatchPuts(w) => Workload::WatchPuts(Box::new(w.for_client())),
            Workload::Echo(w) => Workload::Echo(w.for_client()),
            Workload::Http(w) => Workload::Http(w.for_client()),
            Workload::Grpc(w) => Workload::Grpc(w.for_client()),
        }
    }

    /// Whether the calls are server-streaming (a gRPC method whose schema says so).
    pub fn server_streaming(&self) -> bool {
        matches!(self, Workload::Grpc(w) if w.server_streaming())
    }

    /// Whether the requests are HEAD (their responses have no body).
    pub fn head_requests(&self) -> bool {
        matches!(self, Workload::Http(w) if w.head_requests())
    }

    /// The classes a run reports apart (txn-mixed: read, write); empty for the others.
    pub fn classes(&self) -> &'static [&'static str] {
        match self {
            Workload::Etcd(w) => w.classes(),
            _ => &[],
        }
    }

    /// The class of the request at hand (an index into `classes`), once it was made; None for
    /// a workload of one kind.
    pub fn class(&self) -> Option<u8> {
        match self {
            Workload::Etcd(w) => w.class(),
            _ => None,
        }
    }

    /// Whether each gRPC client keeps one bidi stream open and a request is one message on it
    /// (etcd's lease keepalives).
    pub fn bidi(&self) -> bool {
        matches!(self, Workload::Etcd(w) if w.bidi())
    }

    /// etcd lease-keepalive: the same workload keeping `leases` alive, one per client.
    pub fn with_leases(&self, leases: &[i64]) -> Workload {
        match self {
            Workload::Etcd(w) => Workload::Etcd(Box::new(w.with_leases(leases))),
            other => other.clone(),
        }
    }

    /// The time stamp an acknowledgement is recorded with (ns on the clock the watch
    /// benchmark's values are stamped with), so acknowledgements and events compare.
    pub fn stamp(at: Instant) -> u64 {
        etcd::epoch_ns(at)
    }

    /// Whether each acknowledged write's revision is kept by key (the watch benchmark's puts:
    /// the events the watchers should see).
    pub fn acks_by_key(&self) -> bool {
        matches!(self, Workload::WatchPuts(_))
    }

    /// Whether the writes this workload acknowledges can be looked up afterwards (`--verify`).
    pub fn verifiable(&self) -> bool {
        matches!(self, Workload::Etcd(_))
    }

    /// Whether failure `f` is the target refusing this client's auth token (it expired): the
    /// client may authenticate again and send the request once more.
    pub fn token_refused(&self, f: &Failure) -> bool {
        etcd::client::is_invalid_token(f)
    }

    /// Authenticates again over HTTP/1.1 connection `c` with `creds` and sends the new token
    /// from now on. A failure is `timeout` (the answer may still come: `c`'s framing is
    /// unknown) or `auth`.
    pub async fn reauthenticate_http(
        &mut self,
        c: &mut crate::client::http1::Conn,
        authority: &str,
        creds: Option<&(String, String)>,
        timeout: Duration,
    ) -> Result<(), Failure> {
        let Some((user, password)) = creds else {
            return Err(Failure::with(FailureKind::Auth, "no credentials"));
        };
        let auth = etcd::client::Client::http(c, authority).authenticate(user, password);
        self.take_token(tokio::time::timeout(timeout, auth).await.ok(), timeout)
    }

    /// `reauthenticate_http` over a gRPC connection's sender.
    pub async fn reauthenticate_grpc(
        &mut self,
        send: &mut crate::client::grpc::Sender,
        ledger: &crate::net::Ledger,
        authority: &str,
        creds: Option<&(String, String)>,
        timeout: Duration,
    ) -> Result<(), Failure> {
        let Some((user, password)) = creds else {
            return Err(Failure::with(FailureKind::Auth, "no credentials"));
        };
        let auth = etcd::client::Client::grpc(send, ledger, authority).authenticate(user, password);
        self.take_token(tokio::time::timeout(timeout, auth).await.ok(), timeout)
    }

    /// The answer to an authentication (None: none within `timeout`) made this client's token.
    fn take_token(
        &mut self,
        answer: Option<Result<String, Failure>>,
        timeout: Duration,
    ) -> Result<(), Failure> {
        let token = answer
            .unwrap_or_else(|| {
                Err(Failure::with(
                    FailureKind::Timeout,
                    format_args!("re-authentication: no answer within {timeout:?}"),
                ))
            })
            .map_err(|f| match f.kind {
                FailureKind::Timeout => f,
                _ => Failure::with(FailureKind::Auth, f),
            })?;
        self.set_token(&token)
            .map_err(|e| Failure::with(FailureKind::Auth, e))
    }

    /// Sends a new etcd auth token from now on (this client only).
    pub fn set_token(&mut self, token: &str) -> Result<(), String> {
        match self {
            Workload::Etcd(w) => w.set_token(token).map_err(|e| e.to_string()),
            Workload::WatchPuts(_) | Workload::Echo(_) | Workload::Http(_) | Workload::Grpc(_) => {
                Ok(())
            }
        }
    }
}
