//! `--client-stages`: which clients send when. Client `id` (of all threads) is active while
//! the stage level is at least `id + 1`; a client outside its stretch waits between requests,
//! never inside one.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::config::Staged;

use super::INTERRUPTED;
use super::worker::Worker;

/// A paused client wakes at least this often to notice an interrupt.
const WAKE_EVERY: Duration = Duration::from_millis(100);

/// One client's place in the ramp: it may send until `open_until` without asking again.
pub(super) struct Gate {
    id: usize,
    open_until: Instant,
}

/// What a client's gate says before its next request.
pub(super) enum Admit {
    Go,
    /// inactive until then (its HTTP/1.1 connection closes meanwhile)
    Wait(Instant),
    /// not active again in this run
    Never,
}

impl Gate {
    /// The gate of client `id`, None without `--client-stages`.
    pub(super) fn new(w: &Worker, id: usize) -> Option<Gate> {
        matches!(w.ctx.staged, Some(Staged::Clients(_))).then(|| Gate {
            id,
            open_until: w.warmup_end - w.ctx.warmup,
        })
    }

    /// Whether client `id` may send now.
    pub(super) fn admit(&mut self, w: &Worker) -> Admit {
        let now = Instant::now();
        if now < self.open_until {
            return Admit::Go;
        }
        let Some(Staged::Clients(st)) = &w.ctx.staged else {
            return Admit::Go;
        };
        // warmup runs at the level the first stage starts from
        if now < w.warmup_end && st.start_level() >= self.id as f64 + 1.0 {
            self.open_until = w.warmup_end;
            return Admit::Go;
        }
        let t = now.saturating_duration_since(w.warmup_end).as_secs_f64();
        match st.active(self.id, t) {
            None => Admit::Never,
            Some((a, b)) => {
                let from = w.warmup_end + Duration::from_secs_f64(a);
                if from <= now {
                    self.open_until = w.warmup_end + Duration::from_secs_f64(b);
                    Admit::Go
                } else {
                    Admit::Wait(from)
                }
            }
        }
    }
}

/// Sleeps until `t`, the run's deadline or an interrupt, whichever comes first.
pub(super) async fn pause(w: &Worker, t: Instant) {
    let t = w.deadline.map_or(t, |d| d.min(t));
    while !INTERRUPTED.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= t {
            return;
        }
        tokio::time::sleep((t - now).min(WAKE_EVERY)).await;
    }
}
