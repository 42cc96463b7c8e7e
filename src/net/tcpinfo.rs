//! Linux `TCP_INFO`: segment counters, retransmits and rtt of one connection, read via getsockopt.

use std::os::fd::AsRawFd;

use crate::stats::TcpInfo;

/// The kernel's `struct tcp_info` (include/uapi/linux/tcp.h) up to `tcpi_snd_wnd`. Declared here
/// because the libc crate's copy stops before the segment counters. The kernel fills as much of
/// it as it knows and reports the length, so older kernels leave the tail zeroed.
#[repr(C)]
#[derive(Default)]
struct RawTcpInfo {
    state: u8,
    ca_state: u8,
    retransmits: u8,
    probes: u8,
    backoff: u8,
    options: u8,
    wscale: u8,
    flags: u8,
    rto: u32,
    ato: u32,
    snd_mss: u32,
    rcv_mss: u32,
    unacked: u32,
    sacked: u32,
    lost: u32,
    retrans: u32,
    fackets: u32,
    last_data_sent: u32,
    last_ack_sent: u32,
    last_data_recv: u32,
    last_ack_recv: u32,
    pmtu: u32,
    rcv_ssthresh: u32,
    rtt: u32,
    rttvar: u32,
    snd_ssthresh: u32,
    snd_cwnd: u32,
    advmss: u32,
    reordering: u32,
    rcv_rtt: u32,
    rcv_space: u32,
    total_retrans: u32,
    pacing_rate: u64,
    max_pacing_rate: u64,
    bytes_acked: u64,
    bytes_received: u64,
    segs_out: u32,
    segs_in: u32,
    notsent_bytes: u32,
    min_rtt: u32,
    data_segs_in: u32,
    data_segs_out: u32,
    delivery_rate: u64,
    busy_time: u64,
    rwnd_limited: u64,
    sndbuf_limited: u64,
    delivered: u32,
    delivered_ce: u32,
    bytes_sent: u64,
    bytes_retrans: u64,
    dsack_dups: u32,
    reord_seen: u32,
    rcv_ooopack: u32,
    snd_wnd: u32,
}

const TCPI_OPT_TIMESTAMPS: u8 = 1;
/// Offset just past `tcpi_data_segs_out`: a kernel that fills less than this has no segment counters.
const SEGS_END: usize = std::mem::offset_of!(RawTcpInfo, data_segs_out) + 4;

/// Reads `TCP_INFO` from a connected socket; `None` if the kernel refuses or is too old.
pub fn tcp_info(sock: &impl AsRawFd) -> Option<TcpInfo> {
    let mut raw = RawTcpInfo::default();
    let mut len = std::mem::size_of::<RawTcpInfo>() as libc::socklen_t;
    // SAFETY: `raw` is a plain repr(C) struct of integers, valid for any bytes; we pass its real
    // size, and the kernel writes at most `len` bytes into it and updates `len`.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut raw as *mut RawTcpInfo).cast(),
            &mut len,
        )
    };
    if rc != 0 || (len as usize) < SEGS_END {
        return None;
    }
    Some(TcpInfo {
        segs_out: raw.segs_out.into(),
        segs_in: raw.segs_in.into(),
        data_segs_out: raw.data_segs_out.into(),
        data_segs_in: raw.data_segs_in.into(),
        retransmits: raw.total_retrans.into(),
        rtt_us: raw.rtt.into(),
        mss: raw.snd_mss.into(),
        cwnd: raw.snd_cwnd.into(),
        min_rtt_us: raw.min_rtt.into(),
        timestamps: raw.options & TCPI_OPT_TIMESTAMPS != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_kernel_abi() {
        // Offsets fixed by the kernel ABI (linux/tcp.h); a mistake here shifts every counter.
        assert_eq!(std::mem::offset_of!(RawTcpInfo, rto), 8);
        assert_eq!(std::mem::offset_of!(RawTcpInfo, total_retrans), 100);
        assert_eq!(std::mem::offset_of!(RawTcpInfo, pacing_rate), 104);
        assert_eq!(std::mem::offset_of!(RawTcpInfo, segs_out), 136);
        assert_eq!(std::mem::offset_of!(RawTcpInfo, data_segs_out), 156);
        assert_eq!(std::mem::offset_of!(RawTcpInfo, bytes_sent), 200);
        assert_eq!(std::mem::offset_of!(RawTcpInfo, snd_wnd), 228);
    }

    #[test]
    fn counts_segments_on_loopback() {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        c.write_all(b"ping").unwrap();
        let mut b = [0u8; 4];
        s.read_exact(&mut b).unwrap();
        s.write_all(b"pong").unwrap();
        c.read_exact(&mut b).unwrap();
        let ti = tcp_info(&c).expect("TCP_INFO on loopback");
        // Handshake SYN + ACK + one data segment at least; exactly one data segment each way.
        assert_eq!(ti.data_segs_out, 1);
        assert_eq!(ti.data_segs_in, 1);
        assert!(ti.segs_out >= 3, "{ti:?}");
        assert!(ti.mss > 0);
    }
}
