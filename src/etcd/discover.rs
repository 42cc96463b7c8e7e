//! Leader discovery for `--target`: asks each member for its status and the member list
//! (through `workload::etcd::client`, over gRPC or the gateway), then selects endpoints and
//! labels roles.
//!
//! `discover` asks every given endpoint (in parallel) for its status — its own member id and the
//! leader it follows — and the first endpoint for the member list, which names every member's
//! client URLs. `select`, `resolve` and `roles` are pure, so every targeting rule is tested on
//! synthetic views. In etcd 3.4 neither call needs an auth token (a token that is given is sent
//! all the same).

use std::fmt;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use http::header::HeaderValue;

use crate::client::RuntimeError;
use crate::client::grpc::H2Config;
use crate::config::Endpoint;
use crate::net::NetConfig;
use crate::outcome::Failure;
use crate::stack::Proto;
use crate::workload::etcd::client::{self, Connection, Dial, Member};

/// The targets discovery resolves (plain data, defined with the rest of the configuration).
pub use crate::config::Target;

/// Whether `target` needs to know the cluster's roles before the run.
pub fn needs_discovery(target: Target) -> bool {
    target != Target::First
}

/// An etcd member's role, as discovery labels the endpoints a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Leader,
    Follower,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Leader => "leader",
            Role::Follower => "follower",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why one member gave no status (or no member list).
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// no connection: the OS's words without their "(os error N)" tail
    #[error("connect: {}", io_text(.0))]
    Connect(io::Error),
    #[error("{0}")]
    Failed(Failure),
    #[error("the response names no member id")]
    NoMemberId,
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("the server closed the connection after the status")]
    ClosedAfterStatus,
    /// the probe's task ended without its answer
    #[error("{0}")]
    Task(tokio::task::JoinError),
    /// no runtime to ask with (shared by every member of a survey)
    #[error("{0}")]
    Runtime(Arc<RuntimeError>),
}

/// Why the cluster could not be discovered: one line, naming the endpoint at fault.
#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    #[error("no endpoints to discover the cluster through")]
    NoEndpoints,
    #[error("the auth token is not a valid header value")]
    Token,
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error("status of {url}: {source}")]
    Status { url: String, source: ProbeError },
    #[error("member list from {url}: {source}")]
    Members { url: String, source: ProbeError },
}

/// Why `--target` selects no endpoint in the cluster as seen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("no endpoints")]
    NoEndpoints,
    #[error("no member answers")]
    NoMemberAnswers,
    #[error("no leader yet: no answering member leads at the newest term (an election runs)")]
    NoLeaderYet,
    #[error("no follower answers")]
    NoFollowerAnswers,
    #[error("no member answered with its status")]
    NoStatus,
    #[error("no leader: the members disagree or an election is running")]
    NoLeader,
    #[error("the leader (member {0:x}) is not among the endpoints")]
    LeaderNotGiven(u64),
    #[error("no follower among the endpoints; give more --endpoints")]
    NoFollower,
    #[error("the leader (member {0:x}) is not in the member list")]
    LeaderNotListed(u64),
    /// `member`: the leader described (`m2, member 8e9e05c52164694d`)
    #[error("the leader ({member}) has no client URL")]
    NoClientUrl { member: String },
    /// the leader's client URL is no endpoint: why, in the configuration's words
    #[error("the leader ({member}): {why}")]
    BadClientUrl { member: String, why: String },
}

/// What one endpoint's Maintenance Status said.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MemberStatus {
    /// index into the endpoints that were asked
    pub endpoint: usize,
    /// the member behind the endpoint
    pub member_id: u64,
    /// the leader it knows of; 0 when it knows none
    pub leader: u64,
    pub raft_term: u64,
    pub is_learner: bool,
}

/// The cluster as seen through the given endpoints.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ClusterView {
    /// one per endpoint, in the endpoints' order
    pub statuses: Vec<MemberStatus>,
    /// the member list, as the first endpoint answered it
    pub members: Vec<Member>,
}

/// Asks every endpoint for its status and the first one for the member list, over gRPC
/// (`over_grpc`) or the JSON gateway, with `token` as etcd auth token when given. Each
/// connection and each call is bounded by the connect timeout. Any endpoint that fails fails
/// the discovery, with one line naming it.
pub fn discover(
    endpoints: &[Endpoint],
    over_grpc: bool,
    net: &NetConfig,
    h2: &H2Config,
    token: Option<&str>,
) -> Result<ClusterView, DiscoverError> {
    if endpoints.is_empty() {
        return Err(DiscoverError::NoEndpoints);
    }
    if let Some(t) = token {
        HeaderValue::from_str(t).map_err(|_| DiscoverError::Token)?;
    }
    let proto = if over_grpc { Proto::Grpc } else { Proto::Http };
    crate::client::block_on(async {
        let probes: Vec<_> = Probe::each(endpoints, net, h2, token, true)
            .map(|probe| tokio::task::spawn_local(probe.run(proto)))
            .collect();
        let mut statuses = Vec::with_capacity(endpoints.len());
        let mut members = Vec::new();
        let mut first_error = None;
        // Every probe is awaited, so the connections that worked are closed cleanly.
        for (handle, ep) in probes.into_iter().zip(endpoints) {
            let status = |source| DiscoverError::Status {
                url: ep.url.clone(),
                source,
            };
            match handle.await {
                Ok((Ok(status), list)) => {
                    statuses.push(status);
                    match list {
                        Some(Ok(list)) => members = list,
                        Some(Err(source)) => {
                            first_error.get_or_insert(DiscoverError::Members {
                                url: ep.url.clone(),
                                source,
                            });
                        }
                        None => {}
                    }
                }
                Ok((Err(e), _)) => {
                    first_error.get_or_insert(status(e));
                }
                Err(e) => {
                    first_error.get_or_insert(status(ProbeError::Task(e)));
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(ClusterView { statuses, members }),
        }
    })?
}

/// Asks every endpoint for its status at once, each bounded by `limit`; an endpoint that does
/// not answer is an error saying why (a member that is gone). For re-discovery during a run.
pub fn survey(
    endpoints: &[Endpoint],
    over_grpc: bool,
    net: &NetConfig,
    h2: &H2Config,
    token: Option<&str>,
    limit: Duration,
) -> Vec<Result<MemberStatus, ProbeError>> {
    let proto = if over_grpc { Proto::Grpc } else { Proto::Http };
    let net = NetConfig {
        connect_timeout: limit,
        ..net.clone()
    };
    crate::client::block_on(async {
        let probes: Vec<_> = Probe::each(endpoints, &net, h2, token, false)
            .map(|probe| {
                tokio::task::spawn_local(async move {
                    tokio::time::timeout(limit * 2, probe.run(proto)).await
                })
            })
            .collect();
        let mut out = Vec::with_capacity(probes.len());
        for p in probes {
            out.push(match p.await {
                Ok(Ok((status, _))) => status,
                Ok(Err(_)) => Err(ProbeError::Timeout(limit * 2)),
                Err(e) => Err(ProbeError::Task(e)),
            });
        }
        out
    })
    .unwrap_or_else(|e| {
        let e = Arc::new(e);
        (0..endpoints.len())
            .map(|_| Err(ProbeError::Runtime(e.clone())))
            .collect()
    })
}

/// One member's answer to a survey, as a run that found nowhere to go reports it:
/// `http://127.0.0.1:2379: member 8e9e05c52164694d, leader none (term 5)`.
pub fn answer_line(ep: &Endpoint, answer: &Result<MemberStatus, ProbeError>) -> String {
    match answer {
        Ok(s) if s.leader == 0 => format!(
            "{}: member {:x}, leader none (term {})",
            ep.url, s.member_id, s.raft_term
        ),
        Ok(s) => format!(
            "{}: member {:x}, leader {:x} (term {})",
            ep.url, s.member_id, s.leader, s.raft_term
        ),
        Err(e) => format!("{}: {e}", ep.url),
    }
}

/// During a run: which member each slot should use now, given each slot's member (`current`,
/// indices into the members `statuses` answer for; `None`: no answer, gone). `Leader`: every
/// slot to the member that says it leads at the highest term an answering member has seen;
/// `All`: a slot stays while its member answers, else moves to an answering member (in turn
/// by slot); `Followers`: the same among the answering members that do not lead.
pub fn reroute(
    target: Target,
    statuses: &[Option<MemberStatus>],
    current: &[usize],
) -> Result<Vec<usize>, TargetError> {
    let live: Vec<&MemberStatus> = statuses.iter().flatten().collect();
    if live.is_empty() {
        return Err(TargetError::NoMemberAnswers);
    }
    // Raft elects at most one leader per term: a member that says it leads, at the highest
    // term any answering member has seen, leads (one still naming no leader at that term has
    // not had the new leader's first heartbeat yet; one at a lower term is behind).
    let leader = {
        let term = live.iter().map(|s| s.raft_term).max().unwrap_or(0);
        live.iter()
            .find(|s| s.raft_term == term && s.leader == s.member_id && !s.is_learner)
            .map(|s| s.endpoint)
    };
    match target {
        Target::First => Ok(current.to_vec()),
        Target::Leader => {
            let l = leader.ok_or(TargetError::NoLeaderYet)?;
            Ok(vec![l; current.len()])
        }
        Target::All | Target::Followers => {
            let pool: Vec<usize> = live
                .iter()
                .map(|s| s.endpoint)
                .filter(|&e| target == Target::All || Some(e) != leader)
                .collect();
            if pool.is_empty() {
                return Err(TargetError::NoFollowerAnswers);
            }
            Ok(current
                .iter()
                .enumerate()
                .map(|(slot, &m)| {
                    if pool.contains(&m) {
                        m
                    } else {
                        pool[slot % pool.len()]
                    }
                })
                .collect())
        }
    }
}

/// Every member a run may move its clients to: `chosen` (the run's endpoints, in order) first,
/// then the other `given` endpoints, then the member list's other client URLs (with the given
/// endpoints' scheme).
pub fn members(given: &[Endpoint], chosen: &[Endpoint], view: &ClusterView) -> Vec<Endpoint> {
    let mut out: Vec<Endpoint> = chosen.to_vec();
    for ep in given {
        if !out.iter().any(|o| o.addr == ep.addr) {
            out.push(ep.clone());
        }
    }
    let scheme = match given.first() {
        Some(ep) if ep.tls => "https://",
        _ => "http://",
    };
    for m in &view.members {
        let Some(url) = m.client_urls.first() else {
            continue;
        };
        let authority = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
        if let Ok(ep) = Endpoint::parse(&format!("{scheme}{authority}"))
            && !out.iter().any(|o| o.addr == ep.addr)
        {
            out.push(ep);
        }
    }
    out
}

/// What one endpoint is asked, owned so it can run as a local task.
struct Probe {
    index: usize,
    ep: Endpoint,
    net: NetConfig,
    h2: H2Config,
    token: Option<String>,
    /// also ask for the member list
    members: bool,
}

impl Probe {
    /// One probe per endpoint; the first also asks for the member list when `members`.
    fn each<'a>(
        endpoints: &'a [Endpoint],
        net: &'a NetConfig,
        h2: &'a H2Config,
        token: Option<&'a str>,
        members: bool,
    ) -> impl Iterator<Item = Probe> + 'a {
        endpoints.iter().enumerate().map(move |(i, ep)| Probe {
            index: i,
            ep: ep.clone(),
            net: net.clone(),
            h2: *h2,
            token: token.map(str::to_string),
            members: members && i == 0,
        })
    }

    /// The status, and the member list when it was asked for (and the status came), over one
    /// connection.
    async fn run(self, proto: Proto) -> (Result<MemberStatus, ProbeError>, Option<Members>) {
        let ep = &self.ep;
        let dial = Dial {
            ep,
            proto,
            net: &self.net,
            h2: &self.h2,
        };
        let mut conn = match Connection::open(dial, self.index).await {
            Ok(c) => c,
            Err(e) => return (Err(ProbeError::Connect(e)), None),
        };
        let limit = self.net.connect_timeout;
        let token = self.token.as_deref();
        let status = bounded(limit, async {
            let s = conn
                .client(&ep.authority, token)
                .status()
                .await
                .map_err(ProbeError::Failed)?;
            member_status(self.index, s)
        })
        .await;
        let members = match status {
            Ok(_) if !self.members => None,
            Ok(_) if conn.reusable() => Some(
                bounded(limit, async {
                    conn.client(&ep.authority, token)
                        .member_list()
                        .await
                        .map_err(ProbeError::Failed)
                })
                .await,
            ),
            Ok(_) => Some(Err(ProbeError::ClosedAfterStatus)),
            Err(_) => None,
        };
        conn.close().await;
        (status, members)
    }
}

/// A member list, or why there is none.
type Members = Result<Vec<Member>, ProbeError>;

/// A checked status: a member that does not say who it is cannot be matched to a leader.
fn member_status(endpoint: usize, s: client::Status) -> Result<MemberStatus, ProbeError> {
    if s.member_id == 0 {
        return Err(ProbeError::NoMemberId);
    }
    Ok(MemberStatus {
        endpoint,
        member_id: s.member_id,
        leader: s.leader,
        raft_term: s.raft_term,
        is_learner: s.is_learner,
    })
}

/// `fut`, or an error once `limit` has passed.
async fn bounded<T>(
    limit: Duration,
    fut: impl Future<Output = Result<T, ProbeError>>,
) -> Result<T, ProbeError> {
    tokio::time::timeout(limit, fut)
        .await
        .unwrap_or(Err(ProbeError::Timeout(limit)))
}

/// The OS's words for an IO error without the "(os error N)" tail, e.g. "connection refused".
fn io_text(e: &io::Error) -> String {
    let mut s = e.to_string();
    if e.raw_os_error().is_some() {
        if let Some(i) = s.find(" (os error ") {
            s.truncate(i);
        }
        if let Some(first) = s.get(..1) {
            s = first.to_ascii_lowercase() + &s[1..];
        }
    }
    s
}

/// The leader every status agrees on.
fn agreed_leader(view: &ClusterView) -> Result<u64, TargetError> {
    let mut leaders = view.statuses.iter().map(|s| s.leader);
    let Some(leader) = leaders.next() else {
        return Err(TargetError::NoStatus);
    };
    if leader == 0 || leaders.any(|l| l != leader) {
        return Err(TargetError::NoLeader);
    }
    Ok(leader)
}

/// The given endpoints `target` selects, as indices into `endpoints`. `Leader` fails when the
/// leader is not among them (`resolve` then finds it in the member list).
pub fn select(
    view: &ClusterView,
    endpoints: &[Endpoint],
    target: Target,
) -> Result<Vec<usize>, TargetError> {
    if endpoints.is_empty() {
        return Err(TargetError::NoEndpoints);
    }
    let given = |s: &&MemberStatus| s.endpoint < endpoints.len();
    match target {
        Target::First => Ok(vec![0]),
        Target::All => Ok((0..endpoints.len()).collect()),
        Target::Leader => {
            let leader = agreed_leader(view)?;
            view.statuses
                .iter()
                .filter(given)
                .find(|s| s.member_id == leader)
                .map(|s| vec![s.endpoint])
                .ok_or(TargetError::LeaderNotGiven(leader))
        }
        Target::Followers => {
            let leader = agreed_leader(view)?;
            let followers: Vec<usize> = view
                .statuses
                .iter()
                .filter(given)
                .filter(|s| s.member_id != leader)
                .map(|s| s.endpoint)
                .collect();
            if followers.is_empty() {
                return Err(TargetError::NoFollower);
            }
            Ok(followers)
        }
    }
}

/// The endpoints a run with `target` uses. `Leader` is the given endpoint that is the leader,
/// or else the leader's first client URL from the member list, with the scheme of the given
/// endpoints.
pub fn resolve(
    endpoints: &[Endpoint],
    target: Target,
    view: &ClusterView,
) -> Result<Vec<Endpoint>, TargetError> {
    if target == Target::Leader {
        let leader = agreed_leader(view)?;
        let given = view
            .statuses
            .iter()
            .find(|s| s.member_id == leader)
            .and_then(|s| endpoints.get(s.endpoint));
        if let Some(ep) = given {
            return Ok(vec![ep.clone()]);
        }
        return leader_from_members(endpoints, view, leader).map(|ep| vec![ep]);
    }
    let picked = select(view, endpoints, target)?;
    Ok(picked.into_iter().map(|i| endpoints[i].clone()).collect())
}

/// The leader's endpoint from the member list.
fn leader_from_members(
    endpoints: &[Endpoint],
    view: &ClusterView,
    leader: u64,
) -> Result<Endpoint, TargetError> {
    let member = view
        .members
        .iter()
        .find(|m| m.id == leader)
        .ok_or(TargetError::LeaderNotListed(leader))?;
    let url = member
        .client_urls
        .first()
        .ok_or_else(|| TargetError::NoClientUrl {
            member: describe(member),
        })?;
    let scheme = match endpoints.first() {
        Some(ep) if ep.tls => "https://",
        _ => "http://",
    };
    let authority = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
    Endpoint::parse(&format!("{scheme}{authority}")).map_err(|why| TargetError::BadClientUrl {
        member: describe(member),
        why: why.to_string(),
    })
}

/// `m2, member 8e9e05c52164694d` (the name is empty until a member has started).
fn describe(m: &Member) -> String {
    if m.name.is_empty() {
        format!("member {:x}", m.id)
    } else {
        format!("{}, member {:x}", m.name, m.id)
    }
}

/// The role of each chosen endpoint: leader or follower by the statuses of the `given`
/// endpoints it is one of; an endpoint not given is the leader found in the member list.
pub fn roles(given: &[Endpoint], chosen: &[Endpoint], view: &ClusterView) -> Vec<Role> {
    let leader = view.statuses.first().map(|s| s.leader).unwrap_or_default();
    chosen
        .iter()
        .map(|ep| {
            let status = given
                .iter()
                .position(|g| g.addr == ep.addr)
                .and_then(|i| view.statuses.iter().find(|s| s.endpoint == i));
            match status {
                Some(s) if s.member_id == leader => Role::Leader,
                Some(_) => Role::Follower,
                // not a given endpoint: the leader found in the member list
                None => Role::Leader,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
