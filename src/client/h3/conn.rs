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
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use quinn_proto::{
    ClientConfig, DatagramEvent, Dir, Endpoint, EndpointConfig, TransportConfig, VarInt,
};
use tokio::time::{Instant, Sleep};

use super::control::Control;
use super::request::{Slot, take_counts};
use super::state::{H3_NO_ERROR, H3_REQUEST_CANCELLED, State};
use crate::client::call::{Call, CallError, InFlight, Progress, Request};
use crate::net::keylog::Secrets;
use crate::net::tls::QuicTls;
use crate::net::udp::{self, MeteredUdp};
use crate::net::{Ledger, NetConfig};
use crate::outcome::{Failure, FailureKind};
use crate::stats::{H3Record, QuicStats};
use wirebench_wire::h3::counts::H3Counts;
use wirebench_wire::h3::frame::{encode_data_head, encode_headers};
use wirebench_wire::h3::qpack::{Decoder, QpackCounts, encode_section};
use wirebench_wire::quic::{Dir as QuicDir, HandshakeScan, Sniffer};

/// The stretch of buffer the requests' heads are encoded into, a new one when it is used up.
const HEADS_ROOM: usize = 16 << 10;

/// QUIC's flow-control windows and stream limit for a connection (`--quic-stream-window`,
/// `--quic-conn-window`).
#[derive(Debug, Clone, Copy)]
pub struct QuicWindows {
    pub stream: u32,
    pub conn: u32,
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
    // a resumed session that allows early data: requests go in 0-RTT
    let zero_rtt = conn.has_0rtt();
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
        zero_rtt,
        handshake: None,
        started: Instant::now(),
        closing: false,
        secrets,
        sniffer: ledger_on.then(Sniffer::new),
        scan: HandshakeScan::new(),
        heads: BytesMut::with_capacity(HEADS_ROOM),
        copy: Vec::with_capacity(2048),
    }));
    if zero_rtt {
        // our SETTINGS go early too
        state.borrow_mut().open_control();
    }
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
                    // each message's datagrams in turn (a GRO batch split at its segment size)
                    let mut left = 0;
                    let mut seg = 1;
                    let mut msgs = r.messages().iter();
                    while !st.rbuf.is_empty() {
                        if left == 0 {
                            let Some(&(len, segment)) = msgs.next() else {
                                break;
                            };
                            (left, seg) = (len, segment.max(1));
                        }
                        let n = seg.min(left);
                        left -= n;
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
            if st.connected || st.zero_rtt {
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
            zero_rtt: u64::from(st.handshake.is_some_and(|h| h.zero_rtt)),
            zero_rtt_accepted: u64::from(st.handshake.is_some_and(|h| h.zero_rtt_accepted)),
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
        // a call whose fields vary is encoded anew each time, into the one entry kept for them
        let varies = call.varying_fields() != 0;
        let key = if varies { u64::MAX } else { call.key() };
        let (section, counts) = st.sections.entry(key).or_default();
        if section.is_empty() || varies {
            section.clear();
            let mut c = QpackCounts::default();
            // HTTP/3 is always over TLS: the scheme is https whatever the URL said
            let fields = call.fields().map(|(n, v)| {
                if n == b":scheme" {
                    (n, &b"https"[..])
                } else {
                    (n, v)
                }
            });
            encode_section(fields, section, &mut c);
            c.section_bytes = section.len() as u64;
            *counts = c;
        }
        if st.heads.capacity() - st.heads.len() < section.len() + 32 {
            // a fresh stretch: the old one is reclaimed once quinn dropped what it sent of it
            st.heads.reserve(HEADS_ROOM.max(section.len() + 32));
        }
        let mut frames = H3Counts::default();
        frames.count_frame(&encode_headers(&mut st.heads, section));
        st.qpack_out += *counts;
        // a request without a body ends with its HEADERS
        if !body.is_empty() {
            frames.count_frame(&encode_data_head(&mut st.heads, body.len() as u64));
        }
        st.frames_out += frames;
        let s = &mut st.slots[self.token];
        s.chunks = [st.heads.split().freeze(), body.clone()];
        if !st.connected {
            // sent in 0-RTT: kept until the server says it took it
            s.early = Some((s.chunks.clone(), frames));
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
        st.free.push(self.token);
    }
}
