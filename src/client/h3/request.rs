//! One request on an HTTP/3 connection: its slot (what it sends, the response's frames as they
//! arrive, its verdict, its caller's waker and deadline), and how a response's frames become
//! that verdict: a status from the HEADERS' field section, the body from DATA, the end at FIN.

use std::task::{Context, Waker};

use bytes::{Bytes, BytesMut};
use tokio::time::Instant;

use crate::client::call::CallError;
use crate::outcome::{Failure, FailureKind};
use wirebench_wire::h3::Error;
use wirebench_wire::h3::counts::H3Counts;
use wirebench_wire::h3::frame::{Frame, FrameReader};
use wirebench_wire::h3::qpack::{Decoder, QpackCounts};

/// A request's slot, reused by the next request when it ends.
pub(super) struct Slot {
    /// the request stream, once opened
    pub(super) stream: Option<quinn_proto::StreamId>,
    /// HEADERS and the DATA head, then the body: what is still to be written (quinn takes
    /// each as it is, no copy)
    pub(super) chunks: [Bytes; 2],
    /// what the request sent in 0-RTT, kept until the handshake says whether the server took
    /// it (a rejected 0-RTT is sent again), with the HTTP/3 frames it counted
    pub(super) early: Option<([Bytes; 2], H3Counts)>,
    /// our side of the stream is finished (FIN queued)
    pub(super) finished: bool,
    /// the response's frames
    pub(super) reader: FrameReader,
    /// stream bytes not yet read as frames (a frame cut across packets)
    pub(super) inbuf: BytesMut,
    /// the caller's body buffer, swapped in for the request
    pub(super) rx: BytesMut,
    pub(super) max_message: usize,
    /// the final response's :status, 0 before it
    pub(super) status: u16,
    /// the response's uncompressed header bytes
    pub(super) header_bytes_in: u64,
    pub(super) outcome: Option<Result<Bytes, CallError>>,
    /// how the request ended: well (the whole response read to its FIN) or not; `None` while
    /// it runs
    pub(super) ended: Option<bool>,
    pub(super) waker: Option<Waker>,
    pub(super) deadline: Option<Instant>,
    pub(super) expired: bool,
}

impl Slot {
    pub(super) fn new() -> Slot {
        Slot {
            stream: None,
            chunks: [Bytes::new(), Bytes::new()],
            early: None,
            finished: false,
            reader: FrameReader::default(),
            inbuf: BytesMut::new(),
            rx: BytesMut::new(),
            max_message: 0,
            status: 0,
            header_bytes_in: 0,
            outcome: None,
            ended: None,
            waker: None,
            deadline: None,
            expired: false,
        }
    }

    /// Ready for a new request that accepts a body of `max_message` bytes.
    pub(super) fn begin(&mut self, max_message: usize) {
        self.stream = None;
        self.chunks = [Bytes::new(), Bytes::new()];
        self.early = None;
        self.finished = false;
        self.inbuf.clear();
        self.max_message = max_message;
        self.status = 0;
        self.header_bytes_in = 0;
        self.outcome = None;
        self.ended = None;
        self.deadline = None;
        self.expired = false;
    }

    pub(super) fn wait(&mut self, cx: &Context<'_>) {
        if self.waker.as_ref().is_none_or(|w| !w.will_wake(cx.waker())) {
            self.waker = Some(cx.waker().clone());
        }
    }

    pub(super) fn wake(&mut self) {
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    pub(super) fn done(&mut self, r: Result<Bytes, CallError>) {
        if self.ended.is_none() {
            self.ended = Some(r.is_ok());
            self.outcome = Some(r);
            self.wake();
        }
    }

    pub(super) fn all_sent(&self) -> bool {
        self.chunks.iter().all(Bytes::is_empty)
    }
}

/// Why a response stream broke the protocol: the connection closes with the error's code.
pub(super) struct ProtocolError(pub(super) Error);

/// Reads the frames in `s.inbuf`: the response's head, its DATA into `s.rx`; `fin`: the
/// stream ended after these bytes. The slot's verdict is set when the response is complete
/// or failed; a protocol error is returned for the connection to close with.
pub(super) fn read_frames(
    s: &mut Slot,
    fin: bool,
    qpack: &mut Decoder,
    max_field_section: u64,
    qpack_in: &mut QpackCounts,
) -> Result<(), ProtocolError> {
    while s.ended.is_none() {
        let frame = match s.reader.decode(&mut s.inbuf) {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => return Err(ProtocolError(e)),
        };
        match frame {
            Frame::Headers(block) => {
                if s.status != 0 {
                    // trailers: counted, not judged (a plain response has no verdict in them)
                    let mut c = QpackCounts::default();
                    qpack
                        .decode(&block, max_field_section, &mut c, |_, _| {})
                        .map_err(ProtocolError)?;
                    *qpack_in += c;
                    continue;
                }
                let mut status = 0u16;
                let mut bytes = 0u64;
                let mut c = QpackCounts::default();
                qpack
                    .decode(&block, max_field_section, &mut c, |name, value| {
                        bytes += (name.len() + value.len()) as u64;
                        if name == b":status" {
                            status = std::str::from_utf8(value)
                                .ok()
                                .and_then(|v| v.parse().ok())
                                .unwrap_or(0);
                        }
                    })
                    .map_err(ProtocolError)?;
                *qpack_in += c;
                s.header_bytes_in += bytes;
                if !(100..=999).contains(&status) {
                    s.done(Err(CallError::plain(Failure::with(
                        FailureKind::H3,
                        "a response head without a valid :status",
                    ))));
                    return Ok(());
                }
                if status >= 200 {
                    s.status = status;
                }
            }
            Frame::Data { chunk, .. } => {
                if s.status == 0 {
                    return Err(ProtocolError(Error {
                        code: wirebench_wire::h3::Code::FrameUnexpected,
                        context: "DATA before the response's HEADERS",
                    }));
                }
                if s.rx.len() + chunk.len() > s.max_message {
                    let failure = Failure::with(
                        FailureKind::BodyTooLarge,
                        format_args!("response body beyond {} bytes (--max-body)", s.max_message),
                    );
                    s.done(Err(CallError::plain(failure)));
                    return Ok(());
                }
                s.rx.extend_from_slice(&chunk);
            }
            Frame::PushPromise { .. } => {
                return Err(ProtocolError(Error {
                    code: wirebench_wire::h3::Code::IdError,
                    context: "PUSH_PROMISE without MAX_PUSH_ID",
                }));
            }
            Frame::Settings(_) | Frame::GoAway(_) | Frame::CancelPush(_) | Frame::MaxPushId(_) => {
                return Err(ProtocolError(Error {
                    code: wirebench_wire::h3::Code::FrameUnexpected,
                    context: "a control frame on a request stream",
                }));
            }
        }
    }
    if fin && s.ended.is_none() {
        if !s.reader.at_frame_boundary() || !s.inbuf.is_empty() {
            return Err(ProtocolError(Error {
                code: wirebench_wire::h3::Code::FrameError,
                context: "the response stream ends inside a frame",
            }));
        }
        if s.status == 0 {
            s.done(Err(CallError::plain(Failure::with(
                FailureKind::H3,
                "the response stream ended without a final response head",
            ))));
        } else {
            let body = s.rx.split().freeze();
            s.done(Ok(body));
        }
    }
    Ok(())
}

/// The frame counts a finished request's reader kept, moved into the connection's sum.
pub(super) fn take_counts(s: &mut Slot, into: &mut H3Counts) {
    *into += *s.reader.counts();
    s.reader = FrameReader::default();
}
