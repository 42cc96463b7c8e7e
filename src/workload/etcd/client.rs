//! One etcd client over both stacks for the one-off calls (Authenticate, Status, MemberList, Put;
//! over gRPC alone the range at a revision, Compact, LeaseGrant and LeaseRevoke): gRPC unary
//! calls on an h2 connection, or gateway POSTs on an HTTP/1.1 keepalive connection.
//!
//! `Client` borrows a connection someone else owns (the engine re-authenticates on its own);
//! `Connection` opens one of its own (where: a `Dial`) for calls made before or between runs,
//! and `client::block_on` runs such calls on a current-thread runtime. These calls are not
//! measured: no h2 sniffing, no HTTP/1.1 layer accounting on the connections `Connection` opens.
//!
//! Whether a failure means "authenticate again" is read from its gRPC status code
//! (UNAUTHENTICATED), over gRPC and through the gateway alike.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::Uri;
use http::header::{HeaderName, HeaderValue};
use prost::Message;

use crate::client::grpc::H2Config;
use crate::client::{RuntimeError, block_on, grpc, http1};
use crate::config::Endpoint;
use crate::net::{Layers, Ledger, NetConfig};
use crate::outcome::{Failure, FailureKind};
use crate::stack::Proto;
use wirebench_wire::etcd::gateway::{self, GwError, GwMemberList, GwResponse, GwStatus, GwToken};
use wirebench_wire::grpc::{self as grpc_wire, Code};
use wirebench_wire::http1::RequestTemplate;
use wirebench_wire::proto::etcd::{
    AuthenticateRequest, AuthenticateResponse, CompactionRequest, CompactionResponse,
    LeaseGrantRequest, LeaseGrantResponse, LeaseRevokeRequest, LeaseRevokeResponse,
    MemberListRequest, MemberListResponse, PutRequest, PutResponse, RangeRequest, RangeResponse,
    StatusRequest, StatusResponse,
};

/// Largest answer to a one-off call (a few hundred bytes per member in a member list).
pub const MAX_RESPONSE: usize = 1 << 20;
/// How long a closing gRPC connection of a one-off call waits for its streams.
const CLOSE_LINGER: Duration = Duration::from_secs(1);

/// Whether a failure is etcd rejecting an expired or revoked token ("invalid auth token",
/// etcd's one UNAUTHENTICATED answer).
pub fn is_invalid_token(f: &Failure) -> bool {
    f.kind == FailureKind::Etcd && f.code == Some(Code::Unauthenticated)
}

/// Where a connection of its own goes: an endpoint, over gRPC or through the gateway, with the
/// run's connection settings.
#[derive(Debug, Clone, Copy)]
pub struct Dial<'a> {
    pub ep: &'a Endpoint,
    pub proto: Proto,
    pub net: &'a NetConfig,
    pub h2: &'a H2Config,
}

/// Why a one-off call on a connection of its own gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum OneOffError {
    #[error("connect to {addr}: {source}")]
    Connect { addr: SocketAddr, source: io::Error },
    #[error("{0}")]
    Failed(Failure),
    #[error("no response within {0:?}")]
    Timeout(Duration),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

/// What one member's Maintenance/Status says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// the member behind the endpoint (0 when the answer names none)
    pub member_id: u64,
    /// the leader it follows; 0 when it knows none
    pub leader: u64,
    pub raft_term: u64,
    pub is_learner: bool,
}

/// One member as Cluster/MemberList names it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Member {
    pub id: u64,
    /// empty until the member has started
    pub name: String,
    pub client_urls: Vec<String>,
}

/// The borrowed connection a `Client` calls over: an h2 connection's sender and ledger
/// (gRPC), or an HTTP/1.1 connection (the gateway).
enum Channel<'c> {
    Grpc {
        send: &'c mut grpc::Sender,
        ledger: &'c Ledger,
    },
    Gateway(&'c mut http1::Conn),
}

/// etcd's calls on a borrowed connection, with an optional auth token (gRPC metadata `token`,
/// the gateway's raw `Authorization` header).
pub struct Client<'c> {
    channel: Channel<'c>,
    authority: &'c str,
    token: Option<&'c str>,
}

impl<'c> Client<'c> {
    /// Calls as h2 streams of the connection behind `send` (its ledger counts them).
    pub fn grpc(send: &'c mut grpc::Sender, ledger: &'c Ledger, authority: &'c str) -> Self {
        Client {
            channel: Channel::Grpc { send, ledger },
            authority,
            token: None,
        }
    }

    /// Calls through the gateway on `conn`.
    pub fn http(conn: &'c mut http1::Conn, authority: &'c str) -> Self {
        Client {
            channel: Channel::Gateway(conn),
            authority,
            token: None,
        }
    }

    /// Sends `token` with every call.
    pub fn with_token(self, token: Option<&'c str>) -> Self {
        Client { token, ..self }
    }

    /// `Auth/Authenticate`: the token for `user`.
    pub async fn authenticate(mut self, user: &str, password: &str) -> Result<String, Failure> {
        let token = match &mut self.channel {
            Channel::Grpc { send, ledger } => {
                let req = AuthenticateRequest {
                    name: user.to_string(),
                    password: password.to_string(),
                };
                let msg =
                    unary(send, ledger, self.authority, self.token, AUTHENTICATE, &req).await?;
                AuthenticateResponse::decode(msg)
                    .map_err(|e| Failure::with(FailureKind::BadResponse, e))?
                    .token
            }
            Channel::Gateway(conn) => {
                let body = serde_json::json!({ "name": user, "password": password }).to_string();
                let path = AUTHENTICATE.gateway;
                let answer = post(conn, self.authority, self.token, path, body.as_bytes()).await?;
                serde_json::from_slice::<GwToken>(answer)
                    .map_err(|e| Failure::with(FailureKind::BadResponse, e))?
                    .token
            }
        };
        if token.is_empty() {
            return Err(Failure::with(
                FailureKind::Auth,
                "etcd returned an empty token (is auth enabled?)",
            ));
        }
        Ok(token)
    }

    /// `Maintenance/Status` of the member behind the connection.
    pub async fn status(mut self) -> Result<Status, Failure> {
        match &mut self.channel {
            Channel::Grpc { send, ledger } => {
                let msg = unary(
                    send,
                    ledger,
                    self.authority,
                    self.token,
                    STATUS,
                    &StatusRequest {},
                )
                .await?;
                let r = StatusResponse::decode(msg)
                    .map_err(|e| Failure::with(FailureKind::BadResponse, e))?;
                Ok(Status {
                    member_id: r.header.map_or(0, |h| h.member_id),
                    leader: r.leader,
                    raft_term: r.raft_term,
                    is_learner: r.is_learner,
                })
            }
            Channel::Gateway(conn) => {
                let answer = post(conn, self.authority, self.token, STATUS.gateway, b"{}").await?;
                let s: GwStatus = serde_json::from_slice(answer)
                    .map_err(|e| Failure::with(FailureKind::BadResponse, e))?;
                let member_id = match &s.header {
                    Some(h) => h
                        .member_id()
                        .map_err(|e| Failure::with(FailureKind::BadResponse, e))?,
                    None => 0,
                };
                Ok(Status {
                    member_id,
                    leader: s.leader,
                    raft_term: s.raft_term,
                    is_learner: s.is_learner,
                })
            }
        }
    }

    /// `Cluster/MemberList`.
    pub async fn member_list(mut self) -> Result<Vec<Member>, Failure> {
        match &mut self.channel {
            Channel::Grpc { send, ledger } => {
                let req = MemberListRequest {};
                let msg = unary(send, ledger, self.authority, self.token, MEMBERS, &req).await?;
                let r = MemberListResponse::decode(msg)
                    .map_err(|e| Failure::with(FailureKind::BadResponse, e))?;
                Ok(r.members
                    .into_iter()
                    .map(|m| Member {
                        id: m.id,
                        name: m.name,
                        client_urls: m.client_ur_ls,
                    })
                    .collect())
            }
            Channel::Gateway(conn) => {
                let answer = post(conn, self.authority, self.token, MEMBERS.gateway, b"{}").await?;
                let list: GwMemberList = serde_json::from_slice(answer)
                    .map_err(|e| Failure::with(FailureKind::BadResponse, e))?;
                Ok(list
                    .members
                    .into_iter()
                    .map(|m| Member {
                        id: m.id,
                        name: m.name,
                        client_urls: m.client_urls,
                    })
                    .collect())
            }
        }
    }

    /// `KV/Put` of `value` at `key`: the revision etcd assigned.
    pub async fn put(mut self, key: &[u8], value: &[u8]) -> Result<i64, Failure> {
        match &mut self.channel {
            Channel::Grpc { send, ledger } => {
                let req = PutRequest {
                    key: Bytes::copy_from_slice(key),
                    value: Bytes::copy_from_slice(value),
                    ..Default::default()
                };
                let msg = unary(send, ledger, self.authority, self.token, PUT, &req).await?;
                put_revision(msg)
            }
            Channel::Gateway(conn) => {
                let mut body = BytesMut::new();
                put_body(key, value, &mut body);
                let (status, answer) =
                    round_trip(conn, self.authority, self.token, PUT.gateway, &body).await?;
                put_revision_gateway(status, answer)
            }
        }
    }
}

impl Client<'_> {
    /// `KV/Range` of `key` as of `revision` (gRPC only): the mod revision of the key then, or
    /// None when it had no value.
    pub async fn mod_revision_at(
        mut self,
        key: &[u8],
        revision: i64,
    ) -> Result<Option<i64>, Failure> {
        let Channel::Grpc { send, ledger } = &mut self.channel else {
            return Err(Failure::with(
                FailureKind::H2,
                "a range at a revision runs over gRPC",
            ));
        };
        let req = RangeRequest {
            key: Bytes::copy_from_slice(key),
            revision,
            ..Default::default()
        };
        let msg = unary(send, ledger, self.authority, self.token, RANGE, &req).await?;
        let r =
            RangeResponse::decode(msg).map_err(|e| Failure::with(FailureKind::BadResponse, e))?;
        Ok(r.kvs.first().map(|kv| kv.mod_revision))
    }

    /// The connection's gRPC sender and ledger: the calls below run over gRPC only.
    fn grpc_only(&mut self, what: &str) -> Result<(&mut grpc::Sender, &Ledger), Failure> {
        match &mut self.channel {
            Channel::Grpc { send, ledger } => Ok((send, ledger)),
            Channel::Gateway(_) => Err(Failure::with(
                FailureKind::H2,
                format_args!("{what} runs over gRPC"),
            )),
        }
    }

    /// The store's current revision: the header of a count-only range of one key.
    pub async fn revision(mut self) -> Result<i64, Failure> {
        let (authority, token) = (self.authority, self.token);
        let (send, ledger) = self.grpc_only("reading the revision")?;
        let req = RangeRequest {
            key: Bytes::from_static(b"\0"),
            count_only: true,
            ..Default::default()
        };
        let msg = unary(send, ledger, authority, token, RANGE, &req).await?;
        RangeResponse::decode(msg)
            .ok()
            .and_then(|r| r.header)
            .map(|h| h.revision)
            .ok_or_else(|| Failure::with(FailureKind::BadResponse, "RangeResponse without header"))
    }

    /// `KV/Compact`: etcd's history up to `revision` is dropped (not waiting for the backend,
    /// as etcd's benchmark compacts).
    pub async fn compact(mut self, revision: i64) -> Result<(), Failure> {
        let (authority, token) = (self.authority, self.token);
        let (send, ledger) = self.grpc_only("a compaction")?;
        let req = CompactionRequest {
            revision,
            physical: false,
        };
        let msg = unary(send, ledger, authority, token, COMPACT, &req).await?;
        CompactionResponse::decode(msg)
            .map(drop)
            .map_err(|e| Failure::with(FailureKind::BadResponse, e))
    }

    /// `Lease/LeaseGrant` of a lease of `ttl` seconds: its id and the TTL etcd granted.
    pub async fn lease_grant(mut self, ttl: i64) -> Result<(i64, i64), Failure> {
        let (authority, token) = (self.authority, self.token);
        let (send, ledger) = self.grpc_only("a lease grant")?;
        let req = LeaseGrantRequest { ttl, id: 0 };
        let msg = unary(send, ledger, authority, token, LEASE_GRANT, &req).await?;
        let r = LeaseGrantResponse::decode(msg)
            .map_err(|e| Failure::with(FailureKind::BadResponse, e))?;
        if !r.error.is_empty() {
            // an error in the answer itself: no status code
            return Err(Failure::with(FailureKind::Etcd, r.error));
        }
        if r.id == 0 {
            return Err(Failure::with(
                FailureKind::BadResponse,
                "LeaseGrantResponse without a lease id",
            ));
        }
        Ok((r.id, r.ttl))
    }

    /// `Lease/LeaseRevoke` of lease `id`.
    pub async fn lease_revoke(mut self, id: i64) -> Result<(), Failure> {
        let (authority, token) = (self.authority, self.token);
        let (send, ledger) = self.grpc_only("a lease revocation")?;
        let msg = unary(
            send,
            ledger,
            authority,
            token,
            LEASE_REVOKE,
            &LeaseRevokeRequest { id },
        )
        .await?;
        LeaseRevokeResponse::decode(msg)
            .map(drop)
            .map_err(|e| Failure::with(FailureKind::BadResponse, e))
    }
}

/// A call's gRPC method and gateway path.
struct Method {
    grpc: &'static str,
    gateway: &'static str,
}

const AUTHENTICATE: Method = Method {
    grpc: "/etcdserverpb.Auth/Authenticate",
    gateway: "/v3/auth/authenticate",
};
const STATUS: Method = Method {
    grpc: "/etcdserverpb.Maintenance/Status",
    gateway: "/v3/maintenance/status",
};
const MEMBERS: Method = Method {
    grpc: "/etcdserverpb.Cluster/MemberList",
    gateway: "/v3/cluster/member/list",
};
const PUT: Method = Method {
    grpc: "/etcdserverpb.KV/Put",
    gateway: "/v3/kv/put",
};
const RANGE: Method = Method {
    grpc: "/etcdserverpb.KV/Range",
    gateway: "/v3/kv/range",
};
const COMPACT: Method = Method {
    grpc: "/etcdserverpb.KV/Compact",
    gateway: "/v3/kv/compaction",
};
const LEASE_GRANT: Method = Method {
    grpc: "/etcdserverpb.Lease/LeaseGrant",
    gateway: "/v3/lease/grant",
};
const LEASE_REVOKE: Method = Method {
    grpc: "/etcdserverpb.Lease/LeaseRevoke",
    gateway: "/v3/lease/revoke",
};

/// The prefix of the failures of a request that could not be built.
const BUILD: &str = "cannot build the request";

/// One gRPC unary call of `method` with `request`; the response message.
async fn unary(
    send: &mut grpc::Sender,
    ledger: &Ledger,
    authority: &str,
    token: Option<&str>,
    method: Method,
    request: &impl Message,
) -> Result<Bytes, Failure> {
    let uri: Uri = format!("http://{authority}{}", method.grpc)
        .parse()
        .map_err(|e| Failure::with(FailureKind::H2, format_args!("{BUILD}: {e}")))?;
    let mut metadata = Vec::new();
    if let Some(t) = token {
        let v = HeaderValue::from_str(t).map_err(|_| {
            Failure::with(
                FailureKind::Auth,
                "the auth token is not a valid header value",
            )
        })?;
        metadata.push((HeaderName::from_static("token"), v));
    }
    let call = grpc::Call::new(uri, metadata, FailureKind::Etcd);
    let mut frame = BytesMut::new();
    grpc_wire::encode(request, &mut frame);
    let mut rx = BytesMut::new();
    grpc::unary(send, ledger, &call, frame.freeze(), &mut rx, MAX_RESPONSE)
        .await
        .map_err(|e| e.failure)
}

/// `POST path` with `body` through the gateway: the status and the body of the answer.
async fn round_trip<'a>(
    conn: &'a mut http1::Conn,
    authority: &str,
    token: Option<&str>,
    path: &str,
    body: &[u8],
) -> Result<(u16, &'a [u8]), Failure> {
    let mut headers = vec![("Content-Type", "application/json")];
    if let Some(t) = token {
        headers.push(("Authorization", t));
    }
    let template = RequestTemplate::new("POST", path, authority, &headers)
        .map_err(|e| Failure::with(FailureKind::Http1, format_args!("{BUILD}: {e}")))?;
    let mut req = BytesMut::new();
    let head = template.encode(body, &mut req);
    let resp = conn.round_trip(&req, head).await?;
    Ok((resp.status, resp.body))
}

/// `round_trip`, and the body of a 200 answer; any other answer is a failure.
async fn post<'a>(
    conn: &'a mut http1::Conn,
    authority: &str,
    token: Option<&str>,
    path: &str,
    body: &[u8],
) -> Result<&'a [u8], Failure> {
    let (status, answer) = round_trip(conn, authority, token, path, body).await?;
    if status != 200 {
        return Err(gateway_error(status, answer));
    }
    Ok(answer)
}

/// A gateway answer that is not a 200: etcd's own words when the body holds them, with the
/// gRPC status code the body names.
pub fn gateway_error(status: u16, body: &[u8]) -> Failure {
    match serde_json::from_slice::<GwError>(body) {
        Ok(e) => match gateway_code(e.code) {
            Some(code) => Failure::status(FailureKind::Etcd, code, e.text()),
            None => Failure::with(FailureKind::Etcd, e.text()),
        },
        Err(_) => Failure::with(FailureKind::HttpStatus, format_args!("HTTP {status}")),
    }
}

/// The gRPC status code of a gateway error's numeric `code` (absent, or not a code: none).
pub fn gateway_code(code: Option<i64>) -> Option<Code> {
    code.and_then(|c| u32::try_from(c).ok())
        .filter(|&c| c <= Code::Unauthenticated.as_u32())
        .map(Code::from_u32)
}

/// Appends the gateway's PutRequest body `{"key": ..., "value": ...}` (base64) to `dst`.
pub fn put_body(key: &[u8], value: &[u8], dst: &mut BytesMut) {
    dst.extend_from_slice(br#"{"key":""#);
    gateway::put_base64(key, dst);
    dst.extend_from_slice(br#"","value":""#);
    gateway::put_base64(value, dst);
    dst.extend_from_slice(br#""}"#);
}

/// The revision of a put answered over gRPC.
pub fn put_revision(message: Bytes) -> Result<i64, Failure> {
    PutResponse::decode(message)
        .ok()
        .and_then(|p| p.header)
        .map(|h| h.revision)
        .ok_or_else(|| Failure::with(FailureKind::BadResponse, "PutResponse without header"))
}

/// The revision of a put answered by the gateway, or why there is none.
pub fn put_revision_gateway(status: u16, body: &[u8]) -> Result<i64, Failure> {
    if status != 200 {
        return Err(gateway_error(status, body));
    }
    let r: GwResponse =
        serde_json::from_slice(body).map_err(|e| Failure::with(FailureKind::BadResponse, e))?;
    r.header
        .and_then(|h| h.revision())
        .ok_or_else(|| Failure::with(FailureKind::BadResponse, "no header.revision in response"))
}

/// A connection of its own for one-off calls, over gRPC or through the gateway (boxed: the
/// larger of the two).
pub enum Connection {
    Grpc(grpc::Conn, grpc::Sender),
    Http(Box<http1::Conn>),
}

impl Connection {
    /// Opens a connection as `dial` says (`index`: its endpoint number in the connection's
    /// record).
    pub async fn open(dial: Dial<'_>, index: usize) -> io::Result<Connection> {
        let Dial { ep, proto, net, h2 } = dial;
        Ok(match proto {
            Proto::Grpc => {
                let h2 = H2Config {
                    ledger: false,
                    ..*h2
                };
                let conn = grpc::Conn::connect(&ep.dest(), &ep.host, index, net, &h2).await?;
                let send = conn.handle();
                Connection::Grpc(conn, send)
            }
            Proto::H2 | Proto::H3 => {
                return Err(io::Error::other(
                    "etcd's API is reached over HTTP/1.1 or gRPC, not plain HTTP/2 or HTTP/3",
                ));
            }
            Proto::Http => Connection::Http(Box::new(
                http1::Conn::connect(
                    &ep.dest(),
                    &ep.host,
                    index,
                    net,
                    MAX_RESPONSE as u64,
                    Layers::Off,
                )
                .await?,
            )),
        })
    }

    /// A client on this connection, calling `authority` with `token`.
    pub fn client<'c>(&'c mut self, authority: &'c str, token: Option<&'c str>) -> Client<'c> {
        match self {
            Connection::Grpc(conn, send) => Client::grpc(send, conn.ledger(), authority),
            Connection::Http(conn) => Client::http(conn, authority),
        }
        .with_token(token)
    }

    /// Whether another call may go on this connection (the gateway may have closed it).
    pub fn reusable(&self) -> bool {
        match self {
            Connection::Grpc(conn, _) => !conn.is_dead(),
            Connection::Http(conn) => conn.reusable(),
        }
    }

    /// Closes the connection: gRPC streams get a second to finish.
    pub async fn close(self) {
        match self {
            Connection::Grpc(conn, send) => {
                drop(send);
                conn.close(CLOSE_LINGER).await;
            }
            Connection::Http(conn) => drop(conn),
        }
    }
}

/// A connection of its own as `dial` says, its connect error as a one-off call's.
async fn open_one_off(dial: Dial<'_>) -> Result<Connection, OneOffError> {
    Connection::open(dial, 0)
        .await
        .map_err(|source| OneOffError::Connect {
            addr: dial.ep.addr,
            source,
        })
}

/// Authenticates as `user` on a connection of its own as `dial` says.
pub fn authenticate(dial: Dial<'_>, user: &str, password: &str) -> Result<String, OneOffError> {
    block_on(async {
        let mut conn = open_one_off(dial).await?;
        let token = conn
            .client(&dial.ep.authority, None)
            .authenticate(user, password)
            .await
            .map_err(OneOffError::Failed);
        conn.close().await;
        token
    })?
}

/// Puts `value` at `key` on a connection of its own as `dial` says, bounded by `timeout`: the
/// revision.
pub fn put(
    dial: Dial<'_>,
    token: Option<&str>,
    key: &[u8],
    value: &[u8],
    timeout: Duration,
) -> Result<i64, OneOffError> {
    block_on(async {
        let mut conn = open_one_off(dial).await?;
        let put = conn.client(&dial.ep.authority, token).put(key, value);
        let revision = match tokio::time::timeout(timeout, put).await {
            Ok(r) => r.map_err(OneOffError::Failed),
            Err(_) => Err(OneOffError::Timeout(timeout)),
        };
        conn.close().await;
        revision
    })?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateway_put_answers_are_judged_by_kind() {
        assert_eq!(
            put_revision_gateway(200, br#"{"header":{"revision":"42"}}"#),
            Ok(42)
        );
        let kind = |status, body: &[u8]| put_revision_gateway(status, body).map_err(|f| f.kind);
        assert_eq!(
            kind(200, br#"{"header":{}}"#),
            Err(FailureKind::BadResponse)
        );
        assert_eq!(kind(200, b"not json"), Err(FailureKind::BadResponse));
        assert_eq!(
            kind(
                400,
                br#"{"error":"etcdserver: request is too large","code":3}"#
            ),
            Err(FailureKind::Etcd)
        );
        assert_eq!(kind(502, b"Bad Gateway"), Err(FailureKind::HttpStatus));
    }

    #[test]
    fn grpc_put_answers_carry_the_revision() {
        use wirebench_wire::proto::etcd::ResponseHeader;
        let msg = PutResponse {
            header: Some(ResponseHeader {
                revision: 7,
                ..Default::default()
            }),
            ..Default::default()
        }
        .encode_to_vec();
        assert_eq!(put_revision(Bytes::from(msg)), Ok(7));
        let kind = put_revision(Bytes::new()).map_err(|f| f.kind);
        assert_eq!(kind, Err(FailureKind::BadResponse));
    }

    #[test]
    fn put_bodies_are_gateway_json() {
        let mut b = BytesMut::new();
        put_body(b"k", b"\x00\x01", &mut b);
        assert_eq!(&b[..], br#"{"key":"aw==","value":"AAE="}"#);
    }

    #[test]
    fn invalid_tokens_are_etcd_failures_naming_it() {
        let unauthenticated = |kind| {
            Failure::status(
                kind,
                Code::Unauthenticated,
                "UNAUTHENTICATED: etcdserver: invalid auth token",
            )
        };
        assert!(is_invalid_token(&unauthenticated(FailureKind::Etcd)));
        assert!(!is_invalid_token(&unauthenticated(FailureKind::Auth)));
        assert!(!is_invalid_token(&Failure::new(FailureKind::Etcd)));
        // through the gateway: the code its error body names
        let gateway = gateway_error(
            401,
            br#"{"error":"etcdserver: invalid auth token","code":16}"#,
        );
        assert!(is_invalid_token(&gateway), "{gateway:?}");
        assert_eq!(gateway.to_string(), "etcd: etcdserver: invalid auth token");
    }
}
