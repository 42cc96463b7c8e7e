//! `wirebench etcd put | range | txn-put | txn-mixed | lease-keepalive | watch`: the etcd
//! benchmarks, and the etcd operations and flags the other commands share.

use clap::Subcommand;

use super::Action;
use super::common::{CompactArgs, Consistency, RunArgs, parse_endpoints, parse_target};
use super::error::ArgError;
use super::heading;
use super::limits::MAX_GENERATED;
use super::watch::{WatchArgs, WatchGetArgs, WatchLatencyArgs};
use crate::config::{Config, EtcdOp, RangeOptions, Target, TxnMixed, WorkloadSpec};
use crate::stack::Proto;
use crate::workload::etcd::varint_len;

/// Where a load goes: the endpoints, and which of the cluster's members get the clients.
#[derive(Debug, clap::Args)]
pub struct Members {
    /// Comma-separated endpoints (http://host:port); connections are spread over them
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "http://127.0.0.1:2379",
        help_heading = heading::ETCD
    )]
    endpoints: Vec<String>,
    /// Which members get the clients: all the endpoints, the first, the leader or the
    /// followers (found with Maintenance/Status and MemberList)
    #[arg(long, default_value = "all", value_parser = parse_target, help_heading = heading::ETCD)]
    target: Target,
}

#[derive(Debug, Subcommand)]
pub enum EtcdCmd {
    /// Write keys (etcd benchmark's `put`)
    Put {
        /// Key size in bytes; the key's first bytes encode the key index (Go PutVarint)
        #[arg(long, default_value_t = 8)]
        key_size: usize,
        /// Value size in bytes (random bytes, one value for the whole run)
        #[arg(long, default_value_t = 8)]
        val_size: usize,
        /// Number of distinct keys written
        #[arg(long, default_value_t = 1)]
        key_space_size: u64,
        /// Write keys in order (request index mod key space) instead of at random
        #[arg(long)]
        sequential_keys: bool,
        /// After the run, look every acknowledged put up in etcd's history (a range of its key
        /// at its revision must return it with that mod revision); exit 1 if one is lost
        #[arg(long)]
        verify: bool,
        #[command(flatten)]
        members: Members,
        #[command(flatten)]
        compact: CompactArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Transactions of puts (etcd benchmark's `txn-put`): each puts --txn-ops distinct keys,
    /// consecutive key indices from a random one; one revision per transaction
    TxnPut {
        /// Puts per transaction
        #[arg(long, default_value_t = 1)]
        txn_ops: usize,
        /// Key size in bytes; the key's first bytes encode the key index (Go PutVarint)
        #[arg(long, default_value_t = 8)]
        key_size: usize,
        /// Value size in bytes (random bytes, one value for the whole run)
        #[arg(long, default_value_t = 8)]
        val_size: usize,
        /// Number of distinct keys (at least --txn-ops: a transaction's keys are distinct)
        #[arg(long, default_value_t = 1)]
        key_space_size: u64,
        /// After the run, look every acknowledged transaction up in etcd's history (each of
        /// its keys, ranged at its revision, must have that mod revision); exit 1 if one is lost
        #[arg(long)]
        verify: bool,
        #[command(flatten)]
        members: Members,
        #[command(flatten)]
        compact: CompactArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Reads and writes in one run (etcd benchmark's `txn-mixed`): each request is a
    /// transaction of one range (a read) or of one put (a write); reads and writes are
    /// reported apart
    TxnMixed(TxnMixedArgs),
    /// Lease keepalives (etcd benchmark's `lease-keepalive`): each client grants a lease
    /// before the run and keeps it alive as fast as it can (HTTP/1.1: one POST
    /// /v3/lease/keepalive per request; gRPC: one LeaseKeepAlive stream per client, a message
    /// each way per request); the leases are revoked after the run
    LeaseKeepalive {
        /// TTL of each client's lease, seconds (etcd's tool grants 100)
        #[arg(long, default_value_t = 100)]
        lease_ttl: i64,
        #[command(flatten)]
        members: Members,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Watch keys while a put load runs: events/s, event latency, missing and duplicated events
    Watch(WatchArgs),
    /// Watch latency (etcd benchmark's `watch-latency`): every watcher on one key, puts at
    /// --put-rate; each event's latency from its put's send and from its put's acknowledgement
    WatchLatency(WatchLatencyArgs),
    /// Unsynced watchers (etcd benchmark's `watch-get`): --events puts first, then the
    /// watchers replay them from history while a serializable range load runs
    WatchGet(WatchGetArgs),
    /// Read one key (etcd benchmark's `range`)
    Range {
        /// The key to read
        #[arg(value_name = "KEY")]
        range_key: String,
        /// l: linearizable (through the leader), s: serializable (local member)
        #[arg(long, value_enum, default_value_t = Consistency::L)]
        consistency: Consistency,
        /// Read every key with KEY as prefix
        #[arg(long)]
        prefix: bool,
        /// At most this many keys per range (0: no limit)
        #[arg(long, default_value_t = 0)]
        limit: u64,
        /// Keys without their values
        #[arg(long)]
        keys_only: bool,
        /// Only the number of keys
        #[arg(long)]
        count_only: bool,
        /// Read at this revision (0: the latest)
        #[arg(long, default_value_t = 0)]
        rev: u64,
        #[command(flatten)]
        members: Members,
        #[command(flatten)]
        run: RunArgs,
    },
}

/// `etcd txn-mixed`'s flags (etcd benchmark's names).
#[derive(Debug, clap::Args)]
pub struct TxnMixedArgs {
    /// Reads per write: a request is a read with probability r / (1 + r)
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    rw_ratio: f64,
    /// Key size of the writes in bytes; the key's first bytes encode the key index (Go
    /// PutVarint)
    #[arg(long, default_value_t = 8)]
    key_size: usize,
    /// Value size of the writes in bytes (random bytes, one value for the whole run)
    #[arg(long, default_value_t = 8)]
    val_size: usize,
    /// Number of distinct keys written: request N writes key N mod this
    #[arg(long, default_value_t = 1)]
    key_space_size: u64,
    /// Reads: l linearizable (through the leader), s serializable (local member)
    #[arg(long, value_enum, default_value_t = Consistency::L)]
    consistency: Consistency,
    /// Reads: at most this many keys (0: no limit)
    #[arg(long, default_value_t = 1000)]
    limit: u64,
    /// Reads: range over the keys from \0 up to this one (default: every key)
    #[arg(long, value_name = "KEY")]
    end_key: Option<String>,
    /// After the run, look every acknowledged write up in etcd's history; exit 1 if one is
    /// lost
    #[arg(long)]
    verify: bool,
    #[command(flatten)]
    members: Members,
    #[command(flatten)]
    compact: CompactArgs,
    #[command(flatten)]
    run: RunArgs,
}

impl EtcdCmd {
    pub(super) fn into_action(self) -> Result<Action, ArgError> {
        match self {
            EtcdCmd::Watch(args) => Ok(Action::Watch(args.into_config()?)),
            EtcdCmd::WatchLatency(args) => Ok(Action::Watch(args.into_config()?)),
            EtcdCmd::WatchGet(args) => Ok(Action::Watch(args.into_config()?)),
            op => Ok(Action::Run {
                cfg: etcd_config(op)?,
                embedded: None,
            }),
        }
    }
}

/// A validated put (`sweep` checks each of its key sizes with it).
pub(super) fn etcd_put(
    key_size: usize,
    val_size: usize,
    key_space_size: u64,
    sequential_keys: bool,
) -> Result<EtcdOp, ArgError> {
    if key_space_size == 0 {
        return Err(ArgError::Zero {
            flag: "key-space-size",
        });
    }
    let need = varint_len(key_space_size - 1);
    if key_size < need {
        return Err(ArgError::KeySizeTooSmall {
            key_size,
            key_space_size,
            need,
        });
    }
    if key_size > MAX_GENERATED || val_size > MAX_GENERATED {
        return Err(ArgError::GeneratedTooLarge);
    }
    Ok(EtcdOp::Put {
        key_size,
        val_size,
        key_space_size,
        sequential_keys,
    })
}

/// The most puts one transaction may carry (etcd's default --max-txn-ops is 128).
const MAX_TXN_OPS: usize = 128;

/// A validated txn-put: the put's key and value checks, and room for distinct keys.
pub(super) fn etcd_txn_put(
    ops: usize,
    key_size: usize,
    val_size: usize,
    key_space_size: u64,
) -> Result<EtcdOp, ArgError> {
    if ops == 0 || ops > MAX_TXN_OPS {
        return Err(ArgError::TxnOps {
            ops,
            max: MAX_TXN_OPS,
        });
    }
    etcd_put(key_size, val_size, key_space_size, false)?;
    if key_space_size < ops as u64 {
        return Err(ArgError::KeySpaceBelowTxnOps {
            key_space_size,
            ops,
        });
    }
    Ok(EtcdOp::TxnPut {
        key_size,
        val_size,
        key_space_size,
        ops,
    })
}

/// A validated txn-mixed: the put's key and value checks, a ratio, a limit.
pub(super) fn etcd_txn_mixed(
    key_size: usize,
    val_size: usize,
    key_space_size: u64,
    rw_ratio: f64,
    limit: u64,
    consistency: Consistency,
    end_key: String,
) -> Result<EtcdOp, ArgError> {
    if !(rw_ratio.is_finite() && rw_ratio >= 0.0) {
        return Err(ArgError::RwRatio(rw_ratio));
    }
    etcd_put(key_size, val_size, key_space_size, false)?;
    Ok(EtcdOp::TxnMixed(TxnMixed {
        key_size,
        val_size,
        key_space_size,
        rw_ratio,
        limit: int64("--limit", limit)?,
        end_key: end_key.into_bytes(),
        serializable: matches!(consistency, Consistency::S),
    }))
}

/// A validated lease-keepalive.
pub(super) fn etcd_lease_keepalive(ttl: i64) -> Result<EtcdOp, ArgError> {
    // etcd grants at least its minimum TTL (1.5 election timeouts) whatever is asked, and at
    // most 9,000,000,000 s
    if !(1..=9_000_000_000).contains(&ttl) {
        return Err(ArgError::LeaseTtl(ttl));
    }
    Ok(EtcdOp::LeaseKeepalive { ttl })
}

/// A validated range of one key (or, with `--prefix`, every key under it).
pub(super) fn etcd_range(
    key: String,
    consistency: Consistency,
    options: RangeOptions,
) -> Result<EtcdOp, ArgError> {
    if key.is_empty() {
        return Err(ArgError::Needed("range needs a non-empty KEY"));
    }
    Ok(EtcdOp::Range {
        key: key.into_bytes(),
        serializable: matches!(consistency, Consistency::S),
        options,
    })
}

/// `--limit` / `--rev` as etcd's int64.
fn int64(flag: &'static str, v: u64) -> Result<i64, ArgError> {
    i64::try_from(v).map_err(|_| ArgError::Int64 { flag, got: v })
}

/// The run configuration of an etcd request load (put, range, txn-put, txn-mixed,
/// lease-keepalive).
pub(super) fn etcd_config(op: EtcdCmd) -> Result<Config, ArgError> {
    let no_compaction = CompactArgs::default();
    let (op, members, run, verify, compact) = match op {
        EtcdCmd::Put {
            key_size,
            val_size,
            key_space_size,
            sequential_keys,
            verify,
            compact,
            members,
            run,
        } => (
            etcd_put(key_size, val_size, key_space_size, sequential_keys)?,
            members,
            run,
            verify,
            compact,
        ),
        EtcdCmd::Range {
            range_key,
            consistency,
            prefix,
            limit,
            keys_only,
            count_only,
            rev,
            members,
            run,
        } => {
            if keys_only && count_only {
                return Err(ArgError::Conflict(
                    "--keys-only and --count-only: choose one",
                ));
            }
            let options = RangeOptions {
                prefix,
                limit: int64("--limit", limit)?,
                keys_only,
                count_only,
                revision: int64("--rev", rev)?,
            };
            (
                etcd_range(range_key, consistency, options)?,
                members,
                run,
                false,
                no_compaction,
            )
        }
        EtcdCmd::TxnPut {
            txn_ops,
            key_size,
            val_size,
            key_space_size,
            verify,
            compact,
            members,
            run,
        } => (
            etcd_txn_put(txn_ops, key_size, val_size, key_space_size)?,
            members,
            run,
            verify,
            compact,
        ),
        EtcdCmd::TxnMixed(a) => (
            etcd_txn_mixed(
                a.key_size,
                a.val_size,
                a.key_space_size,
                a.rw_ratio,
                a.limit,
                a.consistency,
                a.end_key.unwrap_or_default(),
            )?,
            a.members,
            a.run,
            a.verify,
            a.compact,
        ),
        EtcdCmd::LeaseKeepalive {
            lease_ttl,
            members,
            run,
        } => (
            etcd_lease_keepalive(lease_ttl)?,
            members,
            run,
            false,
            no_compaction,
        ),
        EtcdCmd::Watch(_) | EtcdCmd::WatchLatency(_) | EtcdCmd::WatchGet(_) => {
            return Err(ArgError::Conflict(
                "watch has its own report; it cannot run as a request load",
            ));
        }
    };
    let compact = compact.into_config()?;
    if verify && compact.is_some() {
        return Err(ArgError::Conflict(
            "--verify with --compact-interval: compaction drops the history --verify reads \
             (choose one)",
        ));
    }
    let endpoints = parse_endpoints(&members.endpoints)?;
    let spec = WorkloadSpec::Etcd(op);
    let cfg = run.into_config(spec, endpoints, members.target)?;
    refuse_plain_h2(&cfg)?;
    Ok(Config {
        verify,
        compact,
        ..cfg
    })
}

/// txn-mixed and lease-keepalive run over HTTP/1.1 and gRPC: a plain HTTP/2 request carries
/// its Content-Length in a header prepared once, and their bodies differ in length (a read's
/// and a write's; each client's lease id).
pub(super) fn refuse_plain_h2(cfg: &Config) -> Result<(), ArgError> {
    if cfg.protos.contains(&Proto::H3) {
        return Err(ArgError::EtcdOverH3);
    }
    if cfg.endpoints.iter().any(|e| e.unix.is_some()) {
        return Err(ArgError::Conflict(
            "etcd's members are reached at http:// or https:// URLs (host:port), not unix://",
        ));
    }
    let name = match &cfg.spec {
        WorkloadSpec::Etcd(EtcdOp::TxnMixed(_)) => "txn-mixed",
        WorkloadSpec::Etcd(EtcdOp::LeaseKeepalive { .. }) => "lease-keepalive",
        _ => return Ok(()),
    };
    if cfg.protos.contains(&Proto::H2) {
        return Err(ArgError::NoPlainH2(name));
    }
    Ok(())
}
