//! Free loopback ports, for servers that take their ports on the command line.

use std::net::TcpListener;

/// Two distinct free loopback ports (both listeners are held until both are known).
pub fn free_ports() -> (u16, u16) {
    let ports = free_port_list(2);
    (ports[0], ports[1])
}

/// `n` distinct free loopback ports (every listener is held until all are known).
pub fn free_port_list(n: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0"))
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}

/// A port on which nothing listens (at the time of the call).
pub fn unused_port() -> u16 {
    free_ports().0
}
