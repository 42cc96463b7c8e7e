//! Passive, incremental HTTP/2 frame classifier that counts one connection direction's bytes per protocol layer.

/// The client connection preface that starts the client->server direction.
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Bytes in every frame header: length (3), type (1), flags (1), stream id (4).
pub const FRAME_HEADER_LEN: usize = 9;
/// Per-stream gRPC state, keyed by stream id with a multiplicative hash: stream ids are small
/// odd (or even) integers chosen by the peers, so a cheap mix spreads them well enough, and the
/// map is bounded by `MAX_TRACKED_STREAMS` whatever they are.
type StreamMap =
    std::collections::HashMap<u32, Grpc, std::hash::BuildHasherDefault<StreamIdHasher>>;

/// Fibonacci hashing of a u32 stream id.
#[derive(Default)]
pub(crate) struct StreamIdHasher(u64);

impl std::hash::Hasher for StreamIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Streams tracked at once for gRPC message boundaries; beyond this, DATA of untracked streams counts as `data_untracked_bytes`.
pub const MAX_TRACKED_STREAMS: usize = 4096;

const END_STREAM: u8 = 0x1;
const PADDED: u8 = 0x8;
const PRIORITY: u8 = 0x20;
/// `FRAME_HEADER_LEN` as a counter increment.
const HEADER_LEN: u64 = FRAME_HEADER_LEN as u64;
/// Bytes in a gRPC message prefix: compressed flag (1) + big-endian length (4).
const GRPC_PREFIX_LEN: u8 = 5;

/// HTTP/2 frame types (RFC 9113 §6); every other type byte is `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FrameType {
    Data,
    Headers,
    Priority,
    RstStream,
    Settings,
    PushPromise,
    Ping,
    GoAway,
    WindowUpdate,
    Continuation,
    Unknown,
}

impl FrameType {
    /// Every variant in declaration order, i.e. the order of `H2Counts::frames`.
    pub const ALL: [FrameType; 11] = [
        FrameType::Data,
        FrameType::Headers,
        FrameType::Priority,
        FrameType::RstStream,
        FrameType::Settings,
        FrameType::PushPromise,
        FrameType::Ping,
        FrameType::GoAway,
        FrameType::WindowUpdate,
        FrameType::Continuation,
        FrameType::Unknown,
    ];

    /// Classifies a frame header's type byte.
    pub fn from_u8(t: u8) -> Self {
        match t {
            0x0 => FrameType::Data,
            0x1 => FrameType::Headers,
            0x2 => FrameType::Priority,
            0x3 => FrameType::RstStream,
            0x4 => FrameType::Settings,
            0x5 => FrameType::PushPromise,
            0x6 => FrameType::Ping,
            0x7 => FrameType::GoAway,
            0x8 => FrameType::WindowUpdate,
            0x9 => FrameType::Continuation,
            _ => FrameType::Unknown,
        }
    }

    /// The RFC name of the type, suitable as a metric key.
    pub fn name(self) -> &'static str {
        match self {
            FrameType::Data => "DATA",
            FrameType::Headers => "HEADERS",
            FrameType::Priority => "PRIORITY",
            FrameType::RstStream => "RST_STREAM",
            FrameType::Settings => "SETTINGS",
            FrameType::PushPromise => "PUSH_PROMISE",
            FrameType::Ping => "PING",
            FrameType::GoAway => "GOAWAY",
            FrameType::WindowUpdate => "WINDOW_UPDATE",
            FrameType::Continuation => "CONTINUATION",
            FrameType::Unknown => "UNKNOWN",
        }
    }
}

/// Frames of one type seen so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FrameCount {
    /// Frames whose header has been accepted.
    pub count: u64,
    /// 9-byte header + payload bytes received so far.
    pub bytes: u64,
}

/// Per-layer byte counts of one direction; every counter grows as the bytes arrive. The same
/// struct is the live sniffer's, a connection record's and a run's sum (`+=`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct H2Counts {
    /// 24 if this direction began with the client preface.
    pub preface_bytes: u64,
    /// Indexed by `FrameType as usize` (declaration order).
    pub frames: [FrameCount; 11],
    /// 9 x frames.
    pub frame_header_bytes: u64,
    /// Header block fragment bytes of HEADERS/PUSH_PROMISE/CONTINUATION: payload minus pad-length byte,
    /// padding, HEADERS priority fields (5) and the PUSH_PROMISE promised stream id (4).
    pub hpack_bytes: u64,
    /// All DATA payload bytes, padding fields included.
    pub data_payload_bytes: u64,
    /// Pad-length bytes + padding, across DATA/HEADERS/PUSH_PROMISE.
    pub padding_bytes: u64,
    /// 5 per gRPC message prefix (counted as the bytes arrive).
    pub grpc_prefix_bytes: u64,
    /// gRPC message bytes.
    pub grpc_message_bytes: u64,
    /// Completed gRPC prefixes (counted when the 5th prefix byte arrives).
    pub grpc_messages: u64,
    /// DATA bytes of streams not tracked (no state: map full, evicted, or no HEADERS seen in this
    /// direction) or after a malformed gRPC prefix; always 0 for a plain-HTTP/2 sniffer, whose
    /// DATA is bodies, not gRPC messages.
    pub data_untracked_bytes: u64,
    /// Bytes before the first byte of the first HEADERS frame header: the preface plus the
    /// SETTINGS/WINDOW_UPDATE/PING exchange before the first request or response.
    pub setup_bytes: u64,
    /// HEADERS frames carrying END_STREAM.
    pub headers_frames_with_end_stream: u64,
    /// Why framing broke, set once; after that every byte goes to `unparsed_bytes`.
    pub malformed: Option<&'static str>,
    /// Bytes not attributed to any frame: those of the broken frame and everything after it.
    pub unparsed_bytes: u64,
    /// The same header lists uncompressed (name + value octets, pseudo-headers included): not
    /// seen by the sniffer (HPACK is not decoded), told by the client that built and read them.
    pub header_list_bytes: u64,
}

impl H2Counts {
    /// Frames of type `t`.
    pub fn frame(&self, t: FrameType) -> FrameCount {
        self.frames[t as usize]
    }

    /// Bytes of frames that are neither DATA nor HEADERS/CONTINUATION: connection control.
    pub fn control_frame_bytes(&self) -> u64 {
        FrameType::ALL
            .iter()
            .filter(|t| {
                !matches!(
                    t,
                    FrameType::Data | FrameType::Headers | FrameType::Continuation
                )
            })
            .map(|&t| self.frame(t).bytes)
            .sum()
    }
}

impl std::ops::AddAssign for H2Counts {
    fn add_assign(&mut self, o: H2Counts) {
        self.preface_bytes += o.preface_bytes;
        for (a, b) in self.frames.iter_mut().zip(o.frames) {
            a.count += b.count;
            a.bytes += b.bytes;
        }
        self.frame_header_bytes += o.frame_header_bytes;
        self.hpack_bytes += o.hpack_bytes;
        self.data_payload_bytes += o.data_payload_bytes;
        self.padding_bytes += o.padding_bytes;
        self.grpc_prefix_bytes += o.grpc_prefix_bytes;
        self.grpc_message_bytes += o.grpc_message_bytes;
        self.grpc_messages += o.grpc_messages;
        self.data_untracked_bytes += o.data_untracked_bytes;
        self.setup_bytes += o.setup_bytes;
        self.headers_frames_with_end_stream += o.headers_frames_with_end_stream;
        self.malformed = self.malformed.or(o.malformed);
        self.unparsed_bytes += o.unparsed_bytes;
        self.header_list_bytes += o.header_list_bytes;
    }
}

/// As reports write it: the byte counts, and `frames` as a map from type name to
/// `{count, bytes}` holding only the types seen.
impl serde::Serialize for H2Counts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeStruct};
        struct Frames<'a>(&'a H2Counts);
        impl serde::Serialize for Frames<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let seen = FrameType::ALL
                    .iter()
                    .filter(|&&t| self.0.frame(t).count > 0);
                let mut m = s.serialize_map(Some(seen.clone().count()))?;
                for &t in seen {
                    m.serialize_entry(t.name(), &self.0.frame(t))?;
                }
                m.end()
            }
        }
        let mut st = s.serialize_struct("H2Counts", 13)?;
        st.serialize_field("preface_bytes", &self.preface_bytes)?;
        st.serialize_field("setup_bytes", &self.setup_bytes)?;
        st.serialize_field("frame_header_bytes", &self.frame_header_bytes)?;
        st.serialize_field("hpack_bytes", &self.hpack_bytes)?;
        st.serialize_field("header_list_bytes", &self.header_list_bytes)?;
        st.serialize_field("data_payload_bytes", &self.data_payload_bytes)?;
        st.serialize_field("padding_bytes", &self.padding_bytes)?;
        st.serialize_field("grpc_prefix_bytes", &self.grpc_prefix_bytes)?;
        st.serialize_field("grpc_message_bytes", &self.grpc_message_bytes)?;
        st.serialize_field("grpc_messages", &self.grpc_messages)?;
        st.serialize_field("data_untracked_bytes", &self.data_untracked_bytes)?;
        st.serialize_field("unparsed_bytes", &self.unparsed_bytes)?;
        st.serialize_field("frames", &Frames(self))?;
        st.end()
    }
}

/// As `Serialize` writes it (a report read back, by `wirebench merge`): a frame type name
/// that is not one of `FrameType::name`'s is an error; the two fields reports leave out
/// (`headers_frames_with_end_stream`, `malformed`) read as 0 and none.
impl<'de> serde::Deserialize<'de> for H2Counts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<H2Counts, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Written {
            preface_bytes: u64,
            setup_bytes: u64,
            frame_header_bytes: u64,
            hpack_bytes: u64,
            header_list_bytes: u64,
            data_payload_bytes: u64,
            padding_bytes: u64,
            grpc_prefix_bytes: u64,
            grpc_message_bytes: u64,
            grpc_messages: u64,
            data_untracked_bytes: u64,
            unparsed_bytes: u64,
            frames: std::collections::BTreeMap<String, FrameCount>,
        }
        let w = Written::deserialize(d)?;
        let mut frames = [FrameCount::default(); 11];
        for (name, count) in w.frames {
            let Some(t) = FrameType::ALL.iter().find(|t| t.name() == name) else {
                return Err(serde::de::Error::custom(format!(
                    "unknown h2 frame type {name:?}"
                )));
            };
            frames[*t as usize] = count;
        }
        Ok(H2Counts {
            preface_bytes: w.preface_bytes,
            frames,
            frame_header_bytes: w.frame_header_bytes,
            hpack_bytes: w.hpack_bytes,
            data_payload_bytes: w.data_payload_bytes,
            padding_bytes: w.padding_bytes,
            grpc_prefix_bytes: w.grpc_prefix_bytes,
            grpc_message_bytes: w.grpc_message_bytes,
            grpc_messages: w.grpc_messages,
            data_untracked_bytes: w.data_untracked_bytes,
            setup_bytes: w.setup_bytes,
            headers_frames_with_end_stream: 0,
            malformed: None,
            unparsed_bytes: w.unparsed_bytes,
            header_list_bytes: w.header_list_bytes,
        })
    }
}

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

/// gRPC message framing state of one stream's DATA content (the sniffer keeps one per stream it
/// follows; the client connection keeps one in each of its streams, `h2::tally`).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Grpc {
    /// `got` prefix bytes seen; `len` holds the length bytes among them.
    Prefix { got: u8, len: [u8; 4] },
    /// Message bytes still to come (non-zero).
    Body(u32),
    /// A prefix had an invalid flag byte; the rest of the stream is untracked.
    Broken,
}

impl Grpc {
    pub(crate) const START: Grpc = Grpc::Prefix {
        got: 0,
        len: [0; 4],
    };
}

/// Incremental classifier for one direction of one HTTP/2 connection.
#[derive(Debug, Clone)]
pub struct H2Sniffer {
    counts: H2Counts,
    fed: u64,
    phase: Phase,
    hdr: [u8; FRAME_HEADER_LEN],
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
            hdr: [0; FRAME_HEADER_LEN],
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
    pub(crate) fn follow(&mut self, stream: u32, state: Grpc) {
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
            Phase::PadLen => HEADER_LEN,
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
        let head: &[u8; FRAME_HEADER_LEN] = input.get(..FRAME_HEADER_LEN)?.try_into().ok()?;
        let [l0, l1, l2, t, flags, s0, s1, s2, s3] = *head;
        let len = u32::from_be_bytes([0, l0, l1, l2]) as usize;
        let ty = FrameType::from_u8(t);
        let simple = match ty {
            FrameType::Data => flags & PADDED == 0,
            FrameType::Headers => flags & (PADDED | PRIORITY) == 0,
            FrameType::PushPromise => false,
            _ => true,
        };
        let payload = input.get(FRAME_HEADER_LEN..FRAME_HEADER_LEN + len)?;
        if !simple {
            return None;
        }
        let stream = u32::from_be_bytes([s0, s1, s2, s3]) & 0x7fff_ffff;
        if ty == FrameType::Headers && self.first_headers_at.is_none() {
            self.first_headers_at = Some(self.fed);
        }
        let n = len as u64;
        let c = &mut self.counts;
        let stat = &mut c.frames[ty as usize];
        stat.count += 1;
        stat.bytes += HEADER_LEN + n;
        c.frame_header_bytes += HEADER_LEN;
        match ty {
            FrameType::Data => {
                c.data_payload_bytes += n;
                match self.streams.get_mut(&stream) {
                    Some(state) => grpc_consume(state, payload, c),
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
        input.get(FRAME_HEADER_LEN + len..)
    }

    fn feed_header<'a>(&mut self, got: u8, input: &'a [u8]) -> &'a [u8] {
        let start = usize::from(got).min(FRAME_HEADER_LEN);
        if start == 0 {
            self.frame_start = self.fed;
        }
        let take = (FRAME_HEADER_LEN - start).min(input.len());
        let (head, rest) = input.split_at(take);
        if let Some(dst) = self.hdr.get_mut(start..start + take) {
            dst.copy_from_slice(head);
        }
        let got = start + take;
        if start <= 3 && got > 3 && self.first_headers_at.is_none() && self.hdr[3] == 0x1 {
            self.first_headers_at = Some(self.frame_start);
        }
        if got < FRAME_HEADER_LEN {
            self.phase = Phase::Header(got as u8);
        } else {
            self.on_header();
        }
        rest
    }

    /// Validates a complete header and accepts the frame unless it waits for a pad length.
    fn on_header(&mut self) {
        let [l0, l1, l2, t, flags, s0, s1, s2, s3] = self.hdr;
        let len = u32::from_be_bytes([0, l0, l1, l2]);
        let ty = FrameType::from_u8(t);
        let stream = u32::from_be_bytes([s0, s1, s2, s3]) & 0x7fff_ffff;
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
            self.break_framing(why, HEADER_LEN);
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
            None => self.break_framing("pad length exceeds frame payload", HEADER_LEN + 1),
        }
        rest
    }

    /// Counts the accepted frame's header (and its pad-length byte, `pad_byte` 0 or 1).
    fn accept(&mut self, pad_byte: u64) {
        let f = self.frame;
        let c = &mut self.counts;
        let stat = &mut c.frames[f.ty as usize];
        stat.count += 1;
        stat.bytes += HEADER_LEN + pad_byte;
        c.frame_header_bytes += HEADER_LEN;
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
                        Some(state) => grpc_consume(state, part, c),
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
            self.streams.entry(stream).or_insert(Grpc::START);
            return;
        }
        if self.streams.contains_key(&stream) {
            return;
        }
        // Full: replace the lowest (oldest) stream id, if it is older than this one (rare, O(n)).
        let oldest = self.streams.keys().copied().min();
        if let Some(old) = oldest.filter(|&s| s < stream) {
            self.streams.remove(&old);
            self.streams.insert(stream, Grpc::START);
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

/// Advances one stream's gRPC framing over DATA content bytes.
pub(crate) fn grpc_consume(state: &mut Grpc, mut data: &[u8], c: &mut H2Counts) {
    while !data.is_empty() {
        // Fast path: a whole message (compressed flag 0 or 1) starting at a message boundary.
        if let (Grpc::Prefix { got: 0, .. }, [0 | 1, l0, l1, l2, l3, ..]) = (*state, data) {
            let len = u32::from_be_bytes([*l0, *l1, *l2, *l3]);
            if let Some(tail) = data.get(usize::from(GRPC_PREFIX_LEN) + len as usize..) {
                c.grpc_prefix_bytes += u64::from(GRPC_PREFIX_LEN);
                c.grpc_message_bytes += u64::from(len);
                c.grpc_messages += 1;
                data = tail;
                continue;
            }
        }
        match *state {
            Grpc::Prefix { mut got, mut len } => {
                if got == 0 {
                    let Some((&flag, tail)) = data.split_first() else {
                        return;
                    };
                    if flag > 1 {
                        *state = Grpc::Broken;
                        continue;
                    }
                    got = 1;
                    c.grpc_prefix_bytes += 1;
                    data = tail;
                }
                while got < GRPC_PREFIX_LEN {
                    let Some((&b, tail)) = data.split_first() else {
                        break;
                    };
                    if let Some(slot) = len.get_mut(usize::from(got - 1)) {
                        *slot = b;
                    }
                    got += 1;
                    c.grpc_prefix_bytes += 1;
                    data = tail;
                }
                *state = if got < GRPC_PREFIX_LEN {
                    Grpc::Prefix { got, len }
                } else {
                    c.grpc_messages += 1;
                    match u32::from_be_bytes(len) {
                        0 => Grpc::START,
                        n => Grpc::Body(n),
                    }
                };
            }
            Grpc::Body(left) => {
                let (part, tail) = split_upto(data, left);
                c.grpc_message_bytes += part.len() as u64;
                *state = match left - part.len() as u32 {
                    0 => Grpc::START,
                    n => Grpc::Body(n),
                };
                data = tail;
            }
            Grpc::Broken => {
                c.data_untracked_bytes += data.len() as u64;
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const END_HEADERS: u8 = 0x4;

    fn frame(ty: u8, flags: u8, sid: u32, payload: &[u8]) -> Vec<u8> {
        let len = u32::try_from(payload.len()).unwrap();
        let mut v = Vec::with_capacity(FRAME_HEADER_LEN + payload.len());
        v.extend_from_slice(&len.to_be_bytes()[1..]);
        v.push(ty);
        v.push(flags);
        v.extend_from_slice(&sid.to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn counts_read_back_as_reports_write_them() {
        let mut s = H2Sniffer::new(true);
        let mut bytes = PREFACE.to_vec();
        bytes.extend(frame(0x4, 0, 0, &[]));
        bytes.extend(frame(0x1, END_HEADERS, 1, &[0x82, 0x86]));
        bytes.extend(frame(0x0, 0, 1, &[0, 0, 0, 0, 2, 8, 1]));
        s.feed(&bytes);
        let mut c = *s.counts();
        c.header_list_bytes = 42;
        let json = serde_json::to_string(&c).unwrap();
        let back: H2Counts = serde_json::from_str(&json).unwrap();
        // what the report carries comes back whole (the two fields it leaves out are 0 / none)
        assert_eq!(
            back,
            H2Counts {
                headers_frames_with_end_stream: 0,
                malformed: None,
                ..c
            }
        );
        assert_eq!(back.frame(FrameType::Data).count, 1);
        assert_eq!(back.grpc_messages, 1);
        let bad = json.replace("\"DATA\"", "\"DATUM\"");
        let e = serde_json::from_str::<H2Counts>(&bad).unwrap_err();
        assert!(e.to_string().contains("DATUM"), "{e}");
    }

    /// A PADDED frame: pad-length byte, `lead`, `body`, then `pad` zero bytes.
    fn padded(ty: u8, flags: u8, sid: u32, lead: &[u8], body: &[u8], pad: u8) -> Vec<u8> {
        let mut p = vec![pad];
        p.extend_from_slice(lead);
        p.extend_from_slice(body);
        p.extend(std::iter::repeat_n(0, usize::from(pad)));
        frame(ty, flags | PADDED, sid, &p)
    }

    /// One uncompressed gRPC message with `len` body bytes.
    fn grpc(len: usize) -> Vec<u8> {
        let mut v = vec![0];
        v.extend_from_slice(&u32::try_from(len).unwrap().to_be_bytes());
        v.extend((0..len).map(|i| i as u8));
        v
    }

    fn sniff(expect_preface: bool, input: &[u8]) -> H2Sniffer {
        let mut s = H2Sniffer::new(expect_preface);
        s.feed(input);
        assert_eq!(s.fed(), input.len() as u64);
        assert_balanced(&s);
        s
    }

    fn stat(s: &H2Sniffer, ty: FrameType) -> FrameCount {
        s.counts().frames[ty as usize]
    }

    fn assert_balanced(s: &H2Sniffer) {
        let c = s.counts();
        let frame_bytes: u64 = c.frames.iter().map(|f| f.bytes).sum();
        let frame_count: u64 = c.frames.iter().map(|f| f.count).sum();
        assert_eq!(c.frame_header_bytes, 9 * frame_count);
        assert_eq!(
            s.fed(),
            c.preface_bytes + frame_bytes + c.unparsed_bytes + s.pending()
        );
        assert!(c.setup_bytes <= s.fed());
        assert!(
            c.data_payload_bytes
                >= c.grpc_prefix_bytes + c.grpc_message_bytes + c.data_untracked_bytes
        );
    }

    #[test]
    fn names_and_types_round_trip() {
        for (i, ty) in FrameType::ALL.iter().enumerate() {
            assert_eq!(*ty as usize, i);
            if *ty != FrameType::Unknown {
                assert_eq!(FrameType::from_u8(i as u8), *ty);
            }
        }
        assert_eq!(FrameType::from_u8(0xFA), FrameType::Unknown);
        assert_eq!(FrameType::RstStream.name(), "RST_STREAM");
        assert_eq!(FrameType::GoAway.name(), "GOAWAY");
        assert_eq!(FrameType::Unknown.name(), "UNKNOWN");
    }

    #[test]
    fn client_unary_call() {
        let mut input = PREFACE.to_vec();
        input.extend(frame(4, 0, 0, &[0; 18]));
        input.extend(frame(8, 0, 0, &[0, 0, 0xff, 0]));
        input.extend(frame(1, END_HEADERS, 1, &[0x82; 30]));
        input.extend(frame(0, END_STREAM, 1, &grpc(20)));
        let s = sniff(true, &input);
        let mut want = H2Counts {
            preface_bytes: 24,
            frame_header_bytes: 36,
            hpack_bytes: 30,
            data_payload_bytes: 25,
            grpc_prefix_bytes: 5,
            grpc_message_bytes: 20,
            grpc_messages: 1,
            setup_bytes: 24 + 27 + 13,
            ..H2Counts::default()
        };
        want.frames[FrameType::Settings as usize] = FrameCount {
            count: 1,
            bytes: 27,
        };
        want.frames[FrameType::WindowUpdate as usize] = FrameCount {
            count: 1,
            bytes: 13,
        };
        want.frames[FrameType::Headers as usize] = FrameCount {
            count: 1,
            bytes: 39,
        };
        want.frames[FrameType::Data as usize] = FrameCount {
            count: 1,
            bytes: 34,
        };
        assert_eq!(*s.counts(), want);
        assert_eq!(s.fed(), 137);
        assert!(s.streams.is_empty());
    }

    #[test]
    fn server_message_split_across_frames_then_trailers() {
        let msg = grpc(30);
        let mut input = frame(4, 0, 0, &[0; 6]);
        input.extend(frame(4, 0x1, 0, &[]));
        input.extend(frame(1, END_HEADERS, 1, &[0x88; 20]));
        input.extend(frame(0, 0, 1, &msg[..12]));
        input.extend(frame(0, 0, 1, &msg[12..]));
        input.extend(frame(1, END_HEADERS | END_STREAM, 1, &[0x40; 15]));
        let s = sniff(false, &input);
        let c = s.counts();
        assert_eq!(c.preface_bytes, 0);
        assert_eq!(
            stat(&s, FrameType::Settings),
            FrameCount {
                count: 2,
                bytes: 24
            }
        );
        assert_eq!(
            stat(&s, FrameType::Headers),
            FrameCount {
                count: 2,
                bytes: 53
            }
        );
        assert_eq!(
            stat(&s, FrameType::Data),
            FrameCount {
                count: 2,
                bytes: 53
            }
        );
        assert_eq!(c.frame_header_bytes, 54);
        assert_eq!(c.hpack_bytes, 35);
        assert_eq!(c.data_payload_bytes, 35);
        assert_eq!(c.grpc_prefix_bytes, 5);
        assert_eq!(c.grpc_message_bytes, 30);
        assert_eq!(c.grpc_messages, 1);
        assert_eq!(c.data_untracked_bytes, 0);
        assert_eq!(c.padding_bytes, 0);
        assert_eq!(c.setup_bytes, 24);
        assert_eq!(c.headers_frames_with_end_stream, 1);
        assert_eq!(c.malformed, None);
        assert_eq!(c.unparsed_bytes, 0);
        assert!(s.streams.is_empty());
    }

    #[test]
    fn padded_data_headers_and_push_promise() {
        let mut input = padded(1, END_HEADERS | PRIORITY, 1, &[0, 0, 0, 3, 15], &[7; 10], 7);
        input.extend(padded(0, END_STREAM, 1, &[], &grpc(3), 4));
        input.extend(padded(5, END_HEADERS, 1, &[0, 0, 0, 2], &[9; 6], 2));
        let s = sniff(false, &input);
        let c = s.counts();
        assert_eq!(
            stat(&s, FrameType::Headers),
            FrameCount {
                count: 1,
                bytes: 9 + 23
            }
        );
        assert_eq!(
            stat(&s, FrameType::Data),
            FrameCount {
                count: 1,
                bytes: 9 + 13
            }
        );
        assert_eq!(
            stat(&s, FrameType::PushPromise),
            FrameCount {
                count: 1,
                bytes: 9 + 13
            }
        );
        assert_eq!(c.hpack_bytes, 10 + 6);
        assert_eq!(c.padding_bytes, 8 + 5 + 3);
        assert_eq!(c.data_payload_bytes, 13);
        assert_eq!(c.grpc_prefix_bytes, 5);
        assert_eq!(c.grpc_message_bytes, 3);
        assert_eq!(c.grpc_messages, 1);
        assert_eq!(c.data_untracked_bytes, 0);
        assert_eq!(c.setup_bytes, 0);
        assert_eq!(c.malformed, None);
    }

    #[test]
    fn zero_padding_and_empty_padded_data() {
        let mut input = frame(1, END_HEADERS, 3, &[1]);
        input.extend(padded(0, 0, 3, &[], &[], 0));
        input.extend(padded(0, END_STREAM, 3, &[], &[], 9));
        let s = sniff(false, &input);
        let c = s.counts();
        assert_eq!(
            stat(&s, FrameType::Data),
            FrameCount {
                count: 2,
                bytes: 9 + 1 + 9 + 10
            }
        );
        assert_eq!(c.padding_bytes, 11);
        assert_eq!(c.data_payload_bytes, 11);
        assert_eq!(c.grpc_prefix_bytes + c.data_untracked_bytes, 0);
        assert!(s.streams.is_empty());
    }

    #[test]
    fn continuation_fragments_count_as_hpack() {
        let mut input = frame(1, 0, 1, &[1; 10]);
        input.extend(frame(9, 0, 1, &[2; 8]));
        input.extend(frame(9, END_HEADERS, 1, &[3; 5]));
        let s = sniff(false, &input);
        assert_eq!(s.counts().hpack_bytes, 23);
        assert_eq!(
            stat(&s, FrameType::Continuation),
            FrameCount {
                count: 2,
                bytes: 31
            }
        );
    }

    #[test]
    fn several_messages_in_one_data_frame() {
        let mut body = grpc(4);
        body.extend(grpc(0));
        body.extend(grpc(7));
        body.extend(&grpc(9)[..3]);
        let mut input = frame(1, END_HEADERS, 1, &[0x83]);
        input.extend(frame(0, 0, 1, &body));
        let s = sniff(false, &input);
        let c = s.counts();
        assert_eq!(c.grpc_messages, 3);
        assert_eq!(c.grpc_prefix_bytes, 18);
        assert_eq!(c.grpc_message_bytes, 11);
        assert_eq!(c.data_payload_bytes, 29);
    }

    #[test]
    fn control_frames_and_unknown_type() {
        let mut input = frame(6, 0, 0, &[1; 8]);
        input.extend(frame(6, 0x1, 0, &[1; 8]));
        input.extend(frame(7, 0, 0, &[0, 0, 0, 1, 0, 0, 0, 0, b'b', b'y', b'e']));
        input.extend(frame(3, 0, 5, &[0, 0, 0, 8]));
        input.extend(frame(2, 0, 5, &[0, 0, 0, 0, 16]));
        // The PADDED bit means nothing on an unknown type.
        input.extend(frame(0xFA, PADDED | PRIORITY, 5, &[0xff; 11]));
        let s = sniff(false, &input);
        let c = s.counts();
        for (t, count, bytes) in [
            (FrameType::Ping, 2, 34),
            (FrameType::GoAway, 1, 20),
            (FrameType::RstStream, 1, 13),
            (FrameType::Priority, 1, 14),
            (FrameType::Unknown, 1, 20),
        ] {
            assert_eq!(stat(&s, t), FrameCount { count, bytes }, "{t:?}");
        }
        assert_eq!(c.padding_bytes + c.hpack_bytes + c.data_payload_bytes, 0);
        assert_eq!(c.setup_bytes, s.fed());
        assert_eq!(c.malformed, None);
    }

    #[test]
    fn rst_stream_drops_partial_message_state() {
        let msg = grpc(50);
        let mut input = frame(1, END_HEADERS, 1, &[0x83]);
        input.extend(frame(0, 0, 1, &msg[..20]));
        input.extend(frame(3, 0, 1, &[0, 0, 0, 8]));
        // After the reset, DATA on the stream is untracked until it is opened again.
        input.extend(frame(0, 0, 1, &msg[20..30]));
        input.extend(frame(1, END_HEADERS, 1, &[0x83]));
        input.extend(frame(0, END_STREAM, 1, &grpc(2)));
        let s = sniff(false, &input);
        let c = s.counts();
        assert_eq!(c.grpc_messages, 2);
        assert_eq!(c.grpc_prefix_bytes, 10);
        assert_eq!(c.grpc_message_bytes, 15 + 2);
        assert_eq!(c.data_untracked_bytes, 10);
        assert!(s.streams.is_empty());
    }

    #[test]
    fn data_without_headers_or_bad_flag_is_untracked() {
        let mut input = frame(0, 0, 7, &grpc(3));
        input.extend(frame(1, END_HEADERS, 9, &[0x83]));
        let mut bad = grpc(4);
        bad[0] = 2;
        input.extend(frame(0, 0, 9, &bad));
        input.extend(frame(0, END_STREAM, 9, &grpc(4)));
        let s = sniff(false, &input);
        let c = s.counts();
        assert_eq!(c.data_untracked_bytes, 8 + 9 + 9);
        assert_eq!(c.grpc_messages, 0);
        assert_eq!(c.grpc_prefix_bytes, 0);
    }

    #[test]
    fn stream_map_is_bounded_and_evicts_the_oldest() {
        let mut input = Vec::new();
        for i in 0..=MAX_TRACKED_STREAMS as u32 {
            input.extend(frame(1, END_HEADERS, 2 * i + 1, &[0x83]));
        }
        input.extend(frame(0, 0, 1, &grpc(1)));
        input.extend(frame(0, 0, 2 * MAX_TRACKED_STREAMS as u32 + 1, &grpc(1)));
        let s = sniff(false, &input);
        assert_eq!(s.streams.len(), MAX_TRACKED_STREAMS);
        assert_eq!(s.counts().data_untracked_bytes, 6);
        assert_eq!(s.counts().grpc_messages, 1);
    }

    #[test]
    fn setup_ends_at_first_headers_type_byte() {
        let mut input = PREFACE.to_vec();
        input.extend(frame(4, 0, 0, &[]));
        let headers = frame(1, END_HEADERS, 1, &[0x83]);
        let mut s = H2Sniffer::new(true);
        s.feed(&input);
        assert_eq!(s.counts().setup_bytes, 33);
        s.feed(&headers[..3]);
        assert_eq!(s.counts().setup_bytes, 36);
        assert_eq!(s.pending(), 3);
        s.feed(&headers[3..4]);
        assert_eq!(s.counts().setup_bytes, 33);
        s.feed(&headers[4..]);
        s.feed(&frame(4, 0, 0, &[]));
        assert_eq!(s.counts().setup_bytes, 33);
        assert_balanced(&s);
    }

    #[test]
    fn preface_mismatch_is_malformed() {
        let mut input = PREFACE[..10].to_vec();
        input.extend_from_slice(b"XYZ");
        let s = sniff(true, &input);
        assert_eq!(s.counts().malformed, Some("preface mismatch"));
        assert_eq!(s.counts().unparsed_bytes, 13);
        assert_eq!(s.counts().preface_bytes, 0);
        // HTTP/1.1 on a direction that expects the preface.
        let s = sniff(true, b"GET / HTTP/1.1\r\n");
        assert_eq!(s.counts().unparsed_bytes, 16);
    }

    #[test]
    fn broken_framing_stops_parsing() {
        let good = frame(4, 0, 0, &[]);
        let cases: [(Vec<u8>, &str); 4] = [
            (
                frame(0, PADDED, 1, &[]),
                "PADDED frame without a pad length byte",
            ),
            (
                frame(1, PRIORITY, 1, &[0; 4]),
                "PRIORITY flag with payload shorter than 5",
            ),
            (
                frame(5, PADDED, 1, &[0, 0, 0]),
                "PUSH_PROMISE payload shorter than the promised stream id",
            ),
            (
                frame(1, PADDED | PRIORITY, 1, &[2, 0, 0, 0, 0, 0, 0]),
                "pad length exceeds frame payload",
            ),
        ];
        for (bad, why) in cases {
            let mut input = good.clone();
            input.extend(&bad);
            input.extend(&good);
            let s = sniff(false, &input);
            let c = s.counts();
            assert_eq!(c.malformed, Some(why));
            assert_eq!(stat(&s, FrameType::Settings).count, 1);
            let frames: u64 = c.frames.iter().map(|f| f.count).sum();
            assert_eq!(frames, 1);
            assert_eq!(c.unparsed_bytes, input.len() as u64 - 9);
        }
    }

    #[test]
    fn pending_counts_partial_header_and_pad_wait() {
        let f = padded(0, 0, 1, &[], &[1, 2], 3);
        let mut s = H2Sniffer::new(false);
        s.feed(&f[..9]);
        assert_eq!(s.pending(), 9);
        assert_eq!(s.counts().frame_header_bytes, 0);
        s.feed(&f[9..10]);
        assert_eq!(s.pending(), 0);
        assert_eq!(s.counts().frame_header_bytes, 9);
        s.feed(&f[10..]);
        assert_balanced(&s);
        assert_eq!(s.counts().data_untracked_bytes, 2);
    }

    // ---- property tests ----

    /// Frames serialized while computing the counts a sniffer must report.
    #[derive(Default)]
    struct Gen {
        out: Vec<u8>,
        want: H2Counts,
        payloads: u64,
        data_padding: u64,
        first_headers: Option<u64>,
        /// Streams that must still hold gRPC state at the end.
        open: std::collections::BTreeSet<u32>,
    }

    impl Gen {
        fn push(&mut self, ty: u8, flags: u8, sid: u32, pad: Option<u8>, body: &[u8]) {
            let ft = FrameType::from_u8(ty);
            let lead: &[u8] = match ft {
                FrameType::Headers if flags & PRIORITY != 0 => &[0, 0, 0, 0, 16],
                FrameType::PushPromise => &[0, 0, 0, 2],
                _ => &[],
            };
            let paddable = matches!(
                ft,
                FrameType::Data | FrameType::Headers | FrameType::PushPromise
            );
            let bytes = match pad {
                Some(p) if paddable => padded(ty, flags, sid, lead, body, p),
                _ => {
                    let mut p = lead.to_vec();
                    p.extend_from_slice(body);
                    let flags = if paddable { flags & !PADDED } else { flags };
                    frame(ty, flags, sid, &p)
                }
            };
            if ft == FrameType::Headers && self.first_headers.is_none() {
                self.first_headers = Some(self.out.len() as u64);
            }
            let payload = (bytes.len() - FRAME_HEADER_LEN) as u64;
            let padding = payload - (lead.len() + body.len()) as u64;
            let w = &mut self.want;
            w.frames[ft as usize].count += 1;
            w.frames[ft as usize].bytes += bytes.len() as u64;
            w.frame_header_bytes += 9;
            w.padding_bytes += padding;
            match ft {
                FrameType::Data => {
                    w.data_payload_bytes += payload;
                    self.data_padding += padding;
                }
                FrameType::Headers | FrameType::PushPromise | FrameType::Continuation => {
                    w.hpack_bytes += body.len() as u64;
                }
                _ => {}
            }
            if ft == FrameType::Headers && flags & END_STREAM != 0 {
                w.headers_frames_with_end_stream += 1;
            }
            match ft {
                FrameType::Headers if flags & END_STREAM == 0 => {
                    self.open.insert(sid);
                }
                FrameType::Data | FrameType::Headers if flags & END_STREAM != 0 => {
                    self.open.remove(&sid);
                }
                FrameType::RstStream => {
                    self.open.remove(&sid);
                }
                _ => {}
            }
            self.payloads += payload;
            self.out.extend(bytes);
        }
    }

    /// One unit of the generated connection; units are serialized whole, in an interleaved order.
    #[derive(Debug, Clone)]
    enum Unit {
        Control {
            ty: u8,
            flags: u8,
            sid: u32,
            len: usize,
        },
        Headers {
            sid: u32,
            flags: u8,
            pad: Option<u8>,
            block: usize,
            conts: Vec<usize>,
        },
        PushPromise {
            pad: Option<u8>,
            block: usize,
        },
        Data {
            sid: u32,
            flags: u8,
            pad: Option<u8>,
            body: Vec<u8>,
        },
    }

    #[derive(Debug, Clone)]
    struct Call {
        msgs: Vec<usize>,
        cuts: Vec<usize>,
        pads: Vec<Option<u8>>,
        end: u8,
    }

    fn pad_strategy() -> impl Strategy<Value = Option<u8>> {
        prop_oneof![3 => Just(None), 1 => any::<u8>().prop_map(Some)]
    }

    fn other_strategy() -> impl Strategy<Value = Unit> {
        let control = (
            prop::sample::select(vec![2u8, 3, 4, 6, 7, 8, 0x0a, 0xFA]),
            any::<u8>(),
            100u32..108,
            0usize..2000,
        )
            .prop_map(|(ty, flags, sid, len)| Unit::Control {
                ty,
                flags,
                sid,
                len,
            });
        let headers = (
            100u32..108,
            prop::sample::select(vec![0u8, END_STREAM, PRIORITY, END_STREAM | PRIORITY]),
            pad_strategy(),
            0usize..2000,
            prop::collection::vec(0usize..300, 0..3),
        )
            .prop_map(|(sid, flags, pad, block, conts)| Unit::Headers {
                sid,
                flags,
                pad,
                block,
                conts,
            });
        let push = (pad_strategy(), 0usize..2000)
            .prop_map(|(pad, block)| Unit::PushPromise { pad, block });
        let junk =
            (pad_strategy(), prop::collection::vec(any::<u8>(), 0..300)).prop_map(|(pad, body)| {
                Unit::Data {
                    sid: 7,
                    flags: 0,
                    pad,
                    body,
                }
            });
        prop_oneof![control, headers, push, junk]
    }

    fn call_strategy() -> impl Strategy<Value = Call> {
        (
            prop::collection::vec(prop_oneof![Just(0usize), 0usize..20, 0usize..2000], 0..4),
            prop::collection::vec(any::<usize>(), 0..6),
            prop::collection::vec(pad_strategy(), 0..6),
            0u8..3,
        )
            .prop_map(|(msgs, cuts, pads, end)| Call {
                msgs,
                cuts,
                pads,
                end,
            })
    }

    /// Turns a call into its units: HEADERS, DATA frames cut at random points, then END_STREAM.
    fn call_units(sid: u32, call: &Call, want: &mut H2Counts) -> Vec<Unit> {
        let mut content = Vec::new();
        for &m in &call.msgs {
            content.extend(grpc(m));
            want.grpc_messages += 1;
            want.grpc_prefix_bytes += 5;
            want.grpc_message_bytes += m as u64;
        }
        let mut cuts: Vec<usize> = call.cuts.iter().map(|c| c % (content.len() + 1)).collect();
        cuts.push(content.len());
        cuts.sort_unstable();
        let mut units = vec![Unit::Headers {
            sid,
            flags: 0,
            pad: None,
            block: 3,
            conts: Vec::new(),
        }];
        let mut at = 0;
        for (i, cut) in cuts.into_iter().enumerate() {
            let last = cut == content.len();
            let flags = if last && call.end == 1 { END_STREAM } else { 0 };
            units.push(Unit::Data {
                sid,
                flags,
                pad: call.pads.get(i).copied().flatten(),
                body: content[at..cut].to_vec(),
            });
            at = cut;
            if last {
                break;
            }
        }
        if call.end == 2 {
            units.push(Unit::Headers {
                sid,
                flags: END_STREAM,
                pad: None,
                block: 2,
                conts: Vec::new(),
            });
        }
        units
    }

    fn serialize(g: &mut Gen, unit: &Unit) {
        match unit {
            Unit::Control {
                ty,
                flags,
                sid,
                len,
            } => {
                g.push(*ty, *flags, *sid, None, &vec![0xAB; *len]);
            }
            Unit::Headers {
                sid,
                flags,
                pad,
                block,
                conts,
            } => {
                let eh = if conts.is_empty() { END_HEADERS } else { 0 };
                g.push(1, flags | eh, *sid, *pad, &vec![0x82; *block]);
                for (i, c) in conts.iter().enumerate() {
                    let eh = if i + 1 == conts.len() { END_HEADERS } else { 0 };
                    g.push(9, eh, *sid, None, &vec![0x41; *c]);
                }
            }
            Unit::PushPromise { pad, block } => {
                g.push(5, END_HEADERS, 1, *pad, &vec![0x84; *block])
            }
            Unit::Data {
                sid,
                flags,
                pad,
                body,
            } => g.push(0, *flags, *sid, *pad, body),
        }
    }

    /// Builds a connection direction and the counts it must produce.
    fn build(preface: bool, others: &[Unit], calls: &[Call], order: &[u8]) -> Gen {
        let mut g = Gen::default();
        if preface {
            g.out.extend_from_slice(PREFACE);
            g.want.preface_bytes = 24;
        }
        let mut queues: Vec<std::collections::VecDeque<Unit>> =
            vec![others.iter().cloned().collect()];
        for (i, call) in calls.iter().enumerate() {
            let units = call_units(2 * i as u32 + 1, call, &mut g.want);
            queues.push(units.into());
        }
        for u in &queues[0] {
            if let Unit::Data { body, .. } = u {
                g.want.data_untracked_bytes += body.len() as u64;
            }
        }
        let mut k = 0;
        loop {
            let live: Vec<usize> = (0..queues.len())
                .filter(|&i| !queues[i].is_empty())
                .collect();
            if live.is_empty() {
                break;
            }
            let pick = order.get(k % order.len().max(1)).copied().unwrap_or(0) as usize;
            k += 1;
            let q = live[pick % live.len()];
            let unit = queues[q].pop_front().unwrap();
            serialize(&mut g, &unit);
        }
        g.want.setup_bytes = g.first_headers.unwrap_or(g.out.len() as u64);
        g
    }

    fn feed_split(expect: bool, input: &[u8], splits: &[usize]) -> H2Sniffer {
        feed_split_into(H2Sniffer::new(expect), input, splits)
    }

    fn feed_split_into(mut s: H2Sniffer, input: &[u8], splits: &[usize]) -> H2Sniffer {
        let mut cuts: Vec<usize> = splits.iter().map(|s| s % (input.len() + 1)).collect();
        cuts.push(input.len());
        cuts.sort_unstable();
        let mut at = 0;
        for c in cuts {
            s.feed(&input[at..c]);
            at = c;
        }
        s
    }

    proptest! {
        #[test]
        fn well_formed_frames_count_exactly(
            preface in any::<bool>(),
            others in prop::collection::vec(other_strategy(), 0..12),
            calls in prop::collection::vec(call_strategy(), 0..4),
            order in prop::collection::vec(any::<u8>(), 0..16),
            splits in prop::collection::vec(any::<usize>(), 0..12),
        ) {
            let g = build(preface, &others, &calls, &order);
            let (input, want, payloads, data_padding) = (&g.out, &g.want, g.payloads, g.data_padding);
            let whole = sniff(preface, input);
            let c = whole.counts();
            prop_assert_eq!(c, want);
            prop_assert_eq!(whole.fed(), c.preface_bytes + c.frame_header_bytes + payloads);
            let frame_bytes: u64 = c.frames.iter().map(|f| f.bytes).sum();
            prop_assert_eq!(frame_bytes, c.frame_header_bytes + payloads);
            prop_assert_eq!(
                c.data_payload_bytes,
                c.grpc_prefix_bytes + c.grpc_message_bytes + c.data_untracked_bytes + data_padding
            );
            prop_assert_eq!(whole.pending(), 0);
            let open: std::collections::BTreeSet<u32> = whole.streams.keys().copied().collect();
            prop_assert_eq!(&open, &g.open);

            let split = feed_split(preface, input, &splits);
            prop_assert_eq!(split.counts(), c);
            let mut bytewise = H2Sniffer::new(preface);
            for b in input {
                bytewise.feed(std::slice::from_ref(b));
                prop_assert!(bytewise.counts().setup_bytes <= bytewise.fed());
            }
            prop_assert_eq!(bytewise.counts(), c);

            // plain HTTP/2: the same frames, DATA all body, no gRPC layer
            let mut plain = H2Sniffer::plain(preface);
            plain.feed(input);
            let mut want_plain = *want;
            want_plain.grpc_prefix_bytes = 0;
            want_plain.grpc_message_bytes = 0;
            want_plain.grpc_messages = 0;
            want_plain.data_untracked_bytes = 0;
            prop_assert_eq!(plain.counts(), &want_plain);
            prop_assert!(plain.streams.is_empty());
            let split = feed_split_into(H2Sniffer::plain(preface), input, &splits);
            prop_assert_eq!(split.counts(), &want_plain);
        }

        #[test]
        fn arbitrary_bytes_never_panic(
            expect in any::<bool>(),
            input in prop::collection::vec(any::<u8>(), 0..2000),
            splits in prop::collection::vec(any::<usize>(), 0..12),
        ) {
            let whole = sniff(expect, &input);
            let split = feed_split(expect, &input, &splits);
            prop_assert_eq!(split.fed(), input.len() as u64);
            assert_balanced(&split);
            prop_assert_eq!(split.counts(), whole.counts());
        }

        #[test]
        fn arbitrary_frames_never_panic(
            expect in any::<bool>(),
            frames in prop::collection::vec(
                (0u8..12, any::<u8>(), 0u32..6, prop::collection::vec(any::<u8>(), 0..80)),
                0..24,
            ),
            truncate in any::<usize>(),
            splits in prop::collection::vec(any::<usize>(), 0..12),
        ) {
            let mut input = if expect { PREFACE.to_vec() } else { Vec::new() };
            for (ty, flags, sid, payload) in &frames {
                input.extend(frame(*ty, *flags, *sid, payload));
            }
            input.truncate(truncate % (input.len() + 1));
            let whole = sniff(expect, &input);
            let split = feed_split(expect, &input, &splits);
            assert_balanced(&split);
            prop_assert_eq!(split.counts(), whole.counts());
            prop_assert!(whole.streams.len() <= MAX_TRACKED_STREAMS);
        }
    }
}
