//! gRPC server reflection (`wirebench grpc --reflect`): a service's schema from the server
//! itself, over grpc.reflection.v1's ServerReflectionInfo stream, falling back to v1alpha (the
//! same messages under the older name). Setup, on a connection of its own: outside the
//! figures, as authentication is.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::Uri;
use prost::Message;
use prost_reflect::DescriptorPool;
use prost_types::FileDescriptorProto;

use crate::client::block_on;
use crate::client::grpc::{Bidi, Call, Conn};
use crate::config::{Config, Endpoint, GrpcSpec};
use crate::net::{H2Config, NetConfig};
use crate::outcome::FailureKind;
use crate::workload::grpc::{metadata_of, streaming};
use wirebench_wire::grpc as framing;

/// The largest reflection answer accepted (a schema with its imports).
const MAX_ANSWER: usize = 16 << 20;
/// Files asked for by name at most, beyond the first answer (the imports it left out).
const MAX_FILES: usize = 256;

/// grpc.reflection.v1(alpha).ServerReflectionRequest, the fields used here.
#[derive(Clone, PartialEq, Message)]
struct ReflectionRequest {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(oneof = "Ask", tags = "3, 4, 7")]
    ask: Option<Ask>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Ask {
    #[prost(string, tag = "3")]
    FileByFilename(String),
    #[prost(string, tag = "4")]
    FileContainingSymbol(String),
    #[prost(string, tag = "7")]
    ListServices(String),
}

/// grpc.reflection.v1(alpha).ServerReflectionResponse, the fields used here.
#[derive(Clone, PartialEq, Message)]
struct ReflectionResponse {
    #[prost(oneof = "Answer", tags = "4, 6, 7")]
    answer: Option<Answer>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Answer {
    #[prost(message, tag = "4")]
    Files(FileDescriptors),
    #[prost(message, tag = "6")]
    Services(ServiceList),
    #[prost(message, tag = "7")]
    Error(ReflectionError),
}

#[derive(Clone, PartialEq, Message)]
struct FileDescriptors {
    /// serialized google.protobuf.FileDescriptorProto
    #[prost(bytes = "vec", repeated, tag = "1")]
    files: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct ServiceList {
    #[prost(message, repeated, tag = "1")]
    services: Vec<ServiceName>,
}

#[derive(Clone, PartialEq, Message)]
struct ServiceName {
    #[prost(string, tag = "1")]
    name: String,
}

#[derive(Clone, PartialEq, Message)]
struct ReflectionError {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

/// Why reflection gave no schema.
#[derive(Debug)]
pub enum ReflectFailure {
    /// the server does not know the service: the services it lists
    UnknownService(String),
    /// anything else (no reflection service, connection, malformed answer): one line
    Other(String),
}

/// One reflection stream: a request, then its answer.
struct Session {
    bidi: Bidi,
    buf: BytesMut,
    head_read: bool,
}

impl Session {
    async fn ask(&mut self, ask: Ask) -> Result<Answer, String> {
        let req = ReflectionRequest {
            host: String::new(),
            ask: Some(ask),
        };
        let mut frame = BytesMut::new();
        framing::encode(&req, &mut frame);
        self.bidi.send(frame.freeze()).map_err(|f| f.to_string())?;
        if !self.head_read {
            let head = self.bidi.head().await.map_err(|f| f.to_string())?;
            if head.status != 200 || head.trailers_only {
                return Err(head
                    .message
                    .unwrap_or_else(|| format!("HTTP {}", head.status)));
            }
            self.head_read = true;
        }
        loop {
            match framing::decode(&mut self.buf, MAX_ANSWER) {
                Ok(Some(msg)) => {
                    let resp = ReflectionResponse::decode(msg)
                        .map_err(|e| format!("a malformed reflection answer: {e}"))?;
                    return resp
                        .answer
                        .ok_or_else(|| "a reflection answer without content".to_string());
                }
                Ok(None) => {}
                Err(e) => return Err(format!("a malformed reflection answer: {e}")),
            }
            if !self
                .bidi
                .recv(&mut self.buf)
                .await
                .map_err(|f| f.to_string())?
            {
                return Err("the reflection stream ended without an answer".into());
            }
        }
    }
}

/// A server whose reflection service is asked: its endpoint, the `:authority` and metadata to
/// ask with, the connection settings, and the time it may take.
pub struct Reflected<'a> {
    ep: &'a Endpoint,
    authority: &'a str,
    metadata: &'a [(String, String)],
    net: &'a NetConfig,
    h2: &'a H2Config,
    timeout: Duration,
}

impl<'a> Reflected<'a> {
    /// The server at `ep` as a run of `cfg` calls it for the method of `g` (its authority and
    /// metadata), within the run's `--timeout`.
    pub fn new(cfg: &'a Config, g: &'a GrpcSpec, ep: &'a Endpoint) -> Reflected<'a> {
        Reflected {
            ep,
            authority: g.authority.as_deref().unwrap_or(&ep.authority),
            metadata: &g.metadata,
            net: &cfg.net,
            h2: &cfg.h2,
            timeout: cfg.load.timeout,
        }
    }

    /// The schema of `service`, with every file it imports.
    pub fn schema(&self, service: &str) -> Result<DescriptorPool, ReflectFailure> {
        let files = self.on_stream(async |s| files_of(s, service).await)?;
        pool_of(files).map_err(ReflectFailure::Other)
    }

    /// Every method the server's reflection names, one line each: `package.Service/Method`,
    /// with `(server-streaming)` and the like after a streaming one; the reflection service
    /// itself left out. Sorted.
    pub fn list(&self) -> Result<Vec<String>, ReflectFailure> {
        let (names, files) = self.on_stream(async |s| {
            let names = match s.ask(Ask::ListServices(String::new())).await {
                Ok(Answer::Services(l)) => {
                    l.services.into_iter().map(|n| n.name).collect::<Vec<_>>()
                }
                Ok(_) => {
                    return Err(Step::Failed(ReflectFailure::Other(
                        "reflection answered list_services with something else".into(),
                    )));
                }
                Err(why) => return Err(Step::NoService(why)),
            };
            let mut files = Vec::new();
            for name in names.iter().filter(|n| !n.starts_with("grpc.reflection.")) {
                files.extend(files_of(s, name).await?);
            }
            Ok((names, files))
        })?;
        let pool = pool_of(files).map_err(ReflectFailure::Other)?;
        let mut lines = Vec::new();
        for name in names.iter().filter(|n| !n.starts_with("grpc.reflection.")) {
            let Some(svc) = pool.get_service_by_name(name) else {
                continue;
            };
            for m in svc.methods() {
                match streaming(&m) {
                    Some(kind) => lines.push(format!("{name}/{} ({kind})", m.name())),
                    None => lines.push(format!("{name}/{}", m.name())),
                }
            }
        }
        lines.sort();
        Ok(lines)
    }

    /// Connects and runs `work` on a reflection stream, v1 first, then v1alpha when the server
    /// does not serve v1; bounded by the timeout.
    fn on_stream<T>(
        &self,
        work: impl AsyncFn(&mut Session) -> Result<T, Step>,
    ) -> Result<T, ReflectFailure> {
        let h2 = H2Config {
            ledger: false,
            ..*self.h2
        };
        let ep = self.ep;
        let run = async {
            let conn = Conn::connect(ep.addr, &ep.host, 0, self.net, &h2)
                .await
                .map_err(|e| ReflectFailure::Other(format!("connect to {}: {e}", ep.addr)))?;
            let result = each_version(&conn, ep, self.authority, self.metadata, &work).await;
            conn.close(Duration::from_millis(200)).await;
            result
        };
        let timeout = self.timeout;
        let bounded = async {
            tokio::time::timeout(timeout, run)
                .await
                .unwrap_or_else(|_| {
                    Err(ReflectFailure::Other(format!(
                        "reflection: no answer within {timeout:?}"
                    )))
                })
        };
        block_on(bounded).map_err(ReflectFailure::Other)?
    }
}

async fn each_version<T>(
    conn: &Conn,
    ep: &Endpoint,
    authority: &str,
    metadata: &[(String, String)],
    work: &impl AsyncFn(&mut Session) -> Result<T, Step>,
) -> Result<T, ReflectFailure> {
    let meta = metadata_of(metadata).map_err(ReflectFailure::Other)?;
    let scheme = if ep.tls { "https" } else { "http" };
    let mut first_error = None;
    for version in ["v1", "v1alpha"] {
        let uri: Uri = format!(
            "{scheme}://{authority}/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo"
        )
        .parse()
        .map_err(|e| ReflectFailure::Other(format!("{authority}: {e}")))?;
        let call = Call::new(uri, meta.clone(), FailureKind::GrpcStatus);
        let mut send = conn.handle();
        let bidi = Bidi::open(&mut send, conn.ledger(), &call, MAX_ANSWER)
            .await
            .map_err(|f| ReflectFailure::Other(format!("reflection: {f}")))?;
        let mut session = Session {
            bidi,
            buf: BytesMut::new(),
            head_read: false,
        };
        match work(&mut session).await {
            Err(Step::NoService(why)) => {
                first_error.get_or_insert(why);
            }
            Err(Step::Failed(f)) => return Err(f),
            Ok(t) => return Ok(t),
        }
    }
    Err(ReflectFailure::Other(format!(
        "the server has no reflection service (grpc.reflection.v1 nor v1alpha): {}",
        first_error.unwrap_or_default()
    )))
}

enum Step {
    /// this reflection version is not served
    NoService(String),
    Failed(ReflectFailure),
}

/// The files defining `service` and everything they import, as the server sends them.
async fn files_of(s: &mut Session, service: &str) -> Result<Vec<FileDescriptorProto>, Step> {
    let answer = s
        .ask(Ask::FileContainingSymbol(service.to_string()))
        .await
        .map_err(Step::NoService)?;
    let mut files = match answer {
        Answer::Files(f) => decode_files(&f).map_err(|e| Step::Failed(ReflectFailure::Other(e)))?,
        Answer::Error(_) => {
            let listed = match s.ask(Ask::ListServices(String::new())).await {
                Ok(Answer::Services(l)) => l
                    .services
                    .iter()
                    .map(|n| n.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                _ => "(it did not list them)".to_string(),
            };
            return Err(Step::Failed(ReflectFailure::UnknownService(format!(
                "unknown service {service:?}; the server has: {listed}"
            ))));
        }
        Answer::Services(_) => {
            return Err(Step::Failed(ReflectFailure::Other(
                "reflection answered a file request with a service list".into(),
            )));
        }
    };
    // imports the answer left out, asked for by name (the well-known types are built in)
    let mut asked = 0;
    while let Some(missing) = missing_import(&files) {
        asked += 1;
        if asked > MAX_FILES {
            return Err(Step::Failed(ReflectFailure::Other(format!(
                "reflection: more than {MAX_FILES} imported files"
            ))));
        }
        match s.ask(Ask::FileByFilename(missing.clone())).await {
            Ok(Answer::Files(f)) => {
                let more = decode_files(&f).map_err(|e| Step::Failed(ReflectFailure::Other(e)))?;
                if !more.iter().any(|f| f.name() == missing) {
                    return Err(Step::Failed(ReflectFailure::Other(format!(
                        "reflection did not give {missing:?}"
                    ))));
                }
                files.extend(more);
            }
            Ok(_) => {
                return Err(Step::Failed(ReflectFailure::Other(format!(
                    "reflection has no file {missing:?}"
                ))));
            }
            Err(e) => return Err(Step::Failed(ReflectFailure::Other(e))),
        }
    }
    Ok(files)
}

fn decode_files(f: &FileDescriptors) -> Result<Vec<FileDescriptorProto>, String> {
    f.files
        .iter()
        .map(|b| {
            FileDescriptorProto::decode(Bytes::copy_from_slice(b))
                .map_err(|e| format!("a malformed file descriptor from reflection: {e}"))
        })
        .collect()
}

/// An import none of `files` defines and the built-in well-known types do not either.
fn missing_import(files: &[FileDescriptorProto]) -> Option<String> {
    let global = DescriptorPool::global();
    files
        .iter()
        .flat_map(|f| f.dependency.iter())
        .find(|dep| {
            !files.iter().any(|f| f.name() == dep.as_str())
                && global.get_file_by_name(dep).is_none()
        })
        .cloned()
}

/// A pool of the well-known types and `files`, added in import order.
fn pool_of(mut files: Vec<FileDescriptorProto>) -> Result<DescriptorPool, String> {
    let mut pool = DescriptorPool::global();
    // once each (several services may share a file), and not the built-in ones
    let mut seen = std::collections::HashSet::new();
    files
        .retain(|f| pool.get_file_by_name(f.name()).is_none() && seen.insert(f.name().to_string()));
    // dependencies first: add whatever has all its imports in the pool, until nothing is left
    while !files.is_empty() {
        let ready = files.iter().position(|f| {
            f.dependency
                .iter()
                .all(|d| pool.get_file_by_name(d).is_some())
        });
        let Some(i) = ready else {
            let names: Vec<&str> = files.iter().map(|f| f.name()).collect();
            return Err(format!(
                "reflection: the files {names:?} import each other or something missing"
            ));
        };
        let f = files.swap_remove(i);
        let name = f.name().to_string();
        pool.add_file_descriptor_proto(f)
            .map_err(|e| format!("reflection: file {name:?}: {e}"))?;
    }
    Ok(pool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_carry_the_field_numbers_of_the_reflection_protocol() {
        // file_containing_symbol = 4, list_services = 7, file_by_filename = 3
        let r = ReflectionRequest {
            host: String::new(),
            ask: Some(Ask::FileContainingSymbol("a.B".into())),
        };
        assert_eq!(r.encode_to_vec(), b"\x22\x03a.B");
        let r = ReflectionRequest {
            host: String::new(),
            ask: Some(Ask::ListServices(String::new())),
        };
        assert_eq!(r.encode_to_vec(), b"\x3a\x00");
        // an answer with list_services_response = 6 { service = 1 { name = 1 } }
        let answer = ReflectionResponse::decode(&b"\x32\x05\x0a\x03\x0a\x01x"[..]).unwrap();
        let Some(Answer::Services(l)) = answer.answer else {
            panic!("a service list: {answer:?}");
        };
        assert_eq!(l.services[0].name, "x");
    }

    #[test]
    fn files_are_added_dependencies_first() {
        let file = |name: &str, deps: &[&str], msg: &str| FileDescriptorProto {
            name: Some(name.into()),
            package: Some("t".into()),
            dependency: deps.iter().map(|d| d.to_string()).collect(),
            message_type: vec![prost_types::DescriptorProto {
                name: Some(msg.into()),
                ..Default::default()
            }],
            syntax: Some("proto3".into()),
            ..Default::default()
        };
        let files = vec![
            file(
                "b.proto",
                &["a.proto", "google/protobuf/timestamp.proto"],
                "B",
            ),
            file("a.proto", &[], "A"),
        ];
        assert_eq!(missing_import(&files), None);
        let pool = pool_of(files).unwrap();
        assert!(pool.get_message_by_name("t.A").is_some());
        assert!(pool.get_message_by_name("t.B").is_some());
        let lonely = vec![file("c.proto", &["nowhere.proto"], "C")];
        assert_eq!(missing_import(&lonely).as_deref(), Some("nowhere.proto"));
        assert!(pool_of(lonely).is_err());
    }
}
