//! TLS with rustls (ring provider): client and server configurations from PEM files, ALPN per
//! protocol (`h2` for gRPC, `http/1.1` for HTTP/1.1).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, ring};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};

/// What the user gave for TLS (`--cacert`, `--cert`, `--key`, `--insecure-skip-verify`, `--sni`).
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    pub cacert: Option<PathBuf>,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub insecure_skip_verify: bool,
    pub sni: Option<String>,
    /// resume TLS sessions on new connections (rustls' in-memory session cache; `--tls-resume`)
    pub resume: bool,
}

/// Ready-made client configurations, one per ALPN protocol.
#[derive(Debug, Clone)]
pub struct TlsClient {
    pub http1: Arc<ClientConfig>,
    pub h2: Arc<ClientConfig>,
    /// server name to present and verify instead of the endpoint's host
    pub sni: Option<String>,
}

/// Why a TLS configuration could not be made (the words name the file or the flag at fault).
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{}: {source}", path.display())]
    Pem {
        path: PathBuf,
        source: rustls::pki_types::pem::Error,
    },
    #[error("{}: no PEM certificate in it", path.display())]
    NoCertificate { path: PathBuf },
    #[error("{}: {source}", path.display())]
    BadCertificate {
        path: PathBuf,
        source: rustls::Error,
    },
    #[error("https needs --cacert FILE (or --insecure-skip-verify)")]
    NoCacert,
    #[error(
        "h3 needs --cacert FILE (or --insecure-skip-verify) for a server other than the built-in one"
    )]
    NoQuicTrust,
    #[error("the built-in server's certificate: {0}")]
    GeneratedCertificate(rustls::Error),
    #[error("--cert and --key go together")]
    CertWithoutKey,
    #[error("--cert/--key: {0}")]
    ClientCert(rustls::Error),
    #[error("--tls-cert/--tls-key: {0}")]
    ServerCert(rustls::Error),
    /// the crypto provider refused the protocol versions
    #[error("{0}")]
    Versions(rustls::Error),
    #[error("server name {name:?}: {source}")]
    ServerName {
        name: String,
        source: rustls::pki_types::InvalidDnsNameError,
    },
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}

fn certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = |source| TlsError::Pem {
        path: path.to_path_buf(),
        source,
    };
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(pem)?
        .collect::<Result<_, _>>()
        .map_err(pem)?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}

fn key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|source| TlsError::Pem {
        path: path.to_path_buf(),
        source,
    })
}

/// The trust and client authentication every client configuration takes from the options:
/// `--insecure-skip-verify`, or `--cacert` (plus `trusted`, the built-in server's generated
/// certificate); `--cert`/`--key`. `versions`: the TLS versions offered; `no_trust`: the error
/// when nothing is trusted.
fn client_config(
    o: &TlsOptions,
    versions: &[&'static rustls::SupportedProtocolVersion],
    trusted: Option<&CertificateDer<'static>>,
    no_trust: fn() -> TlsError,
) -> Result<ClientConfig, TlsError> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(versions)
        .map_err(TlsError::Versions)?;
    let builder = if o.insecure_skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider())))
    } else {
        let mut roots = RootCertStore::empty();
        if let Some(ca) = &o.cacert {
            for c in certs(ca)? {
                roots.add(c).map_err(|source| TlsError::BadCertificate {
                    path: ca.clone(),
                    source,
                })?;
            }
        }
        if let Some(c) = trusted {
            roots
                .add(c.clone())
                .map_err(TlsError::GeneratedCertificate)?;
        }
        if roots.is_empty() {
            return Err(no_trust());
        }
        builder.with_root_certificates(roots)
    };
    let mut cfg = match (&o.cert, &o.key) {
        (Some(c), Some(k)) => builder
            .with_client_auth_cert(certs(c)?, key(k)?)
            .map_err(TlsError::ClientCert)?,
        (None, None) => builder.with_no_client_auth(),
        _ => return Err(TlsError::CertWithoutKey),
    };
    if !o.resume {
        cfg.resumption = rustls::client::Resumption::disabled();
    }
    Ok(cfg)
}

impl TlsClient {
    /// `keylog`: `--tls-keylog`, every connection's secrets written there.
    pub fn new(
        o: &TlsOptions,
        keylog: Option<Arc<super::keylog::KeyLogFile>>,
    ) -> Result<TlsClient, TlsError> {
        let build = |alpn: &[u8]| -> Result<Arc<ClientConfig>, TlsError> {
            let mut cfg = client_config(o, rustls::DEFAULT_VERSIONS, None, || TlsError::NoCacert)?;
            cfg.alpn_protocols = vec![alpn.to_vec()];
            if let Some(k) = &keylog {
                cfg.key_log = k.clone();
            }
            Ok(Arc::new(cfg))
        };
        Ok(TlsClient {
            http1: build(b"http/1.1")?,
            h2: build(b"h2")?,
            sni: o.sni.clone(),
        })
    }

    /// A configuration for QUIC (`--proto h3`): TLS 1.3 only, ALPN `h3`, the options' trust
    /// (`--cacert`, `--insecure-skip-verify`) plus `trusted` (the built-in server's generated
    /// certificate, when the run started it), and `key_log` receiving every secret.
    pub fn quic(
        o: &TlsOptions,
        trusted: Option<&CertificateDer<'static>>,
        key_log: Arc<dyn rustls::KeyLog>,
    ) -> Result<Arc<ClientConfig>, TlsError> {
        let mut cfg = client_config(o, &[&rustls::version::TLS13], trusted, || {
            TlsError::NoQuicTrust
        })?;
        cfg.alpn_protocols = vec![b"h3".to_vec()];
        cfg.key_log = key_log;
        // 0-RTT with a resumed session: requests go before the handshake completes
        cfg.enable_early_data = o.resume;
        Ok(Arc::new(cfg))
    }

    /// The name to present for `host` (the endpoint's host, or `--sni`).
    pub fn server_name(&self, host: &str) -> Result<ServerName<'static>, TlsError> {
        let name = self.sni.as_deref().unwrap_or(host);
        let name = name.trim_start_matches('[').trim_end_matches(']');
        ServerName::try_from(name.to_string()).map_err(|source| TlsError::ServerName {
            name: name.to_string(),
            source,
        })
    }
}

/// The built-in server's TLS: certificate chain and key from PEM, ALPN h2 and http/1.1.
pub fn server_config(cert: &Path, key_path: &Path) -> Result<Arc<ServerConfig>, TlsError> {
    let mut cfg = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Versions)?
        .with_no_client_auth()
        .with_single_cert(certs(cert)?, key(key_path)?)
        .map_err(TlsError::ServerCert)?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// `--insecure-skip-verify`: accepts any certificate, but still checks the handshake signatures
/// so the session is at least bound to the key the server presented.
#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The QUIC client's TLS for a run (`--proto h3`): the options it is built from, the
/// configuration every connection clones (giving it a `Secrets` of its own) once built,
/// `--tls-keylog`.
#[derive(Debug)]
pub struct QuicTls {
    options: TlsOptions,
    config: Option<Arc<rustls::ClientConfig>>,
    pub keylog: Option<Arc<super::keylog::KeyLogFile>>,
}

impl QuicTls {
    /// Not built yet: `trusting` builds it.
    pub fn new(options: TlsOptions, keylog: Option<Arc<super::keylog::KeyLogFile>>) -> QuicTls {
        QuicTls {
            options,
            config: None,
            keylog,
        }
    }

    /// Built from the options, trusting `cert` besides them (the built-in server's).
    pub fn trusting(&self, cert: Option<&CertificateDer<'static>>) -> Result<QuicTls, TlsError> {
        let keylog: Arc<dyn rustls::KeyLog> = match &self.keylog {
            Some(f) => f.clone(),
            None => Arc::new(rustls::NoKeyLog),
        };
        Ok(QuicTls {
            options: self.options.clone(),
            config: Some(TlsClient::quic(&self.options, cert, keylog)?),
            keylog: self.keylog.clone(),
        })
    }

    /// `--sni`: the name to present instead of the endpoint's host.
    pub fn sni(&self) -> Option<&str> {
        self.options.sni.as_deref()
    }

    /// A connection's configuration: the run's, its secrets logged into `secrets`; `None`
    /// before it is built.
    pub fn for_connection(
        &self,
        secrets: Arc<super::keylog::Secrets>,
    ) -> Option<Arc<rustls::ClientConfig>> {
        let mut c = (**self.config.as_ref()?).clone();
        c.key_log = secrets;
        Some(Arc::new(c))
    }
}
