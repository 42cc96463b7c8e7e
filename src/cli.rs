//! Command line: clap structs, validated into a `Config` (raw flags never travel past here).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::client::grpc::H2Config;
use crate::config::{
    Config, Endpoint, Format, Load, Proto, Stop, WorkloadSpec, parse_duration, parse_size,
};
use crate::discover::Target;
use crate::net::NetConfig;
use crate::server::ServeConfig;
use crate::watch::WatchConfig;
use crate::workload::EtcdOp;
use crate::workload::etcd::varint_len;

/// h2's small-DATA-frame allowance on watch connections (bytes of framing overhead).
const WATCH_DATA_FRAME_BUDGET: usize = 16 << 20;

/// The largest key or value wirebench will generate (etcd's own request limit is 1.5 MiB).
const MAX_GENERATED: usize = 64 << 20;

/// The highest --rate / --connect-rate accepted (requests or connections per second).
const MAX_RATE: f64 = 10_000_000.0;

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
    /// Benchmark a grpc-echo compatible server (the built-in one when no --target is given)
    Echo {
        #[command(flatten)]
        echo: EchoArgs,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Serve grpc-echo's EchoService over h2 and POST /v1/echo over HTTP/1.1 on one port
    Serve(ServeArgs),
    /// Send one request and print the response as JSON (grpcurl style)
    Call {
        #[command(subcommand)]
        what: CallCmd,
    },
    /// Run the product of clients × key sizes × targets × protocols against etcd and print a
    /// table (etcd's benchmark columns plus p99, bytes, packets and CPU per op)
    Sweep {
        #[command(subcommand)]
        what: SweepCmd,
    },
    /// Run both protocols in alternating rounds (HTTP/1.1, gRPC, HTTP/1.1, ...): medians,
    /// ratios and findings
    Compare {
        /// Rounds per protocol
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        #[command(subcommand)]
        what: CompareCmd,
    },
}

#[derive(Debug, Subcommand)]
pub enum SweepCmd {
    /// etcd put or range
    Etcd {
        #[command(subcommand)]
        op: SweepEtcd,
    },
}

#[derive(Debug, Subcommand)]
pub enum SweepEtcd {
    /// Write keys (etcd's "write one key" table with the defaults)
    Put(SweepArgs),
    /// Read one key of each key size, written once before its rows (etcd's "read one key" table)
    Range(SweepArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TableArg {
    Markdown,
    Csv,
    Json,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Client counts (requests in flight), comma-separated
    #[arg(short = 'c', long, value_delimiter = ',', default_value = "1,64,256")]
    pub clients: Vec<usize>,
    /// Key sizes in bytes, comma-separated
    #[arg(long, value_delimiter = ',', default_value = "64,256")]
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
    #[arg(long, value_delimiter = ',', default_value = "http://127.0.0.1:2379")]
    pub endpoints: Vec<String>,
    /// gRPC connections per row (capped at the row's clients)
    #[arg(long, default_value_t = 1)]
    pub conns: usize,
    /// -n / -z / --warmup apply to each row
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Seed for generated keys and values
    #[arg(long)]
    pub seed: Option<u64>,
    /// etcd user, NAME[:PASSWORD]
    #[arg(long)]
    pub user: Option<String>,
    /// Report this server process's CPU per op (a server CPU column)
    #[arg(long)]
    pub server_pid: Option<u32>,
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Table format
    #[arg(long, value_enum, default_value_t = TableArg::Markdown)]
    pub format: TableArg,
    /// Write the table to this file instead of stdout
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
}

impl SweepArgs {
    fn into_config(self, range: bool) -> Result<crate::sweep::SweepConfig, String> {
        use crate::sweep::{SweepConfig, SweepOp, TableFormat};
        let nonempty = |name: &str, n: usize| {
            if n == 0 {
                Err(format!("--{name} needs at least one value"))
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
        let op = if range {
            for &k in &self.key_size {
                etcd_put(k, self.val_size, 1, true)?;
            }
            SweepOp::Range {
                val_size: self.val_size,
                serializable: matches!(self.consistency, Consistency::S),
            }
        } else {
            for &k in &self.key_size {
                etcd_put(k, self.val_size, self.key_space_size, self.sequential_keys)?;
            }
            SweepOp::Put {
                val_size: self.val_size,
                key_space_size: self.key_space_size,
                sequential_keys: self.sequential_keys,
            }
        };
        let max_clients = self.clients.iter().copied().max().unwrap_or(1);
        let run = RunArgs {
            conns: self.conns.min(max_clients),
            limits: self.limits,
            seed: self.seed,
            user: self.user,
            server_pid: self.server_pid,
            ..RunArgs::plain(ProtoArg::Both, max_clients, self.tls)
        };
        nonzero("conns", self.conns)?;
        let spec = WorkloadSpec::Etcd(EtcdOp::Put {
            key_size: self.key_size[0],
            val_size: self.val_size,
            key_space_size: 1,
            sequential_keys: true,
        });
        let base = run.into_config(spec, parse_endpoints(&self.endpoints)?)?;
        let mut protos: Vec<Proto> = self
            .proto
            .iter()
            .map(|p| match p {
                CallProto::Http => Proto::Http,
                CallProto::Grpc => Proto::Grpc,
            })
            .collect();
        protos.dedup();
        Ok(SweepConfig {
            base,
            op,
            clients: self.clients,
            key_sizes: self.key_size,
            targets: self.target,
            protos,
            format: match self.format {
                TableArg::Markdown => TableFormat::Markdown,
                TableArg::Csv => TableFormat::Csv,
                TableArg::Json => TableFormat::Json,
            },
            output: self.output,
        })
    }
}

#[derive(Debug, Subcommand)]
pub enum CompareCmd {
    /// etcd put or range
    Etcd {
        #[command(subcommand)]
        op: EtcdCmd,
    },
    /// a grpc-echo compatible server (the built-in one when no --target is given)
    Echo {
        #[command(flatten)]
        echo: EchoArgs,
        #[command(flatten)]
        run: RunArgs,
    },
}

#[derive(Debug, Args)]
pub struct EchoArgs {
    /// Server to measure (http://host:port[,...]); default: start the built-in server
    #[arg(long, value_delimiter = ',')]
    pub target: Vec<String>,
    /// The ping string sent in every EchoRequest
    #[arg(long, default_value = "Hello, world!")]
    pub ping: String,
    /// Extra header / gRPC metadata, NAME:VALUE (repeatable)
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,
    /// Threads of the built-in server (when no --target)
    #[arg(long, default_value_t = 1)]
    pub server_threads: usize,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: String,
    /// Threads, each accepting on its own SO_REUSEPORT listener (default: cores)
    #[arg(long)]
    pub threads: Option<usize>,
    /// Close connections at this age, ±10% (GOAWAY on h2, Connection: close on HTTP/1.1)
    #[arg(long, value_parser = parse_duration)]
    pub max_conn_age: Option<Duration>,
    /// Close connections idle for this long
    #[arg(long, value_parser = parse_duration)]
    pub max_conn_idle: Option<Duration>,
    /// SETTINGS_MAX_CONCURRENT_STREAMS announced on h2 connections
    #[arg(long)]
    pub max_concurrent_streams: Option<u32>,
    /// Serve TLS with this certificate chain (PEM); with --tls-key
    #[arg(long)]
    pub tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM)
    #[arg(long)]
    pub tls_key: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum CallCmd {
    /// Call Echo on a grpc-echo compatible server
    Echo {
        #[command(flatten)]
        echo: EchoArgs,
        #[command(flatten)]
        call: CallArgs,
    },
    /// Call etcd
    Etcd {
        #[command(subcommand)]
        op: CallEtcd,
    },
}

#[derive(Debug, Subcommand)]
pub enum CallEtcd {
    /// Read one key
    Range {
        #[arg(value_name = "KEY")]
        range_key: String,
        #[arg(long, value_delimiter = ',', default_value = "http://127.0.0.1:2379")]
        endpoints: Vec<String>,
        #[arg(long, value_enum, default_value_t = Consistency::L)]
        consistency: Consistency,
        #[command(flatten)]
        call: CallArgs,
    },
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// Which stack carries the call
    #[arg(long, value_enum, default_value_t = CallProto::Grpc)]
    pub proto: CallProto,
    /// Timeout for the call
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub timeout: Duration,
    #[command(flatten)]
    pub tls: TlsArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CallProto {
    Http,
    Grpc,
}

/// What the command line asks for, validated.
#[derive(Debug)]
pub enum Action {
    /// A load run; with `embedded`, the built-in server is started first and becomes the target.
    Run {
        cfg: Config,
        embedded: Option<ServeConfig>,
    },
    /// One request, response printed as JSON.
    Call {
        cfg: Config,
        embedded: Option<ServeConfig>,
    },
    Serve(ServeConfig),
    /// An etcd watch run.
    Watch(WatchConfig),
    /// A sweep: one run per cell, one table.
    Sweep(crate::sweep::SweepConfig),
    /// Alternating rounds of both protocols.
    Compare {
        cfg: Config,
        embedded: Option<ServeConfig>,
        rounds: usize,
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
        /// Comma-separated endpoints (http://host:port); connections are spread over them
        #[arg(long, value_delimiter = ',', default_value = "http://127.0.0.1:2379")]
        endpoints: Vec<String>,
        /// Which members get the clients: all the endpoints, the first, the leader or the
        /// followers (found with Maintenance/Status and MemberList)
        #[arg(long, default_value = "all", value_parser = parse_target)]
        target: Target,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Watch keys while a put load runs: events/s, event latency, missing and duplicated events
    Watch(WatchArgs),
    /// Read one key (etcd benchmark's `range`)
    Range {
        /// The key to read
        #[arg(value_name = "KEY")]
        range_key: String,
        /// l: linearizable (through the leader), s: serializable (local member)
        #[arg(long, value_enum, default_value_t = Consistency::L)]
        consistency: Consistency,
        /// Comma-separated endpoints (http://host:port); connections are spread over them
        #[arg(long, value_delimiter = ',', default_value = "http://127.0.0.1:2379")]
        endpoints: Vec<String>,
        /// Which members get the clients: all the endpoints, the first, the leader or the
        /// followers (found with Maintenance/Status and MemberList)
        #[arg(long, default_value = "all", value_parser = parse_target)]
        target: Target,
        #[command(flatten)]
        run: RunArgs,
    },
}

fn parse_target(s: &str) -> Result<Target, String> {
    s.parse()
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Comma-separated endpoints (http://host:port); streams and puts are spread over them
    #[arg(long, value_delimiter = ',', default_value = "http://127.0.0.1:2379")]
    pub endpoints: Vec<String>,
    /// Watch protocol; `both` runs HTTP/1.1 then gRPC, each with its own put load
    #[arg(long, value_enum, default_value_t = ProtoArg::Both)]
    pub proto: ProtoArg,
    /// Watchers in all
    #[arg(long, default_value_t = 1)]
    pub watchers: usize,
    /// Watch streams (watchers / streams per stream); over HTTP/1.1 each stream is one
    /// POST /v3/watch on its own connection
    #[arg(long, default_value_t = 1)]
    pub streams: usize,
    /// gRPC connections carrying the streams
    #[arg(long, default_value_t = 1)]
    pub conns: usize,
    /// Keys written and watched (watcher i watches key i mod K)
    #[arg(long, default_value_t = 1)]
    pub watched_keys: usize,
    /// Every watcher watches all the keys (a prefix watch) instead of one
    #[arg(long)]
    pub prefix: bool,
    /// Prefix of the keys written and watched
    #[arg(long, default_value = "wirebench/watch/")]
    pub key_prefix: String,
    /// Puts in all
    #[arg(long, default_value_t = 10_000)]
    pub put_total: u64,
    /// Puts per second over all put clients (default: as fast as they go)
    #[arg(long)]
    pub put_rate: Option<f64>,
    /// Put clients (requests in flight)
    #[arg(long, default_value_t = 10)]
    pub put_clients: usize,
    /// Protocol of the put load (default gRPC, so both watch protocols see the same events)
    #[arg(long, value_enum, default_value_t = CallProto::Grpc)]
    pub put_proto: CallProto,
    /// Value size; the first 8 bytes carry the send time
    #[arg(long, default_value_t = 16)]
    pub val_size: usize,
    /// After the last put, wait this long at most for outstanding events
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub timeout: Duration,
    /// Per-put timeout: a put not answered within it fails (`timeout`); a put client whose
    /// server stays unreachable for longer stops, and its remaining puts are not sent
    #[arg(long, value_parser = parse_duration, default_value = "20s")]
    pub put_timeout: Duration,
    /// TCP connect timeout
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    pub connect_timeout: Duration,
    /// The seed's run: 10 put clients, 80,000 puts, one watcher counting every event
    #[arg(long)]
    pub seed_preset: bool,
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Report format
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,
    /// Write the report to this file instead of stdout
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
}

impl WatchArgs {
    fn into_config(self) -> Result<WatchConfig, String> {
        let mut a = self;
        if a.seed_preset {
            a.watchers = 1;
            a.streams = 1;
            a.put_clients = 10;
            a.put_total = 80_000;
            a.watched_keys = 1;
        }
        let watchers = nonzero("watchers", a.watchers)?;
        let streams = nonzero("streams", a.streams)?;
        let conns = nonzero("conns", a.conns)?;
        if streams > watchers {
            return Err(format!(
                "--streams {streams} exceeds --watchers {watchers}: every stream needs a watcher"
            ));
        }
        if conns > streams {
            return Err(format!(
                "--conns {conns} exceeds --streams {streams}: every connection needs a stream"
            ));
        }
        let watched_keys = nonzero("watched-keys", a.watched_keys)?;
        let put_clients = nonzero("put-clients", a.put_clients)?;
        if a.put_total == 0 {
            return Err("--put-total must be at least 1".into());
        }
        if let Some(r) = a.put_rate
            && !(r.is_finite() && r > 0.0)
        {
            return Err(format!("--put-rate must be a positive number, got {r}"));
        }
        if a.val_size < crate::watch::STAMP_LEN || a.val_size > MAX_GENERATED {
            return Err(format!(
                "--val-size must be between {} (the send-time stamp) and {MAX_GENERATED}",
                crate::watch::STAMP_LEN
            ));
        }
        if a.key_prefix.is_empty() {
            return Err("--key-prefix must not be empty".into());
        }
        if a.timeout.is_zero() || a.connect_timeout.is_zero() {
            return Err("--timeout and --connect-timeout must be positive".into());
        }
        if a.put_timeout.is_zero() {
            return Err("--put-timeout must be positive".into());
        }
        let protos = match a.proto {
            ProtoArg::Http => vec![Proto::Http],
            ProtoArg::Grpc => vec![Proto::Grpc],
            ProtoArg::Both => vec![Proto::Http, Proto::Grpc],
        };
        let endpoints = parse_endpoints(&a.endpoints)?;
        let tls = a.tls.client(&endpoints)?;
        Ok(WatchConfig {
            endpoints,
            protos,
            watchers,
            streams,
            conns,
            watched_keys,
            prefix: a.prefix,
            key_prefix: a.key_prefix,
            put_total: a.put_total,
            put_rate: a.put_rate,
            put_clients,
            put_proto: match a.put_proto {
                CallProto::Http => Proto::Http,
                CallProto::Grpc => Proto::Grpc,
            },
            val_size: a.val_size,
            drain: a.timeout,
            put_timeout: a.put_timeout,
            net: NetConfig {
                connect_timeout: a.connect_timeout,
                tls,
                ..NetConfig::default()
            },
            // A watch stream receives a burst of small DATA frames per put batch; h2's default
            // budget for them would close the connection under normal load.
            h2: H2Config {
                data_frame_budget: WATCH_DATA_FRAME_BUDGET,
                ..H2Config::default()
            },
            format: match a.format {
                FormatArg::Text => Format::Text,
                FormatArg::Json => Format::Json,
            },
            output: a.output,
        })
    }
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

/// TLS client flags (used when the endpoints are https://).
#[derive(Debug, Args, Default)]
pub struct TlsArgs {
    /// CA certificate(s), PEM, to verify the server with
    #[arg(long)]
    pub cacert: Option<PathBuf>,
    /// Client certificate chain, PEM (mutual TLS; with --key)
    #[arg(long)]
    pub cert: Option<PathBuf>,
    /// Client private key, PEM (with --cert)
    #[arg(long)]
    pub key: Option<PathBuf>,
    /// Accept any server certificate (handshake signatures are still checked)
    #[arg(long)]
    pub insecure_skip_verify: bool,
    /// Server name to present and verify instead of the endpoint's host
    #[arg(long)]
    pub sni: Option<String>,
}

impl TlsArgs {
    /// The TLS client for `endpoints`: Some when they are https, None when http; mixing is an error.
    fn client(
        &self,
        endpoints: &[Endpoint],
    ) -> Result<Option<std::sync::Arc<crate::net::tls::TlsClient>>, String> {
        let https = endpoints.iter().filter(|e| e.tls).count();
        if https == 0 {
            if self.cacert.is_some()
                || self.cert.is_some()
                || self.key.is_some()
                || self.sni.is_some()
                || self.insecure_skip_verify
            {
                return Err("TLS flags need https:// endpoints".into());
            }
            return Ok(None);
        }
        if https != endpoints.len() {
            return Err("endpoints mix http:// and https://".into());
        }
        let client = crate::net::tls::TlsClient::new(&crate::net::tls::TlsOptions {
            cacert: self.cacert.clone(),
            cert: self.cert.clone(),
            key: self.key.clone(),
            insecure_skip_verify: self.insecure_skip_verify,
            sni: self.sni.clone(),
        })?;
        Ok(Some(std::sync::Arc::new(client)))
    }
}

/// How long a run (or each sweep row) lasts, its timeouts and threads.
#[derive(Debug, Args)]
pub struct LimitArgs {
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
}

impl Default for LimitArgs {
    /// The flags' defaults.
    fn default() -> Self {
        LimitArgs {
            total: None,
            duration: None,
            warmup: Duration::ZERO,
            timeout: Duration::from_secs(20),
            connect_timeout: Duration::from_secs(5),
            threads: None,
        }
    }
}

/// Flags shared by every load-generating command.
#[derive(Debug, Args)]
pub struct RunArgs {
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
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Open loop: send this many requests per second over all clients on a fixed schedule;
    /// latency counts from each request's intended send time (coordinated omission corrected)
    /// and -c caps the requests in flight
    #[arg(long)]
    pub rate: Option<f64>,
    /// Open the connections at this many per second (a ramp) instead of all at once
    #[arg(long)]
    pub connect_rate: Option<f64>,
    /// Source addresses for connections, used in turn: addresses and IPv4 ranges,
    /// comma-separated (127.0.0.1-127.0.0.8): more connections than one address has ports
    #[arg(long)]
    pub bind: Option<String>,
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
    /// Protocol-layer accounting (h2 frame sniffing, HTTP/1.1 head/body split); socket
    /// counters and TCP_INFO stay on either way
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub ledger: OnOff,
    /// Report this server process's CPU per request (from /proc/PID/stat)
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// Also print the per-connection ledger table (always in JSON)
    #[arg(long)]
    pub per_conn: bool,
    /// Write a chart of the headline figures, HTTP/1.1 next to gRPC, as SVG
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// etcd user, NAME[:PASSWORD]; without a password it is read from $WIREBENCH_ETCD_PASSWORD
    #[arg(long)]
    pub user: Option<String>,
    #[command(flatten)]
    pub tls: TlsArgs,
}

/// The environment variable a password comes from when `--user` has none.
pub const PASSWORD_ENV: &str = "WIREBENCH_ETCD_PASSWORD";

fn parse_user(s: &str) -> Result<(String, String), String> {
    let (name, password) = match s.split_once(':') {
        Some((n, p)) => (n.to_string(), p.to_string()),
        None => match std::env::var(PASSWORD_ENV) {
            Ok(p) => (s.to_string(), p),
            Err(_) => {
                return Err(format!(
                    "--user {s} has no password: use NAME:PASSWORD or set {PASSWORD_ENV}"
                ));
            }
        },
    };
    if name.is_empty() {
        return Err("--user needs a user name".into());
    }
    Ok((name, password))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    On,
    Off,
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

fn parse_endpoints(list: &[String]) -> Result<Vec<Endpoint>, String> {
    if list.is_empty() {
        return Err("--endpoints needs at least one URL".into());
    }
    list.iter().map(|e| Endpoint::parse(e.trim())).collect()
}

fn parse_headers(list: &[String]) -> Result<Vec<(String, String)>, String> {
    list.iter()
        .map(|h| match h.split_once(':') {
            Some((k, v)) if !k.trim().is_empty() => {
                Ok((k.trim().to_string(), v.trim().to_string()))
            }
            _ => Err(format!("header {h:?} must be NAME:VALUE")),
        })
        .collect()
}

impl EchoArgs {
    /// The workload, the endpoints (empty when the built-in server is the target), and the
    /// built-in server's configuration when it is.
    fn resolve(self) -> Result<(WorkloadSpec, Vec<Endpoint>, Option<ServeConfig>), String> {
        let headers = parse_headers(&self.headers)?;
        let spec = WorkloadSpec::Echo {
            ping: self.ping,
            headers,
        };
        if self.target.is_empty() {
            let serve = ServeConfig {
                addr: ([127, 0, 0, 1], 0).into(),
                threads: nonzero("server-threads", self.server_threads)?,
                max_conn_age: None,
                max_conn_idle: None,
                max_concurrent_streams: None,
                tls: None,
            };
            Ok((spec, Vec::new(), Some(serve)))
        } else {
            Ok((spec, parse_endpoints(&self.target)?, None))
        }
    }
}

impl CallArgs {
    fn into_config(self, spec: WorkloadSpec, endpoints: Vec<Endpoint>) -> Result<Config, String> {
        if self.timeout.is_zero() {
            return Err("--timeout must be positive".into());
        }
        let proto = match self.proto {
            CallProto::Http => ProtoArg::Http,
            CallProto::Grpc => ProtoArg::Grpc,
        };
        let run = RunArgs {
            limits: LimitArgs {
                total: Some(1),
                timeout: self.timeout,
                connect_timeout: self.timeout,
                threads: Some(1),
                ..LimitArgs::default()
            },
            format: FormatArg::Json,
            seed: Some(0),
            ..RunArgs::plain(proto, 1, self.tls)
        };
        run.into_config(spec, endpoints)
    }
}

impl RunArgs {
    /// The flags' defaults, for commands that build a run from flags of their own.
    fn plain(proto: ProtoArg, clients: usize, tls: TlsArgs) -> RunArgs {
        RunArgs {
            proto,
            clients,
            conns: 1,
            limits: LimitArgs::default(),
            rate: None,
            connect_rate: None,
            bind: None,
            no_tcp_nodelay: false,
            sndbuf: None,
            rcvbuf: None,
            initial_window_size: 65_535,
            initial_conn_window_size: 65_535,
            max_frame_size: 16_384,
            max_recv_msg_size: 4 << 20,
            max_body: 64 << 20,
            format: FormatArg::Text,
            output: None,
            seed: None,
            ledger: OnOff::On,
            server_pid: None,
            per_conn: false,
            svg: None,
            user: None,
            tls,
        }
    }
}

impl ServeArgs {
    fn into_config(self) -> Result<ServeConfig, String> {
        let addr = std::net::ToSocketAddrs::to_socket_addrs(&self.addr)
            .map_err(|e| format!("--addr {}: {e}", self.addr))?
            .next()
            .ok_or_else(|| format!("--addr {}: no address", self.addr))?;
        let threads = match self.threads {
            Some(t) => nonzero("threads", t)?,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        for (name, d) in [
            ("max-conn-age", self.max_conn_age),
            ("max-conn-idle", self.max_conn_idle),
        ] {
            if d.is_some_and(|d| d.is_zero()) {
                return Err(format!("--{name} must be positive"));
            }
        }
        if self.max_concurrent_streams == Some(0) {
            return Err("--max-concurrent-streams must be at least 1".into());
        }
        Ok(ServeConfig {
            addr,
            threads,
            max_conn_age: self.max_conn_age,
            max_conn_idle: self.max_conn_idle,
            max_concurrent_streams: self.max_concurrent_streams,
            tls: match (&self.tls_cert, &self.tls_key) {
                (Some(c), Some(k)) => Some(crate::net::tls::server_config(c, k)?),
                (None, None) => None,
                _ => return Err("--tls-cert and --tls-key go together".into()),
            },
        })
    }
}

impl RunArgs {
    fn into_config(self, spec: WorkloadSpec, endpoints: Vec<Endpoint>) -> Result<Config, String> {
        let clients = nonzero("clients", self.clients)?;
        let conns = nonzero("conns", self.conns)?;
        let threads = match self.limits.threads {
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
        let stop = match (self.limits.total, self.limits.duration) {
            (Some(0), _) => return Err("--total must be at least 1".into()),
            (Some(n), _) => Stop::Total(n),
            (None, Some(d)) if d.is_zero() => return Err("--duration must be positive".into()),
            (None, Some(d)) => Stop::Duration(d),
            (None, None) => Stop::Total(10_000),
        };
        if self.limits.timeout.is_zero() {
            return Err("--timeout must be positive".into());
        }
        if self.limits.connect_timeout.is_zero() {
            return Err("--connect-timeout must be positive".into());
        }
        let buf = |name: &str, v: Option<u64>| -> Result<Option<u32>, String> {
            v.map(|v| u32_in(name, v, 1, i32::MAX as u64)).transpose()
        };
        for (name, r) in [("rate", self.rate), ("connect-rate", self.connect_rate)] {
            if let Some(r) = r
                && !(r.is_finite() && r > 0.0 && r <= MAX_RATE)
            {
                return Err(format!(
                    "--{name} must be a number of requests per second between 0 and {MAX_RATE}, got {r}"
                ));
            }
        }
        let bind = match &self.bind {
            Some(b) => crate::net::parse_bind(b)?,
            None => Vec::new(),
        };
        if !bind.is_empty()
            && !endpoints.is_empty()
            && endpoints
                .iter()
                .any(|e| !bind.iter().any(|ip| ip.is_ipv4() == e.addr.is_ipv4()))
        {
            return Err("--bind has no address of an endpoint's family (IPv4 / IPv6)".into());
        }
        let tls = self.tls.client(&endpoints)?;
        let net = NetConfig {
            tls,
            nodelay: !self.no_tcp_nodelay,
            sndbuf: buf("sndbuf", self.sndbuf)?,
            rcvbuf: buf("rcvbuf", self.rcvbuf)?,
            connect_timeout: self.limits.connect_timeout,
            bind: bind.into(),
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
            data_frame_budget: 0,
            ledger: self.ledger == OnOff::On,
        }
        .for_streams(clients.div_ceil(conns));
        let seed = self.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        if let Some(pid) = self.server_pid {
            crate::stats::ProcessClock::open(pid)?;
        }
        if self.user.is_some() && matches!(spec, WorkloadSpec::Echo { .. }) {
            return Err("--user is for etcd; the echo server has no authentication".into());
        }
        let workload = spec.build(&endpoints, seed, None)?;
        let auth = self.user.as_deref().map(parse_user).transpose()?;
        Ok(Config {
            endpoints,
            protos,
            load: Load {
                clients,
                conns,
                threads,
                stop,
                warmup: self.limits.warmup,
                timeout: self.limits.timeout,
                rate: self.rate,
                connect_rate: self.connect_rate,
            },
            net,
            h2,
            max_body: self.max_body,
            spec,
            seed,
            workload,
            format: match self.format {
                FormatArg::Text => Format::Text,
                FormatArg::Json => Format::Json,
            },
            output: self.output,
            server_pid: self.server_pid,
            per_conn: self.per_conn,
            svg: self.svg,
            auth,
            token: None,
            roles: Vec::new(),
            target: Target::All,
        })
    }
}

fn etcd_put(
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

fn etcd_range(key: String, consistency: Consistency) -> Result<EtcdOp, String> {
    if key.is_empty() {
        return Err("range needs a non-empty KEY".into());
    }
    Ok(EtcdOp::Range {
        key: key.into_bytes(),
        serializable: matches!(consistency, Consistency::S),
    })
}

fn etcd_config(op: EtcdCmd) -> Result<Config, String> {
    let (op, endpoints, target, run) = match op {
        EtcdCmd::Put {
            key_size,
            val_size,
            key_space_size,
            sequential_keys,
            endpoints,
            target,
            run,
        } => (
            etcd_put(key_size, val_size, key_space_size, sequential_keys)?,
            endpoints,
            target,
            run,
        ),
        EtcdCmd::Range {
            range_key,
            consistency,
            endpoints,
            target,
            run,
        } => (etcd_range(range_key, consistency)?, endpoints, target, run),
        EtcdCmd::Watch(_) => {
            return Err("watch has its own report; it cannot run as a request load".into());
        }
    };
    let mut cfg = run.into_config(WorkloadSpec::Etcd(op), parse_endpoints(&endpoints)?)?;
    cfg.target = target;
    Ok(cfg)
}

impl Cli {
    /// Validates the flags into what to do; the error is one line for the user.
    pub fn into_action(self) -> Result<Action, String> {
        match self.command {
            Command::Etcd {
                op: EtcdCmd::Watch(args),
            } => Ok(Action::Watch(args.into_config()?)),
            Command::Etcd { op } => {
                let cfg = etcd_config(op)?;
                Ok(Action::Run {
                    cfg,
                    embedded: None,
                })
            }
            Command::Echo { echo, run } => {
                let (spec, endpoints, embedded) = echo.resolve()?;
                let cfg = run.into_config(spec, endpoints)?;
                Ok(Action::Run { cfg, embedded })
            }
            Command::Compare { rounds, what } => {
                if rounds == 0 {
                    return Err("--rounds must be at least 1".into());
                }
                let (mut cfg, embedded) = match what {
                    CompareCmd::Etcd { op } => (etcd_config(op)?, None),
                    CompareCmd::Echo { echo, run } => {
                        let (spec, endpoints, embedded) = echo.resolve()?;
                        (run.into_config(spec, endpoints)?, embedded)
                    }
                };
                cfg.protos = vec![Proto::Http, Proto::Grpc];
                Ok(Action::Compare {
                    cfg,
                    embedded,
                    rounds,
                })
            }
            Command::Serve(args) => Ok(Action::Serve(args.into_config()?)),
            Command::Sweep {
                what: SweepCmd::Etcd { op },
            } => Ok(Action::Sweep(match op {
                SweepEtcd::Put(a) => a.into_config(false)?,
                SweepEtcd::Range(a) => a.into_config(true)?,
            })),
            Command::Call { what } => match what {
                CallCmd::Echo { echo, call } => {
                    let (spec, endpoints, embedded) = echo.resolve()?;
                    Ok(Action::Call {
                        cfg: call.into_config(spec, endpoints)?,
                        embedded,
                    })
                }
                CallCmd::Etcd {
                    op:
                        CallEtcd::Range {
                            range_key,
                            endpoints,
                            consistency,
                            call,
                        },
                } => {
                    let op = etcd_range(range_key, consistency)?;
                    Ok(Action::Call {
                        cfg: call
                            .into_config(WorkloadSpec::Etcd(op), parse_endpoints(&endpoints)?)?,
                        embedded: None,
                    })
                }
            },
        }
    }

    /// The run configuration of a load command (tests use this).
    pub fn into_config(self) -> Result<Config, String> {
        match self.into_action()? {
            Action::Run { cfg, .. } | Action::Call { cfg, .. } | Action::Compare { cfg, .. } => {
                Ok(cfg)
            }
            Action::Serve(_) | Action::Watch(_) | Action::Sweep(_) => {
                Err("this command has no request-load configuration".into())
            }
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
    fn the_command_line_definition_is_consistent() {
        // clap checks argument ids, conflicts and defaults here instead of at run time.
        use clap::CommandFactory;
        Cli::command().debug_assert();
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
