//! vegeta's http format: targets separated by blank lines, each `METHOD URL`, header lines and
//! an optional `@PATH`; `#` comments anywhere, `# weight: N` before a request line.

use super::{
    Body, Collected, Target, TargetsError, bad_value, checked, is_token, lines, quoted, trim,
    url_problem, weight, weight_comment,
};

/// Reads the targets of an http-format file.
pub(super) fn parse(text: &str) -> Result<Vec<Target>, TargetsError> {
    let mut done = Collected::default();
    // the target being read: from its request line to the blank line (or end) after it
    let mut current: Option<Target> = None;
    // a `# weight:` comment's weight and line, waiting for its target
    let mut weight_for_next: Option<(u32, usize)> = None;
    for (n, raw) in lines(text) {
        let t = trim(checked(n, raw)?);
        if t.is_empty() {
            if let Some(target) = current.take() {
                done.push(target)?;
            }
            continue;
        }
        if t.starts_with('#') {
            if let Some(number) = weight_comment(t) {
                let w = weight(n, number)?;
                if current.is_some() {
                    return Err(TargetsError::WeightInTarget { line: n });
                }
                if weight_for_next.is_some() {
                    return Err(TargetsError::SecondWeight { line: n });
                }
                weight_for_next = Some((w, n));
            }
            continue;
        }
        if t.starts_with('{') {
            return Err(TargetsError::JsonInHttp { line: n });
        }
        match &mut current {
            None => {
                let (method, url) = request_line(n, t)?;
                let weight = weight_for_next.take().map_or(1, |(w, _)| w);
                current = Some(Target {
                    method: method.to_string(),
                    url: url.to_string(),
                    headers: Vec::new(),
                    body: Body::None,
                    weight,
                    line: n,
                });
            }
            Some(target) if target.body != Body::None => {
                return Err(TargetsError::BodyNotLast { line: n });
            }
            Some(target) => match t.strip_prefix('@') {
                Some(path) => target.body = Body::File(body_path(n, path)?.to_string()),
                None => {
                    let (name, value) = header(n, t)?;
                    target.headers.push((name.to_string(), value.to_string()));
                }
            },
        }
    }
    if let Some(target) = current {
        done.push(target)?;
    }
    if let Some((_, line)) = weight_for_next {
        return Err(TargetsError::WeightWithoutTarget { line });
    }
    Ok(done.targets)
}

/// A request line's method and URL, split at the first run of spaces or tabs.
fn request_line(n: usize, t: &str) -> Result<(&str, &str), TargetsError> {
    let split = t
        .split_once([' ', '\t'])
        .map(|(method, url)| (method, trim(url)))
        .filter(|(method, _)| is_token(method));
    let Some((method, url)) = split else {
        return Err(TargetsError::RequestLine {
            line: n,
            got: quoted(t),
        });
    };
    match url_problem(url) {
        Some(why) => Err(TargetsError::Url { line: n, why }),
        None => Ok((method, url)),
    }
}

/// A header line's name and value, each without the spaces and tabs around it.
fn header(n: usize, t: &str) -> Result<(&str, &str), TargetsError> {
    let Some((name, value)) = t.split_once(':') else {
        return Err(TargetsError::HeaderWithoutColon { line: n });
    };
    let (name, value) = (trim(name), trim(value));
    if !is_token(name) {
        return Err(TargetsError::HeaderName { line: n });
    }
    if bad_value(value) {
        return Err(TargetsError::HeaderValue { line: n });
    }
    Ok((name, value))
}

/// The path of an `@PATH` line (what follows the `@`, without spaces and tabs around it).
fn body_path(n: usize, path: &str) -> Result<&str, TargetsError> {
    let path = trim(path);
    let why = if path.is_empty() {
        "is empty"
    } else if path.chars().any(char::is_control) {
        "holds a control character"
    } else {
        return Ok(path);
    };
    Err(TargetsError::BodyPath { line: n, why })
}
