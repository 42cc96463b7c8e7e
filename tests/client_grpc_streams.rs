//! Streaming gRPC methods against the built-in server's `wirebench.stream.v1.StreamEcho`
//! (crates/wire/proto/stream.proto): each kind on both h2 clients, messages counted each way,
//! the per-message latencies, `--stream-interval`, the server's faults on streams, a server
//! stream of 100,000 messages, and what the stream flags refuse.

mod support;

use serde_json::Value;
use support::{ServeProcess, assert_refused, run_json, u64_at};

fn stream_proto() -> String {
    format!(
        "{}/crates/wire/proto/stream.proto",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// `wirebench grpc` on `method` of the built-in server's StreamEcho: the run's JSON.
fn call(server: &ServeProcess, method: &str, extra: &[&str]) -> Value {
    let proto = stream_proto();
    let target = server.target();
    let method = format!("wirebench.stream.v1.StreamEcho/{method}");
    let mut args = vec!["grpc", &target, &method, "--proto-file", &proto];
    args.extend_from_slice(extra);
    run_json(&args)["runs"][0].clone()
}

/// A percentile of a distribution, ms.
fn percentile(d: &Value, q: f64) -> f64 {
    d.as_array()
        .and_then(|a| a.iter().find(|p| p["percentile"] == q))
        .and_then(|p| p["latency_ms"].as_f64())
        .unwrap_or_else(|| panic!("no p{q} in {d:#}"))
}

#[test]
fn every_streaming_kind_against_the_built_in_server() {
    let server = ServeProcess::start(&["--threads", "1", "--no-h3"]);
    for client in ["wire", "h2"] {
        // server-streaming: 50 replies per call
        let run = call(
            &server,
            "ServerEcho",
            &[
                "-d",
                r#"{"ping":"s","count":50}"#,
                "-n",
                "100",
                "-c",
                "4",
                "--h2-client",
                client,
            ],
        );
        assert_eq!(u64_at(&run, "/summary/ok"), 100, "{client}: {run:#}");
        assert_eq!(u64_at(&run, "/streaming/messages"), 5000, "{client}");
        assert_eq!(u64_at(&run, "/streaming/messages_sent"), 0, "{client}");
        assert_eq!(run["sample_response"][49]["seq"], "50", "{client}");
        // client-streaming: the server's summary says how many messages came
        let run = call(
            &server,
            "ClientEcho",
            &[
                "-d",
                r#"[{"ping":"a"},{"ping":"b"},{"ping":"c"}]"#,
                "--stream-messages",
                "7",
                "-n",
                "100",
                "-c",
                "4",
                "--h2-client",
                client,
            ],
        );
        assert_eq!(u64_at(&run, "/summary/ok"), 100, "{client}: {run:#}");
        assert_eq!(u64_at(&run, "/streaming/messages_sent"), 700, "{client}");
        assert_eq!(u64_at(&run, "/streaming/messages"), 100, "{client}");
        assert_eq!(run["sample_response"][0]["messages"], "7", "{client}");
        // a, b, c, a, b, c, a: the last one sent is "a"
        assert_eq!(run["sample_response"][0]["body"], "a", "{client}");
        // bidi, both ways of sending
        for (mode, extra) in [("pingpong", "10"), ("free", "200")] {
            let run = call(
                &server,
                "BidiEcho",
                &[
                    "--bidi",
                    mode,
                    "--stream-messages",
                    extra,
                    "-n",
                    "50",
                    "-c",
                    "5",
                    "--h2-client",
                    client,
                ],
            );
            let n: u64 = extra.parse().unwrap();
            assert_eq!(u64_at(&run, "/summary/ok"), 50, "{client} {mode}: {run:#}");
            assert_eq!(
                u64_at(&run, "/streaming/messages"),
                50 * n,
                "{client} {mode}"
            );
            assert_eq!(
                u64_at(&run, "/streaming/messages_sent"),
                50 * n,
                "{client} {mode}"
            );
            let timed = !run["streaming"]["message_latency_distribution"]
                .as_array()
                .unwrap()
                .is_empty();
            assert_eq!(timed, mode == "pingpong", "{client} {mode}");
        }
    }
}

#[test]
fn intervals_and_faults_shape_the_streams() {
    // --stream-interval: four messages 5 ms apart take at least 15 ms a call, and the
    // response comes soon after the last
    let server = ServeProcess::start(&["--threads", "1", "--no-h3"]);
    let run = call(
        &server,
        "ClientEcho",
        &[
            "--stream-messages",
            "4",
            "--stream-interval",
            "5ms",
            "-n",
            "20",
            "-c",
            "2",
        ],
    );
    assert_eq!(u64_at(&run, "/summary/ok"), 20, "{run:#}");
    assert!(f64_of(&run, "/summary/fastest_ms") >= 15.0, "{run:#}");
    let last = percentile(&run["streaming"]["last_to_response_distribution"], 50.0);
    assert!(last < 5.0, "last message to the response: {last} ms");
    // --stream-messages as a duration: messages 20 ms apart for 200 ms, the last one the
    // first whose next would pass the end (at 180 ms: about 10 a stream)
    let run = call(
        &server,
        "BidiEcho",
        &[
            "--stream-messages",
            "200ms",
            "--stream-interval",
            "20ms",
            "-n",
            "6",
            "-c",
            "3",
        ],
    );
    assert_eq!(u64_at(&run, "/summary/ok"), 6, "{run:#}");
    let (sent, received) = (
        u64_at(&run, "/streaming/messages_sent"),
        u64_at(&run, "/streaming/messages"),
    );
    assert_eq!(sent, received, "ping-pong: a reply per message");
    // each stream sends from 0 ms; a message is late by its reply at most, so between 6 and
    // 10 messages each (10 when none is late)
    assert!(
        (36..=60).contains(&sent),
        "{sent} messages in 6 streams of 200 ms"
    );
    let fastest = f64_of(&run, "/summary/fastest_ms");
    assert!(
        (170.0..1000.0).contains(&fastest),
        "a 200 ms stream took {fastest} ms"
    );
    drop(server);
    // a delay is waited before each reply: every ping-pong message takes at least that
    let server = ServeProcess::start(&["--threads", "1", "--no-h3", "--delay", "3ms"]);
    let run = call(
        &server,
        "BidiEcho",
        &["--stream-messages", "5", "-n", "20", "-c", "2"],
    );
    assert_eq!(u64_at(&run, "/summary/ok"), 20, "{run:#}");
    let fastest = percentile(&run["streaming"]["message_latency_distribution"], 10.0);
    assert!(fastest >= 3.0, "a reply {fastest} ms after its message");
    drop(server);
    // an injected failure ends each call with the configured status
    let server = ServeProcess::start(&[
        "--threads",
        "1",
        "--no-h3",
        "--fail",
        "100%",
        "--fail-grpc-code",
        "8",
    ]);
    let run = {
        let proto = stream_proto();
        let target = server.target();
        let out = support::run_bounded(
            &[
                "grpc",
                &target,
                "wirebench.stream.v1.StreamEcho/BidiEcho",
                "--proto-file",
                &proto,
                "-n",
                "10",
                "--format",
                "json",
            ],
            support::RUN_TIMEOUT,
        );
        assert_eq!(out.code, Some(1), "{out:#?}");
        serde_json::from_str::<Value>(&out.stdout).unwrap()["runs"][0].clone()
    };
    assert_eq!(u64_at(&run, "/summary/failed"), 10, "{run:#}");
    assert_eq!(
        run["status_distribution"][0]["status"],
        "RESOURCE_EXHAUSTED"
    );
}

fn f64_of(v: &Value, pointer: &str) -> f64 {
    v.pointer(pointer)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{pointer} in {v:#}"))
}

#[test]
fn a_server_stream_of_100_000_messages_is_counted_exactly() {
    let server = ServeProcess::start(&["--threads", "1", "--no-h3"]);
    let run = call(
        &server,
        "ServerEcho",
        &["-d", r#"{"ping":"m","count":100000}"#, "-n", "2", "-c", "1"],
    );
    assert_eq!(u64_at(&run, "/summary/ok"), 2, "{run:#}");
    assert_eq!(u64_at(&run, "/streaming/messages"), 200_000);
    assert_eq!(u64_at(&run, "/wire/layers/h2/in/grpc_messages"), 200_000);
}

#[test]
fn the_stream_flags_refuse_what_cannot_be_sent() {
    let proto = stream_proto();
    let m = "wirebench.stream.v1.StreamEcho/BidiEcho";
    let base = ["grpc", "127.0.0.1:9", m, "--proto-file", proto.as_str()];
    for (extra, words) in [
        (&["--stream-messages", "0"][..], "--stream-messages"),
        (&["--stream-interval", "0s"][..], "--stream-interval"),
        (&["--bidi", "sideways"][..], "sideways"),
        (&["-d", "[]"][..], "at least one message"),
        (&["--stream-messages", "0s"][..], "--stream-messages"),
        (
            &["--stream-messages", "ten"][..],
            "a number of messages or a duration",
        ),
        (
            &["--stream-messages", "1s", "--bidi", "free"][..],
            "needs --stream-interval",
        ),
    ] {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        assert_refused(&args, 2, words);
    }
}
