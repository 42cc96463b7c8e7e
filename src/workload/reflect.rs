//! gRPC server reflection (`wirebench grpc --reflect`): a service's schema from the server
//! itself, over grpc.reflection.v1's ServerReflectionInfo stream, falling back to v1alpha (the
//! same messages under the older name). Setup, on a connection of its own: outside the
//! figures, as authentication is.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::Uri;
use prost::Message;
use prost_reflect::DescriptorPool;
use prost_types::FileDescriptorProto;

use crate::client::grpc::{Bidi, Call, Conn, H2Config};
use crate::client::{RuntimeError, block_on};
use crate::config::{Config, Endpoint, GrpcSpec};
use crate::net::NetConfig;
use crate::outcome::{Failure, FailureKind};
use crate::workload::grpc::{GrpcError, metadata_of, streaming};
use wirebench_wire::grpc as framing;
use wirebench_wire::grpc::reflection::{
    Answer, Ask, FileDescriptors, ReflectionRequest, ReflectionResponse,
};

/// The largest reflection answer accepted (a schema with its imports).
const MAX_ANSWER: usize = 16 << 20;
/// Files asked for by name at most, beyond the first answer (the imports it left out).
const MAX_FILES: usize = 256;

/// Why one request on a reflection stream got no answer.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error("{0}")]
    Stream(Failure),
    /// the server refused the stream with this grpc-message
    #[error("{0}")]
    Refused(String),
    /// the server refused the stream with this HTTP status (and no grpc-message)
    #[error("HTTP {0}")]
    RefusedStatus(u16),
    #[error("a malformed reflection answer: {0}")]
    Framing(wirebench_wire::grpc::Error),
    #[error("a malformed reflection answer: {0}")]
    Malformed(prost::DecodeError),
    #[error("a reflection answer without content")]
    Empty,
    #[error("the reflection stream ended without an answer")]
    Ended,
}

/// Why reflection gave no schema (or no list of methods).
#[derive(Debug, thiserror::Error)]
pub enum ReflectError {
    /// the server does not know the service: `listed`, the services it lists
    #[error("unknown service {service:?}; the server has: {listed}")]
    UnknownService { service: String, listed: String },
    #[error("connect to {addr}: {source}")]
    Connect {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("reflection: no answer within {0:?}")]
    Timeout(Duration),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error(transparent)]
    Metadata(#[from] GrpcError),
    #[error("{authority}: {source}")]
    Uri {
        authority: String,
        source: http::uri::InvalidUri,
    },
    #[error("reflection: {0}")]
    Open(Failure),
    /// neither version is served: why the first was not
    #[error(
        "the server has no reflection service (grpc.reflection.v1 nor v1alpha): {}",
        .first.as_ref().map(ToString::to_string).unwrap_or_default()
    )]
    NoService { first: Option<AskError> },
    #[error("reflection answered list_services with something else")]
    NotAList,
    #[error("reflection answered a file request with a service list")]
    NotFiles,
    #[error("a malformed file descriptor from reflection: {0}")]
    BadFile(prost::DecodeError),
    #[error("reflection: more than {MAX_FILES} imported files")]
    TooManyFiles,
    #[error("reflection did not give {0:?}")]
    NotGiven(String),
    #[error("reflection has no file {0:?}")]
    NoFile(String),
    #[error(transparent)]
    Ask(AskError),
    /// the files left, none with all its imports in the pool
    #[error("reflection: the files {0:?} import each other or something missing")]
    Cycle(Vec<String>),
    #[error("reflection: file {name:?}: {source}")]
    AddFile {
        name: String,
        source: prost_reflect::DescriptorError,
    },
}

/// One reflection stream: a request, then its answer.
struct Session {
    bidi: Bidi,
    buf: BytesMut,
    head_read: bool,
}

impl Session {
    async fn ask(&mut self, ask: Ask) -> Result<Answer, AskError> {
        let req = ReflectionRequest {
            host: String::new(),
            ask: Some(ask),
        };
        let mut frame = BytesMut::new();
        framing::encode(&req, &mut frame);
        self.bidi.send(frame.freeze()).map_err(AskError::Stream)?;
        if !self.head_read {
            let head = self.bidi.head().await.map_err(AskError::Stream)?;
            if head.status != 200 || head.trailers_only {
                return Err(match head.message {
                    Some(m) => AskError::Refused(m),
                    None => AskError::RefusedStatus(head.status),
                });
            }
            self.head_read = true;
        }
        loop {
            match framing::decode(&mut self.buf, MAX_ANSWER) {
                Ok(Some(msg)) => {
                    let resp = ReflectionResponse::decode(msg).map_err(AskError::Malformed)?;
                    return resp.answer.ok_or(AskError::Empty);
                }
                Ok(None) => {}
                Err(e) => return Err(AskError::Framing(e)),
            }
            if !self
                .bidi
                .recv(&mut self.buf)
                .await
                .map_err(AskError::Stream)?
            {
                return Err(AskError::Ended);
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
    pub fn schema(&self, service: &str) -> Result<DescriptorPool, ReflectError> {
        let files = self.on_stream(async |s| files_of(s, service).await)?;
        pool_of(files)
    }

    /// Every method the server's reflection names, one line each: `package.Service/Method`,
    /// with `(server-streaming)` and the like after a streaming one; the reflection service
    /// itself left out. Sorted.
    pub fn list(&self) -> Result<Vec<String>, ReflectError> {
        let (names, files) = self.on_stream(async |s| {
            let names = match s.ask(Ask::ListServices(String::new())).await {
                Ok(Answer::Services(l)) => {
                    l.services.into_iter().map(|n| n.name).collect::<Vec<_>>()
                }
                Ok(_) => return Err(Step::Failed(ReflectError::NotAList)),
                Err(why) => return Err(Step::NoService(why)),
            };
            let mut files = Vec::new();
            for name in names.iter().filter(|n| !n.starts_with("grpc.reflection.")) {
                files.extend(files_of(s, name).await?);
            }
            Ok((names, files))
        })?;
        let pool = pool_of(files)?;
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
    ) -> Result<T, ReflectError> {
        let h2 = H2Config {
            ledger: false,
            ..*self.h2
        };
        let ep = self.ep;
        let run = async {
            let conn = Conn::connect(&ep.dest(), &ep.host, 0, self.net, &h2)
                .await
                .map_err(|source| ReflectError::Connect {
                    addr: ep.addr,
                    source,
                })?;
            let result = each_version(&conn, ep, self.authority, self.metadata, &work).await;
            conn.close(Duration::from_millis(200)).await;
            result
        };
        let timeout = self.timeout;
        let bounded = async {
            tokio::time::timeout(timeout, run)
                .await
                .unwrap_or(Err(ReflectError::Timeout(timeout)))
        };
        block_on(bounded)?
    }
}

async fn each_version<T>(
    conn: &Conn,
    ep: &Endpoint,
    authority: &str,
    metadata: &[(String, String)],
    work: &impl AsyncFn(&mut Session) -> Result<T, Step>,
) -> Result<T, ReflectError> {
    let meta = metadata_of(metadata)?;
    let scheme = if ep.tls { "https" } else { "http" };
    let mut first_error = None;
    for version in ["v1", "v1alpha"] {
        let uri: Uri = format!(
            "{scheme}://{authority}/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo"
        )
        .parse()
        .map_err(|source| ReflectError::Uri {
            authority: authority.to_string(),
            source,
        })?;
        let call = Call::new(uri, meta.clone(), FailureKind::GrpcStatus);
        let mut send = conn.handle();
        let bidi = Bidi::open(&mut send, conn.ledger(), &call, MAX_ANSWER)
            .await
            .map_err(ReflectError::Open)?;
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
    Err(ReflectError::NoService { first: first_error })
}

enum Step {
    /// this reflection version is not served
    NoService(AskError),
    Failed(ReflectError),
}

/// The files defining `service` and everything they import, as the server sends them.
async fn files_of(s: &mut Session, service: &str) -> Result<Vec<FileDescriptorProto>, Step> {
    let answer = s
        .ask(Ask::FileContainingSymbol(service.to_string()))
        .await
        .map_err(Step::NoService)?;
    let mut files = match answer {
        Answer::Files(f) => decode_files(&f).map_err(Step::Failed)?,
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
            return Err(Step::Failed(ReflectError::UnknownService {
                service: service.to_string(),
                listed,
            }));
        }
        Answer::Services(_) => return Err(Step::Failed(ReflectError::NotFiles)),
    };
    // imports the answer left out, asked for by name (the well-known types are built in)
    let mut asked = 0;
    while let Some(missing) = missing_import(&files) {
        asked += 1;
        if asked > MAX_FILES {
            return Err(Step::Failed(ReflectError::TooManyFiles));
        }
        match s.ask(Ask::FileByFilename(missing.clone())).await {
            Ok(Answer::Files(f)) => {
                let more = decode_files(&f).map_err(Step::Failed)?;
                if !more.iter().any(|f| f.name() == missing) {
                    return Err(Step::Failed(ReflectError::NotGiven(missing)));
                }
                files.extend(more);
            }
            Ok(_) => return Err(Step::Failed(ReflectError::NoFile(missing))),
            Err(e) => return Err(Step::Failed(ReflectError::Ask(e))),
        }
    }
    Ok(files)
}

fn decode_files(f: &FileDescriptors) -> Result<Vec<FileDescriptorProto>, ReflectError> {
    f.files
        .iter()
        .map(|b| {
            FileDescriptorProto::decode(Bytes::copy_from_slice(b)).map_err(ReflectError::BadFile)
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
fn pool_of(mut files: Vec<FileDescriptorProto>) -> Result<DescriptorPool, ReflectError> {
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
            let names = files.iter().map(|f| f.name().to_string()).collect();
            return Err(ReflectError::Cycle(names));
        };
        let f = files.swap_remove(i);
        let name = f.name().to_string();
        pool.add_file_descriptor_proto(f)
            .map_err(|source| ReflectError::AddFile { name, source })?;
    }
    Ok(pool)
}

#[cfg(test)]
mod tests {
    use super::*;

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
