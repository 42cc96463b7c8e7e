//! The unidirectional streams of an HTTP/3 connection (RFC 9114 §6.2): ours (the control
//! stream with our SETTINGS) and the server's, read by their type: its control stream (its
//! SETTINGS, then GOAWAY), its QPACK encoder and decoder streams (read and counted: with a
//! dynamic table capacity of 0 there is nothing on them to act on), and any other type
//! (reserved or unknown), whose bytes are discarded.

use bytes::{Buf, BytesMut};
use quinn_proto::StreamId;

use super::request::ProtocolError;
use wirebench_wire::h3::counts::H3Counts;
use wirebench_wire::h3::frame::{Frame, FrameReader, Settings, encode_settings, stream_type};
use wirebench_wire::h3::{Code, Error, varint};

/// What a server's unidirectional stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// its type is still being read
    Typing,
    Control,
    /// the QPACK encoder or decoder stream
    Qpack,
    /// a push stream, reserved or unknown: read and dropped
    Ignored,
}

struct UniIn {
    id: StreamId,
    kind: Kind,
    buf: BytesMut,
    reader: FrameReader,
}

/// The connection's unidirectional streams and what the server said on them.
#[derive(Default)]
pub(super) struct Control {
    ins: Vec<UniIn>,
    /// the server's SETTINGS, once they arrived
    pub(super) settings: Option<Settings>,
    /// the server's GOAWAY: no request stream at or above this id will be processed
    pub(super) goaway: Option<u64>,
    /// frames of both control streams (ours out, the server's in)
    pub(super) frames_out: H3Counts,
    pub(super) frames_in: H3Counts,
    /// stream-type bytes of the unidirectional streams (ours out, the server's in)
    pub(super) type_bytes_out: u64,
    pub(super) type_bytes_in: u64,
    /// bytes of the server's QPACK streams and of the streams it opened that we ignore
    pub(super) qpack_stream_bytes_in: u64,
    pub(super) ignored_bytes_in: u64,
}

/// Our control stream's bytes: its type, then SETTINGS (`max_field_section` the largest
/// field section we accept, no dynamic table), counted in `c`.
pub(super) fn our_control_stream(max_field_section: u64, c: &mut Control) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    varint::encode(&mut out, stream_type::CONTROL);
    c.type_bytes_out += out.len() as u64;
    let head = encode_settings(&mut out, &Settings::client(max_field_section));
    c.frames_out.count_frame(&head);
    out
}

fn err(code: Code, context: &'static str) -> ProtocolError {
    ProtocolError(Error { code, context })
}

impl Control {
    /// Whether `id` is one of the server's unidirectional streams we know.
    pub(super) fn knows(&self, id: StreamId) -> bool {
        self.ins.iter().any(|u| u.id == id)
    }

    /// A new stream the server opened.
    pub(super) fn opened(&mut self, id: StreamId) {
        self.ins.push(UniIn {
            id,
            kind: Kind::Typing,
            buf: BytesMut::new(),
            reader: FrameReader::default(),
        });
    }

    /// Bytes `data` of stream `id` arrived (`fin`: and its end).
    pub(super) fn data(
        &mut self,
        id: StreamId,
        data: &[u8],
        fin: bool,
    ) -> Result<(), ProtocolError> {
        let Some(i) = self.ins.iter().position(|u| u.id == id) else {
            return Ok(());
        };
        let u = &mut self.ins[i];
        match u.kind {
            Kind::Qpack => self.qpack_stream_bytes_in += data.len() as u64,
            Kind::Ignored => self.ignored_bytes_in += data.len() as u64,
            Kind::Typing | Kind::Control => {
                // bounded: a control frame larger than the reader's limit is refused
                u.buf.extend_from_slice(data);
            }
        }
        if u.kind == Kind::Typing {
            let Some((t, n)) = varint::decode(&u.buf) else {
                return Ok(());
            };
            u.buf.advance(n);
            self.type_bytes_in += n as u64;
            let kind = match t {
                stream_type::CONTROL => {
                    if self.ins.iter().any(|o| o.kind == Kind::Control) {
                        return Err(err(Code::StreamCreationError, "a second control stream"));
                    }
                    Kind::Control
                }
                stream_type::QPACK_ENCODER | stream_type::QPACK_DECODER => Kind::Qpack,
                stream_type::PUSH => {
                    return Err(err(Code::IdError, "a push stream without MAX_PUSH_ID"));
                }
                _ => Kind::Ignored,
            };
            let u = &mut self.ins[i];
            u.kind = kind;
            let rest = u.buf.len() as u64;
            match kind {
                Kind::Qpack => self.qpack_stream_bytes_in += rest,
                Kind::Ignored => self.ignored_bytes_in += rest,
                _ => {}
            }
            if kind != Kind::Control {
                u.buf = BytesMut::new();
            }
        }
        let u = &mut self.ins[i];
        if u.kind == Kind::Control {
            loop {
                let frame = match u.reader.decode(&mut u.buf) {
                    Ok(Some(f)) => f,
                    Ok(None) => break,
                    Err(e) => return Err(ProtocolError(e)),
                };
                let first = self.settings.is_none();
                match frame {
                    Frame::Settings(s) if first => self.settings = Some(s),
                    _ if first => {
                        return Err(err(
                            Code::MissingSettings,
                            "the control stream does not start with SETTINGS",
                        ));
                    }
                    Frame::Settings(_) => {
                        return Err(err(Code::FrameUnexpected, "a second SETTINGS frame"));
                    }
                    Frame::GoAway(id) => {
                        if self.goaway.is_some_and(|g| id > g) {
                            return Err(err(Code::IdError, "a GOAWAY raising the last stream id"));
                        }
                        self.goaway = Some(id);
                    }
                    Frame::CancelPush(_) => {}
                    Frame::Data { .. } | Frame::Headers(_) | Frame::PushPromise { .. } => {
                        return Err(err(
                            Code::FrameUnexpected,
                            "a request frame on the control stream",
                        ));
                    }
                    Frame::MaxPushId(_) => {
                        return Err(err(Code::FrameUnexpected, "MAX_PUSH_ID from a server"));
                    }
                }
            }
            if fin {
                return Err(err(
                    Code::ClosedCriticalStream,
                    "the server closed its control stream",
                ));
            }
        } else if fin && matches!(u.kind, Kind::Qpack) {
            return Err(err(
                Code::ClosedCriticalStream,
                "the server closed a QPACK stream",
            ));
        }
        Ok(())
    }

    /// The frames the server's control stream carried so far.
    pub(super) fn control_frames_in(&self) -> H3Counts {
        let mut c = self.frames_in;
        for u in &self.ins {
            if u.kind == Kind::Control {
                c += *u.reader.counts();
            }
        }
        c
    }
}
