//! `wirebench etcd put | range` and `wirebench echo`: every configured protocol in turn, one report.

use super::{Prepared, RunError, emit, exit};
use crate::config::{Config, EtcdOp, Format, WorkloadSpec};
use crate::engine;
use crate::report::{self, Report};
use crate::stats::ProtoRun;

/// Runs every configured protocol in turn on what was prepared; the report covers them all.
pub fn run(cfg: &Config, prepared: &Prepared) -> Result<(Report, Vec<ProtoRun>), RunError> {
    run_with(cfg, prepared, &engine::Taps::default())
}

/// `run`, the threads handing their live snapshots and log rows to `taps`.
pub fn run_with(
    cfg: &Config,
    prepared: &Prepared,
    taps: &engine::Taps,
) -> Result<(Report, Vec<ProtoRun>), RunError> {
    let mut runs = Vec::with_capacity(cfg.protos.len());
    for &proto in &cfg.protos {
        if super::interrupted() {
            break;
        }
        runs.push(
            prepared
                .run_proto_with(cfg, proto, taps)
                .map_err(RunError::Setup)?,
        );
    }
    // Ctrl-C before any stack sent a request: no report, one line (the stacks that ran are
    // kept: one interrupted between its connects and its first request reports nothing sent)
    if super::interrupted() && runs.iter().all(|r| r.stats.written == 0) {
        return Err(RunError::Interrupted);
    }
    let mut report = prepared.report(cfg, &runs);
    if cfg.verify {
        for (r, run) in report.runs.iter_mut().zip(&runs) {
            r.verify = Some(verify(cfg, prepared, run)?);
        }
    }
    Ok((report, runs))
}

/// `--verify`: the run's acknowledged writes looked up in etcd's history, through the members
/// the run could use (its endpoints first).
fn verify(
    cfg: &Config,
    prepared: &Prepared,
    run: &ProtoRun,
) -> Result<report::VerifyReport, RunError> {
    use crate::etcd::verify::Keys;
    let keys = match &cfg.spec {
        WorkloadSpec::Etcd(EtcdOp::Put {
            key_size,
            key_space_size,
            ..
        }) => Keys {
            size: *key_size,
            ops: 1,
            space: *key_space_size,
        },
        WorkloadSpec::Etcd(EtcdOp::TxnPut {
            key_size,
            key_space_size,
            ops,
            ..
        }) => Keys {
            size: *key_size,
            ops: *ops,
            space: *key_space_size,
        },
        WorkloadSpec::Etcd(EtcdOp::TxnMixed(m)) => Keys {
            size: m.key_size,
            ops: 1,
            space: m.key_space_size,
        },
        _ => {
            return Err(RunError::Usage(
                "--verify checks etcd's writes (put, txn-put, txn-mixed)".into(),
            ));
        }
    };
    let v = crate::etcd::verify::verify_writes(
        prepared.members(),
        &run.stats.acks,
        keys,
        &cfg.net,
        &cfg.h2,
        prepared.token.as_deref(),
        cfg.load.timeout,
    )
    .map_err(|e| RunError::Setup(e.to_string()))?;
    Ok(report::VerifyReport {
        checked: v.checked,
        lost: v.lost,
        lost_examples: v
            .lost_examples
            .into_iter()
            .map(|(key_index, revision, found)| report::LostWrite {
                key_index,
                revision,
                found,
            })
            .collect(),
        retried: v.retried,
        via: v.via,
    })
}

/// Prints `report` (text or JSON), writes the chart (`--svg`) and the outputs opened before the
/// run.
pub(super) fn write(
    cfg: &Config,
    outputs: super::outputs::Opened,
    report: &Report,
) -> Result<(), RunError> {
    let text = match cfg.format {
        Format::Text => report::text::render(report),
        Format::Json => report.to_json(),
    };
    emit(cfg.output.as_deref(), &text)?;
    let figs: Vec<(&str, report::compare::Figures)> = report
        .runs
        .iter()
        .map(|r| (r.title, report::compare::Figures::of(r)))
        .collect();
    let stacks: Vec<report::compare::Stack<'_>> = figs.iter().map(|(t, f)| (*t, f)).collect();
    write_svg(cfg, &stacks)?;
    outputs.finish(report)
}

/// Runs, writes the report (and the chart with `--svg`); fails when a protocol had no success.
pub(super) fn run_and_write(cfg: &Config, prepared: &Prepared) -> Result<i32, RunError> {
    let outputs = super::outputs::Opened::open(cfg)?;
    let (report, _) = match run_with(cfg, prepared, &outputs.taps()) {
        Ok(r) => r,
        Err(e) => {
            outputs.abandon();
            return Err(e);
        }
    };
    write(cfg, outputs, &report)?;
    let mut code = exit::OK;
    for r in &report.runs {
        for line in r.failover.iter().flat_map(|f| f.stranded()) {
            eprintln!("warning: {}: {line}", r.title);
        }
        if let Some(v) = r.verify.as_ref().filter(|v| v.lost > 0) {
            eprintln!(
                "error: --verify: {} of {} acknowledged {} writes are not in etcd's history at their revisions",
                v.lost, v.checked, r.title
            );
            code = exit::FAILURE;
        }
    }
    code = judged(&report, &cfg.thresholds, "", code);
    Ok(code)
}

/// `code`, or `exit::FAILURE` with one line per run of `report` with no success (`where_`
/// follows "succeeded"), or else the thresholds' verdict on its runs.
pub(super) fn judged(
    report: &Report,
    thresholds: &[report::verdict::Threshold],
    where_: &str,
    mut code: i32,
) -> i32 {
    for r in report.runs.iter().filter(|r| r.summary.ok == 0) {
        eprintln!(
            "error: no {} request succeeded{where_} ({})",
            r.title,
            first_error(r)
        );
        code = exit::FAILURE;
    }
    if code != exit::OK {
        return code;
    }
    judge(
        thresholds,
        report
            .runs
            .iter()
            .flat_map(|r| thresholds.iter().filter_map(|t| t.judge(r))),
    )
}

/// Prints one line per broken threshold; `exit::THRESHOLD` when there was one.
pub(super) fn judge(
    thresholds: &[report::verdict::Threshold],
    broken: impl Iterator<Item = report::verdict::Broken>,
) -> i32 {
    if thresholds.is_empty() {
        return exit::OK;
    }
    let mut code = exit::OK;
    for b in broken {
        eprintln!("error: {b}");
        code = exit::THRESHOLD;
    }
    code
}

/// With `--svg`: the headline figures of each side that ran, as a chart.
pub(super) fn write_svg(
    cfg: &Config,
    stacks: &[report::compare::Stack<'_>],
) -> Result<(), RunError> {
    let Some(path) = &cfg.svg else { return Ok(()) };
    let figures: Vec<&report::compare::Figures> = stacks.iter().map(|(_, f)| *f).collect();
    let names: Vec<&str> = stacks.iter().map(|(n, _)| *n).collect();
    let panels = report::compare::Figures::panels(&figures);
    let svg = report::svg::render(&cfg.spec.describe(), &names, &panels);
    std::fs::write(path, svg).map_err(|source| RunError::Output {
        path: path.display().to_string(),
        source,
    })
}

/// The most frequent failure of a run, or the last connect error, for a one-line message.
pub(super) fn first_error(r: &report::RunReport) -> String {
    r.error_distribution
        .first()
        .map(|e| match &e.message {
            Some(m) => format!("{}: {m}", e.kind),
            None => e.kind.to_string(),
        })
        .or_else(|| r.wire.connect_error.clone())
        .unwrap_or_else(|| "no request was sent".into())
}
