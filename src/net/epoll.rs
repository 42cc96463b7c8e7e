//! An epoll set of the caller's own, for a client that waits for its sockets' readiness itself
//! instead of through the runtime: edge-triggered, one token per socket.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// An epoll instance and room for the events one wait returns.
pub struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

/// One readiness report: the socket's token, and whether the peer has closed its side (or the
/// socket failed): then a read that returns less than it asked for has not emptied the socket
/// for good, the end of the stream is still to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub token: u64,
    pub hangup: bool,
}

impl Epoll {
    /// A new set whose waits return up to `batch` events each.
    pub fn new(batch: usize) -> io::Result<Epoll> {
        // SAFETY: no pointers; the result is checked.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Epoll {
            fd,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; batch.max(1)],
        })
    }

    /// Watches `fd` for reads and writes (edge-triggered: an event when bytes arrive or room
    /// opens, not while they stay), reported with `token`.
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
            u64: token,
        };
        // SAFETY: `ev` is valid for the call.
        let r = unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Stops watching `fd` (before it is handed to someone else or closed).
    pub fn remove(&self, fd: RawFd) {
        // SAFETY: a null event is allowed for EPOLL_CTL_DEL; an fd not in the set is ENOENT,
        // which changes nothing.
        unsafe {
            libc::epoll_ctl(
                self.fd.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                fd,
                std::ptr::null_mut(),
            )
        };
    }

    /// Waits up to `timeout_ms` (0: not at all) and returns the tokens of the sockets that
    /// became ready, `into` cleared first. A signal's interruption is no event.
    pub fn wait(&mut self, timeout_ms: i32, into: &mut Vec<Event>) -> io::Result<()> {
        into.clear();
        // SAFETY: `events` has room for `len` events for the call.
        let n = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as i32,
                timeout_ms,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::Interrupted => Ok(()),
                _ => Err(e),
            };
        }
        const HANGUP: u32 = (libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32;
        into.extend(self.events[..n as usize].iter().map(|e| Event {
            token: e.u64,
            hangup: e.events & HANGUP != 0,
        }));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    #[test]
    fn reports_a_socket_once_per_arrival_and_not_after_removal() {
        let (mut a, b) = UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        let mut ep = Epoll::new(8).unwrap();
        let mut got = Vec::new();
        ep.add(b.as_raw_fd(), 7).unwrap();
        // writable at once: the first edge
        ep.wait(0, &mut got).unwrap();
        assert_eq!(
            got,
            [Event {
                token: 7,
                hangup: false
            }]
        );
        // edge-triggered: nothing new, nothing reported
        ep.wait(0, &mut got).unwrap();
        assert!(got.is_empty());
        a.write_all(b"x").unwrap();
        ep.wait(100, &mut got).unwrap();
        assert_eq!(
            got,
            [Event {
                token: 7,
                hangup: false
            }]
        );
        // the peer's close: reported as a hangup
        drop(a);
        ep.wait(100, &mut got).unwrap();
        assert_eq!(
            got,
            [Event {
                token: 7,
                hangup: true
            }]
        );
        // a socket removed from the set is not reported
        let (mut a, b) = UnixStream::pair().unwrap();
        ep.add(b.as_raw_fd(), 8).unwrap();
        ep.wait(0, &mut got).unwrap();
        assert_eq!(
            got,
            [Event {
                token: 8,
                hangup: false
            }]
        );
        ep.remove(b.as_raw_fd());
        a.write_all(b"y").unwrap();
        ep.wait(0, &mut got).unwrap();
        assert!(got.is_empty());
    }
}
