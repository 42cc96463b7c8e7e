//! What a user writes after `--link`: the grammar of a link spec, read into a `LinkSpec` and
//! written back in its canonical form.
//!
//! A spec is a comma list of `key=value` parts (`rtt=40ms,loss=1%,rate=20mbit`); most keys take
//! `-up` (namespace → host, the client's sending side) or `-down` (host → namespace) to set one
//! direction; a key without either sets both. `none` alone is the spec of no link at all.

mod value;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use thiserror::Error;

pub use value::{MAX_DURATION, MAX_QUEUE_BYTES, MAX_RATE_BPS};

/// The seed of the loss and jitter draws when a spec names none: runs repeat.
pub const DEFAULT_SEED: u64 = 0x5EED_11AE_0000_0001;

/// The queue before a bottleneck when a spec gives a rate and no queue: 1000 packets.
pub const DEFAULT_QUEUE: Queue = Queue::Packets(1000);

/// An emulated path: each direction's conditions, whether jitter may reorder packets, and the
/// seed of the random draws.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkSpec {
    /// Namespace (client) → host (server).
    pub up: DirSpec,
    /// Host (server) → namespace (client).
    pub down: DirSpec,
    /// Whether jitter may release a packet before one offered earlier in its direction.
    pub reorder: bool,
    /// Whether the emulator waits for a release awake (busy polling) instead of asleep: the
    /// release times then hold to a few µs even where a timer's wake-up comes late (virtual
    /// machines), for a core kept busy while packets are held. Not a condition of the path.
    pub spin: bool,
    pub seed: u64,
}

/// One direction's conditions.
#[derive(Debug, Clone, PartialEq)]
pub struct DirSpec {
    /// One-way propagation delay.
    pub delay: Duration,
    /// Each packet's delay is `delay` plus a uniform draw in `[-jitter, +jitter]`, never below 0.
    pub jitter: Duration,
    /// Random (Bernoulli) loss probability per packet, in [0, 1].
    pub loss: f64,
    /// Gilbert–Elliott bursty loss, after the random loss.
    pub burst: Option<Burst>,
    /// The bottleneck's rate in bit/s; `None` is no bottleneck.
    pub rate_bps: Option<u64>,
    /// The drop-tail queue before the bottleneck (`DEFAULT_QUEUE` when there is no rate).
    pub queue: Queue,
}

/// Gilbert–Elliott loss: a good and a bad state, each with its loss probability.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Burst {
    /// Probability per packet of going from the good state to the bad.
    pub p: f64,
    /// Probability per packet of going from the bad state to the good.
    pub r: f64,
    /// Loss probability in the bad state (default 1).
    pub bad: f64,
    /// Loss probability in the good state (default 0).
    pub good: f64,
}

/// The limit of a drop-tail queue, counting the packet in transmission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queue {
    Packets(u32),
    Bytes(u64),
}

/// A spec that does not parse, with the part at fault.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SpecError {
    #[error("an empty link spec (write none for no link)")]
    Empty,
    #[error("\"{part}\": {problem}")]
    Part { part: String, problem: Problem },
}

/// What is wrong with a part of a spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum Problem {
    #[error("an empty part (two commas in a row, or one at an end)")]
    EmptyPart,
    #[error(
        "an unknown key; the keys are rtt, delay, jitter, loss, burst, rate, queue (each but rtt \
         also as KEY-up or KEY-down), reorder, spin, seed, and none alone"
    )]
    UnknownKey,
    #[error("a value is missing (KEY=VALUE)")]
    MissingValue,
    #[error("set twice (for the same direction)")]
    Repeated,
    #[error("none stands alone, with no value and no other part")]
    NoneAlone,
    #[error("rtt and delay together; give one of them")]
    RttAndDelay,
    #[error(
        "a duration is a number with ns, us, ms or s (or 0), a whole number of ns, at most 60s"
    )]
    Duration,
    #[error("a loss is a percentage from 0% to 100% (1%, 0.5%) or a fraction below 1 (0.01)")]
    Loss,
    #[error("a burst is p/r[/bad[/good]]: each a percentage from 0% to 100% or a fraction below 1")]
    Burst,
    #[error(
        "a rate is a number with bit, kbit, mbit, gbit, or bps, kbps, mbps, gbps (bytes/s), a \
         whole number of bit/s above 0 and at most 1000gbit"
    )]
    Rate,
    #[error(
        "a queue is a number of packets (1 or more) or a size with b, k or m (1500b, 256k), at \
         most 1048576m"
    )]
    Queue,
    #[error(
        "a queue needs a rate in the same direction (queue-up with rate-up, queue-down with \
         rate-down, queue with both)"
    )]
    QueueWithoutRate,
    #[error("reorder is a bare word, reorder=yes or reorder=no")]
    Reorder,
    #[error("spin is a bare word, spin=yes or spin=no")]
    Spin,
    #[error("a seed is a whole number from 0 to 18446744073709551615")]
    Seed,
}

impl Default for DirSpec {
    fn default() -> DirSpec {
        DirSpec {
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            loss: 0.0,
            burst: None,
            rate_bps: None,
            queue: DEFAULT_QUEUE,
        }
    }
}

impl DirSpec {
    /// No delay, jitter, loss, burst or rate: packets pass as they come.
    pub fn is_passthrough(&self) -> bool {
        self.delay.is_zero()
            && self.jitter.is_zero()
            && self.loss == 0.0
            && self.burst.is_none()
            && self.rate_bps.is_none()
    }
}

impl Default for LinkSpec {
    /// The spec `none`: no conditions either way, the default seed.
    fn default() -> LinkSpec {
        LinkSpec {
            up: DirSpec::default(),
            down: DirSpec::default(),
            reorder: false,
            spin: false,
            seed: DEFAULT_SEED,
        }
    }
}

impl LinkSpec {
    /// The round trip's propagation delay: up's delay plus down's (no jitter, no transmission).
    pub fn rtt(&self) -> Duration {
        self.up.delay.saturating_add(self.down.delay)
    }

    /// No delay, jitter, loss, burst or rate in either direction.
    pub fn is_passthrough(&self) -> bool {
        self.up.is_passthrough() && self.down.is_passthrough()
    }
}

/// Specs separated by `;` (`rtt=1ms;rtt=40ms,loss=1%;none`), for a sweep over links.
pub fn parse_list(s: &str) -> Result<Vec<LinkSpec>, SpecError> {
    s.split(';').map(str::parse).collect()
}

/// The fuzz target's check (fuzz/fuzz_targets/link_spec.rs), also run by this crate's tests on
/// the seeds in fuzz/corpus/link_spec: reading any text does not panic, and what reads as a
/// spec (alone or in a list) is written in a canonical form that reads back to the same spec
/// and is written the same again. Panics when that breaks.
pub fn fuzz_check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let round_trip = |spec: &LinkSpec| {
        let shown = spec.to_string();
        let back = shown.parse::<LinkSpec>();
        assert_eq!(back.as_ref(), Ok(spec), "{text:?} written as {shown:?}");
        if let Ok(back) = back {
            assert_eq!(
                back.to_string(),
                shown,
                "{text:?}: the canonical form moved"
            );
        }
    };
    if let Ok(spec) = text.parse::<LinkSpec>() {
        round_trip(&spec);
    }
    if let Ok(list) = parse_list(text) {
        list.iter().for_each(round_trip);
    }
}

/// The keys of a spec (without their direction).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Rtt,
    Delay,
    Jitter,
    Loss,
    Burst,
    Rate,
    Queue,
    Reorder,
    Spin,
    Seed,
}

/// The directions a part sets: `[up, down]`.
type Dirs = [bool; 2];

const BOTH: Dirs = [true, true];

/// Which fields the parts read so far have set, per direction (`[up, down]`), and the parts
/// that set a queue (checked against the rates at the end).
#[derive(Default)]
struct Seen<'a> {
    rtt: bool,
    delay: Dirs,
    jitter: Dirs,
    loss: Dirs,
    burst: Dirs,
    rate: Dirs,
    queue: [Option<&'a str>; 2],
    reorder: bool,
    spin: bool,
    seed: bool,
}

/// Marks `dirs` in `seen`; a direction already marked is a repeat.
fn mark(seen: &mut Dirs, dirs: Dirs) -> Result<(), Problem> {
    if (0..2).any(|i| dirs[i] && seen[i]) {
        return Err(Problem::Repeated);
    }
    (0..2).for_each(|i| seen[i] |= dirs[i]);
    Ok(())
}

/// `loss-up` → (Loss, up only); `rtt` → (Rtt, both); keys without directions take no suffix.
fn key(name: &str) -> Option<(Key, Dirs)> {
    let (base, dirs) = if let Some(base) = name.strip_suffix("-up") {
        (base, [true, false])
    } else if let Some(base) = name.strip_suffix("-down") {
        (base, [false, true])
    } else {
        (name, BOTH)
    };
    let k = match base {
        "rtt" => Key::Rtt,
        "delay" => Key::Delay,
        "jitter" => Key::Jitter,
        "loss" => Key::Loss,
        "burst" => Key::Burst,
        "rate" => Key::Rate,
        "queue" => Key::Queue,
        "reorder" => Key::Reorder,
        "spin" => Key::Spin,
        "seed" => Key::Seed,
        _ => return None,
    };
    let directional = !matches!(k, Key::Rtt | Key::Reorder | Key::Spin | Key::Seed);
    (directional || dirs == BOTH).then_some((k, dirs))
}

/// `p/r[/bad[/good]]`.
fn burst(s: &str) -> Option<Burst> {
    let mut it = s.split('/');
    let mut next = |default: Option<f64>| match it.next() {
        Some(t) => value::probability(t.trim()),
        None => default,
    };
    let b = Burst {
        p: next(None)?,
        r: next(None)?,
        bad: next(Some(1.0))?,
        good: next(Some(0.0))?,
    };
    it.next().is_none().then_some(b)
}

/// Applies one part (trimmed, not empty) to `spec`.
fn apply<'a>(spec: &mut LinkSpec, seen: &mut Seen<'a>, part: &'a str) -> Result<(), Problem> {
    let (name, val) = match part.split_once('=') {
        Some((k, v)) => (k.trim_end(), Some(v.trim_start())),
        None => (part, None),
    };
    if name == "none" {
        return Err(Problem::NoneAlone);
    }
    let (k, dirs) = key(name).ok_or(Problem::UnknownKey)?;
    let need = || val.ok_or(Problem::MissingValue);
    let each = |spec: &mut LinkSpec, f: &mut dyn FnMut(&mut DirSpec)| {
        if dirs[0] {
            f(&mut spec.up);
        }
        if dirs[1] {
            f(&mut spec.down);
        }
    };
    match k {
        Key::Reorder => {
            if seen.reorder {
                return Err(Problem::Repeated);
            }
            seen.reorder = true;
            spec.reorder = match val {
                None | Some("yes") => true,
                Some("no") => false,
                Some(_) => return Err(Problem::Reorder),
            };
        }
        Key::Spin => {
            if seen.spin {
                return Err(Problem::Repeated);
            }
            seen.spin = true;
            spec.spin = match val {
                None | Some("yes") => true,
                Some("no") => false,
                Some(_) => return Err(Problem::Spin),
            };
        }
        Key::Rtt => {
            if seen.delay != [false, false] {
                return Err(Problem::RttAndDelay);
            }
            if seen.rtt {
                return Err(Problem::Repeated);
            }
            seen.rtt = true;
            let rtt = value::duration(need()?).ok_or(Problem::Duration)?;
            spec.down.delay = rtt / 2;
            spec.up.delay = rtt - spec.down.delay;
        }
        Key::Delay => {
            if seen.rtt {
                return Err(Problem::RttAndDelay);
            }
            mark(&mut seen.delay, dirs)?;
            let d = value::duration(need()?).ok_or(Problem::Duration)?;
            each(spec, &mut |s| s.delay = d);
        }
        Key::Jitter => {
            mark(&mut seen.jitter, dirs)?;
            let d = value::duration(need()?).ok_or(Problem::Duration)?;
            each(spec, &mut |s| s.jitter = d);
        }
        Key::Loss => {
            mark(&mut seen.loss, dirs)?;
            let p = value::probability(need()?).ok_or(Problem::Loss)?;
            each(spec, &mut |s| s.loss = p);
        }
        Key::Burst => {
            mark(&mut seen.burst, dirs)?;
            let b = burst(need()?).ok_or(Problem::Burst)?;
            each(spec, &mut |s| s.burst = Some(b));
        }
        Key::Rate => {
            mark(&mut seen.rate, dirs)?;
            let bps = value::rate(need()?).ok_or(Problem::Rate)?;
            each(spec, &mut |s| s.rate_bps = Some(bps));
        }
        Key::Queue => {
            let mut marks = seen.queue.map(|q| q.is_some());
            mark(&mut marks, dirs)?;
            let val = need()?;
            let q = if val.bytes().all(|b| b.is_ascii_digit()) {
                value::packets(val).map(Queue::Packets)
            } else {
                value::bytes(val).map(Queue::Bytes)
            };
            let q = q.ok_or(Problem::Queue)?;
            each(spec, &mut |s| s.queue = q);
            (0..2)
                .filter(|&i| dirs[i])
                .for_each(|i| seen.queue[i] = Some(part));
        }
        Key::Seed => {
            if seen.seed {
                return Err(Problem::Repeated);
            }
            seen.seed = true;
            spec.seed = value::seed(need()?).ok_or(Problem::Seed)?;
        }
    }
    Ok(())
}

impl FromStr for LinkSpec {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<LinkSpec, SpecError> {
        let s = s.trim();
        if s.is_empty() {
            return Err(SpecError::Empty);
        }
        if s == "none" {
            return Ok(LinkSpec::default());
        }
        let at = |part: &str, problem| SpecError::Part {
            part: part.to_string(),
            problem,
        };
        let mut spec = LinkSpec::default();
        let mut seen = Seen::default();
        for part in s.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(at(s, Problem::EmptyPart));
            }
            apply(&mut spec, &mut seen, part).map_err(|problem| at(part, problem))?;
        }
        for (part, dir) in seen.queue.iter().zip([&spec.up, &spec.down]) {
            if let Some(part) = part
                && dir.rate_bps.is_none()
            {
                return Err(at(part, Problem::QueueWithoutRate));
            }
        }
        Ok(spec)
    }
}

/// Pushes `key=a` when both directions show the same text, else `key-up=a` and `key-down=b`
/// for the directions that show any (`None`: the default, not written).
fn push_pair(parts: &mut Vec<String>, key: &str, up: Option<String>, down: Option<String>) {
    match (up, down) {
        (Some(a), Some(b)) if a == b => parts.push(format!("{key}={a}")),
        (up, down) => {
            if let Some(a) = up {
                parts.push(format!("{key}-up={a}"));
            }
            if let Some(b) = down {
                parts.push(format!("{key}-down={b}"));
            }
        }
    }
}

/// `p/r`, then `/bad` when it is not 100% or a `good` follows, then `/good` when not 0%.
fn format_burst(b: &Burst) -> String {
    let mut s = format!(
        "{}/{}",
        value::format_probability(b.p),
        value::format_probability(b.r)
    );
    if b.bad != 1.0 || b.good != 0.0 {
        s.push('/');
        s.push_str(&value::format_probability(b.bad));
    }
    if b.good != 0.0 {
        s.push('/');
        s.push_str(&value::format_probability(b.good));
    }
    s
}

impl fmt::Display for LinkSpec {
    /// The canonical form: defaults left out, `rtt=` when the delays split it as `rtt=` does,
    /// one key for both directions when they agree, each value in its largest exact unit;
    /// `none` when nothing is left. Any spec within the grammar's bounds reads back from it
    /// as an equal spec.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        let dirs = [&self.up, &self.down];
        let each = |show: &dyn Fn(&DirSpec) -> Option<String>| (show(dirs[0]), show(dirs[1]));
        let (up, down) = (self.up.delay, self.down.delay);
        let rtt = up.saturating_add(down);
        let splits = up == down || down.checked_add(Duration::from_nanos(1)) == Some(up);
        if splits && !rtt.is_zero() && rtt <= MAX_DURATION {
            parts.push(format!("rtt={}", value::format_duration(rtt)));
        } else {
            let (a, b) = each(&|d| (!d.delay.is_zero()).then(|| value::format_duration(d.delay)));
            push_pair(&mut parts, "delay", a, b);
        }
        let (a, b) = each(&|d| (!d.jitter.is_zero()).then(|| value::format_duration(d.jitter)));
        push_pair(&mut parts, "jitter", a, b);
        if self.reorder {
            parts.push("reorder".to_string());
        }
        if self.spin {
            parts.push("spin".to_string());
        }
        let (a, b) = each(&|d| (d.loss != 0.0).then(|| value::format_probability(d.loss)));
        push_pair(&mut parts, "loss", a, b);
        let (a, b) = each(&|d| d.burst.as_ref().map(format_burst));
        push_pair(&mut parts, "burst", a, b);
        let (a, b) = each(&|d| d.rate_bps.map(value::format_rate));
        push_pair(&mut parts, "rate", a, b);
        // a queue is written only beside its rate: without one it is not a spec's to hold
        let (a, b) = each(&|d| match d.queue {
            _ if d.rate_bps.is_none() || d.queue == DEFAULT_QUEUE => None,
            Queue::Packets(n) => Some(n.to_string()),
            Queue::Bytes(n) => Some(value::format_bytes(n)),
        });
        push_pair(&mut parts, "queue", a, b);
        if self.seed != DEFAULT_SEED {
            parts.push(format!("seed={}", self.seed));
        }
        if parts.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&parts.join(","))
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
