//! `Metered<IO>`: a TcpStream wrapper that counts every byte and every read/write syscall.

use std::cell::{Cell, RefCell};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

use std::time::Duration;

use crate::stats::{CloseRecord, ConnRecord, Duplex, Http1Counts, IoCalls, TcpInfo, TlsCounts};
use wirebench_wire::h2::counts::H2Counts;
use wirebench_wire::h2::sniff::H2Sniffer;

/// The most one read syscall asks for.
const MAX_READ: usize = 64 * 1024;

/// Which protocol layers the ledger breaks a connection's bytes into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layers {
    /// socket counters only (`--ledger off`)
    Off,
    /// HTTP/1.1: head, body and chunk framing, told by the client that parses them
    Http1,
    /// h2 through a frame sniffer per direction, fed every plaintext byte written and read:
    /// the `h2` crate's client, whose frames are not ours to see. `grpc`: the sniffers also
    /// follow the gRPC messages in DATA; without it DATA is plain HTTP/2's bodies
    H2Sniffed { grpc: bool },
    /// h2 counted by the client's own codec (the wire client), which hands its counts over
    /// when the record is taken; the ledger keeps only the header-list sizes
    H2Codec,
}

/// A connection's h2 layers as the ledger keeps them.
#[derive(Debug)]
pub struct H2Ledger {
    /// the frame sniffers (`Layers::H2Sniffed`); `None` when the client's codec counts
    sniffers: Option<RefCell<Duplex<H2Sniffer>>>,
    /// uncompressed header-list bytes (out, in), told by the client
    header_lists: Cell<(u64, u64)>,
}

impl H2Ledger {
    /// The layer counts: the sniffers', or `codec`'s when the client's codec counted, with the
    /// header-list sizes the client told.
    fn counts(&self, codec: Option<Duplex<H2Counts>>) -> Duplex<H2Counts> {
        let mut d = match &self.sniffers {
            Some(s) => {
                let s = s.borrow();
                Duplex {
                    out: *s.out.counts(),
                    inbound: *s.inbound.counts(),
                }
            }
            None => codec.unwrap_or_default(),
        };
        let (out, inbound) = self.header_lists.get();
        d.out.header_list_bytes += out;
        d.inbound.header_list_bytes += inbound;
        d
    }
}

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
    /// h2 streams open now (a closing connection waits for them)
    pub in_flight: Cell<u64>,
    /// HTTP/1.1 layers, told by the client that parses every message
    pub http1: Option<Cell<Http1Counts>>,
    /// h2 layers: frame sniffers, or the client's codec counts them (the header-list sizes
    /// come from the client either way)
    pub h2: Option<H2Ledger>,
    /// bytes the protocol wrote / read above TLS (equal to the socket bytes without TLS)
    pub plain_out: Cell<u64>,
    pub plain_in: Cell<u64>,
    /// the TLS handshake, when the connection is TLS
    pub tls: Cell<Option<Handshake>>,
    /// TCP connect duration
    pub connect_us: Cell<u64>,
    /// the connection's source address
    pub local_ip: Cell<Option<std::net::IpAddr>>,
    /// UDP datagrams sent and received (QUIC connections; a GSO send or GRO receive is one
    /// syscall for several)
    pub datagrams_out: Cell<u64>,
    pub datagrams_in: Cell<u64>,
}

/// One connection's TLS handshake.
#[derive(Debug, Clone, Copy)]
pub struct Handshake {
    pub us: u64,
    /// this thread's CPU inside the handshake's polls
    pub cpu_us: u64,
    /// a session was resumed (no certificate exchange)
    pub resumed: bool,
    /// socket bytes until the handshake ended
    pub bytes_out: u64,
    pub bytes_in: u64,
}

fn bump(c: &Cell<u64>, n: u64) {
    c.set(c.get() + n);
}

thread_local! {
    /// Every data call this thread's sockets made (`IoCalls`), for the measured window.
    static IO_CALLS: Cell<IoCalls> = const { Cell::new(IoCalls::ZERO) };
}

/// The data calls this thread has made so far on sockets (reads, writes, EAGAIN answers).
pub fn thread_io_calls() -> IoCalls {
    IO_CALLS.with(Cell::get)
}

fn count_io(f: impl FnOnce(&mut IoCalls)) {
    IO_CALLS.with(|c| {
        let mut v = c.get();
        f(&mut v);
        c.set(v);
    });
}

fn counted_read(l: &Ledger, n: usize) {
    bump(&l.read_calls, 1);
    bump(&l.bytes_in, n as u64);
    count_io(|c| {
        c.reads += 1;
        c.bytes_in += n as u64;
    });
}

fn counted_write(l: &Ledger, n: usize) {
    bump(&l.write_calls, 1);
    bump(&l.bytes_out, n as u64);
    count_io(|c| {
        c.writes += 1;
        c.bytes_out += n as u64;
    });
}

/// A UDP send of `n` bytes in `datagrams` datagrams (one syscall).
pub(super) fn count_udp_send(l: &Ledger, n: usize, datagrams: u64) {
    counted_write(l, n);
    bump(&l.datagrams_out, datagrams);
}

/// A UDP receive of `n` bytes in `datagrams` datagrams (one syscall).
pub(super) fn count_udp_recv(l: &Ledger, n: usize, datagrams: u64) {
    counted_read(l, n);
    bump(&l.datagrams_in, datagrams);
}

pub(super) fn read_would_block(l: &Ledger) {
    bump(&l.read_would_block, 1);
    count_io(|c| c.read_would_block += 1);
}

pub(super) fn write_would_block(l: &Ledger) {
    bump(&l.write_would_block, 1);
    count_io(|c| c.write_would_block += 1);
}

impl Ledger {
    pub fn new(layers: Layers) -> Ledger {
        Ledger {
            http1: (layers == Layers::Http1).then(Cell::default),
            h2: match layers {
                Layers::H2Sniffed { grpc } => Some(H2Ledger {
                    sniffers: Some(RefCell::new(if grpc {
                        Duplex {
                            out: H2Sniffer::new(true),
                            inbound: H2Sniffer::new(false),
                        }
                    } else {
                        Duplex {
                            out: H2Sniffer::plain(true),
                            inbound: H2Sniffer::plain(false),
                        }
                    })),
                    header_lists: Cell::default(),
                }),
                Layers::H2Codec => Some(H2Ledger {
                    sniffers: None,
                    header_lists: Cell::default(),
                }),
                Layers::Off | Layers::Http1 => None,
            },
            ..Ledger::default()
        }
    }

    pub fn count_request(&self) {
        bump(&self.requests, 1);
    }

    /// An HTTP/1.1 request written: `head` + `body` bytes.
    pub fn http1_request(&self, head: usize, body: usize) {
        if let Some(t) = &self.http1 {
            let mut c = t.get();
            c.requests += 1;
            c.request_head_bytes += head as u64;
            c.request_body_bytes += body as u64;
            t.set(c);
        }
    }

    /// An HTTP/1.1 response read: head, de-chunked body, and chunk framing bytes.
    pub fn http1_response(&self, head: usize, body: usize, framing: u64) {
        if let Some(t) = &self.http1 {
            let mut c = t.get();
            c.responses += 1;
            c.response_head_bytes += head as u64;
            c.response_body_bytes += body as u64;
            c.chunk_framing_bytes += framing;
            t.set(c);
        }
    }

    /// Uncompressed header list sizes of one h2 exchange (for the HPACK compression ratio).
    pub fn h2_header_lists(&self, out: u64, inbound: u64) {
        if let Some(h) = &self.h2 {
            let (o, i) = h.header_lists.get();
            h.header_lists.set((o + out, i + inbound));
        }
    }

    /// Bytes read while draining a closing connection (after its protocol driver ended); they
    /// are protocol bytes only without TLS (with TLS they are records nobody decrypts).
    pub fn drained(&self, bytes: &[u8]) {
        counted_read(self, bytes.len());
        if self.tls.get().is_none() {
            self.plaintext_in(bytes);
        }
    }

    /// The TLS handshake just ended: `took` long, `cpu` of this thread's time inside its polls,
    /// `resumed` a session; the socket bytes so far are the handshake's.
    pub fn tls_handshake(
        &self,
        took: std::time::Duration,
        cpu: std::time::Duration,
        resumed: bool,
    ) {
        self.tls.set(Some(Handshake {
            us: took.as_micros() as u64,
            cpu_us: cpu.as_micros() as u64,
            resumed,
            bytes_out: self.bytes_out.get(),
            bytes_in: self.bytes_in.get(),
        }));
    }

    /// Protocol bytes written (after TLS decryption / before encryption).
    pub fn plaintext_out(&self, bytes: &[u8]) {
        bump(&self.plain_out, bytes.len() as u64);
        self.sniff_out(bytes);
    }

    pub fn plaintext_in(&self, bytes: &[u8]) {
        bump(&self.plain_in, bytes.len() as u64);
        self.sniff_in(bytes);
    }

    pub fn drained_would_block(&self) {
        read_would_block(self);
    }

    fn sniff_out(&self, bytes: &[u8]) {
        if let Some(s) = self.h2.as_ref().and_then(|h| h.sniffers.as_ref()) {
            s.borrow_mut().out.feed(bytes);
        }
    }

    fn sniff_in(&self, bytes: &[u8]) {
        if let Some(s) = self.h2.as_ref().and_then(|h| h.sniffers.as_ref()) {
            s.borrow_mut().inbound.feed(bytes);
        }
    }
}

/// A stream socket whose every syscall goes through `try_read`/`try_write`, so each one is
/// counted exactly once: one `try_*` call is one `recv`/`send`/`writev` syscall.
#[derive(Debug)]
pub struct Metered {
    inner: Sock,
    ledger: Rc<Ledger>,
}

/// A connected stream socket: TCP, or a Unix domain socket (`unix:///path` targets).
#[derive(Debug)]
pub enum Sock {
    Tcp(TcpStream),
    Unix(UnixStream),
}

/// The same call on either kind of socket (their methods share names, not a trait).
macro_rules! on_sock {
    ($sock:expr, $s:ident => $e:expr) => {
        match $sock {
            Sock::Tcp($s) => $e,
            Sock::Unix($s) => $e,
        }
    };
}

impl Sock {
    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        on_sock!(self, s => s.poll_read_ready(cx))
    }

    fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        on_sock!(self, s => s.poll_write_ready(cx))
    }

    fn try_io<R>(&self, interest: Interest, f: impl FnOnce() -> io::Result<R>) -> io::Result<R> {
        on_sock!(self, s => s.try_io(interest, f))
    }

    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        on_sock!(self, s => s.try_write(buf))
    }

    fn try_write_vectored(&self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        on_sock!(self, s => s.try_write_vectored(bufs))
    }
}

impl AsFd for Sock {
    fn as_fd(&self) -> BorrowedFd<'_> {
        on_sock!(self, s => s.as_fd())
    }
}

impl AsRawFd for Sock {
    fn as_raw_fd(&self) -> RawFd {
        on_sock!(self, s => s.as_raw_fd())
    }
}

impl Metered {
    pub fn new(inner: Sock, layers: Layers) -> (Self, Rc<Ledger>) {
        let ledger = Rc::new(Ledger::new(layers));
        (
            Metered {
                inner,
                ledger: ledger.clone(),
            },
            ledger,
        )
    }

    pub fn sock(&self) -> &Sock {
        &self.inner
    }

    /// One recv(2) into `buf`'s spare capacity (at most `MAX_READ` bytes), now, without the
    /// runtime's readiness: for a client that waits for readiness on an epoll set of its own.
    /// Counted as `poll_read`'s reads are; EAGAIN is a `WouldBlock` error, counted too. Returns
    /// the bytes read and whether the read emptied the socket (it returned less than it asked).
    pub fn recv_now(&self, buf: &mut bytes::BytesMut) -> io::Result<(usize, bool)> {
        let fd = self.inner.as_raw_fd();
        loop {
            let spare = buf.spare_capacity_mut();
            let want = spare.len().min(MAX_READ);
            // SAFETY: `spare` is `want` or more writable bytes that outlive the call.
            let n = unsafe { recv_raw(fd, spare.as_mut_ptr().cast(), want) };
            if let Ok(n) = usize::try_from(n) {
                counted_read(&self.ledger, n);
                // SAFETY: recv(2) initialized the first `n` bytes of the spare capacity.
                unsafe { buf.set_len(buf.len() + n) };
                return Ok((n, n < want));
            }
            if let Some(e) = self.raw_error(read_would_block) {
                return Err(e);
            }
        }
    }

    /// A read that completed elsewhere (a ring's, into the room `read_room` gave) put `n` bytes into
    /// `buf`'s spare capacity: counted as `recv_now`'s reads are, and added to `buf`.
    ///
    /// # Safety
    /// The first `n` bytes of `buf`'s spare capacity were written by that read.
    pub unsafe fn landed(&self, buf: &mut bytes::BytesMut, n: usize) {
        counted_read(&self.ledger, n);
        count_io(|c| c.ring_reads += 1);
        // SAFETY: the caller's promise.
        unsafe { buf.set_len(buf.len() + n) };
    }

    /// After a raw call failed: None to make it again (a signal interrupted it), or its error,
    /// an EAGAIN counted with `would_block`.
    fn raw_error(&self, would_block: fn(&Ledger)) -> Option<io::Error> {
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => None,
            io::ErrorKind::WouldBlock => {
                would_block(&self.ledger);
                Some(e)
            }
            _ => Some(e),
        }
    }

    /// One send(2) of `data`, now (see `recv_now`); counted as `poll_write`'s writes are.
    pub fn send_now(&self, data: &[u8]) -> io::Result<usize> {
        let fd = self.inner.as_raw_fd();
        loop {
            let n = send_raw(fd, data);
            if let Ok(n) = usize::try_from(n) {
                counted_write(&self.ledger, n);
                return Ok(n);
            }
            if let Some(e) = self.raw_error(write_would_block) {
                return Err(e);
            }
        }
    }
}

/// The room a read into `buf` may fill (its spare capacity, at most `MAX_READ` bytes; some is
/// made if there is none): a pointer and a length, for a read made elsewhere (a ring's).
pub fn read_room(buf: &mut bytes::BytesMut) -> (*mut u8, usize) {
    if buf.capacity() == buf.len() {
        buf.reserve(4096);
    }
    let spare = buf.spare_capacity_mut();
    (spare.as_mut_ptr().cast(), spare.len().min(MAX_READ))
}

/// recv(2) of at most `len` bytes into `ptr`, made as the syscall itself (recvfrom without an
/// address) rather than through libc's wrapper: the wrapper is a thread cancellation point, and
/// its bookkeeping around the call (asynchronous cancellation enabled, then disabled) cost some
/// 60 instructions a request, 3% of the client's own; nothing here is ever cancelled. Returns
/// the syscall's result (-1 with errno set on failure).
///
/// # Safety
/// `ptr` must be valid for writes of `len` bytes for the call.
unsafe fn recv_raw(fd: std::os::fd::RawFd, ptr: *mut u8, len: usize) -> libc::c_long {
    // SAFETY: the caller's promise on `ptr`; no address (null pointers).
    unsafe {
        libc::syscall(
            libc::SYS_recvfrom,
            fd,
            ptr,
            len,
            0,
            std::ptr::null_mut::<libc::sockaddr>(),
            std::ptr::null_mut::<libc::socklen_t>(),
        )
    }
}

/// send(2) of `data` with MSG_NOSIGNAL (a peer gone answers EPIPE, never SIGPIPE), as the
/// syscall itself (see `recv_raw`).
fn send_raw(fd: std::os::fd::RawFd, data: &[u8]) -> libc::c_long {
    // SAFETY: `data` is valid for `data.len()` bytes for the call; no address.
    unsafe {
        libc::syscall(
            libc::SYS_sendto,
            fd,
            data.as_ptr(),
            data.len(),
            libc::MSG_NOSIGNAL,
            std::ptr::null::<libc::sockaddr>(),
            0 as libc::socklen_t,
        )
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
            // The kernel writes into the caller's spare capacity as it is, uninitialized: no
            // zeroing of it first (a 64 KiB read buffer zeroed per read would cost more than
            // the read's own work when responses are small).
            let want = buf.remaining().min(MAX_READ);
            // SAFETY: nothing is de-initialized: the kernel only writes into these bytes.
            let dst = &mut unsafe { buf.unfilled_mut() }[..want];
            let fd = this.inner.as_raw_fd();
            // A read that returns less than it asked for emptied the socket: its readiness is
            // cleared with it (as a would-block would), so the next poll waits for the kernel's
            // next event instead of spending a syscall to hear EAGAIN. Tokio clears it only if
            // no event came in between, so nothing that arrives after the read is missed.
            let mut short = None;
            let read = this.inner.try_io(Interest::READABLE, || {
                // SAFETY: `dst` is `want` writable bytes that outlive the call.
                let n = unsafe { recv_raw(fd, dst.as_mut_ptr().cast(), want) };
                let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
                if n > 0 && n < want {
                    short = Some(n);
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                Ok(n)
            });
            match (read, short) {
                (_, Some(n)) | (Ok(n), None) => {
                    counted_read(&this.ledger, n);
                    // SAFETY: recv(2) initialized the first `n` bytes of the unfilled part.
                    unsafe { buf.assume_init(n) };
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                // The failed read cleared readiness; poll_read_ready registers the waker.
                (Err(e), None) if e.kind() == io::ErrorKind::WouldBlock => {
                    read_would_block(&this.ledger)
                }
                (Err(e), None) => return Poll::Ready(Err(e)),
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
                    counted_write(&this.ledger, n);
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => write_would_block(&this.ledger),
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
                    counted_write(&this.ledger, n);
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => write_would_block(&this.ledger),
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
        match &mut self.get_mut().inner {
            Sock::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Sock::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

impl Ledger {
    /// The record of this connection as it stands, with the TCP_INFO snapshot taken with it;
    /// `h2`: the h2 layers the client's codec counted (`Layers::H2Codec`), taken with it too.
    pub fn record(
        &self,
        endpoint: usize,
        local_port: u16,
        lifetime_us: u64,
        tcp: Option<TcpInfo>,
        h2: Option<Duplex<H2Counts>>,
    ) -> ConnRecord {
        let l = self;
        ConnRecord {
            endpoint,
            local_ip: l.local_ip.get(),
            local_port,
            bytes_out: l.bytes_out.get(),
            bytes_in: l.bytes_in.get(),
            write_calls: l.write_calls.get(),
            read_calls: l.read_calls.get(),
            write_would_block: l.write_would_block.get(),
            read_would_block: l.read_would_block.get(),
            requests: l.requests.get(),
            lifetime_us,
            connect_us: l.connect_us.get(),
            tcp,
            http1: l.http1.as_ref().map(Cell::get),
            tls: l.tls.get().map(|h| TlsCounts {
                handshakes: 1,
                resumed: u64::from(h.resumed),
                handshake_us: h.us,
                handshake_cpu_us: h.cpu_us,
                handshake_bytes_out: h.bytes_out,
                handshake_bytes_in: h.bytes_in,
                plaintext_out: l.plain_out.get(),
                plaintext_in: l.plain_in.get(),
                record_overhead_out: l.bytes_out.get().saturating_sub(l.plain_out.get()),
                record_overhead_in: l.bytes_in.get().saturating_sub(l.plain_in.get()),
            }),
            close: None,
            folded: 0,
            h2: l.h2.as_ref().map(|t| t.counts(h2)),
            h3: None,
        }
    }

    /// The close of a connection whose record (snapshot) is `at`: the ledger and TCP_INFO now,
    /// minus what the record holds.
    pub fn close_record(
        &self,
        at: &ConnRecord,
        tcp: Option<TcpInfo>,
        drained: bool,
        took: Duration,
    ) -> CloseRecord {
        let l = self;
        let seg = |f: fn(&TcpInfo) -> u64| match (at.tcp.as_ref(), tcp.as_ref()) {
            (Some(a), Some(b)) => Some(f(b).saturating_sub(f(a))),
            _ => None,
        };
        CloseRecord {
            bytes_out: l.bytes_out.get().saturating_sub(at.bytes_out),
            bytes_in: l.bytes_in.get().saturating_sub(at.bytes_in),
            segs_out: seg(|t| t.segs_out),
            segs_in: seg(|t| t.segs_in),
            data_segs_out: seg(|t| t.data_segs_out),
            data_segs_in: seg(|t| t.data_segs_in),
            drained,
            duration_us: took.as_micros() as u64,
        }
    }
}
