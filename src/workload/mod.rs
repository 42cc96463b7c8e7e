//! What to send and how to judge the answer, per protocol; one instance per client.

pub mod echo;
pub mod etcd;
pub mod grpc;
pub mod http;
pub mod reflect;
pub mod stack;

use std::time::Instant;

use serde_json::Value;

use crate::config::{Endpoint, GrpcRequest, WorkloadSpec};
use crate::outcome::{Failure, StatusKey};

/// The etcd operations (plain data, defined with the rest of the configuration).
pub use crate::config::EtcdOp;
pub use echo::EchoWorkload;
/// etcd's put and range, and the watch benchmark's puts.
pub use etcd::{Ack, EtcdWorkload, WatchPuts};
pub use grpc::GrpcWorkload;
pub use http::HttpWorkload;
pub use stack::{
    ClientWork, GrpcWork, H2Work, Http1Work, OnStack, OverH2, StackMismatch, reauthenticate_grpc,
    reauthenticate_http,
};

/// The most of a response body a report's sample keeps.
const SAMPLE_MAX: usize = 64 << 10;

/// The payload of `n` bytes the payload sweeps send (the echo ping, an HTTP body, a gRPC string
/// or bytes field): `n` ASCII `x`, the same for every target and safe inside a JSON string.
pub fn filler(n: usize) -> String {
    "x".repeat(n)
}

/// A verdict on one HTTP response: the status it counts under, and a failure if it was one.
pub type HttpVerdict = Result<StatusKey, (StatusKey, Failure)>;

/// Why a workload does not render for its endpoints: its kind's own reason.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    #[error(transparent)]
    Etcd(#[from] etcd::EtcdError),
    #[error(transparent)]
    Echo(#[from] echo::EchoError),
    #[error(transparent)]
    Http(#[from] http::HttpError),
    #[error(transparent)]
    Grpc(#[from] grpc::GrpcError),
}

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
    ) -> Result<Workload, WorkloadError> {
        Ok(match spec {
            WorkloadSpec::Etcd(op) => Workload::Etcd(Box::new(EtcdWorkload::new(
                op.clone(),
                endpoints,
                seed,
                token,
            )?)),
            WorkloadSpec::Echo { ping, headers } => {
                Workload::Echo(EchoWorkload::new(ping.clone(), headers, endpoints)?)
            }
            WorkloadSpec::Http(h) => {
                Workload::Http(HttpWorkload::new(h, endpoints)?.with_seed(seed))
            }
            WorkloadSpec::Grpc(g) => {
                Workload::Grpc(GrpcWorkload::new(g, endpoints)?.with_seed(seed))
            }
        })
    }

    /// Whether `spec` renders for `endpoints`: the errors `new` would give without a token,
    /// found without generating keys and values.
    pub fn check(spec: &WorkloadSpec, endpoints: &[Endpoint]) -> Result<(), WorkloadError> {
        match spec {
            WorkloadSpec::Etcd(op) => Ok(EtcdWorkload::check(op, endpoints)?),
            WorkloadSpec::Echo { ping, headers } => {
                EchoWorkload::new(ping.clone(), headers, endpoints)?;
                Ok(())
            }
            WorkloadSpec::Http(h) => {
                HttpWorkload::new(h, endpoints)?;
                Ok(())
            }
            // the request is encoded during setup, once reflection gave the schema
            WorkloadSpec::Grpc(g) if matches!(g.request, GrpcRequest::ByReflection { .. }) => {
                Ok(())
            }
            WorkloadSpec::Grpc(g) => {
                GrpcWorkload::new(g, endpoints)?;
                Ok(())
            }
        }
    }

    /// A successful response body as the report's sample (`sample_body`).
    pub fn sample_http(&self, body: &[u8]) -> Value {
        sample_body(body)
    }

    /// The classes a run reports apart (txn-mixed: read, write); empty for the others.
    pub fn classes(&self) -> &'static [&'static str] {
        match self {
            Workload::Etcd(w) => w.classes(),
            _ => &[],
        }
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
}

/// A response body as the report's sample: as JSON when it is JSON of at most `SAMPLE_MAX`
/// bytes, else as text, cut at `SAMPLE_MAX` (a report holds one sample; any server may answer
/// megabytes).
pub fn sample_body(body: &[u8]) -> Value {
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
