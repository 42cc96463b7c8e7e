//! Sockets: connecting with the configured options, metering every read and write, TCP_INFO.

pub mod epoll;
pub mod keylog;
mod metered;
mod stream;
mod tcpinfo;
pub(crate) mod timer;
pub mod tls;
pub mod udp;
pub mod uring;

pub use metered::{Layers, Ledger, Metered, Sock, read_room, thread_io_calls};
pub use stream::{Alpn, Io, Opened, open, thread_connects};
pub use tcpinfo::tcp_info;

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::{TcpSocket, TcpStream};
use wirebench_link::io::LinkNet;

/// Socket options applied to every connection wirebench opens.
#[derive(Debug, Clone)]
pub struct NetConfig {
    pub nodelay: bool,
    pub sndbuf: Option<u32>,
    pub rcvbuf: Option<u32>,
    pub connect_timeout: Duration,
    /// TLS for every connection (https endpoints)
    pub tls: Option<std::sync::Arc<tls::TlsClient>>,
    /// source addresses, used in turn (`--bind`); empty: the kernel picks
    pub bind: Arc<[IpAddr]>,
    /// `--link`: the emulated path in place for this run. The client's threads enter its
    /// namespace ([`enter_link`]); a loopback destination is reached at the link's host
    /// address instead (the namespace's own loopback holds no server).
    pub link: Option<Arc<LinkNet>>,
    /// `--proto h3`: the QUIC client's TLS (HTTP/3 has no plaintext form)
    pub quic: Option<Arc<tls::QuicTls>>,
    /// `--udp-offload`: GSO and GRO on QUIC's sockets
    pub udp_offload: bool,
    /// `--io-loop auto|epoll`: HTTP/1.1 clients over plain sockets run on each thread's own
    /// loop instead of as runtime tasks (`--io-loop tokio`: never)
    pub own_loop: bool,
    /// `--io-loop auto`: that loop reads through an io_uring where the kernel allows
    pub ring: bool,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            nodelay: true,
            sndbuf: None,
            rcvbuf: None,
            connect_timeout: Duration::from_secs(5),
            tls: None,
            bind: Arc::new([]),
            link: None,
            quic: None,
            udp_offload: true,
            own_loop: true,
            ring: true,
        }
    }
}

/// Where a connection goes: an IP address and port, or a Unix domain socket's path
/// (`unix:///path` targets).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Dest {
    Inet(SocketAddr),
    Unix(Arc<std::path::Path>),
}

impl std::fmt::Display for Dest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dest::Inet(a) => a.fmt(f),
            Dest::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// A stream connection to `dest` with the configured options, within the connect timeout; with
/// its local port (for a Unix socket, which has none, the connection's number in this process:
/// its name in the request log and the per-connection records).
pub async fn connect_stream(dest: &Dest, cfg: &NetConfig) -> io::Result<(Sock, u16)> {
    match dest {
        Dest::Inet(addr) => {
            let s = connect(*addr, cfg).await?;
            let port = local_port(&s);
            Ok((Sock::Tcp(s), port))
        }
        Dest::Unix(path) => {
            let s = within(cfg.connect_timeout, tokio::net::UnixStream::connect(path)).await?;
            // the buffer sizes asked for apply here too
            let sock = socket2::SockRef::from(&s);
            if let Some(n) = cfg.sndbuf {
                sock.set_send_buffer_size(n as usize)?;
            }
            if let Some(n) = cfg.rcvbuf {
                sock.set_recv_buffer_size(n as usize)?;
            }
            static UNIX_CONNS: AtomicUsize = AtomicUsize::new(0);
            let n = UNIX_CONNS.fetch_add(1, Ordering::Relaxed) % usize::from(u16::MAX) + 1;
            Ok((Sock::Unix(s), n as u16))
        }
    }
}

/// A connect, or TimedOut when it takes longer than `limit`.
async fn within<T>(
    limit: Duration,
    connect: impl std::future::Future<Output = io::Result<T>>,
) -> io::Result<T> {
    match tokio::time::timeout(limit, connect).await {
        Ok(r) => r,
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no answer within {limit:?}"),
        )),
    }
}

/// Opens a TCP connection to `addr` with the configured options, within the connect timeout.
pub async fn connect(addr: SocketAddr, cfg: &NetConfig) -> io::Result<TcpStream> {
    let addr = through_link(addr, cfg);
    let domain = Domain::for_address(addr);
    let socket = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?;
    socket.set_nonblocking(true)?;
    socket.set_cloexec(true)?;
    if let Some(n) = cfg.sndbuf {
        socket.set_send_buffer_size(n as usize)?;
    }
    if let Some(n) = cfg.rcvbuf {
        socket.set_recv_buffer_size(n as usize)?;
    }
    if let Some(ip) = source_address(&cfg.bind, addr) {
        // Leave the port to connect(): each source address then has the whole ephemeral range
        // per destination, which is what --bind is for.
        set_bind_address_no_port(&socket);
        socket
            .bind(&SocketAddr::new(ip, 0).into())
            .map_err(|e| io::Error::new(e.kind(), format!("bind to {ip}: {e}")))?;
    }
    let socket = TcpSocket::from_std_stream(socket.into());
    let stream = within(cfg.connect_timeout, socket.connect(addr)).await?;
    stream.set_nodelay(cfg.nodelay)?;
    Ok(stream)
}

/// Where `addr` is reached from the client's side: a loopback address becomes the link's host
/// address (the same port); anything else, and every address without a link, stays.
pub fn through_link(addr: SocketAddr, cfg: &NetConfig) -> SocketAddr {
    match &cfg.link {
        Some(l) if addr.ip().is_loopback() => SocketAddr::new(IpAddr::V4(l.host), addr.port()),
        _ => addr,
    }
}

/// Moves the calling thread into `--link`'s namespace, if there is a link: every socket it
/// opens afterwards crosses the emulated path. For the client's own threads only (never the
/// main thread: threads it starts later, the built-in server's among them, would inherit it).
pub fn enter_link(cfg: &NetConfig) -> io::Result<()> {
    match &cfg.link {
        Some(l) => l.enter(),
        None => Ok(()),
    }
}

/// Round-robin position over the `--bind` addresses, shared by every thread (connects only).
static NEXT_SOURCE: AtomicUsize = AtomicUsize::new(0);

/// The next source address of `addr`'s family, if any were given.
pub(crate) fn source_address(bind: &[IpAddr], addr: SocketAddr) -> Option<IpAddr> {
    let family: Vec<IpAddr> = bind
        .iter()
        .copied()
        .filter(|ip| ip.is_ipv4() == addr.is_ipv4())
        .collect();
    if family.is_empty() {
        return None;
    }
    Some(family[NEXT_SOURCE.fetch_add(1, Ordering::Relaxed) % family.len()])
}

/// IP_BIND_ADDRESS_NO_PORT: bind() picks the address only; failure just means the older
/// behaviour (a port reserved at bind time).
fn set_bind_address_no_port(socket: &Socket) {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: a valid socket fd and a pointer to a c_int of the stated size.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// Why `--bind` does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    #[error("--bind {part}: not an IPv4 range")]
    NotARange { part: String },
    #[error("--bind {part}: the range ends before it starts")]
    Backwards { part: String },
    #[error("--bind {part}: too many addresses")]
    TooMany { part: String },
    #[error("--bind {part}: not an IP address")]
    NotAnAddress { part: String },
    #[error("--bind needs at least one address")]
    Empty,
}

/// Parses `--bind`: addresses and IPv4 ranges, comma-separated
/// (`127.0.0.1-127.0.0.8,127.0.1.1`).
pub fn parse_bind(s: &str) -> Result<Vec<IpAddr>, BindError> {
    /// More source addresses than anyone needs (each has ~28k ephemeral ports).
    const MAX_BIND: usize = 65_536;
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let owned = || part.to_string();
        let not_a_range = |_| BindError::NotARange { part: owned() };
        match part.split_once('-') {
            Some((a, b)) => {
                let a: std::net::Ipv4Addr = a.trim().parse().map_err(not_a_range)?;
                let b: std::net::Ipv4Addr = b.trim().parse().map_err(not_a_range)?;
                let (a, b) = (u32::from(a), u32::from(b));
                if b < a {
                    return Err(BindError::Backwards { part: owned() });
                }
                if (b - a) as usize >= MAX_BIND - out.len() {
                    return Err(BindError::TooMany { part: owned() });
                }
                out.extend((a..=b).map(|n| IpAddr::from(std::net::Ipv4Addr::from(n))));
            }
            None => out.push(
                part.parse()
                    .map_err(|_| BindError::NotAnAddress { part: owned() })?,
            ),
        }
        if out.len() > MAX_BIND {
            return Err(BindError::TooMany { part: owned() });
        }
    }
    if out.is_empty() {
        return Err(BindError::Empty);
    }
    Ok(out)
}

/// The local port of a connected stream (the key a packet capture is matched on).
pub fn local_port(stream: &TcpStream) -> u16 {
    stream.local_addr().map(|a| a.port()).unwrap_or(0)
}

/// Why the open-file limit could not be raised far enough.
#[derive(Debug, thiserror::Error)]
pub enum FileLimitError {
    #[error("cannot read the open-file limit: {0}")]
    Unreadable(io::Error),
    #[error(
        "this run needs about {needed} open files but the limit is {limit} (raise it with `ulimit -n`)"
    )]
    TooLow { needed: u64, limit: u64 },
}

/// Raises the open-file limit (RLIMIT_NOFILE) to what `needed` descriptors require: the soft
/// limit up to the hard one, and the hard one too when allowed (root). Returns the new soft limit,
/// or why it is short.
pub fn raise_nofile(needed: u64) -> Result<u64, FileLimitError> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid pointer to an rlimit we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(FileLimitError::Unreadable(io::Error::last_os_error()));
    }
    let set = |cur: u64, max: u64| {
        let l = libc::rlimit {
            rlim_cur: cur,
            rlim_max: max,
        };
        // SAFETY: a valid pointer to an rlimit.
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &l) == 0 }
    };
    if lim.rlim_max < needed && set(needed, needed) {
        return Ok(needed);
    }
    if lim.rlim_cur < lim.rlim_max && set(lim.rlim_max, lim.rlim_max) {
        lim.rlim_cur = lim.rlim_max;
    }
    if lim.rlim_cur < needed {
        return Err(FileLimitError::TooLow {
            needed,
            limit: lim.rlim_cur,
        });
    }
    Ok(lim.rlim_cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_lists_and_ranges() {
        let v = parse_bind("127.0.0.1-127.0.0.3,::1").unwrap();
        assert_eq!(v.len(), 4);
        assert_eq!(v[2], "127.0.0.3".parse::<IpAddr>().unwrap());
        assert!(parse_bind("127.0.0.3-127.0.0.1").is_err());
        assert!(parse_bind("x").is_err());
        assert!(parse_bind("").is_err());
        assert!(parse_bind("10.0.0.0-10.255.255.255").is_err());
        let only_v6 = ["::1".parse().unwrap()];
        assert_eq!(
            source_address(&only_v6, "127.0.0.1:1".parse().unwrap()),
            None
        );
        let two = ["127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap()];
        let a = source_address(&two, "127.0.0.1:1".parse().unwrap()).unwrap();
        let b = source_address(&two, "127.0.0.1:1".parse().unwrap()).unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn nofile_limit_is_raised_or_explained() {
        let now = raise_nofile(64).unwrap();
        assert!(now >= 64);
        let e = raise_nofile(u64::MAX).unwrap_err().to_string();
        assert!(e.contains("open files"), "{e}");
    }
}
