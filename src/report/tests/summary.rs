//! The summary, latency distribution and histogram, statuses and errors.

use super::*;

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
    assert_eq!((s.fastest_ms, s.slowest_ms), (Some(1.0), Some(8.0)));
    // (1 + ... + 8) / 8 = 36 / 8
    assert_eq!(s.average_ms, Some(4.5));
    // population variance of 1..=8 is (8² - 1) / 12 = 5.25 ms²
    close(s.stddev_ms, 5.25f64.sqrt());
    // count / total_s = 10 / 2; ok / total_s = 8 / 2
    assert_eq!((s.requests_per_sec, s.ok_per_sec), (Some(5.0), Some(4.0)));
    assert_eq!(rep.per_connection.len(), 1);
    assert_eq!(rep.per_connection[0].requests, 14);
    assert_eq!(rep.sample_response, r.sample);
}

#[test]
fn an_empty_run_reports_zero_counts_and_null_figures() {
    let mut r = run(Proto::Grpc);
    r.elapsed = Duration::ZERO;
    let rep = report(&r);
    let s = &rep.summary;
    assert_eq!((rep.proto, rep.title), ("grpc", "gRPC"));
    // no latency: none, neither 0 nor the u64::MAX the empty minimum starts from
    assert_eq!(
        (s.fastest_ms, s.slowest_ms, s.average_ms, s.stddev_ms),
        (None, None, None, None)
    );
    // a zero window gives no rate rather than a division by zero
    assert_eq!((s.requests_per_sec, s.ok_per_sec), (None, None));
    assert!(rep.histogram.is_empty());
    assert!(rep.latency_distribution.is_empty());
    assert_eq!(rep.percentile_ms(50.0), None);
    assert!(rep.status_distribution.is_empty() && rep.error_distribution.is_empty());
    assert!(rep.per_endpoint.is_empty() && rep.timeline.is_empty());
    assert!(rep.connect_times.is_none() && rep.memory.is_none());
    assert!(rep.open_loop.is_none());
    // nothing written: the counts are 0, every per-request figure is null (not 0), none
    // divides by zero
    assert_eq!(rep.cost.requests, 0);
    assert_eq!(rep.cost.client_cpu_us_per_request, None);
    assert_eq!(rep.wire.connections_opened, 0);
    assert_eq!(rep.wire.requests_per_connection, None);
    assert_eq!(rep.wire.bytes_out_per_request, None);
    assert_eq!(rep.wire.segments_out_per_request, None);
    assert_eq!(rep.wire.wire_bytes_out_per_request, None);
    assert_eq!(rep.wire.connect_error, None);
    assert!(rep.wire.layers.is_none() && rep.wire.tls.is_none());
    assert_eq!(rep.wire.close.connections, 0);
    assert_eq!(rep.wire.close.segments_out, None);
    // null in JSON
    let json = serde_json::to_value(&rep).unwrap();
    for path in [
        "/summary/average_ms",
        "/summary/requests_per_sec",
        "/cost/client_cpu_us_per_request",
        "/wire/bytes_out_per_request",
        "/wire/close/segments_out",
    ] {
        assert_eq!(json.pointer(path), Some(&Value::Null), "{path}");
    }
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
    // a percentile that is not in the list has no value
    assert_eq!(rep.percentile_ms(42.0), None);
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

#[test]
fn classes_are_reported_apart_over_the_same_window() {
    let mut r = run(Proto::Grpc);
    r.elapsed = Duration::from_secs(2);
    r.classes = &["read", "write"];
    // 3 reads of 1, 2, 3 ms; 1 write of 10 ms and 1 failed; no class had no request
    for ms in [1, 2, 3] {
        ok(&mut r.stats, 1, Duration::from_millis(ms));
        r.stats.record_class(0, Some(Duration::from_millis(ms)));
    }
    ok(&mut r.stats, 1, Duration::from_millis(10));
    r.stats.record_class(1, Some(Duration::from_millis(10)));
    r.stats
        .record_failures(at(0, 0), 1, Failure::new(FailureKind::Timeout));
    r.stats.record_class(1, None);
    let cfg = super::runs::etcd_put_config();
    let whole = Report::new(&cfg, &cfg.endpoints, &[], &[r], false);
    let rep = &whole.runs[0];
    assert_eq!(rep.summary.count, 5, "the summary covers every class");
    let c = rep.classes.as_ref().expect("classes");
    let rows: Vec<(&str, u64, u64, u64, Option<f64>)> = c
        .iter()
        .map(|c| (c.class, c.count, c.ok, c.failed, c.requests_per_sec))
        .collect();
    assert_eq!(
        rows,
        [("read", 3, 3, 0, Some(1.5)), ("write", 2, 1, 1, Some(1.0))]
    );
    assert_eq!(c[1].ok_per_sec, Some(0.5));
    assert_eq!(
        (c[0].fastest_ms, c[0].slowest_ms, c[0].average_ms),
        (Some(1.0), Some(3.0), Some(2.0))
    );
    hdr(percentile_in(&c[1].latency_distribution, 99.0), 10.0);
    let text = crate::report::text::render(&whole);
    assert!(
        text.contains("By class (the summary above covers them all):"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().take(4).eq(["write", "2", "1", "1"])),
        "{text}"
    );

    // a run of one kind has no classes
    assert!(report(&run(Proto::Grpc)).classes.is_none());
}

#[test]
fn compaction_and_leases_are_reported_as_measured() {
    let mut r = run(Proto::Http);
    r.compaction = Some(crate::stats::Compactions {
        interval: Duration::from_millis(500),
        index_delta: 100,
        requests: 4,
        ok: 3,
        failed: 1,
        skipped: 2,
        last_revision: Some(812),
        last_error: Some(Failure::with(
            FailureKind::Etcd,
            "mvcc: required revision has been compacted",
        )),
    });
    r.leases = Some(crate::stats::Leases {
        granted: 8,
        ttl_s: 100,
        revoked: 6,
        gone: 2,
        revoke_failed: 0,
        revoke_error: None,
    });
    let rep = report(&r);
    let c = rep.compaction.as_ref().expect("compaction");
    assert_eq!(
        (
            c.interval_s,
            c.index_delta,
            c.requests,
            c.ok,
            c.failed,
            c.skipped
        ),
        (0.5, 100, 4, 3, 1, 2)
    );
    assert_eq!(c.last_revision, Some(812));
    assert_eq!(
        c.last_error.as_deref(),
        Some("etcd: mvcc: required revision has been compacted")
    );
    let l = rep.leases.as_ref().expect("leases");
    assert_eq!((l.granted, l.ttl_s, l.revoked, l.gone), (8, 100, 6, 2));
    let json: serde_json::Value = serde_json::to_value(&rep).unwrap();
    assert_eq!(json["compaction"]["last_revision"], 812);
    assert_eq!(json["leases"]["gone"], 2);
    // absent, not null, when the run had none
    let plain = serde_json::to_value(report(&run(Proto::Http))).unwrap();
    for field in ["classes", "compaction", "leases"] {
        assert!(plain.get(field).is_none(), "{field}: {plain:#}");
    }
}
