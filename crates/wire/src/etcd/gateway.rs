//! etcd's grpc-gateway JSON: request bodies, borrowed response checks, the gateway's error
//! (one type for both its shapes), a lease keepalive's answer line, and prost -> gateway JSON.
//!
//! The gateway speaks protobuf's JSON mapping with original field names: `bytes` are base64,
//! 64-bit integers are quoted strings, default values are omitted.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use bytes::{BufMut, BytesMut};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::{Map, Value};

use crate::proto::etcd::{KeyValue, PutResponse, RangeResponse, ResponseHeader};

/// Appends `data` base64-encoded (standard alphabet, padded) to `dst` without allocating.
pub fn put_base64(data: &[u8], dst: &mut BytesMut) {
    let len = base64::encoded_len(data.len(), true).unwrap_or(0);
    let start = dst.len();
    dst.put_bytes(0, len);
    // encoded_len is exactly what encode_slice writes, so the slice is large enough.
    let written = B64
        .encode_slice(data, &mut dst[start..])
        .expect("buffer sized by encoded_len");
    dst.truncate(start + written);
}

/// The `header` object every successful gateway response carries.
#[derive(Debug, Deserialize)]
pub struct GwHeader<'a> {
    /// A quoted int64: digits only, so it always borrows (an `Option<Cow>` would not).
    #[serde(borrow, default)]
    pub revision: Option<&'a str>,
    /// A quoted uint64: the member that answered.
    #[serde(borrow, default)]
    pub member_id: Option<&'a str>,
}

impl GwHeader<'_> {
    /// The revision as a number, when it is one.
    pub fn revision(&self) -> Option<i64> {
        self.revision.and_then(|r| r.parse().ok())
    }

    /// The answering member's id: 0 when absent (a default value is omitted), `Err` when it is
    /// not a uint64.
    pub fn member_id(&self) -> Result<u64, String> {
        match self.member_id {
            None => Ok(0),
            Some(s) => s
                .parse()
                .map_err(|_| format!("member_id {s:?} is not a uint64")),
        }
    }
}

/// Maintenance/Status as the gateway renders it (uint64 as decimal strings, zero values
/// omitted).
#[derive(Debug, Deserialize)]
pub struct GwStatus<'a> {
    #[serde(borrow, default)]
    pub header: Option<GwHeader<'a>>,
    #[serde(default, deserialize_with = "decimal_u64")]
    pub leader: u64,
    #[serde(default, rename = "raftTerm", deserialize_with = "decimal_u64")]
    pub raft_term: u64,
    #[serde(default, rename = "isLearner")]
    pub is_learner: bool,
}

/// Cluster/MemberList as the gateway renders it.
#[derive(Debug, Deserialize)]
pub struct GwMemberList {
    #[serde(default)]
    pub members: Vec<GwMember>,
}

/// One member of `GwMemberList`.
#[derive(Debug, Deserialize)]
pub struct GwMember {
    #[serde(default, rename = "ID", deserialize_with = "decimal_u64")]
    pub id: u64,
    /// empty until the member has started
    #[serde(default)]
    pub name: String,
    #[serde(default, rename = "clientURLs")]
    pub client_urls: Vec<String>,
}

/// Auth/Authenticate's answer; the token is empty when etcd gave none.
#[derive(Debug, Deserialize)]
pub struct GwToken {
    #[serde(default)]
    pub token: String,
}

/// A uint64 as protobuf's JSON mapping writes it: a decimal string (a bare number is accepted).
pub fn decimal_u64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
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

/// PutResponse / RangeResponse as the gateway renders them; only what the checks read is kept.
#[derive(Debug, Deserialize)]
pub struct GwResponse<'a> {
    #[serde(borrow)]
    pub header: Option<GwHeader<'a>>,
    #[serde(borrow, default)]
    pub count: Option<&'a str>,
    #[serde(default)]
    pub kvs: Option<IgnoredAny>,
}

/// A gateway error, in either shape the gateway writes one, each a JSON object: the body of a
/// call that failed, `{"error": "...", "message": "...", "code": N}`, and the `error` object of
/// a stream's `{"error": {"grpc_code": N, "http_code": N, "message": "...", ...}}` line, whose
/// `grpc_code` is read as `code`. The texts borrow from the input unless they hold escapes
/// (serde's own `Option<Cow>` would always copy).
#[derive(Debug, Deserialize)]
pub struct GwError<'a> {
    /// The error text (a failed call's body only).
    #[serde(borrow, default, deserialize_with = "borrowed_text")]
    pub error: Option<Cow<'a, str>>,
    /// etcd's message.
    #[serde(borrow, default, deserialize_with = "borrowed_text")]
    pub message: Option<Cow<'a, str>>,
    /// The gRPC status code: a failed call's `code`, a stream error's `grpc_code`.
    #[serde(default, alias = "grpc_code")]
    pub code: Option<i64>,
}

/// An optional string that borrows from the input where it can.
pub(crate) fn borrowed_text<'de: 'a, 'a, D>(d: D) -> Result<Option<Cow<'a, str>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    /// A lone `Cow` field gets serde's borrowing deserializer; inside `Option` it would not.
    #[derive(Deserialize)]
    struct Text<'a>(#[serde(borrow)] Cow<'a, str>);
    Ok(Option::<Text<'a>>::deserialize(d)?.map(|t| t.0))
}

impl<'a> GwError<'a> {
    /// What etcd said: the message, else the error text.
    pub fn text(&self) -> &str {
        self.message
            .as_deref()
            .or(self.error.as_deref())
            .unwrap_or("no message")
    }

    /// [`GwError::text`], kept as borrowed as the input allowed.
    pub fn into_text(self) -> Cow<'a, str> {
        self.message
            .or(self.error)
            .unwrap_or(Cow::Borrowed("no message"))
    }
}

/// The `error` member of a line of a gateway stream: a stream error's object, or, when the
/// call failed before its stream began, the error text of a failed call's body (whose
/// `message` and `code` are the line's own).
#[derive(Debug)]
pub(crate) enum ErrorMember<'a> {
    Text(Cow<'a, str>),
    Object(GwError<'a>),
}

impl<'a> ErrorMember<'a> {
    /// The gateway error of the line whose `error` member this is (`message` and `code`: the
    /// line's own).
    pub(crate) fn into_error(
        self,
        message: Option<Cow<'a, str>>,
        code: Option<i64>,
    ) -> GwError<'a> {
        match self {
            ErrorMember::Text(t) => GwError {
                error: Some(t),
                message,
                code,
            },
            ErrorMember::Object(e) => e,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ErrorMember<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = ErrorMember<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an error string or status object")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<ErrorMember<'a>, E> {
                Ok(ErrorMember::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ErrorMember<'a>, E> {
                Ok(ErrorMember::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ErrorMember<'a>, A::Error> {
                GwError::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(ErrorMember::Object)
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

fn b64(data: &[u8]) -> Value {
    Value::String(B64.encode(data))
}

fn put_i64(m: &mut Map<String, Value>, name: &str, v: i64) {
    if v != 0 {
        m.insert(name.into(), Value::String(v.to_string()));
    }
}

fn put_u64(m: &mut Map<String, Value>, name: &str, v: u64) {
    if v != 0 {
        m.insert(name.into(), Value::String(v.to_string()));
    }
}

pub fn header_json(h: &ResponseHeader) -> Value {
    let mut m = Map::new();
    put_u64(&mut m, "cluster_id", h.cluster_id);
    put_u64(&mut m, "member_id", h.member_id);
    put_i64(&mut m, "revision", h.revision);
    put_u64(&mut m, "raft_term", h.raft_term);
    Value::Object(m)
}

pub fn kv_json(kv: &KeyValue) -> Value {
    let mut m = Map::new();
    if !kv.key.is_empty() {
        m.insert("key".into(), b64(&kv.key));
    }
    put_i64(&mut m, "create_revision", kv.create_revision);
    put_i64(&mut m, "mod_revision", kv.mod_revision);
    put_i64(&mut m, "version", kv.version);
    if !kv.value.is_empty() {
        m.insert("value".into(), b64(&kv.value));
    }
    put_i64(&mut m, "lease", kv.lease);
    Value::Object(m)
}

pub fn put_response_json(r: &PutResponse) -> Value {
    let mut m = Map::new();
    if let Some(h) = &r.header {
        m.insert("header".into(), header_json(h));
    }
    if let Some(kv) = &r.prev_kv {
        m.insert("prev_kv".into(), kv_json(kv));
    }
    Value::Object(m)
}

pub fn txn_response_json(r: &crate::proto::etcd::TxnResponse) -> Value {
    let mut m = Map::new();
    if let Some(h) = &r.header {
        m.insert("header".into(), header_json(h));
    }
    if r.succeeded {
        m.insert("succeeded".into(), Value::Bool(true));
    }
    Value::Object(m)
}

pub fn range_response_json(r: &RangeResponse) -> Value {
    let mut m = Map::new();
    if let Some(h) = &r.header {
        m.insert("header".into(), header_json(h));
    }
    if !r.kvs.is_empty() {
        m.insert("kvs".into(), r.kvs.iter().map(kv_json).collect());
    }
    if r.more {
        m.insert("more".into(), Value::Bool(true));
    }
    put_i64(&mut m, "count", r.count);
    Value::Object(m)
}

/// A TxnResponse with its operations' results, as the gateway renders it.
pub fn txn_results_json(r: &crate::proto::etcd::TxnResults) -> Value {
    use crate::proto::etcd::response_op::Response;
    let mut m = Map::new();
    if let Some(h) = &r.header {
        m.insert("header".into(), header_json(h));
    }
    if r.succeeded {
        m.insert("succeeded".into(), Value::Bool(true));
    }
    if !r.responses.is_empty() {
        let ops = r.responses.iter().map(|op| {
            let mut o = Map::new();
            match &op.response {
                Some(Response::ResponseRange(rr)) => {
                    o.insert("response_range".into(), range_response_json(rr));
                }
                Some(Response::ResponsePut(p)) => {
                    o.insert("response_put".into(), put_response_json(p));
                }
                None => {}
            }
            Value::Object(o)
        });
        m.insert("responses".into(), ops.collect());
    }
    Value::Object(m)
}

pub fn lease_keepalive_json(r: &crate::proto::etcd::LeaseKeepAliveResponse) -> Value {
    let mut m = Map::new();
    if let Some(h) = &r.header {
        m.insert("header".into(), header_json(h));
    }
    put_i64(&mut m, "ID", r.id);
    put_i64(&mut m, "TTL", r.ttl);
    Value::Object(m)
}

/// One lease keepalive answered through the gateway: `POST /v3/lease/keepalive` streams one
/// `{"result": LeaseKeepAliveResponse}` line per request (or an `{"error": {...}}` line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepAlive {
    /// header.revision (0 when absent)
    pub revision: i64,
    /// the lease it answers for (0 when absent)
    pub id: i64,
    /// the lease's TTL now, seconds; 0 when the lease is gone
    pub ttl: i64,
}

/// Why a keepalive answer is no `KeepAlive`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeepAliveError<'a> {
    /// an `{"error": {...}}` line: etcd's message
    Stream(Cow<'a, str>),
    /// not one `{"result": ...}` line of the expected shape
    Malformed(&'static str),
}

#[derive(Deserialize)]
struct GwKeepAliveLine<'a> {
    #[serde(borrow, default)]
    result: Option<GwKeepAlive<'a>>,
    #[serde(borrow, default)]
    error: Option<GwError<'a>>,
}

#[derive(Deserialize)]
struct GwKeepAlive<'a> {
    #[serde(borrow, default)]
    header: Option<GwHeader<'a>>,
    /// quoted int64s: digits (and a sign) only, so they always borrow
    #[serde(borrow, default, rename = "ID")]
    id: Option<&'a str>,
    #[serde(borrow, default, rename = "TTL")]
    ttl: Option<&'a str>,
}

/// The answer to one keepalive: the de-chunked body, one JSON line (its newline optional).
pub fn keepalive_answer(body: &[u8]) -> Result<KeepAlive, KeepAliveError<'_>> {
    // serde reads a struct from an array too (its fields in order): the line must be an object
    let not_object = KeepAliveError::Malformed("not one JSON object");
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(not_object);
    }
    let line: GwKeepAliveLine = serde_json::from_slice(body).map_err(|_| not_object)?;
    if let Some(e) = line.error {
        return Err(KeepAliveError::Stream(e.into_text()));
    }
    let r = line
        .result
        .ok_or(KeepAliveError::Malformed("neither result nor error"))?;
    let int = |v: Option<&str>, what: &'static str| match v {
        None => Ok(0),
        Some(s) => s
            .parse::<i64>()
            .map_err(|_| KeepAliveError::Malformed(what)),
    };
    Ok(KeepAlive {
        revision: r.header.and_then(|h| h.revision()).unwrap_or(0),
        id: int(r.id, "ID is not an int64")?,
        ttl: int(r.ttl, "TTL is not an int64")?,
    })
}

#[cfg(test)]
mod tests {
    proptest::proptest! {
        #[test]
        fn base64_round_trips(data in proptest::collection::vec(proptest::num::u8::ANY, 0..300), prefix in "[a-z]{0,8}") {
            let mut b = BytesMut::from(prefix.as_bytes());
            put_base64(&data, &mut b);
            proptest::prop_assert_eq!(&b[..prefix.len()], prefix.as_bytes());
            proptest::prop_assert_eq!(B64.decode(&b[prefix.len()..]).unwrap(), data);
        }

        #[test]
        fn gateway_parsers_never_panic(body in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let _ = serde_json::from_slice::<GwResponse>(&body);
            let _ = serde_json::from_slice::<GwError>(&body);
            let _ = serde_json::from_slice::<GwStatus>(&body);
            let _ = serde_json::from_slice::<GwMemberList>(&body);
            let _ = serde_json::from_slice::<GwToken>(&body);
            let _ = keepalive_answer(&body);
        }
    }

    use super::*;
    use bytes::Bytes;

    #[test]
    fn base64_appends_in_place() {
        let mut b = BytesMut::from(&b"x="[..]);
        put_base64(b"\x00\x01\xfe", &mut b);
        assert_eq!(&b[..], b"x=AAH+");
        put_base64(b"", &mut b);
        assert_eq!(&b[..], b"x=AAH+");
    }

    #[test]
    fn parses_gateway_bodies() {
        let ok = br#"{"header":{"cluster_id":"14841639068965178418","member_id":"10276657743932975437","revision":"7","raft_term":"2"},"kvs":[{"key":"Zm9v","value":"YmFy"}],"count":"1"}"#;
        let r: GwResponse = serde_json::from_slice(ok).unwrap();
        assert_eq!(r.header.unwrap().revision, Some("7"));
        assert_eq!(r.count, Some("1"));
        let err = br#"{"error":"etcdserver: too many requests","message":"etcdserver: too many requests","code":14}"#;
        let e: GwError = serde_json::from_slice(err).unwrap();
        assert_eq!(e.text(), "etcdserver: too many requests");
        assert_eq!(e.code, Some(14));
        // the texts borrow from the body (no copy per failed request) ...
        assert!(matches!(e.message, Some(Cow::Borrowed(_))), "{e:?}");
        assert!(matches!(e.error, Some(Cow::Borrowed(_))), "{e:?}");
        // ... unless they hold escapes; absent ones stay None
        let escaped: GwError = serde_json::from_slice(br#"{"message":"a\"b"}"#).unwrap();
        assert_eq!(escaped.text(), "a\"b");
        assert!(matches!(escaped.message, Some(Cow::Owned(_))));
        assert!(escaped.error.is_none() && escaped.code.is_none());
    }

    #[test]
    fn parses_status_and_member_list() {
        let s: GwStatus = serde_json::from_str(
            r#"{"header":{"cluster_id":"1540761960191965964","member_id":"14043864974442216063",
                "revision":"1","raft_term":"2"},"version":"3.4.23","dbSize":"32768",
                "leader":"8138654174578925315","raftIndex":"8","raftTerm":"2"}"#,
        )
        .unwrap();
        let header = s.header.unwrap();
        assert_eq!(header.member_id(), Ok(14043864974442216063));
        assert_eq!(header.revision(), Some(1));
        assert_eq!(s.leader, 8138654174578925315);
        assert_eq!(s.raft_term, 2);
        assert!(!s.is_learner);
        // Zero values are omitted.
        let s: GwStatus = serde_json::from_str(r#"{"header":{}}"#).unwrap();
        assert_eq!((s.leader, s.header.unwrap().member_id()), (0, Ok(0)));
        let s: GwStatus = serde_json::from_str(r#"{"header":{"member_id":"x"}}"#).unwrap();
        assert!(s.header.unwrap().member_id().is_err());
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
        let t: GwToken = serde_json::from_str(r#"{"header":{},"token":"abc.1"}"#).unwrap();
        assert_eq!(t.token, "abc.1");
        let t: GwToken = serde_json::from_str(r#"{"header":{}}"#).unwrap();
        assert!(t.token.is_empty());
    }

    #[test]
    fn renders_like_the_gateway() {
        let r = RangeResponse {
            header: Some(ResponseHeader {
                cluster_id: 1,
                member_id: 2,
                revision: 3,
                raft_term: 0,
            }),
            kvs: vec![KeyValue {
                key: Bytes::from_static(b"foo"),
                create_revision: 2,
                mod_revision: 3,
                version: 2,
                value: Bytes::from_static(b"bar"),
                lease: 0,
            }],
            more: false,
            count: 1,
        };
        let v = range_response_json(&r);
        assert_eq!(
            v.to_string(),
            r#"{"count":"1","header":{"cluster_id":"1","member_id":"2","revision":"3"},"kvs":[{"create_revision":"2","key":"Zm9v","mod_revision":"3","value":"YmFy","version":"2"}]}"#
        );
    }

    #[test]
    fn keepalive_answers_are_one_result_line() {
        let ok =
            br#"{"result":{"header":{"cluster_id":"1","revision":"7"},"ID":"694d7a","TTL":"100"}}"#;
        // a lease id is an int64 in decimal; this one is not, so the answer is malformed
        assert!(matches!(
            keepalive_answer(ok),
            Err(KeepAliveError::Malformed(_))
        ));
        let ok =
            b"{\"result\":{\"header\":{\"revision\":\"7\"},\"ID\":\"7587\",\"TTL\":\"100\"}}\n";
        assert_eq!(
            keepalive_answer(ok),
            Ok(KeepAlive {
                revision: 7,
                id: 7587,
                ttl: 100
            })
        );
        // a lease that is gone: TTL omitted (zero)
        let gone = br#"{"result":{"header":{"revision":"9"},"ID":"7587"}}"#;
        assert_eq!(keepalive_answer(gone).map(|k| k.ttl), Ok(0));
        let err = br#"{"error":{"grpc_code":14,"http_code":503,"message":"etcdserver: no leader","http_status":"Service Unavailable"}}"#;
        assert_eq!(
            keepalive_answer(err),
            Err(KeepAliveError::Stream(Cow::Borrowed(
                "etcdserver: no leader"
            )))
        );
        for bad in [
            &b"{}"[..],
            b"",
            b"{\"result\":{}}\n{\"result\":{}}\n",
            b"[1]",
            // an array has the line's fields in order for serde: still no object
            b"[[],[]]",
            b" [{\"message\":\"m\"}]",
        ] {
            assert!(
                matches!(keepalive_answer(bad), Err(KeepAliveError::Malformed(_))),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
