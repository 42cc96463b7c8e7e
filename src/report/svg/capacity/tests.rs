use super::*;
use crate::report::capacity::Ending;
use crate::report::tests::searches::{self, well_formed};

#[test]
fn the_curve_has_a_marker_per_step_and_each_answer() {
    let report = searches::report();
    let svg = capacity_curve(&report).expect("a chart of the searches");
    well_formed(&svg);
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    // the objectives, escaped, in the subtitle; a linear axis (p99 spans 0.4 to 12 ms)
    assert!(svg.contains("p99&lt;5ms, errors&lt;0.1%"), "{svg}");
    assert!(svg.contains(">latency (ms)</text>"), "{svg}");
    // each stack's answer, a dashed line in its colour at its rate: x from 0 to 1500
    // (the highest step achieved 1,350 req/s) over 80..930 pixels
    for (label, x, colour) in [
        (
            "HTTP/1.1: 600 req/s",
            80.0 + 600.0 / 1500.0 * 850.0,
            "#d9822b",
        ),
        (
            "gRPC: 1200 req/s",
            80.0 + 1200.0 / 1500.0 * 850.0,
            "#2b6cb0",
        ),
    ] {
        assert!(svg.contains(&format!(">{label}</text>")), "{label}: {svg}");
        assert!(
            svg.contains(&format!(
                r#"<line x1="{x:.1}" y1="110" x2="{x:.1}" y2="480" stroke="{colour}" stroke-width="1.5" stroke-dasharray="5 4"/>"#
            )),
            "{label}: {svg}"
        );
    }
    assert!(svg.contains(">1500</text>") && svg.contains(">250</text>"));
    // a marker at p50 and one at p99 of every step, confirmations included (squares); the 3
    // broken steps hollow
    let steps: usize = report
        .runs
        .iter()
        .map(|r| r.capacity.as_ref().map_or(0, |c| c.steps.len()))
        .sum();
    assert_eq!(steps, 14);
    assert_eq!(svg.matches("<title>").count(), 2 * steps);
    assert_eq!(svg.matches(r#"fill="white" stroke="#).count(), 2 * 3);
    assert_eq!(svg.matches(r#"width="8" height="8""#).count(), 2 * 2);
    assert!(svg.contains("HTTP/1.1 step 4 (rise): asked 800 req/s, achieved 700"));
    assert!(svg.contains("broke p99&lt;5ms: 9 ms"));
    // a p99 line (solid) and a p50 line (dashed) per stack, each in the legend
    assert_eq!(svg.matches("<polyline").count(), 4);
    for l in ["HTTP/1.1 p99", "HTTP/1.1 p50", "gRPC p99", "gRPC p50"] {
        assert!(svg.contains(&format!(">{l}</text>")), "{l}");
    }
}

#[test]
fn points_follow_the_rate_achieved_and_the_rate_asked_without_one() {
    let mut s = searches::step(Phase::Rise, 800.0, 700.0, (1.0, 2.0), &[]);
    assert_eq!(x_of(&s), 700.0);
    s.achieved_rps = None;
    assert_eq!(x_of(&s), 800.0);
    // the line goes by rate, not by the order the steps ran in: HTTP/1.1's bisection at 597
    // req/s comes before its rise to 700
    let report = searches::report();
    let searched = searched(&report);
    let order: Vec<usize> = searched[0].steps.iter().map(|(n, _)| *n).collect();
    assert_eq!(order, [1, 2, 3, 5, 7, 6, 4]);
    let p99 = &series(&searched)[0];
    assert!(!p99.dashed && p99.label == "HTTP/1.1 p99");
    assert_eq!(p99.points[3], (597.0, 3.1));
}

#[test]
fn a_wide_p99_span_gets_a_log_axis() {
    let mut report = searches::report();
    let c = report.runs[1].capacity.as_mut().expect("a search");
    c.steps[4].p99_ms = Some(400.0);
    let svg = capacity_curve(&report).expect("a chart");
    well_formed(&svg);
    assert!(svg.contains(">latency (ms, log scale)</text>"), "{svg}");
    // decades from the lowest p50 (0.15 ms) to the highest p99 (400 ms)
    for t in ["0.1", "1", "10", "100", "1000"] {
        assert!(svg.contains(&format!(">{t}</text>")), "{t}: {svg}");
    }
    assert_eq!(svg.matches("<title>").count(), 28);
}

#[test]
fn no_chart_without_a_search() {
    let mut report = searches::report();
    for r in &mut report.runs {
        r.capacity = None;
    }
    assert!(capacity_curve(&report).is_none());
    // a search without an answer or a latency still draws, and says so
    let c = report.runs[0].capacity.insert(searches_without_latency());
    assert!(c.answer_rps.is_none());
    let svg = capacity_curve(&report).expect("a chart");
    well_formed(&svg);
    assert!(svg.contains(">no step measured a latency</text>"), "{svg}");
    assert!(!svg.contains("req/s</text>"), "no answer line: {svg}");
}

fn searches_without_latency() -> Capacity {
    let mut s = searches::step(Phase::Rise, 100.0, 0.0, (0.0, 0.0), &["errors<0.1%: 100%"]);
    (s.achieved_rps, s.p50_ms, s.p99_ms) = (None, None, None);
    let mut c = searches::report().runs[0]
        .capacity
        .clone()
        .expect("a search");
    (c.answer_rps, c.broken_rps, c.ending, c.confirmation) =
        (None, Some(100.0), Ending::NoneMet, None);
    c.steps = vec![s];
    c
}
