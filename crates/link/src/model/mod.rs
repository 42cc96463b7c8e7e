//! One direction of an emulated path, sans IO: packets and the clock in, a release time or a
//! drop out.
//!
//! Time is `u64` nanoseconds on the caller's clock (any epoch). Per packet, in this order:
//! random loss, Gilbert–Elliott loss, the bottleneck's drop-tail queue (a packet's transmission
//! ends `len × 8 / rate` after the previous one's, or after it arrived if the line was idle),
//! then propagation (delay plus jitter); without reorder a packet is never released before the
//! one offered before it.

use std::collections::VecDeque;

use crate::rng::Rng;
use crate::spec::{Burst, DirSpec, LinkSpec, Queue};

/// What becomes of a packet offered to a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Hand the packet on at `at` (ns, the caller's clock).
    Release {
        at: u64,
    },
    Drop(Cause),
}

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cause {
    /// Random (Bernoulli) loss.
    Random,
    /// Gilbert–Elliott loss.
    Burst,
    /// The queue before the bottleneck was full.
    Queue,
}

impl Cause {
    pub fn name(self) -> &'static str {
        match self {
            Cause::Random => "random",
            Cause::Burst => "burst",
            Cause::Queue => "queue",
        }
    }
}

/// What a path did: packets and bytes offered, delivered (given a release time) and dropped
/// by cause, and the most its queue held at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathCounts {
    pub packets: u64,
    pub bytes: u64,
    pub delivered: u64,
    pub delivered_bytes: u64,
    pub dropped_random: u64,
    pub dropped_burst: u64,
    pub dropped_queue: u64,
    /// The most packets in the queue at once, the one in transmission included.
    pub queue_peak_packets: u64,
    /// The most bytes in the queue at once, the one in transmission included.
    pub queue_peak_bytes: u64,
}

/// The bottleneck: a rate and a drop-tail FIFO of the packets whose transmission has not ended.
#[derive(Debug, Clone)]
struct Bottleneck {
    bps: u64,
    limit: Queue,
    /// (transmission end, length) of each packet admitted and not yet sent, oldest first.
    fifo: VecDeque<(u64, u64)>,
    queued_bytes: u64,
    /// When the last admitted packet's transmission ends.
    busy_until: u64,
    /// The last length's transmission time (lengths repeat: one division saved).
    last_len: u64,
    last_tx: u64,
}

impl Bottleneck {
    fn new(bps: u64, limit: Queue) -> Bottleneck {
        Bottleneck {
            bps: bps.max(1),
            limit,
            fifo: VecDeque::new(),
            queued_bytes: 0,
            busy_until: 0,
            last_len: 0,
            last_tx: 0,
        }
    }

    /// `len × 8 × 10⁹ / bps` ns, rounded up.
    fn transmission(&mut self, len: u64) -> u64 {
        if len != self.last_len {
            self.last_len = len;
            self.last_tx = if len < 1 << 31 {
                // len × 8e9 < 2^64 here: the cheaper u64 division gives the same quotient
                (len * 8_000_000_000).div_ceil(self.bps)
            } else {
                let tx = (u128::from(len) * 8_000_000_000).div_ceil(u128::from(self.bps));
                u64::try_from(tx).unwrap_or(u64::MAX)
            };
        }
        self.last_tx
    }

    /// Admits a packet of `len` bytes at `now` and answers when its transmission ends, or
    /// `None` when the queue is full (and then changes nothing).
    fn admit(&mut self, now: u64, len: u64, counts: &mut PathCounts) -> Option<u64> {
        while let Some(&(end, l)) = self.fifo.front() {
            if end > now {
                break;
            }
            self.fifo.pop_front();
            self.queued_bytes = self.queued_bytes.saturating_sub(l);
        }
        let full = match self.limit {
            Queue::Packets(n) => self.fifo.len() as u64 + 1 > u64::from(n),
            Queue::Bytes(b) => self.queued_bytes.saturating_add(len) > b,
        };
        if full {
            return None;
        }
        let end = now
            .max(self.busy_until)
            .saturating_add(self.transmission(len));
        self.busy_until = end;
        self.fifo.push_back((end, len));
        self.queued_bytes = self.queued_bytes.saturating_add(len);
        counts.queue_peak_packets = counts.queue_peak_packets.max(self.fifo.len() as u64);
        counts.queue_peak_bytes = counts.queue_peak_bytes.max(self.queued_bytes);
        Some(end)
    }
}

/// One direction of a path.
#[derive(Debug, Clone)]
pub struct Path {
    delay: u64,
    jitter: u64,
    loss: f64,
    burst: Option<Burst>,
    /// Gilbert–Elliott's state: true in the bad state.
    bad: bool,
    bottleneck: Option<Bottleneck>,
    reorder: bool,
    rng: Rng,
    last_now: u64,
    last_release: u64,
    counts: PathCounts,
}

/// Nanoseconds of a duration, saturating.
fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Path {
    /// A path of `spec`'s conditions, its draws from `seed`; with `reorder`, jitter may release
    /// a packet before an earlier one. It starts idle, in Gilbert–Elliott's good state.
    pub fn new(spec: &DirSpec, reorder: bool, seed: u64) -> Path {
        Path {
            delay: nanos(spec.delay),
            jitter: nanos(spec.jitter),
            loss: spec.loss,
            burst: spec.burst,
            bad: false,
            bottleneck: spec.rate_bps.map(|bps| Bottleneck::new(bps, spec.queue)),
            reorder,
            rng: Rng::new(seed),
            last_now: 0,
            last_release: 0,
            counts: PathCounts::default(),
        }
    }

    /// A packet of `len` bytes arrives at `now` (ns; a `now` before the last one counts as the
    /// last one): when to release it, or why it is dropped.
    pub fn offer(&mut self, now: u64, len: usize) -> Verdict {
        let now = now.max(self.last_now);
        self.last_now = now;
        let len = len as u64;
        self.counts.packets += 1;
        self.counts.bytes = self.counts.bytes.saturating_add(len);

        let random = self.loss > 0.0 && self.rng.unit() < self.loss;
        // the chain moves once per packet offered, lost at random or not, so its bursts are
        // counted in packets on the wire
        let burst = match self.burst {
            Some(b) => {
                let flip = if self.bad { b.r } else { b.p };
                if flip > 0.0 && self.rng.unit() < flip {
                    self.bad = !self.bad;
                }
                let p = if self.bad { b.bad } else { b.good };
                !random && p > 0.0 && self.rng.unit() < p
            }
            None => false,
        };
        if random {
            self.counts.dropped_random += 1;
            return Verdict::Drop(Cause::Random);
        }
        if burst {
            self.counts.dropped_burst += 1;
            return Verdict::Drop(Cause::Burst);
        }

        let sent = match &mut self.bottleneck {
            Some(b) => match b.admit(now, len, &mut self.counts) {
                Some(end) => end,
                None => {
                    self.counts.dropped_queue += 1;
                    return Verdict::Drop(Cause::Queue);
                }
            },
            None => now,
        };
        let delay = if self.jitter > 0 {
            let j = self.jitter.min(u64::MAX / 4);
            // uniform in [delay - j, delay + j], clamped at 0
            let draw = self.rng.below(2 * j + 1);
            self.delay.saturating_add(draw).saturating_sub(j)
        } else {
            self.delay
        };
        let mut at = sent.saturating_add(delay);
        if !self.reorder {
            at = at.max(self.last_release);
        }
        self.last_release = at;
        self.counts.delivered += 1;
        self.counts.delivered_bytes = self.counts.delivered_bytes.saturating_add(len);
        Verdict::Release { at }
    }

    pub fn counts(&self) -> &PathCounts {
        &self.counts
    }
}

/// What the down direction's seed is xored with: the two directions draw apart.
pub const DOWN_SEED_XOR: u64 = 0xD0E5_F00D_0000_D0E5;

/// Both directions of a path.
#[derive(Debug, Clone)]
pub struct Link {
    /// Namespace (client) → host (server).
    pub up: Path,
    /// Host (server) → namespace (client).
    pub down: Path,
}

impl Link {
    /// The two paths of `spec`: up draws from `spec.seed`, down from `spec.seed ^ DOWN_SEED_XOR`.
    pub fn new(spec: &LinkSpec) -> Link {
        Link {
            up: Path::new(&spec.up, spec.reorder, spec.seed),
            down: Path::new(&spec.down, spec.reorder, spec.seed ^ DOWN_SEED_XOR),
        }
    }
}

#[cfg(test)]
mod tests;
