//! Leader discovery for `--target`: asks each member for its status and the member list
//! (through `workload::etcd::client`, over gRPC or the gateway), then selects endpoints and
//! labels roles.
//!
//! `discover` asks every given endpoint (in parallel) for its status — its own member id and the
//! leader it follows — and the first endpoint for the member list, which names every member's
//! client URLs. `select`, `resolve` and `roles` are pure, so every targeting rule is tested on
//! synthetic views. In etcd 3.4 neither call needs an auth token (a token that is given is sent
//! all the same).

use std::future::Future;
use std::io;
use std::time::Duration;

use http::header::HeaderValue;

use crate::config::{Endpoint, Proto};
use crate::net::{H2Config, NetConfig};
use crate::workload::etcd::client::{self, Connection, Member};

/// The targets discovery resolves (plain data, defined with the rest of the configuration).
pub use crate::config::Target;

/// Whether `target` needs to know the cluster's roles before the run.
pub fn needs_discovery(target: Target) -> bool {
    target != Target::First
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
) -> Result<ClusterView, String> {
    if endpoints.is_empty() {
        return Err("no endpoints to discover the cluster through".into());
    }
    if let Some(t) = token {
        HeaderValue::from_str(t)
            .map_err(|_| "the auth token is not a valid header value".to_string())?;
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
            match handle.await {
                Ok(Ok((status, list))) => {
                    statuses.push(status);
                    if let Some(list) = list {
                        members = list;
                    }
                }
                Ok(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                Err(e) => {
                    first_error.get_or_insert(format!("status of {}: {e}", ep.url));
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
) -> Vec<Result<MemberStatus, String>> {
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
        for (p, ep) in probes.into_iter().zip(endpoints) {
            out.push(match p.await {
                Ok(Ok(Ok((status, _)))) => Ok(status),
                Ok(Ok(Err(e))) => {
                    let about = format!("status of {}: ", ep.url);
                    Err(e.strip_prefix(&about).map_or(e.clone(), str::to_string))
                }
                Ok(Err(_)) => Err(format!("no answer within {:?}", limit * 2)),
                Err(e) => Err(e.to_string()),
            });
        }
        out
    })
    .unwrap_or_else(|e| vec![Err(e.to_string()); endpoints.len()])
}

/// One member's answer to a survey, as a run that found nowhere to go reports it:
/// `http://127.0.0.1:2379: member 8e9e05c52164694d, leader none (term 5)`.
pub fn answer_line(ep: &Endpoint, answer: &Result<MemberStatus, String>) -> String {
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
) -> Result<Vec<usize>, String> {
    let live: Vec<&MemberStatus> = statuses.iter().flatten().collect();
    if live.is_empty() {
        return Err("no member answers".into());
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
            let l = leader.ok_or(
                "no leader yet: no answering member leads at the newest term (an election runs)",
            )?;
            Ok(vec![l; current.len()])
        }
        Target::All | Target::Followers => {
            let pool: Vec<usize> = live
                .iter()
                .map(|s| s.endpoint)
                .filter(|&e| target == Target::All || Some(e) != leader)
                .collect();
            if pool.is_empty() {
                return Err("no follower answers".into());
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

    /// The status, and the member list when it was asked for, over one connection.
    async fn run(self, proto: Proto) -> Result<(MemberStatus, Option<Vec<Member>>), String> {
        let ep = &self.ep;
        let mut conn = Connection::open(ep, self.index, proto, &self.net, &self.h2)
            .await
            .map_err(|e| format!("status of {}: connect: {}", ep.url, io_text(&e)))?;
        let limit = self.net.connect_timeout;
        let token = self.token.as_deref();
        let status = bounded(limit, async {
            let s = conn
                .client(&ep.authority, token)
                .status()
                .await
                .map_err(|f| f.to_string())?;
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
                        .map_err(|f| f.to_string())
                })
                .await,
            ),
            Ok(_) => Some(Err(
                "the server closed the connection after the status".into()
            )),
            Err(_) => None,
        };
        conn.close().await;
        let status = status.map_err(|e| format!("status of {}: {e}", ep.url))?;
        let members = members
            .transpose()
            .map_err(|e| format!("member list from {}: {e}", ep.url))?;
        Ok((status, members))
    }
}

/// A checked status: a member that does not say who it is cannot be matched to a leader.
fn member_status(endpoint: usize, s: client::Status) -> Result<MemberStatus, String> {
    if s.member_id == 0 {
        return Err("the response names no member id".into());
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
    fut: impl Future<Output = Result<T, String>>,
) -> Result<T, String> {
    tokio::time::timeout(limit, fut)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {limit:?}")))
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
fn agreed_leader(view: &ClusterView) -> Result<u64, String> {
    let mut leaders = view.statuses.iter().map(|s| s.leader);
    let Some(leader) = leaders.next() else {
        return Err("no member answered with its status".into());
    };
    if leader == 0 || leaders.any(|l| l != leader) {
        return Err("no leader: the members disagree or an election is running".into());
    }
    Ok(leader)
}

/// The given endpoints `target` selects, as indices into `endpoints`. `Leader` fails when the
/// leader is not among them (`resolve` then finds it in the member list).
pub fn select(
    view: &ClusterView,
    endpoints: &[Endpoint],
    target: Target,
) -> Result<Vec<usize>, String> {
    if endpoints.is_empty() {
        return Err("no endpoints".into());
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
                .ok_or_else(|| format!("the leader (member {leader:x}) is not among the endpoints"))
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
                return Err("no follower among the endpoints; give more --endpoints".into());
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
) -> Result<Vec<Endpoint>, String> {
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
) -> Result<Endpoint, String> {
    let member = view
        .members
        .iter()
        .find(|m| m.id == leader)
        .ok_or_else(|| format!("the leader (member {leader:x}) is not in the member list"))?;
    let url = member
        .client_urls
        .first()
        .ok_or_else(|| format!("the leader ({}) has no client URL", describe(member)))?;
    let scheme = match endpoints.first() {
        Some(ep) if ep.tls => "https://",
        _ => "http://",
    };
    let authority = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
    Endpoint::parse(&format!("{scheme}{authority}"))
        .map_err(|e| format!("the leader ({}): {e}", describe(member)))
}

/// `m2, member 8e9e05c52164694d` (the name is empty until a member has started).
fn describe(m: &Member) -> String {
    if m.name.is_empty() {
        format!("member {:x}", m.id)
    } else {
        format!("{}, member {:x}", m.name, m.id)
    }
}

/// The role of each chosen endpoint: "leader" or "follower" by the statuses of the `given`
/// endpoints it is one of; an endpoint not given is the leader found in the member list.
pub fn roles(given: &[Endpoint], chosen: &[Endpoint], view: &ClusterView) -> Vec<String> {
    let leader = view.statuses.first().map(|s| s.leader).unwrap_or_default();
    chosen
        .iter()
        .map(|ep| {
            let status = given
                .iter()
                .position(|g| g.addr == ep.addr)
                .and_then(|i| view.statuses.iter().find(|s| s.endpoint == i));
            match status {
                Some(s) if s.member_id == leader => "leader",
                Some(_) => "follower",
                // not a given endpoint: the leader found in the member list
                None => "leader",
            }
            .to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoints(ports: &[u16]) -> Vec<Endpoint> {
        ports
            .iter()
            .map(|p| Endpoint::parse(&format!("http://127.0.0.1:{p}")).unwrap())
            .collect()
    }

    fn status(endpoint: usize, member_id: u64, leader: u64) -> MemberStatus {
        MemberStatus {
            endpoint,
            member_id,
            leader,
            raft_term: 2,
            is_learner: false,
        }
    }

    /// Members 11, 22, 33 on ports 2001..2003; 22 leads.
    fn members() -> Vec<Member> {
        [(11, 2001), (22, 2002), (33, 2003)]
            .into_iter()
            .map(|(id, port)| Member {
                id,
                name: format!("m{}", id / 11),
                client_urls: vec![format!("http://127.0.0.1:{port}")],
            })
            .collect()
    }

    fn full_view() -> ClusterView {
        ClusterView {
            statuses: vec![status(0, 11, 22), status(1, 22, 22), status(2, 33, 22)],
            members: members(),
        }
    }

    fn ports(eps: &[Endpoint]) -> Vec<u16> {
        eps.iter().map(|e| e.addr.port()).collect()
    }

    #[test]
    fn targets_parse_and_name() {
        for t in [
            Target::Leader,
            Target::Followers,
            Target::All,
            Target::First,
        ] {
            assert_eq!(t.name().parse::<Target>().unwrap(), t);
        }
        let e = "primary".parse::<Target>().unwrap_err().to_string();
        assert!(e.contains("leader, followers, all or first"), "{e}");
        assert!(!needs_discovery(Target::First));
        assert!(needs_discovery(Target::Leader));
        assert!(needs_discovery(Target::Followers));
        assert!(needs_discovery(Target::All));
    }

    #[test]
    fn reroute_follows_the_leader_and_leaves_the_dead() {
        // member 0 (id 11) led and is gone; 22 leads now
        let after = vec![None, Some(status(1, 22, 22)), Some(status(2, 33, 22))];
        assert_eq!(reroute(Target::Leader, &after, &[0]).unwrap(), vec![1]);
        // slots on live members stay; the dead one's slot moves
        assert_eq!(
            reroute(Target::All, &after, &[0, 1, 2]).unwrap(),
            vec![1, 1, 2]
        );
        assert_eq!(
            reroute(Target::Followers, &after, &[0, 2]).unwrap(),
            vec![2, 2]
        );
        // an election: no leader named yet
        let electing = vec![None, Some(status(1, 22, 0)), Some(status(2, 33, 0))];
        assert!(reroute(Target::Leader, &electing, &[0]).is_err());
        // still named, but the named leader does not answer
        let stale = vec![None, Some(status(1, 22, 11)), Some(status(2, 33, 11))];
        assert!(reroute(Target::Leader, &stale, &[0]).is_err());
        // 33 won term 3; 22 has not had its first heartbeat yet
        let at = |endpoint, id, leader, raft_term| {
            Some(MemberStatus {
                raft_term,
                ..status(endpoint, id, leader)
            })
        };
        let won = vec![None, at(1, 22, 0, 3), at(2, 33, 33, 3)];
        assert_eq!(reroute(Target::Leader, &won, &[0]).unwrap(), vec![2]);
        // an old leader cut off at term 2 still says it leads: the term-3 leader does
        let cut_off = vec![at(0, 11, 11, 2), at(1, 22, 33, 3), at(2, 33, 33, 3)];
        assert_eq!(reroute(Target::Leader, &cut_off, &[0]).unwrap(), vec![2]);
        // a member already at term 4 (a new election) outranks the term-3 leader
        let newer = vec![None, at(1, 22, 0, 4), at(2, 33, 33, 3)];
        assert!(reroute(Target::Leader, &newer, &[0]).is_err());
        assert!(reroute(Target::All, &[None, None], &[0, 1]).is_err());
    }

    #[test]
    fn members_list_the_chosen_first_then_every_other() {
        let given = endpoints(&[2001, 2002]);
        let chosen = endpoints(&[2002]);
        assert_eq!(
            ports(&super::members(&given, &chosen, &full_view())),
            [2002, 2001, 2003]
        );
    }

    #[test]
    fn leader_among_the_endpoints() {
        let eps = endpoints(&[2001, 2002, 2003]);
        let view = full_view();
        assert_eq!(select(&view, &eps, Target::Leader).unwrap(), vec![1]);
        assert_eq!(
            ports(&resolve(&eps, Target::Leader, &view).unwrap()),
            [2002]
        );
    }

    #[test]
    fn followers_all_and_first() {
        let eps = endpoints(&[2001, 2002, 2003]);
        let view = full_view();
        assert_eq!(select(&view, &eps, Target::Followers).unwrap(), vec![0, 2]);
        assert_eq!(
            ports(&resolve(&eps, Target::Followers, &view).unwrap()),
            [2001, 2003]
        );
        assert_eq!(
            ports(&resolve(&eps, Target::All, &view).unwrap()),
            [2001, 2002, 2003]
        );
        assert_eq!(ports(&resolve(&eps, Target::First, &view).unwrap()), [2001]);
    }

    #[test]
    fn leader_from_the_member_list() {
        let eps = endpoints(&[2003]);
        let view = ClusterView {
            statuses: vec![status(0, 33, 22)],
            members: members(),
        };
        let e = select(&view, &eps, Target::Leader).unwrap_err();
        assert!(e.contains("not among the endpoints"), "{e}");
        let leader = resolve(&eps, Target::Leader, &view).unwrap();
        assert_eq!(ports(&leader), [2002]);
        assert_eq!(leader[0].url, "http://127.0.0.1:2002");
        assert!(!leader[0].tls);
        assert_eq!(
            ports(&resolve(&eps, Target::Followers, &view).unwrap()),
            [2003]
        );
    }

    #[test]
    fn member_list_url_takes_the_given_scheme() {
        let eps = vec![Endpoint::parse("https://127.0.0.1:2003").unwrap()];
        let view = ClusterView {
            statuses: vec![status(0, 33, 22)],
            members: members(),
        };
        let leader = resolve(&eps, Target::Leader, &view).unwrap();
        assert_eq!(leader[0].url, "https://127.0.0.1:2002");
        assert!(leader[0].tls);
    }

    #[test]
    fn no_leader_when_statuses_disagree_or_name_none() {
        let eps = endpoints(&[2001, 2002]);
        let msg = "no leader: the members disagree or an election is running";
        for statuses in [
            vec![status(0, 11, 22), status(1, 22, 33)],
            vec![status(0, 11, 0), status(1, 22, 0)],
        ] {
            let view = ClusterView {
                statuses,
                members: members(),
            };
            for t in [Target::Leader, Target::Followers] {
                assert_eq!(resolve(&eps, t, &view).unwrap_err(), msg);
            }
            // Neither needs a leader.
            assert_eq!(resolve(&eps, Target::All, &view).unwrap().len(), 2);
            assert_eq!(resolve(&eps, Target::First, &view).unwrap().len(), 1);
        }
    }

    #[test]
    fn no_follower_among_the_endpoints() {
        let eps = endpoints(&[2002]);
        let view = ClusterView {
            statuses: vec![status(0, 22, 22)],
            members: members(),
        };
        assert_eq!(
            resolve(&eps, Target::Followers, &view).unwrap_err(),
            "no follower among the endpoints; give more --endpoints"
        );
    }

    #[test]
    fn leader_missing_from_the_member_list_or_without_url() {
        let eps = endpoints(&[2003]);
        let mut view = ClusterView {
            statuses: vec![status(0, 33, 44)],
            members: members(),
        };
        let e = resolve(&eps, Target::Leader, &view).unwrap_err();
        assert_eq!(e, "the leader (member 2c) is not in the member list");
        view.members.push(Member {
            id: 44,
            name: String::new(),
            client_urls: Vec::new(),
        });
        let e = resolve(&eps, Target::Leader, &view).unwrap_err();
        assert_eq!(e, "the leader (member 2c) has no client URL");
        view.members[3].client_urls.push("unix://etcd.sock".into());
        let e = resolve(&eps, Target::Leader, &view).unwrap_err();
        assert!(e.starts_with("the leader (member 2c): endpoint"), "{e}");
    }

    #[test]
    fn statuses_pointing_past_the_endpoints_are_ignored() {
        let eps = endpoints(&[2001]);
        let view = ClusterView {
            statuses: vec![status(0, 11, 22), status(5, 33, 22)],
            members: members(),
        };
        assert_eq!(select(&view, &eps, Target::Followers).unwrap(), vec![0]);
    }

    #[test]
    fn a_status_without_member_id_is_an_error() {
        let status = |member_id| client::Status {
            member_id,
            leader: 5,
            raft_term: 1,
            is_learner: false,
        };
        assert!(member_status(0, status(0)).is_err());
        assert_eq!(member_status(2, status(9)).unwrap().endpoint, 2);
    }

    #[test]
    fn roles_follow_the_statuses_and_the_member_list() {
        let given = endpoints(&[2001, 2002, 2003]);
        let view = full_view();
        let chosen = resolve(&given, Target::All, &view).unwrap();
        assert_eq!(
            roles(&given, &chosen, &view),
            ["follower", "leader", "follower"]
        );
        // the leader found in the member list is not a given endpoint
        let one = endpoints(&[2003]);
        let view = ClusterView {
            statuses: vec![status(0, 33, 22)],
            members: members(),
        };
        let chosen = resolve(&one, Target::Leader, &view).unwrap();
        assert_eq!(roles(&one, &chosen, &view), ["leader"]);
    }

    #[test]
    fn io_errors_read_as_the_os_says_them() {
        let e = io::Error::from_raw_os_error(libc::ECONNREFUSED);
        assert_eq!(io_text(&e), "connection refused");
        let e = io::Error::other("h2 handshake: no PING answer");
        assert_eq!(io_text(&e), "h2 handshake: no PING answer");
    }
}
