//! `wirebench grpc TARGET Service/Method` against servers: a Python grpcio server of
//! tests/interop/rich.proto (which this project did not write; nested messages, repeated
//! fields, maps, enums, oneofs, bytes and 64-bit integers), and the built-in echo server with
//! the request as protobuf bytes; bad input exits 2 with one line.

mod support;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};

use serde_json::json;
use support::{assert_refused, run_json, u64_at};

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rich_proto() -> String {
    manifest_dir()
        .join("tests/interop/rich.proto")
        .to_string_lossy()
        .into_owned()
}

/// tests/interop/rich_server.py on an ephemeral port; it stops when its stdin closes (drop).
struct RichServer {
    child: Child,
    _stdin: ChildStdin,
    target: String,
}

impl RichServer {
    fn start() -> RichServer {
        RichServer::start_with(&[])
    }

    /// With `extra` arguments (`--no-reflection`).
    fn start_with(extra: &[&str]) -> RichServer {
        let ok = Command::new("python3")
            .args(["-c", "import grpc, grpc_tools, grpc_reflection"])
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "python3 with grpcio, grpcio-tools and grpcio-reflection is needed: {}",
            support::PYTHON_PEERS
        );
        let mut cmd = Command::new("python3");
        cmd.arg(manifest_dir().join("tests/interop/rich_server.py"))
            .args(["--seconds", "120"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        support::die_with_parent(&mut cmd);
        let mut child = cmd.spawn().expect("start rich_server.py");
        let stdin = child.stdin.take().expect("its stdin");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("its stdout"))
            .read_line(&mut line)
            .expect("the server's first line");
        let target = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("rich_server.py said {line:?}"))
            .to_string();
        RichServer {
            child,
            _stdin: stdin,
            target,
        }
    }
}

impl Drop for RichServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn every_kind_of_field_goes_through_a_grpcio_server_and_back() {
    let server = RichServer::start();
    let request = json!({
        "name": "n",
        "big": "-9007199254740993",
        "count": "18446744073709551615",
        "blob": "AAEC/w==",
        "color": "GREEN",
        "parts": [{"name": "p", "sizes": [1, -2]}, {"name": "q"}],
        "tally": {"a": "5", "b": "-7"},
        "word": "w"
    });
    let data = request.to_string();
    let report = run_json(&[
        "grpc",
        &server.target,
        "rich.v1.Mirror/Reflect",
        "--proto-file",
        &rich_proto(),
        "-d",
        &data,
        "-c",
        "4",
        "-n",
        "200",
    ]);
    let run = &report["runs"][0];
    assert_eq!(run["proto"], "grpc");
    assert_eq!(u64_at(run, "/summary/ok"), 200, "{:#}", run["summary"]);
    // name 3 + big 11 + count 11 + blob 6 + color 2 + parts 18 and 5 + tally 7 and 16 + word 3
    assert_eq!(
        report["workload"],
        "grpc /rich.v1.Mirror/Reflect: request of 82 B"
    );
    // the server echoes the request (and counts): decoded through the schema, it is the JSON
    // that went in, 64-bit integers as strings, bytes as base64, the oneof by its member
    let mut sample = run["sample_response"].clone();
    let seen = sample
        .as_object_mut()
        .and_then(|o| o.remove("seen"))
        .expect("the server's count");
    assert!(
        seen.as_str().is_some_and(|s| s.parse::<u64>().is_ok()),
        "{seen}"
    );
    assert_eq!(sample, request);
}

#[test]
fn the_grpcio_server_sees_each_rendered_value() {
    let dir = tempfile::tempdir().unwrap();
    for how in ["--proto-file", "--reflect"] {
        let record = dir.path().join(format!("{how}.jsonl"));
        let server = RichServer::start_with(&["--record", record.to_str().unwrap()]);
        let proto = rich_proto();
        let schema: &[&str] = if how == "--reflect" {
            &["--reflect"]
        } else {
            &["--proto-file", &proto]
        };
        let mut args = vec!["grpc", &server.target, "rich.v1.Mirror/Reflect"];
        args.extend_from_slice(schema);
        args.extend_from_slice(&[
            "-d",
            r#"{"name": "n-{{seq}}-{{uuid}}", "big": {{seq}}, "count": "{{rand 3 4}}"}"#,
            "-H",
            "x-id: id-{{seq}}",
            "-c",
            "2",
            "-n",
            "200",
            "--warmup",
            "0s",
        ]);
        let report = run_json(&args);
        let run = &report["runs"][0];
        assert_eq!(
            u64_at(run, "/summary/ok"),
            200,
            "{how}: {:#}",
            run["summary"]
        );
        let lines = std::fs::read_to_string(&record).unwrap();
        let mut seqs = std::collections::BTreeSet::new();
        let mut ids = std::collections::BTreeSet::new();
        for line in lines.lines() {
            let r: serde_json::Value = serde_json::from_str(line).unwrap();
            let name = r["name"].as_str().unwrap();
            let (seq, id) = name
                .strip_prefix("n-")
                .and_then(|n| n.split_once('-'))
                .unwrap_or_else(|| panic!("{r}"));
            // one call's seq in a string field, an int64 field and its metadata
            let seq: u64 = seq.parse().unwrap();
            assert_eq!(r["big"], seq, "{how}: {r}");
            assert_eq!(r["x-id"], format!("id-{seq}"), "{how}: {r}");
            assert!(id.len() == 36 && id.as_bytes()[14] == b'4', "{r}");
            seqs.insert(seq);
            ids.insert(id.to_string());
        }
        assert_eq!(
            (seqs.len(), ids.len()),
            (200, 200),
            "{how}: every value differs"
        );
        // the sample answer is the server's echo of one rendered request
        let count = run["sample_response"]["count"].as_str().unwrap_or_default();
        assert!(count == "3" || count == "4", "{:#}", run["sample_response"]);
    }
}

#[test]
fn the_schema_comes_from_the_servers_reflection_service() {
    let server = RichServer::start();
    let data = r#"{"name":"x","big":"-5","tally":{"k":"9"},"number":2.5}"#;
    let report = run_json(&[
        "grpc",
        &server.target,
        "rich.v1.Mirror/Reflect",
        "--reflect",
        "-d",
        data,
        "-n",
        "50",
    ]);
    let run = &report["runs"][0];
    assert_eq!(u64_at(run, "/summary/ok"), 50, "{:#}", run["summary"]);
    let mut sample = run["sample_response"].clone();
    sample.as_object_mut().unwrap().remove("seen");
    assert_eq!(
        sample,
        serde_json::from_str::<serde_json::Value>(data).unwrap()
    );
    // reflection is setup: one request per call on the measured connection, nothing more
    assert_eq!(
        u64_at(run, "/wire/requests_on_wire"),
        50,
        "{:#}",
        run["wire"]
    );
    let t = server.target.as_str();
    let m = "rich.v1.Mirror/Reflect";
    let cases: [(&[&str], &str); 4] = [
        (
            &["grpc", t, "rich.v1.Nope/Reflect", "--reflect"],
            "the server has: ",
        ),
        (
            &["grpc", t, "rich.v1.Mirror/Nope", "--reflect"],
            "it has: Reflect, Repeat, Gather, Chat",
        ),
        (
            &[
                "grpc",
                t,
                "rich.v1.Mirror/Chat",
                "--reflect",
                "--stream-messages",
                "0",
            ],
            "--stream-messages",
        ),
        (&["grpc", t, m, "--reflect", "-d", r#"{"nope":1}"#], "nope"),
    ];
    for (args, words) in cases {
        assert_refused(args, 2, words);
    }
    // one call, printed as JSON; the list of what the server has
    let out = support::run_bounded(
        &["call", "grpc", t, m, "--reflect", "-d", r#"{"word":"w"}"#],
        support::RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{out:#?}");
    let printed: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(printed["word"], "w", "{printed}");
    let out = support::run_bounded(&["call", "grpc", t, "--list"], support::RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{out:#?}");
    assert_eq!(
        out.stdout,
        "rich.v1.Mirror/Chat (bidirectional streaming)\nrich.v1.Mirror/Gather (client-streaming)\nrich.v1.Mirror/Reflect\nrich.v1.Mirror/Repeat (server-streaming)\n"
    );
    assert_refused(
        &["call", "grpc", t, m, "--list"],
        2,
        "--list takes no METHOD",
    );
    assert_refused(&["grpc", t], 2, "a method is needed");
    // a server without reflection: a setup failure, exit 1
    let bare = RichServer::start_with(&["--no-reflection"]);
    let args = ["grpc", &bare.target, m, "--reflect"];
    assert_refused(&args, 1, "no reflection service");
    assert_refused(
        &["call", "grpc", &bare.target, "--list"],
        1,
        "no reflection service",
    );
    // the built-in server's reflection lists what it serves, and gives the schemas
    let srv = support::ServeProcess::start(&["--no-h3"]);
    let target = srv.target();
    let out = support::run_bounded(&["call", "grpc", &target, "--list"], support::RUN_TIMEOUT);
    assert_eq!(out.code, Some(0), "{out:#?}");
    assert_eq!(
        out.stdout,
        "grpc.health.v1.Health/Check\ngrpc_echo.v1.EchoService/Echo\n\
         wirebench.stream.v1.StreamEcho/BidiEcho (bidirectional streaming)\n\
         wirebench.stream.v1.StreamEcho/ClientEcho (client-streaming)\n\
         wirebench.stream.v1.StreamEcho/ServerEcho (server-streaming)\n"
    );
    let out = support::run_bounded(
        &[
            "call",
            "grpc",
            &target,
            "wirebench.stream.v1.StreamEcho/ClientEcho",
            "--reflect",
            "-d",
            r#"{"ping":"x"}"#,
            "--stream-messages",
            "3",
        ],
        support::RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{out:#?}");
    let printed: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(printed[0]["messages"], "3", "{printed}");
}

#[test]
fn a_payload_sweep_fills_a_field_of_the_schema_reflection_gives() {
    let server = RichServer::start();
    let t = server.target.as_str();
    let m = "rich.v1.Mirror/Reflect";
    let run = support::run_bounded(
        &[
            "sweep",
            "grpc",
            t,
            m,
            "--reflect",
            "-d",
            r#"{"name":"n","count":"3"}"#,
            "--payload-field",
            "blob",
            "--payload-size",
            "16,1k,16k",
            "-n",
            "50",
            "--format",
            "json",
        ],
        support::RUN_TIMEOUT,
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(v["schema"], "wirebench.sweep-grpc.v2", "{v:#}");
    let rows = v["rows"].as_array().unwrap();
    let sizes: Vec<u64> = rows.iter().map(|r| u64_at(r, "/payload_bytes")).collect();
    assert_eq!(sizes, [16, 1024, 16384], "{v:#}");
    for r in rows {
        assert_eq!((u64_at(r, "/count"), u64_at(r, "/ok")), (50, 50), "{r}");
    }
    for pair in rows.windows(2) {
        let out = |r: &serde_json::Value| r["bytes_out"].as_f64().unwrap();
        let payload =
            (u64_at(&pair[1], "/payload_bytes") - u64_at(&pair[0], "/payload_bytes")) as f64;
        assert!(out(&pair[1]) - out(&pair[0]) >= payload, "{pair:#?}");
    }
    // the field is checked against the server's schema: a usage error, exit 2
    let base = ["sweep", "grpc", t, m, "--reflect", "-n", "5"];
    for (extra, words) in [
        (
            &[][..],
            "--payload-field is needed: rich.v1.Thing has several string and bytes fields: name, blob, word",
        ),
        (
            &["--payload-field", "seen"][..],
            "--payload-field seen: rich.v1.Thing.seen is an int64 field",
        ),
        (
            &["--payload-field", "word", "-d", r#"{"nope":1}"#][..],
            "nope",
        ),
    ] {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        assert_refused(&args, 2, words);
    }
    // a server without reflection: a setup failure, exit 1
    let bare = RichServer::start_with(&["--no-reflection"]);
    assert_refused(
        &["sweep", "grpc", &bare.target, m, "--reflect"],
        1,
        "no reflection service",
    );
}

#[test]
fn server_streaming_calls_count_their_messages() {
    let server = RichServer::start();
    let t = server.target.as_str();
    let rich = rich_proto();
    let m = "rich.v1.Mirror/Repeat";
    for (schema, client) in [
        (["--reflect", ""], "wire"),
        (["--proto-file", rich.as_str()], "wire"),
        (["--proto-file", rich.as_str()], "h2"),
    ] {
        let mut args = vec!["grpc", t, m, schema[0]];
        if !schema[1].is_empty() {
            args.push(schema[1]);
        }
        args.extend([
            "-d",
            r#"{"name":"n","count":"7"}"#,
            "-c",
            "4",
            "-n",
            "60",
            "--warmup",
            "0s",
            "--h2-client",
            client,
        ]);
        let report = run_json(&args);
        let run = &report["runs"][0];
        let ctx = format!("{args:?}");
        assert_eq!(
            u64_at(run, "/summary/ok"),
            60,
            "{ctx}: {:#}",
            run["summary"]
        );
        let s = &run["streaming"];
        assert_eq!(u64_at(s, "/messages"), 60 * 7, "{ctx}: {s:#}");
        assert_eq!(s["messages_per_call"], 7.0, "{ctx}");
        // the latency to the first message is below the latency to the last (the call's)
        let p = |d: &serde_json::Value| {
            d.as_array()
                .unwrap()
                .iter()
                .find(|p| p["percentile"] == 50.0)
                .unwrap()["latency_ms"]
                .as_f64()
                .unwrap()
        };
        let (first, last) = (
            p(&s["first_message_distribution"]),
            p(&run["latency_distribution"]),
        );
        assert!(
            first > 0.0 && first <= last,
            "{ctx}: first {first} ms, last {last} ms"
        );
        // ground truth from the other side of the ledger: its h2 layers (the wire client's codec,
        // the h2 crate's frame sniffer) found as many gRPC messages in what the server sent
        assert_eq!(
            u64_at(run, "/wire/layers/h2/in/grpc_messages"),
            60 * 7,
            "{ctx}: {:#}",
            run["wire"]["layers"]
        );
        // the sample: the first call's messages, through the schema
        assert_eq!(
            run["sample_response"].as_array().map(Vec::len),
            Some(7),
            "{ctx}"
        );
        assert_eq!(run["sample_response"][0]["name"], "n", "{ctx}");
    }
    // a stream of no messages is a good call; one that ends ABORTED after a message is not
    let report = run_json(&[
        "grpc",
        t,
        m,
        "--proto-file",
        &rich,
        "-d",
        r#"{"name":"n"}"#,
        "-n",
        "20",
    ]);
    let run = &report["runs"][0];
    assert_eq!(u64_at(run, "/summary/ok"), 20, "{:#}", run["summary"]);
    assert_eq!(u64_at(run, "/streaming/messages"), 0);
    let out = support::run_bounded(
        &[
            "grpc",
            t,
            m,
            "--proto-file",
            &rich,
            "-d",
            r#"{"name":"abort"}"#,
            "-n",
            "10",
            "--format",
            "json",
        ],
        support::RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(1), "{out:#?}");
    let report: serde_json::Value = serde_json::from_str(&out.stdout).expect("a JSON report");
    let run = &report["runs"][0];
    assert_eq!(u64_at(run, "/summary/failed"), 10);
    let errors = run["error_distribution"].to_string();
    assert!(errors.contains("ABORTED: asked to abort"), "{errors}");
    // `call grpc` prints every message of the stream
    let out = support::run_bounded(
        &[
            "call",
            "grpc",
            t,
            m,
            "--reflect",
            "-d",
            r#"{"name":"c","count":"3"}"#,
        ],
        support::RUN_TIMEOUT,
    );
    assert_eq!(out.code, Some(0), "{out:#?}");
    let printed: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(printed.as_array().map(Vec::len), Some(3), "{printed}");
}

/// The 50th percentile of a distribution, ms.
fn p50(d: &serde_json::Value) -> f64 {
    d.as_array()
        .and_then(|a| a.iter().find(|p| p["percentile"] == 50.0))
        .and_then(|p| p["latency_ms"].as_f64())
        .unwrap_or_else(|| panic!("no p50 in {d:#}"))
}

#[test]
fn client_streaming_and_bidi_methods_of_a_grpcio_server() {
    let server = RichServer::start();
    let t = server.target.as_str();
    let rich = rich_proto();
    for client in ["wire", "h2"] {
        // client-streaming: five messages per call from a two-element array, in turn; the
        // server counts what came ("seen") and sends the last back
        let args = [
            "grpc",
            t,
            "rich.v1.Mirror/Gather",
            "--proto-file",
            &rich,
            "-d",
            r#"[{"name":"a"},{"name":"b"}]"#,
            "--stream-messages",
            "5",
            "-n",
            "200",
            "-c",
            "4",
            "--h2-client",
            client,
        ];
        let report = run_json(&args);
        let run = &report["runs"][0];
        assert_eq!(
            u64_at(run, "/summary/ok"),
            200,
            "{client}: {:#}",
            run["summary"]
        );
        let s = &run["streaming"];
        assert_eq!(u64_at(s, "/messages_sent"), 1000, "{client}: {s:#}");
        assert_eq!(u64_at(s, "/messages"), 200, "{client}: {s:#}");
        assert!(p50(&s["last_to_response_distribution"]) > 0.0, "{s:#}");
        assert!(
            s["message_latency_distribution"]
                .as_array()
                .unwrap()
                .is_empty()
        );
        // every message crossed the wire: the ledger's h2 layer counted them going out
        assert_eq!(
            u64_at(run, "/wire/layers/h2/out/grpc_messages"),
            1000,
            "{client}"
        );
        assert_eq!(run["sample_response"][0]["seen"], "5", "{client}");
        assert_eq!(run["sample_response"][0]["name"], "a", "{client}");
        // bidi ping-pong: 10,000 messages over 10 streams, each timed to its reply
        let args = [
            "grpc",
            t,
            "rich.v1.Mirror/Chat",
            "--proto-file",
            &rich,
            "-d",
            r#"{"name":"p"}"#,
            "--stream-messages",
            "1000",
            "-n",
            "10",
            "-c",
            "10",
            "--h2-client",
            client,
        ];
        let report = run_json(&args);
        let run = &report["runs"][0];
        assert_eq!(
            u64_at(run, "/summary/ok"),
            10,
            "{client}: {:#}",
            run["summary"]
        );
        assert_eq!(u64_at(run, "/summary/failed"), 0);
        let s = &run["streaming"];
        assert_eq!(u64_at(s, "/messages_sent"), 10_000, "{client}: {s:#}");
        assert_eq!(u64_at(s, "/messages"), 10_000, "{client}: {s:#}");
        // a message's round trip is well below its stream's whole life
        let (message, call) = (
            p50(&s["message_latency_distribution"]),
            p50(&run["latency_distribution"]),
        );
        assert!(
            message > 0.0 && message * 100.0 < call,
            "{client}: message p50 {message} ms, call p50 {call} ms"
        );
        assert_eq!(
            u64_at(run, "/wire/layers/h2/in/grpc_messages"),
            10_000,
            "{client}"
        );
        // one HEADERS frame out per stream, whatever the messages per stream
        assert_eq!(
            u64_at(run, "/wire/layers/h2/out/frames/HEADERS/count"),
            10,
            "{client}: {:#}",
            run["wire"]["layers"]["h2"]["out"]
        );
        // the replies' numbers: the sample is the first call's, 1, 2, ...
        assert_eq!(run["sample_response"][2]["seen"], "3", "{client}");
    }
    // free bidi: every message goes at once, the replies come as they come
    let report = run_json(&[
        "grpc",
        t,
        "rich.v1.Mirror/Chat",
        "--proto-file",
        &rich,
        "--bidi",
        "free",
        "--stream-messages",
        "100",
        "-n",
        "20",
        "-c",
        "4",
    ]);
    let s = &report["runs"][0]["streaming"];
    assert_eq!(u64_at(s, "/messages"), 2000, "{s:#}");
    assert_eq!(u64_at(s, "/messages_sent"), 2000, "{s:#}");
    // a server stream of 100,000 messages, counted exactly
    let report = run_json(&[
        "grpc",
        t,
        "rich.v1.Mirror/Repeat",
        "--proto-file",
        &rich,
        "-d",
        r#"{"name":"n","count":"100000"}"#,
        "-n",
        "1",
        "-c",
        "1",
        "--timeout",
        "60s",
    ]);
    let run = &report["runs"][0];
    assert_eq!(
        u64_at(run, "/streaming/messages"),
        100_000,
        "{:#}",
        run["streaming"]
    );
    assert_eq!(u64_at(run, "/wire/layers/h2/in/grpc_messages"), 100_000);
}

#[test]
fn a_request_as_bytes_needs_no_schema() {
    let srv = support::ServeProcess::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("req.bin");
    // EchoRequest { ping: "hi" }
    std::fs::write(&bin, b"\x0a\x02hi").unwrap();
    let target = srv.target();
    let bin = bin.to_string_lossy().into_owned();
    let report = run_json(&[
        "grpc",
        &target,
        "grpc_echo.v1.EchoService/Echo",
        "--data-bin",
        &bin,
        "-n",
        "50",
    ]);
    let run = &report["runs"][0];
    assert_eq!(u64_at(run, "/summary/ok"), 50, "{:#}", run["summary"]);
    assert!(
        run["sample_response"]
            .as_str()
            .is_some_and(|s| s.ends_with("B (no schema)")),
        "{}",
        run["sample_response"]
    );
    // with the schema the same bytes are checked, and the answer shown as JSON
    let proto = manifest_dir().join("crates/wire/proto/echo.proto");
    let report = run_json(&[
        "grpc",
        &target,
        "grpc_echo.v1.EchoService/Echo",
        "--data-bin",
        &bin,
        "--proto-file",
        proto.to_str().unwrap(),
        "-n",
        "5",
    ]);
    assert_eq!(report["runs"][0]["sample_response"]["body"], "hi");
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.proto");
    std::fs::write(&bad, "syntax = \"proto3\";\nmessage A { int32 x = ; }\n").unwrap();
    let bad = bad.to_string_lossy().into_owned();
    let rich = rich_proto();
    let t = "127.0.0.1:9";
    let m = "rich.v1.Mirror/Reflect";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["grpc", t, "rich.v1.Nope/Reflect", "--proto-file", &rich],
            "the schema has: rich.v1.Mirror",
        ),
        (
            vec!["grpc", t, "rich.v1.Mirror/Nope", "--proto-file", &rich],
            "it has: Reflect, Repeat, Gather, Chat",
        ),
        (
            vec!["grpc", t, m, "--proto-file", &rich, "-d", r#"{"colour":1}"#],
            "colour",
        ),
        (
            vec!["grpc", t, m, "--proto-file", &rich, "-d", r#"{"big":true}"#],
            "rich.v1.Thing",
        ),
        (
            vec![
                "grpc",
                t,
                "rich.v1.Mirror/Gather",
                "--proto-file",
                &rich,
                "-d",
                "[]",
            ],
            "at least one message",
        ),
        (vec!["grpc", t, m, "--proto-file", &bad], "bad.proto"),
        (vec!["grpc", t, m, "-d", "{}"], "--proto-file"),
        (
            vec!["grpc", t, m, "--reflect", "--proto-file", &rich],
            "one way",
        ),
        (vec!["grpc", t, m, "--proto", "rich.proto"], "--proto-file"),
        (
            vec!["grpc", t, m, "--proto-file", &rich, "--proto", "http"],
            "wirebench http",
        ),
    ];
    for (args, words) in &cases {
        assert_refused(args, 2, words);
    }
    // an unreachable server: exit 1, one line
    let target = format!("127.0.0.1:{}", support::unused_port());
    let args = ["grpc", &target, m, "--proto-file", &rich, "-n", "1"];
    assert_refused(&args, 1, "Connection refused");
}
