//! A `--targets` file's text read into HTTP request targets (vegeta's two formats), and the
//! order weighted targets take requests in; no file is read here: the caller reads the file
//! and the body files it names.
//!
//! The format is decided by the first line that is neither blank nor a comment: one starting
//! with `{` makes the file JSON lines (`json.rs`: one object per line, vegeta's `-format=json`),
//! anything else vegeta's http format (`http.rs`):
//!
//! ```text
//! # weight: 3
//! GET http://localhost:8080/a
//! X-Account: 5
//!
//! POST https://localhost:8443/b
//! Content-Type: application/json
//! @body.json
//! ```
//!
//! Targets are separated by blank lines; each is a request line `METHOD URL`, header lines
//! `Name: Value`, then optionally `@PATH`, a file whose bytes are the body. Lines starting with
//! `#` are comments; `# weight: N` before a request line gives that target N turns in every
//! cycle of requests instead of one (vegeta reads it as a comment, so one file serves both).

use std::fmt;

mod http;
mod json;

/// The most targets a file may hold.
pub const MAX_TARGETS: usize = 100_000;
/// The largest weight of one target, and the largest sum of all weights (the cycle's length).
pub const MAX_WEIGHT: u32 = 1_000_000;
/// The longest line, in bytes, without its line break.
pub const MAX_LINE: usize = 64 * 1024;
/// How much of an offending line an error quotes, in characters.
const QUOTED: usize = 60;

/// One request target of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The request method, an HTTP token (RFC 9110 §9).
    pub method: String,
    /// The absolute URL as written (`http://` or `https://`, no whitespace but inside `{{...}}`
    /// placeholders); the caller parses it.
    pub url: String,
    /// Header fields in the file's order; a name may repeat.
    pub headers: Vec<(String, String)>,
    /// The request body.
    pub body: Body,
    /// Turns in each cycle of requests (`schedule`), 1 to [`MAX_WEIGHT`].
    pub weight: u32,
    /// The 1-based line of its request line (http format) or of its object (JSON lines).
    pub line: usize,
}

/// A target's request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// No body.
    None,
    /// The bytes of this file (`@PATH` in the http format), as written; the caller reads it
    /// and resolves a relative path.
    File(String),
    /// These bytes (a JSON line's base64 `body`, decoded; empty when it is `""`).
    Bytes(Vec<u8>),
}

/// Why a targets file was refused; each names its 1-based line but [`TargetsError::NoTargets`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetsError {
    /// The file holds no target.
    NoTargets,
    /// More than [`MAX_TARGETS`] targets; the first one over.
    TooManyTargets { line: usize },
    /// The weights add up to more than [`MAX_WEIGHT`]; the target that passes it.
    TotalWeight { line: usize },
    /// A line longer than [`MAX_LINE`] bytes.
    LineTooLong { line: usize },
    /// A request line that is not `METHOD URL` with a token for a method (quoted, cut short).
    RequestLine { line: usize, got: String },
    /// The URL does not start with `http://` or `https://`, or holds a control character or
    /// whitespace outside a `{{...}}` placeholder.
    Url { line: usize, why: &'static str },
    /// A header line without a `:`.
    HeaderWithoutColon { line: usize },
    /// A header name that is not an HTTP token.
    HeaderName { line: usize },
    /// A header value with a control character other than HTAB.
    HeaderValue { line: usize },
    /// A line after a target's `@PATH` line and before the blank line that ends the target.
    BodyNotLast { line: usize },
    /// An `@` line whose path is empty or holds a control character.
    BodyPath { line: usize, why: &'static str },
    /// A weight that is not an integer from 1 to [`MAX_WEIGHT`] (quoted, cut short).
    Weight { line: usize, got: String },
    /// A `# weight:` comment with no target after it.
    WeightWithoutTarget { line: usize },
    /// A `# weight:` comment after a target's request line, before the blank line ending it.
    WeightInTarget { line: usize },
    /// A second `# weight:` comment before one target.
    SecondWeight { line: usize },
    /// A JSON object in a file whose first target is in the http format.
    JsonInHttp { line: usize },
    /// A line that is no JSON object in a file whose first target is a JSON line.
    NotJson { line: usize },
    /// A `# weight:` comment in a JSON-lines file (the object's `weight` gives it there).
    WeightCommentInJson { line: usize },
    /// A JSON line that is not valid JSON or holds a value of the wrong type: serde_json's
    /// reason and the column it names.
    Json {
        line: usize,
        column: usize,
        why: String,
    },
    /// A JSON target's field is missing or wrong.
    JsonField { line: usize, why: &'static str },
}

impl TargetsError {
    /// The 1-based line the error is about (none for [`TargetsError::NoTargets`]).
    pub fn line(&self) -> Option<usize> {
        use TargetsError::*;
        match *self {
            NoTargets => None,
            TooManyTargets { line }
            | TotalWeight { line }
            | LineTooLong { line }
            | RequestLine { line, .. }
            | Url { line, .. }
            | HeaderWithoutColon { line }
            | HeaderName { line }
            | HeaderValue { line }
            | BodyNotLast { line }
            | BodyPath { line, .. }
            | Weight { line, .. }
            | WeightWithoutTarget { line }
            | WeightInTarget { line }
            | SecondWeight { line }
            | JsonInHttp { line }
            | NotJson { line }
            | WeightCommentInJson { line }
            | Json { line, .. }
            | JsonField { line, .. } => Some(line),
        }
    }
}

impl fmt::Display for TargetsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use TargetsError::*;
        if let Some(line) = self.line() {
            write!(f, "line {line}: ")?;
        }
        match self {
            NoTargets => f.write_str("no targets"),
            TooManyTargets { .. } => write!(f, "more than {MAX_TARGETS} targets"),
            TotalWeight { .. } => write!(f, "the weights add up to more than {MAX_WEIGHT}"),
            LineTooLong { .. } => write!(f, "longer than {MAX_LINE} bytes"),
            RequestLine { got, .. } => write!(f, "expected \"METHOD URL\", got {got:?}"),
            Url { why, .. } => write!(f, "the URL {why}"),
            HeaderWithoutColon { .. } => f.write_str("header line without ':'"),
            HeaderName { .. } => f.write_str("the header name is not an HTTP token"),
            HeaderValue { .. } => f.write_str("the header value holds a control character"),
            BodyNotLast { .. } => {
                f.write_str("a body (@file) must follow the headers of its target")
            }
            BodyPath { why, .. } => write!(f, "the body file name after '@' {why}"),
            Weight { got, .. } => write!(f, "weight must be 1 to {MAX_WEIGHT}, got {got:?}"),
            WeightWithoutTarget { .. } => {
                f.write_str("a weight comment must be followed by a target")
            }
            WeightInTarget { .. } => {
                f.write_str("a weight comment goes before its target's request line")
            }
            SecondWeight { .. } => f.write_str("a second weight comment for one target"),
            JsonInHttp { .. } => f.write_str(
                "a JSON target in an http-format file (its first target is not a JSON line)",
            ),
            NotJson { .. } => {
                f.write_str("expected a JSON object (the file's first target is a JSON line)")
            }
            WeightCommentInJson { .. } => f.write_str(
                "a weight comment in a JSON-lines file (a JSON target's \"weight\" gives it)",
            ),
            Json { column, why, .. } => write!(f, "bad JSON at column {column}: {why}"),
            JsonField { why, .. } => f.write_str(why),
        }
    }
}

impl std::error::Error for TargetsError {}

/// Reads a targets file's text: its targets in the file's order.
pub fn parse(text: &str) -> Result<Vec<Target>, TargetsError> {
    let mut first = None;
    for (n, raw) in lines(text) {
        let line = checked(n, raw)?;
        if !is_blank_or_comment(line) {
            first = Some(line);
            break;
        }
    }
    // a file of comments and blank lines reads as the http format: its weight comments are
    // errors there
    let targets = match first {
        Some(line) if trim(line).starts_with('{') => json::parse(text)?,
        _ => http::parse(text)?,
    };
    if targets.is_empty() {
        return Err(TargetsError::NoTargets);
    }
    Ok(targets)
}

/// Writes targets in the http format, `parse` reading them back as they are (but for `line`)
/// when `parse` read them from an http-format file. A `Body::Bytes` has no form there and is
/// left out (JSON lines carry such bodies).
pub fn write_http(targets: &[Target]) -> String {
    let mut out = String::new();
    for (k, t) in targets.iter().enumerate() {
        if k > 0 {
            out.push('\n');
        }
        if t.weight != 1 {
            out.push_str("# weight: ");
            out.push_str(itoa::Buffer::new().format(t.weight));
            out.push('\n');
        }
        for part in [&t.method, " ", &t.url, "\n"] {
            out.push_str(part);
        }
        for (name, value) in &t.headers {
            for part in [name, ": ", value, "\n"] {
                out.push_str(part);
            }
        }
        if let Body::File(path) = &t.body {
            for part in ["@", path, "\n"] {
                out.push_str(part);
            }
        }
    }
    out
}

/// The targets' indices in the order requests take them: a cycle of `sum(weights)` turns, each
/// target appearing `weight` times, spread evenly: after any first `k` turns of the cycle,
/// target `i` has had `⌊k·wᵢ/S⌋` or `⌈k·wᵢ/S⌉` of them (`S` the sum), so any run of turns,
/// across cycles too, gives each target its share to within fewer than 2 turns: the evenness
/// nginx's smooth weighted round-robin aims at (and with many targets misses by more than one
/// turn in a prefix). Here each of a target's turns has a window of the cycle (its `j`-th turn: from slot
/// `⌊j·S/w⌋`, due before `⌈(j+1)·S/w⌉`) and each slot goes to the pending turn due first
/// (proportionate fairness on one resource, where earliest-deadline-first meets every window),
/// in O(S log n) rather than the O(S·n) of nginx's rule. A weight of 0 never appears. The cycle
/// is allocated whole: `parse` keeps the sum within [`MAX_WEIGHT`].
pub fn schedule(weights: &[u32]) -> Vec<u32> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    // in u128: no product of a turn and the sum overflows, whatever the weights
    let release = |i: usize, turn: u64| {
        (u128::from(turn) * u128::from(total) / u128::from(weights[i])) as u64
    };
    let due = |i: usize, turn: u64| {
        (u128::from(turn + 1) * u128::from(total)).div_ceil(u128::from(weights[i])) as u64
    };
    // (slot, index): a target whose next turn's window opens at that slot
    let mut waiting = BinaryHeap::new();
    // (due slot, index): a target whose next turn's window is open
    let mut ready = BinaryHeap::new();
    for (i, &w) in weights.iter().enumerate() {
        if w > 0 {
            ready.push(Reverse((due(i, 0), i)));
        }
    }
    let mut taken = vec![0u64; weights.len()];
    let mut order = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    for slot in 0..total {
        while let Some(&Reverse((opens, i))) = waiting.peek() {
            if opens > slot {
                break;
            }
            waiting.pop();
            ready.push(Reverse((due(i, taken[i]), i)));
        }
        // Some turn is always ready (the windows admit a schedule, which earliest-deadline-
        // first finds); should none be, the next window to open is taken early.
        let next = ready.pop().or_else(|| waiting.pop());
        let Some(Reverse((_, i))) = next else {
            break;
        };
        order.push(i as u32);
        taken[i] += 1;
        if taken[i] < u64::from(weights[i]) {
            waiting.push(Reverse((release(i, taken[i]), i)));
        }
    }
    order
}

/// The lines of `text` with their 1-based numbers; a line ends at `\n` (its `\r` stays).
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n').enumerate().map(|(k, l)| (k + 1, l))
}

/// A line without the `\r` of a CRLF break, refused when over [`MAX_LINE`] bytes.
fn checked(n: usize, raw: &str) -> Result<&str, TargetsError> {
    let line = raw.strip_suffix('\r').unwrap_or(raw);
    if line.len() > MAX_LINE {
        return Err(TargetsError::LineTooLong { line: n });
    }
    Ok(line)
}

/// `s` without the spaces and tabs around it.
fn trim(s: &str) -> &str {
    s.trim_matches([' ', '\t'])
}

fn is_blank_or_comment(line: &str) -> bool {
    let t = trim(line);
    t.is_empty() || t.starts_with('#')
}

/// The number text of a `# weight: N` comment (`t` a trimmed line starting with `#`), or None
/// for any other comment.
fn weight_comment(t: &str) -> Option<&str> {
    let rest = trim(t.strip_prefix('#')?).strip_prefix("weight")?;
    Some(trim(trim(rest).strip_prefix(':')?))
}

/// A weight's number: an integer from 1 to [`MAX_WEIGHT`].
fn weight(n: usize, text: &str) -> Result<u32, TargetsError> {
    let ok = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    match text.parse::<u32>() {
        Ok(w) if ok && (1..=MAX_WEIGHT).contains(&w) => Ok(w),
        _ => Err(TargetsError::Weight {
            line: n,
            got: quoted(text),
        }),
    }
}

/// Whether `s` is an HTTP token: one or more tchar (RFC 9110 §5.6.2).
pub(crate) fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Why `url` is not a target URL: it must start with `http://` or `https://` (any case) and
/// hold no whitespace or control character.
pub(crate) fn url_problem(url: &str) -> Option<&'static str> {
    let starts = |scheme: &str| {
        url.get(..scheme.len())
            .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
    };
    if !starts("http://") && !starts("https://") {
        Some("must start with http:// or https://")
    } else if url.chars().any(char::is_control) {
        Some("holds a control character")
    } else if outside_placeholders(url).any(char::is_whitespace) {
        Some("holds whitespace (outside a {{...}} placeholder)")
    } else {
        None
    }
}

/// The characters of `text` outside its `{{...}}` placeholders (whose arguments are apart by
/// spaces: `{{rand 1 9}}`); an unclosed `{{` leaves the rest outside.
fn outside_placeholders(text: &str) -> impl Iterator<Item = char> + '_ {
    let mut rest = text;
    std::iter::from_fn(move || {
        loop {
            if rest.starts_with("{{")
                && let Some(end) = rest.find("}}")
            {
                rest = &rest[end + 2..];
                continue;
            }
            let c = rest.chars().next()?;
            rest = &rest[c.len_utf8()..];
            return Some(c);
        }
    })
}

/// Whether a header value holds a control character other than HTAB.
fn bad_value(value: &str) -> bool {
    value.chars().any(|c| c.is_control() && c != '\t')
}

/// At most [`QUOTED`] characters of `s`, for an error message.
fn quoted(s: &str) -> String {
    match s.char_indices().nth(QUOTED) {
        Some((end, _)) => format!("{}...", &s[..end]),
        None => s.to_string(),
    }
}

/// The targets read so far, held to the limits on their number and their weights' sum.
#[derive(Default)]
struct Collected {
    targets: Vec<Target>,
    total: u64,
}

impl Collected {
    fn push(&mut self, t: Target) -> Result<(), TargetsError> {
        if self.targets.len() == MAX_TARGETS {
            return Err(TargetsError::TooManyTargets { line: t.line });
        }
        self.total += u64::from(t.weight);
        if self.total > u64::from(MAX_WEIGHT) {
            return Err(TargetsError::TotalWeight { line: t.line });
        }
        self.targets.push(t);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
