//! A call's slot on a wire-client connection (its verdict state and its caller's buffer, lent
//! for the call), and the events of received frames applied to the slots: the gRPC verdict of
//! a unary call, the bytes of a streaming one, the body of a plain HTTP/2 request.

use std::task::{Context, Waker};

use bytes::{Bytes, BytesMut};
use tokio::time::Instant;

use crate::client::call::{Call, CallError, judged};
use crate::outcome::{Failure, FailureKind};
use wirebench_wire::grpc::unary::{UnaryResponse, Verdict};
use wirebench_wire::grpc::{self, Code};
use wirebench_wire::h2::client::{Closed, Events};
use wirebench_wire::h2::frame::Reason;
use wirebench_wire::h2::hpack::Field;

/// A grpc-message is kept up to this many bytes.
pub(super) const MAX_MESSAGE_TEXT: usize = 1024;
/// What a bidi stream may hold unread beyond one message at the receive limit.
const STREAM_SLACK: usize = 1 << 20;

/// One call's state while its stream is open.
pub(super) struct StreamSlot {
    /// the caller's response buffer, lent for the call
    pub(super) rx: BytesMut,
    pub(super) max_message: usize,
    pub(super) status_kind: FailureKind,
    pub(super) status: u16,
    /// grpc-status of the head (trailers-only) and of the trailers, parsed (`None`: absent)
    pub(super) head_grpc: Option<Result<Code, grpc::Error>>,
    pub(super) trailer_grpc: Option<Result<Code, grpc::Error>>,
    pub(super) message: Vec<u8>,
    pub(super) header_bytes_in: u64,
    pub(super) stream: u32,
    pub(super) outcome: Option<Result<Bytes, CallError>>,
    pub(super) waker: Option<Waker>,
    /// a bidi stream (`WireBidi`): DATA is kept in `rx` for its reader, not judged as one message
    pub(super) streaming: bool,
    /// a plain HTTP/2 request: the response is a status and a body of at most `max_message`
    /// bytes, complete at END_STREAM (no gRPC framing, no grpc-status)
    pub(super) plain: bool,
    /// the stream's response head arrived
    pub(super) head_seen: bool,
    /// the server ended the stream
    pub(super) ended: bool,
    /// a bidi stream's trailers arrived (their grpc-status is `trailer_grpc`)
    pub(super) trailers_seen: bool,
    /// when a unary call gives up (the driver's timer checks it); `None` for none
    pub(super) deadline: Option<Instant>,
    /// the deadline passed before the call's outcome came
    pub(super) expired: bool,
}

impl StreamSlot {
    pub(super) fn new() -> StreamSlot {
        StreamSlot {
            rx: BytesMut::new(),
            max_message: 0,
            status_kind: FailureKind::GrpcStatus,
            status: 0,
            head_grpc: None,
            trailer_grpc: None,
            message: Vec::new(),
            header_bytes_in: 0,
            stream: 0,
            outcome: None,
            waker: None,
            streaming: false,
            plain: false,
            head_seen: false,
            ended: false,
            trailers_seen: false,
            deadline: None,
            expired: false,
        }
    }

    /// Ready for a new call, its buffers kept.
    pub(super) fn begin(&mut self, call: &Call, max_message: usize) {
        self.rx.clear();
        self.max_message = max_message;
        self.status_kind = call.status_kind;
        self.status = 0;
        self.head_grpc = None;
        self.trailer_grpc = None;
        self.message.clear();
        self.header_bytes_in = 0;
        self.stream = 0;
        self.outcome = None;
        self.waker = None;
        self.streaming = false;
        self.plain = call.is_plain();
        self.head_seen = false;
        self.ended = false;
        self.trailers_seen = false;
        self.deadline = None;
        self.expired = false;
    }

    pub(super) fn wake(&mut self) {
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    /// Registers the task that waits on this slot.
    pub(super) fn wait(&mut self, cx: &Context<'_>) {
        if self.waker.as_ref().is_none_or(|w| !w.will_wake(cx.waker())) {
            self.waker = Some(cx.waker().clone());
        }
    }

    pub(super) fn done(&mut self, outcome: Result<Bytes, CallError>) {
        if self.outcome.is_none() {
            self.outcome = Some(outcome);
            self.wake();
        }
    }

    fn judged(&self, v: Verdict) -> CallError {
        let message = (!self.message.is_empty()).then_some(&self.message[..]);
        judged(v, message, self.status_kind)
    }
}

/// The events of received frames, applied to the calls' slots.
pub(super) struct Sink<'a> {
    pub(super) slots: &'a mut Vec<StreamSlot>,
    pub(super) to_reset: &'a mut Vec<u32>,
    /// what a lost stream fails with
    pub(super) lost: Option<Failure>,
}

impl Events for Sink<'_> {
    fn field(&mut self, token: usize, f: Field<'_>, trailers: bool) {
        let s = &mut self.slots[token];
        s.header_bytes_in += (f.name.len() + f.value.len()) as u64;
        match f.name {
            // three digits: the connection hands over no other :status
            b":status" => {
                s.status = std::str::from_utf8(f.value)
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
            }
            b"grpc-status" if trailers => s.trailer_grpc = Some(grpc::parse_status(f.value)),
            b"grpc-status" => s.head_grpc = Some(grpc::parse_status(f.value)),
            b"grpc-message" => {
                s.message.clear();
                s.message
                    .extend_from_slice(&f.value[..f.value.len().min(MAX_MESSAGE_TEXT)]);
            }
            _ => {}
        }
    }

    fn headers_done(&mut self, token: usize, trailers: bool, end_stream: bool) {
        let s = &mut self.slots[token];
        if s.outcome.is_some() {
            return;
        }
        if s.streaming {
            if !trailers && (100..200).contains(&s.status) {
                s.status = 0;
                return;
            }
            s.head_seen = true;
            s.trailers_seen |= trailers;
            s.ended |= trailers || end_stream;
            s.wake();
            return;
        }
        if s.plain {
            if trailers || end_stream {
                // trailers end a plain response too; an informational head never ends one
                if trailers || !(100..200).contains(&s.status) {
                    let body = s.rx.split().freeze();
                    s.done(Ok(body));
                }
            } else if (100..200).contains(&s.status) {
                s.status = 0;
            } else {
                s.rx.clear();
            }
            return;
        }
        let verdict = UnaryResponse::new(s.max_message);
        if trailers {
            let r = verdict.finish(&mut s.rx, true, s.trailer_grpc);
            let r = r.map_err(|v| s.judged(v));
            s.done(r);
            return;
        }
        if (100..200).contains(&s.status) {
            // informational: the real head follows
            s.status = 0;
            return;
        }
        match verdict.headers(s.status, s.head_grpc) {
            Err(v) => {
                let e = s.judged(v);
                s.done(Err(e));
                if !end_stream {
                    self.to_reset.push(s.stream);
                }
            }
            Ok(_) if end_stream => {
                let r = verdict
                    .finish(&mut s.rx, false, None)
                    .map_err(|v| s.judged(v));
                s.done(r);
            }
            Ok(_) => s.rx.clear(),
        }
    }

    fn data(&mut self, token: usize, data: &[u8], end_stream: bool) {
        let s = &mut self.slots[token];
        if s.outcome.is_some() {
            return;
        }
        if s.streaming {
            // what the reader has not taken yet is bounded: one message at the receive limit
            // and a window's worth behind it
            if s.rx.len() + data.len() > s.max_message + STREAM_SLACK {
                let failure = Failure::with(
                    FailureKind::GrpcFraming,
                    "the stream's unread data exceeds the receive limit",
                );
                s.done(Err(CallError::plain(failure)));
                self.to_reset.push(s.stream);
                return;
            }
            s.rx.extend_from_slice(data);
            s.ended |= end_stream;
            s.wake();
            return;
        }
        if s.plain {
            if s.rx.len() + data.len() > s.max_message {
                let failure = Failure::with(
                    FailureKind::BodyTooLarge,
                    format_args!("response body beyond {} bytes (--max-body)", s.max_message),
                );
                s.done(Err(CallError::plain(failure)));
                if !end_stream {
                    self.to_reset.push(s.stream);
                }
                return;
            }
            s.rx.extend_from_slice(data);
            if end_stream {
                let body = s.rx.split().freeze();
                s.done(Ok(body));
            }
            return;
        }
        let verdict = UnaryResponse::new(s.max_message);
        if let Err(v) = verdict.data(&mut s.rx, data) {
            let e = s.judged(v);
            s.done(Err(e));
            if !end_stream {
                self.to_reset.push(s.stream);
            }
        } else if end_stream {
            let r = verdict
                .finish(&mut s.rx, false, None)
                .map_err(|v| s.judged(v));
            s.done(r);
        }
    }

    fn closed(&mut self, token: usize, why: Closed) {
        let s = &mut self.slots[token];
        let e = match why {
            Closed::Reset(r) => CallError {
                status: None,
                failure: Failure::with(
                    FailureKind::RstStream,
                    format_args!("{r}: {}", r.meaning()),
                ),
                conn_broken: false,
                unprocessed: r == Reason::REFUSED_STREAM,
            },
            Closed::Refused => CallError {
                status: None,
                failure: Failure::with(FailureKind::Goaway, "stream above the GOAWAY's last id"),
                conn_broken: true,
                unprocessed: true,
            },
            Closed::Error(reason, what) => CallError {
                status: None,
                failure: Failure::with(FailureKind::H2, format_args!("{reason}: {what}")),
                conn_broken: false,
                unprocessed: false,
            },
            Closed::Lost => CallError {
                status: None,
                failure: self
                    .lost
                    .clone()
                    .unwrap_or_else(|| Failure::with(FailureKind::Io, "connection lost")),
                conn_broken: true,
                unprocessed: false,
            },
        };
        s.done(Err(e));
    }
}
