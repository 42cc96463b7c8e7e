//! The flags of a load run (`RunArgs`) validated into its `Config`: the load's shape (clients,
//! stages, rate, when it stops), the stacks, the sockets and h2 settings, then who runs it and
//! what it must meet. The checks run in one fixed order, so that of several wrong flags the
//! same one is named every time.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::common::{
    FormatArg, H2ClientArg, HpackArg, IntervalFormatArg, IoLoopArg, LimitArgs, OnOff, PASSWORD_ENV,
    RunArgs, Stacks, TlsArgs, nonzero,
};
use super::error::ArgError;
use crate::client::grpc::H2Config;
use crate::config::stages::Stages;
use crate::config::{
    Config, Endpoint, Format, Interval, Load, MAX_RATE, Staged, Stop, Target, WorkloadSpec,
};
use crate::net::NetConfig;
use crate::stack::Proto;
use crate::threshold::Threshold;
use crate::workload::Workload;
use wirebench_wire::h2::hpack::Strategy;

/// The most stages one list may have.
const MAX_STAGES: usize = 1000;

/// The most clients --client-stages may ask for.
const MAX_STAGED_CLIENTS: f64 = 1_000_000.0;

/// The shape of the load: clients in flight, a pacing rate, stages, and when it stops.
struct Shape {
    clients: usize,
    rate: Option<f64>,
    staged: Option<Staged>,
    /// the stop that stages impose (their sum), before -n / -z are looked at
    staged_stop: Option<Stop>,
}

impl RunArgs {
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
            link: None,
            no_tcp_nodelay: false,
            io_loop: IoLoopArg::Auto,
            udp_offload: OnOff::On,
            sndbuf: None,
            rcvbuf: None,
            initial_window_size: 65_535,
            initial_conn_window_size: 65_535,
            max_frame_size: 16_384,
            quic_stream_window: u64::from(crate::client::grpc::DEFAULT_QUIC_STREAM_WINDOW),
            quic_conn_window: u64::from(crate::client::grpc::DEFAULT_QUIC_CONN_WINDOW),
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
            capacity: Default::default(),
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
    ) -> Result<Config, ArgError> {
        let shape = self.shape()?;
        let clients = shape.clients;
        let conns = nonzero("conns", self.conns)?;
        let pipeline = nonzero("pipeline", self.pipeline)?;
        let threads = match self.limits.threads {
            Some(t) => nonzero("threads", t)?,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        let protos = self.stacks(&spec, &endpoints)?;
        self.check_connections(&protos, clients, conns, pipeline)?;
        let interval = self.interval()?;
        let stop = self.stop(shape.staged_stop)?;
        let net = self.net(&endpoints, protos.contains(&Proto::H3))?;
        let h2 = self.h2()?.for_streams(clients.div_ceil(conns));
        let seed = self.seed.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
        if let Some(pid) = self.server_pid {
            crate::stats::ProcessClock::open(pid)?;
        }
        if self.user.is_some() && matches!(spec, WorkloadSpec::Echo { .. }) {
            return Err(ArgError::Conflict(
                "--user is for etcd; the echo server has no authentication",
            ));
        }
        Workload::check(&spec, &endpoints)?;
        let auth = self.user.as_deref().map(parse_user).transpose()?;
        let thresholds = self.thresholds(&protos)?;
        let capacity = self.capacity.spec(&protos, self.paced_by())?;
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
                rate: shape.rate,
                connect_rate: self.connect_rate,
                stages: shape.staged,
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
            outputs: self.outputs.into_outputs(capacity.is_some())?,
            thresholds,
            capacity,
            auth,
            target,
            link: self.link.as_deref().map(str::parse).transpose()?,
            verify: false,
            compact: None,
        })
    }

    /// `--stages` / `--client-stages`, parsed.
    fn staged(&self) -> Result<Option<Staged>, ArgError> {
        let check = |flag: &'static str, s: &str, st: Stages| {
            if st.stages.len() > MAX_STAGES {
                return Err(ArgError::TooManyStages {
                    flag,
                    spec: s.to_string(),
                    max: MAX_STAGES,
                });
            }
            Ok(Arc::new(st))
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

    /// `-c`, `--rate` and the stages that replace them; a warmup needs a level to run at.
    fn shape(&self) -> Result<Shape, ArgError> {
        let clients = nonzero("clients", self.clients)?;
        let staged = self.staged()?;
        let (mut rate, mut staged_stop) = (self.rate, None);
        let clients = match &staged {
            Some(Staged::Clients(st)) => {
                staged_stop = Some(Stop::Duration(st.total()));
                st.peak() as usize
            }
            Some(Staged::Rate(st)) => {
                staged_stop = Some(Stop::Duration(st.total()));
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
                Staged::Rate(_) => "--stages",
                Staged::Clients(_) => "--client-stages",
            };
            return Err(ArgError::WarmupFromZero { flag });
        }
        Ok(Shape {
            clients,
            rate,
            staged,
            staged_stop,
        })
    }

    /// The stacks to run (`--proto`, or the command's default), and the ones `spec` and the
    /// endpoints cannot take.
    fn stacks(&self, spec: &WorkloadSpec, endpoints: &[Endpoint]) -> Result<Vec<Proto>, ArgError> {
        let any_server = matches!(spec, WorkloadSpec::Http(_));
        let any_method = matches!(spec, WorkloadSpec::Grpc(_));
        let default = if any_server {
            vec![Proto::Http]
        } else if any_method {
            vec![Proto::Grpc]
        } else {
            vec![Proto::Http, Proto::Grpc]
        };
        let protos = self.proto.clone().map_or(default, |s| s.0);
        if any_server && protos.contains(&Proto::Grpc) {
            return Err(ArgError::Conflict(
                "wirebench http measures a URL over HTTP/1.1 and HTTP/2 (--proto http, h2 or \
                 http,h2); for a gRPC method use wirebench grpc",
            ));
        }
        if any_method && protos != [Proto::Grpc] {
            return Err(ArgError::Conflict(
                "wirebench grpc calls a gRPC method (--proto grpc); for an HTTP URL use \
                 wirebench http",
            ));
        }
        if matches!(spec, WorkloadSpec::Etcd(_))
            && protos.contains(&Proto::H2)
            && endpoints.iter().any(|e| !e.tls)
        {
            return Err(ArgError::Conflict(
                "--proto h2 reaches etcd's JSON gateway over TLS only (https:// endpoints, ALPN \
                 h2): etcd 3.4 hands every plaintext HTTP/2 connection to its gRPC server",
            ));
        }
        if protos.contains(&Proto::H2) && self.h2_client != H2ClientArg::Wire {
            return Err(ArgError::Conflict(
                "plain HTTP/2 (--proto h2) runs on the wire client: drop --h2-client h2",
            ));
        }
        Ok(protos)
    }

    /// `--pipeline`, `--requests-per-conn` and `--conns` against the stacks and the clients.
    fn check_connections(
        &self,
        protos: &[Proto],
        clients: usize,
        conns: usize,
        pipeline: usize,
    ) -> Result<(), ArgError> {
        if pipeline > 1 && !protos.contains(&Proto::Http) {
            return Err(ArgError::Conflict(
                "--pipeline is for HTTP/1.1 (--proto http): h2 multiplexes its streams instead",
            ));
        }
        if self.requests_per_conn == Some(0) {
            return Err(ArgError::Zero {
                flag: "requests-per-conn",
            });
        }
        if self.requests_per_conn.is_some() && pipeline > 1 {
            return Err(ArgError::Conflict(
                "--requests-per-conn with --pipeline: a pipelined connection is shared, choose one",
            ));
        }
        if protos.contains(&Proto::Grpc) && conns > clients {
            return Err(ArgError::Exceeds {
                flag: "conns",
                value: conns,
                bound_flag: "clients",
                bound: clients,
                why: "every gRPC connection needs a client",
            });
        }
        Ok(())
    }

    /// `--interval` and its format.
    fn interval(&self) -> Result<Option<Interval>, ArgError> {
        Ok(match self.interval {
            Some(d) if d < Duration::from_millis(10) => {
                return Err(ArgError::IntervalTooShort(d));
            }
            Some(every) => Some(Interval {
                every,
                csv: self.interval_format == IntervalFormatArg::Csv,
            }),
            None => None,
        })
    }

    /// When the run stops (the stages' end, -n or -z), and its timeouts.
    fn stop(&self, staged: Option<Stop>) -> Result<Stop, ArgError> {
        let stop = match (staged, self.limits.total, self.limits.duration) {
            (Some(s), _, _) => s,
            (None, Some(0), _) => return Err(ArgError::Zero { flag: "total" }),
            (None, Some(n), _) => Stop::Total(n),
            (None, None, Some(d)) if d.is_zero() => {
                return Err(ArgError::NotPositive { flag: "duration" });
            }
            (None, None, Some(d)) => Stop::Duration(d),
            (None, None, None) => Stop::Total(10_000),
        };
        if self.limits.timeout.is_zero() {
            return Err(ArgError::NotPositive { flag: "timeout" });
        }
        if self.limits.connect_timeout.is_zero() {
            return Err(ArgError::NotPositive {
                flag: "connect-timeout",
            });
        }
        Ok(stop)
    }

    /// The sockets: rates, source addresses, TLS, buffers.
    fn net(&self, endpoints: &[Endpoint], h3: bool) -> Result<NetConfig, ArgError> {
        for (flag, r) in [("rate", self.rate), ("connect-rate", self.connect_rate)] {
            if let Some(got) = r
                && !(got.is_finite() && got > 0.0 && got <= MAX_RATE)
            {
                return Err(ArgError::Rate {
                    flag,
                    max: MAX_RATE,
                    got,
                });
            }
        }
        let bind = match &self.bind {
            Some(b) => crate::net::parse_bind(b)?,
            None => Vec::new(),
        };
        if endpoints.iter().any(|e| e.unix.is_some()) {
            if h3 {
                return Err(ArgError::Conflict(
                    "a unix:// target has no HTTP/3 (QUIC runs over UDP): --proto http, h2 or grpc",
                ));
            }
            if self.link.is_some() {
                return Err(ArgError::Conflict(
                    "--link and a unix:// target: the emulated path carries IP, not a Unix socket",
                ));
            }
            if !bind.is_empty() {
                return Err(ArgError::Conflict(
                    "--bind and a unix:// target: a Unix socket has no source address",
                ));
            }
        }
        if !bind.is_empty() && self.link.is_some() {
            return Err(ArgError::Conflict(
                "--bind and --link: the link's namespace has one address of its own",
            ));
        }
        if !bind.is_empty()
            && !endpoints.is_empty()
            && endpoints
                .iter()
                .any(|e| !bind.iter().any(|ip| ip.is_ipv4() == e.addr.is_ipv4()))
        {
            return Err(ArgError::Conflict(
                "--bind has no address of an endpoint's family (IPv4 / IPv6)",
            ));
        }
        let tls = self.tls.client(endpoints, h3)?;
        let quic = if h3 {
            Some(self.tls.quic(endpoints)?)
        } else {
            None
        };
        let buf = |flag: &'static str, v: Option<u64>| {
            v.map(|v| u32_in(flag, v, 1, i32::MAX as u64)).transpose()
        };
        Ok(NetConfig {
            tls,
            nodelay: !self.no_tcp_nodelay,
            sndbuf: buf("sndbuf", self.sndbuf)?,
            rcvbuf: buf("rcvbuf", self.rcvbuf)?,
            connect_timeout: self.limits.connect_timeout,
            bind: bind.into(),
            link: None,
            quic,
            udp_offload: self.udp_offload == OnOff::On,
            own_loop: self.io_loop != IoLoopArg::Tokio,
            ring: self.io_loop == IoLoopArg::Auto,
        })
    }

    /// The h2 settings, before they are sized for the streams per connection.
    fn h2(&self) -> Result<H2Config, ArgError> {
        const MAX_WINDOW: u64 = (1 << 31) - 1;
        Ok(H2Config {
            initial_window_size: u32_in(
                "initial-window-size",
                self.initial_window_size,
                1,
                MAX_WINDOW,
            )?,
            initial_conn_window_size: u32_in(
                "initial-conn-window-size",
                self.initial_conn_window_size,
                65_535,
                MAX_WINDOW,
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
            h3: false,
            quic_stream_window: u32_in(
                "quic-stream-window",
                self.quic_stream_window,
                1024,
                (1 << 30) - 1,
            )?,
            quic_conn_window: u32_in(
                "quic-conn-window",
                self.quic_conn_window,
                1024,
                (1 << 30) - 1,
            )?,
            hpack: match self.hpack {
                HpackArg::Index => Strategy::Index,
                HpackArg::Literal => Strategy::Literal,
                HpackArg::Never => Strategy::NeverIndexed,
            },
        })
    }

    /// The flag given that sets the load's pace or length, which a capacity search replaces.
    fn paced_by(&self) -> Option<&'static str> {
        [
            (self.rate.is_some(), "--rate"),
            (self.stages.is_some(), "--stages"),
            (self.client_stages.is_some(), "--client-stages"),
            (self.limits.total.is_some(), "-n"),
            (self.limits.duration.is_some(), "-z"),
            (!self.limits.warmup.is_zero(), "--warmup"),
            (self.start_at.is_some(), "--start-at"),
            (self.interval.is_some(), "--interval"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }

    /// `--fail-if`, parsed; one that names a stack must name one that runs.
    fn thresholds(&self, protos: &[Proto]) -> Result<Vec<Threshold>, ArgError> {
        let thresholds = self
            .fail_if
            .iter()
            .map(|t| Threshold::parse(t))
            .collect::<Result<Vec<_>, _>>()?;
        for t in &thresholds {
            if let Some(stack) = t.stack
                && !protos.iter().any(|p| p.name() == stack)
            {
                return Err(ArgError::ThresholdStack {
                    text: t.text.clone(),
                    stack,
                });
            }
        }
        Ok(thresholds)
    }
}

fn u32_in(flag: &'static str, v: u64, lo: u64, hi: u64) -> Result<u32, ArgError> {
    if v < lo || v > hi {
        return Err(ArgError::OutOfRange {
            flag,
            lo,
            hi,
            got: v,
        });
    }
    Ok(v as u32)
}

/// `--user NAME[:PASSWORD]`, the password from the environment when not given.
fn parse_user(s: &str) -> Result<(String, String), ArgError> {
    let (name, password) = match s.split_once(':') {
        Some((n, p)) => (n.to_string(), p.to_string()),
        None => match std::env::var(PASSWORD_ENV) {
            Ok(p) => (s.to_string(), p),
            Err(_) => {
                return Err(ArgError::NoPassword {
                    user: s.to_string(),
                    env: PASSWORD_ENV,
                });
            }
        },
    };
    if name.is_empty() {
        return Err(ArgError::Needed("--user needs a user name"));
    }
    Ok((name, password))
}

/// `--start-at`: one stack (each has a window of its own, one after the other), and not
/// further ahead than `clock::MAX_START_AHEAD` (a time in the past starts at once, late).
fn check_start_at(
    at: Option<SystemTime>,
    protos: &[Proto],
) -> Result<Option<SystemTime>, ArgError> {
    let Some(at) = at else {
        return Ok(None);
    };
    if protos.len() > 1 {
        return Err(ArgError::Conflict(
            "--start-at aligns one measured window: choose one stack with --proto (run the \
             agents once per stack; compare runs several)",
        ));
    }
    let max = crate::config::clock::MAX_START_AHEAD;
    if at
        .duration_since(SystemTime::now())
        .is_ok_and(|ahead| ahead > max)
    {
        return Err(ArgError::StartTooFar {
            at: crate::config::clock::format_rfc3339(at),
            hours: max.as_secs() / 3600,
        });
    }
    Ok(Some(at))
}

/// `--agent`: a name for a report row, 1 to 64 printable characters.
fn check_agent(name: String) -> Result<String, ArgError> {
    if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
        return Err(ArgError::AgentName(name));
    }
    Ok(name)
}
