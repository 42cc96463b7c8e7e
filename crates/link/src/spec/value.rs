//! The values of a link spec, read and written: durations, probabilities, rates and sizes.
//!
//! Every reader answers `None` for text it does not take (the caller names the part and says
//! what a value of its key looks like); every writer gives the shortest text its reader turns
//! back into the same value.

use std::time::Duration;

/// The longest duration a spec takes (a delay, a jitter, an rtt).
pub const MAX_DURATION: Duration = Duration::from_secs(60);

/// The fastest rate a spec takes: 1000 gbit/s.
pub const MAX_RATE_BPS: u64 = 1_000_000_000_000;

/// The largest byte queue a spec takes: 1 TiB (a bound only so sizes stay far from overflow).
pub const MAX_QUEUE_BYTES: u64 = 1 << 40;

/// A plain decimal as written, `digits / 10^scale`: no sign, no exponent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Decimal {
    digits: u128,
    scale: u32,
}

/// Digits, optionally a point and at least one more digit (`1`, `0.5`, `1.25`): the only
/// number syntax of a spec (no sign, exponent, `inf` or `nan`).
fn is_plain_number(s: &str) -> bool {
    let (int, frac) = s.split_once('.').unwrap_or((s, "0"));
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    digits(int) && digits(frac)
}

/// The exact value of a plain number with at most 30 significant digits (more than any value
/// of a spec needs).
fn decimal(s: &str) -> Option<Decimal> {
    if !is_plain_number(s) {
        return None;
    }
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    let (int, frac) = (int.trim_start_matches('0'), frac.trim_end_matches('0'));
    if int.len() + frac.len() > 30 {
        return None;
    }
    let digits = int
        .bytes()
        .chain(frac.bytes())
        .fold(0u128, |acc, b| acc * 10 + u128::from(b - b'0'));
    Some(Decimal {
        digits,
        scale: frac.len() as u32,
    })
}

/// `dec × mult` when that is a whole number that fits in a u64.
fn whole(dec: Decimal, mult: u128) -> Option<u64> {
    let product = dec.digits.checked_mul(mult)?;
    let div = 10u128.pow(dec.scale);
    if !product.is_multiple_of(div) {
        return None;
    }
    u64::try_from(product / div).ok()
}

/// Splits `40ms` into `("40", "ms")`: the number is the leading digits and points.
fn split_unit(s: &str) -> (&str, &str) {
    let at = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    s.split_at(at)
}

/// `0`, `250us` (or `250µs`), `40ms`, `1.5ms`, `2s`, `100ns`: a whole number of nanoseconds,
/// at most 60 s. A bare number must be 0.
pub fn duration(s: &str) -> Option<Duration> {
    let (num, unit) = split_unit(s);
    let dec = decimal(num)?;
    let ns_per: u128 = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "" if dec.digits == 0 => 1,
        _ => return None,
    };
    let d = Duration::from_nanos(whole(dec, ns_per)?);
    (d <= MAX_DURATION).then_some(d)
}

/// A duration in the largest unit that holds it exactly: `0`, `2s`, `1500us`, `7ns`.
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        return "0".to_string();
    }
    for (per, unit) in [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")] {
        if ns.is_multiple_of(per) {
            return format!("{}{unit}", ns / per);
        }
    }
    format!("{ns}ns")
}

/// A probability: a percentage `1%`, `0.5%`, `100%`, or a fraction below 1 (`0.01`, `0`). A
/// bare `1` is refused: it would read as 1% to some and as 100% to others. `N%` is read as the
/// f64 nearest to N/100 (the text with its exponent moved, not N read then divided), so `0.5%`
/// and `0.005` are the same value.
pub fn probability(s: &str) -> Option<f64> {
    let p = match s.strip_suffix('%') {
        Some(num) if is_plain_number(num) => format!("{num}e-2").parse::<f64>().ok()?,
        Some(_) => return None,
        None if is_plain_number(s) => {
            let p = s.parse::<f64>().ok()?;
            if p >= 1.0 {
                return None;
            }
            p
        }
        None => return None,
    };
    (0.0..=1.0).contains(&p).then_some(p)
}

/// A probability as the shortest percentage that reads back to exactly `p` (`0.5%`, `1%`,
/// `12.5%`): the shortest digits of `p` (Rust's `{:e}`) with the point moved two places.
pub fn format_probability(p: f64) -> String {
    if p == 0.0 {
        return "0%".to_string();
    }
    let sci = format!("{p:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(|&c| c != '.').collect();
    // the mantissa has one digit before its point; ×100 moves the point two more
    let point = exp.parse::<i64>().unwrap_or(0) + 3;
    let len = digits.len() as i64;
    let text = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point >= len {
        format!("{digits}{}", "0".repeat((point - len) as usize))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    };
    format!("{text}%")
}

/// A rate in bit/s: a number with `bit`, `kbit`, `mbit`, `gbit` (decimal), or `bps`, `kbps`,
/// `mbps`, `gbps` (bytes per second, ×8, as tc reads them), or bare (bit/s). A whole number of
/// bit/s above 0 and at most 1000 gbit.
pub fn rate(s: &str) -> Option<u64> {
    let (num, unit) = split_unit(s);
    let bits_per: u128 = match unit {
        "" | "bit" => 1,
        "kbit" => 1_000,
        "mbit" => 1_000_000,
        "gbit" => 1_000_000_000,
        "bps" => 8,
        "kbps" => 8_000,
        "mbps" => 8_000_000,
        "gbps" => 8_000_000_000,
        _ => return None,
    };
    let bps = whole(decimal(num)?, bits_per)?;
    (1..=MAX_RATE_BPS).contains(&bps).then_some(bps)
}

/// A rate in the largest bit unit that holds it exactly: `20mbit`, `1gbit`, `1234bit`.
pub fn format_rate(bps: u64) -> String {
    for (per, unit) in [
        (1_000_000_000, "gbit"),
        (1_000_000, "mbit"),
        (1_000, "kbit"),
    ] {
        if bps != 0 && bps.is_multiple_of(per) {
            return format!("{}{unit}", bps / per);
        }
    }
    format!("{bps}bit")
}

/// A count of packets: a whole number from 1 to `u32::MAX`.
pub fn packets(s: &str) -> Option<u32> {
    if !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u32>().ok().filter(|&n| n >= 1)
}

/// A size in bytes with its unit: `1500b`, `256k` (×1024), `1.5m` (×1024²); a whole number of
/// bytes from 1 to 1 TiB.
pub fn bytes(s: &str) -> Option<u64> {
    let (num, unit) = split_unit(s);
    let per: u128 = match unit {
        "b" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        _ => return None,
    };
    let n = whole(decimal(num)?, per)?;
    (1..=MAX_QUEUE_BYTES).contains(&n).then_some(n)
}

/// A size in the largest unit that holds it exactly: `256k`, `1m`, `1500b`.
pub fn format_bytes(n: u64) -> String {
    for (per, unit) in [(1 << 20, "m"), (1 << 10, "k")] {
        if n != 0 && n.is_multiple_of(per) {
            return format!("{}{unit}", n / per);
        }
    }
    format!("{n}b")
}

/// A seed: a whole number that fits in a u64, digits only.
pub fn seed(s: &str) -> Option<u64> {
    if !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u64>().ok()
}
