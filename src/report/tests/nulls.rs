//! No measurement is null, never 0: a figure without a denominator or a sample is None in the
//! report, null in JSON and n/a in text, while the counts it would be made of stay counts.

use super::runs::etcd_put_config;
use super::*;
use crate::report::verdict::Threshold;

/// An HTTP/1.1 run whose 5 measured requests all failed before a byte was written (no
/// connection): the window cost CPU and syscalls all the same, and the server some CPU.
fn nothing_written() -> ProtoRun {
    let mut r = run(Proto::Http);
    r.stats
        .record_failures(at(0, 0), 5, Failure::new(FailureKind::Connect));
    r.cost.cpu.user_us = 2000;
    r.cost.kernel.syscalls = Some(50);
    r.cost.io = IoCalls {
        reads: 3,
        writes: 1,
        ..IoCalls::ZERO
    };
    r.server_cpu = Some(Ok(Duration::from_micros(700)));
    r
}

/// The text report of `runs` (the per-connection table with `per_conn`).
fn text(runs: &[ProtoRun], per_conn: bool) -> String {
    let mut cfg = etcd_put_config();
    cfg.per_conn = per_conn;
    crate::report::text::render(&Report::new(&cfg, &cfg.endpoints, &[], runs, false))
}

/// The line of `text` that starts (trimmed) with `start`.
#[track_caller]
fn line<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(start))
        .unwrap_or_else(|| panic!("no line {start:?}:\n{text}"))
}

#[test]
fn a_run_that_wrote_no_request_has_no_cost_per_request() {
    let rep = report(&nothing_written());
    assert_eq!((rep.summary.count, rep.summary.failed), (5, 5));
    let c = &rep.cost;
    // the counts are measured: they stay
    assert_eq!(c.requests, 0);
    assert_eq!((c.client_cpu_user_us, c.syscalls), (2000, Some(50)));
    assert_eq!(c.server_cpu_ns, Some(700_000));
    // nothing to divide them by: no figure (it was 0.0 before: "free" requests)
    assert_eq!(c.client_cpu_us_per_request, None);
    assert_eq!(c.syscalls_per_request, None);
    assert_eq!(c.other_syscalls_per_request, None);
    assert_eq!((c.reads_per_request, c.writes_per_request), (None, None));
    assert_eq!(c.server_cpu_us_per_request, None);
    // no connection, no latency, but a window: a measured rate of 5 / 1 s, and no latency
    assert_eq!(rep.summary.requests_per_sec, Some(5.0));
    assert_eq!(rep.summary.ok_per_sec, Some(0.0));
    assert_eq!(rep.summary.average_ms, None);
    assert_eq!(rep.wire.bytes_out_per_request, None);
    let json = serde_json::to_value(&rep).unwrap();
    for k in [
        "client_cpu_us_per_request",
        "syscalls_per_request",
        "reads_per_request",
        "server_cpu_us_per_request",
    ] {
        assert_eq!(json["cost"][k], Value::Null, "{k}");
    }
    assert_eq!(json["cost"]["syscalls"], 50);

    let t = text(&[nothing_written()], false);
    assert_eq!(
        line(&t, "Client CPU / request:"),
        "  Client CPU / request:     n/a (user 2 ms, sys 0 ms)"
    );
    assert_eq!(
        line(&t, "Syscalls / request:"),
        "  Syscalls / request:       n/a (50 counted by the kernel)"
    );
    assert!(
        line(&t, "of which socket data:").contains("reads n/a + n/a would-block"),
        "{t}"
    );
    assert!(
        line(&t, "of which socket data:").ends_with("other n/a"),
        "{t}"
    );
    assert_eq!(
        line(&t, "Server CPU / request:"),
        "  Server CPU / request:     n/a"
    );
    for start in [
        "Average:",
        "Slowest:",
        "Bytes out / request:",
        "Requests / connection:",
    ] {
        assert!(line(&t, start).contains("n/a"), "{start}: {t}");
    }
    // not one figure shows as a 0 that was never measured
    assert!(!t.contains("0.0 µs"), "{t}");
    assert!(!line(&t, "Average:").contains('0'), "{t}");
}

#[test]
fn the_comparison_shows_n_a_and_no_ratio_against_a_missing_figure() {
    let mut g = run(Proto::Grpc);
    ok(&mut g.stats, 10, Duration::from_millis(1));
    g.stats.written = 10;
    g.cost.cpu.user_us = 100;
    g.stats.conns = vec![conn(0, 10, 1000, 2000, None)];
    let t = text(&[nothing_written(), g], false);
    // HTTP/1.1 wrote nothing: n/a, and "-" for the ratio; gRPC's own 100 µs / 10
    let row = line(&t, "Client CPU / request (µs)");
    let cells: Vec<&str> = row.split_whitespace().rev().take(3).collect();
    assert_eq!(cells, ["-", "10.0", "n/a"], "{row}");
    let row = line(&t, "Bytes out / request  ");
    assert!(
        row.contains("n/a") && row.trim_end().ends_with('-'),
        "{row}"
    );
    // no TCP_INFO on gRPC's connection either: n/a on both sides
    let row = line(&t, "TCP segments out / request");
    assert_eq!(row.matches("n/a").count(), 2, "{row}");
    // and in JSON the ratios are null
    let cfg = etcd_put_config();
    let g2 = {
        let mut g = run(Proto::Grpc);
        ok(&mut g.stats, 10, Duration::from_millis(1));
        g.stats.written = 10;
        g
    };
    let rep = Report::new(&cfg, &cfg.endpoints, &[], &[nothing_written(), g2], false);
    let x = rep.ratios.expect("both ran");
    assert_eq!(x.client_cpu_us_per_request, None);
    assert_eq!(x.latency_p50, None);
}

/// A (IPv4, timestamps) with TCP_INFO at the snapshot and at the close; B without TCP_INFO
/// at all; C with TCP_INFO at the snapshot but not after its close.
fn tcp_info_missing_on_some() -> ProtoRun {
    let closed = |segs: Option<(u64, u64)>| CloseRecord {
        bytes_out: 30,
        bytes_in: 20,
        segs_out: segs.map(|s| s.0),
        segs_in: segs.map(|s| s.1),
        data_segs_out: segs.map(|_| 1),
        data_segs_in: segs.map(|_| 1),
        drained: true,
        duration_us: 100,
    };
    let mut r = run(Proto::Http);
    ok(&mut r.stats, 30, Duration::from_millis(1));
    r.stats.written = 30;
    let with = |segs_out, segs_in| TcpInfo {
        rtt_us: 42,
        mss: 65483,
        ..tcp(segs_out, segs_in, true)
    };
    r.stats.conns = vec![
        ConnRecord {
            local_port: 40001,
            close: Some(closed(Some((2, 3)))),
            ..conn(0, 10, 1000, 2000, Some(with(20, 30)))
        },
        ConnRecord {
            local_port: 40002,
            close: Some(closed(None)),
            ..conn(0, 10, 1000, 2000, None)
        },
        ConnRecord {
            local_port: 40003,
            close: Some(closed(None)),
            ..conn(0, 10, 1000, 2000, Some(with(10, 10)))
        },
    ];
    r
}

#[test]
fn a_connection_without_tcp_info_is_n_a_and_not_counted_as_0() {
    let rep = report(&tcp_info_missing_on_some());
    let w = &rep.wire;
    // the segment figures cover A and C, over their 20 requests (not 0 for B over 30)
    assert_eq!(w.connections_without_tcp_info, 1);
    assert_eq!((w.segments_out, w.segments_in), (30, 40));
    assert_eq!(
        (w.segments_out_per_request, w.segments_in_per_request),
        (Some(1.5), Some(2.0))
    );
    // the closes: A's segments alone; B's and C's unknown, left out and counted
    assert_eq!(w.close.connections, 3);
    assert_eq!((w.close.bytes_out, w.close.bytes_in), (90, 60));
    assert_eq!(
        (w.close.segments_out, w.close.segments_in),
        (Some(2), Some(3))
    );
    assert_eq!(w.close.connections_without_segments, 2);
    // B's record says it has no TCP_INFO: null, not zeros
    let json = serde_json::to_value(&rep).unwrap();
    assert_eq!(json["per_connection"][1]["tcp"], Value::Null);
    assert_eq!(json["per_connection"][1]["close"]["segs_out"], Value::Null);
    assert_eq!(json["per_connection"][0]["tcp"]["rtt_us"], 42);

    let t = text(&[tcp_info_missing_on_some()], true);
    let row = |port: &str| {
        t.lines()
            .find(|l| l.split_whitespace().next() == Some(port))
            .unwrap_or_else(|| panic!("no row for port {port}:\n{t}"))
            .split_whitespace()
            .collect::<Vec<&str>>()
    };
    // port ep requests bytes-out bytes-in writes reads | segs out, segs in, retr, rtt, mss |
    // life
    assert_eq!(row("40001")[7..12], ["20", "30", "0", "42", "65483"]);
    assert_eq!(row("40002")[7..12], ["n/a"; 5]);
    assert_eq!(row("40003")[7..12], ["10", "10", "0", "42", "65483"]);
    let close = line(&t, "Close (apart):");
    assert!(
        close.contains("2 + 3 segments (not counting the 2 without TCP_INFO) over 3 connections"),
        "{close}"
    );

    // no connection with TCP_INFO at all: the segment figures are n/a, the close's null
    let mut r = tcp_info_missing_on_some();
    for c in &mut r.stats.conns {
        c.tcp = None;
        c.close = c.close.map(|x| CloseRecord {
            segs_out: None,
            segs_in: None,
            ..x
        });
    }
    let w = report(&r).wire;
    assert_eq!(w.requests_with_tcp_info, 0);
    assert_eq!(w.segments_out_per_request, None);
    assert_eq!(w.wire_bytes_out_per_request, None);
    assert_eq!(
        (w.close.segments_out, w.close.connections_without_segments),
        (None, 3)
    );
    let t = text(&[r], false);
    assert!(
        line(&t, "TCP segments out / req:").contains("n/a (n/a with data)"),
        "{t}"
    );
    assert!(
        line(&t, "On the wire / request:").contains("n/a out, n/a in"),
        "{t}"
    );
    assert!(
        line(&t, "Close (apart):").contains("n/a + n/a segments"),
        "{t}"
    );
}

#[test]
fn a_threshold_on_a_figure_never_measured_breaks_and_says_so() {
    let rep = report(&nothing_written());
    for text in [
        "cpu<10us",
        "p99<5ms",
        "bytes<1000",
        "cost.client_cpu_us_per_request<1",
    ] {
        let t = Threshold::parse(text).unwrap();
        let b = t
            .judge(&rep)
            .unwrap_or_else(|| panic!("{text} held on no figure"));
        assert_eq!(b.value, None, "{text}");
        assert!(b.to_string().contains("no value for it"), "{b}");
    }
    // a measured 0 is judged as 0
    let t = Threshold::parse("summary.ok_per_sec<1").unwrap();
    assert_eq!(t.judge(&rep), None);
}

#[test]
fn figures_of_no_sample_are_null() {
    // the watch report's latency summary of no event
    let l = crate::report::watch::LatencySummary::of(&Latencies::default());
    assert_eq!(l.count, 0);
    assert_eq!((l.fastest, l.average, l.slowest), (None, None, None));
    assert_eq!((l.p50, l.p99, l.p999), (None, None, None));
    let json = serde_json::to_value(&l).unwrap();
    assert_eq!(json["p50"], Value::Null);
    // stages with no request completed: no rate over no time, no latency, no CPU per request
    let mut r = run(Proto::Http);
    r.elapsed = Duration::from_secs(2);
    let stages = crate::config::stages::Stages::parse("--stages", "1s:10", 1e9, false);
    let staged = crate::config::Staged::Rate(std::sync::Arc::new(stages.expect("stages")));
    let mut rep = report(&r);
    derive::staged(&mut rep, &r, &staged);
    let row = &rep.stages.as_ref().expect("stages")[0];
    assert_eq!(row.count, 0);
    assert_eq!((row.p50_ms, row.p99_ms), (None, None));
    assert_eq!(row.client_cpu_us_per_request, None);
}
