//! `wirebench.stream.v1.StreamEcho` (crates/wire/proto/stream.proto) on the h2 side of the
//! echo server: a server-streaming, a client-streaming and a bidi echo, with the same faults
//! as Echo: an injected failure ends the call at once with its status, a delay is waited
//! before each reply, `wirebench-response-size` pads each reply.
//!
//! Replies wait for room in h2's send window (a stream of a million replies to a slow reader
//! is not buffered whole); requests are read as they come, each message at most MAX_REQUEST.

use std::future::poll_fn;

use bytes::{Bytes, BytesMut};
use h2::server::SendResponse;
use h2::{RecvStream, SendStream};
use http::{HeaderMap, HeaderValue, Response};
use prost::Message;

use crate::server::MAX_REQUEST;
use crate::server::faults::{Injector, Plan, wait};
use wirebench_wire::grpc::{self, Code};
use wirebench_wire::proto::stream::{Echo, Ping, StreamRequest, Summary};

/// The service's path prefix.
pub(super) const SERVICE: &str = "/wirebench.stream.v1.StreamEcho/";

/// The most replies one ServerEcho call asks for.
const MAX_COUNT: u32 = 10_000_000;

/// What a reply waits for in the send window at most (larger ones are queued by h2 whole).
const ROOM: usize = 64 << 10;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Method {
    Server,
    Client,
    Bidi,
}

/// One call of the service's `method` (the path after SERVICE); `status_only` answers a call
/// that ends before any message.
pub(super) async fn handle(
    method: &str,
    headers: &HeaderMap,
    mut body: RecvStream,
    mut respond: SendResponse<Bytes>,
    faults: &Injector,
    status_only: fn(&mut SendResponse<Bytes>, Code, &str),
) {
    let method = match method {
        "ServerEcho" => Method::Server,
        "ClientEcho" => Method::Client,
        "BidiEcho" => Method::Bidi,
        other => {
            let msg = format!("unknown method {SERVICE}{other}");
            return status_only(&mut respond, Code::Unimplemented, &msg);
        }
    };
    let Some(plan) = fault_plan(headers, &mut respond, faults, status_only) else {
        return;
    };
    if failed(&plan, &mut respond, faults, status_only) {
        return;
    }
    let ended = match method {
        Method::Server => server_echo(&mut body, &mut respond, &plan).await,
        Method::Client => client_echo(&mut body, &mut respond, &plan).await,
        Method::Bidi => bidi_echo(&mut body, &mut respond, &plan).await,
    };
    // a request that could not be read before any reply: its status alone
    if let Err((code, why)) = ended {
        status_only(&mut respond, code, why);
    }
    faults.after(&plan);
}

/// A call's faults (its headers over the defaults); `None` once a header that does not parse
/// was answered with INVALID_ARGUMENT.
pub(super) fn fault_plan(
    headers: &HeaderMap,
    respond: &mut SendResponse<Bytes>,
    faults: &Injector,
    status_only: fn(&mut SendResponse<Bytes>, Code, &str),
) -> Option<Plan> {
    match faults.plan(headers) {
        Ok(plan) => Some(plan),
        Err(e) => {
            status_only(respond, Code::InvalidArgument, &e.to_string());
            None
        }
    }
}

/// Whether the plan fails the call: then it was answered with the injected status alone.
pub(super) fn failed(
    plan: &Plan,
    respond: &mut SendResponse<Bytes>,
    faults: &Injector,
    status_only: fn(&mut SendResponse<Bytes>, Code, &str),
) -> bool {
    if plan.fail {
        status_only(respond, faults.faults.fail_grpc_code, "injected failure");
        faults.after(plan);
    }
    plan.fail
}

/// Why a call ended before its first reply: the status and its message.
type Refused = (Code, &'static str);

/// The messages that arrived, appended to `rx`; `Ok(false)` at the end of the client's stream.
async fn more(body: &mut RecvStream, rx: &mut BytesMut) -> Result<bool, Refused> {
    match body.data().await {
        None => Ok(false),
        Some(Err(_)) => Err((Code::Cancelled, "the request stream broke")),
        Some(Ok(chunk)) => {
            let _ = body.flow_control().release_capacity(chunk.len());
            if rx.len() + chunk.len() > MAX_REQUEST + grpc::PREFIX_LEN {
                return Err((Code::ResourceExhausted, "request message too large"));
            }
            rx.extend_from_slice(&chunk);
            Ok(true)
        }
    }
}

fn head(respond: &mut SendResponse<Bytes>) -> Option<SendStream<Bytes>> {
    let mut head = Response::new(());
    head.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/grpc"));
    respond.send_response(head, false).ok()
}

fn trailers(stream: &mut SendStream<Bytes>, code: Code, message: &str) {
    let mut t = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(&code.as_u32().to_string()) {
        t.insert("grpc-status", v);
    }
    if !message.is_empty() {
        let mut text = BytesMut::new();
        grpc::encode_message_text(message, &mut text);
        if let Ok(v) = HeaderValue::from_maybe_shared(text.freeze()) {
            t.insert("grpc-message", v);
        }
    }
    let _ = stream.send_trailers(t);
}

/// Sends one framed message once the send window has room for it (or ROOM of it).
async fn send(stream: &mut SendStream<Bytes>, message: &impl Message) -> bool {
    let mut out = BytesMut::with_capacity(message.encoded_len() + grpc::PREFIX_LEN);
    grpc::encode(message, &mut out);
    let want = out.len().min(ROOM);
    stream.reserve_capacity(out.len());
    while stream.capacity() < want {
        match poll_fn(|cx| stream.poll_capacity(cx)).await {
            Some(Ok(_)) => {}
            // the client reset the stream or the connection is gone
            _ => return false,
        }
    }
    stream.send_data(out.freeze(), false).is_ok()
}

/// The Echo for `ping`, the `seq`-th of its call, padded as the plan asks.
fn echo(ping: &str, seq: u64, plan: &Plan) -> Echo {
    let mut e = Echo {
        body: ping.to_string(),
        seq,
        padding: String::new(),
    };
    if let Some(want) = plan.pad_to {
        let want = want.saturating_sub(grpc::PREFIX_LEN);
        let have = e.encoded_len();
        // tag (1 byte) and a length varint of up to 4 bytes
        if want > have + 5 {
            let n = want - have - 5;
            let varint = prost::encoding::encoded_len_varint(n as u64);
            e.padding = "x".repeat(n + 4 - varint);
        }
    }
    e
}

async fn server_echo(
    body: &mut RecvStream,
    respond: &mut SendResponse<Bytes>,
    plan: &Plan,
) -> Result<(), Refused> {
    let mut rx = BytesMut::new();
    while more(body, &mut rx).await? {}
    let Ok(Some(req)) = grpc::decode_message::<StreamRequest>(&mut rx, MAX_REQUEST) else {
        return Err((Code::Internal, "malformed StreamRequest"));
    };
    let mut timer = None;
    let Some(mut stream) = head(respond) else {
        return Ok(());
    };
    let count = req.count.clamp(1, MAX_COUNT);
    for seq in 1..=u64::from(count) {
        if !plan.delay.is_zero() {
            wait(&mut timer, plan.delay).await;
        }
        if !send(&mut stream, &echo(&req.ping, seq, plan)).await {
            return Ok(());
        }
    }
    trailers(&mut stream, Code::Ok, "");
    Ok(())
}

async fn client_echo(
    body: &mut RecvStream,
    respond: &mut SendResponse<Bytes>,
    plan: &Plan,
) -> Result<(), Refused> {
    let mut rx = BytesMut::new();
    let mut last = String::new();
    let mut messages = 0u64;
    loop {
        let go_on = more(body, &mut rx).await?;
        while let Some(p) = grpc::decode_message::<Ping>(&mut rx, MAX_REQUEST)
            .map_err(|_| (Code::Internal, "malformed Ping"))?
        {
            messages += 1;
            last = p.ping;
        }
        if !go_on {
            break;
        }
    }
    if !rx.is_empty() {
        return Err((Code::Internal, "the request stream ended inside a message"));
    }
    if !plan.delay.is_zero() {
        wait(&mut None, plan.delay).await;
    }
    let Some(mut stream) = head(respond) else {
        return Ok(());
    };
    let summary = Summary {
        body: last,
        messages,
    };
    if send(&mut stream, &summary).await {
        trailers(&mut stream, Code::Ok, "");
    }
    Ok(())
}

/// Answers each message as it comes; its failures end the stream with trailers (the head
/// went first), so it refuses nothing.
async fn bidi_echo(
    body: &mut RecvStream,
    respond: &mut SendResponse<Bytes>,
    plan: &Plan,
) -> Result<(), Refused> {
    let Some(mut stream) = head(respond) else {
        return Ok(());
    };
    let mut rx = BytesMut::new();
    let mut timer = None;
    let mut seq = 0u64;
    loop {
        let go_on = match more(body, &mut rx).await {
            Ok(go_on) => go_on,
            Err((code, why)) => {
                trailers(&mut stream, code, why);
                return Ok(());
            }
        };
        loop {
            let p = match grpc::decode_message::<Ping>(&mut rx, MAX_REQUEST) {
                Ok(Some(p)) => p,
                Ok(None) => break,
                Err(_) => {
                    trailers(&mut stream, Code::Internal, "malformed Ping");
                    return Ok(());
                }
            };
            seq += 1;
            if !plan.delay.is_zero() {
                wait(&mut timer, plan.delay).await;
            }
            if !send(&mut stream, &echo(&p.ping, seq, plan)).await {
                return Ok(());
            }
        }
        if !go_on {
            break;
        }
    }
    trailers(&mut stream, Code::Ok, "");
    Ok(())
}
