//! HTTP/1.1 client connection: keepalive, one request in flight, whole response read.

use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::client::io_failure;
use crate::net::{self, Alpn, Io, Layers, Ledger, NetConfig};
use crate::outcome::{Failure, FailureKind};
use crate::stats::ConnRecord;
use wirebench_wire::http1::{self, BodyKind, ChunkedDecoder};

/// Read buffer growth step; responses larger than this grow the buffer once and keep it.
const READ_CHUNK: usize = 16 * 1024;
/// From this buffered size on, the read buffer grows by explicit, limit-capped doubling.
const EXACT_GROWTH_FROM: usize = 1 << 20;

/// One keepalive HTTP/1.1 connection.
pub struct Conn {
    io: Io,
    ledger: Rc<Ledger>,
    rbuf: BytesMut,
    /// de-chunked body of the last chunked response
    body: BytesMut,
    chunked: ChunkedDecoder,
    /// bytes of `rbuf` that belong to the last response and are dropped before the next one
    consumed: usize,
    max_body: u64,
    endpoint: usize,
    local_port: u16,
    opened: Instant,
    /// false once the server asked to close (Connection: close, HTTP/1.0, body until EOF)
    reusable: bool,
}

/// A complete response; `body` borrows the connection's buffers until the next request.
#[derive(Debug)]
pub struct Response<'a> {
    pub status: u16,
    pub body: &'a [u8],
}

impl Conn {
    /// `host`: the server's name for TLS (SNI and verification).
    pub async fn connect(
        addr: SocketAddr,
        host: &str,
        endpoint: usize,
        cfg: &NetConfig,
        max_body: u64,
        layers: Layers,
    ) -> io::Result<Conn> {
        let opened = net::open(addr, host, cfg, Alpn::Http1, layers).await?;
        let (io, ledger, local_port) = (opened.io, opened.ledger, opened.local_port);
        Ok(Conn {
            io,
            ledger,
            rbuf: BytesMut::with_capacity(READ_CHUNK),
            body: BytesMut::new(),
            chunked: ChunkedDecoder::new(max_body),
            consumed: 0,
            max_body,
            endpoint,
            local_port,
            opened: Instant::now(),
            reusable: true,
        })
    }

    /// Whether another request may be sent on this connection.
    pub fn reusable(&self) -> bool {
        self.reusable
    }

    /// Requests written completely on this connection so far.
    pub fn requests_written(&self) -> u64 {
        self.ledger.requests.get()
    }

    /// Sends one complete, pre-encoded request and reads its whole response. The request goes
    /// out in one write call unless the kernel takes it partially.
    /// `head_len` is the request's head (start line + headers) length, for the ledger.
    pub async fn round_trip(
        &mut self,
        request: &[u8],
        head_len: usize,
    ) -> Result<Response<'_>, Failure> {
        self.rbuf.advance(self.consumed);
        self.consumed = 0;
        if let Err(e) = self.io.write_all(request).await {
            // part of the request may be on the wire: this connection's framing is unknown
            self.reusable = false;
            return Err(io_failure(&e));
        }
        // counted once all of it is written: the socket has the whole request
        self.ledger.count_request();
        self.ledger
            .http1_request(head_len, request.len().saturating_sub(head_len));

        let head = loop {
            match http1::decode_response_head(&mut self.rbuf, self.max_body) {
                Ok(Some(head)) => break head,
                Ok(None) => self.fill().await?,
                Err(e) => {
                    self.reusable = false;
                    return Err(Failure::with(FailureKind::Http1, e));
                }
            }
        };
        if !head.keep_alive {
            self.reusable = false;
        }
        let mut framing = 0;
        let body: &[u8] = match head.body {
            BodyKind::Empty => &[],
            BodyKind::Length(n) => {
                // decode_response_head checked n <= max_body, so it fits in usize memory.
                let n = usize::try_from(n).map_err(|_| Failure::new(FailureKind::BodyTooLarge))?;
                while self.rbuf.len() < n {
                    self.fill().await?;
                }
                self.consumed = n;
                &self.rbuf[..n]
            }
            BodyKind::Chunked => {
                self.body.clear();
                self.chunked.reset();
                loop {
                    match self.chunked.decode(&mut self.rbuf, &mut self.body) {
                        Ok(true) => break,
                        Ok(false) => self.fill().await?,
                        Err(e) => {
                            self.reusable = false;
                            return Err(Failure::with(FailureKind::Http1, e));
                        }
                    }
                }
                framing = self.chunked.framing_bytes();
                &self.body
            }
            BodyKind::UntilClose => {
                self.reusable = false;
                loop {
                    if self.rbuf.len() as u64 > self.max_body {
                        self.reusable = false;
                        return Err(Failure::with(
                            FailureKind::Http1,
                            http1::Error::BodyTooLarge,
                        ));
                    }
                    self.reserve();
                    let n = self
                        .io
                        .read_buf(&mut self.rbuf)
                        .await
                        .map_err(|e| io_failure(&e))?;
                    if n == 0 {
                        break;
                    }
                }
                self.consumed = self.rbuf.len();
                &self.rbuf[..]
            }
        };
        self.ledger
            .http1_response(head.head_len, body.len(), framing);
        Ok(Response {
            status: head.status,
            body,
        })
    }

    fn reserve(&mut self) {
        if self.rbuf.capacity() - self.rbuf.len() >= READ_CHUNK / 4 {
            return;
        }
        if self.rbuf.len() < EXACT_GROWTH_FROM {
            // BytesMut's own growth; it also reclaims the space of consumed responses.
            self.rbuf.reserve(READ_CHUNK);
            return;
        }
        // A large body: double, but never past what the body limit can use (BytesMut would
        // double to twice --max-body).
        let limit = usize::try_from(self.max_body)
            .unwrap_or(usize::MAX)
            .saturating_add(http1::MAX_HEAD_BYTES + READ_CHUNK);
        let want = self
            .rbuf
            .capacity()
            .saturating_mul(2)
            .min(limit)
            .max(self.rbuf.len() + READ_CHUNK);
        let mut bigger = BytesMut::with_capacity(want);
        bigger.extend_from_slice(&self.rbuf);
        self.rbuf = bigger;
    }

    /// Reads more response bytes; EOF here means the server closed before answering fully.
    async fn fill(&mut self) -> Result<(), Failure> {
        self.reserve();
        match self.io.read_buf(&mut self.rbuf).await {
            Ok(0) => {
                self.reusable = false;
                Err(Failure::with(
                    FailureKind::Closed,
                    "server closed the connection",
                ))
            }
            Ok(_) => Ok(()),
            Err(e) => {
                self.reusable = false;
                Err(io_failure(&e))
            }
        }
    }

    /// Snapshots TCP_INFO and the ledger (the figures of the record), then closes: our FIN
    /// (with TLS, close_notify first) and what the server sends until its FIN, read for at most
    /// `bound`, go into the record's `close`.
    pub async fn close(mut self, bound: Duration) -> ConnRecord {
        let tcp = net::tcp_info(self.io.tcp());
        let lifetime_us = self.opened.elapsed().as_micros() as u64;
        let mut rec = self
            .ledger
            .record(self.endpoint, self.local_port, lifetime_us, tcp);
        // The buffers go now, not when the close is done: a replacement connection may be
        // growing its own meanwhile.
        self.rbuf = BytesMut::new();
        self.body = BytesMut::new();
        let began = Instant::now();
        let io = &mut self.io;
        let drained = tokio::time::timeout(bound, async {
            let _ = io.shutdown().await;
            let mut buf = [0u8; 4096];
            loop {
                match io.read(&mut buf).await {
                    Ok(0) => return true,
                    Ok(_) => {}
                    // TLS: the server's FIN without its close_notify still ends the stream
                    Err(e) => return e.kind() == io::ErrorKind::UnexpectedEof,
                }
            }
        })
        .await
        .unwrap_or(false);
        let tcp = net::tcp_info(self.io.tcp());
        rec.close = Some(
            self.ledger
                .close_record(&rec, tcp, drained, began.elapsed()),
        );
        rec
    }
}
