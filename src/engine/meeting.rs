//! The meeting points of a run's main thread and its worker threads: barriers in order, a
//! latch the main thread waits on with a timeout, the abort flag and the first setup error.

use std::sync::atomic::AtomicBool;
use std::sync::{Barrier, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The workers tell the main thread they are done; it waits with a timeout to sample meanwhile.
pub(super) struct Latch {
    pub(super) left: Mutex<usize>,
    pub(super) cv: Condvar,
}

impl Latch {
    pub(super) fn new(n: usize) -> Latch {
        Latch {
            left: Mutex::new(n),
            cv: Condvar::new(),
        }
    }

    pub(super) fn arrive(&self) {
        let mut left = self.left.lock().unwrap_or_else(|e| e.into_inner());
        *left = left.saturating_sub(1);
        if *left == 0 {
            self.cv.notify_all();
        }
    }

    /// Waits at most `d`; true once every worker has arrived.
    pub(super) fn wait(&self, d: Duration) -> bool {
        let left = self.left.lock().unwrap_or_else(|e| e.into_inner());
        let (left, _) = self
            .cv
            .wait_timeout_while(left, d, |n| *n > 0)
            .unwrap_or_else(|e| e.into_inner());
        *left == 0
    }
}

/// The meeting points of the main thread and the workers, in order.
pub(super) struct Meeting {
    /// every worker has its runtime: the main thread reads the memory baseline
    pub(super) ready: Barrier,
    /// the workers may connect
    pub(super) go: Barrier,
    /// every connection is open: the run starts
    pub(super) start: Barrier,
    /// every worker's clients are done (the main thread samples memory until then)
    pub(super) done: Latch,
    /// the main thread has read its end figures: the workers may close their connections
    pub(super) close: Barrier,
    pub(super) abort: AtomicBool,
    pub(super) setup_error: Mutex<Option<super::EngineError>>,
    /// the moment the first thread passed the start line: the schedule's origin
    pub(super) t0: OnceLock<Instant>,
}

impl Meeting {
    pub(super) fn new(threads: usize) -> Meeting {
        Meeting {
            ready: Barrier::new(threads + 1),
            go: Barrier::new(threads + 1),
            start: Barrier::new(threads + 1),
            done: Latch::new(threads),
            close: Barrier::new(threads + 1),
            abort: AtomicBool::new(false),
            setup_error: Mutex::new(None),
            t0: OnceLock::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_latch_opens_when_every_worker_arrived() {
        let latch = Arc::new(Latch::new(2));
        assert!(!latch.wait(Duration::from_millis(1)));
        latch.arrive();
        assert!(!latch.wait(Duration::from_millis(1)));
        let l = latch.clone();
        let t = std::thread::spawn(move || l.arrive());
        assert!(latch.wait(Duration::from_secs(10)));
        t.join().unwrap();
    }
}
