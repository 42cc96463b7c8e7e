//! The progress bar on stderr (only when it is a terminal): requests done, req/s, errors, ETA.
//! Each worker thread bumps its own cache-line-sized counters; the bar thread only reads them.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::config::Stop;

/// How often the bar is redrawn.
const TICK: Duration = Duration::from_millis(200);

/// One thread's counters, alone on their cache line so threads never share one.
#[derive(Debug, Default)]
#[repr(align(64))]
pub(crate) struct Counters {
    done: AtomicU64,
    failed: AtomicU64,
}

impl Counters {
    pub fn done(&self, failed: bool) {
        self.done.fetch_add(1, Ordering::Relaxed);
        if failed {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A running bar; dropping it (or `finish`) stops and clears it.
pub(crate) struct Bar {
    pub counters: Arc<[Counters]>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    bar: ProgressBar,
}

impl Bar {
    /// A bar for `threads` workers, or None when stderr is not a terminal.
    pub fn start(title: &str, threads: usize, stop: Stop, warmup: Duration) -> Option<Bar> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let counters: Arc<[Counters]> = (0..threads).map(|_| Counters::default()).collect();
        let flag = Arc::new(AtomicBool::new(false));
        let bar = new_bar(title, stop);
        let (c, f, b) = (counters.clone(), flag.clone(), bar.clone());
        let thread = std::thread::Builder::new()
            .name("wirebench-progress".into())
            .spawn(move || draw(&b, &c, &f, stop, warmup))
            .ok()?;
        Some(Bar {
            counters,
            stop: flag,
            thread: Some(thread),
            bar,
        })
    }

    /// The bar itself, to print lines above it (`--interval`).
    pub fn handle(&self) -> ProgressBar {
        self.bar.clone()
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn new_bar(title: &str, stop: Stop) -> ProgressBar {
    let (len, template) = match stop {
        Stop::Total(n) => (n, "{prefix:>8} [{bar:30}] {pos}/{len} {msg} ETA {eta}"),
        Stop::Duration(d) => (
            d.as_millis() as u64,
            "{prefix:>8} [{bar:30}] {percent:>3}% {msg} ETA {eta}",
        ),
    };
    let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(title.to_string());
    bar
}

fn draw(
    bar: &ProgressBar,
    counters: &[Counters],
    stop_flag: &AtomicBool,
    stop: Stop,
    warmup: Duration,
) {
    let start = Instant::now();
    let mut last = (start, 0u64);
    let mut warm_base = None;
    while !stop_flag.load(Ordering::Relaxed) {
        std::thread::sleep(TICK);
        let now = Instant::now();
        let done: u64 = counters
            .iter()
            .map(|c| c.done.load(Ordering::Relaxed))
            .sum();
        let failed: u64 = counters
            .iter()
            .map(|c| c.failed.load(Ordering::Relaxed))
            .sum();
        let rate = (done - last.1) as f64 / now.duration_since(last.0).as_secs_f64();
        last = (now, done);
        if now.duration_since(start) < warmup {
            bar.set_message(format!("warmup, {rate:.0} req/s"));
            continue;
        }
        let base = *warm_base.get_or_insert(done);
        match stop {
            Stop::Total(_) => bar.set_position(done - base),
            Stop::Duration(_) => bar.set_position(
                (now.duration_since(start).saturating_sub(warmup)).as_millis() as u64,
            ),
        }
        bar.set_message(format!("{rate:.0} req/s, {failed} errors"));
    }
    bar.finish_and_clear();
}
