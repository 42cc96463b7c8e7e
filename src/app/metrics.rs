//! `--metrics-addr`: a small HTTP/1.1 endpoint on a thread of its own serving the live board
//! as Prometheus text (`GET /metrics`), bounded: a few scrapers at a time, each exchange under
//! a deadline, requests of a few KiB, one response per connection.

use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::report::prometheus;
use crate::stats::live::Board;

/// Scrapers served at once; a connection beyond them is answered 503 and closed.
pub const MAX_SCRAPERS: usize = 8;

/// The most one exchange (request read, response written) may take.
pub const DEADLINE: Duration = Duration::from_secs(5);

/// The largest request head read.
const MAX_REQUEST: usize = 8 * 1024;

const BUSY: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// The endpoint: bound before the run, served until `stop`.
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `addr` (one line naming the flag when it cannot) and starts serving `board`.
    pub fn start(addr: SocketAddr, board: Arc<Board>) -> Result<MetricsServer, String> {
        let listener = std::net::TcpListener::bind(addr)
            .and_then(|l| l.set_nonblocking(true).map(|()| l))
            .map_err(|e| format!("--metrics-addr {addr}: {e}"))?;
        let local = listener
            .local_addr()
            .map_err(|e| format!("--metrics-addr {addr}: {e}"))?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("--metrics-addr: cannot start a runtime: {e}"))?;
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("wirebench-metrics".into())
            .spawn(move || {
                let local_set = tokio::task::LocalSet::new();
                local_set.block_on(&rt, serve(listener, board, stopped));
            })
            .map_err(|e| format!("--metrics-addr: cannot start its thread: {e}"))?;
        Ok(MetricsServer {
            addr: local,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address it listens on (the port chosen when `:0` was given).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving: scrapes in progress are cut, the port is closed.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.halt();
    }
}

async fn serve(
    listener: std::net::TcpListener,
    board: Arc<Board>,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    let active = Rc::new(std::cell::Cell::new(0usize));
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    if active.get() >= MAX_SCRAPERS {
                        // never waited for: a full socket buffer just loses the answer
                        let _ = stream.try_write(BUSY);
                        continue;
                    }
                    active.set(active.get() + 1);
                    let (board, active) = (board.clone(), active.clone());
                    tokio::task::spawn_local(async move {
                        let _ = tokio::time::timeout(DEADLINE, exchange(stream, &board)).await;
                        active.set(active.get() - 1);
                    });
                }
                // out of descriptors, say: try again a little later
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            },
        }
    }
}

/// One request, one response, then the connection closes.
async fn exchange(mut s: TcpStream, board: &Board) -> std::io::Result<()> {
    let mut buf = vec![0u8; MAX_REQUEST];
    let mut have = 0;
    let (status, body, head_only) = loop {
        let n = s.read(&mut buf[have..]).await?;
        if n == 0 {
            return Ok(());
        }
        have += n;
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf[..have]) {
            Ok(httparse::Status::Complete(_)) => {
                let method = req.method.unwrap_or("");
                let path = req.path.unwrap_or("").split('?').next().unwrap_or("");
                let head_only = method == "HEAD";
                break match (method, path) {
                    ("GET" | "HEAD", "/metrics") => {
                        let page = prometheus::render(
                            &board.figures(),
                            board.finished(),
                            env!("CARGO_PKG_VERSION"),
                        );
                        ("200 OK", page, head_only)
                    }
                    ("GET" | "HEAD", "/") => (
                        "200 OK",
                        "wirebench: the live figures are at /metrics\n".to_string(),
                        head_only,
                    ),
                    ("GET" | "HEAD", _) => (
                        "404 Not Found",
                        "not found: try /metrics\n".into(),
                        head_only,
                    ),
                    _ => ("405 Method Not Allowed", "GET /metrics\n".into(), false),
                };
            }
            Ok(httparse::Status::Partial) if have < buf.len() => continue,
            Ok(httparse::Status::Partial) => {
                break ("431 Request Header Fields Too Large", String::new(), false);
            }
            Err(_) => break ("400 Bad Request", String::new(), false),
        }
    };
    let content_type = if status.starts_with("200") && !body.starts_with("wirebench:") {
        prometheus::CONTENT_TYPE
    } else {
        "text/plain; charset=utf-8"
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await?;
    if !head_only {
        s.write_all(body.as_bytes()).await?;
    }
    s.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn get(addr: SocketAddr, request: &[u8]) -> String {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(request).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    #[test]
    fn serves_metrics_and_refuses_the_rest() {
        let board = Arc::new(Board::default());
        let srv = MetricsServer::start("127.0.0.1:0".parse().unwrap(), board.clone()).unwrap();
        let addr = srv.local_addr();
        let page = get(addr, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(page.starts_with("HTTP/1.1 200 OK\r\n"), "{page}");
        assert!(page.contains("version=0.0.4"));
        assert!(page.contains("wirebench_run_finished 0\n"));
        assert!(get(addr, b"GET /nope HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get(addr, b"POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        assert!(get(addr, b"\x00\x01garbage\r\n\r\n").starts_with("HTTP/1.1 400"));
        let huge = vec![b'a'; MAX_REQUEST + 10];
        let mut req = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
        req.extend_from_slice(&huge);
        assert!(get(addr, &req).starts_with("HTTP/1.1 431"));
        let head = get(addr, b"HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(
            head.starts_with("HTTP/1.1 200") && head.ends_with("\r\n\r\n"),
            "{head}"
        );
        board.finish();
        assert!(get(addr, b"GET /metrics HTTP/1.0\r\n\r\n").contains("wirebench_run_finished 1\n"));
        srv.stop();
        assert!(
            std::net::TcpStream::connect(addr).is_err(),
            "the port is closed"
        );
    }

    #[test]
    fn silent_scrapers_cannot_hold_it() {
        let board = Arc::new(Board::default());
        let srv = MetricsServer::start("127.0.0.1:0".parse().unwrap(), board).unwrap();
        let addr = srv.local_addr();
        // more silent connections than it serves at once: the extra ones get 503 at once
        let silent: Vec<_> = (0..MAX_SCRAPERS)
            .map(|_| std::net::TcpStream::connect(addr).unwrap())
            .collect();
        std::thread::sleep(Duration::from_millis(200));
        assert!(get(addr, b"GET /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 503"));
        // once their deadline passes they are closed, and a scraper is served again
        std::thread::sleep(DEADLINE + Duration::from_millis(300));
        assert!(get(addr, b"GET /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200"));
        drop(silent);
        // the same address cannot be bound twice: one line naming the flag
        let again = MetricsServer::start(addr, Arc::new(Board::default()));
        let e = again.err().unwrap();
        assert!(e.starts_with(&format!("--metrics-addr {addr}: ")), "{e}");
        srv.stop();
    }
}
