//! What a command learns before it measures — the built-in server's address, the auth token,
//! `--target`'s endpoints, `--server-pid`'s clock, room for its sockets — gathered in `Prepared`.

use std::time::Duration;

use super::RunError;
use crate::config::{Config, Endpoint, EtcdOp, GrpcRequest, GrpcSpec, Target, WorkloadSpec};
use crate::engine;
use crate::etcd::Cluster;
use crate::etcd::compact::Compactor;
use crate::etcd::discover::{self, MemberStatus};
use crate::etcd::lease;
use crate::net;
use crate::report::Report;
use crate::server::{ServeConfig, Server};
use crate::stack::Proto;
use crate::stats::ProtoRun;
use crate::stats::{ClockError, ProcessClock};
use crate::workload::Workload;
use crate::workload::etcd::client;
use crate::workload::grpc;
use crate::workload::reflect::{ReflectError, Reflected};

/// A validated `Config`'s run as it will happen: what was learnt at run time, and the workload
/// rendered for it. The `Config` itself is never changed.
pub struct Prepared {
    /// the endpoints the clients use: the given ones after `--target`, or the built-in server's
    pub endpoints: Vec<Endpoint>,
    /// etcd role of each endpoint ("leader", "follower") when `--target` discovered them
    pub roles: Vec<String>,
    /// the etcd auth token in use (`--user`)
    pub token: Option<String>,
    /// the configuration's workload rendered for `endpoints` with `token`
    pub workload: Workload,
    /// the built-in server when it is the target: its threads' CPU is the server CPU
    pub server: Option<Server>,
    /// `--server-pid`'s CPU clock
    pub clock: Option<ProcessClock>,
    /// etcd with `--target` resolved on a cluster: how the run moves clients off a member that
    /// is gone (or no longer leads)
    pub failover: Option<engine::Failover>,
    /// `--proto h3` on the built-in server: the QUIC client's TLS, trusting its generated
    /// certificate
    pub quic: Option<std::sync::Arc<net::tls::QuicTls>>,
}

impl Prepared {
    /// `cfg`'s workload rendered for `endpoints` with `token`; no server, no clock.
    pub fn new(
        cfg: &Config,
        endpoints: Vec<Endpoint>,
        roles: Vec<String>,
        token: Option<String>,
    ) -> Result<Prepared, RunError> {
        let resolved;
        let spec = match &cfg.spec {
            WorkloadSpec::Grpc(g) if matches!(g.request, GrpcRequest::ByReflection { .. }) => {
                resolved = WorkloadSpec::Grpc(by_reflection(cfg, g, &endpoints)?);
                &resolved
            }
            _ => &cfg.spec,
        };
        let workload = Workload::new(spec, &endpoints, cfg.seed, token.as_deref())
            .map_err(|e| RunError::Setup(e.to_string()))?;
        Ok(Prepared {
            endpoints,
            roles,
            token,
            workload,
            server: None,
            clock: None,
            failover: None,
            quic: None,
        })
    }

    /// Runs one protocol; the server CPU is read from the built-in server's thread clocks, or
    /// from `--server-pid`'s clock. Around the engine's run, outside its figures: etcd
    /// lease-keepalive's leases, one per client, granted before it and revoked after it, and
    /// `--compact-interval`'s compactor running beside it.
    pub fn run_proto(&self, cfg: &Config, proto: Proto) -> Result<ProtoRun, String> {
        self.run_proto_with(cfg, proto, &engine::Taps::default())
    }

    /// `run_proto`, handing the threads' live snapshots and request log rows to `taps`.
    pub fn run_proto_with(
        &self,
        cfg: &Config,
        proto: Proto,
        taps: &engine::Taps,
    ) -> Result<ProtoRun, String> {
        let in_process = self.server.as_ref().map(|s| move || Ok(s.cpu_time()));
        let by_pid = self.clock.map(|c| move || c.read());
        let cpu: Option<&dyn Fn() -> Result<Duration, ClockError>> = match (&in_process, &by_pid) {
            (Some(f), _) => Some(f),
            (None, Some(f)) => Some(f),
            (None, None) => None,
        };
        let cluster = self.cluster(cfg);
        let leased = match cfg.spec {
            WorkloadSpec::Etcd(EtcdOp::LeaseKeepalive { ttl }) => {
                Some(lease::grant(&cluster, cfg.load.clients, ttl).map_err(|e| e.to_string())?)
            }
            _ => None,
        };
        let workload = leased
            .as_ref()
            .map(|(ids, _)| self.workload.with_leases(ids));
        let link = start_link(cfg.link.as_ref(), &self.endpoints, self.members())?;
        let linked;
        let cfg = match (&link, &self.quic) {
            (None, None) => cfg,
            (l, quic) => {
                linked = Config {
                    net: net::NetConfig {
                        link: l.as_ref().map(|l| l.net().clone()).or(cfg.net.link.clone()),
                        quic: quic.clone().or(cfg.net.quic.clone()),
                        ..cfg.net.clone()
                    },
                    ..cfg.clone()
                };
                &linked
            }
        };
        let compactor = match cfg.compact {
            Some(c) => Some(Compactor::start(c, cluster.clone()).map_err(|e| e.to_string())?),
            None => None,
        };
        let run = engine::run_proto_with(
            cfg,
            workload.as_ref().unwrap_or(&self.workload),
            &self.endpoints,
            proto,
            cpu,
            self.failover.as_ref(),
            taps,
        );
        let compaction = compactor.map(Compactor::stop);
        let leases = leased.map(|(ids, ttl)| crate::stats::Leases {
            granted: ids.len() as u64,
            ttl_s: ttl,
            ..lease::revoke(&cluster, &ids)
        });
        let link = link
            .map(wirebench_link::io::Running::finish)
            .transpose()
            .map_err(|e| e.to_string())?;
        let mut run = run.map_err(|e| e.to_string())?;
        run.compaction = compaction;
        run.leases = leases;
        run.link = link;
        Ok(run)
    }

    /// The members a run may use: its endpoints first, then the cluster's others.
    pub fn members(&self) -> &[Endpoint] {
        self.failover
            .as_ref()
            .map_or(&self.endpoints[..], |f| &f.members[..])
    }

    /// Where a run's side calls go (its leases, `--compact-interval`'s compactor): the run's
    /// members, with its settings.
    pub fn cluster(&self, cfg: &Config) -> Cluster {
        Cluster {
            members: self.members().to_vec(),
            net: cfg.net.clone(),
            h2: cfg.h2,
            token: self.token.clone(),
            timeout: cfg.load.timeout,
        }
    }

    /// The report of `runs`, made on these endpoints.
    pub fn report(&self, cfg: &Config, runs: &[ProtoRun]) -> Report {
        Report::new(
            cfg,
            &self.endpoints,
            &self.roles,
            runs,
            self.server.is_some(),
        )
    }
}

/// Prepares a run, call or comparison: starts the built-in server when it is the target
/// (`embedded`), authenticates (`--user`), resolves `--target`, renders the workload, opens
/// `--server-pid`'s clock and raises the open-file limit for the connections.
pub fn prepare(cfg: &Config, embedded: Option<ServeConfig>) -> Result<Prepared, RunError> {
    let server = embedded.map(|s| start_embedded(cfg, s)).transpose()?;
    let given = match &server {
        Some(srv) => vec![
            Endpoint::parse(&format!("http://{}", srv.local_addr()))
                .map_err(|e| RunError::Setup(e.to_string()))?,
        ],
        None => cfg.endpoints.clone(),
    };
    let token = authenticate(cfg, &given)?;
    let (endpoints, roles, members) = if server.is_some() {
        (given, Vec::new(), None)
    } else {
        resolve_target(cfg, given, token.as_deref())?
    };
    let failover = members.map(|m| failover(cfg, m, token.clone()));
    // HTTP/3 to the built-in server: trust the certificate it generated
    let quic = match (&server, &cfg.net.quic) {
        (Some(srv), Some(q)) if cfg.protos.contains(&Proto::H3) => Some(std::sync::Arc::new(
            q.trusting(srv.h3_cert_der().as_ref())
                .map_err(|e| RunError::Setup(e.to_string()))?,
        )),
        _ => None,
    };
    let prepared = Prepared::new(cfg, endpoints, roles, token)?;
    let clock = server_clock(cfg)?;
    ensure_fds(cfg, server.is_some())?;
    Ok(Prepared {
        server,
        clock,
        failover,
        quic,
        ..prepared
    })
}

/// Prepares one sweep row: the open-file limit for it, its `--target` resolved with the
/// sweep's `token`, the workload rendered; `clock` is the sweep's `--server-pid` clock.
pub(super) fn prepare_row(
    cfg: &Config,
    token: Option<&str>,
    clock: Option<ProcessClock>,
) -> Result<Prepared, RunError> {
    ensure_fds(cfg, false)?;
    let (endpoints, roles, members) = resolve_target(cfg, cfg.endpoints.clone(), token)?;
    let failover = members.map(|m| failover(cfg, m, token.map(String::from)));
    let prepared = Prepared::new(cfg, endpoints, roles, token.map(String::from))?;
    Ok(Prepared {
        clock,
        failover,
        ..prepared
    })
}

/// `--server-pid`'s CPU clock, or a one-line error when the process cannot be read.
pub(super) fn server_clock(cfg: &Config) -> Result<Option<ProcessClock>, RunError> {
    cfg.server_pid
        .map(ProcessClock::open)
        .transpose()
        .map_err(|e| RunError::Setup(e.to_string()))
}

/// Raises the open-file limit for the connections a run opens (twice over when the built-in
/// server holds the other ends), or says in one line why it cannot.
fn ensure_fds(cfg: &Config, embedded: bool) -> Result<(), RunError> {
    /// descriptors beyond the connections: runtimes, timers, std streams, the server's listeners
    const SPARE: u64 = 256;
    let needed = cfg
        .protos
        .iter()
        .map(|p| {
            // gRPC keeps a duplicate of each socket for TCP_INFO at close
            let (conns, per_conn) = match p {
                Proto::Http => (cfg.load.clients, 1),
                Proto::H2 | Proto::Grpc | Proto::H3 => (cfg.load.conns.min(cfg.load.clients), 2),
            };
            conns as u64 * (per_conn + u64::from(embedded))
        })
        .max()
        .unwrap_or(0);
    net::raise_nofile(needed + SPARE)
        .map(|_| ())
        .map_err(|e| RunError::Setup(e.to_string()))
}

/// With `--user`: gets an etcd auth token from the first of `endpoints` (over HTTP/1.1 through
/// the gateway when only HTTP/1.1 runs, over gRPC otherwise), to send with every request.
pub(super) fn authenticate(
    cfg: &Config,
    endpoints: &[Endpoint],
) -> Result<Option<String>, RunError> {
    let Some((user, password)) = cfg.auth.clone() else {
        return Ok(None);
    };
    let over = if cfg.protos == [Proto::Http] {
        Proto::Http
    } else {
        Proto::Grpc
    };
    let dial = client::Dial {
        ep: &endpoints[0],
        proto: over,
        net: &cfg.net,
        h2: &cfg.h2,
    };
    let token = client::authenticate(dial, &user, &password);
    token
        .map(Some)
        .map_err(|e| RunError::Setup(format!("authenticate as {user}: {e}")))
}

/// How a run on `members` (its endpoints first) moves its clients: the members are asked for
/// their status again (each bounded by `REDISCOVER_LIMIT`) and `--target` applied anew.
pub(super) fn failover(
    cfg: &Config,
    members: Vec<Endpoint>,
    token: Option<String>,
) -> engine::Failover {
    /// how long a member may take to answer a re-discovery (the run goes on meanwhile)
    const REDISCOVER_LIMIT: Duration = Duration::from_millis(300);
    let (target, net, h2) = (cfg.target, cfg.net.clone(), cfg.h2);
    let over_grpc = cfg.protos.contains(&Proto::Grpc);
    let asked = members.clone();
    engine::Failover {
        members,
        rediscover: Box::new(move |current| {
            let answers = discover::survey(
                &asked,
                over_grpc,
                &net,
                &h2,
                token.as_deref(),
                REDISCOVER_LIMIT,
            );
            let statuses: Vec<Option<MemberStatus>> =
                answers.iter().map(|a| a.as_ref().ok().cloned()).collect();
            let next = discover::reroute(target, &statuses, current).map_err(|e| e.to_string());
            engine::Rediscovery {
                answers: match next {
                    Ok(_) => Vec::new(),
                    Err(_) => asked
                        .iter()
                        .zip(&answers)
                        .map(|(ep, a)| discover::answer_line(ep, a))
                        .collect(),
                },
                next,
            }
        }),
    }
}

/// Resolves `--target` on the `given` endpoints into those the run uses, labelled leader /
/// follower, and (when the cluster answered) every member the run may move clients to. With
/// `all` and several endpoints the labels are a bonus: a discovery failure leaves them out.
#[allow(clippy::type_complexity)]
fn resolve_target(
    cfg: &Config,
    given: Vec<Endpoint>,
    token: Option<&str>,
) -> Result<(Vec<Endpoint>, Vec<String>, Option<Vec<Endpoint>>), RunError> {
    let target = cfg.target;
    if !matches!(cfg.spec, WorkloadSpec::Etcd(_)) {
        return Ok((given, Vec::new(), None));
    }
    if target == Target::First {
        let first = vec![given[0].clone()];
        return Ok((first, Vec::new(), None));
    }
    if target == Target::All && given.len() < 2 {
        return Ok((given, Vec::new(), None));
    }
    let over_grpc = cfg.protos.contains(&Proto::Grpc);
    let view = match discover::discover(&given, over_grpc, &cfg.net, &cfg.h2, token) {
        Ok(v) => v,
        Err(_) if target == Target::All => return Ok((given, Vec::new(), None)),
        Err(e) => return Err(RunError::Setup(format!("--target {}: {e}", target.name()))),
    };
    let chosen = match discover::resolve(&given, target, &view) {
        Ok(c) => c,
        Err(_) if target == Target::All => return Ok((given, Vec::new(), None)),
        Err(e) => return Err(RunError::Setup(format!("--target {}: {e}", target.name()))),
    };
    let roles = discover::roles(&given, &chosen, &view)
        .iter()
        .map(ToString::to_string)
        .collect();
    let members = discover::members(&given, &chosen, &view);
    Ok((chosen, roles, Some(members)))
}

/// `g` with its request encoded through the schema the first endpoint's reflection service
/// gives (setup: outside the figures). A method the schema lacks is a usage error.
fn by_reflection(cfg: &Config, g: &GrpcSpec, endpoints: &[Endpoint]) -> Result<GrpcSpec, RunError> {
    let GrpcRequest::ByReflection { json, .. } = &g.request else {
        return Ok(g.clone());
    };
    let m = reflected_method(cfg, g, endpoints)?;
    let (client_streaming, server_streaming) = grpc::call_kind(&m);
    let (mut all, templated) =
        grpc::encode_messages(&m, json).map_err(|e| RunError::Usage(e.to_string()))?;
    let more = all.split_off(1);
    Ok(GrpcSpec {
        request: GrpcRequest::Encoded(all.swap_remove(0)),
        response: Some(m.output()),
        server_streaming,
        client_streaming,
        more,
        templated,
        ..g.clone()
    })
}

/// The method of `g` (its request `GrpcRequest::ByReflection`) as the first endpoint's
/// reflection service describes it. A method the schema lacks is a usage error.
pub(super) fn reflected_method(
    cfg: &Config,
    g: &GrpcSpec,
    endpoints: &[Endpoint],
) -> Result<prost_reflect::MethodDescriptor, RunError> {
    let GrpcRequest::ByReflection { method, .. } = &g.request else {
        return Err(RunError::Setup(format!(
            "{}: the request is encoded already",
            g.path
        )));
    };
    let Some(endpoint) = endpoints.first() else {
        return Err(RunError::Setup("reflection needs an endpoint".into()));
    };
    let service = grpc::service_of(method).map_err(|e| RunError::Usage(e.to_string()))?;
    let pool = Reflected::new(cfg, g, endpoint)
        .schema(service)
        .map_err(|e| match e {
            ReflectError::UnknownService { .. } => RunError::Usage(e.to_string()),
            _ => RunError::Setup(e.to_string()),
        })?;
    grpc::find_method(&pool, method).map_err(|e| RunError::Usage(e.to_string()))
}

/// Starts the built-in server; with `--link`, on the link's host address (the same for every
/// link this process sets up), where the client's side reaches it.
fn start_embedded(cfg: &Config, serve: ServeConfig) -> Result<Server, RunError> {
    let serve = match &cfg.link {
        Some(_) => {
            let (host, _) =
                wirebench_link::io::addresses().map_err(|e| RunError::Setup(e.to_string()))?;
            ServeConfig {
                addr: std::net::SocketAddr::new(host.into(), serve.addr.port()),
                ..serve
            }
        }
        None => serve,
    };
    Server::start(serve)
        .map_err(|e| RunError::Setup(format!("cannot start the built-in server: {e}")))
}

/// `--link`: sets up a fresh emulated path for one stack's run, and makes sure that every
/// loopback endpoint can be reached through it: a server bound to 127.0.0.1 only cannot (the
/// link reaches the host at its own address), which one line says, with the fix.
pub(super) fn start_link(
    spec: Option<&wirebench_link::spec::LinkSpec>,
    endpoints: &[Endpoint],
    members: &[Endpoint],
) -> Result<Option<wirebench_link::io::Running>, String> {
    let Some(spec) = spec else {
        return Ok(None);
    };
    let link = wirebench_link::io::start(spec).map_err(|e| e.to_string())?;
    let host = link.net().host;
    for e in endpoints.iter().chain(members) {
        if !e.addr.ip().is_loopback() {
            continue;
        }
        let via = std::net::SocketAddr::new(host.into(), e.addr.port());
        let limit = Duration::from_secs(2);
        if std::net::TcpStream::connect_timeout(&via, limit).is_err()
            && std::net::TcpStream::connect_timeout(&e.addr, limit).is_ok()
        {
            return Err(format!(
                "--link: {} listens on {} only, which the link cannot reach (it reaches the host \
                 at {host}); bind the server to 0.0.0.0 (all addresses)",
                e.url,
                e.addr.ip()
            ));
        }
    }
    Ok(Some(link))
}
