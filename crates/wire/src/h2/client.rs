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
//!
//! The files: this one holds the connection's types, its construction, the output queue and
//! the counts; `streams` the stream table (slots, ids, the list of live streams); `send` the
//! requests' side (opening streams, DATA within the windows, RST_STREAM, PING, GOAWAY);
//! `recv` the frames received; `header_block` the response heads and trailers received.

use super::counts::H2Counts;
use super::frame::{self, Reason, Settings};
use super::grpc_framing::GrpcFraming;
use super::hpack::{self, Decoder, Encoder, Field, Strategy};
use super::stream_id::StreamIdMap;
use super::tally::{FrameTally, TallyLayers};
use header_block::{BlockMemo, Partial};
use streams::Stream;

mod header_block;
mod recv;
mod send;
mod streams;
#[cfg(test)]
mod tests;

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
    pub layers: TallyLayers,
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
            layers: TallyLayers::Off,
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
    /// the last response head and the last trailers that left the HPACK table as it was, and
    /// what they said
    memo: [BlockMemo; 2],
    partial: Option<Partial>,
    streams: Vec<Stream>,
    free: Vec<usize>,
    by_id: StreamIdMap<usize>,
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
    tally: Option<FrameTally>,
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
        let mut tally = FrameTally::new(cfg.layers);
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
            memo: Default::default(),
            partial: None,
            streams: Vec::new(),
            free: Vec::new(),
            by_id: StreamIdMap::default(),
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
        self.tally.as_ref().map(FrameTally::counts_out)
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
    fn grpc_in(&self, id: u32) -> Option<GrpcFraming> {
        let &slot = self.by_id.get(&id)?;
        self.streams[slot].grpc_in
    }

    /// Appends frames to the output (never DATA: `write_data` counts its own).
    pub(super) fn emit(&mut self, encode: impl FnOnce(&mut Vec<u8>)) {
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
}

/// A connection error of PROTOCOL_ERROR.
pub(super) fn protocol(what: &'static str) -> Error {
    Error {
        reason: Reason::PROTOCOL_ERROR,
        what,
    }
}

/// A connection error of ENHANCE_YOUR_CALM: a limit of ours.
pub(super) fn calm(what: &'static str) -> Error {
    Error {
        reason: Reason::ENHANCE_YOUR_CALM,
        what,
    }
}

/// A connection error of COMPRESSION_ERROR: HPACK out of step.
pub(super) fn compression(what: &'static str) -> Error {
    Error {
        reason: Reason::COMPRESSION_ERROR,
        what,
    }
}
