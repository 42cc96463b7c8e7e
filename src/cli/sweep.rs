//! `wirebench sweep etcd put | range | txn-put | txn-mixed | lease-keepalive` (and the payload sweeps `sweep echo | http | grpc`, in
//! `sweep_payload`): the swept dimensions and the flags every row shares.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::Action;
use super::common::{
    CallProto, Consistency, LimitArgs, ProtoArg, RunArgs, TableArg, TlsArgs, nonzero,
    parse_endpoints, parse_target,
};
use super::error::ArgError;
use super::etcd::{etcd_lease_keepalive, etcd_put, etcd_txn_mixed, etcd_txn_put};
use super::heading;
use super::sweep_payload::{SweepEchoArgs, SweepGrpcArgs, SweepHttpArgs};
use crate::config::{EtcdOp, SweepConfig, SweepOp, TableFormat, Target, WorkloadSpec};
use crate::stack::Proto;

#[derive(Debug, Subcommand)]
pub enum SweepCmd {
    /// etcd put, range, txn-put, txn-mixed or lease-keepalive
    Etcd {
        #[command(subcommand)]
        op: SweepEtcd,
    },
    /// Payload sizes over the stacks against an echo server (the built-in one unless
    /// --target): bytes on the wire, segments, syscalls, CPU, latency and h2 WINDOW_UPDATEs per
    /// request, as a table (and a line chart with --svg)
    Echo(SweepEchoArgs),
    /// Payload sizes against any URL: the request body is the payload (HTTP/1.1, or h2 with
    /// --proto), one row per size and stack (1000 requests each unless -n or -z), the columns
    /// of sweep echo
    Http(SweepHttpArgs),
    /// Payload sizes against any gRPC method: one string or bytes field of the request carries
    /// the payload (--payload-field), one row per size (1000 requests each unless -n or -z),
    /// the columns of sweep echo
    Grpc(SweepGrpcArgs),
}

#[derive(Debug, Subcommand)]
pub enum SweepEtcd {
    /// Write keys (etcd's "write one key" table with the defaults)
    Put(SweepArgs),
    /// Read one key of each key size, written once before its rows (etcd's "read one key" table)
    Range(SweepArgs),
    /// Transactions of --txn-ops puts (etcd benchmark's txn-put), one revision each
    TxnPut(SweepTxnArgs),
    /// Reads and writes (etcd benchmark's txn-mixed): each row's reads and writes are shown
    /// apart too (their QPS and p99; in JSON and CSV their counts and p50 / p90 / p99)
    TxnMixed(SweepMixedArgs),
    /// Lease keepalives (etcd benchmark's lease-keepalive): one lease per client, granted
    /// before each row and revoked after it; no key size (--key-size is refused)
    LeaseKeepalive(SweepLeaseArgs),
}

#[derive(Debug, Args)]
pub struct SweepMixedArgs {
    /// Reads per write: a request is a read with probability r / (1 + r)
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub rw_ratio: f64,
    /// Reads: at most this many keys (0: no limit)
    #[arg(long, default_value_t = 1000)]
    pub limit: u64,
    #[command(flatten)]
    pub sweep: SweepArgs,
}

#[derive(Debug, Args)]
pub struct SweepLeaseArgs {
    /// TTL of each client's lease, seconds
    #[arg(long, default_value_t = 100)]
    pub lease_ttl: i64,
    #[command(flatten)]
    pub sweep: SweepArgs,
}

#[derive(Debug, Args)]
pub struct SweepTxnArgs {
    /// Puts per transaction (distinct keys: --key-space-size at least this)
    #[arg(long, default_value_t = 1)]
    pub txn_ops: usize,
    #[command(flatten)]
    pub sweep: SweepArgs,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Client counts (requests in flight), comma-separated
    #[arg(short = 'c', long, value_delimiter = ',', default_value = "1,64,256")]
    pub clients: Vec<usize>,
    /// Key sizes in bytes, comma-separated [default: 64,256]
    #[arg(long, value_delimiter = ',')]
    pub key_size: Vec<usize>,
    /// Targets, comma-separated: leader, followers, all, first
    #[arg(long, value_delimiter = ',', default_value = "leader,all", value_parser = parse_target)]
    pub target: Vec<Target>,
    /// Protocols, comma-separated
    #[arg(long, value_enum, value_delimiter = ',', default_value = "http,grpc")]
    pub proto: Vec<CallProto>,
    /// Value size in bytes (put: every value; range: the value stored under the key read)
    #[arg(long, default_value_t = 8)]
    pub val_size: usize,
    /// put: distinct keys written
    #[arg(long, default_value_t = 1)]
    pub key_space_size: u64,
    /// put: write keys in order instead of at random
    #[arg(long)]
    pub sequential_keys: bool,
    /// range: l linearizable, s serializable
    #[arg(long, value_enum, default_value_t = Consistency::L)]
    pub consistency: Consistency,
    /// Comma-separated endpoints of the cluster (http://host:port)
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "http://127.0.0.1:2379",
        help_heading = heading::ETCD
    )]
    pub endpoints: Vec<String>,
    /// etcd user, NAME[:PASSWORD]
    #[arg(long, help_heading = heading::ETCD)]
    pub user: Option<String>,
    /// -n / -z / --warmup apply to each row
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Seed for generated keys and values
    #[arg(long, help_heading = heading::LOAD)]
    pub seed: Option<u64>,
    /// gRPC connections per row (capped at the row's clients), comma-separated: a row set per
    /// count (HTTP/1.1 always has one connection per client)
    #[arg(long, value_delimiter = ',', default_value = "1", help_heading = heading::CONNECTIONS)]
    pub conns: Vec<usize>,
    /// Emulated paths between the clients and the cluster, separated by ';': a row set per
    /// link ('none;rtt=40ms;rtt=40ms,loss=1%'; `none` is loopback without a link)
    #[arg(long, value_name = "SPECS", help_heading = heading::CONNECTIONS)]
    pub links: Option<String>,
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Table format
    #[arg(long, value_enum, default_value_t = TableArg::Markdown, help_heading = heading::OUTPUT)]
    pub format: TableArg,
    /// Write the table to this file instead of stdout
    #[arg(short = 'o', long, help_heading = heading::OUTPUT)]
    pub output: Option<PathBuf>,
    /// Report this server process's CPU per op (a server CPU column)
    #[arg(long, help_heading = heading::MEASUREMENT)]
    pub server_pid: Option<u32>,
    /// A condition every row must meet (as for a run: 'p90<10ms', 'errors<0.1%'); a broken one
    /// exits 3 with one line per row that broke it
    #[arg(long = "fail-if", value_name = "THRESHOLD", help_heading = heading::THRESHOLDS)]
    pub fail_if: Vec<String>,
    /// --find-max and its bounds: a capacity search per row (a column of the answers)
    #[command(flatten)]
    pub capacity: super::capacity::CapacityArgs,
}

impl SweepCmd {
    pub(super) fn into_action(self) -> Result<Action, ArgError> {
        let op = match self {
            SweepCmd::Etcd { op } => op,
            SweepCmd::Echo(a) => return Ok(Action::SweepPayload(a.into_sweep()?)),
            SweepCmd::Http(a) => return Ok(Action::SweepPayload(a.into_sweep()?)),
            SweepCmd::Grpc(a) => return Ok(Action::SweepPayload(a.into_sweep()?)),
        };
        Ok(Action::Sweep(match op {
            SweepEtcd::Put(a) => a.into_config(Swept::Put)?,
            SweepEtcd::Range(a) => a.into_config(Swept::Range)?,
            SweepEtcd::TxnPut(a) => a.sweep.into_config(Swept::TxnPut(a.txn_ops))?,
            SweepEtcd::TxnMixed(a) => a.sweep.into_config(Swept::TxnMixed {
                rw_ratio: a.rw_ratio,
                limit: a.limit,
            })?,
            SweepEtcd::LeaseKeepalive(a) => a.sweep.into_config(Swept::Lease(a.lease_ttl))?,
        }))
    }
}

/// Which etcd operation a sweep's rows run.
#[derive(Debug, Clone, Copy)]
enum Swept {
    Put,
    Range,
    /// with its puts per transaction
    TxnPut(usize),
    TxnMixed {
        rw_ratio: f64,
        limit: u64,
    },
    /// with its leases' TTL
    Lease(i64),
}

impl SweepArgs {
    fn into_config(mut self, swept: Swept) -> Result<SweepConfig, ArgError> {
        if matches!(swept, Swept::Lease(_)) {
            if !self.key_size.is_empty() {
                return Err(ArgError::Conflict(
                    "sweep etcd lease-keepalive has no key size: drop --key-size",
                ));
            }
            // one cell per client count and target: a keepalive has no key (0 stands for none)
            self.key_size = vec![0];
        } else if self.key_size.is_empty() {
            self.key_size = vec![64, 256];
        }
        let nonempty = |flag: &'static str, n: usize| {
            if n == 0 {
                Err(ArgError::NoValues { flag })
            } else {
                Ok(())
            }
        };
        nonempty("clients", self.clients.len())?;
        nonempty("key-size", self.key_size.len())?;
        nonempty("target", self.target.len())?;
        nonempty("proto", self.proto.len())?;
        for &c in &self.clients {
            nonzero("clients", c)?;
        }
        let op = match swept {
            Swept::Range => {
                for &k in &self.key_size {
                    etcd_put(k, self.val_size, 1, true)?;
                }
                SweepOp::Range {
                    val_size: self.val_size,
                    serializable: matches!(self.consistency, Consistency::S),
                }
            }
            Swept::Put => {
                for &k in &self.key_size {
                    etcd_put(k, self.val_size, self.key_space_size, self.sequential_keys)?;
                }
                SweepOp::Put {
                    val_size: self.val_size,
                    key_space_size: self.key_space_size,
                    sequential_keys: self.sequential_keys,
                }
            }
            Swept::TxnPut(ops) => {
                for &k in &self.key_size {
                    etcd_txn_put(ops, k, self.val_size, self.key_space_size)?;
                }
                SweepOp::TxnPut {
                    val_size: self.val_size,
                    key_space_size: self.key_space_size,
                    ops,
                }
            }
            Swept::TxnMixed { rw_ratio, limit } => {
                let mut m = None;
                for &k in &self.key_size {
                    m = Some(etcd_txn_mixed(
                        k,
                        self.val_size,
                        self.key_space_size,
                        rw_ratio,
                        limit,
                        self.consistency,
                        String::new(),
                    )?);
                }
                let Some(EtcdOp::TxnMixed(m)) = m else {
                    return Err(ArgError::NoValues { flag: "key-size" });
                };
                SweepOp::TxnMixed {
                    val_size: self.val_size,
                    key_space_size: self.key_space_size,
                    rw_ratio: m.rw_ratio,
                    limit: m.limit,
                    serializable: m.serializable,
                }
            }
            Swept::Lease(ttl) => {
                etcd_lease_keepalive(ttl)?;
                SweepOp::LeaseKeepalive { ttl }
            }
        };
        let max_clients = self.clients.iter().copied().max().unwrap_or(1);
        for &c in &self.conns {
            nonzero("conns", c)?;
        }
        let links = crate::config::axes::links_axis(self.links.as_deref())?;
        let run = RunArgs {
            conns: 1,
            limits: self.limits,
            seed: self.seed,
            user: self.user,
            server_pid: self.server_pid,
            fail_if: self.fail_if,
            capacity: self.capacity,
            ..RunArgs::plain(ProtoArg::Both.into(), max_clients, self.tls)
        };
        let spec = WorkloadSpec::Etcd(EtcdOp::Put {
            key_size: self.key_size[0],
            val_size: self.val_size,
            key_space_size: 1,
            sequential_keys: true,
        });
        // each row sets its own target
        let base = run.into_config(spec, parse_endpoints(&self.endpoints)?, Target::All)?;
        let mut protos: Vec<Proto> = self.proto.iter().map(|p| p.proto()).collect();
        if protos.contains(&Proto::H2) || protos.contains(&Proto::H3) {
            return Err(ArgError::Conflict(
                "sweep etcd runs over http and grpc (etcd's gateway is not reached over \
                        plain HTTP/2, nor etcd over HTTP/3)",
            ));
        }
        protos.dedup();
        Ok(SweepConfig {
            base,
            op,
            clients: self.clients,
            key_sizes: self.key_size,
            targets: self.target,
            protos,
            conns: self.conns,
            links,
            format: match self.format {
                TableArg::Markdown => TableFormat::Markdown,
                TableArg::Csv => TableFormat::Csv,
                TableArg::Json => TableFormat::Json,
            },
            output: self.output,
        })
    }
}
