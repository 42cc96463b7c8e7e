//! A seccomp filter for child processes that makes chosen syscalls fail with a chosen errno.
//!
//! Tests run as root, where every perf event is allowed; this is how they reach the paths
//! that only unprivileged or containerised runs would take. It is a test helper, not a
//! sandbox: on x86-64 the x32 variants of the syscalls (nr | 0x4000_0000) still get through.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// One classic BPF instruction (`struct sock_filter`, linux/filter.h).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct SockFilter {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

/// A BPF program (`struct sock_fprog`, linux/filter.h): length and first instruction.
#[repr(C)]
struct SockFprog {
    len: u16,
    filter: *const SockFilter,
}

// Opcode parts (linux/bpf_common.h).
/// Instruction class: load into the accumulator.
const BPF_LD: u16 = 0x00;
/// Instruction class: conditional jump.
const BPF_JMP: u16 = 0x05;
/// Instruction class: return a verdict.
const BPF_RET: u16 = 0x06;
/// Load size: a 32-bit word.
const BPF_W: u16 = 0x00;
/// Load mode: from a fixed offset in the input (here `struct seccomp_data`).
const BPF_ABS: u16 = 0x20;
/// Jump test: accumulator == k.
const BPF_JEQ: u16 = 0x10;
/// Operand: the constant k.
const BPF_K: u16 = 0x00;

// `struct seccomp_data` (linux/seccomp.h): `int nr; __u32 arch; ...`.
/// Offset of the syscall number.
const DATA_NR: u32 = 0;
/// Offset of the AUDIT_ARCH_* value of the calling convention.
const DATA_ARCH: u32 = 4;

// Filter verdicts (linux/seccomp.h).
/// Let the syscall run.
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
/// Fail the syscall without running it; the low 16 bits (SECCOMP_RET_DATA) are the errno.
const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;

/// AUDIT_ARCH_* (linux/audit.h): EM_* machine | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 62 | 0x8000_0000 | 0x4000_0000; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 183 | 0x8000_0000 | 0x4000_0000; // AUDIT_ARCH_AARCH64
/// Elsewhere no syscall numbers are known: 0 matches no arch, so everything is allowed.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const AUDIT_ARCH: u32 = 0;

/// Largest errno the kernel passes through (MAX_ERRNO).
const MAX_ERRNO: i32 = 4095;

const fn stmt(code: u16, k: u32) -> SockFilter {
    SockFilter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

const fn jump(code: u16, k: u32, jt: u8, jf: u8) -> SockFilter {
    SockFilter { code, jt, jf, k }
}

/// The program: on our own architecture, `syscalls` return `-errno`; everything else (other
/// syscalls, and every syscall of an unexpected calling convention) is allowed.
fn program(syscalls: &[libc::c_long], errno: i32) -> Vec<SockFilter> {
    // Jump offsets are u8 and count instructions to skip: keep every target in reach.
    assert!(
        syscalls.len() < 250,
        "too many syscalls for one BPF program"
    );
    assert!(
        (1..=MAX_ERRNO).contains(&errno),
        "errno {errno} out of range"
    );
    let n = syscalls.len();
    let mut prog = Vec::with_capacity(n + 5);
    prog.push(stmt(BPF_LD | BPF_W | BPF_ABS, DATA_ARCH));
    // Not our arch: skip the number load and the n comparisons, to ALLOW.
    prog.push(jump(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH, 0, n as u8 + 1));
    prog.push(stmt(BPF_LD | BPF_W | BPF_ABS, DATA_NR));
    for (i, &nr) in syscalls.iter().enumerate() {
        let nr = u32::try_from(nr).expect("syscall numbers are small and non-negative");
        // Match: skip the remaining comparisons and ALLOW, to the ERRNO return.
        prog.push(jump(BPF_JMP | BPF_JEQ | BPF_K, nr, (n - i) as u8, 0));
    }
    prog.push(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    prog.push(stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | errno as u32));
    prog
}

/// Makes `syscalls` fail with `errno` in the child (and its threads, and whatever it execs),
/// everything else allowed. The filter is installed in `pre_exec`, so it also applies to
/// `pre_exec` hooks added after this one (e.g. `die_with_parent`) and to the exec itself:
/// don't deny what those need.
pub fn deny_syscalls(cmd: &mut Command, syscalls: &'static [libc::c_long], errno: i32) {
    // Built here: between fork and exec only async-signal-safe work, so no allocation.
    let prog = program(syscalls, errno);
    // Invariant: `program` keeps the length far below u16::MAX.
    let len = u16::try_from(prog.len()).expect("BPF program length fits u16");
    // SAFETY: the closure only calls prctl and reads the errno, both async-signal-safe;
    // `prog` was allocated before the fork and is only borrowed.
    unsafe {
        cmd.pre_exec(move || {
            let fprog = SockFprog {
                len,
                filter: prog.as_ptr(),
            };
            // Without privilege seccomp requires no_new_privs; with it, it costs nothing here.
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1 as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            let mode = libc::SECCOMP_MODE_FILTER as libc::c_ulong;
            if libc::prctl(libc::PR_SET_SECCOMP, mode, &fprog as *const SockFprog) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
