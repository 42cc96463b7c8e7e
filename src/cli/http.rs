//! `wirebench http URL`: any HTTP server, over HTTP/1.1.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use super::Action;
use super::common::{RunArgs, parse_headers, read_limited};
use super::error::ArgError;
use super::heading;
use super::limits::MAX_BODY_FILE;
use crate::config::{
    Endpoint, HttpHead, HttpRequestSpec, HttpSpec, Target, WorkloadSpec, parse_url,
};

#[derive(Debug, Args)]
pub struct HttpArgs {
    /// The URL to load: http://host[:port]/path?query or https://... Its path and query, the
    /// headers and the body may hold placeholders rendered per request: {{seq}}, {{rand A B}},
    /// {{uuid}}, {{client}}, {{now_ns}} (ghz's {{.RequestNumber}} too)
    #[arg(required_unless_present = "targets")]
    pub url: Option<String>,
    /// Requests from a file, in vegeta's formats: "METHOD URL", header lines and an optional
    /// "@body-file" per target, targets apart by a blank line (or JSON lines); a "# weight: N"
    /// line before a target sends it N times per cycle. Every URL names one origin
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["url", "data", "data_file", "data_lines", "method"],
        help_heading = heading::REQUEST
    )]
    pub targets: Option<PathBuf>,
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
        let ok_status = parse_status_range(&self.ok_status)?;
        let (requests, weights, mut endpoint) = match (&self.targets, &self.url) {
            (Some(file), _) => super::targets::read(file, &self.headers)?,
            (None, Some(url)) => {
                let (endpoint, request) = self.one_request(url)?;
                (request, Vec::new(), endpoint)
            }
            (None, None) => return Err(ArgError::Conflict("a URL or --targets FILE is needed")),
        };
        if let Some(p) = &self.unix_socket {
            endpoint.unix = Some(p.as_path().into());
        }
        let spec = WorkloadSpec::Http(HttpSpec {
            requests,
            weights,
            ok_status,
        });
        // the requests' own checks (method token, header names and values, reserved names,
        // placeholders), here rather than when the run starts
        crate::workload::Workload::check(&spec, std::slice::from_ref(&endpoint))?;
        Ok((spec, vec![endpoint]))
    }

    /// The request of a URL and the flags (several with `--data-lines`: one per body).
    fn one_request(&self, url: &str) -> Result<(Endpoint, Vec<HttpRequestSpec>), ArgError> {
        let (endpoint, path) = parse_url(url)?;
        let bodies = match (&self.data, &self.data_file, &self.data_lines) {
            (Some(d), _, _) => vec![Some(d.clone().into())],
            (_, Some(f), _) => vec![Some(read_limited("--data-file", f, MAX_BODY_FILE)?.into())],
            (_, _, Some(f)) => {
                let bodies = lines(&read_limited("--data-lines", f, MAX_BODY_FILE)?);
                if bodies.is_empty() {
                    return Err(ArgError::NoLines(f.clone()));
                }
                bodies.into_iter().map(|b| Some(b.into())).collect()
            }
            _ => vec![None],
        };
        let has_body = self.data.is_some() || self.data_file.is_some() || self.data_lines.is_some();
        let method = match &self.method {
            Some(m) => m.clone(),
            None if has_body => "POST".to_string(),
            None => "GET".to_string(),
        };
        let head = Arc::new(HttpHead {
            method,
            path,
            headers: parse_headers(&self.headers)?,
        });
        let requests = bodies
            .into_iter()
            .map(|body| HttpRequestSpec {
                head: head.clone(),
                body,
            })
            .collect();
        Ok((endpoint, requests))
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
