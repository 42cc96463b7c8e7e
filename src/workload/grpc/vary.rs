//! gRPC requests that vary: metadata values and the messages' JSON with placeholders
//! (`wirebench_wire::vary`), compiled once and rendered per call into the client's own buffers.

use bytes::{BufMut, Bytes, BytesMut};
use prost_reflect::MethodDescriptor;

use super::template::MessageTemplate;
use super::{GrpcError, encode_json};
use crate::client::grpc::Call;
use crate::config::TemplatedMessages;
use wirebench_wire::vary::{Draw, Template};

/// The messages of `m` from `json` with placeholders: each message's text (one; or a client
/// stream's array elements or NDJSON values), its placeholders kept as written.
pub(super) fn split(m: &MethodDescriptor, json: &str) -> Result<Vec<String>, GrpcError> {
    if !m.is_client_streaming() {
        return Ok(vec![json.to_string()]);
    }
    // each placeholder becomes a marked stand-in (a JSON string where it stood bare), so the
    // text reads as JSON; the values are split, written back, and the stand-ins restored
    let (marked, found) = mark(json);
    let values: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&marked)
        .into_iter()
        .collect::<Result<_, _>>()
        .map_err(|source| GrpcError::NotTheRequest {
            message: format!("{} (or an array or lines of them)", m.input().full_name()),
            source,
        })?;
    let items = match <[serde_json::Value; 1]>::try_from(values) {
        Ok([serde_json::Value::Array(items)]) => items,
        Ok([one]) => vec![one],
        Err(values) => values,
    };
    if items.is_empty() {
        return Err(GrpcError::NoMessages);
    }
    Ok(items
        .iter()
        .map(|v| unmark(&v.to_string(), &found))
        .collect())
}

/// `json` with each `{{...}}` replaced by `\u0001K\u0002` (K its number; quoted where it stood
/// outside a string): control characters no JSON text holds unescaped. Also the placeholders
/// found: their text and whether they stood bare.
fn mark(json: &str) -> (String, Vec<(String, bool)>) {
    let mut out = String::with_capacity(json.len());
    let mut found = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    let mut rest = json;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("{{") {
            let Some(end) = rest.find("}}") else {
                break;
            };
            let text = &rest[..end + 2];
            let k = found.len();
            if in_string {
                out.push_str(&format!("\\u0001{k}\\u0002"));
            } else {
                out.push_str(&format!("\"\\u0001{k}\\u0002\""));
            }
            found.push((text.to_string(), !in_string));
            rest = &rest[end + 2..];
            continue;
        }
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out.push_str(rest);
    (out, found)
}

/// A value written back by serde_json with the stand-ins of `mark` restored.
fn unmark(text: &str, found: &[(String, bool)]) -> String {
    let mut out = text.to_string();
    for (k, (placeholder, bare)) in found.iter().enumerate() {
        let stand_in = format!("\\u0001{k}\\u0002");
        let stand_in = if *bare {
            format!("\"{stand_in}\"")
        } else {
            stand_in
        };
        out = out.replace(&stand_in, placeholder);
    }
    out
}

/// The messages of `m` from `json` with placeholders: their first renders, encoded, and their
/// texts.
pub(super) fn encode(
    m: &MethodDescriptor,
    json: &str,
) -> Result<(Vec<Vec<u8>>, TemplatedMessages), GrpcError> {
    let texts = split(m, json)?;
    let input = m.input();
    let mut encoded = Vec::with_capacity(texts.len());
    for t in &texts {
        match MessageTemplate::compile(&input, t).map_err(GrpcError::Placeholder)? {
            Some(mt) => {
                let mut out = BytesMut::new();
                mt.render(&mut Draw::new(0), &mut out);
                encoded.push(out.to_vec());
            }
            None => encoded.push(encode_json(m, t)?),
        }
    }
    Ok((encoded, TemplatedMessages { input, texts }))
}

/// Metadata as (name, value) pairs.
type Metadata = Vec<(String, String)>;

/// What varies in a method's calls, compiled once: metadata values and messages.
#[derive(Debug)]
pub(super) struct Varies {
    /// by metadata index: the value's template, when it has placeholders
    pub(super) metadata: Vec<Option<Template>>,
    /// by message (the request's first): its template, when it has placeholders
    pub(super) messages: Vec<Option<MessageTemplate>>,
    pub(super) clock: bool,
}

impl Varies {
    /// What varies in `metadata` and `templated` (`None` when nothing does), and the metadata
    /// as the shared call carries it: a value without placeholders as it is sent (a quoted
    /// `{{"{{"}}` read as `{{`), one with placeholders as written (each call renders its own).
    pub(super) fn new(
        metadata: &[(String, String)],
        templated: Option<&TemplatedMessages>,
    ) -> Result<(Option<Varies>, Metadata), GrpcError> {
        let mut values = Vec::with_capacity(metadata.len());
        let mut texts = Vec::with_capacity(metadata.len());
        for (k, v) in metadata {
            let t = Template::parse(v).map_err(|source| GrpcError::MetadataPlaceholder {
                name: k.clone(),
                source,
            })?;
            texts.push((k.clone(), t.fixed().unwrap_or(v).to_string()));
            values.push((!t.is_fixed()).then_some(t));
        }
        let mut messages = Vec::new();
        if let Some(t) = templated {
            for text in &t.texts {
                messages.push(
                    MessageTemplate::compile(&t.input, text).map_err(GrpcError::Placeholder)?,
                );
            }
        }
        if values.iter().all(Option::is_none) && messages.iter().all(Option::is_none) {
            return Ok((None, texts));
        }
        let clock = values.iter().flatten().any(Template::uses_clock)
            || messages.iter().flatten().any(MessageTemplate::uses_clock);
        let varies = Varies {
            metadata: values,
            messages,
            clock,
        };
        Ok((Some(varies), texts))
    }

    /// The metadata indices whose values vary.
    pub(super) fn varying_metadata(&self) -> Vec<usize> {
        (0..self.metadata.len())
            .filter(|&i| self.metadata[i].is_some())
            .collect()
    }
}

/// A client's renders: its values, its copies of the calls, the messages at hand.
#[derive(Debug, Clone)]
pub(super) struct Renders {
    pub(super) draw: Draw,
    /// by endpoint: the call, its varying metadata rendered per call (none: constant)
    pub(super) calls: Vec<Call>,
    /// the messages of the call at hand, framed
    pub(super) frames: Vec<Bytes>,
    buf: BytesMut,
}

impl Renders {
    pub(super) fn new(draw: Draw, calls: Vec<Call>, frames: Vec<Bytes>) -> Renders {
        Renders {
            draw,
            calls,
            frames,
            buf: BytesMut::new(),
        }
    }

    /// Renders call `idx` to endpoint `ep`: its metadata, and its messages (all of a stream's
    /// when `stream`, else the request) where they vary; fixed messages stay `fixed`'s.
    pub(super) fn render(&mut self, v: &Varies, idx: u64, ep: usize, stream: bool) {
        self.draw.seq = idx;
        if v.clock {
            self.draw.now_ns = crate::config::clock::unix_ns(std::time::SystemTime::now());
        }
        if let Some(call) = self.calls.get_mut(ep)
            && let Some(parts) = call.varied()
        {
            for (slot, t) in parts.values.iter_mut().zip(&v.metadata) {
                if let (Some(value), Some(t)) = (slot, t) {
                    value.clear();
                    t.render(&mut self.draw, value);
                }
            }
            call.measure();
        }
        let count = if stream {
            v.messages.len()
        } else {
            v.messages.len().min(1)
        };
        // the last call's bytes first, so the buffer is reused
        for (frame, mt) in self.frames.iter_mut().zip(&v.messages).take(count) {
            if mt.is_some() {
                *frame = Bytes::new();
            }
        }
        for (i, mt) in v.messages.iter().enumerate().take(count) {
            let Some(mt) = mt else {
                continue;
            };
            let start = self.buf.len();
            self.buf.put_slice(&[0; wirebench_wire::grpc::PREFIX_LEN]);
            mt.render(&mut self.draw, &mut self.buf);
            let len = (self.buf.len() - start - wirebench_wire::grpc::PREFIX_LEN) as u32;
            self.buf[start + 1..start + wirebench_wire::grpc::PREFIX_LEN]
                .copy_from_slice(&len.to_be_bytes());
            self.frames[i] = self.buf.split().freeze();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost_reflect::DescriptorPool;

    fn method(name: &str) -> MethodDescriptor {
        let pool = DescriptorPool::decode(wirebench_wire::proto::DESCRIPTOR_SET).unwrap();
        super::super::find_method(&pool, name).unwrap()
    }

    #[test]
    fn a_client_streams_messages_split_with_their_placeholders_kept() {
        let m = method("wirebench.stream.v1.StreamEcho/ClientEcho");
        let json = r#"[{"ping": "a-{{seq}}"}, {"ping": "{{uuid}} \"q\" {{rand 1 2}}"}]"#;
        assert_eq!(
            split(&m, json).unwrap(),
            [
                r#"{"ping":"a-{{seq}}"}"#,
                r#"{"ping":"{{uuid}} \"q\" {{rand 1 2}}"}"#
            ]
        );
        // NDJSON, and a placeholder standing bare where an integer goes
        let m = method("wirebench.stream.v1.StreamEcho/BidiEcho");
        let texts = split(&m, "{\"ping\": \"x\"}\n{\"ping\": \"{{seq}}\"}\n").unwrap();
        assert_eq!(texts, [r#"{"ping":"x"}"#, r#"{"ping":"{{seq}}"}"#]);
        // a unary method's text is kept as written (bare placeholders and all)
        let m = method("wirebench.stream.v1.StreamEcho/ServerEcho");
        let json = r#"{"ping": "p", "count": {{rand 1 5}}}"#;
        assert_eq!(split(&m, json).unwrap(), [json]);
        let (encoded, t) = encode(&m, json).unwrap();
        assert_eq!(t.texts, [json]);
        // the first render: ping "p", count from 1 to 5
        assert_eq!(&encoded[0][..3], b"\x0a\x01p");
        assert!((1..=5).contains(&encoded[0][4]) && encoded[0][3] == 0x10);
    }

    #[test]
    fn each_call_renders_its_messages_into_reused_buffers() {
        let m = method("wirebench.stream.v1.StreamEcho/ClientEcho");
        let (encoded, t) = encode(&m, r#"[{"ping": "n{{seq}}"}, {"ping": "fixed"}]"#).unwrap();
        let (v, texts) = Varies::new(&[("x-id".into(), "id-{{seq}}".into())], Some(&t)).unwrap();
        let v = v.unwrap();
        assert_eq!(texts, [("x-id".to_string(), "id-{{seq}}".to_string())]);
        assert_eq!(v.varying_metadata(), [0]);
        assert!(v.messages[0].is_some() && v.messages[1].is_none());
        let uri: http::Uri = "http://h:1/p/M".parse().unwrap();
        let metadata = super::super::metadata_of(&[("x-id".into(), "id-{{seq}}".into())]).unwrap();
        let call = Call::new(uri, metadata, crate::outcome::FailureKind::GrpcStatus)
            .varying(false, &v.varying_metadata());
        let frames = encoded
            .iter()
            .map(|e| super::super::framed(e).unwrap())
            .collect();
        let mut r = Renders::new(Draw::new(1), vec![call], frames);
        for idx in [7u64, 1234] {
            r.render(&v, idx, 0, true);
            let want = format!("n{idx}");
            assert_eq!(&r.frames[0][7..], want.as_bytes());
            assert_eq!(
                r.frames[0][4] as usize,
                2 + want.len(),
                "the prefix says the length"
            );
            assert_eq!(&r.frames[1][7..], b"fixed");
            let id = r.calls[0].fields().find(|(k, _)| *k == b"x-id").unwrap().1;
            assert_eq!(id, format!("id-{idx}").as_bytes());
        }
    }
}
