//! The answer to a plain (not gRPC) HTTP/2 or HTTP/3 request: the JSON echo of the HTTP/1.1
//! side (`POST /v1/echo`), with the request's faults (delay, failure, padding) applied.

use std::collections::HashMap;
use std::time::SystemTime;

use http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use http::{HeaderValue, Response};

use crate::server::faults::{Injector, Plan};
use crate::server::{Peer, echo_json, error_json, is_control};

/// What a plain request gets.
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) json: String,
    /// the request's fault plan, for `Injector::after` once the answer is out; none when its
    /// control headers did not parse
    pub(super) plan: Option<Plan>,
}

/// The answer to a request with head `parts` and `body` (none: it was over `MAX_REQUEST`),
/// after the plan's delay.
pub(super) async fn answer(
    parts: &http::request::Parts,
    body: Option<&[u8]>,
    peer: Peer,
    received_at: SystemTime,
    faults: &Injector,
) -> Answer {
    let plan = faults.plan(&parts.headers);
    if let Ok(plan) = &plan
        && !plan.delay.is_zero()
    {
        crate::server::faults::wait(&mut None, plan.delay).await;
    }
    let (status, json) = match (body, &plan) {
        (None, _) => (413, error_json("request body too large")),
        (_, Err(e)) => (400, error_json(&e.to_string())),
        (_, Ok(p)) if p.fail => (
            faults.faults.fail_http_status,
            error_json("injected failure"),
        ),
        (Some(body), Ok(p)) => echo_json(
            parts.method.as_str(),
            parts.uri.path(),
            body,
            peer,
            received_at,
            p.pad_to,
            || headers(parts),
        ),
    };
    Answer {
        status,
        json,
        plan: plan.ok(),
    }
}

/// The response head of `answer`: its status, JSON, its length.
pub(super) fn head(answer: &Answer) -> Response<()> {
    let mut head = Response::new(());
    *head.status_mut() = http::StatusCode::from_u16(answer.status).unwrap_or(http::StatusCode::OK);
    let h = head.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    h.insert(CONTENT_LENGTH, HeaderValue::from(answer.json.len()));
    head
}

/// The request's headers as the HTTP/1.1 side reports them: lower-case names, repeated ones
/// joined, and the authority as grpc-echo's gRPC side reports it.
fn headers(parts: &http::request::Parts) -> HashMap<String, String> {
    let mut headers = HashMap::new();
    if let Some(a) = parts.uri.authority() {
        headers.insert(":authority".into(), a.to_string());
    }
    for name in parts.headers.keys().filter(|k| !is_control(k.as_str())) {
        let joined = parts
            .headers
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect::<Vec<_>>()
            .join(",");
        headers.insert(name.as_str().to_string(), joined);
    }
    headers
}
