//! gRPC clients that each keep one bidi stream open (lease keepalives): a request is one
//! message out on the client's stream and its answer the next message back; the keepalive
//! `Session`.
//!
//! A stream is opened on the client's first turn (and its open counted as that request's part
//! of the connection's ledger); each later message counts one request on the connection. A
//! stream that breaks (reset, ended, an error in its head or trailers, a message that cannot
//! be read) fails the request at hand and is dropped; the next turn opens another, on a new
//! connection if the old one died. A request that times out is a `timeout` failure and its
//! stream is reset and dropped too: its answer may still come, so the stream is never reused
//! blindly (the next answer on it could be the late one).

use std::rc::Rc;
use std::time::Instant;

use bytes::BytesMut;

use crate::client::grpc::Bidi;
use crate::outcome::{Failure, FailureKind, StatusKey};
use crate::workload::GrpcWork;
use wirebench_wire::grpc::{self, Code};

use super::grpc::{ConnHandle, ConnSlot, timed_out};
use super::session::{Exchange, Session};
use super::worker::{Trace, Turn, Worker};

/// A client's open stream and the connection it lives on.
struct Open {
    bidi: Bidi,
    /// the slot's connection generation it was opened on
    generation: u64,
    /// the response head was read (it comes with the first answer)
    head: bool,
}

/// Why an exchange on the stream gave no answer: the failure, the status it counts under.
type Broken = (Option<StatusKey>, Failure);

/// One client and its stream.
pub(super) struct Keepalive {
    slot: Rc<ConnSlot>,
    handle: Option<ConnHandle>,
    stream: Option<Open>,
    work: GrpcWork,
    max_message: usize,
    /// what arrived on the stream and was not taken yet
    rx: BytesMut,
}

impl Keepalive {
    pub(super) fn new(w: &Worker, slot: Rc<ConnSlot>, work: GrpcWork) -> Keepalive {
        Keepalive {
            slot,
            handle: None,
            stream: None,
            work,
            max_message: w.ctx.h2.max_recv_message,
            rx: BytesMut::new(),
        }
    }
}

impl Session for Keepalive {
    fn endpoint(&self) -> usize {
        self.slot.endpoint
    }

    async fn ready(&mut self, w: &Worker) -> Result<(), Failure> {
        self.slot.acquire(w, &mut self.handle).await
    }

    async fn exchange(
        &mut self,
        w: &Worker,
        turn: Turn,
        idx: u64,
        setup_from: Option<Instant>,
    ) -> Exchange {
        let ctx = &w.ctx;
        let Keepalive {
            slot,
            handle,
            stream,
            work,
            max_message,
            rx,
        } = self;
        let (endpoint, warm, max_message) = (slot.endpoint, turn.warm, *max_message);
        let Some(h) = handle.as_mut() else {
            let trace = Trace::on(Instant::now(), None);
            w.fail(
                endpoint,
                warm,
                None,
                Failure::new(FailureKind::Connect),
                trace,
            );
            return Exchange::Done;
        };
        // a stream on a connection since replaced went with it
        if stream
            .as_ref()
            .is_some_and(|s| s.generation != h.generation)
        {
            *stream = None;
            rx.clear();
        }
        let started = Instant::now();
        let trace = Trace::on(started, Some(h.port));
        work.next_grpc(idx, endpoint);
        let deadline = tokio::time::Instant::from_std(started + ctx.timeout);
        let fresh = stream.is_none();
        if fresh {
            // boxed: rare (a client's first turn, after a failure), and a large future
            let open = Bidi::open(&mut h.send, &h.ledger, work.call(endpoint), max_message);
            match tokio::time::timeout_at(deadline, Box::pin(open)).await {
                Ok(Ok(bidi)) => {
                    *stream = Some(Open {
                        bidi,
                        generation: h.generation,
                        head: false,
                    });
                }
                // a dead connection is replaced by the next turn's `acquire`
                Ok(Err(f)) => {
                    w.fail(endpoint, warm, None, f, trace);
                    return Exchange::Done;
                }
                Err(_) => {
                    w.fail(
                        endpoint,
                        warm,
                        None,
                        timed_out("no stream opened", ctx),
                        trace,
                    );
                    return Exchange::Done;
                }
            }
        }
        let Some(open) = stream.as_mut() else {
            return Exchange::Done;
        };
        // the open counted this request on the connection; every later message counts its own
        if !fresh {
            h.ledger.count_request();
        }
        if let Err(f) = open.bidi.send(work.grpc_request().clone()) {
            *stream = None;
            rx.clear();
            w.fail(endpoint, warm, None, f, trace);
            return Exchange::Done;
        }
        w.wrote(warm);
        let answer =
            tokio::time::timeout_at(deadline, answer(open, &h.ledger, rx, max_message)).await;
        match answer {
            Err(_) => {
                // the answer may still come on this stream: reset it, open another next turn
                *stream = None;
                rx.clear();
                w.fail(endpoint, warm, None, timed_out("no response", ctx), trace);
            }
            Ok(Err((status, f))) => {
                *stream = None;
                rx.clear();
                w.fail(endpoint, warm, status, f, trace);
            }
            Ok(Ok(_)) if warm => w.warmup_done(),
            Ok(Ok(message)) => {
                let ok = StatusKey::Grpc(Code::Ok.as_u32());
                match work.check_grpc(&message) {
                    Ok(ack) => {
                        let trace = trace.bytes(message.len());
                        w.ok(endpoint, turn, setup_from.unwrap_or(started), ok, trace);
                        w.without_setup(started);
                        w.acked(ack);
                        w.keep_sample(|| work.sample_grpc(&message));
                    }
                    // a wrong answer on a sound stream: the stream stays
                    Err(f) => w.fail(endpoint, warm, Some(ok), f, trace.bytes(message.len())),
                }
            }
        }
        Exchange::Done
    }
}

/// Reads the answer to the message just sent: the response head first on a new stream, then
/// the next whole gRPC message (a slice of `rx`). The stream ending, its head or its trailers
/// saying no, or a framing error are `Broken`.
async fn answer(
    open: &mut Open,
    ledger: &crate::net::Ledger,
    rx: &mut BytesMut,
    max_message: usize,
) -> Result<bytes::Bytes, Broken> {
    let plain = |f: Failure| (None, f);
    if !open.head {
        let head = open.bidi.head().await.map_err(plain)?;
        open.head = true;
        if ledger.h2.is_some() {
            ledger.h2_header_lists(0, open.bidi.header_bytes_in());
        }
        if head.status != 200 {
            return Err((
                None,
                Failure::with(
                    FailureKind::HttpStatus,
                    format_args!("HTTP {} to a gRPC stream", head.status),
                ),
            ));
        }
        if head.trailers_only {
            return Err(ended(head.grpc_status, head.message.as_deref()));
        }
    }
    loop {
        match grpc::decode(rx, max_message) {
            Ok(Some(message)) => return Ok(message),
            Ok(None) => {}
            Err(e) => return Err((None, Failure::with(FailureKind::GrpcFraming, e))),
        }
        if !open.bidi.recv(rx).await.map_err(plain)? {
            // the server ended the stream before answering: its trailers say why
            let before = open.bidi.header_bytes_in();
            let (_, status, message) = open.bidi.trailers().await.map_err(plain)?;
            if ledger.h2.is_some() {
                ledger.h2_header_lists(0, open.bidi.header_bytes_in() - before);
            }
            let text = String::from_utf8_lossy(&message);
            return Err(ended(status, (!text.is_empty()).then_some(&*text)));
        }
    }
}

/// A stream that ended (trailers, or a trailers-only head) without the answer: its grpc-status
/// and grpc-message as the failure.
fn ended(status: Option<Result<Code, grpc::Error>>, message: Option<&str>) -> Broken {
    match status {
        Some(Ok(Code::Ok)) => (
            Some(StatusKey::Grpc(Code::Ok.as_u32())),
            Failure::with(
                FailureKind::BadResponse,
                "the stream ended without an answer",
            ),
        ),
        Some(Ok(code)) => (
            Some(StatusKey::Grpc(code.as_u32())),
            match message {
                Some(m) => Failure::status(
                    FailureKind::Etcd,
                    code,
                    format_args!("{}: {m}", code.as_str()),
                ),
                None => Failure::status(FailureKind::Etcd, code, code.as_str()),
            },
        ),
        Some(Err(e)) => (None, Failure::with(FailureKind::GrpcFraming, e)),
        None => (
            None,
            Failure::with(
                FailureKind::BadResponse,
                "the stream ended without a status",
            ),
        ),
    }
}
