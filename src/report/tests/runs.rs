//! Open loop, endpoints and roles, the timeline, connect times, memory and the ratios.

use super::*;

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
    assert_eq!(o.achieved_rate, Some(75.0));
    assert_eq!((o.expired_sends, o.late_sends), (10, 12));
    assert_eq!(o.timer, Some("timerfd"));
    // 50 ms / 100 sends
    assert_eq!(
        (o.average_send_lag_ms, o.max_send_lag_ms),
        (Some(0.5), Some(3.0))
    );
    // uncorrected 1, 2, 3, 4 ms: average 2.5, slowest 4
    assert_eq!(
        (o.uncorrected_average_ms, o.uncorrected_slowest_ms),
        (Some(2.5), Some(4.0))
    );
    // of 4: p10 and p25 the 1st, p50 the 2nd, p75 the 3rd, p90 and up the 4th
    hdr_all(
        &o.uncorrected_distribution,
        [1.0, 1.0, 2.0, 3.0, 4.0, 4.0, 4.0, 4.0, 4.0],
    );

    // nothing lagged, nothing uncorrected, a zero window: null, neither 0 nor NaN
    let mut r = run(Proto::Grpc);
    r.rate = Some(100.0);
    r.elapsed = Duration::ZERO;
    r.stats.written = 10;
    let o = report(&r).open_loop.expect("open loop");
    assert_eq!((o.achieved_rate, o.average_send_lag_ms), (None, None));
    assert_eq!(o.max_send_lag_ms, None);
    assert_eq!(
        (o.uncorrected_average_ms, o.uncorrected_slowest_ms),
        (None, None)
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
    assert_eq!(e0.requests_per_sec, Some(6.0));
    // of 10: p50 the 5th, p90 the 9th, p99 the 10th
    hdr(e0.p50_ms, 5.0);
    hdr(e0.p90_ms, 9.0);
    hdr(e0.p99_ms, 10.0);
    assert_eq!(e1.endpoint, "http://[::1]:2379");
    // no role known for it
    assert_eq!(e1.role, None);
    assert_eq!((e1.count, e1.ok, e1.failed), (4, 0, 4));
    assert_eq!(e1.requests_per_sec, Some(2.0));
    // no successful request: no latency (null, not 0)
    assert_eq!((e1.p50_ms, e1.p90_ms, e1.p99_ms), (None, None, None));
}

#[test]
fn timeline_buckets_by_width() {
    // latencies below 256 µs are exact in the timeline's 2-significant-digit histogram
    let bucket = |ok, failed, us: &[u64]| {
        let mut b = crate::stats::TimeSlot {
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
        slots: vec![
            bucket(6, 2, &[100, 100, 100, 200, 200, 200]),
            bucket(0, 4, &[]),
            bucket(2, 0, &[50, 250]),
        ],
    };
    let t = report(&r).timeline;
    let rows: Vec<(u64, u64, u64, u64, Option<f64>)> = t
        .iter()
        .map(|p| (p.t_s, p.width_s, p.ok, p.errors, p.requests_per_sec))
        .collect();
    // starts 0, 2, 4 s; (ok + errors) / 2 s
    assert_eq!(
        rows,
        [
            (0, 2, 6, 2, Some(4.0)),
            (2, 2, 0, 4, Some(2.0)),
            (4, 2, 2, 0, Some(1.0))
        ]
    );
    // of 6: p50 the 3rd (100 µs), p99 the 6th (200 µs)
    assert_eq!((t[0].p50_ms, t[0].p99_ms), (Some(0.1), Some(0.2)));
    // errors only: no latency (null, not 0)
    assert_eq!((t[1].p50_ms, t[1].p99_ms), (None, None));
    // of 2: p50 the 1st, p99 the 2nd
    assert_eq!((t[2].p50_ms, t[2].p99_ms), (Some(0.05), Some(0.25)));
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
    assert_eq!(m.rss_per_connection_bytes, Some(1_024_000.0));
    assert_eq!(m.rss_per_in_flight_bytes, Some(256_000.0));
    assert!(m.includes_server);

    // RSS fell below the baseline: nothing grew (no wrap-around), a measured 0
    r.memory = Some(Memory {
        rss_steady_kib: 9_000,
        ..r.memory.expect("set above")
    });
    let m = report(&r).memory.expect("memory");
    assert_eq!(
        (m.rss_per_connection_bytes, m.rss_per_in_flight_bytes),
        (Some(0.0), Some(0.0))
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
pub(super) fn etcd_put_config() -> Config {
    use crate::config::{EtcdOp, Format, Load, Target, WorkloadSpec};
    Config {
        endpoints: vec![Endpoint::parse("http://127.0.0.1:2379").expect("an endpoint")],
        protos: vec![Proto::Http, Proto::Grpc],
        load: Load {
            clients: 1,
            conns: 1,
            pipeline: 1,
            requests_per_conn: None,
            threads: 2,
            stop: Stop::Total(3000),
            warmup: Duration::ZERO,
            start_at: None,
            timeout: Duration::from_secs(20),
            rate: None,
            connect_rate: None,
            stages: None,
            interval: None,
        },
        net: crate::net::NetConfig::default(),
        h2: crate::client::grpc::H2Config::default(),
        max_body: 64 << 20,
        spec: WorkloadSpec::Etcd(EtcdOp::Put {
            key_size: 8,
            val_size: 8,
            key_space_size: 1,
            sequential_keys: false,
        }),
        seed: 1,
        agent: None,
        format: Format::Text,
        output: None,
        server_pid: None,
        per_conn: false,
        svg: None,
        outputs: Default::default(),
        thresholds: Vec::new(),
        capacity: None,
        auth: None,
        target: Target::First,
        verify: false,
        compact: None,
        link: None,
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
