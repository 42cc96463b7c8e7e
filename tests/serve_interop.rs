//! Interop: `wirebench serve` against clients that nobody here wrote.
//!
//! * grpcio (Python, the reference gRPC C core) through `tests/interop/echo_client.py`;
//! * nghttp2's `h2load` (h2c with prior knowledge, and HTTP/1.1) and `nghttp` (frame dumps).
//!
//! The tools are installed by `scripts/test.sh` (apt: nghttp2-client; grpcio and grpcio-tools
//! into its own virtual environment, first on PATH). A missing tool FAILS the test with that
//! hint: an interop test that skips itself would pass in exactly the setup where it checks
//! nothing.
//!
//! Each test starts its own server on `127.0.0.1:0`, reads the bound address from the
//! "listening on ADDR" line on its stderr, and kills it on drop. Every subprocess runs under a
//! deadline and is killed when it passes it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

mod support;
use support::{Run, ServeProcess as Server, die_with_parent, parse_listening, try_run_command};

/// Bound for the Python client (interpreter start, protoc, ~200 calls).
const PYTHON_LIMIT: Duration = Duration::from_secs(90);
/// Bound for one h2load or nghttp run (the dev-profile server does 20000 echoes in seconds).
const TOOL_LIMIT: Duration = Duration::from_secs(120);

/// gRPC's length-prefixed message: 0x00 (not compressed), u32 BE length, then
/// EchoRequest{ping: "Hello, world!"} = field 1, wire type 2 (0x0a), length 13 (0x0d), bytes.
fn grpc_echo_request_body() -> Vec<u8> {
    let ping = b"Hello, world!";
    let mut msg = vec![0x0a, ping.len() as u8];
    msg.extend_from_slice(ping);
    let mut framed = vec![0u8];
    framed.extend_from_slice(&(msg.len() as u32).to_be_bytes());
    framed.extend_from_slice(&msg);
    framed
}

const ECHO_PATH: &str = "/grpc_echo.v1.EchoService/Echo";
const INSTALL_HINT: &str = "run scripts/test.sh (it installs the interop tools)";

// ---------------------------------------------------------------------------------------------
// The server under test

// ---------------------------------------------------------------------------------------------
// External tools

/// Runs `cmd` with piped output and no stdin (dying with the test); kills it and panics after
/// `limit`.
fn run_tool(mut cmd: Command, limit: Duration) -> Run {
    let what = format!("{cmd:?}");
    die_with_parent(&mut cmd);
    try_run_command(cmd, limit).unwrap_or_else(|e| panic!("cannot run {what}: {e}; {INSTALL_HINT}"))
}

/// Panics (never skips) unless `program args...` runs and exits 0.
fn require(program: &str, args: &[&str], what: &str) {
    let mut cmd = Command::new(program);
    cmd.args(args);
    let out = match cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
    {
        Ok(out) => out,
        Err(e) => panic!("{what} is not available (cannot run {program}: {e}); {INSTALL_HINT}"),
    };
    assert!(
        out.status.success(),
        "{what} is not available (`{program} {}` failed: {}); {INSTALL_HINT}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
}

fn require_h2load() {
    require(
        "h2load",
        &["--version"],
        "h2load (Debian package nghttp2-client)",
    );
}

fn require_nghttp() {
    require(
        "nghttp",
        &["--version"],
        "nghttp (Debian package nghttp2-client)",
    );
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What h2load reported in its "requests:" and "status codes:" lines.
#[derive(Debug, Default, PartialEq, Eq)]
struct H2loadCounts {
    total: u64,
    started: u64,
    done: u64,
    succeeded: u64,
    failed: u64,
    errored: u64,
    timeout: u64,
    status_2xx: u64,
    status_3xx: u64,
    status_4xx: u64,
    status_5xx: u64,
}

/// Parses "N word, N word, ..." after `prefix` on the line that starts with it.
fn counts_line(stdout: &str, prefix: &str) -> Vec<(String, u64)> {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} line in h2load's output:\n{stdout}"));
    line[prefix.len()..]
        .split(',')
        .map(|part| {
            let mut words = part.split_whitespace();
            let n = words.next().and_then(|n| n.parse().ok());
            let name = words.next();
            match (n, name) {
                (Some(n), Some(name)) => (name.to_string(), n),
                _ => panic!("cannot parse {part:?} in {line:?}"),
            }
        })
        .collect()
}

fn parse_h2load(stdout: &str) -> H2loadCounts {
    let requests = counts_line(stdout, "requests:");
    let codes = counts_line(stdout, "status codes:");
    let get = |list: &[(String, u64)], key: &str| {
        list.iter()
            .find(|(k, _)| k == key)
            .map(|(_, n)| *n)
            .unwrap_or_else(|| panic!("no {key:?} count in h2load's output:\n{stdout}"))
    };
    H2loadCounts {
        total: get(&requests, "total"),
        started: get(&requests, "started"),
        done: get(&requests, "done"),
        succeeded: get(&requests, "succeeded"),
        failed: get(&requests, "failed"),
        errored: get(&requests, "errored"),
        timeout: get(&requests, "timeout"),
        status_2xx: get(&codes, "2xx"),
        status_3xx: get(&codes, "3xx"),
        status_4xx: get(&codes, "4xx"),
        status_5xx: get(&codes, "5xx"),
    }
}

/// The lines of h2load's output worth showing in a failure message or the test log.
fn h2load_summary(stdout: &str) -> String {
    stdout
        .lines()
        .filter(|l| {
            [
                "Application protocol:",
                "finished in",
                "requests:",
                "status codes:",
            ]
            .iter()
            .any(|p| l.starts_with(p))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs h2load with `args` (plus the URL), asserts it exited 0 and returns its counts.
fn h2load(server: &Server, args: &[&str], url: &str) -> (H2loadCounts, Run) {
    let mut cmd = Command::new("h2load");
    cmd.args(args).arg(url);
    let out = run_tool(cmd, TOOL_LIMIT);
    assert_eq!(
        out.code,
        Some(0),
        "h2load {args:?} {url} exited with {:?}\nstdout:\n{}\nstderr:\n{}\nserver stderr:\n{}",
        out.code,
        out.stdout,
        out.stderr,
        server.log()
    );
    let counts = parse_h2load(&out.stdout);
    eprintln!(
        "h2load {} {url} ({:.2?}):\n{}",
        args.join(" "),
        out.elapsed,
        h2load_summary(&out.stdout)
    );
    (counts, out)
}

fn write_file(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    path.to_str().expect("a UTF-8 temp path").to_string()
}

/// h2load flags for a unary gRPC Echo call (POST of the pre-framed body).
fn grpc_args<'a>(body: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = rest.to_vec();
    args.extend([
        "-d",
        body,
        "-H",
        "content-type: application/grpc",
        "-H",
        "te: trailers",
    ]);
    args
}

// ---------------------------------------------------------------------------------------------
// Tests

#[test]
fn python_grpcio_client_calls_echo() {
    require(
        "python3",
        &["-c", "import grpc, grpc_tools"],
        &format!(
            "Python's grpcio and grpcio-tools ({})",
            support::PYTHON_PEERS
        ),
    );
    let server = Server::start(&[]);
    let script = manifest_dir().join("tests/interop/echo_client.py");
    let mut cmd = Command::new("python3");
    cmd.arg(&script).args(["--target", &server.target()]);
    let out = run_tool(cmd, PYTHON_LIMIT);
    assert_eq!(
        out.code,
        Some(0),
        "{} --target {} exited with {:?}\nstdout:\n{}\nstderr:\n{}\nserver stderr:\n{}",
        script.display(),
        server.target(),
        out.code,
        out.stdout,
        out.stderr,
        server.log()
    );
    let last = out.stdout.lines().last().unwrap_or_default();
    let summary: serde_json::Value = serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("the client's summary is not JSON ({e}): {:?}", out.stdout));
    assert_eq!(summary["ok"], true, "{summary}");
    assert_eq!(summary["health"], "SERVING", "{summary}");
    assert_eq!(summary["unknown_method"], "UNIMPLEMENTED", "{summary}");
    assert_eq!(summary["concurrent"]["ok"], 200, "{summary}");
    eprintln!("echo_client.py ({:.2?}): {last}", out.elapsed);
}

#[test]
fn h2load_drives_echo_with_zero_failures() {
    require_h2load();
    let server = Server::start(&[]);
    let dir = tempfile::tempdir().expect("temp dir");
    let body = write_file(dir.path(), "echo.grpc", &grpc_echo_request_body());
    let (counts, out) = h2load(
        &server,
        &grpc_args(&body, &["-n", "20000", "-c", "4", "-m", "10"]),
        &server.url(ECHO_PATH),
    );
    assert!(
        out.stdout.contains("Application protocol: h2c"),
        "h2load did not speak h2c:\n{}",
        out.stdout
    );
    assert_eq!(
        counts,
        H2loadCounts {
            total: 20000,
            started: 20000,
            done: 20000,
            succeeded: 20000,
            status_2xx: 20000,
            ..Default::default()
        },
        "h2load:\n{}\nserver stderr:\n{}",
        h2load_summary(&out.stdout),
        server.log()
    );
}

#[test]
fn h2load_http1_drives_json_echo_with_zero_failures() {
    require_h2load();
    let server = Server::start(&[]);
    let dir = tempfile::tempdir().expect("temp dir");
    let body = write_file(dir.path(), "echo.json", br#"{"ping": "Hello, world!"}"#);
    let (counts, out) = h2load(
        &server,
        &[
            "--h1",
            "-n",
            "2000",
            "-c",
            "4",
            "-d",
            &body,
            "-H",
            "content-type: application/json",
        ],
        &server.url("/v1/echo"),
    );
    assert!(
        out.stdout.contains("Application protocol: http/1.1"),
        "h2load did not speak HTTP/1.1:\n{}",
        out.stdout
    );
    assert_eq!(
        counts,
        H2loadCounts {
            total: 2000,
            started: 2000,
            done: 2000,
            succeeded: 2000,
            status_2xx: 2000,
            ..Default::default()
        },
        "h2load --h1:\n{}\nserver stderr:\n{}",
        h2load_summary(&out.stdout),
        server.log()
    );
}

/// `--max-concurrent-streams 7` is announced in the server's SETTINGS (as nghttp's frame dump
/// shows it; h2load does not print the negotiated value) and honoured by h2load.
///
/// h2load (like any client) sends its first `-m` requests before the server's SETTINGS can
/// arrive; the server refuses those beyond 7 with RST_STREAM(REFUSED_STREAM), as RFC 9113
/// §5.1.2 allows, and h2load counts them as failed without retrying. Everything h2load sends
/// after the SETTINGS stays within the limit and must succeed, and a client that never
/// exceeds the limit (`-m 7`) must see no failure at all.
#[test]
fn max_concurrent_streams_is_announced() {
    const LIMIT: u64 = 7;
    const BURST: u64 = 100;
    const N: u64 = 200;
    require_h2load();
    require_nghttp();
    let dir = tempfile::tempdir().expect("temp dir");
    let body = write_file(dir.path(), "echo.grpc", &grpc_echo_request_body());
    let limited = Server::start(&["--max-concurrent-streams", &LIMIT.to_string()]);
    let unlimited = Server::start(&[]);

    // 1. The announced value, from the frame dump of one request.
    let announced = |server: &Server| -> Option<u64> {
        let mut cmd = Command::new("nghttp");
        cmd.args(["-n", "-v", "-d", &body])
            .args(["-H", "content-type: application/grpc", "-H", "te: trailers"])
            .arg(server.url(ECHO_PATH));
        let out = run_tool(cmd, TOOL_LIMIT);
        assert_eq!(
            out.code,
            Some(0),
            "nghttp exited with {:?}\nstdout:\n{}\nstderr:\n{}",
            out.code,
            out.stdout,
            out.stderr
        );
        server_max_concurrent_streams(&out.stdout)
    };
    assert_eq!(
        announced(&limited),
        Some(LIMIT),
        "the server's SETTINGS must carry SETTINGS_MAX_CONCURRENT_STREAMS {LIMIT}"
    );
    assert_eq!(
        announced(&unlimited),
        None,
        "without --max-concurrent-streams the server announces no limit"
    );

    // 2. h2load with a burst above the limit: only the first burst can be refused.
    let n = N.to_string();
    let burst = BURST.to_string();
    let (c, out) = h2load(
        &limited,
        &grpc_args(&body, &["-n", &n, "-c", "1", "-m", &burst]),
        &limited.url(ECHO_PATH),
    );
    let shown = h2load_summary(&out.stdout);
    assert_eq!(
        (c.total, c.started, c.done, c.timeout),
        (N, N, N, 0),
        "{shown}"
    );
    assert_eq!(c.succeeded + c.failed, N, "{shown}");
    assert_eq!(c.status_2xx, c.succeeded, "{shown}");
    assert!(
        c.failed <= BURST - LIMIT && c.succeeded >= N - (BURST - LIMIT),
        "at most the {} requests of the first burst beyond the limit may fail:\n{shown}",
        BURST - LIMIT
    );

    // 3. The same burst against a server without a limit: nothing fails (so failures above
    //    come from the limit, not from the load).
    let (c, out) = h2load(
        &unlimited,
        &grpc_args(&body, &["-n", &n, "-c", "1", "-m", &burst]),
        &unlimited.url(ECHO_PATH),
    );
    assert_eq!(
        (c.done, c.succeeded, c.failed, c.errored, c.timeout),
        (N, N, 0, 0, 0),
        "{}",
        h2load_summary(&out.stdout)
    );

    // 4. A client that stays within the limit is never refused.
    let (c, out) = h2load(
        &limited,
        &grpc_args(&body, &["-n", &n, "-c", "1", "-m", &LIMIT.to_string()]),
        &limited.url(ECHO_PATH),
    );
    assert_eq!(
        (c.done, c.succeeded, c.failed, c.errored, c.timeout),
        (N, N, 0, 0, 0),
        "{}",
        h2load_summary(&out.stdout)
    );
}

/// From `nghttp -v` output: the SETTINGS_MAX_CONCURRENT_STREAMS value in the first SETTINGS
/// frame received (the server's, not its ACK); `None` if that frame does not carry one.
///
/// ```text
/// [  0.000] recv SETTINGS frame <length=6, flags=0x00, stream_id=0>
///           (niv=1)
///           [SETTINGS_MAX_CONCURRENT_STREAMS(0x03):7]
/// ```
fn server_max_concurrent_streams(dump: &str) -> Option<u64> {
    let mut lines = dump.lines();
    lines
        .by_ref()
        .find(|l| l.contains("recv SETTINGS frame") && l.contains("flags=0x00"))
        .unwrap_or_else(|| panic!("no SETTINGS frame from the server in nghttp's output:\n{dump}"));
    for line in lines {
        let line = line.trim();
        if let Some(v) = line.strip_prefix("[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):") {
            return Some(
                v.trim_end_matches(']')
                    .parse()
                    .unwrap_or_else(|e| panic!("bad value in {line:?}: {e}")),
            );
        }
        if line.starts_with("[ ") {
            // The next frame (or event) begins: "[  0.000] ...".
            return None;
        }
    }
    None
}

#[test]
fn h2load_output_parses() {
    let sample = "finished in 270.02ms, 74023.60 req/s, 15.89MB/s\n\
        requests: 20000 total, 20000 started, 20000 done, 19988 succeeded, 12 failed, 12 errored, 0 timeout\n\
        status codes: 19988 2xx, 0 3xx, 0 4xx, 0 5xx\n";
    let c = parse_h2load(sample);
    assert_eq!(
        c,
        H2loadCounts {
            total: 20000,
            started: 20000,
            done: 20000,
            succeeded: 19988,
            failed: 12,
            errored: 12,
            timeout: 0,
            status_2xx: 19988,
            ..Default::default()
        }
    );
    assert_eq!(
        parse_listening(
            "wirebench serve: listening on 127.0.0.1:43893 (gRPC grpc_echo.v1.EchoService/Echo \
             and HTTP/1.1 POST /v1/echo), 2 threads; Ctrl-C stops"
        ),
        Some("127.0.0.1:43893".parse().unwrap())
    );
    let dump = "[  0.000] recv SETTINGS frame <length=6, flags=0x00, stream_id=0>\n          \
        (niv=1)\n          [SETTINGS_MAX_CONCURRENT_STREAMS(0x03):7]\n\
        [  0.000] recv SETTINGS frame <length=0, flags=0x01, stream_id=0>\n";
    assert_eq!(server_max_concurrent_streams(dump), Some(7));
    let dump = "[  0.000] recv SETTINGS frame <length=0, flags=0x00, stream_id=0>\n          \
        (niv=0)\n[  0.000] recv SETTINGS frame <length=0, flags=0x01, stream_id=0>\n";
    assert_eq!(server_max_concurrent_streams(dump), None);
}
