//! The echo server's gRPC reflection service (grpc.reflection.v1, and v1alpha with the same
//! messages): the schemas of what it serves (grpc-echo's EchoService, Health, the streaming
//! echoes), built into the wire crate, so `wirebench grpc --reflect`, `call grpc --list` and
//! grpcurl need no .proto file. Each request on the stream is answered in turn: the file that
//! defines a symbol or has a name, with every file it imports (dependencies first), or the
//! service list; an unknown name gets NOT_FOUND in the answer, and the stream goes on.

use std::collections::HashSet;
use std::sync::OnceLock;

use bytes::{Bytes, BytesMut};
use h2::RecvStream;
use h2::server::SendResponse;
use http::{HeaderMap, HeaderValue, Response};
use prost::Message;
use prost_types::{FileDescriptorProto, FileDescriptorSet};

use crate::server::MAX_REQUEST;
use wirebench_wire::grpc::reflection::{
    Answer, Ask, FileDescriptors, ReflectionError, ReflectionRequest, ReflectionResponse,
    ServiceList, ServiceName,
};
use wirebench_wire::grpc::{self, Code};
use wirebench_wire::proto::DESCRIPTOR_SET;

/// The two names the service answers under.
pub(super) const PATHS: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// The services listed (the reflection service's own names too, as grpcio lists them).
const SERVICES: [&str; 5] = [
    "grpc_echo.v1.EchoService",
    "grpc.health.v1.Health",
    "wirebench.stream.v1.StreamEcho",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
];

/// The built-in files, decoded once.
fn files() -> &'static [FileDescriptorProto] {
    static FILES: OnceLock<Vec<FileDescriptorProto>> = OnceLock::new();
    FILES.get_or_init(|| {
        FileDescriptorSet::decode(DESCRIPTOR_SET)
            .map(|s| s.file)
            .unwrap_or_default()
    })
}

/// Whether `f` defines `symbol` by its full name: a message (a nested one by its outer one),
/// an enum, a service or one of its methods.
fn defines(f: &FileDescriptorProto, symbol: &str) -> bool {
    let rest = if f.package().is_empty() {
        Some(symbol)
    } else {
        symbol
            .strip_prefix(f.package())
            .and_then(|r| r.strip_prefix('.'))
    };
    let Some(rest) = rest else { return false };
    let (top, member) = match rest.split_once('.') {
        Some((t, m)) => (t, Some(m)),
        None => (rest, None),
    };
    f.message_type.iter().any(|m| m.name() == top)
        || (member.is_none() && f.enum_type.iter().any(|e| e.name() == top))
        || f.service.iter().any(|s| {
            s.name() == top && member.is_none_or(|m| s.method.iter().any(|x| x.name() == m))
        })
}

/// The file named `name` and everything it imports, each once, dependencies first.
fn with_imports(name: &str, out: &mut Vec<Vec<u8>>, seen: &mut HashSet<String>) {
    if !seen.insert(name.to_string()) {
        return;
    }
    let Some(f) = files().iter().find(|f| f.name() == name) else {
        return;
    };
    for dep in &f.dependency {
        with_imports(dep, out, seen);
    }
    out.push(f.encode_to_vec());
}

/// The answer to one request.
fn answer(ask: &Ask) -> Answer {
    let not_found = |what: &str| {
        Answer::Error(ReflectionError {
            code: Code::NotFound.as_u32() as i32,
            message: format!("{what} not found"),
        })
    };
    let file = match ask {
        Ask::ListServices(_) => {
            return Answer::Services(ServiceList {
                services: SERVICES
                    .iter()
                    .map(|s| ServiceName {
                        name: (*s).to_string(),
                    })
                    .collect(),
            });
        }
        Ask::FileByFilename(name) => files().iter().find(|f| f.name() == name.as_str()),
        Ask::FileContainingSymbol(symbol) => files().iter().find(|f| defines(f, symbol)),
    };
    let Some(file) = file else {
        return not_found(match ask {
            Ask::FileByFilename(n) | Ask::FileContainingSymbol(n) | Ask::ListServices(n) => n,
        });
    };
    let mut out = Vec::new();
    with_imports(file.name(), &mut out, &mut HashSet::new());
    Answer::Files(FileDescriptors { files: out })
}

/// Answers every request of one reflection stream until the client ends it.
pub(super) async fn handle(mut body: RecvStream, mut respond: SendResponse<Bytes>) {
    let mut head = Response::new(());
    head.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/grpc"));
    let Ok(mut stream) = respond.send_response(head, false) else {
        return;
    };
    let mut rx = BytesMut::new();
    let mut status = Code::Ok;
    'stream: loop {
        loop {
            let req = match grpc::decode_message::<ReflectionRequest>(&mut rx, MAX_REQUEST) {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(_) => {
                    status = Code::InvalidArgument;
                    break 'stream;
                }
            };
            let answer = req.ask.as_ref().map(answer);
            let resp = ReflectionResponse {
                valid_host: req.host.clone(),
                original_request: Some(req),
                answer,
            };
            let mut out = BytesMut::new();
            grpc::encode(&resp, &mut out);
            if stream.send_data(out.freeze(), false).is_err() {
                return;
            }
        }
        match body.data().await {
            None => break,
            Some(Err(_)) => return,
            Some(Ok(chunk)) => {
                let _ = body.flow_control().release_capacity(chunk.len());
                if rx.len() + chunk.len() > MAX_REQUEST + grpc::PREFIX_LEN {
                    status = Code::ResourceExhausted;
                    break;
                }
                rx.extend_from_slice(&chunk);
            }
        }
    }
    let mut t = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(&status.as_u32().to_string()) {
        t.insert("grpc-status", v);
    }
    let _ = stream.send_trailers(t);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_are_found_in_the_files_that_define_them() {
        for (symbol, file) in [
            ("grpc_echo.v1.EchoService", "echo.proto"),
            ("grpc_echo.v1.EchoService.Echo", "echo.proto"),
            ("grpc_echo.v1.EchoRequest", "echo.proto"),
            ("wirebench.stream.v1.StreamEcho.BidiEcho", "stream.proto"),
            ("grpc.health.v1.Health", "health.proto"),
        ] {
            let Answer::Files(f) = answer(&Ask::FileContainingSymbol(symbol.into())) else {
                panic!("{symbol}: not found");
            };
            let names: Vec<String> = f
                .files
                .iter()
                .map(|b| {
                    FileDescriptorProto::decode(&b[..])
                        .unwrap()
                        .name()
                        .to_string()
                })
                .collect();
            // the defining file last, after what it imports
            assert_eq!(
                names.last().map(String::as_str),
                Some(file),
                "{symbol}: {names:?}"
            );
        }
        // echo.proto imports timestamp.proto: it comes first
        let Answer::Files(f) = answer(&Ask::FileByFilename("echo.proto".into())) else {
            panic!("echo.proto");
        };
        let first = FileDescriptorProto::decode(&f.files[0][..]).unwrap();
        assert_eq!(first.name(), "google/protobuf/timestamp.proto");
        for unknown in ["grpc_echo.v1.Nope", "grpc_echo.v1.EchoService.Nope", "x"] {
            assert!(
                matches!(answer(&Ask::FileContainingSymbol(unknown.into())), Answer::Error(e) if e.code == 5),
                "{unknown}"
            );
        }
        let Answer::Services(l) = answer(&Ask::ListServices(String::new())) else {
            panic!("a list");
        };
        assert_eq!(l.services.len(), SERVICES.len());
    }
}
