//! Any HTTP server (`wirebench http URL`): one method and path, the given headers, the bodies
//! sent in turn; a response is OK when its status is in the accepted range. Redirects are never
//! followed: their status is counted like any other. Over HTTP/1.1 (a request template per
//! endpoint) or plain HTTP/2 (a `Call` per endpoint: the same method, path and headers as
//! fields).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::header::{CONTENT_LENGTH, HeaderName, HeaderValue};
use http::{Method, Uri};

use crate::client::grpc::Call;
use crate::config::{Endpoint, HttpSpec};
use crate::outcome::{Failure, FailureKind, StatusKey};
use crate::workload::HttpVerdict;
use wirebench_wire::http1::RequestTemplate;

/// Why the requests cannot be built for the endpoints.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("{url}: {source}")]
    Template {
        url: String,
        source: wirebench_wire::http1::Error,
    },
    #[error("{url}: {source}")]
    Uri {
        url: String,
        source: http::uri::InvalidUri,
    },
    #[error("invalid method {0:?}")]
    Method(String),
    #[error("invalid header name {0:?}")]
    HeaderName(String),
    #[error("invalid header value for {0}")]
    HeaderValue(String),
}

#[derive(Debug)]
struct Shared {
    templates: Vec<RequestTemplate>,
    h2_calls: Vec<Call>,
    head: bool,
    bodies: Vec<Bytes>,
    ok_status: (u16, u16),
}

/// One client's view: everything is shared and read-only.
#[derive(Debug, Clone)]
pub struct HttpWorkload {
    shared: Arc<Shared>,
}

/// Methods that anticipate no content: an empty body goes without Content-Length (RFC 9110
/// §8.6), as curl, wrk and browsers send them.
fn anticipates_no_content(method: &str) -> bool {
    matches!(
        method,
        "GET" | "HEAD" | "DELETE" | "OPTIONS" | "TRACE" | "CONNECT"
    )
}

impl HttpWorkload {
    pub fn new(spec: &HttpSpec, endpoints: &[Endpoint]) -> Result<HttpWorkload, HttpError> {
        let headers: Vec<(&str, &str)> = spec
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let mut templates = Vec::with_capacity(endpoints.len());
        for ep in endpoints {
            let t = RequestTemplate::new(&spec.method, &spec.path, &ep.authority, &headers)
                .map_err(|source| HttpError::Template {
                    url: ep.url.clone(),
                    source,
                })?;
            templates.push(if anticipates_no_content(&spec.method) {
                t.omit_empty_length()
            } else {
                t
            });
        }
        let bodies: Vec<Bytes> = if spec.bodies.is_empty() {
            vec![Bytes::new()]
        } else {
            spec.bodies.iter().map(|b| Bytes::from(b.clone())).collect()
        };
        let h2_calls = h2_calls(spec, endpoints, &bodies)?;
        Ok(HttpWorkload {
            shared: Arc::new(Shared {
                templates,
                h2_calls,
                head: spec.method == "HEAD",
                bodies,
                ok_status: spec.ok_status,
            }),
        })
    }

    /// Whether the method is HEAD: the responses have no body.
    pub fn head_requests(&self) -> bool {
        self.shared.head
    }

    pub fn for_client(&self) -> HttpWorkload {
        self.clone()
    }

    /// Appends request `idx` for endpoint `ep` (body `idx % bodies`) to `dst`; returns its head
    /// length.
    pub fn encode_http(&self, idx: u64, ep: usize, dst: &mut BytesMut) -> usize {
        self.shared.templates[ep].encode(self.body(idx), dst)
    }

    /// The plain HTTP/2 request for endpoint `ep`.
    pub fn h2_call(&self, ep: usize) -> &Call {
        &self.shared.h2_calls[ep]
    }

    /// The body of request `idx` (the bodies go in turn).
    pub fn body(&self, idx: u64) -> &Bytes {
        let s = &*self.shared;
        &s.bodies[(idx % s.bodies.len() as u64) as usize]
    }

    pub fn check_http(&self, status: u16) -> HttpVerdict {
        let key = StatusKey::Http(status);
        let (lo, hi) = self.shared.ok_status;
        if (lo..=hi).contains(&status) {
            Ok(key)
        } else {
            Err((
                key,
                Failure::with(
                    FailureKind::HttpStatus,
                    format_args!("HTTP {status} (OK is {lo}-{hi})"),
                ),
            ))
        }
    }
}

/// Headers HTTP/2 forbids (RFC 9113 §8.2.2): they describe an HTTP/1.1 connection.
fn connection_specific(name: &str) -> bool {
    matches!(
        name,
        "connection" | "keep-alive" | "proxy-connection" | "transfer-encoding" | "upgrade"
    )
}

/// The HTTP/2 form of the request, per endpoint: header names lower-cased, connection-specific
/// headers left out (a `te` other than "trailers" too; Host, Content-Length and
/// Transfer-Encoding the HTTP/1.1 template already refused), and a content-length of our own when every body has the same length (as the HTTP/1.1 request
/// says it; with bodies of different lengths, END_STREAM alone ends each, and the constant
/// header block stays constant).
fn h2_calls(
    spec: &HttpSpec,
    endpoints: &[Endpoint],
    bodies: &[Bytes],
) -> Result<Vec<Call>, HttpError> {
    let method = Method::from_bytes(spec.method.as_bytes())
        .map_err(|_| HttpError::Method(spec.method.clone()))?;
    let mut fields = Vec::with_capacity(spec.headers.len() + 1);
    for (k, v) in &spec.headers {
        let name = k.to_ascii_lowercase();
        if connection_specific(&name) || (name == "te" && !v.eq_ignore_ascii_case("trailers")) {
            continue;
        }
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| HttpError::HeaderName(k.clone()))?;
        let value = HeaderValue::from_str(v).map_err(|_| HttpError::HeaderValue(k.clone()))?;
        fields.push((name, value));
    }
    let len = bodies[0].len();
    if bodies.iter().all(|b| b.len() == len) && !(len == 0 && anticipates_no_content(&spec.method))
    {
        fields.push((CONTENT_LENGTH, HeaderValue::from(len)));
    }
    let mut calls = Vec::with_capacity(endpoints.len());
    for ep in endpoints {
        let scheme = if ep.tls { "https" } else { "http" };
        let uri: Uri = format!("{scheme}://{}{}", ep.authority, spec.path)
            .parse()
            .map_err(|source| HttpError::Uri {
                url: ep.url.clone(),
                source,
            })?;
        calls.push(Call::plain(method.clone(), uri, fields.clone()));
    }
    Ok(calls)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(method: &str, bodies: &[&[u8]]) -> HttpSpec {
        HttpSpec {
            method: method.into(),
            path: "/p?q=1".into(),
            headers: vec![("Accept".into(), "*/*".into())],
            bodies: bodies.iter().map(|b| b.to_vec()).collect(),
            ok_status: (200, 299),
        }
    }

    fn endpoint() -> Endpoint {
        crate::config::parse_url("http://127.0.0.1:9/").unwrap().0
    }

    #[test]
    fn bodies_go_in_turn_and_get_without_a_body_has_no_length() {
        let w = HttpWorkload::new(&spec("POST", &[b"a", b"bcd"]), &[endpoint()]).unwrap();
        let mut out = BytesMut::new();
        for idx in 0..3 {
            let head = w.encode_http(idx, 0, &mut out);
            let want: &[u8] = if idx % 2 == 0 { b"a" } else { b"bcd" };
            assert!(out.ends_with(want), "{idx}");
            assert_eq!(head, out.len() - want.len());
            out.clear();
        }
        let w = HttpWorkload::new(&spec("GET", &[]), &[endpoint()]).unwrap();
        w.encode_http(0, 0, &mut out);
        assert_eq!(
            &out[..],
            &b"GET /p?q=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nAccept: */*\r\n\r\n"[..]
        );
        // an empty POST still says its length
        let w = HttpWorkload::new(&spec("POST", &[]), &[endpoint()]).unwrap();
        out.clear();
        w.encode_http(0, 0, &mut out);
        assert!(out.ends_with(b"Content-Length: 0\r\n\r\n"));
    }

    fn h2_fields(w: &HttpWorkload) -> Vec<(String, String)> {
        w.h2_call(0)
            .fields()
            .map(|(k, v)| {
                (
                    String::from_utf8(k.to_vec()).unwrap(),
                    String::from_utf8(v.to_vec()).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn the_http2_request_has_the_same_method_path_and_headers() {
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        let mut s = spec("POST", &[b"abc"]);
        s.headers = vec![
            ("X-Trace".into(), "1".into()),
            ("Connection".into(), "close".into()),
            ("TE".into(), "gzip".into()),
        ];
        let w = HttpWorkload::new(&s, &[endpoint()]).unwrap();
        assert!(w.h2_call(0).is_plain());
        assert_eq!(
            h2_fields(&w),
            vec![
                pair(":method", "POST"),
                pair(":scheme", "http"),
                pair(":path", "/p?q=1"),
                pair(":authority", "127.0.0.1:9"),
                pair("x-trace", "1"),
                pair("content-length", "3"),
            ]
        );
        assert_eq!(&w.body(0)[..], b"abc");
        // bodies of different lengths: END_STREAM alone delimits them
        let w = HttpWorkload::new(&spec("PUT", &[b"a", b"bc"]), &[endpoint()]).unwrap();
        assert!(h2_fields(&w).iter().all(|(k, _)| k != "content-length"));
        assert_eq!(&w.body(1)[..], b"bc");
        // a GET without a body says no length, as over HTTP/1.1
        let w = HttpWorkload::new(&spec("GET", &[]), &[endpoint()]).unwrap();
        let f = h2_fields(&w);
        assert_eq!(f[0], pair(":method", "GET"));
        assert!(f.iter().all(|(k, _)| k != "content-length"), "{f:?}");
    }

    #[test]
    fn a_large_body_is_sampled_cut() {
        let w = crate::workload::Workload::Http(
            HttpWorkload::new(&spec("GET", &[]), &[endpoint()]).unwrap(),
        );
        assert_eq!(w.sample_http(br#"{"a":1}"#), serde_json::json!({"a": 1}));
        assert_eq!(w.sample_http(b"plain"), serde_json::json!("plain"));
        let big = vec![b'x'; 100_000];
        let v = w.sample_http(&big);
        let text = v.as_str().unwrap();
        assert!(
            text.ends_with("... (100000 B in all)"),
            "{}",
            &text[text.len() - 40..]
        );
        assert!(text.len() < 66_000);
    }

    #[test]
    fn the_status_range_decides() {
        let mut s = spec("GET", &[]);
        let w = HttpWorkload::new(&s, &[endpoint()]).unwrap();
        assert_eq!(w.check_http(204), Ok(StatusKey::Http(204)));
        let (key, f) = w.check_http(301).unwrap_err();
        assert_eq!(key, StatusKey::Http(301));
        assert_eq!(f.kind, FailureKind::HttpStatus);
        assert!(f.to_string().contains("HTTP 301 (OK is 200-299)"), "{f}");
        s.ok_status = (200, 399);
        let w = HttpWorkload::new(&s, &[endpoint()]).unwrap();
        assert_eq!(w.check_http(301), Ok(StatusKey::Http(301)));
        assert!(w.check_http(404).is_err());
    }
}
