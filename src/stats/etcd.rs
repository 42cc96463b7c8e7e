//! What the etcd work around a run measured — the compactor beside the load, the leases granted
//! before it — as plain data the report reads.

use std::time::Duration;

use crate::outcome::Failure;

/// `--compact-interval`: what the compactor did while the load ran.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Compactions {
    /// `--compact-interval` and `--compact-index-delta`
    pub interval: Duration,
    pub index_delta: i64,
    /// compaction requests sent (`KV/Compact`)
    pub requests: u64,
    pub ok: u64,
    pub failed: u64,
    /// intervals with nothing to compact: the target revision (current − delta) was not past
    /// the last one compacted, or below 1
    pub skipped: u64,
    /// the revision of the last compaction etcd acknowledged
    pub last_revision: Option<i64>,
    /// the last failure (of the compaction or of the revision read before it)
    pub last_error: Option<Failure>,
}

/// lease-keepalive: the leases granted before a run, one per client, and revoked after it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leases {
    pub granted: u64,
    /// the TTL etcd granted them with, seconds (the first grant's answer)
    pub ttl_s: i64,
    /// revoked after the run
    pub revoked: u64,
    /// already gone when revoked (expired, or revoked by someone else)
    pub gone: u64,
    /// revocations that failed otherwise (left to expire), and the last reason
    pub revoke_failed: u64,
    pub revoke_error: Option<String>,
}
