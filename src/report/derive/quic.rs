//! The figures of `wire.h3` from the sums over a run's HTTP/3 connections (or over merged
//! runs'): every per-request figure is a sum over those connections divided by the requests
//! written on them, every per-handshake figure a sum divided by the handshakes; and the
//! on-the-wire bytes per request of TCP and QUIC connections alike.

use super::per;
use crate::report::quic::{
    H3FrameRate, H3Wire, Http3Figures, QuicFigures, QuicFrameRate, QuicHandshake, UdpFigures,
    ip_udp_header_bytes,
};
use crate::stats::{ConnRecord, H3Record, QuicFrames};
use wirebench_wire::h3::counts::H3Counts;
use wirebench_wire::h3::head::FrameType;
use wirebench_wire::quic::{FrameKind, PacketType, QuicCounts};

/// A record's UDP datagrams each way: our socket's count (a GSO send or GRO receive counted by
/// its segments), or quinn's where the record has none (reports from before it was kept).
pub(in crate::report) fn datagrams(h: &H3Record) -> (u64, u64) {
    if h.datagrams_out + h.datagrams_in > 0 {
        (h.datagrams_out, h.datagrams_in)
    } else {
        (h.quic.datagrams_out, h.quic.datagrams_in)
    }
}

/// What `wire.h3` is computed from: counts summed over the HTTP/3 connections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in crate::report) struct H3Sums {
    /// requests written on the connections: the denominator
    pub requests: u64,
    pub totals: H3Record,
    /// our socket's UDP payload bytes
    pub udp_bytes_out: u64,
    pub udp_bytes_in: u64,
    pub ip_udp_header_bytes_out: u64,
    pub ip_udp_header_bytes_in: u64,
}

impl std::ops::AddAssign for H3Sums {
    fn add_assign(&mut self, o: H3Sums) {
        self.requests += o.requests;
        self.totals += o.totals;
        self.udp_bytes_out += o.udp_bytes_out;
        self.udp_bytes_in += o.udp_bytes_in;
        self.ip_udp_header_bytes_out += o.ip_udp_header_bytes_out;
        self.ip_udp_header_bytes_in += o.ip_udp_header_bytes_in;
    }
}

impl H3Sums {
    /// The connections of `conns` with an HTTP/3 record, summed (None: there is none);
    /// `ipv6`: whether each endpoint is an IPv6 address.
    pub(in crate::report) fn of(conns: &[ConnRecord], ipv6: &[bool]) -> Option<H3Sums> {
        let mut sums: Option<H3Sums> = None;
        for c in conns {
            let Some(h) = &c.h3 else { continue };
            let v6 = ipv6.get(c.endpoint).copied().unwrap_or(false);
            let (dg_out, dg_in) = datagrams(h);
            *sums.get_or_insert_with(H3Sums::default) += H3Sums {
                requests: c.requests,
                totals: *h,
                udp_bytes_out: c.bytes_out,
                udp_bytes_in: c.bytes_in,
                ip_udp_header_bytes_out: ip_udp_header_bytes(dg_out, v6),
                ip_udp_header_bytes_in: ip_udp_header_bytes(dg_in, v6),
            };
        }
        sums
    }

    /// The sums a report's `wire.h3` was computed from (what a merge adds up).
    pub(in crate::report) fn of_report(w: &H3Wire) -> H3Sums {
        H3Sums {
            requests: w.requests,
            totals: w.totals,
            udp_bytes_out: w.udp_bytes_out,
            udp_bytes_in: w.udp_bytes_in,
            ip_udp_header_bytes_out: w.ip_udp_header_bytes_out,
            ip_udp_header_bytes_in: w.ip_udp_header_bytes_in,
        }
    }

    /// The sums of several reports' `wire.h3` (None: none has one).
    pub(in crate::report) fn merged<'a>(
        all: impl IntoIterator<Item = Option<&'a H3Wire>>,
    ) -> Option<H3Sums> {
        all.into_iter().flatten().fold(None, |acc, w| {
            let mut a = acc.unwrap_or_default();
            a += H3Sums::of_report(w);
            Some(a)
        })
    }

    /// UDP payload + estimated IP/UDP headers, out and in: the on-the-wire numerators.
    pub(in crate::report) fn wire_bytes(&self) -> (u64, u64) {
        (
            self.udp_bytes_out + self.ip_udp_header_bytes_out,
            self.udp_bytes_in + self.ip_udp_header_bytes_in,
        )
    }

    /// What QUIC itself put in the UDP payload each way: the payload less the bytes of the
    /// HTTP/3 layer (its frames, the stream types, and the bytes read off the server's QPACK
    /// streams and the streams dropped).
    pub(in crate::report) fn quic_overhead(&self) -> (u64, u64) {
        let t = &self.totals;
        let out = t.frames_out.total_bytes() + t.stream_type_bytes_out;
        let inbound = t.frames_in.total_bytes()
            + t.stream_type_bytes_in
            + t.qpack_stream_bytes_in
            + t.ignored_stream_bytes_in;
        (
            self.udp_bytes_out.saturating_sub(out),
            self.udp_bytes_in.saturating_sub(inbound),
        )
    }

    /// Every figure of `wire.h3`.
    pub(in crate::report) fn figures(self) -> H3Wire {
        let t = &self.totals;
        let q = &t.quic;
        let r = |n: u64| per(n, self.requests);
        let (wire_out, wire_in) = self.wire_bytes();
        let (overhead_out, overhead_in) = self.quic_overhead();
        let mean = |sum: u64| per(sum, q.connections);
        let per_handshake = |n: u64| per(n, t.handshakes);
        let (dg_out, dg_in) = datagrams(t);
        // the ledger's decryption ran when it saw datagrams
        let decrypted = t.sniffed_out.datagrams + t.sniffed_in.datagrams > 0;
        let (so, si) = (&t.sniffed_out, &t.sniffed_in);
        let sniffed = |f: fn(&QuicCounts) -> u64| {
            if decrypted {
                (r(f(so)), r(f(si)))
            } else {
                (None, None)
            }
        };
        let (header_out, header_in) = sniffed(|c| c.header_bytes);
        let (tag_out, tag_in) = sniffed(|c| c.tag_bytes);
        let (padding_out, padding_in) = sniffed(QuicCounts::padding_bytes);
        let (read_out, read_in) = sniffed(|c| c.datagram_bytes);
        H3Wire {
            requests: self.requests,
            totals: self.totals,
            udp_bytes_out: self.udp_bytes_out,
            udp_bytes_in: self.udp_bytes_in,
            ip_udp_header_bytes_out: self.ip_udp_header_bytes_out,
            ip_udp_header_bytes_in: self.ip_udp_header_bytes_in,
            udp: UdpFigures {
                datagrams_out_per_request: r(dg_out),
                datagrams_in_per_request: r(dg_in),
                bytes_out_per_request: r(self.udp_bytes_out),
                bytes_in_per_request: r(self.udp_bytes_in),
                wire_bytes_out_per_request: r(wire_out),
                wire_bytes_in_per_request: r(wire_in),
                bytes_per_datagram_out: per(self.udp_bytes_out, dg_out),
                bytes_per_datagram_in: per(self.udp_bytes_in, dg_in),
            },
            quic: QuicFigures {
                packets_out_per_request: r(q.packets_out),
                packets_lost: q.packets_lost,
                loss_percent: per(q.packets_lost, q.packets_out).map(|x| x * 100.0),
                bytes_lost_per_request: r(q.bytes_lost),
                congestion_events: q.congestion_events,
                frames_out: if decrypted {
                    sniffed_frames(so, self.requests)
                } else {
                    quic_frames(&q.frames_out, self.requests)
                },
                frames_in: if decrypted {
                    sniffed_frames(si, self.requests)
                } else {
                    quic_frames(&q.frames_in, self.requests)
                },
                decrypted,
                packet_header_bytes_out_per_request: header_out,
                packet_header_bytes_in_per_request: header_in,
                aead_tag_bytes_out_per_request: tag_out,
                aead_tag_bytes_in_per_request: tag_in,
                padding_bytes_out_per_request: padding_out,
                padding_bytes_in_per_request: padding_in,
                decrypted_bytes_out_per_request: read_out,
                decrypted_bytes_in_per_request: read_in,
                undecryptable_packets_out: so.undecryptable_packets(),
                undecryptable_packets_in: si.undecryptable_packets(),
                packets_by_type_out: packet_types(so),
                packets_by_type_in: packet_types(si),
                overhead_out_per_request: r(overhead_out),
                overhead_in_per_request: r(overhead_in),
                rtt_ms: mean(q.rtt_us).map(|us| us / 1000.0),
                min_rtt_ms: mean(q.min_rtt_us).map(|us| us / 1000.0),
                cwnd_bytes: mean(q.cwnd),
            },
            http3: Http3Figures {
                frames_out: h3_frames(&t.frames_out, self.requests),
                frames_in: h3_frames(&t.frames_in, self.requests),
                frame_bytes_out_per_request: r(t.frames_out.total_bytes()),
                frame_bytes_in_per_request: r(t.frames_in.total_bytes()),
                qpack_section_bytes_out_per_request: r(t.qpack_out.section_bytes),
                qpack_section_bytes_in_per_request: r(t.qpack_in.section_bytes),
                field_bytes_out_per_request: r(t.qpack_out.field_bytes),
                field_bytes_in_per_request: r(t.qpack_in.field_bytes),
                qpack_ratio_out: per(t.qpack_out.section_bytes, t.qpack_out.field_bytes),
                qpack_ratio_in: per(t.qpack_in.section_bytes, t.qpack_in.field_bytes),
                stream_type_bytes_out_per_request: r(t.stream_type_bytes_out),
                stream_type_bytes_in_per_request: r(t.stream_type_bytes_in),
                qpack_stream_bytes_in_per_request: r(t.qpack_stream_bytes_in),
                ignored_stream_bytes_in_per_request: r(t.ignored_stream_bytes_in),
            },
            handshake: QuicHandshake {
                handshakes: t.handshakes,
                full: t.handshakes.saturating_sub(t.resumed),
                resumed: t.resumed,
                zero_rtt: t.zero_rtt,
                zero_rtt_accepted: t.zero_rtt_accepted,
                average_ms: per_handshake(t.handshake_us).map(|us| us / 1000.0),
                bytes_out: per_handshake(t.handshake_bytes_out),
                bytes_in: per_handshake(t.handshake_bytes_in),
                datagrams_out: per_handshake(t.handshake_datagrams_out),
                datagrams_in: per_handshake(t.handshake_datagrams_in),
            },
        }
    }
}

/// The numerators and denominators of the on-the-wire bytes per request: payload and
/// estimated headers of the TCP connections with TCP_INFO (IP + TCP) and of the QUIC
/// connections (IP + UDP), over the requests written on them.
pub(in crate::report) struct OnWire<'a> {
    pub tcp_requests: u64,
    pub tcp_out: u64,
    pub tcp_in: u64,
    pub h3: Option<&'a H3Sums>,
}

impl OnWire<'_> {
    /// Bytes on the wire per request, out or in.
    pub(in crate::report) fn per_request(&self, out: bool) -> Option<f64> {
        let (h3_out, h3_in) = self.h3.map_or((0, 0), H3Sums::wire_bytes);
        let h3_requests = self.h3.map_or(0, |h| h.requests);
        let bytes = if out {
            self.tcp_out + h3_out
        } else {
            self.tcp_in + h3_in
        };
        per(bytes, self.tcp_requests + h3_requests)
    }
}

/// Every QUIC frame type's count and count per request.
fn quic_frames(f: &QuicFrames, requests: u64) -> Vec<QuicFrameRate> {
    f.named()
        .into_iter()
        .map(|(name, count)| QuicFrameRate {
            frame: name.to_string(),
            count,
            per_request: per(count, requests),
            bytes_per_request: None,
            data_bytes_per_request: None,
        })
        .collect()
}

/// Every QUIC frame type the ledger's decryption counted: count, bytes and data bytes per
/// request (PADDING's count is its runs).
fn sniffed_frames(c: &QuicCounts, requests: u64) -> Vec<QuicFrameRate> {
    FrameKind::ALL
        .iter()
        .map(|&k| {
            let f = c.frame(k);
            QuicFrameRate {
                frame: k.name().to_string(),
                count: f.count,
                per_request: per(f.count, requests),
                bytes_per_request: per(f.bytes, requests),
                data_bytes_per_request: per(f.data_bytes, requests),
            }
        })
        .collect()
}

/// QUIC packets by type (the ledger's decryption).
fn packet_types(c: &QuicCounts) -> Vec<(String, u64)> {
    PacketType::ALL
        .iter()
        .map(|&t| (t.name().to_string(), c.packets(t)))
        .collect()
}

/// Every HTTP/3 frame type's count, and its count, head and payload bytes per request.
fn h3_frames(c: &H3Counts, requests: u64) -> Vec<H3FrameRate> {
    FrameType::ALL
        .iter()
        .map(|&t| {
            let f = c.frame(t);
            H3FrameRate {
                frame: t.name().to_string(),
                count: f.count,
                per_request: per(f.count, requests),
                header_bytes_per_request: per(f.header_bytes, requests),
                payload_bytes_per_request: per(f.payload_bytes, requests),
            }
        })
        .collect()
}
