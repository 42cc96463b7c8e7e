//! Wall-clock instants as the command line and the reports write them: RFC 3339 and Unix seconds.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Why a `--start-at` is not a time: the line to print, quoting it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    #[error("{0:?}: out of range")]
    OutOfRange(String),
    #[error("{0:?}: expected Unix seconds (1764671400) or RFC 3339")]
    NotUnix(String),
    /// `why`: what is wrong with it as RFC 3339
    #[error(
        "{text:?}: {why} (expected RFC 3339, 2025-12-02T10:30:00Z, or Unix seconds, 1764671400)"
    )]
    NotRfc3339 { text: String, why: &'static str },
}

/// The furthest `--start-at` may lie ahead: a time further away is most likely milliseconds
/// given for seconds, or a typo, and would leave the agents waiting for days.
pub const MAX_START_AHEAD: Duration = Duration::from_secs(24 * 3600);

/// Parses `--start-at`: RFC 3339 (`2025-12-02T10:30:00Z`, `2025-12-02T11:30:00.5+01:00`; a space
/// for the `T` is accepted) or Unix seconds (`1764671400`, `1764671400.25`).
pub fn parse_time(s: &str) -> Result<SystemTime, TimeError> {
    let s = s.trim();
    let unix = if s.bytes().all(|b| b.is_ascii_digit() || b == b'.') && !s.is_empty() {
        parse_unix(s)?
    } else {
        parse_rfc3339(s)?
    };
    UNIX_EPOCH
        .checked_add(unix)
        .ok_or_else(|| TimeError::OutOfRange(s.to_string()))
}

/// Unix seconds, with up to 9 decimals.
fn parse_unix(s: &str) -> Result<Duration, TimeError> {
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    let bad = || TimeError::NotUnix(s.to_string());
    if whole.is_empty() || frac.contains('.') || frac.len() > 9 {
        return Err(bad());
    }
    let secs: u64 = whole.parse().map_err(|_| bad())?;
    Ok(Duration::new(secs, nanos_of(frac).ok_or_else(bad)?))
}

/// The nanoseconds a decimal fraction's digits stand for (`"25"` → 250,000,000).
fn nanos_of(frac: &str) -> Option<u32> {
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut n: u32 = 0;
    for i in 0..9 {
        let d = frac.as_bytes().get(i).map_or(0, |b| u32::from(b - b'0'));
        n = n * 10 + d;
    }
    Some(n)
}

/// `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`, as seconds since the Unix epoch.
fn parse_rfc3339(s: &str) -> Result<Duration, TimeError> {
    let bad = |why: &'static str| TimeError::NotRfc3339 {
        text: s.to_string(),
        why,
    };
    let b = s.as_bytes();
    if b.len() < 20 {
        return Err(bad("too short"));
    }
    let num = |from: usize, len: usize| -> Option<u32> {
        let part = s.get(from..from + len)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let seps = [(4, b'-'), (7, b'-'), (13, b':'), (16, b':')];
    if seps.iter().any(|&(i, c)| b[i] != c) || !matches!(b[10], b'T' | b't' | b' ') {
        return Err(bad("not a date and time"));
    }
    let (Some(year), Some(month), Some(day), Some(hour), Some(min), Some(sec)) = (
        num(0, 4),
        num(5, 2),
        num(8, 2),
        num(11, 2),
        num(14, 2),
        num(17, 2),
    ) else {
        return Err(bad("not a date and time"));
    };
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return Err(bad("no such date"));
    }
    // a leap second (60) is refused: the Unix clock has none
    if hour > 23 || min > 59 || sec > 59 {
        return Err(bad("no such time"));
    }
    let mut rest = &s[19..];
    let mut nanos = 0;
    if let Some(r) = rest.strip_prefix('.') {
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad("a fraction needs digits"));
        }
        nanos = nanos_of(&r[..digits]).ok_or_else(|| bad("at most 9 decimals"))?;
        rest = &r[digits..];
    }
    let offset: i64 = match rest {
        "Z" | "z" => 0,
        _ => {
            let rb = rest.as_bytes();
            let sign = match rb.first() {
                Some(b'+') => 1,
                Some(b'-') => -1,
                _ => return Err(bad("needs a zone: Z or ±HH:MM")),
            };
            let (Some(oh), Some(om)) = (
                (rb.len() == 6 && rb[3] == b':')
                    .then(|| rest[1..3].parse::<u32>().ok())
                    .flatten(),
                rest.get(4..6).and_then(|m| m.parse::<u32>().ok()),
            ) else {
                return Err(bad("needs a zone: Z or ±HH:MM"));
            };
            if oh > 23 || om > 59 {
                return Err(bad("no such zone offset"));
            }
            sign * i64::from(oh * 3600 + om * 60)
        }
    };
    let days = days_from_civil(i64::from(year), month, day);
    let secs = days * 86_400 + i64::from(hour * 3600 + min * 60 + sec) - offset;
    let secs = u64::try_from(secs).map_err(|_| bad("before 1970"))?;
    Ok(Duration::new(secs, nanos))
}

fn is_leap(year: u32) -> bool {
    (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the proleptic Gregorian date (negative before it): the count of
/// whole 400-year eras, then the days into the era with March as the year's first month, so
/// the leap day falls at the end.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let m = i64::from(month);
    let day_of_year = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The inverse of `days_from_civil`: (year, month, day).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `t` in RFC 3339, UTC, to the microsecond: `2025-12-02T10:30:00.000250Z`.
pub fn format_rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        s / 3600,
        s / 60 % 60,
        s % 60,
        d.subsec_micros()
    )
}

/// Nanoseconds since the Unix epoch (0 before it; saturating past 2554): what a request's
/// `{{now_ns}}` renders.
pub fn unix_ns(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Microseconds since the Unix epoch (0 before it).
pub fn unix_us(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unix(s: &str) -> Result<f64, TimeError> {
        parse_time(s).map(|t| t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64())
    }

    #[test]
    fn rfc3339_and_unix_seconds_name_the_same_instants() {
        // 2025-12-02T10:30:00Z, as `date -u -d 2025-12-02T10:30:00Z +%s` gives it
        assert_eq!(unix("2025-12-02T10:30:00Z"), Ok(1_764_671_400.0));
        assert_eq!(unix("1764671400"), Ok(1_764_671_400.0));
        assert_eq!(unix("1764671400.25"), Ok(1_764_671_400.25));
        assert_eq!(unix("2025-12-02T11:30:00.25+01:00"), Ok(1_764_671_400.25));
        assert_eq!(unix("2025-12-02 05:00:00-05:30"), Ok(1_764_671_400.0));
        assert_eq!(unix("1970-01-01T00:00:00Z"), Ok(0.0));
        // a leap day, and the day after February in a century year without one
        assert_eq!(unix("2024-02-29T00:00:00Z"), Ok(1_709_164_800.0));
        assert_eq!(unix("2100-03-01T00:00:00Z"), Ok(4_107_542_400.0));
    }

    #[test]
    fn malformed_times_are_refused_with_the_reason() {
        for (bad, why) in [
            ("", "expected"),
            ("tomorrow", "too short"),
            ("2025-12-02T10:30:00", "too short"),
            ("2025-12-02T10:30:00+0100", "needs a zone"),
            ("2025-02-29T10:30:00Z", "no such date"),
            ("2025-13-01T10:30:00Z", "no such date"),
            ("2025-12-02T24:00:00Z", "no such time"),
            ("2025-12-02T10:30:60Z", "no such time"),
            ("2025-12-02T10:30:00.Z", "needs digits"),
            ("2025-12-02T10:30:00.1234567891Z", "at most 9"),
            ("1969-12-31T23:59:59Z", "before 1970"),
            ("17646714.00.1", "Unix seconds"),
            ("2025/12/02T10:30:00Z", "not a date"),
        ] {
            let e = parse_time(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    #[test]
    fn formatting_round_trips_through_parsing() {
        for s in [
            "2025-12-02T10:30:00.000250Z",
            "2000-02-29T23:59:59.999999Z",
            "1970-01-01T00:00:00.000000Z",
            "2399-12-31T00:00:01.500000Z",
        ] {
            let t = parse_time(s).unwrap();
            assert_eq!(format_rfc3339(t), s);
        }
        let t = UNIX_EPOCH + Duration::from_micros(1_764_671_400_000_250);
        assert_eq!(unix_us(t), 1_764_671_400_000_250);
        assert_eq!(format_rfc3339(t), "2025-12-02T10:30:00.000250Z");
    }
}
