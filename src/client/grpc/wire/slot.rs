//! A call's slot on a wire-client connection (its verdict state and its caller's buffer, lent
//! for the call), and the events of received frames applied to the slots: the gRPC verdict of
//! a unary call, the bytes of a streaming one, the body of a plain HTTP/2 request, and a
//! ping-pong's replies answered by the driver itself (`Rally`).

use std::task::{Context, Waker};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::time::Instant;

use crate::client::call::{Call, CallError, StreamEnd, judged};
use crate::outcome::{Failure, FailureKind};
use wirebench_wire::grpc::streaming::StreamingResponse;
use wirebench_wire::grpc::unary::{UnaryResponse, Verdict};
use wirebench_wire::grpc::{self, Code};
use wirebench_wire::h2::client::{Closed, Events};
use wirebench_wire::h2::frame::Reason;
use wirebench_wire::h2::hpack::Field;

/// A grpc-message is kept up to this many bytes.
pub(super) const MAX_MESSAGE_TEXT: usize = 1024;
/// What a bidi stream may hold unread beyond one message at the receive limit.
const STREAM_SLACK: usize = 1 << 20;
/// A rally's caller is woken to take its reply times once this many are waiting.
const REPLY_BATCH: usize = 128;

/// A ping-pong on a bidi stream, run by the connection's driver once the caller hands it
/// over: every reply that makes the replies as many as the messages sent is timed from that
/// message's queueing and queues the next message in the same wakeup, without a task woken
/// per message. The caller is woken for a batch of reply times, when every message is sent
/// and answered, when the stream ends, fails, or a message breaks the framing; then it takes
/// the counts back.
pub struct Rally {
    /// the counts: messages queued and received, the first one's arrival, the last one's
    /// queueing, the sample kept
    pub end: StreamEnd,
    /// the messages the stream sends
    pub total: u64,
    /// when the last message was queued
    pub sent_at: std::time::Instant,
    /// how many of the first messages received to copy into `end.kept`
    pub keep: usize,
    /// the response's messages judged as they come
    pub verdict: StreamingResponse,
    /// a message that broke the framing (the rally stops)
    pub failed: Option<Verdict>,
}

impl Rally {
    fn idle() -> Rally {
        Rally {
            end: StreamEnd::default(),
            total: 0,
            sent_at: std::time::Instant::now(),
            keep: 0,
            verdict: StreamingResponse::new(0),
            failed: None,
        }
    }

    /// Whether a message may go now: the one before is answered and not all went.
    pub(super) fn due(&self) -> bool {
        self.end.received >= self.end.sent && self.end.sent < self.total
    }

    /// Every message sent and answered.
    pub(super) fn over(&self) -> bool {
        self.end.sent == self.total && self.end.received >= self.total
    }
}

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
    /// a bidi stream's ping-pong is the driver's (`rally`, its messages `frames`, the reply
    /// times not taken yet `replies`)
    pub(super) rallying: bool,
    pub(super) rally: Rally,
    pub(super) frames: Vec<Bytes>,
    pub(super) replies: Vec<Duration>,
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
            rallying: false,
            rally: Rally::idle(),
            frames: Vec::new(),
            replies: Vec::new(),
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
        self.rallying = false;
        self.replies.clear();
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

    /// A rally's turn at what arrived: the whole messages in `rx` counted (one clock read for
    /// them), the reply that pairs with the last message sent timed. `true` when a message is
    /// due (its queueing time set); the caller is woken when the rally stops or has a batch of
    /// reply times.
    pub(super) fn rally_step(&mut self) -> bool {
        let StreamSlot {
            rx,
            rally: r,
            replies,
            ..
        } = self;
        let mut now = None;
        let Rally {
            end:
                StreamEnd {
                    sent,
                    received,
                    first_at,
                    kept,
                    ..
                },
            sent_at,
            keep,
            verdict,
            ..
        } = r;
        let judged = verdict.data(rx, |m| {
            let at = *now.get_or_insert_with(std::time::Instant::now);
            first_at.get_or_insert(at);
            *received += 1;
            if *received == *sent {
                replies.push(at - *sent_at);
            }
            if kept.len() < *keep {
                kept.push(Bytes::copy_from_slice(m));
            }
        });
        if let Err(v) = judged {
            r.failed = Some(v);
            self.wake();
            return false;
        }
        let due = !self.ended && r.due();
        if due {
            r.sent_at = now.unwrap_or_else(std::time::Instant::now);
        }
        if self.ended || r.over() || self.replies.len() >= REPLY_BATCH {
            self.wake();
        }
        due
    }
}

/// The events of received frames, applied to the calls' slots.
pub(super) struct Sink<'a> {
    pub(super) slots: &'a mut Vec<StreamSlot>,
    pub(super) to_reset: &'a mut Vec<u32>,
    /// rallies with a message due, sent after the frames at hand are handled
    pub(super) to_send: &'a mut Vec<usize>,
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
            if !s.rallying {
                s.wake();
            } else if s.rally_step() {
                self.to_send.push(token);
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(payload: &[u8]) -> Vec<u8> {
        let mut v = BytesMut::new();
        grpc::encode_raw(payload, &mut v);
        v.to_vec()
    }

    /// A streaming slot whose rally sent `sent` of `total` messages and heard `received`
    /// replies, the last message queued 1 ms ago; a waker registered (taken when woken).
    fn rallying(sent: u64, total: u64, received: u64) -> StreamSlot {
        let mut s = StreamSlot::new();
        s.streaming = true;
        s.rallying = true;
        s.rally.verdict = StreamingResponse::new(1 << 20);
        s.rally.sent_at = std::time::Instant::now() - Duration::from_millis(1);
        (s.rally.end.sent, s.rally.total, s.rally.end.received) = (sent, total, received);
        s.waker = Some(Waker::noop().clone());
        s
    }

    #[test]
    fn the_reply_that_pairs_with_the_last_message_is_timed_and_the_next_is_due() {
        let mut s = rallying(1, 3, 0);
        let before = s.rally.sent_at;
        s.rx.extend_from_slice(&framed(b"a"));
        assert!(s.rally_step());
        assert_eq!(s.rally.end.received, 1);
        assert_eq!(s.replies.len(), 1);
        assert!(s.replies[0] >= Duration::from_millis(1), "{:?}", s.replies);
        // the next message's time is the reply's
        assert!(s.rally.sent_at > before);
        assert!(s.rally.end.first_at.is_some());
        assert!(s.rx.is_empty());
        // neither over nor a batch: its caller sleeps on
        assert!(s.waker.is_some());
    }

    #[test]
    fn a_part_of_a_reply_waits_and_replies_beyond_the_pair_are_counted_untimed() {
        let mut s = rallying(1, 5, 0);
        let two = [framed(b"a"), framed(b"b")].concat();
        s.rx.extend_from_slice(&two[..4]);
        assert!(!s.rally_step());
        assert_eq!(
            (s.rally.end.received, s.replies.len(), s.rx.len()),
            (0, 0, 4)
        );
        s.rx.extend_from_slice(&two[4..]);
        // both came: the first paired with the message sent, the second not timed
        assert!(s.rally_step());
        assert_eq!((s.rally.end.received, s.replies.len()), (2, 1));
    }

    #[test]
    fn the_caller_wakes_when_the_rally_is_over_ended_broken_or_has_a_batch() {
        // the last message answered: over, nothing due
        let mut s = rallying(3, 3, 2);
        s.rx.extend_from_slice(&framed(b"c"));
        assert!(!s.rally_step());
        assert!(s.rally.over() && s.waker.is_none());
        // the server ended the stream: the reply counts, no message goes
        let mut s = rallying(1, 3, 0);
        s.ended = true;
        s.rx.extend_from_slice(&framed(b"a"));
        assert!(!s.rally_step());
        assert_eq!(s.rally.end.received, 1);
        assert!(s.waker.is_none());
        // a flag byte that is neither 0 nor 1 breaks the framing
        let mut s = rallying(1, 3, 0);
        s.rx.extend_from_slice(&[7, 0, 0, 0, 1, b'x']);
        assert!(!s.rally_step());
        assert!(s.rally.failed.is_some() && s.waker.is_none());
        // a batch of reply times is waiting
        let mut s = rallying(1, 1000, 0);
        s.replies.resize(REPLY_BATCH - 1, Duration::ZERO);
        s.rx.extend_from_slice(&framed(b"a"));
        assert!(s.rally_step());
        assert!(s.replies.len() == REPLY_BATCH && s.waker.is_none());
    }

    #[test]
    fn a_rally_keeps_copies_of_the_first_replies_only() {
        let mut s = rallying(1, 10, 0);
        s.rally.keep = 2;
        for (i, m) in [b"a", b"b", b"c"].into_iter().enumerate() {
            s.rx.extend_from_slice(&framed(m));
            s.rally_step();
            s.rally.end.sent = i as u64 + 2;
        }
        assert_eq!(s.rally.end.kept, [&b"a"[..], b"b"]);
        assert_eq!(s.rally.end.received, 3);
    }

    /// A sink over one rallying slot.
    fn sink_data(s: StreamSlot, data: &[u8], end_stream: bool) -> (StreamSlot, Vec<usize>) {
        let (mut slots, mut to_reset, mut to_send) = (vec![s], Vec::new(), Vec::new());
        let mut sink = Sink {
            slots: &mut slots,
            to_reset: &mut to_reset,
            to_send: &mut to_send,
            lost: None,
        };
        sink.data(0, data, end_stream);
        (slots.pop().unwrap(), to_send)
    }

    #[test]
    fn the_sink_hands_a_due_rally_to_the_driver_without_waking_its_caller() {
        let (s, to_send) = sink_data(rallying(1, 3, 0), &framed(b"a"), false);
        assert_eq!(to_send, [0]);
        assert!(s.waker.is_some());
        // not rallying: the reader is woken with the bytes, nothing is sent for it
        let mut plain = rallying(1, 3, 0);
        plain.rallying = false;
        let (s, to_send) = sink_data(plain, &framed(b"a"), false);
        assert!(to_send.is_empty() && s.waker.is_none() && s.rx.len() == 6);
        // the stream's end in the same frame: counted, nothing due, the caller woken
        let (s, to_send) = sink_data(rallying(1, 3, 0), &framed(b"a"), true);
        assert!(to_send.is_empty() && s.waker.is_none());
        assert_eq!(s.rally.end.received, 1);
    }
}
