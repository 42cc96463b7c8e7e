//! gRPC over h2, and plain HTTP/2 requests on the same connections, on either h2 client: the
//! wire crate's (`wire`, the default) or the `h2` crate's (`--h2-client h2`, the reference a
//! general-purpose library gives). Unary calls as HEADERS + one DATA frame, and bidirectional
//! streams (`client::stream` makes every streaming call of them).
//!
//! Its files, each importing only those before it: `settings` (what a connection announces),
//! `wire` and `h2crate` (the two clients), `conn` (one connection on either client, or on
//! HTTP/3); this file hands each call to its connection's client. What a call sends and how it
//! ends is `client::call`'s, shared with the HTTP/3 client.

mod conn;
mod h2crate;
mod settings;
mod wire;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use wirebench_wire::grpc::{self, Code};

pub use crate::client::call::{Call, CallError, Progress, Request, StreamHead};
pub use conn::{CLOSE_BOUND, Conn, Sender};
pub use settings::{
    DEFAULT_QUIC_CONN_WINDOW, DEFAULT_QUIC_STREAM_WINDOW, H2Client, H2Config, MIN_DATA_FRAME_BUDGET,
};
pub use wire::{Rally, WireBidi};

use crate::net::Ledger;
use crate::outcome::{Failure, FailureKind};

/// Sends one framed request message and returns the one response message (a slice of `rx`).
pub async fn unary(
    send: &mut Sender,
    ledger: &Ledger,
    call: &Call,
    request: Bytes,
    rx: &mut BytesMut,
    max_message: usize,
) -> Result<Bytes, CallError> {
    let progress = Progress::default();
    let req = Request {
        call,
        bytes: &request,
        max_message,
    };
    let r = unary_sent(send, ledger, req, rx, &progress, None).await;
    r.expect("a call without a deadline ends with its outcome")
}

/// `unary`, and `progress` tells when the request is handed to h2 and the response's status;
/// the request is borrowed (a caller's future holds no second copy).
///
/// `None` when `deadline` passed first: the call is dropped (its stream reset).
///
/// Not an `async fn`: its future is the wire client's call itself, or the h2 crate's boxed (a
/// large future, which every caller's future would carry on the wire client too), without a
/// second copy of the arguments around it. The wire client keeps the deadline on its
/// connection's one timer; the h2 crate's call gets a tokio timeout of its own.
pub fn unary_sent<'a>(
    send: &'a mut Sender,
    ledger: &'a Ledger,
    req: Request<'a>,
    rx: &'a mut BytesMut,
    progress: &'a Progress,
    deadline: Option<tokio::time::Instant>,
) -> UnarySent<
    impl Future<Output = UnaryEnd> + 'a,
    impl Future<Output = UnaryEnd> + 'a,
    impl Future<Output = UnaryEnd> + 'a,
> {
    match send {
        Sender::Wire(h) => UnarySent::Wire {
            call: h.unary(ledger, req, rx, progress, deadline),
        },
        Sender::H3(h) => UnarySent::H3 {
            call: h.unary(ledger, req, rx, progress, deadline),
        },
        Sender::H2(send) => {
            let call = h2crate::unary(send, ledger, req, rx, progress);
            UnarySent::H2 {
                call: Box::pin(async move {
                    match deadline {
                        Some(at) => tokio::time::timeout_at(at, call).await.ok(),
                        None => Some(call.await),
                    }
                }),
            }
        }
    }
}

/// What a unary call gives: the response message, or why there is none.
pub type UnaryResult = Result<Bytes, CallError>;

/// A unary call with a deadline: its result, or `None` when the deadline passed first.
pub type UnaryEnd = Option<UnaryResult>;

pin_project_lite::pin_project! {
    /// The future of [`unary_sent`] on either client.
    #[project = UnarySentProj]
    pub enum UnarySent<W, H, Q> {
        Wire { #[pin] call: W },
        H2 { call: Pin<Box<H>> },
        H3 { #[pin] call: Q },
    }
}

impl<W, H, Q> Future for UnarySent<W, H, Q>
where
    W: Future<Output = UnaryEnd>,
    H: Future<Output = UnaryEnd>,
    Q: Future<Output = UnaryEnd>,
{
    type Output = UnaryEnd;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<UnaryEnd> {
        match self.project() {
            UnarySentProj::Wire { call } => call.poll(cx),
            UnarySentProj::H2 { call } => call.as_mut().poll(cx),
            UnarySentProj::H3 { call } => call.poll(cx),
        }
    }
}

/// A bidirectional streaming call (etcd's Watch) on either client: gRPC messages out as DATA
/// frames without END_STREAM, the response read as it arrives. Dropping it resets the stream.
pub enum Bidi {
    Wire(wire::WireBidi),
    H2(h2crate::H2Bidi),
}

impl Bidi {
    /// Opens the stream of `call` on the connection behind `send`; `max_message` bounds what
    /// it may hold unread (the wire client).
    pub async fn open(
        send: &mut Sender,
        ledger: &Ledger,
        call: &Call,
        max_message: usize,
    ) -> Result<Bidi, Failure> {
        match send {
            Sender::Wire(h) => h
                .bidi(ledger, call, max_message)
                .await
                .map(Bidi::Wire)
                .map_err(|e| e.failure),
            Sender::H2(send) => h2crate::H2Bidi::open(send, ledger, call)
                .await
                .map(Bidi::H2),
            Sender::H3(_) => Err(Failure::with(
                FailureKind::H3,
                "streaming calls are not carried over HTTP/3",
            )),
        }
    }

    /// Queues one gRPC-framed message.
    pub fn send(&mut self, message: Bytes) -> Result<(), Failure> {
        self.send_with(message, false)
    }

    /// Queues the last gRPC-framed message: our side of the stream ends with it.
    pub fn send_last(&mut self, message: Bytes) -> Result<(), Failure> {
        self.send_with(message, true)
    }

    fn send_with(&mut self, message: Bytes, last: bool) -> Result<(), Failure> {
        match self {
            Bidi::Wire(b) => {
                b.send(&message, last);
                Ok(())
            }
            Bidi::H2(b) => b.send(message, last),
        }
    }

    /// The wire client's stream (which can hand a ping-pong to its connection's driver).
    pub fn wire(&self) -> Option<&WireBidi> {
        match self {
            Bidi::Wire(b) => Some(b),
            Bidi::H2(_) => None,
        }
    }

    /// The uncompressed size of the response's header lists read so far (head, trailers).
    pub fn header_bytes_in(&self) -> u64 {
        match self {
            Bidi::Wire(b) => b.header_bytes_in(),
            Bidi::H2(b) => b.header_bytes_in(),
        }
    }

    /// Once `recv` saw the end: whether trailers came, their grpc-status and grpc-message.
    pub async fn trailers(
        &mut self,
    ) -> Result<(bool, Option<Result<Code, grpc::Error>>, Vec<u8>), Failure> {
        match self {
            Bidi::Wire(b) => Ok(b.trailers()),
            Bidi::H2(b) => b.trailers().await,
        }
    }

    /// Waits for the response head.
    pub async fn head(&mut self) -> Result<StreamHead, Failure> {
        match self {
            Bidi::Wire(b) => b.head().await,
            Bidi::H2(b) => b.head().await,
        }
    }

    /// Appends what arrived to `into`: `Ok(true)` with bytes, `Ok(false)` at the stream's end.
    pub async fn recv(&mut self, into: &mut BytesMut) -> Result<bool, Failure> {
        match self {
            Bidi::Wire(b) => b.recv(into).await,
            Bidi::H2(b) => b.recv(into).await,
        }
    }
}
