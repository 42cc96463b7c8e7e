//! `--find-max`: per stack, open-loop steps chosen by `search` (doubling, then bisection),
//! each judged on its own run report against the objectives; then confirmation runs at the
//! answer. The report is the last confirmation that met (else the step that met at the answer),
//! with the search in its `capacity` section.

mod search;

use std::time::{Duration, Instant};

use super::{Prepared, RunError, exit};
use crate::config::capacity::CapacitySpec;
use crate::config::{Config, MAX_RATE, Stop};
use crate::report::capacity::{Capacity, Ending, Phase, Spread, Step};
use crate::report::{self, Report};
use crate::stack::Proto;
use crate::stats::ProtoRun;
use search::{Next, Search};

/// The fewest measured requests a step should send: a lower rate is not tried.
const MIN_STEP_REQUESTS: f64 = 20.0;
/// What a step costs besides its settle time and window (connects, the close, the report),
/// until one has been measured.
const STEP_OVERHEAD: Duration = Duration::from_secs(1);

/// One stack's search: its capacity section, and the run that stands for it in the report
/// (None: Ctrl-C came before a step ran).
pub(super) struct Searched {
    pub capacity: Capacity,
    pub run: Option<ProtoRun>,
}

/// Runs the search on every stack in turn (each given an equal share of what is left of
/// `--max-duration`); the report of the runs that stand for them, with their searches.
pub(super) fn run(
    cfg: &Config,
    prepared: &Prepared,
    spec: &CapacitySpec,
) -> Result<Report, RunError> {
    let started = Instant::now();
    let mut runs = Vec::with_capacity(cfg.protos.len());
    let mut capacities = Vec::with_capacity(cfg.protos.len());
    for (i, &proto) in cfg.protos.iter().enumerate() {
        if super::interrupted() {
            break;
        }
        let left = spec.max_duration.saturating_sub(started.elapsed());
        let share = left / (cfg.protos.len() - i) as u32;
        let s = search(cfg, prepared, proto, spec, share)?;
        if let Some(run) = s.run {
            runs.push(run);
            capacities.push(s.capacity);
        }
    }
    if runs.is_empty() {
        return Err(if super::interrupted() {
            RunError::Interrupted
        } else {
            RunError::Setup("--find-max: no step could run".into())
        });
    }
    let mut report = prepared.report(&step_config(cfg, spec, spec.start_rate), &runs);
    report.attach_capacity(capacities);
    Ok(report)
}

/// `run`, the report printed (and its pictures written); the exit code: 3 when a stack met
/// no objective at any rate tried, or a `--fail-if` broke on the runs that stand for them.
pub(super) fn run_and_write(
    cfg: &Config,
    prepared: &Prepared,
    spec: &CapacitySpec,
) -> Result<i32, RunError> {
    let outputs = super::outputs::Opened::open(cfg)?;
    let report = match run(cfg, prepared, spec) {
        Ok(r) => r,
        Err(e) => {
            outputs.abandon();
            return Err(e);
        }
    };
    super::stacks::write(cfg, outputs, &report)?;
    let mut code = exit::OK;
    for r in &report.runs {
        let Some(c) = &r.capacity else { continue };
        match c.ending {
            Ending::NoneMet => {
                eprintln!(
                    "error: --find-max: no {} rate tried met {}",
                    r.title,
                    c.objectives.join(" and ")
                );
                code = exit::THRESHOLD;
            }
            Ending::ClientBound | Ending::Steps | Ending::Time | Ending::RateCeiling => {
                eprintln!("warning: {}: {}", r.title, c.ending.says());
            }
            Ending::Converged | Ending::Interrupted => {}
        }
    }
    Ok(super::stacks::judged(&report, &cfg.thresholds, "", code).max(code))
}

/// `cfg` for one step at `rate`: open loop, measured for `--step` after `--settle`, a request
/// timeout no longer than the step (a step ends within its bound).
fn step_config(cfg: &Config, spec: &CapacitySpec, rate: f64) -> Config {
    let mut c = cfg.clone();
    c.load.rate = Some(rate);
    c.load.stop = Stop::Duration(spec.step);
    c.load.warmup = spec.settle;
    c.load.timeout = c.load.timeout.min(spec.step.max(Duration::from_secs(1)));
    c
}

/// One stack's search within `budget`.
pub(super) fn search(
    cfg: &Config,
    prepared: &Prepared,
    proto: Proto,
    spec: &CapacitySpec,
    budget: Duration,
) -> Result<Searched, RunError> {
    let started = Instant::now();
    let floor = MIN_STEP_REQUESTS / spec.step.as_secs_f64();
    let mut search = Search::new(spec.start_rate, spec.precision, floor, MAX_RATE);
    let mut steps: Vec<Step> = Vec::new();
    let (mut best, mut last): (Option<ProtoRun>, Option<ProtoRun>) = (None, None);
    let mut longest = spec.settle + spec.step + STEP_OVERHEAD;
    let fits = |longest: Duration| started.elapsed() + longest <= budget;
    // a rate that broke, to measure again before the search takes it: its phase, and the
    // tries left after this one
    let mut again: Option<(f64, Phase, usize)> = None;
    let mut ending = loop {
        if super::interrupted() {
            break Ending::Interrupted;
        }
        let (rate, phase, retry) = match again.take() {
            Some((rate, phase, left)) => (rate, phase, Some(left)),
            None => match search.next() {
                Next::Try(rate, phase) => (rate, phase, None),
                Next::Done(e) => break e,
            },
        };
        if steps.len() >= spec.max_steps {
            break Ending::Steps;
        }
        if !fits(longest) {
            break Ending::Time;
        }
        let (mut step, run) = measure(cfg, prepared, proto, spec, rate, phase)?;
        step.retry = retry.is_some();
        longest = longest.max(run.1);
        let run = run.0;
        eprintln!(
            "wirebench --find-max: {} step {} at {} req/s: {}",
            proto.title(),
            steps.len() + 1,
            report::show::num(rate, 0),
            verdict(&step)
        );
        if step.interrupted {
            steps.push(step);
            last = Some(run);
            break Ending::Interrupted;
        }
        // a broken step that measured the client says nothing of the target
        let client_bound = !step.met && step.client_bound;
        // a stall (the machine's, the network's) can break a rate the target sustains, but
        // never meet one it does not: a break is measured again before it counts, unless the
        // target plainly could not keep up (the rate not written, or sends queued for a client)
        let left = retry.unwrap_or(spec.retries);
        if step.may_be_a_stall() && left > 0 {
            again = Some((rate, phase, left - 1));
            last = Some(run);
            steps.push(step);
            continue;
        }
        search.record(rate, step.met);
        if step.met {
            best = Some(run);
        } else {
            last = Some(run);
        }
        steps.push(step);
        if client_bound {
            break Ending::ClientBound;
        }
    };
    let (answer, broken) = search.bounds();
    let mut confirmation = None;
    if let (Some(rate), true) = (answer, ending != Ending::Interrupted) {
        let mut spread = Vec::new();
        for _ in 0..spec.confirm {
            if super::interrupted() {
                ending = Ending::Interrupted;
                break;
            }
            if !fits(longest) {
                break;
            }
            let (step, (run, _)) = measure(cfg, prepared, proto, spec, rate, Phase::Confirm)?;
            eprintln!(
                "wirebench --find-max: {} confirmation at {} req/s: {}",
                proto.title(),
                report::show::num(rate, 0),
                verdict(&step)
            );
            if step.interrupted {
                steps.push(step);
                ending = Ending::Interrupted;
                break;
            }
            // a confirmation that broke is in the spread, but does not stand for the answer
            if step.met {
                best = Some(run);
            }
            spread.push(steps.len());
            steps.push(step);
        }
        confirmation = (!spread.is_empty()).then(|| spread_of(&steps, &spread));
    }
    let requests = steps.iter().map(|s| s.requests).sum();
    Ok(Searched {
        capacity: Capacity {
            objectives: spec.objectives.iter().map(|t| t.text.clone()).collect(),
            start_rate: spec.start_rate,
            precision: spec.precision,
            answer_rps: answer,
            broken_rps: broken,
            ending,
            steps,
            confirmation,
            requests,
            elapsed_s: started.elapsed().as_secs_f64(),
        },
        run: best.or(last),
    })
}

/// One step at `rate`: its run, judged; the run and its wall time.
fn measure(
    cfg: &Config,
    prepared: &Prepared,
    proto: Proto,
    spec: &CapacitySpec,
    rate: f64,
    phase: Phase,
) -> Result<(Step, (ProtoRun, Duration)), RunError> {
    let began = Instant::now();
    let step_cfg = step_config(cfg, spec, rate);
    let run = prepared
        .run_proto(&step_cfg, proto)
        .map_err(RunError::Setup)?;
    let report: Report = prepared.report(&step_cfg, std::slice::from_ref(&run));
    let step = Step::of(phase, rate, &report.runs[0], &spec.objectives);
    Ok((step, (run, began.elapsed())))
}

/// A step's verdict in a progress line: the table's, with what a met step achieved.
fn verdict(s: &Step) -> String {
    if s.met && !s.interrupted {
        format!(
            "{} (achieved {} req/s, p99 {})",
            s.verdict(),
            report::show::num(s.achieved_rps, 0),
            report::show::ms(s.p99_ms)
        )
    } else {
        s.verdict()
    }
}

/// The spread of the confirmation steps (indices into `steps`).
fn spread_of(steps: &[Step], at: &[usize]) -> Spread {
    let picked: Vec<&Step> = at.iter().map(|&i| &steps[i]).collect();
    let range = |f: &dyn Fn(&Step) -> Option<f64>| {
        let v: Vec<f64> = picked.iter().filter_map(|s| f(s)).collect();
        let min = v.iter().copied().reduce(f64::min);
        let max = v.iter().copied().reduce(f64::max);
        (min, max)
    };
    let (achieved_rps_min, achieved_rps_max) = range(&|s| s.achieved_rps);
    let (p99_ms_min, p99_ms_max) = range(&|s| s.p99_ms);
    Spread {
        runs: picked.len(),
        met: picked.iter().filter(|s| s.met).count(),
        achieved_rps_min,
        achieved_rps_max,
        p99_ms_min,
        p99_ms_max,
    }
}
