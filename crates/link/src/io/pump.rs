//! The emulator's thread: it reads packets from both TUN devices, asks the model when each is
//! released (or that it is dropped), holds them until then and writes them to the other side,
//! measuring how late each one left against the time the model gave it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::device::Tun;
use super::{DirReport, Figures};
use crate::model::{Link, Path, Verdict};

/// Buffer per packet: the devices' MTU is 1500, so a read never fills it.
const BUF: usize = 2048;
/// Packets held per direction before the emulator itself drops (a bound on its memory:
/// 100,000 × 2 KiB = 200 MiB at most per direction).
const HOLD_LIMIT: usize = 100_000;
/// The least and the most the thread wakes before a release (it waits the rest awake, looking
/// at the devices without sleeping): a timer's wake-up comes late, by a few µs on a busy core
/// and by up to milliseconds on an idle virtual machine, so it learns by how much
/// ([`Lateness`]). The CPU it spends awake is in its account.
const EARLY_MIN: u64 = 30_000;
const EARLY_MAX: u64 = 10_000_000;
/// The short sleeps the thread takes once a release is near (ns).
const DOZE: u64 = 20_000;
/// Timed wake-ups remembered: the thread wakes as early as the latest of them was late.
const LATENESS_KEPT: usize = 32;
/// Packets read from one device per pass, so that due packets are not kept waiting behind a
/// long burst of arrivals.
const READ_BATCH: usize = 64;
/// Asked to stop, the path stays until it has been quiet this long (ns): nothing held, nothing
/// read or written. The closes of the run's last connections (a FIN, the answer's FIN, the
/// last ACK) cross it, so that no socket on the host is left sending its FIN again into the
/// next link that gets the same addresses.
const QUIET: u64 = 50_000_000;
/// ... but no longer than this after the stop (ns): what is still held then is `held_at_end`.
const DRAIN_LIMIT: u64 = 2_000_000_000;

/// A packet waiting for its release time; ordered by (release, arrival order).
struct Held {
    at: u64,
    seq: u64,
    arrived: u64,
    len: usize,
    buf: Vec<u8>,
}

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Held {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// How late the last timed wake-ups came (ns), and so how early to wake.
struct Lateness {
    recent: [u64; LATENESS_KEPT],
    next: usize,
}

impl Lateness {
    fn new() -> Lateness {
        Lateness {
            recent: [EARLY_MIN; LATENESS_KEPT],
            next: 0,
        }
    }

    fn record(&mut self, late: u64) {
        self.recent[self.next] = late;
        self.next = (self.next + 1) % LATENESS_KEPT;
    }

    /// A quarter more than the latest recent wake-up was late, within the bounds.
    fn early(&self) -> u64 {
        let worst = self.recent.iter().copied().max().unwrap_or(EARLY_MIN);
        worst.saturating_add(worst / 4).clamp(EARLY_MIN, EARLY_MAX)
    }
}

/// One direction: what is held, and what was measured.
struct Direction {
    held: BinaryHeap<Reverse<Held>>,
    seq: u64,
    released: u64,
    released_bytes: u64,
    /// when the first and the last packet were written (ns on the pump's clock)
    first_release: Option<u64>,
    last_release: u64,
    overflow: u64,
    non_ipv4: u64,
    write_errors: u64,
    /// how late each packet left, against the release time the model gave it (ns)
    error: Histogram<u64>,
    /// the delay each packet had, from its read to its write (ns)
    applied: Histogram<u64>,
}

impl Direction {
    fn new() -> Direction {
        Direction {
            held: BinaryHeap::new(),
            seq: 0,
            released: 0,
            released_bytes: 0,
            first_release: None,
            last_release: 0,
            overflow: 0,
            non_ipv4: 0,
            write_errors: 0,
            // 3 significant digits, growing as needed: bounded by the values, not the count
            error: Histogram::new(3).expect("3 significant digits is a valid histogram"),
            applied: Histogram::new(3).expect("3 significant digits is a valid histogram"),
        }
    }

    fn next_at(&self) -> Option<u64> {
        self.held.peek().map(|Reverse(h)| h.at)
    }

    fn report(&self, path: &Path) -> DirReport {
        let q = |h: &Histogram<u64>, p: f64| {
            if h.is_empty() {
                0
            } else {
                h.value_at_quantile(p)
            }
        };
        DirReport {
            counts: *path.counts(),
            released: self.released,
            released_bytes: self.released_bytes,
            release_span_ns: self
                .first_release
                .map_or(0, |first| self.last_release.saturating_sub(first)),
            held_at_end: self.held.len() as u64,
            overflow: self.overflow,
            non_ipv4: self.non_ipv4,
            write_errors: self.write_errors,
            error_p50_ns: q(&self.error, 0.5),
            error_p99_ns: q(&self.error, 0.99),
            error_max_ns: self.error.max(),
            applied_p50_ns: q(&self.applied, 0.5),
            applied_p99_ns: q(&self.applied, 0.99),
        }
    }
}

/// The two devices, the model and the measurements.
pub(super) struct Pump {
    /// the device inside the namespace: packets the client sends come out of it
    inner: Tun,
    /// the device on the host: packets the server sends come out of it
    outer: Tun,
    stop: OwnedFd,
    link: Link,
    up: Direction,
    down: Direction,
    pool: Vec<Vec<u8>>,
    epoch: Instant,
    /// wait for releases awake (`spin` in the spec)
    spin: bool,
}

impl Pump {
    pub(super) fn new(inner: Tun, outer: Tun, stop: OwnedFd, link: Link, spin: bool) -> Pump {
        Pump {
            spin,
            inner,
            outer,
            stop,
            link,
            up: Direction::new(),
            down: Direction::new(),
            pool: Vec::new(),
            epoch: Instant::now(),
        }
    }

    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// Moves packets until the stop descriptor is written and the path has drained (quiet for
    /// [`QUIET`], at most [`DRAIN_LIMIT`]); returns what was measured.
    pub(super) fn run(mut self) -> io::Result<Figures> {
        let started = Instant::now();
        let mut fds = [
            poll_fd(self.inner.fd()),
            poll_fd(self.outer.fd()),
            poll_fd(self.stop.as_raw_fd()),
        ];
        let mut lateness = Lateness::new();
        // once stopped: (when the drain must end, when the path last carried a packet)
        let mut draining: Option<(u64, u64)> = None;
        loop {
            let released = self.release_due();
            let next = [self.up.next_at(), self.down.next_at()]
                .into_iter()
                .flatten()
                .min();
            let now = self.now();
            let mut drain_wait = None;
            if let Some((limit, active)) = &mut draining {
                if released {
                    *active = now;
                }
                let quiet_at = *active + QUIET;
                if now >= *limit || (next.is_none() && now >= quiet_at) {
                    break;
                }
                // held packets wake it anyway; the limit cuts their wait short
                let by = if next.is_none() { quiet_at } else { *limit };
                drain_wait = Some(by.min(*limit).saturating_sub(now));
            }
            let (sleep, long) = match next.map(|at| at.saturating_sub(now)) {
                None => (None, false),
                // spin: while packets are held, look at the devices without sleeping
                Some(_) if self.spin => (Some(0), false),
                // far: sleep until a little before, as early as wake-ups have been late
                Some(left) if left > lateness.early() => (Some(left - lateness.early()), true),
                // near: doze in short sleeps (a short sleep's wake-up comes soon, and a
                // real-time thread that never slept would be throttled), the last µs awake
                Some(left) if left > DOZE => (Some(DOZE), false),
                Some(_) => (Some(0), false),
            };
            // draining: wake when the quiet time or the limit is up
            let (sleep, long) = match (sleep, drain_wait) {
                (Some(s), Some(d)) if d < s => (Some(d), false),
                (None, Some(d)) => (Some(d), false),
                (s, _) => (s, long),
            };
            for f in &mut fds {
                f.revents = 0;
            }
            wait(&mut fds, sleep.map(Duration::from_nanos))?;
            if long && fds.iter().all(|f| f.revents == 0) {
                // a timed wake-up: how late it came
                let ns = sleep.unwrap_or(0);
                lateness.record(self.now().saturating_sub(now + ns));
            }
            if fds[2].revents != 0 && draining.is_none() {
                let now = self.now();
                draining = Some((now + DRAIN_LIMIT, now));
                // a negative descriptor is one poll leaves out
                fds[2].fd = -1;
            }
            let mut read = false;
            if fds[0].revents != 0 {
                read |= self.read_from(true)?;
            }
            if fds[1].revents != 0 {
                read |= self.read_from(false)?;
            }
            if let (true, Some((_, active))) = (read, &mut draining) {
                *active = self.now();
            }
        }
        let (user, sys) = thread_cpu();
        Ok(Figures {
            up: self.up.report(&self.link.up),
            down: self.down.report(&self.link.down),
            cpu_user: user,
            cpu_sys: sys,
            wall: started.elapsed(),
        })
    }

    /// Reads up to a batch of packets from one device: `up` = the client's side. Whether it
    /// read any.
    fn read_from(&mut self, up: bool) -> io::Result<bool> {
        for i in 0..READ_BATCH {
            let mut buf = self.pool.pop().unwrap_or_else(|| vec![0; BUF]);
            let tun = if up { &self.inner } else { &self.outer };
            let Some(len) = tun.recv(&mut buf)? else {
                self.pool.push(buf);
                return Ok(i > 0);
            };
            let now = self.now();
            let (dir, path) = if up {
                (&mut self.up, &mut self.link.up)
            } else {
                (&mut self.down, &mut self.link.down)
            };
            if len == 0 || buf[0] >> 4 != 4 {
                dir.non_ipv4 += 1;
                self.pool.push(buf);
                continue;
            }
            match path.offer(now, len) {
                Verdict::Release { at } if dir.held.len() < HOLD_LIMIT => {
                    dir.seq += 1;
                    let seq = dir.seq;
                    dir.held.push(Reverse(Held {
                        at,
                        seq,
                        arrived: now,
                        len,
                        buf,
                    }));
                }
                Verdict::Release { .. } => {
                    dir.overflow += 1;
                    self.pool.push(buf);
                }
                Verdict::Drop(_) => self.pool.push(buf),
            }
        }
        Ok(true)
    }

    /// Writes every packet whose release time has come to the device on its far side; whether
    /// it wrote any.
    fn release_due(&mut self) -> bool {
        let mut any = false;
        for up in [true, false] {
            loop {
                let now = self.now();
                let dir = if up { &mut self.up } else { &mut self.down };
                if dir.next_at().is_none_or(|at| at > now) {
                    break;
                }
                let Some(Reverse(h)) = dir.held.pop() else {
                    break;
                };
                let tun = if up { &self.outer } else { &self.inner };
                match tun.send(&h.buf[..h.len]) {
                    Ok(()) => {
                        dir.released += 1;
                        dir.released_bytes += h.len as u64;
                        dir.first_release.get_or_insert(now);
                        dir.last_release = now;
                    }
                    Err(_) => dir.write_errors += 1,
                }
                let _ = dir.error.record(now - h.at);
                let _ = dir.applied.record(now.saturating_sub(h.arrived));
                self.pool.push(h.buf);
                any = true;
            }
        }
        any
    }
}

fn poll_fd(fd: i32) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// Waits for a readable descriptor or the timeout, at nanosecond resolution (ppoll: the
/// thread's timer slack is set to 1 ns, so the kernel does not round the wake-up).
fn wait(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> io::Result<()> {
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: libc::c_long::from(d.subsec_nanos() as i32),
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: fds is a valid array of pollfd of the given length; tsp is null or points to a
    // timespec that outlives the call; no signal mask.
    let n = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            tsp,
            std::ptr::null(),
        )
    };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// The calling thread's CPU time so far: user and system apart.
fn thread_cpu() -> (Duration, Duration) {
    // SAFETY: rusage is plain data; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to an rusage.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let d = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    (d(ru.ru_utime), d(ru.ru_stime))
}
