//! The flags and parsers the commands share: run limits, TLS, the load and socket flags, and
//! the checks every number passes.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::client::grpc::{H2Client, H2Config};
use crate::config::{
    Compaction, Config, Endpoint, Format, Load, Proto, Stop, Target, WorkloadSpec, parse_duration,
    parse_size,
};
use crate::net::NetConfig;
use crate::workload::Workload;
use wirebench_wire::h2::hpack::Strategy;

/// The largest key or value wirebench will generate (etcd's own request limit is 1.5 MiB).
pub(super) const MAX_GENERATED: usize = 64 << 20;

/// The highest --rate / --connect-rate accepted (requests or connections per second).
const MAX_RATE: f64 = 10_000_000.0;

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
pub(super) fn parse_target(s: &str) -> Result<Target, String> {
    s.parse()
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
    /// Resume TLS sessions on new connections (rustls' session cache): with off, every
    /// connection makes a full handshake
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub tls_resume: OnOff,
}

impl TlsArgs {
    /// The TLS client for `endpoints`: Some when they are https, None when http; mixing is an error.
    pub(super) fn client(
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
                || self.tls_resume == OnOff::Off
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
            resume: self.tls_resume == OnOff::On,
        })
        .map_err(|e| e.to_string())?;
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
    /// Which stacks to measure, a comma list: http (HTTP/1.1), h2 (plain HTTP/2: h2c with prior
    /// knowledge, or ALPN h2 over TLS), grpc; `both` is http,grpc; several run one after the
    /// other and are compared [default: both; http for `wirebench http`, grpc for `wirebench
    /// grpc`]
    #[arg(long, value_parser = parse_proto_arg)]
    pub proto: Option<Stacks>,
    /// Requests in flight (virtual users)
    #[arg(short = 'c', long, default_value_t = 1)]
    pub clients: usize,
    /// gRPC and plain HTTP/2 TCP connections (clients are spread over them as h2 streams)
    #[arg(long, default_value_t = 1)]
    pub conns: usize,
    /// HTTP/1.1: up to N requests in flight per connection, written together and answered in
    /// order (-c stays the requests in flight: connections = ceil(c / N)); 1 opens one
    /// connection per client
    #[arg(long, default_value_t = 1)]
    pub pipeline: usize,
    /// Close each connection after N requests and open a new one (1: no keepalive); the
    /// connect and TLS handshake are then part of the requests' cost and latency, and no
    /// connection is opened before the start
    #[arg(long)]
    pub requests_per_conn: Option<u64>,
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
    /// Open loop with a moving rate, DURATION:RATE,... (e.g. 10s:1000,30s:5000,10s:0): each
    /// stage ramps linearly from the previous target (0 before the first) to its own; 0s:RATE
    /// is a step. Replaces --rate, -n and -z (the run lasts the stages' sum); --warmup runs
    /// before the first stage at the rate it starts from. -c caps the requests in flight.
    #[arg(long, allow_hyphen_values = true, conflicts_with_all = ["rate", "total", "duration"])]
    pub stages: Option<String>,
    /// Closed loop with a moving number of clients, DURATION:CLIENTS,... (e.g. 10s:50,30s:500):
    /// ramps as --stages; replaces -c, -n and -z. Clients removed on a ramp-down finish their
    /// request first; HTTP/1.1 connections open and close with their clients (their connects
    /// are setup, never request latency)
    #[arg(
        long,
        allow_hyphen_values = true,
        conflicts_with_all = ["rate", "stages", "total", "duration", "clients"]
    )]
    pub client_stages: Option<String>,
    /// Print one line per interval while the run goes (ok, errors, req/s, p50, p99, bytes/s)
    /// on stderr, e.g. 1s
    #[arg(long, value_parser = parse_duration)]
    pub interval: Option<Duration>,
    /// How --interval lines look: plain, or csv (a header line first)
    #[arg(long, value_enum, default_value_t = IntervalFormatArg::Plain, requires = "interval")]
    pub interval_format: IntervalFormatArg,
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
    /// Which h2 client carries gRPC: wirebench's own (wire) or the h2 crate (h2, the
    /// general-purpose reference)
    #[arg(long, value_enum, default_value_t = H2ClientArg::Wire)]
    pub h2_client: H2ClientArg,
    /// How the wire client encodes request headers: index them (one byte each once sent),
    /// literal without indexing, or never-indexed literals
    #[arg(long, value_enum, default_value_t = HpackArg::Index)]
    pub hpack: HpackArg,
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
    /// Begin the measured window at this wall-clock time, RFC 3339 (2025-12-02T10:30:00Z) or
    /// Unix seconds, so that agents on several machines (clocks in sync, e.g. by NTP) measure
    /// together; setup comes first, warmup ends at TIME; an agent whose setup ends later starts
    /// at once and the report says how late. One stack per run
    #[arg(long, value_name = "TIME", value_parser = crate::config::clock::parse_time)]
    pub start_at: Option<std::time::SystemTime>,
    /// This agent's name in a distributed run, recorded in the report (and its row in
    /// `wirebench merge`)
    #[arg(long, value_name = "NAME")]
    pub agent: Option<String>,
    /// Protocol-layer accounting (h2 layers counted by the wire client's codec, or sniffed
    /// with --h2-client h2; HTTP/1.1 head/body split); socket counters and TCP_INFO stay on
    /// either way
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
    #[command(flatten)]
    pub outputs: super::outputs::OutputArgs,
    /// A condition the finished run must meet, e.g. 'p99<5ms', 'errors<0.1%', 'rps>1000',
    /// 'grpc.cpu<20' (repeatable): p50, p90, p99, p999, rps, errors, cpu (µs/request), bytes
    /// (on the wire per request), syscalls (per request), or the dotted path of a numeric field
    /// of a run in the JSON report; prefixed with http., h2. or grpc. it judges that stack only.
    /// A broken threshold exits 3
    #[arg(long = "fail-if", value_name = "THRESHOLD")]
    pub fail_if: Vec<String>,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum OnOff {
    #[default]
    On,
    Off,
}

/// The contents of `path` (given with `flag`), refused above `max` bytes: it is held in memory.
pub(super) fn read_limited(
    flag: &str,
    path: &std::path::Path,
    max: u64,
) -> Result<Vec<u8>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{flag} {}: {e}", path.display()))?;
    if meta.len() > max {
        return Err(format!(
            "{flag} {}: {} bytes, more than the {} MiB allowed",
            path.display(),
            meta.len(),
            max >> 20
        ));
    }
    std::fs::read(path).map_err(|e| format!("{flag} {}: {e}", path.display()))
}

/// `--proto`: a comma list of stacks; a .proto file given here (as ghz and grpcurl users type
/// it) gets a hint.
pub(super) fn parse_proto_arg(s: &str) -> Result<Stacks, String> {
    if s.ends_with(".proto") || s.contains('/') {
        return Err(format!(
            "{s:?} looks like a .proto file: give it with --proto-file (--proto chooses the \
             stacks: a comma list of http, h2 and grpc, or both)"
        ));
    }
    let mut protos = Vec::new();
    for part in s.split(',').map(str::trim) {
        match part {
            "http" => protos.push(Proto::Http),
            "h2" => protos.push(Proto::H2),
            "grpc" => protos.push(Proto::Grpc),
            "both" => protos.extend([Proto::Http, Proto::Grpc]),
            _ => {
                return Err(format!(
                    "{part:?}: choose a comma list of http, h2 and grpc (or both, for http,grpc)"
                ));
            }
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

/// `--start-at`: one stack (each has a window of its own, one after the other), and not
/// further ahead than `clock::MAX_START_AHEAD` (a time in the past starts at once, late).
fn check_start_at(
    at: Option<std::time::SystemTime>,
    protos: &[Proto],
) -> Result<Option<std::time::SystemTime>, String> {
    let Some(at) = at else {
        return Ok(None);
    };
    if protos.len() > 1 {
        return Err(
            "--start-at aligns one measured window: choose one stack with --proto (run the \
             agents once per stack; compare runs several)"
                .into(),
        );
    }
    let max = crate::config::clock::MAX_START_AHEAD;
    if at
        .duration_since(std::time::SystemTime::now())
        .is_ok_and(|ahead| ahead > max)
    {
        return Err(format!(
            "--start-at {}: more than {} h ahead (Unix seconds, not milliseconds)",
            crate::config::clock::format_rfc3339(at),
            max.as_secs() / 3600
        ));
    }
    Ok(Some(at))
}

/// `--agent`: a name for a report row, 1 to 64 printable characters.
fn check_agent(name: String) -> Result<String, String> {
    if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
        return Err(format!(
            "--agent {name:?}: give a name of 1 to 64 printable characters"
        ));
    }
    Ok(name)
}

/// `-H NAME:VALUE` flags, trimmed.
pub(super) fn parse_headers(list: &[String]) -> Result<Vec<(String, String)>, String> {
    list.iter()
        .map(|h| match h.split_once(':') {
            Some((k, v)) if !k.trim().is_empty() => {
                Ok((k.trim().to_string(), v.trim().to_string()))
            }
            _ => Err(format!("header {h:?} must be NAME:VALUE")),
        })
        .collect()
}

pub(super) fn nonzero(name: &str, v: usize) -> Result<usize, String> {
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

pub(super) fn parse_endpoints(list: &[String]) -> Result<Vec<Endpoint>, String> {
    if list.is_empty() {
        return Err("--endpoints needs at least one URL".into());
    }
    list.iter().map(|e| Endpoint::parse(e.trim())).collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IntervalFormatArg {
    Plain,
    Csv,
}

/// The most stages one list may have.
const MAX_STAGES: usize = 1000;

/// The most clients --client-stages may ask for.
const MAX_STAGED_CLIENTS: f64 = 1_000_000.0;

impl RunArgs {
    /// `--stages` / `--client-stages`, parsed.
    fn staged(&self) -> Result<Option<crate::config::Staged>, String> {
        use crate::config::Staged;
        use crate::config::stages::Stages;
        let check = |flag: &str, s: &str, st: Stages| {
            if st.stages.len() > MAX_STAGES {
                return Err(format!("{flag} {s:?}: more than {MAX_STAGES} stages"));
            }
            Ok(std::sync::Arc::new(st))
        };
        Ok(match (&self.stages, &self.client_stages) {
            (Some(s), _) => Some(Staged::Rate(check(
                "--stages",
                s,
                Stages::parse("--stages", s, MAX_RATE, false)?,
            )?)),
            (_, Some(s)) => Some(Staged::Clients(check(
                "--client-stages",
                s,
                Stages::parse("--client-stages", s, MAX_STAGED_CLIENTS, true)?,
            )?)),
            _ => None,
        })
    }

    /// The flags' defaults, for commands that build a run from flags of their own.
    pub(super) fn plain(proto: Stacks, clients: usize, tls: TlsArgs) -> RunArgs {
        RunArgs {
            proto: Some(proto),
            clients,
            conns: 1,
            pipeline: 1,
            requests_per_conn: None,
            limits: LimitArgs::default(),
            rate: None,
            connect_rate: None,
            stages: None,
            client_stages: None,
            interval: None,
            interval_format: IntervalFormatArg::Plain,
            bind: None,
            no_tcp_nodelay: false,
            sndbuf: None,
            rcvbuf: None,
            initial_window_size: 65_535,
            initial_conn_window_size: 65_535,
            max_frame_size: 16_384,
            h2_client: H2ClientArg::Wire,
            hpack: HpackArg::Index,
            max_recv_msg_size: 4 << 20,
            max_body: 64 << 20,
            format: FormatArg::Text,
            output: None,
            seed: None,
            start_at: None,
            agent: None,
            ledger: OnOff::On,
            server_pid: None,
            per_conn: false,
            svg: None,
            outputs: Default::default(),
            fail_if: Vec::new(),
            user: None,
            tls,
        }
    }

    /// The run configuration of these flags for `spec` on `endpoints`, clients sent to `target`.
    pub(super) fn into_config(
        self,
        spec: WorkloadSpec,
        endpoints: Vec<Endpoint>,
        target: Target,
    ) -> Result<Config, String> {
        let clients = nonzero("clients", self.clients)?;
        let staged = self.staged()?;
        let (mut rate, mut stop_staged) = (self.rate, None);
        let clients = match &staged {
            Some(crate::config::Staged::Clients(st)) => {
                stop_staged = Some(Stop::Duration(st.total()));
                st.peak() as usize
            }
            Some(crate::config::Staged::Rate(st)) => {
                stop_staged = Some(Stop::Duration(st.total()));
                rate = Some(st.count() / st.total().as_secs_f64());
                clients
            }
            None => clients,
        };
        if let Some(st) = &staged
            && !self.limits.warmup.is_zero()
            && st.stages().start_level() < 1.0
        {
            let flag = match st {
                crate::config::Staged::Rate(_) => "--stages",
                crate::config::Staged::Clients(_) => "--client-stages",
            };
            return Err(format!(
                "--warmup runs at the level the first stage starts from, and {flag} starts from 0: \
                 begin it with a step (0s:TARGET) or drop --warmup"
            ));
        }
        let conns = nonzero("conns", self.conns)?;
        let pipeline = nonzero("pipeline", self.pipeline)?;
        let threads = match self.limits.threads {
            Some(t) => nonzero("threads", t)?,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        let any_server = matches!(spec, WorkloadSpec::Http(_));
        let any_method = matches!(spec, WorkloadSpec::Grpc(_));
        let default = if any_server {
            vec![Proto::Http]
        } else if any_method {
            vec![Proto::Grpc]
        } else {
            vec![Proto::Http, Proto::Grpc]
        };
        let protos = self.proto.map_or(default, |s| s.0);
        if any_server && protos.contains(&Proto::Grpc) {
            return Err(
                "wirebench http measures a URL over HTTP/1.1 and HTTP/2 (--proto http, h2 or \
                 http,h2); for a gRPC method use wirebench grpc"
                    .into(),
            );
        }
        if any_method && protos != [Proto::Grpc] {
            return Err(
                "wirebench grpc calls a gRPC method (--proto grpc); for an HTTP URL use \
                 wirebench http"
                    .into(),
            );
        }
        if matches!(spec, WorkloadSpec::Etcd(_))
            && protos.contains(&Proto::H2)
            && endpoints.iter().any(|e| !e.tls)
        {
            return Err(
                "--proto h2 reaches etcd's JSON gateway over TLS only (https:// endpoints, ALPN \
                 h2): etcd 3.4 hands every plaintext HTTP/2 connection to its gRPC server"
                    .into(),
            );
        }
        if protos.contains(&Proto::H2) && self.h2_client != H2ClientArg::Wire {
            return Err(
                "plain HTTP/2 (--proto h2) runs on the wire client: drop --h2-client h2".into(),
            );
        }
        if pipeline > 1 && !protos.contains(&Proto::Http) {
            return Err(
                "--pipeline is for HTTP/1.1 (--proto http): h2 multiplexes its streams instead"
                    .into(),
            );
        }
        if self.requests_per_conn == Some(0) {
            return Err("--requests-per-conn must be at least 1".into());
        }
        if self.requests_per_conn.is_some() && pipeline > 1 {
            return Err(
                "--requests-per-conn with --pipeline: a pipelined connection is shared, choose one"
                    .into(),
            );
        }
        if protos.contains(&Proto::Grpc) && conns > clients {
            return Err(format!(
                "--conns {conns} exceeds --clients {clients}: every gRPC connection needs a client"
            ));
        }
        let interval = match self.interval {
            Some(d) if d < Duration::from_millis(10) => {
                return Err(format!("--interval {d:?}: at least 10ms"));
            }
            Some(every) => Some(crate::config::Interval {
                every,
                csv: self.interval_format == IntervalFormatArg::Csv,
            }),
            None => None,
        };
        let stop = match (stop_staged, self.limits.total, self.limits.duration) {
            (Some(s), _, _) => s,
            (None, Some(0), _) => return Err("--total must be at least 1".into()),
            (None, Some(n), _) => Stop::Total(n),
            (None, None, Some(d)) if d.is_zero() => {
                return Err("--duration must be positive".into());
            }
            (None, None, Some(d)) => Stop::Duration(d),
            (None, None, None) => Stop::Total(10_000),
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
            Some(b) => crate::net::parse_bind(b).map_err(|e| e.to_string())?,
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
            // set per run by the engine (the h2 run of a comparison)
            plain: false,
            client: self.h2_client.into(),
            hpack: match self.hpack {
                HpackArg::Index => Strategy::Index,
                HpackArg::Literal => Strategy::Literal,
                HpackArg::Never => Strategy::NeverIndexed,
            },
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
        Workload::check(&spec, &endpoints)?;
        let auth = self.user.as_deref().map(parse_user).transpose()?;
        let thresholds = self
            .fail_if
            .iter()
            .map(|t| crate::threshold::Threshold::parse(t))
            .collect::<Result<Vec<_>, _>>()?;
        for t in &thresholds {
            if let Some(s) = t.stack
                && !protos.iter().any(|p| p.name() == s)
            {
                return Err(format!(
                    "--fail-if {:?}: the {s} stack does not run (--proto)",
                    t.text
                ));
            }
        }
        let start_at = check_start_at(self.start_at, &protos)?;
        let agent = self.agent.map(check_agent).transpose()?;
        Ok(Config {
            endpoints,
            protos,
            load: Load {
                clients,
                conns,
                pipeline,
                requests_per_conn: self.requests_per_conn,
                threads,
                stop,
                warmup: self.limits.warmup,
                start_at,
                timeout: self.limits.timeout,
                rate,
                connect_rate: self.connect_rate,
                stages: staged,
                interval,
            },
            net,
            h2,
            max_body: self.max_body,
            spec,
            seed,
            agent,
            format: match self.format {
                FormatArg::Text => Format::Text,
                FormatArg::Json => Format::Json,
            },
            output: self.output,
            server_pid: self.server_pid,
            per_conn: self.per_conn,
            svg: self.svg,
            outputs: self.outputs.into_outputs()?,
            thresholds,
            auth,
            target,
            verify: false,
            compact: None,
        })
    }
}

/// etcd benchmark's compaction flags, for the runs that write (put, txn-put, txn-mixed) and the
/// watch benchmark's put load.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CompactArgs {
    /// Compact etcd's history every interval while the load runs (etcd benchmark's flag; 0:
    /// never), over gRPC on a connection of its own
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    compact_interval: Option<Duration>,
    /// Each compaction keeps this many revisions: it compacts to (current revision - delta)
    /// [default: 1000]
    #[arg(long, value_name = "REVISIONS", allow_negative_numbers = true)]
    compact_index_delta: Option<i64>,
}

impl CompactArgs {
    /// The validated compaction, None without `--compact-interval` (or with 0).
    pub(super) fn into_config(self) -> Result<Option<Compaction>, String> {
        let delta = self.compact_index_delta.unwrap_or(1000);
        if delta < 0 {
            return Err(format!(
                "--compact-index-delta {delta}: a number of revisions, 0 or more"
            ));
        }
        match self.compact_interval {
            Some(d) if !d.is_zero() => Ok(Some(Compaction {
                interval: d,
                index_delta: delta,
            })),
            _ if self.compact_index_delta.is_some() => {
                Err("--compact-index-delta needs --compact-interval".into())
            }
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
