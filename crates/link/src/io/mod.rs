//! The link's IO part: a network namespace with a TUN device inside, a TUN device on the host,
//! and a thread of its own that moves packets between the two through the model.
//!
//! Addresses: the host end gets `host`, the namespace end `client`, both in 100.64.0.0/10
//! (shared address space, never routed to the Internet), a /32 pair chosen at random and
//! checked against the host's own addresses. Nothing outlives the process: the devices are
//! not persistent (they go when their descriptors close) and the namespace has no name (it
//! goes with its last thread and descriptor).

mod device;
mod pump;

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

pub use device::{MTU, namespace_id};

use crate::model::{Link, PathCounts};
use crate::rng::Rng;
use crate::spec::LinkSpec;

/// Why a link could not be set up or ended badly.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("the link needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN): {0}")]
    Permission(io::Error),
    #[error("the link: {0}")]
    Io(io::Error),
    #[error("the link: no free address pair in 100.64.0.0/10 after {0} tries")]
    NoAddress(u32),
    #[error("the link's emulator thread ended without its figures")]
    Lost,
}

impl From<io::Error> for LinkError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::PermissionDenied {
            LinkError::Permission(e)
        } else {
            LinkError::Io(e)
        }
    }
}

/// What a thread needs to run on the client's side of the link.
#[derive(Debug)]
pub struct LinkNet {
    ns: OwnedFd,
    /// the host's address as seen from inside (where servers on the host are reached)
    pub host: Ipv4Addr,
    /// the namespace's own address (the client's source address)
    pub client: Ipv4Addr,
}

impl LinkNet {
    /// Moves the calling thread into the link's namespace: its sockets cross the link.
    pub fn enter(&self) -> io::Result<()> {
        device::enter(&self.ns)
    }

    /// The namespace's descriptor (for a child process to enter before it runs a program).
    pub fn ns_fd(&self) -> RawFd {
        self.ns.as_raw_fd()
    }

    /// The namespace's inode number, as `lsns` lists it.
    pub fn ns_id(&self) -> io::Result<u64> {
        namespace_id(&self.ns)
    }
}

/// What the emulator measured in one direction.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirReport {
    /// the model's counts: packets offered, delivered, dropped by cause, queue peaks
    pub counts: PathCounts,
    /// packets written out to the far side, and their bytes
    pub released: u64,
    pub released_bytes: u64,
    /// from the first packet written to the last (ns)
    pub release_span_ns: u64,
    /// packets still held when the link stopped (never written)
    pub held_at_end: u64,
    /// dropped because the emulator held its limit of packets
    pub overflow: u64,
    /// not IPv4, dropped (the devices have IPv6 switched off, so none are expected)
    pub non_ipv4: u64,
    /// writes the kernel refused
    pub write_errors: u64,
    /// how late packets left against the model's release time: p50, p99, max (ns)
    pub error_p50_ns: u64,
    pub error_p99_ns: u64,
    pub error_max_ns: u64,
    /// the delay packets had in the emulator, read to write: p50, p99 (ns)
    pub applied_p50_ns: u64,
    pub applied_p99_ns: u64,
}

/// What the emulator's thread measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    /// client → host
    pub up: DirReport,
    /// host → client
    pub down: DirReport,
    /// the emulator thread's own CPU time
    pub cpu_user: Duration,
    pub cpu_sys: Duration,
    /// how long the emulator ran
    pub wall: Duration,
}

/// A link's whole account: its spec, addresses and what was measured.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkReport {
    pub spec: LinkSpec,
    pub host: Ipv4Addr,
    pub client: Ipv4Addr,
    /// whether the emulator thread got real-time scheduling (its timing depends on it when the
    /// cores are busy)
    pub realtime: bool,
    pub figures: Figures,
}

/// A link in place: the namespace, both devices and the emulator thread.
pub struct Running {
    spec: LinkSpec,
    net: Arc<LinkNet>,
    stop: OwnedFd,
    realtime: bool,
    /// whether it holds the process's address pair (given back when it stops)
    shared: bool,
    thread: Option<JoinHandle<io::Result<Figures>>>,
}

impl Running {
    /// What threads of the client's side need (shared with every one of them).
    pub fn net(&self) -> &Arc<LinkNet> {
        &self.net
    }

    pub fn spec(&self) -> &LinkSpec {
        &self.spec
    }

    /// Stops the emulator once the path is quiet (what it holds delivered, 50 ms without a
    /// packet, at most 2 s; what is held after that is not delivered) and returns its account.
    pub fn finish(mut self) -> Result<LinkReport, LinkError> {
        let figures = self.stop_thread()?;
        Ok(LinkReport {
            spec: self.spec.clone(),
            host: self.net.host,
            client: self.net.client,
            realtime: self.realtime,
            figures,
        })
    }

    fn stop_thread(&mut self) -> Result<Figures, LinkError> {
        let Some(thread) = self.thread.take() else {
            return Err(LinkError::Lost);
        };
        let one: u64 = 1;
        // SAFETY: an eventfd takes 8-byte writes; `one` is 8 bytes.
        unsafe { libc::write(self.stop.as_raw_fd(), (&one as *const u64).cast(), 8) };
        let joined = thread.join();
        // the devices went with the thread's descriptors: the pair is free again
        if self.shared {
            SHARED_IN_USE.store(false, Ordering::Release);
        }
        match joined {
            Ok(r) => Ok(r?),
            Err(_) => Err(LinkError::Lost),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.stop_thread();
        }
    }
}

/// Sets up the link of `spec` and starts its emulator: from here on, a thread that enters
/// `net()` reaches the host at `net().host` through the emulated path.
pub fn start(spec: &LinkSpec) -> Result<Running, LinkError> {
    // the process's pair when no other link holds it (links one after the other: a server
    // bound to its host address reaches every one), else a pair of its own
    let shared = !SHARED_IN_USE.swap(true, Ordering::AcqRel);
    let pair = if shared {
        addresses()
    } else {
        pick_addresses()
    };
    let started = pair.and_then(|(host, client)| start_on(spec, host, client, shared));
    if started.is_err() && shared {
        SHARED_IN_USE.store(false, Ordering::Release);
    }
    started
}

/// Whether a running link holds the process's address pair.
static SHARED_IN_USE: AtomicBool = AtomicBool::new(false);

fn start_on(
    spec: &LinkSpec,
    host: Ipv4Addr,
    client: Ipv4Addr,
    shared: bool,
) -> Result<Running, LinkError> {
    let outer = device::Tun::create(&format!("wbl{}", outer_suffix()))?;
    outer.configure(host, client)?;
    let stop = eventfd()?;
    let stop_theirs = stop.try_clone()?;
    let link = Link::new(spec);
    let spin = spec.spin;
    let (tx, rx) = mpsc::channel::<io::Result<(OwnedFd, bool)>>();
    let thread = std::thread::Builder::new()
        .name("wirebench-link".into())
        .spawn(move || {
            let inner = match inside(client, host) {
                Ok((ns, inner)) => {
                    let realtime = precise_timing(!spin);
                    let _ = tx.send(Ok((ns, realtime)));
                    inner
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return Ok(Figures::default());
                }
            };
            pump::Pump::new(inner, outer, stop_theirs, link, spin).run()
        })
        .map_err(LinkError::Io)?;
    let (ns, realtime) = match rx.recv() {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            let _ = thread.join();
            return Err(e.into());
        }
        Err(_) => return Err(LinkError::Lost),
    };
    Ok(Running {
        spec: spec.clone(),
        net: Arc::new(LinkNet { ns, host, client }),
        stop,
        realtime,
        shared,
        thread: Some(thread),
    })
}

/// On the emulator's thread: a namespace of its own with its loopback up and the inner device
/// configured.
fn inside(client: Ipv4Addr, host: Ipv4Addr) -> io::Result<(OwnedFd, device::Tun)> {
    let ns = device::new_namespace()?;
    device::loopback_up()?;
    let inner = device::Tun::create("wbl0")?;
    inner.configure(client, host)?;
    Ok((ns, inner))
}

/// A unique device name suffix on this host: the process id and a counter.
fn outer_suffix() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{}x{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The address pair of every link this process sets up, one after the other: (host, client).
/// Chosen once, so that a server bound to the host address (IP_FREEBIND) before a link exists
/// is reached through every later one.
pub fn addresses() -> Result<(Ipv4Addr, Ipv4Addr), LinkError> {
    static PAIR: std::sync::Mutex<Option<(Ipv4Addr, Ipv4Addr)>> = std::sync::Mutex::new(None);
    let mut pair = PAIR.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(p) = *pair {
        return Ok(p);
    }
    let p = pick_addresses()?;
    *pair = Some(p);
    Ok(p)
}

/// A random address pair in 100.64.0.0/10 that the host does not already use.
fn pick_addresses() -> Result<(Ipv4Addr, Ipv4Addr), LinkError> {
    const TRIES: u32 = 32;
    let mut rng = Rng::unique();
    for _ in 0..TRIES {
        // a /30 of the /10: 2^20 of them; .1 the host, .2 the client
        let base = u32::from(Ipv4Addr::new(100, 64, 0, 0)) + (rng.below(1 << 20) as u32) * 4;
        let (host, client) = (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2));
        if !device::address_in_use(host)? && !device::address_in_use(client)? {
            return Ok((host, client));
        }
    }
    Err(LinkError::NoAddress(TRIES))
}

fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: eventfd takes plain arguments; the result is checked.
    let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: raw is an eventfd we just opened and own.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Asks for the timing the emulator needs: 1 ns timer slack (the kernel's default 50 µs would
/// round every wake-up), and, when it sleeps between releases (`realtime`), real-time (FIFO)
/// scheduling so that a busy client or server does not delay a wake-up by a scheduler tick. A
/// spinning thread stays an ordinary one: the kernel throttles a busy real-time thread for
/// 50 ms of every second. Returns whether real-time was granted.
fn precise_timing(realtime: bool) -> bool {
    // SAFETY: prctl with PR_SET_TIMERSLACK takes an integer; it affects the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    if !realtime {
        return false;
    }
    let param = libc::sched_param { sched_priority: 10 };
    // SAFETY: 0 = the calling thread; a valid sched_param.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}
