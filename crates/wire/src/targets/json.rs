//! vegeta's JSON format: one object per line, `{"method": "GET", "url": "http://...",
//! "header": {"Name": ["v1", "v2"]}, "body": "<base64>"}`, with `weight` added; blank lines and
//! `#` comments between them. Keys it does not know are ignored, as vegeta ignores them.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde::Deserialize;
use serde::de::{MapAccess, Visitor};

use super::{
    Body, Collected, MAX_WEIGHT, Target, TargetsError, bad_value, checked, is_token, lines, quoted,
    trim, url_problem, weight_comment,
};

/// One line's object as vegeta writes it (null where Go writes nil).
#[derive(Deserialize)]
struct Line {
    method: Option<String>,
    url: Option<String>,
    header: Option<Headers>,
    body: Option<String>,
    weight: Option<serde_json::Number>,
}

/// A `header` object's fields in the line's order, a name with several values once per value.
struct Headers(Vec<(String, String)>);

impl<'de> Deserialize<'de> for Headers {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = Headers;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of arrays of strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Headers, A::Error> {
                let mut fields = Vec::new();
                while let Some((name, values)) = map.next_entry::<String, Option<Vec<String>>>()? {
                    for value in values.unwrap_or_default() {
                        fields.push((name.clone(), value));
                    }
                }
                Ok(Headers(fields))
            }
        }
        d.deserialize_map(Fields)
    }
}

/// Reads the targets of a JSON-lines file.
pub(super) fn parse(text: &str) -> Result<Vec<Target>, TargetsError> {
    let mut done = Collected::default();
    for (n, raw) in lines(text) {
        let line = checked(n, raw)?;
        let t = trim(line);
        if t.is_empty() {
            continue;
        }
        if t.starts_with('#') {
            if weight_comment(t).is_some() {
                return Err(TargetsError::WeightCommentInJson { line: n });
            }
            continue;
        }
        if !t.starts_with('{') {
            return Err(TargetsError::NotJson { line: n });
        }
        let object: Line = serde_json::from_str(line).map_err(|e| TargetsError::Json {
            line: n,
            column: e.column(),
            why: reason(&e),
        })?;
        done.push(target(n, object)?)?;
    }
    Ok(done.targets)
}

/// The target of line `n`'s object, its fields checked.
fn target(n: usize, object: Line) -> Result<Target, TargetsError> {
    let field = |why| TargetsError::JsonField { line: n, why };
    let method = object.method.ok_or(field("\"method\" is missing"))?;
    if !is_token(&method) {
        return Err(field("\"method\" is not an HTTP token"));
    }
    let url = object.url.ok_or(field("\"url\" is missing"))?;
    if let Some(why) = url_problem(&url) {
        return Err(TargetsError::Url { line: n, why });
    }
    let headers = object.header.map_or_else(Vec::new, |h| h.0);
    for (name, value) in &headers {
        if !is_token(name) {
            return Err(TargetsError::HeaderName { line: n });
        }
        if bad_value(value) {
            return Err(TargetsError::HeaderValue { line: n });
        }
    }
    let body = match object.body {
        None => Body::None,
        Some(text) => Body::Bytes(
            B64.decode(text)
                .map_err(|_| field("\"body\" is not base64 (RFC 4648, padded)"))?,
        ),
    };
    let weight = match object.weight {
        None => 1,
        Some(number) => number
            .as_u64()
            .and_then(|w| u32::try_from(w).ok())
            .filter(|w| (1..=MAX_WEIGHT).contains(w))
            .ok_or_else(|| TargetsError::Weight {
                line: n,
                got: quoted(&number.to_string()),
            })?,
    };
    Ok(Target {
        method,
        url,
        headers,
        body,
        weight,
        line: n,
    })
}

/// serde_json's reason without the place it appends (the line is ours, the column apart).
fn reason(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}
