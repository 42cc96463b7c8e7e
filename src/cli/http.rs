//! `wirebench http URL`: any HTTP server, over HTTP/1.1.

use std::path::PathBuf;

use clap::Args;

use super::Action;
use super::common::{RunArgs, parse_headers, read_limited};
use super::error::ArgError;
use super::heading;
use crate::config::{Endpoint, HttpSpec, Target, WorkloadSpec, parse_url};
use wirebench_wire::http1::RequestTemplate;

/// The largest body file read (`--data-file`, `--data-lines`): they are held in memory.
pub(super) const MAX_DATA_FILE: u64 = 256 << 20;

#[derive(Debug, Args)]
pub struct HttpArgs {
    /// The URL to load: http://host[:port]/path?query or https://...
    pub url: String,
    /// Request method [default: GET, or POST with a body]
    #[arg(short = 'X', long, visible_short_alias = 'm', help_heading = heading::REQUEST)]
    pub method: Option<String>,
    /// Extra header, NAME:VALUE (repeatable)
    #[arg(short = 'H', long = "header", help_heading = heading::REQUEST)]
    pub headers: Vec<String>,
    /// Request body
    #[arg(
        short = 'd',
        long,
        conflicts_with_all = ["data_file", "data_lines"],
        help_heading = heading::REQUEST
    )]
    pub data: Option<String>,
    /// Request body from a file
    #[arg(long, conflicts_with = "data_lines", help_heading = heading::REQUEST)]
    pub data_file: Option<PathBuf>,
    /// Bodies from a file, one per line, used in turn (request i gets line i mod N)
    #[arg(long, help_heading = heading::REQUEST)]
    pub data_lines: Option<PathBuf>,
    /// Status codes that count as OK: CODE or LOW-HIGH; redirects are never followed, their
    /// status is counted
    #[arg(long, default_value = "200-299", help_heading = heading::REQUEST)]
    pub ok_status: String,
    /// Connect to this Unix domain socket instead of the URL's host and port (the URL still
    /// gives the Host header, the path and the scheme), as curl's --unix-socket
    #[arg(long, value_name = "PATH")]
    pub unix_socket: Option<PathBuf>,
}

/// `--ok-status`: `200` or `200-399`, within 100..=599.
fn parse_status_range(s: &str) -> Result<(u16, u16), ArgError> {
    let bad = || ArgError::OkStatus(s.to_string());
    let (lo, hi) = match s.split_once('-') {
        Some((lo, hi)) => (lo.trim(), hi.trim()),
        None => (s.trim(), s.trim()),
    };
    let lo: u16 = lo.parse().map_err(|_| bad())?;
    let hi: u16 = hi.parse().map_err(|_| bad())?;
    if !(100..=599).contains(&lo) || !(100..=599).contains(&hi) || lo > hi {
        return Err(bad());
    }
    Ok((lo, hi))
}

/// One body per line (LF or CRLF); a last line without a newline counts, the empty piece after
/// a final newline does not.
fn lines(data: &[u8]) -> Vec<Vec<u8>> {
    let mut out: Vec<Vec<u8>> = data
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l).to_vec())
        .collect();
    if data.ends_with(b"\n") || data.is_empty() {
        out.pop();
    }
    out
}

impl HttpArgs {
    pub(super) fn into_run(self, run: RunArgs) -> Result<Action, ArgError> {
        let (spec, endpoints) = self.spec()?;
        let cfg = run.into_config(spec, endpoints, Target::All)?;
        Ok(Action::Run {
            cfg,
            embedded: None,
        })
    }

    /// The workload and the endpoint these flags name.
    pub(super) fn spec(self) -> Result<(WorkloadSpec, Vec<Endpoint>), ArgError> {
        let (mut endpoint, path) = parse_url(&self.url)?;
        if let Some(p) = &self.unix_socket {
            endpoint.unix = Some(p.as_path().into());
        }
        let bodies = match (&self.data, &self.data_file, &self.data_lines) {
            (Some(d), _, _) => vec![d.clone().into_bytes()],
            (_, Some(f), _) => vec![read_limited("--data-file", f, MAX_DATA_FILE)?],
            (_, _, Some(f)) => {
                let bodies = lines(&read_limited("--data-lines", f, MAX_DATA_FILE)?);
                if bodies.is_empty() {
                    return Err(ArgError::NoLines(f.clone()));
                }
                bodies
            }
            _ => Vec::new(),
        };
        let has_body = self.data.is_some() || self.data_file.is_some() || self.data_lines.is_some();
        let method = match self.method {
            Some(m) => m,
            None if has_body => "POST".to_string(),
            None => "GET".to_string(),
        };
        let headers = parse_headers(&self.headers)?;
        // the template's own checks (method token, header names and values, reserved names)
        let pairs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        RequestTemplate::new(&method, &path, &endpoint.authority, &pairs).map_err(|source| {
            ArgError::Request {
                url: self.url.clone(),
                source,
            }
        })?;
        let spec = WorkloadSpec::Http(HttpSpec {
            method,
            path,
            headers,
            bodies,
            ok_status: parse_status_range(&self.ok_status)?,
        });
        Ok((spec, vec![endpoint]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_ranges() {
        assert_eq!(parse_status_range("200-299").ok(), Some((200, 299)));
        assert_eq!(parse_status_range("204").ok(), Some((204, 204)));
        assert_eq!(parse_status_range(" 200 - 399 ").ok(), Some((200, 399)));
        for bad in ["", "2xx", "300-200", "99", "200-600", "-"] {
            assert!(parse_status_range(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn one_body_per_line() {
        assert_eq!(
            lines(b"a\nbc\r\n\nd"),
            vec![b"a".to_vec(), b"bc".to_vec(), vec![], b"d".to_vec()]
        );
        assert_eq!(lines(b"a\n"), vec![b"a".to_vec()]);
        assert!(lines(b"").is_empty());
        assert_eq!(lines(b"\n"), vec![Vec::<u8>::new()]);
    }
}
