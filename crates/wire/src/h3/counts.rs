//! The ledger's HTTP/3 frame counts of one stream direction or connection (`H3Counts`): what a
//! stream's frame reader counts as it reads and a sender records of the frames it encodes.

use super::head::{FrameType, Head};

/// Frames of one type seen so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FrameCount {
    /// Frames whose head has been accepted.
    pub count: u64,
    /// Type and length varint bytes.
    pub header_bytes: u64,
    /// Payload bytes so far (a DATA or skipped frame's as they arrive).
    pub payload_bytes: u64,
}

/// Frames by type with their head and payload bytes; reserved (grease) and unknown types are
/// counted apart. The same struct is a stream's, a connection's and a run's sum (`+=`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct H3Counts {
    /// Indexed by `FrameType as usize` (declaration order).
    pub frames: [FrameCount; 9],
}

impl H3Counts {
    /// Frames of type `t`.
    pub fn frame(&self, t: FrameType) -> FrameCount {
        self.frames[t as usize]
    }

    /// A frame head accepted: one more frame of its type, and its header bytes.
    pub fn count_head(&mut self, head: &Head) {
        let f = &mut self.frames[head.kind as usize];
        f.count += 1;
        f.header_bytes += head.header_len as u64;
    }

    /// `n` payload bytes of a frame of type `t`.
    pub fn count_payload(&mut self, t: FrameType, n: u64) {
        self.frames[t as usize].payload_bytes += n;
    }

    /// A whole frame, head and payload: what a sender records of a frame it encoded.
    pub fn count_frame(&mut self, head: &Head) {
        self.count_head(head);
        self.count_payload(head.kind, head.len);
    }

    /// Type and length bytes of every frame.
    pub fn header_bytes(&self) -> u64 {
        self.frames.iter().map(|f| f.header_bytes).sum()
    }

    /// Head and payload bytes of every frame.
    pub fn total_bytes(&self) -> u64 {
        self.frames
            .iter()
            .map(|f| f.header_bytes + f.payload_bytes)
            .sum()
    }
}

impl std::ops::AddAssign for H3Counts {
    fn add_assign(&mut self, o: H3Counts) {
        for (a, b) in self.frames.iter_mut().zip(o.frames) {
            a.count += b.count;
            a.header_bytes += b.header_bytes;
            a.payload_bytes += b.payload_bytes;
        }
    }
}
