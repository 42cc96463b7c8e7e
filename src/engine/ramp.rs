//! `--client-stages`: which clients send when. Client `id` (of all threads) is active while
//! the stage level is at least `id + 1`; a client outside its stretch waits between requests,
//! never inside one.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::config::Staged;

use super::{Ctx, INTERRUPTED};

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
    /// The gate of client `id`, None without `--client-stages`; the measured window starts at
    /// `warmup_end`.
    pub(super) fn new(ctx: &Ctx, warmup_end: Instant, id: usize) -> Option<Gate> {
        matches!(ctx.staged, Some(Staged::Clients(_))).then(|| Gate {
            id,
            open_until: warmup_end - ctx.warmup,
        })
    }

    /// Whether client `id` may send now.
    pub(super) fn admit(&mut self, ctx: &Ctx, warmup_end: Instant) -> Admit {
        let now = Instant::now();
        if now < self.open_until {
            return Admit::Go;
        }
        let Some(Staged::Clients(st)) = &ctx.staged else {
            return Admit::Go;
        };
        // warmup runs at the level the first stage starts from
        if now < warmup_end && st.start_level() >= self.id as f64 + 1.0 {
            self.open_until = warmup_end;
            return Admit::Go;
        }
        let t = now.saturating_duration_since(warmup_end).as_secs_f64();
        match st.active(self.id, t) {
            None => Admit::Never,
            Some((a, b)) => {
                let from = warmup_end + Duration::from_secs_f64(a);
                if from <= now {
                    self.open_until = warmup_end + Duration::from_secs_f64(b);
                    Admit::Go
                } else {
                    Admit::Wait(from)
                }
            }
        }
    }
}

/// Sleeps until `t`, the run's `deadline` or an interrupt, whichever comes first.
pub(super) async fn pause(deadline: Option<Instant>, t: Instant) {
    let t = deadline.map_or(t, |d| d.min(t));
    while !INTERRUPTED.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= t {
            return;
        }
        tokio::time::sleep((t - now).min(WAKE_EVERY)).await;
    }
}
