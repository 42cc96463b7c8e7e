//! The derivation of every report figure from a run's measurements: the one place figures
//! are computed.

mod quic;
mod streaming;

use super::*;
pub(super) use quic::{H3Sums, OnWire};
use streaming::streaming;

pub(super) fn ms(ns: f64) -> f64 {
    ns / 1e6
}

/// `n` per `d`: None when there is nothing to divide by (no request written, no connection,
/// ...): a figure without a denominator was not measured, and reads null, never 0.
pub(super) fn per(n: u64, d: u64) -> Option<f64> {
    (d > 0).then(|| n as f64 / d as f64)
}

/// `n` per second of a window of `secs`: None for a window of no length.
pub(super) fn per_sec(n: u64, secs: f64) -> Option<f64> {
    (secs > 0.0).then(|| n as f64 / secs)
}

/// Milliseconds of a latency in ns that may not exist.
pub(super) fn ms_of(ns: Option<u64>) -> Option<f64> {
    ns.map(|ns| ms(ns as f64))
}

/// The sum of two figures (out + in, reads + writes): None when either is.
pub fn plus(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? + b?)
}

/// What the headline `Requests/sec` counts: the measured requests (ok + failed) in closed loop,
/// as ghz and etcd's benchmark count them; in open loop the requests written, since a send the
/// schedule had due but no client could take within --timeout failed unwritten (`late`) and
/// would otherwise show a dead server at about the target rate.
pub(super) fn headline_count(open_loop: bool, count: u64, written: u64) -> u64 {
    if open_loop { written } else { count }
}

/// `num` / `den`: None when either figure is, or the divisor is not positive.
pub(super) fn ratio(num: Option<f64>, den: Option<f64>) -> Option<f64> {
    let (num, den) = (num?, den?);
    (den > 0.0 && num.is_finite()).then(|| num / den)
}

/// Failures by kind and message, most frequent first (ties by kind, then message).
pub fn error_counts(
    errors: &std::collections::HashMap<crate::outcome::Failure, u64>,
) -> Vec<ErrorCount> {
    let mut v: Vec<ErrorCount> = errors
        .iter()
        .map(|(f, &count)| ErrorCount {
            kind: f.kind.as_str(),
            message: f.detail.as_deref().map(str::to_string),
            count,
        })
        .collect();
    sort_errors(&mut v);
    v
}

/// Most frequent first; ties by kind, then message.
pub(super) fn sort_errors(v: &mut [ErrorCount]) {
    v.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(a.kind.cmp(b.kind))
            .then_with(|| a.message.cmp(&b.message))
    });
}

/// IP + TCP header bytes of `segments` segments: IPv4 20 or IPv6 40, TCP 20, plus 12 bytes of
/// timestamp option on every segment when negotiated (Linux pads it to 12). SACK blocks and other
/// options on some segments are not counted: the figure is a floor.
pub fn ip_tcp_header_bytes(segments: u64, ipv6: bool, timestamps: bool) -> u64 {
    let ip = if ipv6 { 40 } else { 20 };
    let tcp = 20 + if timestamps { 12 } else { 0 };
    segments * (ip + tcp)
}

pub(super) fn layer_totals(conns: &[ConnRecord], requests: u64) -> Option<LayerTotals> {
    let mut http1: Option<Http1Counts> = None;
    let mut h2: Option<Duplex<H2Counts>> = None;
    for c in conns {
        if let Some(l) = c.http1 {
            *http1.get_or_insert_with(Default::default) += l;
        }
        if let Some(l) = c.h2 {
            *h2.get_or_insert_with(Default::default) += l;
        }
    }
    if http1.is_none() && h2.is_none() {
        return None;
    }
    let (setup_out, setup_in) = h2
        .as_ref()
        .map_or((0, 0), |h| (h.out.setup_bytes, h.inbound.setup_bytes));
    let bytes_out: u64 = conns.iter().map(|c| c.bytes_out).sum();
    let bytes_in: u64 = conns.iter().map(|c| c.bytes_in).sum();
    Some(LayerTotals {
        http1,
        h2,
        setup_bytes_out: setup_out,
        setup_bytes_in: setup_in,
        bytes_out_per_request_after_setup: per(bytes_out.saturating_sub(setup_out), requests),
        bytes_in_per_request_after_setup: per(bytes_in.saturating_sub(setup_in), requests),
    })
}

pub(super) fn distribution(lat: &Latencies) -> Vec<Percentile> {
    distribution_of(&lat.hist)
}

/// The percentiles of `PERCENTILES` of a histogram in ns (none when it is empty).
pub(super) fn distribution_of(hist: &hdrhistogram::Histogram<u64>) -> Vec<Percentile> {
    if hist.is_empty() {
        return Vec::new();
    }
    PERCENTILES
        .iter()
        .map(|&p| Percentile {
            percentile: p,
            latency_ms: ms(hist.value_at_quantile(p / 100.0) as f64),
        })
        .collect()
}

/// The highest percentile the spectrum goes to (the charts' right edge).
pub const SPECTRUM_TOP: f64 = 99.999;

/// The latency percentile spectrum of `lat` (HdrHistogram's percentile iteration, 5 steps per
/// halving of the distance to 100 %), up to `SPECTRUM_TOP`, which is the last point.
pub(super) fn spectrum(lat: &Latencies) -> Vec<Percentile> {
    if lat.count == 0 {
        return Vec::new();
    }
    let mut points: Vec<Percentile> = Vec::new();
    for v in lat.hist.iter_quantiles(5) {
        let p = v.quantile_iterated_to() * 100.0;
        if p >= SPECTRUM_TOP {
            break;
        }
        let latency_ms = ms(v.value_iterated_to() as f64);
        if points.last().is_some_and(|l| l.percentile == p) {
            continue;
        }
        points.push(Percentile {
            percentile: p,
            latency_ms,
        });
    }
    points.push(Percentile {
        percentile: SPECTRUM_TOP,
        latency_ms: ms(lat.hist.value_at_quantile(SPECTRUM_TOP / 100.0) as f64),
    });
    points
}

pub(super) fn connection_setup(run: &ProtoRun) -> Option<ConnectionSetup> {
    let requests_per_conn = run.requests_per_conn?;
    let st = &run.stats;
    let conns = &st.conns;
    let written: u64 = conns.iter().map(|c| c.requests).sum();
    let connect_us: u64 = conns.iter().map(|c| c.connect_us).sum();
    let opened: u64 = conns.iter().map(ConnRecord::weight).sum();
    let mut tls: Option<TlsCounts> = None;
    for t in conns.iter().filter_map(|c| c.tls.as_ref()) {
        *tls.get_or_insert_with(TlsCounts::default) += *t;
    }
    let without = st.without_setup.clone().unwrap_or_default();
    Some(ConnectionSetup {
        requests_per_conn,
        connections_per_request: per(opened, written),
        tcp_connect_average_ms: per(connect_us, opened).map(|us| us / 1000.0),
        tls: tls.map(|t| HandshakeCost {
            handshakes: t.handshakes,
            full: t.handshakes - t.resumed,
            resumed: t.resumed,
            average_ms: per(t.handshake_us, t.handshakes).map(|us| us / 1000.0),
            client_cpu_us: per(t.handshake_cpu_us, t.handshakes),
            bytes_out: per(t.handshake_bytes_out, t.handshakes),
            bytes_in: per(t.handshake_bytes_in, t.handshakes),
        }),
        without_setup_average_ms: without.mean_ns().map(ms),
        without_setup_distribution: distribution(&without),
    })
}

pub(super) fn open_loop(run: &ProtoRun) -> Option<OpenLoop> {
    let target_rate = run.rate?;
    let st = &run.stats;
    let secs = run.elapsed.as_secs_f64();
    let unc = st.uncorrected.clone().unwrap_or_default();
    Some(OpenLoop {
        target_rate,
        achieved_rate: per_sec(st.written, secs),
        expired_sends: st.expired,
        timer: run.pacer_timer,
        late_sends: st.late,
        overdue_sends: st.overdue,
        sends_taken: st.lagged_sends,
        average_send_lag_ms: (st.lagged_sends > 0)
            .then(|| ms(st.send_lag_sum.as_nanos() as f64 / st.lagged_sends as f64)),
        max_send_lag_ms: (st.lagged_sends > 0).then(|| ms(st.max_send_lag.as_nanos() as f64)),
        uncorrected_average_ms: unc.mean_ns().map(ms),
        uncorrected_slowest_ms: ms_of(unc.slowest_ns()),
        uncorrected_distribution: distribution(&unc),
    })
}

pub(super) fn per_endpoint(
    run: &ProtoRun,
    endpoints: &[String],
    roles: &[String],
) -> Vec<EndpointReport> {
    let secs = run.elapsed.as_secs_f64();
    run.stats
        .per_endpoint
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let lat = run.stats.endpoint_latency(i);
            let q = |p: f64| lat.and_then(|l| ms_of(l.quantile_ns(p)));
            EndpointReport {
                endpoint: endpoints.get(i).cloned().unwrap_or_default(),
                role: roles.get(i).cloned(),
                count: e.ok + e.failed,
                ok: e.ok,
                failed: e.failed,
                requests_per_sec: per_sec(e.ok + e.failed, secs),
                p50_ms: q(0.5),
                p90_ms: q(0.9),
                p99_ms: q(0.99),
            }
        })
        .collect()
}

pub(super) fn timeline(run: &ProtoRun) -> Vec<TimelinePoint> {
    let t = &run.stats.timeline;
    t.slots
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let q = |p: f64| b.quantile_ms(p);
            TimelinePoint {
                t_s: i as u64 * t.width_s,
                width_s: t.width_s,
                ok: b.ok,
                errors: b.failed,
                requests_per_sec: per_sec(b.ok + b.failed, t.width_s as f64),
                p50_ms: q(0.5),
                p99_ms: q(0.99),
                scheduled: run.rate.map(|_| b.sent),
                stage: None,
            }
        })
        .collect()
}

/// txn-mixed: each class's measured requests (every class the workload names, those that had
/// none too), over the run's measured window.
pub(super) fn classes(run: &ProtoRun) -> Option<Vec<ClassReport>> {
    if run.classes.is_empty() {
        return None;
    }
    let secs = run.elapsed.as_secs_f64();
    let rate = |n: u64| per_sec(n, secs);
    let none = EndpointStats::default();
    Some(
        run.classes
            .iter()
            .enumerate()
            .map(|(i, &class)| {
                let c = run.stats.classes.get(i).unwrap_or(&none);
                let lat = &c.latency;
                ClassReport {
                    class,
                    count: c.ok + c.failed,
                    ok: c.ok,
                    failed: c.failed,
                    requests_per_sec: rate(c.ok + c.failed),
                    ok_per_sec: rate(c.ok),
                    average_ms: lat.mean_ns().map(ms),
                    fastest_ms: ms_of(lat.fastest_ns()),
                    slowest_ms: ms_of(lat.slowest_ns()),
                    latency_distribution: distribution(lat),
                }
            })
            .collect(),
    )
}

/// The failovers of a run whose clients could move (etcd on a cluster).
pub(super) fn failover(run: &ProtoRun) -> Option<FailoverReport> {
    if run.members.is_empty() {
        return None;
    }
    let url = |i: usize| run.members.get(i).cloned().unwrap_or_default();
    let secs = |d: std::time::Duration| d.as_secs_f64();
    Some(FailoverReport {
        members: run.members.clone(),
        events: run
            .failovers
            .iter()
            .map(|e| FailoverRow {
                endpoint: e.slot,
                from: url(e.from),
                to: e.to.map(url),
                first_failure_s: secs(e.first_failure),
                moved_s: e.moved.map(secs),
                first_success_s: e.first_success.map(secs),
                gap_s: e
                    .first_success
                    .map(|t| secs(t.saturating_sub(e.first_failure))),
                failed_between: e.failed_between,
                unresolved: e.unresolved,
                unresolved_until_s: e.unresolved_until.map(secs),
                waited_s: e.waited.map(secs),
            })
            .collect(),
        rediscovery_failures: run.rediscovery_failures.count,
        last_rediscovery_error: run.rediscovery_failures.last_error.clone(),
        last_answers: run.rediscovery_failures.last_answers.clone(),
    })
}

/// `--stages` / `--client-stages`: the stage rows, and the stage of each timeline point.
pub(super) fn staged(report: &mut RunReport, run: &ProtoRun, staged: &crate::config::Staged) {
    let st = staged.stages();
    let window = run.elapsed.as_secs_f64();
    let ends = st.ends();
    // the last stage with a duration takes what completed after the schedule's end
    let last = st
        .stages
        .iter()
        .rposition(|s| !s.duration.is_zero())
        .unwrap_or(0);
    let empty = crate::stats::TimeSlot::precise();
    let mut rows = Vec::new();
    for (i, s) in st.stages.iter().enumerate() {
        if s.duration.is_zero() {
            continue;
        }
        let start = ends[i] - s.duration.as_secs_f64();
        let end = if i == last {
            ends[i].max(window)
        } else {
            ends[i]
        };
        let slot = run.stats.stages.get(i).unwrap_or(&empty);
        let count = slot.ok + slot.failed;
        // a stage the run did not reach has no CPU reading: no figure, not 0
        let cpu_per_request = run
            .stage_cpu
            .get(i)
            .and_then(|c| per(c.user_us + c.sys_us, count));
        rows.push(StageRow {
            stage: i + 1,
            spec: st.label(i),
            from: st.from_level(i),
            to: s.target,
            start_s: start,
            end_s: end,
            count,
            ok: slot.ok,
            errors: slot.failed,
            scheduled: run.rate.map(|_| slot.sent),
            requests_per_sec: per_sec(count, end - start),
            p50_ms: slot.quantile_ms(0.5),
            p99_ms: slot.quantile_ms(0.99),
            client_cpu_us_per_request: cpu_per_request,
        });
    }
    for p in &mut report.timeline {
        p.stage = Some(st.index_at(p.t_s as f64) + 1);
    }
    report.stages = Some(rows);
}

/// Every latency histogram of a run, encoded (`hdr`).
fn histograms(run: &ProtoRun) -> hdr::Histograms {
    let st = &run.stats;
    hdr::Histograms {
        latency: hdr::of(&st.latency),
        uncorrected_latency: run
            .rate
            .map(|_| hdr::of(&st.uncorrected.clone().unwrap_or_default())),
        connect: connect_latencies(&st.conns, &st.folded_connect).map(|l| hdr::of(&l)),
        first_message: st.first_message.as_ref().map(hdr::of),
        message_latency: st.message_latency.as_ref().map(hdr::of),
        last_to_response: st.last_to_response.as_ref().map(hdr::of),
        without_setup: run
            .requests_per_conn
            .map(|_| hdr::of(&st.without_setup.clone().unwrap_or_default())),
        per_endpoint: (0..st.per_endpoint.len())
            .map(|i| hdr::of(st.endpoint_latency(i).unwrap_or(&Latencies::default())))
            .collect(),
    }
}

/// The connect times of every connection: the records of single connections and the
/// histogram of the folded ones (`folded`); None without a connection.
fn connect_latencies(conns: &[ConnRecord], folded: &Latencies) -> Option<Latencies> {
    if conns.is_empty() {
        return None;
    }
    let mut lat = folded.clone();
    for c in conns.iter().filter(|c| c.folded == 0) {
        lat.record(std::time::Duration::from_micros(c.connect_us));
    }
    Some(lat)
}

/// The distribution of the connect times (`connect_latencies`).
pub(super) fn connect_times(conns: &[ConnRecord], folded: &Latencies) -> Option<ConnectTimes> {
    let lat = connect_latencies(conns, folded)?;
    Some(ConnectTimes {
        connections: lat.count,
        average_ms: ms(lat.mean_ns()?),
        fastest_ms: ms(lat.fastest_ns()? as f64),
        slowest_ms: ms(lat.slowest_ns()? as f64),
        histogram: buckets(&lat),
        distribution: distribution(&lat),
    })
}

pub(super) fn memory(run: &ProtoRun, includes_server: bool) -> Option<MemoryReport> {
    let m = run.memory?;
    let grown = m.rss_steady_kib.saturating_sub(m.rss_baseline_kib) * 1024;
    Some(MemoryReport {
        rss_baseline_kib: m.rss_baseline_kib,
        rss_connected_kib: m.rss_connected_kib,
        rss_steady_kib: m.rss_steady_kib,
        peak_rss_kib: m.peak_rss_kib,
        rss_per_connection_bytes: per(grown, run.conns as u64),
        rss_per_in_flight_bytes: per(grown, run.clients as u64),
        includes_server,
    })
}

/// Per request, or None when the count itself is unknown (or there is no request).
pub(super) fn per_opt(n: Option<u64>, d: u64) -> Option<f64> {
    per(n?, d)
}

/// The counts a run's cost is made of: every per-request figure of `Cost` is one of them over
/// `requests`, for a run as for a merge of runs (whose counts are the runs' sums).
pub(super) struct CostCounts {
    pub requests: u64,
    pub user_us: u64,
    pub sys_us: u64,
    pub syscalls: Option<u64>,
    pub context_switches: Option<u64>,
    pub instructions: Option<u64>,
    pub cycles: Option<u64>,
    pub kernel_unavailable: Option<String>,
    pub syscalls_outside: Option<u64>,
    pub context_switches_outside: Option<u64>,
    pub io: IoCalls,
    pub server_cpu_ns: Option<u64>,
    pub server_cpu_error: Option<String>,
    pub client_loop: Option<String>,
}

impl CostCounts {
    pub(super) fn cost(self) -> Cost {
        let (requests, io) = (self.requests, self.io);
        Cost {
            requests,
            client_cpu_user_us: self.user_us,
            client_cpu_sys_us: self.sys_us,
            client_cpu_us_per_request: per(self.user_us + self.sys_us, requests),
            syscalls: self.syscalls,
            syscalls_per_request: per_opt(self.syscalls, requests),
            context_switches: self.context_switches,
            context_switches_per_request: per_opt(self.context_switches, requests),
            instructions: self.instructions,
            instructions_per_request: per_opt(self.instructions, requests),
            cycles: self.cycles,
            cycles_per_request: per_opt(self.cycles, requests),
            kernel_counters_unavailable: self.kernel_unavailable,
            syscalls_outside_window: self.syscalls_outside,
            context_switches_outside_window: self.context_switches_outside,
            data_calls: io,
            reads_per_request: per(io.reads, requests),
            writes_per_request: per(io.writes, requests),
            read_would_block_per_request: per(io.read_would_block, requests),
            write_would_block_per_request: per(io.write_would_block, requests),
            other_syscalls_per_request: per_opt(
                self.syscalls.map(|s| s.saturating_sub(io.syscalls())),
                requests,
            ),
            server_cpu_ns: self.server_cpu_ns,
            server_cpu_us_per_request: per_opt(self.server_cpu_ns, requests).map(|ns| ns / 1000.0),
            server_cpu_error: self.server_cpu_error,
            client_loop: self.client_loop,
        }
    }
}

pub(super) fn cost(run: &ProtoRun) -> Cost {
    let c = &run.cost;
    let (server_cpu_ns, server_cpu_error) = match &run.server_cpu {
        Some(Ok(d)) => (Some(d.as_nanos() as u64), None),
        Some(Err(e)) => (None, Some(e.to_string())),
        None => (None, None),
    };
    CostCounts {
        requests: run.stats.written,
        user_us: c.cpu.user_us,
        sys_us: c.cpu.sys_us,
        syscalls: c.kernel.syscalls,
        context_switches: c.kernel.context_switches,
        instructions: c.kernel.instructions,
        cycles: c.kernel.cycles,
        kernel_unavailable: c.kernel_unavailable.clone(),
        syscalls_outside: c.outside.syscalls,
        context_switches_outside: c.outside.context_switches,
        io: c.io,
        server_cpu_ns,
        server_cpu_error,
        client_loop: Some(run.client_loop.to_string()),
    }
    .cost()
}

impl RunReport {
    /// `endpoints`: the run's endpoints; `roles`: their etcd roles when discovered.
    /// `includes_server`: the built-in server runs in this process (its memory is in ours).
    pub fn from_run(
        run: &ProtoRun,
        endpoints: &[crate::config::Endpoint],
        roles: &[String],
        includes_server: bool,
    ) -> RunReport {
        let ipv6: Vec<bool> = endpoints.iter().map(|e| e.addr.is_ipv6()).collect();
        let unix: Vec<bool> = endpoints.iter().map(|e| e.unix.is_some()).collect();
        let mut urls: Vec<String> = endpoints.iter().map(|e| e.url.clone()).collect();
        // a slot that started on another member (its own was gone since the run before) is
        // named by the member it went to, and has no role
        let mut roles = roles.to_vec();
        for (slot, &m) in run.start_members.iter().enumerate() {
            if m != slot
                && let (Some(u), Some(url)) = (urls.get_mut(slot), run.members.get(m))
            {
                *u = format!("{url} (for {u}, gone)");
                if let Some(r) = roles.get_mut(slot) {
                    *r = "moved".to_string();
                }
            }
        }
        let st = &run.stats;
        let lat = &st.latency;
        let secs = run.elapsed.as_secs_f64();
        let count = st.count();
        let summary = Summary {
            count,
            ok: st.ok,
            failed: st.failed,
            warmup_requests: st.warmup,
            written: st.written,
            retried: st.retried,
            reauthenticated: st.reauthenticated,
            outcome_unknown: st.written.saturating_sub(st.ok),
            total_s: secs,
            slowest_ms: ms_of(lat.slowest_ns()),
            fastest_ms: ms_of(lat.fastest_ns()),
            average_ms: lat.mean_ns().map(ms),
            stddev_ms: lat.stddev_ns().map(ms),
            requests_per_sec: per_sec(headline_count(run.rate.is_some(), count, st.written), secs),
            ok_per_sec: per_sec(st.ok, secs),
        };
        let latency_distribution = distribution(lat);
        let mut status_distribution: Vec<StatusCount> = st
            .statuses
            .iter()
            .map(|(k, &count)| StatusCount {
                status: k.to_string(),
                count,
            })
            .collect();
        status_distribution.sort_by_key(|s| std::cmp::Reverse(s.count));
        let error_distribution = error_counts(&st.errors);

        RunReport {
            proto: run.proto.name(),
            title: run.proto.title(),
            clients: run.clients,
            connections: run.conns,
            pipeline: (run.proto == crate::stack::Proto::Http).then_some(run.pipeline),
            threads: run.threads,
            interrupted: run.interrupted,
            window: Window {
                start_unix_us: crate::config::clock::unix_us(run.started_at),
                end_unix_us: crate::config::clock::unix_us(run.started_at + run.elapsed),
                start_at: None,
                start_late_ms: None,
            },
            summary,
            histogram: buckets(lat),
            latency_distribution,
            histograms: histograms(run),
            status_distribution,
            error_distribution,
            cost: cost(run),
            wire: wire(run, &ipv6, &unix),
            open_loop: open_loop(run),
            stages: None,
            connection_setup: connection_setup(run),
            streaming: streaming(run),
            per_endpoint: per_endpoint(run, &urls, &roles),
            agents: None,
            failover: failover(run),
            verify: None,
            classes: classes(run),
            compaction: run.compaction.as_ref().map(CompactionReport::of),
            link: run
                .link
                .as_ref()
                .map(|l| super::link::LinkSection::of(l, &st.conns)),
            leases: run.leases.as_ref().map(|l| LeaseReport {
                granted: l.granted,
                ttl_s: l.ttl_s,
                revoked: l.revoked,
                gone: l.gone,
                revoke_failed: l.revoke_failed,
                revoke_error: l.revoke_error.clone(),
            }),
            timeline: timeline(run),
            connect_times: connect_times(&st.conns, &st.folded_connect),
            memory: memory(run, includes_server),
            per_connection: st.conns.iter().filter(|c| c.folded == 0).cloned().collect(),
            sample_response: run.sample.clone(),
            capacity: None,
            request_log: st.log.on.then_some(RequestLogReport {
                rows: st.log.rows,
                writer_wait_ms: st.log.waited.as_secs_f64() * 1e3,
                writer_waits: st.log.waits,
                longest_thread_wait_ms: st.log.longest.as_secs_f64() * 1e3,
            }),
            spectrum: spectrum(lat),
            uncorrected_spectrum: st.uncorrected.as_ref().map(spectrum).unwrap_or_default(),
        }
    }

    /// Percentile `p` of the latency (None without a successful request).
    pub fn percentile_ms(&self, p: f64) -> Option<f64> {
        percentile_in(&self.latency_distribution, p)
    }
}

/// Percentile `p` of a distribution (None when it is empty, or has no such percentile).
pub fn percentile_in(dist: &[Percentile], p: f64) -> Option<f64> {
    dist.iter()
        .find(|x| x.percentile == p)
        .map(|x| x.latency_ms)
}

/// ghz's response-time histogram: 10 equal-width buckets from fastest to slowest, each counting
/// the latencies at or below its mark (HDR-bucket resolution: 0.1%, rounded down).
pub(super) fn buckets(lat: &Latencies) -> Vec<Bucket> {
    buckets_of(&lat.hist, lat.min_ns, lat.max_ns)
}

/// `buckets` of a histogram in ns whose exact extremes are `min_ns` and `max_ns`.
pub(super) fn buckets_of(
    hist: &hdrhistogram::Histogram<u64>,
    min_ns: u64,
    max_ns: u64,
) -> Vec<Bucket> {
    if hist.is_empty() {
        return Vec::new();
    }
    let (lo, hi) = (min_ns as f64, max_ns as f64);
    const BUCKETS: usize = 10;
    let width = (hi - lo) / BUCKETS as f64;
    let marks: Vec<f64> = (0..=BUCKETS).map(|i| lo + width * i as f64).collect();
    let mut counts = vec![0u64; marks.len()];
    for v in hist.iter_recorded() {
        // The lowest value of the HDR bucket, clamped into [fastest, slowest]: the fastest
        // latency then lands under the first mark (ghz's layout), whatever its bucket's width.
        let value = (hist.lowest_equivalent(v.value_iterated_to()) as f64).clamp(lo, hi);
        let i = marks.iter().position(|&m| value <= m).unwrap_or(BUCKETS);
        counts[i] += v.count_at_value();
    }
    marks
        .into_iter()
        .zip(counts)
        .map(|(m, count)| Bucket {
            mark_ms: ms(m),
            count,
        })
        .collect()
}

/// `ipv6`, `unix`: per endpoint, whether it is an IPv6 address, a Unix socket.
pub(super) fn wire(run: &ProtoRun, ipv6: &[bool], unix: &[bool]) -> Wire {
    let conns = &run.stats.conns;
    let sum = |f: fn(&ConnRecord) -> u64| conns.iter().map(f).sum::<u64>();
    // The segment figures cover the connections with TCP_INFO, and only their requests.
    let with_tcp = || conns.iter().filter_map(|c| c.tcp.as_ref().map(|t| (c, t)));
    let tcp_sum = |f: fn(&crate::stats::TcpInfo) -> u64| with_tcp().map(|(_, t)| f(t)).sum::<u64>();
    let requests = sum(|c| c.requests);
    let tcp_requests: u64 = with_tcp().map(|(c, _)| c.requests).sum();
    let headers = |out: bool| -> u64 {
        with_tcp()
            .map(|(c, t)| {
                let v6 = ipv6.get(c.endpoint).copied().unwrap_or(false);
                ip_tcp_header_bytes(if out { t.segs_out } else { t.segs_in }, v6, t.timestamps)
            })
            .sum()
    };
    let (hdr_out, hdr_in) = (headers(true), headers(false));
    let tcp_bytes_out: u64 = with_tcp().map(|(c, _)| c.bytes_out).sum();
    let tcp_bytes_in: u64 = with_tcp().map(|(c, _)| c.bytes_in).sum();
    let opened: u64 = conns.iter().map(ConnRecord::weight).sum();
    let on_unix = |c: &ConnRecord| unix.get(c.endpoint).copied().unwrap_or(false);
    let h3 = H3Sums::of(conns, ipv6);
    let on_wire = OnWire {
        tcp_requests,
        tcp_out: tcp_bytes_out + hdr_out,
        tcp_in: tcp_bytes_in + hdr_in,
        h3: h3.as_ref(),
    };
    Wire {
        connections_opened: opened,
        reconnects: run.stats.reconnects,
        connect_failures: run.stats.connect_failures,
        connect_error: run.stats.connect_error.as_ref().map(ToString::to_string),
        requests_on_wire: requests,
        requests_per_connection: per(requests, opened),
        bytes_out: sum(|c| c.bytes_out),
        bytes_in: sum(|c| c.bytes_in),
        bytes_out_per_request: per(sum(|c| c.bytes_out), requests),
        bytes_in_per_request: per(sum(|c| c.bytes_in), requests),
        write_calls: sum(|c| c.write_calls),
        read_calls: sum(|c| c.read_calls),
        write_calls_per_request: per(sum(|c| c.write_calls), requests),
        read_calls_per_request: per(sum(|c| c.read_calls), requests),
        write_would_block: sum(|c| c.write_would_block),
        read_would_block: sum(|c| c.read_would_block),
        requests_with_tcp_info: tcp_requests,
        bytes_out_with_tcp_info: tcp_bytes_out,
        bytes_in_with_tcp_info: tcp_bytes_in,
        segments_out: tcp_sum(|t| t.segs_out),
        segments_in: tcp_sum(|t| t.segs_in),
        data_segments_out: tcp_sum(|t| t.data_segs_out),
        data_segments_in: tcp_sum(|t| t.data_segs_in),
        segments_out_per_request: per(tcp_sum(|t| t.segs_out), tcp_requests),
        segments_in_per_request: per(tcp_sum(|t| t.segs_in), tcp_requests),
        data_segments_out_per_request: per(tcp_sum(|t| t.data_segs_out), tcp_requests),
        data_segments_in_per_request: per(tcp_sum(|t| t.data_segs_in), tcp_requests),
        retransmits: tcp_sum(|t| t.retransmits),
        connections_without_tcp_info: conns
            .iter()
            .filter(|c| c.tcp.is_none() && c.h3.is_none() && !on_unix(c))
            .map(ConnRecord::weight)
            .sum(),
        unix_socket_connections: conns
            .iter()
            .filter(|c| on_unix(c))
            .map(ConnRecord::weight)
            .sum(),
        ip_tcp_header_bytes_out: hdr_out,
        ip_tcp_header_bytes_in: hdr_in,
        wire_bytes_out_per_request: on_wire.per_request(true),
        wire_bytes_in_per_request: on_wire.per_request(false),
        close: CloseTotals::of(conns),
        layers: layer_totals(conns, requests),
        tls: conns.iter().filter_map(|c| c.tls.as_ref()).fold(
            None,
            |acc: Option<TlsCounts>, &t| {
                let mut a = acc.unwrap_or_default();
                a += t;
                Some(a)
            },
        ),
        h3: h3.map(H3Sums::figures),
    }
}
