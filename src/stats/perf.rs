//! Per-thread syscall, context switch, instruction and cycle counts from `perf_event_open(2)`.
//!
//! Each counter counts the thread that opened it, in counting mode (no sampling, no mmap).
//! Where the kernel refuses a counter (no privilege, no PMU, no tracefs) it comes out as
//! `None`, never 0, and `ThreadCounters::unavailable` says why in one line.
//!
//! The counters are opened as two groups, each read with one `read(2)`: the syscall
//! tracepoint with the context switch counter (software, always scheduled), and instructions
//! with cycles (hardware, pinned). They are not one group because a group is scheduled as a
//! whole: a hardware counter that loses its PMU slot would take the syscall count with it.
//! A group's leader is opened disabled and the whole group enabled with one ioctl once its
//! siblings are in: a sibling added to an already counting group of the running thread stays
//! idle until the thread is next scheduled in (Linux 6.18: a context switch sibling missed
//! the first switch; a tracepoint sibling missed 100 `getppid` calls before it).
//!
//! ## Privilege: `exclude_kernel = 0`, `exclude_hv = 0`
//! These match what `perf stat -e raw_syscalls:sys_enter,context-switches` asks for as root
//! (`perf stat -vv`: neither bit set, only `exclude_guest`). Unprivileged with
//! `perf_event_paranoid` >= 2 the kernel refuses `exclude_kernel = 0` with EACCES, and perf
//! falls back to `exclude_kernel = 1`. We do not: measured on Linux 6.18 (1000 `getppid`,
//! 10 × 1 ms `nanosleep` and 2 counter reads in the window), `exclude_kernel = 0` counted
//! 1012 syscalls and 10 switches; `exclude_kernel = 1` opened fine, also unprivileged, and
//! counted 0 and 0.
//! `raw_syscalls:sys_enter` and the context switch event both fire with kernel registers
//! (`perf_fetch_caller_regs`), so excluding the kernel excludes every event. (The per-syscall
//! `syscalls:sys_enter_*` tracepoints see user registers, but that is one counter per
//! syscall.) A counter that silently counts nothing would be worse than `None`, so a refusal
//! stays a refusal. `exclude_hv` made no difference on this VM; it stays 0 as perf has it.
//!
//! ## What a window contains
//! `raw_syscalls:sys_enter` fires on syscall entry, before the value is copied out, so each
//! `read(2)` of the software group counts itself in the value it returns. Between two
//! `ThreadCounters::read` calls the syscall delta is therefore the syscalls made in between
//! plus 1 (the closing read of the software group) plus 1 more if the hardware group is open
//! (the opening call reads it after the software group). `READ_SYSCALLS` is that bound.
//! Instructions and cycles likewise include the kernel side of the reads at both edges.

use std::fs;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::OnceLock;

use serde::Serialize;

/// `PERF_TYPE_HARDWARE`, `PERF_TYPE_SOFTWARE`, `PERF_TYPE_TRACEPOINT` (enum perf_type_id).
const TYPE_HARDWARE: u32 = 0;
const TYPE_SOFTWARE: u32 = 1;
const TYPE_TRACEPOINT: u32 = 2;
/// `PERF_COUNT_HW_CPU_CYCLES`, `PERF_COUNT_HW_INSTRUCTIONS` (enum perf_hw_id).
const HW_CPU_CYCLES: u64 = 0;
const HW_INSTRUCTIONS: u64 = 1;
/// `PERF_COUNT_SW_CONTEXT_SWITCHES` (enum perf_sw_ids).
const SW_CONTEXT_SWITCHES: u64 = 3;
/// `PERF_FORMAT_GROUP`: a read of the leader returns `{ nr, value[nr] }` for the whole group.
const FORMAT_GROUP: u64 = 1 << 3;
/// `PERF_EVENT_IOC_ENABLE` = `_IO('$', 0)`, and its argument for "the whole group".
const IOC_ENABLE: libc::Ioctl = 0x2400;
const IOC_FLAG_GROUP: libc::c_int = 1;
/// `PERF_FLAG_FD_CLOEXEC`, the last argument of perf_event_open.
const FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// Bits of the attr's flag word, numbered as declared in perf_event.h. GCC packs bitfields
/// from the low bit on little-endian targets and from the high bit on big-endian ones.
const fn flag(bit: u32) -> u64 {
    if cfg!(target_endian = "big") {
        1 << (63 - bit)
    } else {
        1 << bit
    }
}
/// `disabled`: the event does not count until enabled.
const FLAG_DISABLED: u64 = flag(0);
/// `pinned`: the group stays on the PMU or goes into an error state (reads return 0 bytes),
/// so a hardware count is never a silently partial one.
const FLAG_PINNED: u64 = flag(2);
/// `exclude_guest`, as perf stat sets it (only hardware counters on a KVM host care).
const FLAG_EXCLUDE_GUEST: u64 = flag(20);

/// `PERF_ATTR_SIZE_VER5`: the prefix of perf_event_attr declared below. Newer kernels take
/// a shorter attr and treat the missing tail as zero.
const ATTR_SIZE: u32 = 112;

/// Where the syscall tracepoint's id is published: tracefs, or tracefs under debugfs.
const TRACEFS: &str = "/sys/kernel/tracing";
const TRACEPOINT_ID: [&str; 2] = [
    "/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
    "/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
];
const PARANOID: &str = "/proc/sys/kernel/perf_event_paranoid";

/// Most counters in one group (and so values in one group read).
const GROUP_MAX: usize = 2;

/// Syscalls `ThreadCounters::read` adds to a window at most (see the module docs).
pub const READ_SYSCALLS: u64 = 2;

/// The first 112 bytes (`PERF_ATTR_SIZE_VER5`) of `struct perf_event_attr`, as in
/// include/uapi/linux/perf_event.h; unions are named by their first member.
#[repr(C)]
#[derive(Default)]
#[allow(dead_code)] // written here, read only by the kernel
struct PerfEventAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    /// The bitfield from `disabled` to `__reserved_1`.
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved_2: u16,
}

/// What the kernel counted for one thread (or summed over several); `None` = not available.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct KernelCounts {
    pub syscalls: Option<u64>,
    pub context_switches: Option<u64>,
    pub instructions: Option<u64>,
    pub cycles: Option<u64>,
}

impl KernelCounts {
    /// Every counter available and zero: where a `plus` over several threads starts.
    pub const ZERO: KernelCounts = KernelCounts {
        syscalls: Some(0),
        context_switches: Some(0),
        instructions: Some(0),
        cycles: Some(0),
    };

    /// What was counted after `earlier`; a counter missing from either side is missing.
    pub fn since(self, earlier: KernelCounts) -> KernelCounts {
        self.zip(earlier, u64::saturating_sub)
    }

    /// Both added up; a counter missing from either side is missing from the sum.
    pub fn plus(self, other: KernelCounts) -> KernelCounts {
        self.zip(other, u64::saturating_add)
    }

    fn zip(self, other: KernelCounts, f: fn(u64, u64) -> u64) -> KernelCounts {
        let both = |a: Option<u64>, b: Option<u64>| Some(f(a?, b?));
        KernelCounts {
            syscalls: both(self.syscalls, other.syscalls),
            context_switches: both(self.context_switches, other.context_switches),
            instructions: both(self.instructions, other.instructions),
            cycles: both(self.cycles, other.cycles),
        }
    }

    fn set(&mut self, counter: Counter, value: u64) {
        let slot = match counter {
            Counter::Syscalls => &mut self.syscalls,
            Counter::ContextSwitches => &mut self.context_switches,
            Counter::Instructions => &mut self.instructions,
            Counter::Cycles => &mut self.cycles,
        };
        *slot = Some(value);
    }
}

/// One of the counters in `KernelCounts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    Syscalls,
    ContextSwitches,
    Instructions,
    Cycles,
}

impl Counter {
    pub const ALL: [Counter; 4] = [
        Counter::Syscalls,
        Counter::ContextSwitches,
        Counter::Instructions,
        Counter::Cycles,
    ];

    fn what(self) -> &'static str {
        match self {
            Counter::Syscalls => "kernel syscall counts",
            Counter::ContextSwitches => "kernel context switch counts",
            Counter::Instructions => "instruction counts",
            Counter::Cycles => "cycle counts",
        }
    }

    /// (type, config) for perf_event_open, or why there is none.
    fn event(self) -> Result<(u32, u64), &'static TracepointError> {
        match self {
            Counter::Syscalls => syscall_tracepoint().map(|id| (TYPE_TRACEPOINT, id)),
            Counter::ContextSwitches => Ok((TYPE_SOFTWARE, SW_CONTEXT_SWITCHES)),
            Counter::Instructions => Ok((TYPE_HARDWARE, HW_INSTRUCTIONS)),
            Counter::Cycles => Ok((TYPE_HARDWARE, HW_CPU_CYCLES)),
        }
    }
}

/// Counters read together through their leader (the first), with one `read(2)`.
struct Group {
    /// In the order the kernel returns their values: the leader, then siblings as opened.
    members: Vec<(Counter, OwnedFd)>,
}

impl Group {
    /// Opens what it can of `counters` (at most `GROUP_MAX`), noting why the rest failed.
    fn open(
        counters: [Counter; GROUP_MAX],
        pinned: bool,
        missing: &mut [Option<Box<str>>; 4],
    ) -> Option<Group> {
        let mut members: Vec<(Counter, OwnedFd)> = Vec::with_capacity(GROUP_MAX);
        for counter in counters {
            let leader = members.first().map(|(_, fd)| fd.as_fd());
            let opened =
                counter
                    .event()
                    .map_err(ToString::to_string)
                    .and_then(|(type_, config)| {
                        let flags = match leader {
                            None if pinned => FLAG_DISABLED | FLAG_PINNED,
                            None => FLAG_DISABLED,
                            Some(_) => 0,
                        };
                        open_event(type_, config, leader, flags)
                            .map_err(|e| open_failure(&e, type_))
                    });
            match opened {
                Ok(fd) => members.push((counter, fd)),
                Err(why) => missing[counter as usize] = Some(unavailable(counter, &why)),
            }
        }
        let (_, leader) = members.first()?;
        // SAFETY: a perf event descriptor we own; the ioctl takes an int flag, no pointer.
        if unsafe { libc::ioctl(leader.as_raw_fd(), IOC_ENABLE, IOC_FLAG_GROUP) } != 0 {
            let why = format!(
                "ioctl(PERF_EVENT_IOC_ENABLE): {}",
                errno_text(&io::Error::last_os_error())
            );
            for (counter, _) in &members {
                missing[*counter as usize] = Some(unavailable(*counter, &why));
            }
            return None;
        }
        Some(Group { members })
    }

    fn read_into(&self, counts: &mut KernelCounts) {
        let Some((_, leader)) = self.members.first() else {
            return;
        };
        let n = self.members.len();
        let mut buf = [0u64; 1 + GROUP_MAX];
        let want = size_of::<u64>() * (1 + n);
        // SAFETY: `buf` is ours and holds 1 + GROUP_MAX u64s; `want` is at most that many
        // bytes because a group never has more than GROUP_MAX members.
        let got = unsafe { libc::read(leader.as_raw_fd(), buf.as_mut_ptr().cast(), want) };
        // 0 bytes: a pinned group that lost the PMU (its count would be partial).
        if usize::try_from(got) != Ok(want) || buf[0] != n as u64 {
            return;
        }
        for (i, (counter, _)) in self.members.iter().enumerate() {
            counts.set(*counter, buf[1 + i]);
        }
    }
}

/// The calling thread's counters. They count the thread that called `open` wherever they
/// are read, but only reads on that thread add the syscalls the module docs describe.
pub struct ThreadCounters {
    /// Syscalls and context switches; instructions and cycles.
    groups: [Option<Group>; 2],
    /// Why a counter is absent, indexed by `Counter as usize`.
    missing: [Option<Box<str>>; 4],
}

impl ThreadCounters {
    /// Opens every counter the kernel allows; never fails as a whole.
    pub fn open() -> ThreadCounters {
        let mut missing = [None, None, None, None];
        let software = Group::open(
            [Counter::Syscalls, Counter::ContextSwitches],
            false,
            &mut missing,
        );
        let hardware = Group::open([Counter::Instructions, Counter::Cycles], true, &mut missing);
        ThreadCounters {
            groups: [software, hardware],
            missing,
        }
    }

    /// The counts so far: one `read(2)` per open group (two at most), no allocation.
    pub fn read(&self) -> KernelCounts {
        let mut counts = KernelCounts::default();
        for group in self.groups.iter().flatten() {
            group.read_into(&mut counts);
        }
        counts
    }

    /// Why `counter` is not available, as one line for the report, e.g. "kernel syscall
    /// counts not available: perf_event_open: Permission denied (perf_event_paranoid = 3;
    /// run as root or with CAP_PERFMON)"; `None` when it was opened.
    pub fn unavailable(&self, counter: Counter) -> Option<&str> {
        self.missing[counter as usize].as_deref()
    }
}

/// "<what> not available: <why>", the one line `ThreadCounters::unavailable` gives.
fn unavailable(counter: Counter, why: &str) -> Box<str> {
    format!("{} not available: {why}", counter.what()).into()
}

/// One counting-mode counter on the calling thread (pid 0, any CPU), in `leader`'s group.
fn open_event(
    type_: u32,
    config: u64,
    leader: Option<BorrowedFd<'_>>,
    flags: u64,
) -> io::Result<OwnedFd> {
    let mut attr = PerfEventAttr {
        type_,
        size: ATTR_SIZE,
        config,
        read_format: FORMAT_GROUP,
        flags: flags | FLAG_EXCLUDE_GUEST,
        ..PerfEventAttr::default()
    };
    let this_thread: libc::pid_t = 0;
    let any_cpu: libc::c_int = -1;
    let group_fd: libc::c_int = leader.map_or(-1, |fd| fd.as_raw_fd());
    // SAFETY: `attr` is a live, initialised perf_event_attr whose `size` is its own size;
    // the kernel reads it and may write `size` back (on E2BIG), hence the mutable pointer.
    // The remaining arguments are plain integers.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &mut attr as *mut PerfEventAttr,
            this_thread,
            any_cpu,
            group_fd,
            FLAG_FD_CLOEXEC,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // Invariant: a descriptor is a C int, so the syscall's long result fits.
    let fd = RawFd::try_from(rc).expect("file descriptors fit in an int");
    // SAFETY: `fd` was just returned by the kernel and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// "perf_event_open: <errno text> (<what to do>)" for a refused `type_` counter.
fn open_failure(err: &io::Error, type_: u32) -> String {
    let hint = match err.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => Some(denied_hint()),
        Some(libc::ENOENT | libc::EOPNOTSUPP) if type_ == TYPE_HARDWARE => {
            Some("no hardware performance counters here, e.g. a VM without a virtual PMU".into())
        }
        Some(libc::ENOENT) if type_ == TYPE_TRACEPOINT => Some("no such tracepoint".into()),
        Some(libc::ENOSYS) => Some("kernel without perf events".into()),
        _ => None,
    };
    match hint {
        Some(hint) => format!("perf_event_open: {} ({hint})", errno_text(err)),
        None => format!("perf_event_open: {}", errno_text(err)),
    }
}

/// Why perf_event_open was refused: `perf_event_paranoid` >= 2 stops unprivileged counting
/// of kernel events; past that (or with CAP_PERFMON/CAP_SYS_ADMIN) something else said no.
fn denied_hint() -> String {
    let paranoid = fs::read_to_string(PARANOID)
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    match paranoid {
        _ if perf_capable() => {
            "despite CAP_PERFMON or CAP_SYS_ADMIN: a seccomp filter or security module".into()
        }
        Some(p) if p >= 2 => {
            format!("perf_event_paranoid = {p}; run as root or with CAP_PERFMON")
        }
        Some(p) => {
            format!("perf_event_paranoid = {p} allows it: a seccomp filter or security module")
        }
        None => "run as root or with CAP_PERFMON".into(),
    }
}

/// Whether the effective capabilities include CAP_PERFMON (38) or CAP_SYS_ADMIN (21), either
/// of which lifts the paranoid check.
fn perf_capable() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    const CAP_PERFMON: u32 = 38;
    let Ok(status) = fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN | 1 << CAP_PERFMON) != 0)
}

/// Why the syscall tracepoint's id could not be had: one line, naming the file.
#[derive(Debug, thiserror::Error)]
enum TracepointError {
    #[error("{path}: {} (tracefs is not mounted; root could mount it)", errno_text(.source))]
    NotMounted {
        path: &'static str,
        source: io::Error,
    },
    #[error("{path}: {} (no syscall tracepoints)", errno_text(.source))]
    NoTracepoints {
        path: &'static str,
        source: io::Error,
    },
    #[error("mount tracefs on {TRACEFS}: {}", errno_text(.0))]
    Mount(io::Error),
    #[error(
        "{path}: {} (run as root, or with CAP_PERFMON and a readable tracefs)",
        errno_text(.source)
    )]
    Denied {
        path: &'static str,
        source: io::Error,
    },
    #[error("{path}: {}", errno_text(.source))]
    Read {
        path: &'static str,
        source: io::Error,
    },
}

/// The id of `raw_syscalls:sys_enter`, resolved once per process.
fn syscall_tracepoint() -> Result<u64, &'static TracepointError> {
    static ID: OnceLock<Result<u64, TracepointError>> = OnceLock::new();
    ID.get_or_init(resolve_tracepoint).as_ref().copied()
}

fn resolve_tracepoint() -> Result<u64, TracepointError> {
    let read = |(source, path)| TracepointError::Read { path, source };
    match read_tracepoint_id() {
        Err((source, path)) if source.kind() == io::ErrorKind::NotFound => {
            // SAFETY: geteuid has no preconditions and cannot fail.
            if unsafe { libc::geteuid() } != 0 {
                return Err(TracepointError::NotMounted { path, source });
            }
            if Path::new(TRACEFS).join("README").exists() {
                // Mounted, but this kernel has no syscall tracepoints: mounting again won't help.
                return Err(TracepointError::NoTracepoints { path, source });
            }
            // Root and tracefs not mounted: mount it where perf(1) would.
            mount_tracefs().map_err(TracepointError::Mount)?;
            read_tracepoint_id().map_err(read)
        }
        Err((source, path)) if source.kind() == io::ErrorKind::PermissionDenied => {
            Err(TracepointError::Denied { path, source })
        }
        other => other.map_err(read),
    }
}

/// The id from the first place that has it; otherwise the most telling error (a refusal
/// says more than a missing file).
fn read_tracepoint_id() -> Result<u64, (io::Error, &'static str)> {
    let mut worst: Option<(io::Error, &'static str)> = None;
    for path in TRACEPOINT_ID {
        match fs::read_to_string(path) {
            Ok(text) => {
                return text.trim().parse().map_err(|_| {
                    let bad = format!("not a tracepoint id: {:?}", text.trim());
                    (io::Error::new(io::ErrorKind::InvalidData, bad), path)
                });
            }
            Err(e) => {
                let missing = |e: &io::Error| e.kind() == io::ErrorKind::NotFound;
                if worst
                    .as_ref()
                    .is_none_or(|(w, _)| missing(w) && !missing(&e))
                {
                    worst = Some((e, path));
                }
            }
        }
    }
    // Invariant: TRACEPOINT_ID is not empty, so the loop stored an error or returned.
    Err(worst.expect("at least one tracepoint path"))
}

/// `mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL)`, as perf(1) does.
fn mount_tracefs() -> io::Result<()> {
    // SAFETY: NUL-terminated literals, and tracefs takes no mount data (NULL is allowed).
    let rc = unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            c"/sys/kernel/tracing".as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The errno's text without io::Error's " (os error N)" suffix, for one-line reasons.
fn errno_text(err: &io::Error) -> String {
    let text = err.to_string();
    match text.rfind(" (os error ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use std::mem::offset_of;
    use std::time::Duration;

    use super::*;

    /// Opens the counters; where the kernel refused the syscall counter, checks that it says
    /// why and reads as `None`, so a denied environment tests the fallback instead of skipping.
    fn open_checked() -> (ThreadCounters, bool) {
        let c = ThreadCounters::open();
        let denied = c.unavailable(Counter::Syscalls).is_some();
        if denied {
            let why = c.unavailable(Counter::Syscalls).unwrap_or_default();
            assert!(
                why.starts_with("kernel syscall counts not available: "),
                "{why}"
            );
            assert_eq!(c.read().syscalls, None);
        }
        (c, !denied)
    }

    fn getppid_times(n: u64) {
        for _ in 0..n {
            // SAFETY: getppid has no arguments and cannot fail.
            unsafe { libc::syscall(libc::SYS_getppid) };
        }
    }

    #[test]
    fn attr_layout_matches_perf_event_h() {
        assert_eq!(size_of::<PerfEventAttr>(), ATTR_SIZE as usize);
        assert_eq!(offset_of!(PerfEventAttr, type_), 0);
        assert_eq!(offset_of!(PerfEventAttr, size), 4);
        assert_eq!(offset_of!(PerfEventAttr, config), 8);
        assert_eq!(offset_of!(PerfEventAttr, read_format), 32);
        assert_eq!(offset_of!(PerfEventAttr, flags), 40);
        assert_eq!(offset_of!(PerfEventAttr, wakeup_events), 48);
        assert_eq!(offset_of!(PerfEventAttr, config1), 56);
        assert_eq!(offset_of!(PerfEventAttr, config2), 64); // PERF_ATTR_SIZE_VER0 ends here
        assert_eq!(offset_of!(PerfEventAttr, sample_regs_intr), 96);
        assert_eq!(offset_of!(PerfEventAttr, reserved_2), 110);
        if cfg!(target_endian = "little") {
            assert_eq!(FLAG_PINNED, 0b100);
            assert_eq!(FLAG_EXCLUDE_GUEST, 1 << 20);
        }
    }

    #[test]
    fn counts_every_syscall_of_the_window() {
        let (c, counting) = open_checked();
        let before = c.read();
        getppid_times(1000);
        let delta = c.read().since(before).syscalls;
        if !counting {
            return; // open_checked asserted the reason and the None
        }
        let n = delta.expect("syscall counter opened");
        // The loop, plus the reads that land inside the window (module docs): at most 2.
        assert!(
            (1000..=1000 + READ_SYSCALLS).contains(&n),
            "{n} syscalls counted"
        );
    }

    #[test]
    fn counts_only_the_opening_thread() {
        let (c, counting) = open_checked();
        let before = c.read();
        // The other thread's own counter shows that its syscalls were countable.
        let theirs = std::thread::spawn(|| {
            let (c, _) = open_checked();
            let before = c.read();
            getppid_times(10_000);
            c.read().since(before).syscalls
        })
        .join()
        .expect("the counting thread does not panic");
        let ours = c.read().since(before).syscalls;
        if !counting {
            assert_eq!((ours, theirs), (None, None));
            return;
        }
        assert!(theirs.is_some_and(|n| n >= 10_000), "{theirs:?}");
        // Spawning and joining costs this thread a few syscalls (mmap, clone3, futex...).
        let ours = ours.expect("syscall counter opened");
        assert!(ours < 100, "{ours} syscalls counted on the idle thread");
    }

    #[test]
    fn counts_context_switches() {
        let (c, counting) = open_checked();
        let before = c.read();
        for _ in 0..10 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let switches = c.read().since(before).context_switches;
        match switches {
            Some(n) => assert!(n >= 10, "{n} context switches for 10 sleeps"),
            // The software event needs no tracefs, so only a refused perf_event_open loses it.
            None => {
                let why = c.unavailable(Counter::ContextSwitches).unwrap_or_default();
                assert!(!counting && why.contains("perf_event_open"), "{why}");
            }
        }
    }

    /// This VM exposes no PMU: `perf stat -e instructions true` prints "<not supported>
    /// instructions", and perf_event_open answers ENOENT, so here both are None with a reason.
    /// On a machine with a PMU (/sys/bus/event_source/devices/cpu*) they count a busy loop.
    #[test]
    fn hardware_counts_are_none_or_real() {
        let c = ThreadCounters::open();
        let before = c.read();
        let mut x = 0u64;
        for i in 0..100_000u64 {
            x = x.wrapping_add(std::hint::black_box(i));
        }
        std::hint::black_box(x);
        let delta = c.read().since(before);
        for (counter, value) in [
            (Counter::Instructions, delta.instructions),
            (Counter::Cycles, delta.cycles),
        ] {
            let why = c.unavailable(counter);
            match value {
                Some(n) => assert!(n >= 100_000 && why.is_none(), "{counter:?}: {n}"),
                None => assert!(why.is_some_and(|w| w.contains("perf_event_open"))),
            }
        }
        let has_pmu = fs::read_dir("/sys/bus/event_source/devices").is_ok_and(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("cpu"))
        });
        if !has_pmu {
            assert_eq!((delta.instructions, delta.cycles), (None, None));
        }
    }

    #[test]
    fn since_and_plus_propagate_none() {
        let a = KernelCounts {
            syscalls: Some(10),
            context_switches: Some(3),
            instructions: None,
            cycles: Some(100),
        };
        let b = KernelCounts {
            syscalls: Some(4),
            context_switches: Some(5),
            instructions: Some(7),
            cycles: None,
        };
        assert_eq!(
            a.since(b),
            KernelCounts {
                syscalls: Some(6),
                context_switches: Some(0), // saturates
                instructions: None,
                cycles: None,
            }
        );
        assert_eq!(
            a.plus(b),
            KernelCounts {
                syscalls: Some(14),
                context_switches: Some(8),
                instructions: None,
                cycles: None,
            }
        );
        assert_eq!(KernelCounts::ZERO.plus(a), a);
        assert_eq!(KernelCounts::default().plus(a), KernelCounts::default());
    }
}
