//! Any unary or server-streaming gRPC method (`wirebench grpc TARGET Service/Method`): the same
//! encoded request on every call; a unary call is OK when it ends with grpc-status 0 and
//! exactly one message, as ghz counts it, a server-streaming one when its stream ends with
//! grpc-status 0 (its messages are counted); the messages' content is not judged (the sample
//! shows the first as JSON when the schema is known).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::Uri;
use http::header::{HeaderName, HeaderValue};
use std::path::{Path, PathBuf};

use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, MethodDescriptor};
use serde_json::Value;

use crate::client::grpc::Call;
use crate::config::{Endpoint, GrpcRequest, GrpcSpec};
use crate::outcome::FailureKind;

#[derive(Debug)]
struct Shared {
    calls: Vec<Call>,
    frame: Bytes,
    response: Option<MessageDescriptor>,
    server_streaming: bool,
}

/// One client's view: everything is shared and read-only.
#[derive(Debug, Clone)]
pub struct GrpcWorkload {
    shared: Arc<Shared>,
}

impl GrpcWorkload {
    pub fn new(spec: &GrpcSpec, endpoints: &[Endpoint]) -> Result<GrpcWorkload, String> {
        let metadata = metadata_of(&spec.metadata)?;
        let mut calls = Vec::with_capacity(endpoints.len());
        for ep in endpoints {
            let authority = spec.authority.as_deref().unwrap_or(&ep.authority);
            let scheme = if ep.tls { "https" } else { "http" };
            let uri: Uri = format!("{scheme}://{authority}{}", spec.path)
                .parse()
                .map_err(|e| format!("{authority}{}: {e}", spec.path))?;
            calls.push(Call::new(uri, metadata.clone(), FailureKind::GrpcStatus));
        }
        let GrpcRequest::Encoded(request) = &spec.request else {
            return Err("the request waits for the server's schema (reflection)".into());
        };
        let mut frame = BytesMut::with_capacity(wirebench_wire::grpc::PREFIX_LEN + request.len());
        let len = u32::try_from(request.len())
            .map_err(|_| "the request message is larger than 4 GiB".to_string())?;
        frame.extend_from_slice(&[0]);
        frame.extend_from_slice(&len.to_be_bytes());
        frame.extend_from_slice(request);
        Ok(GrpcWorkload {
            shared: Arc::new(Shared {
                calls,
                frame: frame.freeze(),
                response: spec.response.clone(),
                server_streaming: spec.server_streaming,
            }),
        })
    }

    pub fn for_client(&self) -> GrpcWorkload {
        self.clone()
    }

    pub fn call(&self, ep: usize) -> &Call {
        &self.shared.calls[ep]
    }

    /// The method streams its response: a call is OK when its stream ends with grpc-status 0,
    /// whatever the number of messages.
    pub fn server_streaming(&self) -> bool {
        self.shared.server_streaming
    }

    /// The framed request, the same for every call.
    pub fn grpc_request(&self) -> &Bytes {
        &self.shared.frame
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

/// The schema of `files`, imports looked up in `includes` and each file's directory.
pub fn compile(files: &[PathBuf], includes: &[PathBuf]) -> Result<DescriptorPool, String> {
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
    let mut compiler = protox::Compiler::new(&dirs).map_err(|e| format!("--proto-file: {e}"))?;
    compiler.include_imports(true);
    compiler.open_files(files).map_err(|e| {
        let what = e.to_string().replace('\n', " ");
        match e.file() {
            Some(file) if !what.contains(file) => format!("--proto-file: {file}: {what}"),
            _ => format!("--proto-file: {what}"),
        }
    })?;
    Ok(compiler.descriptor_pool())
}

/// `package.Service/Method` or `package.Service.Method` in `pool`; the error lists what the
/// schema offers.
pub fn find_method(pool: &DescriptorPool, name: &str) -> Result<MethodDescriptor, String> {
    let name = name.trim_start_matches('/');
    let service = service_of(name)?;
    let method = &name[service.len() + 1..];
    let Some(svc) = pool.get_service_by_name(service) else {
        let known: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
        return Err(format!(
            "unknown service {service:?}; the schema has: {}",
            if known.is_empty() {
                "no services".to_string()
            } else {
                known.join(", ")
            }
        ));
    };
    svc.methods().find(|m| m.name() == method).ok_or_else(|| {
        let known: Vec<String> = svc.methods().map(|m| m.name().to_string()).collect();
        format!(
            "unknown method {method:?} of {service}; it has: {}",
            known.join(", ")
        )
    })
}

/// `-H NAME:VALUE` pairs as gRPC metadata (names lower-cased).
pub fn metadata_of(list: &[(String, String)]) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
    list.iter()
        .map(|(k, v)| {
            let name = HeaderName::from_bytes(k.to_ascii_lowercase().as_bytes())
                .map_err(|_| format!("invalid metadata name {k:?}"))?;
            let value =
                HeaderValue::from_str(v).map_err(|_| format!("invalid metadata value for {k}"))?;
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

/// Whether `m` can be measured: unary (`false`) and server-streaming (`true`) methods can,
/// client-streaming and bidirectional ones are refused (not supported yet).
pub fn callable(m: &MethodDescriptor) -> Result<bool, String> {
    match (m.is_client_streaming(), m.is_server_streaming()) {
        (false, server) => Ok(server),
        _ => Err(format!(
            "{} is a {} method: only unary and server-streaming methods are supported yet",
            m.full_name(),
            streaming(m).unwrap_or("streaming")
        )),
    }
}

/// The service part of `package.Service/Method` (or `package.Service.Method`).
pub fn service_of(method: &str) -> Result<&str, String> {
    let name = method.trim_start_matches('/');
    name.rsplit_once('/')
        .or_else(|| name.rsplit_once('.'))
        .map(|(s, _)| s)
        .ok_or_else(|| format!("method {name:?}: expected package.Service/Method"))
}

/// The request message of `method` from JSON, encoded; the error names the field and why.
pub fn encode_json(method: &MethodDescriptor, json: &str) -> Result<Vec<u8>, String> {
    let input = method.input();
    let mut de = serde_json::Deserializer::from_str(json);
    let msg = DynamicMessage::deserialize(input.clone(), &mut de)
        .and_then(|m| de.end().map(|()| m))
        .map_err(|e| format!("the request is not a {}: {e}", input.full_name()))?;
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
        let e = find_method(&pool, "grpc_echo.v1.Nope/Echo").unwrap_err();
        assert!(
            e.contains("the schema has: grpc_echo.v1.EchoService"),
            "{e}"
        );
        let e = find_method(&pool, "grpc_echo.v1.EchoService/Nope").unwrap_err();
        assert!(e.contains("it has: Echo"), "{e}");
    }

    #[test]
    fn json_requests_are_encoded_and_bad_fields_named() {
        let m = find_method(&echo_pool(), "grpc_echo.v1.EchoService/Echo").unwrap();
        // field 1, length 2, "hi"
        assert_eq!(encode_json(&m, r#"{"ping":"hi"}"#).unwrap(), b"\x0a\x02hi");
        assert_eq!(encode_json(&m, "{}").unwrap(), b"");
        let e = encode_json(&m, r#"{"pong":"hi"}"#).unwrap_err();
        assert!(
            e.contains("grpc_echo.v1.EchoRequest") && e.contains("pong"),
            "{e}"
        );
        let e = encode_json(&m, r#"{"ping":3}"#).unwrap_err();
        assert!(e.contains("grpc_echo.v1.EchoRequest"), "{e}");
        assert!(encode_json(&m, r#"{"ping":"a"} x"#).is_err());
    }

    #[test]
    fn a_proto_that_does_not_compile_says_where() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("bad.proto");
        std::fs::write(&f, "syntax = \"proto3\";\nmessage A { int32 x = ; }\n").unwrap();
        let e = compile(&[f], &[]).unwrap_err();
        assert!(
            e.starts_with("--proto-file: ") && e.contains("bad.proto"),
            "{e}"
        );
        assert!(!e.contains('\n'));
    }
}
