//! Command line: clap structs, validated into a `Config` (raw flags never travel past here).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::client::grpc::H2Config;
use crate::config::{Config, Endpoint, Format, Load, Proto, Stop, parse_duration, parse_size};
use crate::net::NetConfig;
use crate::workload::etcd::varint_len;
use crate::workload::{EtcdOp, EtcdWorkload, Workload};

/// The largest key or value wirebench will generate (etcd's own request limit is 1.5 MiB).
const MAX_GENERATED: usize = 64 << 20;

#[derive(Debug, Parser)]
#[command(
    name = "wirebench",
    version,
    about = "Measure what a protocol really costs: the same operation over HTTP/1.1 and gRPC, \
             with latency, throughput, bytes, packets, syscalls and CPU per request."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Benchmark etcd v3: the gRPC API and its HTTP/1.1 JSON gateway
    Etcd {
        #[command(subcommand)]
        op: EtcdCmd,
    },
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
        #[command(flatten)]
        run: RunArgs,
    },
    /// Read one key (etcd benchmark's `range`)
    Range {
        /// The key to read
        key: String,
        /// l: linearizable (through the leader), s: serializable (local member)
        #[arg(long, value_enum, default_value_t = Consistency::L)]
        consistency: Consistency,
        #[command(flatten)]
        run: RunArgs,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Consistency {
    L,
    S,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProtoArg {
    Http,
    Grpc,
    Both,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FormatArg {
    Text,
    Json,
}

/// Flags shared by every load-generating command.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Comma-separated endpoints (http://host:port); connections are spread over them
    #[arg(long, value_delimiter = ',', default_value = "http://127.0.0.1:2379")]
    pub endpoints: Vec<String>,
    /// Which stack to measure; `both` runs HTTP/1.1 then gRPC and compares them
    #[arg(long, value_enum, default_value_t = ProtoArg::Both)]
    pub proto: ProtoArg,
    /// Requests in flight (virtual users)
    #[arg(short = 'c', long, default_value_t = 1)]
    pub clients: usize,
    /// gRPC TCP connections (clients are spread over them as h2 streams); HTTP/1.1 always
    /// opens one connection per client
    #[arg(long, default_value_t = 1)]
    pub conns: usize,
    /// Total measured requests (default 10000 unless --duration is given)
    #[arg(short = 'n', long, conflicts_with = "duration")]
    pub total: Option<u64>,
    /// Run for this long instead of a total (e.g. 10s, 1m)
    #[arg(short = 'z', long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Send requests for this long first and leave them out of the figures
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    pub warmup: Duration,
    /// Per-request timeout
    #[arg(long, value_parser = parse_duration, default_value = "20s")]
    pub timeout: Duration,
    /// TCP connect timeout
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    pub connect_timeout: Duration,
    /// Worker threads, each with its own runtime (default: number of cores)
    #[arg(long)]
    pub threads: Option<usize>,
    /// Leave Nagle's algorithm on (TCP_NODELAY is set by default)
    #[arg(long)]
    pub no_tcp_nodelay: bool,
    /// SO_SNDBUF for every connection (e.g. 64k)
    #[arg(long, value_parser = parse_size)]
    pub sndbuf: Option<u64>,
    /// SO_RCVBUF for every connection
    #[arg(long, value_parser = parse_size)]
    pub rcvbuf: Option<u64>,
    /// h2 initial stream window (SETTINGS_INITIAL_WINDOW_SIZE)
    #[arg(long, value_parser = parse_size, default_value = "65535")]
    pub initial_window_size: u64,
    /// h2 initial connection window
    #[arg(long, value_parser = parse_size, default_value = "65535")]
    pub initial_conn_window_size: u64,
    /// h2 SETTINGS_MAX_FRAME_SIZE (16k to 16M-1)
    #[arg(long, value_parser = parse_size, default_value = "16384")]
    pub max_frame_size: u64,
    /// Largest gRPC response message accepted
    #[arg(long, value_parser = parse_size, default_value = "4M")]
    pub max_recv_msg_size: u64,
    /// Largest HTTP/1.1 response body accepted
    #[arg(long, value_parser = parse_size, default_value = "64M")]
    pub max_body: u64,
    /// Report format
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,
    /// Write the report to this file instead of stdout
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// Seed for generated keys and values (default: from the clock)
    #[arg(long)]
    pub seed: Option<u64>,
}

fn nonzero(name: &str, v: usize) -> Result<usize, String> {
    if v == 0 {
        Err(format!("--{name} must be at least 1"))
    } else {
        Ok(v)
    }
}

fn u32_in(name: &str, v: u64, lo: u64, hi: u64) -> Result<u32, String> {
    if v < lo || v > hi {
        return Err(format!("--{name} must be between {lo} and {hi}, got {v}"));
    }
    Ok(v as u32)
}

impl RunArgs {
    fn into_config(self, op: EtcdOp) -> Result<Config, String> {
        let clients = nonzero("clients", self.clients)?;
        let conns = nonzero("conns", self.conns)?;
        let threads = match self.threads {
            Some(t) => nonzero("threads", t)?,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        let protos = match self.proto {
            ProtoArg::Http => vec![Proto::Http],
            ProtoArg::Grpc => vec![Proto::Grpc],
            ProtoArg::Both => vec![Proto::Http, Proto::Grpc],
        };
        if protos.contains(&Proto::Grpc) && conns > clients {
            return Err(format!(
                "--conns {conns} exceeds --clients {clients}: every gRPC connection needs a client"
            ));
        }
        let stop = match (self.total, self.duration) {
            (Some(0), _) => return Err("--total must be at least 1".into()),
            (Some(n), _) => Stop::Total(n),
            (None, Some(d)) if d.is_zero() => return Err("--duration must be positive".into()),
            (None, Some(d)) => Stop::Duration(d),
            (None, None) => Stop::Total(10_000),
        };
        if self.timeout.is_zero() {
            return Err("--timeout must be positive".into());
        }
        if self.connect_timeout.is_zero() {
            return Err("--connect-timeout must be positive".into());
        }
        if self.endpoints.is_empty() {
            return Err("--endpoints needs at least one URL".into());
        }
        let endpoints = self
            .endpoints
            .iter()
            .map(|e| Endpoint::parse(e.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        let buf = |name: &str, v: Option<u64>| -> Result<Option<u32>, String> {
            v.map(|v| u32_in(name, v, 1, i32::MAX as u64)).transpose()
        };
        let net = NetConfig {
            nodelay: !self.no_tcp_nodelay,
            sndbuf: buf("sndbuf", self.sndbuf)?,
            rcvbuf: buf("rcvbuf", self.rcvbuf)?,
            connect_timeout: self.connect_timeout,
        };
        let h2 = H2Config {
            initial_window_size: u32_in(
                "initial-window-size",
                self.initial_window_size,
                1,
                (1 << 31) - 1,
            )?,
            initial_conn_window_size: u32_in(
                "initial-conn-window-size",
                self.initial_conn_window_size,
                65_535,
                (1 << 31) - 1,
            )?,
            max_frame_size: u32_in("max-frame-size", self.max_frame_size, 16_384, (1 << 24) - 1)?,
            max_recv_message: u32_in(
                "max-recv-msg-size",
                self.max_recv_msg_size,
                1,
                u32::MAX as u64,
            )? as usize,
        };
        let seed = self.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        let workload = Workload::Etcd(EtcdWorkload::new(op, &endpoints, seed)?);
        Ok(Config {
            endpoints,
            protos,
            load: Load {
                clients,
                conns,
                threads,
                stop,
                warmup: self.warmup,
                timeout: self.timeout,
            },
            net,
            h2,
            max_body: self.max_body,
            workload,
            format: match self.format {
                FormatArg::Text => Format::Text,
                FormatArg::Json => Format::Json,
            },
            output: self.output,
        })
    }
}

impl Cli {
    /// Validates the flags into a run configuration; the error is one line for the user.
    pub fn into_config(self) -> Result<Config, String> {
        match self.command {
            Command::Etcd { op } => match op {
                EtcdCmd::Put {
                    key_size,
                    val_size,
                    key_space_size,
                    sequential_keys,
                    run,
                } => {
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
                    run.into_config(EtcdOp::Put {
                        key_size,
                        val_size,
                        key_space_size,
                        sequential_keys,
                    })
                }
                EtcdCmd::Range {
                    key,
                    consistency,
                    run,
                } => {
                    if key.is_empty() {
                        return Err("range needs a non-empty KEY".into());
                    }
                    run.into_config(EtcdOp::Range {
                        key: key.into_bytes(),
                        serializable: matches!(consistency, Consistency::S),
                    })
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(args: &[&str]) -> Result<Config, String> {
        let mut v = vec!["wirebench"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v)
            .map_err(|e| e.to_string())?
            .into_config()
    }

    #[test]
    fn defaults_follow_etcd_benchmark() {
        let c = config(&["etcd", "put"]).unwrap();
        assert_eq!(c.load.clients, 1);
        assert_eq!(c.load.conns, 1);
        assert_eq!(c.load.stop, Stop::Total(10_000));
        assert_eq!(c.protos, vec![Proto::Http, Proto::Grpc]);
        assert_eq!(c.endpoints[0].authority, "127.0.0.1:2379");
    }

    #[test]
    fn rejects_bad_combinations() {
        assert!(config(&["etcd", "put", "-n", "0"]).is_err());
        assert!(config(&["etcd", "put", "-n", "5", "-z", "1s"]).is_err());
        assert!(config(&["etcd", "put", "-c", "2", "--conns", "3"]).is_err());
        assert!(config(&["etcd", "put", "-c", "2", "--conns", "3", "--proto", "http"]).is_ok());
        assert!(config(&["etcd", "put", "--key-size", "1", "--key-space-size", "100"]).is_err());
        assert!(config(&["etcd", "put", "--max-frame-size", "100"]).is_err());
        assert!(config(&["etcd", "put", "--endpoints", "https://x:1"]).is_err());
        assert!(config(&["etcd", "range", ""]).is_err());
        assert!(config(&["etcd", "put", "--timeout", "0s"]).is_err());
    }

    #[test]
    fn duration_mode() {
        let c = config(&["etcd", "range", "k", "-z", "2s", "--consistency", "s"]).unwrap();
        assert_eq!(c.load.stop, Stop::Duration(Duration::from_secs(2)));
    }
}
