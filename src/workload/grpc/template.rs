//! gRPC request messages that vary: a request's JSON with placeholders (the grammar of
//! [`wirebench_wire::vary`]) compiled once, through the schema, into a protobuf *message
//! template* (the encoded message's fixed byte runs and its holes), then rendered per request
//! into the caller's buffer without allocating.
//!
//! A placeholder may stand inside a JSON string of a `string` field, alone or with text around
//! it (`"user-{{seq}}-x"`), at any depth (nested messages, elements of repeated messages, map
//! values, a repeated string's elements, a `StringValue`, a string in a `Struct`); or as the
//! whole value of an integer field (any of the ten kinds, or its wrapper such as `Int64Value`),
//! bare (`"id": {{seq}}`) or quoted (`"id": "{{seq}}"`), any placeholder but `uuid`. A value is
//! a `u64`: a 32-bit field takes it modulo 2^32 (as an `i32` for `int32`, `sint32`, `sfixed32`:
//! 2^31 is -2^31), a signed 64-bit field its two's complement (`u64::MAX` is -1). Anywhere else
//! (a JSON key; a bytes, bool, enum, float or double field; a packed repeated field; a uuid or
//! text around a placeholder in an integer field) is an error naming the JSON path
//! (`items[0].s`). A quoted text (`{{"{{"}}`) is its text: a JSON whose only `{{` are such texts
//! compiles to a template without holes, so that `{{"{{"}}` reads as `{{` there too.
//!
//! The bytes are prost-reflect's: for placeholders rendering to values V, `render` writes what
//! `DynamicMessage::deserialize` of the JSON with V written in encodes to. Each placeholder is
//! replaced by a probe (in a string: U+0001, the hole's number, U+0002; in an integer field: a
//! number near 2·10^9 the JSON does not hold), prost-reflect reads and encodes that JSON once,
//! and the encoding is walked with the schema: fields holding a probe become holes, the
//! messages around them are measured anew per request, all else is copied.
//! As prost-reflect does, an integer hole whose value is 0 in a field without explicit presence
//! (`FieldDescriptor::supports_presence`) is left out (a string with a placeholder is never
//! empty). prost-reflect's errors give positions in the JSON with its probes.
//!
//! Order: fields are encoded in field-number order, so a request's values are drawn ([`Draw`])
//! in that order, not the JSON's (this matters for `rand` and `uuid` only). A map's entries keep
//! the order of the first encoding (prost-reflect holds maps in hash maps: arbitrary but fixed
//! once compiled; maps are unordered on the wire).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::ops::Range;

use bytes::{Buf, BufMut, BytesMut};
use prost::encoding::{
    DecodeContext, WireType, decode_key, decode_varint, encode_varint, encoded_len_varint,
    skip_field,
};
use prost::{DecodeError, Message as _};
use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, MessageDescriptor};
use wirebench_wire::vary::{Draw, Part, Template, TemplateError, Var};

/// A request message with placeholders, compiled once from JSON through the schema.
#[derive(Debug, Clone)]
pub struct MessageTemplate {
    /// the fixed bytes (runs, tags, literal text) that spans point into
    pool: Box<[u8]>,
    segs: Vec<Seg>,
    clock: bool,
}

/// Why a JSON with placeholders does not compile: the JSON field's path (`` `inner.n` ``, or
/// "the message") and why, in one line.
#[derive(Debug, thiserror::Error)]
pub enum MessageTemplateError {
    /// (path, the grammar's error)
    #[error("{0}: {1}")]
    Grammar(String, #[source] TemplateError),
    /// (path of the object, key)
    #[error("{0}: a placeholder in the JSON key {1:?}: placeholders go in values")]
    InKey(String, String),
    /// (path)
    #[error(
        "{0}: a placeholder in a bytes field: bytes fields are base64 in JSON; put the \
         placeholder in a string field"
    )]
    InBytes(String),
    /// (path, kind): a bool, enum, float or double field
    #[error(
        "{0}: a placeholder in {a} {1} field: placeholders go in string and integer fields",
        a = article(.1)
    )]
    InKind(String, String),
    /// (path, kind)
    #[error(
        "{0}: a placeholder in a packed repeated {1} field: not supported (its values share \
         one record)"
    )]
    InPacked(String, String),
    /// (path, kind)
    #[error(
        "{0}: {{{{uuid}}}} in {a} {1} field: an integer field takes {{{{seq}}}}, {{{{client}}}}, \
         {{{{rand A B}}}} or a time",
        a = article(.1)
    )]
    UuidInInteger(String, String),
    /// (path, kind)
    #[error(
        "{0}: text around a placeholder in {a} {1} field: an integer field's value is one \
         placeholder alone ({{{{seq}}}} or \"{{{{seq}}}}\")",
        a = article(.1)
    )]
    TextAround(String, String),
    /// (path)
    #[error("{0}: a placeholder in a string field goes inside its quotes (\"{{{{seq}}}}\")")]
    Unquoted(String),
    /// (message name, prost-reflect's error with placeholders for probes)
    #[error("the JSON with its placeholders replaced is not a {0}: {1}")]
    NotTheMessage(String, String),
    /// (path, placeholder)
    #[error("{0}: could not place {1} in the encoded message (a field that takes none?)")]
    NotPlaced(String, Var),
    /// (message name, error): not expected (prost-reflect's own encoding)
    #[error("the encoding of {0} does not read back: {1}")]
    Encoding(String, #[source] DecodeError),
}

type Error = MessageTemplateError;

impl MessageTemplate {
    /// `Ok(None)` when `json` has no placeholder (no `{{`: the caller encodes it once as
    /// before). Else the template of `json` read as an `input`, or why not.
    pub fn compile(
        input: &MessageDescriptor,
        json: &str,
    ) -> Result<Option<MessageTemplate>, MessageTemplateError> {
        let sites = scan(json)?;
        if sites.is_empty() {
            return Ok(None);
        }
        let base = probe_base(json, json.matches("{{").count());
        let mut holes = Vec::new();
        let mut probed = String::with_capacity(json.len() + 16 * sites.len());
        let mut at = 0;
        for site in &sites {
            probed.push_str(&json[at..site.range.start]);
            let target = resolve(input, &site.path).map_or(Target::Unknown, |f| classify(&f));
            probed.push_str(&probe(site, target, base, &mut holes)?);
            at = site.range.end;
        }
        probed.push_str(&json[at..]);

        let message = input.full_name().to_string();
        let mut de = serde_json::Deserializer::from_str(&probed);
        let encoded = DynamicMessage::deserialize(input.clone(), &mut de)
            .and_then(|m| de.end().map(|()| m))
            .map_err(|e| Error::NotTheMessage(message.clone(), unprobe(&e, &holes, base)))?
            .encode_to_vec();
        let mut walk = Walk {
            holes: &holes,
            found: vec![0; holes.len()],
            pool: Vec::with_capacity(encoded.len()),
            base,
        };
        let segs = walk
            .message(input, &encoded)
            .map_err(|e| Error::Encoding(message, e))?;
        if let Some(k) = walk.found.iter().position(|&n| n != 1) {
            return Err(Error::NotPlaced(holes[k].field.clone(), holes[k].var));
        }
        let clock = holes
            .iter()
            .any(|h| matches!(h.var, Var::NowNs | Var::NowMs | Var::NowS));
        Ok(Some(MessageTemplate {
            pool: walk.pool.into_boxed_slice(),
            segs,
            clock,
        }))
    }

    /// Whether a placeholder reads the request's time (`Template::uses_clock` of any part).
    pub fn uses_clock(&self) -> bool {
        self.clock
    }

    /// Appends the protobuf encoding of this request's message (no gRPC prefix) to `out`; the
    /// values come from `d` (drawn in the order the fields are encoded). Allocates nothing when
    /// `out` has room.
    pub fn render(&self, d: &mut Draw, out: &mut BytesMut) {
        render_segs(&self.segs, &self.pool, d, out);
    }
}

// ---- the compiled form and its rendering ----

/// A range of the template's pool: (start, end).
type Span = (usize, usize);

/// A part of an encoded message, or of a string's text.
#[derive(Debug, Clone)]
enum Seg {
    /// bytes copied as they are
    Fixed(Span),
    /// a placeholder's text, in a string
    Text(Var),
    /// an integer field (its tag) whose value is a placeholder's; `omit_zero`: the field has
    /// no explicit presence, a 0 leaves it out
    Int {
        tag: Span,
        kind: IntKind,
        var: Var,
        omit_zero: bool,
    },
    /// a length-delimited field (its tag) holding holes: a string or a message; `reserve`: the
    /// bytes of its shortest body's length
    Len {
        tag: Span,
        reserve: usize,
        body: Vec<Seg>,
    },
}

/// How an integer field's value is written (sfixed kinds as fixed: the same bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IntKind {
    Int32,
    Uint32,
    Sint32,
    Fixed32,
    /// `int64` and `uint64`: the varint of the 64 bits
    Varint64,
    Sint64,
    Fixed64,
}

impl IntKind {
    fn of(kind: &Kind) -> Option<IntKind> {
        Some(match kind {
            Kind::Int32 => IntKind::Int32,
            Kind::Uint32 => IntKind::Uint32,
            Kind::Sint32 => IntKind::Sint32,
            Kind::Fixed32 | Kind::Sfixed32 => IntKind::Fixed32,
            Kind::Int64 | Kind::Uint64 => IntKind::Varint64,
            Kind::Sint64 => IntKind::Sint64,
            Kind::Fixed64 | Kind::Sfixed64 => IntKind::Fixed64,
            _ => return None,
        })
    }

    /// The JSON number a value on the wire (`raw`: the varint or the fixed bits) was given,
    /// when it is this kind's wire type and not negative (the probes are not).
    fn number(self, wire: WireType, raw: u64) -> Option<u64> {
        let want = match self {
            IntKind::Fixed32 => WireType::ThirtyTwoBit,
            IntKind::Fixed64 => WireType::SixtyFourBit,
            _ => WireType::Varint,
        };
        match self {
            _ if want != wire => None,
            IntKind::Sint32 | IntKind::Sint64 => (raw & 1 == 0).then_some(raw >> 1),
            _ => Some(raw),
        }
    }

    /// Appends the field (`tag`, then value `v` as this kind takes it) to `out`; nothing for a
    /// 0 when `omit_zero`.
    fn put(self, tag: &[u8], v: u64, omit_zero: bool, out: &mut BytesMut) {
        let narrow = v as u32;
        let bits32 = !matches!(self, IntKind::Varint64 | IntKind::Sint64 | IntKind::Fixed64);
        if omit_zero && (if bits32 { narrow == 0 } else { v == 0 }) {
            return;
        }
        out.put_slice(tag);
        match self {
            IntKind::Int32 => encode_varint(narrow as i32 as i64 as u64, out),
            IntKind::Uint32 => encode_varint(u64::from(narrow), out),
            IntKind::Sint32 => {
                encode_varint(u64::from((narrow << 1) ^ (narrow as i32 >> 31) as u32), out)
            }
            IntKind::Fixed32 => out.put_u32_le(narrow),
            IntKind::Varint64 => encode_varint(v, out),
            IntKind::Sint64 => encode_varint((v << 1) ^ (v as i64 >> 63) as u64, out),
            IntKind::Fixed64 => out.put_u64_le(v),
        }
    }
}

fn render_segs(segs: &[Seg], pool: &[u8], d: &mut Draw, out: &mut BytesMut) {
    for seg in segs {
        match seg {
            Seg::Fixed(s) => out.put_slice(&pool[s.0..s.1]),
            Seg::Text(v) => v.render(d, out),
            Seg::Int {
                tag,
                kind,
                var,
                omit_zero,
            } => {
                // a uuid is refused in integer fields when compiling
                let v = var.integer(d).unwrap_or(0);
                kind.put(&pool[tag.0..tag.1], v, *omit_zero, out);
            }
            Seg::Len { tag, reserve, body } => {
                out.put_slice(&pool[tag.0..tag.1]);
                let at = out.len();
                out.put_bytes(0, *reserve);
                render_segs(body, pool, d, out);
                close_len(out, at, *reserve);
            }
        }
    }
}

/// Writes at `at` the length of the body after it (`reserved` bytes were left for it),
/// moving the body when its length takes more (or fewer) bytes.
fn close_len(out: &mut BytesMut, at: usize, reserved: usize) {
    let end = out.len();
    let body = end - at - reserved;
    let need = encoded_len_varint(body as u64);
    if need != reserved {
        if need > reserved {
            out.put_bytes(0, need - reserved);
        }
        out.copy_within(at + reserved..end, at + need);
        out.truncate(at + need + body);
    }
    let mut slot = &mut out[at..at + need];
    encode_varint(body as u64, &mut slot);
}

/// The fewest bytes `seg` renders as.
fn min_len(seg: &Seg) -> usize {
    match seg {
        Seg::Fixed(s) => s.1 - s.0,
        Seg::Text(Var::Uuid) => 36,
        Seg::Text(_) => 1,
        // (a fixed value takes more than 1 byte: then the length may move, still right)
        Seg::Int { omit_zero, tag, .. } => (tag.1 - tag.0 + 1) * usize::from(!*omit_zero),
        Seg::Len { tag, reserve, body } => {
            tag.1 - tag.0 + reserve + body.iter().map(min_len).sum::<usize>()
        }
    }
}

// ---- reading the JSON: where the placeholders stand ----

/// One step of a JSON path: an object's key or an array's index.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// A path as errors name it: `` `items[0].s` ``, or "the message" for the whole.
fn show_path(path: &[Step]) -> String {
    if path.is_empty() {
        return "the message".to_string();
    }
    let mut s = String::from("`");
    for (i, step) in path.iter().enumerate() {
        let _ = match step {
            Step::Key(k) if i == 0 => write!(s, "{k}"),
            Step::Key(k) => write!(s, ".{k}"),
            Step::Index(n) => write!(s, "[{n}]"),
        };
    }
    s.push('`');
    s
}

/// A JSON value holding `{{`: its place in the text, its path, how it is written, what it
/// reads as.
struct Site {
    range: Range<usize>,
    path: Vec<Step>,
    written: Written,
    template: Template,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    /// a JSON string (the whole string is the site)
    Quoted,
    /// a bare `{{...}}`; `alone`: with nothing but JSON punctuation around it
    Bare { alone: bool },
}

/// An open JSON object or array while scanning.
struct Frame {
    array: bool,
    index: usize,
    /// the key read last; none: a string is a key
    key: Option<String>,
}

fn path_of(stack: &[Frame]) -> Vec<Step> {
    let step = |f: &Frame| match f.array {
        true => Some(Step::Index(f.index)),
        false => f.key.clone().map(Step::Key),
    };
    stack.iter().filter_map(step).collect()
}

/// The JSON values of `json` holding `{{` (strings once unescaped), each read by the
/// placeholder grammar. Malformed JSON is left for prost-reflect to name.
fn scan(json: &str) -> Result<Vec<Site>, Error> {
    let b = json.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut sites = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let (end, written) = match b[i] {
            b'"' => (string_end(b, i), Written::Quoted),
            // (`{{{`: an object, then a placeholder)
            b'{' if b.get(i + 1) == Some(&b'{') && b.get(i + 2) != Some(&b'{') => {
                let end = json[i + 2..].find("}}").map_or(b.len(), |c| i + c + 4);
                let before = b[..i].iter().rev().find(|c| !c.is_ascii_whitespace());
                let after = b[end..].iter().find(|c| !c.is_ascii_whitespace());
                let alone = matches!(before, None | Some(b':' | b'[' | b','))
                    && matches!(after, None | Some(b',' | b'}' | b']'));
                (end, Written::Bare { alone })
            }
            c => {
                if let b'{' | b'[' = c {
                    let (array, index, key) = (c == b'[', 0, None);
                    stack.push(Frame { array, index, key });
                } else if let b'}' | b']' = c {
                    stack.pop();
                } else if let Some(f) = stack.last_mut() {
                    match c {
                        b',' if f.array => f.index += 1,
                        b',' => f.key = None,
                        _ => {}
                    }
                }
                i += 1;
                continue;
            }
        };
        let token = &json[i..end];
        let range = i..end;
        i = end;
        let text = match written {
            Written::Quoted => unquote(token),
            Written::Bare { .. } => Some(Cow::Borrowed(token)),
        };
        if stack.last().is_some_and(|f| !f.array && f.key.is_none()) {
            let key = text.map_or_else(|| token.to_string(), Cow::into_owned);
            if key.contains("{{") {
                let field = show_path(&path_of(&stack));
                return Err(Error::InKey(field, key));
            }
            if let Some(f) = stack.last_mut() {
                f.key = Some(key);
            }
            continue;
        }
        let Some(text) = text.filter(|t| t.contains("{{")) else {
            continue;
        };
        let path = path_of(&stack);
        let template = Template::parse(&text).map_err(|e| Error::Grammar(show_path(&path), e))?;
        sites.push(Site {
            range,
            path,
            written,
            template,
        });
    }
    Ok(sites)
}

/// The end (past its closing quote) of the JSON string starting at `start`.
fn string_end(b: &[u8], start: usize) -> usize {
    let mut j = start + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

/// The text of a JSON string token; `None` when it does not read.
fn unquote(token: &str) -> Option<Cow<'_, str>> {
    if token.len() >= 2 && token.ends_with('"') && !token.contains('\\') {
        return Some(Cow::Borrowed(&token[1..token.len() - 1]));
    }
    serde_json::from_str::<String>(token).ok().map(Cow::Owned)
}

// ---- the schema at a JSON path ----

/// The field whose one value stands at `path` in a `desc` message's JSON (a list's element, a
/// map's value): `None` when the path leads elsewhere (a whole list, a message, a well-known
/// type with its own JSON form, an unknown field).
fn resolve(desc: &MessageDescriptor, path: &[Step]) -> Option<FieldDescriptor> {
    let mut msg = desc.clone();
    let mut steps = path.iter();
    loop {
        if msg.full_name().starts_with("google.protobuf.") {
            return None;
        }
        let Some(Step::Key(k)) = steps.next() else {
            return None;
        };
        let mut field = msg
            .get_field_by_json_name(k)
            .or_else(|| msg.get_field_by_name(k))?;
        if field.is_map() {
            let (Some(Step::Key(_)), Kind::Message(entry)) = (steps.next(), field.kind()) else {
                return None;
            };
            field = entry.map_entry_value_field();
        } else if field.is_list() && !matches!(steps.next(), Some(Step::Index(_))) {
            return None;
        }
        if steps.as_slice().is_empty() {
            return Some(field);
        }
        let Kind::Message(m) = field.kind() else {
            return None;
        };
        msg = m;
    }
}

/// What a placeholder may be in a field (with the field's kind, for errors).
#[derive(Debug, Clone)]
enum Target {
    Text,
    Integer(String),
    Bytes,
    Other(String),
    Packed(String),
    Unknown,
}

fn classify(field: &FieldDescriptor) -> Target {
    let kind = field.kind();
    let name = match &kind {
        Kind::Enum(e) => format!("enum {}", e.full_name()),
        k => format!("{k:?}"),
    };
    let packed = field.is_list() && field.is_packed();
    match kind {
        Kind::String => Target::Text,
        Kind::Bytes => Target::Bytes,
        _ if packed => Target::Packed(name),
        k if IntKind::of(&k).is_some() => Target::Integer(name),
        Kind::Message(m) => match m.full_name().strip_prefix("google.protobuf.") {
            // a wrapper (`Int64Value`...): its JSON is its field `value`'s
            Some(w) if w.ends_with("Value") && m.fields().len() == 1 => {
                m.get_field(1).map_or(Target::Unknown, |f| classify(&f))
            }
            _ => Target::Unknown,
        },
        _ => Target::Other(name),
    }
}

/// "a" or "an" before a kind's name.
fn article(kind: &str) -> &'static str {
    let an = ["int", "enum", "sint", "sfixed", "number"]
        .iter()
        .any(|p| kind.starts_with(p));
    if an { "an" } else { "a" }
}

// ---- probes ----

/// A placeholder to be placed: what it is, its JSON path, whether its probe is a number.
struct Hole {
    var: Var,
    field: String,
    number: bool,
}

/// The JSON that replaces `site` (whose field takes `target`), its holes pushed on `holes`:
/// number probes from `base`, text probes in strings.
fn probe(site: &Site, target: Target, base: u64, holes: &mut Vec<Hole>) -> Result<String, Error> {
    let field = || show_path(&site.path);
    let quoted = site.written == Written::Quoted;
    if let Some(text) = site.template.fixed() {
        return Ok(match quoted {
            true => serde_json::Value::from(text).to_string(),
            false => text.to_string(),
        });
    }
    let parts = site.template.parts();
    let one = match parts {
        [Part::Var(v)] => Some(*v),
        _ => None,
    };
    let number = match (target, site.written) {
        (Target::Bytes, _) => return Err(Error::InBytes(field())),
        (Target::Other(kind), _) => return Err(Error::InKind(field(), kind)),
        (Target::Packed(kind), _) => return Err(Error::InPacked(field(), kind)),
        (Target::Integer(kind), written) => match one {
            Some(Var::Uuid) => return Err(Error::UuidInInteger(field(), kind)),
            Some(v) if written != (Written::Bare { alone: false }) => Some(v),
            _ => return Err(Error::TextAround(field(), kind)),
        },
        (Target::Text, Written::Bare { .. }) => return Err(Error::Unquoted(field())),
        (Target::Unknown, Written::Bare { .. }) => one,
        (Target::Text | Target::Unknown, Written::Quoted) => None,
    };
    let mut hole = |var, number| {
        holes.push(Hole {
            var,
            number,
            field: field(),
        });
        holes.len() - 1
    };
    if let Some(var) = number {
        let n = base + hole(var, true) as u64;
        return Ok(format!("{q}{n}{q}", q = if quoted { "\"" } else { "" }));
    }
    let mut text = String::new();
    for p in parts {
        let _ = match p {
            Part::Lit(s) => write!(text, "{s}"),
            Part::Var(var) => write!(text, "\u{1}{}\u{2}", hole(*var, false)),
        };
    }
    Ok(serde_json::Value::from(text).to_string())
}

/// The number probe of hole 0: the first of `count` numbers (above 10^9, below 2^31) that
/// appear nowhere in `json`'s digits.
fn probe_base(json: &str, count: usize) -> u64 {
    let taken: Vec<u64> = json
        .as_bytes()
        .windows(10)
        .filter(|w| w.iter().all(u8::is_ascii_digit))
        .filter_map(|w| std::str::from_utf8(w).ok()?.parse().ok())
        .collect();
    let count = count as u64;
    let mut base = 2_050_752_512;
    while let Some(t) = taken
        .iter()
        .filter(|t| (base..base + count).contains(t))
        .min()
    {
        match t.checked_sub(count) {
            Some(b) if b >= 1_000_000_000 => base = b,
            _ => break, // then a probe is found twice: an error, not wrong bytes
        }
    }
    base
}

/// An error text about the probed JSON with its probes shown as their placeholders.
fn unprobe(e: &serde_json::Error, holes: &[Hole], base: u64) -> String {
    let mut text = e.to_string();
    for (k, h) in holes.iter().enumerate().rev() {
        let shown = h.var.to_string();
        text = if h.number {
            text.replace(&(base + k as u64).to_string(), &shown)
        } else {
            text.replace(&format!("\u{1}{k}\u{2}"), &shown)
                .replace(&format!("\\u{{1}}{k}\\u{{2}}"), &shown)
        };
    }
    text
}

// ---- walking the probed encoding ----

/// The walk of an encoding holding probes: the holes, how often each was found, the pool the
/// template's spans point into.
struct Walk<'a> {
    holes: &'a [Hole],
    found: Vec<u32>,
    pool: Vec<u8>,
    base: u64,
}

impl Walk<'_> {
    fn push(&mut self, bytes: &[u8]) -> Span {
        let start = self.pool.len();
        self.pool.extend_from_slice(bytes);
        (start, self.pool.len())
    }

    /// Appends fixed bytes, merged with the fixed run just before them.
    fn fixed(&mut self, segs: &mut Vec<Seg>, bytes: &[u8]) {
        let s = self.push(bytes);
        match segs.last_mut() {
            Some(Seg::Fixed(last)) if last.1 == s.0 => last.1 = s.1,
            _ => segs.push(Seg::Fixed(s)),
        }
    }

    /// Hole `k` when its probe is a number (`number`) or a text (not).
    fn hole(&self, k: u64, number: bool) -> Option<usize> {
        let k = usize::try_from(k).ok()?;
        self.holes.get(k).filter(|h| h.number == number).map(|_| k)
    }

    /// The segments of a `desc` message encoded as `data`.
    fn message(&mut self, desc: &MessageDescriptor, data: &[u8]) -> Result<Vec<Seg>, DecodeError> {
        let mut segs = Vec::new();
        let mut rest = data;
        while !rest.is_empty() {
            let record = rest;
            let (number, wire) = decode_key(&mut rest)?;
            let tag = &record[..record.len() - rest.len()];
            let mut after = rest;
            skip_field(wire, number, &mut after, DecodeContext::default())?;
            let value = &rest[..rest.len() - after.len()];
            rest = after;
            let seg = match desc.get_field(number) {
                Some(f) => self.field(&f, wire, tag, value)?,
                None => None,
            };
            match seg {
                Some(seg) => segs.push(seg),
                None => self.fixed(&mut segs, &record[..record.len() - rest.len()]),
            }
        }
        Ok(segs)
    }

    /// The segment of field `f` (`tag`, then `value` as on the wire) when it holds a probe.
    fn field(
        &mut self,
        f: &FieldDescriptor,
        wire: WireType,
        tag: &[u8],
        mut value: &[u8],
    ) -> Result<Option<Seg>, DecodeError> {
        let mark = self.pool.len();
        let tag = self.push(tag);
        let kind = f.kind();
        if let Some(int) = IntKind::of(&kind) {
            let raw = match wire {
                WireType::Varint => decode_varint(&mut value)?,
                WireType::ThirtyTwoBit => u64::from(value.get_u32_le()),
                WireType::SixtyFourBit => value.get_u64_le(),
                _ => 0, // packed: no hole
            };
            let n = int.number(wire, raw).and_then(|n| n.checked_sub(self.base));
            if let Some(k) = n.and_then(|k| self.hole(k, true)) {
                self.found[k] += 1;
                let (var, omit_zero) = (self.holes[k].var, !f.is_list() && !f.supports_presence());
                return Ok(Some(Seg::Int {
                    tag,
                    kind: int,
                    var,
                    omit_zero,
                }));
            }
        } else if wire == WireType::LengthDelimited {
            decode_varint(&mut value)?; // the length: `value` is now the body
            let body = match kind {
                Kind::String => self.text(value),
                Kind::Message(m) => Some(self.message(&m, value)?)
                    .filter(|b| b.iter().any(|s| !matches!(s, Seg::Fixed(_)))),
                _ => None,
            };
            if let Some(body) = body {
                let reserve = encoded_len_varint(body.iter().map(min_len).sum::<usize>() as u64);
                return Ok(Some(Seg::Len { tag, reserve, body }));
            }
        }
        self.pool.truncate(mark);
        Ok(None)
    }

    /// A string's text as segments when it holds text probes (U+0001, a hole's number, U+0002).
    fn text(&mut self, body: &[u8]) -> Option<Vec<Seg>> {
        let mut segs = Vec::new();
        let (mut lit, mut i) = (0, 0);
        while let Some(off) = body[i..].iter().position(|&c| c == 1) {
            let open = i + off;
            i = open + 1;
            let Some(close) = body[i..].iter().position(|&c| c == 2).map(|n| i + n) else {
                break;
            };
            let k = std::str::from_utf8(&body[i..close])
                .ok()
                .and_then(|s| s.parse().ok());
            let Some(k) = k.and_then(|k| self.hole(k, false)) else {
                continue;
            };
            if lit < open {
                self.fixed(&mut segs, &body[lit..open]);
            }
            self.found[k] += 1;
            segs.push(Seg::Text(self.holes[k].var));
            i = close + 1;
            lit = i;
        }
        if segs.is_empty() {
            return None;
        }
        if lit < body.len() {
            self.fixed(&mut segs, &body[lit..]);
        }
        Some(segs)
    }
}

#[cfg(test)]
mod tests;
