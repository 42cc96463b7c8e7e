//! The HTTP/3 side of the echo server: one QUIC connection's requests, answered as the plain
//! HTTP/2 side answers them (`POST /v1/echo` JSON, `plain.rs`), with the same fault injection;
//! GOAWAY after `--goaway-after` requests or at `--max-conn-age`, and a QUIC close after an
//! answer that `--close` or `wirebench-close` picks.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, SystemTime};

use bytes::{BufMut, Bytes, BytesMut};
use h3::error::Code;
use h3::server::RequestStream;
use http::Request;

use crate::server::faults::Injector;
use crate::server::{MAX_REQUEST, ServeConfig, jitter, plain};

/// HTTP/3's H3_NO_ERROR, as QUIC's application close code.
pub(super) const H3_NO_ERROR: quinn::VarInt = quinn::VarInt::from_u32(0x100);

/// How long a QUIC handshake may take before the server gives up on it.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest the server waits for the last answers to arrive before it closes a connection.
const LINGER_MAX: Duration = Duration::from_secs(2);

type Stream = RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// Serves one incoming QUIC connection until it ends.
pub(super) async fn serve(incoming: quinn::Incoming, cfg: Rc<ServeConfig>) {
    let quic = match tokio::time::timeout(HANDSHAKE_TIMEOUT, incoming).await {
        Ok(Ok(c)) => c,
        // a failed or stalled handshake: nothing to answer
        _ => return,
    };
    let peer = super::Peer::Inet(quic.remote_address());
    let Ok(mut conn) = h3::server::builder()
        .build::<_, Bytes>(h3_quinn::Connection::new(quic.clone()))
        .await
    else {
        return;
    };
    let faults = Rc::new(Injector::new(cfg.faults.clone()));
    let far = Duration::from_secs(86_400 * 365);
    let age_timer = tokio::time::sleep(cfg.max_conn_age.map(jitter).unwrap_or(far));
    tokio::pin!(age_timer);
    let mut closing = false;
    let mut requests = 0u64;
    // requests not yet answered, and a call each time one is: after its GOAWAY, the server
    // closes the connection once the last is answered (h3 only ends `accept` on the peer's)
    let active = Rc::new(Cell::new(0usize));
    let answered = Rc::new(tokio::sync::Notify::new());
    loop {
        tokio::select! {
            r = conn.accept() => match r {
                Ok(Some(resolver)) => {
                    let received_at = SystemTime::now();
                    let (faults, active, answered) =
                        (faults.clone(), active.clone(), answered.clone());
                    active.set(active.get() + 1);
                    tokio::task::spawn_local(async move {
                        // a request whose head does not parse: h3 has reset its stream
                        if let Ok((req, stream)) = resolver.resolve_request().await {
                            handle(req, stream, peer, received_at, &faults).await;
                        }
                        active.set(active.get() - 1);
                        answered.notify_one();
                    });
                    requests += 1;
                    if !closing && cfg.faults.goaway_after.is_some_and(|n| requests >= n) {
                        // --goaway-after: the requests accepted so far are answered, no more
                        closing = true;
                        let _ = conn.shutdown(1).await;
                    }
                }
                // GOAWAY sent or received and every request answered, the peer closed, or a
                // connection error: this connection is over
                Ok(None) | Err(_) => break,
            },
            _ = faults.close.notified() => {
                // --close / wirebench-close: the answer arrives, then the connection closes,
                // without GOAWAY
                linger(&quic).await;
                quic.close(H3_NO_ERROR, b"");
                return;
            }
            _ = &mut age_timer, if !closing => {
                closing = true;
                let _ = conn.shutdown(1).await;
            }
            _ = answered.notified(), if closing => {}
        }
        if closing && active.get() == 0 {
            break;
        }
    }
    // dropping `conn` closes the QUIC connection at once, which abandons data not yet sent:
    // the last answers get their time first (a client that got them closes itself)
    linger(&quic).await;
}

/// Waits until the peer closes `quic` or until the data sent last has had time to arrive (a
/// few round trips, for losses too), whichever comes first. quinn's close discards what has
/// not been sent, and no per-stream acknowledgement is in reach through h3's streams.
async fn linger(quic: &quinn::Connection) {
    let wait = (quic.rtt() * 4 + Duration::from_millis(20)).min(LINGER_MAX);
    let _ = tokio::time::timeout(wait, quic.closed()).await;
}

/// One request: its body read up to `MAX_REQUEST`, answered, its faults applied.
async fn handle(
    req: Request<()>,
    mut stream: Stream,
    peer: super::Peer,
    received_at: SystemTime,
    faults: &Injector,
) {
    let (parts, ()) = req.into_parts();
    let mut buf = BytesMut::new();
    let mut too_large = false;
    loop {
        match stream.recv_data().await {
            Ok(Some(chunk)) => {
                if buf.len() + bytes::Buf::remaining(&chunk) > MAX_REQUEST {
                    too_large = true;
                    break;
                }
                buf.put(chunk);
            }
            Ok(None) => break,
            // reset by the peer, or the connection is gone: nobody to answer
            Err(_) => return,
        }
    }
    let body = (!too_large).then_some(&buf[..]);
    let answer = plain::answer(&parts, body, peer, received_at, faults).await;
    if stream.send_response(plain::head(&answer)).await.is_err()
        || stream.send_data(Bytes::from(answer.json)).await.is_err()
        || stream.finish().await.is_err()
    {
        return;
    }
    if too_large {
        // the answer is complete: the rest of the request is not wanted (RFC 9114, 4.1)
        stream.stop_sending(Code::H3_NO_ERROR);
    }
    if let Some(plan) = &answer.plan {
        faults.after(plan);
    }
}
