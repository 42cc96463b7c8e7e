//! The emulator under load, through a real link (needs root, TUN and namespaces): a paced UDP
//! flow from the namespace to the host at a fixed packet rate (the emulator's timing error and
//! CPU per packet there), and a bulk TCP transfer (the rate it carries on one core).
//!
//! `cargo bench -p wirebench-link --bench pump [-- PPS SECONDS SPEC]` (defaults: 20000 packets/s
//! for 5 s through `rtt=20ms`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use wirebench_link::io::{self, LinkReport};
use wirebench_link::spec::LinkSpec;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let pps: u64 = args.first().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let secs: u64 = args.get(1).and_then(|v| v.parse().ok()).unwrap_or(5);
    let spec: LinkSpec = args
        .get(2)
        .map_or("rtt=20ms", String::as_str)
        .parse()
        .expect("a link spec");
    paced(&spec, pps, 100, Duration::from_secs(secs));
    // 25 Mbit/s of 1500-byte packets into a 20 Mbit/s bottleneck: what leaves is its rate
    let rated: LinkSpec = "rate=20mbit,queue=100".parse().expect("a link spec");
    paced(
        &rated,
        25_000_000 / (1500 * 8),
        1472,
        Duration::from_secs(secs),
    );
    bulk(&"delay=10us".parse().expect("a link spec"), 300);
}

/// UDP datagrams of `size` bytes at `pps`, up the link, for `time`.
fn paced(spec: &LinkSpec, pps: u64, size: usize, time: Duration) {
    let link = io::start(spec).expect("the link (root, /dev/net/tun)");
    let net = link.net().clone();
    let sink = UdpSocket::bind(SocketAddr::new(net.host.into(), 0)).expect("bind the sink");
    sink.set_read_timeout(Some(Duration::from_millis(500)))
        .expect("timeout");
    let to = sink.local_addr().expect("address");
    let receiver = std::thread::spawn(move || {
        let (mut n, mut buf) = (0u64, [0u8; 2048]);
        while sink.recv(&mut buf).is_ok() {
            n += 1;
        }
        n
    });
    let sender = std::thread::spawn(move || {
        net.enter().expect("enter the namespace");
        let s = UdpSocket::bind("0.0.0.0:0").expect("bind");
        // a few packets every 100 µs (sleeping between), so that the sender does not take a
        // core of its own
        let payload = vec![0u8; size];
        let start = Instant::now();
        let (mut sent, mut tick) = (0u64, 0u64);
        while start.elapsed() < time {
            tick += 1;
            // the packets due by the end of this tick
            let due_count = pps * tick / 10_000;
            while sent < due_count {
                if s.send_to(&payload, to).is_err() {
                    break;
                }
                sent += 1;
            }
            let due = start + Duration::from_micros(100 * tick);
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
        }
        sent
    });
    let sent = sender.join().expect("sender");
    let received = receiver.join().expect("receiver");
    let report = link.finish().expect("the link's account");
    let up = &report.figures.up;
    println!(
        "paced UDP {pps} pps of {size} B for {time:?} through {}: sent {sent}, received {received}, \
         carried {:.3} Mbit/s (first packet out to last)",
        report.spec,
        up.released_bytes as f64 * 8e3 / up.release_span_ns.max(1) as f64
    );
    print_account(&report);
}

/// `mib` MiB over one TCP connection up a link with no delay to speak of.
fn bulk(spec: &LinkSpec, mib: usize) {
    let link = io::start(spec).expect("the link");
    let net = link.net().clone();
    let listener = TcpListener::bind(SocketAddr::new(net.host.into(), 0)).expect("listen");
    let to = listener.local_addr().expect("address");
    let receiver = std::thread::spawn(move || {
        let (mut c, _) = listener.accept().expect("accept");
        let (mut n, mut buf) = (0usize, vec![0u8; 1 << 20]);
        loop {
            match c.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k,
            }
        }
        n
    });
    let started = Instant::now();
    let sender = std::thread::spawn(move || {
        net.enter().expect("enter");
        let mut c = TcpStream::connect(to).expect("connect");
        let buf = vec![0u8; 1 << 20];
        for _ in 0..mib {
            c.write_all(&buf).expect("write");
        }
    });
    sender.join().expect("sender");
    let bytes = receiver.join().expect("receiver");
    let took = started.elapsed();
    let report = link.finish().expect("the link's account");
    println!(
        "bulk TCP through {}: {bytes} bytes in {:.3} s = {:.0} Mbit/s",
        report.spec,
        took.as_secs_f64(),
        bytes as f64 * 8.0 / took.as_secs_f64() / 1e6
    );
    print_account(&report);
}

fn print_account(r: &LinkReport) {
    let f = &r.figures;
    for (name, d) in [("up", &f.up), ("down", &f.down)] {
        println!(
            "  {name:<4} packets {:>8}  released {:>8}  error p50 {:>8.1} µs  p99 {:>8.1} µs  max {:>9.1} µs",
            d.counts.packets,
            d.released,
            d.error_p50_ns as f64 / 1e3,
            d.error_p99_ns as f64 / 1e3,
            d.error_max_ns as f64 / 1e3
        );
    }
    let packets = (f.up.counts.packets + f.down.counts.packets).max(1);
    let cpu = f.cpu_user + f.cpu_sys;
    println!(
        "  emulator CPU {:.3} s user + {:.3} s sys over {:.2} s = {:.2} µs per packet, {:.0}% of a core; real-time {}",
        f.cpu_user.as_secs_f64(),
        f.cpu_sys.as_secs_f64(),
        f.wall.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / packets as f64,
        cpu.as_secs_f64() * 100.0 / f.wall.as_secs_f64().max(1e-9),
        r.realtime
    );
}
