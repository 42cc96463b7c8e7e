//! Every derived figure against numbers computed by hand. Latencies are recorded exactly
//! (count, sum, min, max); percentiles come from the HDR histogram, 3 significant digits,
//! so those are checked within 0.1% (`hdr`).

use std::time::Duration;

use super::*;
use crate::config::{Endpoint, Proto};
use crate::outcome::{Failure, FailureKind, StatusKey};
use crate::stats::TcpInfo;
use crate::stats::perf::KernelCounts;
use crate::stats::{At, CpuTimes, Stats, Timeline};
use crate::stats::{Memory, WindowCost};
use wirebench_wire::h2sniff::{FrameCount, FrameType};

// The helpers marked pub(super) are shared with the tests of `compare`.

/// A run that measured nothing, over a 1 s window: each test fills in what it checks.
pub(super) fn run(proto: Proto) -> ProtoRun {
    ProtoRun {
        proto,
        clients: 1,
        conns: 1,
        threads: 1,
        stats: Stats::default(),
        window_start: std::time::Instant::now(),
        elapsed: Duration::from_secs(1),
        cost: WindowCost::default(),
        server_cpu: None,
        sample: None,
        interrupted: false,
        rate: None,
        pacer_timer: None,
        memory: None,
    }
}

/// Endpoint 0 is IPv4, endpoint 1 IPv6 (literals: nothing is resolved).
pub(super) fn endpoints() -> Vec<Endpoint> {
    ["http://127.0.0.1:2379", "http://[::1]:2379"]
        .iter()
        .map(|u| Endpoint::parse(u).expect("a literal address"))
        .collect()
}

pub(super) fn report(run: &ProtoRun) -> RunReport {
    RunReport::from_run(run, &endpoints(), &[], false)
}

/// At endpoint `endpoint`, `s` seconds into the window.
fn at(endpoint: usize, s: u64) -> At {
    At {
        endpoint,
        offset: Duration::from_secs(s),
    }
}

/// `n` successful requests of `latency` each, at endpoint 0, in the first second.
pub(super) fn ok(stats: &mut Stats, n: u64, latency: Duration) {
    for _ in 0..n {
        stats.record_ok(at(0, 0), latency, StatusKey::Http(200));
    }
}

/// One successful request of each of `ms` milliseconds, at endpoint 0.
pub(super) fn ok_ms(stats: &mut Stats, ms: impl IntoIterator<Item = u64>) {
    for ms in ms {
        ok(stats, 1, Duration::from_millis(ms));
    }
}

pub(super) fn conn(
    endpoint: usize,
    requests: u64,
    bytes_out: u64,
    bytes_in: u64,
    tcp: Option<TcpInfo>,
) -> ConnRecord {
    ConnRecord {
        endpoint,
        requests,
        bytes_out,
        bytes_in,
        tcp,
        ..ConnRecord::default()
    }
}

pub(super) fn tcp(segs_out: u64, segs_in: u64, timestamps: bool) -> TcpInfo {
    TcpInfo {
        segs_out,
        segs_in,
        timestamps,
        ..TcpInfo::default()
    }
}

/// `got` is `want` within HDR's 3 significant digits.
#[track_caller]
pub(super) fn hdr(got: f64, want: f64) {
    assert!(
        (got - want).abs() <= want * 1e-3,
        "{got} is not {want} within 0.1%"
    );
}

/// `got` is `want` up to float rounding (a square root).
#[track_caller]
fn close(got: f64, want: f64) {
    assert!((got - want).abs() <= want.abs() * 1e-12, "{got} != {want}");
}

/// The nine percentiles of `got`, each `want` within 0.1%.
#[track_caller]
fn hdr_all(got: &[Percentile], want: [f64; 9]) {
    let ps: Vec<f64> = got.iter().map(|p| p.percentile).collect();
    assert_eq!(ps, PERCENTILES);
    for (g, w) in got.iter().zip(want) {
        hdr(g.latency_ms, w);
    }
}

#[test]
fn summary_counts_rates_and_exact_latency() {
    let mut r = run(Proto::Http);
    (r.clients, r.conns, r.threads, r.interrupted) = (4, 4, 2, true);
    r.elapsed = Duration::from_secs(2);
    r.sample = Some(serde_json::json!({"header": {"revision": "7"}}));
    // 8 OK of 1, 2, ... 8 ms; 2 failed, one of them before it was written (9 written)
    ok_ms(&mut r.stats, 1..=8);
    r.stats
        .record_failures(at(0, 1), 2, Failure::new(FailureKind::Timeout));
    let st = &mut r.stats;
    (st.warmup, st.written, st.retried, st.reauthenticated) = (5, 9, 3, 1);
    st.conns = vec![conn(0, 14, 100, 200, None)];
    let rep = report(&r);
    assert_eq!(
        (
            rep.proto,
            rep.title,
            rep.clients,
            rep.connections,
            rep.threads
        ),
        ("http", "HTTP/1.1", 4, 4, 2)
    );
    assert!(rep.interrupted);
    let s = &rep.summary;
    // count = ok + failed = 8 + 2
    assert_eq!((s.count, s.ok, s.failed), (10, 8, 2));
    assert_eq!(
        (s.warmup_requests, s.written, s.retried, s.reauthenticated),
        (5, 9, 3, 1)
    );
    assert_eq!(s.total_s, 2.0);
    assert_eq!((s.fastest_ms, s.slowest_ms), (1.0, 8.0));
    // (1 + ... + 8) / 8 = 36 / 8
    assert_eq!(s.average_ms, 4.5);
    // population variance of 1..=8 is (8² - 1) / 12 = 5.25 ms²
    close(s.stddev_ms, 5.25f64.sqrt());
    // count / total_s = 10 / 2; ok / total_s = 8 / 2
    assert_eq!((s.requests_per_sec, s.ok_per_sec), (5.0, 4.0));
    assert_eq!(rep.per_connection.len(), 1);
    assert_eq!(rep.per_connection[0].requests, 14);
    assert_eq!(rep.sample_response, r.sample);
}

#[test]
fn an_empty_run_reports_zeros_and_absences() {
    let mut r = run(Proto::Grpc);
    r.elapsed = Duration::ZERO;
    let rep = report(&r);
    let s = &rep.summary;
    assert_eq!((rep.proto, rep.title), ("grpc", "gRPC"));
    // no latency: 0, not the u64::MAX the empty minimum starts from
    assert_eq!(
        (s.fastest_ms, s.slowest_ms, s.average_ms, s.stddev_ms),
        (0.0, 0.0, 0.0, 0.0)
    );
    // a zero window gives no rate rather than a division by zero
    assert_eq!((s.requests_per_sec, s.ok_per_sec), (0.0, 0.0));
    assert!(rep.histogram.is_empty());
    assert!(rep.latency_distribution.is_empty());
    assert_eq!(rep.percentile_ms(50.0), 0.0);
    assert!(rep.status_distribution.is_empty() && rep.error_distribution.is_empty());
    assert!(rep.per_endpoint.is_empty() && rep.timeline.is_empty());
    assert!(rep.connect_times.is_none() && rep.memory.is_none());
    assert!(rep.open_loop.is_none());
    // nothing written: every per-request figure is 0, none divides by zero
    assert_eq!(rep.cost.requests, 0);
    assert_eq!(rep.cost.client_cpu_us_per_request, 0.0);
    assert_eq!(rep.wire.connections_opened, 0);
    assert_eq!(rep.wire.requests_per_connection, 0.0);
    assert_eq!(rep.wire.bytes_out_per_request, 0.0);
    assert_eq!(rep.wire.segments_out_per_request, 0.0);
    assert_eq!(rep.wire.wire_bytes_out_per_request, 0.0);
    assert_eq!(rep.wire.connect_error, None);
    assert!(rep.wire.layers.is_none() && rep.wire.tls.is_none());
    assert_eq!(rep.wire.close.connections, 0);
}

#[test]
fn latency_distribution_is_the_hdr_percentiles() {
    let mut r = run(Proto::Http);
    ok_ms(&mut r.stats, 1..=10);
    let rep = report(&r);
    // of 10 sorted latencies, percentile p is the ceil(p/100 × 10)-th:
    // p10 1st, p25 3rd (2.5), p50 5th, p75 8th (7.5), p90 9th, p95 and up the 10th
    hdr_all(
        &rep.latency_distribution,
        [1.0, 3.0, 5.0, 8.0, 9.0, 10.0, 10.0, 10.0, 10.0],
    );
    hdr(rep.percentile_ms(50.0), 5.0);
    hdr(rep.percentile_ms(99.0), 10.0);
    // a percentile that is not in the list reads 0
    assert_eq!(rep.percentile_ms(42.0), 0.0);
}

/// The count of each bucket of a histogram.
fn counts(b: &[Bucket]) -> Vec<u64> {
    b.iter().map(|b| b.count).collect()
}

#[test]
fn histogram_has_eleven_marks_from_fastest_to_slowest() {
    let mut r = run(Proto::Http);
    ok_ms(&mut r.stats, 1..=10);
    let rep = report(&r);
    // fastest 1 ms, slowest 10 ms: width (10 - 1) / 10 = 0.9 ms
    let marks: Vec<f64> = rep.histogram.iter().map(|b| b.mark_ms).collect();
    assert_eq!(
        marks,
        [1.0, 1.9, 2.8, 3.7, 4.6, 5.5, 6.4, 7.3, 8.2, 9.1, 10.0]
    );
    let c = counts(&rep.histogram);
    assert_eq!(c.iter().sum::<u64>(), 10);
    // 2 ms under 2.8, 3 under 3.7, ... 9 under 9.1, 10 (the slowest) under 10
    assert_eq!(c[2..], [1; 9]);
    // 1 ms, the fastest, under the first mark (ghz: latencies at or below each mark)
    assert_eq!(c[..2], [1, 0]);
}

#[test]
fn histogram_counts_the_fastest_under_the_first_mark() {
    let mut r = run(Proto::Http);
    ok_ms(&mut r.stats, 1..=10);
    let rep = report(&r);
    // ghz: the first mark is the fastest latency and counts it (latencies <= mark)
    assert_eq!(counts(&rep.histogram), [1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1]);
}

#[test]
fn statuses_and_errors_most_frequent_first() {
    let mut r = run(Proto::Grpc);
    let st = &mut r.stats;
    st.statuses.insert(StatusKey::Grpc(0), 7);
    st.statuses.insert(StatusKey::Grpc(14), 2);
    st.statuses.insert(StatusKey::Http(500), 2);
    st.statuses.insert(
        StatusKey::GrpcFromHttp {
            code: 14,
            http: 503,
        },
        3,
    );
    st.errors.insert(
        Failure::with(FailureKind::Etcd, "etcdserver: too many requests"),
        5,
    );
    st.errors.insert(Failure::new(FailureKind::Timeout), 3);
    st.errors.insert(Failure::new(FailureKind::Closed), 3);
    st.errors
        .insert(Failure::with(FailureKind::HttpStatus, "500"), 1);
    let rep = report(&r);
    let statuses: Vec<(&str, u64)> = rep
        .status_distribution
        .iter()
        .map(|s| (s.status.as_str(), s.count))
        .collect();
    // by count; the tie (2 and 2) keeps the key order: HTTP statuses before gRPC codes
    assert_eq!(
        statuses,
        [
            ("OK", 7),
            ("UNAVAILABLE (HTTP 503)", 3),
            ("500", 2),
            ("UNAVAILABLE", 2)
        ]
    );
    let errors: Vec<(&str, Option<&str>, u64)> = rep
        .error_distribution
        .iter()
        .map(|e| (e.kind, e.message.as_deref(), e.count))
        .collect();
    // by count, a tie by kind name ("closed" < "timeout")
    assert_eq!(
        errors,
        [
            ("etcd", Some("etcdserver: too many requests"), 5),
            ("closed", None, 3),
            ("timeout", None, 3),
            ("http_status", Some("500"), 1),
        ]
    );
}

/// 50 requests measured (30 ok + 20 failed, 10 of those never written: no connection), 40
/// written in the window, 80 on the wire (warmup included): three different numbers, so a
/// figure with the wrong denominator shows.
fn costly_run() -> ProtoRun {
    let mut r = run(Proto::Http);
    (r.stats.ok, r.stats.failed, r.stats.written) = (30, 20, 40);
    r.stats.conns = vec![conn(0, 80, 8000, 16000, None)];
    r.cost = WindowCost {
        cpu: CpuTimes {
            user_us: 300,
            sys_us: 100,
        },
        kernel: KernelCounts {
            syscalls: Some(400),
            context_switches: Some(80),
            instructions: Some(4_000_000),
            cycles: Some(6_000_000),
        },
        outside: KernelCounts {
            syscalls: Some(30),
            context_switches: Some(3),
            instructions: None,
            cycles: None,
        },
        io: IoCalls {
            reads: 60,
            writes: 40,
            read_would_block: 20,
            write_would_block: 20,
        },
        kernel_unavailable: None,
    };
    r
}

#[test]
fn cost_divides_by_requests_written() {
    let rep = report(&costly_run());
    assert_eq!(
        (
            rep.summary.count,
            rep.summary.written,
            rep.wire.requests_on_wire
        ),
        (50, 40, 80)
    );
    let c = &rep.cost;
    assert_eq!(c.requests, 40);
    assert_eq!((c.client_cpu_user_us, c.client_cpu_sys_us), (300, 100));
    // (300 + 100) µs / 40 written (by count: 8, by wire: 5)
    assert_eq!(c.client_cpu_us_per_request, 10.0);
    // 400 / 40; 80 / 40; 4e6 / 40; 6e6 / 40
    assert_eq!(
        (c.syscalls, c.syscalls_per_request),
        (Some(400), Some(10.0))
    );
    assert_eq!(
        (c.context_switches, c.context_switches_per_request),
        (Some(80), Some(2.0))
    );
    assert_eq!(
        (c.instructions, c.instructions_per_request),
        (Some(4_000_000), Some(100_000.0))
    );
    assert_eq!(
        (c.cycles, c.cycles_per_request),
        (Some(6_000_000), Some(150_000.0))
    );
    assert_eq!(c.kernel_counters_unavailable, None);
    // outside the window: passed through, not per request
    assert_eq!(
        (c.syscalls_outside_window, c.context_switches_outside_window),
        (Some(30), Some(3))
    );
    assert_eq!(c.data_calls, costly_run().cost.io);
    // 60 / 40, 40 / 40, 20 / 40, 20 / 40
    assert_eq!(
        (
            c.reads_per_request,
            c.writes_per_request,
            c.read_would_block_per_request,
            c.write_would_block_per_request
        ),
        (1.5, 1.0, 0.5, 0.5)
    );
    // (400 syscalls - 140 data calls, the 40 would-block ones included) / 40
    assert_eq!(c.other_syscalls_per_request, Some(6.5));
    assert_eq!(
        (
            c.server_cpu_ns,
            c.server_cpu_us_per_request,
            &c.server_cpu_error
        ),
        (None, None, &None)
    );
}

#[test]
fn kernel_counts_missing_are_null_not_zero() {
    let mut r = costly_run();
    r.cost.kernel = KernelCounts::default();
    r.cost.outside = KernelCounts::default();
    r.cost.kernel_unavailable = Some("perf_event_paranoid is 3".into());
    let rep = report(&r);
    let c = &rep.cost;
    assert_eq!((c.syscalls, c.syscalls_per_request), (None, None));
    assert_eq!(
        (c.context_switches, c.context_switches_per_request),
        (None, None)
    );
    assert_eq!((c.instructions, c.instructions_per_request), (None, None));
    assert_eq!((c.cycles, c.cycles_per_request), (None, None));
    assert_eq!(
        (c.syscalls_outside_window, c.context_switches_outside_window),
        (None, None)
    );
    assert_eq!(c.other_syscalls_per_request, None);
    assert_eq!(
        c.kernel_counters_unavailable.as_deref(),
        Some("perf_event_paranoid is 3")
    );
    // the data calls are our own counts: still there, 60 / 40
    assert_eq!(c.reads_per_request, 1.5);
    let json = serde_json::to_value(c).expect("a plain struct serializes");
    for k in [
        "syscalls",
        "syscalls_per_request",
        "context_switches_per_request",
        "instructions_per_request",
        "cycles_per_request",
        "other_syscalls_per_request",
    ] {
        assert_eq!(json[k], Value::Null, "{k}");
    }

    // syscalls counted, instructions and cycles not (no hardware counters in a VM)
    let mut r = costly_run();
    (r.cost.kernel.instructions, r.cost.kernel.cycles) = (None, None);
    let c = report(&r).cost;
    assert_eq!(c.syscalls_per_request, Some(10.0));
    assert_eq!((c.instructions, c.instructions_per_request), (None, None));
    assert_eq!((c.cycles, c.cycles_per_request), (None, None));
}

#[test]
fn server_cpu_read_failed_or_absent() {
    // 2 ms over 40 written: 2_000_000 ns / 40 = 50_000 ns = 50 µs per request
    let mut r = costly_run();
    r.server_cpu = Some(Ok(Duration::from_millis(2)));
    let c = report(&r).cost;
    assert_eq!(c.server_cpu_ns, Some(2_000_000));
    assert_eq!(c.server_cpu_us_per_request, Some(50.0));
    assert_eq!(c.server_cpu_error, None);

    let msg = "--server-pid 42: cannot read its CPU clock";
    r.server_cpu = Some(Err(msg.into()));
    let c = report(&r).cost;
    assert_eq!((c.server_cpu_ns, c.server_cpu_us_per_request), (None, None));
    assert_eq!(c.server_cpu_error.as_deref(), Some(msg));

    r.server_cpu = None;
    let c = report(&r).cost;
    assert_eq!(
        (
            c.server_cpu_ns,
            c.server_cpu_us_per_request,
            c.server_cpu_error
        ),
        (None, None, None)
    );
}

/// Three connections carrying 40 requests:
/// A: endpoint 0 (IPv4), TCP timestamps, 20 requests;
/// B: endpoint 1 (IPv6), no timestamps, 10 requests;
/// C: endpoint 0, no TCP_INFO, 10 requests.
fn three_conns() -> Vec<ConnRecord> {
    let a = ConnRecord {
        write_calls: 20,
        read_calls: 40,
        write_would_block: 2,
        read_would_block: 10,
        tcp: Some(TcpInfo {
            data_segs_out: 10,
            data_segs_in: 20,
            retransmits: 1,
            ..tcp(15, 30, true)
        }),
        tls: Some(TlsCounts {
            handshakes: 1,
            handshake_us: 500,
            plaintext_out: 1800,
            plaintext_in: 3800,
            record_overhead_out: 200,
            record_overhead_in: 200,
        }),
        ..conn(0, 20, 2000, 4000, None)
    };
    let b = ConnRecord {
        write_calls: 10,
        read_calls: 20,
        read_would_block: 5,
        tcp: Some(TcpInfo {
            data_segs_out: 5,
            data_segs_in: 10,
            retransmits: 2,
            ..tcp(15, 15, false)
        }),
        tls: Some(TlsCounts {
            handshakes: 1,
            handshake_us: 700,
            plaintext_out: 900,
            plaintext_in: 1900,
            record_overhead_out: 100,
            record_overhead_in: 100,
        }),
        ..conn(1, 10, 1000, 2000, None)
    };
    let c = ConnRecord {
        write_calls: 10,
        read_calls: 20,
        write_would_block: 1,
        read_would_block: 5,
        ..conn(0, 10, 1000, 2000, None)
    };
    vec![a, b, c]
}

#[test]
fn wire_bytes_and_calls_cover_every_connection() {
    let mut r = run(Proto::Http);
    r.stats.conns = three_conns();
    (r.stats.reconnects, r.stats.connect_failures) = (2, 4);
    r.stats.connect_error = Some(Failure::with(FailureKind::Connect, "refused"));
    let w = report(&r).wire;
    assert_eq!((w.connections_opened, w.reconnects), (3, 2));
    assert_eq!(w.connect_failures, 4);
    assert_eq!(w.connect_error.as_deref(), Some("connect: refused"));
    // 20 + 10 + 10 requests, on 3 connections
    assert_eq!(w.requests_on_wire, 40);
    assert_eq!(w.requests_per_connection, 40.0 / 3.0);
    // 4000 B out, 8000 B in, 40 writes, 80 reads, over all 40 requests
    assert_eq!((w.bytes_out, w.bytes_in), (4000, 8000));
    assert_eq!(
        (w.bytes_out_per_request, w.bytes_in_per_request),
        (100.0, 200.0)
    );
    assert_eq!(
        (w.write_calls_per_request, w.read_calls_per_request),
        (1.0, 2.0)
    );
    // 2 + 0 + 1, 10 + 5 + 5
    assert_eq!((w.write_would_block, w.read_would_block), (3, 20));
    // summed over the connections that have TLS
    assert_eq!(
        w.tls,
        Some(TlsCounts {
            handshakes: 2,
            handshake_us: 1200,
            plaintext_out: 2700,
            plaintext_in: 5700,
            record_overhead_out: 300,
            record_overhead_in: 300,
        })
    );
}

#[test]
fn wire_segments_cover_only_connections_with_tcp_info() {
    let mut r = run(Proto::Http);
    r.stats.conns = three_conns();
    let w = report(&r).wire;
    // A and B have TCP_INFO: 30 of the 40 requests
    assert_eq!(w.requests_with_tcp_info, 30);
    assert_eq!(w.connections_without_tcp_info, 1);
    // 15 + 15 segments out, 30 + 15 in: / 30 (over all 40 it would read 0.75 and 1.125)
    assert_eq!((w.segments_out, w.segments_in), (30, 45));
    assert_eq!(
        (w.segments_out_per_request, w.segments_in_per_request),
        (1.0, 1.5)
    );
    // data segments 10 + 5 out, 20 + 10 in: / 30
    assert_eq!(
        (
            w.data_segments_out_per_request,
            w.data_segments_in_per_request
        ),
        (0.5, 1.0)
    );
    assert_eq!(w.retransmits, 3);
    // A (IPv4 + timestamps: 20 + 20 + 12 = 52 B): 15 out, 30 in;
    // B (IPv6, no timestamps: 40 + 20 = 60 B): 15 out, 15 in
    // out: 15 × 52 + 15 × 60 = 780 + 900; in: 30 × 52 + 15 × 60 = 1560 + 900
    assert_eq!(
        (w.ip_tcp_header_bytes_out, w.ip_tcp_header_bytes_in),
        (1680, 2460)
    );
    // (A + B socket bytes + headers) / 30: out (2000 + 1000 + 1680) / 30,
    // in (4000 + 2000 + 2460) / 30; C's bytes are left out with its requests
    assert_eq!(
        (w.wire_bytes_out_per_request, w.wire_bytes_in_per_request),
        (156.0, 282.0)
    );
}

#[test]
fn ip_tcp_header_bytes_by_family_and_timestamps() {
    // IPv4 20 + TCP 20, + 12 with timestamps; IPv6 40 + 20, + 12
    assert_eq!(ip_tcp_header_bytes(10, false, false), 400);
    assert_eq!(ip_tcp_header_bytes(10, false, true), 520);
    assert_eq!(ip_tcp_header_bytes(10, true, false), 600);
    assert_eq!(ip_tcp_header_bytes(10, true, true), 720);
    assert_eq!(ip_tcp_header_bytes(0, true, true), 0);
    // the family comes from the connection's endpoint: 10 segments each way, timestamps
    let headers = |endpoint: usize| {
        let mut r = run(Proto::Grpc);
        r.stats.conns = vec![conn(endpoint, 1, 0, 0, Some(tcp(10, 10, true)))];
        let w = report(&r).wire;
        (w.ip_tcp_header_bytes_out, w.ip_tcp_header_bytes_in)
    };
    assert_eq!(headers(0), (520, 520));
    assert_eq!(headers(1), (720, 720));
    // an index past the endpoint list counts as IPv4
    assert_eq!(headers(7), (520, 520));
}

#[test]
fn close_totals_sum_the_close_exchanges() {
    let closed = |bytes_out, bytes_in, segs: Option<(u64, u64)>, drained| CloseRecord {
        bytes_out,
        bytes_in,
        segs_out: segs.map(|s| s.0),
        segs_in: segs.map(|s| s.1),
        drained,
        ..CloseRecord::default()
    };
    let mut r = run(Proto::Grpc);
    r.stats.conns = vec![
        ConnRecord {
            close: Some(closed(40, 30, Some((3, 2)), true)),
            ..conn(0, 5, 500, 500, Some(tcp(10, 10, true)))
        },
        // its TCP_INFO was missing on one side: bytes counted, segments not
        ConnRecord {
            close: Some(closed(24, 0, None, false)),
            ..conn(0, 5, 500, 500, None)
        },
        ConnRecord {
            close: Some(closed(40, 31, Some((2, 4)), true)),
            ..conn(0, 5, 500, 500, Some(tcp(10, 10, true)))
        },
        // not closed by us (the run ended with it open)
        conn(0, 5, 500, 500, None),
    ];
    let w = report(&r).wire;
    // 3 closes, 2 drained; 40 + 24 + 40 B out, 30 + 0 + 31 B in; 3 + 2 segments out, 2 + 4 in
    assert_eq!((w.close.connections, w.close.drained), (3, 2));
    assert_eq!((w.close.bytes_out, w.close.bytes_in), (104, 61));
    assert_eq!((w.close.segments_out, w.close.segments_in), (5, 6));
    // the close is not in the connections' own figures
    assert_eq!((w.bytes_out, w.segments_out), (2000, 20));
}

#[test]
fn layer_totals_subtract_h2_setup_per_request_on_wire() {
    let dir = |setup_bytes, frame_header_bytes| {
        let mut d = H2Counts {
            setup_bytes,
            frame_header_bytes,
            ..H2Counts::default()
        };
        d.frames[FrameType::Headers as usize] = FrameCount {
            count: 10,
            bytes: 300,
        };
        d
    };
    let h2 = Duplex {
        out: H2Counts {
            preface_bytes: 24,
            ..dir(100, 180)
        },
        inbound: dir(60, 270),
    };
    let mut r = run(Proto::Grpc);
    // two connections of 10 requests, 1100 B out and 700 B in each
    r.stats.conns = vec![
        ConnRecord {
            h2: Some(h2),
            ..conn(0, 10, 1100, 700, None)
        },
        ConnRecord {
            h2: Some(h2),
            ..conn(0, 10, 1100, 700, None)
        },
    ];
    let l = report(&r).wire.layers.expect("h2 layers");
    assert!(l.http1.is_none());
    // setup 2 × 100 out, 2 × 60 in
    assert_eq!((l.setup_bytes_out, l.setup_bytes_in), (200, 120));
    // (2200 - 200) / 20 requests on wire; (1400 - 120) / 20
    assert_eq!(
        (
            l.bytes_out_per_request_after_setup,
            l.bytes_in_per_request_after_setup
        ),
        (100.0, 64.0)
    );
    let t = l.h2.expect("h2 summed");
    assert_eq!((t.out.preface_bytes, t.out.frame_header_bytes), (48, 360));
    assert_eq!(
        (t.inbound.preface_bytes, t.inbound.frame_header_bytes),
        (0, 540)
    );
    assert_eq!(
        t.out.frame(FrameType::Headers),
        FrameCount {
            count: 20,
            bytes: 600
        }
    );

    // HTTP/1.1 has no setup: socket bytes / requests on wire
    let layers = Http1Counts {
        requests: 10,
        responses: 10,
        request_head_bytes: 1000,
        request_body_bytes: 200,
        response_head_bytes: 1500,
        response_body_bytes: 400,
        chunk_framing_bytes: 50,
    };
    let mut r = run(Proto::Http);
    r.stats.conns = vec![
        ConnRecord {
            http1: Some(layers),
            ..conn(0, 10, 1200, 1950, None)
        },
        ConnRecord {
            http1: Some(layers),
            ..conn(1, 10, 1200, 1950, None)
        },
    ];
    let l = report(&r).wire.layers.expect("http1 layers");
    assert!(l.h2.is_none());
    assert_eq!((l.setup_bytes_out, l.setup_bytes_in), (0, 0));
    // 2400 / 20, 3900 / 20
    assert_eq!(
        (
            l.bytes_out_per_request_after_setup,
            l.bytes_in_per_request_after_setup
        ),
        (120.0, 195.0)
    );
    assert_eq!(
        l.http1,
        Some(Http1Counts {
            requests: 20,
            responses: 20,
            request_head_bytes: 2000,
            request_body_bytes: 400,
            response_head_bytes: 3000,
            response_body_bytes: 800,
            chunk_framing_bytes: 100,
        })
    );
}

#[test]
fn open_loop_rate_lag_and_uncorrected_latency() {
    let mut r = run(Proto::Grpc);
    r.rate = Some(100.0);
    r.pacer_timer = Some("timerfd");
    r.elapsed = Duration::from_secs(2);
    let st = &mut r.stats;
    // 160 measured (140 ok + 20 failed), 150 written: 10 expired before a client was free
    (st.ok, st.failed, st.written) = (140, 20, 150);
    (st.expired, st.late) = (10, 12);
    // 100 sends lagged 50 ms in all, at most 3 ms
    st.lagged_sends = 100;
    st.send_lag_sum = Duration::from_millis(50);
    st.max_send_lag = Duration::from_millis(3);
    for ms in 1..=4 {
        st.record_uncorrected(Duration::from_millis(ms));
    }
    let o = report(&r).open_loop.expect("open loop");
    assert_eq!(o.target_rate, 100.0);
    // 150 written / 2 s (count / 2 s would be 80)
    assert_eq!(o.achieved_rate, 75.0);
    assert_eq!((o.expired_sends, o.late_sends), (10, 12));
    assert_eq!(o.timer, Some("timerfd"));
    // 50 ms / 100 sends
    assert_eq!((o.average_send_lag_ms, o.max_send_lag_ms), (0.5, 3.0));
    // uncorrected 1, 2, 3, 4 ms: average 2.5, slowest 4
    assert_eq!(
        (o.uncorrected_average_ms, o.uncorrected_slowest_ms),
        (2.5, 4.0)
    );
    // of 4: p10 and p25 the 1st, p50 the 2nd, p75 the 3rd, p90 and up the 4th
    hdr_all(
        &o.uncorrected_distribution,
        [1.0, 1.0, 2.0, 3.0, 4.0, 4.0, 4.0, 4.0, 4.0],
    );

    // nothing lagged, nothing uncorrected, a zero window: zeros, not NaN
    let mut r = run(Proto::Grpc);
    r.rate = Some(100.0);
    r.elapsed = Duration::ZERO;
    r.stats.written = 10;
    let o = report(&r).open_loop.expect("open loop");
    assert_eq!((o.achieved_rate, o.average_send_lag_ms), (0.0, 0.0));
    assert_eq!(
        (o.uncorrected_average_ms, o.uncorrected_slowest_ms),
        (0.0, 0.0)
    );
    assert!(o.uncorrected_distribution.is_empty());
    assert_eq!(o.timer, None);

    // closed loop: no block at all
    assert!(report(&run(Proto::Grpc)).open_loop.is_none());
}

#[test]
fn per_endpoint_in_endpoint_order_with_roles() {
    let mut r = run(Proto::Http);
    r.elapsed = Duration::from_secs(2);
    // endpoint 0: 10 OK of 1..=10 ms and 2 failed; endpoint 1: 4 failed
    ok_ms(&mut r.stats, 1..=10);
    r.stats
        .record_failures(at(0, 0), 2, Failure::new(FailureKind::Timeout));
    r.stats
        .record_failures(at(1, 0), 4, Failure::new(FailureKind::Connect));
    let roles = ["leader".to_string()];
    let rep = RunReport::from_run(&r, &endpoints(), &roles, false);
    let [e0, e1] = &rep.per_endpoint[..] else {
        panic!("two endpoints: {:?}", rep.per_endpoint);
    };
    assert_eq!(e0.endpoint, "http://127.0.0.1:2379");
    assert_eq!(e0.role.as_deref(), Some("leader"));
    assert_eq!((e0.count, e0.ok, e0.failed), (12, 10, 2));
    // 12 / 2 s
    assert_eq!(e0.requests_per_sec, 6.0);
    // of 10: p50 the 5th, p90 the 9th, p99 the 10th
    hdr(e0.p50_ms, 5.0);
    hdr(e0.p90_ms, 9.0);
    hdr(e0.p99_ms, 10.0);
    assert_eq!(e1.endpoint, "http://[::1]:2379");
    // no role known for it
    assert_eq!(e1.role, None);
    assert_eq!((e1.count, e1.ok, e1.failed), (4, 0, 4));
    assert_eq!(e1.requests_per_sec, 2.0);
    // no successful request: no latency
    assert_eq!((e1.p50_ms, e1.p90_ms, e1.p99_ms), (0.0, 0.0, 0.0));
}

#[test]
fn timeline_buckets_by_width() {
    // latencies below 256 µs are exact in the timeline's 2-significant-digit histogram
    let bucket = |ok, failed, us: &[u64]| {
        let mut b = crate::stats::Bucket {
            ok,
            failed,
            ..Default::default()
        };
        for &v in us {
            b.hist.record(v).expect("within the bounds");
        }
        b
    };
    let mut r = run(Proto::Http);
    // 2 s buckets (a long run's timeline after one coarsening)
    r.stats.timeline = Timeline {
        width_s: 2,
        buckets: vec![
            bucket(6, 2, &[100, 100, 100, 200, 200, 200]),
            bucket(0, 4, &[]),
            bucket(2, 0, &[50, 250]),
        ],
    };
    let t = report(&r).timeline;
    let rows: Vec<(u64, u64, u64, u64, f64)> = t
        .iter()
        .map(|p| (p.t_s, p.width_s, p.ok, p.errors, p.requests_per_sec))
        .collect();
    // starts 0, 2, 4 s; (ok + errors) / 2 s
    assert_eq!(
        rows,
        [(0, 2, 6, 2, 4.0), (2, 2, 0, 4, 2.0), (4, 2, 2, 0, 1.0)]
    );
    // of 6: p50 the 3rd (100 µs), p99 the 6th (200 µs)
    assert_eq!((t[0].p50_ms, t[0].p99_ms), (0.1, 0.2));
    // errors only: no latency
    assert_eq!((t[1].p50_ms, t[1].p99_ms), (0.0, 0.0));
    // of 2: p50 the 1st, p99 the 2nd
    assert_eq!((t[2].p50_ms, t[2].p99_ms), (0.05, 0.25));
}

#[test]
fn connect_times_of_every_connection() {
    let mut r = run(Proto::Http);
    r.stats.conns = [100, 200, 300, 400]
        .into_iter()
        .map(|us| ConnRecord {
            connect_us: us,
            ..conn(0, 1, 0, 0, None)
        })
        .collect();
    let c = report(&r).connect_times.expect("four connections");
    assert_eq!(c.connections, 4);
    // (100 + 200 + 300 + 400) / 4 µs
    assert_eq!(c.average_ms, 0.25);
    assert_eq!((c.fastest_ms, c.slowest_ms), (0.1, 0.4));
    // marks 0.1 ms to 0.4 ms by 0.03
    let marks: Vec<f64> = c.histogram.iter().map(|b| b.mark_ms).collect();
    assert_eq!(
        marks,
        [
            0.1, 0.13, 0.16, 0.19, 0.22, 0.25, 0.28, 0.31, 0.34, 0.37, 0.4
        ]
    );
    // 100 µs under 0.1, 200 under 0.22, 300 under 0.31, 400 under 0.4 (these four sit in
    // the middle of their HDR buckets, so the first mark does count the fastest)
    assert_eq!(counts(&c.histogram), [1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1]);
    // of 4: p10 and p25 the 1st, p50 the 2nd, p75 the 3rd, p90 and up the 4th
    hdr_all(
        &c.distribution,
        [0.1, 0.1, 0.2, 0.3, 0.4, 0.4, 0.4, 0.4, 0.4],
    );
}

#[test]
fn memory_per_connection_and_per_request_in_flight() {
    let mut r = run(Proto::Grpc);
    (r.conns, r.clients) = (4, 16);
    r.memory = Some(Memory {
        rss_baseline_kib: 10_000,
        rss_connected_kib: 12_000,
        rss_steady_kib: 14_000,
        peak_rss_kib: 15_000,
    });
    let m = RunReport::from_run(&r, &endpoints(), &[], true)
        .memory
        .expect("memory");
    assert_eq!(
        (
            m.rss_baseline_kib,
            m.rss_connected_kib,
            m.rss_steady_kib,
            m.peak_rss_kib
        ),
        (10_000, 12_000, 14_000, 15_000)
    );
    // (14_000 - 10_000) KiB × 1024 = 4_096_000 B; / 4 connections; / 16 clients
    assert_eq!(m.rss_per_connection_bytes, 1_024_000.0);
    assert_eq!(m.rss_per_in_flight_bytes, 256_000.0);
    assert!(m.includes_server);

    // RSS fell below the baseline: nothing grew (no wrap-around)
    r.memory = Some(Memory {
        rss_steady_kib: 9_000,
        ..r.memory.expect("set above")
    });
    let m = report(&r).memory.expect("memory");
    assert_eq!(
        (m.rss_per_connection_bytes, m.rss_per_in_flight_bytes),
        (0.0, 0.0)
    );
    assert!(!m.includes_server);
}

/// HTTP/1.1: 1000 requests of 2 ms over 4 connections in 1 s; gRPC: 2000 of 1 ms over 1.
/// Per request: HTTP/1.1 100 B out, 200 B in, 2 + 2 segments, 20 µs CPU, 5 syscalls,
/// 1 context switch, 40 µs server CPU; gRPC 50 B, 100 B, 0.5 + 1 segments, 10 µs, 2, 0.25,
/// 10 µs.
fn ratio_runs() -> [ProtoRun; 2] {
    let mut h = run(Proto::Http);
    ok(&mut h.stats, 1000, Duration::from_millis(2));
    h.stats.written = 1000;
    h.stats.conns = (0..4)
        .map(|_| conn(0, 250, 25_000, 50_000, Some(tcp(500, 500, true))))
        .collect();
    h.cost.cpu.user_us = 20_000;
    h.cost.kernel.syscalls = Some(5000);
    h.cost.kernel.context_switches = Some(1000);
    h.server_cpu = Some(Ok(Duration::from_millis(40)));

    let mut g = run(Proto::Grpc);
    ok(&mut g.stats, 2000, Duration::from_millis(1));
    g.stats.written = 2000;
    g.stats.conns = vec![conn(0, 2000, 100_000, 200_000, Some(tcp(1000, 2000, true)))];
    g.cost.cpu.user_us = 20_000;
    g.cost.kernel.syscalls = Some(4000);
    g.cost.kernel.context_switches = Some(500);
    g.server_cpu = Some(Ok(Duration::from_millis(20)));
    [h, g]
}

/// `wirebench etcd put -n 3000` as the cli validates it (the defaults written out).
fn etcd_put_config() -> Config {
    use crate::config::{EtcdOp, Format, Load, Target, WorkloadSpec};
    Config {
        endpoints: vec![Endpoint::parse("http://127.0.0.1:2379").expect("an endpoint")],
        protos: vec![Proto::Http, Proto::Grpc],
        load: Load {
            clients: 1,
            conns: 1,
            threads: 2,
            stop: Stop::Total(3000),
            warmup: Duration::ZERO,
            timeout: Duration::from_secs(20),
            rate: None,
            connect_rate: None,
        },
        net: crate::net::NetConfig::default(),
        h2: crate::net::H2Config::default(),
        max_body: 64 << 20,
        spec: WorkloadSpec::Etcd(EtcdOp::Put {
            key_size: 8,
            val_size: 8,
            key_space_size: 1,
            sequential_keys: false,
        }),
        seed: 1,
        format: Format::Text,
        output: None,
        server_pid: None,
        per_conn: false,
        svg: None,
        auth: None,
        target: Target::First,
    }
}

#[test]
fn ratios_are_grpc_over_http() {
    let cfg = etcd_put_config();
    let rep = Report::new(&cfg, &cfg.endpoints, &[], &ratio_runs(), false);
    assert_eq!(rep.schema, SCHEMA);
    assert_eq!(rep.endpoints, ["http://127.0.0.1:2379"]);
    assert_eq!(
        (rep.settings.total_requests, rep.settings.duration_s),
        (Some(3000), None)
    );
    assert_eq!(rep.runs.len(), 2);
    let x = rep.ratios.expect("both protocols ran");
    // 2000 / 1000 req/s
    assert_eq!(x.requests_per_sec, Some(2.0));
    // 1 ms / 2 ms (both read from the histogram)
    hdr(x.latency_p50.expect("p50"), 0.5);
    hdr(x.latency_p99.expect("p99"), 0.5);
    // 1 / 4 connections
    assert_eq!(x.connections, Some(0.25));
    // 50 / 100 B out, 100 / 200 B in
    assert_eq!(x.bytes_out_per_request, Some(0.5));
    assert_eq!(x.bytes_in_per_request, Some(0.5));
    // segments 0.5 / 2 out, 1 / 2 in
    assert_eq!(x.segments_out_per_request, Some(0.25));
    assert_eq!(x.segments_in_per_request, Some(0.5));
    // 2 / 5 syscalls, 0.25 / 1 context switches, 10 / 20 µs client, 10 / 40 µs server
    assert_eq!(x.syscalls_per_request, Some(0.4));
    assert_eq!(x.context_switches_per_request, Some(0.25));
    assert_eq!(x.client_cpu_us_per_request, Some(0.5));
    assert_eq!(x.server_cpu_us_per_request, Some(0.25));
    // on the wire (52 B of headers a segment): HTTP/1.1 out (100_000 + 2000 × 52) / 1000
    // = 204, in (200_000 + 2000 × 52) / 1000 = 304; gRPC out (100_000 + 1000 × 52) / 2000
    // = 76, in (200_000 + 2000 × 52) / 2000 = 152
    assert_eq!(x.wire_bytes_out_per_request, Some(76.0 / 204.0));
    assert_eq!(x.wire_bytes_in_per_request, Some(0.5));
}

#[test]
fn ratios_are_null_without_a_figure_on_either_side() {
    let cfg = etcd_put_config();
    let [mut h, mut g] = ratio_runs();
    // gRPC's kernel counts unavailable; HTTP/1.1's context switches unavailable
    g.cost.kernel.syscalls = None;
    h.cost.kernel.context_switches = None;
    // HTTP/1.1 server CPU measured as 0, and no TCP_INFO on its connections
    h.server_cpu = Some(Ok(Duration::ZERO));
    for c in &mut h.stats.conns {
        c.tcp = None;
    }
    let x = Report::new(&cfg, &cfg.endpoints, &[], &[h, g], false)
        .ratios
        .expect("both protocols ran");
    assert_eq!(x.syscalls_per_request, None);
    assert_eq!(x.context_switches_per_request, None);
    // a zero HTTP/1.1 figure has no ratio (rather than infinity)
    assert_eq!(x.server_cpu_us_per_request, None);
    assert_eq!(x.segments_out_per_request, None);
    assert_eq!(x.wire_bytes_out_per_request, None);
    // the others stand
    assert_eq!(x.requests_per_sec, Some(2.0));
    assert_eq!(x.client_cpu_us_per_request, Some(0.5));

    // one protocol alone: no ratios
    let [h, _] = ratio_runs();
    assert!(
        Report::new(&cfg, &cfg.endpoints, &[], &[h], false)
            .ratios
            .is_none()
    );
}
