//! `--svg FILE`: the stacks that ran (HTTP/1.1, HTTP/2, gRPC) side by side, one small panel per
//! figure (each has its own scale, so a 20,000 req/s bar never flattens a 0.3 ms one).

use std::fmt::Write;

mod capacity;

pub use capacity::capacity_curve;

/// One panel: a figure's name, its unit, and the value per stack, in the order of the chart's
/// stacks (None: not measured).
pub struct Panel {
    pub title: &'static str,
    pub unit: &'static str,
    pub values: Vec<Option<f64>>,
}

const W: f64 = 960.0;
/// Height of one row of panels.
const ROW_H: f64 = 240.0;
const COLS: usize = 3;
/// A stack's bar colour, by its title.
fn color(stack: &str) -> &'static str {
    match stack {
        "HTTP/1.1" => "#d9822b",
        "HTTP/2" => "#38a169",
        "HTTP/3" => "#805ad5",
        _ => "#2b6cb0",
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn label(v: f64) -> String {
    if v >= 1000.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// Writes an SVG document's opening, `H` pixels high, its white ground and its title.
#[allow(non_snake_case)]
fn open(s: &mut String, title: &str, H: f64) {
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="DejaVu Sans, Arial, sans-serif">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="20" y="30" font-size="18" font-weight="bold">{}</text>"#,
        esc(title)
    );
}

/// Writes the document's opening, its title and the stacks' legend for `panels` panels (in
/// rows of `COLS`, below the 70-pixel head); returns the document's height.
fn header(s: &mut String, title: &str, stacks: &[&str], panels: usize) -> f64 {
    let rows = panels.div_ceil(COLS).max(1);
    #[allow(non_snake_case)]
    let H = 70.0 + rows as f64 * ROW_H + 10.0;
    open(s, title, H);
    for (i, name) in stacks.iter().enumerate() {
        let x = 20.0 + i as f64 * 120.0;
        let _ = writeln!(
            s,
            r#"<rect x="{x}" y="42" width="14" height="14" fill="{}"/>"#,
            color(name)
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="54" font-size="13">{name}</text>"#,
            x + 20.0
        );
    }
    H
}

/// Renders the panels of `stacks` (their titles) as a standalone SVG document.
pub fn render(title: &str, stacks: &[&str], panels: &[Panel]) -> String {
    let (mut s, top) = (String::new(), 70.0);
    header(&mut s, title, stacks, panels.len());
    let pw = W / COLS as f64;
    let ph = ROW_H;
    for (i, p) in panels.iter().enumerate() {
        let (col, row) = (i % COLS, i / COLS);
        let x0 = col as f64 * pw + 20.0;
        let y0 = top + row as f64 * ph;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" font-size="14" font-weight="bold">{} ({})</text>"#,
            x0,
            y0 + 16.0,
            esc(p.title),
            esc(p.unit)
        );
        let base = y0 + ph - 30.0;
        let chart_h = ph - 80.0;
        let max = p.values.iter().flatten().fold(0.0, |m: f64, &v| m.max(v));
        let bars = stacks.len().max(1) as f64;
        let bar_w = (pw - 80.0) / bars - 10.0;
        let _ = writeln!(
            s,
            r##"<line x1="{x0}" y1="{base}" x2="{}" y2="{base}" stroke="#888" stroke-width="1"/>"##,
            x0 + pw - 60.0
        );
        for (j, (name, v)) in stacks.iter().zip(&p.values).enumerate() {
            let color = color(name);
            let bx = x0 + 20.0 + j as f64 * (bar_w + 20.0);
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" font-size="12" text-anchor="middle">{name}</text>"#,
                bx + bar_w / 2.0,
                base + 16.0
            );
            match v {
                Some(v) => {
                    let h = if max > 0.0 { (v / max) * chart_h } else { 0.0 };
                    let _ = writeln!(
                        s,
                        r#"<rect x="{bx}" y="{}" width="{bar_w}" height="{h}" fill="{color}"/>"#,
                        base - h
                    );
                    let _ = writeln!(
                        s,
                        r#"<text x="{}" y="{}" font-size="12" text-anchor="middle">{}</text>"#,
                        bx + bar_w / 2.0,
                        base - h - 5.0,
                        label(*v)
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        r##"<text x="{}" y="{}" font-size="12" text-anchor="middle" fill="#888">n/a</text>"##,
                        bx + bar_w / 2.0,
                        base - 5.0
                    );
                }
            }
        }
    }
    s.push_str("</svg>\n");
    s
}

/// One panel of a line chart: a figure's name, its unit, and per stack (the chart's order) the
/// value at each x (None: not measured).
pub struct LinePanel {
    pub title: &'static str,
    pub unit: &'static str,
    pub values: Vec<Vec<Option<f64>>>,
}

/// A power of ten as an axis tick: 0.01, 1, 100, 10k, 1M.
fn tick(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{}k", v / 1e3)
    } else if v >= 1.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.6}");
        s.trim_end_matches('0').to_string()
    }
}

/// A size in bytes as the axis labels it: 16, 1k, 256k, 1M.
fn size_label(b: f64) -> String {
    if b >= 1048576.0 && (b / 1048576.0).fract() == 0.0 {
        format!("{}M", b / 1048576.0)
    } else if b >= 1024.0 && (b / 1024.0).fract() == 0.0 {
        format!("{}k", b / 1024.0)
    } else {
        format!("{b}")
    }
}

/// Renders a line chart per panel: `xs` (sizes in bytes) on a log2 axis, each panel's values
/// on a log10 axis (they span orders of magnitude over payload sizes), one line per stack.
pub fn render_lines(
    title: &str,
    x_name: &str,
    xs: &[f64],
    stacks: &[&str],
    panels: &[LinePanel],
) -> String {
    let (mut s, top) = (String::new(), 70.0);
    #[allow(non_snake_case)]
    let H = header(&mut s, title, stacks, panels.len());
    let pw = W / COLS as f64;
    let ph = ROW_H;
    let lx: Vec<f64> = xs.iter().map(|x| x.max(1.0).log2()).collect();
    let (xmin, xmax) = lx
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    for (i, p) in panels.iter().enumerate() {
        let (col, row) = (i % COLS, i / COLS);
        let x0 = col as f64 * pw + 50.0;
        let y0 = top + row as f64 * ph;
        let (w, h) = (pw - 80.0, ph - 80.0);
        let base = y0 + 30.0 + h;
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{}" font-size="13" font-weight="bold">{} <tspan font-weight="normal" fill="#555">({})</tspan></text>"##,
            x0 - 30.0,
            y0 + 16.0,
            esc(p.title),
            esc(p.unit)
        );
        let all: Vec<f64> = p
            .values
            .iter()
            .flatten()
            .flatten()
            .copied()
            .filter(|v| *v > 0.0)
            .collect();
        let (lo, hi) = all
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        let _ = writeln!(
            s,
            r##"<line x1="{x0}" y1="{base}" x2="{}" y2="{base}" stroke="#888"/><line x1="{x0}" y1="{}" x2="{x0}" y2="{base}" stroke="#888"/>"##,
            x0 + w,
            base - h
        );
        let px = |lxv: f64| {
            if xmax > xmin {
                x0 + (lxv - xmin) / (xmax - xmin) * w
            } else {
                x0 + w / 2.0
            }
        };
        for (j, &x) in xs.iter().enumerate() {
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" font-size="11" text-anchor="middle">{}</text>"#,
                px(lx[j]),
                base + 14.0,
                size_label(x)
            );
        }
        if all.is_empty() {
            continue;
        }
        let (llo, lhi) = (
            lo.log10().floor(),
            hi.log10().ceil().max(lo.log10().floor() + 1.0),
        );
        let py = |v: f64| base - (v.log10() - llo) / (lhi - llo) * h;
        let mut decade = llo;
        while decade <= lhi {
            let v = 10f64.powf(decade);
            let _ = writeln!(
                s,
                r##"<text x="{}" y="{}" font-size="10" text-anchor="end" fill="#555">{}</text>"##,
                x0 - 4.0,
                py(v) + 3.0,
                tick(v)
            );
            decade += 1.0;
        }
        for (name, series) in stacks.iter().zip(&p.values) {
            let points: Vec<String> = series
                .iter()
                .enumerate()
                .filter_map(|(j, v)| {
                    v.filter(|v| *v > 0.0)
                        .map(|v| format!("{:.1},{:.1}", px(lx[j]), py(v)))
                })
                .collect();
            if points.is_empty() {
                continue;
            }
            let _ = writeln!(
                s,
                r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"/>"#,
                points.join(" "),
                color(name)
            );
            for pt in &points {
                let (cx, cy) = pt.split_once(',').unwrap_or(("0", "0"));
                let _ = writeln!(
                    s,
                    r#"<circle cx="{cx}" cy="{cy}" r="3" fill="{}"/>"#,
                    color(name)
                );
            }
        }
    }
    let _ = writeln!(
        s,
        r##"<text x="{}" y="{}" font-size="12" text-anchor="end" fill="#555">x: {} (log scale); y: log scale</text>"##,
        W - 20.0,
        H - 4.0,
        esc(x_name)
    );
    s.push_str("</svg>\n");
    s
}

/// One stack's line on a chart: its title (its colour), its points, dashed or not.
pub struct Series<'a> {
    pub stack: &'a str,
    /// drawn dashed (open loop: the uncorrected latency)
    pub dashed: bool,
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// A value as an axis label: up to 3 significant digits, no trailing zeros.
fn axis_label(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let s = if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A "nice" axis top at or above `max` (1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten)
/// and its tick step.
fn nice(max: f64) -> (f64, f64) {
    if max.is_nan() || max <= 0.0 || max.is_infinite() {
        return (1.0, 0.2);
    }
    let p = 10f64.powf(max.log10().floor());
    for (top, step) in [
        (1.0, 0.2),
        (1.5, 0.25),
        (2.0, 0.5),
        (2.5, 0.5),
        (3.0, 0.5),
        (4.0, 1.0),
        (5.0, 1.0),
        (6.0, 1.0),
        (8.0, 2.0),
        (10.0, 2.0),
    ] {
        if max <= top * p * 1.000_001 {
            return (top * p, step * p);
        }
    }
    (10.0 * p, 2.0 * p)
}

/// Line `i` of `n`, drawn in that order: the earlier ones wider, so a line that another covers
/// (two stacks on the same open-loop schedule) still shows at its edges.
fn stroke(i: usize, n: usize) -> f64 {
    2.0 + 1.5 * n.saturating_sub(i + 1).min(2) as f64
}

/// `se`'s line through `pts` ("x,y" each), in its stack's colour, `width` wide, dashed when
/// it is.
fn polyline(s: &mut String, pts: &[String], se: &Series<'_>, width: f64) {
    let _ = writeln!(
        s,
        r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="{width}"{}/>"#,
        pts.join(" "),
        color(se.stack),
        dash(se.dashed)
    );
}

fn dash(dashed: bool) -> &'static str {
    if dashed {
        r#" stroke-dasharray="6 4""#
    } else {
        ""
    }
}

/// The legend: one entry per series, from `x` along `y` (on to a second line past the width).
/// The horizontal grid lines and value ticks of a panel from `x0..x1` and `y0` (top) to `y1`
/// (bottom), scaled to the largest value of `series`; returns the axis' top value.
fn y_grid(
    s: &mut String,
    series: &[Series<'_>],
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
) -> f64 {
    let max = series
        .iter()
        .flat_map(|se| se.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let (ytop, step) = nice(max);
    let mut v = 0.0;
    while v <= ytop * 1.000_001 {
        let y = y1 - v / ytop * (y1 - y0);
        let _ = writeln!(
            s,
            r##"<line x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#e2e2e2"/><text x="{}" y="{:.1}" font-size="11" text-anchor="end" fill="#555">{}</text>"##,
            x0 - 6.0,
            y + 4.0,
            axis_label(v)
        );
        v += step;
    }
    ytop
}

fn legend(s: &mut String, series: &[Series<'_>], x: f64, y: f64) {
    let (mut at, mut y) = (x, y);
    for se in series {
        let width = 40.0 + 7.5 * se.label.chars().count() as f64;
        if at > x && at + width > W - 10.0 {
            at = x;
            y += 18.0;
        }
        let _ = writeln!(
            s,
            r#"<line x1="{at}" y1="{}" x2="{}" y2="{}" stroke="{}" stroke-width="3"{}/>"#,
            y - 4.0,
            at + 24.0,
            y - 4.0,
            color(se.stack),
            dash(se.dashed)
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{y}" font-size="13">{}</text>"#,
            at + 30.0,
            esc(&se.label)
        );
        at += width;
    }
}

/// The latency by percentile chart (HdrHistogram's plotter, wrk2 users' charts): x is the
/// percentile on a log scale of 1 / (1 - p), from 0 to `top` (99.999); y the latency in ms,
/// linear from 0. One line per series, each stack in its colour.
pub fn latency_percentiles(title: &str, top: f64, series: &[Series<'_>]) -> String {
    const H: f64 = 520.0;
    let (x0, x1, y0, y1) = (80.0, W - 30.0, 80.0, H - 60.0);
    let mut s = String::new();
    open(&mut s, title, H);
    legend(&mut s, series, 20.0, 58.0);
    let nines = (1.0 / (1.0 - top / 100.0)).log10();
    let px = |p: f64| {
        let p = p.clamp(0.0, top);
        x0 + (1.0 / (1.0 - p / 100.0)).log10() / nines * (x1 - x0)
    };
    // grid and ticks
    let ytop = y_grid(&mut s, series, (x0, x1), (y0, y1));
    let py = |v: f64| y1 - v / ytop * (y1 - y0);
    let mut nine = 0.0;
    while nine <= nines + 1e-9 {
        let p = 100.0 * (1.0 - 10f64.powf(-nine));
        let x = px(p);
        let name = match nine as usize {
            0 => "0%".to_string(),
            1 => "90%".to_string(),
            n => format!("99{}{}%", if n > 2 { "." } else { "" }, "9".repeat(n - 2)),
        };
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{y1}" stroke="#e2e2e2"/><text x="{x:.1}" y="{}" font-size="11" text-anchor="middle" fill="#555">{name}</text>"##,
            y1 + 16.0
        );
        nine += 1.0;
    }
    let _ = writeln!(
        s,
        r##"<line x1="{x0}" y1="{y1}" x2="{x1}" y2="{y1}" stroke="#888"/><line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="#888"/>"##
    );
    let _ = writeln!(
        s,
        r##"<text x="{}" y="{}" font-size="12" text-anchor="middle" fill="#555">percentile (log scale of 1 / (1 - p))</text>"##,
        (x0 + x1) / 2.0,
        H - 18.0
    );
    let _ = writeln!(
        s,
        r##"<text x="18" y="{}" font-size="12" fill="#555" transform="rotate(-90 18 {})" text-anchor="middle">latency (ms)</text>"##,
        (y0 + y1) / 2.0,
        (y0 + y1) / 2.0
    );
    for (i, se) in series.iter().enumerate() {
        if se.points.is_empty() {
            continue;
        }
        let pts: Vec<String> = se
            .points
            .iter()
            .map(|&(p, v)| format!("{:.1},{:.1}", px(p), py(v)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="{}"{}/>"#,
            pts.join(" "),
            color(se.stack),
            stroke(i, series.len()),
            dash(se.dashed)
        );
    }
    if series.iter().all(|se| se.points.is_empty()) {
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{}" font-size="14" text-anchor="middle" fill="#888">no successful request</text>"##,
            (x0 + x1) / 2.0,
            (y0 + y1) / 2.0
        );
    }
    s.push_str("</svg>\n");
    s
}

/// A span of the timeline to mark: a stage, its start and end (s) and its name.
pub struct Mark {
    pub start_s: f64,
    pub end_s: f64,
    pub name: String,
}

/// The timeline: requests/s (top) and p99 latency in ms (bottom) over the seconds of each
/// stack's measured window, every stack overlaid; stages as shaded spans with their names.
/// Each series' points are (t in s, value).
pub fn timeline(title: &str, rate: &[Series<'_>], p99: &[Series<'_>], marks: &[Mark]) -> String {
    const H: f64 = 620.0;
    let (x0, x1) = (80.0, W - 30.0);
    let panels = [
        (90.0, 320.0, "requests/s", rate),
        (370.0, 580.0, "p99 (ms)", p99),
    ];
    let tmax = rate
        .iter()
        .chain(p99)
        .flat_map(|se| se.points.iter().map(|p| p.0))
        .chain(marks.iter().map(|m| m.end_s))
        .fold(0.0, f64::max);
    let (ttop, tstep) = nice(tmax);
    let px = |t: f64| x0 + t / ttop * (x1 - x0);
    let mut s = String::new();
    open(&mut s, title, H);
    legend(&mut s, rate, 20.0, 58.0);
    for (py0, py1, name, series) in panels {
        // stages: alternate shading, a name at the top of each
        for (i, m) in marks.iter().enumerate() {
            let (a, b) = (px(m.start_s), px(m.end_s));
            if i % 2 == 0 {
                let _ = writeln!(
                    s,
                    r##"<rect x="{a:.1}" y="{py0}" width="{:.1}" height="{}" fill="#f3f0e6"/>"##,
                    (b - a).max(0.0),
                    py1 - py0
                );
            }
            let _ = writeln!(
                s,
                r##"<line x1="{a:.1}" y1="{py0}" x2="{a:.1}" y2="{py1}" stroke="#b59f5b" stroke-dasharray="3 3"/>"##
            );
            if py0 < 100.0 {
                let _ = writeln!(
                    s,
                    r##"<text x="{:.1}" y="{}" font-size="11" fill="#7a6a3a">{}</text>"##,
                    a + 3.0,
                    py0 + 12.0,
                    esc(&m.name)
                );
            }
        }
        let ytop = y_grid(&mut s, series, (x0, x1), (py0, py1));
        let py = |v: f64| py1 - v / ytop * (py1 - py0);
        let _ = writeln!(
            s,
            r##"<line x1="{x0}" y1="{py1}" x2="{x1}" y2="{py1}" stroke="#888"/><line x1="{x0}" y1="{py0}" x2="{x0}" y2="{py1}" stroke="#888"/>"##
        );
        let _ = writeln!(
            s,
            r##"<text x="18" y="{}" font-size="12" fill="#555" transform="rotate(-90 18 {})" text-anchor="middle">{name}</text>"##,
            (py0 + py1) / 2.0,
            (py0 + py1) / 2.0
        );
        let mut t = 0.0;
        while t <= ttop * 1.000_001 {
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{}" font-size="11" text-anchor="middle" fill="#555">{}</text>"##,
                px(t),
                py1 + 15.0,
                axis_label(t)
            );
            t += tstep;
        }
        for (i, se) in series.iter().enumerate() {
            let pts: Vec<String> = se
                .points
                .iter()
                .map(|&(t, v)| format!("{:.1},{:.1}", px(t), py(v)))
                .collect();
            if pts.is_empty() {
                continue;
            }
            polyline(&mut s, &pts, se, stroke(i, series.len()));
            for p in &pts {
                let (cx, cy) = p.split_once(',').unwrap_or(("0", "0"));
                let _ = writeln!(
                    s,
                    r#"<circle cx="{cx}" cy="{cy}" r="2.5" fill="{}"/>"#,
                    color(se.stack)
                );
            }
        }
    }
    let _ = writeln!(
        s,
        r##"<text x="{}" y="{}" font-size="12" text-anchor="middle" fill="#555">seconds from the start of each stack's measured window</text>"##,
        (x0 + x1) / 2.0,
        H - 8.0
    );
    s.push_str("</svg>\n");
    s
}

/// The latency by percentile chart of a report: every stack's spectrum, and in open loop its
/// uncorrected one dashed.
pub fn report_percentiles(r: &super::Report) -> String {
    let mut series = Vec::new();
    let open = r
        .runs
        .iter()
        .any(|run| !run.uncorrected_spectrum.is_empty());
    for run in &r.runs {
        let pts =
            |v: &[super::Percentile]| v.iter().map(|p| (p.percentile, p.latency_ms)).collect();
        series.push(Series {
            stack: run.title,
            dashed: false,
            label: run.title.to_string(),
            points: pts(&run.spectrum),
        });
        if !run.uncorrected_spectrum.is_empty() {
            series.push(Series {
                stack: run.title,
                dashed: true,
                label: format!("{} uncorrected", run.title),
                points: pts(&run.uncorrected_spectrum),
            });
        }
    }
    let title = if open {
        format!(
            "Latency by percentile, from the intended send (dashed: the actual): {}",
            r.workload
        )
    } else {
        format!("Latency by percentile: {}", r.workload)
    };
    latency_percentiles(&title, super::derive::SPECTRUM_TOP, &series)
}

/// The timeline chart of a report: requests/s and p99 per second of every stack's window, its
/// stages marked.
pub fn report_timeline(r: &super::Report) -> String {
    let mut rate = Vec::new();
    let mut p99 = Vec::new();
    for run in &r.runs {
        let total = run.summary.total_s;
        let mut rp = Vec::new();
        let mut lp = Vec::new();
        for b in &run.timeline {
            let (t, w) = (b.t_s as f64, b.width_s as f64);
            // the last bucket may be cut short by the window's end; a sliver of it (the last
            // responses after the final full second) says nothing about a rate
            let width = (total - t).clamp(0.0, w);
            if width < w / 4.0 {
                continue;
            }
            let mid = t + width / 2.0;
            rp.push((mid, (b.ok + b.errors) as f64 / width));
            if let Some(p99) = b.p99_ms {
                lp.push((mid, p99));
            }
        }
        rate.push(Series {
            stack: run.title,
            dashed: false,
            label: run.title.to_string(),
            points: rp,
        });
        p99.push(Series {
            stack: run.title,
            dashed: false,
            label: run.title.to_string(),
            points: lp,
        });
    }
    let marks: Vec<Mark> = r
        .runs
        .first()
        .and_then(|run| run.stages.as_ref())
        .map(|st| {
            st.iter()
                .map(|row| Mark {
                    start_s: row.start_s,
                    end_s: row.end_s,
                    name: format!("{} {}", row.stage, row.spec),
                })
                .collect()
        })
        .unwrap_or_default();
    timeline(&format!("Timeline: {}", r.workload), &rate, &p99, &marks)
}

#[cfg(test)]
mod tests;
