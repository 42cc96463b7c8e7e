//! A bidirectional stream on a wire-client connection (etcd's Watch, gRPC reflection, a
//! server-streaming call): its opening, what it sends, and what it reads as it comes.

use std::cell::RefCell;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::Poll;

use std::time::Duration;

use bytes::{Bytes, BytesMut};

use super::slot::{MAX_MESSAGE_TEXT, Rally};
use super::{ConnHandle, State, open_stream, volley};
use crate::client::call::{Call, CallError, StreamHead};
use crate::net::Ledger;
use crate::outcome::Failure;
use wirebench_wire::grpc::{self, Code};
use wirebench_wire::h2::frame::Reason;

/// A bidirectional stream on a wire-client connection (etcd's Watch): messages go out as DATA
/// without END_STREAM, what arrives is read as it comes. Dropping it resets the stream.
pub struct WireBidi {
    state: Rc<RefCell<State>>,
    token: usize,
    stream: u32,
}

impl ConnHandle {
    /// Opens a bidi stream of `call` (HEADERS without END_STREAM); `max_message` bounds what it
    /// may hold unread.
    pub async fn bidi(
        &self,
        ledger: &Ledger,
        call: &Call,
        max_message: usize,
    ) -> Result<WireBidi, CallError> {
        let token = self.state.borrow_mut().take_slot(call, max_message);
        self.state.borrow_mut().slots[token].streaming = true;
        let mut bidi = WireBidi {
            state: self.state.clone(),
            token,
            stream: 0,
        };
        bidi.stream =
            poll_fn(|cx| open_stream(&mut bidi.state.borrow_mut(), token, call, false, None, cx))
                .await?;
        ledger.count_request();
        if ledger.h2.is_some() {
            ledger.h2_header_lists(call.header_list_bytes, 0);
        }
        Ok(bidi)
    }
}

impl WireBidi {
    /// Queues `message` (already gRPC-framed) on the stream; `last` ends our side with it.
    pub fn send(&self, message: &[u8], last: bool) {
        let mut st = self.state.borrow_mut();
        st.conn.send_data(self.stream, message, last);
        st.wake_driver();
    }

    /// The uncompressed size of the response's header lists so far (head and trailers).
    pub fn header_bytes_in(&self) -> u64 {
        self.state.borrow().slots[self.token].header_bytes_in
    }

    /// Once the stream ended: whether trailers came, their grpc-status (or a trailers-only
    /// head's) and grpc-message.
    pub fn trailers(&self) -> (bool, Option<Result<Code, grpc::Error>>, Vec<u8>) {
        let st = self.state.borrow();
        let s = &st.slots[self.token];
        match s.head_grpc {
            Some(head) => (true, Some(head), s.message.clone()),
            None => (s.trailers_seen, s.trailer_grpc, s.message.clone()),
        }
    }

    /// Waits for the response head.
    pub async fn head(&self) -> Result<StreamHead, Failure> {
        poll_fn(|cx| {
            let mut st = self.state.borrow_mut();
            let s = &mut st.slots[self.token];
            // a head that came is the answer, even if a reset followed it (a trailers-only
            // answer to a stream still open on our side ends with RST_STREAM NO_ERROR)
            if !s.head_seen {
                if let Some(Err(e)) = &s.outcome {
                    return Poll::Ready(Err(e.failure.clone()));
                }
                s.wait(cx);
                return Poll::Pending;
            }
            let message = (!s.message.is_empty()).then(|| {
                let mut text = String::new();
                grpc::decode_message_text(&s.message, MAX_MESSAGE_TEXT, &mut text);
                text
            });
            Poll::Ready(Ok(StreamHead {
                status: s.status,
                trailers_only: s.head_grpc.is_some(),
                grpc_status: s.head_grpc,
                message,
            }))
        })
        .await
    }

    /// Appends what arrived to `into`, waiting for something: `Ok(true)` with bytes,
    /// `Ok(false)` once the server ended the stream and everything was read.
    pub async fn recv(&self, into: &mut BytesMut) -> Result<bool, Failure> {
        poll_fn(|cx| {
            let mut st = self.state.borrow_mut();
            let s = &mut st.slots[self.token];
            if !s.rx.is_empty() {
                // the reader took every whole message: the buffers trade places, no copy
                if into.is_empty() {
                    std::mem::swap(into, &mut s.rx);
                } else {
                    into.extend_from_slice(&s.rx);
                }
                s.rx.clear();
                return Poll::Ready(Ok(true));
            }
            // a stream the server ended is over, even if a reset followed its end (a server
            // that answered before our side ended resets the rest with NO_ERROR)
            if s.ended {
                return Poll::Ready(Ok(false));
            }
            if let Some(Err(e)) = &s.outcome {
                return Poll::Ready(Err(e.failure.clone()));
            }
            s.wait(cx);
            Poll::Pending
        })
        .await
    }
}

impl WireBidi {
    /// Hands the rest of a ping-pong to the connection's driver (`Rally`): `rally` holds the
    /// counts so far and `rx` what was read and not taken (the start of a message at most);
    /// the messages go in turn from `frames`. `reply` gets each timed reply. Returns when every
    /// message is sent and answered, the stream ended or failed, or a message broke the
    /// framing (`rally.failed`), with the counts back in `rally` and what is left unread in
    /// `rx` (the caller's `recv` then says how the stream ends).
    pub async fn rally(
        &self,
        frames: &[Bytes],
        rally: &mut Rally,
        rx: &mut BytesMut,
        reply: &mut dyn FnMut(Duration),
    ) {
        {
            let mut st = self.state.borrow_mut();
            let st = &mut *st;
            let s = &mut st.slots[self.token];
            s.frames.clear();
            s.frames.extend_from_slice(frames);
            std::mem::swap(&mut s.rally, rally);
            // what came since the caller's last read follows what it holds
            rx.extend_from_slice(&s.rx);
            s.rx.clear();
            std::mem::swap(&mut s.rx, rx);
            s.rallying = true;
            if s.rally_step() && st.dead.is_none() {
                volley(&mut st.conn, s);
                st.wake_driver();
            }
        }
        poll_fn(|cx| {
            let mut st = self.state.borrow_mut();
            let s = &mut st.slots[self.token];
            for d in s.replies.drain(..) {
                reply(d);
            }
            let r = &s.rally;
            if s.outcome.is_none() && !s.ended && r.failed.is_none() && !r.over() {
                s.wait(cx);
                return Poll::Pending;
            }
            Poll::Ready(())
        })
        .await;
        let mut st = self.state.borrow_mut();
        let s = &mut st.slots[self.token];
        s.rallying = false;
        s.frames.clear();
        std::mem::swap(&mut s.rally, rally);
        std::mem::swap(&mut s.rx, rx);
    }
}

impl Drop for WireBidi {
    fn drop(&mut self) {
        let mut st = self.state.borrow_mut();
        if self.stream != 0 {
            // cancels what the stream still does (etcd: its watches); nothing if it is over
            st.conn.reset(self.stream, Reason::CANCEL);
            st.wake_driver();
        }
        let s = &mut st.slots[self.token];
        s.outcome = None;
        s.waker = None;
        s.streaming = false;
        s.rallying = false;
        s.frames.clear();
        st.free.push(self.token);
    }
}
