//! `Metered<IO>`: a TcpStream wrapper that counts every byte and every read/write syscall.

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// Counters for one connection, shared (same thread only) between the IO wrapper and its owner.
#[derive(Debug, Default)]
pub struct Ledger {
    pub bytes_out: Cell<u64>,
    pub bytes_in: Cell<u64>,
    /// write syscalls that moved bytes
    pub write_calls: Cell<u64>,
    /// read syscalls that returned bytes or EOF
    pub read_calls: Cell<u64>,
    /// write syscalls answered EAGAIN
    pub write_would_block: Cell<u64>,
    /// read syscalls answered EAGAIN
    pub read_would_block: Cell<u64>,
    /// requests (HTTP/1.1) or streams (h2) this connection carried
    pub requests: Cell<u64>,
}

fn bump(c: &Cell<u64>, n: u64) {
    c.set(c.get() + n);
}

impl Ledger {
    pub fn count_request(&self) {
        bump(&self.requests, 1);
    }
}

/// A TCP stream whose every syscall goes through `try_read`/`try_write`, so each one is counted
/// exactly once: one `try_*` call is one `recv`/`send`/`writev` syscall.
#[derive(Debug)]
pub struct Metered {
    inner: TcpStream,
    ledger: Rc<Ledger>,
}

impl Metered {
    pub fn new(inner: TcpStream) -> (Self, Rc<Ledger>) {
        let ledger = Rc::new(Ledger::default());
        (
            Metered {
                inner,
                ledger: ledger.clone(),
            },
            ledger,
        )
    }

    pub fn stream(&self) -> &TcpStream {
        &self.inner
    }
}

impl AsyncRead for Metered {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            ready!(this.inner.poll_read_ready(cx))?;
            let dst = buf.initialize_unfilled();
            match this.inner.try_read(dst) {
                Ok(n) => {
                    bump(&this.ledger.read_calls, 1);
                    bump(&this.ledger.bytes_in, n as u64);
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                // The failed try_read cleared readiness; poll_read_ready registers the waker.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    bump(&this.ledger.read_would_block, 1)
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for Metered {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        loop {
            ready!(this.inner.poll_write_ready(cx))?;
            match this.inner.try_write(buf) {
                Ok(n) => {
                    bump(&this.ledger.write_calls, 1);
                    bump(&this.ledger.bytes_out, n as u64);
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    bump(&this.ledger.write_would_block, 1)
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        loop {
            ready!(this.inner.poll_write_ready(cx))?;
            match this.inner.try_write_vectored(bufs) {
                Ok(n) => {
                    bump(&this.ledger.write_calls, 1);
                    bump(&this.ledger.bytes_out, n as u64);
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    bump(&this.ledger.write_would_block, 1)
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // TCP has no userspace buffer to flush: nothing to count.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
