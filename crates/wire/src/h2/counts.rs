//! The ledger's h2 layer counts of one connection direction (`H2Counts`): what the sniffer
//! and the client's tally count, what connection records sum and what reports write.

use super::frame::FrameType;

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
