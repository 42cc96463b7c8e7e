//! `--interval`: one line per interval while the run goes. Each worker records its outcomes
//! into `Stats::interval` (a counter and a histogram record beside the ones it already makes);
//! at each interval's end a timer task on the worker swaps the slot for an empty one and sends
//! the full one here, to a printer thread that merges the threads' slots and prints. The hot
//! path takes no lock and sends nothing.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::time::Duration;

use crate::stats::TimeSlot;

/// Where a worker sends its interval slots.
pub(super) type Sink = Sender<Part>;

/// One thread's outcomes over interval `k` (from `k * every` into the measured window to
/// `end`), and the socket bytes its connections moved meanwhile.
pub(super) struct Part {
    pub(super) thread: usize,
    pub(super) k: u64,
    pub(super) end: Duration,
    pub(super) slot: TimeSlot,
    pub(super) bytes_out: u64,
    pub(super) bytes_in: u64,
    /// the thread's last part: it sends no more
    pub(super) last: bool,
    /// false when the thread never ran (setup failed): nothing to print for it
    pub(super) ran: bool,
}

/// The CSV header goes out once per process, before the first stack's first line.
static CSV_HEADER: AtomicBool = AtomicBool::new(false);

/// How the printer writes: above the progress bar on a terminal, else plain lines on stderr.
pub(super) enum Out {
    Bar(indicatif::ProgressBar),
    Stderr,
}

impl Out {
    pub(super) fn line(&self, s: &str) {
        match self {
            Out::Bar(b) => b.println(s),
            Out::Stderr => {
                let mut e = std::io::stderr().lock();
                let _ = writeln!(e, "{s}");
            }
        }
    }
}

/// One merged interval.
#[derive(Default)]
struct Merged {
    slot: Option<TimeSlot>,
    end: Duration,
    bytes_out: u64,
    bytes_in: u64,
    from: Vec<bool>,
    ran: bool,
    /// some thread's last part is in it
    last: bool,
}

/// The printer: runs until every one of `threads` workers has sent its last part.
pub(super) fn print(
    rx: Receiver<Part>,
    threads: usize,
    every: Duration,
    csv: bool,
    stack: &'static str,
    mut emit: impl FnMut(&str),
) {
    let mut pending: BTreeMap<u64, Merged> = BTreeMap::new();
    // the interval after which each thread sends nothing more
    let mut closed: Vec<Option<u64>> = vec![None; threads];
    let mut next = 0u64;
    if csv && !CSV_HEADER.swap(true, Ordering::Relaxed) {
        emit(
            "stack,t_s,width_s,ok,errors,requests_per_sec,p50_ms,p99_ms,bytes_out_per_sec,bytes_in_per_sec",
        );
    }
    while closed.iter().any(Option::is_none) {
        let Ok(p) = rx.recv() else { break };
        let Some(c) = closed.get_mut(p.thread) else {
            continue;
        };
        if p.last {
            *c = Some(p.k);
        }
        let m = pending.entry(p.k).or_default();
        m.from.resize(threads, false);
        m.from[p.thread] = true;
        m.end = m.end.max(p.end);
        m.bytes_out += p.bytes_out;
        m.bytes_in += p.bytes_in;
        m.ran |= p.ran;
        m.last |= p.last;
        match &mut m.slot {
            Some(s) => s.add(&p.slot),
            None => m.slot = Some(p.slot),
        }
        // print every interval every thread has either sent or was done before
        while let Some(m) = pending.get(&next) {
            let complete = (0..threads).all(|t| m.from[t] || closed[t].is_some_and(|c| c < next));
            if !complete {
                break;
            }
            // a last interval with nothing in it (the run ended just after an interval's
            // end) is no line
            if let Some(m) = pending.remove(&next)
                && m.ran
                && !(m.last && m.slot.as_ref().is_none_or(|s| s.ok + s.failed == 0))
            {
                emit(&line(&m, next, every, csv, stack));
            }
            next += 1;
        }
    }
}

/// One interval as a line.
fn line(m: &Merged, k: u64, every: Duration, csv: bool, stack: &str) -> String {
    let start = every * k as u32;
    let width = m.end.saturating_sub(start).max(Duration::from_micros(1));
    let secs = width.as_secs_f64();
    // no successful request in the interval: no latency (an empty CSV cell, n/a in text),
    // never 0
    let (ok, errors, p50, p99) = match &m.slot {
        Some(s) => (s.ok, s.failed, s.quantile_ms(0.5), s.quantile_ms(0.99)),
        None => (0, 0, None, None),
    };
    let rps = (ok + errors) as f64 / secs;
    let (out_s, in_s) = (m.bytes_out as f64 / secs, m.bytes_in as f64 / secs);
    let end = m.end.as_secs_f64();
    if csv {
        let cell = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
        format!(
            "{stack},{:.3},{secs:.3},{ok},{errors},{rps:.1},{},{},{out_s:.0},{in_s:.0}",
            start.as_secs_f64(),
            cell(p50),
            cell(p99)
        )
    } else {
        let ms = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.3}ms"));
        let (p50, p99) = (ms(p50), ms(p99));
        format!(
            "{stack:>8} {end:>7.1}s  ok {ok:<8} errors {errors:<6} {rps:>10.0} req/s  p50 {p50:>10}  p99 {p99:>10}  out {:>8.2} MB/s  in {:>8.2} MB/s",
            out_s / 1e6,
            in_s / 1e6
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(thread: usize, k: u64, ok: u64, last: bool) -> Part {
        let mut slot = TimeSlot::precise();
        for _ in 0..ok {
            slot.record(Duration::from_micros(100));
        }
        Part {
            thread,
            k,
            end: Duration::from_millis(100 * (k + 1)),
            slot,
            bytes_out: 10 * ok,
            bytes_in: 20 * ok,
            last,
            ran: true,
        }
    }

    #[test]
    fn an_interval_waits_for_every_thread_still_running() {
        let m = Merged {
            slot: Some(part(0, 0, 5, false).slot),
            end: Duration::from_millis(500),
            bytes_out: 5_000_000,
            bytes_in: 0,
            from: vec![true],
            ran: true,
            last: false,
        };
        let l = line(&m, 0, Duration::from_millis(500), true, "http");
        assert_eq!(l, "http,0.000,0.500,5,0,10.0,0.1,0.1,10000000,0");
        // thread 1 ends after interval 0; interval 1 is complete with thread 0 alone
        let (tx, rx) = std::sync::mpsc::channel();
        for p in [
            part(1, 0, 3, true),
            part(0, 0, 2, false),
            part(0, 1, 4, false),
            part(0, 2, 0, true),
        ] {
            tx.send(p).unwrap();
        }
        drop(tx);
        // it returns once both threads are done, every outcome in one line or the other
        let mut lines = Vec::new();
        print(rx, 2, Duration::from_millis(100), false, "http", |l| {
            lines.push(l.to_string())
        });
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].contains("ok 5 "), "{}", lines[0]);
        assert!(lines[1].contains("ok 4 "), "{}", lines[1]);
    }
}
