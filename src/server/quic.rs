//! QUIC for the built-in server: the certificate (`--tls-cert`'s, or one made at start), the
//! transport settings, one UDP socket per thread on the TCP listeners' port (SO_REUSEPORT: the
//! kernel keeps each client's datagrams on one socket), and each thread's quinn endpoint, whose
//! connections speak HTTP/3 (`http3.rs`).

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use socket2::{Domain, Protocol, Socket, Type};

use crate::server::{ServeConfig, http3, set_freebind};

/// The streams a client may have open at once when `--max-concurrent-streams` does not say.
/// The h2 side announces no limit; QUIC needs one, and this one is far above what a client
/// runs on one connection.
pub const DEFAULT_MAX_STREAMS: u32 = 1000;

/// The idle timeout when `--max-conn-idle` does not say.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(30);

/// The UDP socket buffers asked for (the kernel may give less).
const UDP_BUFFER: usize = 4 << 20;

/// How long the endpoints get at stop to tell their connections.
const CLOSE_GRACE: Duration = Duration::from_millis(300);

/// Why HTTP/3 cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum QuicError {
    #[error("cannot make the HTTP/3 certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("HTTP/3 TLS: {0}")]
    Tls(#[from] rustls::Error),
    #[error("HTTP/3 TLS: no TLS 1.3 cipher suite that QUIC can start with")]
    NoInitialSuite,
}

impl From<QuicError> for io::Error {
    fn from(e: QuicError) -> io::Error {
        io::Error::other(e)
    }
}

/// The certificate HTTP/3 presents when the server made it: DER, and PEM for a file.
#[derive(Debug, Clone)]
pub struct Generated {
    pub der: CertificateDer<'static>,
    pub pem: String,
}

/// The QUIC side's configuration, the same for every thread.
pub(super) struct Quic {
    pub(super) config: quinn::ServerConfig,
    /// none when `--tls-cert` gave the certificate
    pub(super) generated: Option<Generated>,
}

/// The QUIC server configuration of `cfg`: its TLS certificate with ALPN h3, or a self-signed
/// one made now for "localhost", the loopback addresses and the bind address.
pub(super) fn config(cfg: &ServeConfig) -> Result<Quic, QuicError> {
    let (tls, generated) = match &cfg.tls {
        Some(tls) => {
            let mut tls = (**tls).clone();
            tls.alpn_protocols = vec![b"h3".to_vec()];
            (tls, None)
        }
        None => {
            let (tls, generated) = self_signed(cfg.addr.ip())?;
            (tls, Some(generated))
        }
    };
    let mut tls = tls;
    // 0-RTT: a resuming client's requests are answered before its handshake completes (QUIC
    // takes all or nothing: u32::MAX)
    tls.max_early_data_size = u32::MAX;
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(Arc::new(tls))
        .map_err(|_| QuicError::NoInitialSuite)?;
    let mut transport = quinn::TransportConfig::default();
    transport.max_concurrent_bidi_streams(
        cfg.max_concurrent_streams
            .unwrap_or(DEFAULT_MAX_STREAMS)
            .into(),
    );
    // a duration beyond QUIC's range (2^62 ms) is no timeout
    let idle = cfg.max_conn_idle.unwrap_or(DEFAULT_IDLE);
    transport.max_idle_timeout(quinn::IdleTimeout::try_from(idle).ok());
    transport.enable_segmentation_offload(cfg.udp_offload);
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(Arc::new(transport));
    // a client that moves lands on another thread's socket, whose endpoint does not know it
    config.migration(false);
    Ok(Quic { config, generated })
}

/// A self-signed certificate and the TLS 1.3 configuration serving it with ALPN h3.
fn self_signed(bind: IpAddr) -> Result<(rustls::ServerConfig, Generated), QuicError> {
    let addr_unspecified = bind.is_unspecified();
    let mut names = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
    let bind = bind.to_string();
    if !addr_unspecified && !names.contains(&bind) {
        names.push(bind);
    }
    let made = rcgen::generate_simple_self_signed(names)?;
    let generated = Generated {
        der: made.cert.der().clone(),
        pem: made.cert.pem(),
    };
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(vec![generated.der.clone()], key)?;
    tls.alpn_protocols = vec![b"h3".to_vec()];
    Ok((tls, generated))
}

/// A UDP socket on `addr` that other threads' sockets share (SO_REUSEPORT), with room for
/// bursts; IP_FREEBIND as the TCP listeners have it.
pub(super) fn bind(addr: SocketAddr) -> io::Result<std::net::UdpSocket> {
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    s.set_reuse_port(true)?;
    s.set_nonblocking(true)?;
    set_freebind(&s);
    // best effort: the kernel caps both at its maximum unless privileged
    let _ = s.set_recv_buffer_size(UDP_BUFFER);
    let _ = s.set_send_buffer_size(UDP_BUFFER);
    s.bind(&addr.into())?;
    Ok(s.into())
}

/// An endpoint on `socket` in the current runtime (its driver is a task there).
pub(super) fn endpoint(
    socket: std::net::UdpSocket,
    config: quinn::ServerConfig,
) -> io::Result<quinn::Endpoint> {
    quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(config),
        socket,
        Arc::new(quinn::TokioRuntime),
    )
}

/// Accepts connections until the endpoint closes, each served by a task of this thread.
pub(super) async fn accept(endpoint: quinn::Endpoint, cfg: Rc<ServeConfig>) {
    while let Some(incoming) = endpoint.accept().await {
        tokio::task::spawn_local(http3::serve(incoming, cfg.clone()));
    }
}

/// Closes every connection of `endpoint` and gives the close a moment to be sent.
pub(super) async fn close(endpoint: &quinn::Endpoint) {
    endpoint.close(http3::H3_NO_ERROR, b"server stopping");
    let _ = tokio::time::timeout(CLOSE_GRACE, endpoint.wait_idle()).await;
}
