//! The ledger's h2 layer counts kept by the client connection's own codec: every frame counted
//! whole where it is encoded or decoded, into `H2Counts`, with the sniffer's rules
//! (`h2::sniff`) for the bytes of a frame only partly written or read.
//!
//! A connection that counts (`Config::layers`) hands each frame to its [`FrameTally`]: the
//! frames it queues for writing (`queued`, `queued_data`), the frames `recv` decodes
//! (`received`, and `received_data` for the gRPC layer of DATA). The gRPC framing of each
//! stream's DATA is followed in the stream itself (its `grpc_out` / `grpc_in`), which the
//! connection looks up anyway, so no map of streams is kept here.
//!
//! What was written is not always what was queued: the counts out are those of the bytes
//! written (`written`, called from `Connection::advance`), exactly what a sniffer fed the
//! written bytes reports. While the output empties at every write, that is the queued frames'
//! counts taken when it empties. A write that stops inside the queue starts a sniffer resumed
//! where the output last emptied, told the gRPC state each stream's DATA had there, and fed
//! what is written until the output empties again. Likewise in: the bytes the caller still holds
//! (an incomplete frame) are classified by a resumed sniffer when the counts are asked for, and
//! after a connection error the bytes refused are.

use super::counts::H2Counts;
use super::frame::flag::{END_STREAM, PADDED, PRIORITY};
use super::frame::{FrameType, HEADER_LEN, Head, kind};
use super::grpc_framing::GrpcFraming;
use super::sniff::H2Sniffer;

/// Which of the ledger's h2 layers a connection's [`FrameTally`] counts of its own frames
/// (`Config::layers`). Not the binary's `net::Layers`, which says who counts a connection's
/// layers (this codec, a sniffer, the HTTP/1.1 parser) and tells this one when it is the codec.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TallyLayers {
    /// Nothing (no ledger).
    #[default]
    Off,
    /// Frames, HPACK blocks, DATA payload and padding: plain HTTP/2, whose DATA is bodies
    /// (as `H2Sniffer::plain`).
    H2,
    /// The same and the gRPC messages in DATA (prefixes and message bytes, as `H2Sniffer::new`).
    Grpc,
}

/// One direction's counts over a prefix of its bytes that ends at a frame boundary.
#[derive(Clone, Copy, Debug, Default)]
struct Run {
    /// `setup_bytes` is left 0 here and set by `counts` (it depends on where the prefix ends).
    counts: H2Counts,
    bytes: u64,
    /// Offset of the first HEADERS frame header.
    first_headers: Option<u64>,
}

impl Run {
    /// The counts, `setup_bytes` included.
    fn counts(&self) -> H2Counts {
        let mut c = self.counts;
        c.setup_bytes = self.first_headers.unwrap_or(self.bytes);
        c
    }

    /// A sniffer that goes on from the end of this prefix.
    fn resume(&self, expect_preface: bool, grpc: bool) -> H2Sniffer {
        H2Sniffer::resume(
            self.counts(),
            self.bytes,
            self.first_headers,
            expect_preface,
            grpc,
        )
    }

    /// Counts one whole frame (header and payload), as the sniffer does, all but the gRPC
    /// layer of DATA (see `grpc`).
    fn frame(&mut self, frame: &[u8]) {
        let Some((head, payload)) = frame.split_first_chunk::<HEADER_LEN>() else {
            return;
        };
        let [_, _, _, t, flags, ..] = *head;
        let ty = FrameType::from_u8(t);
        let len = payload.len() as u64;
        let padded = flags & PADDED != 0
            && matches!(
                ty,
                FrameType::Data | FrameType::Headers | FrameType::PushPromise
            );
        // the Pad Length byte and the padding it announces
        let padding = if padded {
            1 + u64::from(payload.first().copied().unwrap_or(0))
        } else {
            0
        };
        // HEADERS priority fields, the PUSH_PROMISE promised stream id
        let lead = match ty {
            FrameType::Headers if flags & PRIORITY != 0 => 5,
            FrameType::PushPromise => 4,
            _ => 0,
        };
        if ty == FrameType::Headers && self.first_headers.is_none() {
            self.first_headers = Some(self.bytes);
        }
        let c = &mut self.counts;
        let stat = &mut c.frames[ty as usize];
        stat.count += 1;
        stat.bytes += HEADER_LEN as u64 + len;
        c.frame_header_bytes += HEADER_LEN as u64;
        c.padding_bytes += padding;
        match ty {
            FrameType::Data => c.data_payload_bytes += len,
            FrameType::Headers | FrameType::PushPromise | FrameType::Continuation => {
                c.hpack_bytes += len.saturating_sub(lead + padding);
            }
            _ => {}
        }
        if ty == FrameType::Headers && flags & END_STREAM != 0 {
            c.headers_frames_with_end_stream += 1;
        }
        self.bytes += frame.len() as u64;
    }

    /// The gRPC layer of one DATA frame's content (padding excluded): followed from the
    /// stream's `state`, or untracked without one.
    fn grpc(&mut self, data: &[u8], state: Option<&mut GrpcFraming>) {
        match state {
            Some(state) => state.advance(data, &mut self.counts),
            None => self.counts.data_untracked_bytes += data.len() as u64,
        }
    }
}

/// The stream ids of the DATA frames whose headers are in `bytes`, which start at a frame
/// boundary (the last frame may be incomplete).
fn data_streams(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    let mut at = 0usize;
    std::iter::from_fn(move || {
        loop {
            let head = Head::parse(bytes.get(at..)?.first_chunk::<HEADER_LEN>()?);
            at += HEADER_LEN + head.len as usize;
            if head.kind == kind::DATA {
                return Some(head.stream);
            }
        }
    })
}

/// Both directions' h2 layer counts of one client connection's own frames, kept by its codec
/// (not the request log's tally of rows and waits).
#[derive(Debug)]
pub(crate) struct FrameTally {
    grpc: bool,
    /// Out: everything queued so far (the preface and whole frames).
    queued: Run,
    /// Out: the queue as it stood when the output last emptied, all of it written.
    written: Run,
    /// Out, while the output has not emptied since `written`: each DATA frame queued since,
    /// with its stream's gRPC state before it (the first per stream is the state at
    /// `written`). Cleared whenever the output empties; its capacity is kept.
    before: Vec<(u32, GrpcFraming)>,
    /// Out: a write stopped inside the queue; the bytes written since `written` are classified
    /// by this sniffer until the output empties.
    writing: Option<Box<H2Sniffer>>,
    /// In: every whole frame decoded.
    received: Run,
    /// In: the connection failed, and the bytes it refused were classified by this sniffer.
    refused: Option<Box<H2Sniffer>>,
}

impl FrameTally {
    /// A tally for `layers`; `None` when nothing is counted.
    pub(crate) fn new(layers: TallyLayers) -> Option<FrameTally> {
        let grpc = match layers {
            TallyLayers::Off => return None,
            TallyLayers::H2 => false,
            TallyLayers::Grpc => true,
        };
        Some(FrameTally {
            grpc,
            queued: Run::default(),
            written: Run::default(),
            before: Vec::new(),
            writing: None,
            received: Run::default(),
            refused: None,
        })
    }

    /// The client preface was queued (it starts the output).
    pub(crate) fn queued_preface(&mut self, len: usize) {
        self.queued.counts.preface_bytes += len as u64;
        self.queued.bytes += len as u64;
    }

    /// Whole frames were queued, none of them DATA (a header block, control frames).
    pub(crate) fn queued(&mut self, mut frames: &[u8]) {
        while let Some(head) = frames.first_chunk::<HEADER_LEN>() {
            let len = HEADER_LEN + Head::parse(head).len as usize;
            let (frame, rest) = frames.split_at(len.min(frames.len()));
            self.queued.frame(frame);
            frames = rest;
        }
    }

    /// A DATA frame of stream `id` was queued (`frame`, unpadded: its payload is `data`);
    /// `state` is the stream's gRPC framing (`None`: not followed), advanced over `data`.
    pub(crate) fn queued_data(
        &mut self,
        id: u32,
        frame: &[u8],
        data: &[u8],
        state: Option<&mut GrpcFraming>,
    ) {
        if self.grpc
            && let Some(&before) = state.as_deref()
        {
            match &mut self.writing {
                Some(sniffer) => sniffer.follow(id, before),
                None => self.before.push((id, before)),
            }
        }
        self.queued.frame(frame);
        if self.grpc {
            self.queued.grpc(data, state);
        }
    }

    /// The first `bytes` of the output were written; `emptied`: that was all of it.
    pub(crate) fn written(&mut self, bytes: &[u8], emptied: bool) {
        if let Some(sniffer) = &mut self.writing {
            sniffer.feed(bytes);
        } else if !emptied && !bytes.is_empty() {
            // cold: a write stopped inside the queue
            let mut sniffer = self.written.resume(true, self.grpc);
            for &(id, state) in &self.before {
                sniffer.follow(id, state);
            }
            sniffer.feed(bytes);
            self.writing = Some(Box::new(sniffer));
        }
        if emptied {
            self.written = self.queued;
            self.before.clear();
            self.writing = None;
        }
    }

    /// The counts of the bytes written.
    pub(crate) fn counts_out(&self) -> H2Counts {
        match &self.writing {
            Some(sniffer) => *sniffer.counts(),
            None => self.written.counts(),
        }
    }

    /// A whole frame was decoded (and is about to be handled).
    pub(crate) fn received(&mut self, frame: &[u8]) {
        self.received.frame(frame);
    }

    /// The content of a DATA frame received (padding excluded), followed from its stream's
    /// gRPC `state` (`None`: a stream not followed).
    pub(crate) fn received_data(&mut self, data: &[u8], state: Option<&mut GrpcFraming>) {
        if self.grpc {
            self.received.grpc(data, state);
        }
    }

    /// The connection failed at a frame boundary, refusing `rest`: those bytes are classified
    /// by the sniffer's rules (`state_of`: the gRPC state of a stream the connection follows),
    /// and nothing received after them is counted.
    pub(crate) fn refused(&mut self, rest: &[u8], state_of: impl Fn(u32) -> Option<GrpcFraming>) {
        if self.refused.is_none() {
            let sniffer = self.sniff_in(rest, state_of);
            self.refused = Some(Box::new(sniffer));
        }
    }

    /// The counts of the bytes received: the frames decoded and `unread`, the bytes after them
    /// the caller still holds (an incomplete frame), classified by the sniffer's rules.
    pub(crate) fn counts_in(
        &self,
        unread: &[u8],
        state_of: impl Fn(u32) -> Option<GrpcFraming>,
    ) -> H2Counts {
        match &self.refused {
            Some(sniffer) => *sniffer.counts(),
            None if unread.is_empty() => self.received.counts(),
            None => *self.sniff_in(unread, state_of).counts(),
        }
    }

    /// A sniffer resumed after the frames received, fed `bytes`.
    fn sniff_in(&self, bytes: &[u8], state_of: impl Fn(u32) -> Option<GrpcFraming>) -> H2Sniffer {
        let mut sniffer = self.received.resume(false, self.grpc);
        for id in data_streams(bytes) {
            if let Some(state) = state_of(id) {
                sniffer.follow(id, state);
            }
        }
        sniffer.feed(bytes);
        sniffer
    }
}

#[cfg(test)]
mod tests;
