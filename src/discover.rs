//! Leader discovery for `--target`: each member's status and the member list, over gRPC or JSON.
//!
//! `discover` asks every given endpoint (in parallel) for its status — its own member id and the
//! leader it follows — and the first endpoint for the member list, which names every member's
//! client URLs. `resolve` then picks the endpoints a run should use; it is pure, so every
//! targeting rule is tested on synthetic views. In etcd 3.4 neither call needs an auth token
//! (a token that is given is sent all the same).

use std::future::Future;
use std::io;
use std::time::Duration;

use bytes::BytesMut;
use http::Uri;
use http::header::{HeaderName, HeaderValue};
use prost::Message;
use serde::{Deserialize, Deserializer};

use crate::client::grpc::{self, Call};
use crate::client::http1;
use crate::config::Endpoint;
use crate::net::{H2Config, Layers, NetConfig};
use crate::outcome::FailureKind;
use wirebench_wire::grpc as grpc_wire;
use wirebench_wire::http1::RequestTemplate;
use wirebench_wire::json::GwError;
use wirebench_wire::proto::etcd::{
    MemberListRequest, MemberListResponse, StatusRequest, StatusResponse,
};

/// The targets discovery resolves (plain data, defined with the rest of the configuration).
pub use crate::config::Target;

/// gRPC method of etcd's status call.
const STATUS_GRPC: &str = "/etcdserverpb.Maintenance/Status";
/// gRPC method of etcd's member list.
const MEMBER_LIST_GRPC: &str = "/etcdserverpb.Cluster/MemberList";
/// Gateway path of the status call.
const STATUS_HTTP: &str = "/v3/maintenance/status";
/// Gateway path of the member list.
const MEMBER_LIST_HTTP: &str = "/v3/cluster/member/list";
/// Largest status or member list response accepted (a few hundred bytes per member).
const MAX_RESPONSE: usize = 1 << 20;
/// How long a closing gRPC connection waits for its streams.
const CLOSE_LINGER: Duration = Duration::from_secs(1);

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

/// One member as the member list names it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MemberInfo {
    pub id: u64,
    /// empty until the member has started
    pub name: String,
    pub client_urls: Vec<String>,
}

/// The cluster as seen through the given endpoints.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ClusterView {
    /// one per endpoint, in the endpoints' order
    pub statuses: Vec<MemberStatus>,
    /// the member list, as the first endpoint answered it
    pub members: Vec<MemberInfo>,
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
    let auth = token.map(Auth::new).transpose()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    let local = tokio::task::LocalSet::new();
    // Discovery is not measured: no h2 frame sniffing.
    let h2 = H2Config {
        ledger: false,
        ..*h2
    };
    local.block_on(&rt, async {
        let probes: Vec<_> = endpoints
            .iter()
            .enumerate()
            .map(|(i, ep)| {
                let probe = Probe {
                    index: i,
                    ep: ep.clone(),
                    net: net.clone(),
                    h2,
                    auth: auth.clone(),
                    members: i == 0,
                };
                tokio::task::spawn_local(probe.run(over_grpc))
            })
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
    })
}

/// The auth token as gRPC metadata and as the gateway's header value.
#[derive(Debug, Clone)]
struct Auth {
    token: String,
    metadata: HeaderValue,
}

impl Auth {
    fn new(token: &str) -> Result<Auth, String> {
        let metadata = HeaderValue::from_str(token)
            .map_err(|_| "the auth token is not a valid header value".to_string())?;
        Ok(Auth {
            token: token.to_string(),
            metadata,
        })
    }
}

/// What one endpoint is asked, owned so it can run as a local task.
struct Probe {
    index: usize,
    ep: Endpoint,
    net: NetConfig,
    h2: H2Config,
    auth: Option<Auth>,
    /// also ask for the member list
    members: bool,
}

/// The status, and the member list when it was asked for.
type Answer = (MemberStatus, Option<Vec<MemberInfo>>);
/// Each call's own outcome, once the connection is open.
type Answers = (
    Result<MemberStatus, String>,
    Option<Result<Vec<MemberInfo>, String>>,
);

impl Probe {
    async fn run(self, over_grpc: bool) -> Result<Answer, String> {
        let (status, members) = if over_grpc {
            self.over_grpc().await?
        } else {
            self.over_http().await?
        };
        let status = status.map_err(|e| format!("status of {}: {e}", self.ep.url))?;
        let members = members
            .transpose()
            .map_err(|e| format!("member list from {}: {e}", self.ep.url))?;
        Ok((status, members))
    }

    /// Both answers over one h2 connection; `Err` only when the connection cannot be opened.
    async fn over_grpc(&self) -> Result<Answers, String> {
        let ep = &self.ep;
        let conn = grpc::Conn::connect(ep.addr, &ep.host, self.index, &self.net, &self.h2)
            .await
            .map_err(|e| format!("status of {}: connect: {}", ep.url, io_text(&e)))?;
        let mut send = conn.handle();
        let limit = self.net.connect_timeout;
        let metadata: Vec<(HeaderName, HeaderValue)> = self
            .auth
            .iter()
            .map(|a| (HeaderName::from_static("token"), a.metadata.clone()))
            .collect();
        let mut rx = BytesMut::new();
        let status = bounded(limit, async {
            let call = Call::new(uri(ep, STATUS_GRPC)?, metadata.clone(), FailureKind::Etcd);
            let msg = unary(&mut send, &conn, &call, &StatusRequest {}, &mut rx).await?;
            let resp = StatusResponse::decode(msg).map_err(|e| format!("bad response: {e}"))?;
            member_status(
                self.index,
                resp.header.map_or(0, |h| h.member_id),
                resp.leader,
                resp.raft_term,
                resp.is_learner,
            )
        })
        .await;
        let members = if self.members && status.is_ok() {
            Some(
                bounded(limit, async {
                    let call = Call::new(
                        uri(ep, MEMBER_LIST_GRPC)?,
                        metadata.clone(),
                        FailureKind::Etcd,
                    );
                    let msg =
                        unary(&mut send, &conn, &call, &MemberListRequest {}, &mut rx).await?;
                    let resp = MemberListResponse::decode(msg)
                        .map_err(|e| format!("bad response: {e}"))?;
                    Ok(resp
                        .members
                        .into_iter()
                        .map(|m| MemberInfo {
                            id: m.id,
                            name: m.name,
                            client_urls: m.client_ur_ls,
                        })
                        .collect())
                })
                .await,
            )
        } else {
            None
        };
        drop(send);
        conn.close(CLOSE_LINGER).await;
        Ok((status, members))
    }

    /// Both answers over one keepalive HTTP/1.1 connection to the gateway.
    async fn over_http(&self) -> Result<Answers, String> {
        let ep = &self.ep;
        let mut conn = http1::Conn::connect(
            ep.addr,
            &ep.host,
            self.index,
            &self.net,
            MAX_RESPONSE as u64,
            Layers::Off,
        )
        .await
        .map_err(|e| format!("status of {}: connect: {}", ep.url, io_text(&e)))?;
        let limit = self.net.connect_timeout;
        let token = self.auth.as_ref().map(|a| a.token.as_str());
        let status = bounded(limit, async {
            let body = gateway_post(&mut conn, ep, STATUS_HTTP, token).await?;
            let s: GwStatus =
                serde_json::from_slice(&body).map_err(|e| format!("bad response: {e}"))?;
            member_status(
                self.index,
                s.header.map_or(0, |h| h.member_id),
                s.leader,
                s.raft_term,
                s.is_learner,
            )
        })
        .await;
        let members = if self.members && status.is_ok() && conn.reusable() {
            Some(
                bounded(limit, async {
                    let body = gateway_post(&mut conn, ep, MEMBER_LIST_HTTP, token).await?;
                    let list: GwMemberList =
                        serde_json::from_slice(&body).map_err(|e| format!("bad response: {e}"))?;
                    Ok(list
                        .members
                        .into_iter()
                        .map(|m| MemberInfo {
                            id: m.id,
                            name: m.name,
                            client_urls: m.client_urls,
                        })
                        .collect())
                })
                .await,
            )
        } else if self.members && status.is_ok() {
            Some(Err(
                "the server closed the connection after the status".into()
            ))
        } else {
            None
        };
        drop(conn);
        Ok((status, members))
    }
}

/// A checked status: a member that does not say who it is cannot be matched to a leader.
fn member_status(
    endpoint: usize,
    member_id: u64,
    leader: u64,
    raft_term: u64,
    is_learner: bool,
) -> Result<MemberStatus, String> {
    if member_id == 0 {
        return Err("the response names no member id".into());
    }
    Ok(MemberStatus {
        endpoint,
        member_id,
        leader,
        raft_term,
        is_learner,
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

fn uri(ep: &Endpoint, path: &str) -> Result<Uri, String> {
    format!("http://{}{path}", ep.authority)
        .parse()
        .map_err(|e| format!("bad URI: {e}"))
}

/// One gRPC unary call on an open connection; returns the response message.
async fn unary(
    send: &mut h2::client::SendRequest<bytes::Bytes>,
    conn: &grpc::Conn,
    call: &Call,
    request: &impl Message,
    rx: &mut BytesMut,
) -> Result<bytes::Bytes, String> {
    let mut frame = BytesMut::new();
    grpc_wire::encode(request, &mut frame);
    grpc::unary(send, conn.ledger(), call, frame.freeze(), rx, MAX_RESPONSE)
        .await
        .map_err(|e| e.failure.to_string())
}

/// `POST path` with body `{}` through the gateway; the body of a 200 answer.
async fn gateway_post(
    conn: &mut http1::Conn,
    ep: &Endpoint,
    path: &str,
    token: Option<&str>,
) -> Result<Vec<u8>, String> {
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(t) = token {
        headers.push(("Authorization", t));
    }
    let template = RequestTemplate::new("POST", path, &ep.authority, &headers)
        .map_err(|e| format!("cannot build the request: {e}"))?;
    let mut req = BytesMut::new();
    let head = template.encode(b"{}", &mut req);
    let resp = conn
        .round_trip(&req, head)
        .await
        .map_err(|f| f.to_string())?;
    if resp.status != 200 {
        return Err(serde_json::from_slice::<GwError>(resp.body)
            .map(|e| format!("HTTP {}: {}", resp.status, e.text()))
            .unwrap_or_else(|_| format!("HTTP {}", resp.status)));
    }
    Ok(resp.body.to_vec())
}

/// The gateway's StatusResponse (uint64 as decimal strings, zero values omitted).
#[derive(Debug, Deserialize)]
struct GwStatus {
    #[serde(default)]
    header: Option<GwHeader>,
    #[serde(default, deserialize_with = "decimal_u64")]
    leader: u64,
    #[serde(default, rename = "raftTerm", deserialize_with = "decimal_u64")]
    raft_term: u64,
    #[serde(default, rename = "isLearner")]
    is_learner: bool,
}

#[derive(Debug, Deserialize)]
struct GwHeader {
    #[serde(default, deserialize_with = "decimal_u64")]
    member_id: u64,
}

/// The gateway's MemberListResponse.
#[derive(Debug, Deserialize)]
struct GwMemberList {
    #[serde(default)]
    members: Vec<GwMember>,
}

#[derive(Debug, Deserialize)]
struct GwMember {
    #[serde(default, rename = "ID", deserialize_with = "decimal_u64")]
    id: u64,
    #[serde(default)]
    name: String,
    #[serde(default, rename = "clientURLs")]
    client_urls: Vec<String>,
}

/// A uint64 as protobuf's JSON mapping writes it: a decimal string (a bare number is accepted).
fn decimal_u64<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Text(String),
        Number(u64),
    }
    match Raw::deserialize(d)? {
        Raw::Text(s) => s
            .parse()
            .map_err(|_| serde::de::Error::custom(format!("{s:?} is not a uint64"))),
        Raw::Number(n) => Ok(n),
    }
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
fn describe(m: &MemberInfo) -> String {
    if m.name.is_empty() {
        format!("member {:x}", m.id)
    } else {
        format!("{}, member {:x}", m.name, m.id)
    }
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
    fn members() -> Vec<MemberInfo> {
        [(11, 2001), (22, 2002), (33, 2003)]
            .into_iter()
            .map(|(id, port)| MemberInfo {
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
        let e = "primary".parse::<Target>().unwrap_err();
        assert!(e.contains("leader, followers, all or first"), "{e}");
        assert!(!needs_discovery(Target::First));
        assert!(needs_discovery(Target::Leader));
        assert!(needs_discovery(Target::Followers));
        assert!(needs_discovery(Target::All));
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
        view.members.push(MemberInfo {
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
    fn gateway_json() {
        let s: GwStatus = serde_json::from_str(
            r#"{"header":{"cluster_id":"1540761960191965964","member_id":"14043864974442216063",
                "revision":"1","raft_term":"2"},"version":"3.4.23","dbSize":"32768",
                "leader":"8138654174578925315","raftIndex":"8","raftTerm":"2"}"#,
        )
        .unwrap();
        assert_eq!(s.header.unwrap().member_id, 14043864974442216063);
        assert_eq!(s.leader, 8138654174578925315);
        assert_eq!(s.raft_term, 2);
        assert!(!s.is_learner);
        // Zero values are omitted.
        let s: GwStatus = serde_json::from_str(r#"{"header":{}}"#).unwrap();
        assert_eq!((s.leader, s.header.unwrap().member_id), (0, 0));
        assert!(serde_json::from_str::<GwStatus>(r#"{"leader":"-1"}"#).is_err());
        assert!(serde_json::from_str::<GwStatus>(r#"{"leader":"18446744073709551616"}"#).is_err());
        let l: GwMemberList = serde_json::from_str(
            r#"{"header":{},"members":[{"ID":"1368661556209622181","name":"m1",
                "peerURLs":["http://127.0.0.1:60489"],"clientURLs":["http://127.0.0.1:54515"]},
                {"ID":"7","peerURLs":["http://127.0.0.1:1"],"isLearner":true}]}"#,
        )
        .unwrap();
        assert_eq!(l.members.len(), 2);
        assert_eq!(l.members[0].id, 1368661556209622181);
        assert_eq!(l.members[0].name, "m1");
        assert_eq!(l.members[0].client_urls, ["http://127.0.0.1:54515"]);
        assert!(l.members[1].client_urls.is_empty());
    }

    #[test]
    fn a_status_without_member_id_is_an_error() {
        assert!(member_status(0, 0, 5, 1, false).is_err());
        assert_eq!(member_status(2, 9, 5, 1, true).unwrap().endpoint, 2);
    }

    #[test]
    fn io_errors_read_as_the_os_says_them() {
        let e = io::Error::from_raw_os_error(libc::ECONNREFUSED);
        assert_eq!(io_text(&e), "connection refused");
        let e = io::Error::other("h2 handshake: no PING answer");
        assert_eq!(io_text(&e), "h2 handshake: no PING answer");
    }
}
