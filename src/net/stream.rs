//! `Io`: the stream a client speaks its protocol on — the metered socket itself, or TLS over
//! it — counting plaintext bytes and feeding the ledger's h2 sniffers, when it has them (the
//! `h2` crate's client), with plaintext either way.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::client::TlsStream;

use crate::net::{self, Dest, Layers, Ledger, Metered, NetConfig, Sock};

/// Which ALPN protocol a TLS connection asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alpn {
    Http1,
    H2,
}

enum Kind {
    Plain(Metered),
    Tls(Box<TlsStream<Metered>>),
}

/// A connected stream with its ledger.
pub struct Io {
    kind: Kind,
    ledger: Rc<Ledger>,
}

/// What `open` returns besides the stream.
pub struct Opened {
    pub io: Io,
    pub ledger: Rc<Ledger>,
    pub local_port: u16,
    /// a duplicate of the socket, for TCP_INFO after the protocol is done with the stream
    pub fd: OwnedFd,
}

thread_local! {
    /// Stream connections (TCP or Unix) this thread has opened.
    static CONNECTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The stream connections this thread has opened so far (the live figures' connections).
pub fn thread_connects() -> u64 {
    CONNECTS.with(std::cell::Cell::get)
}

/// Connects to `dest` and, when `cfg.tls` is set, runs the TLS handshake (timed, into the
/// ledger) presenting `host` (or `--sni`).
pub async fn open(
    dest: &Dest,
    host: &str,
    cfg: &NetConfig,
    alpn: Alpn,
    layers: Layers,
) -> io::Result<Opened> {
    let connecting = Instant::now();
    let (stream, local_port) = net::connect_stream(dest, cfg).await?;
    CONNECTS.with(|c| c.set(c.get() + 1));
    let connect_us = connecting.elapsed().as_micros() as u64;
    let local_ip = match &stream {
        Sock::Tcp(s) => s.local_addr().ok().map(|a| a.ip()),
        Sock::Unix(_) => None,
    };
    let fd = stream.as_fd().try_clone_to_owned()?;
    let (metered, ledger) = Metered::new(stream, layers);
    ledger.connect_us.set(connect_us);
    ledger.local_ip.set(local_ip);
    let kind = match &cfg.tls {
        None => Kind::Plain(metered),
        Some(tls) => {
            let config = match alpn {
                Alpn::Http1 => tls.http1.clone(),
                Alpn::H2 => tls.h2.clone(),
            };
            let name = tls.server_name(host).map_err(io::Error::other)?;
            let started = Instant::now();
            let connector = tokio_rustls::TlsConnector::from(config);
            let handshake = cpu_timed(connector.connect(name, metered));
            let (stream, cpu) = match tokio::time::timeout(cfg.connect_timeout, handshake).await {
                Ok((r, cpu)) => (Ok(r), cpu),
                Err(e) => (Err(e), std::time::Duration::ZERO),
            };
            let stream = match stream {
                Ok(r) => r.map_err(|e| io::Error::new(e.kind(), format!("TLS handshake: {e}")))?,
                Err(_) => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "TLS handshake timed out",
                    ));
                }
            };
            let alpn_ok = match alpn {
                Alpn::H2 => stream.get_ref().1.alpn_protocol() == Some(b"h2"),
                Alpn::Http1 => true,
            };
            if !alpn_ok {
                return Err(io::Error::other("TLS: the server did not agree to ALPN h2"));
            }
            let resumed =
                stream.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
            ledger.tls_handshake(started.elapsed(), cpu, resumed);
            Kind::Tls(Box::new(stream))
        }
    };
    Ok(Opened {
        io: Io {
            kind,
            ledger: ledger.clone(),
        },
        ledger,
        local_port,
        fd,
    })
}

/// Runs `fut` and sums this thread's CPU time inside its polls: the work of `fut` itself, not
/// of the tasks that ran while it waited. Two CLOCK_THREAD_CPUTIME_ID reads per poll (a TLS
/// handshake has a few polls); they are syscalls, and the syscall figures count them.
async fn cpu_timed<F: std::future::Future>(fut: F) -> (F::Output, std::time::Duration) {
    let mut fut = std::pin::pin!(fut);
    let mut cpu = std::time::Duration::ZERO;
    let out = std::future::poll_fn(|cx| {
        let t0 = crate::stats::thread_cpu();
        let r = fut.as_mut().poll(cx);
        cpu += crate::stats::thread_cpu().saturating_sub(t0);
        r
    })
    .await;
    (out, cpu)
}

impl Io {
    /// The socket underneath (for TCP_INFO, which a Unix socket has none of).
    pub fn sock(&self) -> &Sock {
        match &self.kind {
            Kind::Plain(m) => m.sock(),
            Kind::Tls(t) => t.get_ref().0.sock(),
        }
    }
}

impl Io {
    /// The plain socket's descriptor, for a readiness loop of the caller's own (`recv_now`,
    /// `send_now`); None with TLS, whose records only the runtime's stream reads.
    pub fn plain_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        match &self.kind {
            Kind::Plain(m) => Some(m.sock().as_raw_fd()),
            Kind::Tls(_) => None,
        }
    }

    /// One read into `buf`'s spare capacity now (plain sockets only: see `plain_fd`): the bytes
    /// read, and whether the socket is empty now.
    pub fn recv_now(&mut self, buf: &mut bytes::BytesMut) -> io::Result<(usize, bool)> {
        let Kind::Plain(m) = &self.kind else {
            return Err(io::Error::other("a TLS stream is read through the runtime"));
        };
        let before = buf.len();
        let read = m.recv_now(buf)?;
        self.ledger.plaintext_in(&buf[before..]);
        Ok(read)
    }

    /// That read's `n` bytes, now in `buf`'s spare capacity: counted (plain sockets only) and
    /// added to `buf`.
    ///
    /// # Safety
    /// The first `n` bytes of `buf`'s spare capacity were written by that read.
    pub unsafe fn landed(&mut self, buf: &mut bytes::BytesMut, n: usize) -> io::Result<()> {
        let Kind::Plain(m) = &self.kind else {
            return Err(io::Error::other("a TLS stream is read through the runtime"));
        };
        let before = buf.len();
        // SAFETY: the caller's promise.
        unsafe { m.landed(buf, n) };
        self.ledger.plaintext_in(&buf[before..]);
        Ok(())
    }

    /// One write of `data` now (plain sockets only).
    pub fn send_now(&mut self, data: &[u8]) -> io::Result<usize> {
        let Kind::Plain(m) = &self.kind else {
            return Err(io::Error::other(
                "a TLS stream is written through the runtime",
            ));
        };
        let n = m.send_now(data)?;
        self.ledger.plaintext_out(&data[..n]);
        Ok(n)
    }
}

impl AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match &mut this.kind {
            Kind::Plain(m) => ready!(Pin::new(m).poll_read(cx, buf))?,
            Kind::Tls(t) => ready!(Pin::new(t.as_mut()).poll_read(cx, buf))?,
        }
        this.ledger.plaintext_in(&buf.filled()[before..]);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let n = match &mut this.kind {
            Kind::Plain(m) => ready!(Pin::new(m).poll_write(cx, buf))?,
            Kind::Tls(t) => ready!(Pin::new(t.as_mut()).poll_write(cx, buf))?,
        };
        this.ledger.plaintext_out(&buf[..n]);
        Poll::Ready(Ok(n))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let n = match &mut this.kind {
            Kind::Plain(m) => ready!(Pin::new(m).poll_write_vectored(cx, bufs))?,
            Kind::Tls(t) => ready!(Pin::new(t.as_mut()).poll_write_vectored(cx, bufs))?,
        };
        let mut left = n;
        for b in bufs {
            let take = left.min(b.len());
            this.ledger.plaintext_out(&b[..take]);
            left -= take;
            if left == 0 {
                break;
            }
        }
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        match &self.kind {
            Kind::Plain(m) => m.is_write_vectored(),
            Kind::Tls(t) => t.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().kind {
            Kind::Plain(m) => Pin::new(m).poll_flush(cx),
            Kind::Tls(t) => Pin::new(t.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.get_mut().kind {
            Kind::Plain(m) => Pin::new(m).poll_shutdown(cx),
            Kind::Tls(t) => Pin::new(t.as_mut()).poll_shutdown(cx),
        }
    }
}
