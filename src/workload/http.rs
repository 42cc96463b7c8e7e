//! Any HTTP server (`wirebench http URL`, or `--targets FILE`): the requests, each with its
//! method, path, headers and body, taken in turn (or spread by weight); a response is OK when
//! its status is in the accepted range. Redirects are never followed: their status is counted
//! like any other. Over HTTP/1.1 (a request template per endpoint) or plain HTTP/2 and HTTP/3
//! (a `Call` per endpoint: the same method, path and headers as fields).
//!
//! A request's texts may hold placeholders (`wirebench_wire::vary`): read once, rendered per
//! request into the client's own buffers (`vary`); the fixed parts stay as they were built.

mod vary;

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::header::{CONTENT_LENGTH, HeaderName, HeaderValue};
use http::{Method, Uri};

use crate::client::grpc::Call;
use crate::config::{Endpoint, HttpHead, HttpRequestSpec, HttpSpec};
use crate::outcome::{Failure, FailureKind, StatusKey};
use crate::workload::HttpVerdict;
use vary::VaryHead;
use wirebench_wire::http1::RequestTemplate;
use wirebench_wire::vary::{Draw, Template, TemplateError};

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
    /// `part`: "the path", "header X-Id", "the body"
    #[error("{part}: {source}")]
    Placeholder { part: String, source: TemplateError },
    #[error(
        "HEAD requests mixed with other methods: a connection reads HEAD answers differently; \
         put them in a run of their own"
    )]
    MixedHead,
    #[error("no requests")]
    NoRequests,
}

/// One request head (method, path, headers), shared by the requests that differ only in
/// their body.
#[derive(Debug)]
struct Head {
    /// per endpoint: the HTTP/1.1 head (fixed heads only)
    h1: Vec<RequestTemplate>,
    /// per endpoint: the HTTP/2 request (a varying head's: the pattern each client copies)
    calls: Vec<Call>,
    /// the head's parts that vary; `None`: every request has the same head
    vary: Option<VaryHead>,
}

/// One request: its head and its body (rendered per request when it has placeholders).
#[derive(Debug)]
struct Kind {
    head: usize,
    body: Bytes,
    vary: Option<Template>,
}

#[derive(Debug)]
struct Shared {
    heads: Vec<Head>,
    kinds: Vec<Kind>,
    /// request `i` is kind `order[i % len]` (weights); empty: kind `i % kinds`
    order: Vec<u32>,
    /// per endpoint: the Host header a varying head writes
    hosts: Vec<String>,
    head: bool,
    ok_status: (u16, u16),
    /// whether anything varies, and whether a placeholder reads the clock
    varies: bool,
    clock: bool,
}

/// One client's view: the requests are shared and read-only; a client whose requests vary
/// renders them into its own buffers.
#[derive(Debug, Clone)]
pub struct HttpWorkload {
    shared: Arc<Shared>,
    renders: Option<Box<Renders>>,
    /// what the clients' random streams are seeded from (`--seed`)
    seed: u64,
}

/// A client's renders: its values, its copies of the varying calls, the body at hand.
#[derive(Debug, Clone)]
struct Renders {
    draw: Draw,
    /// by head × endpoint: a varying head's call, rendered per request; made at its first
    /// HTTP/2 or HTTP/3 request (an HTTP/1.1 client has none)
    calls: Vec<Option<Box<Call>>>,
    body_buf: BytesMut,
    body: Bytes,
    scratch: Vec<u8>,
}

/// Methods that anticipate no content: an empty body goes without Content-Length (RFC 9110
/// §8.6), as curl, wrk and browsers send them.
fn anticipates_no_content(method: &str) -> bool {
    matches!(
        method,
        "GET" | "HEAD" | "DELETE" | "OPTIONS" | "TRACE" | "CONNECT"
    )
}

/// `text` read for placeholders; `part` names it in an error.
fn template(part: impl FnOnce() -> String, text: &str) -> Result<Template, HttpError> {
    Template::parse(text).map_err(|source| HttpError::Placeholder {
        part: part(),
        source,
    })
}

/// A body as sent: its template when it has placeholders, else its bytes (a quoted `{{"{{"}}`
/// read as `{{`; a body that is not UTF-8 is sent as it is).
fn body_of(body: Bytes) -> Result<(Bytes, Option<Template>), HttpError> {
    match std::str::from_utf8(&body) {
        Ok(text) if text.contains("{{") => {
            let t = template(|| "the body".to_string(), text)?;
            Ok(match t.fixed() {
                Some(fixed) => (Bytes::copy_from_slice(fixed.as_bytes()), None),
                None => (body, Some(t)),
            })
        }
        _ => Ok((body, None)),
    }
}

impl HttpWorkload {
    pub fn new(spec: &HttpSpec, endpoints: &[Endpoint]) -> Result<HttpWorkload, HttpError> {
        if spec.requests.is_empty() {
            return Err(HttpError::NoRequests);
        }
        let heads_of = head_groups(&spec.requests);
        let mut kinds = Vec::with_capacity(spec.requests.len());
        for (r, &head) in spec.requests.iter().zip(&heads_of) {
            let (body, vary) = body_of(r.body.clone().unwrap_or_default())?;
            kinds.push(Kind { head, body, vary });
        }
        // each head's requests, in one pass (a targets file may have 100,000 heads)
        let mut of_head: Vec<Vec<&Kind>> = Vec::new();
        for k in &kinds {
            if k.head == of_head.len() {
                of_head.push(Vec::new());
            }
            of_head[k.head].push(k);
        }
        let mut heads = Vec::with_capacity(of_head.len());
        for (i, r) in spec.requests.iter().enumerate() {
            if heads_of[i] == heads.len() {
                heads.push(Head::new(&r.head, endpoints, &of_head[heads.len()])?);
            }
        }
        let all_head = spec.requests.iter().all(|r| r.head.method == "HEAD");
        if !all_head && spec.requests.iter().any(|r| r.head.method == "HEAD") {
            return Err(HttpError::MixedHead);
        }
        let varies =
            kinds.iter().any(|k| k.vary.is_some()) || heads.iter().any(|h| h.vary.is_some());
        let clock = kinds
            .iter()
            .any(|k| k.vary.as_ref().is_some_and(Template::uses_clock))
            || heads
                .iter()
                .any(|h| h.vary.as_ref().is_some_and(VaryHead::uses_clock));
        let order = if spec.weights.is_empty() {
            Vec::new()
        } else {
            wirebench_wire::targets::schedule(&spec.weights)
        };
        Ok(HttpWorkload {
            shared: Arc::new(Shared {
                heads,
                kinds,
                order,
                hosts: endpoints.iter().map(|e| e.authority.clone()).collect(),
                head: all_head,
                ok_status: spec.ok_status,
                varies,
                clock,
            }),
            renders: None,
            seed: 0,
        })
    }

    /// The same requests, the clients' random streams (`{{rand}}`, `{{uuid}}`) seeded from
    /// `seed`.
    pub fn with_seed(mut self, seed: u64) -> HttpWorkload {
        self.seed = seed;
        self
    }

    /// Whether the method is HEAD: the responses have no body.
    pub fn head_requests(&self) -> bool {
        self.shared.head
    }

    /// Client `client`'s copy: its own renders when its requests vary.
    pub fn for_client(&self, client: u64) -> HttpWorkload {
        let s = &*self.shared;
        let renders = s.varies.then(|| {
            Box::new(Renders {
                draw: Draw::for_client(self.seed, client),
                calls: Vec::new(),
                body_buf: BytesMut::new(),
                body: Bytes::new(),
                scratch: Vec::new(),
            })
        });
        HttpWorkload {
            shared: self.shared.clone(),
            renders,
            seed: self.seed,
        }
    }

    /// The request that number `idx` is.
    fn kind(&self, idx: u64) -> usize {
        let s = &*self.shared;
        if s.order.is_empty() {
            (idx % s.kinds.len() as u64) as usize
        } else {
            s.order[(idx % s.order.len() as u64) as usize] as usize
        }
    }

    /// The values of request `idx` (its number; its time when a placeholder reads it).
    fn start(renders: &mut Renders, clock: bool, idx: u64) {
        renders.draw.seq = idx;
        if clock {
            renders.draw.now_ns = crate::config::clock::unix_ns(std::time::SystemTime::now());
        }
    }

    /// Appends request `idx` for endpoint `ep` to `dst`; returns its head length.
    pub fn encode_http(&mut self, idx: u64, ep: usize, dst: &mut BytesMut) -> usize {
        let k = self.kind(idx);
        let s = &*self.shared;
        let kind = &s.kinds[k];
        let head = &s.heads[kind.head];
        let Some(r) = self.renders.as_deref_mut() else {
            return head.h1[ep].encode(&kind.body, dst);
        };
        Self::start(r, s.clock, idx);
        let body: &[u8] = match &kind.vary {
            Some(t) => {
                r.scratch.clear();
                t.render(&mut r.draw, &mut r.scratch);
                &r.scratch
            }
            None => &kind.body,
        };
        match &head.vary {
            Some(v) => v.encode_h1(&mut r.draw, &s.hosts[ep], body, dst),
            None => head.h1[ep].encode(body, dst),
        }
    }

    /// Request `idx` for endpoint `ep` over HTTP/2 or HTTP/3: its body and its request
    /// (method, path, headers), lent together.
    pub fn next_h2(&mut self, idx: u64, ep: usize) -> (&Bytes, &Call) {
        let k = self.kind(idx);
        let s = &*self.shared;
        let kind = &s.kinds[k];
        let head = &s.heads[kind.head];
        let Some(r) = self.renders.as_deref_mut() else {
            return (&kind.body, &head.calls[ep]);
        };
        Self::start(r, s.clock, idx);
        let body = match &kind.vary {
            Some(t) => {
                // the last request's bytes first, so the buffer is reused
                r.body = Bytes::new();
                t.render(&mut r.draw, &mut r.body_buf);
                r.body = r.body_buf.split().freeze();
                &r.body
            }
            None => &kind.body,
        };
        let Some(v) = &head.vary else {
            return (body, &head.calls[ep]);
        };
        if r.calls.is_empty() {
            r.calls.resize_with(s.heads.len() * s.hosts.len(), || None);
        }
        let call = r.calls[kind.head * s.hosts.len() + ep].get_or_insert_with(|| {
            let (path, values) = v.varying_parts();
            Box::new(head.calls[ep].clone().varying(path, &values))
        });
        v.render_call(&mut r.draw, call);
        (body, &**call)
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

/// For each request, the index of its head: the first request with the same method, path and
/// headers gives it (heads numbered in order of first appearance).
fn head_groups(requests: &[HttpRequestSpec]) -> Vec<usize> {
    let mut seen: std::collections::HashMap<&HttpHead, usize> = std::collections::HashMap::new();
    requests
        .iter()
        .map(|r| {
            let n = seen.len();
            *seen.entry(&*r.head).or_insert(n)
        })
        .collect()
}

impl Head {
    /// The head of `r` for `endpoints`; `kinds`: the requests that share it (their bodies
    /// decide the HTTP/2 content-length).
    fn new(r: &HttpHead, endpoints: &[Endpoint], kinds: &[&Kind]) -> Result<Head, HttpError> {
        let path = template(|| "the path".to_string(), &r.path)?;
        let mut values = Vec::with_capacity(r.headers.len());
        for (k, v) in &r.headers {
            values.push(template(|| format!("header {k}"), v)?);
        }
        let varies = !path.is_fixed() || values.iter().any(|t| !t.is_fixed());
        // a varying head is checked as the sample it renders (placeholders render as digits,
        // hex and dashes)
        let sample_path = path.sample();
        let samples: Vec<(String, String)> = r
            .headers
            .iter()
            .zip(&values)
            .map(|((k, _), t)| (k.clone(), t.sample()))
            .collect();
        let pairs: Vec<(&str, &str)> = samples
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let no_content = anticipates_no_content(&r.method);
        let mut h1 = Vec::with_capacity(endpoints.len());
        for ep in endpoints {
            let t = RequestTemplate::new(&r.method, &sample_path, &ep.authority, &pairs).map_err(
                |source| HttpError::Template {
                    url: ep.url.clone(),
                    source,
                },
            )?;
            h1.push(if no_content { t.omit_empty_length() } else { t });
        }
        // HTTP/2 says the length when every body of this head has the same fixed one
        let len = kinds.first().map_or(0, |k| k.body.len());
        let length = kinds
            .iter()
            .all(|k| k.vary.is_none() && k.body.len() == len)
            && !(len == 0 && no_content);
        let (calls, h2_headers) = h2_calls(
            &r.method,
            &sample_path,
            &samples,
            length.then_some(len),
            endpoints,
        )?;
        let vary = varies.then(|| VaryHead {
            method: r.method.clone(),
            path,
            headers: r
                .headers
                .iter()
                .map(|(k, _)| k.clone())
                .zip(values)
                .collect(),
            h2_headers,
            omit_empty_length: no_content,
        });
        Ok(Head {
            h1: if varies { Vec::new() } else { h1 },
            calls,
            vary,
        })
    }
}

/// Headers HTTP/2 forbids (RFC 9113 §8.2.2): they describe an HTTP/1.1 connection.
fn connection_specific(name: &str) -> bool {
    matches!(
        name,
        "connection" | "keep-alive" | "proxy-connection" | "transfer-encoding" | "upgrade"
    )
}

/// The HTTP/2 form of a request, per endpoint: header names lower-cased, connection-specific
/// headers left out (a `te` other than "trailers" too; Host, Content-Length and
/// Transfer-Encoding the HTTP/1.1 template already refused), and a content-length of our own
/// when `length` says one (every body of the head has that length, as the HTTP/1.1 request
/// says it; otherwise END_STREAM alone ends each, and the header block stays constant). Also
/// returns, by metadata index, the header each field came from.
fn h2_calls(
    method: &str,
    path: &str,
    headers: &[(String, String)],
    length: Option<usize>,
    endpoints: &[Endpoint],
) -> Result<(Vec<Call>, Vec<usize>), HttpError> {
    let method =
        Method::from_bytes(method.as_bytes()).map_err(|_| HttpError::Method(method.to_string()))?;
    let mut fields = Vec::with_capacity(headers.len() + 1);
    let mut from = Vec::with_capacity(headers.len());
    for (i, (k, v)) in headers.iter().enumerate() {
        let name = k.to_ascii_lowercase();
        if connection_specific(&name) || (name == "te" && !v.eq_ignore_ascii_case("trailers")) {
            continue;
        }
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| HttpError::HeaderName(k.clone()))?;
        let value = HeaderValue::from_str(v).map_err(|_| HttpError::HeaderValue(k.clone()))?;
        fields.push((name, value));
        from.push(i);
    }
    if let Some(len) = length {
        fields.push((CONTENT_LENGTH, HeaderValue::from(len)));
    }
    let mut calls = Vec::with_capacity(endpoints.len());
    for ep in endpoints {
        let scheme = if ep.tls { "https" } else { "http" };
        let uri: Uri = format!("{scheme}://{}{path}", ep.authority)
            .parse()
            .map_err(|source| HttpError::Uri {
                url: ep.url.clone(),
                source,
            })?;
        calls.push(Call::plain(method.clone(), uri, fields.clone()));
    }
    Ok((calls, from))
}

#[cfg(test)]
mod tests;
