//! Open loop (`--rate`): each thread releases its share of a global send schedule to whichever
//! of its clients is free, so latency can be measured from the intended send time.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::config::Stop;
use crate::net::timer::Timer;
use crate::outcome::{Failure, FailureKind};
use crate::stats::{TIMERFD, TOKIO_FALLBACK};

/// Sends closer than this to their intended time are waited for by spinning: a timer wake
/// costs more. Never released early either way.
const SPIN_FREE: Duration = Duration::from_micros(20);

/// A send released this long after its intended time was overdue: the thread was busy
/// elsewhere when its timer came due (the client, not the target, set the pace).
pub(crate) const OVERDUE: Duration = Duration::from_millis(2);

/// One scheduled send.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tick {
    pub intended: Instant,
    pub warm: bool,
}

/// The rate a schedule follows.
#[derive(Debug, Clone)]
pub(crate) enum Profile {
    /// `--rate`
    Constant(f64),
    /// `--stages`: measured tick k is due when the stages' integral reaches k; warmup ticks
    /// come at the rate the first stage starts from
    Staged(std::sync::Arc<crate::config::stages::Stages>),
}

/// Which ticks of the global schedule one thread releases: tick g (g = 0, 1, 2, ...) is due at
/// `t0 + g / rate` (constant rate); thread `index` of `stride` threads owns g = index,
/// index + stride, ...
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    pub t0: Instant,
    pub profile: Profile,
    pub index: u64,
    pub stride: u64,
    /// warmup ticks (total mode) or the warmup's end (duration mode) come first
    pub warmup: Duration,
    pub stop: Stop,
}

impl Schedule {
    fn warmup_ticks(&self, rate: f64) -> u64 {
        (self.warmup.as_secs_f64() * rate).ceil() as u64
    }

    /// The intended time and warmup flag of global tick `g`, or None once the schedule is over.
    fn tick(&self, g: u64) -> Option<Tick> {
        let rate = match &self.profile {
            Profile::Constant(rate) => *rate,
            Profile::Staged(st) => {
                let start = st.start_level();
                let w = if start > 0.0 {
                    self.warmup_ticks(start)
                } else {
                    0
                };
                if g < w {
                    return Some(Tick {
                        intended: self.t0 + Duration::from_secs_f64(g as f64 / start),
                        warm: true,
                    });
                }
                let t = st.time_of_count((g - w) as f64)?;
                return Some(Tick {
                    intended: self.t0 + self.warmup + Duration::from_secs_f64(t),
                    warm: false,
                });
            }
        };
        let intended = self.t0 + Duration::from_secs_f64(g as f64 / rate);
        let warm_end = self.t0 + self.warmup;
        match self.stop {
            Stop::Total(n) => {
                let w = self.warmup_ticks(rate);
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
    /// the timer the schedule ran on, once it started (see `timer`)
    timer: Cell<Option<&'static str>>,
}

/// What a client gets from `Pacer::next`.
pub(crate) enum Take {
    Send(Tick),
    /// the tick waited longer than the request timeout: counted, not sent
    Expired(Tick, Failure),
}

impl Pacer {
    /// Releases this thread's ticks on time until the schedule ends or `stop()` says so; counts
    /// measured ticks released while every client was busy (`late`: the in-flight cap was
    /// hit) and those it released `OVERDUE` or more after their time (`overdue`).
    pub async fn dispatch(
        &self,
        s: Schedule,
        stop: impl Fn() -> bool,
        late: impl Fn(),
        overdue: impl Fn(),
    ) {
        let mut timer = Timer::new().ok();
        self.timer.set(Some(if timer.is_some() {
            TIMERFD
        } else {
            TOKIO_FALLBACK
        }));
        let mut g = s.index;
        while let Some(tick) = s.tick(g) {
            if stop() {
                break;
            }
            let wait = tick.intended.saturating_duration_since(Instant::now());
            if wait > SPIN_FREE {
                match &mut timer {
                    Some(t) => {
                        if !t.sleep(wait).await {
                            self.timer.set(Some(TOKIO_FALLBACK));
                        }
                    }
                    None => tokio::time::sleep_until(tick.intended.into()).await,
                }
            }
            // A timer never fires early, but a short wait was not slept, and tokio's wheel
            // rounds: never release before the intended time.
            let mut now = Instant::now();
            while now < tick.intended {
                std::hint::spin_loop();
                now = Instant::now();
            }
            if !tick.warm && now - tick.intended >= OVERDUE {
                overdue();
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
            // Let the clients take it before the next wait (a spin would not yield).
            tokio::task::yield_now().await;
        }
        self.closed.set(true);
        self.released.notify_waiters();
    }

    /// The timer the schedule ran on: `TIMERFD`, or `TOKIO_FALLBACK` when a timerfd could not be
    /// created or armed (then sends are up to a millisecond late); None before it started.
    pub fn timer(&self) -> Option<&'static str> {
        self.timer.get()
    }

    /// The next tick for a free client; None when the schedule is over and nothing is queued.
    pub async fn next(&self, timeout: Duration) -> Option<Take> {
        loop {
            let tick = self.queue.borrow_mut().pop_front();
            if let Some(t) = tick {
                let lag = t.intended.elapsed();
                if lag > timeout {
                    let f = Failure::with(
                        FailureKind::Late,
                        format_args!(
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sched(stop: Stop, warmup_ms: u64, index: u64, stride: u64) -> Schedule {
        Schedule {
            t0: Instant::now(),
            profile: Profile::Constant(1000.0),
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
    fn staged_ticks_follow_the_ramp_after_warmup_at_its_start_rate() {
        let st =
            crate::config::stages::Stages::parse("--stages", "0s:100,1s:100,2s:300", 1e7, false)
                .unwrap();
        let s = Schedule {
            t0: Instant::now(),
            profile: Profile::Staged(std::sync::Arc::new(st)),
            index: 0,
            stride: 1,
            warmup: Duration::from_millis(500),
            stop: Stop::Duration(Duration::from_secs(3)),
        };
        // 50 warmup ticks at 100/s, then 100 + 400 measured ones
        let mut per_second = [0u32; 3];
        let (mut warm, mut g) = (0, 0);
        while let Some(t) = s.tick(g) {
            if t.warm {
                warm += 1;
            } else {
                let at = (t.intended - s.t0 - s.warmup).as_secs_f64();
                per_second[at as usize] += 1;
            }
            g += 1;
        }
        assert_eq!(warm, 50);
        // the ramp 100 -> 300 over 2 s: 150 in its first second, 250 in its second
        assert_eq!(per_second, [100, 150, 250]);
    }

    #[test]
    fn ticks_are_released_on_the_timerfd_and_never_early() {
        crate::client::block_on(async {
            let pacer = std::rc::Rc::new(Pacer::default());
            assert_eq!(pacer.timer(), None);
            // 2000 ticks at 100,000/s: every wait is below the spin threshold
            let s = Schedule {
                t0: Instant::now() + Duration::from_millis(5),
                profile: Profile::Constant(100_000.0),
                index: 0,
                stride: 1,
                warmup: Duration::ZERO,
                stop: Stop::Total(2000),
            };
            let p = pacer.clone();
            let dispatch =
                tokio::task::spawn_local(
                    async move { p.dispatch(s, || false, || {}, || {}).await },
                );
            let mut early = Vec::new();
            let mut taken = 0;
            while let Some(take) = pacer.next(Duration::from_secs(10)).await {
                let Take::Send(t) = take else {
                    panic!("a tick expired")
                };
                let now = Instant::now();
                if now < t.intended {
                    early.push(t.intended - now);
                }
                taken += 1;
            }
            dispatch.await.unwrap();
            assert_eq!(taken, 2000);
            assert!(
                early.is_empty(),
                "{} ticks released early: {early:?}",
                early.len()
            );
            // the kernel's high-resolution timer, not tokio's millisecond wheel
            assert_eq!(pacer.timer(), Some(TIMERFD));
        })
        .unwrap();
    }

    #[test]
    fn timer_reports_success() {
        crate::client::block_on(async {
            let mut t = Timer::new().expect("a timerfd");
            for _ in 0..5 {
                assert!(t.sleep(Duration::from_micros(250)).await);
            }
        })
        .unwrap();
    }
}
