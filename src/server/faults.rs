//! Fault injection in the built-in server: a delay before answering, an error answer with some
//! probability, a reply padded to a size, a TCP close after answering, h2 GOAWAY after N
//! streams. `wirebench serve` flags set the defaults; a request overrides them with its headers
//! (HTTP/1.1, HTTP/2) or gRPC metadata: `wirebench-delay`, `wirebench-fail`,
//! `wirebench-response-size`, `wirebench-close`. The server echoes none of its control headers.

use std::cell::RefCell;
use std::time::Duration;

use http::HeaderMap;

use crate::rng::Rng;
use wirebench_wire::grpc::Code;

/// The prefix of the request headers the server reads as control and does not echo.
pub const CONTROL_PREFIX: &str = "wirebench-";
pub const DELAY_HEADER: &str = "wirebench-delay";
pub const FAIL_HEADER: &str = "wirebench-fail";
pub const RESPONSE_SIZE_HEADER: &str = "wirebench-response-size";
pub const CLOSE_HEADER: &str = "wirebench-close";

/// The largest reply a request may ask for (`--response-size`, `wirebench-response-size`).
pub const MAX_RESPONSE_SIZE: usize = 64 << 20;

/// Why a fault's value (a flag, or a request's control header) does not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FaultsError {
    #[error("{0:?}: write uniform:MIN-MAX, e.g. uniform:1ms-9ms")]
    UniformShape(String),
    #[error("{0:?}: the minimum is above the maximum")]
    UniformBackwards(String),
    /// a duration or a size that does not parse, in the configuration's words
    #[error("{0}")]
    Value(String),
    #[error("{0:?}: a probability, 0% to 100% (or 0 to 1)")]
    Probability(String),
    #[error("{0:?}: at most {max} MiB", max = MAX_RESPONSE_SIZE >> 20)]
    TooLarge(String),
    /// a request's control header whose value does not parse
    #[error("{header}: {source}")]
    Header {
        header: &'static str,
        source: Box<FaultsError>,
    },
}

/// How long to wait before answering.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Delay {
    Fixed(Duration),
    /// uniform between the two, both included
    Uniform(Duration, Duration),
    /// exponential with this mean
    Exp(Duration),
}

impl Delay {
    /// `5ms`, `uniform:1ms-9ms`, `exp:5ms`.
    pub fn parse(s: &str) -> Result<Delay, FaultsError> {
        let d = |v: &str| {
            crate::config::parse_duration(v.trim()).map_err(|e| FaultsError::Value(e.to_string()))
        };
        if let Some(range) = s.strip_prefix("uniform:") {
            let (lo, hi) = range
                .split_once('-')
                .ok_or_else(|| FaultsError::UniformShape(s.to_string()))?;
            let (lo, hi) = (d(lo)?, d(hi)?);
            if lo > hi {
                return Err(FaultsError::UniformBackwards(s.to_string()));
            }
            return Ok(Delay::Uniform(lo, hi));
        }
        if let Some(mean) = s.strip_prefix("exp:") {
            return Ok(Delay::Exp(d(mean)?));
        }
        Ok(Delay::Fixed(d(s)?))
    }

    fn sample(self, rng: &mut Rng) -> Duration {
        match self {
            Delay::Fixed(d) => d,
            Delay::Uniform(lo, hi) => lo + (hi - lo).mul_f64(rng.unit()),
            // inverse transform; 1 - u is in (0, 1], so the logarithm is finite
            Delay::Exp(mean) => mean.mul_f64(-(1.0 - rng.unit()).ln()),
        }
    }
}

/// `10%` or `0.1`: a probability.
pub fn parse_probability(s: &str) -> Result<f64, FaultsError> {
    let t = s.trim();
    let p = match t.strip_suffix('%') {
        Some(n) => n.trim().parse::<f64>().map(|v| v / 100.0),
        None => t.parse::<f64>(),
    };
    match p {
        Ok(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(FaultsError::Probability(s.to_string())),
    }
}

/// A size in bytes, at most `MAX_RESPONSE_SIZE`.
pub fn parse_response_size(s: &str) -> Result<usize, FaultsError> {
    let n = crate::config::parse_size(s.trim()).map_err(|e| FaultsError::Value(e.to_string()))?;
    usize::try_from(n)
        .ok()
        .filter(|&n| n <= MAX_RESPONSE_SIZE)
        .ok_or_else(|| FaultsError::TooLarge(s.to_string()))
}

/// The server's fault defaults (`wirebench serve --delay ...`).
#[derive(Debug, Clone, PartialEq)]
pub struct Faults {
    pub delay: Option<Delay>,
    pub fail: f64,
    pub fail_http_status: u16,
    pub fail_grpc_code: Code,
    pub response_size: Option<usize>,
    pub close: f64,
    /// h2: GOAWAY after this many streams on a connection
    pub goaway_after: Option<u64>,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            delay: None,
            fail: 0.0,
            fail_http_status: 503,
            fail_grpc_code: Code::Unavailable,
            response_size: None,
            close: 0.0,
            goaway_after: None,
        }
    }
}

/// What one request gets.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Plan {
    pub delay: Duration,
    pub fail: bool,
    /// pad the reply to about this many bytes
    pub pad_to: Option<usize>,
    /// close the connection after answering
    pub close: bool,
}

impl Faults {
    /// The plan for a request whose header `name` is `header(name)`: the defaults, each
    /// overridden by its header; a header that does not parse is the error to answer with.
    pub fn plan<'a>(
        &self,
        header: impl Fn(&str) -> Option<&'a str>,
        rng: &mut Rng,
    ) -> Result<Plan, FaultsError> {
        let named = |header: &'static str| {
            move |e: FaultsError| FaultsError::Header {
                header,
                source: Box::new(e),
            }
        };
        let delay = match header(DELAY_HEADER) {
            Some(v) => Some(Delay::parse(v).map_err(named(DELAY_HEADER))?),
            None => self.delay,
        };
        let fail = match header(FAIL_HEADER) {
            Some(v) => parse_probability(v).map_err(named(FAIL_HEADER))?,
            None => self.fail,
        };
        let pad_to = match header(RESPONSE_SIZE_HEADER) {
            Some(v) => Some(parse_response_size(v).map_err(named(RESPONSE_SIZE_HEADER))?),
            None => self.response_size,
        };
        let close = match header(CLOSE_HEADER) {
            Some(v) => parse_probability(v).map_err(named(CLOSE_HEADER))?,
            None => self.close,
        };
        Ok(Plan {
            delay: delay.map_or(Duration::ZERO, |d| d.sample(rng)),
            fail: fail > 0.0 && rng.unit() < fail,
            pad_to,
            close: close > 0.0 && rng.unit() < close,
        })
    }

    /// No fault is configured: requests need no plan unless their headers ask.
    pub fn none(&self) -> bool {
        *self == Faults::default()
    }
}

/// Whether a request header is one of the server's own controls (never echoed).
pub(crate) fn is_control(name: &str) -> bool {
    name.len() >= CONTROL_PREFIX.len()
        && name.as_bytes()[..CONTROL_PREFIX.len()].eq_ignore_ascii_case(CONTROL_PREFIX.as_bytes())
}

/// The fault injection of one h2 or HTTP/3 connection, shared by its request handlers.
pub(crate) struct Injector {
    pub(crate) faults: Faults,
    rng: RefCell<Rng>,
    /// a handler asks for the connection's close after its answer
    pub(crate) close: tokio::sync::Notify,
}

impl Injector {
    pub(crate) fn new(faults: Faults) -> Injector {
        Injector {
            faults,
            rng: RefCell::new(Rng::unique()),
            close: tokio::sync::Notify::new(),
        }
    }

    /// The plan for a request with these headers (the defaults when nothing is configured or
    /// asked for).
    pub(crate) fn plan(&self, headers: &HeaderMap) -> Result<Plan, FaultsError> {
        if self.faults.none() && !headers.keys().any(|k| is_control(k.as_str())) {
            return Ok(Plan::default());
        }
        self.faults.plan(
            |name| headers.get(name).and_then(|v| v.to_str().ok()),
            &mut self.rng.borrow_mut(),
        )
    }

    /// After an answer: the connection closes if the plan says so.
    pub(crate) fn after(&self, plan: &Plan) {
        if plan.close {
            self.close.notify_one();
        }
    }
}

/// The last part of an injected delay, spent yielding to the other tasks rather than asleep:
/// a wake-up from sleep comes tens to hundreds of microseconds late (more on a virtual
/// machine whose idle CPU was descheduled), which would hold a 2 ms delay 5% longer than
/// asked.
const SPIN_TAIL: Duration = Duration::from_micros(100);

/// Waits `d` on a timerfd (tokio's timer rounds up to whole milliseconds, which would put an
/// injected 5 ms at 5 to 6) until `SPIN_TAIL` before its end, then yields to the runtime's
/// other tasks until the end (never early); tokio's timer when no timerfd can be had. `timer`
/// is kept for the next wait.
pub(crate) async fn wait(timer: &mut Option<crate::net::timer::Timer>, d: Duration) {
    let until = std::time::Instant::now() + d;
    if d > SPIN_TAIL {
        if timer.is_none() {
            *timer = crate::net::timer::Timer::new().ok();
        }
        match timer {
            Some(t) => {
                t.sleep(d - SPIN_TAIL).await;
            }
            None => tokio::time::sleep(d).await,
        }
    }
    while std::time::Instant::now() < until {
        tokio::task::yield_now().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_parse_in_three_shapes() {
        let ms = Duration::from_millis;
        assert_eq!(Delay::parse("5ms"), Ok(Delay::Fixed(ms(5))));
        assert_eq!(
            Delay::parse("uniform:1ms-9ms"),
            Ok(Delay::Uniform(ms(1), ms(9)))
        );
        assert_eq!(Delay::parse("exp:5ms"), Ok(Delay::Exp(ms(5))));
        assert!(Delay::parse("uniform:9ms-1ms").is_err());
        assert!(Delay::parse("uniform:1ms").is_err());
        assert!(Delay::parse("soon").is_err());
    }

    #[test]
    fn sampled_delays_have_the_mean_asked_for() {
        let mut rng = Rng::unique();
        let ms = Duration::from_millis;
        for (d, mean) in [
            (Delay::Uniform(ms(1), ms(9)), 5.0),
            (Delay::Exp(ms(5)), 5.0),
            (Delay::Fixed(ms(5)), 5.0),
        ] {
            let n = 100_000;
            let sum: f64 = (0..n).map(|_| d.sample(&mut rng).as_secs_f64() * 1e3).sum();
            let got = sum / n as f64;
            assert!((got - mean).abs() < mean * 0.03, "{d:?}: mean {got} ms");
        }
    }

    #[test]
    fn headers_override_the_defaults() {
        let mut rng = Rng::unique();
        let faults = Faults {
            delay: Some(Delay::Fixed(Duration::from_millis(3))),
            ..Faults::default()
        };
        let none = |_: &str| None;
        let plan = faults.plan(none, &mut rng).unwrap();
        assert_eq!(plan.delay, Duration::from_millis(3));
        assert!(!plan.fail && !plan.close && plan.pad_to.is_none());
        let asked = |name: &str| match name {
            DELAY_HEADER => Some("1ms"),
            FAIL_HEADER => Some("100%"),
            RESPONSE_SIZE_HEADER => Some("1k"),
            CLOSE_HEADER => Some("1"),
            _ => None,
        };
        let plan = faults.plan(asked, &mut rng).unwrap();
        assert_eq!(
            plan,
            Plan {
                delay: Duration::from_millis(1),
                fail: true,
                pad_to: Some(1024),
                close: true
            }
        );
        let bad = |name: &str| (name == FAIL_HEADER).then_some("often");
        let e = faults.plan(bad, &mut rng).unwrap_err().to_string();
        assert!(e.starts_with("wirebench-fail: "), "{e}");
        let huge = |name: &str| (name == RESPONSE_SIZE_HEADER).then_some("1G");
        assert!(faults.plan(huge, &mut rng).is_err());
    }

    #[test]
    fn a_probability_injects_that_share() {
        let mut rng = Rng::unique();
        let faults = Faults {
            fail: 0.1,
            ..Faults::default()
        };
        let n = 100_000;
        let failed = (0..n)
            .filter(|_| faults.plan(|_| None, &mut rng).unwrap().fail)
            .count();
        let share = failed as f64 / n as f64;
        assert!((share - 0.1).abs() < 0.005, "{share}");
        assert_eq!(parse_probability("10%"), Ok(0.1));
        assert_eq!(parse_probability("0.25"), Ok(0.25));
        assert!(parse_probability("120%").is_err());
        assert!(parse_probability("-1").is_err());
    }
}
