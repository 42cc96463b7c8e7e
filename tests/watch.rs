//! etcd watch against a real etcd: every put seen by every watcher exactly once, over gRPC bidi
//! streams and HTTP/1.1 chunked streams.

mod support;

use std::time::Duration;

use support::{Etcd, f64_at, run_json_within, u64_at};

fn watch_run(etcd: &Etcd, args: &[&str]) -> serde_json::Value {
    let endpoint = etcd.endpoint();
    let mut all = vec!["etcd", "watch", "--endpoints", endpoint.as_str()];
    all.extend_from_slice(args);
    run_json_within(&all, Duration::from_secs(90))
}

fn run_for<'a>(report: &'a serde_json::Value, proto: &str) -> &'a serde_json::Value {
    report["runs"]
        .as_array()
        .expect("runs[]")
        .iter()
        .find(|r| r["proto"] == proto)
        .unwrap_or_else(|| panic!("no {proto} run in {report:#}"))
}

fn assert_complete(run: &serde_json::Value, expected: u64) {
    assert_eq!(u64_at(run, "/expected_events"), expected, "{run:#}");
    assert_eq!(u64_at(run, "/events"), expected, "{run:#}");
    assert_eq!(u64_at(run, "/missing"), 0, "{run:#}");
    assert_eq!(u64_at(run, "/duplicated"), 0, "{run:#}");
    assert_eq!(u64_at(run, "/unexpected"), 0, "{run:#}");
    assert!(
        run["errors"].as_array().is_some_and(|e| e.is_empty()),
        "{run:#}"
    );
    assert!(f64_at(run, "/event_latency_ms/p50") > 0.0, "{run:#}");
}

#[test]
fn ten_watchers_see_every_put_over_both_protocols() {
    let etcd = Etcd::start();
    let before = etcd.revision();
    let report = watch_run(
        &etcd,
        &["--watchers", "10", "--put-total", "500", "--streams", "10"],
    );
    for proto in ["http", "grpc"] {
        let run = run_for(&report, proto);
        assert_complete(run, 5000);
        assert_eq!(u64_at(run, "/created"), 10);
        assert_eq!(u64_at(run, "/puts/ok"), 500);
    }
    // two runs of 500 puts each
    assert_eq!(etcd.revision() - before, 1000);
    // every event came in a chunk (HTTP/1.1) or a DATA frame (gRPC) of the watch connections
    let http = run_for(&report, "http");
    assert!(f64_at(http, "/wire/chunks_per_event") > 0.0, "{http:#}");
    assert!(
        f64_at(http, "/wire/chunk_framing_bytes_per_event") > 0.0,
        "{http:#}"
    );
    assert!(http["wire"]["data_frames_in_per_event"].is_null());
    let grpc = run_for(&report, "grpc");
    assert!(
        f64_at(grpc, "/wire/data_frames_in_per_event") > 0.0,
        "{grpc:#}"
    );
    assert!(f64_at(grpc, "/wire/bytes_in_per_event") > 0.0, "{grpc:#}");
    // HTTP/1.1: one connection per stream; gRPC: the streams share one connection
    assert_eq!(u64_at(run_for(&report, "http"), "/connections"), 10);
    assert_eq!(u64_at(run_for(&report, "grpc"), "/connections"), 1);
}

#[test]
fn a_thousand_watchers_on_ten_grpc_streams_over_two_connections() {
    let etcd = Etcd::start();
    let report = watch_run(
        &etcd,
        &[
            "--proto",
            "grpc",
            "--watchers",
            "1000",
            "--streams",
            "10",
            "--conns",
            "2",
            "--watched-keys",
            "10",
            "--put-total",
            "200",
        ],
    );
    let run = run_for(&report, "grpc");
    // 200 puts over 10 keys: 20 per key; each watcher watches one key
    assert_complete(run, 1000 * 20);
    assert_eq!(u64_at(run, "/connections"), 2);
    assert_eq!(u64_at(run, "/created"), 1000);
}

#[test]
fn fifty_http_watchers_and_a_prefix_watch() {
    let etcd = Etcd::start();
    let report = watch_run(
        &etcd,
        &[
            "--proto",
            "http",
            "--watchers",
            "50",
            "--streams",
            "50",
            "--put-total",
            "100",
            "--put-proto",
            "http",
        ],
    );
    let run = run_for(&report, "http");
    assert_complete(run, 50 * 100);
    assert_eq!(u64_at(run, "/connections"), 50);

    // A prefix watch over 4 keys sees all 40 puts.
    let report = watch_run(
        &etcd,
        &[
            "--proto",
            "grpc",
            "--watchers",
            "2",
            "--streams",
            "1",
            "--prefix",
            "--watched-keys",
            "4",
            "--put-total",
            "40",
        ],
    );
    assert_complete(run_for(&report, "grpc"), 2 * 40);
}
