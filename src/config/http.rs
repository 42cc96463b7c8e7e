//! What `wirebench http` sends: the requests, as given.

use std::sync::Arc;

use bytes::Bytes;

/// The requests for any HTTP server: one (a URL and flags: `--data-lines` gives several that
/// differ in their body only) or a targets file's, each with a weight. Any text may hold the
/// placeholders of `wirebench_wire::vary`, rendered per request.
#[derive(Debug, Clone)]
pub struct HttpSpec {
    /// request `i` is `requests[i % len]` (weights: the targets file's spread, see `weights`)
    pub requests: Vec<HttpRequestSpec>,
    /// how often each request goes per cycle (a targets file's `# weight: N`); empty: each
    /// once, in turn
    pub weights: Vec<u32>,
    /// the status codes that count as OK, both ends included
    pub ok_status: (u16, u16),
}

/// One HTTP request: its head and body, as given (placeholders unrendered). Requests that
/// differ only in their body (`--data-lines`) share one head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequestSpec {
    pub head: Arc<HttpHead>,
    /// none: a request without a body
    pub body: Option<Bytes>,
}

/// A request's method, path and headers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HttpHead {
    pub method: String,
    /// the URL's path and query, as given (`/` when it has none)
    pub path: String,
    pub headers: Vec<(String, String)>,
}

impl HttpSpec {
    /// The same requests with `body` each, the ones differing only in their body made one
    /// (a payload sweep's row).
    pub fn with_body(&self, body: &[u8]) -> HttpSpec {
        let mut requests: Vec<HttpRequestSpec> = Vec::new();
        let mut weights = Vec::new();
        for (i, r) in self.requests.iter().enumerate() {
            let same = |o: &HttpRequestSpec| o.head == r.head;
            if self.weights.is_empty() && requests.iter().any(same) {
                continue;
            }
            requests.push(HttpRequestSpec {
                body: Some(Bytes::copy_from_slice(body)),
                ..r.clone()
            });
            weights.extend(self.weights.get(i));
        }
        HttpSpec {
            requests,
            weights,
            ok_status: self.ok_status,
        }
    }

    /// One line for the report header.
    pub(super) fn describe(&self) -> String {
        let first = &self.requests[0];
        let one_head = self.requests.iter().all(|r| r.head == first.head);
        if !one_head || !self.weights.is_empty() {
            return format!("http: {} requests (a targets file)", self.requests.len());
        }
        let sizes = self
            .requests
            .iter()
            .filter_map(|r| r.body.as_ref().map(|b| b.len()));
        let (min, max) = (sizes.clone().min().unwrap_or(0), sizes.max().unwrap_or(0));
        let body = match (self.requests.len(), &first.body) {
            (1, None) => "no body".to_string(),
            (1, Some(_)) => format!("body {max} B"),
            (n, _) if min == max => format!("{n} bodies of {max} B"),
            (n, _) => format!("{n} bodies of {min}-{max} B"),
        };
        format!("http {} {}: {body}", first.head.method, first.head.path)
    }
}
