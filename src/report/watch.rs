//! The watch benchmark's report: figures derived from what the watchers measured
//! (`etcd::watch`) and from the engine's run of the put load, as JSON and as text.

use std::collections::HashMap;
use std::fmt::Write;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::derive::{per, per_sec};
use super::show::num;
use crate::config::{WatchConfig, WatchKind};
use crate::outcome::{Failure, FailureKind, GAVE_UP};
use crate::report::{ErrorCount, error_counts};
use crate::stack::Proto;
use crate::stats::{ConnRecord, Latencies, Loss, ProtoRun, WatchOutcome};

/// The put load's counts do not add up to `--put-total`: a bug, said in one line.
#[derive(Debug, thiserror::Error)]
#[error(
    "put accounting: {ok} ok + {failed} failed + {not_sent} not sent != {total} puts (a bug: \
     please report it)"
)]
pub struct AccountingError {
    pub ok: u64,
    pub failed: u64,
    pub not_sent: u64,
    pub total: u64,
}

/// The put load's accounting, from the engine's run of `workload::etcd::WatchPuts`. Every one of
/// the `--put-total` puts is counted in exactly one of `ok`, `failed` and `not_sent`.
#[derive(Debug)]
pub struct PutOutcome {
    /// revisions etcd assigned to the acknowledged puts, per key index
    pub revisions: Vec<Vec<i64>>,
    /// answered with a revision
    pub ok: u64,
    /// sent (or due with no connection to go on) but not answered with a revision: by kind in
    /// `errors` (a put that timed out or lost its connection may still have been applied)
    pub failed: u64,
    /// never sent: no client was free within --put-timeout of its intended time (open loop,
    /// `late`), its client gave up on an unreachable server (`connect`), or Ctrl-C
    /// (`interrupted`); why in `not_sent_reasons`
    pub not_sent: u64,
    /// connections opened during the run to replace broken ones
    pub reconnects: u64,
    /// acknowledged puts; open loop: from the intended send time (coordinated omission
    /// corrected)
    pub latency: Latencies,
    /// open loop: from the actual send time
    pub uncorrected: Option<Latencies>,
    /// open loop: sends whose intended time came while every client was busy
    pub late: Option<u64>,
    pub errors: HashMap<Failure, u64>,
    pub not_sent_reasons: HashMap<Failure, u64>,
    /// the put run's start line (every put connection open, the first put may go)
    pub start: Instant,
    /// from the start line until the last put was done
    pub elapsed: Duration,
    /// the put clients moved off a member that was gone (None: nowhere to move)
    pub failover: Option<super::FailoverReport>,
    /// (revision, when its acknowledgement arrived) of every acknowledged put, in ns of the
    /// stamps' clock
    pub acked_at: Vec<(i64, u64)>,
    /// Ctrl-C stopped the put load
    pub interrupted: bool,
}

impl PutOutcome {
    /// The accounting of `run`, the engine's run of `cfg`'s put load: the puts that never went
    /// out (expired sends, a client's given-up quota, Ctrl-C) are not sent, the other failures
    /// failed. An error means the counts do not add up to `--put-total` (a bug).
    pub fn from_run(cfg: &WatchConfig, run: ProtoRun) -> Result<PutOutcome, AccountingError> {
        let timeout = cfg.put_timeout;
        let failover = super::derive::failover(&run);
        let stats = run.stats;
        let (mut errors, mut not_sent_reasons) = (HashMap::new(), HashMap::new());
        let mut not_sent = 0;
        for (f, n) in stats.errors {
            let unsent = match f.kind {
                FailureKind::Late => Some(Failure::with(
                    FailureKind::Late,
                    format_args!(
                        "not sent within --put-timeout ({timeout:?}) of its intended time: every client was busy"
                    ),
                )),
                FailureKind::Connect if f.detail.as_deref() == Some(GAVE_UP) => {
                    Some(Failure::with(
                        FailureKind::Connect,
                        format_args!(
                            "gave up: server unreachable for longer than --put-timeout ({timeout:?})"
                        ),
                    ))
                }
                _ => None,
            };
            match unsent {
                Some(why) => {
                    not_sent += n;
                    *not_sent_reasons.entry(why).or_insert(0) += n;
                }
                None => *errors.entry(f).or_insert(0) += n,
            }
        }
        let failed = stats.failed.saturating_sub(not_sent);
        let counted = stats.ok + failed + not_sent;
        // Ctrl-C: the clients stop, and what they did not send is in no count.
        if run.interrupted && counted < cfg.put_total {
            let n = cfg.put_total - counted;
            not_sent += n;
            *not_sent_reasons
                .entry(Failure::with(FailureKind::Interrupted, "Ctrl-C"))
                .or_insert(0) += n;
        }
        if stats.ok + failed + not_sent != cfg.put_total {
            return Err(AccountingError {
                ok: stats.ok,
                failed,
                not_sent,
                total: cfg.put_total,
            });
        }
        let mut revisions = stats.revisions;
        revisions.resize_with(cfg.watched_keys.max(revisions.len()), Vec::new);
        Ok(PutOutcome {
            revisions,
            ok: stats.ok,
            failed,
            not_sent,
            reconnects: stats.reconnects,
            latency: stats.latency,
            uncorrected: stats.uncorrected,
            late: run.rate.map(|_| stats.late),
            errors,
            not_sent_reasons,
            start: run.window_start,
            elapsed: run.elapsed,
            failover,
            acked_at: stats.acked_at,
            interrupted: run.interrupted,
        })
    }
}

/// The measured outcome of one watch run.
#[derive(Debug, Serialize)]
pub struct WatchReport {
    /// `watch`, `watch-latency` or `watch-get`
    pub kind: &'static str,
    pub proto: &'static str,
    pub title: &'static str,
    /// Ctrl-C stopped the put load: the puts it did not send are `not_sent` (interrupted),
    /// and the watchers were drained for the revisions of those it acknowledged
    pub interrupted: bool,
    pub watchers: usize,
    pub streams: usize,
    pub connections: usize,
    pub created: usize,
    pub creation_ms: LatencySummary,
    pub events: u64,
    pub expected_events: u64,
    pub missing: u64,
    pub duplicated: u64,
    pub unexpected: u64,
    /// the put run's start line (the first put due) -> last event received
    pub total_s: f64,
    /// events / total_s (null for a span of no length: no event)
    pub events_per_sec: Option<f64>,
    pub events_per_sec_per_watcher: Option<f64>,
    /// put sent -> event received
    pub event_latency_ms: LatencySummary,
    /// watch-latency: put acknowledged -> event received (etcd benchmark's clock); an event
    /// that came before its put's acknowledgement counts as 0
    pub event_latency_from_ack_ms: Option<LatencySummary>,
    /// watch-latency: events received before their put's acknowledgement
    pub events_before_ack: Option<u64>,
    /// watch-get: the first create request sent -> the last event received
    pub catch_up_s: Option<f64>,
    /// watch-get: the range load while the watchers caught up
    pub gets: Option<GetsReport>,
    pub puts: PutReport,
    pub wire: WatchWire,
    pub errors: Vec<ErrorCount>,
    /// watchers confirmed again on a live member after their stream broke
    pub recreated_watchers: u64,
    /// every stream that broke and was re-created on another member
    pub stream_moves: Vec<StreamMoveReport>,
    pub per_connection: Vec<ConnRecord>,
    /// `--compact-interval`: what the compactor did beside the put load
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction: Option<crate::report::CompactionReport>,
    /// `--link`: what the emulated path applied under this stack's run
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<super::link::LinkSection>,
}

/// watch-get's range load: serializable reads of one key from when the watchers are created
/// until the last of them has every event.
#[derive(Debug, Serialize)]
pub struct GetsReport {
    pub proto: &'static str,
    pub clients: usize,
    pub key: String,
    pub count: u64,
    pub ok: u64,
    pub failed: u64,
    /// the range run's measured window
    pub total_s: f64,
    /// (ok + failed) / total_s
    pub requests_per_sec: Option<f64>,
    pub latency_ms: LatencySummary,
    pub errors: Vec<ErrorCount>,
}

impl GetsReport {
    /// The report of `run`, the range load of `key` by `clients` clients.
    pub fn of(run: &ProtoRun, clients: usize, key: &str) -> GetsReport {
        let s = &run.stats;
        let total = run.elapsed.as_secs_f64();
        GetsReport {
            proto: run.proto.name(),
            clients,
            key: key.to_string(),
            count: s.count(),
            ok: s.ok,
            failed: s.failed,
            total_s: total,
            requests_per_sec: per_sec(s.count(), total),
            latency_ms: LatencySummary::of(&s.latency),
            errors: error_counts(&s.errors),
        }
    }
}

/// Each event's latency from its put's acknowledgement (`acked_at`: revision, ns), and how
/// many events came before it; events of puts that were not acknowledged are left out.
fn from_ack(receipts: &[(i64, u64)], acked_at: &[(i64, u64)]) -> (Latencies, u64) {
    let acks: HashMap<i64, u64> = acked_at.iter().copied().collect();
    let mut l = Latencies::default();
    let mut before = 0;
    for &(revision, at) in receipts {
        let Some(&acked) = acks.get(&revision) else {
            continue;
        };
        if at < acked {
            before += 1;
        }
        l.record(Duration::from_nanos(at.saturating_sub(acked)));
    }
    (l, before)
}

/// A watch stream that broke (its member gone) and was re-created on a live member.
#[derive(Debug, Serialize)]
pub struct StreamMoveReport {
    pub stream: usize,
    pub from: String,
    pub to: String,
    pub watchers: usize,
    /// when it broke, from the put run's start line
    pub broke_s: f64,
    /// from the break to every one of its watchers confirmed again (null: never)
    pub recreated_after_ms: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct PutReport {
    pub proto: &'static str,
    pub clients: usize,
    /// --put-total: always ok + failed + not_sent
    pub total: u64,
    pub ok: u64,
    pub failed: u64,
    pub not_sent: u64,
    /// connections opened during the run to replace broken ones
    pub reconnects: u64,
    pub timeout_ms: f64,
    pub target_rate: Option<f64>,
    /// acknowledged puts per second over the put run (start line to the last put done)
    pub achieved_rate: Option<f64>,
    /// open loop: from each put's intended send time (coordinated omission corrected);
    /// closed loop: from its send time
    pub latency_ms: LatencySummary,
    /// open loop only: from the actual send time
    pub uncorrected_latency_ms: Option<LatencySummary>,
    /// open loop only: puts whose intended time came while every client was busy
    pub late_sends: Option<u64>,
    pub errors: Vec<ErrorCount>,
    /// why puts were not sent (`{kind, message, count}`, counts summing to not_sent)
    pub not_sent_reasons: Vec<ErrorCount>,
    /// the put clients moved off a member that was gone (as a request run's `failover`);
    /// null with a single member
    pub failover: Option<super::FailoverReport>,
}

/// A latency distribution in ms; every figure null when `count` is 0.
#[derive(Debug, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub fastest: Option<f64>,
    pub average: Option<f64>,
    pub slowest: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    /// the histogram these were computed from: HdrHistogram V2 compressed, base64, in ns
    pub hdr: String,
}

impl LatencySummary {
    pub fn of(l: &Latencies) -> LatencySummary {
        use super::derive::{ms, ms_of};
        LatencySummary {
            count: l.count,
            fastest: ms_of(l.fastest_ns()),
            average: l.mean_ns().map(ms),
            slowest: ms_of(l.slowest_ns()),
            p50: ms_of(l.quantile_ns(0.5)),
            p90: ms_of(l.quantile_ns(0.9)),
            p99: ms_of(l.quantile_ns(0.99)),
            p999: ms_of(l.quantile_ns(0.999)),
            hdr: super::hdr::of(l),
        }
    }
}

/// Socket cost of the watch connections, per event received: every figure null when no event
/// was received.
#[derive(Debug, Serialize)]
pub struct WatchWire {
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub bytes_in_per_event: Option<f64>,
    /// TCP_INFO's segments: null unless every watch connection's TCP_INFO was read (a
    /// connection's events are not told apart, so a partial sum has no denominator)
    pub segments_in_per_event: Option<f64>,
    pub data_segments_in_per_event: Option<f64>,
    pub read_calls_per_event: Option<f64>,
    /// WatchResponse messages (gRPC) or JSON lines (HTTP/1.1) per event
    pub responses_per_event: Option<f64>,
    /// gRPC: h2 DATA frames received per event
    pub data_frames_in_per_event: Option<f64>,
    /// HTTP/1.1: chunk framing bytes received per event
    pub chunk_framing_bytes_per_event: Option<f64>,
    /// HTTP/1.1: chunks received per event
    pub chunks_per_event: Option<f64>,
}

impl WatchReport {
    /// The report of one watch run over `proto`: what the watchers (`w`) and the put load
    /// (`puts`) measured; `expected_events` and `loss` from the zero-loss proof.
    pub fn new(
        cfg: &WatchConfig,
        proto: Proto,
        w: WatchOutcome,
        puts: &PutOutcome,
        expected_events: u64,
        loss: Loss,
    ) -> WatchReport {
        // watch-get: from the first create request (the puts were done before); else from
        // the put run's start line
        let start = match cfg.kind {
            WatchKind::Get { .. } => w.first_create.unwrap_or(puts.start),
            _ => puts.start,
        };
        let end = w.last_event.unwrap_or(start).max(start);
        let total = end.duration_since(start).as_secs_f64();
        let (from_ack, before_ack) = match cfg.kind {
            WatchKind::Latency => {
                let (l, n) = from_ack(&w.receipts, &puts.acked_at);
                (Some(LatencySummary::of(&l)), Some(n))
            }
            _ => (None, None),
        };
        let put_span = puts.elapsed.as_secs_f64();
        let conns = &w.conns;
        let sum = |f: fn(&ConnRecord) -> u64| conns.iter().map(f).sum::<u64>();
        // over the connections, only when every one's TCP_INFO was read
        let tcp = |f: fn(&crate::stats::TcpInfo) -> u64| {
            conns
                .iter()
                .map(|c| c.tcp.as_ref().map(f))
                .sum::<Option<u64>>()
        };
        let frames_in: u64 = conns
            .iter()
            .filter_map(|c| c.h2.as_ref())
            .map(|h| {
                h.inbound
                    .frame(wirebench_wire::h2::frame::FrameType::Data)
                    .count
            })
            .sum();
        let framing: u64 = conns
            .iter()
            .filter_map(|c| c.http1.as_ref())
            .map(|h| h.chunk_framing_bytes)
            .sum();
        let events = w.events;
        WatchReport {
            kind: cfg.kind.name(),
            proto: proto.name(),
            title: proto.title(),
            interrupted: puts.interrupted,
            watchers: cfg.watchers,
            streams: cfg.streams,
            connections: conns.len(),
            created: w.created,
            creation_ms: LatencySummary::of(&w.creation),
            events,
            expected_events,
            missing: loss.missing,
            duplicated: loss.duplicated,
            unexpected: loss.unexpected,
            total_s: total,
            events_per_sec: per_sec(events, total),
            events_per_sec_per_watcher: per_sec(events, total)
                .and_then(|r| (cfg.watchers > 0).then(|| r / cfg.watchers as f64)),
            event_latency_ms: LatencySummary::of(&w.latency),
            event_latency_from_ack_ms: from_ack,
            events_before_ack: before_ack,
            catch_up_s: matches!(cfg.kind, WatchKind::Get { .. }).then_some(total),
            gets: None,
            puts: PutReport {
                proto: cfg.put_proto.name(),
                clients: cfg.put_clients,
                total: cfg.put_total,
                ok: puts.ok,
                failed: puts.failed,
                not_sent: puts.not_sent,
                reconnects: puts.reconnects,
                timeout_ms: cfg.put_timeout.as_secs_f64() * 1e3,
                target_rate: cfg.put_rate,
                achieved_rate: per_sec(puts.ok, put_span),
                latency_ms: LatencySummary::of(&puts.latency),
                uncorrected_latency_ms: puts.uncorrected.as_ref().map(LatencySummary::of),
                late_sends: puts.late,
                errors: error_counts(&puts.errors),
                not_sent_reasons: error_counts(&puts.not_sent_reasons),
                failover: puts.failover.clone(),
            },
            wire: WatchWire {
                bytes_in: sum(|c| c.bytes_in),
                bytes_out: sum(|c| c.bytes_out),
                bytes_in_per_event: per(sum(|c| c.bytes_in), events),
                segments_in_per_event: tcp(|t| t.segs_in).and_then(|n| per(n, events)),
                data_segments_in_per_event: tcp(|t| t.data_segs_in).and_then(|n| per(n, events)),
                read_calls_per_event: per(sum(|c| c.read_calls), events),
                responses_per_event: per(w.responses, events),
                data_frames_in_per_event: (proto == Proto::Grpc)
                    .then(|| per(frames_in, events))
                    .flatten(),
                chunk_framing_bytes_per_event: (proto == Proto::Http)
                    .then(|| per(framing, events))
                    .flatten(),
                chunks_per_event: (proto == Proto::Http)
                    .then(|| per(w.chunks, events))
                    .flatten(),
            },
            errors: error_counts(&w.errors),
            recreated_watchers: w.recreated,
            stream_moves: w
                .moves
                .iter()
                .map(|m| StreamMoveReport {
                    stream: m.stream,
                    from: m.from.clone(),
                    to: m.to.clone(),
                    watchers: m.watchers,
                    broke_s: m.broke.saturating_duration_since(start).as_secs_f64(),
                    recreated_after_ms: m
                        .recreated
                        .map(|t| t.saturating_duration_since(m.broke).as_secs_f64() * 1e3),
                })
                .collect(),
            per_connection: w.conns,
            compaction: None,
            link: None,
        }
    }
}

/// One line per error count: `  LEAD[count]\tkind: message`.
fn error_lines<'a>(out: &mut String, lead: &str, errors: impl IntoIterator<Item = &'a ErrorCount>) {
    for e in errors {
        let _ = writeln!(
            out,
            "  {lead}[{}]\t{}: {}",
            e.count,
            e.kind,
            e.message.as_deref().unwrap_or("")
        );
    }
}

/// One latency summary as a line of the text report.
fn latency_line(out: &mut String, l: &LatencySummary) {
    let _ = writeln!(
        out,
        "  fastest {} ms, average {} ms, p50 {} ms, p90 {} ms, p99 {} ms, p99.9 {} ms, slowest {} ms",
        num(l.fastest, 3),
        num(l.average, 3),
        num(l.p50, 3),
        num(l.p90, 3),
        num(l.p99, 3),
        num(l.p999, 3),
        num(l.slowest, 3)
    );
}

/// Text report of watch runs.
pub fn render_text(cfg: &WatchConfig, runs: &[WatchReport]) -> String {
    let mut out = String::new();
    for r in runs {
        render_run(&mut out, cfg, r);
    }
    out
}

/// One watch run: its head, events, stream moves, puts, wire, compaction and errors.
fn render_run(out: &mut String, cfg: &WatchConfig, r: &WatchReport) {
    render_head(out, cfg, r);
    render_events(out, r);
    render_stream_moves(out, r);
    render_puts(out, &r.puts);
    render_wire(out, r);
    if let Some(c) = &r.compaction {
        let _ = writeln!(out);
        super::text::render_compaction(out, c);
    }
    if let Some(l) = &r.link {
        let _ = writeln!(out);
        super::text::render_link(out, l);
    }
    let errors: Vec<_> = r.errors.iter().chain(r.puts.errors.iter()).collect();
    if !errors.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "Errors:");
        error_lines(out, "", errors);
    }
    let _ = writeln!(out);
}

/// What watched what, how the puts went out, and the watches' creation.
fn render_head(out: &mut String, cfg: &WatchConfig, r: &WatchReport) {
    let what = match cfg.kind {
        WatchKind::Events => "Watch",
        WatchKind::Latency => "Watch latency",
        WatchKind::Get { .. } => "Watch-get (unsynced watchers)",
    };
    let _ = writeln!(
        out,
        "{what} over {}{} — {} watchers on {} streams, {} connections; {} keys{}",
        r.title,
        if r.interrupted {
            " — INTERRUPTED"
        } else {
            ""
        },
        r.watchers,
        r.streams,
        r.connections,
        cfg.watched_keys,
        if cfg.prefix {
            ", every watcher on the whole prefix"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "  puts: {} over {} by {} clients, {}",
        cfg.put_total,
        r.puts.proto,
        r.puts.clients,
        cfg.put_rate
            .map_or("closed loop".to_string(), |x| format!("{x:.0}/s target"))
    );
    let _ = writeln!(out);
    let c = &r.creation_ms;
    let _ = writeln!(
        out,
        "Watch creation: {} of {} created; latency p50 {} ms, p99 {} ms, slowest {} ms",
        r.created,
        r.watchers,
        num(c.p50, 3),
        num(c.p99, 3),
        num(c.slowest, 3)
    );
    let _ = writeln!(out);
}

/// The events received against those expected, and their latencies (and the catch-up's gets).
fn render_events(out: &mut String, r: &WatchReport) {
    let _ = writeln!(out, "Events:");
    let _ = writeln!(
        out,
        "  Received:     {} of {} expected",
        r.events, r.expected_events
    );
    let _ = writeln!(
        out,
        "  Missing:      {}   Duplicated: {}   Unexpected: {}",
        r.missing, r.duplicated, r.unexpected
    );
    let _ = writeln!(
        out,
        "  Total:        {:.2} s ({})",
        r.total_s,
        if r.catch_up_s.is_some() {
            "first create request to last event received; the puts were written before"
        } else {
            "first put due to last event received"
        }
    );
    let _ = writeln!(
        out,
        "  Events/sec:   {} ({} per watcher)",
        num(r.events_per_sec, 1),
        num(r.events_per_sec_per_watcher, 1)
    );
    let l = &r.event_latency_ms;
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Event latency (put sent -> event received{}):",
        if r.catch_up_s.is_some() {
            ": replayed from history, so the event's age"
        } else {
            ""
        }
    );
    latency_line(out, l);
    if let (Some(l), Some(before)) = (&r.event_latency_from_ack_ms, r.events_before_ack) {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Event latency (put acknowledged -> event received, etcd benchmark's clock; {before} events came before their put's acknowledgement and count as 0):"
        );
        latency_line(out, l);
    }
    if let Some(g) = &r.gets {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Gets during the catch-up: {} serializable ranges of {:?} over {} by {} clients; {} ok, {} failed; {}/s over {:.3} s",
            g.count,
            g.key,
            g.proto,
            g.clients,
            g.ok,
            g.failed,
            num(g.requests_per_sec, 1),
            g.total_s
        );
        latency_line(out, &g.latency_ms);
        error_lines(out, "", &g.errors);
    }
}

/// The streams that broke and moved to another member.
fn render_stream_moves(out: &mut String, r: &WatchReport) {
    if !r.stream_moves.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "Streams moved: {} ({} watchers re-created from their next revision)",
            r.stream_moves.len(),
            r.recreated_watchers
        );
        for m in &r.stream_moves {
            let _ = writeln!(
                out,
                "  stream {}: {} -> {} at {:.3} s, {} watchers {}",
                m.stream,
                m.from,
                m.to,
                m.broke_s,
                m.watchers,
                m.recreated_after_ms
                    .map_or("never re-created".to_string(), |ms| {
                        format!("re-created after {ms:.1} ms")
                    })
            );
        }
    }
}

/// The put load: what was acknowledged, failed or never sent, and its latency.
fn render_puts(out: &mut String, p: &PutReport) {
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Puts: {} ok, {} failed, {} not sent (of {}); {}/s achieved; latency p50 {} ms, p99 {} ms",
        p.ok,
        p.failed,
        p.not_sent,
        p.total,
        num(p.achieved_rate, 1),
        num(p.latency_ms.p50, 3),
        num(p.latency_ms.p99, 3)
    );
    if let (Some(u), Some(late)) = (&p.uncorrected_latency_ms, p.late_sends) {
        let _ = writeln!(
            out,
            "  from the intended send time; from the actual one p50 {} ms, p99 {} ms; {late} sends late",
            num(u.p50, 3),
            num(u.p99, 3)
        );
    }
    let _ = writeln!(
        out,
        "  per-put timeout {:.0} ms, {} reconnects",
        p.timeout_ms, p.reconnects
    );
    for e in p.failover.iter().flat_map(|f| &f.events) {
        let _ = writeln!(out, "  puts {}", e.line());
    }
    error_lines(out, "not sent ", &p.not_sent_reasons);
}

/// The watch connections' cost per event received.
fn render_wire(out: &mut String, r: &WatchReport) {
    let w = &r.wire;
    let _ = writeln!(out);
    let _ = writeln!(out, "Wire (watch connections, per event received):");
    let _ = writeln!(
        out,
        "  Bytes in / event:        {} ({} in all; {} out)",
        num(w.bytes_in_per_event, 1),
        w.bytes_in,
        w.bytes_out
    );
    let _ = writeln!(
        out,
        "  TCP segments in / event: {} ({} with data)",
        num(w.segments_in_per_event, 3),
        num(w.data_segments_in_per_event, 3)
    );
    let _ = writeln!(
        out,
        "  Read syscalls / event:   {}",
        num(w.read_calls_per_event, 3)
    );
    let _ = writeln!(
        out,
        "  Responses / event:       {}",
        num(w.responses_per_event, 3)
    );
    if r.proto == Proto::Grpc.name() {
        let _ = writeln!(
            out,
            "  h2 DATA frames / event:  {}",
            num(w.data_frames_in_per_event, 3)
        );
    }
    if r.proto == Proto::Http.name() {
        let _ = writeln!(
            out,
            "  Chunks / event:          {} ({} B of chunk framing)",
            num(w.chunks_per_event, 3),
            num(w.chunk_framing_bytes_per_event, 1)
        );
    }
}
