//! Any gRPC method (`wirebench grpc TARGET Service/Method`): the same encoded request on every
//! call (a client stream sends its messages in turn), or, where its JSON or metadata hold
//! placeholders, one rendered per call (`vary`, `template`); a unary or client-streaming call is OK
//! when it ends with grpc-status 0 and exactly one message, as ghz counts it, a server-streaming
//! or bidi one when its stream ends with grpc-status 0 (its messages are counted); the
//! messages' content is not judged (the sample shows the first as JSON when the schema is
//! known).

mod template;
mod vary;

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::Uri;
use http::header::{HeaderName, HeaderValue};
use std::path::{Path, PathBuf};

use prost::Message;
use prost_reflect::{
    DescriptorPool, DynamicMessage, FieldDescriptor, Kind, MessageDescriptor, MethodDescriptor,
    Value as Field,
};
use serde_json::Value;

use crate::client::grpc::Call;
use crate::config::{Endpoint, GrpcRequest, GrpcSpec, StreamPlan, TemplatedMessages};
use crate::outcome::FailureKind;

/// Why a gRPC method cannot be called as asked: its schema, its name, its request, its
/// metadata, or the field a payload sweep fills.
#[derive(Debug, thiserror::Error)]
pub enum GrpcError {
    #[error("{target}: {source}")]
    Uri {
        target: String,
        source: http::uri::InvalidUri,
    },
    #[error("the request waits for the server's schema (reflection)")]
    AwaitsSchema,
    #[error("the request message is larger than 4 GiB")]
    RequestTooLarge,
    /// a `.proto` file that does not compile: what the compiler said, on one line
    #[error("--proto-file: {0}")]
    ProtoFile(String),
    /// `known`: the services the schema has, comma-separated
    #[error("unknown service {service:?}; the schema has: {known}")]
    UnknownService { service: String, known: String },
    /// `known`: the methods the service has, comma-separated
    #[error("unknown method {method:?} of {service}; it has: {known}")]
    UnknownMethod {
        method: String,
        service: String,
        known: String,
    },
    #[error("method {0:?}: expected package.Service/Method")]
    MethodName(String),
    #[error("no request message (an empty array?): a stream sends at least one message")]
    NoMessages,
    #[error("invalid metadata name {0:?}")]
    MetadataName(String),
    #[error("invalid metadata value for {0}")]
    MetadataValue(String),
    #[error("metadata {name}: {source}")]
    MetadataPlaceholder {
        name: String,
        source: wirebench_wire::vary::TemplateError,
    },
    #[error(transparent)]
    Placeholder(#[from] template::MessageTemplateError),
    #[error("the request is not a {message}: {source}")]
    NotTheRequest {
        message: String,
        source: serde_json::Error,
    },
    #[error(
        "--payload-field: {0} has no string or bytes field to carry the payload; name one \
         inside a nested message (--payload-field outer.inner)"
    )]
    NoPayloadField(String),
    #[error("--payload-field is needed: {message} has several string and bytes fields: {fields}")]
    PayloadFieldNeeded { message: String, fields: String },
    #[error(
        "--payload-field {path}: {message} has no field {part:?} (its string and bytes fields: \
         {fields})"
    )]
    NoSuchField {
        path: String,
        message: String,
        part: String,
        fields: String,
    },
    /// `what` the last field of the path is instead ("a map", "an int64 field", ...)
    #[error(
        "--payload-field {path}: {field} is {what}: the payload goes into a singular string or \
         bytes field"
    )]
    NotAPayloadField {
        path: String,
        field: String,
        what: String,
    },
    /// `what` a field on the way is instead of a singular message
    #[error(
        "--payload-field {path}: {field} is {what}: the path goes through singular message \
         fields only"
    )]
    NotAMessageOnTheWay {
        path: String,
        field: String,
        what: String,
    },
    #[error("--payload-field: no field")]
    NoField,
    #[error("--payload-field: {0} is not a message")]
    NotAMessage(String),
    #[error("--payload-field: {0} is not a string or bytes field")]
    NotStringOrBytes(String),
    #[error("--payload-field {field}: {source}")]
    SetField {
        field: String,
        source: prost_reflect::SetFieldError,
    },
}

#[derive(Debug)]
struct Shared {
    calls: Vec<Call>,
    response: Option<MessageDescriptor>,
    server_streaming: bool,
    client_streaming: bool,
    stream: StreamPlan,
    /// every request message framed: the request, then a client stream's next ones in turn
    /// (where they vary: their first renders)
    frames: Vec<Bytes>,
    /// what varies per call; `None`: every call sends the same
    varies: Option<vary::Varies>,
}

/// One client's view: the calls are shared and read-only; a client whose calls vary renders
/// them into its own buffers.
#[derive(Debug, Clone)]
pub struct GrpcWorkload {
    shared: Arc<Shared>,
    renders: Option<Box<vary::Renders>>,
    /// what the clients' random streams are seeded from (`--seed`)
    seed: u64,
}

impl GrpcWorkload {
    pub fn new(spec: &GrpcSpec, endpoints: &[Endpoint]) -> Result<GrpcWorkload, GrpcError> {
        let (varies, texts) = vary::Varies::new(&spec.metadata, spec.templated.as_ref())?;
        let metadata = metadata_of(&texts)?;
        let mut calls = Vec::with_capacity(endpoints.len());
        for ep in endpoints {
            let authority = spec.authority.as_deref().unwrap_or(&ep.authority);
            let scheme = if ep.tls { "https" } else { "http" };
            let uri: Uri = format!("{scheme}://{authority}{}", spec.path)
                .parse()
                .map_err(|source| GrpcError::Uri {
                    target: format!("{authority}{}", spec.path),
                    source,
                })?;
            calls.push(Call::new(uri, metadata.clone(), FailureKind::GrpcStatus));
        }
        let GrpcRequest::Encoded(request) = &spec.request else {
            return Err(GrpcError::AwaitsSchema);
        };
        let mut frames = vec![framed(request)?];
        for m in &spec.more {
            frames.push(framed(m)?);
        }
        Ok(GrpcWorkload {
            shared: Arc::new(Shared {
                calls,
                response: spec.response.clone(),
                server_streaming: spec.server_streaming,
                client_streaming: spec.client_streaming,
                stream: spec.stream,
                frames,
                varies,
            }),
            renders: None,
            seed: 0,
        })
    }

    /// The same calls, the clients' random streams (`{{rand}}`, `{{uuid}}`) seeded from
    /// `seed`.
    pub fn with_seed(mut self, seed: u64) -> GrpcWorkload {
        self.seed = seed;
        self
    }

    /// Client `client`'s copy: its own renders when its calls vary.
    pub fn for_client(&self, client: u64) -> GrpcWorkload {
        let s = &*self.shared;
        let renders = s.varies.as_ref().map(|v| {
            let metadata = v.varying_metadata();
            let calls = s
                .calls
                .iter()
                .map(|c| {
                    if metadata.is_empty() {
                        c.clone()
                    } else {
                        c.clone().varying(false, &metadata)
                    }
                })
                .collect();
            let draw = wirebench_wire::vary::Draw::for_client(self.seed, client);
            Box::new(vary::Renders::new(draw, calls, s.frames.clone()))
        });
        GrpcWorkload {
            shared: self.shared.clone(),
            renders,
            seed: self.seed,
        }
    }

    /// Makes call number `idx` to endpoint `ep`, where it varies: its metadata and messages.
    pub fn next(&mut self, idx: u64, ep: usize) {
        if let (Some(r), Some(v)) = (self.renders.as_deref_mut(), &self.shared.varies) {
            r.render(v, idx, ep, self.shared.client_streaming);
        }
    }

    pub fn call(&self, ep: usize) -> &Call {
        match &self.renders {
            Some(r) => &r.calls[ep],
            None => &self.shared.calls[ep],
        }
    }

    /// The method streams its response: a call is OK when its stream ends with grpc-status 0,
    /// whatever the number of messages.
    pub fn server_streaming(&self) -> bool {
        self.shared.server_streaming
    }

    /// The framed request (the same for every call unless it varies).
    pub fn grpc_request(&self) -> &Bytes {
        &self.stream_frames()[0]
    }

    /// The method takes a stream of requests (client-streaming or bidi).
    pub fn client_streaming(&self) -> bool {
        self.shared.client_streaming
    }

    /// What each client stream sends.
    pub fn stream_plan(&self) -> StreamPlan {
        self.shared.stream
    }

    /// A client stream's messages, framed, sent in turn.
    pub fn stream_frames(&self) -> &[Bytes] {
        match &self.renders {
            Some(r) => &r.frames,
            None => &self.shared.frames,
        }
    }

    /// The response as JSON through the schema (proto3 JSON mapping), or its size when there
    /// is no schema or it does not decode.
    pub fn sample_grpc(&self, message: &Bytes) -> Value {
        let Some(desc) = &self.shared.response else {
            return Value::String(format!("{} B (no schema)", message.len()));
        };
        match DynamicMessage::decode(desc.clone(), message.clone()) {
            Ok(m) => serde_json::to_value(&m)
                .unwrap_or_else(|e| Value::String(format!("not representable as JSON: {e}"))),
            Err(e) => Value::String(format!("undecodable as {}: {e}", desc.full_name())),
        }
    }
}

/// `message` with gRPC's 5-byte prefix (uncompressed).
fn framed(message: &[u8]) -> Result<Bytes, GrpcError> {
    let len = u32::try_from(message.len()).map_err(|_| GrpcError::RequestTooLarge)?;
    let mut frame = BytesMut::with_capacity(wirebench_wire::grpc::PREFIX_LEN + message.len());
    frame.extend_from_slice(&[0]);
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(message);
    Ok(frame.freeze())
}

/// The schema of `files`, imports looked up in `includes` and each file's directory.
pub fn compile(files: &[PathBuf], includes: &[PathBuf]) -> Result<DescriptorPool, GrpcError> {
    let mut dirs: Vec<PathBuf> = includes.to_vec();
    for f in files {
        let dir = f
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dirs.iter().any(|d| f.starts_with(d)) {
            dirs.push(dir.to_path_buf());
        }
    }
    let mut compiler =
        protox::Compiler::new(&dirs).map_err(|e| GrpcError::ProtoFile(e.to_string()))?;
    compiler.include_imports(true);
    compiler.open_files(files).map_err(|e| {
        let what = e.to_string().replace('\n', " ");
        GrpcError::ProtoFile(match e.file() {
            Some(file) if !what.contains(file) => format!("{file}: {what}"),
            _ => what,
        })
    })?;
    Ok(compiler.descriptor_pool())
}

/// `package.Service/Method` or `package.Service.Method` in `pool`; the error lists what the
/// schema offers.
pub fn find_method(pool: &DescriptorPool, name: &str) -> Result<MethodDescriptor, GrpcError> {
    let name = name.trim_start_matches('/');
    let service = service_of(name)?;
    let method = &name[service.len() + 1..];
    let Some(svc) = pool.get_service_by_name(service) else {
        let known: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
        return Err(GrpcError::UnknownService {
            service: service.to_string(),
            known: if known.is_empty() {
                "no services".to_string()
            } else {
                known.join(", ")
            },
        });
    };
    svc.methods().find(|m| m.name() == method).ok_or_else(|| {
        let known: Vec<String> = svc.methods().map(|m| m.name().to_string()).collect();
        GrpcError::UnknownMethod {
            method: method.to_string(),
            service: service.to_string(),
            known: known.join(", "),
        }
    })
}

/// `-H NAME:VALUE` pairs as gRPC metadata (names lower-cased).
pub fn metadata_of(list: &[(String, String)]) -> Result<Vec<(HeaderName, HeaderValue)>, GrpcError> {
    list.iter()
        .map(|(k, v)| {
            let name = HeaderName::from_bytes(k.to_ascii_lowercase().as_bytes())
                .map_err(|_| GrpcError::MetadataName(k.clone()))?;
            let value =
                HeaderValue::from_str(v).map_err(|_| GrpcError::MetadataValue(k.clone()))?;
            Ok((name, value))
        })
        .collect()
}

/// How `m` streams: `client-streaming`, `server-streaming`, `bidirectional streaming`, or
/// `None` for a unary method.
pub fn streaming(m: &MethodDescriptor) -> Option<&'static str> {
    match (m.is_client_streaming(), m.is_server_streaming()) {
        (false, false) => None,
        (true, false) => Some("client-streaming"),
        (false, true) => Some("server-streaming"),
        (true, true) => Some("bidirectional streaming"),
    }
}

/// How `m`'s calls go: (client-streaming, server-streaming); both for a bidi method.
pub fn call_kind(m: &MethodDescriptor) -> (bool, bool) {
    (m.is_client_streaming(), m.is_server_streaming())
}

/// The request messages of `m` from JSON: one; or for a client-streaming method a JSON array's
/// elements, or several JSON values one after the other (NDJSON: a value per line), one per
/// message (an empty array is refused: a stream sends at least one).
///
/// JSON with placeholders (`{{seq}}`, ...) gives the messages' first renders and their texts,
/// to be rendered per call.
pub fn encode_messages(
    m: &MethodDescriptor,
    json: &str,
) -> Result<(Vec<Vec<u8>>, Option<TemplatedMessages>), GrpcError> {
    if json.contains("{{") {
        return vary::encode(m, json).map(|(encoded, t)| (encoded, Some(t)));
    }
    fixed_messages(m, json).map(|encoded| (encoded, None))
}

/// `encode_messages` of JSON without placeholders.
fn fixed_messages(m: &MethodDescriptor, json: &str) -> Result<Vec<Vec<u8>>, GrpcError> {
    vary::split(m, json)?
        .iter()
        .map(|text| encode_json(m, text))
        .collect()
}

/// The service part of `package.Service/Method` (or `package.Service.Method`).
pub fn service_of(method: &str) -> Result<&str, GrpcError> {
    let name = method.trim_start_matches('/');
    name.rsplit_once('/')
        .or_else(|| name.rsplit_once('.'))
        .map(|(s, _)| s)
        .ok_or_else(|| GrpcError::MethodName(name.to_string()))
}

/// The request message of `method` from JSON, encoded; the error names the field and why.
pub fn encode_json(method: &MethodDescriptor, json: &str) -> Result<Vec<u8>, GrpcError> {
    decode_json(&method.input(), json).map(|m| m.encode_to_vec())
}

/// A `input` message from JSON (proto3 JSON mapping); the error names the field and why.
pub fn decode_json(input: &MessageDescriptor, json: &str) -> Result<DynamicMessage, GrpcError> {
    let mut de = serde_json::Deserializer::from_str(json);
    DynamicMessage::deserialize(input.clone(), &mut de)
        .and_then(|m| de.end().map(|()| m))
        .map_err(|source| GrpcError::NotTheRequest {
            message: input.full_name().to_string(),
            source,
        })
}

/// Whether a payload can go into `f`: a singular string or bytes field.
fn carries_payload(f: &FieldDescriptor) -> bool {
    !f.is_list() && !f.is_map() && matches!(f.kind(), Kind::String | Kind::Bytes)
}

/// The field of `m` named `name` (its proto name, or its JSON name).
fn field_named(m: &MessageDescriptor, name: &str) -> Option<FieldDescriptor> {
    m.get_field_by_name(name)
        .or_else(|| m.get_field_by_json_name(name))
}

/// The names of `m`'s fields that can carry a payload, comma-separated ("none" without any).
fn candidates(m: &MessageDescriptor) -> String {
    let names: Vec<String> = m
        .fields()
        .filter(carries_payload)
        .map(|f| f.name().to_string())
        .collect();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

/// The field a payload sweep fills in `input` messages: `path` (a field name, or a dotted path
/// through singular message fields: `outer.inner.data`), or without one the message's only
/// singular string or bytes field. Returns the fields from the outermost in; the error is one
/// line naming `--payload-field` and, where it helps, the fields that could carry the payload.
pub fn payload_field(
    input: &MessageDescriptor,
    path: Option<&str>,
) -> Result<Vec<FieldDescriptor>, GrpcError> {
    let Some(path) = path else {
        let mut fit = input.fields().filter(carries_payload);
        return match (fit.next(), fit.next()) {
            (Some(f), None) => Ok(vec![f]),
            (None, _) => Err(GrpcError::NoPayloadField(input.full_name().to_string())),
            (Some(_), Some(_)) => Err(GrpcError::PayloadFieldNeeded {
                message: input.full_name().to_string(),
                fields: candidates(input),
            }),
        };
    };
    let mut fields = Vec::new();
    let mut at = input.clone();
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        let Some(f) = field_named(&at, part) else {
            return Err(GrpcError::NoSuchField {
                path: path.to_string(),
                message: at.full_name().to_string(),
                part: part.to_string(),
                fields: candidates(&at),
            });
        };
        let last = parts.peek().is_none();
        let what = if f.is_map() {
            "a map".to_string()
        } else if f.is_list() {
            "a repeated field".to_string()
        } else {
            match f.kind() {
                Kind::Message(m) if !last => {
                    at = m;
                    fields.push(f);
                    continue;
                }
                Kind::String | Kind::Bytes if last => {
                    fields.push(f);
                    continue;
                }
                Kind::Message(m) => format!("a message ({})", m.full_name()),
                Kind::Enum(e) => format!("an enum ({})", e.full_name()),
                k => {
                    let name = format!("{k:?}").to_ascii_lowercase();
                    let article = if name.starts_with('i') { "an" } else { "a" };
                    format!("{article} {name} field")
                }
            }
        };
        let (path, field) = (path.to_string(), f.full_name().to_string());
        return Err(if last {
            GrpcError::NotAPayloadField { path, field, what }
        } else {
            GrpcError::NotAMessageOnTheWay { path, field, what }
        });
    }
    Ok(fields)
}

/// `base` with the field at `path` (from `payload_field`) set to `n` bytes of the payload
/// filler (`workload::filler`), the messages on the way created when unset, encoded. The
/// payload is the field's bytes; the message around it (tags, lengths, other fields) comes on
/// top.
pub fn fill_field(
    base: &DynamicMessage,
    path: &[FieldDescriptor],
    n: usize,
) -> Result<Vec<u8>, GrpcError> {
    let Some((last, through)) = path.split_last() else {
        return Err(GrpcError::NoField);
    };
    let mut msg = base.clone();
    let mut at = &mut msg;
    for f in through {
        // an unset message field reads as its default, which is then set
        at = match at.get_field_mut(f) {
            Field::Message(m) => m,
            _ => return Err(GrpcError::NotAMessage(f.full_name().to_string())),
        };
    }
    let filler = super::filler(n);
    let value = match last.kind() {
        Kind::Bytes => Field::Bytes(Bytes::from(filler.into_bytes())),
        Kind::String => Field::String(filler),
        _ => return Err(GrpcError::NotStringOrBytes(last.full_name().to_string())),
    };
    at.try_set_field(last, value)
        .map_err(|source| GrpcError::SetField {
            field: last.full_name().to_string(),
            source,
        })?;
    Ok(msg.encode_to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo_pool() -> DescriptorPool {
        let proto = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/wire/proto/echo.proto");
        compile(&[proto], &[]).expect("echo.proto compiles")
    }

    #[test]
    fn methods_are_found_by_either_spelling_and_misses_list_what_there_is() {
        let pool = echo_pool();
        for name in [
            "grpc_echo.v1.EchoService/Echo",
            "/grpc_echo.v1.EchoService/Echo",
            "grpc_echo.v1.EchoService.Echo",
        ] {
            assert_eq!(find_method(&pool, name).unwrap().name(), "Echo", "{name}");
        }
        let e = find_method(&pool, "grpc_echo.v1.Nope/Echo")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("the schema has: grpc_echo.v1.EchoService"),
            "{e}"
        );
        let e = find_method(&pool, "grpc_echo.v1.EchoService/Nope")
            .unwrap_err()
            .to_string();
        assert!(e.contains("it has: Echo"), "{e}");
    }

    #[test]
    fn json_requests_are_encoded_and_bad_fields_named() {
        let m = find_method(&echo_pool(), "grpc_echo.v1.EchoService/Echo").unwrap();
        // field 1, length 2, "hi"
        assert_eq!(encode_json(&m, r#"{"ping":"hi"}"#).unwrap(), b"\x0a\x02hi");
        assert_eq!(encode_json(&m, "{}").unwrap(), b"");
        let e = encode_json(&m, r#"{"pong":"hi"}"#).unwrap_err().to_string();
        assert!(
            e.contains("grpc_echo.v1.EchoRequest") && e.contains("pong"),
            "{e}"
        );
        let e = encode_json(&m, r#"{"ping":3}"#).unwrap_err().to_string();
        assert!(e.contains("grpc_echo.v1.EchoRequest"), "{e}");
        assert!(encode_json(&m, r#"{"ping":"a"} x"#).is_err());
    }

    fn payload_pool() -> (tempfile::TempDir, DescriptorPool) {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("payload.proto");
        std::fs::write(
            &f,
            r#"syntax = "proto3";
package t.v1;
service S {
  rpc Many(Req) returns (Req);
  rpc One(Only) returns (Only);
  rpc Bare(Bare) returns (Bare);
}
message Inner { bytes data = 1; int32 n = 2; }
message Req {
  string name = 1;
  Inner inner = 2;
  repeated string tags = 3;
  map<string, string> m = 4;
  int64 count = 5;
  oneof o { string word = 6; int32 num = 7; }
  string long_name = 8;
}
message Only { int32 n = 1; bytes blob = 2; repeated string more = 3; }
message Bare { int32 n = 1; Inner inner = 2; }
"#,
        )
        .unwrap();
        let pool = compile(&[f], &[]).expect("payload.proto compiles");
        (dir, pool)
    }

    fn input(pool: &DescriptorPool, method: &str) -> MessageDescriptor {
        find_method(pool, &format!("t.v1.S/{method}"))
            .unwrap()
            .input()
    }

    fn names(path: &[FieldDescriptor]) -> Vec<&str> {
        path.iter().map(|f| f.name()).collect()
    }

    #[test]
    fn the_payload_field_is_named_or_the_only_one() {
        let (_dir, pool) = payload_pool();
        let (req, only, bare) = (
            input(&pool, "Many"),
            input(&pool, "One"),
            input(&pool, "Bare"),
        );
        // the only singular string or bytes field (the repeated one does not count)
        assert_eq!(names(&payload_field(&only, None).unwrap()), ["blob"]);
        let e = payload_field(&req, None).unwrap_err().to_string();
        assert!(
            e.starts_with("--payload-field is needed") && e.contains("name, word, long_name"),
            "{e}"
        );
        let e = payload_field(&bare, None).unwrap_err().to_string();
        assert!(e.contains("t.v1.Bare has no string or bytes field"), "{e}");
        // by proto name, JSON name, and a dotted path through a message
        assert_eq!(names(&payload_field(&req, Some("name")).unwrap()), ["name"]);
        assert_eq!(
            names(&payload_field(&req, Some("longName")).unwrap()),
            ["long_name"]
        );
        assert_eq!(
            names(&payload_field(&bare, Some("inner.data")).unwrap()),
            ["inner", "data"]
        );
        for (path, words) in [
            ("count", "t.v1.Req.count is an int64 field"),
            ("tags", "is a repeated field"),
            ("m", "is a map"),
            ("inner", "is a message (t.v1.Inner)"),
            ("inner.n", "t.v1.Inner.n is an int32 field"),
            ("name.x", "singular message fields only"),
            (
                "nope",
                "t.v1.Req has no field \"nope\" (its string and bytes fields: name",
            ),
            (
                "inner.nope",
                "t.v1.Inner has no field \"nope\" (its string and bytes fields: data)",
            ),
            ("", "has no field \"\""),
            ("inner.", "has no field \"\""),
        ] {
            let e = payload_field(&req, Some(path)).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!("--payload-field {path}: ")) && e.contains(words),
                "{path}: {e}"
            );
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn the_payload_fills_the_field_and_keeps_the_rest() {
        let (_dir, pool) = payload_pool();
        let req = input(&pool, "Many");
        let base = decode_json(&req, r#"{"count":"7","num":3,"name":"n"}"#).unwrap();
        // a nested message created on the way, the other fields kept
        let path = payload_field(&req, Some("inner.data")).unwrap();
        let bytes = fill_field(&base, &path, 300).unwrap();
        let m = DynamicMessage::decode(req.clone(), &bytes[..]).unwrap();
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(json["count"], "7");
        assert_eq!(json["num"], 3);
        assert_eq!(json["name"], "n");
        let inner = m.get_field_by_name("inner").unwrap();
        let data = inner
            .as_message()
            .unwrap()
            .get_field_by_name("data")
            .unwrap();
        assert_eq!(data.as_bytes().unwrap().as_ref(), &[b'x'; 300][..]);
        // the payload is the field's bytes: the message adds its tags and lengths
        // (inner: tag 1 + length 2; data: tag 1 + length 2)
        assert_eq!(bytes.len(), base.encode_to_vec().len() + 300 + 6);
        // a member of a oneof replaces the one the JSON set; the base is left alone
        let word = fill_field(&base, &payload_field(&req, Some("word")).unwrap(), 5).unwrap();
        let m = DynamicMessage::decode(req.clone(), &word[..]).unwrap();
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(
            (json["word"].as_str(), json.get("num")),
            (Some("xxxxx"), None)
        );
        assert_eq!(serde_json::to_value(&base).unwrap()["num"], 3);
        // a field the JSON set is overwritten
        let name = fill_field(&base, &payload_field(&req, Some("name")).unwrap(), 2).unwrap();
        let m = DynamicMessage::decode(req, &name[..]).unwrap();
        assert_eq!(serde_json::to_value(&m).unwrap()["name"], "xx");
        assert!(fill_field(&base, &[], 1).is_err());
    }

    #[test]
    fn the_echo_payload_is_the_ping_the_echo_sweep_sends() {
        let m = find_method(&echo_pool(), "grpc_echo.v1.EchoService/Echo").unwrap();
        let path = payload_field(&m.input(), None).unwrap();
        assert_eq!(names(&path), ["ping"]);
        let base = decode_json(&m.input(), "{}").unwrap();
        for n in [0, 1, 16, 1000] {
            let want = wirebench_wire::proto::echo::EchoRequest {
                ping: crate::workload::filler(n),
            }
            .encode_to_vec();
            assert_eq!(fill_field(&base, &path, n).unwrap(), want, "{n}");
        }
    }

    #[test]
    fn a_proto_that_does_not_compile_says_where() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("bad.proto");
        std::fs::write(&f, "syntax = \"proto3\";\nmessage A { int32 x = ; }\n").unwrap();
        let e = compile(&[f], &[]).unwrap_err().to_string();
        assert!(
            e.starts_with("--proto-file: ") && e.contains("bad.proto"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }
}
