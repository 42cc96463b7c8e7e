//! The send side of a client connection: opening streams (their header blocks, HEADERS and
//! CONTINUATION), DATA within both flow-control windows and what waits for them, and the
//! frames the driver asks for (RST_STREAM, PING, GOAWAY).

use super::streams::{Head, Stream};
use super::{Connection, MAX_STREAM_ID, OpenError};
use crate::h2::frame::{self, Reason};
use crate::h2::grpc_framing::GrpcFraming;
use crate::h2::tally::FrameTally;

impl Connection {
    /// Opens a stream with a header block (HEADERS, plus CONTINUATION if it exceeds the peer's
    /// frame size), queued for writing; `end_stream`: the request has no body. Returns the
    /// stream id. `token` is what the events of this stream carry.
    pub fn open<'a>(
        &mut self,
        token: usize,
        fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
        end_stream: bool,
    ) -> Result<u32, OpenError> {
        self.open_inner(token, None, || fields, std::iter::empty(), end_stream)
    }

    /// [`Connection::open`] of a constant header list the caller names by `key` (the same
    /// key, the same fields): its block is encoded with [`Encoder::encode_keyed`], copied
    /// while the HPACK table stays as it was. The bytes are those `open` would send.
    pub fn open_keyed<'a>(
        &mut self,
        token: usize,
        key: u64,
        fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
        end_stream: bool,
    ) -> Result<u32, OpenError> {
        self.open_inner(
            token,
            Some((key, 0)),
            || fields,
            std::iter::empty(),
            end_stream,
        )
    }

    /// [`Connection::open_keyed`] of a header list whose fields at the positions set in
    /// `varying` change per request ([`Encoder::encode_keyed_varying`]: those go as literals
    /// that leave the HPACK table as it was, the rest of the block is copied around them).
    /// `fields` makes the list, called only when the block is encoded anew; `values` are the
    /// varying fields' values in order.
    pub fn open_keyed_varying<'a, I>(
        &mut self,
        token: usize,
        key: u64,
        varying: u64,
        fields: impl FnOnce() -> I,
        values: impl IntoIterator<Item = &'a [u8]>,
        end_stream: bool,
    ) -> Result<u32, OpenError>
    where
        I: IntoIterator<Item = (&'a [u8], &'a [u8])>,
    {
        self.open_inner(token, Some((key, varying)), fields, values, end_stream)
    }

    fn open_inner<'a, I>(
        &mut self,
        token: usize,
        key: Option<(u64, u64)>,
        fields: impl FnOnce() -> I,
        values: impl IntoIterator<Item = &'a [u8]>,
        end_stream: bool,
    ) -> Result<u32, OpenError>
    where
        I: IntoIterator<Item = (&'a [u8], &'a [u8])>,
    {
        if self.is_closing() || self.next_id > MAX_STREAM_ID {
            return Err(OpenError::Closing);
        }
        if !self.settings_received {
            return Err(OpenError::NotReady);
        }
        if self.active >= self.peer_max_streams {
            return Err(OpenError::Busy);
        }
        let id = self.next_id;
        self.next_id += 2;
        self.encode_headers(id, key, fields, values, end_stream);
        let stream = Stream {
            live: true,
            id,
            token,
            local_closed: end_stream,
            remote_closed: false,
            head: Head::Awaiting,
            send_window: i64::from(self.peer_initial_window),
            recv_window: i64::from(self.cfg.initial_window_size),
            recv_unacked: 0,
            pending: Vec::new(),
            pending_at: 0,
            pending_end: false,
            grpc_out: (!end_stream).then_some(GrpcFraming::START),
            grpc_in: None,
            older: self.newest,
            newer: None,
        };
        self.insert(stream);
        Ok(id)
    }

    /// HEADERS written in place when the block fits one frame; split with CONTINUATION
    /// otherwise.
    fn encode_headers<'a, I>(
        &mut self,
        id: u32,
        key: Option<(u64, u64)>,
        fields: impl FnOnce() -> I,
        values: impl IntoIterator<Item = &'a [u8]>,
        end_stream: bool,
    ) where
        I: IntoIterator<Item = (&'a [u8], &'a [u8])>,
    {
        let start = self.out.len();
        self.out.extend_from_slice(&[0; frame::HEADER_LEN]);
        match key {
            Some((key, varying)) => {
                self.encoder
                    .encode_keyed_varying(key, fields, varying, values, &mut self.out)
            }
            None => self.encoder.encode(fields(), &mut self.out),
        }
        let len = self.out.len() - start - frame::HEADER_LEN;
        if len <= self.peer_max_frame as usize {
            let mut flags = frame::flag::END_HEADERS;
            if end_stream {
                flags |= frame::flag::END_STREAM;
            }
            let len = (len as u32).to_be_bytes();
            let id = id.to_be_bytes();
            self.out[start..start + frame::HEADER_LEN].copy_from_slice(&[
                len[1],
                len[2],
                len[3],
                frame::kind::HEADERS,
                flags,
                id[0],
                id[1],
                id[2],
                id[3],
            ]);
        } else {
            let block = self.out.split_off(start + frame::HEADER_LEN);
            self.out.truncate(start);
            frame::encode_headers(&mut self.out, id, &block, end_stream, self.peer_max_frame);
        }
        if let Some(t) = &mut self.tally {
            t.queued(&self.out[start..]);
        }
    }

    /// Sends DATA on an open stream: as much as the windows allow now, the rest when they
    /// open. `end_stream` ends our side after the last byte. Unknown or locally ended streams
    /// are ignored (the stream was reset or refused meanwhile; its `closed` event said so).
    pub fn send_data(&mut self, id: u32, data: &[u8], end_stream: bool) {
        let Some(&slot) = self.by_id.get(&id) else {
            return;
        };
        let s = &mut self.streams[slot];
        if s.local_closed || s.pending_end {
            return;
        }
        if s.has_pending() {
            s.pending.extend_from_slice(data);
            s.pending_end = end_stream;
            return;
        }
        let sent = Self::write_data(
            &mut self.out,
            &mut self.tally,
            &mut self.conn_send_window,
            s,
            data,
            end_stream,
            self.peer_max_frame,
        );
        if sent < data.len() || (end_stream && !s.local_closed) {
            s.pending.clear();
            s.pending.extend_from_slice(&data[sent..]);
            s.pending_at = 0;
            s.pending_end = end_stream;
            self.blocked.push(slot);
        } else if s.local_closed {
            self.finish_if_closed(slot);
        }
    }

    /// Writes DATA frames of `data` within the windows; END_STREAM on the last one when
    /// everything fit. Returns the bytes written.
    fn write_data(
        out: &mut Vec<u8>,
        tally: &mut Option<FrameTally>,
        conn_window: &mut i64,
        s: &mut Stream,
        data: &[u8],
        end_stream: bool,
        max_frame: u32,
    ) -> usize {
        let mut sent = 0;
        loop {
            let room = (*conn_window).min(s.send_window).max(0) as usize;
            let n = (data.len() - sent).min(room).min(max_frame as usize);
            let last = sent + n == data.len();
            if n == 0 && !(last && end_stream) {
                return sent;
            }
            let start = out.len();
            let chunk = &data[sent..sent + n];
            frame::encode_data(out, s.id, chunk, last && end_stream);
            if let Some(t) = tally {
                t.queued_data(s.id, &out[start..], chunk, s.grpc_out.as_mut());
                if last && end_stream {
                    s.grpc_out = None;
                }
            }
            *conn_window -= n as i64;
            s.send_window -= n as i64;
            sent += n;
            if last {
                if end_stream {
                    s.local_closed = true;
                }
                return sent;
            }
        }
    }

    /// Sends what waits for window, in the order the streams blocked; anything sent is
    /// progress for the frame being handled.
    pub(super) fn flush_blocked(&mut self) {
        let queued = self.out.len();
        self.flush_blocked_inner();
        if self.out.len() > queued {
            self.progress = true;
        }
    }

    fn flush_blocked_inner(&mut self) {
        let mut i = 0;
        while i < self.blocked.len() {
            let slot = self.blocked[i];
            let s = &mut self.streams[slot];
            let data = std::mem::take(&mut s.pending);
            let at = s.pending_at;
            let sent = Self::write_data(
                &mut self.out,
                &mut self.tally,
                &mut self.conn_send_window,
                s,
                &data[at..],
                s.pending_end,
                self.peer_max_frame,
            );
            s.pending = data;
            s.pending_at += sent;
            if s.pending_at == s.pending.len() && (!s.pending_end || s.local_closed) {
                s.pending.clear();
                s.pending_at = 0;
                s.pending_end = false;
                self.blocked.swap_remove(i);
                self.finish_if_closed(slot);
                continue;
            }
            if self.conn_send_window <= 0 {
                return;
            }
            i += 1;
        }
    }

    /// Resets a stream of ours (we gave up on it): RST_STREAM queued, the stream forgotten.
    pub fn reset(&mut self, id: u32, reason: Reason) {
        if let Some(slot) = self.by_id.get(&id).copied() {
            self.emit(|out| frame::encode_rst_stream(out, id, reason));
            self.remove(slot);
        }
    }

    /// Queues a PING; the answer comes as `Events::pong`.
    pub fn ping(&mut self, data: [u8; 8]) {
        self.emit(|out| frame::encode_ping(out, false, data));
    }

    /// Starts a graceful close: a GOAWAY (NO_ERROR; we accept no server streams, so its last
    /// stream id is 0). Streams open may still complete; no new ones open.
    pub fn go_away(&mut self) {
        if !self.goaway_sent {
            self.emit(|out| frame::encode_goaway(out, 0, Reason::NO_ERROR, &[]));
            self.goaway_sent = true;
        }
    }
}
