//! The HTTP/3 reference load client: quinn + the h3 crate, used the way their documentation
//! shows, on one thread, as the peer wirebench's HTTP/3 client is measured against.
//!
//! One current-thread tokio runtime (one OS thread, like `h2load -t1`); `--conns N` QUIC
//! connections, each with `-m M` requests in flight in a closed loop (each of the M tasks sends
//! its next request once its answer is complete); `-n TOTAL` requests or `-d SECONDS`. Every
//! request is `POST URL` with `--data` as a JSON body; an answer succeeds when its status is 200
//! and its body has been read to the end. quinn does its own UDP IO (quinn-udp, with GSO/GRO
//! where the kernel has them) at its default transport settings.
//!
//! ```text
//! h3_reference [--conns N] [-m M] (-n TOTAL | -d SECONDS) --cacert PEM https://HOST:PORT/PATH
//! ```
//!
//! Prints one line, `N succeeded, F failed, T s, R req/s` (T from the first request to the last
//! answer, connections already up); an error is one line on stderr and exit status 1.

use std::cell::Cell;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use bytes::{Buf, Bytes};
use clap::Parser;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use http::{Request, StatusCode, Uri};
use quinn::crypto::rustls::QuicClientConfig;
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// wirebench echo's default request body (its default ping, "Hello, world!").
const DEFAULT_BODY: &str = r#"{"ping":"Hello, world!"}"#;

type Sender = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// HTTP/3 load from quinn + h3, closed loop, on one thread.
#[derive(Parser)]
#[command(name = "h3_reference")]
#[command(group = clap::ArgGroup::new("bound").required(true).args(["requests", "duration"]))]
struct Opts {
    /// https://HOST:PORT/PATH (http:// is taken as https://)
    url: String,
    /// QUIC connections
    #[arg(long, default_value_t = 1)]
    conns: usize,
    /// Requests in flight per connection (concurrent streams)
    #[arg(short = 'm', long = "streams", default_value_t = 1)]
    streams: usize,
    /// Requests in all
    #[arg(short = 'n', long = "requests")]
    requests: Option<u64>,
    /// Seconds of load (no new request starts after them)
    #[arg(short = 'd', long = "duration")]
    duration: Option<f64>,
    /// PEM certificate(s) to trust
    #[arg(long)]
    cacert: PathBuf,
    /// Request body, sent with content-type application/json
    #[arg(long, default_value = DEFAULT_BODY)]
    data: String,
}

/// Where requests go: the address to connect to, the TLS name, and the request URI.
struct Target {
    addr: SocketAddr,
    server_name: String,
    uri: Uri,
}

impl Target {
    fn parse(url: &str) -> anyhow::Result<Target> {
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"))
            .ok_or_else(|| anyhow!("{url}: the URL must start with https:// or http://"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => rest.split_at(i),
            None => (rest, "/"),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !p.contains(']') => {
                let port: u16 = p
                    .parse()
                    .with_context(|| format!("{url}: bad port {p:?}"))?;
                (h, port)
            }
            _ => (authority, 443),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            bail!("{url}: no host");
        }
        let addr = (host, port)
            .to_socket_addrs()
            .with_context(|| format!("resolving {host}"))?
            .next()
            .ok_or_else(|| anyhow!("{host}: no address"))?;
        let uri = format!("https://{authority}{path}")
            .parse()
            .with_context(|| format!("{url}: not a valid URI"))?;
        Ok(Target {
            addr,
            server_name: host.to_string(),
            uri,
        })
    }
}

/// The request every task sends, shared.
struct Work {
    uri: Uri,
    body: Bytes,
    content_length: HeaderValue,
    /// requests not yet started (`-n`)
    left: Option<Cell<u64>>,
    /// no request starts after this (`-d`)
    until: Option<Instant>,
}

impl Work {
    /// Whether one more request may start (and takes it from `-n`'s budget).
    fn take(&self) -> bool {
        if let Some(until) = self.until
            && Instant::now() >= until
        {
            return false;
        }
        match &self.left {
            Some(left) if left.get() == 0 => false,
            Some(left) => {
                left.set(left.get() - 1);
                true
            }
            None => true,
        }
    }
}

/// TLS 1.3 with ring, trusting only `cacert`, ALPN h3.
fn tls(cacert: &Path) -> anyhow::Result<rustls::ClientConfig> {
    let mut roots = RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(cacert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .with_context(|| format!("reading {}", cacert.display()))?;
    if certs.is_empty() {
        bail!("{}: no certificate", cacert.display());
    }
    for cert in certs {
        roots.add(cert).context("adding a --cacert certificate")?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"h3".to_vec()];
    Ok(cfg)
}

/// One request: sent whole, its answer read to the end; true when the status is 200.
async fn exchange(send: &mut Sender, work: &Work) -> anyhow::Result<bool> {
    let req = Request::post(work.uri.clone())
        .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
        .header(CONTENT_LENGTH, work.content_length.clone())
        .body(())?;
    let mut stream = send.send_request(req).await?;
    stream.send_data(work.body.clone()).await?;
    stream.finish().await?;
    let resp = stream.recv_response().await?;
    while let Some(mut chunk) = stream.recv_data().await? {
        chunk.advance(chunk.remaining());
    }
    Ok(resp.status() == StatusCode::OK)
}

/// One of the closed loops: requests one after another on `send` until the work runs out or
/// the connection is gone. Returns (succeeded, failed).
async fn closed_loop(mut send: Sender, quic: quinn::Connection, work: Rc<Work>) -> (u64, u64) {
    let (mut ok, mut failed) = (0, 0);
    while work.take() {
        match exchange(&mut send, &work).await {
            Ok(true) => ok += 1,
            Ok(false) => failed += 1,
            Err(_) => {
                failed += 1;
                if quic.close_reason().is_some() {
                    break;
                }
            }
        }
    }
    (ok, failed)
}

async fn run(opts: Opts) -> anyhow::Result<(u64, u64, Duration)> {
    if opts.conns == 0 || opts.streams == 0 {
        bail!("--conns and -m must be at least 1");
    }
    let target = Target::parse(&opts.url)?;
    let crypto = QuicClientConfig::try_from(tls(&opts.cacert)?)?;
    let bind: SocketAddr = if target.addr.is_ipv6() {
        "[::]:0".parse()?
    } else {
        "0.0.0.0:0".parse()?
    };
    let mut endpoint = quinn::Endpoint::client(bind).context("opening the UDP socket")?;
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));

    let mut conns = Vec::with_capacity(opts.conns);
    for _ in 0..opts.conns {
        let quic = endpoint
            .connect(target.addr, &target.server_name)?
            .await
            .with_context(|| format!("connecting to {}", target.addr))?;
        let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
            .await
            .context("starting HTTP/3")?;
        tokio::task::spawn_local(async move {
            // ends when the connection does; how it ended shows in the requests' results
            let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        });
        conns.push((quic, send));
    }

    let start = Instant::now();
    let work = Rc::new(Work {
        uri: target.uri,
        content_length: HeaderValue::from(opts.data.len()),
        body: Bytes::from(opts.data),
        left: opts.requests.map(Cell::new),
        until: opts.duration.map(|d| start + Duration::from_secs_f64(d)),
    });
    let mut tasks = Vec::with_capacity(opts.conns * opts.streams);
    for (quic, send) in &conns {
        for _ in 0..opts.streams {
            let (send, quic, work) = (send.clone(), quic.clone(), work.clone());
            tasks.push(tokio::task::spawn_local(closed_loop(send, quic, work)));
        }
    }
    let (mut ok, mut failed) = (0, 0);
    for task in tasks {
        let (o, f) = task.await.context("a request task panicked")?;
        ok += o;
        failed += f;
    }
    let elapsed = start.elapsed();

    for (quic, _) in &conns {
        quic.close(quinn::VarInt::from_u32(0x100), b""); // H3_NO_ERROR
    }
    drop(conns);
    endpoint.wait_idle().await;
    Ok((ok, failed, elapsed))
}

fn main() -> ExitCode {
    let opts = match Opts::try_parse() {
        Ok(o) => o,
        Err(e) if !e.use_stderr() => e.exit(), // --help, --version
        Err(e) => {
            // clap's message on one line, without its usage lines
            let text = e.render().to_string();
            let words: Vec<&str> = text
                .lines()
                .take_while(|l| !l.starts_with("Usage:"))
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            eprintln!(
                "h3_reference: {}",
                words.join(" ").trim_start_matches("error: ")
            );
            return ExitCode::FAILURE;
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("h3_reference: starting tokio: {e}");
            return ExitCode::FAILURE;
        }
    };
    let local = tokio::task::LocalSet::new();
    match local.block_on(&rt, run(opts)) {
        Ok((ok, failed, elapsed)) => {
            let secs = elapsed.as_secs_f64();
            let rps = if secs > 0.0 { ok as f64 / secs } else { 0.0 };
            println!("{ok} succeeded, {failed} failed, {secs:.3} s, {rps:.0} req/s");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("h3_reference: {e:#}");
            ExitCode::FAILURE
        }
    }
}
