//! The flags and parsers the commands share: run limits, TLS, the load and socket flags, and
//! the checks every number passes.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::error::ArgError;
use super::heading;
use crate::client::grpc::H2Client;
use crate::config::{Compaction, Endpoint, Target, parse_duration, parse_size};
use crate::stack::Proto;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CallProto {
    Http,
    /// plain HTTP/2 (`call http` only)
    H2,
    Grpc,
}

impl CallProto {
    pub fn proto(self) -> Proto {
        match self {
            CallProto::Http => Proto::Http,
            CallProto::H2 => Proto::H2,
            CallProto::Grpc => Proto::Grpc,
        }
    }
}

/// `--proto` of the load commands: the stacks to measure, in the order they run (HTTP/1.1,
/// HTTP/2, gRPC), each once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stacks(pub Vec<Proto>);

/// `--target`'s value parser.
pub(super) fn parse_target(s: &str) -> Result<Target, ArgError> {
    Ok(s.parse::<Target>()?)
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
#[derive(Debug, Clone, Args, Default)]
pub struct TlsArgs {
    /// CA certificate(s), PEM, to verify the server with
    #[arg(long, help_heading = heading::TLS)]
    pub cacert: Option<PathBuf>,
    /// Client certificate chain, PEM (mutual TLS; with --key)
    #[arg(long, help_heading = heading::TLS)]
    pub cert: Option<PathBuf>,
    /// Client private key, PEM (with --cert)
    #[arg(long, help_heading = heading::TLS)]
    pub key: Option<PathBuf>,
    /// Accept any server certificate (handshake signatures are still checked)
    #[arg(long, help_heading = heading::TLS)]
    pub insecure_skip_verify: bool,
    /// Server name to present and verify instead of the endpoint's host
    #[arg(long, help_heading = heading::TLS)]
    pub sni: Option<String>,
    /// Resume TLS sessions on new connections (rustls' session cache): with off, every
    /// connection makes a full handshake
    #[arg(long, value_enum, default_value_t = OnOff::On, help_heading = heading::TLS)]
    pub tls_resume: OnOff,
    /// Write every connection's TLS secrets to FILE (NSS key log format, as SSLKEYLOGFILE), so
    /// that a capture can be decrypted (TLS over TCP and QUIC alike)
    #[arg(long, value_name = "FILE", help_heading = heading::TLS)]
    pub tls_keylog: Option<PathBuf>,
}

impl TlsArgs {
    /// The TLS client for `endpoints`: Some when they are https, None when http; mixing is an error.
    pub(super) fn client(
        &self,
        endpoints: &[Endpoint],
        h3: bool,
    ) -> Result<Option<std::sync::Arc<crate::net::tls::TlsClient>>, ArgError> {
        let https = endpoints.iter().filter(|e| e.tls).count();
        // HTTP/3 is always TLS: its flags hold whatever the endpoints' scheme
        if https == 0 && h3 {
            return Ok(None);
        }
        if https == 0 {
            if self.cacert.is_some()
                || self.cert.is_some()
                || self.key.is_some()
                || self.sni.is_some()
                || self.insecure_skip_verify
                || self.tls_resume == OnOff::Off
                || self.tls_keylog.is_some()
            {
                return Err(ArgError::Conflict("TLS flags need https:// endpoints"));
            }
            return Ok(None);
        }
        if https != endpoints.len() {
            return Err(ArgError::Conflict("endpoints mix http:// and https://"));
        }
        let keylog = self.keylog()?;
        let client =
            crate::net::tls::TlsClient::new(&self.options(), keylog).map_err(|e| e.to_string())?;
        Ok(Some(std::sync::Arc::new(client)))
    }

    fn options(&self) -> crate::net::tls::TlsOptions {
        crate::net::tls::TlsOptions {
            cacert: self.cacert.clone(),
            cert: self.cert.clone(),
            key: self.key.clone(),
            insecure_skip_verify: self.insecure_skip_verify,
            sni: self.sni.clone(),
            resume: self.tls_resume == OnOff::On,
        }
    }

    fn keylog(&self) -> Result<Option<std::sync::Arc<crate::net::keylog::KeyLogFile>>, ArgError> {
        self.tls_keylog
            .as_deref()
            .map(|p| {
                crate::net::keylog::KeyLogFile::create(p)
                    .map_err(|e| ArgError::Rejected(format!("--tls-keylog {}: {e}", p.display())))
            })
            .transpose()
    }

    /// The QUIC client's TLS (`--proto h3`): built now for given endpoints; for the built-in
    /// server (no endpoints) completed when it runs, trusting its generated certificate.
    pub(super) fn quic(
        &self,
        endpoints: &[Endpoint],
    ) -> Result<std::sync::Arc<crate::net::tls::QuicTls>, ArgError> {
        let quic = crate::net::tls::QuicTls::new(self.options(), self.keylog()?);
        if endpoints.is_empty() {
            return Ok(std::sync::Arc::new(quic));
        }
        Ok(std::sync::Arc::new(
            quic.trusting(None)
                .map_err(|e| ArgError::Rejected(e.to_string()))?,
        ))
    }
}

/// How long a run (or each sweep row) lasts, its timeouts and threads.
#[derive(Debug, Args)]
pub struct LimitArgs {
    /// Total measured requests (default 10000 unless --duration is given)
    #[arg(short = 'n', long, conflicts_with = "duration", help_heading = heading::LOAD)]
    pub total: Option<u64>,
    /// Run for this long instead of a total (e.g. 10s, 1m)
    #[arg(short = 'z', long, value_parser = parse_duration, help_heading = heading::LOAD)]
    pub duration: Option<Duration>,
    /// Send requests for this long first and leave them out of the figures
    #[arg(long, value_parser = parse_duration, default_value = "0s", help_heading = heading::LOAD)]
    pub warmup: Duration,
    /// Per-request timeout
    #[arg(long, value_parser = parse_duration, default_value = "20s", help_heading = heading::LOAD)]
    pub timeout: Duration,
    /// TCP connect timeout
    #[arg(
        long,
        value_parser = parse_duration,
        default_value = "5s",
        help_heading = heading::CONNECTIONS
    )]
    pub connect_timeout: Duration,
    /// Worker threads, each with its own runtime (default: number of cores)
    #[arg(long, help_heading = heading::LOAD)]
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
    /// Which stacks to measure, a comma list: http (HTTP/1.1), h2 (plain HTTP/2: h2c with prior
    /// knowledge, or ALPN h2 over TLS), grpc, h3 (HTTP/3 over QUIC, always TLS: --cacert or
    /// --insecure-skip-verify unless the target is the built-in server); `both` is http,grpc;
    /// several run one after the
    /// other and are compared [default: both; http for `wirebench http`, grpc for `wirebench
    /// grpc`]
    #[arg(long, value_parser = parse_proto_arg, help_heading = heading::LOAD)]
    pub proto: Option<Stacks>,
    /// Requests in flight (virtual users)
    #[arg(short = 'c', long, default_value_t = 1, help_heading = heading::LOAD)]
    pub clients: usize,
    /// gRPC and plain HTTP/2 TCP connections (clients are spread over them as h2 streams)
    #[arg(long, default_value_t = 1, help_heading = heading::CONNECTIONS)]
    pub conns: usize,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Open loop: send this many requests per second over all clients on a fixed schedule;
    /// latency counts from each request's intended send time (coordinated omission corrected)
    /// and -c caps the requests in flight
    #[arg(long, help_heading = heading::LOAD)]
    pub rate: Option<f64>,
    /// Open loop with a moving rate, DURATION:RATE,... (e.g. 10s:1000,30s:5000,10s:0): each
    /// stage ramps linearly from the previous target (0 before the first) to its own; 0s:RATE
    /// is a step. Replaces --rate, -n and -z (the run lasts the stages' sum); --warmup runs
    /// before the first stage at the rate it starts from. -c caps the requests in flight.
    #[arg(
        long,
        allow_hyphen_values = true,
        conflicts_with_all = ["rate", "total", "duration"],
        help_heading = heading::LOAD
    )]
    pub stages: Option<String>,
    /// Closed loop with a moving number of clients, DURATION:CLIENTS,... (e.g. 10s:50,30s:500):
    /// ramps as --stages; replaces -c, -n and -z. Clients removed on a ramp-down finish their
    /// request first; HTTP/1.1 connections open and close with their clients (their connects
    /// are setup, never request latency)
    #[arg(
        long,
        allow_hyphen_values = true,
        conflicts_with_all = ["rate", "stages", "total", "duration", "clients"],
        help_heading = heading::LOAD
    )]
    pub client_stages: Option<String>,
    /// Seed for generated keys and values (default: from the clock)
    #[arg(long, help_heading = heading::LOAD)]
    pub seed: Option<u64>,
    /// Close each connection after N requests and open a new one (1: no keepalive); the
    /// connect and TLS handshake are then part of the requests' cost and latency, and no
    /// connection is opened before the start
    #[arg(long, help_heading = heading::CONNECTIONS)]
    pub requests_per_conn: Option<u64>,
    /// Open the connections at this many per second (a ramp) instead of all at once
    #[arg(long, help_heading = heading::CONNECTIONS)]
    pub connect_rate: Option<f64>,
    /// Source addresses for connections, used in turn: addresses and IPv4 ranges,
    /// comma-separated (127.0.0.1-127.0.0.8): more connections than one address has ports
    #[arg(long, help_heading = heading::CONNECTIONS)]
    pub bind: Option<String>,
    /// Run through an emulated network path (comma-separated): rtt=40ms or delay=20ms,
    /// jitter=2ms, loss=1%, burst=P/R (Gilbert–Elliott), rate=100mbit, queue=100 or 256k;
    /// -up / -down for one direction (loss-up=1%); docs/link.md
    #[arg(long, value_name = "SPEC", help_heading = heading::CONNECTIONS)]
    pub link: Option<String>,
    /// UDP offloads for HTTP/3 (GSO sends, GRO receives; and the built-in server's GSO): off,
    /// one datagram per syscall each way
    #[arg(long, value_enum, default_value_t = OnOff::On, help_heading = heading::CONNECTIONS)]
    pub udp_offload: OnOff,
    /// How HTTP/1.1 clients wait for their sockets: auto puts a thread's clients over plain
    /// sockets (closed loop, no TLS, stages, failover, credentials or --requests-per-conn) on
    /// one loop of its own, reading through an io_uring where the kernel has one with deferred
    /// task work (Linux 6.1+) and the thread has 16 connections or fewer (pipelined
    /// connections, more connections and older kernels: epoll); epoll: that loop on epoll
    /// always; tokio keeps a runtime task per client always
    #[arg(long, value_enum, default_value_t = IoLoopArg::Auto, help_heading = heading::CONNECTIONS)]
    pub io_loop: IoLoopArg,
    /// Leave Nagle's algorithm on (TCP_NODELAY is set by default)
    #[arg(long, help_heading = heading::CONNECTIONS)]
    pub no_tcp_nodelay: bool,
    /// SO_SNDBUF for every connection (e.g. 64k)
    #[arg(long, value_parser = parse_size, help_heading = heading::CONNECTIONS)]
    pub sndbuf: Option<u64>,
    /// SO_RCVBUF for every connection
    #[arg(long, value_parser = parse_size, help_heading = heading::CONNECTIONS)]
    pub rcvbuf: Option<u64>,
    /// HTTP/1.1: up to N requests in flight per connection, written together and answered in
    /// order (-c stays the requests in flight: connections = ceil(c / N)); 1 opens one
    /// connection per client
    #[arg(long, default_value_t = 1, help_heading = heading::HTTP1)]
    pub pipeline: usize,
    /// Largest HTTP/1.1 response body accepted
    #[arg(long, value_parser = parse_size, default_value = "64M", help_heading = heading::HTTP1)]
    pub max_body: u64,
    /// h2 initial stream window (SETTINGS_INITIAL_WINDOW_SIZE)
    #[arg(long, value_parser = parse_size, default_value = "65535", help_heading = heading::HTTP2)]
    pub initial_window_size: u64,
    /// h2 initial connection window
    #[arg(long, value_parser = parse_size, default_value = "65535", help_heading = heading::HTTP2)]
    pub initial_conn_window_size: u64,
    /// h2 SETTINGS_MAX_FRAME_SIZE (16k to 16M-1)
    #[arg(long, value_parser = parse_size, default_value = "16384", help_heading = heading::HTTP2)]
    pub max_frame_size: u64,
    /// QUIC's receive window per stream (--proto h3)
    #[arg(long, value_parser = parse_size, default_value = "1250000", help_heading = heading::HTTP2)]
    pub quic_stream_window: u64,
    /// QUIC's receive window per connection (--proto h3)
    #[arg(long, value_parser = parse_size, default_value = "1875000", help_heading = heading::HTTP2)]
    pub quic_conn_window: u64,
    /// Which h2 client carries gRPC: wirebench's own (wire) or the h2 crate (h2, the
    /// general-purpose reference)
    #[arg(long, value_enum, default_value_t = H2ClientArg::Wire, help_heading = heading::HTTP2)]
    pub h2_client: H2ClientArg,
    /// How the wire client encodes request headers: index them (one byte each once sent),
    /// literal without indexing, or never-indexed literals
    #[arg(long, value_enum, default_value_t = HpackArg::Index, help_heading = heading::HTTP2)]
    pub hpack: HpackArg,
    /// Largest gRPC response message accepted
    #[arg(long, value_parser = parse_size, default_value = "4M", help_heading = heading::HTTP2)]
    pub max_recv_msg_size: u64,
    #[command(flatten)]
    pub tls: TlsArgs,
    /// etcd user, NAME[:PASSWORD]; without a password it is read from $WIREBENCH_ETCD_PASSWORD
    #[arg(long, help_heading = heading::ETCD)]
    pub user: Option<String>,
    /// Report format
    #[arg(long, value_enum, default_value_t = FormatArg::Text, help_heading = heading::OUTPUT)]
    pub format: FormatArg,
    /// Write the report to this file instead of stdout
    #[arg(short = 'o', long, help_heading = heading::OUTPUT)]
    pub output: Option<PathBuf>,
    /// Print one line per interval while the run goes (ok, errors, req/s, p50, p99, bytes/s)
    /// on stderr, e.g. 1s
    #[arg(long, value_parser = parse_duration, help_heading = heading::OUTPUT)]
    pub interval: Option<Duration>,
    /// How --interval lines look: plain, or csv (a header line first)
    #[arg(
        long,
        value_enum,
        default_value_t = IntervalFormatArg::Plain,
        requires = "interval",
        help_heading = heading::OUTPUT
    )]
    pub interval_format: IntervalFormatArg,
    /// Also print the per-connection ledger table (always in JSON)
    #[arg(long, help_heading = heading::OUTPUT)]
    pub per_conn: bool,
    /// Write a chart of the headline figures, HTTP/1.1 next to gRPC, as SVG
    #[arg(long, help_heading = heading::OUTPUT)]
    pub svg: Option<PathBuf>,
    #[command(flatten)]
    pub outputs: super::outputs::OutputArgs,
    /// Protocol-layer accounting (h2 layers counted by the wire client's codec, or sniffed
    /// with --h2-client h2; HTTP/1.1 head/body split); socket counters and TCP_INFO stay on
    /// either way
    #[arg(long, value_enum, default_value_t = OnOff::On, help_heading = heading::MEASUREMENT)]
    pub ledger: OnOff,
    /// Report this server process's CPU per request (from /proc/PID/stat)
    #[arg(long, help_heading = heading::MEASUREMENT)]
    pub server_pid: Option<u32>,
    /// A condition the finished run must meet, e.g. 'p99<5ms', 'errors<0.1%', 'rps>1000',
    /// 'grpc.cpu<20' (repeatable): p50, p90, p99, p999, rps, errors, cpu (µs/request), bytes
    /// (on the wire per request), syscalls (per request), or the dotted path of a numeric field
    /// of a run in the JSON report; prefixed with http., h2. or grpc. it judges that stack only.
    /// A broken threshold exits 3
    #[arg(long = "fail-if", value_name = "THRESHOLD", help_heading = heading::THRESHOLDS)]
    pub fail_if: Vec<String>,
    #[command(flatten)]
    pub capacity: super::capacity::CapacityArgs,
    /// Begin the measured window at this wall-clock time, RFC 3339 (2025-12-02T10:30:00Z) or
    /// Unix seconds, so that agents on several machines (clocks in sync, e.g. by NTP) measure
    /// together; setup comes first, warmup ends at TIME; an agent whose setup ends later starts
    /// at once and the report says how late. One stack per run
    #[arg(
        long,
        value_name = "TIME",
        value_parser = crate::config::clock::parse_time,
        help_heading = heading::DISTRIBUTED
    )]
    pub start_at: Option<std::time::SystemTime>,
    /// This agent's name in a distributed run, recorded in the report (and its row in
    /// `wirebench merge`)
    #[arg(long, value_name = "NAME", help_heading = heading::DISTRIBUTED)]
    pub agent: Option<String>,
}

/// The environment variable a password comes from when `--user` has none.
pub const PASSWORD_ENV: &str = "WIREBENCH_ETCD_PASSWORD";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum H2ClientArg {
    Wire,
    H2,
}

impl From<H2ClientArg> for H2Client {
    fn from(a: H2ClientArg) -> H2Client {
        match a {
            H2ClientArg::Wire => H2Client::Wire,
            H2ClientArg::H2 => H2Client::H2,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HpackArg {
    Index,
    Literal,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IoLoopArg {
    Auto,
    Epoll,
    Tokio,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum OnOff {
    #[default]
    On,
    Off,
}

/// The contents of `path` (given with `flag`), refused above `max` bytes: it is held in memory.
pub(super) fn read_limited(
    flag: &'static str,
    path: &std::path::Path,
    max: u64,
) -> Result<Vec<u8>, ArgError> {
    let failed = |source| ArgError::Read {
        flag,
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(failed)?;
    if meta.len() > max {
        return Err(ArgError::FileTooLarge {
            flag,
            path: path.to_path_buf(),
            size: meta.len(),
            max,
        });
    }
    std::fs::read(path).map_err(failed)
}

/// `--proto`: a comma list of stacks; a .proto file given here (as ghz and grpcurl users type
/// it) gets a hint.
pub(super) fn parse_proto_arg(s: &str) -> Result<Stacks, ArgError> {
    if s.ends_with(".proto") || s.contains('/') {
        return Err(ArgError::ProtoFile(s.to_string()));
    }
    let mut protos = Vec::new();
    for part in s.split(',').map(str::trim) {
        match part {
            "http" => protos.push(Proto::Http),
            "h2" => protos.push(Proto::H2),
            "grpc" => protos.push(Proto::Grpc),
            "h3" => protos.push(Proto::H3),
            "both" => protos.extend([Proto::Http, Proto::Grpc]),
            _ => return Err(ArgError::UnknownStack(part.to_string())),
        }
    }
    protos.sort_unstable();
    protos.dedup();
    Ok(Stacks(protos))
}

impl From<ProtoArg> for Stacks {
    fn from(p: ProtoArg) -> Stacks {
        Stacks(match p {
            ProtoArg::Http => vec![Proto::Http],
            ProtoArg::Grpc => vec![Proto::Grpc],
            ProtoArg::Both => vec![Proto::Http, Proto::Grpc],
        })
    }
}

/// `-H NAME:VALUE` flags, trimmed.
pub(super) fn parse_headers(list: &[String]) -> Result<Vec<(String, String)>, ArgError> {
    list.iter()
        .map(|h| match h.split_once(':') {
            Some((k, v)) if !k.trim().is_empty() => {
                Ok((k.trim().to_string(), v.trim().to_string()))
            }
            _ => Err(ArgError::Header(h.clone())),
        })
        .collect()
}

/// `v`, which `--{flag}` gave, when it is 1 or more.
pub(super) fn nonzero(flag: &'static str, v: usize) -> Result<usize, ArgError> {
    if v == 0 {
        Err(ArgError::Zero { flag })
    } else {
        Ok(v)
    }
}

/// `--endpoints` (or a target URL), each parsed.
pub(super) fn parse_endpoints(list: &[String]) -> Result<Vec<Endpoint>, ArgError> {
    if list.is_empty() {
        return Err(ArgError::Needed("--endpoints needs at least one URL"));
    }
    Ok(list
        .iter()
        .map(|e| Endpoint::parse(e.trim()))
        .collect::<Result<_, _>>()?)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IntervalFormatArg {
    Plain,
    Csv,
}

/// etcd benchmark's compaction flags, for the runs that write (put, txn-put, txn-mixed) and the
/// watch benchmark's put load.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CompactArgs {
    /// Compact etcd's history every interval while the load runs (etcd benchmark's flag; 0:
    /// never), over gRPC on a connection of its own
    #[arg(
        long,
        value_parser = parse_duration,
        value_name = "DURATION",
        help_heading = heading::ETCD
    )]
    compact_interval: Option<Duration>,
    /// Each compaction keeps this many revisions: it compacts to (current revision - delta)
    /// [default: 1000]
    #[arg(
        long,
        value_name = "REVISIONS",
        allow_negative_numbers = true,
        help_heading = heading::ETCD
    )]
    compact_index_delta: Option<i64>,
}

impl CompactArgs {
    /// The validated compaction, None without `--compact-interval` (or with 0).
    pub(super) fn into_config(self) -> Result<Option<Compaction>, ArgError> {
        let delta = self.compact_index_delta.unwrap_or(1000);
        if delta < 0 {
            return Err(ArgError::NegativeDelta(delta));
        }
        match self.compact_interval {
            Some(d) if !d.is_zero() => Ok(Some(Compaction {
                interval: d,
                index_delta: delta,
            })),
            _ if self.compact_index_delta.is_some() => Err(ArgError::Needed(
                "--compact-index-delta needs --compact-interval",
            )),
            _ => Ok(None),
        }
    }
}

/// A sweep's table format (`sweep ... --format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TableArg {
    Markdown,
    Csv,
    Json,
}
