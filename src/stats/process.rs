//! CPU and memory of processes and threads: `getrusage` per thread, another process's CPU
//! clock (`--server-pid`), and this process's resident set.

use std::time::Duration;

use serde::Serialize;

/// Why `--server-pid`'s CPU clock cannot be read: the line to print, naming the pid.
#[derive(Debug, thiserror::Error)]
pub enum ClockError {
    #[error("--server-pid {0}: not a pid")]
    NotAPid(u32),
    #[error("--server-pid {pid}: {source}")]
    Open { pid: u32, source: std::io::Error },
    #[error("--server-pid {pid}: cannot read its CPU clock ({source}): has it exited?")]
    Read { pid: u32, source: std::io::Error },
}

/// The CPU-time clock of another process: every thread's user + system time, those that have
/// exited included, in nanoseconds (`clock_getcpuclockid` + `clock_gettime`).
#[derive(Debug, Clone, Copy)]
pub struct ProcessClock {
    pid: u32,
    clock: libc::clockid_t,
}

impl ProcessClock {
    /// The clock of `pid`, read once to prove it can be.
    pub fn open(pid: u32) -> Result<ProcessClock, ClockError> {
        let mut clock: libc::clockid_t = 0;
        let raw = libc::pid_t::try_from(pid).map_err(|_| ClockError::NotAPid(pid))?;
        // SAFETY: a valid pointer to a clockid_t we own; the function only writes it.
        let rc = unsafe { libc::clock_getcpuclockid(raw, &mut clock) };
        if rc != 0 {
            return Err(ClockError::Open {
                pid,
                source: std::io::Error::from_raw_os_error(rc),
            });
        }
        let c = ProcessClock { pid, clock };
        c.read()?;
        Ok(c)
    }

    /// CPU time the process has used so far; an error once it is gone.
    pub fn read(&self) -> Result<Duration, ClockError> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a clock id from clock_getcpuclockid and a valid pointer to a timespec we own.
        if unsafe { libc::clock_gettime(self.clock, &mut ts) } != 0 {
            return Err(ClockError::Read {
                pid: self.pid,
                source: std::io::Error::last_os_error(),
            });
        }
        Ok(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }
}

/// User and system CPU time of this process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CpuTimes {
    pub user_us: u64,
    pub sys_us: u64,
}

impl CpuTimes {
    /// getrusage(RUSAGE_THREAD): the calling thread only.
    pub fn thread_now() -> CpuTimes {
        // SAFETY: rusage is plain old data; getrusage fills it and cannot fail for RUSAGE_THREAD.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: a valid pointer to a rusage we own.
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
        let us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
        CpuTimes {
            user_us: us(ru.ru_utime),
            sys_us: us(ru.ru_stime),
        }
    }

    pub fn since(self, earlier: CpuTimes) -> CpuTimes {
        CpuTimes {
            user_us: self.user_us.saturating_sub(earlier.user_us),
            sys_us: self.sys_us.saturating_sub(earlier.sys_us),
        }
    }

    pub fn plus(self, other: CpuTimes) -> CpuTimes {
        CpuTimes {
            user_us: self.user_us + other.user_us,
            sys_us: self.sys_us + other.sys_us,
        }
    }

    pub fn total_us(self) -> u64 {
        self.user_us + self.sys_us
    }
}

/// Reads this process's resident set from an open `/proc/self/statm`: one `pread` per sample,
/// cheap enough to sample during a run.
#[derive(Debug)]
pub struct RssSampler {
    statm: std::fs::File,
    page_kib: u64,
}

impl RssSampler {
    pub fn open() -> Option<RssSampler> {
        let statm = std::fs::File::open("/proc/self/statm").ok()?;
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let page_kib = u64::try_from(page).ok().filter(|p| *p >= 1024)? / 1024;
        Some(RssSampler { statm, page_kib })
    }

    /// Resident kiB now (statm's second field: resident pages).
    pub fn rss_kib(&self) -> Option<u64> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 128];
        let n = self.statm.read_at(&mut buf, 0).ok()?;
        let text = std::str::from_utf8(&buf[..n]).ok()?;
        let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
        Some(pages * self.page_kib)
    }
}

/// This process's resident memory now and at its peak (kiB, from /proc/self/status).
#[derive(Debug, Clone, Copy)]
pub struct Rss {
    pub rss_kib: u64,
    pub peak_kib: u64,
}

pub fn memory() -> Option<Rss> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()
    };
    Some(Rss {
        rss_kib: field("VmRSS:")?,
        peak_kib: field("VmHWM:")?,
    })
}

/// This thread's CPU time (CLOCK_THREAD_CPUTIME_ID, ns resolution).
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid pointer to a timespec we own; the clock exists on every Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CPU time of this process from the kernel's own clock for it.
    fn own_process_cpu() -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid pointer to a timespec we own.
        assert_eq!(
            unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) },
            0
        );
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    /// Spins until this thread has used `d` of CPU (its own clock, whatever else runs).
    fn burn(d: Duration) {
        let start = thread_cpu();
        let mut x = 0u64;
        while thread_cpu() - start < d {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(x > 0);
    }

    #[test]
    fn process_clock_agrees_with_the_kernel_and_keeps_exited_threads() {
        let clock = ProcessClock::open(std::process::id()).expect("our own clock");
        // The same clock read two ways: our pid's clock lies between two readings of
        // CLOCK_PROCESS_CPUTIME_ID (other test threads only move all three forward).
        let bracket = || {
            let before = own_process_cpu();
            let v = clock.read().unwrap();
            let after = own_process_cpu();
            assert!(
                before <= v && v <= after,
                "{before:?} <= {v:?} <= {after:?}"
            );
            v
        };
        let a = bracket();
        // a thread that burns 60 ms and exits: its time stays in the process clock
        std::thread::spawn(|| burn(Duration::from_millis(60)))
            .join()
            .unwrap();
        let b = bracket();
        assert!(
            b - a >= Duration::from_millis(60),
            "the exited thread's 60 ms are missing: {:?}",
            b - a
        );
    }

    #[test]
    fn process_clock_of_another_process_and_after_it_exits() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .expect("sh");
        let clock = ProcessClock::open(child.id()).expect("a child's clock");
        // the busy child's clock keeps growing (however loaded the machine is)
        let t = std::time::Instant::now();
        let mut used = clock.read().unwrap();
        while used < Duration::from_millis(50) && t.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(10));
            used = clock.read().unwrap();
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(used >= Duration::from_millis(50), "{used:?}");
        let gone = clock.read().unwrap_err().to_string();
        assert!(gone.contains("exited"), "{gone}");
        assert!(ProcessClock::open(u32::MAX).is_err());
        assert!(ProcessClock::open(child.id()).is_err());
    }

    #[test]
    fn rss_and_peak_follow_an_allocation() {
        const SIZE: usize = 64 << 20;
        let sampler = RssSampler::open().expect("/proc/self/statm");
        let before = sampler.rss_kib().unwrap();
        let status_before = memory().expect("/proc/self/status");
        // SAFETY: an anonymous private mapping; no file, no fixed address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                SIZE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        // SAFETY: the mapping is SIZE bytes, writable, and ours alone.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 1, SIZE) };
        let touched = sampler.rss_kib().unwrap();
        let status_touched = memory().unwrap();
        // SAFETY: the mapping made above, unmapped once.
        assert_eq!(unsafe { libc::munmap(p, SIZE) }, 0);
        let after = sampler.rss_kib().unwrap();
        let status_after = memory().unwrap();
        let mib = |kib: u64| kib / 1024;
        // other test threads allocate too: bounds, not equalities
        assert!(
            mib(touched.saturating_sub(before)) >= 60,
            "statm: {before} -> {touched} kiB"
        );
        assert!(
            mib(status_touched.rss_kib.saturating_sub(status_before.rss_kib)) >= 60,
            "status: {status_before:?} -> {status_touched:?}"
        );
        assert!(
            mib(touched.saturating_sub(after)) >= 60,
            "statm after munmap: {touched} -> {after} kiB"
        );
        // VmHWM keeps the peak after the memory is gone. The kernel folds each thread's RSS
        // changes into the process counters lazily (up to 64 pages per thread), so its peak
        // may trail a reading of VmRSS by a few MiB: bounds again.
        assert!(
            status_after.peak_kib + 4 * 1024 >= status_touched.rss_kib,
            "{status_touched:?} then {status_after:?}"
        );
        assert!(
            status_after.rss_kib + 56 * 1024 <= status_after.peak_kib,
            "{status_after:?}"
        );
    }
}
