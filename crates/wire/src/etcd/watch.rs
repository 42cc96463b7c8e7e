//! etcd's grpc-gateway watch stream: newline-delimited JSON lines split off the body,
//! WatchResponse and error lines parsed, create requests and response lines rendered.
//!
//! `POST /v3/watch` answers with a chunked body that, once de-chunked, is a sequence of JSON
//! objects, one per line: `{"result": WatchResponse}` or `{"error": {...}}`. etcd 3.4's gateway
//! writes the mid-stream `{"error":{...}}` object WITHOUT a trailing newline and then ends the
//! body, so callers should drain the tail with [`next_line_eof`] once the body is complete.

use std::borrow::Cow;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use serde::Deserialize;

use super::gateway::{ErrorMember, GwHeader, borrowed_text, put_base64};

/// Longest single JSON line accepted (a watch response with many events can be large).
///
/// This also bounds everything decoded from a line (event count, key and value sizes).
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// Errors produced by the watch-stream codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// More than [`MAX_LINE`] bytes arrived without a newline.
    LineTooLong,
    /// The line is not JSON of a recognised shape.
    BadJson(&'static str),
    /// A field has the right JSON type but an invalid value (bad base64, non-integer, ...).
    BadField(&'static str),
}

impl Error {}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::LineTooLong => write!(f, "watch stream line exceeds {MAX_LINE} bytes"),
            Error::BadJson(ctx) => write!(f, "malformed watch stream line: {ctx}"),
            Error::BadField(field) => write!(f, "invalid value in watch stream field {field}"),
        }
    }
}

impl std::error::Error for Error {}

/// Splits newline-terminated lines off the front of `buf`.
///
/// Returns the line without its `\n` (and without a trailing `\r`) as a zero-copy [`Bytes`],
/// consuming the line and its newline. Empty lines are consumed and skipped. `Ok(None)` means
/// no complete non-empty line yet; nothing but skipped empty lines is consumed then.
/// `Err(LineTooLong)` if more than [`MAX_LINE`] bytes are buffered without a newline.
pub fn next_line(buf: &mut BytesMut) -> Result<Option<Bytes>, Error> {
    next_line_limited(buf, MAX_LINE)
}

/// [`next_line`] with the line limit as a parameter: a line (before its `\n`) may be at most
/// `limit` bytes long.
pub fn next_line_limited(buf: &mut BytesMut, limit: usize) -> Result<Option<Bytes>, Error> {
    loop {
        // A line of exactly `limit` bytes has its '\n' at index `limit`.
        let window = buf.len().min(limit.saturating_add(1));
        let Some(nl) = buf[..window].iter().position(|&b| b == b'\n') else {
            return if buf.len() > limit {
                Err(Error::LineTooLong)
            } else {
                Ok(None)
            };
        };
        let mut line = buf.split_to(nl);
        buf.advance(1);
        if line.last() == Some(&b'\r') {
            line.truncate(line.len() - 1);
        }
        if !line.is_empty() {
            return Ok(Some(line.freeze()));
        }
    }
}

/// Like [`next_line`], for when the body has ended: once no newline-terminated line is left,
/// a non-empty unterminated tail (how the gateway writes its final `{"error":...}`) is
/// returned as the last line and consumed.
pub fn next_line_eof(buf: &mut BytesMut) -> Result<Option<Bytes>, Error> {
    next_line_eof_limited(buf, MAX_LINE)
}

/// [`next_line_eof`] with the line limit as a parameter.
pub fn next_line_eof_limited(buf: &mut BytesMut, limit: usize) -> Result<Option<Bytes>, Error> {
    if let Some(line) = next_line_limited(buf, limit)? {
        return Ok(Some(line));
    }
    // No '\n' is left and buf.len() <= limit, so the tail is one short unterminated line.
    let mut line = buf.split();
    if line.last() == Some(&b'\r') {
        line.truncate(line.len() - 1);
    }
    Ok((!line.is_empty()).then(|| line.freeze()))
}

/// One event as wirebench needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchEvent {
    pub delete: bool,
    pub key: Vec<u8>,
    pub mod_revision: i64,
    pub value: Vec<u8>,
}

/// What one line said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchLine {
    Response {
        watch_id: i64,
        revision: i64,
        created: bool,
        canceled: bool,
        compact_revision: i64,
        cancel_reason: Option<String>,
        fragment: bool,
        events: Vec<WatchEvent>,
    },
    /// A gateway error: mid-stream `{"error":{"grpc_code":N,"message":..}}` (code = grpc_code)
    /// or the pre-stream body `{"error":"..","message":"..","code":N}` (code = code).
    Error { code: Option<i64>, message: String },
}

/// One line of the stream. Both error shapes share the `error` key.
#[derive(Debug, Deserialize)]
struct GwLine<'a> {
    #[serde(borrow, default)]
    result: Option<GwWatchResponse<'a>>,
    #[serde(borrow, default)]
    error: Option<ErrorMember<'a>>,
    /// Pre-stream error body only.
    #[serde(borrow, default, deserialize_with = "borrowed_text")]
    message: Option<Cow<'a, str>>,
    /// Pre-stream error body only.
    #[serde(default)]
    code: Option<i64>,
}

/// WatchResponse in gateway JSON; quoted int64s are digits only, so `&str` always borrows.
#[derive(Debug, Deserialize)]
struct GwWatchResponse<'a> {
    #[serde(borrow, default)]
    header: Option<GwHeader<'a>>,
    #[serde(borrow, default)]
    watch_id: Option<&'a str>,
    #[serde(default)]
    created: bool,
    #[serde(default)]
    canceled: bool,
    #[serde(borrow, default)]
    compact_revision: Option<&'a str>,
    #[serde(default)]
    cancel_reason: Option<String>,
    #[serde(default)]
    fragment: bool,
    #[serde(borrow, default)]
    events: Vec<GwEvent<'a>>,
}

#[derive(Debug, Deserialize)]
struct GwEvent<'a> {
    /// "PUT" is the default and is omitted; "DELETE" otherwise.
    #[serde(rename = "type", borrow, default)]
    kind: Option<&'a str>,
    #[serde(borrow, default)]
    kv: Option<GwKv<'a>>,
}

#[derive(Debug, Deserialize)]
struct GwKv<'a> {
    /// Base64 never needs escapes from Go, but `\/` is legal JSON: a bare (non-Option) `Cow`
    /// borrows when it can and still accepts escapes. Absent = empty, as in proto3.
    #[serde(borrow, default)]
    key: Cow<'a, str>,
    #[serde(borrow, default)]
    mod_revision: Option<&'a str>,
    #[serde(borrow, default)]
    value: Cow<'a, str>,
}

fn json_error(e: &serde_json::Error) -> Error {
    use serde_json::error::Category;
    Error::BadJson(match e.classify() {
        Category::Syntax => "syntax error",
        Category::Eof => "truncated json",
        Category::Data => "unexpected json shape",
        Category::Io => "io error",
    })
}

fn quoted_i64(v: Option<&str>, field: &'static str) -> Result<i64, Error> {
    match v {
        None => Ok(0),
        Some(s) => s.parse().map_err(|_| Error::BadField(field)),
    }
}

fn base64_field(s: &str, field: &'static str) -> Result<Vec<u8>, Error> {
    B64.decode(s).map_err(|_| Error::BadField(field))
}

fn event(ev: GwEvent<'_>) -> Result<WatchEvent, Error> {
    let delete = match ev.kind {
        None | Some("PUT") => false,
        Some("DELETE") => true,
        Some(_) => return Err(Error::BadField("events.type")),
    };
    let Some(kv) = ev.kv else {
        return Ok(WatchEvent {
            delete,
            key: Vec::new(),
            mod_revision: 0,
            value: Vec::new(),
        });
    };
    Ok(WatchEvent {
        delete,
        key: base64_field(&kv.key, "kv.key")?,
        mod_revision: quoted_i64(kv.mod_revision, "kv.mod_revision")?,
        value: base64_field(&kv.value, "kv.value")?,
    })
}

/// Parses one line (JSON).
///
/// Quoted integers parse as i64 (absent = 0); base64 decodes (bad base64 = `BadField("kv.key")`
/// etc.); unknown fields are ignored; a line that is neither `{"result":..}` nor `{"error":..}`
/// is `BadJson("neither result nor error")`.
pub fn parse_line(line: &[u8]) -> Result<WatchLine, Error> {
    if line.len() > MAX_LINE {
        return Err(Error::LineTooLong);
    }
    // serde would also read a struct from a JSON array; the gateway only sends objects.
    if line.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(Error::BadJson("not a json object"));
    }
    let gw: GwLine<'_> = serde_json::from_slice(line).map_err(|e| json_error(&e))?;
    if let Some(member) = gw.error {
        let e = member.into_error(gw.message, gw.code);
        return Ok(WatchLine::Error {
            code: e.code,
            message: e.into_text().into_owned(),
        });
    }
    let Some(r) = gw.result else {
        return Err(Error::BadJson("neither result nor error"));
    };
    let revision = quoted_i64(r.header.and_then(|h| h.revision), "header.revision")?;
    let mut events = Vec::with_capacity(r.events.len());
    for ev in r.events {
        events.push(event(ev)?);
    }
    Ok(WatchLine::Response {
        watch_id: quoted_i64(r.watch_id, "watch_id")?,
        revision,
        created: r.created,
        canceled: r.canceled,
        compact_revision: quoted_i64(r.compact_revision, "compact_revision")?,
        cancel_reason: r.cancel_reason,
        fragment: r.fragment,
        events,
    })
}

/// Appends `,"name":"v"` (or without the comma when `first`) unless `v` is 0.
fn put_quoted_i64(dst: &mut BytesMut, first: &mut bool, name: &str, v: i64) {
    if v != 0 {
        put_name(dst, first, name);
        dst.put_u8(b'"');
        dst.put_slice(itoa::Buffer::new().format(v).as_bytes());
        dst.put_u8(b'"');
    }
}

/// Appends `,"name":"<base64>"` unless `data` is empty.
fn put_b64_field(dst: &mut BytesMut, first: &mut bool, name: &str, data: &[u8]) {
    if !data.is_empty() {
        put_name(dst, first, name);
        dst.put_u8(b'"');
        put_base64(data, dst);
        dst.put_u8(b'"');
    }
}

/// Appends `,"name":` (the comma only after the first member).
fn put_name(dst: &mut BytesMut, first: &mut bool, name: &str) {
    if !std::mem::take(first) {
        dst.put_u8(b',');
    }
    dst.put_u8(b'"');
    dst.put_slice(name.as_bytes());
    dst.put_slice(b"\":");
}

/// Renders a WatchResponse line as the gateway does: `{"result":{...}}` + `"\n"`, omitting
/// defaults, quoting integers, base64 for bytes. The header carries only the revision.
pub fn render_response_line(
    watch_id: i64,
    revision: i64,
    created: bool,
    events: &[WatchEvent],
    dst: &mut BytesMut,
) {
    dst.put_slice(b"{\"result\":{\"header\":{");
    let mut first = true;
    put_quoted_i64(dst, &mut first, "revision", revision);
    dst.put_u8(b'}');
    let mut first = false;
    put_quoted_i64(dst, &mut first, "watch_id", watch_id);
    if created {
        dst.put_slice(b",\"created\":true");
    }
    if !events.is_empty() {
        dst.put_slice(b",\"events\":[");
        for (i, ev) in events.iter().enumerate() {
            if i > 0 {
                dst.put_u8(b',');
            }
            dst.put_u8(b'{');
            if ev.delete {
                dst.put_slice(b"\"type\":\"DELETE\",");
            }
            dst.put_slice(b"\"kv\":{");
            let mut first = true;
            put_b64_field(dst, &mut first, "key", &ev.key);
            put_quoted_i64(dst, &mut first, "mod_revision", ev.mod_revision);
            put_b64_field(dst, &mut first, "value", &ev.value);
            dst.put_slice(b"}}");
        }
        dst.put_u8(b']');
    }
    dst.put_slice(b"}}\n");
}

/// Appends the request-body line that creates a watch:
/// `{"create_request":{"key":"<b64>","range_end":"<b64>","start_revision":"N","watch_id":"N"}}`,
/// omitting `range_end` when `None`, `start_revision` when 0 and `watch_id` when `None`.
/// No trailing newline; callers join several with `'\n'` (the gateway creates each in turn).
pub fn render_create_request(
    key: &[u8],
    range_end: Option<&[u8]>,
    start_revision: i64,
    watch_id: Option<i64>,
    dst: &mut BytesMut,
) {
    dst.put_slice(b"{\"create_request\":{\"key\":\"");
    put_base64(key, dst);
    dst.put_u8(b'"');
    if let Some(end) = range_end {
        dst.put_slice(b",\"range_end\":\"");
        put_base64(end, dst);
        dst.put_u8(b'"');
    }
    let mut first = false;
    put_quoted_i64(dst, &mut first, "start_revision", start_revision);
    if let Some(id) = watch_id {
        // An explicit watch_id is always written, even 0, so the caller's choice is kept.
        dst.put_slice(b",\"watch_id\":\"");
        dst.put_slice(itoa::Buffer::new().format(id).as_bytes());
        dst.put_u8(b'"');
    }
    dst.put_slice(b"}}");
}

#[cfg(test)]
mod tests;
