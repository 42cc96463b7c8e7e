//! Which workload runs on which stack, in the types: a `Workload` becomes an `OnStack` once,
//! when a run starts, and each stack's clients then hold only the operations their stack
//! has. A workload a stack cannot carry is an error there (`StackMismatch`), never a case a
//! client meets mid-run.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use serde_json::Value;

use super::etcd::{self, Ack, EtcdWorkload, H2Body, WatchPuts};
use super::{EchoWorkload, GrpcWorkload, HttpWorkload, Workload, sample_body};
use crate::client::grpc::Call;
use crate::outcome::{Failure, FailureKind, StatusKey};
use crate::stack::Proto;
use wirebench_wire::grpc::Code;

/// A workload over HTTP/1.1.
#[derive(Debug, Clone)]
pub enum Http1Work {
    Etcd(Box<EtcdWorkload>),
    WatchPuts(Box<WatchPuts>),
    Echo(EchoWorkload),
    Http(HttpWorkload),
}

/// A workload over plain HTTP/2: requests with bodies of their own, judged by their status.
#[derive(Debug, Clone)]
pub enum H2Work {
    /// an etcd operation whose bodies plain HTTP/2 can carry, and how they are made
    Etcd(Box<EtcdWorkload>, H2Body),
    Echo(EchoWorkload),
    Http(HttpWorkload),
}

/// A workload over gRPC.
#[derive(Debug, Clone)]
pub enum GrpcWork {
    Etcd(Box<EtcdWorkload>),
    WatchPuts(Box<WatchPuts>),
    Echo(EchoWorkload),
    /// any unary or server-streaming method
    Method(GrpcWorkload),
}

/// The streams of an h2 connection: plain HTTP/2 requests or gRPC calls.
#[derive(Debug, Clone)]
pub enum OverH2 {
    Plain(H2Work),
    Grpc(GrpcWork),
}

/// A workload with its stack.
#[derive(Debug, Clone)]
pub enum OnStack {
    Http1(Http1Work),
    H2(OverH2),
}

/// A workload asked to run over a stack that cannot carry it (`cli` refuses these first).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{workload} does not run over {proto}")]
pub struct StackMismatch {
    workload: &'static str,
    proto: Proto,
}

impl Workload {
    /// This workload on `proto`'s stack.
    pub fn on(self, proto: Proto) -> Result<OnStack, StackMismatch> {
        let workload = self.title();
        let mismatch = || StackMismatch { workload, proto };
        Ok(match (proto, self) {
            (Proto::Http, Workload::Etcd(w)) => OnStack::Http1(Http1Work::Etcd(w)),
            (Proto::Http, Workload::WatchPuts(w)) => OnStack::Http1(Http1Work::WatchPuts(w)),
            (Proto::Http, Workload::Echo(w)) => OnStack::Http1(Http1Work::Echo(w)),
            (Proto::Http, Workload::Http(w)) => OnStack::Http1(Http1Work::Http(w)),
            (Proto::H2, Workload::Etcd(w)) => match w.h2_body() {
                Some(body) => OnStack::H2(OverH2::Plain(H2Work::Etcd(w, body))),
                None => return Err(mismatch()),
            },
            (Proto::H2, Workload::Echo(w)) => OnStack::H2(OverH2::Plain(H2Work::Echo(w))),
            (Proto::H2, Workload::Http(w)) => OnStack::H2(OverH2::Plain(H2Work::Http(w))),
            (Proto::Grpc, Workload::Etcd(w)) => OnStack::H2(OverH2::Grpc(GrpcWork::Etcd(w))),
            (Proto::Grpc, Workload::WatchPuts(w)) => {
                OnStack::H2(OverH2::Grpc(GrpcWork::WatchPuts(w)))
            }
            (Proto::Grpc, Workload::Echo(w)) => OnStack::H2(OverH2::Grpc(GrpcWork::Echo(w))),
            (Proto::Grpc, Workload::Grpc(w)) => OnStack::H2(OverH2::Grpc(GrpcWork::Method(w))),
            (Proto::H3, Workload::Echo(w)) => OnStack::H2(OverH2::Plain(H2Work::Echo(w))),
            (Proto::H3, Workload::Http(w)) => OnStack::H2(OverH2::Plain(H2Work::Http(w))),
            (Proto::H3, Workload::Etcd(_) | Workload::WatchPuts(_) | Workload::Grpc(_))
            | (Proto::Http | Proto::H2, Workload::Grpc(_))
            | (Proto::H2, Workload::WatchPuts(_))
            | (Proto::Grpc, Workload::Http(_)) => return Err(mismatch()),
        })
    }

    fn title(&self) -> &'static str {
        match self {
            Workload::Etcd(_) => "an etcd operation",
            Workload::WatchPuts(_) => "the watch benchmark's puts",
            Workload::Echo(_) => "the echo call",
            Workload::Http(_) => "an HTTP target",
            Workload::Grpc(_) => "a gRPC method",
        }
    }
}

/// What every stack's client does with its workload besides sending: its own copy, the class
/// of the request at hand, the etcd auth token.
pub trait ClientWork: Sized {
    /// A fresh instance for client `client` (own scratch buffers and random stream).
    fn for_client(&self, client: u64) -> Self;

    /// The etcd workload inside, if it is one (the only one with classes and tokens).
    fn etcd(&self) -> Option<&EtcdWorkload>;

    fn etcd_mut(&mut self) -> Option<&mut EtcdWorkload>;

    /// The class of the request at hand (txn-mixed: read or write), once it was made.
    fn class(&self) -> Option<u8> {
        self.etcd().and_then(|w| w.class())
    }

    /// Whether failure `f` is the target refusing this client's auth token (it expired): the
    /// client may authenticate again and send the request once more.
    fn token_refused(&self, f: &Failure) -> bool {
        etcd::client::is_invalid_token(f)
    }

    /// A successful HTTP response body as the report's sample.
    fn sample_http(&self, body: &[u8]) -> Value {
        sample_body(body)
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
        match self.etcd_mut() {
            Some(w) => w
                .set_token(&token)
                .map_err(|e| Failure::with(FailureKind::Auth, e)),
            None => Ok(()),
        }
    }
}

/// Authenticates again over HTTP/1.1 connection `c` with `creds` and sends the new token
/// from now on. A failure is `timeout` (the answer may still come: `c`'s framing is
/// unknown) or `auth`.
pub async fn reauthenticate_http(
    work: &mut impl ClientWork,
    c: &mut crate::client::http1::Conn,
    authority: &str,
    creds: Option<&(String, String)>,
    timeout: Duration,
) -> Result<(), Failure> {
    let Some((user, password)) = creds else {
        return Err(Failure::with(FailureKind::Auth, "no credentials"));
    };
    let auth = etcd::client::Client::http(c, authority).authenticate(user, password);
    let answer = tokio::time::timeout(timeout, auth).await.ok();
    work.take_token(answer, timeout)
}

/// `reauthenticate_http` over a gRPC connection's sender.
pub async fn reauthenticate_grpc(
    work: &mut impl ClientWork,
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
    let answer = tokio::time::timeout(timeout, auth).await.ok();
    work.take_token(answer, timeout)
}

impl Http1Work {
    /// Appends request number `idx` for endpoint `ep` to `dst`; returns its head length.
    pub fn encode_http(&mut self, idx: u64, ep: usize, dst: &mut BytesMut) -> usize {
        match self {
            Http1Work::Etcd(w) => w.encode_http(idx, ep, dst),
            Http1Work::WatchPuts(w) => w.encode_http(idx, dst),
            Http1Work::Echo(w) => w.encode_http(ep, dst),
            Http1Work::Http(w) => w.encode_http(idx, ep, dst),
        }
    }

    /// The verdict on a response: its status, and what it acknowledged.
    pub fn check_http(
        &self,
        status: u16,
        body: &[u8],
    ) -> Result<(StatusKey, Ack), (StatusKey, Failure)> {
        match self {
            Http1Work::Etcd(w) => w.check_http(status, body),
            Http1Work::WatchPuts(w) => w.check_http(status, body),
            Http1Work::Echo(w) => w.check_http(status, body).map(|s| (s, None)),
            Http1Work::Http(w) => w.check_http(status).map(|s| (s, None)),
        }
    }

    /// Whether the requests are HEAD (their responses have no body).
    pub fn head_requests(&self) -> bool {
        matches!(self, Http1Work::Http(w) if w.head_requests())
    }
}

impl ClientWork for Http1Work {
    fn for_client(&self, client: u64) -> Self {
        match self {
            Http1Work::Etcd(w) => Http1Work::Etcd(Box::new(w.for_client(client))),
            Http1Work::WatchPuts(w) => Http1Work::WatchPuts(Box::new(w.for_client())),
            Http1Work::Echo(w) => Http1Work::Echo(w.for_client()),
            Http1Work::Http(w) => Http1Work::Http(w.for_client(client)),
        }
    }

    fn etcd(&self) -> Option<&EtcdWorkload> {
        match self {
            Http1Work::Etcd(w) => Some(w),
            _ => None,
        }
    }

    fn etcd_mut(&mut self) -> Option<&mut EtcdWorkload> {
        match self {
            Http1Work::Etcd(w) => Some(w),
            _ => None,
        }
    }
}

impl H2Work {
    /// Request number `idx` for endpoint `ep`: its body and its request (method, path,
    /// headers), lent together.
    pub fn next_h2(&mut self, idx: u64, ep: usize) -> (&Bytes, &Call) {
        match self {
            H2Work::Etcd(w, body) => w.next_h2(idx, ep, *body),
            H2Work::Echo(w) => (w.json_body(), w.h2_call(ep)),
            H2Work::Http(w) => w.next_h2(idx, ep),
        }
    }

    /// The verdict on a response, as over HTTP/1.1: its status, and what it acknowledged.
    pub fn check_http(
        &self,
        status: u16,
        body: &[u8],
    ) -> Result<(StatusKey, Ack), (StatusKey, Failure)> {
        match self {
            H2Work::Etcd(w, _) => w.check_http(status, body),
            H2Work::Echo(w) => w.check_http(status, body).map(|s| (s, None)),
            H2Work::Http(w) => w.check_http(status).map(|s| (s, None)),
        }
    }
}

impl GrpcWork {
    /// The method for endpoint `ep`.
    pub fn call(&self, ep: usize) -> &Call {
        match self {
            GrpcWork::Etcd(w) => w.call(ep),
            GrpcWork::WatchPuts(w) => w.call(),
            GrpcWork::Echo(w) => w.call(ep),
            GrpcWork::Method(w) => w.call(ep),
        }
    }

    /// Makes request number `idx` to endpoint `ep`, which `grpc_request` and `call` then
    /// lend.
    pub fn next_grpc(&mut self, idx: u64, ep: usize) {
        match self {
            GrpcWork::Etcd(w) => w.next_grpc(idx),
            GrpcWork::WatchPuts(w) => w.next_grpc(idx),
            GrpcWork::Method(w) => w.next(idx, ep),
            GrpcWork::Echo(_) => {}
        }
    }

    /// The request `next_grpc` made, framed (5-byte prefix + protobuf).
    pub fn grpc_request(&self) -> &Bytes {
        match self {
            GrpcWork::Etcd(w) => w.grpc_request(),
            GrpcWork::WatchPuts(w) => w.grpc_request(),
            GrpcWork::Echo(w) => w.grpc_request(),
            GrpcWork::Method(w) => w.grpc_request(),
        }
    }

    /// The verdict on a response message: what it acknowledged, or why it failed.
    pub fn check_grpc(&self, message: &Bytes) -> Result<Ack, Failure> {
        match self {
            GrpcWork::Etcd(w) => w.check_grpc(message),
            GrpcWork::WatchPuts(w) => w.check_grpc(message),
            GrpcWork::Echo(w) => w.check_grpc(message).map(|()| None),
            // the framing and the status were judged: one message, grpc-status 0
            GrpcWork::Method(_) => Ok(None),
        }
    }

    /// A successful response message as gateway-style JSON, for the report's sample.
    pub fn sample_grpc(&self, message: &Bytes) -> Value {
        match self {
            GrpcWork::Etcd(w) => w.sample_grpc(message),
            GrpcWork::WatchPuts(w) => w.sample_grpc(message),
            GrpcWork::Echo(w) => w.sample_grpc(message),
            GrpcWork::Method(w) => w.sample_grpc(message),
        }
    }

    /// Whether the calls are server-streaming (a method whose schema says so).
    pub fn server_streaming(&self) -> bool {
        matches!(self, GrpcWork::Method(w) if w.server_streaming())
    }

    /// A method whose calls stream: its workload (any streaming kind), else `None`.
    pub fn streaming_method(&self) -> Option<&GrpcWorkload> {
        match self {
            GrpcWork::Method(w) if w.server_streaming() || w.client_streaming() => Some(w),
            _ => None,
        }
    }

    /// Whether each client keeps one bidi stream open and a request is one message on it
    /// (etcd's lease keepalives).
    pub fn bidi(&self) -> bool {
        matches!(self, GrpcWork::Etcd(w) if w.bidi())
    }
}

impl ClientWork for GrpcWork {
    fn for_client(&self, client: u64) -> Self {
        match self {
            GrpcWork::Etcd(w) => GrpcWork::Etcd(Box::new(w.for_client(client))),
            GrpcWork::WatchPuts(w) => GrpcWork::WatchPuts(Box::new(w.for_client())),
            GrpcWork::Echo(w) => GrpcWork::Echo(w.for_client()),
            GrpcWork::Method(w) => GrpcWork::Method(w.for_client(client)),
        }
    }

    fn etcd(&self) -> Option<&EtcdWorkload> {
        match self {
            GrpcWork::Etcd(w) => Some(w),
            _ => None,
        }
    }

    fn etcd_mut(&mut self) -> Option<&mut EtcdWorkload> {
        match self {
            GrpcWork::Etcd(w) => Some(w),
            _ => None,
        }
    }
}

impl OverH2 {
    /// Makes request number `idx` for endpoint `ep`: its body and its request (method, path,
    /// headers), lent together. A gRPC body is the framed message.
    pub fn next_request(&mut self, idx: u64, ep: usize) -> (&Bytes, &Call) {
        match self {
            OverH2::Plain(w) => w.next_h2(idx, ep),
            OverH2::Grpc(w) => {
                w.next_grpc(idx, ep);
                (w.grpc_request(), w.call(ep))
            }
        }
    }

    /// The verdict on a complete answer: a plain response by its `status` and body as over
    /// HTTP/1.1, a gRPC response message (grpc-status 0 already judged) by its content.
    pub fn judge(
        &self,
        status: u16,
        body: &Bytes,
    ) -> Result<(StatusKey, Ack), (StatusKey, Failure)> {
        match self {
            OverH2::Plain(w) => w.check_http(status, body),
            OverH2::Grpc(w) => {
                let ok = StatusKey::Grpc(Code::Ok.as_u32());
                w.check_grpc(body).map(|ack| (ok, ack)).map_err(|f| (ok, f))
            }
        }
    }

    /// A successful answer as the report's sample.
    pub fn sample(&self, body: &Bytes) -> Value {
        match self {
            OverH2::Plain(_) => sample_body(body),
            OverH2::Grpc(w) => w.sample_grpc(body),
        }
    }
}

impl ClientWork for OverH2 {
    fn for_client(&self, client: u64) -> Self {
        match self {
            OverH2::Plain(H2Work::Etcd(w, body)) => {
                OverH2::Plain(H2Work::Etcd(Box::new(w.for_client(client)), *body))
            }
            OverH2::Plain(H2Work::Echo(w)) => OverH2::Plain(H2Work::Echo(w.for_client())),
            OverH2::Plain(H2Work::Http(w)) => OverH2::Plain(H2Work::Http(w.for_client(client))),
            OverH2::Grpc(w) => OverH2::Grpc(w.for_client(client)),
        }
    }

    fn etcd(&self) -> Option<&EtcdWorkload> {
        match self {
            OverH2::Plain(H2Work::Etcd(w, _)) => Some(w),
            OverH2::Grpc(w) => w.etcd(),
            OverH2::Plain(_) => None,
        }
    }

    fn etcd_mut(&mut self) -> Option<&mut EtcdWorkload> {
        match self {
            OverH2::Plain(H2Work::Etcd(w, _)) => Some(w),
            OverH2::Grpc(w) => w.etcd_mut(),
            OverH2::Plain(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HttpSpec;

    fn http_target() -> Workload {
        let spec = HttpSpec {
            requests: vec![crate::config::HttpRequestSpec {
                head: std::sync::Arc::new(crate::config::HttpHead {
                    method: "GET".into(),
                    path: "/".into(),
                    headers: Vec::new(),
                }),
                body: None,
            }],
            weights: Vec::new(),
            ok_status: (200, 299),
        };
        let ep = crate::config::parse_url("http://127.0.0.1:9/").unwrap().0;
        Workload::Http(HttpWorkload::new(&spec, &[ep]).unwrap())
    }

    #[test]
    fn a_workload_its_stack_cannot_carry_is_an_error_before_the_run() {
        let e = http_target().on(Proto::Grpc).unwrap_err();
        assert_eq!(e.to_string(), "an HTTP target does not run over gRPC");
        assert!(matches!(
            http_target().on(Proto::Http),
            Ok(OnStack::Http1(Http1Work::Http(_)))
        ));
        assert!(matches!(
            http_target().on(Proto::H2),
            Ok(OnStack::H2(OverH2::Plain(H2Work::Http(_))))
        ));
    }

    #[test]
    fn an_etcd_operation_runs_over_plain_http2_only_when_its_bodies_have_one_length() {
        let ep = crate::config::parse_url("http://127.0.0.1:9/").unwrap().0;
        let etcd = |op| {
            Workload::Etcd(Box::new(
                EtcdWorkload::new(op, std::slice::from_ref(&ep), 1, None).unwrap(),
            ))
        };
        let lease = etcd(crate::config::EtcdOp::LeaseKeepalive { ttl: 100 });
        assert_eq!(
            lease.clone().on(Proto::H2).unwrap_err().to_string(),
            "an etcd operation does not run over HTTP/2"
        );
        assert!(matches!(
            lease.on(Proto::Grpc),
            Ok(OnStack::H2(OverH2::Grpc(GrpcWork::Etcd(_))))
        ));
    }
}
