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

    /// The mean; None without a latency (nothing to average).
    pub fn mean_ns(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_ns as f64 / self.count as f64)
    }

    /// Population standard deviation; None without a latency.
    pub fn stddev_ns(&self) -> Option<f64> {
        let mean = self.mean_ns()?;
        let n = self.count as f64;
        Some((self.sum_sq_ns as f64 / n - mean * mean).max(0.0).sqrt())
    }

    /// Quantile `q`; None without a latency.
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        (self.count > 0).then(|| self.hist.value_at_quantile(q))
    }

    /// The exact extremes; None without a latency (not the u64::MAX the minimum starts from).
    pub fn fastest_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min_ns)
    }

    pub fn slowest_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max_ns)
    }
}

/// Most timeline slots kept: past this, neighbouring slots are merged (the width doubles), so
/// a long run's timeline stays bounded in memory.
const TIMELINE_MAX_SLOTS: usize = 600;

/// Latencies a timeline slot tracks (µs; longer ones saturate): 100 s.
const TIMELINE_MAX_US: u64 = 100_000_000;

/// One timeline slot: outcomes completed in it and their latencies (µs, 2 significant digits).
#[derive(Debug, Clone)]
pub struct TimeSlot {
    pub ok: u64,
    pub failed: u64,
    /// open loop: measured sends whose intended time fell in the slot (the schedule)
    pub sent: u64,
    pub hist: Histogram<u32>,
}

impl Default for TimeSlot {
    fn default() -> Self {
        TimeSlot {
            ok: 0,
            failed: 0,
            sent: 0,
            // Invariant: constant bounds that satisfy hdrhistogram's preconditions.
            hist: Histogram::new_with_bounds(1, TIMELINE_MAX_US, 2).expect("valid bounds"),
        }
    }
}

impl TimeSlot {
    /// A slot whose latencies keep 3 significant digits (a stage's, an interval's).
    pub fn precise() -> TimeSlot {
        TimeSlot {
            // Invariant: constant bounds that satisfy hdrhistogram's preconditions.
            hist: Histogram::new_with_bounds(1, TIMELINE_MAX_US, 3).expect("valid bounds"),
            ..TimeSlot::default()
        }
    }

    /// Records one successful request's latency.
    pub fn record(&mut self, latency: Duration) {
        self.ok += 1;
        self.hist.saturating_record(
            u64::try_from(latency.as_micros())
                .unwrap_or(u64::MAX)
                .max(1),
        );
    }

    /// Latency quantile `q` of the successful requests, in ms (None without any).
    pub fn quantile_ms(&self, q: f64) -> Option<f64> {
        (self.ok > 0).then(|| self.hist.value_at_quantile(q) as f64 / 1000.0)
    }

    /// Empties the slot, keeping its histogram's allocation.
    pub fn clear(&mut self) {
        self.ok = 0;
        self.failed = 0;
        self.sent = 0;
        self.hist.reset();
    }

    pub fn add(&mut self, o: &TimeSlot) {
        self.ok += o.ok;
        self.failed += o.failed;
        self.sent += o.sent;
        // Same bounds on both sides: add cannot fail.
        self.hist.add(&o.hist).expect("same histogram bounds");
    }
}

/// Outcomes by completion time: slots of `width_s` seconds from the start of the measured
/// window (1 s until the run outgrows `TIMELINE_MAX_SLOTS`).
#[derive(Debug, Clone)]
pub struct Timeline {
    pub width_s: u64,
    pub slots: Vec<TimeSlot>,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline {
            width_s: 1,
            slots: Vec::new(),
        }
    }
}

impl Timeline {
    pub(super) fn slot(&mut self, offset: Duration) -> &mut TimeSlot {
        let mut i = (offset.as_secs() / self.width_s) as usize;
        while i >= TIMELINE_MAX_SLOTS {
            self.coarsen();
            i = (offset.as_secs() / self.width_s) as usize;
        }
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, TimeSlot::default);
        }
        &mut self.slots[i]
    }

    /// Merges neighbouring slots: twice the width, half the slots.
    fn coarsen(&mut self) {
        let old = std::mem::take(&mut self.slots);
        let mut it = old.into_iter();
        while let Some(mut a) = it.next() {
            if let Some(b) = it.next() {
                a.add(&b);
            }
            self.slots.push(a);
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
        if self.slots.len() < other.slots.len() {
            self.slots.resize_with(other.slots.len(), TimeSlot::default);
        }
        for (a, b) in self.slots.iter_mut().zip(&other.slots) {
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
            a.slot(Duration::from_secs(s)).ok += 1;
        }
        // 1300 s do not fit 600 one-second slots: 4-second slots, every one counted
        assert_eq!(a.width_s, 4);
        assert!(a.slots.len() <= TIMELINE_MAX_SLOTS);
        assert_eq!(a.slots.iter().map(|b| b.ok).sum::<u64>(), 1300);
        let mut b = Timeline::default();
        b.slot(Duration::from_secs(5)).failed += 1;
        a.merge(b);
        assert_eq!(a.width_s, 4);
        assert_eq!(a.slots[1].failed, 1);
        assert_eq!(a.slots[1].ok, 4);
    }

    #[test]
    fn exact_mean_and_stddev() {
        let mut l = Latencies::default();
        for us in [100u64, 200, 300, 400] {
            l.record(Duration::from_micros(us));
        }
        assert_eq!(l.count, 4);
        assert_eq!(l.mean_ns(), Some(250_000.0));
        // population stddev of 100,200,300,400 µs = 111.803 µs
        assert!((l.stddev_ns().unwrap() - 111_803.398).abs() < 1.0);
        assert_eq!(
            (l.fastest_ns(), l.slowest_ns()),
            (Some(100_000), Some(400_000))
        );
        let p50 = l.quantile_ns(0.5).unwrap() as f64;
        assert!((p50 - 200_000.0).abs() / 200_000.0 < 0.001);
    }

    #[test]
    fn no_latency_has_no_figures() {
        let l = Latencies::default();
        assert_eq!((l.mean_ns(), l.stddev_ns()), (None, None));
        assert_eq!((l.fastest_ns(), l.slowest_ns()), (None, None));
        assert_eq!(l.quantile_ns(0.5), None);
        assert_eq!(TimeSlot::precise().quantile_ms(0.5), None);
    }
}
