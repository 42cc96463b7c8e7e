//! Open loop (`--rate`): each thread releases its share of a global send schedule to whichever
//! of its clients is free, so latency can be measured from the intended send time.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;
use tokio::sync::Notify;

use crate::config::Stop;
use crate::stats::Failure;

/// Sends closer than this to their intended time go without sleeping: a timer wake costs more.
const SPIN_FREE: Duration = Duration::from_micros(20);

/// One scheduled send.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tick {
    pub intended: Instant,
    pub warm: bool,
}

/// Which ticks of the global schedule one thread releases: tick g (g = 0, 1, 2, ...) is due at
/// `t0 + g / rate`; thread `index` of `stride` threads owns g = index, index + stride, ...
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schedule {
    pub t0: Instant,
    pub rate: f64,
    pub index: u64,
    pub stride: u64,
    /// warmup ticks (total mode) or the warmup's end (duration mode) come first
    pub warmup: Duration,
    pub stop: Stop,
}

impl Schedule {
    fn warmup_ticks(&self) -> u64 {
        (self.warmup.as_secs_f64() * self.rate).ceil() as u64
    }

    /// The intended time and warmup flag of global tick `g`, or None once the schedule is over.
    fn tick(&self, g: u64) -> Option<Tick> {
        let intended = self.t0 + Duration::from_secs_f64(g as f64 / self.rate);
        let warm_end = self.t0 + self.warmup;
        match self.stop {
            Stop::Total(n) => {
                let w = self.warmup_ticks();
                (g < w + n).then_some(Tick {
                    intended,
                    warm: g < w,
                })
            }
            Stop::Duration(d) => (intended < warm_end + d).then_some(Tick {
                intended,
                warm: intended < warm_end,
            }),
        }
    }
}

/// The ticks released but not yet taken, and the clients waiting for one.
#[derive(Default)]
pub(crate) struct Pacer {
    queue: RefCell<VecDeque<Tick>>,
    /// clients waiting in `next`
    idle: Cell<usize>,
    closed: Cell<bool>,
    released: Notify,
}

/// What a client gets from `Pacer::next`.
pub(crate) enum Take {
    Send(Tick),
    /// the tick waited longer than the request timeout: counted, not sent
    Expired(Tick, Failure),
}

impl Pacer {
    /// Releases this thread's ticks on time until the schedule ends or `stop()` says so; counts
    /// measured ticks released while every client was busy (the in-flight cap was hit).
    pub async fn dispatch(&self, s: Schedule, stop: impl Fn() -> bool, late: impl Fn()) {
        let mut timer = Timer::new().ok();
        let mut g = s.index;
        while let Some(tick) = s.tick(g) {
            if stop() {
                break;
            }
            let wait = tick.intended.saturating_duration_since(Instant::now());
            if wait > SPIN_FREE {
                match &mut timer {
                    Some(t) => t.sleep(wait).await,
                    None => tokio::time::sleep_until(tick.intended.into()).await,
                }
            }
            let waiting = {
                let mut q = self.queue.borrow_mut();
                q.push_back(tick);
                q.len()
            };
            if waiting > self.idle.get() && !tick.warm {
                late();
            }
            self.released.notify_one();
            g += s.stride;
        }
        self.closed.set(true);
        self.released.notify_waiters();
    }

    /// The next tick for a free client; None when the schedule is over and nothing is queued.
    pub async fn next(&self, timeout: Duration) -> Option<Take> {
        loop {
            let tick = self.queue.borrow_mut().pop_front();
            if let Some(t) = tick {
                let lag = t.intended.elapsed();
                if lag > timeout {
                    let f = Failure::with(
                        "late",
                        format!(
                            "not sent within --timeout ({timeout:?}) of its intended time: every client was busy"
                        ),
                    );
                    return Some(Take::Expired(t, f));
                }
                return Some(Take::Send(t));
            }
            if self.closed.get() {
                return None;
            }
            self.idle.set(self.idle.get() + 1);
            self.released.notified().await;
            self.idle.set(self.idle.get() - 1);
        }
    }
}

/// A timerfd: sleeps with the kernel's high-resolution timers (tokio's wheel ticks in whole
/// milliseconds, too coarse for send times microseconds apart).
struct Timer {
    fd: AsyncFd<OwnedFd>,
}

impl Timer {
    fn new() -> io::Result<Timer> {
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

    async fn sleep(&mut self, d: Duration) {
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
            return;
        }
        loop {
            let Ok(mut guard) = self.fd.readable().await else {
                tokio::time::sleep(d).await;
                return;
            };
            let mut expirations = [0u8; 8];
            // SAFETY: reading 8 bytes into an 8-byte buffer from a valid fd.
            let n = unsafe { libc::read(fd, expirations.as_mut_ptr().cast(), 8) };
            if n == 8 {
                return;
            }
            guard.clear_ready();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sched(stop: Stop, warmup_ms: u64, index: u64, stride: u64) -> Schedule {
        Schedule {
            t0: Instant::now(),
            rate: 1000.0,
            index,
            stride,
            warmup: Duration::from_millis(warmup_ms),
            stop,
        }
    }

    #[test]
    fn total_mode_releases_exactly_n_measured_ticks_over_all_threads() {
        let mut measured = 0;
        let mut warm = 0;
        for index in 0..3 {
            let s = sched(Stop::Total(1000), 100, index, 3);
            let mut g = index;
            while let Some(t) = s.tick(g) {
                if t.warm {
                    warm += 1;
                } else {
                    measured += 1;
                }
                g += 3;
            }
        }
        assert_eq!((measured, warm), (1000, 100));
    }

    #[test]
    fn duration_mode_spaces_ticks_by_the_rate() {
        let s = sched(Stop::Duration(Duration::from_secs(1)), 0, 0, 1);
        let a = s.tick(10).unwrap().intended;
        let b = s.tick(11).unwrap().intended;
        assert_eq!(b - a, Duration::from_millis(1));
        assert!(s.tick(999).is_some());
        assert!(s.tick(1000).is_none());
    }

    #[test]
    fn timer_sleeps_with_sub_millisecond_precision() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut t = Timer::new().unwrap();
            let start = Instant::now();
            for _ in 0..20 {
                t.sleep(Duration::from_micros(250)).await;
            }
            // 20 x 250 µs: never shorter; tokio's 1 ms wheel would take >= 20 ms
            assert!(start.elapsed() >= Duration::from_millis(5));
        });
    }
}
