//! etcd's operations as the engine drives them (put, range, txn-put, txn-mixed, lease
//! keepalives, the watch benchmark's stamped puts): request N over the gateway's JSON and over
//! gRPC, and the verdict on its answer.
//!
//! Its files: `keys` (the benchmark tool's key layout and values), `request` (what each
//! operation sends, rendered once), `watch_puts` (the watch benchmark's put load), `client`
//! (one etcd client over both stacks, for the calls outside the measured load); this file is
//! one client's view of an operation.

pub mod client;
mod keys;
mod request;
mod watch_puts;

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use prost::Message;
use serde_json::Value;

pub use keys::{put_key, put_value, varint_len};
pub use watch_puts::{STAMP_LEN, WatchPuts, epoch_ns, since_stamp, stamp};

use crate::client::grpc::Call;
use crate::config::{Endpoint, EtcdOp, TxnMixed};
use crate::outcome::{Failure, FailureKind, StatusKey};
use crate::rng::Rng;
use client::gateway_error;
use keys::{next_key, put_key_index};
use request::{TXN_END, TXN_FIELD, TXN_HEAD, TXN_OP_HEAD, json_body_len, mixed_read, targets};
use wirebench_wire::etcd::gateway::{self, GwResponse};
use wirebench_wire::grpc;
use wirebench_wire::http1::RequestTemplate;
use wirebench_wire::proto::etcd::{
    LeaseKeepAliveResponse, PutResponse, RangeResponse, TxnResponse, TxnResults,
};

/// Why an etcd operation's requests cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    #[error("the auth token is not a valid header value")]
    Token,
    #[error("endpoint {url}: {source}")]
    Template {
        url: String,
        source: wirebench_wire::http1::Error,
    },
    #[error("endpoint {url}: {source}")]
    Uri {
        url: String,
        source: http::uri::InvalidUri,
    },
    #[error("no endpoint to put to")]
    NoEndpoint,
    #[error("no key to put to")]
    NoKey,
    #[error("put request for {authority}: {source}")]
    PutTemplate {
        authority: String,
        source: wirebench_wire::http1::Error,
    },
    #[error("put request path for {authority}: {source}")]
    PutUri {
        authority: String,
        source: http::uri::InvalidUri,
    },
}

/// Everything that is the same for all clients, built once.
#[derive(Debug)]
struct Shared {
    op: EtcdOp,
    endpoints: Vec<Endpoint>,
    /// per endpoint: the HTTP request head up to Content-Length
    templates: Vec<RequestTemplate>,
    /// per endpoint: the gRPC call
    calls: Vec<Call>,
    /// per endpoint: the gateway request over plain HTTP/2
    h2_calls: Vec<Call>,
    /// put: `","value":"<base64 value>"}` (the constant tail of the JSON body);
    /// range: the whole JSON body
    json_tail: Bytes,
    /// put: protobuf field 2 (value) encoded; range: the whole framed request
    proto_tail: Bytes,
    /// txn-mixed: the read's JSON body and its framed gRPC request (both constant)
    read_json: Bytes,
    read_proto: Bytes,
    /// txn-mixed: a request is a read when a uniform u64 falls below this
    read_below: u64,
    /// lease-keepalive: the lease of each client (client `i` keeps `leases[i % len]` alive)
    leases: Arc<[i64]>,
}

/// One client's view of an etcd workload: the shared, pre-rendered parts plus scratch space.
#[derive(Debug, Clone)]
pub struct EtcdWorkload {
    shared: Arc<Shared>,
    rng: Rng,
    key: Vec<u8>,
    body: BytesMut,
    frame: BytesMut,
    /// the framed request of the call at hand: for range this client's own copy of the
    /// constant request, so the h2 crate's client cloning it touches no reference count shared
    /// with other threads
    request: Bytes,
    /// the JSON body of the plain HTTP/2 request at hand
    h2_body: Bytes,
    /// put: the key index of the request at hand
    key_index: u64,
    /// txn-mixed: the request at hand is a write
    writing: bool,
    /// txn-mixed: this client's own copy of the constant read request
    read_request: Bytes,
    /// lease-keepalive: the lease this client keeps alive
    lease: i64,
}

/// How an etcd operation's plain HTTP/2 bodies are made (`EtcdWorkload::h2_body`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum H2Body {
    /// a new body per request (put, txn-put)
    Generated,
    /// one body for every request (range)
    Constant,
}

impl EtcdWorkload {
    /// Whether `op` renders for `endpoints` (request heads, URIs), without generating its
    /// value: the errors `new` would give without a token.
    pub fn check(op: &EtcdOp, endpoints: &[Endpoint]) -> Result<(), EtcdError> {
        targets(op, endpoints, None, 0).map(drop)
    }

    /// `token`: an etcd auth token, sent as gRPC metadata `token` and as the HTTP
    /// `Authorization` header (the raw token, no scheme), as etcd expects.
    pub fn new(
        op: EtcdOp,
        endpoints: &[Endpoint],
        seed: u64,
        token: Option<&str>,
    ) -> Result<Self, EtcdError> {
        let mut rng = Rng::new(seed);
        let (json_tail, proto_tail) = request::tails(&op, &mut rng);
        let key_size = match &op {
            EtcdOp::Put { key_size, .. }
            | EtcdOp::TxnPut { key_size, .. }
            | EtcdOp::TxnMixed(TxnMixed { key_size, .. }) => *key_size,
            EtcdOp::Range { .. } | EtcdOp::LeaseKeepalive { .. } => 0,
        };
        let (read_json, read_proto, read_below) = match &op {
            EtcdOp::TxnMixed(m) => mixed_read(m),
            _ => (Bytes::new(), Bytes::new(), 0),
        };
        let t = targets(&op, endpoints, token, json_body_len(&op, &json_tail))?;
        Ok(EtcdWorkload {
            shared: Arc::new(Shared {
                op,
                endpoints: endpoints.to_vec(),
                templates: t.templates,
                calls: t.calls,
                h2_calls: t.h2_calls,
                json_tail,
                proto_tail,
                read_json,
                read_proto,
                read_below,
                leases: Arc::new([]),
            }),
            rng,
            key: vec![0; key_size],
            body: BytesMut::new(),
            frame: BytesMut::new(),
            request: Bytes::new(),
            h2_body: Bytes::new(),
            key_index: 0,
            writing: false,
            read_request: Bytes::new(),
            lease: 0,
        })
    }

    /// lease-keepalive: the same workload keeping `leases` alive, client `i` the lease
    /// `leases[i % len]` (the leases are granted before each run, `etcd::lease`).
    pub fn with_leases(&self, leases: &[i64]) -> EtcdWorkload {
        let s = &*self.shared;
        let mut w = self.clone();
        w.shared = Arc::new(Shared {
            op: s.op.clone(),
            endpoints: s.endpoints.clone(),
            templates: s.templates.clone(),
            calls: s.calls.clone(),
            h2_calls: s.h2_calls.clone(),
            json_tail: s.json_tail.clone(),
            proto_tail: s.proto_tail.clone(),
            read_json: s.read_json.clone(),
            read_proto: s.read_proto.clone(),
            read_below: s.read_below,
            leases: leases.into(),
        });
        w
    }

    /// The classes a run of this workload reports apart (txn-mixed: read, write).
    pub fn classes(&self) -> &'static [&'static str] {
        self.shared.op.classes()
    }

    /// The class of the request at hand (txn-mixed: 0 a read, 1 a write); None for an
    /// operation of one kind.
    pub fn class(&self) -> Option<u8> {
        matches!(self.shared.op, EtcdOp::TxnMixed(_)).then_some(u8::from(self.writing))
    }

    /// Whether a request is one message on a bidi stream the client keeps open (gRPC): the
    /// lease keepalives.
    pub fn bidi(&self) -> bool {
        matches!(self.shared.op, EtcdOp::LeaseKeepalive { .. })
    }

    pub fn for_client(&self, client: u64) -> EtcdWorkload {
        let mut w = self.clone();
        w.rng = Rng::new(self.rng.clone().next_u64() ^ client.wrapping_mul(0x2545_F491_4F6C_DD1D));
        w.body = BytesMut::with_capacity(256);
        w.frame = BytesMut::with_capacity(256);
        w.request = Bytes::copy_from_slice(&self.shared.proto_tail);
        w.read_request = Bytes::copy_from_slice(&self.shared.read_proto);
        if let EtcdOp::LeaseKeepalive { .. } = self.shared.op {
            let leases = &self.shared.leases;
            w.lease = match leases.len() {
                0 => 0,
                n => leases[(client % n as u64) as usize],
            };
            // LeaseKeepAliveRequest{ID = 1}: the gateway's JSON (int64 quoted) and framed
            w.body
                .put_slice(format!(r#"{{"ID":"{}"}}"#, w.lease).as_bytes());
            let mut frame = BytesMut::new();
            grpc::encode(
                &wirebench_wire::proto::etcd::LeaseKeepAliveRequest { id: w.lease },
                &mut frame,
            );
            w.request = frame.freeze();
        }
        w
    }

    /// This client's copy with a new auth token (after re-authenticating); allocates.
    pub fn set_token(&mut self, token: &str) -> Result<(), EtcdError> {
        let s = &*self.shared;
        let body_len = json_body_len(&s.op, &s.json_tail);
        let t = targets(&s.op, &s.endpoints, Some(token), body_len)?;
        self.shared = Arc::new(Shared {
            op: s.op.clone(),
            endpoints: s.endpoints.clone(),
            templates: t.templates,
            calls: t.calls,
            h2_calls: t.h2_calls,
            json_tail: s.json_tail.clone(),
            proto_tail: s.proto_tail.clone(),
            read_json: s.read_json.clone(),
            read_proto: s.read_proto.clone(),
            read_below: s.read_below,
            leases: s.leases.clone(),
        });
        Ok(())
    }

    pub fn encode_http(&mut self, idx: u64, ep: usize, dst: &mut BytesMut) -> usize {
        self.next_json(idx);
        let shared = &*self.shared;
        let template = &shared.templates[ep];
        match shared.op {
            EtcdOp::Put { .. } | EtcdOp::TxnPut { .. } | EtcdOp::LeaseKeepalive { .. } => {
                template.encode(&self.body, dst)
            }
            EtcdOp::TxnMixed(_) if !self.writing => template.encode(&shared.read_json, dst),
            EtcdOp::TxnMixed(_) => template.encode(&self.body, dst),
            EtcdOp::Range { .. } => template.encode(&shared.json_tail, dst),
        }
    }

    /// txn-mixed: whether request `idx` writes (etcd's tool: a read with probability
    /// rw-ratio / (1 + rw-ratio)), and for a write its key index (request index mod the key
    /// space, as etcd's tool writes them).
    fn next_mixed(&mut self, idx: u64, key_space_size: u64) {
        self.writing = self.rng.next_u64() >= self.shared.read_below;
        if self.writing {
            self.key_index = idx % key_space_size;
        }
    }

    /// The JSON body of a transaction of `ops` puts from key index `base` into `body`.
    fn json_txn_puts(&mut self, base: u64, ops: usize, key_space_size: u64) {
        let shared = &*self.shared;
        self.body.clear();
        self.body.put_slice(TXN_HEAD);
        for j in 0..ops as u64 {
            if j > 0 {
                self.body.put_u8(b',');
            }
            put_key_index(&mut self.key, (base + j) % key_space_size);
            self.body.put_slice(TXN_OP_HEAD);
            gateway::put_base64(&self.key, &mut self.body);
            self.body.put_slice(&shared.json_tail);
        }
        self.body.put_slice(TXN_END);
    }

    /// Put and txn-put: the JSON body of request `idx` into `body` (range's is constant).
    fn next_json(&mut self, idx: u64) {
        let shared = &*self.shared;
        match shared.op {
            EtcdOp::Put { .. } => {
                self.key_index = next_key(&shared.op, &mut self.rng, &mut self.key, idx);
                self.body.clear();
                self.body.put_slice(br#"{"key":""#);
                gateway::put_base64(&self.key, &mut self.body);
                self.body.put_slice(&shared.json_tail);
            }
            EtcdOp::TxnPut {
                key_space_size,
                ops,
                ..
            } => {
                self.key_index = self.rng.below(key_space_size);
                self.json_txn_puts(self.key_index, ops, key_space_size);
            }
            EtcdOp::TxnMixed(TxnMixed { key_space_size, .. }) => {
                self.next_mixed(idx, key_space_size);
                if self.writing {
                    self.json_txn_puts(self.key_index, 1, key_space_size);
                }
            }
            // each client's body is constant (`for_client`)
            EtcdOp::Range { .. } | EtcdOp::LeaseKeepalive { .. } => {}
        }
    }

    /// How this operation's plain HTTP/2 bodies are made; None for txn-mixed and lease
    /// keepalives, whose bodies vary in length, which an h2 call carries as a header of its own.
    pub fn h2_body(&self) -> Option<H2Body> {
        match self.shared.op {
            EtcdOp::Put { .. } | EtcdOp::TxnPut { .. } => Some(H2Body::Generated),
            EtcdOp::Range { .. } => Some(H2Body::Constant),
            EtcdOp::TxnMixed(_) | EtcdOp::LeaseKeepalive { .. } => None,
        }
    }

    /// Plain HTTP/2 request `idx` to endpoint `ep`, its body made as `body` says (`h2_body`):
    /// its JSON body and the gateway request.
    pub fn next_h2(&mut self, idx: u64, ep: usize, body: H2Body) -> (&Bytes, &Call) {
        match body {
            H2Body::Generated => {
                // the last request's bytes first, so the buffer is reused
                self.h2_body = Bytes::new();
                self.next_json(idx);
                self.h2_body = self.body.split().freeze();
            }
            // this client's own copy of the constant body (no reference count shared between
            // threads)
            H2Body::Constant if self.h2_body.is_empty() => {
                self.h2_body = Bytes::copy_from_slice(&self.shared.json_tail);
            }
            H2Body::Constant => {}
        }
        (&self.h2_body, &self.shared.h2_calls[ep])
    }

    /// The verdict on a gateway answer; a put's acknowledges its key index and revision.
    pub fn check_http(
        &self,
        status: u16,
        body: &[u8],
    ) -> Result<(StatusKey, Ack), (StatusKey, Failure)> {
        let key = StatusKey::Http(status);
        if status != 200 {
            return Err((key, gateway_error(status, body)));
        }
        if let EtcdOp::LeaseKeepalive { .. } = self.shared.op {
            return match gateway::keepalive_answer(body) {
                Ok(k) => self.kept_alive(k.id, k.ttl).map(|()| (key, None)),
                Err(gateway::KeepAliveError::Stream(m)) => Err(stream_error(body, &m)),
                Err(gateway::KeepAliveError::Malformed(why)) => {
                    Err(Failure::with(FailureKind::BadResponse, why))
                }
            }
            .map_err(|f| (key, f));
        }
        let r: GwResponse = match serde_json::from_slice(body) {
            Ok(r) => r,
            Err(e) => return Err((key, Failure::with(FailureKind::BadResponse, e))),
        };
        match r.header.and_then(|h| h.revision()) {
            Some(rev) => Ok((key, self.ack(rev))),
            None => Err((
                key,
                Failure::with(FailureKind::BadResponse, "no header.revision in response"),
            )),
        }
    }

    /// A write's acknowledgement: the key index of the request at hand (a txn-put's first
    /// key) and the revision etcd gave it; None for a read.
    fn ack(&self, revision: i64) -> Ack {
        let write = match self.shared.op {
            EtcdOp::Put { .. } | EtcdOp::TxnPut { .. } => true,
            EtcdOp::TxnMixed(_) => self.writing,
            EtcdOp::Range { .. } | EtcdOp::LeaseKeepalive { .. } => false,
        };
        write.then_some((self.key_index as usize, revision))
    }

    /// The verdict on a keepalive's answer: for this client's lease, with a TTL left.
    fn kept_alive(&self, id: i64, ttl: i64) -> Result<(), Failure> {
        if id != self.lease {
            return Err(Failure::with(
                FailureKind::Lease,
                "the keepalive answered for another lease",
            ));
        }
        if ttl <= 0 {
            return Err(Failure::with(
                FailureKind::Lease,
                "TTL 0: the lease is gone (revoked or expired)",
            ));
        }
        Ok(())
    }

    pub fn call(&self, ep: usize) -> &Call {
        &self.shared.calls[ep]
    }

    /// Encodes gRPC request number `idx`, then [`EtcdWorkload::grpc_request`].
    pub fn next_grpc(&mut self, idx: u64) {
        let shared = &*self.shared;
        match shared.op {
            EtcdOp::Put { .. } => {
                // the last request's bytes first, so the buffer is reused
                self.request = Bytes::new();
                self.key_index = next_key(&shared.op, &mut self.rng, &mut self.key, idx);
                // PutRequest{key = 1, value = 2} encoded by hand: the value part is constant.
                let key_field = prost::encoding::bytes::encoded_len(1, &self.key);
                let len = key_field + shared.proto_tail.len();
                self.frame.reserve(grpc::PREFIX_LEN + len);
                self.frame.put_u8(0);
                self.frame.put_u32(len as u32);
                prost::encoding::bytes::encode(1, &self.key, &mut self.frame);
                self.frame.put_slice(&shared.proto_tail);
                self.request = self.frame.split().freeze();
            }
            EtcdOp::TxnPut {
                key_space_size,
                ops,
                ..
            } => {
                self.key_index = self.rng.below(key_space_size);
                self.grpc_txn_puts(self.key_index, ops, key_space_size);
            }
            EtcdOp::TxnMixed(TxnMixed { key_space_size, .. }) => {
                self.next_mixed(idx, key_space_size);
                if self.writing {
                    self.grpc_txn_puts(self.key_index, 1, key_space_size);
                } else {
                    // this client's own copy of the constant read: no allocation, no reference
                    // count shared with other threads
                    self.request = self.read_request.clone();
                }
            }
            // constant: the range's (`for_client`'s copy), each client's keepalive
            EtcdOp::Range { .. } | EtcdOp::LeaseKeepalive { .. } => {}
        }
    }

    /// The framed gRPC request of a transaction of `ops` puts from key index `base` into
    /// `request`.
    fn grpc_txn_puts(&mut self, base: u64, ops: usize, key_space_size: u64) {
        use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint};
        let shared = &*self.shared;
        // the last request's bytes first, so the buffer is reused
        self.request = Bytes::new();
        // TxnRequest{success = 2: [RequestOp{request_put = 2: PutRequest}]}, by hand:
        // every op has the same length (the keys have one size)
        let put_len = prost::encoding::bytes::encoded_len(1, &self.key) + shared.proto_tail.len();
        let op_len = 1 + encoded_len_varint(put_len as u64) + put_len;
        let len = ops * (1 + encoded_len_varint(op_len as u64) + op_len);
        self.frame.reserve(grpc::PREFIX_LEN + len);
        self.frame.put_u8(0);
        self.frame.put_u32(len as u32);
        for j in 0..ops as u64 {
            put_key_index(&mut self.key, (base + j) % key_space_size);
            encode_key(TXN_FIELD, WireType::LengthDelimited, &mut self.frame);
            encode_varint(op_len as u64, &mut self.frame);
            encode_key(TXN_FIELD, WireType::LengthDelimited, &mut self.frame);
            encode_varint(put_len as u64, &mut self.frame);
            prost::encoding::bytes::encode(1, &self.key, &mut self.frame);
            self.frame.put_slice(&shared.proto_tail);
        }
        self.request = self.frame.split().freeze();
    }

    /// The framed request `next_grpc` made.
    pub fn grpc_request(&self) -> &Bytes {
        &self.request
    }

    /// The verdict on a gRPC answer; a put's acknowledges its key index and revision.
    pub fn check_grpc(&self, message: &Bytes) -> Result<Ack, Failure> {
        let header = match self.shared.op {
            EtcdOp::Put { .. } => PutResponse::decode(message.clone()).map(|r| r.header),
            EtcdOp::Range { .. } => RangeResponse::decode(message.clone()).map(|r| r.header),
            // the operations' results are skipped, not decoded
            EtcdOp::TxnPut { .. } | EtcdOp::TxnMixed(_) => {
                TxnResponse::decode(message.clone()).map(|r| r.header)
            }
            // no bytes fields: decoded from the slice, nothing allocated
            EtcdOp::LeaseKeepalive { .. } => {
                let r = LeaseKeepAliveResponse::decode(&message[..])
                    .map_err(|e| Failure::with(FailureKind::BadResponse, e))?;
                return self.kept_alive(r.id, r.ttl).map(|()| None);
            }
        };
        match header {
            Ok(Some(h)) => Ok(self.ack(h.revision)),
            Ok(None) => Err(Failure::with(
                FailureKind::BadResponse,
                "no header in response",
            )),
            Err(e) => Err(Failure::with(FailureKind::BadResponse, e)),
        }
    }

    pub fn sample_grpc(&self, message: &Bytes) -> Value {
        let v = match self.shared.op {
            EtcdOp::Put { .. } => {
                PutResponse::decode(message.clone()).map(|r| gateway::put_response_json(&r))
            }
            EtcdOp::Range { .. } => {
                RangeResponse::decode(message.clone()).map(|r| gateway::range_response_json(&r))
            }
            EtcdOp::TxnPut { .. } | EtcdOp::TxnMixed(_) => {
                TxnResults::decode(message.clone()).map(|r| gateway::txn_results_json(&r))
            }
            EtcdOp::LeaseKeepalive { .. } => LeaseKeepAliveResponse::decode(message.clone())
                .map(|r| gateway::lease_keepalive_json(&r)),
        };
        v.unwrap_or_else(|e| Value::String(format!("undecodable: {e}")))
    }
}

/// What an acknowledged request hands the run besides its status: for the watch benchmark's
/// puts, the key index and the revision etcd assigned (`stats::Stats::revisions`); nothing for
/// the other workloads.
pub type Ack = Option<(usize, i64)>;

/// A gateway stream's `{"error": {...}}` line (`message`, its text): an etcd failure with the
/// gRPC status code the line names.
fn stream_error(line: &[u8], message: &str) -> Failure {
    #[derive(serde::Deserialize)]
    struct Line {
        error: Status,
    }
    #[derive(serde::Deserialize)]
    struct Status {
        #[serde(default)]
        grpc_code: Option<i64>,
    }
    let code = serde_json::from_slice::<Line>(line)
        .ok()
        .and_then(|l| client::gateway_code(l.error.grpc_code));
    match code {
        Some(code) => Failure::status(FailureKind::Etcd, code, message),
        None => Failure::with(FailureKind::Etcd, message),
    }
}

#[cfg(test)]
mod tests;
