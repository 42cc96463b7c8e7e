//! The IO part against ground truth, through real links (root, /dev/net/tun, network
//! namespaces: these tests fail where they are missing, as CI has them): every datagram a
//! thread in the namespace sends is one the emulator counts, what it releases is what the
//! host's socket receives, its random drops are a binomial share, and a TCP connect takes the
//! round trip.

use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use wirebench_link::io;
use wirebench_link::spec::LinkSpec;

fn spec(s: &str) -> LinkSpec {
    s.parse().expect("a link spec")
}

#[test]
fn the_emulators_counts_are_the_datagrams_sent_and_received() {
    let link = io::start(&spec("delay=1ms,loss-up=10%")).expect("the link (root, TUN)");
    let net = link.net().clone();
    let sink = UdpSocket::bind(SocketAddr::new(net.host.into(), 0)).expect("bind");
    sink.set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    let to = sink.local_addr().expect("address");
    let receiver = std::thread::spawn(move || {
        let (mut received, mut buf) = (0u64, [0u8; 64]);
        while sink.recv(&mut buf).is_ok() {
            received += 1;
        }
        received
    });
    let sent = std::thread::spawn(move || {
        net.enter().expect("enter the namespace");
        let s = UdpSocket::bind("0.0.0.0:0").expect("bind");
        let mut sent = 0u64;
        for i in 0..4000u32 {
            s.send_to(&i.to_be_bytes(), to).expect("send");
            sent += 1;
            if i % 100 == 99 {
                // not faster than the sink reads
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        sent
    })
    .join()
    .expect("sender");
    let received = receiver.join().expect("receiver");
    let account = link.finish().expect("the account");
    let up = &account.figures.up;
    assert_eq!(up.counts.packets, sent, "{up:?}");
    assert_eq!(up.released, received, "{up:?}");
    assert_eq!(
        up.counts.packets,
        up.counts.delivered + up.counts.dropped_random,
        "{up:?}"
    );
    // Binomial(4000, 0.1): mean 400, sd 19; the 99.9% interval ± 3.29 sd
    let dropped = up.counts.dropped_random as f64;
    assert!((337.0..=463.0).contains(&dropped), "{up:?}");
    // the applied delay: 1 ms, and the emulator's error well under it
    assert!(
        (1_000_000..3_000_000).contains(&up.applied_p50_ns),
        "{up:?}"
    );
    assert!(account.figures.cpu_user + account.figures.cpu_sys > Duration::ZERO);
}

#[test]
fn a_connect_takes_the_round_trip_and_the_addresses_are_the_links() {
    let link = io::start(&spec("rtt=30ms")).expect("the link (root, TUN)");
    let net = link.net().clone();
    let listener = TcpListener::bind(SocketAddr::new(net.host.into(), 0)).expect("listen");
    let to = listener.local_addr().expect("address");
    let accept = std::thread::spawn(move || listener.accept().map(|(_, peer)| peer));
    let took = std::thread::spawn(move || {
        net.enter().expect("enter the namespace");
        let t0 = Instant::now();
        let c = TcpStream::connect(to).expect("connect through the link");
        let took = t0.elapsed();
        drop(c);
        took
    })
    .join()
    .expect("client");
    let peer = accept.join().expect("accept").expect("accepted");
    assert_eq!(peer.ip(), std::net::IpAddr::V4(link.net().client));
    assert!(
        (Duration::from_millis(30)..Duration::from_millis(60)).contains(&took),
        "{took:?}"
    );
    let account = link.finish().expect("the account");
    // SYN up, SYN-ACK down, ACK up (and the close after)
    assert!(account.figures.up.counts.packets >= 2, "{account:?}");
    assert!(account.figures.down.counts.packets >= 1, "{account:?}");
}

#[test]
fn nothing_of_a_link_is_left_after_it_finishes() {
    let link = io::start(&spec("rtt=2ms")).expect("the link (root, TUN)");
    let ns = link.net().ns_id().expect("the namespace's id");
    let host = link.net().host;
    let has_address = || {
        let out = std::process::Command::new("ip")
            .args(["-o", "-4", "addr", "show"])
            .output()
            .expect("ip addr");
        String::from_utf8_lossy(&out.stdout).contains(&format!("{host}/"))
            || String::from_utf8_lossy(&out.stdout).contains(&format!("{host} "))
    };
    assert!(
        has_address(),
        "the host device holds {host} while the link runs"
    );
    assert!(std::path::Path::new("/proc/self/fd").exists());
    link.finish().expect("the account");
    assert!(!has_address(), "{host} is gone with its device");
    // no thread of this process is in the namespace any more, and no descriptor holds it
    let out = std::process::Command::new("lsns")
        .args(["-t", "net", "-n", "-o", "NS"])
        .output()
        .expect("lsns");
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        !listed.split_whitespace().any(|n| n == ns.to_string()),
        "namespace {ns} still listed"
    );
}
