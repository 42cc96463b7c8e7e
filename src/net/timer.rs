//! A timerfd sleep: the kernel's high-resolution timers, for waits shorter or finer than
//! tokio's timer wheel (which ticks in whole milliseconds).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use tokio::io::unix::AsyncFd;

/// A timerfd: sleeps with the kernel's high-resolution timers (tokio's wheel ticks in whole
/// milliseconds, too coarse for send times microseconds apart).
pub(crate) struct Timer {
    fd: AsyncFd<OwnedFd>,
}

impl Timer {
    pub(crate) fn new() -> io::Result<Timer> {
        // SAFETY: timerfd_create has no pointer arguments; the result is checked below.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a new descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: the AsyncFd owns the OwnedFd, which keeps the descriptor open and unchanged
        // until both are dropped together.
        let fd = unsafe { AsyncFd::register(fd) }?;
        Ok(Timer { fd })
    }

    /// Sleeps `d`; false when the timerfd failed and tokio's timer slept instead.
    pub(crate) async fn sleep(&mut self, d: Duration) -> bool {
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: d.as_secs() as libc::time_t,
                // a zero it_value would disarm the timer
                tv_nsec: d.subsec_nanos().max(1) as libc::c_long,
            },
        };
        let fd = self.fd.get_ref().as_raw_fd();
        // SAFETY: a valid timerfd and a pointer to an itimerspec we own; old value not wanted.
        if unsafe { libc::timerfd_settime(fd, 0, &spec, std::ptr::null_mut()) } != 0 {
            tokio::time::sleep(d).await;
            return false;
        }
        loop {
            let Ok(mut guard) = self.fd.readable().await else {
                tokio::time::sleep(d).await;
                return false;
            };
            let mut expirations = [0u8; 8];
            // SAFETY: reading 8 bytes into an 8-byte buffer from a valid fd.
            let n = unsafe { libc::read(fd, expirations.as_mut_ptr().cast(), 8) };
            if n == 8 {
                return true;
            }
            guard.clear_ready();
        }
    }
}
