//! The built-in echo server: grpc-echo's `grpc_echo.v1.EchoService/Echo` (and the streaming
//! echoes, health and reflection) over h2 and the same echo as JSON over HTTP/1.1, on one TCP
//! port (and a Unix socket with `--unix`), told apart by the HTTP/2 connection preface; the JSON
//! echo over HTTP/3 on the same port number over UDP.

pub mod faults;
mod grpc;
mod http1;
mod http3;
mod plain;
pub mod quic;
mod reflection;
mod stream;

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use bytes::{Buf, Bytes, BytesMut};
use rustls::pki_types::CertificateDer;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Notify;

use wirebench_wire::echo;
use wirebench_wire::h2::frame::PREFACE as H2_PREFACE;
use wirebench_wire::proto::echo::EchoResponse;

pub(crate) use faults::is_control;

/// Largest request message or body the server accepts.
pub const MAX_REQUEST: usize = 4 << 20;

/// How the server runs.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub addr: SocketAddr,
    pub threads: usize,
    /// close connections at this age (±10% jitter): GOAWAY on h2, `Connection: close` on HTTP/1.1
    pub max_conn_age: Option<Duration>,
    /// close connections idle this long
    pub max_conn_idle: Option<Duration>,
    pub max_concurrent_streams: Option<u32>,
    /// serve TLS (ALPN h2 and http/1.1) with this certificate and key
    pub tls: Option<std::sync::Arc<rustls::ServerConfig>>,
    /// injected delays, errors, padding, closes (requests override them by header)
    pub faults: faults::Faults,
    /// answer HTTP/3 (QUIC) on UDP at the same port: with `tls`'s certificate, or one made at
    /// start (`Server::h3_cert_der`)
    pub h3: bool,
    /// UDP segmentation offload (GSO) for HTTP/3's sends; off, every datagram is a send of its
    /// own (and a loopback capture sees each one: it sees a GSO send as one packet)
    pub udp_offload: bool,
    /// also listen on this Unix domain socket (HTTP/1.1, h2 and gRPC; TLS with `tls`); a
    /// socket file left there by a server that is gone is replaced, and removed at the end
    pub unix: Option<std::path::PathBuf>,
}

impl ServeConfig {
    /// One thread on an ephemeral loopback port, HTTP/3 on (with a generated certificate) and
    /// UDP offloads, no TLS over TCP, no limits, no faults: the built-in server of a run.
    pub fn loopback() -> ServeConfig {
        ServeConfig {
            addr: ([127, 0, 0, 1], 0).into(),
            threads: 1,
            max_conn_age: None,
            max_conn_idle: None,
            max_concurrent_streams: None,
            tls: None,
            faults: faults::Faults::default(),
            h3: true,
            udp_offload: true,
            unix: None,
        }
    }
}

/// A running server; stops when dropped or on `stop()`.
pub struct Server {
    addr: SocketAddr,
    stop: Arc<(AtomicBool, Notify)>,
    threads: Vec<std::thread::JoinHandle<()>>,
    clocks: Arc<Mutex<Vec<libc::clockid_t>>>,
    /// whether HTTP/3 is served, and the certificate made for it (none with `tls`)
    h3: Option<Option<quic::Generated>>,
    /// the Unix socket's path, removed at the end
    unix: Option<std::path::PathBuf>,
}

/// What each thread serves: a TCP listener, a UDP socket for HTTP/3, and the Unix socket's
/// listener (every thread accepts on it; one of those woken takes each connection).
struct Sockets {
    tcp: std::net::TcpListener,
    udp: Option<(std::net::UdpSocket, quinn::ServerConfig)>,
    unix: Option<std::os::unix::net::UnixListener>,
}

/// How many times a port picked for TCP (port 0) is given up for another when UDP has it taken.
const PORT_TRIES: usize = 8;

impl Server {
    /// Binds `threads` listeners on one address (SO_REUSEPORT: the kernel spreads connections)
    /// and, unless `h3` is off, as many UDP sockets on the same port; starts a thread with its
    /// own runtime for each pair.
    pub fn start(cfg: ServeConfig) -> io::Result<Server> {
        let quic = if cfg.h3 {
            Some(quic::config(&cfg)?)
        } else {
            None
        };
        let (addr, mut sockets) = bind_all(&cfg, quic.as_ref().map(|q| &q.config))?;
        if let Some(path) = &cfg.unix {
            let listener = bind_unix(path)?;
            for s in &mut sockets {
                s.unix = Some(listener.try_clone()?);
            }
        }
        let stop: Arc<(AtomicBool, Notify)> = Arc::new((AtomicBool::new(false), Notify::new()));
        let clocks: Arc<Mutex<Vec<libc::clockid_t>>> = Arc::default();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let mut server = Server {
            addr,
            stop: stop.clone(),
            threads: Vec::new(),
            clocks: clocks.clone(),
            h3: quic.map(|q| q.generated),
            unix: cfg.unix.clone(),
        };
        for (i, socks) in sockets.into_iter().enumerate() {
            let (stop, clocks, cfg, ready) =
                (stop.clone(), clocks.clone(), cfg.clone(), ready_tx.clone());
            server.threads.push(
                std::thread::Builder::new()
                    .name(format!("wirebench-serve-{i}"))
                    .spawn(move || {
                        if let Some(c) = thread_cpu_clock()
                            && let Ok(mut g) = clocks.lock()
                        {
                            g.push(c);
                        }
                        serve_thread(socks, cfg, stop, ready)
                    })?,
            );
        }
        for _ in 0..server.threads.len() {
            // a thread that could not start its runtime or endpoint: stop the others (drop)
            ready_rx.recv().map_err(io::Error::other)??;
        }
        Ok(server)
    }

    /// The certificate HTTP/3 presents, when the server made it (no `tls` given), for a
    /// client that trusts exactly this one.
    pub fn h3_cert_der(&self) -> Option<CertificateDer<'static>> {
        self.h3.as_ref()?.as_ref().map(|g| g.der.clone())
    }

    /// The same certificate in PEM, for a file (`wirebench serve --h3-cert-out`).
    pub fn h3_cert_pem(&self) -> Option<&str> {
        self.h3.as_ref()?.as_ref().map(|g| g.pem.as_str())
    }

    /// Whether HTTP/3 is served (UDP, the same port as `local_addr`).
    pub fn serves_h3(&self) -> bool {
        self.h3.is_some()
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// CPU time the server's threads have used so far (user + system).
    pub fn cpu_time(&self) -> Duration {
        let clocks = self.clocks.lock().map(|g| g.clone()).unwrap_or_default();
        clocks.into_iter().map(clock_time).sum()
    }

    /// Blocks until SIGINT (the flag) is set, then stops.
    pub fn wait(self, flag: &AtomicBool) {
        while !flag.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
        }
        self.stop();
    }

    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.0.store(true, Ordering::SeqCst);
        self.stop.1.notify_waiters();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        if let Some(path) = self.unix.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A TCP listener per thread and, with `quic`, a UDP socket per thread on the same port (the
/// listeners' when `cfg.addr`'s is 0, another pick when that one's UDP port is taken).
fn bind_all(
    cfg: &ServeConfig,
    quic: Option<&quinn::ServerConfig>,
) -> io::Result<(SocketAddr, Vec<Sockets>)> {
    let mut tries = 0;
    nobody_listens(cfg.addr)?;
    loop {
        let first = bind(cfg.addr)?;
        let addr = first.local_addr()?;
        let mut tcp = vec![first];
        for _ in 1..cfg.threads.max(1) {
            tcp.push(bind(addr)?);
        }
        let Some(quic) = quic else {
            let sockets = tcp.into_iter().map(|tcp| Sockets {
                tcp,
                udp: None,
                unix: None,
            });
            return Ok((addr, sockets.collect()));
        };
        let udp: io::Result<Vec<_>> = tcp.iter().map(|_| quic::bind(addr)).collect();
        match udp {
            Ok(udp) => {
                let sockets = tcp.into_iter().zip(udp).map(|(tcp, udp)| Sockets {
                    tcp,
                    udp: Some((udp, quic.clone())),
                    unix: None,
                });
                return Ok((addr, sockets.collect()));
            }
            Err(e)
                if e.kind() == io::ErrorKind::AddrInUse
                    && cfg.addr.port() == 0
                    && tries < PORT_TRIES =>
            {
                tries += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The Unix socket's listener at `path`; a socket file there that nobody answers on (left by a
/// server that is gone) is replaced, anything else there is an error.
fn bind_unix(path: &std::path::Path) -> io::Result<std::os::unix::net::UnixListener> {
    use std::os::unix::fs::FileTypeExt;
    use std::os::unix::net::{UnixListener, UnixStream};
    let said = |e: io::Error| io::Error::new(e.kind(), format!("unix:{}: {e}", path.display()));
    if let Ok(meta) = std::fs::symlink_metadata(path)
        && meta.file_type().is_socket()
        && UnixStream::connect(path).is_err()
    {
        std::fs::remove_file(path).map_err(said)?;
    }
    let l = UnixListener::bind(path).map_err(said)?;
    l.set_nonblocking(true)?;
    Ok(l)
}

/// The listeners share their port (SO_REUSEPORT), and so could another process of the same
/// user: a second server started on a port would take part of the connections unseen. So a
/// plain bind of `addr` comes first, which fails while anything listens there (a named port;
/// port 0 is a fresh one).
fn nobody_listens(addr: SocketAddr) -> io::Result<()> {
    if addr.port() == 0 {
        return Ok(());
    }
    bound(addr, false).map(drop).map_err(|e| match e.kind() {
        io::ErrorKind::AddrInUse => io::Error::new(
            e.kind(),
            format!("{e}: something listens there already (another server?)"),
        ),
        _ => e,
    })
}

fn bind(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    let s = bound(addr, true)?;
    s.set_nonblocking(true)?;
    s.listen(1024)?;
    Ok(s.into())
}

/// A TCP socket bound to `addr` with SO_REUSEADDR and IP_FREEBIND, and SO_REUSEPORT when
/// `shared` (a listener of the server's threads).
fn bound(addr: SocketAddr, shared: bool) -> io::Result<Socket> {
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    s.set_reuse_address(true)?;
    if shared {
        s.set_reuse_port(true)?;
    }
    set_freebind(&s);
    s.bind(&addr.into())?;
    Ok(s)
}

/// IP_FREEBIND: the listener may bind an address no device holds yet (`--link`'s host
/// address, which exists only while a link is in place; each stack's run gets a fresh link on
/// the same address). Failure leaves the ordinary bind, which then says what is wrong.
fn set_freebind(s: &Socket) {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: a valid socket fd and a pointer to a c_int of the stated size.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_FREEBIND,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

fn thread_cpu_clock() -> Option<libc::clockid_t> {
    let mut id: libc::clockid_t = 0;
    // SAFETY: pthread_self is always valid for the calling thread; `id` is ours to write.
    let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
    (rc == 0).then_some(id)
}

fn clock_time(id: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is ours to write; an invalid clock (thread gone) just returns an error.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// One thread's server: its runtime, its TCP listener and its QUIC endpoint, until `stop`.
/// `ready` learns whether the runtime and the endpoint could be made.
fn serve_thread(
    socks: Sockets,
    cfg: ServeConfig,
    stop: Arc<(AtomicBool, Notify)>,
    ready: std::sync::mpsc::Sender<io::Result<()>>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let (listener, endpoint, unix) = {
        // the listeners' and the endpoint's IO registers with this runtime
        let _in_rt = rt.enter();
        let unix = match socks
            .unix
            .map(tokio::net::UnixListener::from_std)
            .transpose()
        {
            Ok(u) => u,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        let listener = TcpListener::from_std(socks.tcp);
        let endpoint = socks
            .udp
            .map(|(udp, config)| quic::endpoint(udp, config))
            .transpose();
        match (listener, endpoint) {
            (Ok(l), Ok(e)) => (l, e, unix),
            (Err(e), _) | (_, Err(e)) => {
                let _ = ready.send(Err(e));
                return;
            }
        }
    };
    let _ = ready.send(Ok(()));
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let cfg = std::rc::Rc::new(cfg);
        if let Some(e) = &endpoint {
            tokio::task::spawn_local(quic::accept(e.clone(), cfg.clone()));
        }
        loop {
            let stopped = stop.1.notified();
            if stop.0.load(Ordering::SeqCst) {
                break;
            }
            tokio::select! {
                r = listener.accept() => {
                    if let Ok((stream, peer)) = r {
                        let _ = stream.set_nodelay(true);
                        tokio::task::spawn_local(connection(stream, Peer::Inet(peer), cfg.clone()));
                    }
                }
                r = accept_unix(unix.as_ref()) => {
                    if let Ok(stream) = r {
                        tokio::task::spawn_local(connection(stream, Peer::Unix, cfg.clone()));
                    }
                }
                _ = stopped => break,
            }
        }
        if let Some(e) = &endpoint {
            quic::close(e).await;
        }
    });
}

/// A connection on the Unix socket, when there is one (else never).
async fn accept_unix(l: Option<&tokio::net::UnixListener>) -> io::Result<tokio::net::UnixStream> {
    match l {
        Some(l) => l.accept().await.map(|(s, _)| s),
        None => std::future::pending().await,
    }
}

/// Who a connection came from: a TCP peer, or a client of the Unix socket (unnamed).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Peer {
    Inet(SocketAddr),
    Unix,
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Peer::Inet(a) => a.fmt(f),
            Peer::Unix => f.write_str("unix"),
        }
    }
}

/// Reads until the first bytes show whether this is h2 (the preface) or HTTP/1.1.
async fn connection<S: AsyncRead + AsyncWrite + Unpin + 'static>(
    stream: S,
    peer: Peer,
    cfg: std::rc::Rc<ServeConfig>,
) {
    let mut stream: Box<dyn Stream> = match &cfg.tls {
        None => Box::new(stream),
        Some(tls) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(tls.clone());
            match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream)).await {
                Ok(Ok(s)) => Box::new(s),
                // A failed or stalled handshake: nothing to answer.
                _ => return,
            }
        }
    };
    let mut head = BytesMut::with_capacity(4096);
    loop {
        let n = head.len().min(H2_PREFACE.len());
        if head[..n] != H2_PREFACE[..n] || n == H2_PREFACE.len() {
            break;
        }
        match stream.read_buf(&mut head).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
    let is_h2 = head.starts_with(H2_PREFACE);
    let io = Rewind {
        prefix: head.freeze(),
        inner: stream,
    };
    let age = cfg.max_conn_age.map(jitter);
    if is_h2 {
        grpc::serve(io, peer, &cfg, age).await;
    } else {
        http1::serve(io, peer, &cfg, age).await;
    }
}

/// ±10% so that many connections opened together do not all close together (as grpc-go does).
fn jitter(age: Duration) -> Duration {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let f = 0.9 + f64::from(nanos % 1000) / 1000.0 * 0.2;
    age.mul_f64(f)
}

/// A stream that first replays bytes already read while sniffing the protocol.
struct Rewind {
    prefix: Bytes,
    inner: Box<dyn Stream>,
}

/// A byte stream the server speaks on: plain TCP or TLS over it.
trait Stream: AsyncRead + AsyncWrite + Unpin {}
impl<T: AsyncRead + AsyncWrite + Unpin> Stream for T {}

impl AsyncRead for Rewind {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.prefix.is_empty() {
            let n = self.prefix.len().min(buf.remaining());
            buf.put_slice(&self.prefix[..n]);
            self.prefix.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Rewind {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        true
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

fn timestamp(t: SystemTime) -> prost_types::Timestamp {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    prost_types::Timestamp {
        seconds: d.as_secs() as i64,
        nanos: d.subsec_nanos() as i32,
    }
}

#[derive(serde::Deserialize)]
struct EchoBody<'a> {
    #[serde(borrow, default)]
    ping: std::borrow::Cow<'a, str>,
}

pub(crate) fn error_json(message: &str) -> String {
    serde_json::json!({ "error": message }).to_string()
}

/// The answer to a JSON echo request, over HTTP/1.1 or HTTP/2: `POST /v1/echo` with
/// `{"ping": ...}` gets 200 and the EchoResponse as JSON; another path 404, another method
/// 405, a body that is not the JSON 400 (each with `{"error": ...}`). `headers` are called for
/// only when the request is answered.
pub(crate) fn echo_json(
    method: &str,
    path: &str,
    body: &[u8],
    peer: Peer,
    received_at: SystemTime,
    pad_to: Option<usize>,
    headers: impl FnOnce() -> std::collections::HashMap<String, String>,
) -> (u16, String) {
    if path != "/v1/echo" {
        return (404, error_json("not found"));
    }
    if method != "POST" {
        return (405, error_json("method not allowed: use POST"));
    }
    match serde_json::from_slice::<EchoBody>(body) {
        Ok(req) => {
            let mut resp = echo_response(headers(), req.ping.into_owned(), peer, received_at);
            let mut json = echo::response_json(&resp).to_string();
            // `,"padding":"..."` after the last field: 14 bytes and the filler
            if let Some(want) = pad_to
                && want > json.len() + 14
            {
                resp.padding = "x".repeat(want - json.len() - 14);
                json = echo::response_json(&resp).to_string();
            }
            (200, json)
        }
        Err(e) => (400, error_json(&format!("malformed JSON: {e}"))),
    }
}

/// Pads `resp` so that its protobuf encoding is about `want` bytes (the filler's own tag and
/// length included).
pub(crate) fn pad_message(resp: &mut EchoResponse, want: usize) {
    use prost::Message;
    let have = resp.encoded_len();
    // tag (1 byte) and a length varint of up to 4 bytes (the filler is below 64 MiB)
    if want > have + 5 {
        let n = want - have - 5;
        let varint = prost::encoding::encoded_len_varint(n as u64);
        resp.padding = "x".repeat(n + 4 - varint);
    }
}

/// The EchoResponse grpc-echo sends: the request's metadata and ping, the peer, and the four
/// timestamps (request received, handler reached, handler done, response about to be sent).
pub(crate) fn echo_response(
    headers: std::collections::HashMap<String, String>,
    ping: String,
    peer: Peer,
    received_at: SystemTime,
) -> EchoResponse {
    let reached = SystemTime::now();
    let mut resp = EchoResponse {
        headers,
        body: ping,
        remote_addr: peer.to_string(),
        received_at: Some(timestamp(received_at)),
        handler_reached_at: Some(timestamp(reached)),
        handler_responded_at: None,
        sent_at: None,
        padding: String::new(),
    };
    resp.handler_responded_at = Some(timestamp(SystemTime::now()));
    resp.sent_at = Some(timestamp(SystemTime::now()));
    resp
}
