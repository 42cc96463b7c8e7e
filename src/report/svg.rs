//! `--svg FILE`: the stacks that ran (HTTP/1.1, HTTP/2, gRPC) side by side, one small panel per
//! figure (each has its own scale, so a 20,000 req/s bar never flattens a 0.3 ms one).

use std::fmt::Write;

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

/// Writes the document's opening, its title and the stacks' legend for `panels` panels (in
/// rows of `COLS`, below the 70-pixel head); returns the document's height.
fn header(s: &mut String, title: &str, stacks: &[&str], panels: usize) -> f64 {
    let rows = panels.div_ceil(COLS).max(1);
    #[allow(non_snake_case)]
    let H = 70.0 + rows as f64 * ROW_H + 10.0;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_panel_and_escapes_text() {
        let panels = [
            Panel {
                title: "Requests/sec",
                unit: "1/s",
                values: vec![Some(9000.0), Some(12000.0), Some(20000.0)],
            },
            Panel {
                title: "p99 <latency>",
                unit: "ms",
                values: vec![Some(4.1), Some(3.0), None],
            },
        ];
        let svg = render("a & b", &["HTTP/1.1", "HTTP/2", "gRPC"], &panels);
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("a &amp; b"));
        assert!(svg.contains("p99 &lt;latency&gt;"));
        assert!(svg.contains(">20000<") && svg.contains(">9000<"));
        assert!(svg.contains(">n/a<"));
        // a legend entry and a bar colour per stack
        assert!(
            svg.contains(">HTTP/2</text>") && svg.contains("#38a169"),
            "{svg}"
        );
    }
}
