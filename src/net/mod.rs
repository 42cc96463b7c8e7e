//! Sockets: connecting with the configured options, metering every read and write, TCP_INFO.

mod metered;
mod stream;
mod tcpinfo;
pub mod tls;

pub use metered::{H2Tally, Http1Tally, Layers, Ledger, Metered};
pub use stream::{Alpn, Io, Opened, open};
pub use tcpinfo::{TcpInfo, tcp_info};

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::{TcpSocket, TcpStream};

/// Socket options applied to every connection wirebench opens.
#[derive(Debug, Clone)]
pub struct NetConfig {
    pub nodelay: bool,
    pub sndbuf: Option<u32>,
    pub rcvbuf: Option<u32>,
    pub connect_timeout: Duration,
    /// TLS for every connection (https endpoints)
    pub tls: Option<std::sync::Arc<tls::TlsClient>>,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            nodelay: true,
            sndbuf: None,
            rcvbuf: None,
            connect_timeout: Duration::from_secs(5),
            tls: None,
        }
    }
}

/// Opens a TCP connection to `addr` with the configured options, within the connect timeout.
pub async fn connect(addr: SocketAddr, cfg: &NetConfig) -> io::Result<TcpStream> {
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
    let socket = TcpSocket::from_std_stream(socket.into());
    let stream = match tokio::time::timeout(cfg.connect_timeout, socket.connect(addr)).await {
        Ok(r) => r?,
        Err(_) => {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no answer within {:?}", cfg.connect_timeout),
            ));
        }
    };
    stream.set_nodelay(cfg.nodelay)?;
    Ok(stream)
}

/// The local port of a connected stream (the key a packet capture is matched on).
pub fn local_port(stream: &TcpStream) -> u16 {
    stream.local_addr().map(|a| a.port()).unwrap_or(0)
}
