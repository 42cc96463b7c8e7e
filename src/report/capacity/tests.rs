//! A step judged from a run report built by hand: its objectives, the rate it sustained, and
//! whether the client was the limit; and the text section.

use std::time::Duration;

use super::*;
use crate::report::tests::{ok, report, run};
use crate::stack::Proto;
use crate::stats::CpuTimes;

/// A 1 s open-loop step at `rate` that wrote `written` requests, each answered in `ms`, with
/// the worker thread busy `busy_ms` of the second and `overdue` sends released late.
fn step_run(rate: f64, written: u64, ms: u64, busy_ms: u64, overdue: u64) -> RunReport {
    let mut r = run(Proto::Grpc);
    r.rate = Some(rate);
    ok(&mut r.stats, written, Duration::from_millis(ms));
    r.stats.written = written;
    r.stats.lagged_sends = written;
    r.stats.overdue = overdue;
    r.cost.cpu = CpuTimes {
        user_us: busy_ms * 700,
        sys_us: busy_ms * 300,
    };
    report(&r)
}

fn objectives(list: &[&str]) -> Vec<Threshold> {
    list.iter().map(|t| Threshold::parse(t).unwrap()).collect()
}

#[test]
fn a_step_meets_when_every_objective_holds_at_the_rate_asked() {
    let objs = objectives(&["p99<5ms", "errors<1%"]);
    let s = Step::of(
        Phase::Rise,
        1000.0,
        &step_run(1000.0, 1000, 2, 100, 0),
        &objs,
    );
    assert!(s.met, "{s:?}");
    assert!(s.broke.is_empty() && !s.client_bound);
    assert_eq!(s.requests, 1000);
    assert_eq!(s.achieved_rps, Some(1000.0));
    assert!((s.client_busy.unwrap() - 0.1).abs() < 1e-9, "{s:?}");
    assert_eq!(s.overdue_share, Some(0.0));
}

#[test]
fn a_step_names_each_objective_it_broke_with_its_value() {
    let objs = objectives(&["p99<5ms", "p50<1ms"]);
    let s = Step::of(
        Phase::Bisect,
        1000.0,
        &step_run(1000.0, 1000, 7, 100, 0),
        &objs,
    );
    assert!(!s.met);
    assert_eq!(s.broke.len(), 2, "{s:?}");
    assert!(s.broke[0].starts_with("p99<5ms: 7"), "{:?}", s.broke);
    assert!(s.broke[0].ends_with(" ms"), "{:?}", s.broke);
    assert!(s.broke[1].starts_with("p50<1ms: 7"), "{:?}", s.broke);
}

#[test]
fn a_rate_not_sustained_breaks_even_when_the_objectives_hold() {
    // 850 of 1,000 asked: under 90%
    let s = Step::of(
        Phase::Rise,
        1000.0,
        &step_run(1000.0, 850, 1, 100, 0),
        &objectives(&["errors<1%"]),
    );
    assert!(!s.met);
    assert_eq!(s.broke, ["achieved 850 of 1000 req/s"]);
    // 950 of 1,000: sustained
    let s = Step::of(
        Phase::Rise,
        1000.0,
        &step_run(1000.0, 950, 1, 100, 0),
        &objectives(&["errors<1%"]),
    );
    assert!(s.met, "{s:?}");
}

#[test]
fn a_busy_client_or_late_sends_mark_the_step_client_bound() {
    let objs = objectives(&["p99<5ms"]);
    // 950 ms of CPU in a 1 s window on one thread
    let s = Step::of(
        Phase::Rise,
        1000.0,
        &step_run(1000.0, 1000, 2, 950, 0),
        &objs,
    );
    assert!(s.client_bound && s.met, "{s:?}");
    // 89% busy, 9.9% of sends late: not yet
    let s = Step::of(
        Phase::Rise,
        1000.0,
        &step_run(1000.0, 1000, 2, 890, 99),
        &objs,
    );
    assert!(!s.client_bound, "{s:?}");
    // 10% of the sends released late
    let s = Step::of(
        Phase::Rise,
        1000.0,
        &step_run(1000.0, 1000, 2, 100, 100),
        &objs,
    );
    assert!(s.client_bound, "{s:?}");
    assert_eq!(s.overdue_share, Some(0.1));
}

#[test]
fn the_text_section_shows_the_answer_the_ending_and_every_step() {
    let objs = objectives(&["p99<5ms"]);
    let steps = vec![
        Step::of(
            Phase::Rise,
            1000.0,
            &step_run(1000.0, 1000, 2, 100, 0),
            &objs,
        ),
        Step::of(
            Phase::Rise,
            2000.0,
            &step_run(2000.0, 2000, 9, 100, 0),
            &objs,
        ),
        Step::of(
            Phase::Confirm,
            1000.0,
            &step_run(1000.0, 1000, 2, 100, 0),
            &objs,
        ),
    ];
    let c = Capacity {
        objectives: vec!["p99<5ms".into()],
        start_rate: 1000.0,
        precision: 0.05,
        answer_rps: Some(1000.0),
        broken_rps: Some(2000.0),
        ending: Ending::Steps,
        confirmation: Some(Spread {
            runs: 1,
            met: 1,
            achieved_rps_min: Some(1000.0),
            achieved_rps_max: Some(1000.0),
            p99_ms_min: Some(2.0),
            p99_ms_max: Some(2.0),
        }),
        requests: steps.iter().map(|s| s.requests).sum(),
        steps,
        elapsed_s: 3.2,
    };
    assert!(c.confirmed());
    let mut out = String::new();
    render_text(&mut out, &c);
    assert!(
        out.starts_with("Capacity (--find-max p99<5ms): 1000 req/s\n"),
        "{out}"
    );
    assert!(out.contains("stopped at --max-steps"), "{out}");
    assert!(
        out.contains("lowest rate that broke an objective: 2000 req/s"),
        "{out}"
    );
    assert!(out.contains("confirmed in 1 of 1 run(s)"), "{out}");
    assert!(
        out.contains("3 steps, 4000 measured requests, 3.2 s"),
        "{out}"
    );
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| {
            let phase = l.split_whitespace().nth(1);
            matches!(phase, Some("rise" | "bisect" | "confirm"))
        })
        .collect();
    assert_eq!(rows.len(), 3, "{out}");
    assert!(rows[0].ends_with("met"), "{out}");
    assert!(rows[1].contains("broke p99<5ms: 9"), "{out}");
    assert!(rows[2].contains("confirm"), "{out}");
}

#[test]
fn a_break_is_measured_again_only_when_it_may_have_been_a_stall() {
    let objs = objectives(&["p99<5ms"]);
    // every request 8 ms, the rate written, no send waited for a client: maybe a stall
    let mut r = step_run(1000.0, 1000, 8, 100, 0);
    let s = Step::of(Phase::Bisect, 1000.0, &r, &objs);
    assert!(!s.met && s.may_be_a_stall(), "{s:?}");
    // a tenth of the sends found every client busy: the target's queue
    if let Some(o) = r.open_loop.as_mut() {
        o.late_sends = 100;
    }
    let s = Step::of(Phase::Bisect, 1000.0, &r, &objs);
    assert_eq!(s.queued_share, Some(0.1));
    assert!(!s.met && !s.may_be_a_stall(), "{s:?}");
    // under 90% of the rate written: the target did not keep up
    let s = Step::of(
        Phase::Bisect,
        1000.0,
        &step_run(1000.0, 800, 8, 100, 0),
        &objs,
    );
    assert!(!s.sustained() && !s.may_be_a_stall(), "{s:?}");
    // a step that met is not measured again
    let s = Step::of(
        Phase::Bisect,
        1000.0,
        &step_run(1000.0, 1000, 2, 100, 0),
        &objs,
    );
    assert!(s.met && !s.may_be_a_stall(), "{s:?}");
}
