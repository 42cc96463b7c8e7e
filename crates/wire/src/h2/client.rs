//! The client side of one HTTP/2 connection (RFC 9113), sans-IO: fed the bytes that arrived,
//! asked for the bytes to write. It owns the stream states, both flow-control windows, the
//! SETTINGS exchange, PING and GOAWAY, and HPACK in both directions; it knows nothing of
//! sockets, clocks or gRPC.
//!
//! The caller (an IO driver) does three things: `recv` every byte read (every complete frame is
//! handled, its events go to an [`Events`] sink), `output` / `advance` to write what is queued
//! (everything ready, in one write), and `open` / `send_data` / `reset` for its requests. Each
//! stream carries a caller-chosen `token` (a slot index), which is what events name, so the
//! driver needs no map of its own.
//!
//! Flow control, receive side: the windows we announce are `Config::initial_window_size` per
//! stream and `Config::initial_conn_window_size` for the connection (a WINDOW_UPDATE on stream 0
//! right after our SETTINGS). Data counts as consumed when it is handed to the sink. The policy:
//! a window is replenished, by what was consumed, once half of it is used; a stream the peer has
//! ended gets no update. Send side: DATA beyond the peer's windows waits in the stream (its
//! buffer is kept for the next stream in that slot) and goes out when WINDOW_UPDATE or SETTINGS
//! open the window.
//!
//! Peer-controlled lengths are bounded before anything is buffered: frames by our
//! SETTINGS_MAX_FRAME_SIZE (the frame decoder rejects them from the header), a header block
//! (HEADERS + CONTINUATION) by `max_header_list_size` and a count of CONTINUATION frames, the
//! decoded header list by `max_header_list_size` (HPACK), the acks a peer makes us queue (PING
//! and SETTINGS floods) by `max_pending_control`, frames in a row that move no stream of ours by
//! `max_idle_frames`, and windows by 2^31−1. A GOAWAY costs time in the streams it ends, not in
//! the slots: live streams are also linked in the order they opened, which is the order of their
//! ids, so the ones above its last stream id are the newest.
//!
//! With `Config::layers` on, the connection counts the ledger's h2 layers of its own frames
//! (`tally`): out, the bytes written (`advance`); in, the frames `recv` decoded and, when asked
//! (`counts_in`), the incomplete frame the caller still holds. Each stream follows the gRPC
//! framing of its DATA itself, from its HEADERS to its END_STREAM, for as long as the
//! connection knows the stream.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use super::frame::{self, Frame, Reason, Settings};
use super::hpack::{self, Decoder, Encoder, Field, Strategy};
use super::tally::{Layers, Tally};
use crate::h2sniff::{Grpc, H2Counts};
// stream ids are small odd integers: the sniffer's multiplicative hash spreads them
use crate::h2sniff::StreamIdHasher as IdHasher;

/// Client stream ids are odd and at most 2^31−1 (RFC 9113 §5.1.1).
const MAX_STREAM_ID: u32 = (1 << 31) - 1;
/// CONTINUATION frames one header block may take.
pub const MAX_CONTINUATIONS: u32 = 64;

/// What a connection announces and enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// SETTINGS_INITIAL_WINDOW_SIZE: what the peer may send on one stream before an update.
    pub initial_window_size: u32,
    /// The connection's receive window (announced by a WINDOW_UPDATE when above 65,535).
    pub initial_conn_window_size: u32,
    /// SETTINGS_MAX_FRAME_SIZE: the largest frame payload we accept.
    pub max_frame_size: u32,
    /// SETTINGS_HEADER_TABLE_SIZE: the HPACK table the peer's encoder may use.
    pub header_table_size: u32,
    /// SETTINGS_MAX_HEADER_LIST_SIZE: the largest header list (RFC 9113 §6.5.2 sizes) we decode,
    /// and the largest compressed header block we buffer.
    pub max_header_list_size: u32,
    /// How request header fields are encoded.
    pub hpack: Strategy,
    /// Bytes of PING and SETTINGS acknowledgements allowed to wait unwritten: a peer that sends
    /// pings faster than it reads the answers hits this, not our memory.
    pub max_pending_control: usize,
    /// Frames in a row that move no stream of ours. Every frame received counts but those that
    /// do: a final response head, DATA with a payload or END_STREAM, trailers, a frame that
    /// ends streams of ours (RST_STREAM, a stream error, a GOAWAY that refuses some), and a
    /// WINDOW_UPDATE or SETTINGS that lets our waiting DATA out. PING, SETTINGS and their ACKs
    /// (the answer to a PING of ours too), a GOAWAY that ends nothing, PRIORITY, unknown types,
    /// informational heads, frames on closed streams and empty DATA all count.
    pub max_idle_frames: u32,
    /// Which h2 layers the connection counts of its own frames, for the ledger.
    pub layers: Layers,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            initial_window_size: frame::DEFAULT_WINDOW,
            initial_conn_window_size: frame::DEFAULT_WINDOW,
            max_frame_size: frame::DEFAULT_MAX_FRAME_SIZE,
            header_table_size: hpack::DEFAULT_TABLE_SIZE as u32,
            max_header_list_size: 64 << 10,
            hpack: Strategy::Index,
            max_pending_control: 64 << 10,
            max_idle_frames: 10_000,
            layers: Layers::Off,
        }
    }
}

/// Why a stream ended without completing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Closed {
    /// The peer reset it (RST_STREAM). `REFUSED_STREAM` means it was never processed.
    Reset(Reason),
    /// Above the last stream id of the peer's GOAWAY: never processed, safe to retry.
    Refused,
    /// We reset it because the peer broke a stream rule.
    Error(Reason, &'static str),
    /// The connection failed or was closed with the stream still open.
    Lost,
}

/// A connection error (RFC 9113 §5.4.1): the connection is done; a GOAWAY with `reason` is
/// queued for the peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Error {
    pub reason: Reason,
    pub what: &'static str,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.reason, self.what)
    }
}

impl std::error::Error for Error {}

impl From<frame::Error> for Error {
    fn from(e: frame::Error) -> Self {
        Error {
            reason: e.reason,
            what: e.what,
        }
    }
}

/// Why a stream cannot be opened now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// The server's SETTINGS have not arrived yet: its stream limit is unknown.
    NotReady,
    /// As many streams are open as the server allows: wait for one to end.
    Busy,
    /// The connection is going away (a GOAWAY either way, a connection error) or its stream
    /// ids are used up: open a new connection.
    Closing,
}

/// What the connection hands to its driver while it handles received frames.
pub trait Events {
    /// One field of a header block on a stream of ours: the response head or, with
    /// `trailers`, its trailers. Informational (1xx) heads come through too.
    fn field(&mut self, token: usize, field: Field<'_>, trailers: bool);
    /// The header block is complete; `end_stream`: the response is complete with it.
    fn headers_done(&mut self, token: usize, trailers: bool, end_stream: bool);
    /// DATA of a stream of ours (padding removed).
    fn data(&mut self, token: usize, data: &[u8], end_stream: bool);
    /// The stream ended without completing; its token is free again.
    fn closed(&mut self, token: usize, why: Closed);
    /// A PING we sent was answered.
    fn pong(&mut self, _data: [u8; 8]) {}
    /// The peer sent GOAWAY (each one, repeats too): no new streams on this connection; streams
    /// above `last_stream` were refused (each reported through `closed`), the others may still
    /// complete.
    fn go_away(&mut self, _last_stream: u32, _reason: Reason, _debug: &[u8]) {}
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Head {
    /// No final response head yet (informational ones do not count).
    Awaiting,
    /// The response head arrived; DATA and trailers may follow.
    Received,
    /// The trailers arrived.
    Trailers,
}

#[derive(Debug)]
struct Stream {
    /// In use (a free slot keeps only its buffer).
    live: bool,
    id: u32,
    token: usize,
    local_closed: bool,
    remote_closed: bool,
    head: Head,
    send_window: i64,
    recv_window: i64,
    recv_unacked: u32,
    /// DATA waiting for window: `pending[pending_at..]`, then END_STREAM if `pending_end`.
    pending: Vec<u8>,
    pending_at: usize,
    pending_end: bool,
    /// The gRPC framing of our DATA (counted when `Layers::Grpc`), from the HEADERS to the
    /// END_STREAM; `None`: not followed.
    grpc_out: Option<Grpc>,
    /// The gRPC framing of the peer's DATA, from its first HEADERS without END_STREAM to its
    /// END_STREAM; `None`: not followed.
    grpc_in: Option<Grpc>,
    /// The live streams opened just before and just after this one (slots), while live.
    older: Option<usize>,
    newer: Option<usize>,
}

impl Stream {
    fn has_pending(&self) -> bool {
        self.pending_at < self.pending.len() || self.pending_end
    }
}

/// A header block being received across HEADERS and CONTINUATION frames.
#[derive(Clone, Copy, Debug)]
struct Partial {
    stream: u32,
    end_stream: bool,
    continuations: u32,
}

/// The client side of one connection.
pub struct Connection {
    cfg: Config,
    out: Vec<u8>,
    /// Acknowledgement bytes queued since the output was last written out completely.
    control_pending: usize,
    /// Frames in a row that moved no stream of ours (`Config::max_idle_frames`).
    idle_frames: u32,
    /// The frame being handled moved a stream of ours.
    progress: bool,
    encoder: Encoder,
    decoder: Decoder,
    /// Header block being assembled (CONTINUATION), reused.
    block: Vec<u8>,
    partial: Option<Partial>,
    streams: Vec<Stream>,
    free: Vec<usize>,
    by_id: HashMap<u32, usize, BuildHasherDefault<IdHasher>>,
    /// The live stream opened last (the highest id): the newest end of the list the live
    /// streams make through `Stream::older` and `Stream::newer`.
    newest: Option<usize>,
    /// Slots with DATA waiting for window, in the order they blocked.
    blocked: Vec<usize>,
    next_id: u32,
    active: u32,
    // the peer's settings
    settings_received: bool,
    peer_max_streams: u32,
    peer_initial_window: u32,
    peer_max_frame: u32,
    conn_send_window: i64,
    conn_recv_window: i64,
    conn_recv_unacked: u32,
    /// Our SETTINGS frames not yet acknowledged.
    settings_unacked: u32,
    goaway_received: Option<u32>,
    goaway_sent: bool,
    failed: Option<Error>,
    /// The ledger's h2 layers of our frames, when counted.
    tally: Option<Tally>,
}

impl Connection {
    /// A connection whose preface, SETTINGS and (when the connection window is above the
    /// default) WINDOW_UPDATE are queued for writing.
    pub fn new(cfg: Config) -> Connection {
        let mut out = Vec::with_capacity(4096);
        out.extend_from_slice(frame::PREFACE);
        frame::encode_settings(
            &mut out,
            &Settings {
                header_table_size: (cfg.header_table_size != hpack::DEFAULT_TABLE_SIZE as u32)
                    .then_some(cfg.header_table_size),
                enable_push: Some(false),
                max_concurrent_streams: None,
                initial_window_size: (cfg.initial_window_size != frame::DEFAULT_WINDOW)
                    .then_some(cfg.initial_window_size),
                max_frame_size: (cfg.max_frame_size != frame::DEFAULT_MAX_FRAME_SIZE)
                    .then_some(cfg.max_frame_size),
                max_header_list_size: Some(cfg.max_header_list_size),
            },
        );
        let conn_window = cfg.initial_conn_window_size.clamp(1, frame::MAX_WINDOW);
        if conn_window > frame::DEFAULT_WINDOW {
            frame::encode_window_update(&mut out, 0, conn_window - frame::DEFAULT_WINDOW);
        }
        let mut tally = Tally::new(cfg.layers);
        if let Some(t) = &mut tally {
            t.queued_preface(frame::PREFACE.len());
            t.queued(&out[frame::PREFACE.len()..]);
        }
        Connection {
            encoder: Encoder::new(cfg.hpack),
            decoder: Decoder::new(cfg.header_table_size as usize),
            cfg,
            out,
            control_pending: 0,
            idle_frames: 0,
            progress: false,
            block: Vec::new(),
            partial: None,
            streams: Vec::new(),
            free: Vec::new(),
            by_id: HashMap::default(),
            newest: None,
            blocked: Vec::new(),
            next_id: 1,
            active: 0,
            settings_received: false,
            peer_max_streams: u32::MAX,
            peer_initial_window: frame::DEFAULT_WINDOW,
            peer_max_frame: frame::DEFAULT_MAX_FRAME_SIZE,
            conn_send_window: i64::from(frame::DEFAULT_WINDOW),
            conn_recv_window: i64::from(conn_window.max(frame::DEFAULT_WINDOW)),
            conn_recv_unacked: 0,
            settings_unacked: 1,
            goaway_received: None,
            goaway_sent: false,
            failed: None,
            tally,
        }
    }

    /// The bytes queued for the peer, to be written in one call.
    pub fn output(&self) -> &[u8] {
        &self.out
    }

    /// `n` bytes of the output were written.
    pub fn advance(&mut self, n: usize) {
        let n = n.min(self.out.len());
        if let Some(t) = &mut self.tally {
            t.written(&self.out[..n], n == self.out.len());
        }
        if n == self.out.len() {
            self.out.clear();
            self.control_pending = 0;
        } else {
            self.out.drain(..n);
        }
    }

    /// The h2 layers of the bytes written so far (`None` without `Config::layers`): the
    /// counts a sniffer fed those bytes reports, kept frame by frame as they were queued.
    pub fn counts_out(&self) -> Option<H2Counts> {
        self.tally.as_ref().map(Tally::counts_out)
    }

    /// The h2 layers of the bytes received so far (`None` without `Config::layers`): the
    /// frames `recv` took, and `unread`, the bytes after them the caller still holds (an
    /// incomplete frame), classified as a sniffer does. After a connection error, what `recv`
    /// refused was classified then, and `unread` is not looked at.
    pub fn counts_in(&self, unread: &[u8]) -> Option<H2Counts> {
        let t = self.tally.as_ref()?;
        Some(t.counts_in(unread, |id| self.grpc_in(id)))
    }

    /// The gRPC framing state of the peer's DATA on stream `id`, if it is followed.
    fn grpc_in(&self, id: u32) -> Option<Grpc> {
        let &slot = self.by_id.get(&id)?;
        self.streams[slot].grpc_in
    }

    /// Appends frames to the output (never DATA: `write_data` counts its own).
    fn emit(&mut self, encode: impl FnOnce(&mut Vec<u8>)) {
        let start = self.out.len();
        encode(&mut self.out);
        if let Some(t) = &mut self.tally {
            t.queued(&self.out[start..]);
        }
    }

    /// Whether the server's first SETTINGS arrived (its limits are known).
    pub fn is_ready(&self) -> bool {
        self.settings_received
    }

    /// Whether our SETTINGS are all acknowledged.
    pub fn settings_acked(&self) -> bool {
        self.settings_unacked == 0
    }

    /// Streams open (not fully closed) now.
    pub fn active_streams(&self) -> u32 {
        self.active
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (u32::MAX while unlimited).
    pub fn max_streams(&self) -> u32 {
        self.peer_max_streams
    }

    /// The connection failed (a connection error) or a GOAWAY went either way: no new
    /// streams, and once `active_streams` is 0 it can be closed.
    pub fn is_closing(&self) -> bool {
        self.failed.is_some() || self.goaway_received.is_some() || self.goaway_sent
    }

    /// The connection error that ended it, if one did.
    pub fn error(&self) -> Option<Error> {
        self.failed
    }

    /// The GOAWAY's last stream id, if the peer sent one.
    pub fn goaway_received(&self) -> Option<u32> {
        self.goaway_received
    }

    /// The HPACK strategy requests are encoded with.
    pub fn hpack(&self) -> Strategy {
        self.encoder.strategy()
    }

    /// Opens a stream with a header block (HEADERS, plus CONTINUATION if it exceeds the peer's
    /// frame size), queued for writing; `end_stream`: the request has no body. Returns the
    /// stream id. `token` is what the events of this stream carry.
    pub fn open<'a>(
        &mut self,
        token: usize,
        fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
        end_stream: bool,
    ) -> Result<u32, OpenError> {
        self.open_inner(token, None, fields, end_stream)
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
        self.open_inner(token, Some(key), fields, end_stream)
    }

    fn open_inner<'a>(
        &mut self,
        token: usize,
        key: Option<u64>,
        fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
        end_stream: bool,
    ) -> Result<u32, OpenError> {
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
        self.encode_headers(id, key, fields, end_stream);
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
            grpc_out: (!end_stream).then_some(Grpc::START),
            grpc_in: None,
            older: self.newest,
            newer: None,
        };
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
        self.by_id.insert(id, slot);
        self.active += 1;
        Ok(id)
    }

    /// HEADERS written in place when the block fits one frame; split with CONTINUATION
    /// otherwise.
    fn encode_headers<'a>(
        &mut self,
        id: u32,
        key: Option<u64>,
        fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
        end_stream: bool,
    ) {
        let start = self.out.len();
        self.out.extend_from_slice(&[0; frame::HEADER_LEN]);
        match key {
            Some(key) => self.encoder.encode_keyed(key, fields, &mut self.out),
            None => self.encoder.encode(fields, &mut self.out),
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
        tally: &mut Option<Tally>,
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
    fn flush_blocked(&mut self) {
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

    fn remove(&mut self, slot: usize) {
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

    fn finish_if_closed(&mut self, slot: usize) {
        let s = &self.streams[slot];
        if s.local_closed && s.remote_closed && !s.has_pending() {
            self.remove(slot);
        }
    }

    /// Handles every complete frame at the start of `buf`; returns the bytes consumed (the
    /// caller keeps the rest for the next read). A connection error queues a GOAWAY and is
    /// returned; the connection takes no more input after it, and the caller drops what it
    /// holds: the counts (`Config::layers`) took all of `buf` in.
    pub fn recv(&mut self, buf: &[u8], events: &mut impl Events) -> Result<usize, Error> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        let mut at = 0;
        loop {
            let decoded = match frame::decode(&buf[at..], self.cfg.max_frame_size) {
                Ok(Some(d)) => d,
                Ok(None) => return Ok(at),
                Err(e) => return Err(self.refuse(&buf[at..], e.into())),
            };
            let (f, used) = decoded;
            if self.tally.is_some() {
                self.tally_received(&buf[at..at + used], &f);
            }
            self.progress = false;
            if let Err(e) = self.handle(f, events).and_then(|()| self.count_progress()) {
                return Err(self.refuse(&buf[at + used..], e));
            }
            at += used;
        }
    }

    /// Counts a whole frame received, and a DATA frame's gRPC layer on its stream, before the
    /// frame is handled: whatever check then ends the stream or the connection, its content
    /// is classified once.
    fn tally_received(&mut self, frame: &[u8], f: &Frame<'_>) {
        let Some(t) = &mut self.tally else { return };
        t.received(frame);
        if let Frame::Data {
            stream,
            data,
            end_stream,
            ..
        } = *f
        {
            let slot = self.by_id.get(&stream).copied();
            let state = slot.and_then(|s| self.streams[s].grpc_in.as_mut());
            t.received_data(data, state);
            if end_stream && let Some(s) = slot {
                self.streams[s].grpc_in = None;
            }
        }
    }

    /// Fails the connection with `e`, refusing `rest` (the bytes after the last frame taken).
    fn refuse(&mut self, rest: &[u8], e: Error) -> Error {
        if let Some(mut t) = self.tally.take() {
            t.refused(rest, |id| self.grpc_in(id));
            self.tally = Some(t);
        }
        self.fail(e)
    }

    fn fail(&mut self, e: Error) -> Error {
        if self.failed.is_none() {
            self.emit(|out| frame::encode_goaway(out, 0, e.reason, e.what.as_bytes()));
            self.goaway_sent = true;
            self.failed = Some(e);
        }
        e
    }

    /// After each frame handled: one that moved no stream of ours (`progress` unset) is one
    /// more in a row without progress, whatever its type.
    fn count_progress(&mut self) -> Result<(), Error> {
        if self.progress {
            self.idle_frames = 0;
            return Ok(());
        }
        self.idle_frames += 1;
        if self.idle_frames > self.cfg.max_idle_frames {
            return Err(calm("too many frames without progress"));
        }
        Ok(())
    }

    fn control_ack(&mut self, bytes: usize) -> Result<(), Error> {
        self.control_pending += bytes;
        if self.control_pending > self.cfg.max_pending_control {
            return Err(calm(
                "acknowledgements pile up unread (PING or SETTINGS flood)",
            ));
        }
        Ok(())
    }

    fn handle(&mut self, f: Frame<'_>, events: &mut impl Events) -> Result<(), Error> {
        if !self.settings_received && !matches!(f, Frame::Settings { ack: false, .. }) {
            return Err(protocol("the server's first frame is not SETTINGS"));
        }
        if let Some(p) = self.partial {
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
            return Ok(());
        }
        match f {
            Frame::Data {
                stream,
                data,
                end_stream,
                flow_len,
            } => self.data(stream, data, end_stream, flow_len, events),
            Frame::Headers {
                stream,
                block,
                end_stream,
                end_headers,
                ..
            } => {
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
            Frame::Priority { .. } | Frame::Unknown { .. } => Ok(()),
            Frame::RstStream { stream, reason } => {
                self.check_known(stream)?;
                if let Some(slot) = self.by_id.get(&stream).copied() {
                    let token = self.streams[slot].token;
                    self.remove(slot);
                    events.closed(token, Closed::Reset(reason));
                    self.progress = true;
                }
                Ok(())
            }
            Frame::Settings { ack: true, .. } => {
                if self.settings_unacked == 0 {
                    return Err(protocol("SETTINGS ACK without SETTINGS"));
                }
                self.settings_unacked -= 1;
                Ok(())
            }
            Frame::Settings {
                ack: false,
                settings,
            } => {
                self.settings_received = true;
                self.apply_settings(&settings)?;
                self.emit(frame::encode_settings_ack);
                self.control_ack(frame::HEADER_LEN)
            }
            Frame::PushPromise { .. } => Err(protocol("PUSH_PROMISE with push disabled")),
            // an answer to a PING of ours is no progress either: no stream moves, and nothing
            // stops a peer from sending ACKs we never asked for
            Frame::Ping { ack: true, data } => {
                events.pong(data);
                Ok(())
            }
            Frame::Ping { ack: false, data } => {
                self.emit(|out| frame::encode_ping(out, true, data));
                self.control_ack(frame::HEADER_LEN + 8)
            }
            Frame::GoAway {
                last_stream,
                reason,
                debug,
            } => self.goaway(last_stream, reason, debug, events),
            Frame::WindowUpdate {
                stream: 0,
                increment,
            } => {
                if increment == 0 {
                    return Err(protocol("WINDOW_UPDATE of 0 on the connection"));
                }
                self.conn_send_window += i64::from(increment);
                if self.conn_send_window > i64::from(frame::MAX_WINDOW) {
                    return Err(Error {
                        reason: Reason::FLOW_CONTROL_ERROR,
                        what: "connection window above 2^31-1",
                    });
                }
                // progress only if it lets waiting DATA out
                self.flush_blocked();
                Ok(())
            }
            Frame::WindowUpdate { stream, increment } => {
                self.check_known(stream)?;
                let Some(slot) = self.by_id.get(&stream).copied() else {
                    return Ok(());
                };
                if increment == 0 {
                    self.stream_error(slot, Reason::PROTOCOL_ERROR, "WINDOW_UPDATE of 0", events);
                    return Ok(());
                }
                let s = &mut self.streams[slot];
                s.send_window += i64::from(increment);
                if s.send_window > i64::from(frame::MAX_WINDOW) {
                    self.stream_error(
                        slot,
                        Reason::FLOW_CONTROL_ERROR,
                        "stream window above 2^31-1",
                        events,
                    );
                    return Ok(());
                }
                self.flush_blocked();
                Ok(())
            }
            Frame::Continuation { .. } => Err(protocol("CONTINUATION without a header block")),
        }
    }

    /// A frame on a stream id we never opened (server-initiated or idle) is a connection
    /// error; a closed one of ours is not.
    fn check_known(&self, stream: u32) -> Result<(), Error> {
        if stream.is_multiple_of(2) || stream >= self.next_id {
            return Err(protocol("a frame on a stream that was never opened"));
        }
        Ok(())
    }

    /// Ends a live stream of ours that broke a stream rule: progress (the stream is done, and
    /// a stream ends once).
    fn stream_error(
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

    /// A GOAWAY: its last stream id may only stay or fall (RFC 9113 §6.8). One that lowers it
    /// refuses the live streams above it, the newest ones: a walk from the newest down finds
    /// the oldest of them and stops at the first stream kept, then they are refused in the
    /// order they opened, so it costs two steps per stream refused. One that keeps the id
    /// changes nothing. A GOAWAY is progress only when it refuses streams (each stream is
    /// refused once); the streams it keeps may still complete, and wait for their own frames.
    fn goaway(
        &mut self,
        last_stream: u32,
        reason: Reason,
        debug: &[u8],
        events: &mut impl Events,
    ) -> Result<(), Error> {
        match self.goaway_received {
            Some(last) if last_stream > last => {
                return Err(protocol("a GOAWAY raises the last stream id"));
            }
            Some(last) if last_stream == last => {
                events.go_away(last, reason, debug);
                return Ok(());
            }
            _ => {}
        }
        self.goaway_received = Some(last_stream);
        events.go_away(last_stream, reason, debug);
        let mut oldest_refused = None;
        let mut at = self.newest;
        while let Some(slot) = at.filter(|&s| self.streams[s].id > last_stream) {
            oldest_refused = Some(slot);
            at = self.streams[slot].older;
        }
        let mut at = oldest_refused;
        while let Some(slot) = at {
            at = self.streams[slot].newer;
            let token = self.streams[slot].token;
            self.remove(slot);
            events.closed(token, Closed::Refused);
            self.progress = true;
        }
        Ok(())
    }

    fn apply_settings(&mut self, s: &Settings) -> Result<(), Error> {
        if let Some(n) = s.header_table_size {
            self.encoder.set_max_table_size(n as usize);
        }
        if let Some(n) = s.max_concurrent_streams {
            self.peer_max_streams = n;
        }
        if let Some(n) = s.max_frame_size {
            self.peer_max_frame = n;
        }
        if let Some(n) = s.initial_window_size {
            let delta = i64::from(n) - i64::from(self.peer_initial_window);
            self.peer_initial_window = n;
            // the live streams only, through their list
            let mut at = self.newest;
            while let Some(slot) = at {
                let st = &mut self.streams[slot];
                st.send_window += delta;
                if st.send_window > i64::from(frame::MAX_WINDOW) {
                    return Err(Error {
                        reason: Reason::FLOW_CONTROL_ERROR,
                        what: "SETTINGS_INITIAL_WINDOW_SIZE takes a stream window above 2^31-1",
                    });
                }
                at = st.older;
            }
            if delta > 0 {
                self.flush_blocked();
            }
        }
        Ok(())
    }

    fn data(
        &mut self,
        stream: u32,
        data: &[u8],
        end_stream: bool,
        flow_len: u32,
        events: &mut impl Events,
    ) -> Result<(), Error> {
        self.check_known(stream)?;
        if i64::from(flow_len) > self.conn_recv_window {
            return Err(Error {
                reason: Reason::FLOW_CONTROL_ERROR,
                what: "DATA beyond the connection window",
            });
        }
        self.conn_recv_window -= i64::from(flow_len);
        self.conn_recv_unacked += flow_len;
        if self.conn_recv_unacked
            >= self.cfg.initial_conn_window_size.max(frame::DEFAULT_WINDOW) / 2
        {
            let n = self.conn_recv_unacked;
            self.emit(|out| frame::encode_window_update(out, 0, n));
            self.conn_recv_window += i64::from(self.conn_recv_unacked);
            self.conn_recv_unacked = 0;
        }
        let Some(slot) = self.by_id.get(&stream).copied() else {
            return Ok(());
        };
        let s = &mut self.streams[slot];
        if s.remote_closed {
            self.stream_error(
                slot,
                Reason::STREAM_CLOSED,
                "DATA after the end of the stream",
                events,
            );
            return Ok(());
        }
        if s.head != Head::Received {
            self.stream_error(
                slot,
                Reason::PROTOCOL_ERROR,
                "DATA outside the response body",
                events,
            );
            return Ok(());
        }
        if i64::from(flow_len) > s.recv_window {
            self.stream_error(
                slot,
                Reason::FLOW_CONTROL_ERROR,
                "DATA beyond the stream window",
                events,
            );
            return Ok(());
        }
        s.recv_window -= i64::from(flow_len);
        s.recv_unacked += flow_len;
        let token = s.token;
        if end_stream {
            s.remote_closed = true;
        } else if s.recv_unacked >= self.cfg.initial_window_size / 2 && s.recv_unacked > 0 {
            let n = s.recv_unacked;
            s.recv_window += i64::from(n);
            s.recv_unacked = 0;
            self.emit(|out| frame::encode_window_update(out, stream, n));
        }
        // empty DATA without END_STREAM moves nothing
        self.progress = !data.is_empty() || end_stream;
        events.data(token, data, end_stream);
        if end_stream {
            self.finish_if_closed(slot);
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
        let mut check = FieldCheck::new(trailers);
        self.decoder
            .decode(block, max, |field| {
                if check.field(&field) {
                    events.field(token, field, trailers);
                }
            })
            .map_err(hpack_error)?;
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
            s.grpc_in = Some(Grpc::START);
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
        if f.name.is_empty() || f.name.iter().any(|&b| b.is_ascii_uppercase() || b <= b' ') {
            return Some("a field name that is empty, upper-case or has controls");
        }
        if matches!(
            f.name,
            b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade"
        ) {
            return Some("a connection-specific field");
        }
        if f.value.iter().any(|&b| b == 0 || b == b'\r' || b == b'\n') {
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

fn protocol(what: &'static str) -> Error {
    Error {
        reason: Reason::PROTOCOL_ERROR,
        what,
    }
}

fn calm(what: &'static str) -> Error {
    Error {
        reason: Reason::ENHANCE_YOUR_CALM,
        what,
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

fn compression(what: &'static str) -> Error {
    Error {
        reason: Reason::COMPRESSION_ERROR,
        what,
    }
}

#[cfg(test)]
mod tests;
