//! The receive side of a client connection: `recv` takes every complete frame in the bytes
//! read, counts it (`Config::layers`) and handles it: SETTINGS and their ACKs, PING, GOAWAY,
//! WINDOW_UPDATE, RST_STREAM and DATA with the receive windows; a connection error queues a
//! GOAWAY and ends the connection. The limits on frames in a row that move no stream and on
//! unread acknowledgements are kept here.

use super::streams::Head;
use super::{Closed, Connection, Error, Events, calm, protocol};
use crate::h2::frame::{self, Frame, Reason, Settings};

impl Connection {
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

    /// Handles one decoded frame.
    fn handle(&mut self, f: Frame<'_>, events: &mut impl Events) -> Result<(), Error> {
        if !self.settings_received && !matches!(f, Frame::Settings { ack: false, .. }) {
            return Err(protocol("the server's first frame is not SETTINGS"));
        }
        if let Some(p) = self.partial {
            return self.continuation(p, f, events);
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
            } => self.headers(stream, block, end_stream, end_headers, events),
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

    /// The peer's SETTINGS applied: its limits, and a new initial window to every live stream.
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

    /// DATA: both receive windows charged (and replenished once half used), checked against
    /// the stream's state, handed to the sink.
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
}
