//! What an etcd operation sends, rendered once per run: the gateway path and gRPC method of
//! each operation, the requests to each endpoint (HTTP/1.1 heads, gRPC calls, gateway requests
//! over plain HTTP/2), the JSON bodies' lengths, and txn-mixed's constant read.

use bytes::{BufMut, Bytes, BytesMut};
use http::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HeaderName, HeaderValue};
use http::{Method, Uri};

use super::EtcdError;
use super::keys::put_value;
use crate::client::grpc::Call;
use crate::config::{Endpoint, EtcdOp, TxnMixed};
use crate::outcome::FailureKind;
use crate::rng::Rng;
use wirebench_wire::etcd::gateway;
use wirebench_wire::grpc;
use wirebench_wire::http1::RequestTemplate;
use wirebench_wire::proto::etcd::{RangeRequest, RequestOp, TxnRequest, request_op};

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

/// What `op` sends to each endpoint: the HTTP/1.1 request heads, the gRPC calls, and the
/// gateway requests over plain HTTP/2.
pub(super) struct Targets {
    pub(super) templates: Vec<RequestTemplate>,
    pub(super) calls: Vec<Call>,
    pub(super) h2_calls: Vec<Call>,
}

/// The length of `op`'s JSON body (the same for every request: the keys have one size).
pub(super) fn json_body_len(op: &EtcdOp, json_tail: &[u8]) -> usize {
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
pub(super) const TXN_HEAD: &[u8] = br#"{"success":["#;
pub(super) const TXN_OP_HEAD: &[u8] = br#"{"request_put":{"key":""#;
pub(super) const TXN_END: &[u8] = b"]}";

/// TxnRequest.success and RequestOp.request_put: both field 2, length-delimited.
pub(super) const TXN_FIELD: u32 = 2;

/// The requests of `op`, one of each kind per endpoint; `body_len`: the JSON body's length.
pub(super) fn targets(
    op: &EtcdOp,
    endpoints: &[Endpoint],
    token: Option<&str>,
    body_len: usize,
) -> Result<Targets, EtcdError> {
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
        let v = HeaderValue::from_str(t).map_err(|_| EtcdError::Token)?;
        metadata.push((HeaderName::from_static("token"), v.clone()));
        fields.push((AUTHORIZATION, v));
    }
    for ep in endpoints {
        let uri_error = |source| EtcdError::Uri {
            url: ep.url.clone(),
            source,
        };
        let t = RequestTemplate::new("POST", gateway_path(op), &ep.authority, &headers).map_err(
            |source| EtcdError::Template {
                url: ep.url.clone(),
                source,
            },
        )?;
        templates.push(t);
        let uri: Uri = format!("http://{}{}", ep.authority, grpc_path(op))
            .parse()
            .map_err(uri_error)?;
        calls.push(Call::new(uri, metadata.clone(), FailureKind::Etcd));
        let scheme = if ep.tls { "https" } else { "http" };
        let uri: Uri = format!("{scheme}://{}{}", ep.authority, gateway_path(op))
            .parse()
            .map_err(uri_error)?;
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

/// txn-mixed's read, etcd benchmark's: a transaction of one range from key `\0` to the end key
/// (`\0`, every key, when none is given) with the limit and the consistency: its JSON body,
/// its framed gRPC request, and the u64 below which a uniform draw is a read
/// (rw-ratio / (1 + rw-ratio) of 2^64).
pub(super) fn mixed_read(m: &TxnMixed) -> (Bytes, Bytes, u64) {
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

/// What is the same in every request of `op`: put, txn-put and txn-mixed's writes, the tail of
/// their JSON body after the key and their protobuf value field (the value drawn from `rng`,
/// one for the whole run, as etcd's benchmark); range, its whole JSON body and framed request.
pub(super) fn tails(op: &EtcdOp, rng: &mut Rng) -> (Bytes, Bytes) {
    match op {
        EtcdOp::Put { val_size, .. }
        | EtcdOp::TxnPut { val_size, .. }
        | EtcdOp::TxnMixed(TxnMixed { val_size, .. }) => {
            // etcd's benchmark: one random value of val-size bytes for the whole run.
            let value = put_value(rng, *val_size);
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
    }
}
