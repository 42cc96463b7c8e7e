//! Latency distributions: exact moments beside an HDR histogram, and the per-second timeline.

use std::time::Duration;

use hdrhistogram::Histogram;

/// Longest latency the histogram tracks exactly (longer ones saturate): one hour, in ns.
const HIST_MAX_NS: u64 = 3_600_000_000_000;

/// Latency of successful requests: an HDR histogram (ns, 3 significant digits) plus exact
/// count, sum, sum of squares, min and max, so mean and stddev carry no histogram rounding.
#[derive(Debug, Clone)]
pub struct Latencies {
    pub hist: Histogram<u64>,
    pub count: u64,
    pub sum_ns: u128,
    pub sum_sq_ns: u128,
    pub min_ns: u64,
    pub max_ns: u64,
}

impl Default for Latencies {
    fn default() -> Self {
        Latencies {
            // Invariant: the bounds are constants that satisfy hdrhistogram's preconditions.
            hist: Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("valid histogram bounds"),
            count: 0,
            sum_ns: 0,
            sum_sq_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
        }
    }
}

impl Latencies {
    pub fn record(&mut self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1);
        self.hist.saturating_record(ns);
        self.count += 1;
        self.sum_ns += u128::from(ns);
        self.sum_sq_ns += u128::from(ns) * u128::from(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn merge(&mut self, other: &Latencies) {
        // Both histograms share bounds, so add cannot fail.
        self.hist.add(&other.hist).expect("same histogram bounds");
        self.count += other.count;
        self.sum_ns += other.sum_ns;
        self.sum_sq_ns += other.sum_sq_ns;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        self.sum_ns as f64 / self.count as f64
    }

    /// Population standard deviation.
    pub fn stddev_ns(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let n = self.count as f64;
        let mean = self.sum_ns as f64 / n;
        (self.sum_sq_ns as f64 / n - mean * mean).max(0.0).sqrt()
    }

    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        self.hist.value_at_quantile(q)
    }
}

/// Most timeline buckets kept: past this, neighbouring buckets are merged (the width doubles), so
/// a long run's timeline stays bounded in memory.
const TIMELINE_MAX_BUCKETS: usize = 600;

/// Latencies a timeline bucket tracks (µs; longer ones saturate): 100 s.
const TIMELINE_MAX_US: u64 = 100_000_000;

/// One timeline bucket: outcomes completed in it and their latencies (µs, 2 significant digits).
#[derive(Debug, Clone)]
pub struct Bucket {
    pub ok: u64,
    pub failed: u64,
    pub hist: Histogram<u32>,
}

impl Default for Bucket {
    fn default() -> Self {
        Bucket {
            ok: 0,
            failed: 0,
            // Invariant: constant bounds that satisfy hdrhistogram's preconditions.
            hist: Histogram::new_with_bounds(1, TIMELINE_MAX_US, 2).expect("valid bounds"),
        }
    }
}

impl Bucket {
    fn add(&mut self, o: &Bucket) {
        self.ok += o.ok;
        self.failed += o.failed;
        // Same bounds on both sides: add cannot fail.
        self.hist.add(&o.hist).expect("same histogram bounds");
    }
}

/// Outcomes by completion time: buckets of `width_s` seconds from the start of the measured
/// window (1 s until the run outgrows `TIMELINE_MAX_BUCKETS`).
#[derive(Debug, Clone)]
pub struct Timeline {
    pub width_s: u64,
    pub buckets: Vec<Bucket>,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline {
            width_s: 1,
            buckets: Vec::new(),
        }
    }
}

impl Timeline {
    pub(super) fn bucket(&mut self, offset: Duration) -> &mut Bucket {
        let mut i = (offset.as_secs() / self.width_s) as usize;
        while i >= TIMELINE_MAX_BUCKETS {
            self.coarsen();
            i = (offset.as_secs() / self.width_s) as usize;
        }
        if self.buckets.len() <= i {
            self.buckets.resize_with(i + 1, Bucket::default);
        }
        &mut self.buckets[i]
    }

    /// Merges neighbouring buckets: twice the width, half the buckets.
    fn coarsen(&mut self) {
        let old = std::mem::take(&mut self.buckets);
        let mut it = old.into_iter();
        while let Some(mut a) = it.next() {
            if let Some(b) = it.next() {
                a.add(&b);
            }
            self.buckets.push(a);
        }
        self.width_s *= 2;
    }

    pub fn merge(&mut self, mut other: Timeline) {
        while self.width_s < other.width_s {
            self.coarsen();
        }
        while other.width_s < self.width_s {
            other.coarsen();
        }
        if self.buckets.len() < other.buckets.len() {
            self.buckets
                .resize_with(other.buckets.len(), Bucket::default);
        }
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            a.add(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_timelines_coarsen_and_merge() {
        let mut a = Timeline::default();
        for s in 0..1300u64 {
            a.bucket(Duration::from_secs(s)).ok += 1;
        }
        // 1300 s do not fit 600 one-second buckets: 4-second buckets, every one counted
        assert_eq!(a.width_s, 4);
        assert!(a.buckets.len() <= TIMELINE_MAX_BUCKETS);
        assert_eq!(a.buckets.iter().map(|b| b.ok).sum::<u64>(), 1300);
        let mut b = Timeline::default();
        b.bucket(Duration::from_secs(5)).failed += 1;
        a.merge(b);
        assert_eq!(a.width_s, 4);
        assert_eq!(a.buckets[1].failed, 1);
        assert_eq!(a.buckets[1].ok, 4);
    }

    #[test]
    fn exact_mean_and_stddev() {
        let mut l = Latencies::default();
        for us in [100u64, 200, 300, 400] {
            l.record(Duration::from_micros(us));
        }
        assert_eq!(l.count, 4);
        assert_eq!(l.mean_ns(), 250_000.0);
        // population stddev of 100,200,300,400 µs = 111.803 µs
        assert!((l.stddev_ns() - 111_803.398).abs() < 1.0);
        assert_eq!(l.min_ns, 100_000);
        assert_eq!(l.max_ns, 400_000);
        let p50 = l.quantile_ns(0.5) as f64;
        assert!((p50 - 200_000.0).abs() / 200_000.0 < 0.001);
    }
}
