//! The validated run configuration: what `cli` produces and everything else consumes.
//!
//! Plain data only, fixed once validated: what a run learns later (the built-in server's port,
//! `--target`'s endpoints, the auth token) lives in `app::prepare::Prepared`, and the workload is
//! rendered there from `spec`. Imports nothing above `net`.

pub mod axes;
pub mod capacity;
pub mod clock;
mod endpoint;
mod http;
pub mod stages;

pub use endpoint::{Endpoint, parse_url};
pub use http::{HttpHead, HttpRequestSpec, HttpSpec};

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use crate::client::grpc::H2Config;
use crate::net::NetConfig;
use crate::stack::Proto;
use wirebench_link::spec::LinkSpec;

/// A value given on the command line that is not one (clap prints it after the flag): the
/// line to print, naming the value.
#[derive(Debug, thiserror::Error)]
pub enum ValueError {
    #[error("invalid target {0:?} (choose leader, followers, all or first)")]
    Target(String),
    #[error("endpoint {0}: scheme must be http or https")]
    EndpointScheme(String),
    #[error("endpoint {0}: expected http://host:port")]
    EndpointForm(String),
    #[error("endpoint {0}: expected unix:///path/to/socket")]
    UnixPath(String),
    #[error("endpoint {0}: a port is required")]
    EndpointPort(String),
    #[error("endpoint {url}: {source}")]
    Resolve { url: String, source: std::io::Error },
    #[error("endpoint {0}: no address")]
    NoAddress(String),
    #[error("URL {0:?}: expected http://host[:port]/path or https://...")]
    UrlForm(String),
    #[error("URL {0:?}: the scheme must be http or https")]
    UrlScheme(String),
    #[error("URL {0:?}: expected a host (and no user info)")]
    UrlHost(String),
    /// the URL's endpoint (with the scheme's port) is not one
    #[error("URL {url:?}: {endpoint}")]
    UrlEndpoint {
        url: String,
        endpoint: Box<ValueError>,
    },
    #[error("invalid duration {0:?} (examples: 500ms, 10s, 2m)")]
    Duration(String),
    #[error("invalid duration unit in {0:?} (use ns, us, ms, s, m, h)")]
    DurationUnit(String),
    #[error("duration {0:?} is out of range")]
    DurationRange(String),
    #[error("invalid size {0:?} (examples: 4096, 64k, 1M)")]
    Size(String),
    #[error("invalid size unit in {0:?} (use k, M, G)")]
    SizeUnit(String),
    #[error("size {0:?} is out of range")]
    SizeRange(String),
}

/// Which KV operation, with its parameters (validated by the CLI).
#[derive(Debug, Clone)]
pub enum EtcdOp {
    Put {
        key_size: usize,
        val_size: usize,
        key_space_size: u64,
        sequential_keys: bool,
    },
    Range {
        key: Vec<u8>,
        serializable: bool,
        options: RangeOptions,
    },
    /// etcd benchmark's txn-put: each transaction puts `ops` distinct keys (consecutive key
    /// indices from a random one, in the key space)
    TxnPut {
        key_size: usize,
        val_size: usize,
        key_space_size: u64,
        ops: usize,
    },
    /// etcd benchmark's txn-mixed: each request is a transaction of one range (a read) or of
    /// one put (a write), a read with probability `rw_ratio / (1 + rw_ratio)`
    TxnMixed(TxnMixed),
    /// etcd benchmark's lease-keepalive: each client keeps its own lease alive, one keepalive
    /// per request
    LeaseKeepalive {
        /// the TTL each client's lease is granted with, seconds
        ttl: i64,
    },
}

/// txn-mixed's parameters (etcd benchmark's flag names).
#[derive(Debug, Clone, PartialEq)]
pub struct TxnMixed {
    pub key_size: usize,
    pub val_size: usize,
    /// writes go to key index (request index mod this), as etcd's tool writes them
    pub key_space_size: u64,
    /// reads per write
    pub rw_ratio: f64,
    /// a read returns at most this many keys (0: no limit)
    pub limit: i64,
    /// a read ranges over [`\0`, `end_key`); empty: every key
    pub end_key: Vec<u8>,
    /// reads are serializable (`--consistency s`)
    pub serializable: bool,
}

impl EtcdOp {
    /// The classes a run reports apart (txn-mixed: reads and writes), in class index order;
    /// empty for an operation of one kind.
    pub fn classes(&self) -> &'static [&'static str] {
        match self {
            EtcdOp::TxnMixed(_) => &["read", "write"],
            _ => &[],
        }
    }
}

/// etcd range's options beyond the key (etcd benchmark's and etcdctl's names).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RangeOptions {
    /// every key with the key as prefix (range_end = the key with its last byte + 1)
    pub prefix: bool,
    /// at most this many keys (0: no limit)
    pub limit: i64,
    pub keys_only: bool,
    pub count_only: bool,
    /// read at this revision (0: the latest)
    pub revision: i64,
}

impl RangeOptions {
    /// `, prefix, limit 10, keys only` for the report header (empty without options).
    fn describe(&self) -> String {
        let mut s = String::new();
        if self.prefix {
            s.push_str(", prefix");
        }
        if self.limit > 0 {
            s.push_str(&format!(", limit {}", self.limit));
        }
        if self.keys_only {
            s.push_str(", keys only");
        }
        if self.count_only {
            s.push_str(", count only");
        }
        if self.revision > 0 {
            s.push_str(&format!(", at revision {}", self.revision));
        }
        s
    }
}

/// The range end of every key with `prefix` as prefix: the prefix with its last byte that is
/// not 0xff incremented (and what follows it dropped); `\0` (every key) when there is none.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(&last) = end.last() {
        if last < 0xff {
            let n = end.len();
            end[n - 1] = last + 1;
            return end;
        }
        end.pop();
    }
    vec![0]
}

/// What to run, before it is rendered for concrete endpoints (`workload::Workload::new`).
#[derive(Debug, Clone)]
pub enum WorkloadSpec {
    Etcd(EtcdOp),
    Echo {
        ping: String,
        headers: Vec<(String, String)>,
    },
    /// `wirebench http URL`: any HTTP server
    Http(HttpSpec),
    /// `wirebench grpc TARGET Service/Method`: any unary gRPC method
    Grpc(GrpcSpec),
}

/// One unary gRPC method of any server.
#[derive(Debug, Clone)]
pub struct GrpcSpec {
    /// `/package.Service/Method`
    pub path: String,
    pub request: GrpcRequest,
    pub metadata: Vec<(String, String)>,
    /// `:authority` instead of the target's host:port
    pub authority: Option<String>,
    /// the response type, to show a response as JSON (the sample); none with `--data-bin`
    /// and no schema, or before reflection
    pub response: Option<prost_reflect::MessageDescriptor>,
    /// the method streams its response (known from the schema; a method without one is
    /// called as unary)
    pub server_streaming: bool,
    /// the method takes a stream of requests (known from the schema)
    pub client_streaming: bool,
    /// what a client stream sends (client-streaming and bidi methods)
    pub stream: StreamPlan,
    /// client streams: the messages after `request`'s, sent in turn (a JSON array's elements)
    pub more: Vec<Vec<u8>>,
    /// the messages' JSON when it holds placeholders (`request` and `more` are then their
    /// first renders): rendered per call
    pub templated: Option<TemplatedMessages>,
}

/// Request messages whose JSON holds placeholders: the message type and each message's text
/// (the request's first, then a client stream's next ones).
#[derive(Debug, Clone)]
pub struct TemplatedMessages {
    pub input: prost_reflect::MessageDescriptor,
    pub texts: Vec<String>,
}

/// What each call of a client-streaming or bidi method sends (`--stream-messages`,
/// `--stream-interval`, `--bidi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamPlan {
    /// messages per stream (at least 1; a bound only when `span` is given)
    pub messages: u64,
    /// send for this long (`--stream-messages 5s`): the first message sent at or after it (or
    /// whose next would be, with an interval) is the last
    pub span: Option<std::time::Duration>,
    /// the wait between two messages of a stream (none: each as soon as it may go)
    pub interval: Option<std::time::Duration>,
    pub bidi: BidiMode,
}

impl StreamPlan {
    /// How long a stream is, in words: "10 messages" or "messages for 5s".
    pub fn length(&self) -> String {
        match self.span {
            Some(d) => format!("messages for {d:?}"),
            None => format!("{} messages", self.messages),
        }
    }
}

impl Default for StreamPlan {
    fn default() -> Self {
        StreamPlan {
            messages: 10,
            span: None,
            interval: None,
            bidi: BidiMode::PingPong,
        }
    }
}

/// How a bidi stream goes: each message waits for the reply to the one before (`PingPong`,
/// each timed to its reply), or the messages go while the replies come (`Free`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BidiMode {
    PingPong,
    Free,
}

/// A gRPC request message: encoded, or JSON waiting for the server's schema (`--reflect`, asked
/// during setup).
#[derive(Debug, Clone)]
pub enum GrpcRequest {
    /// protobuf-encoded, not framed
    Encoded(Vec<u8>),
    /// JSON for `method` (`package.Service/Method`), encoded once reflection gave the schema
    ByReflection { method: String, json: String },
}

impl WorkloadSpec {
    /// What the server is called in findings ("etcd spent 2.1× the CPU ...").
    pub fn server_name(&self) -> &'static str {
        match self {
            WorkloadSpec::Etcd(_) => "etcd",
            WorkloadSpec::Echo { .. } => "echo-server",
            WorkloadSpec::Http(_) | WorkloadSpec::Grpc(_) => "server",
        }
    }

    /// One line for the report header, e.g. "etcd put: key 8 B, value 8 B, 1 keys (random)".
    pub fn describe(&self) -> String {
        match self {
            WorkloadSpec::Etcd(EtcdOp::Put {
                key_size,
                val_size,
                key_space_size,
                sequential_keys,
            }) => format!(
                "etcd put: key {key_size} B, value {val_size} B, {key_space_size} keys ({})",
                if *sequential_keys {
                    "sequential"
                } else {
                    "random"
                }
            ),
            WorkloadSpec::Etcd(EtcdOp::Range {
                key,
                serializable,
                options,
            }) => format!(
                "etcd range {:?} ({}{})",
                String::from_utf8_lossy(key),
                if *serializable {
                    "serializable"
                } else {
                    "linearizable"
                },
                options.describe()
            ),
            WorkloadSpec::Etcd(EtcdOp::TxnPut {
                key_size,
                val_size,
                key_space_size,
                ops,
            }) => format!(
                "etcd txn-put: {ops} puts per txn, key {key_size} B, value {val_size} B, {key_space_size} keys"
            ),
            WorkloadSpec::Etcd(EtcdOp::TxnMixed(m)) => format!(
                "etcd txn-mixed: {} reads per write; writes: key {} B, value {} B, {} keys; reads: {}, {}{}",
                m.rw_ratio,
                m.key_size,
                m.val_size,
                m.key_space_size,
                if m.end_key.is_empty() {
                    "every key".to_string()
                } else {
                    format!("keys below {:?}", String::from_utf8_lossy(&m.end_key))
                },
                if m.serializable {
                    "serializable"
                } else {
                    "linearizable"
                },
                if m.limit > 0 {
                    format!(", limit {}", m.limit)
                } else {
                    String::new()
                }
            ),
            WorkloadSpec::Etcd(EtcdOp::LeaseKeepalive { ttl }) => format!(
                "etcd lease-keepalive: one lease per client (TTL {ttl} s), one keepalive per request"
            ),
            WorkloadSpec::Echo { ping, .. } => format!("echo: ping of {} B", ping.len()),
            WorkloadSpec::Http(h) => h.describe(),
            WorkloadSpec::Grpc(g) => match &g.request {
                GrpcRequest::Encoded(b) => format!(
                    "grpc {}: {}request of {} B",
                    g.path,
                    match (g.client_streaming, g.server_streaming, g.stream.bidi) {
                        (false, false, _) => String::new(),
                        (false, true, _) => "server-streaming, ".to_string(),
                        (true, false, _) => {
                            format!("client-streaming, {} per stream, ", g.stream.length())
                        }
                        (true, true, BidiMode::PingPong) => {
                            format!("bidi ping-pong, {} per stream, ", g.stream.length())
                        }
                        (true, true, BidiMode::Free) => {
                            format!("bidi, {} per stream sent freely, ", g.stream.length())
                        }
                    },
                    b.len()
                ),
                GrpcRequest::ByReflection { json, .. } => format!(
                    "grpc {}: request of {} B of JSON, schema by reflection",
                    g.path,
                    json.len()
                ),
            },
        }
    }
}

/// Which members of an etcd cluster a run sends its requests to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// the current leader, found through the endpoints (even when it is not one of them)
    Leader,
    /// every given endpoint that is not the leader
    Followers,
    /// every given endpoint
    All,
    /// the first given endpoint (no discovery)
    First,
}

impl Target {
    pub fn name(self) -> &'static str {
        match self {
            Target::Leader => "leader",
            Target::Followers => "followers",
            Target::All => "all",
            Target::First => "first",
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Target {
    type Err = ValueError;

    fn from_str(s: &str) -> Result<Target, ValueError> {
        match s {
            "leader" => Ok(Target::Leader),
            "followers" => Ok(Target::Followers),
            "all" => Ok(Target::All),
            "first" => Ok(Target::First),
            _ => Err(ValueError::Target(s.to_string())),
        }
    }
}

/// The highest --rate / --connect-rate accepted (requests or connections per second), and the
/// highest rate a capacity search tries.
pub const MAX_RATE: f64 = 10_000_000.0;

/// When a run stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// this many measured requests in all
    Total(u64),
    /// send new requests for this long (measured part only)
    Duration(Duration),
}

/// Load shape for one protocol run.
#[derive(Debug, Clone)]
pub struct Load {
    /// requests in flight (virtual users)
    pub clients: usize,
    /// TCP connections for gRPC and plain HTTP/2
    pub conns: usize,
    /// HTTP/1.1 requests in flight per connection (`--pipeline`); 1: one connection per client
    pub pipeline: usize,
    /// `--requests-per-conn`: each connection closes after this many requests, and none is
    /// opened before the start
    pub requests_per_conn: Option<u64>,
    pub threads: usize,
    pub stop: Stop,
    pub warmup: Duration,
    /// `--start-at`: the measured window begins at this wall-clock time (the start line at this
    /// time less the warmup), or at once when setup ends later
    pub start_at: Option<std::time::SystemTime>,
    pub timeout: Duration,
    /// open loop: requests per second over all clients (`--rate`); None: closed loop
    pub rate: Option<f64>,
    /// connections opened per second at setup (`--connect-rate`); None: as fast as they go
    pub connect_rate: Option<f64>,
    /// `--stages` (open loop: `rate` is then the schedule's average) or `--client-stages`
    /// (closed loop: `clients` is the highest target); the run lasts their sum (`stop`)
    pub stages: Option<Staged>,
    /// `--interval`: print one line per interval while the run goes
    pub interval: Option<Interval>,
}

/// A run whose target moves stage by stage.
#[derive(Debug, Clone)]
pub enum Staged {
    /// `--stages`: requests per second
    Rate(std::sync::Arc<stages::Stages>),
    /// `--client-stages`: clients in flight
    Clients(std::sync::Arc<stages::Stages>),
}

impl Staged {
    pub fn stages(&self) -> &stages::Stages {
        match self {
            Staged::Rate(s) | Staged::Clients(s) => s,
        }
    }
}

/// `--interval` and `--interval-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    pub every: Duration,
    pub csv: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

/// Everything a run needs, validated.
#[derive(Debug, Clone)]
pub struct Config {
    /// as given; empty when the built-in server is the target
    pub endpoints: Vec<Endpoint>,
    pub protos: Vec<Proto>,
    pub load: Load,
    pub net: NetConfig,
    pub h2: H2Config,
    /// largest HTTP response body accepted
    pub max_body: u64,
    pub spec: WorkloadSpec,
    pub seed: u64,
    /// `--agent`: this process's name in a distributed run, recorded in the report
    pub agent: Option<String>,
    pub format: Format,
    pub output: Option<PathBuf>,
    /// a server process whose CPU is reported per request
    pub server_pid: Option<u32>,
    /// print the per-connection table in the text report
    pub per_conn: bool,
    /// write a chart here
    pub svg: Option<PathBuf>,
    /// where the results go besides the report: live metrics, the request log, the page and
    /// the charts
    pub outputs: Outputs,
    /// `--fail-if`: conditions the finished run must meet (exit 3 when one is broken)
    pub thresholds: Vec<crate::threshold::Threshold>,
    /// `--find-max`: a capacity search instead of one run per stack
    pub capacity: Option<capacity::CapacitySpec>,
    /// etcd credentials (user, password): authenticate before the run, again on "invalid auth token"
    pub auth: Option<(String, String)>,
    /// which etcd members get the clients (resolved from `endpoints` before the run)
    pub target: Target,
    /// etcd put `--verify`: after the run, every acknowledged put is looked up in etcd's
    /// history at its revision
    pub verify: bool,
    /// etcd `--compact-interval`: a compactor runs beside the load
    pub compact: Option<Compaction>,
    /// `--link`: the emulated path every stack's run goes through (a fresh one per stack)
    pub link: Option<LinkSpec>,
}

/// etcd benchmark's `--compact-interval` and `--compact-index-delta`: every `interval`, etcd's
/// history is compacted to (its current revision - `index_delta`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compaction {
    pub interval: Duration,
    pub index_delta: i64,
}

/// Where a run's results go besides its report.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// `--metrics-addr`: serve the live figures as Prometheus text here while the run goes
    pub metrics_addr: Option<SocketAddr>,
    /// `--metrics-linger`: and this long after the report is written
    pub metrics_linger: Duration,
    /// `--log-requests`: one CSV row per measured request
    pub log_requests: Option<PathBuf>,
    /// `--html`: the report as one self-contained page
    pub html: Option<PathBuf>,
    /// `--latency-svg`: the latency by percentile chart
    pub latency_svg: Option<PathBuf>,
    /// `--timeline-svg`: requests/s and p99 over time
    pub timeline_svg: Option<PathBuf>,
    /// `--curve-svg` (with `--find-max`): each search step's latency against its rate
    pub curve_svg: Option<PathBuf>,
}

impl Outputs {
    /// Whether any of them is asked for.
    pub fn any(&self) -> bool {
        self.metrics_addr.is_some()
            || self.log_requests.is_some()
            || self.html.is_some()
            || self.latency_svg.is_some()
            || self.timeline_svg.is_some()
            || self.curve_svg.is_some()
    }
}

/// A validated `etcd watch` run (its key helpers are `etcd::watch`'s).
#[derive(Debug, Clone)]
pub struct WatchConfig {
    /// what the run measures
    pub kind: WatchKind,
    pub endpoints: Vec<Endpoint>,
    /// watch protocols to measure, one run each
    pub protos: Vec<Proto>,
    pub watchers: usize,
    pub streams: usize,
    /// gRPC connections carrying the streams (HTTP/1.1: one connection per stream)
    pub conns: usize,
    pub watched_keys: usize,
    /// every watcher watches the whole key prefix instead of one key
    pub prefix: bool,
    pub key_prefix: String,
    pub put_total: u64,
    /// puts per second over all put clients; None = as fast as the clients go
    pub put_rate: Option<f64>,
    pub put_clients: usize,
    pub put_proto: Proto,
    pub val_size: usize,
    /// how long to wait for outstanding events after the last put
    pub drain: Duration,
    /// per-put limit: a put not answered within it fails (`timeout`)
    pub put_timeout: Duration,
    pub net: NetConfig,
    pub h2: H2Config,
    pub format: Format,
    pub output: Option<std::path::PathBuf>,
    /// `--compact-interval`: a compactor runs beside the put load
    pub compact: Option<Compaction>,
    /// `--link`: the emulated path the watchers and the put load go through (a fresh one per
    /// stack)
    pub link: Option<LinkSpec>,
}

/// What a watch run measures (the three watch benchmarks of etcd's tool).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchKind {
    /// `etcd watch`: events per second under a put load, event latency from each put's send
    Events,
    /// `etcd watch-latency`: paced puts to one key; event latency also from each put's
    /// acknowledgement (the clock of etcd benchmark's watch-latency)
    Latency,
    /// `etcd watch-get`: the puts are written first; the watchers, created afterwards from the
    /// first put's revision (unsynced), replay them from history while `get_clients` clients
    /// read `get_key` serializably, until every watcher has every event
    Get { get_clients: usize, get_key: String },
}

impl WatchKind {
    /// The command's name, and the report's `kind`.
    pub fn name(&self) -> &'static str {
        match self {
            WatchKind::Events => "watch",
            WatchKind::Latency => "watch-latency",
            WatchKind::Get { .. } => "watch-get",
        }
    }
}

/// The etcd operation a sweep measures.
#[derive(Debug, Clone, Copy)]
pub enum SweepOp {
    Put {
        val_size: usize,
        key_space_size: u64,
        sequential_keys: bool,
    },
    /// reads one key of each key size, written once (value `val_size` bytes) before its rows
    Range { val_size: usize, serializable: bool },
    /// transactions of `ops` puts (etcd txn-put)
    TxnPut {
        val_size: usize,
        key_space_size: u64,
        ops: usize,
    },
    /// etcd txn-mixed: reads and writes of each key size
    TxnMixed {
        val_size: usize,
        key_space_size: u64,
        rw_ratio: f64,
        limit: i64,
        serializable: bool,
    },
    /// one lease per client kept alive
    LeaseKeepalive { ttl: i64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableFormat {
    Markdown,
    Csv,
    Json,
}

/// A validated sweep.
#[derive(Debug, Clone)]
pub struct SweepConfig {
    /// everything but the swept dimensions (endpoints, -n/-z, timeouts, TLS, auth, ...)
    pub base: Config,
    pub op: SweepOp,
    pub clients: Vec<usize>,
    pub key_sizes: Vec<usize>,
    pub targets: Vec<Target>,
    pub protos: Vec<Proto>,
    /// gRPC connection counts (each capped at the row's clients); HTTP/1.1 runs in the first
    pub conns: Vec<usize>,
    /// `--links`: the emulated paths (`None`: loopback without a link)
    pub links: Vec<Option<LinkSpec>>,
    pub format: TableFormat,
    pub output: Option<PathBuf>,
}

/// Parses durations like `500ms`, `10s`, `2m`, `1h`, `1.5s`, `250us`; a bare number is seconds.
pub fn parse_duration(s: &str) -> Result<Duration, ValueError> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| ValueError::Duration(s.to_string()))?;
    let scale = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(ValueError::DurationUnit(s.to_string())),
    };
    let secs = value * scale;
    if !secs.is_finite() || secs > 1e9 {
        return Err(ValueError::DurationRange(s.to_string()));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses sizes like `4096`, `64k`, `1M`, `2MiB` (binary multiples).
pub fn parse_size(s: &str) -> Result<u64, ValueError> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| ValueError::Size(s.to_string()))?;
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(ValueError::SizeUnit(s.to_string())),
    };
    n.checked_mul(mult)
        .ok_or_else(|| ValueError::SizeRange(s.to_string()))
}

#[cfg(test)]
mod tests;
