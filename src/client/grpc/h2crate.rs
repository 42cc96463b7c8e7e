//! The `h2` crate's client (`--h2-client h2`, the reference a general-purpose library gives):
//! its handshake, unary gRPC calls and bidirectional streams, judged by the wire crate's gRPC
//! cores as the wire client's calls are.

use std::cell::Cell;
use std::io;
use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use h2::client::SendRequest;
use http::header::{CONTENT_TYPE, HeaderValue, TE};
use http::{HeaderMap, Method, Request as HttpRequest, Version};

use super::settings::H2Config;
use crate::client::call::{Call, CallError, InFlight, Progress, Request, StreamHead, judged};
use crate::net::{self, Ledger, NetConfig};
use crate::outcome::{Failure, FailureKind};
use wirebench_wire::grpc::unary::{UnaryResponse, Verdict};
use wirebench_wire::grpc::{self, Code};

/// The `h2` crate's handshake with our settings, its connection driven by a local task that
/// sets `dead` when it ends; then one PING round trip: the server sends its SETTINGS before
/// acknowledging it, so once the PONG is here its limits (max concurrent streams, windows) are
/// known and respected from the first request on (h2's client API has no "SETTINGS received").
pub(super) async fn handshake(
    io: net::Io,
    net_cfg: &NetConfig,
    h2_cfg: &H2Config,
    dead: Rc<Cell<bool>>,
) -> io::Result<(SendRequest<Bytes>, tokio::task::JoinHandle<()>)> {
    let (send, connection) = h2::client::Builder::new()
        .initial_window_size(h2_cfg.initial_window_size)
        .initial_connection_window_size(h2_cfg.initial_conn_window_size)
        .max_frame_size(h2_cfg.max_frame_size)
        .data_frame_budget(h2_cfg.data_frame_budget)
        .enable_push(false)
        .handshake::<_, Bytes>(io)
        .await
        .map_err(|e| io::Error::other(format!("h2 handshake: {e}")))?;
    let mut connection = connection;
    let ping = connection.ping_pong();
    let driver = tokio::task::spawn_local(async move {
        // Errors surface to callers through their streams; the flag tells them to reconnect.
        let _ = connection.await;
        dead.set(true);
    });
    if let Some(mut ping) = ping {
        match tokio::time::timeout(net_cfg.connect_timeout, ping.ping(h2::Ping::opaque())).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(io::Error::other(format!("h2 handshake: {e}"))),
            Err(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "h2 handshake: no PING answer",
                ));
            }
        }
    }
    Ok((send, driver))
}

/// An `h2` error as a call's: its failure kind, and whether the connection (not only the
/// stream) is broken and the request was certainly not processed.
fn call_error(e: h2::Error) -> CallError {
    let conn_broken = e.is_io() || e.is_go_away();
    let unprocessed =
        (e.is_go_away() && e.is_remote()) || e.reason() == Some(h2::Reason::REFUSED_STREAM);
    let failure = if e.is_reset() {
        match e.reason() {
            Some(r) => Failure::with(FailureKind::RstStream, r),
            None => Failure::with(FailureKind::RstStream, "unknown"),
        }
    } else if e.is_go_away() && e.is_remote() {
        Failure::with(FailureKind::Goaway, e)
    } else if e.is_io() {
        Failure::with(FailureKind::Io, e)
    } else {
        Failure::with(FailureKind::H2, e)
    };
    CallError {
        status: None,
        failure,
        conn_broken,
        unprocessed,
    }
}

/// The request head of a gRPC `call`.
fn grpc_head(call: &Call) -> HttpRequest<()> {
    let mut req = HttpRequest::new(());
    *req.method_mut() = Method::POST;
    *req.uri_mut() = call.uri.clone();
    *req.version_mut() = Version::HTTP_2;
    let headers = req.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert(TE, HeaderValue::from_static("trailers"));
    for (i, (k, v)) in call.metadata.iter().enumerate() {
        // a value rendered per request (it was checked as a header value when made)
        let value = HeaderValue::from_bytes(call.value(i)).unwrap_or_else(|_| v.clone());
        headers.insert(k.clone(), value);
    }
    req
}

/// One unary call on the `h2` crate's client; `progress` tells when the request is handed to
/// h2 and the response's status.
pub(super) async fn unary(
    send: &mut SendRequest<Bytes>,
    ledger: &Ledger,
    req: Request<'_>,
    rx: &mut BytesMut,
    progress: &Progress,
) -> Result<Bytes, CallError> {
    let Request {
        call, max_message, ..
    } = req;
    if call.is_plain() {
        // the CLI refuses `--h2-client h2` for plain HTTP/2
        return Err(CallError::plain(Failure::with(
            FailureKind::H2,
            "plain HTTP/2 requests run on the wire client only",
        )));
    }
    // Waits while the server's SETTINGS_MAX_CONCURRENT_STREAMS is reached.
    // Errors before the request is handed to h2 mean it was never sent: the connection is going
    // away (GOAWAY received) or gone.
    let never_sent = |e: h2::Error| CallError {
        unprocessed: true,
        conn_broken: true,
        ..call_error(e)
    };
    std::future::poll_fn(|cx| send.poll_ready(cx))
        .await
        .map_err(never_sent)?;
    let (response, mut body_tx) = send
        .send_request(grpc_head(call), false)
        .map_err(never_sent)?;
    let _in_flight = InFlight::new(ledger);
    progress.sent.set(true);
    ledger.count_request();
    // Uncompressed header list sizes, for the ledger's HPACK ratio: each list counted when its
    // HEADERS frame is sent or received, whatever becomes of the call.
    if ledger.h2.is_some() {
        ledger.h2_header_lists(call.header_list_bytes, 0);
    }
    body_tx
        .send_data(req.bytes.clone(), true)
        .map_err(call_error)?;

    let response = response.await.map_err(call_error)?;
    let (parts, mut body) = response.into_parts();
    progress.status.set(parts.status.as_u16());
    if ledger.h2.is_some() {
        ledger.h2_header_lists(
            0,
            header_list_bytes(&parts.headers) + ":status".len() as u64 + 3,
        );
    }
    // The verdict is the wire core's; this drives h2 and hands it what arrives.
    let verdict = UnaryResponse::new(max_message);
    verdict
        .headers(parts.status.as_u16(), status_of(&parts.headers))
        .map_err(|v| judged_in(v, &parts.headers, call.status_kind))?;
    rx.clear();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(call_error)?;
        let _ = body.flow_control().release_capacity(chunk.len());
        verdict
            .data(rx, &chunk)
            .map_err(|v| judged_in(v, &parts.headers, call.status_kind))?;
    }
    let trailers = body.trailers().await.map_err(call_error)?;
    let empty = HeaderMap::new();
    let t = trailers.as_ref().unwrap_or(&empty);
    if ledger.h2.is_some() && trailers.is_some() {
        ledger.h2_header_lists(0, header_list_bytes(t));
    }
    verdict
        .finish(rx, trailers.is_some(), status_of(t))
        .map_err(|v| judged_in(v, t, call.status_kind))
}

/// The grpc-status among `headers`, parsed.
fn status_of(headers: &HeaderMap) -> Option<Result<Code, grpc::Error>> {
    headers
        .get("grpc-status")
        .map(|v| grpc::parse_status(v.as_bytes()))
}

/// A verdict as a call error. `headers`: where a grpc-message may be (the trailers, or a
/// trailers-only response's headers).
fn judged_in(v: Verdict, headers: &HeaderMap, kind: FailureKind) -> CallError {
    judged(v, headers.get("grpc-message").map(|m| m.as_bytes()), kind)
}

/// Name + value octets of a header list (HPACK's accounting without its 32-byte entry overhead).
fn header_list_bytes(h: &HeaderMap) -> u64 {
    h.iter()
        .map(|(k, v)| (k.as_str().len() + v.len()) as u64)
        .sum()
}

/// A bidirectional stream on the `h2` crate's client. Dropping it resets the stream.
pub struct H2Bidi {
    tx: h2::SendStream<Bytes>,
    response: Option<h2::client::ResponseFuture>,
    body: Option<h2::RecvStream>,
    /// the response's header lists so far, uncompressed
    header_bytes_in: u64,
}

/// A stream's `h2` error under the kind a call's would have (a reset is `rst_stream`, as on
/// the wire client).
fn h2_failure(e: h2::Error) -> Failure {
    call_error(e).failure
}

impl H2Bidi {
    /// Opens the stream of `call` on the connection behind `send`.
    pub(super) async fn open(
        send: &mut SendRequest<Bytes>,
        ledger: &Ledger,
        call: &Call,
    ) -> Result<H2Bidi, Failure> {
        std::future::poll_fn(|cx| send.poll_ready(cx))
            .await
            .map_err(h2_failure)?;
        let (response, tx) = send
            .send_request(grpc_head(call), false)
            .map_err(h2_failure)?;
        ledger.count_request();
        if ledger.h2.is_some() {
            ledger.h2_header_lists(call.header_list_bytes, 0);
        }
        Ok(H2Bidi {
            tx,
            response: Some(response),
            body: None,
            header_bytes_in: 0,
        })
    }

    /// Queues one gRPC-framed message; `last` ends our side with it.
    pub(super) fn send(&mut self, message: Bytes, last: bool) -> Result<(), Failure> {
        self.tx.send_data(message, last).map_err(h2_failure)
    }

    /// The uncompressed size of the response's header lists read so far (head, trailers).
    pub(super) fn header_bytes_in(&self) -> u64 {
        self.header_bytes_in
    }

    /// Once `recv` saw the end: whether trailers came, their grpc-status and grpc-message.
    pub(super) async fn trailers(
        &mut self,
    ) -> Result<(bool, Option<Result<Code, grpc::Error>>, Vec<u8>), Failure> {
        let Some(body) = self.body.as_mut() else {
            return Err(Failure::with(FailureKind::H2, "no head read yet"));
        };
        let t = body.trailers().await.map_err(h2_failure)?;
        if let Some(t) = &t {
            self.header_bytes_in += header_list_bytes(t);
        }
        Ok(match t {
            None => (false, None, Vec::new()),
            Some(t) => (
                true,
                status_of(&t),
                t.get("grpc-message")
                    .map_or_else(Vec::new, |m| m.as_bytes().to_vec()),
            ),
        })
    }

    /// Waits for the response head.
    pub(super) async fn head(&mut self) -> Result<StreamHead, Failure> {
        let Some(response) = self.response.take() else {
            return Err(Failure::with(FailureKind::H2, "the head was already read"));
        };
        let (parts, recv) = response.await.map_err(h2_failure)?.into_parts();
        self.body = Some(recv);
        self.header_bytes_in += header_list_bytes(&parts.headers) + ":status".len() as u64 + 3;
        let message = parts.headers.get("grpc-message").map(|m| {
            let mut text = String::new();
            grpc::decode_message_text(m.as_bytes(), 1024, &mut text);
            text
        });
        Ok(StreamHead {
            status: parts.status.as_u16(),
            trailers_only: parts.headers.contains_key("grpc-status"),
            grpc_status: status_of(&parts.headers),
            message,
        })
    }

    /// Appends what arrived to `into`: `Ok(true)` with bytes, `Ok(false)` at the stream's end.
    pub(super) async fn recv(&mut self, into: &mut BytesMut) -> Result<bool, Failure> {
        let Some(body) = self.body.as_mut() else {
            return Err(Failure::with(FailureKind::H2, "no head read yet"));
        };
        match body.data().await {
            Some(Ok(chunk)) => {
                let _ = body.flow_control().release_capacity(chunk.len());
                into.extend_from_slice(&chunk);
                Ok(true)
            }
            Some(Err(e)) => Err(h2_failure(e)),
            None => Ok(false),
        }
    }
}
