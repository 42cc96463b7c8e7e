//! etcd watch against a real etcd: every put seen by every watcher exactly once, over gRPC bidi
//! streams and HTTP/1.1 chunked streams; and the put load's own accounting: every put ends ok,
//! failed by kind, or not sent, when etcd stalls (SIGSTOP), dies, or closes every connection.

mod support;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::Value;

use support::{
    Etcd, Run, f64_at, proto_run, report_of, run_bounded_on_thread, run_json_within, u64_at,
};

fn watch_run(etcd: &Etcd, args: &[&str]) -> serde_json::Value {
    bench_run(etcd, "watch", args)
}

/// `wirebench etcd COMMAND --endpoints ETCD ARGS --format json`, its JSON report.
fn bench_run(etcd: &Etcd, command: &str, args: &[&str]) -> serde_json::Value {
    let endpoint = etcd.endpoint();
    let mut all = vec!["etcd", command, "--endpoints", endpoint.as_str()];
    all.extend_from_slice(args);
    run_json_within(&all, Duration::from_secs(90))
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
    // every latency summary carries the histogram it came from (ns, V2 compressed)
    for lat in ["event_latency_ms", "creation_ms", "puts/latency_ms"] {
        let text = run
            .pointer(&format!("/{lat}/hdr"))
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{lat}.hdr: {run:#}"));
        let h = wirebench::report::hdr::decode(text).unwrap_or_else(|e| panic!("{lat}: {e}"));
        assert_eq!(h.len(), u64_at(run, &format!("/{lat}/count")), "{lat}");
        let p50 = h.value_at_quantile(0.5) as f64 / 1e6;
        assert_eq!(p50, f64_at(run, &format!("/{lat}/p50")), "{lat}");
    }
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
        let run = proto_run(&report, proto);
        assert_complete(run, 5000);
        assert_eq!(u64_at(run, "/created"), 10);
        assert_eq!(u64_at(run, "/puts/ok"), 500);
    }
    // two runs of 500 puts each
    assert_eq!(etcd.revision() - before, 1000);
    // every event came in a chunk (HTTP/1.1) or a DATA frame (gRPC) of the watch connections
    let http = proto_run(&report, "http");
    assert!(f64_at(http, "/wire/chunks_per_event") > 0.0, "{http:#}");
    assert!(
        f64_at(http, "/wire/chunk_framing_bytes_per_event") > 0.0,
        "{http:#}"
    );
    assert!(http["wire"]["data_frames_in_per_event"].is_null());
    let grpc = proto_run(&report, "grpc");
    assert!(
        f64_at(grpc, "/wire/data_frames_in_per_event") > 0.0,
        "{grpc:#}"
    );
    assert!(f64_at(grpc, "/wire/bytes_in_per_event") > 0.0, "{grpc:#}");
    // the uncompressed header lists both ways, for the HPACK ratio: the ten requests' and the
    // ten response heads'
    let conn = &grpc["per_connection"][0]["h2"];
    for dir in ["out", "in"] {
        assert!(
            u64_at(conn, &format!("/{dir}/header_list_bytes")) > 10 * ":status200".len() as u64,
            "{dir}: {conn:#}"
        );
    }
    // HTTP/1.1: one connection per stream; gRPC: the streams share one connection
    assert_eq!(u64_at(proto_run(&report, "http"), "/connections"), 10);
    assert_eq!(u64_at(proto_run(&report, "grpc"), "/connections"), 1);
}

/// On both h2 clients: wirebench's own (the default) and the h2 crate's.
#[test]
fn watch_latency_times_every_event_from_its_put_sent_and_from_its_put_acknowledged() {
    let etcd = Etcd::start();
    let before = etcd.revision();
    let report = bench_run(
        &etcd,
        "watch-latency",
        &[
            "--streams",
            "3",
            "--watchers-per-stream",
            "4",
            "--put-total",
            "200",
            "--put-rate",
            "400",
            "--key-size",
            "24",
        ],
    );
    for proto in ["http", "grpc"] {
        let run = proto_run(&report, proto);
        assert_eq!(run["kind"], "watch-latency", "{run:#}");
        assert_complete(run, 12 * 200);
        assert_eq!(u64_at(run, "/created"), 12);
        let puts = &run["puts"];
        assert_eq!(u64_at(puts, "/ok"), 200, "{puts:#}");
        assert_eq!(u64_at(puts, "/clients"), 1, "{puts:#}");
        // paced: 200 puts at 400/s take half a second, not less
        let rate = f64_at(puts, "/achieved_rate");
        assert!(rate <= 440.0, "{proto}: {rate} puts/s for 400 asked");
        // every event is timed both ways, and an acknowledgement comes after the send
        let sent = &run["event_latency_ms"];
        let acked = &run["event_latency_from_ack_ms"];
        assert_eq!(u64_at(acked, "/count"), 12 * 200, "{run:#}");
        assert!(
            f64_at(acked, "/average") <= f64_at(sent, "/average")
                && f64_at(acked, "/slowest") <= f64_at(sent, "/slowest"),
            "{proto}: from the ack {acked}, from the send {sent}"
        );
        assert!(u64_at(run, "/events_before_ack") <= 12 * 200, "{run:#}");
    }
    assert_eq!(etcd.revision() - before, 400);
}

#[test]
fn watch_get_watchers_replay_the_history_while_the_range_load_runs() {
    let etcd = Etcd::start();
    let before = etcd.revision();
    let report = bench_run(
        &etcd,
        "watch-get",
        &[
            "--watchers",
            "300",
            "--streams",
            "3",
            "--events",
            "8",
            "--get-clients",
            "2",
        ],
    );
    for proto in ["http", "grpc"] {
        let run = proto_run(&report, proto);
        assert_eq!(run["kind"], "watch-get", "{run:#}");
        // created after the puts, from the first put's revision: every one of the 8 events
        // replayed to every watcher, nothing else
        assert_complete(run, 300 * 8);
        assert_eq!(u64_at(run, "/created"), 300);
        assert!(f64_at(run, "/catch_up_s") > 0.0, "{run:#}");
        let gets = &run["gets"];
        assert_eq!(gets["proto"], proto, "{gets:#}");
        assert!(u64_at(gets, "/ok") >= 1, "{proto}: {gets:#}");
        assert_eq!(u64_at(gets, "/failed"), 0, "{proto}: {gets:#}");
        assert_eq!(
            u64_at(gets, "/count"),
            u64_at(gets, "/latency_ms/count"),
            "{gets:#}"
        );
    }
    // the gets read; only the 8 puts of each run moved the revision
    assert_eq!(etcd.revision() - before, 16);
}

#[test]
fn watch_latency_and_watch_get_refuse_bad_flags() {
    for (args, says) in [
        (&["watch-latency", "--key-size", "3"][..], "--key-size"),
        (
            &["watch-latency", "--watchers-per-stream", "0"],
            "--watchers-per-stream",
        ),
        (&["watch-latency", "--put-rate", "0"], "--put-rate"),
        (
            &[
                "watch-latency",
                "--watchers-per-stream",
                "100000",
                "--put-total",
                "1000",
            ],
            "receipt time",
        ),
        (&["watch-latency", "--val-size", "4"], "--val-size"),
        (&["watch-get", "--events", "0"], "--events"),
        (&["watch-get", "--get-clients", "0"], "--get-clients"),
        (&["watch-get", "--get-key", ""], "--get-key"),
        (
            &["watch-get", "--watchers", "2", "--streams", "3"],
            "--streams",
        ),
    ] {
        let mut all = vec!["etcd"];
        all.extend_from_slice(args);
        let run = support::run_bounded(&all, Duration::from_secs(10));
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {}", run.stderr);
        assert!(
            lines[0].starts_with("error: ") && lines[0].contains(says),
            "{args:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn a_thousand_watchers_on_ten_grpc_streams_over_two_connections() {
    for client in ["wire", "h2"] {
        a_thousand_watchers_on(client);
    }
}

fn a_thousand_watchers_on(client: &str) {
    let etcd = Etcd::start();
    let report = watch_run(
        &etcd,
        &[
            "--h2-client",
            client,
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
    let run = proto_run(&report, "grpc");
    // 200 puts over 10 keys: 20 per key; each watcher watches one key
    assert_complete(run, 1000 * 20);
    assert_eq!(u64_at(run, "/connections"), 2);
    assert_eq!(u64_at(run, "/created"), 1000);
}

/// etcd's HTTP server drops the unread rest of a request body when the gateway writes the
/// response head (on the first confirmation) unless the request says `Connection: close`: without
/// it, one stream of 2,000 watchers lost most of them in 6 of 6 tries by hand.
#[test]
fn two_thousand_watchers_on_one_http_stream_are_all_created() {
    let etcd = Etcd::start();
    let report = watch_run(
        &etcd,
        &[
            "--proto",
            "http",
            "--watchers",
            "2000",
            "--streams",
            "1",
            "--watched-keys",
            "5",
            "--put-total",
            "20",
        ],
    );
    let run = proto_run(&report, "http");
    assert_eq!(u64_at(run, "/created"), 2000);
    // 20 puts over 5 keys: 4 per key; each watcher watches one key
    assert_complete(run, 2000 * 4);
    assert_eq!(u64_at(run, "/connections"), 1);
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
    let run = proto_run(&report, "http");
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
    assert_complete(proto_run(&report, "grpc"), 2 * 40);
}

/// The puts' per-put timeout in the fault tests.
const PUT_TIMEOUT: &str = "300ms";
/// 300 puts at 100/s: a put phase of 3 s.
const PUTS: u64 = 300;
const PUT_RATE: &str = "100";
const PUT_PHASE: Duration = Duration::from_secs(3);
/// When the fault starts, counted from starting wirebench (the put phase is under way by then).
const FAULT_AT: Duration = Duration::from_millis(1000);
/// How long etcd stays stopped.
const STALL_FOR: Duration = Duration::from_millis(1000);
/// The run's --timeout: the wait for outstanding events after the last put.
const DRAIN: Duration = Duration::from_secs(2);
/// Slack for process start, etcd's catch-up and a loaded machine.
const MARGIN: Duration = Duration::from_secs(4);
/// The test kills wirebench after this long (it fails the bounds above long before).
const HARD_LIMIT: Duration = Duration::from_secs(60);

/// `etcd watch` with one gRPC watcher on one key and a paced put load over `put_proto`, started
/// on a background thread.
fn spawn_paced_watch(
    etcd: &Etcd,
    watch_proto: &str,
    put_proto: &str,
) -> std::thread::JoinHandle<Run> {
    run_bounded_on_thread(
        &[
            "etcd",
            "watch",
            "--endpoints",
            &etcd.endpoint(),
            "--proto",
            watch_proto,
            "--put-proto",
            put_proto,
            "--put-total",
            &PUTS.to_string(),
            "--put-rate",
            PUT_RATE,
            "--put-clients",
            "4",
            "--put-timeout",
            PUT_TIMEOUT,
            "--timeout",
            &format!("{}s", DRAIN.as_secs()),
            "--connect-timeout",
            "1s",
            "--format",
            "json",
        ],
        HARD_LIMIT,
    )
}

/// The `puts` object adds up: ok + failed + not_sent == total == --put-total, the error counts
/// add up to failed and the reasons to not_sent. Returns (ok, failed, not_sent).
fn assert_puts_add_up(puts: &Value) -> (u64, u64, u64) {
    let (ok, failed, not_sent) = (
        u64_at(puts, "/ok"),
        u64_at(puts, "/failed"),
        u64_at(puts, "/not_sent"),
    );
    assert_eq!(u64_at(puts, "/total"), PUTS, "{puts:#}");
    assert_eq!(ok + failed + not_sent, PUTS, "{puts:#}");
    let sum = |field: &str| -> u64 {
        puts[field]
            .as_array()
            .unwrap_or_else(|| panic!("{field}[] in {puts:#}"))
            .iter()
            .map(|e| u64_at(e, "/count"))
            .sum()
    };
    assert_eq!(sum("errors"), failed, "{puts:#}");
    assert_eq!(sum("not_sent_reasons"), not_sent, "{puts:#}");
    (ok, failed, not_sent)
}

fn error_kinds(list: &Value) -> BTreeSet<String> {
    list.as_array()
        .expect("an error list")
        .iter()
        .map(|e| e["kind"].as_str().expect("kind").to_string())
        .collect()
}

/// etcd is stopped for a second in the middle of the put phase. The puts in flight then get no
/// answer within --put-timeout: they fail as `timeout` (HTTP/1.1 replaces its connection, gRPC
/// resets the stream) and the load goes on when etcd is back. The run ends by itself, every put
/// is counted once, and no acknowledged event is missing, so it exits 0. A put that timed out
/// may still have been applied once etcd resumed: its event is `unexpected`, and etcd's revision
/// shows exactly those.
fn stalled_etcd_times_out_puts(put_proto: &str) {
    let etcd = Etcd::start();
    let before = etcd.revision();
    let started = Instant::now();
    let runner = spawn_paced_watch(&etcd, "grpc", put_proto);
    std::thread::sleep(FAULT_AT.saturating_sub(started.elapsed()));
    let paused = etcd.pause();
    std::thread::sleep(STALL_FOR);
    paused.resume();
    let run = runner.join().expect("the wirebench runner thread");

    let what = format!("watch with {put_proto} puts, etcd stopped for {STALL_FOR:?}");
    let bound = PUT_PHASE + STALL_FOR + MARGIN;
    assert!(
        run.elapsed < bound,
        "{what}: took {:?} (bound {bound:?})",
        run.elapsed
    );
    assert_eq!(run.code, Some(0), "{what}: {run:#?}");
    let report = report_of(&run);
    let w = proto_run(&report, "grpc");
    let puts = &w["puts"];
    let (ok, failed, not_sent) = assert_puts_add_up(puts);
    eprintln!(
        "{what}: {ok} ok, {failed} failed, {not_sent} not sent, {} reconnects, {} unexpected events; {:?}",
        u64_at(puts, "/reconnects"),
        u64_at(w, "/unexpected"),
        run.elapsed
    );
    // Every failure is a put that got no answer in time; etcd's kernel kept accepting
    // connections, so no client found its server unreachable. The put load is the engine's
    // open loop: a put due while every client waited out its timeout expires unsent (`late`).
    assert!(failed > 0, "{what}: no put failed: {puts:#}");
    assert_eq!(
        error_kinds(&puts["errors"]),
        BTreeSet::from(["timeout".to_string()]),
        "{what}: {puts:#}"
    );
    if not_sent > 0 {
        assert_eq!(
            error_kinds(&puts["not_sent_reasons"]),
            BTreeSet::from(["late".to_string()]),
            "{what}: {puts:#}"
        );
    }
    // The watcher saw every acknowledged put exactly once.
    assert_eq!(u64_at(w, "/expected_events"), ok, "{w:#}");
    assert_eq!(u64_at(w, "/missing"), 0, "{w:#}");
    assert_eq!(u64_at(w, "/duplicated"), 0, "{w:#}");
    assert!(
        w["errors"].as_array().is_some_and(|e| e.is_empty()),
        "{w:#}"
    );
    // etcd applied every acknowledged put and some of the timed-out ones; the watcher saw
    // those as its unexpected events.
    let applied = u64::try_from(etcd.revision() - before).expect("the revision only grows");
    assert!(
        (ok..=ok + failed).contains(&applied),
        "{what}: etcd applied {applied} puts, {ok} ok, {failed} failed"
    );
    assert_eq!(u64_at(w, "/unexpected"), applied - ok, "{what}: {w:#}");
}

#[test]
fn http_puts_time_out_while_etcd_is_stopped_and_the_run_ends() {
    stalled_etcd_times_out_puts("http");
}

#[test]
fn grpc_puts_time_out_while_etcd_is_stopped_and_the_run_ends() {
    stalled_etcd_times_out_puts("grpc");
}

/// etcd is killed in the middle of the put phase and stays down: each put client fails the puts
/// that find no server (`closed`, `io`, `connect`, ...), retries with backoff, and once the
/// server has been unreachable for longer than --put-timeout counts the rest of its puts as not
/// sent and stops. The run ends soon after; every put is counted once.
#[test]
fn puts_are_not_sent_once_etcd_has_been_gone_longer_than_the_put_timeout() {
    let mut etcd = Etcd::start();
    for put_proto in ["http", "grpc"] {
        let before = etcd.revision();
        let started = Instant::now();
        let runner = spawn_paced_watch(&etcd, "grpc", put_proto);
        std::thread::sleep(FAULT_AT.saturating_sub(started.elapsed()));
        etcd.stop();
        let run = runner.join().expect("the wirebench runner thread");

        let what = format!("watch with {put_proto} puts, etcd killed");
        // give up after --put-timeout, then at most --timeout of waiting for events
        let bound = FAULT_AT + Duration::from_millis(300) + DRAIN + MARGIN;
        assert!(
            run.elapsed < bound,
            "{what}: took {:?} (bound {bound:?})",
            run.elapsed
        );
        // Events of puts acknowledged just before the kill may be lost with the watch stream:
        // then the run says so and exits 1. Failed and unsent puts alone do not fail it.
        match run.code {
            Some(0) => {}
            Some(1) => assert!(run.stderr.contains("missing"), "{what}: {run:#?}"),
            _ => panic!("{what}: {run:#?}"),
        }
        let report = report_of(&run);
        let puts = &proto_run(&report, "grpc")["puts"];
        let (ok, failed, not_sent) = assert_puts_add_up(puts);
        eprintln!(
            "{what}: {ok} ok, {failed} failed, {not_sent} not sent; {:?}",
            run.elapsed
        );
        assert!(ok > 0 && failed > 0 && not_sent > 0, "{what}: {puts:#}");
        let allowed: BTreeSet<String> = [
            "closed",
            "io",
            "connect",
            "h2",
            "goaway",
            "rst_stream",
            "timeout",
        ]
        .into_iter()
        .map(str::to_string)
        .collect();
        assert!(
            error_kinds(&puts["errors"]).is_subset(&allowed),
            "{what}: {puts:#}"
        );
        assert!(
            error_kinds(&puts["errors"]).contains("connect"),
            "{what}: {puts:#}"
        );
        let reasons = puts["not_sent_reasons"]
            .as_array()
            .expect("not_sent_reasons[]");
        // open loop: the puts due while no client could send expire unsent (`late`); the
        // schedule, not a client giving up, bounds the run
        assert!(
            reasons.iter().all(|r| r["kind"] == "late"),
            "{what}: {puts:#}"
        );

        etcd.restart();
        let applied = u64::try_from(etcd.revision() - before).expect("the revision only grows");
        assert!(
            (ok..=ok + failed).contains(&applied),
            "{what}: etcd applied {applied} puts, {ok} ok, {failed} failed"
        );
    }
}

/// (revision handed out, key put) of every put a `ClosingGateway` answered.
type Answered = Arc<Mutex<Vec<(i64, Vec<u8>)>>>;

/// A stand-in for the etcd gateway's put endpoint: answers every `POST /v3/kv/put` with a fresh
/// revision and `Connection: close`, then closes. Counts connections and keeps the keys put.
struct ClosingGateway {
    addr: SocketAddr,
    connections: Arc<Mutex<usize>>,
    answered: Answered,
}

impl ClosingGateway {
    /// `accept_only`: accept this many connections, then stop listening (later connects are
    /// refused); `None`: listen for the whole test.
    fn start(accept_only: Option<usize>) -> ClosingGateway {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(Mutex::new(0));
        let answered: Answered = Arc::default();
        let (conns, seen) = (connections.clone(), answered.clone());
        std::thread::spawn(move || {
            let mut accepted = Vec::new();
            loop {
                if accept_only.is_some_and(|n| accepted.len() >= n) {
                    // Stop listening before answering: the clients' reconnects are refused.
                    drop(listener);
                    break;
                }
                let Ok((stream, _)) = listener.accept() else {
                    break;
                };
                *conns.lock().unwrap() += 1;
                if accept_only.is_some() {
                    accepted.push(stream);
                } else {
                    let seen = seen.clone();
                    std::thread::spawn(move || answer_one_put(stream, &seen));
                }
            }
            for stream in accepted {
                let seen = seen.clone();
                std::thread::spawn(move || answer_one_put(stream, &seen));
            }
        });
        ClosingGateway {
            addr,
            connections,
            answered,
        }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// Reads one request, answers it as etcd's gateway would (with `Connection: close`), closes.
fn answer_one_put(mut s: TcpStream, seen: &Mutex<Vec<(i64, Vec<u8>)>>) {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let (head_end, length) = loop {
        let Ok(n) = s.read(&mut buf) else { return };
        if n == 0 {
            return;
        }
        raw.extend_from_slice(&buf[..n]);
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..end]).to_string();
            assert!(head.starts_with("POST /v3/kv/put HTTP/1.1\r\n"), "{head}");
            let length: usize = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .expect("a Content-Length");
            break (end + 4, length);
        }
    };
    while raw.len() < head_end + length {
        let Ok(n) = s.read(&mut buf) else { return };
        if n == 0 {
            return;
        }
        raw.extend_from_slice(&buf[..n]);
    }
    let body: Value = serde_json::from_slice(&raw[head_end..head_end + length]).expect("JSON body");
    let key = B64
        .decode(body["key"].as_str().expect("key"))
        .expect("base64 key");
    let revision = {
        let mut seen = seen.lock().unwrap();
        let revision = 100 + seen.len() as i64;
        seen.push((revision, key));
        revision
    };
    let json = format!(r#"{{"header":{{"revision":"{revision}"}}}}"#);
    let resp = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{json}",
        json.len()
    );
    let _ = s.write_all(resp.as_bytes());
}

/// The put load's counts and failures, for assertion messages (its Debug form includes the
/// latency histogram).
fn summary(out: &wirebench::report::watch::PutOutcome) -> String {
    format!(
        "{} ok, {} failed, {} not sent, {} reconnects; errors {:?}; not sent {:?}",
        out.ok, out.failed, out.not_sent, out.reconnects, out.errors, out.not_sent_reasons
    )
}

/// The put load's configuration as `etcd watch` would build it from these flags.
fn put_config(endpoint: &str, extra: &[&str]) -> wirebench::etcd::watch::WatchConfig {
    use clap::Parser as _;
    let mut args = vec![
        "wirebench",
        "etcd",
        "watch",
        "--endpoints",
        endpoint,
        "--put-proto",
        "http",
        "--watched-keys",
        "3",
    ];
    args.extend_from_slice(extra);
    let cli = wirebench::cli::Cli::try_parse_from(args).expect("valid flags");
    match cli.into_action().expect("a valid watch configuration") {
        wirebench::app::Action::Watch(cfg) => cfg,
        _ => panic!("not a watch action"),
    }
}

/// Every answer says `Connection: close`: each HTTP/1.1 put client opens a new connection for
/// each of its puts, and every put is sent and counted OK (the put client used to stop after its
/// first put, leaving the rest neither sent nor counted).
#[test]
fn http_puts_reconnect_after_every_connection_close_answer() {
    let gw = ClosingGateway::start(None);
    let cfg = put_config(&gw.endpoint(), &["--put-total", "20", "--put-clients", "2"]);
    let out = wirebench::app::watch::put_load(&cfg, &cfg.endpoints).expect("the put load runs");
    assert_eq!(
        (out.ok, out.failed, out.not_sent),
        (20, 0, 0),
        "{}",
        summary(&out)
    );
    // two connections at setup, then one new connection per later put
    assert_eq!(out.reconnects, 18, "{}", summary(&out));
    assert_eq!(*gw.connections.lock().unwrap(), 20);
    let answered = gw.answered.lock().unwrap().clone();
    assert_eq!(answered.len(), 20);
    // the revisions recorded per key are exactly the ones the server handed out for that key
    for (k, revisions) in out.revisions.iter().enumerate() {
        let key = format!("wirebench/watch/{k}").into_bytes();
        let mut expected: Vec<i64> = answered
            .iter()
            .filter(|(_, put)| *put == key)
            .map(|&(r, _)| r)
            .collect();
        expected.sort_unstable();
        let mut got = revisions.clone();
        got.sort_unstable();
        assert_eq!(got, expected, "key {k}");
    }
    assert_eq!(out.revisions.iter().map(Vec::len).sum::<usize>(), 20);
}

/// The server answers each client's first put with `Connection: close` and is gone afterwards
/// (connects are refused): each client fails its puts with `connect` while it backs off, and
/// once the server has been unreachable for longer than --put-timeout its remaining puts are not
/// sent. Every put is counted once, and the load stops on its own.
#[test]
fn http_puts_not_sent_after_the_server_is_gone_longer_than_the_put_timeout() {
    let gw = ClosingGateway::start(Some(2));
    let cfg = put_config(
        &gw.endpoint(),
        &[
            "--put-total",
            "40",
            "--put-clients",
            "2",
            "--put-timeout",
            "300ms",
        ],
    );
    let started = Instant::now();
    let out = wirebench::app::watch::put_load(&cfg, &cfg.endpoints).expect("the put load runs");
    let took = started.elapsed();
    eprintln!(
        "{} ok, {} failed, {} not sent in {took:?}",
        out.ok, out.failed, out.not_sent
    );
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert_eq!(out.ok, 2, "{}", summary(&out));
    assert_eq!(out.ok + out.failed + out.not_sent, 40, "{}", summary(&out));
    assert!(out.failed >= 2 && out.not_sent > 0, "{}", summary(&out));
    assert!(
        out.errors.keys().all(|f| f.kind.as_str() == "connect"),
        "{}",
        summary(&out)
    );
    assert_eq!(out.errors.values().sum::<u64>(), out.failed);
    assert!(
        out.not_sent_reasons
            .keys()
            .all(|f| f.kind.as_str() == "connect" && f.to_string().contains("gave up")),
        "{}",
        summary(&out)
    );
    assert_eq!(out.not_sent_reasons.values().sum::<u64>(), out.not_sent);
    assert_eq!(out.reconnects, 0);
}
