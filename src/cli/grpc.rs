//! `wirebench grpc TARGET package.Service/Method`: any unary gRPC method, the request given as
//! JSON through a .proto schema compiled at run time (no protoc), or as protobuf bytes.

use std::path::{Path, PathBuf};

use clap::Args;
use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MethodDescriptor};

use super::Action;
use super::common::{RunArgs, parse_endpoints, parse_headers, read_limited};
use crate::config::{GrpcSpec, Target, WorkloadSpec};

/// The largest request file read (`--data-file`, `--data-bin`).
const MAX_DATA_FILE: u64 = 64 << 20;

#[derive(Debug, Args)]
pub struct GrpcArgs {
    /// The server: host:port (plaintext), http://host:port or https://host:port
    pub target: String,
    /// The method: package.Service/Method (or package.Service.Method)
    pub method: String,
    /// The .proto file that defines the method (repeatable); compiled at run time
    #[arg(long = "proto-file")]
    pub proto_files: Vec<PathBuf>,
    /// Where imports are looked up (repeatable); each --proto-file's directory is added
    #[arg(short = 'I', long = "import-path")]
    pub import_paths: Vec<PathBuf>,
    /// The request message as JSON (proto3 JSON mapping) [default: {}]
    #[arg(short = 'd', long, conflicts_with_all = ["data_file", "data_bin"])]
    pub data: Option<String>,
    /// The request message as JSON, from a file
    #[arg(long, conflicts_with = "data_bin")]
    pub data_file: Option<PathBuf>,
    /// The request message as protobuf bytes, from a file (no schema needed)
    #[arg(long)]
    pub data_bin: Option<PathBuf>,
    /// Metadata, NAME:VALUE (repeatable)
    #[arg(short = 'H', long = "header")]
    pub metadata: Vec<String>,
    /// The :authority to send instead of the target's host:port
    #[arg(long)]
    pub authority: Option<String>,
}

/// The schema of `files`, imports looked up in `includes` and each file's directory.
fn compile(files: &[PathBuf], includes: &[PathBuf]) -> Result<DescriptorPool, String> {
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
fn find_method(pool: &DescriptorPool, name: &str) -> Result<MethodDescriptor, String> {
    let name = name.trim_start_matches('/');
    let (service, method) = name
        .rsplit_once('/')
        .or_else(|| name.rsplit_once('.'))
        .ok_or_else(|| format!("method {name:?}: expected package.Service/Method"))?;
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

/// The request message of `method` from JSON, encoded; the error names the field and why.
fn encode_json(method: &MethodDescriptor, json: &str) -> Result<Vec<u8>, String> {
    let input = method.input();
    let mut de = serde_json::Deserializer::from_str(json);
    let msg = DynamicMessage::deserialize(input.clone(), &mut de)
        .and_then(|m| de.end().map(|()| m))
        .map_err(|e| format!("the request is not a {}: {e}", input.full_name()))?;
    Ok(msg.encode_to_vec())
}

impl GrpcArgs {
    pub(super) fn into_run(self, run: RunArgs) -> Result<Action, String> {
        let endpoints = parse_endpoints(std::slice::from_ref(&self.target))?;
        let pool = if self.proto_files.is_empty() {
            None
        } else {
            Some(compile(&self.proto_files, &self.import_paths)?)
        };
        let method = pool
            .as_ref()
            .map(|p| find_method(p, &self.method))
            .transpose()?;
        if let Some(m) = &method {
            let kind = match (m.is_client_streaming(), m.is_server_streaming()) {
                (false, false) => None,
                (true, false) => Some("client-streaming"),
                (false, true) => Some("server-streaming"),
                (true, true) => Some("bidirectional streaming"),
            };
            if let Some(kind) = kind {
                return Err(format!(
                    "{} is a {kind} method: only unary methods are supported yet",
                    m.full_name()
                ));
            }
        }
        let request = match (&self.data_bin, &method) {
            (Some(f), m) => {
                let bytes = read_limited("--data-bin", f, MAX_DATA_FILE)?;
                if let Some(m) = m {
                    DynamicMessage::decode(m.input(), &bytes[..]).map_err(|e| {
                        format!(
                            "--data-bin {}: not a {}: {e}",
                            f.display(),
                            m.input().full_name()
                        )
                    })?;
                }
                bytes
            }
            (None, Some(m)) => {
                let json = match (&self.data, &self.data_file) {
                    (Some(d), _) => d.clone(),
                    (_, Some(f)) => {
                        String::from_utf8(read_limited("--data-file", f, MAX_DATA_FILE)?)
                            .map_err(|_| format!("--data-file {}: not UTF-8 JSON", f.display()))?
                    }
                    _ => "{}".to_string(),
                };
                encode_json(m, &json)?
            }
            (None, None) => {
                return Err(
                    "a JSON request needs the method's schema: --proto-file FILE (or the \
                     request as protobuf bytes with --data-bin FILE)"
                        .into(),
                );
            }
        };
        let path = match &method {
            Some(m) => format!("/{}/{}", m.parent_service().full_name(), m.name()),
            None => {
                let name = self.method.trim_start_matches('/');
                let (service, m) = name
                    .rsplit_once('/')
                    .ok_or_else(|| format!("method {name:?}: expected package.Service/Method"))?;
                format!("/{service}/{m}")
            }
        };
        let spec = WorkloadSpec::Grpc(GrpcSpec {
            path,
            request,
            metadata: parse_headers(&self.metadata)?,
            authority: self.authority,
            response: method.map(|m| m.output()),
        });
        let cfg = run.into_config(spec, endpoints, Target::All)?;
        Ok(Action::Run {
            cfg,
            embedded: None,
        })
    }
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
