//! The grpc-echo workload: `Echo{ping}` over gRPC, `POST /v1/echo {"ping": ...}` over HTTP/1.1.

use std::borrow::Cow;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderName, HeaderValue};
use http::{Method, Uri};
use prost::Message;
use serde::Deserialize;
use serde_json::Value;

use crate::client::grpc::Call;
use crate::config::Endpoint;
use crate::outcome::{Failure, FailureKind, StatusKey};
use crate::workload::HttpVerdict;
use wirebench_wire::echo;
use wirebench_wire::echo::scan::{echo_answer_matches_plain, ping_is_plain};
use wirebench_wire::grpc;
use wirebench_wire::http1::{Rendered, RequestTemplate};
use wirebench_wire::proto::echo::{EchoRequest, EchoResponse};

/// Why the echo requests cannot be built for the endpoints.
#[derive(Debug, thiserror::Error)]
pub enum EchoError {
    #[error("invalid header name {0:?}")]
    HeaderName(String),
    #[error("invalid header value for {0}")]
    HeaderValue(String),
    #[error("target {url}: {source}")]
    Template {
        url: String,
        source: wirebench_wire::http1::Error,
    },
    #[error("target {url}: {source}")]
    Uri {
        url: String,
        source: http::uri::InvalidUri,
    },
}

pub const GRPC_PATH: &str = "/grpc_echo.v1.EchoService/Echo";
pub const HTTP_PATH: &str = "/v1/echo";

#[derive(Debug)]
struct Shared {
    ping: String,
    /// `ping_is_plain(ping)`, found once for every answer's check
    ping_plain: bool,
    /// `POST /v1/echo` with the ping, per endpoint: encoded once, copied for each request
    requests: Vec<Rendered>,
    calls: Vec<Call>,
    /// `POST /v1/echo` over plain HTTP/2, per endpoint
    h2_calls: Vec<Call>,
    json_body: Bytes,
    frame: Bytes,
}

#[derive(Debug, Clone)]
pub struct EchoWorkload {
    shared: Arc<Shared>,
}

#[derive(Deserialize)]
struct ErrorJson<'a> {
    #[serde(borrow, default)]
    error: Cow<'a, str>,
}

impl EchoWorkload {
    /// `headers` are sent as HTTP headers and as gRPC metadata (names lower-cased).
    pub fn new(
        ping: String,
        headers: &[(String, String)],
        endpoints: &[Endpoint],
    ) -> Result<Self, EchoError> {
        let mut metadata = Vec::with_capacity(headers.len());
        for (k, v) in headers {
            let name = HeaderName::from_bytes(k.to_ascii_lowercase().as_bytes())
                .map_err(|_| EchoError::HeaderName(k.clone()))?;
            let value = HeaderValue::from_str(v).map_err(|_| EchoError::HeaderValue(k.clone()))?;
            metadata.push((name, value));
        }
        let extra: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let json_body = Bytes::from(serde_json::json!({ "ping": ping }).to_string());
        let mut requests = Vec::with_capacity(endpoints.len());
        let mut calls = Vec::with_capacity(endpoints.len());
        let mut h2_calls = Vec::with_capacity(endpoints.len());
        // the HTTP/1.1 request's headers, as HTTP/2 fields
        let mut h2_headers = vec![
            (CONTENT_TYPE, HeaderValue::from_static("application/json")),
            (CONTENT_LENGTH, HeaderValue::from(json_body.len())),
        ];
        h2_headers.extend(metadata.iter().cloned());
        for ep in endpoints {
            let uri_error = |source| EchoError::Uri {
                url: ep.url.clone(),
                source,
            };
            let mut h = vec![("Content-Type", "application/json")];
            h.extend_from_slice(&extra);
            let template =
                RequestTemplate::new("POST", HTTP_PATH, &ep.authority, &h).map_err(|source| {
                    EchoError::Template {
                        url: ep.url.clone(),
                        source,
                    }
                })?;
            requests.push(template.render(&json_body));
            let uri: Uri = format!("http://{}{GRPC_PATH}", ep.authority)
                .parse()
                .map_err(uri_error)?;
            calls.push(Call::new(uri, metadata.clone(), FailureKind::GrpcStatus));
            let scheme = if ep.tls { "https" } else { "http" };
            let uri: Uri = format!("{scheme}://{}{HTTP_PATH}", ep.authority)
                .parse()
                .map_err(uri_error)?;
            h2_calls.push(Call::plain(Method::POST, uri, h2_headers.clone()));
        }
        let mut frame = BytesMut::new();
        grpc::encode(&EchoRequest { ping: ping.clone() }, &mut frame);
        let frame = frame.freeze();
        Ok(EchoWorkload {
            shared: Arc::new(Shared {
                ping_plain: ping_is_plain(ping.as_bytes()),
                ping,
                requests,
                calls,
                h2_calls,
                json_body,
                frame,
            }),
        })
    }

    pub fn for_client(&self) -> EchoWorkload {
        EchoWorkload {
            shared: self.shared.clone(),
        }
    }

    pub fn encode_http(&mut self, ep: usize, dst: &mut BytesMut) -> usize {
        self.shared.requests[ep].encode(dst)
    }

    pub fn check_http(&self, status: u16, body: &[u8]) -> HttpVerdict {
        let key = StatusKey::Http(status);
        if status != 200 {
            let f = match serde_json::from_slice::<ErrorJson>(body) {
                Ok(e) if !e.error.is_empty() => Failure::with(
                    FailureKind::HttpStatus,
                    format_args!("HTTP {status}: {}", e.error),
                ),
                _ => Failure::with(FailureKind::HttpStatus, format_args!("HTTP {status}")),
            };
            return Err((key, f));
        }
        // the answer's `body` compared (the rest scanned only when it does not open with it),
        // nothing built
        let (ping, plain) = (self.shared.ping.as_bytes(), self.shared.ping_plain);
        match echo_answer_matches_plain(body, ping, plain) {
            Ok(true) => Ok(key),
            Ok(false) => Err((
                key,
                Failure::with(
                    FailureKind::BadResponse,
                    "echoed body differs from the ping",
                ),
            )),
            Err(e) => Err((key, Failure::with(FailureKind::BadResponse, e))),
        }
    }

    pub fn call(&self, ep: usize) -> &Call {
        &self.shared.calls[ep]
    }

    pub fn h2_call(&self, ep: usize) -> &Call {
        &self.shared.h2_calls[ep]
    }

    /// The JSON request body, the same for every request (HTTP/1.1 and HTTP/2).
    pub fn json_body(&self) -> &Bytes {
        &self.shared.json_body
    }

    /// The framed request, the same for every call; borrowed, so the wire client touches no
    /// reference count shared between threads (the h2 crate's client clones it).
    pub fn grpc_request(&self) -> &Bytes {
        &self.shared.frame
    }

    pub fn check_grpc(&self, message: &Bytes) -> Result<(), Failure> {
        // the one field checked, read in place: no decode of the whole message per call; what
        // the scan refuses (groups, which prost skips) prost judges
        let decoded;
        let body = match grpc::bytes_field(message, 2) {
            Ok(body) => body.unwrap_or_default(),
            Err(()) => match EchoResponse::decode(message.clone()) {
                Ok(r) => {
                    decoded = r.body;
                    decoded.as_bytes()
                }
                Err(e) => return Err(Failure::with(FailureKind::BadResponse, e)),
            },
        };
        if body == self.shared.ping.as_bytes() {
            Ok(())
        } else {
            Err(Failure::with(
                FailureKind::BadResponse,
                "echoed body differs from the ping",
            ))
        }
    }

    pub fn sample_grpc(&self, message: &Bytes) -> Value {
        EchoResponse::decode(message.clone())
            .map(|r| echo::response_json(&r))
            .unwrap_or_else(|e| Value::String(format!("undecodable: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_ok_when_its_body_is_the_ping() {
        let ep = Endpoint::parse("http://127.0.0.1:8080").unwrap();
        let w = EchoWorkload::new("héllo".into(), &[], &[ep]).unwrap();
        let ok =
            br#"{"body":"h\u00e9llo","headers":{"body":"x"},"sent_at":"2026-12-03T20:07:56Z"}"#;
        assert_eq!(w.check_http(200, ok), Ok(StatusKey::Http(200)));
        for (answer, says) in [
            (
                &br#"{"body":"hello"}"#[..],
                "echoed body differs from the ping",
            ),
            (br#"{}"#, "echoed body differs from the ping"),
            (
                br#"{"body":"h\u00e9llo"} x"#,
                "trailing characters at byte 22",
            ),
            (
                br#"{"body":1}"#,
                "invalid type for `body` at byte 8: expected a string",
            ),
            (
                br#"{"body":"h\u00e9llo""#,
                "the text ends inside a value at byte 20",
            ),
        ] {
            let (key, f) = w.check_http(200, answer).unwrap_err();
            assert_eq!(key, StatusKey::Http(200));
            assert_eq!(f.kind, FailureKind::BadResponse);
            assert_eq!(f.to_string(), format!("{}: {says}", f.kind), "{f}");
        }
        let (_, f) = w.check_http(503, br#"{"error":"busy"}"#).unwrap_err();
        assert_eq!(f.kind, FailureKind::HttpStatus);
        assert!(f.to_string().ends_with("HTTP 503: busy"), "{f}");
    }
}
