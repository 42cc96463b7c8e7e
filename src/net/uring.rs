//! An io_uring of a loop thread's own, for a client that reads through completions instead of
//! waiting for readiness: a read is queued into the connection's buffer, and one
//! `io_uring_enter` submits every read the last completions queued and waits for the next
//! ones, where a readiness loop pays a wait and then a read per socket.
//!
//! Only with a single issuer and deferred task work (Linux 6.1+): completions are then run in
//! the thread's own `io_uring_enter`. Without them the kernel signals task work to the thread
//! on each completion, which measured three times the CPU a request of the epoll loop
//! (docs/RESULTS.md "What io_uring would give"), so `new` refuses and the caller keeps epoll.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use io_uring::{EnterFlags, IoUring, opcode, squeue, types};

/// The token of a cancellation's own completion (ignored).
const CANCEL: u64 = u64::MAX;

/// One finished operation: its token, and its result (bytes for a read, the events for a poll,
/// or a negative errno).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    pub token: u64,
    pub res: i32,
}

/// The ring, the operations in flight and the completions taken early (while a cancellation
/// waited for its target), handed out at the next wait.
pub struct Uring {
    ring: IoUring,
    in_flight: usize,
    early: Vec<Completion>,
}

impl Uring {
    /// A ring for about `ops` operations in flight at once (more queue in the kernel).
    pub fn new(ops: usize) -> io::Result<Uring> {
        let entries = (ops.max(8) as u32).next_power_of_two().min(4096);
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(entries)?;
        Ok(Uring {
            ring,
            in_flight: 0,
            early: Vec::new(),
        })
    }

    /// Whether this kernel gives a ring the loop can use (asked once per process).
    pub fn available() -> bool {
        static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *AVAILABLE.get_or_init(|| Uring::new(8).is_ok())
    }

    /// Operations submitted or queued whose completion has not been handed out.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Queues a read of at most `len` bytes from `fd` into `ptr` (submitted at the next wait).
    ///
    /// # Safety
    /// `ptr` must stay valid for writes of `len` bytes, and nothing may read or move what it
    /// points to, until this token's completion has been handed out (by `wait` or `cancel`).
    pub unsafe fn recv(
        &mut self,
        fd: RawFd,
        ptr: *mut u8,
        len: usize,
        token: u64,
    ) -> io::Result<()> {
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        // IORING_RECVSEND_POLL_FIRST (Linux 5.19): the answer is not there yet when the read is
        // queued (its request was just written), so the kernel waits for it at once instead of
        // trying the read first and failing
        const POLL_FIRST: u16 = 1;
        let op = opcode::Recv::new(types::Fd(fd), ptr, len)
            .ioprio(POLL_FIRST)
            .build()
            .user_data(token);
        self.push(&op)
    }

    /// Queues a wait for `fd` to take writes (a poll for POLLOUT; its completion is the events).
    pub fn writable(&mut self, fd: RawFd, token: u64) -> io::Result<()> {
        let op = opcode::PollAdd::new(types::Fd(fd), libc::POLLOUT as u32)
            .build()
            .user_data(token);
        self.push(&op)
    }

    fn push(&mut self, op: &squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: the operation's buffers are the caller's promise (`recv`) or none.
            if unsafe { self.ring.submission().push(op) }.is_ok() {
                if op.get_user_data() != CANCEL {
                    self.in_flight += 1;
                }
                return Ok(());
            }
            // the submission queue is full: hand it to the kernel first
            self.ring.submit()?;
        }
    }

    /// Submits what is queued and waits up to `timeout` (zero: not at all) for completions,
    /// `into` cleared first. A timeout or a signal's interruption is no completion.
    pub fn wait(&mut self, timeout: Duration, into: &mut Vec<Completion>) -> io::Result<()> {
        into.clear();
        into.append(&mut self.early);
        let entered = if timeout.is_zero() || !into.is_empty() {
            // GETEVENTS without a wait: runs the deferred completions
            let queued = self.ring.submission().len() as u32;
            let flags = EnterFlags::GETEVENTS.bits();
            // SAFETY: no argument (a null pointer and size 0).
            unsafe {
                self.ring
                    .submitter()
                    .enter::<libc::sigset_t>(queued, 0, flags, None)
                    .map(drop)
            }
        } else {
            let ts = types::Timespec::from(timeout);
            let args = types::SubmitArgs::new().timespec(&ts);
            self.ring.submitter().submit_with_args(1, &args).map(drop)
        };
        match entered {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ETIME) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // completions wait to be taken: taken below
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
            Err(e) => return Err(e),
        }
        self.take(into);
        Ok(())
    }

    fn take(&mut self, into: &mut Vec<Completion>) {
        for cqe in self.ring.completion() {
            if cqe.user_data() == CANCEL {
                continue;
            }
            self.in_flight -= 1;
            into.push(Completion {
                token: cqe.user_data(),
                res: cqe.result(),
            });
        }
    }

    /// Cancels the operation `token` and waits for its completion, which it returns: the read
    /// may have finished first (its bytes are then in the buffer) or it ends `-ECANCELED`.
    /// Completions of other operations that come meanwhile are kept for the next `wait`.
    pub fn cancel(&mut self, token: u64) -> io::Result<Completion> {
        let mut got = Vec::new();
        self.take(&mut got);
        self.early.append(&mut got);
        if let Some(at) = self.early.iter().position(|c| c.token == token) {
            return Ok(self.early.remove(at));
        }
        self.push(&opcode::AsyncCancel::new(token).build().user_data(CANCEL))?;
        loop {
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
                Err(e) => return Err(e),
            }
            self.take(&mut got);
            if let Some(at) = got.iter().position(|c| c.token == token) {
                let c = got.remove(at);
                self.early.append(&mut got);
                return Ok(c);
            }
            self.early.append(&mut got);
        }
    }
}

impl Drop for Uring {
    /// Nothing the kernel may still write into outlives the ring's owner: what is in flight is
    /// cancelled and waited for (the loop cancels its reads before its connections go; this is
    /// for an unwinding thread).
    fn drop(&mut self) {
        let mut got = Vec::new();
        for _ in 0..64 {
            if self.in_flight == 0 {
                return;
            }
            let all = opcode::AsyncCancel2::new(types::CancelBuilder::any())
                .build()
                .user_data(CANCEL);
            if self.push(&all).is_err() {
                return;
            }
            match self.ring.submit_and_wait(1) {
                Err(e) if e.kind() != io::ErrorKind::Interrupted => return,
                _ => {}
            }
            self.take(&mut got);
            got.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn a_read_completes_with_the_bytes_and_a_cancelled_one_ends_cancelled() {
        if !Uring::available() {
            // CI's kernel has it: this test must not pass there without running
            assert!(
                std::env::var_os("CI").is_none(),
                "no io_uring with deferred task work"
            );
            return;
        }
        let mut ring = Uring::new(8).unwrap();
        let (mut a, b) = UnixStream::pair().unwrap();
        let mut buf = [0u8; 16];
        // SAFETY: buf outlives the read, which completes below before buf is looked at.
        unsafe { ring.recv(b.as_raw_fd(), buf.as_mut_ptr(), buf.len(), 3) }.unwrap();
        let mut got = Vec::new();
        ring.wait(Duration::ZERO, &mut got).unwrap();
        assert!(got.is_empty());
        a.write_all(b"hello").unwrap();
        ring.wait(Duration::from_secs(2), &mut got).unwrap();
        assert_eq!(got, [Completion { token: 3, res: 5 }]);
        assert_eq!(&buf[..5], b"hello");
        assert_eq!(ring.in_flight(), 0);
        // a read that nothing answers: cancelled, and its completion is the cancellation
        let mut other = [0u8; 4];
        // SAFETY: as above; both complete before the buffers are used or dropped.
        unsafe { ring.recv(b.as_raw_fd(), buf.as_mut_ptr(), buf.len(), 4) }.unwrap();
        let (mut c, d) = UnixStream::pair().unwrap();
        // SAFETY: as above.
        unsafe { ring.recv(d.as_raw_fd(), other.as_mut_ptr(), other.len(), 5) }.unwrap();
        ring.wait(Duration::ZERO, &mut got).unwrap();
        c.write_all(b"x").unwrap();
        let cancelled = ring.cancel(4).unwrap();
        assert_eq!(
            cancelled,
            Completion {
                token: 4,
                res: -libc::ECANCELED
            }
        );
        // the other read's completion comes at a later wait (kept if it came meanwhile)
        let mut all = Vec::new();
        for _ in 0..20 {
            ring.wait(Duration::from_millis(100), &mut got).unwrap();
            all.extend_from_slice(&got);
            if !all.is_empty() {
                break;
            }
        }
        assert_eq!(all, [Completion { token: 5, res: 1 }]);
        assert_eq!(ring.in_flight(), 0);
        // the peer's close: a read of 0
        // SAFETY: as above.
        unsafe { ring.recv(b.as_raw_fd(), buf.as_mut_ptr(), buf.len(), 6) }.unwrap();
        drop(a);
        ring.wait(Duration::from_secs(2), &mut got).unwrap();
        assert_eq!(got, [Completion { token: 6, res: 0 }]);
        // a socket that takes writes: its poll completes with POLLOUT
        ring.writable(d.as_raw_fd(), 7).unwrap();
        ring.wait(Duration::from_secs(2), &mut got).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].token, 7);
        assert!(got[0].res & libc::POLLOUT as i32 != 0);
    }
}
