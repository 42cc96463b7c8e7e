//! `--stages` and `--client-stages`: a target (requests per second, or clients in flight) that
//! moves piecewise linearly over the run, as k6's ramping executors and ghz's line schedule.
//!
//! `10s:1000,30s:5000,10s:0`: each stage ramps linearly from the previous stage's target (0
//! before the first) to its own over its duration; `0s:RATE` is a step. Times here are seconds
//! from the start of the measured window (warmup comes before it, at `start_level`).

use std::time::Duration;

/// One stage as given: ramp to `target` over `duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    pub duration: Duration,
    pub target: f64,
}

/// One piece of the schedule: from `from` to `to` over `[start, start + len)`, with `before`
/// the integral of the level up to `start` (sends scheduled before it, in open loop).
#[derive(Debug, Clone, Copy)]
struct Piece {
    start: f64,
    len: f64,
    from: f64,
    to: f64,
    before: f64,
}

impl Piece {
    fn end(&self) -> f64 {
        self.start + self.len
    }

    /// The level `t` seconds into the piece.
    fn level(&self, t: f64) -> f64 {
        if self.len <= 0.0 {
            return self.to;
        }
        self.from + (self.to - self.from) * (t / self.len).clamp(0.0, 1.0)
    }

    /// The integral of the level over the whole piece.
    fn area(&self) -> f64 {
        (self.from + self.to) / 2.0 * self.len
    }

    /// The time into the piece at which the integral reaches `x` (0 ≤ x ≤ area).
    fn time_of(&self, x: f64) -> f64 {
        if x <= 0.0 {
            return 0.0;
        }
        // level(τ) = from + a·2τ; the integral from·τ + a·τ² = x, solved in the form that stays
        // exact when a is 0 or negative (a ramp down)
        let a = (self.to - self.from) / (2.0 * self.len);
        let d = (self.from * self.from + 4.0 * a * x).max(0.0);
        let denom = self.from + d.sqrt();
        if denom <= 0.0 {
            return self.len;
        }
        (2.0 * x / denom).min(self.len)
    }
}

/// Why a `--stages` / `--client-stages` list is not one: the line to print, naming the flag
/// and the list.
#[derive(Debug, thiserror::Error)]
pub enum StagesError {
    #[error("{flag} {list:?}: stage {stage:?} {why}")]
    Stage {
        flag: String,
        list: String,
        stage: String,
        why: StageFault,
    },
    #[error("{flag} {list:?}: the stages last 0s; give at least one a positive duration")]
    NoLength { flag: String, list: String },
    #[error("{flag} {list:?}: every target is 0")]
    AllZero { flag: String, list: String },
}

/// What is wrong with one stage of a list.
#[derive(Debug, thiserror::Error)]
pub enum StageFault {
    #[error("is not DURATION:TARGET (e.g. 10s:1000)")]
    NotAPair,
    #[error("has a negative duration")]
    NegativeDuration,
    #[error("{0}")]
    Duration(super::ValueError),
    #[error("has a target that is not a number")]
    NotANumber,
    /// the target is outside `0..=max`
    #[error("has a target outside 0..={0}")]
    OutOfRange(f64),
    #[error("has a client count that is not a whole number")]
    NotWhole,
}

/// A validated stage list.
#[derive(Debug, Clone, PartialEq)]
pub struct Stages {
    pub stages: Vec<Stage>,
}

impl Stages {
    /// Parses `DURATION:TARGET,...` for `flag` (named in the errors); targets in `0..=max`,
    /// whole numbers when `whole` (clients).
    pub fn parse(flag: &str, s: &str, max: f64, whole: bool) -> Result<Stages, StagesError> {
        let mut stages = Vec::new();
        for part in s.split(',') {
            let part = part.trim();
            let bad = |why: StageFault| StagesError::Stage {
                flag: flag.to_string(),
                list: s.to_string(),
                stage: part.to_string(),
                why,
            };
            let Some((d, t)) = part.split_once(':') else {
                return Err(bad(StageFault::NotAPair));
            };
            if d.trim_start().starts_with('-') {
                return Err(bad(StageFault::NegativeDuration));
            }
            let duration = super::parse_duration(d).map_err(|e| bad(StageFault::Duration(e)))?;
            let target: f64 = t.trim().parse().map_err(|_| bad(StageFault::NotANumber))?;
            if !target.is_finite() || !(0.0..=max).contains(&target) {
                return Err(bad(StageFault::OutOfRange(max)));
            }
            if whole && target.fract() != 0.0 {
                return Err(bad(StageFault::NotWhole));
            }
            stages.push(Stage { duration, target });
        }
        let st = Stages { stages };
        if st.total().is_zero() {
            return Err(StagesError::NoLength {
                flag: flag.to_string(),
                list: s.to_string(),
            });
        }
        if st.peak() <= 0.0 {
            return Err(StagesError::AllZero {
                flag: flag.to_string(),
                list: s.to_string(),
            });
        }
        Ok(st)
    }

    fn pieces(&self) -> impl Iterator<Item = (usize, Piece)> + '_ {
        let (mut start, mut level, mut before) = (0.0f64, 0.0f64, 0.0f64);
        self.stages.iter().enumerate().map(move |(i, s)| {
            let p = Piece {
                start,
                len: s.duration.as_secs_f64(),
                from: level,
                to: s.target,
                before,
            };
            start = p.end();
            level = s.target;
            before += p.area();
            (i, p)
        })
    }

    /// How long the stages last together: the measured window.
    pub fn total(&self) -> Duration {
        self.stages.iter().map(|s| s.duration).sum()
    }

    /// The highest target.
    pub fn peak(&self) -> f64 {
        self.stages.iter().map(|s| s.target).fold(0.0, f64::max)
    }

    /// The level the schedule starts at, after the steps (`0s:`) that open it: what warmup runs at.
    pub fn start_level(&self) -> f64 {
        self.level_at(0.0)
    }

    /// The level at `t` seconds (the last target after the end).
    pub fn level_at(&self, t: f64) -> f64 {
        let mut last = 0.0;
        for (_, p) in self.pieces() {
            if t < p.end() {
                return p.level(t - p.start);
            }
            last = p.to;
        }
        last
    }

    /// The integral of the level from 0 to `t` (open loop: sends scheduled before `t`).
    pub fn count_until(&self, t: f64) -> f64 {
        let mut total = 0.0;
        for (_, p) in self.pieces() {
            if t < p.end() {
                let tau = (t - p.start).max(0.0);
                return p.before + (p.from + p.level(tau)) / 2.0 * tau;
            }
            total = p.before + p.area();
        }
        total
    }

    /// The integral over the whole schedule: the sends of an open-loop run.
    pub fn count(&self) -> f64 {
        self.count_until(f64::INFINITY)
    }

    /// The time at which the integral reaches `k`: when open-loop send `k` (0, 1, 2, ...) is
    /// due; None when the schedule ends first.
    pub fn time_of_count(&self, k: f64) -> Option<f64> {
        for (_, p) in self.pieces() {
            let area = p.area();
            if k < p.before + area && p.len > 0.0 {
                return Some(p.start + p.time_of(k - p.before));
            }
        }
        None
    }

    /// Closed loop, for client `id` (active while the level is at least `id + 1`): the first
    /// stretch `[from, until)` at or after `t` in which it is active, `until` capped at the
    /// end; None when it is not active again.
    pub fn active(&self, id: usize, t: f64) -> Option<(f64, f64)> {
        let need = id as f64 + 1.0;
        let mut run: Option<(f64, f64)> = None;
        for (_, p) in self.pieces() {
            if p.len <= 0.0 || p.end() <= t {
                continue;
            }
            // within a piece the level is linear: the part at or above `need` is one interval
            let (a, b) = above(&p, need);
            let a = a.max(t);
            match &mut run {
                None if a < b => run = Some((a, b)),
                None => {}
                // contiguous with the stretch so far: it goes on
                Some((_, end)) if a < b && (a - *end).abs() < 1e-9 => *end = b,
                Some(_) => break,
            }
        }
        run
    }

    /// The offsets at which each stage ends, in seconds from the start of the window.
    pub fn ends(&self) -> Vec<f64> {
        self.pieces().map(|(_, p)| p.end()).collect()
    }

    /// The stage covering `t` (the last one after the end). Zero-length stages (steps) cover
    /// nothing.
    pub fn index_at(&self, t: f64) -> usize {
        let mut last = 0;
        for (i, p) in self.pieces() {
            if p.len <= 0.0 {
                continue;
            }
            last = i;
            if t < p.end() {
                return i;
            }
        }
        last
    }

    /// Stage `i` as given, `10s:1000`.
    pub fn label(&self, i: usize) -> String {
        let s = self.stages[i];
        format!("{}:{}", fmt_secs(s.duration), s.target)
    }

    /// The level stage `i` starts from (the previous target, 0 before the first).
    pub fn from_level(&self, i: usize) -> f64 {
        if i == 0 {
            0.0
        } else {
            self.stages[i - 1].target
        }
    }
}

/// The part of piece `p` where its level is at least `need`, as absolute times `[a, b)`
/// (empty when a ≥ b).
fn above(p: &Piece, need: f64) -> (f64, f64) {
    let (s, e) = (p.start, p.end());
    if p.from >= need && p.to >= need {
        return (s, e);
    }
    if p.from < need && p.to < need {
        return (e, e);
    }
    // the level crosses `need` once
    let cross = s + p.len * (need - p.from) / (p.to - p.from);
    if p.to > p.from {
        (cross, e)
    } else {
        (s, cross)
    }
}

fn fmt_secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}s")
    } else {
        format!("{}ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(s: &str) -> Stages {
        Stages::parse("--stages", s, 1e7, false).unwrap()
    }

    #[test]
    fn ramps_steps_and_holds() {
        let s = st("10s:1000,30s:5000,10s:0");
        assert_eq!(s.total(), Duration::from_secs(50));
        assert_eq!(s.level_at(0.0), 0.0);
        assert_eq!(s.level_at(5.0), 500.0);
        assert_eq!(s.level_at(25.0), 3000.0);
        assert_eq!(s.level_at(45.0), 2500.0);
        // sends: 5,000 + 90,000 + 25,000
        assert!((s.count() - 120_000.0).abs() < 1e-6);
        assert!((s.count_until(10.0) - 5000.0).abs() < 1e-6);
        let step = st("0s:100,2s:100");
        assert_eq!(step.start_level(), 100.0);
        assert!((step.count() - 200.0).abs() < 1e-9);
        assert_eq!(step.index_at(1.0), 1);
        assert_eq!(step.label(0), "0s:100");
    }

    #[test]
    fn send_times_invert_the_integral() {
        let s = st("2s:1000,1s:1000,2s:0");
        let n = s.count().round() as u64;
        assert_eq!(n, 3000);
        let mut last = -1.0;
        for k in 0..n {
            let t = s.time_of_count(k as f64).unwrap();
            assert!(t >= last, "send {k} at {t} before {last}");
            assert!((s.count_until(t) - k as f64).abs() < 1e-6, "send {k}");
            last = t;
        }
        assert!(s.time_of_count(n as f64).is_none());
        // a ramp from 0 sends its first quarter in the first half
        let q = s.time_of_count(250.0).unwrap();
        assert!((q - 1.0).abs() < 1e-9, "{q}");
    }

    #[test]
    fn clients_come_and_go_with_the_level() {
        let s = Stages::parse("--client-stages", "10s:10,10s:10,10s:0", 1e6, true).unwrap();
        // client 4 needs level 5: from 5 s up to 25 s
        let (a, b) = s.active(4, 0.0).unwrap();
        assert!((a - 5.0).abs() < 1e-9 && (b - 25.0).abs() < 1e-9, "{a} {b}");
        // client 9 needs 10: from 10 s to 20 s
        let (a, b) = s.active(9, 0.0).unwrap();
        assert!(
            (a - 10.0).abs() < 1e-9 && (b - 20.0).abs() < 1e-9,
            "{a} {b}"
        );
        assert!(s.active(10, 0.0).is_none());
        assert!(s.active(4, 26.0).is_none());
        // already active: from now
        let (a, _) = s.active(0, 12.0).unwrap();
        assert_eq!(a, 12.0);
        // up, down, up again: two stretches
        let w = Stages::parse(
            "--client-stages",
            "0s:4,2s:4,0s:0,2s:0,0s:4,2s:4",
            1e6,
            true,
        )
        .unwrap();
        assert_eq!(w.active(3, 0.0), Some((0.0, 2.0)));
        assert_eq!(w.active(3, 2.0), Some((4.0, 6.0)));
    }

    #[test]
    fn bad_lists_name_the_flag_and_value() {
        for bad in [
            "", "10s", "x:10", "10s:x", "-1s:10", "10s:-5", "0s:10", "10s:0", "1s:inf",
        ] {
            let e = Stages::parse("--stages", bad, 1e7, false)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("--stages"), "{bad}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        assert!(Stages::parse("--client-stages", "1s:2.5", 1e6, true).is_err());
    }
}
