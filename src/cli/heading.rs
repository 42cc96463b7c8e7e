//! The headings `--help` groups the flags under (the man pages' sections too), in the order
//! a load command shows them; a command's own flags come first, under `Options`.

pub const REQUEST: &str = "Request";
pub const STREAMS: &str = "Streams";
pub const LOAD: &str = "Load";
pub const CONNECTIONS: &str = "Connections";
pub const HTTP1: &str = "HTTP/1.1";
pub const HTTP2: &str = "HTTP/2";
pub const TLS: &str = "TLS";
pub const ETCD: &str = "etcd";
pub const OUTPUT: &str = "Output";
pub const MEASUREMENT: &str = "Measurement";
pub const THRESHOLDS: &str = "Thresholds";
pub const CAPACITY: &str = "Capacity search";
pub const DISTRIBUTED: &str = "Distributed runs";
pub const FAULTS: &str = "Faults";
