//! gRPC over h2: connection setup, and unary calls as HEADERS + one DATA frame, on either h2
//! client: the wire crate's (`wire`, the default) or the `h2` crate's (`--h2-client h2`, the
//! reference a general-purpose library gives).

pub mod wire;

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use h2::client::SendRequest;
use http::header::{CONTENT_TYPE, HeaderName, HeaderValue, TE};
use http::{HeaderMap, Method, Request, Uri, Version};

use crate::net::{self, Alpn, Layers, Ledger, NetConfig};
use crate::outcome::{Failure, FailureKind, StatusKey};
use crate::stats::ConnRecord;
use wirebench_wire::grpc::streaming::StreamingResponse;
use wirebench_wire::grpc::unary::{UnaryResponse, Verdict};
use wirebench_wire::grpc::{self, Code};

/// The h2 settings a connection announces (plain data, kept in `net` beside the socket options).
pub use crate::net::H2Config;

/// Which h2 client a connection runs on.
pub use crate::net::H2Client;

/// A caller's handle on a connection, for either client; clones share the connection.
#[derive(Clone)]
pub enum Sender {
    H2(SendRequest<Bytes>),
    Wire(wire::Handle),
}

/// One h2 connection; its frames are driven by a task on the current thread.
pub struct Conn {
    send: Sender,
    ledger: Rc<Ledger>,
    /// a duplicate of the socket, so TCP_INFO can be read even after h2 is done with it
    fd: OwnedFd,
    dead: Rc<Cell<bool>>,
    driver: tokio::task::JoinHandle<()>,
    endpoint: usize,
    local_port: u16,
    opened: Instant,
}

impl Conn {
    /// Connects and starts the h2 handshake (preface + SETTINGS); the driver runs on the
    /// current `LocalSet`.
    pub async fn connect(
        addr: SocketAddr,
        host: &str,
        endpoint: usize,
        net_cfg: &NetConfig,
        h2_cfg: &H2Config,
    ) -> io::Result<Conn> {
        // the wire client's codec counts its own frames; the h2 crate's are sniffed
        let layers = match (h2_cfg.ledger, h2_cfg.client) {
            (false, _) => Layers::Off,
            (true, H2Client::Wire) => Layers::H2Codec,
            (true, H2Client::H2) => Layers::H2Sniffed {
                grpc: !h2_cfg.plain,
            },
        };
        let opened = net::open(addr, host, net_cfg, Alpn::H2, layers).await?;
        let (io, ledger, local_port, fd) = (opened.io, opened.ledger, opened.local_port, opened.fd);
        let dead = Rc::new(Cell::new(false));
        let (send, driver) = match h2_cfg.client {
            H2Client::Wire => {
                let (handle, driver) = wire::start(io, h2_cfg, dead.clone());
                // the server's SETTINGS before the first request: its stream limit holds
                // from the start (no PING needed: the wire client sees SETTINGS arrive)
                match tokio::time::timeout(net_cfg.connect_timeout, handle.ready()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => return Err(io::Error::other(format!("h2 handshake: {e}"))),
                    Err(_) => {
                        driver.abort();
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "h2 handshake: no SETTINGS from the server",
                        ));
                    }
                }
                (Sender::Wire(handle), driver)
            }
            H2Client::H2 => {
                let (send, driver) = h2_crate_handshake(io, net_cfg, h2_cfg, dead.clone()).await?;
                (Sender::H2(send), driver)
            }
        };
        Ok(Conn {
            send,
            ledger,
            fd,
            dead,
            driver,
            endpoint,
            local_port,
            opened: Instant::now(),
        })
    }

    pub fn is_dead(&self) -> bool {
        self.dead.get()
            || match &self.send {
                Sender::Wire(h) => h.is_dead(),
                Sender::H2(_) => false,
            }
    }

    pub fn mark_dead(&self) {
        self.dead.set(true);
    }

    /// A handle for one caller; handles share the connection as concurrent streams.
    pub fn handle(&self) -> Sender {
        self.send.clone()
    }

    /// The connection's local port (its name in the request log and the per-connection
    /// records).
    pub fn local_port(&self) -> u16 {
        self.local_port
    }

    pub fn ledger(&self) -> &Rc<Ledger> {
        &self.ledger
    }

    /// Closes the connection and returns its record. Streams still in flight get up to
    /// `linger` to finish; then the snapshot the record's figures come from (the ledger, the
    /// wire client's codec counts of its h2 layers, and TCP_INFO, read from the duplicate
    /// descriptor). Then the close: dropping the last handle
    /// makes h2 write its GOAWAY and shut our side down (FIN; sent here too should h2 not get
    /// to it), and what the server still sends (its GOAWAY, its FIN) is read from the
    /// duplicate, through the ledger, for at most `CLOSE_BOUND`. That exchange goes into the
    /// record's `close`.
    pub async fn close(self, linger: std::time::Duration) -> ConnRecord {
        let Conn {
            send,
            ledger,
            fd,
            driver,
            endpoint,
            local_port,
            opened,
            ..
        } = self;
        let waited = Instant::now();
        while ledger.in_flight.get() > 0 && waited.elapsed() < linger {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let lifetime_us = opened.elapsed().as_micros() as u64;
        let codec = match &send {
            Sender::Wire(handle) => handle.layers(),
            Sender::H2(_) => None,
        };
        let tcp = net::tcp_info(&fd);
        let mut rec = ledger.record(endpoint, local_port, lifetime_us, tcp, codec);
        let began = Instant::now();
        let mut driver = driver;
        let drained = match send {
            Sender::Wire(handle) => {
                // the driver writes GOAWAY and our FIN and reads to the server's FIN, all
                // through the ledger
                handle.close();
                if tokio::time::timeout(CLOSE_BOUND, &mut driver)
                    .await
                    .is_err()
                {
                    driver.abort();
                }
                handle.saw_eof()
            }
            Sender::H2(send) => {
                drop(send);
                match tokio::time::timeout(CLOSE_BOUND, &mut driver).await {
                    Ok(_) => {
                        let left = CLOSE_BOUND.saturating_sub(began.elapsed());
                        drain(&fd, &ledger, left).await
                    }
                    Err(_) => {
                        driver.abort();
                        false
                    }
                }
            }
        };
        rec.close = Some(ledger.close_record(&rec, net::tcp_info(&fd), drained, began.elapsed()));
        rec
    }
}

/// The `h2` crate's handshake with our settings, its connection driven by a local task that
/// sets `dead` when it ends; then one PING round trip: the server sends its SETTINGS before
/// acknowledging it, so once the PONG is here its limits (max concurrent streams, windows) are
/// known and respected from the first request on (h2's client API has no "SETTINGS received").
async fn h2_crate_handshake(
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

/// How long the close exchange of one connection may take (connections close concurrently).
pub const CLOSE_BOUND: std::time::Duration = std::time::Duration::from_millis(500);

/// Reads the socket through a duplicate descriptor to EOF (after h2 is done with it), through
/// the ledger, for at most `bound`; true when the server's FIN arrived. Our FIN goes first, in
/// case h2 did not shut the socket down itself.
async fn drain(fd: &OwnedFd, ledger: &Ledger, bound: std::time::Duration) -> bool {
    let Ok(dup) = fd.try_clone() else {
        return false;
    };
    let std_stream = std::net::TcpStream::from(dup);
    let _ = std_stream.shutdown(std::net::Shutdown::Write);
    if std_stream.set_nonblocking(true).is_err() {
        return false;
    }
    let Ok(stream) = tokio::net::TcpStream::from_std(std_stream) else {
        return false;
    };
    let mut buf = [0u8; 512];
    let read = async {
        loop {
            if stream.readable().await.is_err() {
                return false;
            }
            match stream.try_read(&mut buf) {
                Ok(0) => return true,
                Ok(n) => ledger.drained(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => ledger.drained_would_block(),
                Err(_) => return false,
            }
        }
    };
    tokio::time::timeout(bound, read).await.unwrap_or(false)
}

/// A unary call's target, built once: full URI (scheme, authority, path), extra metadata, and
/// the failure kind a non-OK grpc-status is counted under (e.g. "etcd"). Or, made by
/// [`Call::plain`], a plain HTTP/2 request: method, URI and headers, with a body of its own
/// (no gRPC framing), answered by a status and a body.
///
/// Its header fields never change after `new`: the wire client keeps their HPACK block under
/// `key` (clones share it, as they share the fields).
#[derive(Debug, Clone)]
pub struct Call {
    uri: Uri,
    metadata: Vec<(HeaderName, HeaderValue)>,
    pub status_kind: FailureKind,
    /// uncompressed size of the request's header list (`fields`, pseudo-headers included)
    header_list_bytes: u64,
    key: u64,
    /// a plain HTTP/2 request with this method; `None`: a gRPC call
    plain: Option<Method>,
}

/// The next `Call::key`.
static NEXT_CALL_KEY: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Call {
    pub fn new(
        uri: Uri,
        metadata: Vec<(HeaderName, HeaderValue)>,
        status_kind: FailureKind,
    ) -> Call {
        Call::build(uri, metadata, status_kind, None)
    }

    /// A plain HTTP/2 request: `method` on `uri` (scheme, authority, path and query) with
    /// `headers` (lower-case names; no connection-specific ones, RFC 9113 §8.2.2).
    pub fn plain(method: Method, uri: Uri, headers: Vec<(HeaderName, HeaderValue)>) -> Call {
        Call::build(uri, headers, FailureKind::HttpStatus, Some(method))
    }

    fn build(
        uri: Uri,
        metadata: Vec<(HeaderName, HeaderValue)>,
        status_kind: FailureKind,
        plain: Option<Method>,
    ) -> Call {
        let mut call = Call {
            uri,
            metadata,
            status_kind,
            header_list_bytes: 0,
            key: NEXT_CALL_KEY.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            plain,
        };
        call.header_list_bytes = call
            .fields()
            .map(|(name, value)| (name.len() + value.len()) as u64)
            .sum();
        call
    }

    /// Whether this is a plain HTTP/2 request rather than a gRPC call.
    pub fn is_plain(&self) -> bool {
        self.plain.is_some()
    }

    /// The request's header fields: the pseudo-headers, then (gRPC) content-type and te and the
    /// metadata, or (plain) the headers.
    pub fn fields(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        const GRPC: [(&[u8], &[u8]); 2] =
            [(b"content-type", b"application/grpc"), (b"te", b"trailers")];
        let scheme = self.uri.scheme_str().unwrap_or("http");
        let path = self.uri.path_and_query().map_or("/", |p| p.as_str());
        let authority = self.uri.authority().map_or("", |a| a.as_str());
        let method = self.plain.as_ref().map_or("POST", Method::as_str);
        let grpc = if self.plain.is_some() {
            &[][..]
        } else {
            &GRPC[..]
        };
        [
            (&b":method"[..], method.as_bytes()),
            (b":scheme", scheme.as_bytes()),
            (b":path", path.as_bytes()),
            (b":authority", authority.as_bytes()),
        ]
        .into_iter()
        .chain(grpc.iter().copied())
        .chain(
            self.metadata
                .iter()
                .map(|(k, v)| (k.as_str().as_bytes(), v.as_bytes())),
        )
    }
}

/// How a failed call ended: the gRPC status when there was one, and why.
#[derive(Debug)]
pub struct CallError {
    pub status: Option<StatusKey>,
    pub failure: Failure,
    /// the connection itself is broken (GOAWAY, IO error), not just this stream
    pub conn_broken: bool,
    /// the server cannot have processed the request (refused, above GOAWAY's last stream, or
    /// never sent), so it is safe to retry on another connection
    pub unprocessed: bool,
}

impl CallError {
    fn h2(e: h2::Error) -> CallError {
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

    pub fn plain(failure: Failure) -> CallError {
        CallError {
            status: None,
            failure,
            conn_broken: false,
            unprocessed: false,
        }
    }
}

/// Counts a stream in flight on the connection while it lives (the close waits for none).
struct InFlight<'a>(&'a Ledger);

impl<'a> InFlight<'a> {
    fn new(l: &'a Ledger) -> InFlight<'a> {
        l.in_flight.set(l.in_flight.get() + 1);
        InFlight(l)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0
            .in_flight
            .set(self.0.in_flight.get().saturating_sub(1));
    }
}

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
    let r = unary_sent(
        send,
        ledger,
        call,
        &request,
        rx,
        max_message,
        &progress,
        None,
    )
    .await;
    r.expect("a call without a deadline ends with its outcome")
}

/// What a call tells its caller besides its outcome.
#[derive(Debug, Default)]
pub struct Progress {
    /// the request was handed to h2 (its HEADERS queued)
    pub sent: Cell<bool>,
    /// the response's :status (0 before a final head); a plain request's verdict needs it
    pub status: Cell<u16>,
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
#[allow(clippy::too_many_arguments)]
pub fn unary_sent<'a>(
    send: &'a mut Sender,
    ledger: &'a Ledger,
    call: &'a Call,
    request: &'a Bytes,
    rx: &'a mut BytesMut,
    max_message: usize,
    progress: &'a Progress,
    deadline: Option<tokio::time::Instant>,
) -> UnarySent<impl Future<Output = UnaryEnd> + 'a, impl Future<Output = UnaryEnd> + 'a> {
    match send {
        Sender::Wire(h) => UnarySent::Wire {
            call: h.unary(ledger, call, request, rx, max_message, progress, deadline),
        },
        Sender::H2(send) => {
            let call = h2_unary(
                send,
                ledger,
                call,
                request.clone(),
                rx,
                max_message,
                progress,
            );
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
    pub enum UnarySent<W, H> {
        Wire { #[pin] call: W },
        H2 { call: Pin<Box<H>> },
    }
}

impl<W, H> Future for UnarySent<W, H>
where
    W: Future<Output = UnaryEnd>,
    H: Future<Output = UnaryEnd>,
{
    type Output = UnaryEnd;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<UnaryEnd> {
        match self.project() {
            UnarySentProj::Wire { call } => call.poll(cx),
            UnarySentProj::H2 { call } => call.as_mut().poll(cx),
        }
    }
}

/// `unary_sent` on the `h2` crate's client.
async fn h2_unary(
    send: &mut SendRequest<Bytes>,
    ledger: &Ledger,
    call: &Call,
    request: Bytes,
    rx: &mut BytesMut,
    max_message: usize,
    progress: &Progress,
) -> Result<Bytes, CallError> {
    if call.is_plain() {
        // the CLI refuses `--h2-client h2` for plain HTTP/2
        return Err(CallError::plain(Failure::with(
            FailureKind::H2,
            "plain HTTP/2 requests run on the wire client only",
        )));
    }
    let mut req = Request::new(());
    *req.method_mut() = Method::POST;
    *req.uri_mut() = call.uri.clone();
    *req.version_mut() = Version::HTTP_2;
    let headers = req.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert(TE, HeaderValue::from_static("trailers"));
    for (k, v) in &call.metadata {
        headers.insert(k.clone(), v.clone());
    }

    // Waits while the server's SETTINGS_MAX_CONCURRENT_STREAMS is reached.
    // Errors before the request is handed to h2 mean it was never sent: the connection is going
    // away (GOAWAY received) or gone.
    let never_sent = |e: h2::Error| CallError {
        unprocessed: true,
        conn_broken: true,
        ..CallError::h2(e)
    };
    std::future::poll_fn(|cx| send.poll_ready(cx))
        .await
        .map_err(never_sent)?;
    let (response, mut body_tx) = send.send_request(req, false).map_err(never_sent)?;
    let _in_flight = InFlight::new(ledger);
    progress.sent.set(true);
    ledger.count_request();
    // Uncompressed header list sizes, for the ledger's HPACK ratio: each list counted when its
    // HEADERS frame is sent or received, whatever becomes of the call.
    if ledger.h2.is_some() {
        ledger.h2_header_lists(call.header_list_bytes, 0);
    }
    body_tx.send_data(request, true).map_err(CallError::h2)?;

    let response = response.await.map_err(CallError::h2)?;
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
        .headers(
            parts.status.as_u16(),
            parts
                .headers
                .get("grpc-status")
                .map(|v| grpc::parse_status(v.as_bytes())),
        )
        .map_err(|v| judged(v, &parts.headers, call.status_kind))?;
    rx.clear();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(CallError::h2)?;
        let _ = body.flow_control().release_capacity(chunk.len());
        verdict
            .data(rx, &chunk)
            .map_err(|v| judged(v, &parts.headers, call.status_kind))?;
    }
    let trailers = body.trailers().await.map_err(CallError::h2)?;
    let empty = HeaderMap::new();
    let t = trailers.as_ref().unwrap_or(&empty);
    if ledger.h2.is_some() && trailers.is_some() {
        ledger.h2_header_lists(0, header_list_bytes(t));
    }
    verdict
        .finish(
            rx,
            trailers.is_some(),
            t.get("grpc-status")
                .map(|v| grpc::parse_status(v.as_bytes())),
        )
        .map_err(|v| judged(v, t, call.status_kind))
}

pub use wire::StreamHead;

/// How a server-streaming call ended well: its messages, when the first was complete, and
/// the first few themselves (as many as asked for).
#[derive(Debug, Default)]
pub struct StreamEnd {
    pub messages: u64,
    pub first_at: Option<Instant>,
    pub kept: Vec<Bytes>,
}

/// One server-streaming call on either client: the request (our side ends with it), then
/// every message until the trailers, each taken out of `rx` as soon as it is complete and
/// judged by the wire crate's `StreamingResponse`. `keep`: how many of the first messages to
/// return (for the report's sample). No retry and no deadline of its own: the caller bounds it.
#[allow(clippy::too_many_arguments)]
pub async fn server_stream(
    send: &mut Sender,
    ledger: &Ledger,
    call: &Call,
    request: &Bytes,
    rx: &mut BytesMut,
    max_message: usize,
    progress: &Progress,
    keep: usize,
) -> Result<StreamEnd, CallError> {
    let kind = call.status_kind;
    let mut stream = Bidi::open(send, ledger, call, max_message)
        .await
        .map_err(CallError::plain)?;
    progress.sent.set(true);
    stream
        .send_last(request.clone())
        .map_err(CallError::plain)?;
    let head = stream.head().await.map_err(CallError::plain)?;
    progress.status.set(head.status);
    // the response's uncompressed header lists, for the ledger's HPACK ratio
    let count_lists = |s: &Bidi| {
        if ledger.h2.is_some() {
            ledger.h2_header_lists(0, s.header_bytes_in());
        }
    };
    let mut verdict = StreamingResponse::new(max_message);
    let text = head.message.as_deref().map(str::as_bytes);
    match verdict.headers(head.status, head.grpc_status) {
        Err(v) => {
            count_lists(&stream);
            return Err(judged_message(v, text, kind));
        }
        // a trailers-only OK: no messages
        Ok(false) => {
            count_lists(&stream);
            return Ok(StreamEnd::default());
        }
        Ok(true) => {}
    }
    let mut end = StreamEnd::default();
    rx.clear();
    loop {
        let more = stream.recv(rx).await.map_err(CallError::plain)?;
        verdict
            .data(rx, |m| {
                if end.first_at.is_none() {
                    end.first_at = Some(Instant::now());
                }
                if end.kept.len() < keep {
                    end.kept.push(m);
                }
            })
            .map_err(|v| judged_message(v, None, kind))?;
        if !more {
            break;
        }
    }
    let (trailers, status, message) = stream.trailers().await.map_err(CallError::plain)?;
    count_lists(&stream);
    let text = (!message.is_empty()).then_some(&message[..]);
    end.messages = verdict
        .finish(rx, trailers, status)
        .map_err(|v| judged_message(v, text, kind))?;
    Ok(end)
}

/// A bidirectional streaming call (etcd's Watch) on either client: gRPC messages out as DATA
/// frames without END_STREAM, the response read as it arrives. Dropping it resets the stream.
pub enum Bidi {
    Wire(wire::Bidi),
    H2 {
        tx: h2::SendStream<Bytes>,
        response: Option<h2::client::ResponseFuture>,
        body: Option<h2::RecvStream>,
        /// the response's header lists so far, uncompressed
        header_bytes_in: u64,
    },
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
            Sender::H2(send) => {
                let mut req = Request::new(());
                *req.method_mut() = Method::POST;
                *req.uri_mut() = call.uri.clone();
                *req.version_mut() = Version::HTTP_2;
                let headers = req.headers_mut();
                headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
                headers.insert(TE, HeaderValue::from_static("trailers"));
                for (k, v) in &call.metadata {
                    headers.insert(k.clone(), v.clone());
                }
                let h2_failure = |e: h2::Error| Failure::with(FailureKind::H2, e);
                std::future::poll_fn(|cx| send.poll_ready(cx))
                    .await
                    .map_err(h2_failure)?;
                let (response, tx) = send.send_request(req, false).map_err(h2_failure)?;
                ledger.count_request();
                if ledger.h2.is_some() {
                    ledger.h2_header_lists(call.header_list_bytes, 0);
                }
                Ok(Bidi::H2 {
                    tx,
                    response: Some(response),
                    body: None,
                    header_bytes_in: 0,
                })
            }
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
            Bidi::H2 { tx, .. } => tx
                .send_data(message, last)
                .map_err(|e| Failure::with(FailureKind::H2, e)),
        }
    }

    /// The uncompressed size of the response's header lists read so far (head, trailers).
    pub fn header_bytes_in(&self) -> u64 {
        match self {
            Bidi::Wire(b) => b.header_bytes_in(),
            Bidi::H2 {
                header_bytes_in, ..
            } => *header_bytes_in,
        }
    }

    /// Once `recv` saw the end: whether trailers came, their grpc-status and grpc-message.
    pub async fn trailers(
        &mut self,
    ) -> Result<(bool, Option<Result<Code, grpc::Error>>, Vec<u8>), Failure> {
        match self {
            Bidi::Wire(b) => Ok(b.trailers()),
            Bidi::H2 {
                body,
                header_bytes_in,
                ..
            } => {
                let Some(body) = body.as_mut() else {
                    return Err(Failure::with(FailureKind::H2, "no head read yet"));
                };
                let t = body
                    .trailers()
                    .await
                    .map_err(|e| Failure::with(FailureKind::H2, e))?;
                if let Some(t) = &t {
                    *header_bytes_in += header_list_bytes(t);
                }
                Ok(match t {
                    None => (false, None, Vec::new()),
                    Some(t) => (
                        true,
                        t.get("grpc-status")
                            .map(|v| grpc::parse_status(v.as_bytes())),
                        t.get("grpc-message")
                            .map_or_else(Vec::new, |m| m.as_bytes().to_vec()),
                    ),
                })
            }
        }
    }

    /// Waits for the response head.
    pub async fn head(&mut self) -> Result<StreamHead, Failure> {
        match self {
            Bidi::Wire(b) => b.head().await,
            Bidi::H2 {
                response,
                body,
                header_bytes_in,
                ..
            } => {
                let Some(response) = response.take() else {
                    return Err(Failure::with(FailureKind::H2, "the head was already read"));
                };
                let (parts, recv) = response
                    .await
                    .map_err(|e| Failure::with(FailureKind::H2, e))?
                    .into_parts();
                *body = Some(recv);
                *header_bytes_in += header_list_bytes(&parts.headers) + ":status".len() as u64 + 3;
                let message = parts.headers.get("grpc-message").map(|m| {
                    let mut text = String::new();
                    grpc::decode_message_text(m.as_bytes(), 1024, &mut text);
                    text
                });
                Ok(StreamHead {
                    status: parts.status.as_u16(),
                    trailers_only: parts.headers.contains_key("grpc-status"),
                    grpc_status: parts
                        .headers
                        .get("grpc-status")
                        .map(|v| grpc::parse_status(v.as_bytes())),
                    message,
                })
            }
        }
    }

    /// Appends what arrived to `into`: `Ok(true)` with bytes, `Ok(false)` at the stream's end.
    pub async fn recv(&mut self, into: &mut BytesMut) -> Result<bool, Failure> {
        match self {
            Bidi::Wire(b) => b.recv(into).await,
            Bidi::H2 { body, .. } => {
                let Some(body) = body.as_mut() else {
                    return Err(Failure::with(FailureKind::H2, "no head read yet"));
                };
                match body.data().await {
                    Some(Ok(chunk)) => {
                        let _ = body.flow_control().release_capacity(chunk.len());
                        into.extend_from_slice(&chunk);
                        Ok(true)
                    }
                    Some(Err(e)) => Err(Failure::with(FailureKind::H2, e)),
                    None => Ok(false),
                }
            }
        }
    }
}

/// A verdict as a call error: its failure kind, and the status it counts under. `headers`:
/// where a grpc-message may be (the trailers, or a trailers-only response's headers).
fn judged(v: Verdict, headers: &HeaderMap, kind: FailureKind) -> CallError {
    judged_message(v, headers.get("grpc-message").map(|m| m.as_bytes()), kind)
}

/// A verdict as a call error, `message` the grpc-message that came with it (still
/// percent-encoded).
fn judged_message(v: Verdict, message: Option<&[u8]>, kind: FailureKind) -> CallError {
    let (status, failure) = match v {
        Verdict::HttpStatus { http, code } => (
            Some(StatusKey::GrpcFromHttp {
                code: code.as_u32(),
                http,
            }),
            Failure::with(FailureKind::HttpStatus, v),
        ),
        Verdict::Status(code) => (
            Some(StatusKey::Grpc(code.as_u32())),
            status_failure(code, message, kind),
        ),
        Verdict::Framing(e) => (None, Failure::with(FailureKind::GrpcFraming, e)),
        Verdict::NoMessage
        | Verdict::NoTrailers
        | Verdict::NoStatus
        | Verdict::Truncated
        | Verdict::MoreThanOne => (None, Failure::with(FailureKind::BadResponse, v)),
    };
    CallError {
        status,
        failure,
        conn_broken: false,
        unprocessed: false,
    }
}

/// Name + value octets of a header list (HPACK's accounting without its 32-byte entry overhead).
fn header_list_bytes(h: &HeaderMap) -> u64 {
    h.iter()
        .map(|(k, v)| (k.as_str().len() + v.len()) as u64)
        .sum()
}

thread_local! {
    /// Where a grpc-message is percent-decoded.
    static MESSAGE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// A non-zero grpc-status as a failure of `kind`, with its grpc-message when there is one.
fn status_failure(code: Code, text: Option<&[u8]>, kind: FailureKind) -> Failure {
    MESSAGE.with(|buf| {
        // a reused buffer: the text is interned by Failure, so a repeated message allocates nothing
        let mut message = buf.borrow_mut();
        message.clear();
        if let Some(m) = text {
            grpc::decode_message_text(m, 1024, &mut message);
        }
        if message.is_empty() {
            Failure::with(kind, code.as_str())
        } else {
            Failure::with(kind, format_args!("{}: {}", code.as_str(), message))
        }
    })
}
