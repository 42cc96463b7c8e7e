//! The HTTP/1.1 request path allocates nothing per request and writes each request with one
//! syscall: the real engine is run in-process against a minimal server that does not allocate
//! on its threads' count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};

use clap::Parser;
use wirebench::cli::Cli;
use wirebench::config::Proto;
use wirebench::workload::Workload;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Set on the fake server's threads: their allocations are not the client's.
    static NOT_COUNTED: Cell<bool> = const { Cell::new(false) };
}

fn count() {
    if !NOT_COUNTED.with(Cell::get) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: delegates every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The counter is process-wide: the tests take turns, so none counts another's allocations.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 27\r\n\r\n{\"header\":{\"revision\":\"5\"}}";

/// An etcd error through the gateway: every request fails, always with the same message.
const ERROR: &[u8] = b"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: 92\r\n\r\n{\"error\":\"etcdserver: too many requests\",\"message\":\"etcdserver: too many requests\",\"code\":8}";

/// Answers every request (head + Content-Length body) with `response`, reusing one buffer.
fn serve(mut s: TcpStream, response: &'static [u8]) {
    NOT_COUNTED.with(|c| c.set(true));
    let mut buf = vec![0u8; 64 * 1024];
    let mut have = 0;
    loop {
        // complete requests at the front of buf
        while let Some(end) = buf[..have].windows(4).position(|w| w == b"\r\n\r\n") {
            let head = std::str::from_utf8(&buf[..end]).unwrap_or("");
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            let total = end + 4 + len;
            if have < total {
                break;
            }
            if s.write_all(response).is_err() {
                return;
            }
            buf.copy_within(total..have, 0);
            have -= total;
        }
        match s.read(&mut buf[have..]) {
            Ok(0) | Err(_) => return,
            Ok(n) => have += n,
        }
    }
}

fn fake_server(response: &'static [u8]) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        NOT_COUNTED.with(|c| c.set(true));
        for s in l.incoming().flatten() {
            std::thread::spawn(move || serve(s, response));
        }
    });
    format!("http://{addr}")
}

fn allocations_for(endpoint: &str, n: u64) -> (u64, wirebench::stats::ProtoRun) {
    let cli = Cli::try_parse_from([
        "wirebench",
        "etcd",
        "put",
        "--endpoints",
        endpoint,
        "--proto",
        "http",
        "-c",
        "2",
        "--threads",
        "1",
        "--seed",
        "1",
        "--key-space-size",
        "1000",
        "-n",
        &n.to_string(),
    ])
    .unwrap();
    let cfg = cli.into_config().unwrap();
    let workload = Workload::new(&cfg.spec, &cfg.endpoints, cfg.seed, None).unwrap();
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let run =
        wirebench::engine::run_proto(&cfg, &workload, &cfg.endpoints, Proto::Http, None).unwrap();
    let after = ALLOCATIONS.load(Ordering::Relaxed);
    (after - before, run)
}

#[test]
fn http1_steady_state_allocates_nothing_and_writes_once() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let endpoint = fake_server(RESPONSE);
    let (small, run_small) = allocations_for(&endpoint, 200);
    let (large, run_large) = allocations_for(&endpoint, 10_200);
    assert_eq!(run_small.stats.ok, 200);
    assert_eq!(run_large.stats.ok, 10_200);
    // 10,000 more requests must cost (almost) no more allocations: setup and teardown are the
    // same in both runs; a little slack covers one-off growth (e.g. a histogram bucket map).
    let extra = large.saturating_sub(small);
    println!("allocations: {small} for 200 requests, {large} for 10,200 requests");
    assert!(
        extra < 50,
        "10000 extra requests made {extra} extra allocations ({small} vs {large})"
    );
    let requests: u64 = run_large.stats.conns.iter().map(|c| c.requests).sum();
    let writes: u64 = run_large.stats.conns.iter().map(|c| c.write_calls).sum();
    assert_eq!(requests, 10_200);
    assert_eq!(writes, requests, "one write syscall per HTTP/1.1 request");
}

#[test]
fn http1_failures_allocate_nothing_per_failure() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // Every request fails the same way: the failure's message is interned, so after the first
    // one a failure costs no allocation either.
    let endpoint = fake_server(ERROR);
    let (small, run_small) = allocations_for(&endpoint, 200);
    let (large, run_large) = allocations_for(&endpoint, 10_200);
    assert_eq!(run_small.stats.failed, 200);
    assert_eq!(run_large.stats.failed, 10_200);
    assert_eq!(
        run_large.stats.errors.len(),
        1,
        "{:?}",
        run_large.stats.errors
    );
    let extra = large.saturating_sub(small);
    println!("allocations: {small} for 200 failures, {large} for 10,200 failures");
    assert!(
        extra < 50,
        "10000 extra failures made {extra} extra allocations ({small} vs {large})"
    );
}
