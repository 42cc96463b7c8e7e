//! The capacity search's choice of the next rate, from the verdicts so far (no IO, no clock).

use crate::report::capacity::{Ending, Phase};

/// The rates met and broken so far, and what bounds the search.
#[derive(Debug, Clone)]
pub(crate) struct Search {
    start: f64,
    precision: f64,
    /// the highest rate paced (`--rate`'s bound)
    ceiling: f64,
    /// the lowest rate worth a step (one that still sends enough requests to judge)
    floor: f64,
    /// the highest rate that met every objective
    met: Option<f64>,
    /// the lowest rate that broke one
    broken: Option<f64>,
}

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Next {
    Try(f64, Phase),
    Done(Ending),
}

impl Search {
    pub fn new(start: f64, precision: f64, floor: f64, ceiling: f64) -> Search {
        Search {
            start: start.clamp(floor, ceiling),
            precision,
            ceiling,
            floor,
            met: None,
            broken: None,
        }
    }

    /// The next rate to try: doubling from the start while every step meets; halving while
    /// none has; then the middle of the highest met and the lowest broken, until they are
    /// within the precision of the highest met.
    pub fn next(&self) -> Next {
        match (self.met, self.broken) {
            (None, None) => Next::Try(self.start, Phase::Rise),
            (Some(m), None) if m >= self.ceiling => Next::Done(Ending::RateCeiling),
            (Some(m), None) => Next::Try((m * 2.0).min(self.ceiling), Phase::Rise),
            (None, Some(b)) if b / 2.0 < self.floor => {
                if b > self.floor {
                    Next::Try(self.floor, Phase::Bisect)
                } else {
                    Next::Done(Ending::NoneMet)
                }
            }
            (None, Some(b)) => Next::Try(b / 2.0, Phase::Bisect),
            (Some(m), Some(b)) if b - m <= self.precision * m => Next::Done(Ending::Converged),
            (Some(m), Some(b)) => Next::Try((m + b) / 2.0, Phase::Bisect),
        }
    }

    /// Takes a step's verdict at `rate`.
    pub fn record(&mut self, rate: f64, met: bool) {
        if met {
            self.met = Some(self.met.map_or(rate, |m| m.max(rate)));
        } else {
            self.broken = Some(self.broken.map_or(rate, |b| b.min(rate)));
        }
    }

    /// The highest rate met, and the lowest broken.
    pub fn bounds(&self) -> (Option<f64>, Option<f64>) {
        (self.met, self.broken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The search against a target that meets every rate up to `capacity`.
    fn run(capacity: f64, start: f64, precision: f64) -> (Option<f64>, Ending, Vec<f64>) {
        let mut s = Search::new(start, precision, 2.0, 10_000_000.0);
        let mut tried = Vec::new();
        loop {
            match s.next() {
                Next::Try(rate, _) => {
                    assert!(tried.len() < 100, "no end: {tried:?}");
                    tried.push(rate);
                    s.record(rate, rate <= capacity);
                }
                Next::Done(e) => return (s.bounds().0, e, tried),
            }
        }
    }

    #[test]
    fn the_answer_lands_within_the_precision_below_the_capacity() {
        for capacity in [150.0, 2_000.0, 4_000.0, 33_333.0, 1_000_000.0] {
            for precision in [0.01, 0.05, 0.2] {
                let (answer, ending, tried) = run(capacity, 100.0, precision);
                let a = answer.unwrap();
                assert_eq!(ending, Ending::Converged, "{capacity} {precision}");
                assert!(
                    a <= capacity && a >= capacity / (1.0 + precision),
                    "{capacity} {precision}: {a} after {tried:?}"
                );
            }
        }
    }

    #[test]
    fn it_doubles_then_bisects() {
        let (_, _, tried) = run(2_000.0, 100.0, 0.05);
        assert_eq!(&tried[..6], &[100.0, 200.0, 400.0, 800.0, 1_600.0, 3_200.0]);
        assert_eq!(tried[6], 2_400.0);
        assert_eq!(tried[7], 2_000.0);
        // (2000 + 2400) / 2, then (2000 + 2200) / 2: 2,100 is within 5% of 2,000
        assert_eq!(&tried[8..], &[2_200.0, 2_100.0]);
    }

    #[test]
    fn a_start_above_the_capacity_halves_down() {
        let (answer, ending, tried) = run(300.0, 10_000.0, 0.05);
        assert_eq!(ending, Ending::Converged);
        assert!(answer.unwrap() <= 300.0 && answer.unwrap() >= 300.0 / 1.05);
        assert_eq!(
            &tried[..6],
            &[10_000.0, 5_000.0, 2_500.0, 1_250.0, 625.0, 312.5]
        );
    }

    #[test]
    fn nothing_met_ends_at_the_floor() {
        let (answer, ending, tried) = run(0.5, 100.0, 0.05);
        assert_eq!((answer, ending), (None, Ending::NoneMet));
        assert_eq!(tried.last(), Some(&2.0));
    }

    #[test]
    fn every_rate_met_ends_at_the_ceiling() {
        let mut s = Search::new(100.0, 0.05, 2.0, 1_000.0);
        let mut tried = Vec::new();
        while let Next::Try(rate, _) = s.next() {
            tried.push(rate);
            s.record(rate, true);
        }
        assert_eq!(s.next(), Next::Done(Ending::RateCeiling));
        assert_eq!(tried, [100.0, 200.0, 400.0, 800.0, 1_000.0]);
    }
}
