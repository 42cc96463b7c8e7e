//! One HTTP/3 connection: quinn-proto's `Connection` (sans-IO: datagrams and time in, datagrams
//! out) on a connected UDP socket of its own, moved by one driver task; the callers queue their
//! requests on the shared state and wait in their slots, as on the wire h2 client.
//!
//! A wakeup of the driver receives every datagram waiting (GRO batches split into datagrams),
//! runs quinn's timers, handles the connection's events (stream data read into the requests'
//! slots and the control streams, streams that became writable written), then sends
//! everything quinn has to send (GSO: a run of datagrams in one `sendmsg`), and sets its timer
//! to quinn's next timeout and the earliest call deadline.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::{Bytes, BytesMut};
use quinn_proto::{
    ClientConfig, Connection, ConnectionError, ConnectionHandle, DatagramEvent, Dir, Endpoint,
    EndpointConfig, Event, ReadError, StreamEvent, StreamId, TransportConfig, VarInt,
};
use tokio::time::{Instant, Sleep};

use super::control::{Control, our_control_stream};
use super::request::{ProtocolError, Slot, read_frames, take_counts};
use crate::client::call::{Call, CallError, Progress, Request};
use crate::net::keylog::{QuicTls, Secrets};
use crate::net::udp::{self, MeteredUdp};
use crate::net::{Ledger, NetConfig};
use crate::outcome::{Failure, FailureKind};
use crate::stats::{H3Record, QuicStats};
use wirebench_wire::h3::counts::H3Counts;
use wirebench_wire::h3::frame::{encode_data_head, encode_headers};
use wirebench_wire::h3::qpack::{Decoder, QpackCounts, encode_section};
use wirebench_wire::quic::{Dir as QuicDir, Sniffer};

/// H3_NO_ERROR, H3_REQUEST_CANCELLED: what a close and a dropped call say.
const H3_NO_ERROR: u32 = 0x100;
const H3_REQUEST_CANCELLED: u32 = 0x10c;

/// The largest response field section we accept (SETTINGS_MAX_FIELD_SECTION_SIZE).
const MAX_FIELD_SECTION: u64 = 64 << 10;

/// QUIC's flow-control windows and stream limit for a connection (`--quic-stream-window`,
/// `--quic-conn-window`).
#[derive(Debug, Clone, Copy)]
pub struct QuicWindows {
    pub stream: u32,
    pub conn: u32,
}

/// The connection and its requests, shared by the driver and the callers on one thread.
struct State {
    endpoint: Endpoint,
    conn: Connection,
    ch: ConnectionHandle,
    remote: SocketAddr,
    /// received datagrams (quinn takes each as a `BytesMut` split off this buffer)
    rbuf: BytesMut,
    /// what quinn gives to send; `pending`: a transmit of it still to be sent
    sbuf: Vec<u8>,
    pending: Option<(usize, Option<usize>)>,
    /// a stateless answer of the endpoint (rare for a client)
    ebuf: Vec<u8>,
    control: Control,
    control_out: Option<StreamId>,
    control_bytes: Vec<u8>,
    slots: Vec<Slot>,
    free: Vec<usize>,
    by_stream: HashMap<StreamId, usize>,
    /// callers waiting for a stream (the handshake, or the server's stream limit)
    waiting: VecDeque<Waker>,
    /// the encoded field sections of the calls seen, by `Call::key`, with their counts
    sections: HashMap<u64, (Vec<u8>, QpackCounts)>,
    qpack: Decoder,
    frames_out: H3Counts,
    frames_in: H3Counts,
    qpack_out: QpackCounts,
    qpack_in: QpackCounts,
    next_deadline: Option<Instant>,
    driver: Option<Waker>,
    dead: Option<Failure>,
    connected: bool,
    handshake: Option<Handshake>,
    started: Instant,
    closing: bool,
    secrets: Arc<Secrets>,
    /// the ledger's decryption of a copy of every datagram (ledger on)
    sniffer: Option<Sniffer>,
    /// a received datagram's copy for the sniffer (quinn decrypts the original in place)
    copy: Vec<u8>,
}

/// The handshake as the ledger keeps it.
#[derive(Debug, Clone, Copy)]
struct Handshake {
    us: u64,
    bytes_out: u64,
    bytes_in: u64,
    datagrams_out: u64,
    datagrams_in: u64,
    resumed: bool,
}

impl State {
    fn wake_driver(&self) {
        if let Some(w) = &self.driver {
            w.wake_by_ref();
        }
    }

    fn wake_waiting(&mut self) {
        while let Some(w) = self.waiting.pop_front() {
            w.wake();
        }
    }

    fn kill(&mut self, why: Failure) {
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
    fn protocol_error(&mut self, e: ProtocolError) {
        let code = VarInt::from_u64(e.0.code.value()).unwrap_or(VarInt::from_u32(0x101));
        self.conn
            .close(std::time::Instant::now(), code, Bytes::from_static(b""));
        self.kill(Failure::with(FailureKind::H3, e.0));
    }

    fn set_deadline(&mut self, token: usize, at: Instant) {
        self.slots[token].deadline = Some(at);
        if self.next_deadline.is_none_or(|d| at < d) {
            self.next_deadline = Some(at);
            self.wake_driver();
        }
    }

    fn expire(&mut self, now: Instant) {
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
    fn write_request(&mut self, token: usize) {
        let s = &mut self.slots[token];
        let Some(id) = s.stream else { return };
        while !s.all_sent() {
            match self.conn.send_stream(id).write(s.unsent()) {
                Ok(n) => s.sent += n,
                // flow control: the rest goes when the stream is writable again
                Err(_) => return,
            }
        }
        if !s.finished {
            s.finished = true;
            let _ = self.conn.send_stream(id).finish();
        }
    }

    /// Reads what arrived on request stream `id` into its slot and judges it.
    fn read_request(&mut self, id: StreamId) {
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

    fn read_uni(&mut self, id: StreamId) {
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
    fn events(&mut self, ledger: &Ledger) {
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
                        resumed: self.conn.crypto_session().handshake_data().is_some()
                            && resumed(&self.conn),
                    });
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

    fn open_control(&mut self) {
        if self.control_out.is_some() {
            return;
        }
        if let Some(id) = self.conn.streams().open(Dir::Uni) {
            self.control_out = Some(id);
            self.control_bytes = our_control_stream(MAX_FIELD_SECTION, &mut self.control);
            self.write_control();
        }
    }

    fn write_control(&mut self) {
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
    fn can_open(&self) -> bool {
        self.connected && self.dead.is_none() && self.control.goaway.is_none() && !self.closing
    }
}

/// Whether the handshake resumed a session (no certificate from the server).
fn resumed(conn: &Connection) -> bool {
    conn.crypto_session().peer_identity().is_none()
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

/// A handle on one HTTP/3 connection; clones share it.
#[derive(Clone)]
pub struct H3Handle {
    state: Rc<RefCell<State>>,
}

/// The transport settings of a client connection: the windows, no streams for the server to
/// open but the three unidirectional ones HTTP/3 uses (and a few for grease).
fn transport(w: QuicWindows, idle: std::time::Duration, offload: bool) -> TransportConfig {
    let mut t = TransportConfig::default();
    t.enable_segmentation_offload(offload);
    t.stream_receive_window(VarInt::from_u32(w.stream));
    t.receive_window(VarInt::from_u32(w.conn));
    t.max_concurrent_bidi_streams(VarInt::from_u32(0));
    t.max_concurrent_uni_streams(VarInt::from_u32(16));
    t.max_idle_timeout(quinn_proto::IdleTimeout::try_from(idle).ok());
    t
}

/// A connected HTTP/3 connection: its handle, its driver task, its ledger, its local port and
/// a duplicate of its socket's descriptor.
pub type Connected = (
    H3Handle,
    tokio::task::JoinHandle<()>,
    Rc<Ledger>,
    u16,
    std::os::fd::OwnedFd,
);

/// Connects to `addr` (`host`: the server name to verify) and starts the driver on the current
/// `LocalSet`; returns once the handshake is done (within the connect timeout).
pub async fn connect(
    addr: SocketAddr,
    host: &str,
    net: &NetConfig,
    tls: &QuicTls,
    windows: QuicWindows,
    ledger_on: bool,
) -> io::Result<Connected> {
    let ledger = Rc::new(Ledger::new(crate::net::Layers::Off));
    let sock = udp::open(addr, net, ledger.clone())?;
    let secrets = Secrets::new(ledger_on, tls.keylog.clone());
    let Some(rustls) = tls.for_connection(secrets.clone()) else {
        return Err(io::Error::other(
            "h3: no TLS configuration (--cacert or --insecure-skip-verify)",
        ));
    };
    let crypto = quinn_proto::crypto::rustls::QuicClientConfig::try_from(rustls)
        .map_err(io::Error::other)?;
    let mut config = ClientConfig::new(Arc::new(crypto));
    config.transport_config(Arc::new(transport(
        windows,
        std::time::Duration::from_secs(30),
        net.udp_offload,
    )));
    let mut ecfg = EndpointConfig::default();
    ecfg.max_udp_payload_size(1472).map_err(io::Error::other)?;
    let mut endpoint = Endpoint::new(Arc::new(ecfg), None, false, None);
    let name = tls.sni().unwrap_or(host);
    let name = name.trim_start_matches('[').trim_end_matches(']');
    let remote = sock.peer;
    let (ch, conn) = endpoint
        .connect(std::time::Instant::now(), config, remote, name)
        .map_err(|e| io::Error::other(format!("QUIC connect: {e}")))?;
    let local_port = sock.local.port();
    // SAFETY: the socket's descriptor is open while `sock` lives; the clone is a dup of it
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(sock.fd()) }.try_clone_to_owned()?;
    let state = Rc::new(RefCell::new(State {
        endpoint,
        conn,
        ch,
        remote,
        rbuf: BytesMut::with_capacity(64 << 10),
        sbuf: Vec::with_capacity(64 << 10),
        pending: None,
        ebuf: Vec::new(),
        control: Control::default(),
        control_out: None,
        control_bytes: Vec::new(),
        slots: Vec::new(),
        free: Vec::new(),
        by_stream: HashMap::new(),
        waiting: VecDeque::new(),
        sections: HashMap::new(),
        qpack: Decoder::new(),
        frames_out: H3Counts::default(),
        frames_in: H3Counts::default(),
        qpack_out: QpackCounts::default(),
        qpack_in: QpackCounts::default(),
        next_deadline: None,
        driver: None,
        dead: None,
        connected: false,
        handshake: None,
        started: Instant::now(),
        closing: false,
        secrets,
        sniffer: ledger_on.then(Sniffer::new),
        copy: Vec::with_capacity(2048),
    }));
    let handle = H3Handle {
        state: state.clone(),
    };
    let task = tokio::task::spawn_local(async move {
        let mut sock = sock;
        let mut timer: Option<Pin<Box<Sleep>>> = None;
        poll_fn(|cx| drive(&state, &mut sock, &mut timer, cx)).await;
    });
    match tokio::time::timeout(net.connect_timeout, handle.ready()).await {
        Ok(Ok(())) => Ok((handle, task, ledger, local_port, fd)),
        Ok(Err(e)) => {
            task.abort();
            Err(e)
        }
        Err(_) => {
            task.abort();
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("QUIC handshake: no answer within {:?}", net.connect_timeout),
            ))
        }
    }
}

/// One wakeup of the driver: receive, handle, send, set the timer. Ready when the connection
/// is over (closed, lost, or drained after our close).
fn drive(
    state: &Rc<RefCell<State>>,
    sock: &mut MeteredUdp,
    timer: &mut Option<Pin<Box<Sleep>>>,
    cx: &mut Context<'_>,
) -> Poll<()> {
    let mut st = state.borrow_mut();
    let st = &mut *st;
    if st.driver.as_ref().is_none_or(|w| !w.will_wake(cx.waker())) {
        st.driver = Some(cx.waker().clone());
    }
    loop {
        let now = std::time::Instant::now();
        // receive everything waiting
        loop {
            st.rbuf.clear();
            match sock.poll_recv(cx, &mut st.rbuf) {
                Poll::Pending => break,
                Poll::Ready(Err(e)) => {
                    if st.dead.is_none() {
                        st.kill(crate::client::io_failure(&e));
                    }
                    return Poll::Ready(());
                }
                Poll::Ready(Ok(r)) => {
                    let seg = r.segment.max(1);
                    while !st.rbuf.is_empty() {
                        let n = seg.min(st.rbuf.len());
                        let d = st.rbuf.split_to(n);
                        if st.sniffer.is_some() {
                            st.copy.clear();
                            st.copy.extend_from_slice(&d);
                        }
                        let ev = st
                            .endpoint
                            .handle(now, st.remote, None, None, d, &mut st.ebuf);
                        match ev {
                            Some(DatagramEvent::ConnectionEvent(ch, ev)) if ch == st.ch => {
                                st.conn.handle_event(ev)
                            }
                            // a stateless reset or version negotiation from us: none for a client
                            _ => st.ebuf.clear(),
                        }
                        // after quinn: the secrets its handling made rustls log come first
                        st.sniff_in();
                    }
                }
            }
        }
        if st.conn.poll_timeout().is_some_and(|t| t <= now) {
            st.conn.handle_timeout(now);
        }
        while let Some(ev) = st.conn.poll_endpoint_events() {
            if let Some(ev) = st.endpoint.handle_event(st.ch, ev) {
                st.conn.handle_event(ev);
            }
        }
        st.events(sock.ledger());
        if !st.waiting.is_empty() && (st.can_open() || st.dead.is_some()) {
            st.wake_waiting();
        }
        if st.closing && st.by_stream.is_empty() && !st.conn.is_closed() {
            st.conn
                .close(now, VarInt::from_u32(H3_NO_ERROR), Bytes::new());
        }
        // send everything quinn has
        loop {
            if let Some((size, segment)) = st.pending {
                match sock.poll_send(cx, &st.sbuf[..size], segment) {
                    Poll::Pending => break,
                    Poll::Ready(Err(e)) => {
                        st.kill(crate::client::io_failure(&e));
                        return Poll::Ready(());
                    }
                    Poll::Ready(Ok(())) => st.pending = None,
                }
            }
            st.sbuf.clear();
            match st
                .conn
                .poll_transmit(now, sock.max_segments(), &mut st.sbuf)
            {
                Some(t) => {
                    st.sniff_out(t.size, t.segment_size);
                    st.pending = Some((t.size, t.segment_size));
                }
                None => break,
            }
        }
        // after a close (ours or the peer's) quinn drains for three PTOs, reading what still
        // comes (the ledger counts it, as the TCP stacks read to the server's FIN); the owner
        // bounds that wait
        if st.conn.is_drained() {
            return Poll::Ready(());
        }
        // the timer: quinn's next timeout or the earliest call deadline
        let deadline = st.next_deadline;
        let quic = st.conn.poll_timeout().map(Instant::from_std);
        let at = match (deadline, quic) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let Some(at) = at else { return Poll::Pending };
        let t = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
        if t.deadline() != at {
            t.as_mut().reset(at);
        }
        if t.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        if deadline.is_some_and(|d| d <= Instant::now()) {
            st.expire(Instant::now());
        }
    }
}

impl State {
    /// The secrets rustls logged since the last datagram, to the sniffer.
    fn secrets_to_sniffer(&mut self) {
        let Some(s) = &mut self.sniffer else { return };
        for (label, secret) in self.secrets.take() {
            // a secret of a length no QUIC suite has: its packets count as undecryptable
            let _ = s.secret(label, &secret);
        }
    }

    /// The datagram just handled by quinn (its copy), to the sniffer.
    fn sniff_in(&mut self) {
        if self.sniffer.is_none() {
            return;
        }
        self.secrets_to_sniffer();
        if let Some(s) = &mut self.sniffer {
            s.datagram(QuicDir::In, &self.copy);
        }
    }

    /// The `size` bytes quinn just put in `sbuf` (datagrams of `segment` bytes with GSO), to
    /// the sniffer.
    fn sniff_out(&mut self, size: usize, segment: Option<usize>) {
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

impl H3Handle {
    /// Whether the connection can take no more requests.
    pub fn is_dead(&self) -> bool {
        let st = self.state.borrow();
        st.dead.is_some() || st.control.goaway.is_some() || st.closing
    }

    /// Waits until the handshake is done (or the connection failed).
    pub async fn ready(&self) -> io::Result<()> {
        poll_fn(|cx| {
            let mut st = self.state.borrow_mut();
            if let Some(d) = &st.dead {
                return Poll::Ready(Err(io::Error::other(d.to_string())));
            }
            if st.connected {
                return Poll::Ready(Ok(()));
            }
            st.waiting.push_back(cx.waker().clone());
            Poll::Pending
        })
        .await
    }

    /// Starts the close: once no request is open, CONNECTION_CLOSE with H3_NO_ERROR; the
    /// driver ends when it is sent.
    pub fn close(&self) {
        let mut st = self.state.borrow_mut();
        st.closing = true;
        st.wake_driver();
    }

    /// The connection's record of its HTTP/3 and QUIC layers so far (`ledger`: its socket's).
    pub fn record(&self, ledger: &Ledger) -> H3Record {
        let st = self.state.borrow();
        let mut frames_in = st.frames_in;
        frames_in += st.control.control_frames_in();
        for s in &st.slots {
            frames_in += *s.reader.counts();
        }
        let mut frames_out = st.frames_out;
        frames_out += st.control.frames_out;
        let stats = st.conn.stats();
        H3Record {
            frames_out,
            frames_in,
            qpack_out: st.qpack_out,
            qpack_in: st.qpack_in,
            stream_type_bytes_out: st.control.type_bytes_out,
            stream_type_bytes_in: st.control.type_bytes_in,
            qpack_stream_bytes_in: st.control.qpack_stream_bytes_in,
            ignored_stream_bytes_in: st.control.ignored_bytes_in,
            quic: QuicStats::from_quinn(&stats),
            sniffed_out: st
                .sniffer
                .as_ref()
                .map_or_else(Default::default, |s| *s.counts(QuicDir::Out)),
            sniffed_in: st
                .sniffer
                .as_ref()
                .map_or_else(Default::default, |s| *s.counts(QuicDir::In)),
            datagrams_out: ledger.datagrams_out.get(),
            datagrams_in: ledger.datagrams_in.get(),
            handshakes: u64::from(st.handshake.is_some()),
            handshake_us: st.handshake.map_or(0, |h| h.us),
            handshake_bytes_out: st.handshake.map_or(0, |h| h.bytes_out),
            handshake_bytes_in: st.handshake.map_or(0, |h| h.bytes_in),
            handshake_datagrams_out: st.handshake.map_or(0, |h| h.datagrams_out),
            handshake_datagrams_in: st.handshake.map_or(0, |h| h.datagrams_in),
            resumed: u64::from(st.handshake.is_some_and(|h| h.resumed)),
        }
    }

    /// One request; `progress` tells when it is queued and the response's status. `None` when
    /// `deadline` passed first (its stream, if open, is reset).
    pub async fn unary(
        &self,
        ledger: &Ledger,
        req: Request<'_>,
        rx: &mut BytesMut,
        progress: &Progress,
        deadline: Option<Instant>,
    ) -> Option<Result<Bytes, CallError>> {
        let Request {
            call,
            bytes: request,
            max_message,
        } = req;
        let token = {
            let mut st = self.state.borrow_mut();
            let token = match st.free.pop() {
                Some(t) => t,
                None => {
                    st.slots.push(Slot::new());
                    st.slots.len() - 1
                }
            };
            st.slots[token].begin(max_message);
            std::mem::swap(&mut st.slots[token].rx, rx);
            st.slots[token].rx.clear();
            if let Some(at) = deadline {
                st.set_deadline(token, at);
            }
            token
        };
        let mut guard = Guard {
            state: &self.state,
            token,
            rx,
        };
        match poll_fn(|cx| guard.open(cx, call, request)).await? {
            Ok(()) => {}
            Err(e) => return Some(Err(e)),
        }
        progress.sent.set(true);
        ledger.count_request();
        let _in_flight = InFlight::new(ledger);
        let outcome = poll_fn(|cx| {
            let mut st = self.state.borrow_mut();
            let s = &mut st.slots[token];
            match s.outcome.take() {
                Some(o) => Poll::Ready(Some(o)),
                None if s.expired => Poll::Ready(None),
                None => {
                    s.wait(cx);
                    Poll::Pending
                }
            }
        })
        .await?;
        progress.status.set(self.state.borrow().slots[token].status);
        Some(outcome)
    }
}

/// Counts a request in flight on the connection while it lives (the close waits for none).
struct InFlight<'a>(&'a Ledger);

impl<'a> InFlight<'a> {
    fn new(l: &'a Ledger) -> InFlight<'a> {
        l.in_flight.set(l.in_flight.get() + 1);
        InFlight(l)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0
            .in_flight
            .set(self.0.in_flight.get().saturating_sub(1));
    }
}

/// A request's hold on its slot: gives the caller's buffer back and frees the slot however the
/// request ends; one dropped mid-flight (its timeout) resets its stream.
struct Guard<'a> {
    state: &'a Rc<RefCell<State>>,
    token: usize,
    rx: &'a mut BytesMut,
}

impl Guard<'_> {
    /// Opens the request's stream and queues HEADERS and DATA; `None` when the deadline passed
    /// first.
    fn open(
        &mut self,
        cx: &mut Context<'_>,
        call: &Call,
        body: &Bytes,
    ) -> Poll<Option<Result<(), CallError>>> {
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        if st.slots[self.token].expired {
            return Poll::Ready(None);
        }
        if let Some(d) = &st.dead {
            return Poll::Ready(Some(Err(never_sent(d.clone()))));
        }
        if st.control.goaway.is_some() || st.closing {
            return Poll::Ready(Some(Err(never_sent(Failure::with(
                FailureKind::Goaway,
                "the connection is going away",
            )))));
        }
        let id = match st
            .can_open()
            .then(|| st.conn.streams().open(Dir::Bi))
            .flatten()
        {
            Some(id) => id,
            None => {
                st.waiting.push_back(cx.waker().clone());
                st.slots[self.token].wait(cx);
                return Poll::Pending;
            }
        };
        let (section, counts) = st.sections.entry(call.key).or_insert_with(|| {
            let mut section = Vec::new();
            let mut c = QpackCounts::default();
            // HTTP/3 is always over TLS: the scheme is https whatever the URL said
            let fields = call.fields().map(|(n, v)| {
                if n == b":scheme" {
                    (n, &b"https"[..])
                } else {
                    (n, v)
                }
            });
            encode_section(fields, &mut section, &mut c);
            c.section_bytes = section.len() as u64;
            (section, c)
        });
        let s = &mut st.slots[self.token];
        let head = encode_headers(&mut s.head, section);
        st.frames_out.count_frame(&head);
        st.qpack_out += *counts;
        // a request without a body ends with its HEADERS
        if !body.is_empty() {
            let head = encode_data_head(&mut s.head, body.len() as u64);
            st.frames_out.count_frame(&head);
            s.body = body.clone();
        }
        s.stream = Some(id);
        st.by_stream.insert(id, self.token);
        st.write_request(self.token);
        st.wake_driver();
        Poll::Ready(Some(Ok(())))
    }
}

fn never_sent(failure: Failure) -> CallError {
    CallError {
        status: None,
        failure,
        conn_broken: true,
        unprocessed: true,
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        let mut st = self.state.borrow_mut();
        let st = &mut *st;
        let s = &mut st.slots[self.token];
        if let Some(id) = s.stream.take() {
            st.by_stream.remove(&id);
            // a response read to its FIN leaves nothing to cancel: our side was finished
            // before it; a request cut short (its deadline, a failure) is cancelled both ways
            if s.ended != Some(true) {
                let code = VarInt::from_u32(H3_REQUEST_CANCELLED);
                let _ = st.conn.send_stream(id).reset(code);
                let _ = st.conn.recv_stream(id).stop(code);
                st.wake_driver();
            }
        }
        let s = &mut st.slots[self.token];
        take_counts(s, &mut st.frames_in);
        std::mem::swap(&mut s.rx, self.rx);
        s.outcome = None;
        s.waker = None;
        s.deadline = None;
        s.body = Bytes::new();
        st.free.push(self.token);
    }
}
