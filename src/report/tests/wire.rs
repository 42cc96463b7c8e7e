//! The window's cost and the connection figures: bytes, calls, segments, headers, layers.

use super::*;

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
            ..IoCalls::ZERO
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
    assert_eq!(c.client_cpu_us_per_request, Some(10.0));
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
        (Some(1.5), Some(1.0), Some(0.5), Some(0.5))
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
fn a_rings_reads_are_reads_but_not_among_the_syscalls() {
    let mut r = costly_run();
    r.cost.io.ring_reads = 40;
    let rep = report(&r);
    let c = &rep.cost;
    // still 60 reads a request's 1.5, but 40 of them no syscalls: (400 - 100) / 40
    assert_eq!(c.reads_per_request, Some(1.5));
    assert_eq!(c.other_syscalls_per_request, Some(7.5));
    let json = serde_json::to_value(c).expect("a plain struct serializes");
    assert_eq!(json["data_calls"]["ring_reads"], 40);
    let mut cfg = super::runs::etcd_put_config();
    cfg.per_conn = false;
    let text = crate::report::text::render(&Report::new(&cfg, &cfg.endpoints, &[], &[r], false));
    let data = text
        .lines()
        .find(|l| l.trim_start().starts_with("of which socket data:"))
        .unwrap_or_else(|| panic!("no data line:\n{text}"));
    assert!(
        data.contains("reads 0.50 + 0.50 would-block (and 1.00 through the io_uring)"),
        "{data}"
    );
    assert!(data.ends_with("other 7.50"), "{data}");
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
    assert_eq!(c.reads_per_request, Some(1.5));
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

    let gone = crate::stats::ClockError::Read {
        pid: 42,
        source: std::io::Error::from_raw_os_error(libc::ESRCH),
    };
    let msg = gone.to_string();
    assert!(msg.starts_with("--server-pid 42: cannot read its CPU clock"));
    r.server_cpu = Some(Err(gone));
    let c = report(&r).cost;
    assert_eq!((c.server_cpu_ns, c.server_cpu_us_per_request), (None, None));
    assert_eq!(c.server_cpu_error.as_deref(), Some(msg.as_str()));

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
            ..TlsCounts::default()
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
            ..TlsCounts::default()
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
    assert_eq!(w.requests_per_connection, Some(40.0 / 3.0));
    // 4000 B out, 8000 B in, 40 writes, 80 reads, over all 40 requests
    assert_eq!((w.bytes_out, w.bytes_in), (4000, 8000));
    assert_eq!(
        (w.bytes_out_per_request, w.bytes_in_per_request),
        (Some(100.0), Some(200.0))
    );
    assert_eq!(
        (w.write_calls_per_request, w.read_calls_per_request),
        (Some(1.0), Some(2.0))
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
            ..TlsCounts::default()
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
        (Some(1.0), Some(1.5))
    );
    // data segments 10 + 5 out, 20 + 10 in: / 30
    assert_eq!(
        (
            w.data_segments_out_per_request,
            w.data_segments_in_per_request
        ),
        (Some(0.5), Some(1.0))
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
        (Some(156.0), Some(282.0))
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
    // 3 closes, 2 drained; 40 + 24 + 40 B out, 30 + 0 + 31 B in; 3 + 2 segments out, 2 + 4
    // in, the unknown ones of the second left out (not added as 0) and counted apart
    assert_eq!((w.close.connections, w.close.drained), (3, 2));
    assert_eq!((w.close.bytes_out, w.close.bytes_in), (104, 61));
    assert_eq!(
        (w.close.segments_out, w.close.segments_in),
        (Some(5), Some(6))
    );
    assert_eq!(w.close.connections_without_segments, 1);
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
        (Some(100.0), Some(64.0))
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
        (Some(120.0), Some(195.0))
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
