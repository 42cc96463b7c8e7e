//! The passive, incremental HTTP/2 frame classifier (`H2Sniffer`), one per connection
//! direction, counting its bytes per protocol layer into `H2Counts`.

use super::counts::H2Counts;
use super::frame::flag::{END_STREAM, PADDED, PRIORITY};
use super::frame::{FrameType, HEADER_LEN, Head, PREFACE, kind};
use super::grpc_framing::GrpcFraming;
use super::stream_id::StreamIdMap;

#[cfg(test)]
mod tests;

/// Streams tracked at once for gRPC message boundaries; beyond this, DATA of untracked streams counts as `data_untracked_bytes`.
pub const MAX_TRACKED_STREAMS: usize = 4096;

/// Per-stream gRPC framing, keyed by stream id: bounded by `MAX_TRACKED_STREAMS` whatever the
/// ids are.
type StreamMap = StreamIdMap<GrpcFraming>;

/// Where the next input byte belongs.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Matching the client preface; bytes matched so far.
    Preface(u8),
    /// Collecting a frame header into `hdr`; bytes collected so far.
    Header(u8),
    /// A PADDED frame's header is complete; it is accepted once its pad-length byte fits.
    PadLen,
    /// Inside an accepted frame's payload.
    Payload,
    /// Framing is broken.
    Broken,
}

/// The frame being read; the `lead`, `body` and `pad` parts are consumed in that order.
#[derive(Debug, Clone, Copy)]
struct Frame {
    ty: FrameType,
    flags: u8,
    stream: u32,
    /// HEADERS priority fields or PUSH_PROMISE promised stream id still to come.
    lead: u32,
    /// Fragment / DATA content / other payload still to come.
    body: u32,
    /// Trailing padding still to come.
    pad: u32,
    /// `streams` index of this DATA frame's gRPC state.
    slot: Option<usize>,
}

impl Frame {
    const NONE: Frame = Frame {
        ty: FrameType::Unknown,
        flags: 0,
        stream: 0,
        lead: 0,
        body: 0,
        pad: 0,
        slot: None,
    };
}

/// Incremental classifier for one direction of one HTTP/2 connection.
#[derive(Debug, Clone)]
pub struct H2Sniffer {
    counts: H2Counts,
    fed: u64,
    phase: Phase,
    hdr: [u8; HEADER_LEN],
    frame: Frame,
    /// Offset of the current frame header's first byte.
    frame_start: u64,
    /// Offset of the first HEADERS frame header, once its type byte arrived.
    first_headers_at: Option<u64>,
    /// (stream id, state), never longer than `MAX_TRACKED_STREAMS`; empty without `grpc`.
    streams: StreamMap,
    /// DATA carries gRPC messages (their prefixes are counted); else it is plain bodies.
    grpc: bool,
}

impl H2Sniffer {
    /// `expect_preface`: true for the client->server direction (the stream starts with PREFACE), false for server->client.
    pub fn new(expect_preface: bool) -> Self {
        Self::with_grpc(expect_preface, true)
    }

    /// A sniffer for plain HTTP/2 (requests and responses with bodies, no gRPC framing): DATA
    /// payload is counted, no stream is tracked.
    pub fn plain(expect_preface: bool) -> Self {
        Self::with_grpc(expect_preface, false)
    }

    fn with_grpc(expect_preface: bool, grpc: bool) -> Self {
        H2Sniffer {
            counts: H2Counts::default(),
            fed: 0,
            phase: if expect_preface {
                Phase::Preface(0)
            } else {
                Phase::Header(0)
            },
            hdr: [0; HEADER_LEN],
            frame: Frame::NONE,
            frame_start: 0,
            first_headers_at: None,
            streams: StreamMap::default(),
            grpc,
        }
    }

    /// A sniffer that takes a direction over at a frame boundary `at` bytes in, from a codec
    /// that counted everything before it into `counts` (its first HEADERS frame header at
    /// `first_headers_at`): what follows is classified as if this sniffer had seen it all. At 0,
    /// `expect_preface` makes the preface come first. It follows the gRPC framing of no stream
    /// until told (`follow`) or until it sees a stream's HEADERS.
    pub(crate) fn resume(
        counts: H2Counts,
        at: u64,
        first_headers_at: Option<u64>,
        expect_preface: bool,
        grpc: bool,
    ) -> Self {
        let mut s = Self::with_grpc(expect_preface && at == 0, grpc);
        s.counts = counts;
        s.counts.setup_bytes = first_headers_at.unwrap_or(at);
        s.fed = at;
        s.frame_start = at;
        s.first_headers_at = first_headers_at;
        s
    }

    /// Follows `stream`'s gRPC framing from `state`, unless the stream is followed already
    /// (a resumed sniffer learns the states of the streams it did not see open).
    pub(crate) fn follow(&mut self, stream: u32, state: GrpcFraming) {
        if self.grpc {
            self.streams.entry(stream).or_insert(state);
        }
    }

    /// Feed the next bytes of this direction, any length, any split.
    pub fn feed(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while !rest.is_empty() {
            let before = rest.len();
            rest = match self.phase {
                Phase::Preface(got) => self.feed_preface(got, rest),
                Phase::Header(0) => match self.whole_frame(rest) {
                    Some(after) => after,
                    None => self.feed_header(0, rest),
                },
                Phase::Header(got) => self.feed_header(got, rest),
                Phase::PadLen => self.feed_pad_len(rest),
                Phase::Payload => self.feed_payload(rest),
                Phase::Broken => {
                    self.counts.unparsed_bytes += rest.len() as u64;
                    &[]
                }
            };
            self.fed += (before - rest.len()) as u64;
        }
        self.counts.setup_bytes = self.first_headers_at.unwrap_or(self.fed);
    }

    /// The counts so far; final once the direction's last bytes have been fed.
    pub fn counts(&self) -> &H2Counts {
        &self.counts
    }

    /// Adds uncompressed header-list bytes, which only the client knows (see `H2Counts`).
    pub fn add_header_list_bytes(&mut self, n: u64) {
        self.counts.header_list_bytes += n;
    }

    /// bytes fed so far (always equals preface + frame headers + payloads + unparsed + `pending()`).
    pub fn fed(&self) -> u64 {
        self.fed
    }

    /// Bytes fed but not yet in any counter: a partial preface, a partial frame header, or the
    /// header of a PADDED frame still waiting for its pad-length byte.
    pub fn pending(&self) -> u64 {
        match self.phase {
            Phase::Preface(got) | Phase::Header(got) => u64::from(got),
            Phase::PadLen => HEADER_LEN as u64,
            Phase::Payload | Phase::Broken => 0,
        }
    }

    /// Marks framing as broken; `pending` already-consumed bytes become unparsed.
    fn break_framing(&mut self, why: &'static str, pending: u64) {
        if self.counts.malformed.is_none() {
            self.counts.malformed = Some(why);
        }
        self.counts.unparsed_bytes += pending;
        self.phase = Phase::Broken;
    }

    fn feed_preface<'a>(&mut self, mut got: u8, mut rest: &'a [u8]) -> &'a [u8] {
        while let Some((&b, tail)) = rest.split_first() {
            if PREFACE.get(usize::from(got)) != Some(&b) {
                // `b` itself stays in `rest` and is counted by the broken phase.
                self.break_framing("preface mismatch", u64::from(got));
                return rest;
            }
            got += 1;
            rest = tail;
            if usize::from(got) == PREFACE.len() {
                self.counts.preface_bytes = PREFACE.len() as u64;
                self.phase = Phase::Header(0);
                return rest;
            }
        }
        self.phase = Phase::Preface(got);
        rest
    }

    /// Fast path for the common case: a whole unpadded frame (without priority fields or a
    /// promised stream id) at the start of `input`. Counts it exactly as the byte-wise path would
    /// and returns what follows it; `None` leaves the frame to the general path.
    fn whole_frame<'a>(&mut self, input: &'a [u8]) -> Option<&'a [u8]> {
        let head = Head::parse(input.first_chunk::<HEADER_LEN>()?);
        let (len, flags, stream) = (head.len as usize, head.flags, head.stream);
        let ty = FrameType::from_u8(head.kind);
        let simple = match ty {
            FrameType::Data => flags & PADDED == 0,
            FrameType::Headers => flags & (PADDED | PRIORITY) == 0,
            FrameType::PushPromise => false,
            _ => true,
        };
        let payload = input.get(HEADER_LEN..HEADER_LEN + len)?;
        if !simple {
            return None;
        }
        if ty == FrameType::Headers && self.first_headers_at.is_none() {
            self.first_headers_at = Some(self.fed);
        }
        let n = len as u64;
        let c = &mut self.counts;
        let stat = &mut c.frames[ty as usize];
        stat.count += 1;
        stat.bytes += HEADER_LEN as u64 + n;
        c.frame_header_bytes += HEADER_LEN as u64;
        match ty {
            FrameType::Data => {
                c.data_payload_bytes += n;
                match self.streams.get_mut(&stream) {
                    Some(state) => state.advance(payload, c),
                    None if self.grpc => c.data_untracked_bytes += n,
                    None => {}
                }
                if flags & END_STREAM != 0 {
                    self.forget(stream);
                }
            }
            FrameType::Headers => {
                c.hpack_bytes += n;
                if flags & END_STREAM != 0 {
                    c.headers_frames_with_end_stream += 1;
                    self.forget(stream);
                } else {
                    self.track(stream);
                }
            }
            FrameType::Continuation => c.hpack_bytes += n,
            FrameType::RstStream => self.forget(stream),
            _ => {}
        }
        self.frame_start = self.fed;
        input.get(HEADER_LEN + len..)
    }

    fn feed_header<'a>(&mut self, got: u8, input: &'a [u8]) -> &'a [u8] {
        let start = usize::from(got).min(HEADER_LEN);
        if start == 0 {
            self.frame_start = self.fed;
        }
        let take = (HEADER_LEN - start).min(input.len());
        let (head, rest) = input.split_at(take);
        if let Some(dst) = self.hdr.get_mut(start..start + take) {
            dst.copy_from_slice(head);
        }
        let got = start + take;
        if start <= 3 && got > 3 && self.first_headers_at.is_none() && self.hdr[3] == kind::HEADERS
        {
            self.first_headers_at = Some(self.frame_start);
        }
        if got < HEADER_LEN {
            self.phase = Phase::Header(got as u8);
        } else {
            self.on_header();
        }
        rest
    }

    /// Validates a complete header and accepts the frame unless it waits for a pad length.
    fn on_header(&mut self) {
        let Head {
            len,
            kind,
            flags,
            stream,
        } = Head::parse(&self.hdr);
        let ty = FrameType::from_u8(kind);
        let padded = flags & PADDED != 0
            && matches!(
                ty,
                FrameType::Data | FrameType::Headers | FrameType::PushPromise
            );
        let lead = match ty {
            FrameType::Headers if flags & PRIORITY != 0 => 5,
            FrameType::PushPromise => 4,
            _ => 0,
        };
        let fixed = lead + u32::from(padded);
        let Some(body) = len.checked_sub(fixed) else {
            let why = if padded && len == 0 {
                "PADDED frame without a pad length byte"
            } else if ty == FrameType::PushPromise {
                "PUSH_PROMISE payload shorter than the promised stream id"
            } else {
                "PRIORITY flag with payload shorter than 5"
            };
            self.break_framing(why, HEADER_LEN as u64);
            return;
        };
        self.frame = Frame {
            ty,
            flags,
            stream,
            lead,
            body,
            pad: 0,
            slot: None,
        };
        if padded {
            self.phase = Phase::PadLen;
        } else {
            self.accept(0);
        }
    }

    fn feed_pad_len<'a>(&mut self, input: &'a [u8]) -> &'a [u8] {
        let Some((&pad, rest)) = input.split_first() else {
            return input;
        };
        let pad = u32::from(pad);
        match self.frame.body.checked_sub(pad) {
            Some(body) => {
                self.frame.body = body;
                self.frame.pad = pad;
                self.accept(1);
            }
            None => self.break_framing("pad length exceeds frame payload", HEADER_LEN as u64 + 1),
        }
        rest
    }

    /// Counts the accepted frame's header (and its pad-length byte, `pad_byte` 0 or 1).
    fn accept(&mut self, pad_byte: u64) {
        let f = self.frame;
        let c = &mut self.counts;
        let stat = &mut c.frames[f.ty as usize];
        stat.count += 1;
        stat.bytes += HEADER_LEN as u64 + pad_byte;
        c.frame_header_bytes += HEADER_LEN as u64;
        c.padding_bytes += pad_byte;
        match f.ty {
            FrameType::Data => {
                c.data_payload_bytes += pad_byte;
                self.frame.slot = self.streams.contains_key(&f.stream).then_some(0);
            }
            FrameType::Headers if f.flags & END_STREAM != 0 => {
                c.headers_frames_with_end_stream += 1;
            }
            FrameType::Headers => self.track(f.stream),
            _ => {}
        }
        self.phase = Phase::Payload;
        self.finish_if_done();
    }

    fn feed_payload<'a>(&mut self, input: &'a [u8]) -> &'a [u8] {
        let ty = self.frame.ty;
        let rest = if self.frame.lead > 0 {
            let (part, rest) = split_upto(input, self.frame.lead);
            self.frame.lead -= part.len() as u32;
            self.counts.frames[ty as usize].bytes += part.len() as u64;
            rest
        } else if self.frame.body > 0 {
            let (part, rest) = split_upto(input, self.frame.body);
            self.frame.body -= part.len() as u32;
            let n = part.len() as u64;
            let c = &mut self.counts;
            c.frames[ty as usize].bytes += n;
            match ty {
                FrameType::Data => {
                    c.data_payload_bytes += n;
                    let state = match self.frame.slot {
                        Some(_) => self.streams.get_mut(&self.frame.stream),
                        None => None,
                    };
                    match state {
                        Some(state) => state.advance(part, c),
                        None if self.grpc => c.data_untracked_bytes += n,
                        None => {}
                    }
                }
                FrameType::Headers | FrameType::PushPromise | FrameType::Continuation => {
                    c.hpack_bytes += n;
                }
                _ => {}
            }
            rest
        } else {
            let (part, rest) = split_upto(input, self.frame.pad);
            self.frame.pad -= part.len() as u32;
            let n = part.len() as u64;
            let c = &mut self.counts;
            c.frames[ty as usize].bytes += n;
            c.padding_bytes += n;
            if ty == FrameType::Data {
                c.data_payload_bytes += n;
            }
            rest
        };
        self.finish_if_done();
        rest
    }

    /// Ends the current frame once its payload is complete, applying END_STREAM / RST_STREAM.
    fn finish_if_done(&mut self) {
        let f = self.frame;
        if f.lead > 0 || f.body > 0 || f.pad > 0 {
            return;
        }
        match f.ty {
            FrameType::Data | FrameType::Headers if f.flags & END_STREAM != 0 => {
                self.forget(f.stream);
            }
            FrameType::RstStream => self.forget(f.stream),
            _ => {}
        }
        self.frame = Frame::NONE;
        self.phase = Phase::Header(0);
    }

    /// Starts gRPC tracking for a stream that opened (HEADERS without END_STREAM) in this direction.
    /// When the map is full the lowest stream id (the oldest, likely abandoned stream) is evicted.
    fn track(&mut self, stream: u32) {
        if !self.grpc {
            return;
        }
        if self.streams.len() < MAX_TRACKED_STREAMS {
            self.streams.entry(stream).or_insert(GrpcFraming::START);
            return;
        }
        if self.streams.contains_key(&stream) {
            return;
        }
        // Full: replace the lowest (oldest) stream id, if it is older than this one (rare, O(n)).
        let oldest = self.streams.keys().copied().min();
        if let Some(old) = oldest.filter(|&s| s < stream) {
            self.streams.remove(&old);
            self.streams.insert(stream, GrpcFraming::START);
        }
    }

    fn forget(&mut self, stream: u32) {
        self.streams.remove(&stream);
    }
}

/// Splits off at most `n` leading bytes.
fn split_upto(input: &[u8], n: u32) -> (&[u8], &[u8]) {
    let k = usize::try_from(n).unwrap_or(usize::MAX).min(input.len());
    input.split_at(k)
}
