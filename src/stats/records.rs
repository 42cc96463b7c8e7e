//! What one connection carried, as taken from its ledger: socket counters, TCP_INFO, the
//! protocol layers, TLS, and the close exchange apart; and the data calls of a thread.

use serde::{Deserialize, Serialize};

use wirebench_wire::h2::counts::H2Counts;

/// The ledger of one TCP connection, taken when it closed (or at the end of the run).
#[derive(Debug, Clone, Default, Serialize)]
pub struct ConnRecord {
    /// index of the endpoint it went to
    pub endpoint: usize,
    /// source address (see `--bind`)
    pub local_ip: Option<std::net::IpAddr>,
    pub local_port: u16,
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub write_calls: u64,
    pub read_calls: u64,
    pub write_would_block: u64,
    pub read_would_block: u64,
    /// requests (HTTP/1.1) or streams (gRPC) carried
    pub requests: u64,
    pub lifetime_us: u64,
    /// TCP connect time (SYN sent to established), before any TLS or h2 handshake
    pub connect_us: u64,
    /// TCP_INFO read just before close; absent if the kernel would not say
    pub tcp: Option<TcpInfo>,
    /// HTTP/1.1 layers (HTTP/1.1 connections, ledger on)
    pub http1: Option<Http1Counts>,
    /// h2 layers per direction (gRPC connections, ledger on)
    pub h2: Option<Duplex<H2Counts>>,
    /// HTTP/3 and QUIC layers (h3 connections)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h3: Option<super::H3Record>,
    /// TLS connections: handshake time and record overhead (socket bytes - plaintext)
    pub tls: Option<TlsCounts>,
    /// the close exchange, after the snapshot every other figure of the record is taken at
    pub close: Option<CloseRecord>,
    /// 0: the record of one connection; n: the sums of n connections folded together (past
    /// `ConnSet::KEPT` connections), listed in no per-connection table
    #[serde(skip)]
    pub folded: u64,
}

impl ConnRecord {
    /// The connections this record stands for.
    pub fn weight(&self) -> u64 {
        self.folded.max(1)
    }

    /// What a fold keeps apart: records are summed only within one kind, so the figures that
    /// depend on it (IPv6 headers by endpoint, TCP timestamps, TCP_INFO coverage, drained
    /// closes, closes whose segments are known) stay exact.
    fn kind(&self) -> (usize, bool, bool, Option<(bool, bool)>) {
        (
            self.endpoint,
            self.tcp.is_some(),
            self.tcp.is_some_and(|t| t.timestamps),
            self.close.map(|c| (c.drained, c.segs_out.is_some())),
        )
    }

    /// Adds `o` to this fold.
    fn absorb(&mut self, o: &ConnRecord) {
        self.folded += o.weight();
        self.bytes_out += o.bytes_out;
        self.bytes_in += o.bytes_in;
        self.write_calls += o.write_calls;
        self.read_calls += o.read_calls;
        self.write_would_block += o.write_would_block;
        self.read_would_block += o.read_would_block;
        self.requests += o.requests;
        self.lifetime_us += o.lifetime_us;
        self.connect_us += o.connect_us;
        if let (Some(t), Some(u)) = (&mut self.tcp, &o.tcp) {
            t.segs_out += u.segs_out;
            t.segs_in += u.segs_in;
            t.data_segs_out += u.data_segs_out;
            t.data_segs_in += u.data_segs_in;
            t.retransmits += u.retransmits;
        }
        fn add<T: std::ops::AddAssign + Copy + Default>(a: &mut Option<T>, b: Option<T>) {
            if let Some(b) = b {
                *a.get_or_insert_with(T::default) += b;
            }
        }
        add(&mut self.http1, o.http1);
        add(&mut self.h2, o.h2);
        add(&mut self.h3, o.h3);
        add(&mut self.tls, o.tls);
        if let (Some(c), Some(d)) = (&mut self.close, &o.close) {
            let sum = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| a + b);
            c.bytes_out += d.bytes_out;
            c.bytes_in += d.bytes_in;
            c.segs_out = sum(c.segs_out, d.segs_out);
            c.segs_in = sum(c.segs_in, d.segs_in);
            c.data_segs_out = sum(c.data_segs_out, d.data_segs_out);
            c.data_segs_in = sum(c.data_segs_in, d.data_segs_in);
            c.duration_us += d.duration_us;
        }
    }
}

/// The connection records of a thread or a run: one per connection for the first `KEPT`, then
/// folded by kind, so that a run opening millions of connections (`--requests-per-conn`) holds
/// a bounded number of records while every sum stays exact. The connect times of folded
/// connections go into a histogram of their own.
#[derive(Debug, Default)]
pub struct ConnSet {
    pub kept: Vec<ConnRecord>,
    pub folded: Vec<ConnRecord>,
    /// the TCP connect times of the folded connections
    pub folded_connect: crate::stats::Latencies,
}

impl ConnSet {
    /// Records kept one per connection (per thread; a run merges its threads' sets).
    pub const KEPT: usize = 16_384;

    pub fn add(&mut self, rec: ConnRecord) {
        if self.kept.len() < Self::KEPT && rec.folded == 0 {
            self.kept.push(rec);
            return;
        }
        if rec.folded == 0 {
            self.folded_connect
                .record(std::time::Duration::from_micros(rec.connect_us));
        }
        let kind = rec.kind();
        match self.folded.iter_mut().find(|f| f.kind() == kind) {
            Some(f) => f.absorb(&rec),
            None => {
                let mut f = ConnRecord {
                    endpoint: rec.endpoint,
                    tcp: rec.tcp.map(|_| TcpInfo::default()),
                    // a fold of closes with known segments starts from 0 of each, one of
                    // unknown ones stays unknown
                    close: rec.close.map(|c| CloseRecord {
                        drained: c.drained,
                        segs_out: c.segs_out.map(|_| 0),
                        segs_in: c.segs_in.map(|_| 0),
                        data_segs_out: c.data_segs_out.map(|_| 0),
                        data_segs_in: c.data_segs_in.map(|_| 0),
                        ..CloseRecord::default()
                    }),
                    ..ConnRecord::default()
                };
                if let Some(t) = &mut f.tcp {
                    t.timestamps = kind.2;
                }
                f.absorb(&rec);
                self.folded.push(f);
            }
        }
    }

    pub fn merge(&mut self, other: ConnSet) {
        for rec in other.kept.into_iter().chain(other.folded) {
            self.add(rec);
        }
        self.folded_connect.merge(&other.folded_connect);
    }

    /// Every record, the kept ones first.
    pub fn into_records(self) -> (Vec<ConnRecord>, crate::stats::Latencies) {
        let mut all = self.kept;
        all.extend(self.folded);
        (all, self.folded_connect)
    }
}

/// What crossed a connection after its snapshot (taken when its last response had been read,
/// before the client began to close): our GOAWAY / close_notify and FIN, the peer's answer and
/// FIN. Counted apart so that per-request figures hold no close traffic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CloseRecord {
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// TCP_INFO after the close minus TCP_INFO at the snapshot (absent when either is)
    pub segs_out: Option<u64>,
    pub segs_in: Option<u64>,
    pub data_segs_out: Option<u64>,
    pub data_segs_in: Option<u64>,
    /// the peer's FIN was read within the bound; false: the close was cut off
    pub drained: bool,
    pub duration_us: u64,
}

/// The TLS layer of one connection (or summed over several).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsCounts {
    pub handshakes: u64,
    /// handshakes that resumed a session (the rest were full)
    pub resumed: u64,
    pub handshake_us: u64,
    /// the client's CPU inside the handshakes (its thread's time in their polls)
    pub handshake_cpu_us: u64,
    /// socket bytes until each handshake ended
    pub handshake_bytes_out: u64,
    pub handshake_bytes_in: u64,
    pub plaintext_out: u64,
    pub plaintext_in: u64,
    /// bytes on the socket beyond the plaintext: handshake, record headers, AEAD tags, alerts
    pub record_overhead_out: u64,
    pub record_overhead_in: u64,
}

impl std::ops::AddAssign for TlsCounts {
    fn add_assign(&mut self, o: TlsCounts) {
        self.handshakes += o.handshakes;
        self.resumed += o.resumed;
        self.handshake_us += o.handshake_us;
        self.handshake_cpu_us += o.handshake_cpu_us;
        self.handshake_bytes_out += o.handshake_bytes_out;
        self.handshake_bytes_in += o.handshake_bytes_in;
        self.plaintext_out += o.plaintext_out;
        self.plaintext_in += o.plaintext_in;
        self.record_overhead_out += o.record_overhead_out;
        self.record_overhead_in += o.record_overhead_in;
    }
}

/// What wirebench keeps of `TCP_INFO` for one connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TcpInfo {
    /// all segments sent, pure ACKs and retransmits included (tcpi_segs_out)
    pub segs_out: u64,
    /// all segments received (tcpi_segs_in)
    pub segs_in: u64,
    /// segments carrying payload sent (tcpi_data_segs_out)
    pub data_segs_out: u64,
    /// segments carrying payload received (tcpi_data_segs_in)
    pub data_segs_in: u64,
    /// segments retransmitted over the connection's life (tcpi_total_retrans)
    pub retransmits: u64,
    /// smoothed round-trip time, microseconds (tcpi_rtt)
    pub rtt_us: u64,
    /// send maximum segment size, bytes (tcpi_snd_mss)
    pub mss: u64,
    /// congestion window, segments (tcpi_snd_cwnd)
    pub cwnd: u64,
    /// the lowest RTT seen, microseconds (tcpi_min_rtt)
    pub min_rtt_us: u64,
    /// whether TCP timestamps were negotiated (12 option bytes on every segment)
    pub timestamps: bool,
}

/// HTTP/1.1 bytes by layer on one connection (or summed over several).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Http1Counts {
    pub requests: u64,
    pub responses: u64,
    /// start line + headers + blank line
    pub request_head_bytes: u64,
    pub request_body_bytes: u64,
    pub response_head_bytes: u64,
    /// payload, de-chunked
    pub response_body_bytes: u64,
    /// chunk size lines, CRLFs, last chunk and trailers
    pub chunk_framing_bytes: u64,
}

impl std::ops::AddAssign for Http1Counts {
    fn add_assign(&mut self, o: Http1Counts) {
        self.requests += o.requests;
        self.responses += o.responses;
        self.request_head_bytes += o.request_head_bytes;
        self.request_body_bytes += o.request_body_bytes;
        self.response_head_bytes += o.response_head_bytes;
        self.response_body_bytes += o.response_body_bytes;
        self.chunk_framing_bytes += o.chunk_framing_bytes;
    }
}

/// One value per direction of a connection: what we sent, what we received.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Duplex<T> {
    pub out: T,
    #[serde(rename = "in")]
    pub inbound: T,
}

impl<T: std::ops::AddAssign> std::ops::AddAssign for Duplex<T> {
    fn add_assign(&mut self, o: Duplex<T>) {
        self.out += o.out;
        self.inbound += o.inbound;
    }
}

/// Data calls on this thread's sockets: reads and writes that moved bytes (a read of EOF
/// counts), and those the kernel answered EAGAIN. Every socket read and write wirebench makes
/// goes through `net::Metered` (or the close drain), which counts them here per thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IoCalls {
    pub reads: u64,
    pub writes: u64,
    pub read_would_block: u64,
    pub write_would_block: u64,
    /// of `reads`, those an io_uring made (the loop's, `--io-loop auto`): no syscall of their
    /// own, the ring's `io_uring_enter` is in `syscalls`
    #[serde(default)]
    pub ring_reads: u64,
    /// socket bytes those calls moved (the `--interval` lines' bytes/s)
    #[serde(skip)]
    pub bytes_in: u64,
    #[serde(skip)]
    pub bytes_out: u64,
}

impl IoCalls {
    pub const ZERO: IoCalls = IoCalls {
        reads: 0,
        writes: 0,
        read_would_block: 0,
        write_would_block: 0,
        ring_reads: 0,
        bytes_in: 0,
        bytes_out: 0,
    };

    pub fn since(self, earlier: IoCalls) -> IoCalls {
        IoCalls {
            bytes_in: self.bytes_in.saturating_sub(earlier.bytes_in),
            bytes_out: self.bytes_out.saturating_sub(earlier.bytes_out),
            reads: self.reads.saturating_sub(earlier.reads),
            writes: self.writes.saturating_sub(earlier.writes),
            read_would_block: self
                .read_would_block
                .saturating_sub(earlier.read_would_block),
            write_would_block: self
                .write_would_block
                .saturating_sub(earlier.write_would_block),
            ring_reads: self.ring_reads.saturating_sub(earlier.ring_reads),
        }
    }

    pub fn plus(self, o: IoCalls) -> IoCalls {
        IoCalls {
            bytes_in: self.bytes_in + o.bytes_in,
            bytes_out: self.bytes_out + o.bytes_out,
            reads: self.reads + o.reads,
            writes: self.writes + o.writes,
            read_would_block: self.read_would_block + o.read_would_block,
            write_would_block: self.write_would_block + o.write_would_block,
            ring_reads: self.ring_reads + o.ring_reads,
        }
    }

    /// The calls that were syscalls of their own (a ring's reads are not).
    pub fn syscalls(self) -> u64 {
        self.reads.saturating_sub(self.ring_reads)
            + self.writes
            + self.read_would_block
            + self.write_would_block
    }
}

#[cfg(test)]
mod fold_tests {
    use super::*;

    #[test]
    fn a_rings_reads_are_reads_but_not_syscalls() {
        let io = IoCalls {
            reads: 10,
            writes: 10,
            read_would_block: 2,
            ring_reads: 7,
            ..IoCalls::ZERO
        };
        assert_eq!(io.syscalls(), 3 + 10 + 2);
        let later = io.plus(io);
        assert_eq!(later.since(io), io);
        assert_eq!(later.syscalls(), 30);
    }

    fn rec(i: u64) -> ConnRecord {
        ConnRecord {
            endpoint: (i % 2) as usize,
            local_port: i as u16,
            bytes_out: 100 + i,
            bytes_in: 200 + 2 * i,
            write_calls: 3,
            read_calls: 4,
            requests: 1 + i % 3,
            connect_us: 50 + i % 7,
            tcp: (!i.is_multiple_of(5)).then_some(TcpInfo {
                segs_out: 5,
                segs_in: 6,
                data_segs_out: 2,
                data_segs_in: 3,
                retransmits: i % 2,
                rtt_us: 40,
                mss: 65483,
                cwnd: 10,
                min_rtt_us: 30,
                timestamps: i.is_multiple_of(3),
            }),
            tls: Some(TlsCounts {
                handshakes: 1,
                resumed: i % 2,
                handshake_us: 300,
                ..TlsCounts::default()
            }),
            close: Some(CloseRecord {
                bytes_out: 1,
                bytes_in: 2,
                // TCP_INFO read at both ends of the close, but for every seventh
                segs_out: (!i.is_multiple_of(7)).then_some(2),
                segs_in: (!i.is_multiple_of(7)).then_some(3),
                drained: !i.is_multiple_of(4),
                ..CloseRecord::default()
            }),
            ..ConnRecord::default()
        }
    }

    #[test]
    fn records_past_the_limit_fold_into_exact_sums_by_kind() {
        let n = ConnSet::KEPT as u64 + 5_000;
        let mut a = ConnSet::default();
        let mut b = ConnSet::default();
        for i in 0..n {
            // two threads' sets, merged as a run merges them
            if i % 2 == 0 { &mut a } else { &mut b }.add(rec(i));
        }
        a.merge(b);
        let (all, folded_connect) = a.into_records();
        let kept = all.iter().filter(|r| r.folded == 0).count();
        assert!(all.len() < ConnSet::KEPT + 64, "{} records held", all.len());
        assert_eq!(kept, ConnSet::KEPT);
        let weight: u64 = all.iter().map(ConnRecord::weight).sum();
        assert_eq!(weight, n, "every connection counted once");
        assert_eq!(folded_connect.count, n - ConnSet::KEPT as u64);
        let sum = |f: fn(&ConnRecord) -> u64| all.iter().map(f).sum::<u64>();
        let want = |f: fn(&ConnRecord) -> u64| (0..n).map(|i| f(&rec(i))).sum::<u64>();
        for f in [
            (|r: &ConnRecord| r.bytes_out) as fn(&ConnRecord) -> u64,
            |r| r.bytes_in,
            |r| r.requests,
            |r| r.connect_us,
            |r| r.tcp.map_or(0, |t| t.segs_out + t.retransmits),
            |r| r.tls.map_or(0, |t| t.resumed + t.handshakes),
            |r| r.close.map_or(0, |c| c.bytes_in),
            // a fold of closes with known segments keeps their sum (it began at None once)
            |r| r.close.and_then(|c| c.segs_out).unwrap_or(0),
            |r| r.close.and_then(|c| c.segs_in).unwrap_or(0),
        ] {
            assert_eq!(sum(f), want(f));
        }
        // what the fold keeps apart stays countable
        let with = |pred: fn(&ConnRecord) -> bool| -> u64 {
            all.iter().filter(|r| pred(r)).map(ConnRecord::weight).sum()
        };
        let truth =
            |pred: fn(&ConnRecord) -> bool| (0..n).filter(|&i| pred(&rec(i))).count() as u64;
        for pred in [
            (|r: &ConnRecord| r.tcp.is_none()) as fn(&ConnRecord) -> bool,
            |r| r.tcp.is_some_and(|t| t.timestamps),
            |r| r.close.is_some_and(|c| c.drained),
            |r| r.close.is_some_and(|c| c.segs_out.is_none()),
            |r| r.endpoint == 1,
        ] {
            assert_eq!(with(pred), truth(pred));
        }
    }
}
