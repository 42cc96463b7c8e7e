//! The h2 side of the echo server: EchoService/Echo, Health/Check, the streaming echoes
//! (`stream.rs`), reflection (`reflection.rs`), UNIMPLEMENTED otherwise;
//! a request that is not gRPC (no `application/grpc` content-type) is plain HTTP/2, answered as
//! the HTTP/1.1 side answers it (`POST /v1/echo` JSON).

use std::cell::Cell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::{Duration, SystemTime};

use bytes::{Bytes, BytesMut};
use h2::RecvStream;
use h2::server::SendResponse;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue, Request, Response};
use prost::Message;

use crate::server::faults::Injector;
use crate::server::{
    MAX_REQUEST, Peer, Rewind, ServeConfig, echo_response, is_control, pad_message,
};
use crate::server::{plain, reflection, stream};
use wirebench_wire::grpc::{self, Code};
use wirebench_wire::proto::echo::EchoRequest;
use wirebench_wire::proto::health::HealthCheckResponse;
use wirebench_wire::proto::health::health_check_response::ServingStatus;

pub(super) async fn serve(io: Rewind, peer: Peer, cfg: &ServeConfig, age: Option<Duration>) {
    let mut builder = h2::server::Builder::new();
    // h2 counts each small DATA frame held before the handler reads it against a budget
    // (256 less its payload) and sends GOAWAY ENHANCE_YOUR_CALM when it runs out: a client
    // streaming small messages on a few streams at once does exactly that. The flow-control
    // window already bounds what is held: its 65,535 bytes as 1-byte frames need this much.
    builder.data_frame_budget(65_535 * 256);
    if let Some(n) = cfg.max_concurrent_streams {
        builder.max_concurrent_streams(n);
    }
    let Ok(mut conn) = builder.handshake::<_, Bytes>(io).await else {
        return;
    };
    let active = Rc::new(Cell::new(0usize));
    let far = Duration::from_secs(86_400 * 365);
    let age_timer = tokio::time::sleep(age.unwrap_or(far));
    tokio::pin!(age_timer);
    let idle = cfg.max_conn_idle;
    let idle_timer = tokio::time::sleep(idle.unwrap_or(far));
    tokio::pin!(idle_timer);
    let mut closing = false;
    // what the handlers share: the fault defaults, a generator, the close a handler asks for
    let faults = Rc::new(Injector::new(cfg.faults.clone()));
    let mut streams = 0u64;
    loop {
        tokio::select! {
            r = conn.accept() => match r {
                Some(Ok((req, respond))) => {
                    let received_at = SystemTime::now();
                    active.set(active.get() + 1);
                    let active = active.clone();
                    let faults = faults.clone();
                    tokio::task::spawn_local(async move {
                        handle(req, respond, peer, received_at, &faults).await;
                        active.set(active.get() - 1);
                    });
                    streams += 1;
                    if !closing && cfg.faults.goaway_after.is_some_and(|n| streams >= n) {
                        // --goaway-after: the streams accepted so far are answered, no more
                        closing = true;
                        conn.graceful_shutdown();
                    }
                    if let Some(d) = idle {
                        idle_timer.as_mut().reset(tokio::time::Instant::now() + d);
                    }
                }
                // Connection closed, or a connection error: either way this connection is over.
                Some(Err(_)) | None => break,
            },
            _ = faults.close.notified() => {
                // --close / wirebench-close: the answer goes out (the connection is polled a
                // moment longer to write it), then the TCP connection closes, without GOAWAY
                let _ = tokio::time::timeout(Duration::from_millis(20), conn.accept()).await;
                break;
            }
            _ = &mut age_timer, if !closing => {
                closing = true;
                conn.graceful_shutdown();
            }
            _ = &mut idle_timer, if !closing && idle.is_some() => {
                if active.get() == 0 {
                    closing = true;
                    conn.graceful_shutdown();
                } else if let Some(d) = idle {
                    idle_timer.as_mut().reset(tokio::time::Instant::now() + d);
                }
            }
        }
    }
}

const ECHO_PATH: &str = "/grpc_echo.v1.EchoService/Echo";
const HEALTH_PATH: &str = "/grpc.health.v1.Health/Check";

async fn handle(
    req: Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
    peer: Peer,
    received_at: SystemTime,
    faults: &Injector,
) {
    let (parts, mut body) = req.into_parts();
    let grpc = parts
        .headers
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    if !grpc {
        return plain(parts, body, respond, peer, received_at, faults).await;
    }
    let path = parts.uri.path().to_string();
    if reflection::PATHS.contains(&path.as_str()) {
        return reflection::handle(body, respond).await;
    }
    if let Some(method) = path.strip_prefix(stream::SERVICE) {
        return stream::handle(method, &parts.headers, body, respond, faults, status_only).await;
    }
    // An unknown method is answered at once, before its body, as gRPC servers do: a client
    // streaming to it (a reflection client, say) would otherwise wait for an answer that only
    // comes after it ends its stream.
    if !matches!(path.as_str(), ECHO_PATH | HEALTH_PATH) {
        let msg = format!("unknown method {path}");
        return status_only(&mut respond, Code::Unimplemented, &msg);
    }
    // Read the whole request body (one unary message), bounded.
    let mut buf = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let Ok(chunk) = chunk else { return };
        let _ = body.flow_control().release_capacity(chunk.len());
        if buf.len() + chunk.len() > MAX_REQUEST + grpc::PREFIX_LEN {
            return status_only(
                &mut respond,
                Code::ResourceExhausted,
                "request message too large",
            );
        }
        buf.extend_from_slice(&chunk);
    }
    let Some(plan) = stream::fault_plan(&parts.headers, &mut respond, faults, status_only) else {
        return;
    };
    if !plan.delay.is_zero() {
        crate::server::faults::wait(&mut None, plan.delay).await;
    }
    if stream::failed(&plan, &mut respond, faults, status_only) {
        return;
    }
    let reply = match path.as_str() {
        ECHO_PATH => {
            let req: EchoRequest = match grpc::decode_message(&mut buf, MAX_REQUEST) {
                Ok(Some(r)) => r,
                _ => return status_only(&mut respond, Code::Internal, "malformed EchoRequest"),
            };
            let mut headers: HashMap<String, String> = HashMap::new();
            if let Some(a) = parts.uri.authority() {
                headers.insert(":authority".into(), a.to_string());
            }
            collect_metadata(&parts.headers, &mut headers);
            let mut resp = echo_response(headers, req.ping, peer, received_at);
            if let Some(want) = plan.pad_to {
                pad_message(&mut resp, want.saturating_sub(grpc::PREFIX_LEN));
            }
            let mut out = BytesMut::with_capacity(resp.encoded_len() + grpc::PREFIX_LEN);
            grpc::encode(&resp, &mut out);
            out.freeze()
        }
        HEALTH_PATH => {
            let mut out = BytesMut::new();
            grpc::encode(
                &HealthCheckResponse {
                    status: ServingStatus::Serving as i32,
                },
                &mut out,
            );
            out.freeze()
        }
        // every other path was answered above
        _ => return,
    };
    let mut head = Response::new(());
    head.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/grpc"));
    let Ok(mut stream) = respond.send_response(head, false) else {
        return;
    };
    if stream.send_data(reply, false).is_err() {
        return;
    }
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    let _ = stream.send_trailers(trailers);
    faults.after(&plan);
}

/// A plain HTTP/2 request: the JSON echo of the HTTP/1.1 side, its body bounded as there
/// (`plain.rs`).
async fn plain(
    parts: http::request::Parts,
    mut body: RecvStream,
    mut respond: SendResponse<Bytes>,
    peer: Peer,
    received_at: SystemTime,
    faults: &Injector,
) {
    let mut buf = BytesMut::new();
    let mut too_large = false;
    while let Some(chunk) = body.data().await {
        let Ok(chunk) = chunk else { return };
        let _ = body.flow_control().release_capacity(chunk.len());
        if buf.len() + chunk.len() > MAX_REQUEST {
            too_large = true;
            break;
        }
        buf.extend_from_slice(&chunk);
    }
    let body = (!too_large).then_some(&buf[..]);
    let answer = plain::answer(&parts, body, peer, received_at, faults).await;
    let Ok(mut stream) = respond.send_response(plain::head(&answer), false) else {
        return;
    };
    let _ = stream.send_data(Bytes::from(answer.json), true);
    if let Some(plan) = &answer.plan {
        faults.after(plan);
    }
}

/// Request metadata as grpc-go hands it to handlers: regular headers (values of a repeated name
/// joined by ","), without the transport's own (te, content-length) and binary values kept raw.
fn collect_metadata(h: &HeaderMap, out: &mut HashMap<String, String>) {
    for name in h.keys() {
        let n = name.as_str();
        if n == "te" || n == "content-length" || n == "connection" || is_control(n) {
            continue;
        }
        let joined = h
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect::<Vec<_>>()
            .join(",");
        out.insert(n.to_string(), joined);
    }
}

/// A trailers-only response: HEADERS with :status 200, grpc-status and grpc-message, END_STREAM.
fn status_only(respond: &mut SendResponse<Bytes>, code: Code, message: &str) {
    let mut head = Response::new(());
    let h = head.headers_mut();
    h.insert("content-type", HeaderValue::from_static("application/grpc"));
    if let Ok(v) = HeaderValue::from_str(&code.as_u32().to_string()) {
        h.insert("grpc-status", v);
    }
    let mut text = BytesMut::new();
    grpc::encode_message_text(message, &mut text);
    if let Ok(v) = HeaderValue::from_maybe_shared(text.freeze()) {
        h.insert("grpc-message", v);
    }
    let _ = respond.send_response(head, true);
}
