//! `--compact-interval`: a compactor on a thread of its own beside a run's load; every interval
//! it reads etcd's current revision and compacts the history to (that revision −
//! `--compact-index-delta`) over gRPC (`KV/Compact`), as etcd's benchmark does during `put`.
//!
//! Its connection, calls and CPU are outside the run's figures (the workers' counters count
//! their own threads). A revision read or a compaction that fails is counted with its reason,
//! and the connection is opened again at the next interval.

use std::io;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::oneshot;

use super::Cluster;
use crate::config::Compaction;
use crate::outcome::{Failure, FailureKind};
use crate::stack::Proto;
use crate::stats::Compactions;
use crate::workload::etcd::client::{Connection, Dial};

/// The compactor could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot start the compactor's thread: {0}")]
pub struct CompactError(io::Error);

/// A compactor running beside a load; `stop` ends it and says what it did.
pub struct Compactor {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<Compactions>>,
}

impl Compactor {
    /// Starts compacting `cluster` every `cfg.interval` (the first one interval from now).
    pub fn start(cfg: Compaction, cluster: Cluster) -> Result<Compactor, CompactError> {
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("wirebench-compactor".into())
            .spawn(move || {
                crate::client::block_on(compact_every(cfg, cluster, stopped)).unwrap_or_else(|e| {
                    Compactions {
                        interval: cfg.interval,
                        index_delta: cfg.index_delta,
                        last_error: Some(Failure::with(FailureKind::Connect, e)),
                        ..Compactions::default()
                    }
                })
            })
            .map_err(CompactError)?;
        Ok(Compactor {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Stops the compactor (a compaction under way finishes, bounded by the timeout) and
    /// returns its counts.
    pub fn stop(mut self) -> Compactions {
        self.finish()
    }

    fn finish(&mut self) -> Compactions {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(c)) => c,
            Some(Err(_)) => Compactions {
                last_error: Some(Failure::with(
                    FailureKind::Io,
                    "the compactor's thread panicked",
                )),
                ..Compactions::default()
            },
            None => Compactions::default(),
        }
    }
}

impl Drop for Compactor {
    fn drop(&mut self) {
        // a run that ended by an error still stops its compactor
        self.finish();
    }
}

/// The compactor's loop: sleep an interval (or stop), read the revision, compact.
async fn compact_every(
    cfg: Compaction,
    t: Cluster,
    mut stopped: oneshot::Receiver<()>,
) -> Compactions {
    let mut done = Compactions {
        interval: cfg.interval,
        index_delta: cfg.index_delta,
        ..Compactions::default()
    };
    let mut conn: Option<(Connection, usize)> = None;
    let mut next = tokio::time::Instant::now() + cfg.interval;
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            _ = tokio::time::sleep_until(next) => {}
        }
        next += cfg.interval;
        if conn.as_ref().is_some_and(|(c, _)| !c.reusable())
            && let Some((c, _)) = conn.take()
        {
            c.close().await;
        }
        if conn.is_none() {
            match open(&t).await {
                Ok(c) => conn = Some(c),
                Err(f) => {
                    done.last_error = Some(f);
                    continue;
                }
            }
        }
        let Some((c, m)) = conn.as_mut() else {
            continue;
        };
        let authority = &t.members[*m].authority;
        let token = t.token.as_deref();
        let current = c.client(authority, token).revision();
        let current = match tokio::time::timeout(t.timeout, current).await {
            Ok(Ok(r)) => r,
            Ok(Err(f)) => {
                done.last_error = Some(f);
                continue;
            }
            Err(_) => {
                done.last_error = Some(timed_out("reading the revision", t.timeout));
                // the answer may still come: a new connection next time
                if let Some((c, _)) = conn.take() {
                    c.close().await;
                }
                continue;
            }
        };
        let target = current - cfg.index_delta;
        if target < 1 || done.last_revision.is_some_and(|last| target <= last) {
            done.skipped += 1;
            continue;
        }
        done.requests += 1;
        let compact = c.client(authority, token).compact(target);
        match tokio::time::timeout(t.timeout, compact).await {
            Ok(Ok(())) => {
                done.ok += 1;
                done.last_revision = Some(target);
            }
            Ok(Err(f)) => {
                done.failed += 1;
                done.last_error = Some(f);
            }
            Err(_) => {
                done.failed += 1;
                done.last_error = Some(timed_out("the compaction", t.timeout));
                if let Some((c, _)) = conn.take() {
                    c.close().await;
                }
            }
        }
    }
    if let Some((c, _)) = conn.take() {
        c.close().await;
    }
    done
}

/// A gRPC connection to the first member that accepts one, and which member it is.
async fn open(t: &Cluster) -> Result<(Connection, usize), Failure> {
    let mut last = Failure::with(FailureKind::Connect, "no member to compact on");
    for (m, ep) in t.members.iter().enumerate() {
        let dial = Dial {
            ep,
            proto: Proto::Grpc,
            net: &t.net,
            h2: &t.h2,
        };
        match Connection::open(dial, m).await {
            Ok(c) => return Ok((c, m)),
            Err(e) => {
                last = Failure::with(FailureKind::Connect, format_args!("{}: {e}", ep.url));
            }
        }
    }
    Err(last)
}

fn timed_out(what: &str, timeout: Duration) -> Failure {
    Failure::with(
        FailureKind::Timeout,
        format_args!("{what}: no answer within {timeout:?}"),
    )
}
