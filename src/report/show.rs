//! How a figure reads in text: its digits, or `n/a` where nothing was measured (null in JSON,
//! never 0).

/// What a text report prints for a figure without a measurement.
pub const NA: &str = "n/a";

/// `v` through `f`, or `n/a`.
pub fn or_na<T>(v: Option<T>, f: impl FnOnce(T) -> String) -> String {
    v.map_or_else(|| NA.to_string(), f)
}

/// `v` with `digits` decimals, or `n/a` (`v`: a figure, or one that may be missing).
pub fn num(v: impl Into<Option<f64>>, digits: usize) -> String {
    or_na(v.into(), |v| format!("{v:.digits$}"))
}

/// Milliseconds with enough digits for sub-millisecond loopback latencies, and the unit; or
/// `n/a`.
pub fn ms(v: impl Into<Option<f64>>) -> String {
    or_na(v.into(), |v| {
        if v < 10.0 {
            format!("{v:.3} ms")
        } else {
            format!("{v:.2} ms")
        }
    })
}

/// A ratio of two figures, `1.25x`; `-` where there is none (a side without a figure, or a
/// divisor that is not positive).
pub fn ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "-".to_string(), |r| format!("{r:.2}x"))
}

/// A CSV cell: `v` with `digits` decimals, or empty (CSV's missing value).
pub fn csv(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(String::new, |v| format!("{v:.digits$}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_or_not_available() {
        assert_eq!(num(Some(1.234), 2), "1.23");
        assert_eq!(num(Some(0.0), 1), "0.0");
        assert_eq!(num(None, 2), "n/a");
        assert_eq!(ms(0.1234), "0.123 ms");
        assert_eq!(ms(Some(12.345)), "12.35 ms");
        assert_eq!(ms(None), "n/a");
        assert_eq!(or_na(Some(7u64), |n| format!("{n} B")), "7 B");
        assert_eq!(or_na(None::<u64>, |n| format!("{n} B")), "n/a");
        assert_eq!(
            (ratio(Some(1.254)), ratio(None)),
            ("1.25x".into(), "-".into())
        );
        assert_eq!(
            (csv(Some(2.5), 2), csv(None, 2)),
            ("2.50".into(), String::new())
        );
    }
}
