//! The watchers' side of a run: a thread of their own that opens the streams, creates every
//! watch, and once the puts are done waits for the revisions the watchers still expect.

use std::rc::Rc;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::config::WatchConfig;
use super::state::{Expected, WatchState};
use super::{WatchError, grpc, http};
use crate::client::block_on;
use crate::config::{Endpoint, WatchKind};
use crate::stack::Proto;
use crate::stats::WatchOutcome;

/// Slack on top of the connect timeout for every watch to be created.
const CREATE_SLACK: Duration = Duration::from_secs(20);
/// Slack on top of that for the watch thread to report (its runtime, its connects).
const SETUP_SLACK: Duration = Duration::from_secs(30);

/// The watchers of one run, on their own thread (a current-thread runtime), every watch created.
pub struct Watchers {
    thread: std::thread::JoinHandle<WatchOutcome>,
    done: oneshot::Sender<Arc<Vec<Vec<i64>>>>,
}

impl Watchers {
    /// Starts the watch thread over `proto` and waits until every watch is confirmed (created),
    /// bounded; an error says why not. `members`: where a broken stream may move, the
    /// configured endpoints first. `from`: the revision every watch starts at (0: from now).
    pub fn start(
        cfg: &Arc<WatchConfig>,
        proto: Proto,
        members: &[Endpoint],
        from: i64,
    ) -> Result<Watchers, WatchError> {
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), WatchError>>();
        let (done, done_rx) = oneshot::channel::<Arc<Vec<Vec<i64>>>>();
        let wcfg = cfg.clone();
        let members = members.to_vec();
        let thread = std::thread::Builder::new()
            .name("wirebench-watch".into())
            .spawn(move || watch_thread(wcfg, proto, members, from, ready_tx, done_rx))
            .map_err(WatchError::Thread)?;
        let watchers = Watchers { thread, done };
        let setup_limit = cfg.net.connect_timeout + SETUP_SLACK;
        let failed = match ready_rx.recv_timeout(setup_limit) {
            Ok(Ok(())) => return Ok(watchers),
            Ok(Err(e)) => e,
            Err(_) => WatchError::Setup(setup_limit),
        };
        let _ = watchers.finish(Arc::default());
        Err(failed)
    }

    /// Hands the watchers the revisions each must still receive (`expected`, per watcher,
    /// sorted), waits for them at most `--timeout`, stops the streams and returns what the
    /// watchers measured.
    pub fn finish(self, expected: Arc<Vec<Vec<i64>>>) -> Result<WatchOutcome, WatchError> {
        let _ = self.done.send(expected);
        self.thread.join().map_err(|_| WatchError::Panicked)
    }
}

fn watch_thread(
    cfg: Arc<WatchConfig>,
    proto: Proto,
    members: Vec<Endpoint>,
    from: i64,
    ready: mpsc::Sender<Result<(), WatchError>>,
    done: oneshot::Receiver<Arc<Vec<Vec<i64>>>>,
) -> WatchOutcome {
    let st = Rc::new(WatchState::new(
        cfg.watchers,
        cfg.kind == WatchKind::Latency,
    ));
    // --link: this thread's sockets cross the emulated path
    if let Err(e) = crate::net::enter_link(&cfg.net) {
        let _ = ready.send(Err(WatchError::Link(e)));
        return st.outcome();
    }
    if from > 0 {
        st.start_at(from);
    }
    let members: Rc<[Endpoint]> = members.into();
    let ran = block_on(async {
        let opened = match proto {
            Proto::Grpc => grpc::open(&cfg, &st, &members).await,
            Proto::Http => http::open(&cfg, &st, &members).await,
            Proto::H2 | Proto::H3 => Err(WatchError::PlainH2),
        };
        let tasks = match opened {
            Ok(t) => t,
            Err(e) => {
                let _ = ready.send(Err(e));
                return;
            }
        };
        // Wait until every watch is confirmed (created), bounded.
        let deadline = Instant::now() + cfg.net.connect_timeout + CREATE_SLACK;
        while st.created.get() < cfg.watchers
            && Instant::now() < deadline
            && !tasks.iter().all(|t| t.is_finished())
        {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        if st.created.get() < cfg.watchers {
            let failures = st.errors.borrow().keys().cloned().collect();
            let _ = ready.send(Err(WatchError::Incomplete {
                created: st.created.get(),
                watchers: cfg.watchers,
                failures,
            }));
            st.stop_all(tasks).await;
            return;
        }
        let _ = ready.send(Ok(()));
        // The puts run now; the revisions they created arrive when they are done.
        let expected = done.await.unwrap_or_default();
        let tracked = Expected::new(expected, &st.seen.borrow());
        *st.expected.borrow_mut() = Some(tracked);
        let deadline = tokio::time::Instant::now() + cfg.drain;
        while st.outstanding() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        st.stop_all(tasks).await;
    });
    if let Err(e) = ran {
        let _ = ready.send(Err(e.into()));
    }
    st.outcome()
}
