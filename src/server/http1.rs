//! The HTTP/1.1 side of the echo server: `POST /v1/echo` with `{"ping": "..."}`, keepalive;
//! the IO and the echo handler around `wirebench_wire::http1::decode_request_head`.

use std::collections::HashMap;
use std::io::Write as _;
use std::time::{Duration, Instant, SystemTime};

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::rng::Rng;
use crate::server::faults::{self, Plan};
use crate::server::{MAX_REQUEST, Peer, Rewind, ServeConfig, echo_json, error_json, is_control};
use wirebench_wire::http1::{
    MAX_HEAD_BYTES, MAX_REQUEST_HEADERS, RequestError, RequestHead, RequestLimits,
    decode_request_head,
};

/// What a request may cost: 64 headers, `MAX_HEAD_BYTES` of head, `MAX_REQUEST` of body.
const LIMITS: RequestLimits = RequestLimits {
    max_head_bytes: MAX_HEAD_BYTES,
    max_headers: MAX_REQUEST_HEADERS,
    max_body: MAX_REQUEST as u64,
};

/// The request's headers as grpc-echo reports them: lowercase names, repeated fields joined
/// with commas; the server's own control headers left out.
fn echo_headers(head: &RequestHead) -> HashMap<String, String> {
    let mut headers: HashMap<String, String> = HashMap::with_capacity(head.headers().len());
    for (name, value) in head.headers().filter(|(name, _)| !is_control(name)) {
        let value = String::from_utf8_lossy(value).into_owned();
        headers
            .entry(name.to_ascii_lowercase())
            .and_modify(|v| {
                v.push(',');
                v.push_str(&value);
            })
            .or_insert(value);
    }
    headers
}

/// The answer to a request the protocol core refused.
fn refusal(e: RequestError) -> (u16, &'static str) {
    let message = match e {
        RequestError::HeadTooLarge => "request head too large",
        RequestError::TooManyHeaders => "too many headers",
        RequestError::BadHead(_) => "malformed request head",
        RequestError::BadContentLength => "invalid Content-Length",
        RequestError::BodyTooLarge => "request body too large",
        RequestError::ChunkedBody => "chunked request bodies are not supported",
    };
    (e.status(), message)
}

pub(super) async fn serve(mut io: Rewind, peer: Peer, cfg: &ServeConfig, age: Option<Duration>) {
    let born = Instant::now();
    let mut rng = Rng::unique();
    let mut timer = None;
    let mut buf = BytesMut::with_capacity(8192);
    let mut out = Vec::with_capacity(1024);
    loop {
        // Read a complete head (bounded) and then the body.
        let head = loop {
            match decode_request_head(&mut buf, LIMITS) {
                Ok(Some(head)) => break head,
                Err(e) => {
                    let (status, message) = refusal(e);
                    respond(&mut out, status, &error_json(message), true);
                    let _ = io.write_all(&out).await;
                    return;
                }
                Ok(None) => {
                    // every complete request of the last read is answered: one write for all
                    if !flush(&mut io, &mut out).await {
                        return;
                    }
                    // room for whatever the client sent together (a pipelined batch), so that
                    // one read takes it whole and one write answers it
                    room(&mut buf);
                    let read = match cfg.max_conn_idle {
                        Some(d) if buf.is_empty() => {
                            match tokio::time::timeout(d, io.read_buf(&mut buf)).await {
                                Ok(r) => r,
                                Err(_) => return,
                            }
                        }
                        _ => io.read_buf(&mut buf).await,
                    };
                    match read {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                }
            }
        };
        let received_at = SystemTime::now();
        let body = loop {
            match head.decode_body(&mut buf) {
                Ok(Some(body)) => break body,
                Err(e) => {
                    let (status, message) = refusal(e);
                    respond(&mut out, status, &error_json(message), true);
                    let _ = io.write_all(&out).await;
                    return;
                }
                Ok(None) => {
                    if !flush(&mut io, &mut out).await {
                        return;
                    }
                    room(&mut buf);
                    match io.read_buf(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                }
            }
        };
        let close = !head.keep_alive || age.is_some_and(|a| born.elapsed() >= a);
        // faults: only looked at when configured or asked for by a control header
        let asks = head.headers().any(|(name, _)| is_control(name));
        let plan = if asks || !cfg.faults.none() {
            let header = |want: &str| {
                head.headers()
                    .find(|(name, _)| name.eq_ignore_ascii_case(want))
                    .and_then(|(_, v)| std::str::from_utf8(v).ok())
            };
            match cfg.faults.plan(header, &mut rng) {
                Ok(plan) => plan,
                Err(e) => {
                    respond(&mut out, 400, &error_json(&e.to_string()), close);
                    if close {
                        let _ = io.write_all(&out).await;
                        let _ = io.shutdown().await;
                        return;
                    }
                    continue;
                }
            }
        } else {
            Plan::default()
        };
        if !plan.delay.is_zero() {
            // the answers before this one go now; this one (and every one after it, in order)
            // after the delay
            if !flush(&mut io, &mut out).await {
                return;
            }
            faults::wait(&mut timer, plan.delay).await;
        }
        let (status, json) = if plan.fail {
            (cfg.faults.fail_http_status, error_json("injected failure"))
        } else {
            echo_json(
                head.method(),
                head.path(),
                &body,
                peer,
                received_at,
                plan.pad_to,
                || echo_headers(&head),
            )
        };
        respond(&mut out, status, &json, close);
        if close || plan.close {
            // --close / wirebench-close: the answer, then FIN, without a Connection: close
            let _ = io.write_all(&out).await;
            let _ = io.shutdown().await;
            return;
        }
    }
}

/// The spare room a read gets at least.
const READ_ROOM: usize = 8192;

/// Gives `buf` at least `READ_ROOM` bytes of spare capacity (reclaiming the consumed front
/// when it can): a read into a nearly full buffer would take a pipelined batch in pieces, and
/// each piece would be answered with a write of its own.
fn room(buf: &mut BytesMut) {
    if buf.capacity() - buf.len() < READ_ROOM {
        buf.reserve(READ_ROOM);
    }
}

/// Writes the answers gathered so far, if any; `false` when the connection is gone.
async fn flush(io: &mut Rewind, out: &mut Vec<u8>) -> bool {
    if out.is_empty() {
        return true;
    }
    let ok = io.write_all(out).await.is_ok();
    out.clear();
    ok
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        _ => "Error",
    }
}

/// Appends one answer to `out` (the answers of one read go out together).
fn respond(out: &mut Vec<u8>, status: u16, body: &str, close: bool) {
    let _ = write!(
        out,
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}\r\n",
        reason(status),
        body.len(),
        if close { "Connection: close\r\n" } else { "" }
    );
    out.extend_from_slice(body.as_bytes());
}
