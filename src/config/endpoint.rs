//! One server address as given and resolved (`Endpoint`: `http://host:port`, `https://...`,
//! `unix:///path`), and a URL split into its endpoint and its path.

use std::net::{SocketAddr, ToSocketAddrs};

use super::ValueError;

/// One server address as given (`http://host:port`) and resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub url: String,
    /// `host:port` as written, for the Host header and :authority
    pub authority: String,
    /// the host part alone (TLS server name)
    pub host: String,
    /// the address connected to (0.0.0.0:0 for a Unix socket, which `unix` names)
    pub addr: SocketAddr,
    /// `https://`
    pub tls: bool,
    /// `unix:///path`: a Unix domain socket in place of `addr` (plain HTTP/1.1, h2 and gRPC)
    pub unix: Option<std::sync::Arc<std::path::Path>>,
}

impl Endpoint {
    /// Where its connections go.
    pub fn dest(&self) -> crate::net::Dest {
        match &self.unix {
            Some(p) => crate::net::Dest::Unix(p.clone()),
            None => crate::net::Dest::Inet(self.addr),
        }
    }

    /// Parses `http://host:port`, `https://host:port` (or `host:port`); the host may be a name,
    /// IPv4 or `[IPv6]`; or `unix:///path` (`unix:PATH`), a Unix domain socket, whose requests
    /// say `localhost` as their host.
    pub fn parse(url: &str) -> Result<Endpoint, ValueError> {
        if let Some(path) = url.strip_prefix("unix:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() || path.ends_with('/') {
                return Err(ValueError::UnixPath(url.to_string()));
            }
            return Ok(Endpoint {
                url: url.to_string(),
                authority: "localhost".to_string(),
                host: "localhost".to_string(),
                addr: SocketAddr::from(([0, 0, 0, 0], 0)),
                tls: false,
                unix: Some(std::path::Path::new(path).into()),
            });
        }
        let (rest, tls) = if let Some(r) = url.strip_prefix("http://") {
            (r, false)
        } else if let Some(r) = url.strip_prefix("https://") {
            (r, true)
        } else if url.contains("://") {
            return Err(ValueError::EndpointScheme(url.to_string()));
        } else {
            (url, false)
        };
        let authority = rest.trim_end_matches('/');
        if authority.is_empty() || authority.contains('/') || authority.contains('@') {
            return Err(ValueError::EndpointForm(url.to_string()));
        }
        let has_port = match authority.rfind(']') {
            Some(i) => authority[i..].contains(':'),
            None => authority.contains(':'),
        };
        if !has_port {
            return Err(ValueError::EndpointPort(url.to_string()));
        }
        let addr = authority
            .to_socket_addrs()
            .map_err(|source| ValueError::Resolve {
                url: url.to_string(),
                source,
            })?
            .next()
            .ok_or_else(|| ValueError::NoAddress(url.to_string()))?;
        let host = match authority.rfind(':') {
            Some(i) => &authority[..i],
            None => authority,
        };
        Ok(Endpoint {
            url: url.to_string(),
            authority: authority.to_string(),
            host: host.to_string(),
            addr,
            tls,
            unix: None,
        })
    }
}

/// Splits an `http://` or `https://` URL into its endpoint and its path and query (`/` when it
/// has none; a fragment is dropped). The port defaults to the scheme's (80, 443), and the
/// endpoint's authority is the URL's as written (the Host header).
pub fn parse_url(url: &str) -> Result<(Endpoint, String), ValueError> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| ValueError::UrlForm(url.to_string()))?;
    let default_port = match scheme {
        "http" => 80,
        "https" => 443,
        _ => return Err(ValueError::UrlScheme(url.to_string())),
    };
    let rest = rest.split('#').next().unwrap_or_default();
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    };
    if authority.is_empty() || authority.contains('@') {
        return Err(ValueError::UrlHost(url.to_string()));
    }
    let has_port = match authority.rfind(']') {
        Some(i) => authority[i..].contains(':'),
        None => authority.contains(':'),
    };
    let with_port = if has_port {
        authority.to_string()
    } else {
        format!("{authority}:{default_port}")
    };
    let mut endpoint = Endpoint::parse(&format!("{scheme}://{with_port}")).map_err(|e| {
        ValueError::UrlEndpoint {
            url: url.to_string(),
            endpoint: Box::new(e),
        }
    })?;
    endpoint.url = url.to_string();
    endpoint.authority = authority.to_string();
    Ok((endpoint, path))
}
