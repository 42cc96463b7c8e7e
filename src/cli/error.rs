//! Why the command line was refused: one line for the user (printed after `error: `, exit 2).
//! Each variant's text is the message users see; tests check several of them word for word.

use std::path::PathBuf;
use std::time::Duration;

use super::limits::MAX_GENERATED;

/// A flag, a value or a combination of flags refused before anything runs.
#[derive(Debug, thiserror::Error)]
pub enum ArgError {
    /// A reason given by a lower layer that checked the value (an endpoint, a URL, a stage list,
    /// a threshold, a .proto file, a certificate, ...), as it gave it.
    #[error("{0}")]
    Rejected(String),
    #[error(transparent)]
    Value(#[from] crate::config::ValueError),
    #[error("--link {0}")]
    Link(#[from] wirebench_link::spec::SpecError),
    #[error(transparent)]
    Stages(#[from] crate::config::stages::StagesError),
    #[error(transparent)]
    Threshold(#[from] crate::threshold::ThresholdError),
    #[error(transparent)]
    Clock(#[from] crate::stats::ClockError),
    #[error(transparent)]
    Bind(#[from] crate::net::BindError),
    #[error(transparent)]
    Workload(#[from] crate::workload::WorkloadError),
    /// Flags (or a flag and the command) that do not go together; the text says why.
    #[error("{0}")]
    Conflict(&'static str),
    /// Something the command needs and did not get; the text says what.
    #[error("{0}")]
    Needed(&'static str),
    #[error("--{flag} must be at least 1")]
    Zero { flag: &'static str },
    #[error("--{flag} must be positive")]
    NotPositive { flag: &'static str },
    #[error("--{flag} needs at least one value")]
    NoValues { flag: &'static str },
    #[error("--{flag} must not be empty")]
    Empty { flag: &'static str },
    #[error("--{flag} must be between {lo} and {hi}, got {got}")]
    OutOfRange {
        flag: &'static str,
        lo: u64,
        hi: u64,
        got: u64,
    },
    /// One count above another that bounds it (`--conns` above `--clients`, ...).
    #[error("--{flag} {value} exceeds --{bound_flag} {bound}: {why}")]
    Exceeds {
        flag: &'static str,
        value: usize,
        bound_flag: &'static str,
        bound: usize,
        why: &'static str,
    },
    #[error("header {0:?} must be NAME:VALUE")]
    Header(String),

    // files
    #[error("{flag} {}: {source}", path.display())]
    Read {
        flag: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{flag} {}: {size} bytes, more than the {} MiB allowed", path.display(), max >> 20)]
    FileTooLarge {
        flag: &'static str,
        path: PathBuf,
        size: u64,
        max: u64,
    },
    #[error("{flag} {:?}: a file name is needed", path.display())]
    NotAFileName { flag: &'static str, path: PathBuf },
    #[error("{} is given to two flags: each output needs a file of its own", .0.display())]
    SameFile(PathBuf),

    // the load
    #[error(
        "{0:?} looks like a .proto file: give it with --proto-file (--proto chooses the stacks: a \
         comma list of http, h2, grpc and h3, or both)"
    )]
    ProtoFile(String),
    #[error("{0:?}: choose a comma list of http, h2, grpc and h3 (or both, for http,grpc)")]
    UnknownStack(String),
    #[error("{flag} {spec:?}: more than {max} stages")]
    TooManyStages {
        flag: &'static str,
        spec: String,
        max: usize,
    },
    #[error(
        "--warmup runs at the level the first stage starts from, and {flag} starts from 0: begin \
         it with a step (0s:TARGET) or drop --warmup"
    )]
    WarmupFromZero { flag: &'static str },
    #[error("--interval {0:?}: at least 10ms")]
    IntervalTooShort(Duration),
    #[error("--{flag} must be a number of requests per second between 0 and {max}, got {got}")]
    Rate {
        flag: &'static str,
        max: f64,
        got: f64,
    },
    #[error("--fail-if {text:?}: the {stack} stack does not run (--proto)")]
    ThresholdStack { text: String, stack: &'static str },
    #[error("--start-at {at}: more than {hours} h ahead (Unix seconds, not milliseconds)")]
    StartTooFar { at: String, hours: u64 },
    #[error("--agent {0:?}: give a name of 1 to 64 printable characters")]
    AgentName(String),
    #[error("--user {user} has no password: use NAME:PASSWORD or set {env}")]
    NoPassword { user: String, env: &'static str },
    #[error("--metrics-addr {0:?}: expected HOST:PORT (e.g. 127.0.0.1:9090)")]
    MetricsAddr(String),
    #[error("--metrics-addr {addr:?}: {source}")]
    MetricsAddrLookup {
        addr: String,
        source: std::io::Error,
    },
    #[error("--metrics-addr {0:?}: the name has no address")]
    MetricsAddrNone(String),
    #[error("--metrics-linger {0:?}: at most 24h")]
    Linger(Duration),
    #[error(
        "compare needs two or three stacks (--proto http,grpc, http,h2 or http,h2,grpc), not only \
         {0}"
    )]
    OneStack(&'static str),
    #[error("this command has no request-load configuration")]
    NoLoad,

    // etcd
    #[error(
        "--key-size {key_size} cannot hold {key_space_size} distinct keys (needs at least {need})"
    )]
    KeySizeTooSmall {
        key_size: usize,
        key_space_size: u64,
        need: usize,
    },
    #[error("--key-size and --val-size are limited to {MAX_GENERATED} bytes")]
    GeneratedTooLarge,
    #[error("--txn-ops {ops}: between 1 and {max} (etcd's default --max-txn-ops)")]
    TxnOps { ops: usize, max: usize },
    #[error(
        "--key-space-size {key_space_size} is below --txn-ops {ops}: a transaction's keys must be \
         distinct"
    )]
    KeySpaceBelowTxnOps { key_space_size: u64, ops: usize },
    #[error("--rw-ratio {0}: reads per write, a number 0 or more (0: writes only)")]
    RwRatio(f64),
    #[error("--lease-ttl {0}: seconds, between 1 and 9000000000 (etcd's maximum)")]
    LeaseTtl(i64),
    #[error("{flag} {got}: at most {}", i64::MAX)]
    Int64 { flag: &'static str, got: u64 },
    #[error("etcd {0} runs over http and grpc (--proto http, grpc or both), not plain HTTP/2")]
    NoPlainH2(&'static str),
    #[error("etcd serves HTTP/1.1 and gRPC, not HTTP/3: --proto http, grpc or both")]
    EtcdOverH3,
    #[error("--compact-index-delta {0}: a number of revisions, 0 or more")]
    NegativeDelta(i64),
    #[error(
        "{watchers} watchers x {puts} puts is over {max} events (each event's receipt time is \
         kept): fewer watchers or puts"
    )]
    TooManyEvents {
        watchers: usize,
        puts: u64,
        max: u64,
    },
    #[error("too many watchers")]
    TooManyWatchers,
    #[error("--timeout and --connect-timeout must be positive")]
    TimeoutsNotPositive,
    #[error("--key-size must be between 4 and {MAX_GENERATED}")]
    WatchKeySize,
    #[error("--put-rate must be a positive number, got {0}")]
    PutRate(f64),
    #[error("--val-size must be between {stamp} (the send-time stamp) and {MAX_GENERATED}")]
    WatchValSize { stamp: usize },

    // the echo server, URLs and gRPC methods
    #[error(
        "--payload-size {n}: at most {max} bytes (the server takes requests up to {mib} MiB, and \
         a ping goes out as JSON over HTTP)"
    )]
    PingTooLarge { n: u64, max: usize, mib: usize },
    #[error("--addr {addr}: {source}")]
    Addr {
        addr: String,
        source: std::io::Error,
    },
    #[error("--addr {0}: no address")]
    AddrNone(String),
    #[error("--fail-http-status {0}: an error status, 400 to 599")]
    FailHttpStatus(u16),
    #[error("--fail-grpc-code {0}: a gRPC error code, 1 to 16")]
    FailGrpcCode(u32),
    #[error("--ok-status {0:?}: expected CODE or LOW-HIGH between 100 and 599")]
    OkStatus(String),
    #[error("--data-lines {}: no lines", .0.display())]
    NoLines(PathBuf),
    #[error("--targets {}: {what}", path.display())]
    Targets { path: PathBuf, what: String },
    #[error("--data-file {}: not UTF-8 JSON", .0.display())]
    NotUtf8(PathBuf),
    #[error("--data-bin {}: not a {message}: {source}", path.display())]
    NotAMessage {
        path: PathBuf,
        message: String,
        source: prost::DecodeError,
    },

    // payload sweeps
    #[error("--payload-size {n}: at most {max} bytes ({} MiB: {why})", max >> 20)]
    PayloadOverLimit { n: u64, max: u64, why: &'static str },
    #[error("{flag}: the body template has no {mark} for the payload to go in")]
    NoPayloadMark {
        flag: &'static str,
        mark: &'static str,
    },
    #[error("{flag}: the body template has {mark} {count} times: give it once")]
    PayloadMarks {
        flag: &'static str,
        mark: &'static str,
        count: usize,
    },
    #[error(
        "--payload-size fills a field of the request message, which needs its schema: \
         --proto-file FILE or --reflect{}",
        if *.data_bin { " (--data-bin alone has none)" } else { "" }
    )]
    NoSchemaToFill { data_bin: bool },
    /// An echo row's refusal, its payload size named after each `--payload-size`.
    #[error("{}", echo_row(*.size, .source))]
    EchoRow { size: u64, source: Box<ArgError> },
}

/// `source` with the row's size written after each `--payload-size` it names.
fn echo_row(size: u64, source: &ArgError) -> String {
    source
        .to_string()
        .replace("--payload-size", &format!("--payload-size {size}"))
}

/// The reasons the lower layers give as text (config, net, workload, threshold, stats).
impl From<String> for ArgError {
    fn from(reason: String) -> ArgError {
        ArgError::Rejected(reason)
    }
}
