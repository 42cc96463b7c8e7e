//! Packet capture as ground truth: tshark on loopback while a test runs, then read back into
//! per-connection figures (payload bytes, segments, h2 frames, HTTP/1.1 messages).
//!
//! `Capture::start(port)` captures every TCP packet to or from `port` on `lo` into a pcapng file
//! in a temporary directory; `stop()` ends tshark with SIGINT and reads the file with a first
//! pass over the TCP layer only. `Packets::decode_h2()` and `Packets::decode_http1()` run a
//! second pass with the port decoded as HTTP/2 or HTTP/1.1.
//!
//! Every packet to or from `port` belongs to one connection, named by its other port (the
//! client's ephemeral port); "out" is client → server (the direction wirebench writes), "in"
//! is server → client.
//!
//! On loopback every packet is seen exactly once (the kernel loops the transmitted skb back, and
//! the capture taps it on the way out). Loopback has no NIC offload that would merge or split
//! segments after the capture point, so one captured packet is one segment in the sender's and
//! the receiver's TCP_INFO counters.
//!
//! `WIREBENCH_TSHARK` overrides /usr/bin/tshark; `WIREBENCH_KEEP_PCAP=DIR` keeps a copy of
//! every capture in DIR for a post-mortem (`tshark -r FILE -d tcp.port==PORT,http2 ...`).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where Debian's tshark package puts the binary.
const DEFAULT_TSHARK: &str = "/usr/bin/tshark";
/// How long tshark gets to report that it is capturing.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// Time for the last packets (close exchange, delayed ACKs) to reach the file before SIGINT.
const TAIL: Duration = Duration::from_millis(300);
/// How long tshark gets to exit after SIGINT (it flushes and prints its counts).
const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// Bound for one read pass over the pcap.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

fn tshark_binary() -> PathBuf {
    let path = std::env::var_os("WIREBENCH_TSHARK")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_TSHARK));
    if !path.is_file() {
        panic!(
            "tshark is not installed ({} not found): the ground-truth tests need a packet \
             capture. Run scripts/test.sh (it installs tshark) or `apt-get install tshark`, \
             or point WIREBENCH_TSHARK at a tshark binary",
            path.display()
        );
    }
    path
}

/// A running tshark capture of one TCP port on `lo`; killed on drop if not stopped.
pub struct Capture {
    child: Option<Child>,
    port: u16,
    file: PathBuf,
    stderr: Arc<Mutex<String>>,
    stderr_reader: Option<JoinHandle<()>>,
    // Declared last so tshark is gone before its directory is removed; moved into `Packets`.
    dir: Option<tempfile::TempDir>,
}

impl Capture {
    /// Starts `tshark -i lo -f "tcp port {port}"` and waits until it is capturing; panics
    /// (with tshark's output) if it does not say so within 10 s.
    pub fn start(port: u16) -> Capture {
        Capture::start_filtered(port, &format!("tcp port {port}"))
    }

    /// Starts capturing every UDP datagram to or from `port` on `lo` (QUIC); `stop_raw` ends
    /// it, and `Packets::udp` reads it.
    pub fn start_udp(port: u16) -> Capture {
        Capture::start_filtered(port, &format!("udp port {port}"))
    }

    fn start_filtered(port: u16, filter: &str) -> Capture {
        let bin = tshark_binary();
        let dir = tempfile::Builder::new()
            .prefix("wirebench-pcap-")
            .tempdir()
            .expect("create a temporary directory for the capture");
        let file = dir.path().join(format!("port-{port}.pcapng"));
        // dumpcap (tshark's capture child) runs as root here and writes the file itself.
        let mut cmd = Command::new(&bin);
        cmd.args(["-i", "lo"])
            .args(["-f", filter])
            // 64 MiB kernel buffer: a burst of thousands of small segments must not drop.
            .args(["-B", "64"])
            .arg("-w")
            .arg(&file)
            .arg("-q")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // As for etcd: if the test process dies without Drop, take tshark with it.
        super::process::die_with_parent(&mut cmd);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let mut pipe = child.stderr.take().expect("tshark stderr is piped");
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let stderr_reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => sink
                        .lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n])),
                }
            }
        });
        let mut cap = Capture {
            child: Some(child),
            port,
            file,
            stderr,
            stderr_reader: Some(stderr_reader),
            dir: Some(dir),
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            // "Capturing on 'Loopback: lo'" is printed by tshark before its capture child
            // (dumpcap) even runs: not a sign that packets are being kept. dumpcap opens the
            // interface and installs the filter first, then creates the output file and reports
            // it, which tshark logs as "Capture started." / "File: ...". So wait for that log,
            // or, should a tshark version not print it, for dumpcap to have created the file.
            let err = cap.stderr_text();
            let file_started = cap.file.exists();
            if err.contains("Capturing on") && (err.contains("Capture started") || file_started) {
                break;
            }
            if let Some(status) = cap.child.as_mut().unwrap().try_wait().expect("wait tshark") {
                cap.child = None;
                panic!(
                    "tshark exited with {status} before capturing (are we root?); its output:\n{}",
                    cap.stderr_text()
                );
            }
            if Instant::now() >= deadline {
                let out = cap.stderr_text();
                drop(cap);
                panic!(
                    "tshark did not start capturing within {START_TIMEOUT:?}; its output:\n{out}"
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        cap
    }

    fn stderr_text(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits for the last packets, stops tshark (SIGINT) and reads the capture's TCP layer.
    pub fn stop(self) -> Packets {
        let mut packets = self.stop_raw();
        packets.read_tcp();
        packets
    }

    /// Waits for the last packets and stops tshark (SIGINT); nothing read yet.
    pub fn stop_raw(mut self) -> Packets {
        std::thread::sleep(TAIL);
        let mut child = self.child.take().expect("capture running");
        interrupt(&child);
        let deadline = Instant::now() + STOP_TIMEOUT;
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for tshark") {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "tshark did not exit within {STOP_TIMEOUT:?} of SIGINT; its output:\n{}",
                    self.stderr_text()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        if let Some(r) = self.stderr_reader.take() {
            let _ = r.join();
        }
        let stderr = self.stderr_text();
        assert!(
            self.file.is_file(),
            "tshark ({status}) wrote no capture file; its output:\n{stderr}"
        );
        let dropped = dropped_packets(&stderr);
        // For a post-mortem: WIREBENCH_KEEP_PCAP=DIR keeps a copy of every capture in DIR.
        if let Some(keep) = std::env::var_os("WIREBENCH_KEEP_PCAP") {
            let keep = PathBuf::from(keep);
            let _ = std::fs::create_dir_all(&keep);
            let dst = keep.join(format!("port-{}-{}.pcapng", self.port, std::process::id()));
            match std::fs::copy(&self.file, &dst) {
                Ok(_) => eprintln!("capture of port {} kept in {}", self.port, dst.display()),
                Err(e) => eprintln!("cannot keep the capture in {}: {e}", dst.display()),
            }
        }
        let dir = self.dir.take().expect("capture directory");
        let packets = Packets {
            port: self.port,
            file: self.file.clone(),
            tshark_stderr: stderr,
            dropped,
            packets: 0,
            conns: BTreeMap::new(),
            _dir: dir,
        };
        // A capture with drops is no ground truth: fail here, whatever the test checks.
        packets.assert_complete();
        packets
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            interrupt(&child);
            let deadline = Instant::now() + Duration::from_secs(3);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// SIGINT to tshark (our own child, by pid): it stops dumpcap, flushes the file and exits.
fn interrupt(child: &Child) {
    let pid = child.id() as libc::pid_t;
    // SAFETY: kill has no memory-safety preconditions; the pid is our unreaped child.
    unsafe {
        libc::kill(pid, libc::SIGINT);
    }
}

/// Packets tshark says it lost: "N packets dropped from lo" (kernel/interface) or
/// "N packets dropped" (capture buffer). Absent lines mean none.
fn dropped_packets(stderr: &str) -> u64 {
    stderr
        .lines()
        .filter(|l| l.contains(" dropped"))
        .filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// A UDP "connection" (one client port): (datagrams, payload bytes) out, then in.
pub type UdpConn = ((u64, u64), (u64, u64));

/// One direction of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Dir {
    /// client → server: what wirebench writes
    Out,
    /// server → client: what wirebench reads
    In,
}

/// One captured TCP segment.
#[derive(Debug, Clone)]
pub struct Segment {
    pub frame: u64,
    /// TCP payload length
    pub len: u64,
    /// relative sequence number (0 = the SYN, 1 = the first payload byte)
    pub seq: u64,
    pub syn: bool,
    pub fin: bool,
    pub rst: bool,
    /// tshark's analysis flagged it as a retransmission (of any kind)
    pub retransmission: bool,
    /// h2 frame types that tshark's HTTP/2 dissector finished in this segment (after decode_h2)
    pub h2_types: Vec<&'static str>,
}

/// Counts and bytes of one h2 frame type, as wirebench reports them: bytes = 9 + payload.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameStat {
    pub count: u64,
    pub bytes: u64,
}

/// What tshark's HTTP/2 dissector saw in one direction of one connection, with wirebench's
/// definitions of the layers (crates/wire/src/h2/sniff.rs) applied to tshark's per-frame fields.
#[derive(Debug, Clone, Default)]
pub struct H2Side {
    /// 24 when the client connection preface (PRI * HTTP/2.0...) was seen
    pub preface_bytes: u64,
    /// frame type name (wirebench's names; unknown types are "UNKNOWN") → count and bytes
    pub frames: BTreeMap<&'static str, FrameStat>,
    /// preface + every frame before the first HEADERS frame of this direction
    pub setup_bytes: u64,
    /// header block fragments: HEADERS, PUSH_PROMISE and CONTINUATION payload minus padding
    /// (pad length byte + padding), HEADERS priority fields (5) and promised stream ids (4)
    pub hpack_bytes: u64,
    /// Σ DATA payload, padding included
    pub data_payload_bytes: u64,
    /// pad length bytes + padding over DATA, HEADERS and PUSH_PROMISE
    pub padding_bytes: u64,
    /// frames with the PADDED flag
    pub padded_frames: u64,
    /// length-prefixed gRPC messages tshark's gRPC dissector decoded
    pub grpc_messages: u64,
    /// Σ their message length (5-byte prefix excluded)
    pub grpc_message_bytes: u64,
    /// a HEADERS frame was seen (setup is over)
    seen_headers: bool,
}

impl H2Side {
    pub fn total_frames(&self) -> u64 {
        self.frames.values().map(|f| f.count).sum()
    }

    pub fn count(&self, ty: &str) -> u64 {
        self.frames.get(ty).map_or(0, |f| f.count)
    }
}

/// What tshark's HTTP dissector saw in one direction of one connection.
#[derive(Debug, Clone, Default)]
pub struct HttpSide {
    /// requests (out) or responses (in)
    pub messages: u64,
    /// Σ Content-Length of those messages
    pub content_length: u64,
    /// chunks of chunked bodies (the last, zero-size chunk excluded) and Σ their sizes
    pub chunks: u64,
    pub chunk_bytes: u64,
    /// Σ length of the de-chunked / de-framed body tshark reassembled (http.file_data)
    pub file_data_bytes: u64,
    /// Σ length of the start line + header lines + the blank line, as tshark split them
    pub head_bytes: u64,
}

/// Everything captured in one direction of one connection.
#[derive(Debug, Clone, Default)]
pub struct Side {
    /// every segment, in capture order
    pub segments: Vec<Segment>,
    /// Σ tcp.len over every segment, retransmissions included
    pub payload_bytes: u64,
    /// distinct payload bytes by sequence number: the length of the byte stream the
    /// application wrote (sender) or read (receiver); retransmitted bytes count once
    pub stream_bytes: u64,
    pub h2: H2Side,
    pub http: HttpSide,
}

impl Side {
    /// All segments: SYN, pure ACKs, data, FIN, RST, retransmissions.
    pub fn segs(&self) -> u64 {
        self.segments.len() as u64
    }

    /// Segments carrying payload (tcp.len > 0), retransmissions included.
    pub fn data_segs(&self) -> u64 {
        self.segments.iter().filter(|s| s.len > 0).count() as u64
    }

    pub fn retransmissions(&self) -> u64 {
        self.segments.iter().filter(|s| s.retransmission).count() as u64
    }

    pub fn retransmitted_bytes(&self) -> u64 {
        self.payload_bytes - self.stream_bytes
    }

    pub fn syn_seen(&self) -> bool {
        self.segments.iter().any(|s| s.syn)
    }

    pub fn fin_seen(&self) -> bool {
        self.segments.iter().any(|s| s.fin)
    }

    pub fn last_data_segment(&self) -> Option<&Segment> {
        self.segments.iter().rev().find(|s| s.len > 0)
    }
}

/// One TCP connection to the captured port, named by the client's port.
#[derive(Debug, Clone, Default)]
pub struct Conn {
    pub client_port: u16,
    pub out: Side,
    pub r#in: Side,
}

impl Conn {
    pub fn side(&self, dir: Dir) -> &Side {
        match dir {
            Dir::Out => &self.out,
            Dir::In => &self.r#in,
        }
    }

    fn side_mut(&mut self, dir: Dir) -> &mut Side {
        match dir {
            Dir::Out => &mut self.out,
            Dir::In => &mut self.r#in,
        }
    }
}

/// A finished capture, read back.
pub struct Packets {
    pub port: u16,
    file: PathBuf,
    /// everything tshark printed on stderr while capturing
    pub tshark_stderr: String,
    /// packets tshark reported lost (a capture with drops is no ground truth)
    pub dropped: u64,
    /// packets in the file
    pub packets: u64,
    conns: BTreeMap<u16, Conn>,
    _dir: tempfile::TempDir,
}

impl std::fmt::Debug for Packets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packets")
            .field("port", &self.port)
            .field("packets", &self.packets)
            .field("dropped", &self.dropped)
            .field("connections", &self.conns.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Packets {
    /// Panics unless tshark reported no lost packets.
    pub fn assert_complete(&self) {
        assert_eq!(
            self.dropped, 0,
            "tshark dropped {} packets: this capture is no ground truth; its output:\n{}",
            self.dropped, self.tshark_stderr
        );
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Client ports of every captured connection.
    pub fn client_ports(&self) -> Vec<u16> {
        self.conns.keys().copied().collect()
    }

    pub fn conn(&self, client_port: u16) -> Option<&Conn> {
        self.conns.get(&client_port)
    }

    /// Which connection and direction a packet between `src` and `dst` belongs to.
    fn classify(&self, src: u16, dst: u16) -> Option<(u16, Dir)> {
        if dst == self.port {
            Some((src, Dir::Out))
        } else if src == self.port {
            Some((dst, Dir::In))
        } else {
            None
        }
    }

    /// First pass: the TCP layer of every packet.
    fn read_tcp(&mut self) {
        let rows = self.tshark_fields(
            &[],
            &[
                "frame.number",
                "tcp.srcport",
                "tcp.dstport",
                "tcp.len",
                "tcp.seq",
                "tcp.flags.syn",
                "tcp.flags.fin",
                "tcp.flags.reset",
                "tcp.analysis.retransmission",
            ],
        );
        let mut packets = 0;
        for row in rows {
            packets += 1;
            let src = port(&row[1]);
            let dst = port(&row[2]);
            let Some((client, dir)) = self.classify(src, dst) else {
                panic!(
                    "packet {} is not to or from port {}: {row:?}",
                    row[0], self.port
                );
            };
            let seg = Segment {
                frame: num(&row[0]),
                len: num(&row[3]),
                seq: num(&row[4]),
                syn: flag(&row[5]),
                fin: flag(&row[6]),
                rst: flag(&row[7]),
                // present (any value) only on segments tshark considers retransmitted
                retransmission: !row[8].is_empty(),
                h2_types: Vec::new(),
            };
            let conn = self.conns.entry(client).or_insert_with(|| Conn {
                client_port: client,
                ..Conn::default()
            });
            let side = conn.side_mut(dir);
            side.payload_bytes += seg.len;
            if seg.len > 0 {
                // Relative sequence numbers start at 1 for the first payload byte, so the
                // highest end seen is the stream length + 1.
                side.stream_bytes = side.stream_bytes.max(seg.seq + seg.len - 1);
            }
            side.segments.push(seg);
        }
        self.packets = packets;
    }

    /// Second pass with the port decoded as HTTP/2: frames per type and direction.
    ///
    /// tshark reassembles frames across segments and reports each frame in the packet where it
    /// completes; every field is printed once per frame, comma-separated (`-E occurrence=a`).
    /// Retransmitted segments are not handed to the HTTP/2 dissector a second time.
    pub fn decode_h2(&mut self) {
        let decode = format!("tcp.port=={},http2", self.port);
        let rows = self.tshark_fields(
            &["-d", &decode],
            &[
                "frame.number",
                "tcp.srcport",
                "tcp.dstport",
                "http2.magic",
                "http2.type",
                "http2.length",
                "http2.flags",
                "http2.pad_length",
                "grpc.message_length",
            ],
        );
        for row in rows {
            let frame = num(&row[0]);
            let Some((client, dir)) = self.classify(port(&row[1]), port(&row[2])) else {
                continue;
            };
            let conn = self
                .conns
                .get_mut(&client)
                .expect("connection from the TCP pass");
            let side = conn.side_mut(dir);
            let h2 = &mut side.h2;
            if !row[3].is_empty() {
                // the 24-byte client connection preface, the start of the setup
                h2.preface_bytes += 24;
                assert!(
                    !h2.seen_headers,
                    "packet {frame}: a preface after HEADERS: {row:?}"
                );
                h2.setup_bytes += 24;
            }
            let types = list(&row[4]);
            let lengths = list(&row[5]);
            let flags = list(&row[6]);
            // tshark prints a Pad Length for every DATA, HEADERS and PUSH_PROMISE frame (0 when
            // the frame is not padded), so it lines up with those frames in order.
            let pads = list(&row[7]);
            assert_eq!(
                (types.len(), types.len()),
                (lengths.len(), flags.len()),
                "packet {frame}: http2 fields do not line up: {row:?}"
            );
            let padded_types = types.iter().filter(|t| matches!(num(t), 0 | 1 | 5)).count();
            assert_eq!(
                pads.len(),
                padded_types,
                "packet {frame}: http2.pad_length does not line up with DATA/HEADERS/PUSH_PROMISE \
                 frames: {row:?}"
            );
            let mut pads = pads.iter().map(|p| num(p));
            let mut names = Vec::with_capacity(types.len());
            for ((ty, len), fl) in types.iter().zip(&lengths).zip(&flags) {
                let ty = num(ty);
                let len = num(len);
                let fl = num(fl);
                let name = frame_name(ty);
                names.push(name);
                let st = h2.frames.entry(name).or_default();
                st.count += 1;
                st.bytes += 9 + len;
                if ty == 1 {
                    h2.seen_headers = true;
                }
                if !h2.seen_headers {
                    h2.setup_bytes += 9 + len;
                }
                // RFC 9113 §6: PADDED (0x8) on DATA, HEADERS and PUSH_PROMISE, then a 1-byte Pad
                // Length; PRIORITY (0x20) on HEADERS adds 5 bytes; PUSH_PROMISE carries a 4-byte
                // promised stream id.
                let padding = if matches!(ty, 0 | 1 | 5) {
                    let pad = pads.next().unwrap();
                    if fl & 0x8 != 0 {
                        h2.padded_frames += 1;
                        1 + pad
                    } else {
                        assert_eq!(pad, 0, "packet {frame}: pad length without PADDED: {row:?}");
                        0
                    }
                } else {
                    0
                };
                h2.padding_bytes += padding;
                match ty {
                    0 => h2.data_payload_bytes += len,
                    1 => {
                        let priority = if fl & 0x20 != 0 { 5 } else { 0 };
                        h2.hpack_bytes += len - padding - priority;
                    }
                    5 => h2.hpack_bytes += len - padding - 4,
                    9 => h2.hpack_bytes += len,
                    _ => {}
                }
            }
            let msgs = list(&row[8]);
            h2.grpc_messages += msgs.len() as u64;
            h2.grpc_message_bytes += msgs.iter().map(|v| num(v)).sum::<u64>();
            if !names.is_empty() {
                // Segments are in frame order.
                let i = side
                    .segments
                    .binary_search_by_key(&frame, |s| s.frame)
                    .expect("segment from the TCP pass");
                side.segments[i].h2_types = names;
            }
        }
    }

    /// Second pass with the port decoded as HTTP/1.1: requests, responses and their bodies.
    ///
    /// tshark reassembles a message across segments (headers and body) and reports it in the
    /// packet where it completes.
    pub fn decode_http1(&mut self) {
        let decode = format!("tcp.port=={},http", self.port);
        let rows = self.tshark_fields(
            &["-d", &decode],
            &[
                "frame.number",
                "tcp.srcport",
                "tcp.dstport",
                "http.request",
                "http.response",
                "http.content_length",
                "http.chunk_size",
                "http.file_data",
                "http.request.line",
                "http.response.line",
                "http.request.method",
                "http.request.uri",
                "http.request.version",
                "http.response.version",
                "http.response.code",
                "http.response.phrase",
            ],
        );
        for row in rows {
            let Some((client, dir)) = self.classify(port(&row[1]), port(&row[2])) else {
                continue;
            };
            let conn = self
                .conns
                .get_mut(&client)
                .expect("connection from the TCP pass");
            let http = &mut conn.side_mut(dir).http;
            let (marker, lines) = match dir {
                Dir::Out => (&row[3], &row[8]),
                Dir::In => (&row[4], &row[9]),
            };
            let messages = list(marker).len() as u64;
            if messages == 0 {
                continue;
            }
            http.messages += messages;
            http.content_length += list(&row[5]).iter().map(|v| num(v)).sum::<u64>();
            // The last chunk (size 0) carries no data.
            let sizes: Vec<u64> = list(&row[6]).iter().map(|v| num(v)).collect();
            http.chunks += sizes.iter().filter(|&&s| s > 0).count() as u64;
            http.chunk_bytes += sizes.iter().sum::<u64>();
            // -T fields prints http.file_data (FT_STRING) as is for printable ASCII, which the
            // bodies in these tests are (JSON), so its length is the body length; with several
            // messages in one packet (pipelining), the bodies are joined by one comma each.
            let bodies = list(&row[5]).len() as u64;
            let mut file_data = row[7].len() as u64;
            if messages > 1 && file_data > 0 {
                assert_eq!(
                    bodies, messages,
                    "packet {}: several messages in one packet, not all with a Content-Length \
                     body: their bodies cannot be told apart: {row:?}",
                    row[0]
                );
                file_data -= messages - 1;
            }
            // per message "METHOD SP URI SP VERSION CRLF" or "VERSION SP CODE SP PHRASE CRLF":
            // the three fields' lengths (none holds a comma here) and 4 bytes
            let parts = match dir {
                Dir::Out => [&row[10], &row[11], &row[12]],
                Dir::In => [&row[13], &row[14], &row[15]],
            };
            let mut start_line = 4 * messages;
            for part in parts {
                let items = list(part);
                assert_eq!(
                    items.len() as u64,
                    messages,
                    "packet {}: a start line field per message expected: {row:?}",
                    row[0]
                );
                start_line += items.iter().map(|i| i.len() as u64).sum::<u64>();
            }
            let header_lines: u64 = header_line_bytes(lines);
            // each message's head ends with a blank line
            http.head_bytes += start_line + header_lines + 2 * messages;
            http.file_data_bytes += file_data;
        }
    }

    /// Runs `tshark -r FILE -T fields` with `fields`, tab-separated, every occurrence of a field
    /// comma-separated; returns one row per packet.
    /// The UDP datagrams to and from the port, per client port: (datagrams, payload bytes)
    /// out (client → server) and in.
    pub fn udp(&self) -> BTreeMap<u16, UdpConn> {
        let rows = self.tshark_fields(&[], &["udp.srcport", "udp.dstport", "udp.length"]);
        let mut by_port: BTreeMap<u16, UdpConn> = BTreeMap::new();
        for r in rows {
            let Some((client, dir)) = self.classify(port(&r[0]), port(&r[1])) else {
                continue;
            };
            // udp.length counts the 8-byte UDP header
            let payload = num(&r[2]) - 8;
            let e = by_port.entry(client).or_default();
            let side = match dir {
                Dir::Out => &mut e.0,
                Dir::In => &mut e.1,
            };
            side.0 += 1;
            side.1 += payload;
        }
        by_port
    }

    /// The QUIC frames of the capture decrypted with `keylog` (NSS key log), per direction:
    /// frame type name → count, as tshark's QUIC dissector names them (`quic.frame_type`).
    pub fn quic_frames(&self, keylog: &Path) -> (BTreeMap<u64, u64>, BTreeMap<u64, u64>) {
        let decode = format!("udp.port=={},quic", self.port);
        let key = format!("tls.keylog_file:{}", keylog.display());
        let rows = self.tshark_fields(
            &["-d", &decode, "-o", &key],
            &["udp.srcport", "udp.dstport", "quic.frame_type"],
        );
        let (mut out, mut inbound) = (BTreeMap::new(), BTreeMap::new());
        for r in rows {
            let Some((_, dir)) = self.classify(port(&r[0]), port(&r[1])) else {
                continue;
            };
            let m = match dir {
                Dir::Out => &mut out,
                Dir::In => &mut inbound,
            };
            for t in list(&r[2]) {
                *m.entry(num(t)).or_insert(0) += 1;
            }
        }
        (out, inbound)
    }

    fn tshark_fields(&self, extra: &[&str], fields: &[&str]) -> Vec<Vec<String>> {
        let mut cmd = Command::new(tshark_binary());
        cmd.arg("-r").arg(&self.file);
        // Pin the preferences the figures depend on (a preferences file could change them):
        // reassembly across segments, sequence analysis with relative numbers (retransmission
        // flags, 0 = SYN), no checksum validation (loopback leaves checksums to "offload", so
        // they look wrong, and a segment with a "bad" checksum is not dissected further), and
        // HTTP heads and bodies reassembled and de-chunked.
        for pref in [
            "tcp.desegment_tcp_streams:TRUE",
            "tcp.analyze_sequence_numbers:TRUE",
            "tcp.relative_sequence_numbers:TRUE",
            "tcp.check_checksum:FALSE",
            "http.desegment_headers:TRUE",
            "http.desegment_body:TRUE",
            "http.dechunk_body:TRUE",
        ] {
            cmd.args(["-o", pref]);
        }
        cmd.args(extra).args([
            "-n",
            "-T",
            "fields",
            "-E",
            "separator=/t",
            "-E",
            "occurrence=a",
            "-E",
            "aggregator=,",
        ]);
        for f in fields {
            cmd.args(["-e", f]);
        }
        let rendered = format!("{cmd:?}");
        let out = run_with_timeout(cmd, READ_TIMEOUT);
        assert!(
            out.status.success(),
            "{rendered} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).expect("tshark prints UTF-8");
        text.lines()
            .map(|l| {
                let mut row: Vec<String> = l.split('\t').map(str::to_string).collect();
                row.resize(fields.len(), String::new());
                row
            })
            .collect()
    }
}

/// Bytes of the header lines tshark printed for one message: every line is printed with its
/// trailing "\r\n" (escaped by -T fields as the 4 characters `\r\n`), comma-separated.
fn header_line_bytes(field: &str) -> u64 {
    if field.is_empty() {
        return 0;
    }
    // Each line ends in an escaped CRLF; split on it rather than on commas (a header value may
    // contain a comma).
    let mut total = 0u64;
    let mut rest = field;
    while let Some(i) = rest.find("\\r\\n") {
        let line = &rest[..i];
        total += line.len() as u64 + 2;
        rest = &rest[i + 4..];
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
    assert!(
        rest.is_empty(),
        "unexpected http line field from tshark: {field:?}"
    );
    total
}

/// wirebench's name for an h2 frame type (RFC 9113 §6); others are "UNKNOWN".
pub fn frame_name(ty: u64) -> &'static str {
    match ty {
        0 => "DATA",
        1 => "HEADERS",
        2 => "PRIORITY",
        3 => "RST_STREAM",
        4 => "SETTINGS",
        5 => "PUSH_PROMISE",
        6 => "PING",
        7 => "GOAWAY",
        8 => "WINDOW_UPDATE",
        9 => "CONTINUATION",
        _ => "UNKNOWN",
    }
}

fn list(field: &str) -> Vec<&str> {
    if field.is_empty() {
        Vec::new()
    } else {
        field.split(',').collect()
    }
}

fn num(s: &str) -> u64 {
    let s = s.trim();
    if let Some(hex) = s.strip_prefix("0x") {
        u64::from_str_radix(hex, 16).unwrap_or_else(|e| panic!("tshark printed {s:?}: {e}"))
    } else if s.is_empty() {
        0
    } else {
        s.parse()
            .unwrap_or_else(|e| panic!("tshark printed {s:?} for a number: {e}"))
    }
}

fn port(s: &str) -> u16 {
    u16::try_from(num(s)).expect("a TCP port")
}

/// tshark 4.0 prints booleans as 1/0, newer versions as True/False.
fn flag(s: &str) -> bool {
    matches!(s.trim(), "1" | "True" | "true")
}

fn run_with_timeout(mut cmd: Command, limit: Duration) -> std::process::Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.unwrap_or_else(|e| panic!("{cmd:?}: {e}")),
        Err(_) => {
            // SAFETY: kill has no memory-safety preconditions; `id` is our child, not yet reaped
            // (wait_with_output is still blocked on it).
            unsafe {
                libc::kill(id as libc::pid_t, libc::SIGKILL);
            }
            panic!("{cmd:?} did not finish within {limit:?}");
        }
    }
}
