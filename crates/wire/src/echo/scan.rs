//! The echo answer judged in one pass over its text: the JSON checked, the top-level `body`
//! compared with the ping, no value built and nothing allocated.
//!
//! The verdict is serde_json's on `struct { #[serde(default)] body: Cow<str> }` (what the
//! client parsed before): the same texts are refused, and `body` is compared after unescaping.
//! Where the two differ, this scan is the stricter one:
//! - the top level must be an object (serde also reads a struct from an array of its fields);
//! - the whole text must be UTF-8 (serde lets invalid UTF-8 through in the strings it skips);
//! - containers nest at most [`MAX_DEPTH`] levels (serde has no limit inside skipped values).

use std::fmt;

/// The deepest nesting of objects and arrays accepted, the top-level object counting as one.
pub const MAX_DEPTH: usize = 128;

/// Why an echo answer was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanError {
    /// The text is not UTF-8 from this byte on.
    Utf8 { at: usize },
    /// The text ends inside a value.
    Eof { at: usize },
    /// Something else than what the grammar allows here.
    Expected { what: Wanted, at: usize },
    /// A byte below 0x20 inside a string.
    Control { at: usize },
    /// A backslash not followed by one of `"\/bfnrt` or by `u` and four hex digits.
    Escape { at: usize },
    /// A `\u` escape of a surrogate that is not half of a pair, in text read as a string.
    LoneSurrogate { at: usize },
    /// A number outside the JSON grammar (`01`, `1.`, `-`, `1e`).
    Number { at: usize },
    /// Objects and arrays nested deeper than [`MAX_DEPTH`].
    TooDeep { at: usize },
    /// More than whitespace after the value.
    Trailing { at: usize },
    /// The top-level object has two `body` members.
    DuplicateBody { at: usize },
    /// The top-level `body` is not a string.
    BodyType { at: usize },
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ScanError::Utf8 { at } => write!(f, "invalid UTF-8 at byte {at}"),
            ScanError::Eof { at } => write!(f, "the text ends inside a value at byte {at}"),
            ScanError::Expected { what, at } => write!(f, "expected {what} at byte {at}"),
            ScanError::Control { at } => write!(f, "control character in a string at byte {at}"),
            ScanError::Escape { at } => write!(f, "invalid escape at byte {at}"),
            ScanError::LoneSurrogate { at } => {
                write!(f, "lone surrogate in a \\u escape at byte {at}")
            }
            ScanError::Number { at } => write!(f, "invalid number at byte {at}"),
            ScanError::TooDeep { at } => {
                write!(f, "nesting deeper than {MAX_DEPTH} levels at byte {at}")
            }
            ScanError::Trailing { at } => write!(f, "trailing characters at byte {at}"),
            ScanError::DuplicateBody { at } => write!(f, "duplicate field `body` at byte {at}"),
            ScanError::BodyType { at } => {
                write!(f, "invalid type for `body` at byte {at}: expected a string")
            }
        }
    }
}

impl std::error::Error for ScanError {}

/// What the grammar wanted where a text went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wanted {
    Object,
    Key,
    Colon,
    Value,
    CommaOrBrace,
    CommaOrBracket,
}

impl fmt::Display for Wanted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Wanted::Object => "an object",
            Wanted::Key => "a string key",
            Wanted::Colon => "':'",
            Wanted::Value => "a value",
            Wanted::CommaOrBrace => "',' or '}'",
            Wanted::CommaOrBracket => "',' or ']'",
        })
    }
}

/// Whether the echo answer `json` (one JSON object, optional whitespace around it) echoes
/// `ping`: its top-level `body` member, unescaped, equals `ping` (a missing `body` is empty).
/// The whole text is checked, also after `body`.
pub fn echoed_body_matches(json: &[u8], ping: &[u8]) -> Result<bool, ScanError> {
    // an ASCII text (the usual answer) is UTF-8: a look at eight bytes at a time suffices
    if !json.is_ascii() {
        std::str::from_utf8(json).map_err(|e| ScanError::Utf8 {
            at: e.valid_up_to(),
        })?;
    }
    let mut s = Scanner { b: json, i: 0 };
    s.skip_ws();
    match s.peek() {
        Some(b'{') => s.i += 1,
        Some(_) => return Err(s.expected(Wanted::Object)),
        None => return Err(s.eof()),
    }
    let mut body = None;
    s.skip_ws();
    if s.peek() == Some(b'}') {
        s.i += 1;
    } else {
        loop {
            let key_at = s.i;
            s.open_string(Wanted::Key)?;
            let is_body = s.string_equals(b"body")?;
            s.colon()?;
            if is_body {
                if body.is_some() {
                    return Err(ScanError::DuplicateBody { at: key_at });
                }
                match s.peek() {
                    Some(b'"') => s.i += 1,
                    Some(_) => return Err(ScanError::BodyType { at: s.i }),
                    None => return Err(s.eof()),
                }
                body = Some(s.string_equals(ping)?);
            } else {
                s.skip_value(1)?;
            }
            s.skip_ws();
            match s.peek() {
                Some(b',') => {
                    s.i += 1;
                    s.skip_ws();
                }
                Some(b'}') => {
                    s.i += 1;
                    break;
                }
                Some(_) => return Err(s.expected(Wanted::CommaOrBrace)),
                None => return Err(s.eof()),
            }
        }
    }
    s.skip_ws();
    if s.i < json.len() {
        return Err(ScanError::Trailing { at: s.i });
    }
    Ok(body.unwrap_or(ping.is_empty()))
}

/// The check the client makes of each echo answer: what [`echoed_body_matches`] says, but
/// when the answer opens with its `body` member (`{"body":"`, no space) holding the ping as
/// is (a ping with no quote, backslash or control byte) and that member is followed by `,` or
/// the object's close, that is the verdict, and of the rest only that the text ends the
/// object (`}`, then whitespace) is checked: the other members are not read (the built-in
/// server writes `body` first). A text that does not open so is scanned whole.
///
/// Where the quick look answers, the verdict is the scan's for every text the scan accepts;
/// it accepts what the scan would refuse only after the `body` member (an invalid member, a
/// duplicate `body`, a nested object cut short).
pub fn echo_answer_matches(json: &[u8], ping: &[u8]) -> Result<bool, ScanError> {
    answer_matches(json, ping, ping_is_plain(ping))
}

/// Whether `ping` holds no quote, backslash or control byte (so JSON holds it as is): what the
/// quick look of [`echo_answer_matches`] needs of a ping, for a caller that checks many answers
/// against one ping to find once and pass to [`echo_answer_matches_plain`].
pub fn ping_is_plain(ping: &[u8]) -> bool {
    next_special(ping, 0) == ping.len()
}

/// [`echo_answer_matches`] for a ping whose [`ping_is_plain`] is `plain`.
pub fn echo_answer_matches_plain(json: &[u8], ping: &[u8], plain: bool) -> Result<bool, ScanError> {
    answer_matches(json, ping, plain)
}

fn answer_matches(json: &[u8], ping: &[u8], plain: bool) -> Result<bool, ScanError> {
    const OPEN: &[u8] = b"{\"body\":\"";
    if plain {
        let text = trim_ws(json);
        let quick = text
            .strip_prefix(OPEN)
            .and_then(|rest| rest.strip_prefix(ping))
            .and_then(|rest| rest.strip_prefix(b"\""))
            .map(trim_ws)
            .is_some_and(|rest| match rest.first() {
                Some(b'}') => rest.len() == 1,
                Some(b',') => text.ends_with(b"}"),
                _ => false,
            });
        if quick {
            return Ok(true);
        }
    }
    echoed_body_matches(json, ping)
}

/// `b` without the JSON whitespace (space, tab, line feed, carriage return) around it.
fn trim_ws(b: &[u8]) -> &[u8] {
    let start = b.iter().position(|&c| !is_ws(c)).unwrap_or(b.len());
    let end = b.iter().rposition(|&c| !is_ws(c)).map_or(start, |e| e + 1);
    &b[start..end]
}

/// JSON's whitespace: space, tab, line feed, carriage return.
fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

const ONES: u64 = u64::MAX / 255;
const HIGH_BITS: u64 = ONES << 7;

/// Whether a string ends or changes course at this byte: a quote, a backslash, a control byte.
fn special(c: u8) -> bool {
    c == b'"' || c == b'\\' || c < 0x20
}

/// The index of the first special byte of `b` at or after `i`, else `b.len()`: eight bytes at
/// a time, each test `(x - k) & !x & 0x80` per byte, whose lowest set bit is exact (a borrow
/// only carries upwards, past the first byte that matched).
fn next_special(b: &[u8], mut i: usize) -> usize {
    while let Some(chunk) = b.get(i..i + 8) {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let quote = w ^ (ONES * u64::from(b'"'));
        let backslash = w ^ (ONES * u64::from(b'\\'));
        let found = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (w.wrapping_sub(ONES * 0x20) & !w);
        let found = found & HIGH_BITS;
        if found != 0 {
            return i + found.trailing_zeros() as usize / 8;
        }
        i += 8;
    }
    while i < b.len() && !special(b[i]) {
        i += 1;
    }
    i
}

/// The value of one hex digit.
fn hex(c: u8) -> Option<u16> {
    match c {
        b'0'..=b'9' => Some(u16::from(c - b'0')),
        b'a'..=b'f' => Some(u16::from(c - b'a' + 10)),
        b'A'..=b'F' => Some(u16::from(c - b'A' + 10)),
        _ => None,
    }
}

/// A cursor over the text.
struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(is_ws) {
            self.i += 1;
        }
    }

    fn eof(&self) -> ScanError {
        ScanError::Eof { at: self.i }
    }

    /// `what` was expected at the cursor: the text ended early or holds something else.
    fn expected(&self, what: Wanted) -> ScanError {
        if self.i < self.b.len() {
            ScanError::Expected { what, at: self.i }
        } else {
            self.eof()
        }
    }

    /// Past a string's opening quote.
    fn open_string(&mut self, what: Wanted) -> Result<(), ScanError> {
        if self.peek() == Some(b'"') {
            self.i += 1;
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    /// Past a member's colon and the whitespace around it.
    fn colon(&mut self) -> Result<(), ScanError> {
        self.skip_ws();
        if self.peek() != Some(b':') {
            return Err(self.expected(Wanted::Colon));
        }
        self.i += 1;
        self.skip_ws();
        Ok(())
    }

    /// Past the rest of a string whose opening quote is behind the cursor, escapes checked
    /// for their form only (a `\u` surrogate may stand alone: serde skips such strings).
    /// Inlined, as `string_equals`: most strings of an answer are short, and a call (registers
    /// saved, the word constants loaded) cost about as many instructions as their search.
    #[inline(always)]
    fn skip_string(&mut self) -> Result<(), ScanError> {
        loop {
            self.i = next_special(self.b, self.i);
            match self.peek() {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    self.i += 1;
                    self.skip_escape()?;
                }
                Some(_) => return Err(ScanError::Control { at: self.i }),
                None => return Err(self.eof()),
            }
        }
    }

    /// Past the escape after the backslash behind the cursor, checked for its form only (out
    /// of the string loop, which it would slow down).
    #[inline(never)]
    fn skip_escape(&mut self) -> Result<(), ScanError> {
        match self.peek() {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 1,
            Some(b'u') => {
                self.i += 1;
                self.hex4()?;
            }
            Some(_) => return Err(ScanError::Escape { at: self.i - 1 }),
            None => return Err(self.eof()),
        }
        Ok(())
    }

    /// Past the rest of a string whose opening quote is behind the cursor, read as text (a
    /// lone surrogate refused): whether its unescaped content is `target`. Compared as it is
    /// read, so the string is checked to its end whatever the answer.
    #[inline(always)]
    fn string_equals(&mut self, target: &[u8]) -> Result<bool, ScanError> {
        let mut same = true;
        let mut pos = 0;
        loop {
            let start = self.i;
            self.i = next_special(self.b, self.i);
            let run = &self.b[start..self.i];
            same = same && target.get(pos..pos + run.len()) == Some(run);
            pos += run.len();
            match self.peek() {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(same && pos == target.len());
                }
                Some(b'\\') => {
                    self.i += 1;
                    let mut utf8 = [0; 4];
                    let c = self.escaped_char()?.encode_utf8(&mut utf8).as_bytes();
                    same = same && target.get(pos..pos + c.len()) == Some(c);
                    pos += c.len();
                }
                Some(_) => return Err(ScanError::Control { at: self.i }),
                None => return Err(self.eof()),
            }
        }
    }

    /// The character of the escape after the backslash behind the cursor; a surrogate must be
    /// the high half of a pair whose low half follows as a second `\u` escape.
    #[inline(never)]
    fn escaped_char(&mut self) -> Result<char, ScanError> {
        let at = self.i - 1;
        let c = match self.peek() {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                self.i += 1;
                let unit = self.hex4()?;
                let lone = ScanError::LoneSurrogate { at };
                let code = match unit {
                    0xDC00..=0xDFFF => return Err(lone),
                    0xD800..=0xDBFF => {
                        if self.b.get(self.i..self.i + 2) != Some(b"\\u") {
                            return Err(lone);
                        }
                        self.i += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(lone);
                        }
                        0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00)
                    }
                    _ => u32::from(unit),
                };
                // never fails: surrogates are handled above
                return char::from_u32(code).ok_or(lone);
            }
            Some(_) => return Err(ScanError::Escape { at }),
            None => return Err(self.eof()),
        };
        self.i += 1;
        Ok(c)
    }

    /// The four hex digits at the cursor, as a UTF-16 unit.
    fn hex4(&mut self) -> Result<u16, ScanError> {
        let at = self.i;
        let Some(digits) = self.b.get(at..at + 4) else {
            self.i = self.b.len();
            return Err(self.eof());
        };
        let mut unit = 0;
        for &d in digits {
            unit = unit << 4 | hex(d).ok_or(ScanError::Escape { at: at - 2 })?;
        }
        self.i += 4;
        Ok(unit)
    }

    /// Past a number at the cursor (RFC 8259 §6: `-? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?`).
    fn number(&mut self) -> Result<(), ScanError> {
        let at = self.i;
        let bad = ScanError::Number { at };
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.i += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(bad);
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(bad),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(bad);
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(bad);
            }
        }
        Ok(())
    }

    /// Past the digits at the cursor: how many.
    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - start
    }

    /// Past `true`, `false` or `null` at the cursor.
    fn literal(&mut self, word: &'static [u8]) -> Result<(), ScanError> {
        let rest = &self.b[self.i..];
        if rest.starts_with(word) {
            self.i += word.len();
            return Ok(());
        }
        let n = rest.len().min(word.len());
        if rest[..n] == word[..n] {
            // the word's beginning, then the end of the text
            self.i = self.b.len();
            return Err(self.eof());
        }
        Err(self.expected(Wanted::Value))
    }

    /// Past a member's key and colon in a skipped object, the cursor at the key's quote.
    fn skipped_key(&mut self) -> Result<(), ScanError> {
        self.open_string(Wanted::Key)?;
        self.skip_string()?;
        self.colon()
    }

    /// Past the value at the cursor (whitespace before it skipped) inside containers `depth`
    /// deep, without recursion: the open containers are bits of one word (1: an object).
    fn skip_value(&mut self, depth: usize) -> Result<(), ScanError> {
        let mut open: u128 = 0;
        let mut n = 0;
        loop {
            let opened = match self.peek() {
                Some(b'{') => Some(true),
                Some(b'[') => Some(false),
                Some(b'"') => {
                    self.i += 1;
                    self.skip_string()?;
                    None
                }
                Some(b't') => self.literal(b"true").map(|()| None)?,
                Some(b'f') => self.literal(b"false").map(|()| None)?,
                Some(b'n') => self.literal(b"null").map(|()| None)?,
                Some(b'-' | b'0'..=b'9') => self.number().map(|()| None)?,
                Some(_) => return Err(self.expected(Wanted::Value)),
                None => return Err(self.eof()),
            };
            if let Some(object) = opened {
                if depth + n >= MAX_DEPTH {
                    return Err(ScanError::TooDeep { at: self.i });
                }
                open = open << 1 | u128::from(object);
                n += 1;
                self.i += 1;
                self.skip_ws();
                let close = if object { b'}' } else { b']' };
                if self.peek() != Some(close) {
                    if object {
                        self.skipped_key()?;
                    }
                    continue;
                }
            }
            // after a value, or at an empty container's close
            loop {
                if n == 0 {
                    return Ok(());
                }
                self.skip_ws();
                let object = open & 1 == 1;
                match self.peek() {
                    Some(b',') => {
                        self.i += 1;
                        self.skip_ws();
                        if object {
                            self.skipped_key()?;
                        }
                        break;
                    }
                    Some(b'}') if object => {}
                    Some(b']') if !object => {}
                    Some(_) if object => return Err(self.expected(Wanted::CommaOrBrace)),
                    Some(_) => return Err(self.expected(Wanted::CommaOrBracket)),
                    None => return Err(self.eof()),
                }
                self.i += 1;
                open >>= 1;
                n -= 1;
            }
        }
    }
}

#[cfg(test)]
mod tests;
