//! `wirebench merge`: agents' reports written as JSON, read back and merged; every merged
//! figure against the one computed from the agents' raw measurements.

use std::time::{Duration, UNIX_EPOCH};

use super::runs::etcd_put_config;
use super::*;
use crate::report::merge::{MergeError, Source, merge};

/// One agent's gRPC run: `lat_ms` successful latencies and `failed` failures, its window
/// starting `start_ms` after a common origin and lasting `secs`; `k` scales its costs, so
/// that every agent differs.
fn agent_run(lat_ms: &[u64], failed: u64, start_ms: u64, secs: u64, k: u64) -> ProtoRun {
    let mut r = run(Proto::Grpc);
    ok_ms(&mut r.stats, lat_ms.iter().copied());
    r.stats
        .record_failures(at(0, 0), failed, Failure::new(FailureKind::Timeout));
    let count = lat_ms.len() as u64 + failed;
    r.stats.written = count;
    r.started_at =
        UNIX_EPOCH + Duration::from_secs(1_764_671_400) + Duration::from_millis(start_ms);
    r.elapsed = Duration::from_secs(secs);
    r.stats.conns = vec![conn(
        0,
        count + 2,
        100 * k,
        300 * k,
        Some(tcp(7 * k, 9 * k, true)),
    )];
    r.cost = WindowCost {
        cpu: CpuTimes {
            user_us: 1000 * k,
            sys_us: 500 * k,
        },
        kernel: KernelCounts {
            syscalls: Some(70 * k),
            context_switches: Some(3 * k),
            instructions: None,
            cycles: None,
        },
        outside: KernelCounts::ZERO,
        io: IoCalls {
            reads: 10 * k,
            writes: 11 * k,
            ..IoCalls::ZERO
        },
        kernel_unavailable: None,
    };
    r
}

/// The JSON report of `run` by agent `name`.
fn json(run: ProtoRun, name: &str) -> String {
    let mut cfg = etcd_put_config();
    cfg.protos = vec![Proto::Grpc];
    cfg.agent = Some(name.to_string());
    Report::new(&cfg, &cfg.endpoints, &[], &[run], false).to_json()
}

fn source(file: &str, text: &str) -> Source {
    Source::parse(file, text).unwrap()
}

fn three() -> [(Vec<u64>, u64, u64, u64, u64); 3] {
    [
        ((1..=400).collect(), 3, 0, 2, 1),
        ((200..=900).step_by(3).collect(), 0, 40, 3, 2),
        (vec![5, 5, 5, 50, 5000], 7, 20, 2, 3),
    ]
}

#[test]
fn merged_counts_are_sums_and_percentiles_those_of_every_latency() {
    let runs = three();
    let texts: Vec<String> = runs
        .iter()
        .enumerate()
        .map(|(i, (l, f, s, secs, k))| json(agent_run(l, *f, *s, *secs, *k), &format!("a{i}")))
        .collect();
    let sources: Vec<Source> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| source(&format!("a{i}.json"), t))
        .collect();
    let m = merge(&sources).unwrap();
    let r = &m.runs[0];
    // every latency, recorded once into one histogram: what the merge must reproduce exactly
    let mut all = Latencies::default();
    let mut every: Vec<u64> = Vec::new();
    for (l, ..) in &runs {
        for &ms in l {
            all.record(Duration::from_millis(ms));
            every.push(ms);
        }
    }
    let ok: u64 = every.len() as u64;
    let failed: u64 = runs.iter().map(|r| r.1).sum();
    assert_eq!((r.summary.ok, r.summary.failed), (ok, failed));
    assert_eq!(r.summary.count, ok + failed);
    assert_eq!(r.error_distribution.len(), 1);
    assert_eq!(r.error_distribution[0].count, failed);
    assert_eq!(
        r.latency_distribution
            .iter()
            .map(|p| p.latency_ms)
            .collect::<Vec<_>>(),
        derive::distribution(&all)
            .iter()
            .map(|p| p.latency_ms)
            .collect::<Vec<_>>()
    );
    assert_eq!(counts(&r.histogram), counts(&derive::buckets(&all)));
    // the union window: from the first start (0 ms) to the last end (40 ms + 3 s)
    assert_eq!(r.summary.total_s, 3.04);
    close(r.summary.requests_per_sec, (ok + failed) as f64 / 3.04);
    assert_eq!(r.window.start_unix_us, 1_764_671_400_000_000);
    assert_eq!(r.window.end_unix_us, 1_764_671_403_040_000);
    // exact extremes; mean and stddev pooled from the agents' (float rounding only)
    assert_eq!(
        (r.summary.fastest_ms, r.summary.slowest_ms),
        (Some(1.0), Some(5000.0))
    );
    let mean = every.iter().sum::<u64>() as f64 / ok as f64;
    let var = every
        .iter()
        .map(|&v| (v as f64 - mean).powi(2))
        .sum::<f64>()
        / ok as f64;
    assert!((r.summary.average_ms.unwrap() - mean).abs() < 1e-9 * mean);
    assert!((r.summary.stddev_ms.unwrap() - var.sqrt()).abs() < 1e-6 * var.sqrt());
    // the window's cost: summed numerators over the summed requests written (k = 1 + 2 + 3)
    let written = ok + failed;
    assert_eq!(r.cost.requests, written);
    assert_eq!(
        (r.cost.client_cpu_user_us, r.cost.client_cpu_sys_us),
        (6000, 3000)
    );
    close(r.cost.client_cpu_us_per_request, 9000.0 / written as f64);
    assert_eq!(r.cost.syscalls, Some(420));
    close(r.cost.syscalls_per_request.unwrap(), 420.0 / written as f64);
    close(
        r.cost.other_syscalls_per_request.unwrap(),
        (420.0 - 126.0) / written as f64,
    );
    assert_eq!(r.cost.server_cpu_us_per_request, None);
    // the connections: every agent's requests on the wire are its count + 2
    let on_wire = written + 6;
    assert_eq!(r.wire.requests_on_wire, on_wire);
    assert_eq!((r.wire.bytes_out, r.wire.bytes_in), (600, 1800));
    close(r.wire.bytes_out_per_request, 600.0 / on_wire as f64);
    assert_eq!((r.wire.segments_out, r.wire.segments_in), (42, 54));
    close(r.wire.segments_in_per_request, 54.0 / on_wire as f64);
    // IPv4 with timestamps: 52 B of headers a segment
    close(
        r.wire.wire_bytes_out_per_request,
        (600.0 + 42.0 * 52.0) / on_wire as f64,
    );
    assert_eq!(r.wire.connections_opened, 3);
    // one row per agent, in the order given, with its own figures
    let rows = r.agents.as_ref().unwrap();
    let names: Vec<&str> = rows.iter().map(|a| a.agent.as_str()).collect();
    assert_eq!(names, ["a0", "a1", "a2"]);
    assert_eq!(rows[1].count, runs[1].0.len() as u64);
    assert_eq!(rows[1].start_unix_us - rows[0].start_unix_us, 40_000);
    assert_eq!(rows[2].file, "a2.json");
    // the per-endpoint row from the merged endpoint histograms
    assert_eq!(r.per_endpoint.len(), 1);
    assert_eq!(r.per_endpoint[0].ok, ok);
    assert_eq!(
        r.per_endpoint[0].p99_ms,
        Some(derive::distribution(&all)[6].latency_ms)
    );
    // the merged report is a report of the same schema, whose histogram is the merged one
    let again = hdr::decode(&r.histograms.latency).unwrap();
    assert_eq!(again, all.hist);
    assert_eq!(m.schema, SCHEMA);
    assert_eq!(m.agent, None);
}

#[test]
fn one_report_merged_alone_keeps_its_figures() {
    let run = agent_run(&[3, 4, 5, 8, 13, 21], 2, 0, 2, 1);
    let original = RunReport::from_run(&run, &endpoints(), &[], false);
    let text = json(run, "solo");
    let m = merge(&[source("solo.json", &text)]).unwrap();
    let r = &m.runs[0];
    assert_eq!(
        serde_json::to_value(&r.summary).unwrap(),
        serde_json::to_value(&original.summary).unwrap()
    );
    assert_eq!(
        serde_json::to_value(&r.cost).unwrap(),
        serde_json::to_value(&original.cost).unwrap()
    );
    assert_eq!(
        serde_json::to_value(&r.wire).unwrap(),
        serde_json::to_value(&original.wire).unwrap()
    );
    assert_eq!(
        serde_json::to_value(&r.latency_distribution).unwrap(),
        serde_json::to_value(&original.latency_distribution).unwrap()
    );
    assert_eq!(r.histograms.latency, original.histograms.latency);
}

#[test]
fn a_merged_report_merges_again_with_every_agent_row() {
    let runs = three();
    let texts: Vec<String> = runs
        .iter()
        .enumerate()
        .map(|(i, (l, f, s, secs, k))| json(agent_run(l, *f, *s, *secs, *k), &format!("a{i}")))
        .collect();
    let first_two = merge(&[source("a0.json", &texts[0]), source("a1.json", &texts[1])])
        .unwrap()
        .to_json();
    let nested = merge(&[source("ab.json", &first_two), source("a2.json", &texts[2])]).unwrap();
    let flat = merge(
        &texts
            .iter()
            .enumerate()
            .map(|(i, t)| source(&format!("a{i}.json"), t))
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let (n, f) = (&nested.runs[0], &flat.runs[0]);
    assert_eq!(n.summary.count, f.summary.count);
    assert_eq!(n.histograms.latency, f.histograms.latency);
    assert_eq!(n.summary.total_s, f.summary.total_s);
    assert_eq!(n.cost.syscalls, f.cost.syscalls);
    let names: Vec<&str> = n
        .agents
        .iter()
        .flatten()
        .map(|a| a.agent.as_str())
        .collect();
    assert_eq!(names, ["a0", "a1", "a2"]);
}

#[test]
fn what_cannot_be_merged_is_refused_in_one_line() {
    let a = json(agent_run(&[1, 2, 3], 0, 0, 1, 1), "a");
    let b = json(agent_run(&[4, 5], 0, 10, 1, 2), "b");
    let one_line = |e: MergeError, words: &str| {
        let e = e.to_string();
        assert!(e.contains(words) && !e.contains('\n'), "{words:?}: {e}");
    };
    // a report cut short
    one_line(
        Source::parse("a.json", &a[..a.len() / 2]).unwrap_err(),
        "a.json: the JSON ends early",
    );
    one_line(Source::parse("a.json", "{]").unwrap_err(), "not JSON");
    // another schema version, another kind of document
    let v3 = a.replace(SCHEMA, "wirebench.report.v3");
    one_line(
        Source::parse("old.json", &v3).unwrap_err(),
        "old.json: schema wirebench.report.v3",
    );
    let sweep = r#"{"schema": "wirebench.sweep.v2", "rows": []}"#;
    one_line(
        Source::parse("s.json", sweep).unwrap_err(),
        "not a run report",
    );
    one_line(Source::parse("x.json", "{}").unwrap_err(), "no \"schema\"");
    // a field missing
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    let mut cut = v.clone();
    cut["runs"][0].as_object_mut().unwrap().remove("histograms");
    one_line(
        Source::parse("a.json", &cut.to_string()).unwrap_err(),
        "missing field `histograms`",
    );
    // an undecodable histogram
    let mut bad = v.clone();
    bad["runs"][0]["histograms"]["latency"] = "HISTFAAAnotahistogram".into();
    let e = merge(&[source("bad.json", &bad.to_string()), source("b.json", &b)]).unwrap_err();
    one_line(e, "bad.json: histograms.latency");
    // other workloads: sizes, target, stacks
    let other = a.replace("value 8 B", "value 9 B");
    let e = merge(&[source("a.json", &a), source("o.json", &other)]).unwrap_err();
    one_line(e, "a.json and o.json ran different workloads: workload");
    let mut moved = v.clone();
    moved["endpoints"][0] = "http://127.0.0.1:2380".into();
    let e = merge(&[source("a.json", &a), source("m.json", &moved.to_string())]).unwrap_err();
    one_line(e, "different workloads: target");
    let mut http = v.clone();
    http["runs"][0]["proto"] = "http".into();
    let e = merge(&[source("a.json", &a), source("h.json", &http.to_string())]).unwrap_err();
    one_line(e, "different workloads: stacks");
    // the same agent twice
    let e = merge(&[source("a.json", &a), source("a2.json", &a)]).unwrap_err();
    one_line(e, "a.json and a2.json are the same agent's run (a)");
    // and what is left merges
    assert!(merge(&[source("a.json", &a), source("b.json", &b)]).is_ok());
}

#[test]
fn start_at_and_agent_are_recorded() {
    let mut cfg = etcd_put_config();
    cfg.protos = vec![Proto::Grpc];
    cfg.agent = Some("pod-2".into());
    let at = UNIX_EPOCH + Duration::from_secs(1_764_671_400);
    cfg.load.start_at = Some(at);
    let mut run = agent_run(&[1, 2], 0, 0, 1, 1);
    run.started_at = at + Duration::from_micros(1500);
    let rep = Report::new(&cfg, &cfg.endpoints, &[], &[run], false);
    let w = &rep.runs[0].window;
    assert_eq!(w.start_at.as_deref(), Some("2025-12-02T10:30:00.000000Z"));
    assert_eq!(w.start_late_ms, Some(1.5));
    assert_eq!(w.start_unix_us, 1_764_671_400_001_500);
    assert_eq!(w.end_unix_us, 1_764_671_401_001_500);
    assert_eq!(rep.agent.as_deref(), Some("pod-2"));
    let text = crate::report::text::render(&rep);
    assert!(
        text.contains(
            "agent pod-2; measured from --start-at 2025-12-02T10:30:00.000000Z, 1.500 ms late"
        ),
        "{text}"
    );
    // an agent on time is 0 ms late, not early
    let mut early = agent_run(&[1], 0, 0, 1, 1);
    early.started_at = at - Duration::from_micros(3);
    let rep = Report::new(&cfg, &cfg.endpoints, &[], &[early], false);
    assert_eq!(rep.runs[0].window.start_late_ms, Some(0.0));
}

/// A report read back (by merge, by the tests) holds the very numbers written: serde_json parses
/// floats exactly only with its `float_roundtrip` feature; without it this one came back one
/// unit in the last place low.
#[test]
fn a_float_written_to_a_report_reads_back_exactly() {
    let written = (86_072u64 - 22_680) as f64 * 1024.0 / 3000.0;
    let text = serde_json::to_string(&written).unwrap();
    assert_eq!(text, "21637.802666666666");
    assert_eq!(serde_json::from_str::<f64>(&text).unwrap(), written);
}

/// An agent whose measured requests all failed before a byte was written (no connection), its
/// one earlier connection without TCP_INFO, closed with its segments unknown.
fn agent_without_figures(start_ms: u64) -> ProtoRun {
    let mut r = agent_run(&[], 4, start_ms, 1, 1);
    r.stats.written = 0;
    r.stats.conns = vec![ConnRecord {
        close: Some(CloseRecord {
            bytes_out: 9,
            drained: true,
            ..CloseRecord::default()
        }),
        ..conn(0, 0, 0, 0, None)
    }];
    r
}

#[test]
fn a_merge_of_figures_never_measured_is_null_too() {
    // two agents that measured no figure: the merge has none either (not 0)
    let a = json(agent_without_figures(0), "a");
    let b = json(agent_without_figures(5), "b");
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    assert_eq!(
        v["runs"][0]["cost"]["client_cpu_us_per_request"],
        Value::Null
    );
    let m = merge(&[source("a.json", &a), source("b.json", &b)]).unwrap();
    let r = &m.runs[0];
    assert_eq!((r.summary.count, r.summary.ok, r.cost.requests), (8, 0, 0));
    let s = &r.summary;
    assert_eq!(
        (s.fastest_ms, s.slowest_ms, s.average_ms, s.stddev_ms),
        (None, None, None, None)
    );
    assert!(r.histogram.is_empty() && r.latency_distribution.is_empty());
    // the costs' counts are summed; there is nothing to divide them by
    assert_eq!(r.cost.client_cpu_user_us, 2000);
    assert_eq!(r.cost.syscalls, Some(140));
    assert_eq!(r.cost.client_cpu_us_per_request, None);
    assert_eq!(r.cost.syscalls_per_request, None);
    assert_eq!(r.wire.requests_on_wire, 0);
    assert_eq!(r.wire.bytes_out_per_request, None);
    assert_eq!(r.wire.segments_out_per_request, None);
    assert_eq!((r.wire.close.connections, r.wire.close.bytes_out), (2, 18));
    assert_eq!(r.wire.close.segments_out, None);
    assert_eq!(r.wire.close.connections_without_segments, 2);
    assert_eq!(r.per_endpoint[0].p99_ms, None);
    let rows = r.agents.as_ref().unwrap();
    assert_eq!(
        (rows[0].p50_ms, rows[0].client_cpu_us_per_request),
        (None, None)
    );
    // the text says n/a where the report says null
    let text = crate::report::text::render(&m);
    for start in ["Average:", "Client CPU / request:", "Bytes out / request:"] {
        let l = text
            .lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no {start}:\n{text}"));
        assert!(l.contains("n/a"), "{l}");
    }
    // and the merge is a report that merges again
    assert!(merge(&[source("ab.json", &m.to_json())]).is_ok());

    // with an agent that measured: its figures, not pulled toward 0 by the other's absence
    let runs = three();
    let (l, f, st, secs, k) = &runs[0];
    let measured = agent_run(l, *f, *st, *secs, *k);
    let original = RunReport::from_run(&measured, &endpoints(), &[], false);
    let c = json(measured, "c");
    let m = merge(&[source("a.json", &a), source("c.json", &c)]).unwrap();
    let r = &m.runs[0];
    let (o, s) = (&original.summary, &r.summary);
    assert_eq!((s.fastest_ms, s.slowest_ms), (o.fastest_ms, o.slowest_ms));
    assert_eq!((s.average_ms, s.stddev_ms), (o.average_ms, o.stddev_ms));
    // the window's cost: both agents' CPU over the one agent's requests written
    assert_eq!(r.cost.requests, original.cost.requests);
    close(
        r.cost.client_cpu_us_per_request,
        (1500.0 + 1500.0) / original.cost.requests as f64,
    );
    // the closes: the unknown one counted apart, the known ones none (no close in c)
    assert_eq!(r.wire.close.segments_out, None);
    assert_eq!(r.wire.close.connections_without_segments, 1);
    // the segments: c's connection with TCP_INFO over its requests
    assert_eq!(
        r.wire.segments_out_per_request,
        original.wire.segments_out_per_request
    );
}
