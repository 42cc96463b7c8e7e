//! One h2 connection on either client: its setup (socket, TLS, handshake), the handles its
//! callers share, and its close, which yields the connection's record.

use std::cell::Cell;
use std::io;
use std::net::SocketAddr;
use std::os::fd::OwnedFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::client::SendRequest;

use super::settings::{H2Client, H2Config};
use super::{h2crate, wire};
use crate::net::{self, Alpn, Dest, Layers, Ledger, NetConfig};
use crate::stats::ConnRecord;

/// A caller's handle on a connection, for either client; clones share the connection.
#[derive(Clone)]
pub enum Sender {
    H2(SendRequest<Bytes>),
    Wire(wire::ConnHandle),
    H3(crate::client::h3::H3Handle),
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

/// How long the close exchange of one connection may take (connections close concurrently).
pub const CLOSE_BOUND: Duration = Duration::from_millis(500);

impl Conn {
    /// Connects and starts the h2 handshake (preface + SETTINGS); the driver runs on the
    /// current `LocalSet`.
    pub async fn connect(
        dest: &Dest,
        host: &str,
        endpoint: usize,
        net_cfg: &NetConfig,
        h2_cfg: &H2Config,
    ) -> io::Result<Conn> {
        if h2_cfg.h3 {
            let Dest::Inet(addr) = dest else {
                return Err(io::Error::other("HTTP/3 runs over UDP: no Unix socket"));
            };
            return Conn::connect_h3(*addr, host, endpoint, net_cfg, h2_cfg).await;
        }
        // the wire client's codec counts its own frames; the h2 crate's are sniffed
        let layers = match (h2_cfg.ledger, h2_cfg.client) {
            (false, _) => Layers::Off,
            (true, H2Client::Wire) => Layers::H2Codec,
            (true, H2Client::H2) => Layers::H2Sniffed {
                grpc: !h2_cfg.plain,
            },
        };
        let opened = net::open(dest, host, net_cfg, Alpn::H2, layers).await?;
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
                let (send, driver) = h2crate::handshake(io, net_cfg, h2_cfg, dead.clone()).await?;
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

    /// An HTTP/3 connection: QUIC's handshake done, our control stream queued.
    async fn connect_h3(
        addr: SocketAddr,
        host: &str,
        endpoint: usize,
        net_cfg: &NetConfig,
        h2_cfg: &H2Config,
    ) -> io::Result<Conn> {
        let Some(tls) = &net_cfg.quic else {
            return Err(io::Error::other("h3 without its TLS configuration"));
        };
        let windows = crate::client::h3::QuicWindows {
            stream: h2_cfg.quic_stream_window,
            conn: h2_cfg.quic_conn_window,
        };
        let began = Instant::now();
        let (handle, driver, ledger, local_port, fd) =
            crate::client::h3::connect(addr, host, net_cfg, tls, windows, h2_cfg.ledger).await?;
        ledger.connect_us.set(began.elapsed().as_micros() as u64);
        Ok(Conn {
            send: Sender::H3(handle),
            ledger,
            fd,
            dead: Rc::new(Cell::new(false)),
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
                Sender::H3(h) => h.is_dead(),
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
    pub async fn close(self, linger: Duration) -> ConnRecord {
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
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let lifetime_us = opened.elapsed().as_micros() as u64;
        let codec = match &send {
            Sender::Wire(handle) => handle.layers(),
            Sender::H2(_) | Sender::H3(_) => None,
        };
        let tcp = net::tcp_info(&fd);
        let mut rec = ledger.record(endpoint, local_port, lifetime_us, tcp, codec);
        // an HTTP/3 connection's layers are taken after its close (below): QUIC's close is
        // one CONNECTION_CLOSE, and quinn's account of the frames then holds it too
        let h3 = match &send {
            Sender::H3(handle) => Some(handle.clone()),
            _ => None,
        };
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
            Sender::H3(handle) => {
                // CONNECTION_CLOSE once no request is open; QUIC has no answer to wait for
                handle.close();
                if tokio::time::timeout(CLOSE_BOUND, &mut driver)
                    .await
                    .is_err()
                {
                    driver.abort();
                }
                true
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
        rec.h3 = h3.map(|h| h.record(&ledger));
        rec
    }
}

/// Reads the socket through a duplicate descriptor to EOF (after h2 is done with it), through
/// the ledger, for at most `bound`; true when the server's FIN arrived. Our FIN goes first, in
/// case h2 did not shut the socket down itself.
async fn drain(fd: &OwnedFd, ledger: &Ledger, bound: Duration) -> bool {
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
