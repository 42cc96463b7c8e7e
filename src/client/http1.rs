//! HTTP/1.1 client connection: keepalive, one request in flight, whole response read; the IO
//! around `wirebench_wire::http1::ResponseReader`, which makes every protocol decision.

use std::io;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::client::io_failure;
use crate::net::{self, Alpn, Io, Layers, Ledger, NetConfig};
use crate::outcome::{Failure, FailureKind};
use crate::stats::ConnRecord;
use wirebench_wire::http1::{self, ResponseReader};

pub mod pipeline;

/// One keepalive HTTP/1.1 connection.
pub struct Conn {
    io: Io,
    ledger: Rc<Ledger>,
    rbuf: BytesMut,
    /// de-chunked body of the last chunked response
    body: BytesMut,
    /// the protocol: framing, completion, body limit, buffer growth, keep-alive
    reader: ResponseReader,
    endpoint: usize,
    local_port: u16,
    opened: Instant,
    /// false once the server asked to close (Connection: close, HTTP/1.0, body until EOF)
    reusable: bool,
    /// readiness-driven reads (`read_now`): the socket may hold bytes not read yet
    unread: bool,
    /// readiness-driven reads: the reader found the response incomplete in `rbuf` as it is now
    /// (and made room for the next read), so it is asked again only once a read added bytes
    stale: bool,
    /// pipelined reads on a readiness loop (`stamped`): the responses a read completes share
    /// one clock reading, taken as the first of them is found; None until then
    stamps: bool,
    read_at: Option<Instant>,
}

/// A complete response; `body` borrows the connection's buffers until the next request.
#[derive(Debug)]
pub struct Response<'a> {
    pub status: u16,
    pub body: &'a [u8],
    /// on a `stamped` connection: when the read that completed it returned (the responses one
    /// read completed share it); None elsewhere (the caller reads the clock)
    pub done: Option<Instant>,
}

/// What a completion-driven read (`read_buffered`, `landed`) found: the response, or the room
/// the next read must go into (a pointer into the connection's buffer and a length).
pub enum Landing<'a> {
    Response(Response<'a>),
    Room { ptr: *mut u8, len: usize },
}

impl Conn {
    /// `host`: the server's name for TLS (SNI and verification).
    pub async fn connect(
        dest: &crate::net::Dest,
        host: &str,
        endpoint: usize,
        cfg: &NetConfig,
        max_body: u64,
        layers: Layers,
    ) -> io::Result<Conn> {
        let opened = net::open(dest, host, cfg, Alpn::Http1, layers).await?;
        let (io, ledger, local_port) = (opened.io, opened.ledger, opened.local_port);
        Ok(Conn {
            io,
            ledger,
            rbuf: BytesMut::with_capacity(http1::READ_START),
            body: BytesMut::new(),
            reader: ResponseReader::new(max_body),
            endpoint,
            local_port,
            opened: Instant::now(),
            reusable: true,
            unread: false,
            stale: false,
            stamps: false,
            read_at: None,
        })
    }

    /// Whether another request may be sent on this connection.
    /// Every request on this connection is HEAD: its responses have no body.
    pub fn head_requests(mut self) -> Conn {
        self.reader = self.reader.for_head_requests();
        self
    }

    pub fn reusable(&self) -> bool {
        self.reusable
    }

    /// Requests written completely on this connection so far.
    /// The connection's local port (its name in the request log and the per-connection
    /// records).
    pub fn local_port(&self) -> u16 {
        self.local_port
    }

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
        self.reader.next_response(&mut self.rbuf);
        if let Err(e) = self.io.write_all(request).await {
            // part of the request may be on the wire: this connection's framing is unknown
            self.reusable = false;
            return Err(io_failure(&e));
        }
        // counted once all of it is written: the socket has the whole request
        self.ledger.count_request();
        self.ledger
            .http1_request(head_len, request.len().saturating_sub(head_len));

        let read = loop {
            match self.reader.poll(&mut self.rbuf, &mut self.body) {
                Ok(Some(response)) => break Ok(response),
                Err(e) => break Err(e),
                // the reader has made room in rbuf for this read
                Ok(None) => match self.io.read_buf(&mut self.rbuf).await {
                    Ok(0) => break self.reader.eof(&self.rbuf),
                    Ok(_) => {}
                    Err(e) => {
                        self.reusable = false;
                        return Err(io_failure(&e));
                    }
                },
            }
        };
        self.finish(read)
    }

    /// The socket's descriptor for a readiness loop of the caller's own, which then uses
    /// `begin`, `send_now` and `read_now` instead of `round_trip`; None with TLS.
    pub fn plain_fd(&self) -> Option<std::os::fd::RawFd> {
        self.io.plain_fd()
    }

    /// Readiness-driven use: a request is about to go, its response comes next.
    pub fn begin(&mut self) {
        self.reader.next_response(&mut self.rbuf);
        // what is left in the buffer may begin the next response
        self.stale = false;
    }

    /// Writes `request[*off..]` now, as far as the socket takes it: true once the whole request
    /// is written (and counted, as `round_trip` counts it), false to go on at the next write
    /// readiness.
    pub fn send_now(
        &mut self,
        request: &[u8],
        off: &mut usize,
        head_len: usize,
    ) -> Result<bool, Failure> {
        while *off < request.len() {
            match self.write_now(&request[*off..])? {
                Some(n) => *off += n,
                None => return Ok(false),
            }
        }
        self.count_request(head_len, request.len().saturating_sub(head_len));
        Ok(true)
    }

    /// One write of `data` now: the bytes the socket took, None when it took none (wait for
    /// the next write readiness). Readiness-driven pipelining writes several requests at once
    /// this way and counts each with `count_request` once its last byte is written.
    pub fn write_now(&mut self, data: &[u8]) -> Result<Option<usize>, Failure> {
        match self.io.send_now(data) {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => {
                self.reusable = false;
                Err(io_failure(&e))
            }
        }
    }

    /// A request of `head_len` + `body_len` bytes is written whole: counted.
    pub fn count_request(&self, head_len: usize, body_len: usize) {
        self.ledger.count_request();
        self.ledger.http1_request(head_len, body_len);
    }

    /// This connection for pipelining: reads of at least `READ_CHUNK`, since the answers to a
    /// batch arrive together and one read takes them all (an unpipelined connection's read
    /// buffer is sized to one response).
    pub fn pipelined(mut self) -> Conn {
        self.reader = self.reader.with_min_room(http1::READ_CHUNK);
        self
    }

    /// `read_now`'s responses carry the time of the read that completed them
    /// (`Response::done`), one clock reading for all the responses of a read: a pipelined
    /// connection's read brings a batch of them.
    pub fn stamped(mut self) -> Conn {
        self.stamps = true;
        self
    }

    /// Reads what the socket holds now towards the response: `Ok(None)` when it is not complete
    /// yet (the socket emptied: wait for the next read readiness). `fresh`: readiness was just
    /// reported (without it, the socket is read only when the last read filled what it asked
    /// for and may have left bytes behind). `hangup`: the readiness said the peer closed its
    /// side, so the socket is read to its end (a short read there does not mean empty for good).
    pub fn read_now(&mut self, fresh: bool, hangup: bool) -> Result<Option<Response<'_>>, Failure> {
        self.unread |= fresh;
        let read = loop {
            if !self.stale {
                match self.reader.poll(&mut self.rbuf, &mut self.body) {
                    Ok(Some(response)) => break Ok(response),
                    Err(e) => break Err(e),
                    // the reader has made room in rbuf for the next read
                    Ok(None) => self.stale = true,
                }
            }
            if !self.unread {
                return Ok(None);
            }
            match self.io.recv_now(&mut self.rbuf) {
                Ok((0, _)) => {
                    self.read_at = None;
                    break self.reader.eof(&self.rbuf);
                }
                Ok((_, emptied)) => {
                    self.stale = false;
                    self.unread = hangup || !emptied;
                    self.read_at = None;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.unread = false;
                    return Ok(None);
                }
                Err(e) => {
                    self.reusable = false;
                    return Err(io_failure(&e));
                }
            }
        };
        self.finish(read).map(Some)
    }

    /// Completion-driven reads (a ring's, plain sockets): the response if the buffer holds it
    /// whole, else the room the next read goes into. Nothing touches the buffer until that
    /// read's completion comes to `landed` (or is cancelled).
    pub fn read_buffered(&mut self) -> Result<Landing<'_>, Failure> {
        if !self.stale {
            match self.reader.poll(&mut self.rbuf, &mut self.body) {
                Ok(Some(response)) => return self.finish(Ok(response)).map(Landing::Response),
                Err(e) => return self.finish(Err(e)).map(Landing::Response),
                // the reader has made room in rbuf for the next read
                Ok(None) => self.stale = true,
            }
        }
        let (ptr, len) = net::read_room(&mut self.rbuf);
        Ok(Landing::Room { ptr, len })
    }

    /// The completion of the read `read_buffered` asked for: `res` bytes landed in its room
    /// (0: the server's end of the stream; negative: the read's -errno).
    pub fn landed(&mut self, res: i32) -> Result<Landing<'_>, Failure> {
        match usize::try_from(res) {
            Ok(0) => {
                let read = self.reader.eof(&self.rbuf);
                self.finish(read).map(Landing::Response)
            }
            Ok(n) => {
                // SAFETY: the read went into the room `read_buffered` gave (the spare capacity
                // of rbuf, untouched since) and wrote `n` bytes of it.
                if let Err(e) = unsafe { self.io.landed(&mut self.rbuf, n) } {
                    self.reusable = false;
                    return Err(io_failure(&e));
                }
                self.stale = false;
                self.read_buffered()
            }
            Err(_) => {
                self.reusable = false;
                Err(io_failure(&io::Error::from_raw_os_error(-res)))
            }
        }
    }

    /// A read `read_buffered` asked for that completed as the connection was given up (its
    /// request timed out): its `res` bytes were read off the socket, so they are counted, and
    /// nothing more is made of them.
    pub fn abandon_landed(&mut self, res: i32) {
        self.reusable = false;
        if let Ok(n @ 1..) = usize::try_from(res) {
            // SAFETY: as in `landed`: the read wrote `n` bytes of the room it was given.
            let _ = unsafe { self.io.landed(&mut self.rbuf, n) };
        }
    }

    /// A response read to its end (or its failure): counted, the connection's reuse decided.
    fn finish(
        &mut self,
        read: Result<http1::Response, http1::Error>,
    ) -> Result<Response<'_>, Failure> {
        let response = match read {
            Ok(response) => response,
            Err(e) => {
                self.reusable = false;
                return Err(match e {
                    http1::Error::Truncated => {
                        Failure::with(FailureKind::Closed, "server closed the connection")
                    }
                    e => Failure::with(FailureKind::Http1, e),
                });
            }
        };
        if !response.keep_alive {
            self.reusable = false;
        }
        self.ledger.http1_response(
            response.head_len,
            response.body_len(),
            response.chunk_framing,
        );
        let done = if self.stamps {
            Some(*self.read_at.get_or_insert_with(Instant::now))
        } else {
            None
        };
        Ok(Response {
            status: response.status,
            body: response.body(&self.rbuf, &self.body),
            done,
        })
    }

    /// Snapshots TCP_INFO and the ledger (the figures of the record), then closes: our FIN
    /// (with TLS, close_notify first) and what the server sends until its FIN, read for at most
    /// `bound`, go into the record's `close`.
    pub async fn close(mut self, bound: Duration) -> ConnRecord {
        let tcp = net::tcp_info(self.io.sock());
        let lifetime_us = self.opened.elapsed().as_micros() as u64;
        let mut rec = self
            .ledger
            .record(self.endpoint, self.local_port, lifetime_us, tcp, None);
        // The buffers go now, not when the close is done: a replacement connection may be
        // growing its own meanwhile.
        self.rbuf = BytesMut::new();
        self.body = BytesMut::new();
        let began = Instant::now();
        let io = &mut self.io;
        let drained = tokio::time::timeout(bound, async {
            let _ = io.shutdown().await;
            // small: 10,000 connections may be closing at once, and a server's last words
            // before its FIN are short
            let mut buf = [0u8; 512];
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
        let tcp = net::tcp_info(self.io.sock());
        rec.close = Some(
            self.ledger
                .close_record(&rec, tcp, drained, began.elapsed()),
        );
        rec
    }
}
