//! One call of a streaming gRPC method, of any kind, on either h2 client: our messages go at
//! their times (all at once, every `interval`, or in ping-pong each after the reply to the one
//! before) while the response is read as it comes and judged by the wire crate's
//! `StreamingResponse`: `:status` 200, messages, trailers with grpc-status 0. A
//! client-streaming call (its response unary) must get exactly one message.
//!
//! Ping-pong pairs replies with requests in order: the reply that makes the replies as many as
//! the messages sent is timed from the last message's send; replies beyond that are counted,
//! not timed. On the wire client a ping-pong without an interval or a span is handed to the
//! connection's driver once the response head is in (`Rally`): it queues each next message as
//! the reply comes, in the same wakeup, and this task wakes only for batches of reply times
//! and the stream's end.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use wirebench_wire::grpc::streaming::StreamingResponse;
use wirebench_wire::grpc::unary::Verdict;

pub use crate::client::call::StreamEnd;
use crate::client::call::{Call, CallError, Progress, judged};
use crate::client::grpc::{Bidi, Rally, Sender};
use crate::net::Ledger;

/// What a stream sends: `messages` of `frames` in turn (framed), at most one per `interval`;
/// `pingpong`: each after the reply to the one before. With a `span`, messages go for that
/// long: the first sent at or after its end (or whose next one would be, with an interval) is
/// the last.
#[derive(Debug, Clone, Copy)]
pub struct Plan<'a> {
    pub frames: &'a [Bytes],
    pub messages: u64,
    pub span: Option<Duration>,
    pub interval: Option<Duration>,
    pub pingpong: bool,
    /// the response is a stream (else exactly one message)
    pub server_streaming: bool,
}

/// What woke the stream: time for the next message, or the response moved.
enum Event {
    Due,
    Head(Result<crate::client::call::StreamHead, crate::outcome::Failure>),
    Data(Result<bool, crate::outcome::Failure>),
}

/// One call of `call` with `plan`; `reply(d)`: a ping-pong reply came `d` after its message.
/// `keep`: how many of the first messages to return. No deadline of its own: the caller bounds
/// it.
#[allow(clippy::too_many_arguments)]
pub async fn stream_call(
    send: &mut Sender,
    ledger: &Ledger,
    call: &Call,
    max_message: usize,
    plan: Plan<'_>,
    rx: &mut BytesMut,
    progress: &Progress,
    keep: usize,
    reply: &mut dyn FnMut(Duration),
) -> Result<StreamEnd, CallError> {
    let kind = call.status_kind;
    let mut stream = Bidi::open(send, ledger, call, max_message)
        .await
        .map_err(CallError::plain)?;
    progress.sent.set(true);
    let count_lists = |s: &Bidi| {
        if ledger.h2.is_some() {
            ledger.h2_header_lists(0, s.header_bytes_in());
        }
    };
    let mut total = plan.messages.max(1);
    let mut verdict = StreamingResponse::new(max_message);
    let mut end = StreamEnd::default();
    let mut due_at = Instant::now();
    let mut sent_at = due_at;
    let until = plan.span.map(|d| due_at + d);
    let mut head = false;
    // a plain ping-pong on the wire client goes to the driver once the head is in
    let mut rally = plan.pingpong && plan.interval.is_none() && until.is_none();
    rx.clear();
    loop {
        if head
            && rally
            && let Some(wire) = stream.wire()
        {
            rally = false;
            let mut r = Rally {
                end: std::mem::take(&mut end),
                total,
                sent_at,
                keep,
                verdict,
                failed: None,
            };
            wire.rally(plan.frames, &mut r, rx, reply).await;
            (end, verdict) = (r.end, r.verdict);
            if let Some(v) = r.failed {
                return Err(judged(v, None, kind));
            }
            // no more messages: what is left is the stream's end
            total = end.sent;
        }
        // every message that may go now
        let may_send = |end: &StreamEnd, total: u64| {
            end.sent < total && (!plan.pingpong || end.received >= end.sent)
        };
        // one clock read for what goes now: messages queued together share it
        let now = if may_send(&end, total) {
            Instant::now()
        } else {
            due_at
        };
        while may_send(&end, total) && due_at <= now {
            let frame = plan.frames[(end.sent % plan.frames.len() as u64) as usize].clone();
            end.sent += 1;
            let timed_out =
                until.is_some_and(|at| now >= at || plan.interval.is_some_and(|d| now + d > at));
            let r = if end.sent == total || timed_out {
                total = end.sent;
                end.last_sent_at = Some(now);
                stream.send_last(frame)
            } else {
                stream.send(frame)
            };
            r.map_err(CallError::plain)?;
            sent_at = now;
            if let Some(d) = plan.interval {
                due_at = now + d;
            }
        }
        let next_due = may_send(&end, total).then_some(due_at);
        let wait = async {
            if head {
                Event::Data(stream.recv(rx).await)
            } else {
                Event::Head(stream.head().await)
            }
        };
        let event = match next_due {
            Some(at) => tokio::select! {
                e = wait => e,
                () = tokio::time::sleep_until(at.into()) => Event::Due,
            },
            None => wait.await,
        };
        match event {
            Event::Due => {}
            Event::Head(h) => {
                let h = h.map_err(CallError::plain)?;
                progress.status.set(h.status);
                let text = h.message.as_deref().map(str::as_bytes);
                match verdict.headers(h.status, h.grpc_status) {
                    Err(v) => {
                        count_lists(&stream);
                        return Err(judged(v, text, kind));
                    }
                    // a trailers-only OK: no messages
                    Ok(false) => {
                        count_lists(&stream);
                        return one_if_unary(end, plan, kind);
                    }
                    Ok(true) => head = true,
                }
            }
            Event::Data(more) => {
                let more = more.map_err(CallError::plain)?;
                verdict
                    .data(rx, |m| {
                        let now = Instant::now();
                        end.first_at.get_or_insert(now);
                        end.received += 1;
                        if plan.pingpong && end.received == end.sent {
                            reply(now - sent_at);
                        }
                        if end.kept.len() < keep {
                            end.kept.push(Bytes::copy_from_slice(m));
                        }
                    })
                    .map_err(|v| judged(v, None, kind))?;
                if !more {
                    break;
                }
            }
        }
    }
    let (trailers, status, message) = stream.trailers().await.map_err(CallError::plain)?;
    count_lists(&stream);
    let text = (!message.is_empty()).then_some(&message[..]);
    end.received = verdict
        .finish(rx, trailers, status)
        .map_err(|v| judged(v, text, kind))?;
    one_if_unary(end, plan, kind)
}

/// A unary response (a client-streaming call's) has exactly one message.
fn one_if_unary(
    end: StreamEnd,
    plan: Plan<'_>,
    kind: crate::outcome::FailureKind,
) -> Result<StreamEnd, CallError> {
    match end.received {
        _ if plan.server_streaming => Ok(end),
        1 => Ok(end),
        0 => Err(judged(Verdict::NoMessage, None, kind)),
        _ => Err(judged(Verdict::MoreThanOne, None, kind)),
    }
}
