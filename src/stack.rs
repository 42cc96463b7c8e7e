//! Which stack carries a run's requests: the one name every layer uses for it, from the
//! command line to the report. Imports nothing of the crate.

use std::fmt;

/// Which stack carries the requests.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    /// HTTP/1.1
    Http,
    /// plain HTTP/2 (requests with bodies, no gRPC framing), on the wire client
    H2,
    Grpc,
    /// HTTP/3 over QUIC (plain requests, as `H2`)
    H3,
}

impl Proto {
    /// Every stack, in the order the reports list them.
    pub const ALL: [Proto; 4] = [Proto::Http, Proto::H2, Proto::Grpc, Proto::H3];

    pub fn name(self) -> &'static str {
        match self {
            Proto::Http => "http",
            Proto::H2 => "h2",
            Proto::Grpc => "grpc",
            Proto::H3 => "h3",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Proto::Http => "HTTP/1.1",
            Proto::H2 => "HTTP/2",
            Proto::Grpc => "gRPC",
            Proto::H3 => "HTTP/3",
        }
    }
}

impl fmt::Display for Proto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.title())
    }
}
