//! etcd's sections: failover, request classes (txn-mixed), compaction, leases, verify.

use std::fmt::Write;

use crate::report::show::{self, num};
use crate::report::{ClassReport, CompactionReport, FailoverReport, LeaseReport, VerifyReport};

pub(super) fn render_failover(out: &mut String, f: &FailoverReport) {
    let _ = writeln!(out, "Failover (seconds from the start):");
    for e in &f.events {
        let _ = writeln!(out, "  {}", e.line());
    }
    if f.rediscovery_failures > 0 {
        let _ = writeln!(
            out,
            "  {} re-discoveries found nothing to move to (last: {})",
            f.rediscovery_failures,
            f.last_rediscovery_error.as_deref().unwrap_or("-")
        );
        for a in &f.last_answers {
            let _ = writeln!(out, "    {a}");
        }
    }
    let _ = writeln!(out);
}

/// txn-mixed: each class's figures (the summary above covers them all); `count`: the run's.
pub(super) fn render_classes(out: &mut String, classes: &[ClassReport], count: u64) {
    let _ = writeln!(out, "By class (the summary above covers them all):");
    let _ = writeln!(
        out,
        "  {:<6} {:>8} {:>8} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "class", "count", "ok", "failed", "req/s", "average", "p50", "p90", "p99"
    );
    let p = |c: &ClassReport, q: f64| {
        show::ms(crate::report::percentile_in(&c.latency_distribution, q))
    };
    for c in classes {
        let _ = writeln!(
            out,
            "  {:<6} {:>8} {:>8} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10}",
            c.class,
            c.count,
            c.ok,
            c.failed,
            num(c.requests_per_sec, 2),
            show::ms(c.average_ms),
            p(c, 50.0),
            p(c, 90.0),
            p(c, 99.0)
        );
    }
    let classed: u64 = classes.iter().map(|c| c.count).sum();
    if classed < count {
        let _ = writeln!(
            out,
            "  {} requests failed before they were made (no class: connect, late)",
            count - classed
        );
    }
    let _ = writeln!(out);
}

/// `--compact-interval`: the compactor's requests beside the load.
pub(in crate::report) fn render_compaction(out: &mut String, c: &CompactionReport) {
    let _ = writeln!(
        out,
        "Compaction: every {:.3} s to (current revision - {}): {} requests, {} ok, {} failed, {} skipped{}",
        c.interval_s,
        c.index_delta,
        c.requests,
        c.ok,
        c.failed,
        c.skipped,
        c.last_revision
            .map_or_else(String::new, |r| format!("; last compacted at revision {r}"))
    );
    if let Some(e) = &c.last_error {
        let _ = writeln!(out, "  last error: {e}");
    }
    let _ = writeln!(out);
}

/// lease-keepalive: the clients' leases, granted before the run and revoked after it.
pub(super) fn render_leases(out: &mut String, l: &LeaseReport) {
    let _ = writeln!(
        out,
        "Leases: {} granted before the run (TTL {} s, outside the figures), {} revoked after it{}{}",
        l.granted,
        l.ttl_s,
        l.revoked,
        if l.gone > 0 {
            format!(", {} already gone", l.gone)
        } else {
            String::new()
        },
        if l.revoke_failed > 0 {
            format!(", {} left to expire", l.revoke_failed)
        } else {
            String::new()
        }
    );
    if let Some(e) = &l.revoke_error {
        let _ = writeln!(out, "  revoking: {e}");
    }
    let _ = writeln!(out);
}

/// `--verify`: the acknowledged writes looked up, and the lost ones.
pub(super) fn render_verify(out: &mut String, v: &VerifyReport) {
    let _ = writeln!(
        out,
        "Verify: {} acknowledged writes looked up at their revisions (via {}): {} lost",
        v.checked, v.via, v.lost
    );
    if v.retried > 0 {
        let _ = writeln!(
            out,
            "  {} lookups asked again (an election's error, or a member lost or silent)",
            v.retried
        );
    }
    for l in &v.lost_examples {
        let _ = writeln!(
            out,
            "  lost: key {} acknowledged at revision {}, mod revision there {}",
            l.key_index,
            l.revision,
            l.found.map_or("none".to_string(), |f| f.to_string())
        );
    }
    let _ = writeln!(out);
}
