//! `wirebench etcd put | range | watch`: the etcd benchmarks, and the etcd operations the other
//! commands share.

use clap::Subcommand;

use super::Action;
use super::common::{Consistency, MAX_GENERATED, RunArgs, parse_endpoints, parse_target};
use super::watch::{WatchArgs, WatchGetArgs, WatchLatencyArgs};
use crate::config::{Config, EtcdOp, RangeOptions, Target, WorkloadSpec};
use crate::workload::etcd::varint_len;

/// Where a load goes: the endpoints, and which of the cluster's members get the clients.
#[derive(Debug, clap::Args)]
pub struct Members {
    /// Comma-separated endpoints (http://host:port); connections are spread over them
    #[arg(long, value_delimiter = ',', default_value = "http://127.0.0.1:2379")]
    endpoints: Vec<String>,
    /// Which members get the clients: all the endpoints, the first, the leader or the
    /// followers (found with Maintenance/Status and MemberList)
    #[arg(long, default_value = "all", value_parser = parse_target)]
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

impl EtcdCmd {
    pub(super) fn into_action(self) -> Result<Action, String> {
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
) -> Result<EtcdOp, String> {
    if key_space_size == 0 {
        return Err("--key-space-size must be at least 1".into());
    }
    let need = varint_len(key_space_size - 1);
    if key_size < need {
        return Err(format!(
            "--key-size {key_size} cannot hold {key_space_size} distinct keys (needs at least {need})"
        ));
    }
    if key_size > MAX_GENERATED || val_size > MAX_GENERATED {
        return Err(format!(
            "--key-size and --val-size are limited to {MAX_GENERATED} bytes"
        ));
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
) -> Result<EtcdOp, String> {
    if ops == 0 || ops > MAX_TXN_OPS {
        return Err(format!(
            "--txn-ops {ops}: between 1 and {MAX_TXN_OPS} (etcd's default --max-txn-ops)"
        ));
    }
    etcd_put(key_size, val_size, key_space_size, false)?;
    if key_space_size < ops as u64 {
        return Err(format!(
            "--key-space-size {key_space_size} is below --txn-ops {ops}: a transaction's keys must be distinct"
        ));
    }
    Ok(EtcdOp::TxnPut {
        key_size,
        val_size,
        key_space_size,
        ops,
    })
}

/// A validated range of one key (or, with `--prefix`, every key under it).
pub(super) fn etcd_range(
    key: String,
    consistency: Consistency,
    options: RangeOptions,
) -> Result<EtcdOp, String> {
    if key.is_empty() {
        return Err("range needs a non-empty KEY".into());
    }
    Ok(EtcdOp::Range {
        key: key.into_bytes(),
        serializable: matches!(consistency, Consistency::S),
        options,
    })
}

/// `--limit` / `--rev` as etcd's int64.
fn int64(flag: &str, v: u64) -> Result<i64, String> {
    i64::try_from(v).map_err(|_| format!("{flag} {v}: at most {}", i64::MAX))
}

/// The run configuration of `etcd put` or `etcd range`.
pub(super) fn etcd_config(op: EtcdCmd) -> Result<Config, String> {
    let (op, members, run, verify) = match op {
        EtcdCmd::Put {
            key_size,
            val_size,
            key_space_size,
            sequential_keys,
            verify,
            members,
            run,
        } => (
            etcd_put(key_size, val_size, key_space_size, sequential_keys)?,
            members,
            run,
            verify,
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
                return Err("--keys-only and --count-only: choose one".into());
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
            )
        }
        EtcdCmd::TxnPut {
            txn_ops,
            key_size,
            val_size,
            key_space_size,
            members,
            run,
        } => (
            etcd_txn_put(txn_ops, key_size, val_size, key_space_size)?,
            members,
            run,
            false,
        ),
        EtcdCmd::Watch(_) | EtcdCmd::WatchLatency(_) | EtcdCmd::WatchGet(_) => {
            return Err("watch has its own report; it cannot run as a request load".into());
        }
    };
    let endpoints = parse_endpoints(&members.endpoints)?;
    let cfg = run.into_config(WorkloadSpec::Etcd(op), endpoints, members.target)?;
    Ok(Config { verify, ..cfg })
}
