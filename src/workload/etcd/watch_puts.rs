//! The watch benchmark's put load: stamped values (the send time at their front, read back by
//! the watchers against the same clock), put in turn to the watched keys, each acknowledged
//! with the revision etcd gave it.

use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use http::Uri;
use prost::Message;
use serde_json::Value;

use super::client::{put_body, put_revision, put_revision_gateway};
use super::{Ack, EtcdError};
use crate::client::grpc::Call;
use crate::config::WatchConfig;
use crate::outcome::{Failure, FailureKind, StatusKey};
use wirebench_wire::etcd::gateway;
use wirebench_wire::grpc;
use wirebench_wire::http1::RequestTemplate;
use wirebench_wire::proto::etcd::PutResponse;

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
    pub fn new(cfg: &WatchConfig) -> Result<WatchPuts, EtcdError> {
        let ep = cfg.endpoints.first().ok_or(EtcdError::NoEndpoint)?;
        if cfg.watched_keys == 0 {
            return Err(EtcdError::NoKey);
        }
        let template = RequestTemplate::new(
            "POST",
            "/v3/kv/put",
            &ep.authority,
            &[("Content-Type", "application/json")],
        )
        .map_err(|source| EtcdError::PutTemplate {
            authority: ep.authority.clone(),
            source,
        })?;
        let uri: Uri = format!("http://{}/etcdserverpb.KV/Put", ep.authority)
            .parse()
            .map_err(|source| EtcdError::PutUri {
                authority: ep.authority.clone(),
                source,
            })?;
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
