//! End-to-end runs against a real etcd (one throwaway member per test, see `support`).
//!
//! etcd's store revision is an independent count of what the server applied: every successful
//! put advances it by exactly one, so it checks wirebench's own request counts from outside.

mod support;

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::Value;

use support::{
    Etcd, assert_refused, f64_at, proto_run, run_bounded, run_json, run_json_within, u64_at,
};

/// Wall-clock bound for the duration-mode runs (1 s of load plus setup and teardown).
const DURATION_RUN_LIMIT: Duration = Duration::from_secs(10);

fn assert_all_ok(run: &Value, n: u64) {
    assert_eq!(u64_at(run, "/summary/count"), n, "summary.count: {run:#}");
    assert_eq!(u64_at(run, "/summary/ok"), n, "summary.ok: {run:#}");
    assert_eq!(u64_at(run, "/summary/failed"), 0, "summary.failed: {run:#}");
    assert_eq!(
        run["error_distribution"].as_array().map(Vec::len),
        Some(0),
        "error_distribution: {run:#}"
    );
}

/// The per-connection ledgers add up to the wire totals.
fn assert_ledgers_add_up(run: &Value) {
    let conns = run["per_connection"].as_array().expect("per_connection[]");
    assert_eq!(
        conns.len() as u64,
        u64_at(run, "/wire/connections_opened"),
        "{run:#}"
    );
    for (field, total) in [
        ("bytes_out", "/wire/bytes_out"),
        ("bytes_in", "/wire/bytes_in"),
        ("requests", "/wire/requests_on_wire"),
    ] {
        let sum: u64 = conns.iter().map(|c| u64_at(c, &format!("/{field}"))).sum();
        assert_eq!(
            sum,
            u64_at(run, total),
            "sum of per_connection[].{field} vs {total}"
        );
    }
}

/// `put -n 2000 -c 8` over one protocol: etcd applied exactly 2000 writes, and the wire figures
/// agree with what was sent.
fn put_counts_exactly(proto: &str) {
    const N: u64 = 2000;
    let etcd = Etcd::start();
    let before = etcd.revision();
    let report = run_json(&[
        "etcd",
        "put",
        "--endpoints",
        &etcd.endpoint(),
        "--proto",
        proto,
        "-n",
        &N.to_string(),
        "-c",
        "8",
    ]);
    let after = etcd.revision();
    assert_eq!(
        after - before,
        N as i64,
        "etcd revision delta for {N} {proto} puts"
    );

    assert_eq!(
        report["runs"].as_array().map(Vec::len),
        Some(1),
        "{report:#}"
    );
    assert!(
        report["ratios"].is_null(),
        "ratios with one protocol: {report:#}"
    );
    let run = proto_run(&report, proto);
    assert_all_ok(run, N);
    assert_eq!(u64_at(run, "/summary/warmup_requests"), 0);

    let wire = &run["wire"];
    assert_eq!(u64_at(wire, "/requests_on_wire"), N, "{wire:#}");
    assert_eq!(u64_at(wire, "/reconnects"), 0, "{wire:#}");
    let expected_conns = if proto == "http" { 8 } else { 1 };
    assert_eq!(
        u64_at(wire, "/connections_opened"),
        expected_conns,
        "{wire:#}"
    );
    if proto == "http" {
        // One HTTP/1.1 request is one contiguous buffer written with one write call.
        assert_eq!(f64_at(wire, "/write_calls_per_request"), 1.0, "{wire:#}");
    } else {
        assert!(f64_at(wire, "/write_calls_per_request") > 0.0, "{wire:#}");
    }
    assert!(f64_at(wire, "/bytes_out_per_request") > 0.0, "{wire:#}");
    assert!(f64_at(wire, "/bytes_in_per_request") > 0.0, "{wire:#}");
    assert!(f64_at(wire, "/read_calls_per_request") > 0.0, "{wire:#}");
    assert_eq!(
        f64_at(wire, "/bytes_out_per_request"),
        u64_at(wire, "/bytes_out") as f64 / N as f64
    );
    assert_ledgers_add_up(run);
}

#[test]
fn put_over_http_advances_revision_exactly() {
    put_counts_exactly("http");
}

#[test]
fn put_over_grpc_advances_revision_exactly() {
    put_counts_exactly("grpc");
}

#[test]
fn put_over_both_protocols_reports_ratios() {
    const N: u64 = 4000;
    let etcd = Etcd::start();
    let before = etcd.revision();
    let report = run_json(&[
        "etcd",
        "put",
        "--endpoints",
        &etcd.endpoint(),
        "--proto",
        "both",
        "-c",
        "10",
        "-n",
        &N.to_string(),
    ]);
    let after = etcd.revision();
    assert_eq!(
        after - before,
        2 * N as i64,
        "etcd revision delta for {N} puts per protocol"
    );

    let runs = report["runs"].as_array().expect("runs[]");
    let order: Vec<&str> = runs.iter().filter_map(|r| r["proto"].as_str()).collect();
    assert_eq!(order, ["http", "grpc"], "HTTP/1.1 runs first, then gRPC");
    for run in runs {
        assert_all_ok(run, N);
        assert_eq!(u64_at(run, "/wire/requests_on_wire"), N);
        assert_ledgers_add_up(run);
    }
    assert_eq!(
        u64_at(proto_run(&report, "http"), "/wire/connections_opened"),
        10
    );
    assert_eq!(
        u64_at(proto_run(&report, "grpc"), "/wire/connections_opened"),
        1
    );

    let rps = f64_at(&report, "/ratios/requests_per_sec");
    assert!(
        rps.is_finite() && rps > 0.0,
        "ratios.requests_per_sec = {rps}"
    );
    let expected = f64_at(proto_run(&report, "grpc"), "/summary/requests_per_sec")
        / f64_at(proto_run(&report, "http"), "/summary/requests_per_sec");
    assert!(
        (rps - expected).abs() <= expected * 1e-9,
        "ratio {rps} vs {expected}"
    );
    assert_eq!(f64_at(&report, "/ratios/connections"), 0.1);
}

#[test]
fn range_returns_the_stored_value_over_both_protocols() {
    const KEY: &str = "wb-key";
    const VALUE: &str = "hello wirebench";
    let etcd = Etcd::start();
    etcd.put(KEY, VALUE);
    assert_eq!(etcd.get(KEY).as_deref(), Some(VALUE.as_bytes()));

    for consistency in ["l", "s"] {
        let before = etcd.revision();
        let report = run_json(&[
            "etcd",
            "range",
            KEY,
            "--endpoints",
            &etcd.endpoint(),
            "--proto",
            "both",
            "-n",
            "200",
            "-c",
            "4",
            "--consistency",
            consistency,
        ]);
        assert_eq!(
            etcd.revision(),
            before,
            "reads must not write (--consistency {consistency})"
        );
        for proto in ["http", "grpc"] {
            let run = proto_run(&report, proto);
            assert_all_ok(run, 200);
            let kv = &run["sample_response"]["kvs"][0];
            let decode = |field: &str| {
                let text = kv[field]
                    .as_str()
                    .unwrap_or_else(|| panic!("{proto} sample_response.kvs[0].{field}: {run:#}"));
                B64.decode(text).unwrap_or_else(|e| {
                    panic!("{proto} kvs[0].{field} {text:?} is not base64: {e}")
                })
            };
            assert_eq!(
                decode("key"),
                KEY.as_bytes(),
                "{proto} --consistency {consistency}"
            );
            assert_eq!(
                decode("value"),
                VALUE.as_bytes(),
                "{proto} --consistency {consistency}"
            );
        }
    }
}

#[test]
fn stopped_etcd_fails_fast_with_one_connect_error() {
    let mut etcd = Etcd::start();
    let endpoint = etcd.endpoint();
    etcd.stop();
    for proto in ["both", "http", "grpc"] {
        let run = run_bounded(
            &[
                "etcd",
                "put",
                "--endpoints",
                &endpoint,
                "--proto",
                proto,
                "-n",
                "10",
                "--connect-timeout",
                "2s",
                "--timeout",
                "2s",
            ],
            Duration::from_secs(15),
        );
        assert!(
            run.elapsed < Duration::from_secs(10),
            "--proto {proto} took {:?}",
            run.elapsed
        );
        assert_eq!(run.code, Some(1), "--proto {proto}: {run:?}");
        let lines = run.stderr_lines();
        assert_eq!(
            lines.len(),
            1,
            "--proto {proto}: stderr must be one line: {:?}",
            run.stderr
        );
        assert!(
            lines[0].starts_with("error:"),
            "--proto {proto}: {:?}",
            lines[0]
        );
        assert!(
            lines[0].contains("connect"),
            "--proto {proto}: {:?}",
            lines[0]
        );
        assert!(
            run.stdout.is_empty(),
            "--proto {proto}: no report expected: {:?}",
            run.stdout
        );
    }
}

#[test]
fn duration_mode_grpc_counts_every_applied_put() {
    let etcd = Etcd::start();
    let before = etcd.revision();
    let report = run_json_within(
        &[
            "etcd",
            "put",
            "--endpoints",
            &etcd.endpoint(),
            "--proto",
            "grpc",
            "-z",
            "1s",
            "-c",
            "4",
        ],
        DURATION_RUN_LIMIT,
    );
    let delta = etcd.revision() - before;
    assert!(
        report["settings"]["total_requests"].is_null(),
        "{:#}",
        report["settings"]
    );
    assert_eq!(f64_at(&report, "/settings/duration_s"), 1.0);

    let run = proto_run(&report, "grpc");
    let s = &run["summary"];
    let (count, ok, warmup) = (
        u64_at(s, "/count"),
        u64_at(s, "/ok"),
        u64_at(s, "/warmup_requests"),
    );
    assert!(ok > 0, "{s:#}");
    assert_eq!(u64_at(s, "/failed"), 0, "{run:#}");
    assert_eq!(count, ok);
    assert_eq!(warmup, 0);
    assert_eq!(
        delta,
        (count + warmup) as i64,
        "revision delta vs measured puts: {s:#}"
    );
    assert_eq!(u64_at(run, "/wire/requests_on_wire"), count + warmup);
    let total_s = f64_at(s, "/total_s");
    assert!(
        (0.95..5.0).contains(&total_s),
        "summary.total_s = {total_s}"
    );
}

#[test]
fn warmup_requests_are_sent_but_not_measured() {
    let etcd = Etcd::start();
    let before = etcd.revision();
    let report = run_json_within(
        &[
            "etcd",
            "put",
            "--endpoints",
            &etcd.endpoint(),
            "--proto",
            "http",
            "-c",
            "4",
            "--warmup",
            "500ms",
            "-z",
            "1s",
        ],
        DURATION_RUN_LIMIT,
    );
    let delta = etcd.revision() - before;
    assert_eq!(f64_at(&report, "/settings/warmup_s"), 0.5);

    let run = proto_run(&report, "http");
    let s = &run["summary"];
    let (count, ok, warmup) = (
        u64_at(s, "/count"),
        u64_at(s, "/ok"),
        u64_at(s, "/warmup_requests"),
    );
    assert!(ok > 0, "{s:#}");
    assert!(warmup > 0, "{s:#}");
    assert_eq!(u64_at(s, "/failed"), 0, "{run:#}");
    assert_eq!(count, ok);
    assert_eq!(
        delta,
        (ok + warmup) as i64,
        "revision delta vs ok + warmup puts: {s:#}"
    );
    // requests_on_wire counts warmup requests too
    assert_eq!(
        u64_at(run, "/wire/requests_on_wire"),
        ok + warmup,
        "{:#}",
        run["wire"]
    );
    assert_eq!(
        f64_at(run, "/wire/write_calls_per_request"),
        1.0,
        "{:#}",
        run["wire"]
    );
    let total_s = f64_at(s, "/total_s");
    assert!(
        (0.95..5.0).contains(&total_s),
        "summary.total_s = {total_s} (warmup excluded)"
    );
}

#[test]
fn range_options_shape_the_answer_over_both_protocols() {
    let etcd = Etcd::start();
    for i in 0..5 {
        etcd.put(format!("wb-p/{i}"), format!("v{i}"));
    }
    // wb-p/0 is overwritten: at the revision of its first put it still reads v0
    let first = etcd.put("wb-q", "old");
    etcd.put("wb-q", "new");
    let endpoint = etcd.endpoint();
    let range = |key: &str, opts: &[&str]| {
        let mut args = vec![
            "etcd",
            "range",
            key,
            "--endpoints",
            &endpoint,
            "--proto",
            "both",
            "-n",
            "50",
            "-c",
            "2",
        ];
        args.extend_from_slice(opts);
        run_json(&args)
    };
    let first = first.to_string();
    let cases: [(&str, &[&str], usize, Option<&str>); 5] = [
        ("wb-p/", &["--prefix"], 5, None),
        ("wb-p/", &["--prefix", "--limit", "2"], 2, None),
        ("wb-p/", &["--prefix", "--keys-only"], 5, None),
        ("wb-p/", &["--prefix", "--count-only"], 0, None),
        ("wb-q", &["--rev", &first], 1, Some("old")),
    ];
    for (key, opts, kvs, value) in cases {
        let before = etcd.revision();
        let report = range(key, opts);
        assert_eq!(etcd.revision(), before, "{opts:?}: reads must not write");
        for proto in ["http", "grpc"] {
            let run = proto_run(&report, proto);
            assert_all_ok(run, 50);
            let s = &run["sample_response"];
            let got = s["kvs"].as_array().map_or(0, Vec::len);
            assert_eq!(got, kvs, "{proto} {opts:?}: {s}");
            if key == "wb-p/" {
                assert_eq!(s["count"], "5", "{proto} {opts:?}: {s}");
            }
            if opts.contains(&"--limit") {
                assert_eq!(s["more"], true, "{proto}: {s}");
            }
            if opts.contains(&"--keys-only") {
                assert!(s["kvs"][0].get("value").is_none(), "{proto}: {s}");
            }
            if let Some(v) = value {
                let text = s["kvs"][0]["value"].as_str().unwrap();
                assert_eq!(B64.decode(text).unwrap(), v.as_bytes(), "{proto}");
            }
        }
    }
    assert_refused(
        &["etcd", "range", "k", "--keys-only", "--count-only"],
        2,
        "choose one",
    );
}

#[test]
fn txn_put_counts_one_revision_per_transaction_over_both_protocols() {
    let etcd = Etcd::start();
    let before = etcd.revision();
    // 4 keys, 4 puts per transaction: every transaction writes every key once
    let report = run_json(&[
        "etcd",
        "txn-put",
        "--endpoints",
        &etcd.endpoint(),
        "--proto",
        "both",
        "--txn-ops",
        "4",
        "--key-space-size",
        "4",
        "-n",
        "300",
        "-c",
        "4",
    ]);
    for proto in ["http", "grpc"] {
        assert_all_ok(proto_run(&report, proto), 300);
    }
    // one revision per transaction, however many puts it holds
    assert_eq!(etcd.revision() - before, 600);
    // key index 0 (eight bytes of Go varint 0): one version per transaction
    let kv = etcd.call(
        "/v3/kv/range",
        &serde_json::json!({ "key": B64.encode([0u8; 8]) }),
    );
    assert_eq!(kv["kvs"][0]["version"], "600", "{kv}");
    assert_refused(
        &["etcd", "txn-put", "--txn-ops", "4", "--key-space-size", "3"],
        2,
        "distinct",
    );
    assert_refused(&["etcd", "txn-put", "--txn-ops", "0"], 2, "--txn-ops 0");
}

#[test]
fn sweep_runs_txn_put_rows_one_revision_per_transaction() {
    let etcd = Etcd::start();
    let before = etcd.revision();
    let run = run_bounded(
        &[
            "sweep",
            "etcd",
            "txn-put",
            "--txn-ops",
            "2",
            "--key-space-size",
            "10",
            "--endpoints",
            &etcd.endpoint(),
            "--clients",
            "1,4",
            "--key-size",
            "16",
            "--target",
            "first",
            "-n",
            "100",
            "--format",
            "json",
        ],
        Duration::from_secs(120),
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let v: Value = serde_json::from_str(&run.stdout).expect("JSON rows");
    let rows = v["rows"].as_array().expect("rows");
    // 2 client counts x 2 stacks, 100 transactions each, every one ok
    assert_eq!(rows.len(), 4, "{v:#}");
    assert_eq!(etcd.revision() - before, 400);
    assert_refused(
        &[
            "sweep",
            "etcd",
            "txn-put",
            "--txn-ops",
            "20",
            "--key-space-size",
            "10",
        ],
        2,
        "distinct",
    );
}
