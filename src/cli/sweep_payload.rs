//! `wirebench sweep echo | http | grpc`: the payload-size axis and the flags every row shares.
//! One run configuration per payload size; the payload is `workload::filler` bytes in the echo
//! ping, the HTTP body (or its `{{payload}}` part), or one string or bytes field of the gRPC
//! request.

use std::path::PathBuf;

use clap::Args;
use prost_reflect::DynamicMessage;

use super::common::TableArg;
use super::common::{LimitArgs, RunArgs, Stacks, TlsArgs, parse_endpoints, parse_proto_arg};
use super::error::ArgError;
use super::grpc::GrpcArgs;
use super::heading;
use super::http::HttpArgs;
use crate::app::sweep_payload::{PayloadSweep, SweepTarget};
use crate::config::{Config, Endpoint, GrpcRequest, GrpcSpec, TableFormat, Target, WorkloadSpec};
use crate::server::ServeConfig;
use crate::stack::Proto;
use crate::workload::filler;
use crate::workload::grpc::{
    call_kind, compile, decode_json, fill_field, find_method, payload_field,
};
use wirebench_link::spec::LinkSpec;

/// Where the payload goes in a `sweep http -d` body template.
pub const PAYLOAD_MARK: &str = "{{payload}}";

/// The rows' requests when neither -n nor -z is given (1 MiB payloads add up).
const ROW_REQUESTS: u64 = 1000;

#[derive(Debug, Args)]
pub struct SweepEchoArgs {
    /// Payload sizes (the ping, echoed back), comma-separated
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = crate::config::parse_size,
        default_value = "16,1k,16k,256k,1M"
    )]
    pub payload_size: Vec<u64>,
    /// Stacks, a comma list of http, h2, grpc [default: http,h2,grpc]
    #[arg(long, value_parser = parse_proto_arg)]
    pub proto: Option<Stacks>,
    /// Echo server to measure (http://host:port); default: start the built-in server
    #[arg(long, value_delimiter = ',')]
    pub target: Vec<String>,
    /// Extra header / gRPC metadata, NAME:VALUE (repeatable)
    #[arg(short = 'H', long = "header", help_heading = heading::REQUEST)]
    pub headers: Vec<String>,
    /// Threads of the built-in server (when no --target)
    #[arg(long, default_value_t = 1)]
    pub server_threads: usize,
    /// Requests in flight
    #[arg(short = 'c', long, default_value_t = 1, help_heading = heading::LOAD)]
    pub clients: usize,
    /// HTTP/2 and gRPC TCP connections, comma-separated: a row set per count (the clients are
    /// spread over them as h2 streams; HTTP/1.1 always has one connection per client)
    #[arg(long, value_delimiter = ',', default_value = "1", help_heading = heading::CONNECTIONS)]
    pub conns: Vec<usize>,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub out: TableOut,
}

/// What every payload sweep shares: the rows' thresholds and TLS, the table and the chart.
#[derive(Debug, Args)]
pub struct TableOut {
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Table format
    #[arg(long, value_enum, default_value_t = TableArg::Markdown, help_heading = heading::OUTPUT)]
    pub format: TableArg,
    /// Write the table to this file instead of stdout
    #[arg(short = 'o', long, help_heading = heading::OUTPUT)]
    pub output: Option<PathBuf>,
    /// Write the line chart (cost per request by payload size, one line per stack) as SVG
    #[arg(long, help_heading = heading::OUTPUT)]
    pub svg: Option<PathBuf>,
    /// A condition every row must meet ('p99<5ms', 'errors<0.1%'); a broken one exits 3
    #[arg(long = "fail-if", value_name = "THRESHOLD", help_heading = heading::THRESHOLDS)]
    pub fail_if: Vec<String>,
    /// Emulated paths, separated by ';': a row set per link ('none;rtt=40ms;rtt=40ms,loss=1%';
    /// `none` is loopback without a link); docs/link.md
    #[arg(long, value_name = "SPECS", help_heading = heading::CONNECTIONS)]
    pub links: Option<String>,
}

/// The flags of `sweep http` and `sweep grpc` rows: the load, its limits, TLS and the output.
#[derive(Debug, Args)]
pub struct RowArgs {
    /// Requests in flight
    #[arg(short = 'c', long, default_value_t = 1, help_heading = heading::LOAD)]
    pub clients: usize,
    /// -n / -z / --warmup apply to each row [default: -n 1000]
    #[command(flatten)]
    pub limits: LimitArgs,
    /// HTTP/2 and gRPC TCP connections, comma-separated: a row set per count (the clients are
    /// spread over them as h2 streams)
    #[arg(long, value_delimiter = ',', default_value = "1", help_heading = heading::CONNECTIONS)]
    pub conns: Vec<usize>,
    /// Report this server process's CPU per request (a server CPU column)
    #[arg(long, help_heading = heading::MEASUREMENT)]
    pub server_pid: Option<u32>,
    #[command(flatten)]
    pub out: TableOut,
}

#[derive(Debug, Args)]
pub struct SweepHttpArgs {
    /// The URL to load: http://host[:port]/path?query or https://...
    pub url: String,
    /// Payload sizes, comma-separated: each row's request body is this many bytes of ASCII
    /// 'x' (with -d: the template, its {{payload}} replaced by them)
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = crate::config::parse_size,
        default_value = "16,1k,16k,256k,1M"
    )]
    pub payload_size: Vec<u64>,
    /// Stacks, a comma list of http and h2 [default: http]
    #[arg(long, value_parser = parse_proto_arg)]
    pub proto: Option<Stacks>,
    /// Request method [default: POST]
    #[arg(short = 'X', long, visible_short_alias = 'm', help_heading = heading::REQUEST)]
    pub method: Option<String>,
    /// Extra header, NAME:VALUE (repeatable)
    #[arg(short = 'H', long = "header", help_heading = heading::REQUEST)]
    pub headers: Vec<String>,
    /// A body template with one {{payload}} where the payload goes, e.g. '{"ping":"{{payload}}"}'
    #[arg(short = 'd', long, conflicts_with = "data_file", help_heading = heading::REQUEST)]
    pub data: Option<String>,
    /// The body template from a file
    #[arg(long, help_heading = heading::REQUEST)]
    pub data_file: Option<PathBuf>,
    /// Status codes that count as OK: CODE or LOW-HIGH
    #[arg(long, default_value = "200-299", help_heading = heading::REQUEST)]
    pub ok_status: String,
    #[command(flatten)]
    pub rows: RowArgs,
}

#[derive(Debug, Args)]
pub struct SweepGrpcArgs {
    #[command(flatten)]
    pub grpc: GrpcArgs,
    /// Payload sizes, comma-separated: each row's request has --payload-field set to this many
    /// bytes of ASCII 'x'
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = crate::config::parse_size,
        default_value = "16,1k,16k,256k,1M"
    )]
    pub payload_size: Vec<u64>,
    /// The string or bytes field of the request that carries the payload: a field name, or a
    /// dotted path through nested messages (outer.inner.data) [default: the request's only
    /// string or bytes field]
    #[arg(long)]
    pub payload_field: Option<String>,
    #[command(flatten)]
    pub rows: RowArgs,
}

fn table_format(f: TableArg) -> TableFormat {
    match f {
        TableArg::Markdown => TableFormat::Markdown,
        TableArg::Csv => TableFormat::Csv,
        TableArg::Json => TableFormat::Json,
    }
}

/// The flags every row of a payload sweep shares.
struct Shared {
    stacks: Stacks,
    clients: usize,
    /// the connection counts' axis (h2 and gRPC)
    conns: Vec<usize>,
    /// the links' axis (`None`: loopback without a link)
    links: Vec<Option<LinkSpec>>,
    server_pid: Option<u32>,
    limits: LimitArgs,
    fail_if: Vec<String>,
    tls: TlsArgs,
}

impl Shared {
    fn of(stacks: Stacks, rows: &RowArgs) -> Result<Shared, ArgError> {
        Ok(Shared {
            stacks,
            clients: rows.clients,
            conns: rows.conns.clone(),
            links: crate::config::axes::links_axis(rows.out.links.as_deref())?,
            server_pid: rows.server_pid,
            limits: copy_limits(&rows.limits),
            fail_if: rows.out.fail_if.clone(),
            tls: rows.out.tls.clone(),
        })
    }

    /// The runs of one payload size: one per link and connection count, each with its stacks
    /// (HTTP/1.1 in the first count's only: it has a connection per client whatever the count).
    fn rows(
        &self,
        size: u64,
        spec: WorkloadSpec,
        endpoints: Vec<Endpoint>,
    ) -> Result<Vec<(u64, Config)>, ArgError> {
        let mut limits = copy_limits(&self.limits);
        if limits.total.is_none() && limits.duration.is_none() {
            limits.total = Some(ROW_REQUESTS);
        }
        let counts = crate::config::axes::connection_counts(&self.conns, self.clients);
        let mut rows = Vec::new();
        for link in &self.links {
            for (i, &conns) in counts.iter().enumerate() {
                let stacks: Vec<Proto> = (self.stacks.0.iter().copied())
                    .filter(|&p| i == 0 || p != Proto::Http)
                    .collect();
                if stacks.is_empty() {
                    continue;
                }
                let run = RunArgs {
                    conns,
                    limits: copy_limits(&limits),
                    server_pid: self.server_pid,
                    fail_if: self.fail_if.clone(),
                    ..RunArgs::plain(Stacks(stacks), self.clients, self.tls.clone())
                };
                let cfg = run.into_config(spec.clone(), endpoints.clone(), Target::All)?;
                rows.push((
                    size,
                    Config {
                        link: link.clone(),
                        ..cfg
                    },
                ));
            }
        }
        Ok(rows)
    }
}

fn copy_limits(l: &LimitArgs) -> LimitArgs {
    LimitArgs {
        total: l.total,
        duration: l.duration,
        warmup: l.warmup,
        timeout: l.timeout,
        connect_timeout: l.connect_timeout,
        threads: l.threads,
    }
}

/// The sizes, checked: at least one, none above `max` bytes (`why` says where the limit comes
/// from).
fn check_sizes(sizes: &[u64], max: u64, why: &'static str) -> Result<(), ArgError> {
    if sizes.is_empty() {
        return Err(ArgError::NoValues {
            flag: "payload-size",
        });
    }
    match sizes.iter().find(|&&n| n > max) {
        Some(&n) => Err(ArgError::PayloadOverLimit { n, max, why }),
        None => Ok(()),
    }
}

impl SweepEchoArgs {
    pub(super) fn into_sweep(self) -> Result<PayloadSweep, ArgError> {
        if self.payload_size.is_empty() {
            return Err(ArgError::NoValues {
                flag: "payload-size",
            });
        }
        let stacks = self
            .proto
            .unwrap_or(Stacks(vec![Proto::Http, Proto::H2, Proto::Grpc]));
        let shared = Shared {
            stacks,
            clients: self.clients,
            conns: self.conns,
            links: crate::config::axes::links_axis(self.out.links.as_deref())?,
            server_pid: None,
            limits: self.limits,
            fail_if: self.out.fail_if,
            tls: self.out.tls,
        };
        let mut rows = Vec::with_capacity(self.payload_size.len());
        let mut embedded: Option<ServeConfig> = None;
        for &size in &self.payload_size {
            let echo = super::echo::EchoArgs {
                target: self.target.clone(),
                ping: None,
                payload_size: Some(size),
                response_size: None,
                headers: self.headers.clone(),
                server_threads: self.server_threads,
            };
            let (spec, endpoints, serve) = echo.resolve().map_err(|e| ArgError::EchoRow {
                size,
                source: Box::new(e),
            })?;
            embedded = serve;
            rows.extend(shared.rows(size, spec, endpoints)?);
        }
        Ok(PayloadSweep {
            target: SweepTarget::Echo,
            rows,
            embedded,
            reflect_field: None,
            format: table_format(self.out.format),
            output: self.out.output,
            svg: self.out.svg,
        })
    }
}

/// The body of `n` payload bytes: the filler, or `template` with its mark replaced by it.
fn http_body(template: Option<&[u8]>, n: usize) -> Vec<u8> {
    let payload = filler(n);
    let Some(t) = template else {
        return payload.into_bytes();
    };
    let mark = PAYLOAD_MARK.as_bytes();
    match t.windows(mark.len()).position(|w| w == mark) {
        Some(i) => [&t[..i], payload.as_bytes(), &t[i + mark.len()..]].concat(),
        None => t.to_vec(),
    }
}

/// The template of `-d` / `--data-file` (`flag`), which has exactly one mark.
fn check_template(flag: &'static str, t: &[u8]) -> Result<(), ArgError> {
    let mark = PAYLOAD_MARK.as_bytes();
    match t.windows(mark.len()).filter(|w| *w == mark).count() {
        1 => Ok(()),
        0 => Err(ArgError::NoPayloadMark {
            flag,
            mark: PAYLOAD_MARK,
        }),
        count => Err(ArgError::PayloadMarks {
            flag,
            mark: PAYLOAD_MARK,
            count,
        }),
    }
}

impl SweepHttpArgs {
    pub(super) fn into_sweep(self) -> Result<PayloadSweep, ArgError> {
        check_sizes(
            &self.payload_size,
            super::limits::MAX_BODY_FILE,
            "each body is held in memory",
        )?;
        let template = match (&self.data, &self.data_file) {
            (Some(d), _) => Some(("-d", d.clone().into_bytes())),
            (_, Some(f)) => Some((
                "--data-file",
                super::common::read_limited("--data-file", f, super::limits::MAX_BODY_FILE)?,
            )),
            _ => None,
        };
        if let Some((flag, t)) = &template {
            check_template(flag, t)?;
        }
        let stacks = self.proto.unwrap_or(Stacks(vec![Proto::Http]));
        // the method, URL, headers and --ok-status checked once, as `wirebench http` does
        let (spec, endpoints) = HttpArgs {
            url: Some(self.url),
            targets: None,
            method: Some(self.method.unwrap_or_else(|| "POST".to_string())),
            headers: self.headers,
            data: None,
            data_file: None,
            data_lines: None,
            ok_status: self.ok_status,
            unix_socket: None,
        }
        .spec()?;
        let WorkloadSpec::Http(base) = spec else {
            return Err(ArgError::Conflict(
                "wirebench sweep http: not an HTTP workload",
            ));
        };
        let shared = Shared::of(stacks, &self.rows)?;
        let mut rows = Vec::with_capacity(self.payload_size.len());
        for &size in &self.payload_size {
            // below MAX_BODY_FILE (checked above), so it fits a usize
            let body = http_body(template.as_ref().map(|(_, t)| &t[..]), size as usize);
            let h = base.with_body(&body);
            rows.extend(shared.rows(size, WorkloadSpec::Http(h), endpoints.clone())?);
        }
        Ok(PayloadSweep {
            target: SweepTarget::Http,
            rows,
            embedded: None,
            reflect_field: None,
            format: table_format(self.rows.out.format),
            output: self.rows.out.output,
            svg: self.rows.out.svg,
        })
    }
}

impl SweepGrpcArgs {
    pub(super) fn into_sweep(self) -> Result<PayloadSweep, ArgError> {
        check_sizes(
            &self.payload_size,
            super::grpc::MAX_DATA_FILE,
            "each request is held in memory",
        )?;
        let g = &self.grpc;
        let endpoints = parse_endpoints(std::slice::from_ref(&g.target))?;
        let Some(method) = g.method.as_deref() else {
            return Err(ArgError::Needed(
                "a method is needed: package.Service/Method",
            ));
        };
        let service = crate::workload::grpc::service_of(method).map_err(|e| e.to_string())?;
        let name = method.trim_start_matches('/');
        let path = format!("/{service}/{}", &name[service.len() + 1..]);
        if g.reflect && !g.proto_files.is_empty() {
            return Err(ArgError::Conflict(
                "--reflect and --proto-file: give the schema one way",
            ));
        }
        if g.reflect && g.data_bin.is_some() {
            return Err(ArgError::Conflict(
                "--data-bin with --reflect: give the request as JSON (-d)",
            ));
        }
        if !g.reflect && g.proto_files.is_empty() {
            return Err(ArgError::NoSchemaToFill {
                data_bin: g.data_bin.is_some(),
            });
        }
        let stream = g.stream_plan()?;
        let spec = |request: GrpcRequest, response, (client_streaming, server_streaming)| {
            Ok::<_, ArgError>(WorkloadSpec::Grpc(GrpcSpec {
                path: path.clone(),
                request,
                metadata: super::common::parse_headers(&g.metadata)?,
                authority: g.authority.clone(),
                response,
                server_streaming,
                client_streaming,
                stream,
                more: Vec::new(),
                templated: None,
            }))
        };
        let shared = Shared::of(Stacks(vec![Proto::Grpc]), &self.rows)?;
        let mut rows = Vec::with_capacity(self.payload_size.len());
        let reflect_field = if g.reflect {
            // the request is filled once reflection gave the schema (app::sweep_payload)
            let json = g.json()?;
            for &size in &self.payload_size {
                let request = GrpcRequest::ByReflection {
                    method: name.to_string(),
                    json: json.clone(),
                };
                let spec = spec(request, None, (false, false))?;
                rows.extend(shared.rows(size, spec, endpoints.clone())?);
            }
            Some(self.payload_field.clone())
        } else {
            let pool = compile(&g.proto_files, &g.import_paths).map_err(|e| e.to_string())?;
            let m = find_method(&pool, method).map_err(|e| e.to_string())?;
            let kind = call_kind(&m);
            let base = match &g.data_bin {
                Some(f) => {
                    let bytes =
                        super::common::read_limited("--data-bin", f, super::grpc::MAX_DATA_FILE)?;
                    DynamicMessage::decode(m.input(), &bytes[..]).map_err(|source| {
                        ArgError::NotAMessage {
                            path: f.clone(),
                            message: m.input().full_name().to_string(),
                            source,
                        }
                    })?
                }
                None => decode_json(&m.input(), &g.json()?).map_err(|e| e.to_string())?,
            };
            let field = payload_field(&m.input(), self.payload_field.as_deref())
                .map_err(|e| e.to_string())?;
            for &size in &self.payload_size {
                // below MAX_DATA_FILE (checked above), so it fits a usize
                let request = GrpcRequest::Encoded(
                    fill_field(&base, &field, size as usize).map_err(|e| e.to_string())?,
                );
                let spec = spec(request, Some(m.output()), kind)?;
                rows.extend(shared.rows(size, spec, endpoints.clone())?);
            }
            None
        };
        Ok(PayloadSweep {
            target: SweepTarget::Grpc,
            rows,
            embedded: None,
            reflect_field,
            format: table_format(self.rows.out.format),
            output: self.rows.out.output,
            svg: self.rows.out.svg,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_the_filler_or_the_template_around_it() {
        assert_eq!(http_body(None, 5), b"xxxxx");
        assert_eq!(http_body(None, 0), b"");
        let t = br#"{"ping":"{{payload}}"}"#;
        assert_eq!(http_body(Some(t), 3), br#"{"ping":"xxx"}"#);
        assert_eq!(http_body(Some(t), 0), br#"{"ping":""}"#);
        assert!(check_template("-d", t).is_ok());
        let e = check_template("-d", b"{}").unwrap_err().to_string();
        assert!(e.starts_with("-d: ") && e.contains("no {{payload}}"), "{e}");
        let e = check_template("--data-file", b"{{payload}}{{payload}}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("2 times"), "{e}");
    }

    #[test]
    fn sizes_are_checked_against_the_limit() {
        assert!(check_sizes(&[16, 1024], 1024, "why").is_ok());
        assert_eq!(
            check_sizes(&[], 1024, "why").unwrap_err().to_string(),
            "--payload-size needs at least one value"
        );
        let e = check_sizes(&[16, 4 << 20], 2 << 20, "held in memory")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--payload-size 4194304: at most 2097152 bytes (2 MiB: held in memory)"
        );
    }
}
