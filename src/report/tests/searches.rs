//! Two stacks' capacity searches on one report, for the tests of the charts and the page; and
//! a check that an SVG document is well-formed XML.

use super::runs::etcd_put_config;
use super::*;
use crate::report::capacity::{Capacity, Ending, Phase, Spread, Step};

/// A step at `rate` that achieved `achieved` req/s: met unless `broke` names what it broke.
pub(in crate::report) fn step(
    phase: Phase,
    rate: f64,
    achieved: f64,
    (p50, p99): (f64, f64),
    broke: &[&str],
) -> Step {
    Step {
        phase,
        rate,
        achieved_rps: Some(achieved),
        requests: (achieved * 5.0) as u64,
        errors: 0,
        settle_requests: rate as u64,
        p50_ms: Some(p50),
        p99_ms: Some(p99),
        client_cpu_us_per_request: Some(20.0),
        server_cpu_us_per_request: Some(10.0),
        client_busy: Some(0.2),
        overdue_share: Some(0.0),
        queued_share: Some(0.0),
        client_bound: false,
        met: broke.is_empty(),
        broke: broke.iter().map(|b| b.to_string()).collect(),
        interrupted: false,
        retry: false,
    }
}

/// A search that converged on `answer` below `broken`, confirmed once.
fn search(steps: Vec<Step>, answer: f64, broken: f64) -> Capacity {
    let confirm = steps.iter().filter(|s| s.phase == Phase::Confirm);
    let p99 = confirm.clone().filter_map(|s| s.p99_ms);
    let achieved = confirm.clone().filter_map(|s| s.achieved_rps);
    Capacity {
        objectives: vec!["p99<5ms".into(), "errors<0.1%".into()],
        start_rate: 100.0,
        precision: 0.05,
        answer_rps: Some(answer),
        broken_rps: Some(broken),
        ending: Ending::Converged,
        confirmation: Some(Spread {
            runs: confirm.clone().count(),
            met: confirm.filter(|s| s.met).count(),
            achieved_rps_min: achieved.clone().reduce(f64::min),
            achieved_rps_max: achieved.reduce(f64::max),
            p99_ms_min: p99.clone().reduce(f64::min),
            p99_ms_max: p99.reduce(f64::max),
        }),
        requests: steps.iter().map(|s| s.requests).sum(),
        elapsed_s: 42.0,
        steps,
    }
}

/// HTTP/1.1 (7 steps, 2 broken, answer 600 req/s) and gRPC (7 steps, 1 broken, answer 1200),
/// each with one confirmation.
pub(in crate::report) fn report() -> Report {
    let cfg = etcd_put_config();
    let mut r = Report::new(
        &cfg,
        &cfg.endpoints,
        &[],
        &[run(Proto::Http), run(Proto::Grpc)],
        false,
    );
    let late = "p99<5ms: 9 ms";
    let http = search(
        vec![
            step(Phase::Rise, 100.0, 99.8, (0.2, 0.5), &[]),
            step(Phase::Rise, 200.0, 199.5, (0.25, 0.7), &[]),
            step(Phase::Rise, 400.0, 398.0, (0.3, 1.2), &[]),
            step(Phase::Rise, 800.0, 700.0, (2.0, 9.0), &[late]),
            step(Phase::Bisect, 600.0, 597.0, (0.5, 3.1), &[]),
            step(Phase::Bisect, 700.0, 650.0, (1.5, 7.0), &[late]),
            step(Phase::Confirm, 600.0, 598.0, (0.5, 3.3), &[]),
        ],
        600.0,
        700.0,
    );
    let grpc = search(
        vec![
            step(Phase::Rise, 100.0, 100.0, (0.15, 0.4), &[]),
            step(Phase::Rise, 200.0, 200.0, (0.15, 0.45), &[]),
            step(Phase::Rise, 400.0, 399.0, (0.2, 0.6), &[]),
            step(Phase::Rise, 800.0, 798.0, (0.3, 1.0), &[]),
            step(Phase::Rise, 1600.0, 1350.0, (3.0, 12.0), &[late]),
            step(Phase::Bisect, 1200.0, 1195.0, (0.6, 2.5), &[]),
            step(Phase::Confirm, 1200.0, 1198.0, (0.6, 2.6), &[]),
        ],
        1200.0,
        1600.0,
    );
    r.attach_capacity(vec![http, grpc]);
    r
}

/// Panics unless `xml` is one well-formed element: every tag closed in order, attribute
/// quotes paired, no bare `<` or `&` in text, and no script.
#[track_caller]
pub(in crate::report) fn well_formed(xml: &str) {
    assert!(!xml.contains("<script"), "a script");
    let mut open: Vec<&str> = Vec::new();
    let (mut rest, mut roots) = (xml, 0);
    loop {
        let (text, after) = match rest.find('<') {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => (rest, None),
        };
        let mut t = text;
        while let Some(i) = t.find('&') {
            t = &t[i..];
            let ok = ["&amp;", "&lt;", "&gt;", "&quot;"]
                .iter()
                .any(|e| t.starts_with(e));
            assert!(ok, "a bare & at {:?}", &t[..t.len().min(20)]);
            t = &t[1..];
        }
        let Some(after) = after else { break };
        let end = after.find('>').expect("a tag that ends");
        let tag = &after[..end];
        assert_eq!(tag.matches('"').count() % 2, 0, "quotes in <{tag}>");
        assert!(!tag.contains('<'), "a < inside <{tag}>");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                open.pop(),
                Some(name.trim()),
                "</{name}> closes another element"
            );
        } else {
            let name = tag
                .split(|c: char| c.is_whitespace() || c == '/')
                .next()
                .unwrap_or("");
            assert!(!name.is_empty(), "a tag without a name: <{tag}>");
            if open.is_empty() {
                roots += 1;
            }
            if !tag.ends_with('/') {
                open.push(name);
            }
        }
        rest = &after[end + 1..];
    }
    assert!(open.is_empty(), "left open: {open:?}");
    assert_eq!(roots, 1, "one root element");
}

#[test]
fn the_well_formed_check_finds_what_is_broken() {
    well_formed(r#"<svg a="1"><g><text>a &amp; b</text><line/></g></svg>"#);
    for bad in [
        "<svg><g></svg>",
        "<svg><text>a & b</text></svg>",
        r#"<svg a="1><line/></svg>"#,
        "<svg/><svg/>",
        "<svg><script>x</script></svg>",
    ] {
        let caught = std::panic::catch_unwind(|| well_formed(bad));
        assert!(caught.is_err(), "{bad}");
    }
}
