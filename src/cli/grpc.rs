//! `wirebench grpc TARGET package.Service/Method`: any gRPC method (unary, server-streaming,
//! client-streaming or bidi, as its schema says), the request given as JSON through a .proto
//! schema compiled at run time (no protoc), or as protobuf bytes.

use std::path::PathBuf;

use clap::Args;
use prost_reflect::DynamicMessage;

use super::Action;
use super::common::{RunArgs, parse_endpoints, parse_headers, read_limited};
use super::error::ArgError;
use super::heading;
use crate::config::{
    BidiMode, Endpoint, GrpcRequest, GrpcSpec, StreamPlan, Target, WorkloadSpec, parse_duration,
};
use crate::workload::grpc::{call_kind, compile, encode_messages, find_method, service_of};

/// The largest request file read (`--data-file`, `--data-bin`).
pub(super) const MAX_DATA_FILE: u64 = 64 << 20;

#[derive(Debug, Args)]
pub struct GrpcArgs {
    /// The server: host:port (plaintext), http://host:port or https://host:port
    pub target: String,
    /// The method: package.Service/Method (or package.Service.Method)
    pub method: Option<String>,
    /// The .proto file that defines the method (repeatable); compiled at run time
    #[arg(long = "proto-file", help_heading = heading::REQUEST)]
    pub proto_files: Vec<PathBuf>,
    /// Where imports are looked up (repeatable); each --proto-file's directory is added
    #[arg(short = 'I', long = "import-path", help_heading = heading::REQUEST)]
    pub import_paths: Vec<PathBuf>,
    /// The request message as JSON (proto3 JSON mapping) [default: {}]
    #[arg(
        short = 'd',
        long,
        conflicts_with_all = ["data_file", "data_bin"],
        help_heading = heading::REQUEST
    )]
    pub data: Option<String>,
    /// The request message as JSON, from a file
    #[arg(long, conflicts_with = "data_bin", help_heading = heading::REQUEST)]
    pub data_file: Option<PathBuf>,
    /// The request message as protobuf bytes, from a file (no schema needed)
    #[arg(long, help_heading = heading::REQUEST)]
    pub data_bin: Option<PathBuf>,
    /// Metadata, NAME:VALUE (repeatable)
    #[arg(short = 'H', long = "header", help_heading = heading::REQUEST)]
    pub metadata: Vec<String>,
    /// The :authority to send instead of the target's host:port
    #[arg(long, help_heading = heading::REQUEST)]
    pub authority: Option<String>,
    /// Ask the server for the method's schema (grpc.reflection.v1, falling back to v1alpha)
    /// before the run, instead of --proto-file
    #[arg(long, help_heading = heading::REQUEST)]
    pub reflect: bool,
    /// Client-streaming and bidi methods: messages each stream sends (a JSON array in -d gives
    /// them in turn), or a duration (5s): each stream sends for that long
    #[arg(
        long,
        visible_alias = "stream-call-count",
        default_value = "10",
        value_parser = parse_stream_length,
        help_heading = heading::STREAMS
    )]
    pub stream_messages: StreamLength,
    /// The wait between two messages of a stream (10ms); none: each goes as soon as it may
    #[arg(long, value_parser = parse_duration, help_heading = heading::STREAMS)]
    pub stream_interval: Option<std::time::Duration>,
    /// Bidi methods: pingpong (each message waits for the reply to the one before, and is
    /// timed to its reply) or free (the messages go while the replies come)
    #[arg(long, value_enum, default_value_t = BidiArg::Pingpong, help_heading = heading::STREAMS)]
    pub bidi: BidiArg,
}

/// `--stream-messages`: a count, or a duration to send for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamLength {
    Messages(u64),
    For(std::time::Duration),
}

/// `--stream-messages`: `100` (messages) or `5s` (a duration in the flags' grammar).
fn parse_stream_length(s: &str) -> Result<StreamLength, String> {
    if let Ok(n) = s.parse::<u64>() {
        return Ok(StreamLength::Messages(n));
    }
    parse_duration(s)
        .map(StreamLength::For)
        .map_err(|e| format!("a number of messages or a duration (5s): {e}"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BidiArg {
    Pingpong,
    Free,
}

impl GrpcArgs {
    /// What a client stream sends (`--stream-messages`, `--stream-interval`, `--bidi`).
    pub(super) fn stream_plan(&self) -> Result<StreamPlan, ArgError> {
        let (messages, span) = match self.stream_messages {
            StreamLength::Messages(0) => {
                return Err(ArgError::Zero {
                    flag: "stream-messages",
                });
            }
            StreamLength::Messages(n) => (n, None),
            StreamLength::For(d) if d.is_zero() => {
                return Err(ArgError::NotPositive {
                    flag: "stream-messages",
                });
            }
            StreamLength::For(_)
                if self.bidi == BidiArg::Free && self.stream_interval.is_none() =>
            {
                return Err(ArgError::Conflict(
                    "--stream-messages as a duration with --bidi free needs --stream-interval: \
                     without one the stream would queue messages as fast as it can for all \
                     that time",
                ));
            }
            StreamLength::For(d) => (u64::MAX, Some(d)),
        };
        if self.stream_interval.is_some_and(|d| d.is_zero()) {
            return Err(ArgError::NotPositive {
                flag: "stream-interval",
            });
        }
        Ok(StreamPlan {
            messages,
            span,
            interval: self.stream_interval,
            bidi: match self.bidi {
                BidiArg::Pingpong => BidiMode::PingPong,
                BidiArg::Free => BidiMode::Free,
            },
        })
    }

    /// The request JSON from -d or --data-file (`{}` without either).
    pub(super) fn json(&self) -> Result<String, ArgError> {
        match (&self.data, &self.data_file) {
            (Some(d), _) => Ok(d.clone()),
            (_, Some(f)) => String::from_utf8(read_limited("--data-file", f, MAX_DATA_FILE)?)
                .map_err(|_| ArgError::NotUtf8(f.clone())),
            _ => Ok("{}".to_string()),
        }
    }

    pub(super) fn into_run(self, run: RunArgs) -> Result<Action, ArgError> {
        let (spec, endpoints) = self.spec()?;
        let cfg = run.into_config(spec, endpoints, Target::All)?;
        Ok(Action::Run {
            cfg,
            embedded: None,
        })
    }

    /// What `call grpc --list` needs of these flags: the endpoint, metadata and authority (the
    /// spec's request is never made).
    pub(super) fn listing(self) -> Result<(WorkloadSpec, Vec<Endpoint>), ArgError> {
        if self.method.is_some() {
            return Err(ArgError::Conflict("--list takes no METHOD: it lists them"));
        }
        let endpoints = parse_endpoints(std::slice::from_ref(&self.target))?;
        let spec = WorkloadSpec::Grpc(GrpcSpec {
            path: String::new(),
            request: GrpcRequest::ByReflection {
                method: String::new(),
                json: String::new(),
            },
            metadata: parse_headers(&self.metadata)?,
            authority: self.authority,
            response: None,
            server_streaming: false,
            client_streaming: false,
            stream: StreamPlan::default(),
            more: Vec::new(),
            templated: None,
        });
        Ok((spec, endpoints))
    }

    /// The workload and the endpoint these flags name.
    pub(super) fn spec(self) -> Result<(WorkloadSpec, Vec<Endpoint>), ArgError> {
        let endpoints = parse_endpoints(std::slice::from_ref(&self.target))?;
        let Some(method) = self.method.as_deref() else {
            return Err(ArgError::Needed(
                "a method is needed: package.Service/Method (`wirebench call grpc \
                 TARGET --list` lists what a server with reflection has)",
            ));
        };
        let service = service_of(method).map_err(|e| e.to_string())?;
        let name = method.trim_start_matches('/');
        let path = format!("/{service}/{}", &name[service.len() + 1..]);
        if self.reflect && !self.proto_files.is_empty() {
            return Err(ArgError::Conflict(
                "--reflect and --proto-file: give the schema one way",
            ));
        }
        let stream = self.stream_plan()?;
        let (mut server_streaming, mut client_streaming, mut more) = (false, false, Vec::new());
        let mut templated = None;
        let (request, response) = if self.reflect {
            if self.data_bin.is_some() {
                return Err(ArgError::Conflict(
                    "--data-bin needs no schema: leave out --reflect",
                ));
            }
            let json = self.json()?;
            let method = name.to_string();
            (GrpcRequest::ByReflection { method, json }, None)
        } else if self.proto_files.is_empty() {
            let Some(f) = &self.data_bin else {
                return Err(ArgError::Needed(
                    "a JSON request needs the method's schema: --proto-file FILE or --reflect \
                     (or the request as protobuf bytes with --data-bin FILE)",
                ));
            };
            let bytes = read_limited("--data-bin", f, MAX_DATA_FILE)?;
            (GrpcRequest::Encoded(bytes), None)
        } else {
            let pool = compile(&self.proto_files, &self.import_paths).map_err(|e| e.to_string())?;
            let m = find_method(&pool, method).map_err(|e| e.to_string())?;
            (client_streaming, server_streaming) = call_kind(&m);
            let bytes = match &self.data_bin {
                Some(f) => {
                    let bytes = read_limited("--data-bin", f, MAX_DATA_FILE)?;
                    DynamicMessage::decode(m.input(), &bytes[..]).map_err(|source| {
                        ArgError::NotAMessage {
                            path: f.clone(),
                            message: m.input().full_name().to_string(),
                            source,
                        }
                    })?;
                    bytes
                }
                None => {
                    let (mut all, t) =
                        encode_messages(&m, &self.json()?).map_err(|e| e.to_string())?;
                    templated = t;
                    more = all.split_off(1);
                    all.swap_remove(0)
                }
            };
            (GrpcRequest::Encoded(bytes), Some(m.output()))
        };
        let spec = WorkloadSpec::Grpc(GrpcSpec {
            path,
            request,
            metadata: parse_headers(&self.metadata)?,
            authority: self.authority,
            response,
            server_streaming,
            client_streaming,
            stream,
            more,
            templated,
        });
        Ok((spec, endpoints))
    }
}
