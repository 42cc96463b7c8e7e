//! The kernel objects of a link: a TUN device configured as one end of a point-to-point pair,
//! and the network namespace a thread moves into. Linux only; every call needs CAP_NET_ADMIN
//! (namespaces: CAP_SYS_ADMIN).

use std::fs::File;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The packet size the devices carry (Ethernet's, so that segments look as they would on a
/// real path).
pub const MTU: u16 = 1500;

/// An open TUN device: IP packets in and out through its file descriptor, no packet-info
/// header. The device disappears when the descriptor closes (it is never made persistent), so
/// a killed process leaves none behind.
#[derive(Debug)]
pub struct Tun {
    fd: OwnedFd,
    name: String,
}

impl Tun {
    /// Creates a TUN device named `name` in the calling thread's network namespace,
    /// non-blocking.
    pub fn create(name: &str) -> io::Result<Tun> {
        let path = c"/dev/net/tun";
        // SAFETY: a valid NUL-terminated path; the returned fd is checked.
        let raw = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("open /dev/net/tun: {e}")));
        }
        // SAFETY: raw is an fd we just opened and own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut req = ifreq(name)?;
        req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads and writes an ifreq, which `req` is.
        if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req) } < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("create TUN device {name}: {e}"),
            ));
        }
        Ok(Tun {
            fd,
            name: name.to_string(),
        })
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Gives the device `local` with `peer` at the other end, the link's MTU, and brings it up
    /// (the kernel adds the route to `peer` through it). IPv6 is switched off on it first, so
    /// that only the traffic of the run crosses the link.
    pub fn configure(&self, local: Ipv4Addr, peer: Ipv4Addr) -> io::Result<()> {
        disable_ipv6(&self.name);
        let sock = Control::open()?;
        sock.set_addr(&self.name, libc::SIOCSIFADDR, local, "address")?;
        sock.set_addr(&self.name, libc::SIOCSIFDSTADDR, peer, "peer address")?;
        sock.set_addr(
            &self.name,
            libc::SIOCSIFNETMASK,
            Ipv4Addr::BROADCAST,
            "netmask",
        )?;
        let mut req = ifreq(&self.name)?;
        req.ifr_ifru.ifru_mtu = libc::c_int::from(MTU);
        sock.ioctl(libc::SIOCSIFMTU, &mut req, &self.name, "MTU")?;
        sock.up(&self.name)
    }

    /// Reads one packet into `buf`; `Ok(None)` when none is waiting.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        // SAFETY: buf is valid for writes of buf.len() bytes.
        let n = unsafe { libc::read(self.fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(Some(n as usize));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::WouldBlock => Ok(None),
            io::ErrorKind::Interrupted => self.recv(buf),
            _ => Err(e),
        }
    }

    /// Writes one packet: the kernel takes it as received on this device.
    pub fn send(&self, packet: &[u8]) -> io::Result<()> {
        loop {
            // SAFETY: packet is valid for reads of packet.len() bytes.
            let n = unsafe { libc::write(self.fd(), packet.as_ptr().cast(), packet.len()) };
            if n >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

/// Brings the loopback device of the calling thread's namespace up (a new namespace starts
/// with it down), so that programs run inside can reach their own 127.0.0.1.
pub fn loopback_up() -> io::Result<()> {
    Control::open()?.up("lo")
}

/// Moves the calling thread into a new network namespace of its own and returns a descriptor
/// of it. Nothing names the namespace: it lives while a thread is in it or a descriptor of it
/// is open, so it dies with the process however the process ends.
pub fn new_namespace() -> io::Result<OwnedFd> {
    // SAFETY: unshare takes flags only; it affects the calling thread.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("create a network namespace: {e}"),
        ));
    }
    current_namespace()
}

/// A descriptor of the calling thread's network namespace.
pub fn current_namespace() -> io::Result<OwnedFd> {
    let f = File::open("/proc/thread-self/ns/net")
        .map_err(|e| io::Error::new(e.kind(), format!("open /proc/thread-self/ns/net: {e}")))?;
    Ok(OwnedFd::from(f))
}

/// Moves the calling thread into the network namespace `ns` (sockets it opens from then on
/// belong there).
pub fn enter(ns: &OwnedFd) -> io::Result<()> {
    // SAFETY: a valid namespace descriptor; setns affects the calling thread only.
    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("enter the link's network namespace: {e}"),
        ));
    }
    Ok(())
}

/// The inode number that identifies namespace `ns` (what `lsns` lists).
pub fn namespace_id(ns: &OwnedFd) -> io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    let f = File::from(ns.try_clone()?);
    Ok(f.metadata()?.ino())
}

/// Whether `ip` is already an address of some device in the calling thread's namespace.
pub fn address_in_use(ip: Ipv4Addr) -> io::Result<bool> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list we free below.
    if unsafe { libc::getifaddrs(&mut head) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut found = false;
    let mut cur = head;
    while !cur.is_null() {
        // SAFETY: cur is a node of the list getifaddrs returned and has not been freed.
        let ifa = unsafe { &*cur };
        if !ifa.ifa_addr.is_null() {
            // SAFETY: ifa_addr points to a sockaddr whose family says its real type.
            let family = unsafe { (*ifa.ifa_addr).sa_family };
            if i32::from(family) == libc::AF_INET {
                // SAFETY: an AF_INET sockaddr is a sockaddr_in.
                let sin = unsafe { &*ifa.ifa_addr.cast::<libc::sockaddr_in>() };
                found |= Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)) == ip;
            }
        }
        cur = ifa.ifa_next;
    }
    // SAFETY: head came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    Ok(found)
}

/// Best effort: a device without IPv6 sends no router solicitations or MLD reports across the
/// link. /proc/sys/net belongs to the namespace of the thread that opens it.
fn disable_ipv6(name: &str) {
    let path = format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6");
    let _ = std::fs::write(path, "1");
}

/// An interface request naming `name`.
fn ifreq(name: &str) -> io::Result<libc::ifreq> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ || name.bytes().any(|b| b == 0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("device name {name:?} is not 1 to 15 bytes"),
        ));
    }
    // SAFETY: ifreq is plain data (a name and a union of plain data); all zeroes is valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    Ok(req)
}

/// A datagram socket used only for interface ioctls, in the caller's namespace.
struct Control(OwnedFd);

impl Control {
    fn open() -> io::Result<Control> {
        // SAFETY: socket takes plain arguments; the result is checked.
        let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: raw is a socket we just opened and own.
        Ok(Control(unsafe { OwnedFd::from_raw_fd(raw) }))
    }

    fn ioctl(
        &self,
        request: libc::c_ulong,
        req: &mut libc::ifreq,
        name: &str,
        what: &str,
    ) -> io::Result<()> {
        // SAFETY: every request used here reads or writes an ifreq, which `req` is.
        if unsafe { libc::ioctl(self.0.as_raw_fd(), request as _, req as *mut libc::ifreq) } < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("set the {what} of {name}: {e}"),
            ));
        }
        Ok(())
    }

    fn set_addr(
        &self,
        name: &str,
        request: libc::c_ulong,
        ip: Ipv4Addr,
        what: &str,
    ) -> io::Result<()> {
        let mut req = ifreq(name)?;
        let sin = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr {
                s_addr: u32::from(ip).to_be(),
            },
            sin_zero: [0; 8],
        };
        // SAFETY: sockaddr_in fits in the union's sockaddr (both 16 bytes); the kernel reads
        // it as the family says.
        unsafe {
            std::ptr::write(
                (&mut req.ifr_ifru as *mut libc::__c_anonymous_ifr_ifru)
                    .cast::<libc::sockaddr_in>(),
                sin,
            );
        }
        self.ioctl(request, &mut req, name, what)
    }

    fn up(&self, name: &str) -> io::Result<()> {
        let mut req = ifreq(name)?;
        self.ioctl(libc::SIOCGIFFLAGS, &mut req, name, "flags")?;
        // SAFETY: SIOCGIFFLAGS filled the flags member.
        let flags = unsafe { req.ifr_ifru.ifru_flags };
        req.ifr_ifru.ifru_flags = flags | (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        self.ioctl(libc::SIOCSIFFLAGS, &mut req, name, "flags")
    }
}
