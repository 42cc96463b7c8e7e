//! Every derived figure against numbers computed by hand. Latencies are recorded exactly
//! (count, sum, min, max); percentiles come from the HDR histogram, 3 significant digits,
//! so those are checked within 0.1% (`hdr`).

use std::time::Duration;

use super::*;
use crate::config::Endpoint;
use crate::outcome::{Failure, FailureKind, StatusKey};
use crate::stack::Proto;
use crate::stats::perf::KernelCounts;
use crate::stats::{At, CpuTimes, Stats, Timeline};
use crate::stats::{CloseRecord, TcpInfo};
use crate::stats::{Memory, WindowCost};
use wirebench_wire::h2::counts::FrameCount;
use wirebench_wire::h2::frame::FrameType;

// The helpers marked pub(super) are shared with the tests of `compare`.

/// A run that measured nothing, over a 1 s window: each test fills in what it checks.
pub(super) fn run(proto: Proto) -> ProtoRun {
    ProtoRun {
        proto,
        clients: 1,
        conns: 1,
        pipeline: 1,
        requests_per_conn: None,
        threads: 1,
        stats: Stats::default(),
        window_start: std::time::Instant::now(),
        started_at: std::time::SystemTime::now(),
        elapsed: Duration::from_secs(1),
        cost: WindowCost::default(),
        server_cpu: None,
        sample: None,
        interrupted: false,
        rate: None,
        client_loop: crate::stats::CLIENT_LOOP_TOKIO,
        pacer_timer: None,
        memory: None,
        stage_cpu: Vec::new(),
        failovers: Vec::new(),
        rediscovery_failures: crate::stats::Unresolved::default(),
        members: Vec::new(),
        start_members: Vec::new(),
        classes: &[],
        compaction: None,
        leases: None,
        link: None,
    }
}

/// Endpoint 0 is IPv4, endpoint 1 IPv6 (literals: nothing is resolved).
pub(super) fn endpoints() -> Vec<Endpoint> {
    ["http://127.0.0.1:2379", "http://[::1]:2379"]
        .iter()
        .map(|u| Endpoint::parse(u).expect("a literal address"))
        .collect()
}

pub(super) fn report(run: &ProtoRun) -> RunReport {
    RunReport::from_run(run, &endpoints(), &[], false)
}

/// At endpoint `endpoint`, `s` seconds into the window.
fn at(endpoint: usize, s: u64) -> At {
    At {
        endpoint,
        offset: Duration::from_secs(s),
        stage: None,
    }
}

/// `n` successful requests of `latency` each, at endpoint 0, in the first second.
pub(super) fn ok(stats: &mut Stats, n: u64, latency: Duration) {
    for _ in 0..n {
        stats.record_ok(at(0, 0), latency, StatusKey::Http(200));
    }
}

/// One successful request of each of `ms` milliseconds, at endpoint 0.
pub(super) fn ok_ms(stats: &mut Stats, ms: impl IntoIterator<Item = u64>) {
    for ms in ms {
        ok(stats, 1, Duration::from_millis(ms));
    }
}

pub(super) fn conn(
    endpoint: usize,
    requests: u64,
    bytes_out: u64,
    bytes_in: u64,
    tcp: Option<TcpInfo>,
) -> ConnRecord {
    ConnRecord {
        endpoint,
        requests,
        bytes_out,
        bytes_in,
        tcp,
        ..ConnRecord::default()
    }
}

pub(super) fn tcp(segs_out: u64, segs_in: u64, timestamps: bool) -> TcpInfo {
    TcpInfo {
        segs_out,
        segs_in,
        timestamps,
        ..TcpInfo::default()
    }
}

/// `got` (a figure, or one that may be missing: it must be there) is `want` within HDR's 3
/// significant digits.
#[track_caller]
pub(super) fn hdr(got: impl Into<Option<f64>>, want: f64) {
    let got = got
        .into()
        .unwrap_or_else(|| panic!("no figure, {want} wanted"));
    assert!(
        (got - want).abs() <= want * 1e-3,
        "{got} is not {want} within 0.1%"
    );
}

/// `got` (that must be there) is `want` up to float rounding (a square root).
#[track_caller]
fn close(got: impl Into<Option<f64>>, want: f64) {
    let got = got
        .into()
        .unwrap_or_else(|| panic!("no figure, {want} wanted"));
    assert!((got - want).abs() <= want.abs() * 1e-12, "{got} != {want}");
}

/// The nine percentiles of `got`, each `want` within 0.1%.
#[track_caller]
fn hdr_all(got: &[Percentile], want: [f64; 9]) {
    let ps: Vec<f64> = got.iter().map(|p| p.percentile).collect();
    assert_eq!(ps, PERCENTILES);
    for (g, w) in got.iter().zip(want) {
        hdr(g.latency_ms, w);
    }
}

/// The count of each bucket of a histogram.
fn counts(b: &[Bucket]) -> Vec<u64> {
    b.iter().map(|b| b.count).collect()
}

mod merge;
mod nulls;
mod quic;
mod runs;
/// shared with the tests of the capacity chart (`svg::capacity`) and the page (`html`)
pub(super) mod searches;
mod summary;
mod wire;
