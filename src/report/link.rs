//! The Link section: what the emulated path under a stack's run applied, by the emulator's own
//! counts and clocks, with TCP_INFO's view of the same connections beside it.

use serde::Serialize;
use wirebench_link::io::{DirReport, LinkReport};

use crate::stats::ConnRecord;

/// One stack's link: the spec, each direction's account, the emulator's CPU and TCP's view.
#[derive(Debug, Clone, Serialize)]
pub struct LinkSection {
    /// the spec as the emulator read it (canonical form)
    pub spec: String,
    /// the host's address as the client side reaches it, and the client side's own
    pub host: String,
    pub client: String,
    /// client → server
    pub up: LinkDirection,
    /// server → client
    pub down: LinkDirection,
    /// the emulator thread's CPU, user and system, over its whole life (not the client's)
    pub emulator_cpu_user_s: f64,
    pub emulator_cpu_sys_s: f64,
    /// the emulator's CPU per packet it handled, both directions (µs)
    pub emulator_cpu_us_per_packet: Option<f64>,
    /// whether the emulator thread ran with real-time scheduling (its timing error depends on it
    /// when the cores are busy)
    pub emulator_realtime: bool,
    /// TCP_INFO of the run's connections, read before each closed
    pub tcp: LinkTcp,
}

/// One direction as the emulator handled it.
#[derive(Debug, Clone, Serialize)]
pub struct LinkDirection {
    /// packets and bytes that entered the emulator
    pub packets: u64,
    pub bytes: u64,
    /// packets the model let through, and those written out before the link stopped
    pub delivered: u64,
    pub released: u64,
    /// the bytes written out divided by the time from the first packet written to the last
    /// (Mbit/s): the rate the path carried while it carried something
    pub throughput_mbps: Option<f64>,
    pub dropped_random: u64,
    pub dropped_burst: u64,
    pub dropped_queue: u64,
    /// dropped by the emulator itself (its hold limit, a non-IPv4 packet, a refused write)
    pub dropped_other: u64,
    /// (random + burst + queue drops) / packets
    pub loss_observed: Option<f64>,
    /// still held when the link stopped
    pub held_at_end: u64,
    /// the bottleneck queue's largest occupancy
    pub queue_peak_packets: u64,
    pub queue_peak_bytes: u64,
    /// the delay the emulator applied, read to write (ms)
    pub applied_delay_p50_ms: f64,
    pub applied_delay_p99_ms: f64,
    /// how late packets left against the model's release time (µs): the emulator's own error
    pub timing_error_p50_us: f64,
    pub timing_error_p99_us: f64,
    pub timing_error_max_us: f64,
}

/// TCP_INFO over the connections of the run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LinkTcp {
    pub connections: u64,
    /// segments retransmitted, summed over the connections
    pub retransmits: u64,
    /// smoothed RTT at close: median and largest over the connections (ms)
    pub rtt_p50_ms: Option<f64>,
    pub rtt_max_ms: Option<f64>,
    /// the lowest RTT any connection saw (ms)
    pub min_rtt_ms: Option<f64>,
    /// congestion window at close, in segments: median and largest over the connections
    pub cwnd_p50: Option<u64>,
    pub cwnd_max: Option<u64>,
}

impl LinkSection {
    pub fn of(link: &LinkReport, conns: &[ConnRecord]) -> LinkSection {
        let f = &link.figures;
        let packets = f.up.counts.packets + f.down.counts.packets;
        let cpu = f.cpu_user + f.cpu_sys;
        LinkSection {
            spec: link.spec.to_string(),
            host: link.host.to_string(),
            client: link.client.to_string(),
            up: LinkDirection::of(&f.up),
            down: LinkDirection::of(&f.down),
            emulator_cpu_user_s: f.cpu_user.as_secs_f64(),
            emulator_cpu_sys_s: f.cpu_sys.as_secs_f64(),
            emulator_cpu_us_per_packet: (packets > 0)
                .then(|| cpu.as_secs_f64() * 1e6 / packets as f64),
            emulator_realtime: link.realtime,
            tcp: LinkTcp::of(conns),
        }
    }
}

impl LinkDirection {
    fn of(d: &DirReport) -> LinkDirection {
        let c = &d.counts;
        let dropped = c.dropped_random + c.dropped_burst + c.dropped_queue;
        LinkDirection {
            packets: c.packets,
            bytes: c.bytes,
            delivered: c.delivered,
            released: d.released,
            throughput_mbps: (d.release_span_ns > 0)
                .then(|| d.released_bytes as f64 * 8e3 / d.release_span_ns as f64),
            dropped_random: c.dropped_random,
            dropped_burst: c.dropped_burst,
            dropped_queue: c.dropped_queue,
            dropped_other: d.overflow + d.non_ipv4 + d.write_errors,
            loss_observed: (c.packets > 0).then(|| dropped as f64 / c.packets as f64),
            held_at_end: d.held_at_end,
            queue_peak_packets: c.queue_peak_packets,
            queue_peak_bytes: c.queue_peak_bytes,
            applied_delay_p50_ms: d.applied_p50_ns as f64 / 1e6,
            applied_delay_p99_ms: d.applied_p99_ns as f64 / 1e6,
            timing_error_p50_us: d.error_p50_ns as f64 / 1e3,
            timing_error_p99_us: d.error_p99_ns as f64 / 1e3,
            timing_error_max_us: d.error_max_ns as f64 / 1e3,
        }
    }
}

impl LinkTcp {
    fn of(conns: &[ConnRecord]) -> LinkTcp {
        let infos: Vec<_> = conns.iter().filter_map(|c| c.tcp).collect();
        if infos.is_empty() {
            return LinkTcp::default();
        }
        let mut rtt: Vec<u64> = infos.iter().map(|t| t.rtt_us).collect();
        let mut cwnd: Vec<u64> = infos.iter().map(|t| t.cwnd).collect();
        rtt.sort_unstable();
        cwnd.sort_unstable();
        let ms = |us: u64| us as f64 / 1e3;
        LinkTcp {
            connections: conns.iter().map(ConnRecord::weight).sum(),
            retransmits: infos.iter().map(|t| t.retransmits).sum(),
            rtt_p50_ms: Some(ms(rtt[rtt.len() / 2])),
            rtt_max_ms: rtt.last().map(|&v| ms(v)),
            min_rtt_ms: infos
                .iter()
                .map(|t| t.min_rtt_us)
                .filter(|&v| v > 0)
                .min()
                .map(ms),
            cwnd_p50: Some(cwnd[cwnd.len() / 2]),
            cwnd_max: cwnd.last().copied(),
        }
    }
}
