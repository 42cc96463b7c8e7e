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

#[test]
fn axes_get_nice_tops() {
    assert_eq!(nice(0.83), (1.0, 0.2));
    assert_eq!(nice(1.7), (2.0, 0.5));
    assert_eq!(nice(2.2), (2.5, 0.5));
    assert_eq!(nice(3.0), (3.0, 0.5));
    assert_eq!(nice(37_000.0), (40_000.0, 10_000.0));
    assert_eq!(nice(0.0), (1.0, 0.2));
    assert_eq!(axis_label(0.25), "0.25");
    assert_eq!(axis_label(99.999), "100");
    assert_eq!(axis_label(12.5), "12.5");
}

#[test]
fn the_percentile_chart_puts_nines_on_a_log_axis() {
    let series = [
        Series {
            stack: "HTTP/1.1",
            dashed: false,
            label: "HTTP/1.1".into(),
            points: vec![(0.0, 0.1), (90.0, 0.2), (99.0, 0.4), (99.999, 2.0)],
        },
        Series {
            stack: "gRPC",
            dashed: true,
            label: "gRPC (uncorrected)".into(),
            points: vec![(0.0, 0.05), (99.999, 1.0)],
        },
    ];
    let svg = latency_percentiles("echo <1>", 99.999, &series);
    assert!(svg.contains("echo &lt;1&gt;"));
    // the x ticks: 0 %, 90 %, 99 %, 99.9 %, 99.99 %, 99.999 %
    for t in ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"] {
        assert!(svg.contains(&format!(">{t}</text>")), "{t}: {svg}");
    }
    // 90 % sits a fifth of the way along (1 nine of 5), 99.999 % at the right edge
    let (x0, x1) = (80.0, W - 30.0);
    let at = |f: f64| format!("{:.1},", x0 + f * (x1 - x0));
    assert!(svg.contains(&at(0.2)) && svg.contains(&at(1.0)), "{svg}");
    assert!(svg.contains("stroke-dasharray"));
    assert!(svg.contains("#d9822b") && svg.contains("#2b6cb0"));
    // y: 0 to 2 ms (the highest point) in steps of 0.5
    assert!(svg.contains(">2</text>") && svg.contains(">1.5</text>"));
    assert!(!svg.contains(">2.5</text>"));
}

#[test]
fn the_timeline_marks_stages() {
    let rate = [Series {
        stack: "gRPC",
        dashed: false,
        label: "gRPC".into(),
        points: vec![(0.5, 1000.0), (1.5, 3000.0), (2.5, 2000.0)],
    }];
    let p99 = [Series {
        stack: "gRPC",
        dashed: false,
        label: "gRPC".into(),
        points: vec![(0.5, 0.3), (1.5, 0.9), (2.5, 0.4)],
    }];
    let marks = [
        Mark {
            start_s: 0.0,
            end_s: 1.0,
            name: "1 1s:2000".into(),
        },
        Mark {
            start_s: 1.0,
            end_s: 3.0,
            name: "2 2s:0".into(),
        },
    ];
    let svg = timeline("t", &rate, &p99, &marks);
    assert!(svg.contains(">1 1s:2000</text>") && svg.contains(">2 2s:0</text>"));
    assert!(svg.contains(">requests/s</text>") && svg.contains(">p99 (ms)</text>"));
    // 3 points per panel
    assert_eq!(svg.matches("<circle").count(), 6);
    assert!(svg.trim_end().ends_with("</svg>"));
}
