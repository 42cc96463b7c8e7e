//! Misbehaving servers: the real binary against servers that send oversized heads, endless or
//! malformed chunked bodies, garbage, truncated responses, nothing at all, 4 GiB gRPC messages,
//! truncated h2 frames, invalid HPACK, RST_STREAM, and endless frames that move no stream. Every
//! run must end on its own (well within a hard limit), never panic, keep its peak RSS bounded,
//! and count each request as failed under a clear error kind; since no request can succeed, it
//! exits 1 with the JSON report on stdout and one "error:" line on stderr.
//!
//! The servers are written here, on plain `std::net` (HTTP/1.1 and hand-made h2 frames) or on the
//! h2 crate's server side, so they share no code with the tool under test.

mod support;

use std::future::poll_fn;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;
use support::http_server::{drain, read_request};
use support::{Run, die_with_parent, proto_run, run_command_sampling_rss, u64_at, wirebench};

/// Hard limit for one run of the binary: it is killed (and the test fails) after this.
const LIMIT: Duration = Duration::from_secs(30);
/// Peak resident set size a run may reach, whatever the server sends.
const MAX_RSS_KIB: u64 = 200 * 1024;
/// The per-request timeout the cases run with.
const TIMEOUT: &str = "2s";
/// How long a server thread waits for the client to close before giving up on it.
const SERVER_IO_TIMEOUT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------------
// Running the binary

/// One finished run and the child's peak RSS.
struct Watched {
    run: Run,
    max_rss_kib: u64,
}

/// Runs wirebench with `args`, sampling its peak RSS while it runs; kills it and panics if it
/// runs longer than `limit`.
fn run_watched(args: &[&str], limit: Duration) -> Watched {
    let mut cmd = wirebench();
    cmd.args(args);
    die_with_parent(&mut cmd);
    let (run, max_rss_kib) = run_command_sampling_rss(cmd, limit);
    Watched { run, max_rss_kib }
}

/// Runs `wirebench echo --target <url> --proto <proto> --timeout 2s --format json <extra>` and
/// checks what every hostile case must satisfy: it ends on its own, does not panic, stays under
/// `MAX_RSS_KIB`, exits 1 because nothing succeeded (one "error:" line on stderr) and prints a
/// JSON report in which all `n` requests failed. Returns the proto's run and the finished run.
fn all_fail(url: &str, proto: &str, n: u64, extra: &[&str]) -> (Value, Watched) {
    let mut args = vec!["echo", "--target", url, "--proto", proto];
    args.extend_from_slice(extra);
    all_fail_with(&args, proto, n)
}

/// `all_fail` for any command line (`wirebench <args> -n <n> --format json`, with the
/// default `--timeout` unless given).
fn all_fail_with(args: &[&str], proto: &str, n: u64) -> (Value, Watched) {
    let n_arg = n.to_string();
    let mut args = args.to_vec();
    args.extend(["-n", &n_arg, "--format", "json"]);
    if !args.contains(&"--timeout") {
        args.extend(["--timeout", TIMEOUT]);
    }
    let cmdline = args.join(" ");
    let w = run_watched(&args, LIMIT);
    let run = &w.run;
    let ctx = format!(
        "wirebench {cmdline}\nexit {:?} after {:?}, peak RSS {} KiB\nstderr:\n{}\nstdout:\n{}",
        run.code, run.elapsed, w.max_rss_kib, run.stderr, run.stdout
    );
    assert!(!run.stderr.contains("panicked"), "panic: {ctx}");
    assert!(
        w.max_rss_kib < MAX_RSS_KIB,
        "peak RSS {} KiB exceeds {MAX_RSS_KIB} KiB: {ctx}",
        w.max_rss_kib
    );
    assert_eq!(
        run.code,
        Some(1),
        "every request fails: exit 1 expected: {ctx}"
    );
    let title = match proto {
        "grpc" => "gRPC",
        "h2" => "HTTP/2",
        _ => "HTTP/1.1",
    };
    let lines = run.stderr_lines();
    assert!(
        lines.len() == 1 && lines[0].starts_with(&format!("error: no {title} request succeeded")),
        "one error line expected: {ctx}"
    );
    let report: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("stdout is not a JSON report ({e}): {ctx}"));
    let r = proto_run(&report, proto).clone();
    assert_eq!(u64_at(&r, "/summary/count"), n, "{ctx}");
    assert_eq!(u64_at(&r, "/summary/ok"), 0, "{ctx}");
    assert_eq!(u64_at(&r, "/summary/failed"), n, "{ctx}");
    let counted: u64 = errors(&r).iter().map(|e| u64_at(e, "/count")).sum();
    assert_eq!(counted, n, "error_distribution covers every request: {ctx}");
    (r, w)
}

fn errors(run: &Value) -> &Vec<Value> {
    run["error_distribution"]
        .as_array()
        .unwrap_or_else(|| panic!("no error_distribution in {run:#}"))
}

/// Asserts every failure is one of `kinds` and its message contains one of `words` (any message
/// when `words` is empty).
fn assert_errors(run: &Value, kinds: &[&str], words: &[&str]) {
    for e in errors(run) {
        let kind = e["kind"].as_str().unwrap_or_default();
        let message = e["message"].as_str().unwrap_or_default();
        assert!(
            kinds.contains(&kind),
            "error kind {kind:?} ({message:?}) is not one of {kinds:?}: {:#}",
            run["error_distribution"]
        );
        assert!(
            words.is_empty() || words.iter().any(|w| message.contains(w)),
            "error message {message:?} ({kind}) mentions none of {words:?}: {:#}",
            run["error_distribution"]
        );
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP/1.1 servers

/// The HTTP/1.1 clients' ways of waiting (`--io-loop`), and the `client_loop` each reports:
/// unpipelined, `auto` reads through an io_uring where the kernel has one.
fn loops() -> [(&'static str, &'static str); 3] {
    [
        ("auto", support::auto_loop()),
        ("epoll", "epoll"),
        ("tokio", "tokio"),
    ]
}

/// The same for pipelined connections, which `auto` keeps on epoll.
const PIPELINED_LOOPS: [(&str, &str); 3] =
    [("auto", "epoll"), ("epoll", "epoll"), ("tokio", "tokio")];

/// A loopback HTTP/1.1 server: a thread per connection reads one request and lets `respond`
/// misbehave; then the connection is kept until the client closes it (so a client that does not
/// notice the problem by itself runs into its timeout instead of an EOF). Returns the URL.
fn http_server(respond: fn(&mut TcpStream)) -> String {
    let addr = support::http_server::spawn(move |mut s| {
        let _ = s.set_read_timeout(Some(SERVER_IO_TIMEOUT));
        let _ = s.set_write_timeout(Some(SERVER_IO_TIMEOUT));
        if matches!(read_request(&mut s), Ok(Some(_))) {
            respond(&mut s);
        }
        drain(&mut s);
    });
    format!("http://{addr}")
}

/// Writes `total` bytes of `fill` in 16 KiB writes, stopping at the first error.
fn write_filler(s: &mut TcpStream, fill: u8, total: usize) -> io::Result<()> {
    let block = [fill; 16 * 1024];
    let mut left = total;
    while left > 0 {
        let n = left.min(block.len());
        s.write_all(&block[..n])?;
        left -= n;
    }
    Ok(())
}

const MIB: usize = 1024 * 1024;

#[test]
fn http1_head_larger_than_64k_is_rejected() {
    // One endless header line, then many 1 KiB header lines: 1 MiB either way, then a valid end
    // of head (a client that read it all would get a 200 with an empty body, not the error).
    fn one_line(s: &mut TcpStream) {
        let _ = (|| {
            s.write_all(b"HTTP/1.1 200 OK\r\nX-Pad: ")?;
            write_filler(s, b'a', MIB)?;
            s.write_all(b"\r\nContent-Length: 0\r\n\r\n")
        })();
    }
    fn many_lines(s: &mut TcpStream) {
        let mut head = b"HTTP/1.1 200 OK\r\n".to_vec();
        let value = "b".repeat(1000);
        for i in 0..1024 {
            head.extend_from_slice(format!("X-Pad-{i}: {value}\r\n").as_bytes());
        }
        head.extend_from_slice(b"Content-Length: 0\r\n\r\n");
        let _ = s.write_all(&head);
    }
    for respond in [one_line as fn(&mut TcpStream), many_lines] {
        let url = http_server(respond);
        let (run, _) = all_fail(&url, "http", 5, &["-c", "1"]);
        assert_errors(&run, &["http1"], &["response head exceeds 65536 bytes"]);
        // It stopped reading soon after 64 KiB, not at 1 MiB.
        let bytes_in = u64_at(&run, "/wire/bytes_in");
        assert!(bytes_in < 5 * 256 * 1024, "{bytes_in} bytes read");
    }
}

/// Endless chunked body: 8 KiB chunks until the client goes away.
fn endless_chunks(s: &mut TcpStream) {
    let mut chunk = b"2000\r\n".to_vec();
    chunk.extend_from_slice(&[b'x'; 8192]);
    chunk.extend_from_slice(b"\r\n");
    if s.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        .is_err()
    {
        return;
    }
    while s.write_all(&chunk).is_ok() {}
}

/// A body without framing (neither length nor chunked: it ends at close) that never ends.
fn endless_until_close(s: &mut TcpStream) {
    if s.write_all(b"HTTP/1.1 200 OK\r\n\r\n").is_ok() {
        let _ = write_filler(s, b'y', usize::MAX);
    }
}

#[test]
fn http1_endless_body_stops_at_max_body() {
    for respond in [endless_chunks as fn(&mut TcpStream), endless_until_close] {
        let url = http_server(respond);
        let (run, w) = all_fail(&url, "http", 10, &["-c", "2", "--max-body", "1M"]);
        assert_errors(
            &run,
            &["http1"],
            &["response body exceeds the configured limit"],
        );
        // About 1 MiB per request was read; the server would have sent forever.
        let bytes_in = u64_at(&run, "/wire/bytes_in");
        assert!(bytes_in < 10 * 2 * MIB as u64, "{bytes_in} bytes read");
        assert!(
            w.run.elapsed < Duration::from_secs(15),
            "{:?}",
            w.run.elapsed
        );
        assert!(
            w.max_rss_kib < 100 * 1024,
            "a 1 MiB body limit, yet a peak RSS of {} KiB",
            w.max_rss_kib
        );
    }
}

/// An endless body from `serve` ends at the default 64 MiB body limit, not at the timeout.
fn endless_body_stops_at_the_default_limit(serve: fn(&mut TcpStream)) {
    let url = http_server(serve);
    // 64 MiB per request: a longer per-request timeout, so the limit (not the timeout) ends it.
    let (run, w) = all_fail(&url, "http", 2, &["-c", "1", "--timeout", "20s"]);
    assert_errors(
        &run,
        &["http1"],
        &["response body exceeds the configured limit"],
    );
    assert!(
        w.run.elapsed < Duration::from_secs(25),
        "{:?}",
        w.run.elapsed
    );
}

#[test]
fn http1_endless_chunked_body_stops_at_the_default_limit() {
    endless_body_stops_at_the_default_limit(endless_chunks);
}

#[test]
fn http1_endless_unframed_body_stays_bounded_at_the_default_limit() {
    endless_body_stops_at_the_default_limit(endless_until_close);
}

#[test]
fn http1_chunk_size_overflow_is_rejected() {
    fn respond(s: &mut TcpStream) {
        let _ = s.write_all(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
              FFFFFFFFFFFFFFFFFFFF\r\nabc\r\n0\r\n\r\n",
        );
    }
    let url = http_server(respond);
    let (run, _) = all_fail(&url, "http", 5, &["-c", "1"]);
    assert_errors(&run, &["http1"], &["chunk size overflow"]);
}

#[test]
fn http1_bad_chunk_syntax_is_rejected() {
    fn respond(s: &mut TcpStream) {
        let _ = s.write_all(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
        );
    }
    let url = http_server(respond);
    let (run, _) = all_fail(&url, "http", 5, &["-c", "1"]);
    assert_errors(&run, &["http1"], &["malformed chunked body"]);
}

#[test]
fn http1_garbage_instead_of_a_response_is_rejected() {
    fn respond(s: &mut TcpStream) {
        let _ = s.write_all(b"\x00\x01garbage garbage garbage\r\n\r\n");
    }
    let url = http_server(respond);
    for (io_loop, ran) in loops() {
        let (run, _) = all_fail(&url, "http", 5, &["-c", "1", "--io-loop", io_loop]);
        assert_eq!(run["cost"]["client_loop"], ran);
        assert_errors(&run, &["http1"], &["malformed response head"]);
    }
}

#[test]
fn http1_connection_closed_mid_response_is_closed() {
    // Half a head, then FIN.
    fn mid_head(s: &mut TcpStream) {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Ty");
        let _ = s.shutdown(Shutdown::Write);
    }
    // A whole head announcing 100 bytes, 10 of them, then FIN.
    fn mid_body(s: &mut TcpStream) {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"body\": \"");
        let _ = s.shutdown(Shutdown::Write);
    }
    for respond in [mid_head as fn(&mut TcpStream), mid_body] {
        let url = http_server(respond);
        for (io_loop, ran) in loops() {
            let (run, _) = all_fail(&url, "http", 5, &["-c", "1", "--io-loop", io_loop]);
            assert_eq!(run["cost"]["client_loop"], ran);
            assert_errors(&run, &["closed"], &[]);
        }
    }
}

#[test]
fn http1_server_that_never_answers_times_out() {
    // Reads the request and then nothing: `http_server` waits for the client to hang up.
    fn respond(_: &mut TcpStream) {}
    let url = http_server(respond);
    for (io_loop, ran) in loops() {
        let (run, w) = all_fail(&url, "http", 8, &["-c", "4", "--io-loop", io_loop]);
        assert_eq!(run["cost"]["client_loop"], ran);
        assert_errors(&run, &["timeout"], &["no response within 2s"]);
        // two rounds of four clients, 2 s each
        assert!(
            w.run.elapsed >= Duration::from_secs(4) && w.run.elapsed < Duration::from_secs(10),
            "--io-loop {io_loop}: {:?}",
            w.run.elapsed
        );
    }
}

// ---------------------------------------------------------------------------------------------
// gRPC servers on the h2 crate

#[derive(Clone, Copy)]
enum H2Behavior {
    /// Answers 200 with a message prefix announcing 0xFFFFFFFF bytes; then either a few bytes
    /// and grpc-status 0 trailers, or (endless) zeros as fast as flow control allows, up to 1 GiB.
    HugePrefix { endless: bool },
    /// Plain HTTP/2: answers 200 with zeros as fast as flow control allows, up to 1 GiB.
    EndlessBody,
    /// gRPC: answers 200 with valid 1 KiB messages as fast as flow control allows, up to 1 GiB,
    /// and never ends the stream.
    EndlessMessages,
    /// Resets every stream with this reason.
    Reset(h2::Reason),
    /// Never answers (the stream stays open until the client resets it).
    Silent,
    /// Never answers, and allows one stream at a time (SETTINGS_MAX_CONCURRENT_STREAMS 1).
    SilentOneStream,
    /// gRPC ping-pong: each request message is sent back `per` times as it comes; after
    /// `answers` replies (or at the end of the request stream) the stream ends as `end` says.
    Chat {
        per: usize,
        answers: usize,
        end: ChatEnd,
    },
}

/// How a `Chat` stream ends.
#[derive(Clone, Copy)]
enum ChatEnd {
    /// trailers with this grpc-status
    Status(&'static str),
    /// a message whose flag byte is neither 0 nor 1
    BadFlag,
    /// RST_STREAM INTERNAL_ERROR
    Reset,
}

/// A loopback gRPC server on the h2 crate's server side, on its own thread; returns the URL.
fn h2_server(behavior: H2Behavior) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let url = format!("http://{}", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let ran = wirebench::client::block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    continue;
                };
                // Nagle against the client's delayed ACKs would make each window a 10+ ms wait.
                let _ = sock.set_nodelay(true);
                tokio::spawn(async move {
                    let mut builder = h2::server::Builder::new();
                    if matches!(behavior, H2Behavior::SilentOneStream) {
                        builder.max_concurrent_streams(1);
                    }
                    let Ok(mut conn) = builder.handshake(sock).await else {
                        return;
                    };
                    while let Some(Ok((req, respond))) = conn.accept().await {
                        tokio::spawn(answer(behavior, req, respond));
                    }
                });
            }
        });
        // the accept loop never ends: only a runtime that could not start returns
        let Err(e) = ran;
        panic!("the h2 server: {e}");
    });
    url
}

async fn answer(
    behavior: H2Behavior,
    req: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
) {
    let mut body = req.into_body();
    if let H2Behavior::Chat { per, answers, end } = behavior {
        // answered as the request's messages come
        chat((per, answers, end), body, respond).await;
        return;
    }
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    let endless = match behavior {
        H2Behavior::Chat { .. } => return,
        H2Behavior::Reset(reason) => {
            respond.send_reset(reason);
            return;
        }
        H2Behavior::Silent | H2Behavior::SilentOneStream => {
            // Dropping `respond` would reset the stream: hold it until the client does.
            let _ = poll_fn(|cx| respond.poll_reset(cx)).await;
            return;
        }
        H2Behavior::HugePrefix { endless } => endless,
        H2Behavior::EndlessBody | H2Behavior::EndlessMessages => true,
    };
    let plain = matches!(behavior, H2Behavior::EndlessBody);
    let messages = matches!(behavior, H2Behavior::EndlessMessages);
    let head = http::Response::builder()
        .status(200)
        .header(
            "content-type",
            if plain {
                "application/octet-stream"
            } else {
                "application/grpc"
            },
        )
        .body(())
        .unwrap();
    let Ok(mut send) = respond.send_response(head, false) else {
        return;
    };
    if !endless {
        let _ = send.send_data(Bytes::from_static(b"\0\xff\xff\xff\xff\x0a\x03abc"), false);
        let mut trailers = http::HeaderMap::new();
        trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
        let _ = send.send_trailers(trailers);
        return;
    }
    if !plain
        && !messages
        && send
            .send_data(Bytes::from_static(b"\0\xff\xff\xff\xff"), false)
            .is_err()
    {
        return;
    }
    // zeros, or back-to-back gRPC messages of 1,019 zero bytes (5 + 1,019 = 1 KiB each)
    let zeros = if messages {
        let one: Vec<u8> = [&[0u8, 0, 0, 3, 0xfb][..], &[0u8; 1019][..]].concat();
        Bytes::from(one.repeat(16))
    } else {
        Bytes::from(vec![0u8; 16 * 1024])
    };
    let mut sent = 0;
    while sent < 1 << 30 {
        send.reserve_capacity(zeros.len());
        match poll_fn(|cx| send.poll_capacity(cx)).await {
            Some(Ok(0)) => {}
            Some(Ok(n)) => {
                // from where the last piece ended: the buffer repeats whole messages
                let at = sent % zeros.len();
                let n = n.min(zeros.len() - at);
                if send.send_data(zeros.slice(at..at + n), false).is_err() {
                    return;
                }
                sent += n;
            }
            _ => return,
        }
    }
}

/// A `Chat` stream: each whole request message back `per` times, then its `end`.
async fn chat(
    (per, answers, end): (usize, usize, ChatEnd),
    mut body: h2::RecvStream,
    mut respond: h2::server::SendResponse<Bytes>,
) {
    let head = http::Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .body(())
        .unwrap();
    let Ok(mut send) = respond.send_response(head, false) else {
        return;
    };
    let mut rx = bytes::BytesMut::new();
    let mut sent = 0;
    'read: while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        rx.extend_from_slice(&chunk);
        while rx.len() >= 5 {
            let len = u32::from_be_bytes([rx[1], rx[2], rx[3], rx[4]]) as usize;
            if rx.len() < 5 + len {
                break;
            }
            let message = rx.split_to(5 + len).freeze();
            for _ in 0..per {
                if sent == answers {
                    break 'read;
                }
                if send.send_data(message.clone(), false).is_err() {
                    return;
                }
                sent += 1;
            }
        }
    }
    let status = match end {
        ChatEnd::Status(code) => code,
        ChatEnd::BadFlag => {
            let _ = send.send_data(Bytes::from_static(b"\x07\0\0\0\x01\x0a"), false);
            // the client resets the stream; wait for it
            let _ = poll_fn(|cx| send.poll_reset(cx)).await;
            return;
        }
        ChatEnd::Reset => {
            send.send_reset(h2::Reason::INTERNAL_ERROR);
            return;
        }
    };
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", http::HeaderValue::from_static(status));
    let _ = send.send_trailers(trailers);
}

/// `wirebench grpc URL rich.v1.Mirror/Chat` (bidi ping-pong by default) with `extra`.
fn chat_call(url: &str, extra: &[&str]) -> Vec<String> {
    rich_call(url, "rich.v1.Mirror/Chat", r#"{"name":"p"}"#, extra)
}

#[test]
fn grpc_ping_pong_broken_mid_stream_fails_each_call() {
    // each stream is answered 5 times, then ends badly; both h2 clients (the wire client
    // answers a ping-pong in its connection's driver)
    // (the h2 crate names a reason by its meaning)
    let cases = [
        (ChatEnd::Status("13"), "grpc_status", &["INTERNAL"][..]),
        (ChatEnd::BadFlag, "grpc_framing", &["flag"][..]),
        (
            ChatEnd::Reset,
            "rst_stream",
            &["INTERNAL_ERROR", "internal error"][..],
        ),
    ];
    for (end, kind, words) in cases {
        let url = h2_server(H2Behavior::Chat {
            per: 1,
            answers: 5,
            end,
        });
        for client in ["wire", "h2"] {
            let args = chat_call(
                &url,
                &["--stream-messages", "20", "-c", "2", "--h2-client", client],
            );
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let (run, _) = all_fail_with(&args, "grpc", 6);
            assert_errors(&run, &[kind], words);
            // every stream got its five replies before it broke (the failed calls' messages
            // are the ledger's; the bad one may count as a sixth)
            let replies = u64_at(&run, "/wire/layers/h2/in/grpc_messages");
            assert!((30..=36).contains(&replies), "{client}: {replies} replies");
        }
    }
}

#[test]
fn grpc_ping_pong_with_two_replies_per_message_counts_both() {
    // every message is answered twice: each reply lets the next message go (the replies are
    // as many as the messages sent or more), so all 20 go and 40 replies come back
    let url = h2_server(H2Behavior::Chat {
        per: 2,
        answers: usize::MAX,
        end: ChatEnd::Status("0"),
    });
    for client in ["wire", "h2"] {
        let args = chat_call(
            &url,
            &[
                "--stream-messages",
                "20",
                "-c",
                "2",
                "-n",
                "6",
                "--h2-client",
                client,
                "--format",
                "json",
            ],
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let w = run_watched(&args, LIMIT);
        assert_eq!(w.run.code, Some(0), "{client}: {}", w.run.stderr);
        let report: Value = serde_json::from_str(&w.run.stdout).unwrap();
        let run = proto_run(&report, "grpc");
        assert_eq!(u64_at(run, "/summary/ok"), 6, "{client}: {run:#}");
        assert_eq!(u64_at(run, "/streaming/messages_sent"), 120, "{client}");
        assert_eq!(u64_at(run, "/streaming/messages"), 240, "{client}");
        // the replies that made the replies as many as the messages sent were timed
        let timed = run["streaming"]["message_latency_distribution"].as_array();
        assert!(timed.is_some_and(|t| !t.is_empty()), "{client}: {run:#}");
    }
}

#[test]
fn h2_endless_body_stops_at_max_body() {
    let url = h2_server(H2Behavior::EndlessBody);
    let (run, w) = all_fail(&url, "h2", 10, &["-c", "2", "--max-body", "1048576"]);
    assert_errors(&run, &["body_too_large"], &["beyond 1048576 bytes"]);
    // 1 MiB per request at most; the server would have sent 1 GiB each
    assert!(
        w.run.elapsed < Duration::from_secs(15),
        "{:?}",
        w.run.elapsed
    );
}

#[test]
fn h2_reset_streams_are_counted_by_reason() {
    let url = h2_server(H2Behavior::Reset(h2::Reason::INTERNAL_ERROR));
    let (run, _) = all_fail(&url, "h2", 10, &["-c", "2"]);
    assert_errors(&run, &["rst_stream"], &["INTERNAL_ERROR"]);
}

/// `wirebench grpc URL rich.v1.Mirror/Repeat` (server-streaming by its schema) with `extra`.
fn streaming_call(url: &str, extra: &[&str]) -> Vec<String> {
    rich_call(url, "rich.v1.Mirror/Repeat", "{}", extra)
}

/// `wirebench grpc URL METHOD -d DATA` on tests/interop/rich.proto's schema, with `extra`.
fn rich_call(url: &str, method: &str, data: &str, extra: &[&str]) -> Vec<String> {
    let proto = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/rich.proto");
    let target = url.trim_start_matches("http://");
    let mut args: Vec<String> = ["grpc", target, method, "--proto-file", proto, "-d", data]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

#[test]
fn grpc_endless_stream_ends_at_its_timeout_in_bounded_memory() {
    let url = h2_server(H2Behavior::EndlessMessages);
    let args = streaming_call(&url, &["-c", "2"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (run, w) = all_fail_with(&args, "grpc", 4);
    assert_errors(&run, &["timeout"], &["the stream did not end within"]);
    // two rounds of two 2 s calls; each message is taken out as it completes
    assert!(
        w.run.elapsed < Duration::from_secs(10),
        "{:?}",
        w.run.elapsed
    );
}

#[test]
fn grpc_stream_message_beyond_the_limit_is_rejected_from_its_prefix() {
    let url = h2_server(H2Behavior::HugePrefix { endless: true });
    let args = streaming_call(&url, &["-c", "2"]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (run, _) = all_fail_with(&args, "grpc", 10);
    assert_errors(
        &run,
        &["grpc_framing"],
        &["gRPC message of 4294967295 bytes exceeds the limit of 4194304 bytes"],
    );
}

#[test]
fn grpc_four_gib_message_prefix_is_rejected() {
    let url = h2_server(H2Behavior::HugePrefix { endless: false });
    let (run, _) = all_fail(&url, "grpc", 10, &["-c", "2"]);
    assert_errors(
        &run,
        &["grpc_framing"],
        &["4294967295 bytes exceeds the limit"],
    );
}

#[test]
fn grpc_endless_message_stops_at_the_receive_limit() {
    let url = h2_server(H2Behavior::HugePrefix { endless: true });
    let (run, w) = all_fail(&url, "grpc", 10, &["-c", "2"]);
    assert_errors(&run, &["grpc_framing"], &["exceeds the limit"]);
    // 4 MiB per request at most; the server would have sent 1 GiB each.
    assert!(
        w.run.elapsed < Duration::from_secs(15),
        "{:?}",
        w.run.elapsed
    );
}

#[test]
fn grpc_oversized_prefix_is_rejected_from_the_prefix_alone() {
    let url = h2_server(H2Behavior::HugePrefix { endless: true });
    let (run, _) = all_fail(&url, "grpc", 10, &["-c", "2"]);
    assert_errors(
        &run,
        &["grpc_framing"],
        &["gRPC message of 4294967295 bytes exceeds the limit of 4194304 bytes"],
    );
    assert_eq!(errors(&run).len(), 1, "{:#}", run["error_distribution"]);
    // The prefix alone tells: about a flow-control window per request arrives, not 4 MiB.
    let bytes_in = u64_at(&run, "/wire/bytes_in");
    assert!(bytes_in < 10 * 256 * 1024, "{bytes_in} bytes read");
}

#[test]
fn grpc_calls_waiting_for_a_stream_time_out_on_their_own_deadline() {
    // one stream at a time on one connection: one call holds it, three wait for it; all four
    // give up at their own deadlines, the waiting ones (all but at most one) without being sent
    let url = h2_server(H2Behavior::SilentOneStream);
    for client in ["wire", "h2"] {
        let extra = ["-c", "4", "--conns", "1", "--h2-client", client];
        let (run, w) = all_fail(&url, "grpc", 4, &extra);
        assert_errors(&run, &["timeout"], &["no response within 2s"]);
        assert_eq!(
            u64_at(&run, "/summary/failed"),
            4,
            "{client}: {:#}",
            run["summary"]
        );
        if client == "wire" {
            // the held call's stream is freed at its deadline; a waiting call that started a
            // moment later (a loaded machine spreads the starts over milliseconds) may take
            // it before its own deadline, and is then written: at most one such
            let written = u64_at(&run, "/wire/requests_on_wire");
            assert!((1..=2).contains(&written), "{:#}", run["wire"]);
        }
        assert!(
            w.run.elapsed >= Duration::from_secs(2) && w.run.elapsed < Duration::from_secs(4),
            "{client}: {:?}",
            w.run.elapsed
        );
    }
}

#[test]
fn grpc_server_that_never_answers_times_out() {
    let url = h2_server(H2Behavior::Silent);
    let (run, w) = all_fail(&url, "grpc", 4, &["-c", "2"]);
    assert_errors(&run, &["timeout"], &["no response within 2s"]);
    // two rounds of two clients, 2 s each; cancelling a stream keeps the connection
    assert!(
        w.run.elapsed >= Duration::from_secs(4) && w.run.elapsed < Duration::from_secs(10),
        "{:?}",
        w.run.elapsed
    );
    assert_eq!(u64_at(&run, "/wire/connections_opened"), 1, "{run:#}");
}

#[test]
fn grpc_rst_stream_internal_error_fails_each_request() {
    let url = h2_server(H2Behavior::Reset(h2::Reason::INTERNAL_ERROR));
    let (run, _) = all_fail(&url, "grpc", 10, &["-c", "2"]);
    assert_errors(&run, &["rst_stream"], &["internal error"]);
    assert_eq!(u64_at(&run, "/summary/retried"), 0, "{run:#}");
}

#[test]
fn grpc_refused_streams_are_retried_then_fail() {
    let url = h2_server(H2Behavior::Reset(h2::Reason::REFUSED_STREAM));
    let (run, _) = all_fail(&url, "grpc", 10, &["-c", "2"]);
    assert_errors(&run, &["rst_stream"], &["refused"]);
    // up to 3 retries per request, and the server refuses every one of them
    assert_eq!(u64_at(&run, "/summary/retried"), 30, "{run:#}");
}

// ---------------------------------------------------------------------------------------------
// gRPC servers writing raw h2 frames

const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const ACK: u8 = 1;
const END_STREAM: u8 = 1;
const END_HEADERS: u8 = 4;

fn write_frame(
    s: &mut TcpStream,
    kind: u8,
    flags: u8,
    stream: u32,
    payload: &[u8],
) -> io::Result<()> {
    let len = u32::try_from(payload.len()).unwrap().to_be_bytes();
    let mut frame = vec![len[1], len[2], len[3], kind, flags];
    frame.extend_from_slice(&stream.to_be_bytes());
    frame.extend_from_slice(payload);
    s.write_all(&frame)
}

/// (type, flags, stream, payload) of the next frame.
fn read_frame(s: &mut TcpStream) -> io::Result<(u8, u8, u32, Vec<u8>)> {
    let mut head = [0u8; 9];
    s.read_exact(&mut head)?;
    let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
    let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload)?;
    Ok((head[3], head[4], stream, payload))
}

/// A loopback h2 server written frame by frame: it reads the preface, sends an empty SETTINGS,
/// acknowledges the client's SETTINGS and PINGs, ignores everything else (the client's GOAWAY
/// too), and each time a request stream is complete lets `respond` write whatever it likes;
/// once the client closes (or `respond` fails) it keeps its side open for `hold`, then closes.
/// Returns the URL.
fn raw_h2_server(respond: fn(&mut TcpStream, u32) -> io::Result<()>, hold: Duration) -> String {
    let addr = support::http_server::spawn(move |mut s| {
        let _ = s.set_read_timeout(Some(SERVER_IO_TIMEOUT));
        let _ = s.set_write_timeout(Some(SERVER_IO_TIMEOUT));
        let _ = serve_raw_h2(&mut s, respond);
        drain(&mut s);
        std::thread::sleep(hold);
    });
    format!("http://{addr}")
}

fn serve_raw_h2(
    s: &mut TcpStream,
    respond: fn(&mut TcpStream, u32) -> io::Result<()>,
) -> io::Result<()> {
    let mut preface = [0u8; 24];
    s.read_exact(&mut preface)?;
    if &preface != PREFACE {
        return Err(io::Error::other("not an h2 preface"));
    }
    write_frame(s, SETTINGS, 0, 0, &[])?;
    loop {
        let (kind, flags, stream, payload) = read_frame(s)?;
        match kind {
            SETTINGS if flags & ACK == 0 => write_frame(s, SETTINGS, ACK, 0, &[])?,
            PING if flags & ACK == 0 => write_frame(s, PING, ACK, 0, &payload)?,
            DATA | HEADERS if stream != 0 && flags & END_STREAM != 0 => respond(s, stream)?,
            _ => {}
        }
    }
}

/// HPACK for ":status: 200" (static index 8) and "content-type: application/grpc" (literal
/// without indexing, name from static index 31).
const GRPC_RESPONSE_HEAD: &[u8] = b"\x88\x0f\x10\x10application/grpc";

#[test]
fn h2_informational_heads_are_skipped_and_trailers_end_a_plain_response() {
    // 103 Early Hints, then 200, a body of two DATA frames, and trailers with END_STREAM
    fn respond(s: &mut TcpStream, stream: u32) -> io::Result<()> {
        // ":status: 103": literal without indexing, name from static index 8
        write_frame(s, HEADERS, END_HEADERS, stream, b"\x08\x03103")?;
        write_frame(s, HEADERS, END_HEADERS, stream, b"\x88")?;
        write_frame(s, DATA, 0, stream, b"a")?;
        write_frame(s, DATA, 0, stream, b"b")?;
        // "x-t: 1", a literal with a new name
        write_frame(
            s,
            HEADERS,
            END_HEADERS | END_STREAM,
            stream,
            b"\x00\x03x-t\x011",
        )
    }
    let url = raw_h2_server(respond, Duration::ZERO);
    let report = support::run_json(&[
        "http",
        &format!("{url}/x"),
        "--proto",
        "h2",
        "-n",
        "5",
        "--timeout",
        "5s",
    ]);
    let run = &report["runs"][0];
    assert_eq!(u64_at(run, "/summary/ok"), 5, "{run:#}");
    assert_eq!(run["status_distribution"][0]["status"], "200", "{run:#}");
    assert_eq!(run["sample_response"], "ab");
}

#[test]
fn grpc_truncated_frame_fails_each_request() {
    // A proper response head, then a DATA frame announcing 16 KiB that ends after 10 bytes: FIN.
    fn respond(s: &mut TcpStream, stream: u32) -> io::Result<()> {
        write_frame(s, HEADERS, END_HEADERS, stream, GRPC_RESPONSE_HEAD)?;
        let mut frame = vec![0x00, 0x40, 0x00, DATA, 0];
        frame.extend_from_slice(&stream.to_be_bytes());
        frame.extend_from_slice(&[0u8; 10]);
        s.write_all(&frame)?;
        s.shutdown(Shutdown::Write)
    }
    let url = raw_h2_server(respond, Duration::ZERO);
    let (run, _) = all_fail(&url, "grpc", 6, &["-c", "1"]);
    assert_errors(&run, &["io", "h2", "goaway", "closed"], &[]);
}

#[test]
fn grpc_invalid_hpack_fails_each_request() {
    // A HEADERS frame whose block is not HPACK (an integer that never ends); the connection
    // stays open, so the client has to notice by itself.
    fn respond(s: &mut TcpStream, stream: u32) -> io::Result<()> {
        write_frame(s, HEADERS, END_HEADERS, stream, &[0xff; 32])
    }
    let url = raw_h2_server(respond, Duration::ZERO);
    let (run, _) = all_fail(&url, "grpc", 6, &["-c", "1"]);
    assert_errors(&run, &["h2", "goaway"], &[]);
}

/// HPACK for a trailers-only answer: ":status: 200" (static index 8), "content-type:
/// application/grpc" and "grpc-status: 5" (literals without indexing).
const NOT_FOUND_TRAILERS: &[u8] = b"\x88\x0f\x10\x10application/grpc\x00\x0bgrpc-status\x015";

/// A server that keeps its side open past the close bound still leaves TCP_INFO in the report
/// (read from the connection's own descriptor), and calls that failed still count their header
/// lists, so the HPACK ratio compares like with like.
#[test]
fn grpc_tcp_info_and_header_lists_survive_a_server_that_holds_on() {
    // Every request answered with a trailers-only NOT_FOUND; after the client's GOAWAY and FIN
    // the server holds its side open for 3 s.
    fn respond(s: &mut TcpStream, stream: u32) -> io::Result<()> {
        write_frame(
            s,
            HEADERS,
            END_HEADERS | END_STREAM,
            stream,
            NOT_FOUND_TRAILERS,
        )
    }
    let url = raw_h2_server(respond, Duration::from_secs(3));
    let (run, _) = all_fail(&url, "grpc", 10, &["-c", "1"]);
    assert_errors(&run, &["grpc_status"], &["NOT_FOUND"]);
    let conns = run["per_connection"].as_array().unwrap();
    assert_eq!(conns.len(), 1, "{run:#}");
    let c = &conns[0];
    assert!(c["tcp"].is_object(), "no TCP_INFO: {c:#}");
    assert_eq!(c["close"]["drained"], false, "{c:#}");
    assert_eq!(u64_at(&run, "/wire/connections_without_tcp_info"), 0);
    assert_eq!(u64_at(&run, "/wire/requests_with_tcp_info"), 10);
    assert!(run["wire"]["segments_out_per_request"].as_f64().unwrap() > 0.0);
    // every request's header list was sent, and every answer's received
    let out = &c["h2"]["out"];
    let list_out = u64_at(out, "/header_list_bytes");
    assert!(list_out > 0 && list_out.is_multiple_of(10), "{out:#}");
    let hpack_out = u64_at(out, "/hpack_bytes");
    assert!(
        hpack_out < list_out,
        "HPACK {hpack_out} B for {list_out} B of header lists"
    );
    let inbound = &c["h2"]["in"];
    // ":status" "200" + "content-type" "application/grpc" + "grpc-status" "5", ten times
    assert_eq!(
        u64_at(inbound, "/header_list_bytes"),
        10 * (7 + 3 + 12 + 16 + 11 + 1),
        "{inbound:#}"
    );
}

/// A gRPC server answering with a non-200 HTTP status: the status distribution shows the gRPC
/// code the spec maps it to and the HTTP status itself.
#[test]
fn grpc_http_status_is_shown_beside_its_grpc_code() {
    fn respond(s: &mut TcpStream, stream: u32) -> io::Result<()> {
        // ":status: 404" is static index 13
        write_frame(s, HEADERS, END_HEADERS | END_STREAM, stream, b"\x8d")
    }
    let url = raw_h2_server(respond, Duration::ZERO);
    let (run, _) = all_fail(&url, "grpc", 1, &["-c", "1"]);
    assert_errors(&run, &["http_status"], &["HTTP 404"]);
    let statuses: Vec<&str> = run["status_distribution"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["UNIMPLEMENTED (HTTP 404)"], "{run:#}");
}

// ---------------------------------------------------------------------------------------------
// Servers that attack the h2 client's limits: each connection error is a clear failure by kind
// (h2, with the reason and the limit in its message), memory stays bounded (`all_fail` checks
// the peak RSS), and the run ends by itself.

const CONTINUATION: u8 = 9;
const WINDOW_UPDATE: u8 = 8;
const RST_STREAM: u8 = 3;
const GOAWAY: u8 = 7;

#[test]
fn grpc_continuation_flood_ends_the_connection() {
    // a response head that never ends: one byte of it, then empty CONTINUATION frames
    fn respond(s: &mut TcpStream, stream: u32) -> io::Result<()> {
        write_frame(s, HEADERS, 0, stream, b"\x88")?;
        for _ in 0..10_000 {
            write_frame(s, CONTINUATION, 0, stream, &[])?;
        }
        Ok(())
    }
    let url = raw_h2_server(respond, Duration::ZERO);
    let (run, _) = all_fail(&url, "grpc", 4, &["-c", "1"]);
    assert_errors(&run, &["h2"], &["too many CONTINUATION frames"]);
}

#[test]
fn grpc_hpack_bomb_is_refused_by_the_header_list_limit() {
    // a 4,000-byte field inserted into the table, then 12,000 one-byte references to it: 48 MB
    // of header list from a 16 KB block
    fn respond(s: &mut TcpStream, stream: u32) -> io::Result<()> {
        let mut block = vec![0x88, 0x40, 0x01, b'x', 0x7f];
        let mut rest = 4000u32 - 127;
        while rest >= 128 {
            block.push((rest % 128) as u8 | 0x80);
            rest /= 128;
        }
        block.push(rest as u8);
        block.extend(std::iter::repeat_n(b'a', 4000));
        block.extend(std::iter::repeat_n(0xbe, 12_000));
        write_frame(s, HEADERS, END_HEADERS, stream, &block)
    }
    let url = raw_h2_server(respond, Duration::ZERO);
    let (run, _) = all_fail(&url, "grpc", 4, &["-c", "1"]);
    assert_errors(&run, &["h2"], &["header list above the header list limit"]);
}

#[test]
fn grpc_window_overflow_is_a_flow_control_error() {
    fn respond(s: &mut TcpStream, _stream: u32) -> io::Result<()> {
        write_frame(s, WINDOW_UPDATE, 0, 0, &0x7fff_ffffu32.to_be_bytes())
    }
    let url = raw_h2_server(respond, Duration::ZERO);
    let (run, _) = all_fail(&url, "grpc", 4, &["-c", "1"]);
    assert_errors(
        &run,
        &["h2"],
        &["FLOW_CONTROL_ERROR: connection window above 2^31-1"],
    );
}

#[test]
fn grpc_ping_and_settings_floods_end_the_connection() {
    fn pings(s: &mut TcpStream, _stream: u32) -> io::Result<()> {
        for i in 0..50_000u64 {
            write_frame(s, PING, 0, 0, &i.to_be_bytes())?;
        }
        Ok(())
    }
    fn settings(s: &mut TcpStream, _stream: u32) -> io::Result<()> {
        for _ in 0..50_000 {
            write_frame(s, SETTINGS, 0, 0, &[])?;
        }
        Ok(())
    }
    for respond in [pings as fn(&mut TcpStream, u32) -> io::Result<()>, settings] {
        let url = raw_h2_server(respond, Duration::ZERO);
        let (run, _) = all_fail(&url, "grpc", 3, &["-c", "1"]);
        assert_errors(&run, &["h2"], &["ENHANCE_YOUR_CALM"]);
    }
}

#[test]
fn grpc_frames_on_a_closed_stream_end_the_connection_within_a_budget() {
    // the stream is reset, then 20,000 WINDOW_UPDATEs arrive for it: the request fails as
    // reset, and the client gives up on the connection (a new one for the next request; one
    // sent on it before the flood is seen fails with the connection)
    fn respond(s: &mut TcpStream, stream: u32) -> io::Result<()> {
        write_frame(s, RST_STREAM, 0, stream, &2u32.to_be_bytes())?;
        for _ in 0..20_000 {
            write_frame(s, WINDOW_UPDATE, 0, stream, &1u32.to_be_bytes())?;
        }
        Ok(())
    }
    let url = raw_h2_server(respond, Duration::ZERO);
    let (run, _) = all_fail(&url, "grpc", 4, &["-c", "1"]);
    assert_errors(
        &run,
        &["rst_stream", "h2"],
        &["INTERNAL_ERROR", "too many frames without progress"],
    );
    assert!(u64_at(&run, "/wire/reconnects") >= 1, "{:#}", run["wire"]);
}

/// `all_fail` for a server that never answers but keeps sending frames that move no stream:
/// with a 10 s timeout, the client's bound on such frames ends each request's connection long
/// before its timeout could, and each request fails by it.
fn all_fail_without_progress(respond: fn(&mut TcpStream, u32) -> io::Result<()>, n: u64) -> Value {
    let url = raw_h2_server(respond, Duration::ZERO);
    let (run, w) = all_fail(&url, "grpc", n, &["-c", "1", "--timeout", "10s"]);
    assert_errors(
        &run,
        &["h2"],
        &["ENHANCE_YOUR_CALM: too many frames without progress"],
    );
    assert!(
        w.run.elapsed < Duration::from_secs(5),
        "{:?}: {:#}",
        w.run.elapsed,
        run["error_distribution"]
    );
    run
}

#[test]
fn grpc_endless_unsolicited_ping_acks_end_the_connection() {
    // answers to PINGs the client never sent, instead of the response, without end
    fn respond(s: &mut TcpStream, _stream: u32) -> io::Result<()> {
        for i in 0u64.. {
            write_frame(s, PING, ACK, 0, &i.to_be_bytes())?;
        }
        Ok(())
    }
    let run = all_fail_without_progress(respond, 3);
    assert_eq!(
        u64_at(&run, "/wire/connections_opened"),
        3,
        "{:#}",
        run["wire"]
    );
}

#[test]
fn grpc_endless_goaways_keeping_the_stream_end_the_connection() {
    // GOAWAY with the request's stream as the last one (it may still complete: no new streams
    // on this connection, and this one waits), again and again, and never the response
    fn respond(s: &mut TcpStream, stream: u32) -> io::Result<()> {
        let mut goaway = stream.to_be_bytes().to_vec();
        goaway.extend_from_slice(&0u32.to_be_bytes());
        loop {
            write_frame(s, GOAWAY, 0, 0, &goaway)?;
        }
    }
    let run = all_fail_without_progress(respond, 3);
    // each request on a connection of its own, and not retried: its stream was let through,
    // so the server may have processed it
    assert_eq!(
        u64_at(&run, "/wire/connections_opened"),
        3,
        "{:#}",
        run["wire"]
    );
    assert_eq!(u64_at(&run, "/summary/retried"), 0, "{run:#}");
}

#[test]
fn grpc_endless_goaways_refusing_the_stream_fail_it_after_its_retries() {
    // GOAWAY with last stream id 0, without end: the request is refused (never processed),
    // retried on a new connection, refused again; the refusing connections are closed while
    // the GOAWAYs still pour in
    fn respond(s: &mut TcpStream, _stream: u32) -> io::Result<()> {
        loop {
            write_frame(s, GOAWAY, 0, 0, &[0; 8])?;
        }
    }
    let url = raw_h2_server(respond, Duration::ZERO);
    let (run, w) = all_fail(&url, "grpc", 3, &["-c", "1", "--timeout", "10s"]);
    assert_errors(&run, &["goaway"], &["stream above the GOAWAY's last id"]);
    // up to 3 retries per request, each refused
    assert_eq!(u64_at(&run, "/summary/retried"), 9, "{run:#}");
    assert!(
        w.run.elapsed < Duration::from_secs(5),
        "{:?}: {:#}",
        w.run.elapsed,
        run["error_distribution"]
    );
}

// ---------------------------------------------------------------------------------------------
// Pipelined HTTP/1.1 against servers that break the pipeline

/// An echo answer with `Connection: keep-alive` semantics (HTTP/1.1 default).
const ECHO_ANSWER: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 24\r\n\r\n{\"body\":\"Hello, world!\"}";

/// `wirebench echo ... --format json` that may partly succeed: the report's run and the exit
/// code, after the checks every hostile run gets (ends on its own, no panic, bounded RSS).
fn run_partly(url: &str, extra: &[&str]) -> (Value, Option<i32>) {
    let mut args = vec![
        "echo",
        "--target",
        url,
        "--proto",
        "http",
        "--format",
        "json",
        "--timeout",
        TIMEOUT,
    ];
    args.extend_from_slice(extra);
    let w = run_watched(&args, LIMIT);
    let ctx = format!(
        "wirebench {}\nexit {:?}\nstderr:\n{}\nstdout:\n{}",
        args.join(" "),
        w.run.code,
        w.run.stderr,
        w.run.stdout
    );
    assert!(!w.run.stderr.contains("panicked"), "panic: {ctx}");
    assert!(
        w.max_rss_kib < MAX_RSS_KIB,
        "peak RSS {} KiB: {ctx}",
        w.max_rss_kib
    );
    let report: Value = serde_json::from_str(&w.run.stdout)
        .unwrap_or_else(|e| panic!("stdout is not a JSON report ({e}): {ctx}"));
    (proto_run(&report, "http").clone(), w.run.code)
}

/// `run_partly` of `-c C --pipeline C -n N` (one connection at a time) under `--io-loop` as
/// `io_loop`, checked to have run on `ran`: the report's run, the exit code, and the context
/// for messages.
fn pipelined_partly(
    url: &str,
    (io_loop, ran): (&str, &str),
    clients: &str,
    n: &str,
) -> (Value, Option<i32>, String) {
    let args = [
        "-c",
        clients,
        "--pipeline",
        clients,
        "-n",
        n,
        "--io-loop",
        io_loop,
    ];
    let (run, code) = run_partly(url, &args);
    let ctx = format!("--io-loop {io_loop}: {run:#}");
    assert_eq!(run["cost"]["client_loop"], ran, "{ctx}");
    (run, code, ctx)
}

/// `pipelined_partly` where every one of the `n` requests must be answered (exit 0).
fn pipelined_all_answered(url: &str, lp: (&str, &str), clients: &str, n: u64) -> (Value, String) {
    let (run, code, ctx) = pipelined_partly(url, lp, clients, &n.to_string());
    assert_eq!(code, Some(0), "{ctx}");
    assert_eq!(u64_at(&run, "/summary/ok"), n, "{ctx}");
    (run, ctx)
}

/// Count of the failures of `kind` in `run`'s error distribution.
fn failures_of(run: &Value, kind: &str) -> u64 {
    errors(run)
        .iter()
        .filter(|e| e["kind"] == kind)
        .map(|e| u64_at(e, "/count"))
        .sum()
}

#[test]
fn http1_server_closing_mid_pipeline_fails_the_rest_as_unanswered() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    // Each connection: read up to two requests (the second within 500 ms), answer the first
    // only, then FIN; whatever else was pipelined behind it is never answered.
    let received = Arc::new(AtomicU64::new(0));
    let seen = received.clone();
    let addr = support::http_server::spawn(move |mut s| {
        let _ = s.set_write_timeout(Some(SERVER_IO_TIMEOUT));
        let _ = s.set_read_timeout(Some(SERVER_IO_TIMEOUT));
        if !matches!(read_request(&mut s), Ok(Some(_))) {
            return;
        }
        seen.fetch_add(1, Ordering::SeqCst);
        let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
        if matches!(read_request(&mut s), Ok(Some(_))) {
            seen.fetch_add(1, Ordering::SeqCst);
        }
        let _ = s.write_all(ECHO_ANSWER);
        let _ = s.shutdown(Shutdown::Write);
        let _ = s.set_read_timeout(Some(SERVER_IO_TIMEOUT));
        drain(&mut s);
    });
    let url = format!("http://{addr}");
    for lp in PIPELINED_LOOPS {
        received.store(0, Ordering::SeqCst);
        let (run, code, ctx) = pipelined_partly(&url, lp, "4", "16");
        // every request is counted exactly once: answered, or failed by kind
        assert_eq!(u64_at(&run, "/summary/count"), 16, "{ctx}");
        let (ok, failed) = (u64_at(&run, "/summary/ok"), u64_at(&run, "/summary/failed"));
        assert_eq!(ok + failed, 16, "{ctx}");
        assert!(ok >= 1, "each connection answers one request: {ctx}");
        assert_eq!(code, Some(0), "some requests succeeded: exit 0: {ctx}");
        assert_errors(&run, &["closed", "unanswered", "timeout"], &[]);
        assert!(
            failures_of(&run, "unanswered") >= 1,
            "requests behind the closed one: {ctx}"
        );
        assert!(failures_of(&run, "closed") >= 1, "{ctx}");
        // never retried: no request went out twice, and the server saw no more than were
        // written
        assert_eq!(u64_at(&run, "/summary/retried"), 0, "{ctx}");
        let written = u64_at(&run, "/wire/requests_on_wire");
        assert!(written <= 16, "{written} requests written for 16: {ctx}");
        assert!(received.load(Ordering::SeqCst) <= written, "{ctx}");
        // one answer per connection: the answered requests are the connections
        assert_eq!(ok, u64_at(&run, "/wire/connections_opened"), "{ctx}");
    }
}

#[test]
fn http1_pipelined_server_that_never_answers_times_out_the_oldest() {
    // Reads a request and then nothing: the oldest request of each pipeline times out, the
    // ones behind it are unanswered, and the connection is replaced.
    fn respond(_: &mut TcpStream) {}
    let url = http_server(respond);
    for lp in PIPELINED_LOOPS {
        let (run, code, ctx) = pipelined_partly(&url, lp, "4", "8");
        assert_ne!(code, Some(0), "nothing succeeded: {ctx}");
        assert_eq!(u64_at(&run, "/summary/failed"), 8, "{ctx}");
        assert_errors(&run, &["timeout", "unanswered"], &[]);
        // two pipelines of four, each ended by its oldest request's timeout
        assert_eq!(failures_of(&run, "timeout"), 2, "{ctx}");
        assert_eq!(failures_of(&run, "unanswered"), 6, "{ctx}");
        assert_eq!(u64_at(&run, "/wire/connections_opened"), 2, "{ctx}");
    }
}

#[test]
fn http1_pipelined_latency_ends_at_the_read_that_brought_the_answer() {
    // Each round the server reads a whole pipeline of four, waits HOLD, then answers the four
    // in one write. The four requests were written before the wait began, so each latency is
    // HOLD or more; the read that brings the four answers gives them one clock reading, which
    // must be that read's: a reading kept from an earlier read would put a later batch's
    // latencies near zero.
    const HOLD: Duration = Duration::from_millis(20);
    let addr = support::http_server::spawn(move |mut s| {
        let _ = s.set_read_timeout(Some(SERVER_IO_TIMEOUT));
        let _ = s.set_write_timeout(Some(SERVER_IO_TIMEOUT));
        loop {
            for _ in 0..4 {
                if !matches!(read_request(&mut s), Ok(Some(_))) {
                    return;
                }
            }
            std::thread::sleep(HOLD);
            if s.write_all(&ECHO_ANSWER.repeat(4)).is_err() {
                return;
            }
        }
    });
    let url = format!("http://{addr}");
    for lp in PIPELINED_LOOPS {
        let (run, ctx) = pipelined_all_answered(&url, lp, "4", 40);
        let ms = |k: &str| {
            run["summary"][k]
                .as_f64()
                .unwrap_or_else(|| panic!("{k}: {ctx}"))
        };
        let hold = HOLD.as_secs_f64() * 1e3;
        assert!(ms("fastest_ms") >= hold, "fastest under the hold: {ctx}");
        assert!(ms("slowest_ms") < hold + 5_000.0, "{ctx}");
    }
}

#[test]
fn http1_answers_ahead_of_their_requests_are_matched_in_order() {
    // Answers four requests as soon as the first arrives, then reads the other three (and
    // answers nothing for them): the answers are in the client's buffer before their requests
    // are written. Responses are matched by position, so each of the four counts once.
    let addr = support::http_server::spawn(move |mut s| {
        let _ = s.set_read_timeout(Some(SERVER_IO_TIMEOUT));
        let _ = s.set_write_timeout(Some(SERVER_IO_TIMEOUT));
        loop {
            if !matches!(read_request(&mut s), Ok(Some(_))) {
                return;
            }
            let four: Vec<u8> = ECHO_ANSWER.repeat(4);
            if s.write_all(&four).is_err() {
                return;
            }
            for _ in 0..3 {
                if !matches!(read_request(&mut s), Ok(Some(_))) {
                    return;
                }
            }
        }
    });
    let url = format!("http://{addr}");
    for lp in PIPELINED_LOOPS {
        let (run, ctx) = pipelined_all_answered(&url, lp, "2", 40);
        assert_eq!(u64_at(&run, "/wire/connections_opened"), 1, "{ctx}");
        let conn = &run["per_connection"][0];
        let http1 = &conn["http1"];
        assert_eq!(u64_at(conn, "/requests"), 40, "{ctx}");
        assert_eq!(u64_at(http1, "/responses"), 40, "{ctx}");
    }
}
