//! Requests that vary: the placeholder grammar of bodies, paths, header values and gRPC JSON
//! (`{{seq}}`, `{{rand 1 1000}}`, `{{uuid}}`, `{{client}}`, `{{now_ns}}`), read once into a
//! [`Template`] of literal runs and placeholders, then rendered per request into the caller's
//! buffer without allocating.
//!
//! The values of one request come from a [`Draw`]: its number (`seq`), its client, its time
//! (given by the caller: this crate reads no clock) and a random stream. `seq`, `client` and
//! the time are the same wherever they appear in one request; `rand` and `uuid` are drawn anew
//! at each place.
//!
//! ghz's spellings are read too: `{{.RequestNumber}}`, `{{.UUID}}`, `{{newUUID}}`,
//! `{{.TimestampUnixNano}}`, `{{.TimestampUnixMilli}}`, `{{.TimestampUnix}}` and
//! `{{randomInt A B}}` (A up to B, B excluded, as ghz draws it). A Go-style quoted string
//! (`{{"{{"}}`) is its text, which is how a literal `{{` is written.

use std::fmt;

use bytes::BufMut;

/// One placeholder: what it renders as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Var {
    /// the request's number in the run (from 0, unique across clients)
    Seq,
    /// the client's number (from 0)
    Client,
    /// a uniform integer from `lo` to `hi`, both included
    Rand { lo: u64, hi: u64 },
    /// a random (version 4) UUID, lower-case hex
    Uuid,
    /// the request's time: Unix nanoseconds
    NowNs,
    /// the request's time: Unix milliseconds
    NowMs,
    /// the request's time: Unix seconds
    NowS,
}

/// A run of literal text or a placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Lit(String),
    Var(Var),
}

/// A text with placeholders, read once: its parts in order (adjacent literals merged, none
/// empty).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Template {
    parts: Vec<Part>,
}

/// Why a text does not read as a template: where (its byte offset) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    pub at: usize,
    pub what: String,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.at, self.what)
    }
}

impl std::error::Error for TemplateError {}

/// The placeholders a template knows, for error messages.
pub const KNOWN: &str = "{{seq}}, {{rand A B}}, {{uuid}}, {{client}}, {{now_ns}}, {{now_ms}}, \
                         {{now_s}} (or ghz's {{.RequestNumber}}, {{.UUID}}, {{newUUID}}, \
                         {{.TimestampUnixNano}}, {{randomInt A B}}); a literal {{ is {{\"{{\"}}";

/// The longest placeholder (between `{{` and `}}`) read: anything longer is an error.
const MAX_PLACEHOLDER: usize = 256;

impl Template {
    /// Reads `text`: literal runs and `{{...}}` placeholders. A `{{` without its `}}`, an
    /// unknown name or a bad `rand` range is an error naming its offset and [`KNOWN`].
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let mut t = Template::default();
        let mut rest = text;
        let mut at = 0;
        while let Some(open) = rest.find("{{") {
            t.push_lit(&rest[..open]);
            let inner_start = open + 2;
            let Some(close) = rest[inner_start..].find("}}") else {
                return Err(TemplateError {
                    at: at + open,
                    what: "\"{{\" without its \"}}\"".to_string(),
                });
            };
            let inner = &rest[inner_start..inner_start + close];
            if inner.len() > MAX_PLACEHOLDER {
                return Err(TemplateError {
                    at: at + open,
                    what: format!("a placeholder longer than {MAX_PLACEHOLDER} bytes"),
                });
            }
            match placeholder(inner.trim()) {
                Ok(Placeholder::Var(v)) => t.parts.push(Part::Var(v)),
                Ok(Placeholder::Text(s)) => t.push_lit(s),
                Err(what) => {
                    return Err(TemplateError {
                        at: at + open,
                        what,
                    });
                }
            }
            let used = inner_start + close + 2;
            at += used;
            rest = &rest[used..];
        }
        t.push_lit(rest);
        Ok(t)
    }

    fn push_lit(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        if let Some(Part::Lit(last)) = self.parts.last_mut() {
            last.push_str(s);
        } else {
            self.parts.push(Part::Lit(s.to_string()));
        }
    }

    /// The parts in order.
    pub fn parts(&self) -> &[Part] {
        &self.parts
    }

    /// Whether the text has no placeholder: every request gets the same bytes.
    pub fn is_fixed(&self) -> bool {
        !self.parts.iter().any(|p| matches!(p, Part::Var(_)))
    }

    /// The text of a fixed template (a `{{"{{"}}` read as `{{`); `None` with placeholders.
    pub fn fixed(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [] => Some(""),
            [Part::Lit(s)] => Some(s),
            _ => None,
        }
    }

    /// Whether a placeholder reads the request's time (the caller reads its clock only then).
    pub fn uses_clock(&self) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p, Part::Var(Var::NowNs | Var::NowMs | Var::NowS)))
    }

    /// Appends the text for the request `d` describes to `out`. Allocates nothing beyond
    /// what `out` needs to grow.
    pub fn render(&self, d: &mut Draw, out: &mut impl BufMut) {
        for p in &self.parts {
            match p {
                Part::Lit(s) => out.put_slice(s.as_bytes()),
                Part::Var(v) => v.render(d, out),
            }
        }
    }

    /// The text rendered for request 0 of client 0 at time 0 with a fixed random stream: what
    /// a caller validates (every placeholder renders as digits, or hex and dashes).
    pub fn sample(&self) -> String {
        let mut out = Vec::new();
        self.render(&mut Draw::new(0), &mut out);
        String::from_utf8(out).unwrap_or_default()
    }
}

impl fmt::Display for Template {
    /// The template in this grammar's own spelling, which [`Template::parse`] reads back to
    /// the same template (a literal `{{` written as `{{"{{"}}`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.parts.iter().enumerate() {
            match p {
                Part::Lit(s) => {
                    let last = i + 1 == self.parts.len();
                    write_literal(f, s, last)?;
                }
                Part::Var(v) => write!(f, "{v}")?,
            }
        }
        Ok(())
    }
}

/// A literal run in the grammar's spelling: each `{{` quoted, and a `{` that would otherwise
/// run into the placeholder after it (`last`: none follows).
fn write_literal(f: &mut fmt::Formatter<'_>, s: &str, last: bool) -> fmt::Result {
    let mut rest = s;
    while let Some(at) = rest.find('{') {
        f.write_str(&rest[..at])?;
        let after = &rest[at + 1..];
        if let Some(more) = after.strip_prefix('{') {
            f.write_str("{{\"{{\"}}")?;
            rest = more;
        } else if after.is_empty() && !last {
            f.write_str("{{\"{\"}}")?;
            rest = after;
        } else {
            f.write_str("{")?;
            rest = after;
        }
    }
    f.write_str(rest)
}

impl fmt::Display for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Var::Seq => f.write_str("{{seq}}"),
            Var::Client => f.write_str("{{client}}"),
            Var::Rand { lo, hi } => write!(f, "{{{{rand {lo} {hi}}}}}"),
            Var::Uuid => f.write_str("{{uuid}}"),
            Var::NowNs => f.write_str("{{now_ns}}"),
            Var::NowMs => f.write_str("{{now_ms}}"),
            Var::NowS => f.write_str("{{now_s}}"),
        }
    }
}

enum Placeholder<'a> {
    Var(Var),
    Text(&'a str),
}

/// What the text between `{{` and `}}` (trimmed) names.
fn placeholder(inner: &str) -> Result<Placeholder<'_>, String> {
    if let Some(quoted) = inner.strip_prefix('"') {
        return match quoted.strip_suffix('"') {
            Some(s) if !s.contains('"') && !s.contains('\\') => Ok(Placeholder::Text(s)),
            _ => Err(format!(
                "{{{{{inner}}}}}: a quoted text is one \"...\" without quotes or backslashes inside"
            )),
        };
    }
    let mut words = inner.split_ascii_whitespace();
    let name = words.next().unwrap_or("");
    let args: Vec<&str> = words.collect();
    let var = match (name, args.as_slice()) {
        ("seq" | ".RequestNumber", []) => Var::Seq,
        ("client", []) => Var::Client,
        ("uuid" | ".UUID" | "newUUID", []) => Var::Uuid,
        ("now_ns" | ".TimestampUnixNano", []) => Var::NowNs,
        ("now_ms" | ".TimestampUnixMilli", []) => Var::NowMs,
        ("now_s" | ".TimestampUnix", []) => Var::NowS,
        ("rand", [lo, hi]) => {
            let (lo, hi) = (bound(inner, lo)?, bound(inner, hi)?);
            if lo > hi {
                return Err(format!("{{{{{inner}}}}}: {lo} is above {hi}"));
            }
            Var::Rand { lo, hi }
        }
        ("randomInt", [lo, hi]) => {
            let (lo, hi) = (bound(inner, lo)?, bound(inner, hi)?);
            if lo >= hi {
                return Err(format!(
                    "{{{{{inner}}}}}: ghz's randomInt draws from {lo} up to {hi} excluded, \
                     so {hi} must be above {lo}"
                ));
            }
            Var::Rand { lo, hi: hi - 1 }
        }
        ("rand" | "randomInt", _) => {
            return Err(format!(
                "{{{{{inner}}}}}: {name} takes two integers, the lowest and highest value"
            ));
        }
        _ => {
            return Err(format!(
                "unknown placeholder {{{{{inner}}}}}; known: {KNOWN}"
            ));
        }
    };
    Ok(Placeholder::Var(var))
}

fn bound(inner: &str, s: &str) -> Result<u64, String> {
    s.parse().map_err(|_| {
        format!(
            "{{{{{inner}}}}}: {s:?} is not an integer from 0 to {}",
            u64::MAX
        )
    })
}

impl Var {
    /// Appends this placeholder's text for request `d` to `out`.
    pub fn render(&self, d: &mut Draw, out: &mut impl BufMut) {
        match self.integer(d) {
            Some(n) => {
                let mut digits = [0u8; 20];
                out.put_slice(decimal(n, &mut digits));
            }
            None => out.put_slice(&d.uuid()),
        }
    }

    /// This placeholder's value for request `d` when it is an integer (all but `uuid`).
    pub fn integer(&self, d: &mut Draw) -> Option<u64> {
        Some(match *self {
            Var::Seq => d.seq,
            Var::Client => d.client,
            Var::Rand { lo, hi } => d.between(lo, hi),
            Var::NowNs => d.now_ns,
            Var::NowMs => d.now_ns / 1_000_000,
            Var::NowS => d.now_ns / 1_000_000_000,
            Var::Uuid => return None,
        })
    }
}

/// The two decimal digits of every number below 100.
const DIGIT_PAIRS: [[u8; 2]; 100] = {
    let mut t = [[0u8; 2]; 100];
    let mut i = 0;
    while i < 100 {
        t[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    t
};

/// The two lower-case hexadecimal digits of every byte.
const HEX_PAIRS: [[u8; 2]; 256] = {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut t = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = [HEX[i >> 4], HEX[i & 0x0f]];
        i += 1;
    }
    t
};

/// The decimal digits of `v`, written into the end of `buf`, two at a time.
pub fn decimal(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut start = buf.len();
    while v >= 100 {
        start -= 2;
        buf[start..start + 2].copy_from_slice(&DIGIT_PAIRS[(v % 100) as usize]);
        v /= 100;
    }
    if v >= 10 {
        start -= 2;
        buf[start..start + 2].copy_from_slice(&DIGIT_PAIRS[v as usize]);
    } else {
        start -= 1;
        buf[start] = b'0' + v as u8;
    }
    &buf[start..]
}

/// The values of one request: set `seq` (and `now_ns` when a template [uses the
/// clock](Template::uses_clock)) before rendering it; `client` is set once. The random
/// stream is splitmix64, seeded per client.
#[derive(Debug, Clone)]
pub struct Draw {
    pub seq: u64,
    pub client: u64,
    pub now_ns: u64,
    state: u64,
}

impl Draw {
    /// Client `client`'s values, its random stream seeded from `seed` and `client`.
    pub fn for_client(seed: u64, client: u64) -> Draw {
        Draw {
            seq: 0,
            client,
            now_ns: 0,
            state: seed ^ client.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        }
    }

    /// Client 0's values with the random stream seeded from `seed`.
    pub fn new(seed: u64) -> Draw {
        Draw::for_client(seed, 0)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform integer from `lo` to `hi`, both included (`lo <= hi`).
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        let span = hi.wrapping_sub(lo).wrapping_add(1);
        let r = self.next_u64();
        if span == 0 {
            // the whole range of u64
            return r;
        }
        lo + ((u128::from(r) * u128::from(span)) >> 64) as u64
    }

    /// A random version 4 UUID (RFC 9562 §5.4) in its 36-character text form.
    pub fn uuid(&mut self) -> [u8; 36] {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&self.next_u64().to_be_bytes());
        bytes[8..].copy_from_slice(&self.next_u64().to_be_bytes());
        bytes[6] = (bytes[6] & 0x0f) | 0x40;
        bytes[8] = (bytes[8] & 0x3f) | 0x80;
        // where each byte's two digits go: the dashes stay between the groups
        const AT: [usize; 16] = [0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34];
        let mut out = [b'-'; 36];
        for (&b, &at) in bytes.iter().zip(&AT) {
            out[at..at + 2].copy_from_slice(&HEX_PAIRS[usize::from(b)]);
        }
        out
    }
}

#[cfg(test)]
mod tests;
