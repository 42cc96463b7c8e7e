//! The stream table of a client connection: the slots (a free one keeps its buffer for the
//! next stream), the map from stream id to slot, and the list the live streams make in the
//! order they opened (the order of their ids); a stream's removal, and its end as a stream
//! error.

use super::{Closed, Connection, Error, Events, protocol};
use crate::h2::frame::{self, Reason};
use crate::h2::grpc_framing::GrpcFraming;

/// Where a stream's response stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Head {
    /// No final response head yet (informational ones do not count).
    Awaiting,
    /// The response head arrived; DATA and trailers may follow.
    Received,
    /// The trailers arrived.
    Trailers,
}

/// One slot of the stream table: a live stream, or a free slot that keeps its buffer.
#[derive(Debug)]
pub(super) struct Stream {
    /// In use (a free slot keeps only its buffer).
    pub(super) live: bool,
    pub(super) id: u32,
    pub(super) token: usize,
    pub(super) local_closed: bool,
    pub(super) remote_closed: bool,
    pub(super) head: Head,
    pub(super) send_window: i64,
    pub(super) recv_window: i64,
    pub(super) recv_unacked: u32,
    /// DATA waiting for window: `pending[pending_at..]`, then END_STREAM if `pending_end`.
    pub(super) pending: Vec<u8>,
    pub(super) pending_at: usize,
    pub(super) pending_end: bool,
    /// The gRPC framing of our DATA (counted when `TallyLayers::Grpc`), from the HEADERS to the
    /// END_STREAM; `None`: not followed.
    pub(super) grpc_out: Option<GrpcFraming>,
    /// The gRPC framing of the peer's DATA, from its first HEADERS without END_STREAM to its
    /// END_STREAM; `None`: not followed.
    pub(super) grpc_in: Option<GrpcFraming>,
    /// The live streams opened just before and just after this one (slots), while live.
    pub(super) older: Option<usize>,
    pub(super) newer: Option<usize>,
}

impl Stream {
    /// DATA (or its END_STREAM) waits for window.
    pub(super) fn has_pending(&self) -> bool {
        self.pending_at < self.pending.len() || self.pending_end
    }
}

impl Connection {
    /// Takes a slot (a free one, keeping its buffer, or a new one) for a stream just opened,
    /// the newest: it ends the list of live streams.
    pub(super) fn insert(&mut self, stream: Stream) {
        let slot = match self.free.pop() {
            Some(slot) => {
                // keep the slot's buffer for this stream
                let pending = std::mem::take(&mut self.streams[slot].pending);
                self.streams[slot] = Stream { pending, ..stream };
                self.streams[slot].pending.clear();
                slot
            }
            None => {
                self.streams.push(stream);
                self.streams.len() - 1
            }
        };
        if let Some(older) = self.newest {
            self.streams[older].newer = Some(slot);
        }
        self.newest = Some(slot);
        self.by_id.insert(self.streams[slot].id, slot);
        self.active += 1;
    }

    /// Reports every open stream as `Closed::Lost` and forgets it: the connection is gone.
    pub fn fail_all(&mut self, events: &mut impl Events) {
        for slot in 0..self.streams.len() {
            if self.streams[slot].live {
                let token = self.streams[slot].token;
                self.remove(slot);
                events.closed(token, Closed::Lost);
            }
        }
    }

    /// Forgets a live stream: its id unmapped, its slot unlinked from the live list and freed,
    /// its waiting DATA dropped.
    pub(super) fn remove(&mut self, slot: usize) {
        let id = self.streams[slot].id;
        if self.streams[slot].live && self.by_id.remove(&id).is_some() {
            let s = &mut self.streams[slot];
            s.live = false;
            let (older, newer) = (s.older.take(), s.newer.take());
            match newer {
                Some(n) => self.streams[n].older = older,
                None => self.newest = older,
            }
            if let Some(o) = older {
                self.streams[o].newer = newer;
            }
            self.active -= 1;
            self.free.push(slot);
            // a stream is in `blocked` exactly while it has DATA waiting
            if self.streams[slot].has_pending() {
                self.blocked.retain(|&b| b != slot);
            }
            let s = &mut self.streams[slot];
            s.pending.clear();
            s.pending_at = 0;
            s.pending_end = false;
        }
    }

    /// Forgets a stream once both sides have ended it and nothing of ours waits to be sent.
    pub(super) fn finish_if_closed(&mut self, slot: usize) {
        let s = &self.streams[slot];
        if s.local_closed && s.remote_closed && !s.has_pending() {
            self.remove(slot);
        }
    }

    /// A frame on a stream id we never opened (server-initiated or idle) is a connection
    /// error; a closed one of ours is not.
    pub(super) fn check_known(&self, stream: u32) -> Result<(), Error> {
        if stream.is_multiple_of(2) || stream >= self.next_id {
            return Err(protocol("a frame on a stream that was never opened"));
        }
        Ok(())
    }

    /// Ends a live stream of ours that broke a stream rule: progress (the stream is done, and
    /// a stream ends once).
    pub(super) fn stream_error(
        &mut self,
        slot: usize,
        reason: Reason,
        what: &'static str,
        events: &mut impl Events,
    ) {
        let (id, token) = (self.streams[slot].id, self.streams[slot].token);
        self.emit(|out| frame::encode_rst_stream(out, id, reason));
        self.remove(slot);
        events.closed(token, Closed::Error(reason, what));
        self.progress = true;
    }
}
