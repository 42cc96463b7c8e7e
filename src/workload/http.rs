//! Any HTTP server (`wirebench http URL`): one method and path, the given headers, the bodies
//! sent in turn; a response is OK when its status is in the accepted range. Redirects are never
//! followed: their status is counted like any other.

use std::sync::Arc;

use bytes::BytesMut;

use crate::config::{Endpoint, HttpSpec};
use crate::outcome::{Failure, FailureKind, StatusKey};
use crate::workload::HttpVerdict;
use wirebench_wire::http1::RequestTemplate;

#[derive(Debug)]
struct Shared {
    templates: Vec<RequestTemplate>,
    head: bool,
    bodies: Vec<Vec<u8>>,
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
    pub fn new(spec: &HttpSpec, endpoints: &[Endpoint]) -> Result<HttpWorkload, String> {
        let headers: Vec<(&str, &str)> = spec
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let mut templates = Vec::with_capacity(endpoints.len());
        for ep in endpoints {
            let t = RequestTemplate::new(&spec.method, &spec.path, &ep.authority, &headers)
                .map_err(|e| format!("{}: {e}", ep.url))?;
            templates.push(if anticipates_no_content(&spec.method) {
                t.omit_empty_length()
            } else {
                t
            });
        }
        let bodies = if spec.bodies.is_empty() {
            vec![Vec::new()]
        } else {
            spec.bodies.clone()
        };
        Ok(HttpWorkload {
            shared: Arc::new(Shared {
                templates,
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
        let s = &*self.shared;
        let body = &s.bodies[(idx % s.bodies.len() as u64) as usize];
        s.templates[ep].encode(body, dst)
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
