//! The state of one HTTP/3 connection that its driver and its callers share: quinn's
//! connection and endpoint, the buffers the driver moves datagrams through, the requests'
//! slots, the unidirectional streams, the ledger's counts and decryption; and what the driver
//! does with quinn's events (stream data read into the slots and the control streams,
//! writable streams written, the connection lost).

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::Waker;

use bytes::{Bytes, BytesMut};
use quinn_proto::{
    Connection, ConnectionError, ConnectionHandle, Dir, Endpoint, Event, ReadError, StreamEvent,
    StreamId, VarInt,
};
use tokio::time::Instant;

use super::control::{Control, our_control_stream};
use super::request::{ProtocolError, Slot, read_frames};
use crate::client::call::CallError;
use crate::net::Ledger;
use crate::net::keylog::Secrets;
use crate::outcome::{Failure, FailureKind};
use wirebench_wire::h3::counts::H3Counts;
use wirebench_wire::h3::qpack::{Decoder, QpackCounts};
use wirebench_wire::quic::{Dir as QuicDir, HandshakeScan, Sniffer};

/// H3_NO_ERROR, H3_REQUEST_CANCELLED: what a close and a dropped call say.
pub(super) const H3_NO_ERROR: u32 = 0x100;
pub(super) const H3_REQUEST_CANCELLED: u32 = 0x10c;

/// The largest response field section we accept (SETTINGS_MAX_FIELD_SECTION_SIZE).
pub(super) const MAX_FIELD_SECTION: u64 = 64 << 10;

/// The connection and its requests, shared by the driver and the callers on one thread.
pub(super) struct State {
    pub(super) endpoint: Endpoint,
    pub(super) conn: Connection,
    pub(super) ch: ConnectionHandle,
    pub(super) remote: SocketAddr,
    /// received datagrams (quinn takes each as a `BytesMut` split off this buffer)
    pub(super) rbuf: BytesMut,
    /// what quinn gives to send; `pending`: a transmit of it still to be sent
    pub(super) sbuf: Vec<u8>,
    pub(super) pending: Option<(usize, Option<usize>)>,
    /// a stateless answer of the endpoint (rare for a client)
    pub(super) ebuf: Vec<u8>,
    pub(super) control: Control,
    pub(super) control_out: Option<StreamId>,
    pub(super) control_bytes: Vec<u8>,
    pub(super) slots: Vec<Slot>,
    pub(super) free: Vec<usize>,
    pub(super) by_stream: HashMap<StreamId, usize>,
    /// callers waiting for a stream (the handshake, or the server's stream limit)
    pub(super) waiting: VecDeque<Waker>,
    /// the encoded field sections of the calls seen, by `Call::key`, with their counts
    pub(super) sections: HashMap<u64, (Vec<u8>, QpackCounts)>,
    pub(super) qpack: Decoder,
    pub(super) frames_out: H3Counts,
    pub(super) frames_in: H3Counts,
    pub(super) qpack_out: QpackCounts,
    pub(super) qpack_in: QpackCounts,
    pub(super) next_deadline: Option<Instant>,
    pub(super) driver: Option<Waker>,
    pub(super) dead: Option<Failure>,
    pub(super) connected: bool,
    /// the handshake began with 0-RTT keys (a resumed session that allows early data):
    /// requests go before it completes
    pub(super) zero_rtt: bool,
    pub(super) handshake: Option<Handshake>,
    pub(super) started: Instant,
    pub(super) closing: bool,
    pub(super) secrets: Arc<Secrets>,
    /// where the requests' HEADERS and DATA heads are encoded, each split off as it is sent
    pub(super) heads: BytesMut,
    /// the ledger's decryption of a copy of every datagram (ledger on)
    pub(super) sniffer: Option<Sniffer>,
    /// the server's handshake flight, as the sniffer reads it: resumed or full
    pub(super) scan: HandshakeScan,
    /// a received datagram's copy for the sniffer (quinn decrypts the original in place)
    pub(super) copy: Vec<u8>,
}

/// The handshake as the ledger keeps it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Handshake {
    pub(super) us: u64,
    pub(super) bytes_out: u64,
    pub(super) bytes_in: u64,
    pub(super) datagrams_out: u64,
    pub(super) datagrams_in: u64,
    pub(super) resumed: bool,
    /// 0-RTT was tried, and the server accepted it
    pub(super) zero_rtt: bool,
    pub(super) zero_rtt_accepted: bool,
}

impl State {
    pub(super) fn wake_driver(&self) {
        if let Some(w) = &self.driver {
            w.wake_by_ref();
        }
    }

    pub(super) fn wake_waiting(&mut self) {
        while let Some(w) = self.waiting.pop_front() {
            w.wake();
        }
    }

    pub(super) fn kill(&mut self, why: Failure) {
        if self.dead.is_none() {
            self.dead = Some(why.clone());
        }
        for s in &mut self.slots {
            if s.stream.is_some() || s.waker.is_some() {
                s.done(Err(CallError {
                    conn_broken: true,
                    ..CallError::plain(why.clone())
                }));
            }
        }
        self.wake_waiting();
    }

    /// A protocol error: the connection closes with its code.
    pub(super) fn protocol_error(&mut self, e: ProtocolError) {
        let code = VarInt::from_u64(e.0.code.value()).unwrap_or(VarInt::from_u32(0x101));
        self.conn
            .close(std::time::Instant::now(), code, Bytes::from_static(b""));
        self.kill(Failure::with(FailureKind::H3, e.0));
    }

    pub(super) fn set_deadline(&mut self, token: usize, at: Instant) {
        self.slots[token].deadline = Some(at);
        if self.next_deadline.is_none_or(|d| at < d) {
            self.next_deadline = Some(at);
            self.wake_driver();
        }
    }

    pub(super) fn expire(&mut self, now: Instant) {
        let mut next = None;
        for s in &mut self.slots {
            let Some(at) = s.deadline else { continue };
            if s.ended.is_some() || s.expired {
                continue;
            }
            if at <= now {
                s.expired = true;
                s.wake();
            } else if next.is_none_or(|n| at < n) {
                next = Some(at);
            }
        }
        self.next_deadline = next;
    }

    /// Writes what slot `token` still has to send, and its FIN once all is out.
    pub(super) fn write_request(&mut self, token: usize) {
        let s = &mut self.slots[token];
        let Some(id) = s.stream else { return };
        while !s.all_sent() {
            // flow control: the rest goes when the stream is writable again
            if self
                .conn
                .send_stream(id)
                .write_chunks(&mut s.chunks)
                .is_err()
            {
                return;
            }
        }
        if !s.finished {
            s.finished = true;
            let _ = self.conn.send_stream(id).finish();
        }
    }

    /// Reads what arrived on request stream `id` into its slot and judges it.
    pub(super) fn read_request(&mut self, id: StreamId) {
        let Some(&token) = self.by_stream.get(&id) else {
            return;
        };
        let s = &mut self.slots[token];
        let mut fin = false;
        let mut reset = None;
        if let Ok(mut chunks) = self.conn.recv_stream(id).read(true) {
            loop {
                match chunks.next(usize::MAX) {
                    Ok(Some(c)) => s.inbuf.extend_from_slice(&c.bytes),
                    Ok(None) => {
                        fin = true;
                        break;
                    }
                    Err(ReadError::Blocked) => break,
                    Err(ReadError::Reset(code)) => {
                        reset = Some(code);
                        break;
                    }
                }
            }
            let _ = chunks.finalize();
        }
        let r = read_frames(
            s,
            fin,
            &mut self.qpack,
            MAX_FIELD_SECTION,
            &mut self.qpack_in,
        );
        if let Some(code) = reset
            && s.ended.is_none()
        {
            let refused = code.into_inner() == 0x10b;
            s.done(Err(CallError {
                // H3_REQUEST_REJECTED: the server did not process it
                unprocessed: refused,
                ..CallError::plain(Failure::with(
                    FailureKind::H3,
                    format_args!(
                        "the server reset the request stream (0x{:x})",
                        code.into_inner()
                    ),
                ))
            }));
        }
        if let Err(e) = r {
            self.protocol_error(e);
        }
    }

    pub(super) fn read_uni(&mut self, id: StreamId) {
        let mut fin = false;
        let mut r = Ok(());
        if let Ok(mut chunks) = self.conn.recv_stream(id).read(true) {
            loop {
                match chunks.next(usize::MAX) {
                    Ok(Some(c)) => {
                        r = self.control.data(id, &c.bytes, false);
                        if r.is_err() {
                            break;
                        }
                    }
                    Ok(None) => {
                        fin = true;
                        break;
                    }
                    Err(ReadError::Blocked) => break,
                    Err(ReadError::Reset(_)) => {
                        fin = true;
                        break;
                    }
                }
            }
            let _ = chunks.finalize();
        }
        if r.is_ok() && fin {
            r = self.control.data(id, &[], true);
        }
        if let Err(e) = r {
            self.protocol_error(e);
        }
        if self.control.goaway.is_some() {
            self.wake_waiting();
        }
    }

    /// Handles quinn's application events.
    pub(super) fn events(&mut self, ledger: &Ledger) {
        while let Some(ev) = self.conn.poll() {
            match ev {
                Event::Connected => {
                    self.connected = true;
                    self.handshake = Some(Handshake {
                        us: self.started.elapsed().as_micros() as u64,
                        bytes_out: ledger.bytes_out.get(),
                        bytes_in: ledger.bytes_in.get(),
                        datagrams_out: ledger.datagrams_out.get(),
                        datagrams_in: ledger.datagrams_in.get(),
                        // the server's flight had no Certificate (the ledger's decryption
                        // reads it; without the ledger a resumption is not told)
                        resumed: self.scan.resumed() == Some(true),
                        zero_rtt: self.zero_rtt,
                        zero_rtt_accepted: self.zero_rtt && self.conn.accepted_0rtt(),
                    });
                    if self.zero_rtt && !self.conn.accepted_0rtt() {
                        self.early_rejected();
                    }
                    for s in &mut self.slots {
                        s.early = None;
                    }
                    self.open_control();
                    self.wake_waiting();
                }
                Event::ConnectionLost { reason } => self.kill(lost(&reason)),
                Event::Stream(StreamEvent::Opened { dir: Dir::Uni }) => {
                    while let Some(id) = self.conn.streams().accept(Dir::Uni) {
                        self.control.opened(id);
                        self.read_uni(id);
                    }
                }
                Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) => {
                    // we allow the server none; refuse any all the same
                    while let Some(id) = self.conn.streams().accept(Dir::Bi) {
                        let code = VarInt::from_u32(0x103);
                        let _ = self.conn.recv_stream(id).stop(code);
                        let _ = self.conn.send_stream(id).reset(code);
                    }
                }
                Event::Stream(StreamEvent::Readable { id }) => {
                    if self.by_stream.contains_key(&id) {
                        self.read_request(id);
                    } else if self.control.knows(id) {
                        self.read_uni(id);
                    }
                }
                Event::Stream(StreamEvent::Writable { id }) => {
                    if let Some(&token) = self.by_stream.get(&id) {
                        self.write_request(token);
                    } else if Some(id) == self.control_out {
                        self.write_control();
                    }
                }
                Event::Stream(StreamEvent::Stopped { id, error_code }) => {
                    if let Some(&token) = self.by_stream.get(&id) {
                        let s = &mut self.slots[token];
                        // H3_NO_ERROR: the server answers without the rest of the request
                        if error_code.into_inner() != u64::from(H3_NO_ERROR) {
                            s.done(Err(CallError {
                                unprocessed: error_code.into_inner() == 0x10b,
                                ..CallError::plain(Failure::with(
                                    FailureKind::H3,
                                    format_args!(
                                        "the server stopped the request stream (0x{:x})",
                                        error_code.into_inner()
                                    ),
                                ))
                            }));
                        }
                    }
                }
                Event::Stream(StreamEvent::Available { dir: Dir::Bi }) => self.wake_waiting(),
                Event::Stream(_)
                | Event::HandshakeDataReady
                | Event::DatagramReceived
                | Event::DatagramsUnblocked => {}
            }
        }
    }

    pub(super) fn open_control(&mut self) {
        if self.control_out.is_some() {
            return;
        }
        if let Some(id) = self.conn.streams().open(Dir::Uni) {
            self.control_out = Some(id);
            self.control_bytes = our_control_stream(MAX_FIELD_SECTION, &mut self.control);
            self.write_control();
        }
    }

    pub(super) fn write_control(&mut self) {
        let Some(id) = self.control_out else { return };
        while !self.control_bytes.is_empty() {
            match self.conn.send_stream(id).write(&self.control_bytes) {
                Ok(n) => {
                    self.control_bytes.drain(..n);
                }
                Err(_) => return,
            }
        }
    }

    /// Whether a new request may open a stream now.
    pub(super) fn can_open(&self) -> bool {
        (self.connected || self.zero_rtt)
            && self.dead.is_none()
            && self.control.goaway.is_none()
            && !self.closing
    }

    /// The server refused our 0-RTT: quinn forgot every stream we opened. Our control stream
    /// and each request sent early go again on new streams, in 1-RTT (their frames counted
    /// again: they are sent again).
    fn early_rejected(&mut self) {
        self.control_out = None;
        self.by_stream.clear();
        for token in 0..self.slots.len() {
            let s = &mut self.slots[token];
            let Some((chunks, counts)) = s.early.take() else {
                continue;
            };
            if s.ended.is_some() || s.stream.is_none() {
                continue;
            }
            match self.conn.streams().open(Dir::Bi) {
                Some(id) => {
                    let s = &mut self.slots[token];
                    s.stream = Some(id);
                    s.chunks = chunks;
                    s.finished = false;
                    self.frames_out += counts;
                    self.by_stream.insert(id, token);
                    self.write_request(token);
                }
                None => {
                    let s = &mut self.slots[token];
                    s.stream = None;
                    s.done(Err(CallError {
                        unprocessed: true,
                        ..CallError::plain(Failure::with(
                            FailureKind::H3,
                            "0-RTT refused and no stream to send the request again",
                        ))
                    }));
                }
            }
        }
    }
}

impl State {
    /// The secrets rustls logged since the last datagram, to the sniffer.
    pub(super) fn secrets_to_sniffer(&mut self) {
        let Some(s) = &mut self.sniffer else { return };
        for (label, secret) in self.secrets.take() {
            // a secret of a length no QUIC suite has: its packets count as undecryptable
            let _ = s.secret(label, &secret);
        }
    }

    /// The datagram just handled by quinn (its copy), to the sniffer.
    pub(super) fn sniff_in(&mut self) {
        if self.sniffer.is_none() {
            return;
        }
        self.secrets_to_sniffer();
        if let Some(s) = &mut self.sniffer {
            s.datagram_with(QuicDir::In, &self.copy, &mut self.scan);
        }
    }

    /// The `size` bytes quinn just put in `sbuf` (datagrams of `segment` bytes with GSO), to
    /// the sniffer.
    pub(super) fn sniff_out(&mut self, size: usize, segment: Option<usize>) {
        if self.sniffer.is_none() {
            return;
        }
        self.secrets_to_sniffer();
        if let Some(s) = &mut self.sniffer {
            for d in self.sbuf[..size].chunks(segment.unwrap_or(size).max(1)) {
                s.datagram(QuicDir::Out, d);
            }
        }
    }
}

/// A lost connection as a request's failure.
fn lost(reason: &ConnectionError) -> Failure {
    match reason {
        ConnectionError::TimedOut => Failure::with(FailureKind::Quic, "idle timeout"),
        ConnectionError::ApplicationClosed(c)
            if c.error_code.into_inner() == u64::from(H3_NO_ERROR) =>
        {
            Failure::with(FailureKind::Closed, "connection closed by the server")
        }
        other => Failure::with(FailureKind::Quic, other),
    }
}
