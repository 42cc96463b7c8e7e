//! `wirebench http --targets FILE`: the requests of a targets file (vegeta's formats, read by
//! `wirebench_wire::targets`), their body files read relative to it, all to one origin.

use std::collections::HashMap;

use bytes::Bytes;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::common::{parse_headers, read_limited};
use super::error::ArgError;
use super::limits::MAX_BODY_FILE;
use crate::config::{Endpoint, HttpHead, HttpRequestSpec, parse_url};
use wirebench_wire::targets::{self, Body};

/// The largest targets file read: it is held in memory.
const MAX_TARGETS_FILE: u64 = 64 << 20;

/// The requests of `file` (each with the `-H` headers `extra` after its own), their weights
/// (empty when every weight is 1: each in turn) and the one endpoint they go to.
pub(super) fn read(
    file: &Path,
    extra: &[String],
) -> Result<(Vec<HttpRequestSpec>, Vec<u32>, Endpoint), ArgError> {
    let text = read_limited("--targets", file, MAX_TARGETS_FILE)?;
    let text = String::from_utf8(text).map_err(|_| bad(file, "not UTF-8 text".to_string()))?;
    let list = targets::parse(&text).map_err(|e| bad(file, e.to_string()))?;
    let extra = parse_headers(extra)?;
    let dir = file.parent().unwrap_or(Path::new("."));
    let mut bodies: HashMap<String, Bytes> = HashMap::new();
    let mut body_bytes = 0u64;
    let mut origin: Option<(Endpoint, usize)> = None;
    let mut requests = Vec::with_capacity(list.len());
    for t in &list {
        let (endpoint, path) =
            parse_url(&t.url).map_err(|e| bad(file, format!("line {}: {e}", t.line)))?;
        match &origin {
            None => origin = Some((endpoint, t.line)),
            Some((first, line))
                if first.authority != endpoint.authority || first.tls != endpoint.tls =>
            {
                return Err(bad(
                    file,
                    format!(
                        "line {}: {} is another origin than line {line}'s {}: every target \
                         goes to one",
                        t.line, t.url, first.url
                    ),
                ));
            }
            Some(_) => {}
        }
        let body = match &t.body {
            Body::None => None,
            Body::Bytes(b) => Some(Bytes::copy_from_slice(b)),
            Body::File(name) => {
                if !bodies.contains_key(name) {
                    let path: PathBuf = dir.join(name);
                    let b = read_limited("--targets body", &path, MAX_BODY_FILE)?;
                    body_bytes += b.len() as u64;
                    if body_bytes > MAX_BODY_FILE {
                        return Err(bad(
                            file,
                            format!(
                                "line {}: the body files add up to more than {MAX_BODY_FILE} B",
                                t.line
                            ),
                        ));
                    }
                    bodies.insert(name.clone(), Bytes::from(b));
                }
                bodies.get(name).cloned()
            }
        };
        let mut headers = t.headers.clone();
        headers.extend(extra.iter().cloned());
        requests.push(HttpRequestSpec {
            head: Arc::new(HttpHead {
                method: t.method.clone(),
                path,
                headers,
            }),
            body,
        });
    }
    let weights: Vec<u32> = list.iter().map(|t| t.weight).collect();
    let weights = if weights.iter().all(|&w| w == 1) {
        Vec::new()
    } else {
        weights
    };
    let Some((endpoint, _)) = origin else {
        return Err(bad(file, "no targets".to_string()));
    };
    Ok((requests, weights, endpoint))
}

fn bad(file: &Path, what: String) -> ArgError {
    ArgError::Targets {
        path: file.to_path_buf(),
        what,
    }
}
