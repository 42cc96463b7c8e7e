//! Bits of the tests' own loopback servers (the misbehaving ones in client_hostile_servers.rs,
//! a gateway that never re-authenticates, a black hole): an accept loop with a thread per
//! connection, and reading a request by hand on plain `std::net`.

use std::io::{self, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};

/// Listens on a free loopback port and runs `serve` on a thread of its own for every connection
/// it accepts (a failed accept is skipped), for as long as the test runs; returns the address.
pub fn spawn<F>(serve: F) -> SocketAddr
where
    F: FnOnce(TcpStream) + Clone + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(s) = conn else { continue };
            let serve = serve.clone();
            std::thread::spawn(move || serve(s));
        }
    });
    addr
}

/// Reads one HTTP/1.1 request, its head byte by byte (nothing past it is consumed) and then its
/// Content-Length body; returns the head (up to and with the blank line), or `None` at EOF
/// before the head ended.
pub fn read_request(s: &mut impl Read) -> io::Result<Option<String>> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte)? == 0 {
            return Ok(None);
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let len: usize = head
        .to_ascii_lowercase()
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap_or(0));
    let mut body = vec![0u8; len];
    s.read_exact(&mut body)?;
    Ok(Some(head))
}

/// Reads until the peer closes (or an error), so closing our side sends FIN, not RST.
pub fn drain(s: &mut impl Read) {
    let mut sink = [0u8; 4096];
    while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
}
