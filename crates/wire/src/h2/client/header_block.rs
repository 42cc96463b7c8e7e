//! The header blocks a client connection receives: a response head or trailers assembled
//! across HEADERS and CONTINUATION (bounded in size and in frames), decoded (always, to keep
//! HPACK in step), checked field by field (RFC 9113 §8.3.2, §8.2.2) and handed to the sink.
//! A block that left the HPACK table as it was is remembered with its fields and their check
//! (`BlockMemo`): the same bytes on the same table are not decoded again.

use super::streams::Head;
use super::{Connection, Error, Events, MAX_CONTINUATIONS, calm, compression, protocol};
use crate::h2::frame::{Frame, Reason};
use crate::h2::grpc_framing::GrpcFraming;
use crate::h2::hpack::{self, Field};

/// A byte a field name may not hold: upper case, a control, space.
const NAME_BAD: u8 = 1;
/// A byte a field value may not hold: NUL, CR, LF.
const VALUE_BAD: u8 = 2;
/// What each byte may not be part of, as `NAME_BAD | VALUE_BAD` bits.
const BAD: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if c.is_ascii_uppercase() || c <= b' ' {
            t[b] |= NAME_BAD;
        }
        if c == 0 || c == b'\r' || c == b'\n' {
            t[b] |= VALUE_BAD;
        }
        b += 1;
    }
    t
};

/// Whether `bytes` holds a byte of class `class`: every byte looked up, no branch per byte.
fn holds(bytes: &[u8], class: u8) -> bool {
    bytes.iter().fold(0, |seen, &b| seen | BAD[usize::from(b)]) & class != 0
}

/// A block up to this long is remembered (`BlockMemo`).
const MEMO_MAX: usize = 512;

/// The last response head (or the last trailers: a memo for each) of one of our open streams
/// that decoded without changing the HPACK table: its bytes, the table's change count, the
/// fields handed over and the check's state after them. The same bytes at the same change
/// count decode to the same fields and leave the table as it is (decoding depends on the block
/// and the table alone), so they are handed over again without decoding.
#[derive(Debug, Default)]
pub(super) struct BlockMemo {
    block: Vec<u8>,
    changes: u64,
    /// the fields handed over: their bytes, and each one's (name length, value length, never
    /// indexed) in order
    bytes: Vec<u8>,
    fields: Vec<(usize, usize, bool)>,
    /// the check after the block's fields; `None`: nothing remembered
    check: Option<FieldCheck>,
}

impl BlockMemo {
    /// The check after `block`'s fields when it is the one remembered, on a table unchanged.
    fn hit(&self, block: &[u8], changes: u64) -> Option<FieldCheck> {
        self.check
            .filter(|_| self.changes == changes && self.block == block)
    }

    /// Hands the remembered fields over to `events` for stream `token`.
    fn replay(&self, token: usize, trailers: bool, events: &mut impl Events) {
        let mut at = 0;
        for &(name, value, never_indexed) in &self.fields {
            let (n, rest) = self.bytes[at..].split_at(name);
            events.field(
                token,
                Field {
                    name: n,
                    value: &rest[..value],
                    never_indexed,
                },
                trailers,
            );
            at += name + value;
        }
    }

    /// Forgets the block (another is being decoded).
    fn clear(&mut self) {
        self.check = None;
        self.bytes.clear();
        self.fields.clear();
    }

    /// Adds a field handed over while decoding.
    fn push(&mut self, f: &Field<'_>) {
        self.bytes.extend_from_slice(f.name);
        self.bytes.extend_from_slice(f.value);
        self.fields
            .push((f.name.len(), f.value.len(), f.never_indexed));
    }

    /// Remembers `block`, decoded at `changes` with the fields pushed, and its check.
    fn keep(&mut self, block: &[u8], changes: u64, check: FieldCheck) {
        self.block.clear();
        self.block.extend_from_slice(block);
        (self.changes, self.check) = (changes, Some(check));
    }
}

/// A header block being received across HEADERS and CONTINUATION frames.
#[derive(Clone, Copy, Debug)]
pub(super) struct Partial {
    stream: u32,
    end_stream: bool,
    continuations: u32,
}

impl Connection {
    /// A HEADERS frame: its block handled when it ends there, else kept until its
    /// CONTINUATION frames complete it.
    pub(super) fn headers(
        &mut self,
        stream: u32,
        block: &[u8],
        end_stream: bool,
        end_headers: bool,
        events: &mut impl Events,
    ) -> Result<(), Error> {
        if end_headers {
            return self.header_block(stream, block, end_stream, events);
        }
        if block.len() > self.cfg.max_header_list_size as usize {
            return Err(calm("header block above the header list limit"));
        }
        self.block.clear();
        self.block.extend_from_slice(block);
        self.partial = Some(Partial {
            stream,
            end_stream,
            continuations: 0,
        });
        Ok(())
    }

    /// The frame after an unfinished header block `p`: only a CONTINUATION of the same stream
    /// may come (RFC 9113 §6.10); the block is handled once it ends.
    pub(super) fn continuation(
        &mut self,
        p: Partial,
        f: Frame<'_>,
        events: &mut impl Events,
    ) -> Result<(), Error> {
        let Frame::Continuation {
            stream,
            block,
            end_headers,
        } = f
        else {
            return Err(protocol("a header block is interrupted by another frame"));
        };
        if stream != p.stream {
            return Err(protocol("CONTINUATION on another stream"));
        }
        if p.continuations >= MAX_CONTINUATIONS {
            return Err(calm("too many CONTINUATION frames"));
        }
        if self.block.len() + block.len() > self.cfg.max_header_list_size as usize {
            return Err(calm("header block above the header list limit"));
        }
        self.block.extend_from_slice(block);
        self.partial = Some(Partial {
            continuations: p.continuations + 1,
            ..p
        });
        if end_headers {
            self.partial = None;
            let block = std::mem::take(&mut self.block);
            let r = self.header_block(p.stream, &block, p.end_stream, events);
            self.block = block;
            self.block.clear();
            r?;
        }
        Ok(())
    }

    /// A complete header block: decoded (always, to keep HPACK in step), checked, its fields
    /// handed over when the stream is ours and open.
    fn header_block(
        &mut self,
        stream: u32,
        block: &[u8],
        end_stream: bool,
        events: &mut impl Events,
    ) -> Result<(), Error> {
        self.check_known(stream)?;
        let max = self.cfg.max_header_list_size as usize;
        let slot = self.by_id.get(&stream).copied();
        let Some(slot) = slot.filter(|&s| !self.streams[s].remote_closed) else {
            // a closed stream (reset by us, or ended): decode and drop
            self.decoder
                .decode(block, max, |_| {})
                .map_err(hpack_error)?;
            return Ok(());
        };
        let (token, head) = (self.streams[slot].token, self.streams[slot].head);
        let trailers = head == Head::Received;
        if head == Head::Trailers {
            self.decoder
                .decode(block, max, |_| {})
                .map_err(hpack_error)?;
            self.stream_error(
                slot,
                Reason::PROTOCOL_ERROR,
                "a header block after the trailers",
                events,
            );
            return Ok(());
        }
        let changes = self.decoder.changes();
        let memo = &mut self.memo[usize::from(trailers)];
        let check = match memo.hit(block, changes) {
            Some(check) => {
                memo.replay(token, trailers, events);
                check
            }
            None => {
                let mut check = FieldCheck::new(trailers);
                memo.clear();
                self.decoder
                    .decode(block, max, |field| {
                        if check.field(&field) {
                            memo.push(&field);
                            events.field(token, field, trailers);
                        }
                    })
                    .map_err(hpack_error)?;
                if self.decoder.changes() == changes && block.len() <= MEMO_MAX {
                    memo.keep(block, changes, check);
                }
                check
            }
        };
        if let Err(what) = check.finish(end_stream) {
            self.stream_error(slot, Reason::PROTOCOL_ERROR, what, events);
            return Ok(());
        }
        // an informational head is no progress: a peer may send any number of them
        self.progress = !check.informational;
        let s = &mut self.streams[slot];
        s.head = match (trailers, check.informational) {
            (true, _) => Head::Trailers,
            (false, true) => Head::Awaiting,
            (false, false) => Head::Received,
        };
        if end_stream {
            s.remote_closed = true;
            s.grpc_in = None;
        } else if s.grpc_in.is_none() {
            // the response's DATA follows this head (an informational one keeps the state)
            s.grpc_in = Some(GrpcFraming::START);
        }
        events.headers_done(token, trailers, end_stream);
        if end_stream {
            self.finish_if_closed(slot);
        }
        Ok(())
    }
}

/// The checks of RFC 9113 §8.3.2 and §8.2.2 on a response's fields as they are decoded: a
/// malformed response is a stream error. The first fault is kept; fields after it are not
/// handed over.
#[derive(Clone, Copy, Debug)]
struct FieldCheck {
    trailers: bool,
    regular_seen: bool,
    status_seen: bool,
    informational: bool,
    fault: Option<&'static str>,
}

impl FieldCheck {
    fn new(trailers: bool) -> FieldCheck {
        FieldCheck {
            trailers,
            regular_seen: false,
            status_seen: false,
            informational: false,
            fault: None,
        }
    }

    /// Whether the field is well-formed so far (and so handed over).
    fn field(&mut self, f: &Field<'_>) -> bool {
        if self.fault.is_some() {
            return false;
        }
        self.fault = self.fault_of(f);
        self.fault.is_none()
    }

    fn fault_of(&mut self, f: &Field<'_>) -> Option<&'static str> {
        if f.name.first() == Some(&b':') {
            if self.trailers {
                return Some("a pseudo-header in trailers");
            }
            if self.regular_seen {
                return Some("a pseudo-header after a regular field");
            }
            if f.name != b":status" {
                return Some("a pseudo-header other than :status in a response");
            }
            if self.status_seen {
                return Some(":status twice");
            }
            if f.value.len() != 3 || !f.value.iter().all(u8::is_ascii_digit) {
                return Some(":status is not three digits");
            }
            self.status_seen = true;
            self.informational = f.value[0] == b'1';
            return None;
        }
        self.regular_seen = true;
        if f.name.is_empty() || holds(f.name, NAME_BAD) {
            return Some("a field name that is empty, upper-case or has controls");
        }
        if matches!(
            f.name,
            b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade"
        ) {
            return Some("a connection-specific field");
        }
        if holds(f.value, VALUE_BAD) {
            return Some("a field value with NUL, CR or LF");
        }
        None
    }

    fn finish(&self, end_stream: bool) -> Result<(), &'static str> {
        if let Some(fault) = self.fault {
            return Err(fault);
        }
        if !self.trailers && !self.status_seen {
            return Err("a response head without :status");
        }
        if self.trailers && !end_stream {
            return Err("trailers without END_STREAM");
        }
        if self.informational && end_stream {
            return Err("an informational head with END_STREAM");
        }
        Ok(())
    }
}

fn hpack_error(e: hpack::Error) -> Error {
    match e {
        hpack::Error::HeaderListTooLarge | hpack::Error::StringTooLong => {
            calm("a header list above the header list limit")
        }
        hpack::Error::Truncated => compression("a truncated header block"),
        hpack::Error::IntegerOverflow => compression("an HPACK integer overflows"),
        hpack::Error::InvalidIndex(_) => compression("an HPACK index outside the tables"),
        hpack::Error::Huffman => compression("invalid Huffman coding"),
        hpack::Error::TableSizeUpdate => {
            compression("a table size update out of place or too large")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{NAME_BAD, VALUE_BAD, holds};

    #[test]
    fn the_byte_classes_are_the_fields_rules() {
        for b in 0..=255u8 {
            let name_bad = b.is_ascii_uppercase() || b <= b' ';
            assert_eq!(holds(&[b'a', b, b'z'], NAME_BAD), name_bad, "{b}");
            assert_eq!(
                holds(&[b, b'x'], VALUE_BAD),
                matches!(b, 0 | b'\r' | b'\n'),
                "{b}"
            );
        }
        assert!(!holds(b"", NAME_BAD | VALUE_BAD));
        assert!(!holds(b"content-type", NAME_BAD));
        assert!(holds(b"Content-Type", NAME_BAD));
        assert!(!holds(b"application/grpc; a=B C", VALUE_BAD));
    }
}
