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

/// `wirebench sweep etcd ARGS --format json` (bounded, exit 0 asserted), its JSON.
fn sweep_json(args: &[&str]) -> Value {
    let mut all = vec!["sweep", "etcd"];
    all.extend_from_slice(args);
    all.extend(["--format", "json"]);
    let run = run_bounded(&all, Duration::from_secs(120));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    serde_json::from_str(&run.stdout).expect("JSON rows")
}

#[test]
fn sweep_runs_txn_put_rows_one_revision_per_transaction() {
    let etcd = Etcd::start();
    let before = etcd.revision();
    let v = sweep_json(&[
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
    ]);
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

/// The leases etcd holds now (`/v3/lease/leases`), as their decimal ids.
fn leases_of(etcd: &Etcd) -> Vec<String> {
    let v = etcd.call("/v3/lease/leases", &serde_json::json!({}));
    v["leases"]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|x| x["ID"].as_str().expect("a lease ID").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// `(count, ok, failed)` of class `name` in a run's `classes`.
fn class_of(run: &Value, name: &str) -> (u64, u64, u64) {
    let c = run["classes"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["class"] == name))
        .unwrap_or_else(|| panic!("no class {name}: {run:#}"));
    (u64_at(c, "/count"), u64_at(c, "/ok"), u64_at(c, "/failed"))
}

#[test]
fn txn_mixed_reports_reads_and_writes_apart_and_only_writes_move_the_revision() {
    const N: u64 = 2000;
    let etcd = Etcd::start();
    let before = etcd.revision();
    let report = run_json(&[
        "etcd",
        "txn-mixed",
        "--endpoints",
        &etcd.endpoint(),
        "--proto",
        "both",
        "-n",
        &N.to_string(),
        "-c",
        "8",
        "--rw-ratio",
        "3",
        "--key-space-size",
        "50",
        "--verify",
    ]);
    let mut writes = 0;
    for proto in ["http", "grpc"] {
        let run = proto_run(&report, proto);
        assert_all_ok(run, N);
        assert_eq!(u64_at(run, "/wire/requests_on_wire"), N, "{proto}");
        let (reads, reads_ok, reads_failed) = class_of(run, "read");
        let (w, w_ok, w_failed) = class_of(run, "write");
        // every request is in exactly one class
        assert_eq!((reads + w, reads_ok + w_ok), (N, N), "{proto}");
        assert_eq!((reads_failed, w_failed), (0, 0), "{proto}");
        // rw-ratio 3: three reads in four requests
        let share = reads as f64 / N as f64;
        assert!(
            (0.71..0.79).contains(&share),
            "{proto}: {reads} reads of {N}"
        );
        // --verify looked every acknowledged write up, and none was lost
        assert_eq!(u64_at(run, "/verify/checked"), w_ok, "{proto}");
        assert_eq!(u64_at(run, "/verify/lost"), 0, "{proto}");
        writes += w_ok;
    }
    // a write is one revision, a read none
    assert_eq!(etcd.revision() - before, writes as i64);
    assert_refused(
        &["etcd", "txn-mixed", "--rw-ratio", "-1"],
        2,
        "--rw-ratio -1",
    );
    assert_refused(
        &[
            "etcd",
            "txn-mixed",
            "--key-space-size",
            "1000",
            "--key-size",
            "1",
        ],
        2,
        "cannot hold 1000 distinct keys",
    );
    assert_refused(
        &["etcd", "txn-mixed", "--limit", "9223372036854775808"],
        2,
        "--limit",
    );
}

#[test]
fn lease_keepalive_keeps_each_clients_lease_alive_over_both_protocols() {
    const N: u64 = 1000;
    let etcd = Etcd::start();
    let before = etcd.revision();
    let report = run_json(&[
        "etcd",
        "lease-keepalive",
        "--endpoints",
        &etcd.endpoint(),
        "--proto",
        "both",
        "-n",
        &N.to_string(),
        "-c",
        "4",
        "--lease-ttl",
        "60",
    ]);
    for proto in ["http", "grpc"] {
        let run = proto_run(&report, proto);
        assert_all_ok(run, N);
        // one keepalive, one request on the wire: the gRPC stream's messages are counted one
        // by one, not the streams
        assert_eq!(u64_at(run, "/wire/requests_on_wire"), N, "{proto}");
        assert_ledgers_add_up(run);
        let l = &run["leases"];
        assert_eq!(
            (
                u64_at(l, "/granted"),
                u64_at(l, "/revoked"),
                u64_at(l, "/gone")
            ),
            (4, 4, 0),
            "{proto}: {l:#}"
        );
        assert_eq!(u64_at(l, "/ttl_s"), 60, "{l:#}");
        // the answer renews the lease to its full TTL (the gateway's is a stream's line)
        let answer = match proto {
            "http" => &run["sample_response"]["result"],
            _ => &run["sample_response"],
        };
        assert_eq!(answer["TTL"], "60", "{proto}: {run:#}");
    }
    // one connection per client over HTTP/1.1, one for all the streams over gRPC
    assert_eq!(
        u64_at(proto_run(&report, "http"), "/wire/connections_opened"),
        4
    );
    let grpc = proto_run(&report, "grpc");
    assert_eq!(u64_at(grpc, "/wire/connections_opened"), 1);
    // one stream per client (four HEADERS out), a gRPC message each way per keepalive
    let h2 = &grpc["wire"]["layers"]["h2"];
    assert_eq!(u64_at(h2, "/out/frames/HEADERS/count"), 4, "{h2:#}");
    assert_eq!(u64_at(h2, "/out/grpc_messages"), N, "{h2:#}");
    assert_eq!(u64_at(h2, "/in/grpc_messages"), N, "{h2:#}");
    // keepalives write nothing, and the leases were revoked after each run
    assert_eq!(etcd.revision(), before);
    assert!(leases_of(&etcd).is_empty(), "{:?}", leases_of(&etcd));
    assert_refused(
        &["etcd", "lease-keepalive", "--lease-ttl", "0"],
        2,
        "--lease-ttl 0",
    );
    assert_refused(
        &[
            "etcd",
            "lease-keepalive",
            "--proto",
            "h2",
            "--endpoints",
            "https://127.0.0.1:2379",
            "--insecure-skip-verify",
        ],
        2,
        "not plain HTTP/2",
    );
}

#[test]
fn a_revoked_lease_fails_its_keepalives_by_kind() {
    let etcd = Etcd::start();
    for proto in ["http", "grpc"] {
        let endpoint = etcd.endpoint();
        let running = support::run_bounded_on_thread(
            &[
                "etcd",
                "lease-keepalive",
                "--endpoints",
                &endpoint,
                "--proto",
                proto,
                "-z",
                "3s",
                "-c",
                "2",
                "--format",
                "json",
            ],
            Duration::from_secs(30),
        );
        // once the run's two leases exist and it has kept them alive a while, revoke them
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let leases = loop {
            let l = leases_of(&etcd);
            if l.len() == 2 {
                break l;
            }
            assert!(std::time::Instant::now() < deadline, "no leases: {l:?}");
            std::thread::sleep(Duration::from_millis(20));
        };
        std::thread::sleep(Duration::from_millis(800));
        for id in &leases {
            etcd.call("/v3/lease/revoke", &serde_json::json!({ "ID": id }));
        }
        let run = running.join().expect("the run's thread");
        assert_eq!(run.code, Some(0), "{proto}: {run:#?}");
        let report = support::report_of(&run);
        let r = proto_run(&report, proto);
        let s = &r["summary"];
        assert!(u64_at(s, "/ok") > 0, "{proto}: {s:#}");
        assert!(u64_at(s, "/failed") > 0, "{proto}: {s:#}");
        // every failure is a keepalive answered TTL 0: the lease is gone
        let errors = r["error_distribution"].as_array().expect("errors");
        assert_eq!(errors.len(), 1, "{proto}: {errors:#?}");
        assert_eq!(errors[0]["kind"], "lease", "{proto}: {errors:#?}");
        assert_eq!(u64_at(&errors[0], "/count"), u64_at(s, "/failed"));
        assert!(
            errors[0]["message"].as_str().unwrap().contains("TTL 0"),
            "{errors:#?}"
        );
        // revoked by someone else: already gone when the run revoked them
        let l = &r["leases"];
        assert_eq!(
            (
                u64_at(l, "/granted"),
                u64_at(l, "/gone"),
                u64_at(l, "/revoked")
            ),
            (2, 2, 0),
            "{l:#}"
        );
    }
}

#[test]
fn txn_put_verify_finds_every_acknowledged_transaction() {
    let etcd = Etcd::start();
    let before = etcd.revision();
    let report = run_json(&[
        "etcd",
        "txn-put",
        "--endpoints",
        &etcd.endpoint(),
        "--proto",
        "both",
        "--txn-ops",
        "3",
        "--key-space-size",
        "10",
        "-n",
        "300",
        "-c",
        "4",
        "--verify",
    ]);
    for proto in ["http", "grpc"] {
        let run = proto_run(&report, proto);
        assert_all_ok(run, 300);
        // each transaction looked up once, each of its three keys at its revision
        assert_eq!(u64_at(run, "/verify/checked"), 300, "{proto}");
        assert_eq!(u64_at(run, "/verify/lost"), 0, "{proto}");
    }
    assert_eq!(etcd.revision() - before, 600);
}

/// A range at `revision` through the gateway: the status and body.
fn range_at(etcd: &Etcd, revision: i64) -> (u16, String) {
    let body = serde_json::json!({ "key": B64.encode([0u8]), "revision": revision.to_string() });
    let (status, body) =
        support::http_client::post(etcd.client_addr(), "/v3/kv/range", &body.to_string())
            .expect("a range through the gateway");
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[test]
fn compaction_runs_beside_the_puts_and_drops_etcds_history() {
    let etcd = Etcd::start();
    let start = etcd.put("wb-old", "v");
    // history is there before
    assert_eq!(range_at(&etcd, start).0, 200);
    let before = etcd.revision();
    let report = run_json_within(
        &[
            "etcd",
            "put",
            "--endpoints",
            &etcd.endpoint(),
            "--proto",
            "both",
            "-z",
            "1500ms",
            "-c",
            "4",
            "--compact-interval",
            "300ms",
            "--compact-index-delta",
            "10",
        ],
        Duration::from_secs(30),
    );
    let mut last = 0;
    let mut written = 0;
    for proto in ["http", "grpc"] {
        let run = proto_run(&report, proto);
        written += u64_at(run, "/summary/ok");
        assert_eq!(u64_at(run, "/summary/failed"), 0, "{proto}");
        let c = &run["compaction"];
        assert_eq!(f64_at(c, "/interval_s"), 0.3, "{c:#}");
        assert_eq!(u64_at(c, "/index_delta"), 10, "{c:#}");
        let (requests, ok) = (u64_at(c, "/requests"), u64_at(c, "/ok"));
        // 1.5 s at one compaction per 0.3 s: four or five, each acknowledged
        assert!((3..=5).contains(&requests), "{proto}: {c:#}");
        assert_eq!((ok, u64_at(c, "/failed")), (requests, 0), "{proto}: {c:#}");
        let rev = c["last_revision"].as_i64().expect("a compacted revision");
        assert!(rev > last && rev > start, "{proto}: {c:#}");
        last = rev;
    }
    // compactions write no revision of their own
    assert_eq!(etcd.revision() - before, written as i64);
    // the history up to the last compaction is gone
    let (status, body) = range_at(&etcd, start);
    assert_ne!(status, 200, "{body}");
    assert!(
        body.contains("required revision has been compacted"),
        "{status} {body}"
    );
    assert_eq!(range_at(&etcd, last).0, 200);
    assert_refused(
        &["etcd", "put", "--verify", "--compact-interval", "1s"],
        2,
        "--verify with --compact-interval",
    );
    assert_refused(
        &["etcd", "txn-put", "--compact-index-delta", "5"],
        2,
        "needs --compact-interval",
    );
    assert_refused(
        &[
            "etcd",
            "put",
            "--compact-interval",
            "1s",
            "--compact-index-delta",
            "-1",
        ],
        2,
        "--compact-index-delta -1",
    );
}

#[test]
fn compaction_runs_beside_a_watch_runs_put_load() {
    let etcd = Etcd::start();
    let run = run_bounded(
        &[
            "etcd",
            "watch",
            "--endpoints",
            &etcd.endpoint(),
            "--proto",
            "grpc",
            "--put-total",
            "3000",
            "--put-rate",
            "2000",
            "--compact-interval",
            "200ms",
            "--compact-index-delta",
            "1000",
            "--format",
            "json",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    let report = support::report_of(&run);
    let c = &report["runs"][0]["compaction"];
    // 1.5 s of puts at 2000/s past revision 1000: compactions to (revision - 1000)
    let ok = u64_at(c, "/ok");
    assert!(ok >= 1, "{c:#}");
    assert_eq!(u64_at(c, "/failed"), 0, "{c:#}");
    assert!(c["last_revision"].as_i64().is_some(), "{c:#}");
    let (status, body) = range_at(&etcd, 2);
    assert!(
        status != 200 && body.contains("required revision has been compacted"),
        "{status} {body}"
    );
}

#[test]
fn sweep_runs_txn_mixed_and_lease_keepalive_rows() {
    let etcd = Etcd::start();
    let before = etcd.revision();
    let v = sweep_json(&[
        "txn-mixed",
        "--rw-ratio",
        "1",
        "--key-space-size",
        "20",
        "--endpoints",
        &etcd.endpoint(),
        "--clients",
        "1,4",
        "--key-size",
        "16",
        "--target",
        "first",
        "-n",
        "200",
    ]);
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 4, "{v:#}");
    let mut writes = 0;
    for r in rows {
        assert_eq!(u64_at(r, "/ok"), 200, "{r:#}");
        let classes = r["classes"].as_array().expect("classes");
        let count: Vec<u64> = classes.iter().map(|c| u64_at(c, "/count")).collect();
        assert_eq!(count.iter().sum::<u64>(), 200, "{r:#}");
        assert_eq!(classes[1]["class"], "write");
        writes += u64_at(&classes[1], "/ok");
    }
    assert_eq!(etcd.revision() - before, writes as i64);

    let v = sweep_json(&[
        "lease-keepalive",
        "--endpoints",
        &etcd.endpoint(),
        "--clients",
        "2",
        "--target",
        "first",
        "-n",
        "100",
    ]);
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "{v:#}");
    for r in rows {
        assert_eq!(u64_at(r, "/ok"), 100, "{r:#}");
        // no key: 0 (a dash in the markdown table)
        assert_eq!(u64_at(r, "/key_size"), 0, "{r:#}");
    }
    assert!(leases_of(&etcd).is_empty());
    assert_refused(
        &["sweep", "etcd", "lease-keepalive", "--key-size", "64"],
        2,
        "no key size",
    );
}

#[test]
fn a_timed_out_keepalive_gets_a_new_stream_and_the_run_goes_on() {
    let etcd = Etcd::start();
    let running = support::run_bounded_on_thread(
        &[
            "etcd",
            "lease-keepalive",
            "--endpoints",
            &etcd.endpoint(),
            "--proto",
            "grpc",
            "-z",
            "3s",
            "-c",
            "2",
            "--timeout",
            "300ms",
            "--format",
            "json",
        ],
        Duration::from_secs(30),
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while leases_of(&etcd).len() < 2 {
        assert!(std::time::Instant::now() < deadline, "no leases");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    // etcd stalls: the keepalives in flight time out, their streams are reset
    let paused = etcd.pause();
    std::thread::sleep(Duration::from_millis(1000));
    paused.resume();
    let run = running.join().expect("the run's thread");
    assert_eq!(run.code, Some(0), "{run:#?}");
    let report = support::report_of(&run);
    let r = proto_run(&report, "grpc");
    let s = &r["summary"];
    let failed = u64_at(s, "/failed");
    assert!(failed >= 2, "{s:#}");
    for e in r["error_distribution"].as_array().expect("errors") {
        assert_eq!(e["kind"], "timeout", "{e}");
    }
    // each client opened a new stream after its timeout (more HEADERS than clients), on the
    // same connection, and kept its lease alive again after etcd came back
    let h2 = &r["wire"]["layers"]["h2"]["out"];
    let streams = u64_at(h2, "/frames/HEADERS/count");
    assert!(
        streams > 2 && streams <= 2 + failed,
        "{streams} streams: {h2:#}"
    );
    assert_eq!(u64_at(r, "/wire/connections_opened"), 1, "{:#}", r["wire"]);
    let last = r["timeline"].as_array().expect("timeline").last().cloned();
    assert!(
        last.as_ref().is_some_and(|p| u64_at(p, "/ok") > 0),
        "no keepalive after the stall: {last:?}"
    );
    assert_eq!(u64_at(r, "/leases/revoked"), 2, "{:#}", r["leases"]);
}
