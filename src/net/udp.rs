//! A connected UDP socket for QUIC, metered like `Metered` meters TCP: every datagram and byte
//! each way and every send and receive syscall (and those answered EAGAIN) go into the
//! connection's ledger and this thread's data-call counters. Sends use UDP GSO (one
//! `sendmsg` for a run of equal-sized datagrams) and receives UDP GRO (one `recvmsg` for
//! several) where the kernel has them; the datagram counts are the segments either way.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
use std::task::{Context, Poll, ready};

use bytes::BytesMut;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::Interest;
use tokio::net::UdpSocket;

use super::metered::{Ledger, count_udp_recv, count_udp_send, read_would_block, write_would_block};
use super::{NetConfig, source_address, through_link};

/// UDP_SEGMENT and UDP_GRO (linux/udp.h); libc has no constants for them on every target.
const UDP_SEGMENT: libc::c_int = 103;
const UDP_GRO: libc::c_int = 104;

/// The room a receive offers: the largest UDP payload a GRO batch can hold.
const RECV_ROOM: usize = 64 * 1024;

/// The most segments one GSO send carries (the kernel's UDP_MAX_SEGMENTS is 64).
pub const MAX_GSO_SEGMENTS: usize = 32;

/// A connected UDP socket and its ledger.
pub struct MeteredUdp {
    sock: UdpSocket,
    ledger: Rc<Ledger>,
    /// the kernel takes UDP_SEGMENT on this socket (cleared when a GSO send fails)
    gso: bool,
    /// GRO is on: a receive may hold several datagrams of `segment` bytes each
    gro: bool,
    pub peer: SocketAddr,
    pub local: SocketAddr,
}

/// The datagrams one receive call may return (`recvmmsg`'s batch): with fewer back, the socket
/// was drained, and its readiness is cleared without another call to hear EAGAIN.
pub const RECV_BATCH: usize = 2;

/// What one receive gave: up to [`RECV_BATCH`] messages, laid out one after the other at the
/// end of the caller's buffer, each `(len, segment)`: `len` bytes of datagrams of `segment`
/// bytes (GRO; the last may be shorter, and `segment == len` for a single datagram).
#[derive(Debug, Clone, Copy)]
pub struct Received {
    pub msgs: [(usize, usize); RECV_BATCH],
    pub count: usize,
}

impl Received {
    /// The messages received.
    pub fn messages(&self) -> &[(usize, usize)] {
        &self.msgs[..self.count]
    }
}

/// Opens a UDP socket connected to `addr` (through `--link`, from a `--bind` address when
/// given), with `--sndbuf`/`--rcvbuf` or 4 MiB buffers, GSO and GRO where the kernel has them.
pub fn open(addr: SocketAddr, cfg: &NetConfig, ledger: Rc<Ledger>) -> io::Result<MeteredUdp> {
    let addr = through_link(addr, cfg);
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    socket.set_nonblocking(true)?;
    socket.set_cloexec(true)?;
    // larger buffers than the default keep a burst of datagrams from being dropped locally;
    // a refusal leaves the kernel's
    let _ = socket.set_send_buffer_size(cfg.sndbuf.map_or(4 << 20, |n| n as usize));
    let _ = socket.set_recv_buffer_size(cfg.rcvbuf.map_or(4 << 20, |n| n as usize));
    let ip = source_address(&cfg.bind, addr).unwrap_or(match addr {
        SocketAddr::V4(_) => std::net::Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
    });
    socket
        .bind(&SocketAddr::new(ip, 0).into())
        .map_err(|e| io::Error::new(e.kind(), format!("bind to {ip}: {e}")))?;
    socket.connect(&addr.into())?;
    let fd = socket.as_raw_fd();
    let gso = cfg.udp_offload && set_int(fd, libc::SOL_UDP, UDP_SEGMENT, 0);
    let gro = cfg.udp_offload && set_int(fd, libc::SOL_UDP, UDP_GRO, 1);
    let sock = UdpSocket::from_std(socket.into())?;
    let local = sock.local_addr()?;
    ledger.local_ip.set(Some(local.ip()));
    Ok(MeteredUdp {
        sock,
        ledger,
        gso,
        gro,
        peer: addr,
        local,
    })
}

fn set_int(fd: RawFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> bool {
    // SAFETY: a valid socket fd and a pointer to a c_int of the stated size.
    unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        ) == 0
    }
}

impl MeteredUdp {
    pub fn ledger(&self) -> &Rc<Ledger> {
        &self.ledger
    }

    /// The datagrams one send may carry: up to [`MAX_GSO_SEGMENTS`] with GSO, else 1.
    pub fn max_segments(&self) -> usize {
        if self.gso { MAX_GSO_SEGMENTS } else { 1 }
    }

    /// The socket's descriptor (its buffer sizes and drops, for the record).
    pub fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }

    /// Sends `buf`: one datagram, or with `segment` (GSO) datagrams of that size (the last may
    /// be shorter). Pending while the socket's buffer is full.
    pub fn poll_send(
        &mut self,
        cx: &mut Context<'_>,
        buf: &[u8],
        segment: Option<usize>,
    ) -> Poll<io::Result<()>> {
        let segment = segment.filter(|&s| s < buf.len());
        if segment.is_some() && !self.gso {
            // without GSO, one datagram at a time
            let s = segment.unwrap_or(buf.len());
            for chunk in buf.chunks(s) {
                ready!(self.poll_send_one(cx, chunk, None))?;
            }
            return Poll::Ready(Ok(()));
        }
        self.poll_send_one(cx, buf, segment)
    }

    fn poll_send_one(
        &mut self,
        cx: &mut Context<'_>,
        buf: &[u8],
        segment: Option<usize>,
    ) -> Poll<io::Result<()>> {
        loop {
            ready!(self.sock.poll_send_ready(cx))?;
            let fd = self.sock.as_raw_fd();
            match self
                .sock
                .try_io(Interest::WRITABLE, || send_segments(fd, buf, segment))
            {
                Ok(()) => {
                    let datagrams = segment.map_or(1, |s| buf.len().div_ceil(s));
                    count_udp_send(&self.ledger, buf.len(), datagrams as u64);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => write_would_block(&self.ledger),
                // a kernel or device without GSO for this path: segment ourselves from now on
                Err(e) if segment.is_some() && e.raw_os_error() == Some(libc::EIO) => {
                    self.gso = false;
                    return self.poll_send(cx, buf, segment);
                }
                // ICMP unreachable from an earlier datagram: the server is not there
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    /// Receives onto the end of `buf` (which grows to take the largest GRO batches): what
    /// arrived, pending when nothing did. One `recvmmsg` per call; when it returns fewer
    /// messages than it had room for, the socket is drained, and its readiness is cleared then
    /// (as `Metered` does after a short read): the next poll waits for the kernel's next event
    /// instead of spending a syscall to hear EAGAIN. Tokio clears it only if no event came in
    /// between, so a datagram that arrives after the call is not missed.
    pub fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut BytesMut,
    ) -> Poll<io::Result<Received>> {
        buf.reserve(RECV_ROOM * RECV_BATCH);
        loop {
            ready!(self.sock.poll_recv_ready(cx))?;
            let fd = self.sock.as_raw_fd();
            let gro = self.gro;
            let spare = buf.spare_capacity_mut();
            let ptr = spare.as_mut_ptr().cast::<u8>();
            let mut drained = None;
            let got = self.sock.try_io(Interest::READABLE, || {
                let r = recv_batch(fd, ptr, gro)?;
                if r.count < RECV_BATCH {
                    drained = Some(r);
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                Ok(r)
            });
            match (got, drained) {
                (_, Some(r)) | (Ok(r), None) => {
                    // the messages sit RECV_ROOM apart: close the gaps
                    let mut len = 0;
                    for (k, &(n, _)) in r.messages().iter().enumerate() {
                        if k > 0 {
                            // SAFETY: both ranges lie in the spare capacity the kernel wrote
                            unsafe { std::ptr::copy(ptr.add(k * RECV_ROOM), ptr.add(len), n) };
                        }
                        len += n;
                        let datagrams = n.div_ceil(r.msgs[k].1.max(1)).max(1);
                        count_udp_recv(&self.ledger, n, datagrams as u64);
                    }
                    // SAFETY: the first `len` bytes of the spare capacity are written
                    unsafe { buf.set_len(buf.len() + len) };
                    return Poll::Ready(Ok(r));
                }
                // the failed receive cleared readiness; the next poll registers the waker
                (Err(e), None) if e.kind() == io::ErrorKind::WouldBlock => {
                    read_would_block(&self.ledger)
                }
                (Err(e), None) => return Poll::Ready(Err(e)),
            }
        }
    }
}

/// One `send` (or `sendmsg` with UDP_SEGMENT).
fn send_segments(fd: RawFd, buf: &[u8], segment: Option<usize>) -> io::Result<()> {
    let Some(seg) = segment else {
        // SAFETY: a valid fd and the bytes of `buf`.
        let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), 0) };
        return if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        };
    };
    let mut iov = libc::iovec {
        iov_base: buf.as_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // room for one cmsg of a u16
    let mut control = [0u64; 4];
    // SAFETY: msghdr is plain data; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE is arithmetic.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(size_of::<u16>() as u32) } as usize;
    // SAFETY: the control buffer holds one header and a u16, as msg_controllen says.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_UDP;
        (*cmsg).cmsg_type = UDP_SEGMENT;
        (*cmsg).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<u16>(), seg as u16);
    }
    // SAFETY: a valid fd and a msghdr whose buffers are alive.
    let n = unsafe { libc::sendmsg(fd, &msg, 0) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// One `recvmmsg` of up to [`RECV_BATCH`] messages into `RECV_ROOM`-sized regions from `ptr`
/// on, reading UDP_GRO's segment size of each (with `gro`).
fn recv_batch(fd: RawFd, ptr: *mut u8, gro: bool) -> io::Result<Received> {
    // SAFETY: plain data, every pointer set below outlives the call.
    let mut iov: [libc::iovec; RECV_BATCH] = unsafe { zeroed() };
    let mut control = [[0u64; 8]; RECV_BATCH];
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; RECV_BATCH] = unsafe { zeroed() };
    for k in 0..RECV_BATCH {
        iov[k] = libc::iovec {
            // SAFETY: the caller reserved RECV_BATCH regions of RECV_ROOM bytes
            iov_base: unsafe { ptr.add(k * RECV_ROOM) }.cast(),
            iov_len: RECV_ROOM,
        };
        let h = &mut msgs[k].msg_hdr;
        h.msg_iov = &mut iov[k];
        h.msg_iovlen = 1;
        if gro {
            h.msg_control = control[k].as_mut_ptr().cast();
            h.msg_controllen = size_of::<[u64; 8]>();
        }
    }
    // SAFETY: a valid fd and RECV_BATCH headers whose buffers are alive.
    let n = unsafe {
        libc::recvmmsg(
            fd,
            msgs.as_mut_ptr(),
            RECV_BATCH as libc::c_uint,
            0,
            std::ptr::null_mut(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut r = Received {
        msgs: [(0, 0); RECV_BATCH],
        count: n as usize,
    };
    for (k, m) in msgs.iter().enumerate().take(r.count) {
        let len = m.msg_len as usize;
        let mut segment = len;
        let h = &m.msg_hdr;
        // SAFETY: the kernel filled msg_control up to msg_controllen; the CMSG macros walk it.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(h);
            while !cmsg.is_null() {
                if (*cmsg).cmsg_level == libc::SOL_UDP && (*cmsg).cmsg_type == UDP_GRO {
                    let s = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>());
                    if s > 0 {
                        segment = s as usize;
                    }
                }
                cmsg = libc::CMSG_NXTHDR(h, cmsg);
            }
        }
        r.msgs[k] = (len, segment);
    }
    Ok(r)
}
