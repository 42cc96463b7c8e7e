//! Where a run's side calls to etcd go (the leases it grants and revokes, the compactions beside
//! its load) and how: the members, the connection settings, the token and the timeout.

use std::time::Duration;

use crate::client::grpc::H2Config;
use crate::config::{Endpoint, WatchConfig};
use crate::net::NetConfig;

/// The members a run may use (its endpoints first), its connection settings, its auth token and
/// its per-request timeout.
#[derive(Debug, Clone)]
pub struct Cluster {
    pub members: Vec<Endpoint>,
    pub net: NetConfig,
    pub h2: H2Config,
    pub token: Option<String>,
    pub timeout: Duration,
}

impl Cluster {
    /// The watch benchmark's: its endpoints, its settings, the put timeout per request.
    pub fn watch(cfg: &WatchConfig) -> Cluster {
        Cluster {
            members: cfg.endpoints.clone(),
            net: cfg.net.clone(),
            h2: cfg.h2,
            token: None,
            timeout: cfg.put_timeout,
        }
    }
}
