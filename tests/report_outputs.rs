//! Results that travel: the live Prometheus endpoint scraped with real HTTP GETs while a run
//! goes and after it ends, the per-request log against the report (and against a writer that
//! falls behind), the HTML page and charts (loaded in a real headless browser), and the
//! refusals of bad outputs.

mod support;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{
    assert_refused, f64_at, proto_run, run_bounded, run_bounded_on_thread, run_json, u64_at,
    unused_port,
};

const LIMIT: Duration = Duration::from_secs(120);

/// One GET of `path` on `addr`, by hand; the response body, or None when nothing listens.
fn get(addr: &str, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/plain\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4"),
        "{head}"
    );
    Some(body.to_string())
}

/// A scrape's samples: `name{labels}` -> value; the format checked on the way (HELP and TYPE
/// before each family's samples, each family once).
fn samples(page: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let mut typed = std::collections::HashSet::new();
    let mut helped = std::collections::HashSet::new();
    for line in page.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            assert!(helped.insert(rest.split(' ').next().unwrap().to_string()));
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split(' ');
            let name = it.next().unwrap().to_string();
            assert!(
                matches!(it.next(), Some("counter" | "gauge" | "histogram")),
                "{line}"
            );
            assert!(helped.contains(&name), "TYPE before HELP: {line}");
            assert!(typed.insert(name), "declared twice: {line}");
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("NAME VALUE");
        let family = series.split('{').next().unwrap();
        let base = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| family.strip_suffix(s).filter(|b| typed.contains(*b)))
            .unwrap_or(family);
        assert!(typed.contains(base), "a sample before its TYPE: {line}");
        if family.ends_with("_total") || base != family {
            assert!(
                family.ends_with("_total") || page.contains(&format!("# TYPE {base} histogram")),
                "{line}"
            );
        }
        let v: f64 = value.parse().unwrap_or_else(|_| panic!("{line}"));
        assert!(out.insert(series.to_string(), v).is_none(), "twice: {line}");
    }
    out
}

fn sum_of(s: &BTreeMap<String, f64>, prefix: &str) -> f64 {
    s.iter()
        .filter(|(k, _)| k.starts_with(prefix))
        .map(|(_, v)| v)
        .sum()
}

/// Validates a page with Prometheus' own checker; a missing promtool fails the test (a check
/// that skips itself would pass exactly where it checks nothing).
fn promtool_check(page: &str) {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run promtool: {e}; scripts/test.sh installs it \
                 (Debian's prometheus package: apt-get install prometheus)"
            )
        });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    // promtool exits 1 for a page it cannot parse and 3 for lint findings (a counter without
    // _total, a metric without HELP): the page has neither
    assert_eq!(
        out.status.code(),
        Some(0),
        "promtool check metrics: {}\n{page}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn live_metrics_rise_during_the_run_and_end_as_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let report_path = dir.path().join("report.json");
    let addr = format!("127.0.0.1:{}", unused_port());
    let run = run_bounded_on_thread(
        &[
            "echo",
            "--proto",
            "http,grpc",
            "-z",
            "2s",
            "-c",
            "4",
            "--threads",
            "1",
            "--metrics-addr",
            &addr,
            "--metrics-linger",
            "3s",
            "--format",
            "json",
            "-o",
            report_path.to_str().unwrap(),
        ],
        LIMIT,
    );
    // scrape every 200 ms until the report is written
    let started = Instant::now();
    let mut scrapes: Vec<BTreeMap<String, f64>> = Vec::new();
    let last = loop {
        assert!(started.elapsed() < LIMIT, "no final scrape");
        if let Some(page) = get(&addr, "/metrics") {
            let s = samples(&page);
            if s.get("wirebench_run_finished") == Some(&1.0) {
                promtool_check(&page);
                break s;
            }
            scrapes.push(s);
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    // mid-run: the requests counted rise from scrape to scrape, and no series ever goes down
    let totals: Vec<f64> = scrapes
        .iter()
        .map(|s| sum_of(s, "wirebench_requests_total{"))
        .collect();
    let rising = totals.windows(2).filter(|w| w[1] > w[0]).count();
    assert!(rising >= 3, "the counts rise during the run: {totals:?}");
    assert!(totals.iter().any(|t| *t > 0.0) && totals[0] < totals[totals.len() - 1]);
    let all: Vec<&BTreeMap<String, f64>> = scrapes.iter().chain([&last]).collect();
    for pair in all.windows(2) {
        for (k, v) in pair[0] {
            if k.starts_with("wirebench_run_finished") {
                continue;
            }
            let later = pair[1].get(k).copied().unwrap_or(0.0);
            assert!(later >= *v, "{k} went down: {v} -> {later}");
        }
    }
    // the report was written before the last scrape: read it while the endpoint lingers
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    for stack in ["http", "grpc"] {
        let r = proto_run(&report, stack);
        let at = |name: &str| {
            last.get(&format!("{name}{{stack=\"{stack}\"}}"))
                .copied()
                .unwrap_or_else(|| panic!("{name} of {stack} in {last:#?}"))
        };
        let count = u64_at(r, "/summary/count");
        assert!(count > 100, "{stack}: {count}");
        assert_eq!(
            sum_of(
                &last,
                &format!("wirebench_requests_total{{stack=\"{stack}\"")
            ),
            count as f64,
            "{stack}: requests"
        );
        for st in r["status_distribution"].as_array().unwrap() {
            let key = format!(
                "wirebench_requests_total{{stack=\"{stack}\",status=\"{}\"}}",
                st["status"].as_str().unwrap()
            );
            assert_eq!(last.get(&key), st["count"].as_f64().as_ref(), "{key}");
        }
        let failed = u64_at(r, "/summary/failed") as f64;
        assert_eq!(
            sum_of(
                &last,
                &format!("wirebench_request_errors_total{{stack=\"{stack}\"")
            ),
            failed
        );
        let ok = u64_at(r, "/summary/ok") as f64;
        assert_eq!(at("wirebench_request_duration_seconds_count"), ok);
        assert_eq!(
            last[&format!(
                "wirebench_request_duration_seconds_bucket{{stack=\"{stack}\",le=\"+Inf\"}}"
            )],
            ok
        );
        let sum = at("wirebench_request_duration_seconds_sum");
        let avg_sum = f64_at(r, "/summary/average_ms") * ok / 1e3;
        assert!(
            (sum - avg_sum).abs() <= 1e-6 * avg_sum.max(1.0),
            "{stack}: latency sum {sum} vs {avg_sum}"
        );
        assert_eq!(
            at("wirebench_requests_written_total"),
            u64_at(r, "/summary/written") as f64
        );
        assert_eq!(
            at("wirebench_sent_bytes_total"),
            u64_at(r, "/wire/bytes_out") as f64,
            "{stack}: bytes out"
        );
        assert_eq!(
            at("wirebench_received_bytes_total"),
            u64_at(r, "/wire/bytes_in") as f64,
            "{stack}: bytes in"
        );
        assert_eq!(
            at("wirebench_connections_opened_total"),
            u64_at(r, "/wire/connections_opened") as f64
        );
        match r["cost"]["syscalls"].as_u64() {
            Some(n) => assert_eq!(at("wirebench_syscalls_total"), n as f64, "{stack}"),
            None => assert!(
                !last.contains_key(&format!("wirebench_syscalls_total{{stack=\"{stack}\"}}"))
            ),
        }
        let user = last[&format!("wirebench_cpu_seconds_total{{stack=\"{stack}\",mode=\"user\"}}")];
        assert!(
            (user - f64_at(r, "/cost/client_cpu_user_us") / 1e6).abs() < 1e-9,
            "{stack}: user CPU {user}"
        );
    }
    // it lingered (3 s) after the report, then stopped: exit 0, the port closed
    let done = run.join().unwrap();
    assert_eq!(done.code, Some(0), "{done:#?}");
    assert!(get(&addr, "/metrics").is_none(), "the endpoint is gone");
}

/// The log's rows as fields, the header checked.
fn rows(path: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("start_us,latency_us,stack,status,connection,bytes,error")
    );
    lines
        .map(|l| {
            let f: Vec<String> = l.split(',').map(str::to_string).collect();
            assert_eq!(f.len(), 7, "{l}");
            f
        })
        .collect()
}

#[test]
fn the_request_log_has_one_row_per_measured_request() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.csv");
    // failures too: the built-in server fails 10 % of the requests (503 / UNAVAILABLE)
    let report = run_json(&[
        "echo",
        "--proto",
        "http,h2,grpc",
        "-n",
        "3000",
        "-c",
        "8",
        "--threads",
        "2",
        "--warmup",
        "200ms",
        "-H",
        "wirebench-fail:10%",
        "--log-requests",
        log.to_str().unwrap(),
    ]);
    let rows = rows(&log);
    for stack in ["http", "h2", "grpc"] {
        let r = proto_run(&report, stack);
        let mine: Vec<&Vec<String>> = rows.iter().filter(|f| f[2] == stack).collect();
        let count = u64_at(r, "/summary/count");
        assert_eq!(mine.len() as u64, count, "{stack}: rows = count");
        assert_eq!(u64_at(r, "/request_log/rows"), count);
        assert!(f64_at(r, "/request_log/writer_wait_ms") >= 0.0);
        // statuses and failures as the report counts them
        for st in r["status_distribution"].as_array().unwrap() {
            let n = mine
                .iter()
                .filter(|f| f[3] == st["status"].as_str().unwrap())
                .count();
            assert_eq!(n as u64, st["count"].as_u64().unwrap(), "{stack} {st}");
        }
        let failed = mine.iter().filter(|f| !f[6].is_empty()).count() as u64;
        assert_eq!(failed, u64_at(r, "/summary/failed"));
        assert!(failed > 0 && failed < count, "{stack}: {failed} failed");
        // every row: a start inside the window, a latency, a connection of the run, bytes
        // when OK
        let total_us = f64_at(r, "/summary/total_s") * 1e6;
        let ports: Vec<String> = r["per_connection"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["local_port"].to_string())
            .collect();
        let mut latency_sum = 0.0;
        for f in &mine {
            let start: f64 = f[0].parse().unwrap();
            let latency: f64 = f[1].parse().unwrap();
            assert!(start >= 0.0 && start <= total_us, "{f:?}");
            assert!(latency > 0.0, "{f:?}");
            assert!(ports.contains(&f[4]), "{f:?} not on {ports:?}");
            if f[6].is_empty() {
                assert!(f[5].parse::<u64>().unwrap() > 0, "{f:?}");
                latency_sum += latency;
            }
        }
        // the OK rows' latencies are the report's (to the ns, the report's average exact)
        let ok = u64_at(r, "/summary/ok") as f64;
        let avg_us = f64_at(r, "/summary/average_ms") * 1e3;
        assert!(
            (latency_sum / ok - avg_us).abs() < 0.01,
            "{stack}: {} vs {avg_us}",
            latency_sum / ok
        );
    }
}

/// On the ring, the responses one wait brought are complete when that wait returned: their
/// rows end at the same nanosecond (start + latency), one clock reading for the batch. On epoll
/// each response has its own reading, so no two rows end together.
#[test]
fn responses_one_ring_wait_brought_share_their_completion_time() {
    let dir = tempfile::tempdir().unwrap();
    let shared = |io_loop: &str| -> (usize, Value) {
        let log = dir.path().join(format!("{io_loop}.csv"));
        let report = run_json(&[
            "echo",
            "--proto",
            "http",
            "-n",
            "5000",
            "-c",
            "10",
            "--threads",
            "1",
            "--io-loop",
            io_loop,
            "--log-requests",
            log.to_str().unwrap(),
        ]);
        let rows = rows(&log);
        assert_eq!(rows.len(), 5000);
        let ns = |f: &str| -> i64 { f.replace('.', "").parse().unwrap() };
        let mut ends = BTreeMap::new();
        for f in &rows {
            assert!(f[6].is_empty(), "{f:?}");
            *ends.entry(ns(&f[0]) + ns(&f[1])).or_insert(0usize) += 1;
        }
        let shared = ends.values().filter(|&&n| n > 1).sum();
        (shared, proto_run(&report, "http")["cost"].clone())
    };
    let (on_epoll, cost) = shared("epoll");
    assert_eq!(cost["client_loop"], "epoll");
    assert_eq!(on_epoll, 0, "rows ending together on epoll");
    let (on_ring, cost) = shared("auto");
    assert_eq!(cost["client_loop"], support::auto_loop());
    if cost["client_loop"] == "io_uring" {
        // 10 connections answered by a server as fast as the client: waits bring several
        assert!(on_ring >= 25, "{on_ring} of 5000 rows share their end");
    }
}

#[test]
fn a_writer_that_falls_behind_makes_the_workers_wait_and_loses_no_row() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("requests.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    // the reader holds off for 3 s (the run needs about 5 s: it fills its buffers and the
    // pipe's within the first), then takes everything
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut f = std::fs::File::open(&fifo).unwrap();
            std::thread::sleep(Duration::from_secs(3));
            let mut all = String::new();
            f.read_to_string(&mut all).unwrap();
            all
        })
    };
    let report = run_json(&[
        "echo",
        "--proto",
        "grpc",
        "-n",
        "30000",
        "-c",
        "8",
        "--threads",
        "1",
        "--log-requests",
        fifo.to_str().unwrap(),
    ]);
    let text = reader.join().unwrap();
    let r = proto_run(&report, "grpc");
    let count = u64_at(r, "/summary/count");
    assert_eq!(count, 30_000);
    assert_eq!(
        text.lines().count() as u64,
        count + 1,
        "every row and the header"
    );
    assert_eq!(u64_at(r, "/request_log/rows"), count);
    let waited = f64_at(r, "/request_log/writer_wait_ms");
    assert!(
        waited > 500.0 && u64_at(r, "/request_log/writer_waits") > 0,
        "the worker waited for the writer: {waited} ms"
    );
}

/// Chromium, when installed (Debian's `chromium`).
fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(name))
                    .find(|p| p.is_file())
            })
        })
}

/// A headless screenshot of `page` (1200 x 2000), as the PNG's bytes.
fn screenshot(browser: &Path, page: &Path, png: &Path) -> Vec<u8> {
    let profile = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    .arg(format!("--screenshot={}", png.display()))
    .arg("--window-size=1200,2000")
    .arg(format!("file://{}", page.display()));
    let run = support::run_command(cmd, Duration::from_secs(90));
    assert_eq!(run.code, Some(0), "{run:#?}");
    std::fs::read(png).unwrap_or_else(|e| panic!("no screenshot ({e}): {run:#?}"))
}

/// A PNG's width and height (from its IHDR chunk).
fn png_size(png: &[u8]) -> (u32, u32) {
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert_eq!(&png[12..16], b"IHDR");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&png[16..20]), be(&png[20..24]))
}

#[test]
fn the_html_page_stands_alone_and_renders_in_a_browser() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    let latency = dir.path().join("latency.svg");
    let timeline = dir.path().join("timeline.svg");
    let report = run_json(&[
        "echo",
        "--proto",
        "http,grpc",
        "-z",
        "2s",
        "-c",
        "4",
        "--threads",
        "1",
        "--html",
        html.to_str().unwrap(),
        "--latency-svg",
        latency.to_str().unwrap(),
        "--timeline-svg",
        timeline.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    // nothing to fetch: no script, stylesheet, image or font from anywhere
    for word in [
        "<script", "<link", "<img", "src=", "href=", "url(", "@import", "<iframe",
    ] {
        assert!(!page.contains(word), "the page has {word}");
    }
    // the report's tables and the three charts, inline
    for stack in ["http", "grpc"] {
        let count = u64_at(proto_run(&report, stack), "/summary/count");
        assert!(page.contains(&format!("<td>{count}</td>")), "{stack} count");
    }
    assert_eq!(page.matches("<svg").count(), 3);
    for svg in [&latency, &timeline] {
        let s = std::fs::read_to_string(svg).unwrap();
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert!(page.contains(&s), "{} is in the page", svg.display());
        // one line per stack
        assert!(s.contains("#d9822b") && s.contains("#2b6cb0"));
    }
    let Some(browser) = chromium() else {
        // CI installs chromium (scripts/test.sh): there it must be found
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "chromium is not installed, and CI installs it"
        );
        println!("skipped the browser check: chromium is not installed (apt-get install chromium)");
        return;
    };
    let shot = screenshot(&browser, &html, &dir.path().join("report.png"));
    assert_eq!(png_size(&shot), (1200, 2000));
    // a blank page of the same size compresses to almost nothing; the report does not
    let blank = dir.path().join("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let empty = screenshot(&browser, &blank, &dir.path().join("blank.png"));
    assert_eq!(png_size(&empty), (1200, 2000));
    assert!(
        shot.len() > 10 * empty.len() && shot.len() > 50_000,
        "the page rendered: {} B against a blank page's {} B",
        shot.len(),
        empty.len()
    );
    println!(
        "chromium screenshot: {} B (a blank page: {} B)",
        shot.len(),
        empty.len()
    );
}

#[test]
fn bad_outputs_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir").join("x");
    let missing = missing.to_str().unwrap();
    // flags that do not parse: exit 2 before anything starts
    assert_refused(
        &["echo", "-n", "10", "--metrics-addr", "nonsense"],
        2,
        "--metrics-addr",
    );
    assert_refused(
        &["echo", "-n", "10", "--metrics-addr", "127.0.0.1:70000"],
        2,
        "--metrics-addr",
    );
    assert_refused(
        &["echo", "-n", "10", "--metrics-linger", "5s"],
        2,
        "--metrics-addr",
    );
    assert_refused(
        &["compare", "echo", "-n", "10", "--html", "x.html"],
        2,
        "not compare",
    );
    // the curve draws a capacity search's steps: without --find-max there are none
    let curve = dir.path().join("curve.svg");
    assert_refused(
        &["echo", "-z", "1s", "--curve-svg", curve.to_str().unwrap()],
        2,
        "--curve-svg draws the steps of a capacity search: give --find-max",
    );
    assert!(!curve.exists());
    // a port in use, an unwritable file: exit 1 before the run, nothing left behind
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let html = dir.path().join("left.html");
    assert_refused(
        &[
            "echo",
            "-n",
            "10",
            "--metrics-addr",
            &addr,
            "--html",
            html.to_str().unwrap(),
        ],
        1,
        "Address already in use",
    );
    assert!(!html.exists());
    assert_refused(
        &["echo", "-n", "10", "--log-requests", missing],
        1,
        "--log-requests",
    );
    let svg = dir.path().join("ok.svg");
    assert_refused(
        &[
            "echo",
            "-n",
            "10",
            "--latency-svg",
            svg.to_str().unwrap(),
            "--timeline-svg",
            missing,
        ],
        1,
        "--timeline-svg",
    );
    assert!(!svg.exists(), "the file made before the failure is removed");
    // a run that cannot start leaves no empty page behind
    let dead = format!("http://127.0.0.1:{}", unused_port());
    let page = dir.path().join("never.html");
    let failed = run_bounded(
        &[
            "echo",
            "--target",
            &dead,
            "-n",
            "10",
            "--html",
            page.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(failed.code, Some(1), "{failed:#?}");
    assert!(failed.stderr.contains("connect"), "{failed:#?}");
    assert!(!page.exists());
    // and a good run writes nothing on stderr about them
    let ok = run_bounded(
        &["echo", "-n", "200", "--latency-svg", svg.to_str().unwrap()],
        LIMIT,
    );
    assert_eq!(ok.code, Some(0), "{ok:#?}");
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
}
