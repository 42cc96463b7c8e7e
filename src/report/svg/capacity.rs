//! `--curve-svg FILE`: a capacity search's steps as latency (p50, p99) against the rate each
//! step achieved, every stack in its colour, each stack's answer marked.

use std::fmt::Write;

use super::{
    Series, W, axis_label, color, esc, legend, nice, open, polyline, stroke, tick, y_grid,
};
use crate::report::Report;
use crate::report::capacity::{Capacity, Phase, Step};
use crate::report::show::num;

/// The chart's height.
const H: f64 = 560.0;
/// p99 values whose largest is more than this many times their smallest get a log10 y axis.
const LOG_SPAN: f64 = 50.0;
/// The plot area: left, right, top, bottom.
const PLOT: (f64, f64, f64, f64) = (80.0, W - 30.0, 110.0, H - 80.0);

/// Where a step sits on the x axis: the rate it achieved, or the rate asked for where it
/// measured none.
fn x_of(s: &Step) -> f64 {
    s.achieved_rps.unwrap_or(s.rate)
}

/// A stack that searched: its title and its search.
struct Searched<'a> {
    title: &'a str,
    capacity: &'a Capacity,
    /// its steps in the order of `x_of`, each with its number in the search (from 1)
    steps: Vec<(usize, &'a Step)>,
}

/// The y axis: linear from 0 to `top`, or log10 over the decades `lo..=hi` (powers of ten).
#[derive(Clone, Copy)]
enum Scale {
    Linear { top: f64 },
    Log { lo: f64, hi: f64 },
}

impl Scale {
    /// The pixel row of `v` (None: a value a log axis cannot place, 0 or below).
    fn y(self, v: f64) -> Option<f64> {
        let (_, _, y0, y1) = PLOT;
        match self {
            Scale::Linear { top } => Some(y1 - v.max(0.0) / top * (y1 - y0)),
            Scale::Log { lo, hi } => {
                (v > 0.0).then(|| y1 - (v.log10() - lo) / (hi - lo) * (y1 - y0))
            }
        }
    }
}

/// The latency against rate chart of a report's capacity searches (`--find-max`); None when
/// no run has one.
pub fn capacity_curve(report: &Report) -> Option<String> {
    let searched = searched(report);
    if searched.is_empty() {
        return None;
    }
    let series = series(&searched);
    let (x0, x1, y0, y1) = PLOT;
    let mut s = String::new();
    open(
        &mut s,
        &format!("Capacity: latency by achieved rate: {}", report.workload),
        H,
    );
    let _ = writeln!(
        s,
        r##"<text x="20" y="50" font-size="13" fill="#555">objectives (all must hold): {}</text>"##,
        esc(&objectives(&searched).join(", "))
    );
    legend(&mut s, &series, 20.0, 74.0);
    let scale = y_axis(&mut s, &series);
    // x: linear from 0, to the highest step or answer
    let xmax = searched
        .iter()
        .flat_map(|se| {
            se.steps
                .iter()
                .map(|(_, st)| x_of(st))
                .chain(se.capacity.answer_rps)
        })
        .filter(|x| x.is_finite())
        .fold(0.0, f64::max);
    let (xtop, xstep) = nice(xmax);
    let px = |x: f64| x0 + x.max(0.0) / xtop * (x1 - x0);
    let mut x = 0.0;
    while x <= xtop * 1.000_001 {
        let _ = writeln!(
            s,
            r##"<line x1="{:.1}" y1="{y0}" x2="{:.1}" y2="{y1}" stroke="#f0f0f0"/><text x="{:.1}" y="{}" font-size="11" text-anchor="middle" fill="#555">{}</text>"##,
            px(x),
            px(x),
            px(x),
            y1 + 16.0,
            axis_label(x)
        );
        x += xstep;
    }
    let _ = writeln!(
        s,
        r##"<line x1="{x0}" y1="{y1}" x2="{x1}" y2="{y1}" stroke="#888"/><line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="#888"/>"##
    );
    answers(&mut s, &searched, &px);
    for (i, se) in series.iter().enumerate() {
        let pts: Vec<String> = se
            .points
            .iter()
            .filter_map(|&(x, v)| scale.y(v).map(|y| format!("{:.1},{y:.1}", px(x))))
            .collect();
        if pts.is_empty() {
            continue;
        }
        // a stack's two lines alike, the earlier stacks' wider (they may lie under a later one)
        polyline(&mut s, &pts, se, stroke(i / 2, series.len() / 2));
    }
    markers(&mut s, &searched, scale, &px);
    if series.iter().all(|se| se.points.is_empty()) {
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{}" font-size="14" text-anchor="middle" fill="#888">no step measured a latency</text>"##,
            (x0 + x1) / 2.0,
            (y0 + y1) / 2.0
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{}" y="{}" font-size="12" text-anchor="middle" fill="#555">achieved rate (requests/s; the rate asked for where a step measured none)</text>"##,
        (x0 + x1) / 2.0,
        y1 + 36.0
    );
    let _ = writeln!(
        s,
        r##"<text x="20" y="{}" font-size="12" fill="#555">filled: the step met every objective; hollow: it did not; squares: the confirmation runs; dashed vertical: each stack's answer</text>"##,
        H - 14.0
    );
    s.push_str("</svg>\n");
    Some(s)
}

/// The runs of `report` that searched, in run order.
fn searched(report: &Report) -> Vec<Searched<'_>> {
    report
        .runs
        .iter()
        .filter_map(|r| {
            let c = r.capacity.as_ref()?;
            let mut steps: Vec<(usize, &Step)> = c
                .steps
                .iter()
                .enumerate()
                .map(|(i, s)| (i + 1, s))
                .collect();
            steps.sort_by(|a, b| x_of(a.1).total_cmp(&x_of(b.1)));
            Some(Searched {
                title: r.title,
                capacity: c,
                steps,
            })
        })
        .collect()
}

/// Each stack's p99 line (solid) and p50 line (dashed), points in the order of the rate.
fn series<'a>(searched: &[Searched<'a>]) -> Vec<Series<'a>> {
    let mut out = Vec::with_capacity(searched.len() * 2);
    for se in searched {
        for (name, dashed, f) in [
            (
                "p99",
                false,
                (|s: &Step| s.p99_ms) as fn(&Step) -> Option<f64>,
            ),
            ("p50", true, |s: &Step| s.p50_ms),
        ] {
            out.push(Series {
                stack: se.title,
                dashed,
                label: format!("{} {name}", se.title),
                points: se
                    .steps
                    .iter()
                    .filter_map(|(_, st)| f(st).filter(|v| v.is_finite()).map(|v| (x_of(st), v)))
                    .collect(),
            });
        }
    }
    out
}

/// The objectives of every search, each once, in the order given.
fn objectives(searched: &[Searched<'_>]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for o in searched.iter().flat_map(|se| &se.capacity.objectives) {
        if !out.contains(o) {
            out.push(o.clone());
        }
    }
    out
}

/// Draws the y grid, its ticks and its name; returns the scale: linear from 0, or log10 when
/// the p99 values span more than `LOG_SPAN` times.
fn y_axis(s: &mut String, series: &[Series<'_>]) -> Scale {
    let (x0, x1, y0, y1) = PLOT;
    let positive = |p99_only: bool| {
        series
            .iter()
            .filter(move |se| !p99_only || !se.dashed)
            .flat_map(|se| se.points.iter().map(|p| p.1))
            .filter(|v| *v > 0.0)
            .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)))
    };
    let (lo99, hi99) = positive(true);
    let scale = if lo99 <= hi99 && hi99 > LOG_SPAN * lo99 {
        let (lo, hi) = positive(false);
        let (lo, hi) = (lo.log10().floor(), hi.log10().ceil());
        let hi = hi.max(lo + 1.0);
        let scale = Scale::Log { lo, hi };
        let mut decade = lo;
        while decade <= hi {
            let v = 10f64.powf(decade);
            let y = scale.y(v).unwrap_or(y1);
            let _ = writeln!(
                s,
                r##"<line x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#e2e2e2"/><text x="{}" y="{:.1}" font-size="11" text-anchor="end" fill="#555">{}</text>"##,
                x0 - 6.0,
                y + 4.0,
                tick(v)
            );
            decade += 1.0;
        }
        scale
    } else {
        Scale::Linear {
            top: y_grid(s, series, (x0, x1), (y0, y1)),
        }
    };
    let name = match scale {
        Scale::Linear { .. } => "latency (ms)",
        Scale::Log { .. } => "latency (ms, log scale)",
    };
    let mid = (y0 + y1) / 2.0;
    let _ = writeln!(
        s,
        r##"<text x="18" y="{mid}" font-size="12" fill="#555" transform="rotate(-90 18 {mid})" text-anchor="middle">{name}</text>"##
    );
    scale
}

/// A dashed vertical line at each stack's answer, labelled `STACK: N req/s`.
fn answers(s: &mut String, searched: &[Searched<'_>], px: &dyn Fn(f64) -> f64) {
    let (_, x1, y0, y1) = PLOT;
    for (i, se) in searched.iter().enumerate() {
        let Some(a) = se.capacity.answer_rps.filter(|a| a.is_finite()) else {
            continue;
        };
        let (x, c) = (px(a), color(se.title));
        let _ = writeln!(
            s,
            r#"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{y1}" stroke="{c}" stroke-width="1.5" stroke-dasharray="5 4"/>"#
        );
        // labels of answers close together are stacked, not drawn over each other
        let (tx, anchor) = if x > x1 - 160.0 {
            (x - 5.0, "end")
        } else {
            (x + 5.0, "start")
        };
        let _ = writeln!(
            s,
            r#"<text x="{tx:.1}" y="{}" font-size="12" font-weight="bold" fill="{c}" text-anchor="{anchor}">{}: {} req/s</text>"#,
            y0 + 14.0 + i as f64 * 15.0,
            esc(se.title),
            num(a, 0)
        );
    }
}

/// A marker at each step's p99 and p50: filled when the step met every objective, hollow when
/// it did not; a square for a confirmation run, a circle for the others. Each carries the
/// step's figures as its tooltip.
fn markers(s: &mut String, searched: &[Searched<'_>], scale: Scale, px: &dyn Fn(f64) -> f64) {
    for se in searched {
        let c = color(se.title);
        for &(n, st) in &se.steps {
            let verdict = if st.interrupted {
                "interrupted, not judged".to_string()
            } else if st.met {
                "met".to_string()
            } else {
                format!("broke {}", st.broke.join("; "))
            };
            let tip = esc(&format!(
                "{} step {n} ({}): asked {} req/s, achieved {}, p50 {} ms, p99 {} ms: {verdict}",
                se.title,
                st.phase.name(),
                num(st.rate, 0),
                num(st.achieved_rps, 0),
                num(st.p50_ms, 3),
                num(st.p99_ms, 3)
            ));
            let fill = if st.met { c } else { "white" };
            let x = px(x_of(st));
            for v in [st.p99_ms, st.p50_ms].into_iter().flatten() {
                let Some(y) = scale.y(v).filter(|_| v.is_finite()) else {
                    continue;
                };
                let _ = if st.phase == Phase::Confirm {
                    writeln!(
                        s,
                        r#"<rect x="{:.1}" y="{:.1}" width="8" height="8" fill="{fill}" stroke="{c}" stroke-width="1.5"><title>{tip}</title></rect>"#,
                        x - 4.0,
                        y - 4.0
                    )
                } else {
                    writeln!(
                        s,
                        r#"<circle cx="{x:.1}" cy="{y:.1}" r="4" fill="{fill}" stroke="{c}" stroke-width="1.5"><title>{tip}</title></circle>"#
                    )
                };
            }
        }
    }
}

#[cfg(test)]
mod tests;
