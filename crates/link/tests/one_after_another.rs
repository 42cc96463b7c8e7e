//! Links one after the other share the process's address pair (a server bound to the host's
//! address reaches every one), so what one link leaves unfinished would cross the next: a
//! host socket whose last FIN or ACK was still held when its link stopped sends its FIN
//! again, and the next link's namespace answers it with a reset. A link drains before it
//! stops, so the next one carries nothing of it. (Its own file: its own process, where no
//! other test holds a link at the same time.)

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use wirebench_link::io;
use wirebench_link::spec::LinkSpec;

#[test]
fn a_link_stops_after_its_last_close_has_crossed_and_the_next_carries_nothing_of_it() {
    let spec: LinkSpec = "rtt=30ms".parse().expect("a link spec");
    let first = io::start(&spec).expect("the link (root, TUN)");
    let net = first.net().clone();
    let listener = TcpListener::bind(SocketAddr::new(net.host.into(), 0)).expect("listen");
    let to = listener.local_addr().expect("address");
    // the host's side answers the client's close with its own at once
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        let mut buf = [0u8; 16];
        while s.read(&mut buf).is_ok_and(|n| n > 0) {}
    });
    std::thread::spawn(move || {
        net.enter().expect("enter the namespace");
        drop(TcpStream::connect(to).expect("connect through the link"));
    })
    .join()
    .expect("client");
    server.join().expect("server");
    // stopped while the close is under way: the host's FIN is read by now, held 15 ms
    let account = first.finish().expect("the account");
    for (dir, d) in [("up", &account.figures.up), ("down", &account.figures.down)] {
        assert_eq!(d.held_at_end, 0, "{dir}: {d:?}");
        assert_eq!(d.released, d.counts.packets, "{dir}: {d:?}");
    }
    // SYN, ACK, FIN, the last ACK up; SYN-ACK, FIN (with its ACK) down
    assert!(account.figures.up.counts.packets >= 4, "{account:?}");
    assert!(account.figures.down.counts.packets >= 2, "{account:?}");

    let next = io::start(&spec).expect("the next link");
    assert_eq!(
        next.net().host,
        account.host,
        "the same pair, one after the other"
    );
    // the host's first retransmission would come after its RTO (200 ms and more)
    std::thread::sleep(Duration::from_millis(700));
    let after = next.finish().expect("the account");
    assert_eq!(after.figures.up.counts.packets, 0, "{after:?}");
    assert_eq!(after.figures.down.counts.packets, 0, "{after:?}");
}
