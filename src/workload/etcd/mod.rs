//! etcd's operations as the engine drives them (put, range, txn-put, txn-mixed, lease
//! keepalives, the watch benchmark's stamped puts): request N over the gateway's JSON and over
//! gRPC, and the verdict on its answer.

use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use http::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HeaderName, HeaderValue};
use http::{Method, Uri};
use prost::Message;
use serde_json::Value;

use crate::client::grpc::Call;
use crate::config::{Endpoint, EtcdOp, TxnMixed};
pub mod client;

use crate::config::WatchConfig;
use crate::outcome::{Failure, FailureKind, StatusKey};
use client::{gateway_error, put_body, put_revision, put_revision_gateway};
use wirebench_wire::etcd::gateway::{self, GwResponse};
use wirebench_wire::grpc;
use wirebench_wire::http1::RequestTemplate;
use wirebench_wire::proto::etcd::{
    LeaseKeepAliveResponse, PutResponse, RangeRequest, RangeResponse, RequestOp, TxnRequest,
    TxnResponse, TxnResults, request_op,
};

/// The gateway path of `op`.
fn gateway_path(op: &EtcdOp) -> &'static str {
    match op {
        EtcdOp::Put { .. } => "/v3/kv/put",
        EtcdOp::Range { .. } => "/v3/kv/range",
        EtcdOp::TxnPut { .. } | EtcdOp::TxnMixed(_) => "/v3/kv/txn",
        EtcdOp::LeaseKeepalive { .. } => "/v3/lease/keepalive",
    }
}

/// The gRPC method of `op`.
fn grpc_path(op: &EtcdOp) -> &'static str {
    match op {
        EtcdOp::Put { .. } => "/etcdserverpb.KV/Put",
        EtcdOp::Range { .. } => "/etcdserverpb.KV/Range",
        EtcdOp::TxnPut { .. } | EtcdOp::TxnMixed(_) => "/etcdserverpb.KV/Txn",
        EtcdOp::LeaseKeepalive { .. } => "/etcdserverpb.Lease/LeaseKeepAlive",
    }
}

/// Bytes of a zigzag varint (Go's binary.PutVarint) for a non-negative n.
pub fn varint_len(n: u64) -> usize {
    let mut z = u128::from(n) << 1;
    let mut len = 1;
    while z >= 0x80 {
        z >>= 7;
        len += 1;
    }
    len
}

/// Writes n as Go's binary.PutVarint does (zigzag, so 2n as a uvarint) at the start of `key`,
/// leaving the rest zero: the key layout of etcd's benchmark tool. `key` must hold varint_len(n).
fn put_key_index(key: &mut [u8], n: u64) {
    key.fill(0);
    let mut z = u128::from(n) << 1;
    let mut i = 0;
    while z >= 0x80 {
        key[i] = (z as u8) | 0x80;
        z >>= 7;
        i += 1;
    }
    key[i] = z as u8;
}

/// Sets `key` to the key of put number `idx`: sequential, or uniform over the key space.
/// Put: writes the key of request `idx` into `key`; returns its key index (0 for range).
fn next_key(op: &EtcdOp, rng: &mut Rng, key: &mut [u8], idx: u64) -> u64 {
    if let EtcdOp::Put {
        key_space_size,
        sequential_keys,
        ..
    } = *op
    {
        let n = if sequential_keys {
            idx % key_space_size
        } else {
            rng.below(key_space_size)
        };
        put_key_index(key, n);
        return n;
    }
    0
}

/// The put key of index `n`, `key_size` bytes (what the put load wrote for it).
pub fn put_key(key_size: usize, n: u64) -> Vec<u8> {
    let mut key = vec![0; key_size];
    put_key_index(&mut key, n);
    key
}

/// What `op` sends to each endpoint: the HTTP/1.1 request heads, the gRPC calls, and the
/// gateway requests over plain HTTP/2.
struct Targets {
    templates: Vec<RequestTemplate>,
    calls: Vec<Call>,
    h2_calls: Vec<Call>,
}

/// The length of `op`'s JSON body (the same for every request: the keys have one size).
fn json_body_len(op: &EtcdOp, json_tail: &[u8]) -> usize {
    match op {
        EtcdOp::Put { key_size, .. } => {
            let mut b = BytesMut::new();
            gateway::put_base64(&vec![0; *key_size], &mut b);
            br#"{"key":""#.len() + b.len() + json_tail.len()
        }
        EtcdOp::Range { .. } => json_tail.len(),
        EtcdOp::TxnPut { key_size, ops, .. } => txn_body_len(*key_size, *ops, json_tail),
        // the writes' (`cli` runs neither of these two over plain HTTP/2, where the length is
        // a header of the call)
        EtcdOp::TxnMixed(m) => txn_body_len(m.key_size, 1, json_tail),
        EtcdOp::LeaseKeepalive { .. } => 0,
    }
}

/// The length of a txn-put's JSON body: `ops` puts of `key_size`-byte keys.
fn txn_body_len(key_size: usize, ops: usize, json_tail: &[u8]) -> usize {
    let mut b = BytesMut::new();
    gateway::put_base64(&vec![0; key_size], &mut b);
    let op = TXN_OP_HEAD.len() + b.len() + json_tail.len();
    TXN_HEAD.len() + ops * op + (ops - 1) + TXN_END.len()
}

/// A txn-put's gateway body: `{"success":[` ops `]}`, each op `{"request_put":{"key":"K` +
/// the value tail.
const TXN_HEAD: &[u8] = br#"{"success":["#;
const TXN_OP_HEAD: &[u8] = br#"{"request_put":{"key":""#;
const TXN_END: &[u8] = b"]}";

/// TxnRequest.success and RequestOp.request_put: both field 2, length-delimited.
const TXN_FIELD: u32 = 2;

/// The requests of `op`, one of each kind per endpoint; `body_len`: the JSON body's length.
fn targets(
    op: &EtcdOp,
    endpoints: &[Endpoint],
    token: Option<&str>,
    body_len: usize,
) -> Result<Targets, String> {
    let mut templates = Vec::with_capacity(endpoints.len());
    let mut calls = Vec::with_capacity(endpoints.len());
    let mut h2_calls = Vec::with_capacity(endpoints.len());
    let mut headers = vec![("Content-Type", "application/json")];
    let mut metadata = Vec::new();
    // the HTTP/1.1 request's headers as HTTP/2 fields
    let mut fields = vec![
        (CONTENT_TYPE, HeaderValue::from_static("application/json")),
        (CONTENT_LENGTH, HeaderValue::from(body_len)),
    ];
    if let Some(t) = token {
        headers.push(("Authorization", t));
        let v = HeaderValue::from_str(t)
            .map_err(|_| "the auth token is not a valid header value".to_string())?;
        metadata.push((HeaderName::from_static("token"), v.clone()));
        fields.push((AUTHORIZATION, v));
    }
    for ep in endpoints {
        let t = RequestTemplate::new("POST", gateway_path(op), &ep.authority, &headers)
            .map_err(|e| format!("endpoint {}: {e}", ep.url))?;
        templates.push(t);
        let uri: Uri = format!("http://{}{}", ep.authority, grpc_path(op))
            .parse()
            .map_err(|e| format!("endpoint {}: {e}", ep.url))?;
        calls.push(Call::new(uri, metadata.clone(), FailureKind::Etcd));
        let scheme = if ep.tls { "https" } else { "http" };
        let uri: Uri = format!("{scheme}://{}{}", ep.authority, gateway_path(op))
            .parse()
            .map_err(|e| format!("endpoint {}: {e}", ep.url))?;
        let mut call = Call::plain(Method::POST, uri, fields.clone());
        call.status_kind = FailureKind::Etcd;
        h2_calls.push(call);
    }
    Ok(Targets {
        templates,
        calls,
        h2_calls,
    })
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

impl EtcdWorkload {
    /// Whether `op` renders for `endpoints` (request heads, URIs), without generating its
    /// value: the errors `new` would give without a token.
    pub fn check(op: &EtcdOp, endpoints: &[Endpoint]) -> Result<(), String> {
        targets(op, endpoints, None, 0).map(drop)
    }

    /// `token`: an etcd auth token, sent as gRPC metadata `token` and as the HTTP
    /// `Authorization` header (the raw token, no scheme), as etcd expects.
    pub fn new(
        op: EtcdOp,
        endpoints: &[Endpoint],
        seed: u64,
        token: Option<&str>,
    ) -> Result<Self, String> {
        let mut rng = Rng::new(seed);
        let (json_tail, proto_tail) = match &op {
            EtcdOp::Put { val_size, .. }
            | EtcdOp::TxnPut { val_size, .. }
            | EtcdOp::TxnMixed(TxnMixed { val_size, .. }) => {
                // etcd's benchmark: one random value of val-size bytes for the whole run.
                let value = put_value(&mut rng, *val_size);
                let mut jt = BytesMut::new();
                jt.put_slice(br#"","value":""#);
                gateway::put_base64(&value, &mut jt);
                jt.put_slice(
                    if matches!(op, EtcdOp::TxnPut { .. } | EtcdOp::TxnMixed(_)) {
                        br#""}}"#.as_slice()
                    } else {
                        br#""}"#.as_slice()
                    },
                );
                let mut pt = BytesMut::new();
                prost::encoding::bytes::encode(2, &value, &mut pt);
                (jt.freeze(), pt.freeze())
            }
            EtcdOp::Range {
                key,
                serializable,
                options: o,
            } => {
                let range_end = o.prefix.then(|| crate::config::prefix_end(key));
                let mut jt = BytesMut::new();
                jt.put_slice(br#"{"key":""#);
                gateway::put_base64(key, &mut jt);
                jt.put_slice(b"\"");
                if let Some(end) = &range_end {
                    jt.put_slice(br#","range_end":""#);
                    gateway::put_base64(end, &mut jt);
                    jt.put_slice(b"\"");
                }
                // int64 fields as JSON strings, as the gateway writes them
                if o.limit > 0 {
                    jt.put_slice(format!(r#","limit":"{}""#, o.limit).as_bytes());
                }
                if o.revision > 0 {
                    jt.put_slice(format!(r#","revision":"{}""#, o.revision).as_bytes());
                }
                for (on, field) in [
                    (*serializable, r#","serializable":true"#),
                    (o.keys_only, r#","keys_only":true"#),
                    (o.count_only, r#","count_only":true"#),
                ] {
                    if on {
                        jt.put_slice(field.as_bytes());
                    }
                }
                jt.put_slice(b"}");
                let req = RangeRequest {
                    key: Bytes::copy_from_slice(key),
                    range_end: range_end.map(Bytes::from).unwrap_or_default(),
                    limit: o.limit,
                    revision: o.revision,
                    serializable: *serializable,
                    keys_only: o.keys_only,
                    count_only: o.count_only,
                };
                let mut pt = BytesMut::new();
                grpc::encode(&req, &mut pt);
                (jt.freeze(), pt.freeze())
            }
            // each client's request names its lease (`for_client`)
            EtcdOp::LeaseKeepalive { .. } => (Bytes::new(), Bytes::new()),
        };
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
    pub fn set_token(&mut self, token: &str) -> Result<(), String> {
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

    /// Plain HTTP/2 request `idx` to endpoint `ep`: its JSON body and the gateway request.
    pub fn next_h2(&mut self, idx: u64, ep: usize) -> (&Bytes, &Call) {
        match self.shared.op {
            EtcdOp::Put { .. } | EtcdOp::TxnPut { .. } => {
                // the last request's bytes first, so the buffer is reused
                self.h2_body = Bytes::new();
                self.next_json(idx);
                self.h2_body = self.body.split().freeze();
            }
            EtcdOp::TxnMixed(_) | EtcdOp::LeaseKeepalive { .. } => {
                unreachable!("`cli` runs txn-mixed and lease-keepalive over http and grpc only")
            }
            // this client's own copy of the constant body (no reference count shared between
            // threads)
            EtcdOp::Range { .. } if self.h2_body.is_empty() => {
                self.h2_body = Bytes::copy_from_slice(&self.shared.json_tail);
            }
            EtcdOp::Range { .. } => {}
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
                Err(gateway::KeepAliveError::Stream(m)) => Err(Failure::with(FailureKind::Etcd, m)),
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

/// txn-mixed's read, etcd benchmark's: a transaction of one range from key `\0` to the end key
/// (`\0`, every key, when none is given) with the limit and the consistency: its JSON body,
/// its framed gRPC request, and the u64 below which a uniform draw is a read
/// (rw-ratio / (1 + rw-ratio) of 2^64).
fn mixed_read(m: &TxnMixed) -> (Bytes, Bytes, u64) {
    let range_end = if m.end_key.is_empty() {
        vec![0]
    } else {
        m.end_key.clone()
    };
    let mut j = BytesMut::new();
    j.put_slice(br#"{"success":[{"request_range":{"key":"AA==","range_end":""#);
    gateway::put_base64(&range_end, &mut j);
    j.put_slice(b"\"");
    if m.limit > 0 {
        j.put_slice(format!(r#","limit":"{}""#, m.limit).as_bytes());
    }
    if m.serializable {
        j.put_slice(br#","serializable":true"#);
    }
    j.put_slice(b"}}]}");
    let req = TxnRequest {
        success: vec![RequestOp {
            request: Some(request_op::Request::RequestRange(RangeRequest {
                key: Bytes::from_static(b"\0"),
                range_end: range_end.into(),
                limit: m.limit,
                serializable: m.serializable,
                ..Default::default()
            })),
        }],
        failure: Vec::new(),
    };
    let mut p = BytesMut::new();
    grpc::encode(&req, &mut p);
    let share = m.rw_ratio / (1.0 + m.rw_ratio);
    // 2^64 as f64; a share of 1 (all reads) saturates to u64::MAX
    let below = (share * 18_446_744_073_709_551_616.0).min(u64::MAX as f64) as u64;
    (j.freeze(), p.freeze(), below)
}

/// What an acknowledged request hands the run besides its status: for the watch benchmark's
/// puts, the key index and the revision etcd assigned (`stats::Stats::revisions`); nothing for
/// the other workloads.
pub type Ack = Option<(usize, i64)>;

/// The watch benchmark's put load as the engine drives it: put N goes to key N mod
/// `--watched-keys` on the first endpoint, its value starts with its send time (`watch::stamp`,
/// written when the request is encoded, just before it is sent) padded with zeros to
/// `--val-size`, and its verdict acknowledges the revision etcd assigned, per key index.
#[derive(Debug, Clone)]
pub struct WatchPuts {
    targets: Arc<PutTargets>,
    value: Vec<u8>,
    body: BytesMut,
    frame: BytesMut,
    /// the framed request in flight
    request: Bytes,
    /// key index of the request in flight (each client has one at a time)
    key: usize,
}

/// What every put client of the watch load shares.
#[derive(Debug)]
struct PutTargets {
    keys: Vec<Vec<u8>>,
    template: RequestTemplate,
    call: Call,
}

impl WatchPuts {
    /// The put load of `cfg`, to its first endpoint.
    pub fn new(cfg: &WatchConfig) -> Result<WatchPuts, String> {
        let ep = cfg
            .endpoints
            .first()
            .ok_or_else(|| "no endpoint to put to".to_string())?;
        if cfg.watched_keys == 0 {
            return Err("no key to put to".into());
        }
        let template = RequestTemplate::new(
            "POST",
            "/v3/kv/put",
            &ep.authority,
            &[("Content-Type", "application/json")],
        )
        .map_err(|e| format!("put request for {}: {e}", ep.authority))?;
        let uri: Uri = format!("http://{}/etcdserverpb.KV/Put", ep.authority)
            .parse()
            .map_err(|e| format!("put request path for {}: {e}", ep.authority))?;
        Ok(WatchPuts {
            targets: Arc::new(PutTargets {
                keys: (0..cfg.watched_keys).map(|k| cfg.key(k)).collect(),
                template,
                call: Call::new(uri, Vec::new(), FailureKind::Etcd),
            }),
            value: vec![0; cfg.val_size],
            body: BytesMut::new(),
            frame: BytesMut::new(),
            request: Bytes::new(),
            key: 0,
        })
    }

    pub fn for_client(&self) -> WatchPuts {
        WatchPuts {
            targets: self.targets.clone(),
            value: self.value.clone(),
            body: BytesMut::with_capacity(256),
            frame: BytesMut::with_capacity(256),
            request: Bytes::new(),
            key: 0,
        }
    }

    /// Stamps the value for put `idx` and keeps its key index for the verdict.
    fn next(&mut self, idx: u64) {
        self.key = (idx % self.targets.keys.len() as u64) as usize;
        stamp(&mut self.value);
    }

    pub fn encode_http(&mut self, idx: u64, dst: &mut BytesMut) -> usize {
        self.next(idx);
        // `next` keeps the index below the number of keys, and `new` made at least one.
        let key = &self.targets.keys[self.key];
        self.body.clear();
        put_body(key, &self.value, &mut self.body);
        self.targets.template.encode(&self.body, dst)
    }

    /// Encodes gRPC put number `idx`, then [`WatchPuts::grpc_request`].
    pub fn next_grpc(&mut self, idx: u64) {
        self.request = Bytes::new();
        self.next(idx);
        // `next` keeps the index below the number of keys, and `new` made at least one.
        let key = &self.targets.keys[self.key];
        // PutRequest{key = 1, value = 2}, framed.
        let len = prost::encoding::bytes::encoded_len(1, key)
            + prost::encoding::bytes::encoded_len(2, &self.value);
        self.frame.reserve(grpc::PREFIX_LEN + len);
        self.frame.put_u8(0);
        self.frame.put_u32(len as u32);
        prost::encoding::bytes::encode(1, key, &mut self.frame);
        prost::encoding::bytes::encode(2, &self.value, &mut self.frame);
        self.request = self.frame.split().freeze();
    }

    /// The framed put `next_grpc` made.
    pub fn grpc_request(&self) -> &Bytes {
        &self.request
    }

    pub fn call(&self) -> &Call {
        &self.targets.call
    }

    /// The revision of the put in flight, acknowledged for its key index.
    pub fn check_http(
        &self,
        status: u16,
        body: &[u8],
    ) -> Result<(StatusKey, Ack), (StatusKey, Failure)> {
        let key = StatusKey::Http(status);
        match put_revision_gateway(status, body) {
            Ok(revision) => Ok((key, Some((self.key, revision)))),
            Err(f) => Err((key, f)),
        }
    }

    pub fn check_grpc(&self, message: &Bytes) -> Result<Ack, Failure> {
        put_revision(message.clone()).map(|revision| Some((self.key, revision)))
    }

    pub fn sample_grpc(&self, message: &Bytes) -> Value {
        PutResponse::decode(message.clone())
            .map(|r| gateway::put_response_json(&r))
            .unwrap_or_else(|e| Value::String(format!("undecodable: {e}")))
    }
}

/// The value a put run writes: `val_size` bytes from the run's generator, drawn first (the
/// sweep writes the same value once before it reads it back).
pub fn put_value(rng: &mut Rng, val_size: usize) -> Vec<u8> {
    let mut value = vec![0u8; val_size];
    rng.fill(&mut value);
    value
}

/// SplitMix64: a tiny, fast, seedable generator for keys and values (not for secrets).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (n > 0), by Lemire's multiply-shift (bias below 2^-32 for our n).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

/// Bytes at the front of every put value: the send time, ns since the epoch, little endian.
pub const STAMP_LEN: usize = 8;

/// The process-wide origin of the send-time stamps: the put side writes and the watch side
/// reads them against the same monotonic clock, so no clock sync is needed.
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Writes the send time (ns since the epoch, little endian) into the front of `value`.
pub fn stamp(value: &mut [u8]) {
    let ns = EPOCH.elapsed().as_nanos() as u64;
    if let Some(s) = value.get_mut(..STAMP_LEN) {
        s.copy_from_slice(&ns.to_le_bytes());
    }
}

/// `at` as ns since the stamps' epoch (the clock of `stamp`).
pub fn epoch_ns(at: Instant) -> u64 {
    at.saturating_duration_since(*EPOCH).as_nanos() as u64
}

/// Time from the send stamped in `value` to `now`; None when the value holds no stamp.
pub fn since_stamp(value: &[u8], now: Instant) -> Option<Duration> {
    let stamp = value.get(..STAMP_LEN)?;
    let mut b = [0u8; STAMP_LEN];
    b.copy_from_slice(stamp);
    let sent = u64::from_le_bytes(b);
    Some(Duration::from_nanos(epoch_ns(now).saturating_sub(sent)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_read_back_as_the_time_since_they_were_written() {
        let mut value = vec![0xaa; 12];
        stamp(&mut value);
        assert_eq!(&value[STAMP_LEN..], &[0xaa; 4]);
        let later = Instant::now() + Duration::from_millis(5);
        let age = since_stamp(&value, later).expect("a stamp");
        assert!(age >= Duration::from_millis(5), "{age:?}");
        assert!(age < Duration::from_secs(5), "{age:?}");
        assert_eq!(since_stamp(&value[..4], later), None);
    }

    use clap::Parser as _;
    use wirebench_wire::proto::etcd::PutRequest;

    fn endpoint() -> Endpoint {
        Endpoint::parse("http://127.0.0.1:2379").unwrap()
    }

    #[test]
    fn key_layout_matches_go_putvarint() {
        // Go: binary.PutVarint(k, 1) -> 0x02; 64 -> 0x80 0x01; 300 -> 0xd8 0x04
        let mut k = [0xffu8; 4];
        put_key_index(&mut k, 1);
        assert_eq!(k, [0x02, 0, 0, 0]);
        put_key_index(&mut k, 64);
        assert_eq!(k, [0x80, 0x01, 0, 0]);
        put_key_index(&mut k, 300);
        assert_eq!(k, [0xd8, 0x04, 0, 0]);
        assert_eq!(varint_len(63), 1);
        assert_eq!(varint_len(64), 2);
    }

    #[test]
    fn put_requests_agree_across_protocols() {
        let op = EtcdOp::Put {
            key_size: 8,
            val_size: 16,
            key_space_size: 1000,
            sequential_keys: true,
        };
        let base = EtcdWorkload::new(op, &[endpoint()], 7, None).unwrap();
        let mut w = base.for_client(0);
        w.next_grpc(300);
        let framed = w.grpc_request();
        let mut buf = BytesMut::from(&framed[..]);
        let msg = grpc::decode(&mut buf, 1 << 20).unwrap().unwrap();
        let req = PutRequest::decode(msg).unwrap();
        assert_eq!(&req.key[..], &[0xd8, 0x04, 0, 0, 0, 0, 0, 0]);
        assert_eq!(req.value.len(), 16);

        let mut out = BytesMut::new();
        w.encode_http(300, 0, &mut out);
        let text = std::str::from_utf8(&out).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("POST /v3/kv/put HTTP/1.1\r\nHost: 127.0.0.1:2379\r\n"));
        assert!(head.contains(&format!("Content-Length: {}", body.len())));
        let v: Value = serde_json::from_str(body).unwrap();
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        assert_eq!(
            b64.decode(v["key"].as_str().unwrap()).unwrap(),
            &req.key[..]
        );
        assert_eq!(
            b64.decode(v["value"].as_str().unwrap()).unwrap(),
            &req.value[..]
        );
    }

    fn mixed(rw_ratio: f64) -> EtcdOp {
        EtcdOp::TxnMixed(TxnMixed {
            key_size: 8,
            val_size: 4,
            key_space_size: 10,
            rw_ratio,
            limit: 1000,
            end_key: Vec::new(),
            serializable: true,
        })
    }

    /// The framed gRPC request `w` made, decoded.
    fn txn_of(w: &EtcdWorkload) -> TxnRequest {
        let mut buf = BytesMut::from(&w.grpc_request()[..]);
        TxnRequest::decode(grpc::decode(&mut buf, 1 << 20).unwrap().unwrap()).unwrap()
    }

    #[test]
    fn txn_mixed_reads_range_every_key_and_writes_put_one_over_both_stacks() {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let base = EtcdWorkload::new(mixed(1.0), &[endpoint()], 3, None).unwrap();
        assert_eq!(base.classes(), ["read", "write"]);
        let (mut reads, mut writes) = (0, 0);
        for idx in 0..200u64 {
            // the same client twice: gRPC and HTTP/1.1 draw the same classes and keys
            let mut g = base.for_client(1);
            let mut h = base.for_client(1);
            for i in 0..idx % 3 {
                g.next_grpc(i);
                let mut out = BytesMut::new();
                h.encode_http(i, 0, &mut out);
            }
            g.next_grpc(idx);
            let mut out = BytesMut::new();
            h.encode_http(idx, 0, &mut out);
            assert_eq!(g.class(), h.class());
            let text = std::str::from_utf8(&out).unwrap();
            let (head, body) = text.split_once("\r\n\r\n").unwrap();
            assert!(head.starts_with("POST /v3/kv/txn HTTP/1.1\r\n"), "{head}");
            assert!(
                head.contains(&format!("Content-Length: {}", body.len())),
                "{head}"
            );
            let json: Value = serde_json::from_str(body).unwrap();
            let op = &txn_of(&g).success[0];
            match (&op.request, g.class()) {
                (Some(request_op::Request::RequestRange(r)), Some(0)) => {
                    reads += 1;
                    // every key, from \0, limited and serializable as asked
                    assert_eq!((&r.key[..], &r.range_end[..]), (&b"\0"[..], &b"\0"[..]));
                    assert_eq!((r.limit, r.serializable), (1000, true));
                    let jr = &json["success"][0]["request_range"];
                    assert_eq!(jr["key"], "AA==");
                    assert_eq!(jr["range_end"], "AA==");
                    assert_eq!(jr["limit"], "1000");
                    assert_eq!(jr["serializable"], true);
                    assert_eq!(g.ack(5), None, "a read acknowledges no write");
                }
                (Some(request_op::Request::RequestPut(p)), Some(1)) => {
                    writes += 1;
                    // request N writes key N mod the key space, as etcd's tool
                    let mut key = vec![0u8; 8];
                    put_key_index(&mut key, idx % 10);
                    assert_eq!(&p.key[..], &key[..]);
                    assert_eq!(p.value.len(), 4);
                    let jp = &json["success"][0]["request_put"];
                    assert_eq!(b64.decode(jp["key"].as_str().unwrap()).unwrap(), key);
                    assert_eq!(
                        b64.decode(jp["value"].as_str().unwrap()).unwrap(),
                        &p.value[..]
                    );
                    assert_eq!(g.ack(7), Some(((idx % 10) as usize, 7)));
                    assert_eq!(h.ack(7), Some(((idx % 10) as usize, 7)));
                }
                other => panic!("request {idx}: {other:?}"),
            }
        }
        assert_eq!(reads + writes, 200);
        assert!(
            (60..140).contains(&reads),
            "{reads} reads of 200 at rw-ratio 1"
        );
    }

    #[test]
    fn txn_mixed_honours_the_ratio_and_its_extremes() {
        let share = |ratio: f64| {
            let mut w = EtcdWorkload::new(mixed(ratio), &[endpoint()], 11, None)
                .unwrap()
                .for_client(0);
            let reads = (0..10_000u64)
                .filter(|&i| {
                    w.next_grpc(i);
                    w.class() == Some(0)
                })
                .count();
            reads as f64 / 10_000.0
        };
        assert_eq!(share(0.0), 0.0, "rw-ratio 0: writes only");
        let s = share(3.0);
        assert!((0.73..0.77).contains(&s), "rw-ratio 3: {s} reads");
        let s = share(0.25);
        assert!((0.18..0.22).contains(&s), "rw-ratio 0.25: {s} reads");
        assert_eq!(share(1e12), 1.0, "a huge ratio: reads only");
    }

    #[test]
    fn txn_mixed_reads_below_an_end_key() {
        let op = EtcdOp::TxnMixed(TxnMixed {
            end_key: b"k".to_vec(),
            limit: 0,
            serializable: false,
            ..match mixed(1e12) {
                EtcdOp::TxnMixed(m) => m,
                _ => unreachable!(),
            }
        });
        let mut w = EtcdWorkload::new(op, &[endpoint()], 1, None)
            .unwrap()
            .for_client(0);
        w.next_grpc(0);
        let Some(request_op::Request::RequestRange(r)) = &txn_of(&w).success[0].request else {
            panic!("a read");
        };
        assert_eq!(
            (&r.range_end[..], r.limit, r.serializable),
            (&b"k"[..], 0, false)
        );
        let mut out = BytesMut::new();
        w.encode_http(0, 0, &mut out);
        let text = String::from_utf8(out.to_vec()).unwrap();
        assert!(
            text.ends_with(r#"{"success":[{"request_range":{"key":"AA==","range_end":"aw=="}}]}"#),
            "{text}"
        );
    }

    #[test]
    fn txn_put_acknowledges_its_first_key() {
        let op = EtcdOp::TxnPut {
            key_size: 8,
            val_size: 4,
            key_space_size: 5,
            ops: 3,
        };
        let mut w = EtcdWorkload::new(op, &[endpoint()], 9, None)
            .unwrap()
            .for_client(0);
        for idx in 0..20 {
            w.next_grpc(idx);
            let txn = txn_of(&w);
            let Some((first, 4)) = w.ack(4) else {
                panic!("a txn-put acknowledges its write");
            };
            // its keys: consecutive indices from the first, modulo the key space
            for (j, op) in txn.success.iter().enumerate() {
                let Some(request_op::Request::RequestPut(p)) = &op.request else {
                    panic!("a put");
                };
                assert_eq!(&p.key[..], &put_key(8, (first as u64 + j as u64) % 5)[..]);
            }
        }
    }

    #[test]
    fn lease_keepalives_name_each_clients_lease_and_judge_the_answer() {
        use wirebench_wire::proto::etcd::{LeaseKeepAliveRequest, ResponseHeader};
        let base = EtcdWorkload::new(EtcdOp::LeaseKeepalive { ttl: 100 }, &[endpoint()], 1, None)
            .unwrap()
            .with_leases(&[11, 22]);
        assert!(base.bidi());
        let mut w = base.for_client(3);
        assert_eq!(w.lease, 22, "client 3 of 2 leases keeps the second");
        w.next_grpc(3);
        let mut buf = BytesMut::from(&w.grpc_request()[..]);
        let req: LeaseKeepAliveRequest = grpc::decode_message(&mut buf, 1 << 20).unwrap().unwrap();
        assert_eq!(req.id, 22);
        let mut out = BytesMut::new();
        w.encode_http(3, 0, &mut out);
        let text = String::from_utf8(out.to_vec()).unwrap();
        assert!(
            text.starts_with("POST /v3/lease/keepalive HTTP/1.1\r\n"),
            "{text}"
        );
        assert!(text.ends_with(r#"{"ID":"22"}"#), "{text}");

        let answer = |id, ttl| {
            Bytes::from(
                LeaseKeepAliveResponse {
                    header: Some(ResponseHeader {
                        revision: 4,
                        ..Default::default()
                    }),
                    id,
                    ttl,
                }
                .encode_to_vec(),
            )
        };
        assert_eq!(w.check_grpc(&answer(22, 100)), Ok(None));
        let kind = |m| w.check_grpc(&m).map_err(|f| f.kind);
        assert_eq!(kind(answer(22, 0)), Err(FailureKind::Lease));
        assert_eq!(kind(answer(22, -1)), Err(FailureKind::Lease));
        assert_eq!(kind(answer(11, 100)), Err(FailureKind::Lease));
        assert_eq!(
            kind(Bytes::from_static(b"\xff")),
            Err(FailureKind::BadResponse)
        );

        let http = |body: &[u8]| {
            w.check_http(200, body)
                .map(|(_, a)| a)
                .map_err(|(_, f)| f.kind)
        };
        let line = br#"{"result":{"header":{"revision":"4"},"ID":"22","TTL":"100"}}"#;
        assert_eq!(http(line), Ok(None));
        let gone = br#"{"result":{"header":{"revision":"4"},"ID":"22"}}"#;
        assert_eq!(http(gone), Err(FailureKind::Lease));
        let other = br#"{"result":{"header":{"revision":"4"},"ID":"11","TTL":"9"}}"#;
        assert_eq!(http(other), Err(FailureKind::Lease));
        let err = br#"{"error":{"grpc_code":14,"message":"etcdserver: no leader"}}"#;
        assert_eq!(http(err), Err(FailureKind::Etcd));
        assert_eq!(http(b"{}"), Err(FailureKind::BadResponse));
    }

    #[test]
    fn gateway_errors_become_etcd_failures() {
        let op = EtcdOp::Range {
            key: b"k".to_vec(),
            serializable: false,
            options: Default::default(),
        };
        let w = EtcdWorkload::new(op, &[endpoint()], 1, None).unwrap();
        let body = br#"{"error":"etcdserver: user name is empty","message":"etcdserver: user name is empty","code":3}"#;
        let (status, failure) = w.check_http(400, body).unwrap_err();
        assert_eq!(status, StatusKey::Http(400));
        assert_eq!(
            failure,
            Failure::with(FailureKind::Etcd, "etcdserver: user name is empty")
        );
        assert!(w.check_http(200, br#"{"header":{"revision":"1"}}"#).is_ok());
        assert!(w.check_http(200, b"{}").is_err());
        assert!(w.check_http(200, b"not json").is_err());
    }

    #[test]
    fn watch_puts_stamp_each_value_and_acknowledge_its_key() {
        let cli = crate::cli::Cli::try_parse_from([
            "wirebench",
            "etcd",
            "watch",
            "--endpoints",
            "http://127.0.0.1:2379",
            "--watched-keys",
            "3",
            "--val-size",
            "12",
        ]);
        let Ok(crate::app::Action::Watch(cfg)) = cli.map(|c| c.into_action()).unwrap() else {
            panic!("a watch configuration");
        };
        let mut w = WatchPuts::new(&cfg).unwrap().for_client();
        w.next_grpc(4);
        let framed = w.grpc_request();
        let mut buf = BytesMut::from(&framed[..]);
        let req = PutRequest::decode(grpc::decode(&mut buf, 1 << 20).unwrap().unwrap()).unwrap();
        assert_eq!(&req.key[..], b"wirebench/watch/1");
        assert_eq!(req.value.len(), 12);
        assert_eq!(&req.value[crate::etcd::watch::STAMP_LEN..], &[0; 4]);
        assert!(req.value[..crate::etcd::watch::STAMP_LEN] != [0; 8]);
        // the verdict acknowledges the key index of the put in flight
        let ok = br#"{"header":{"revision":"9"}}"#;
        let mut out = BytesMut::new();
        w.encode_http(5, &mut out);
        let text = std::str::from_utf8(&out).unwrap();
        assert!(text.starts_with("POST /v3/kv/put HTTP/1.1\r\n"), "{text}");
        assert_eq!(
            w.check_http(200, ok),
            Ok((StatusKey::Http(200), Some((2, 9))))
        );
        let (status, f) = w.check_http(200, b"{}").unwrap_err();
        assert_eq!(
            (status, f.kind),
            (StatusKey::Http(200), FailureKind::BadResponse)
        );
    }
}
