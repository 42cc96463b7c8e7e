//! The watchers of `wirebench etcd watch` and what they prove: gRPC bidi streams or HTTP/1.1
//! chunked streams, event latency from the send time stamped in each value, and a count of
//! missing, duplicated and unexpected events.
//!
//! The watchers own a thread (a current-thread runtime) and the put load (the engine's run of
//! `workload::etcd::WatchPuts`) others, so the put side never delays event delivery. Both read one
//! process-wide `Instant` (the epoch), so "put sent -> event received" needs no clock sync. The
//! application runs the phases (`app::watch`): watchers created, puts, the drain;
//! `report::watch` derives the figures.
//!
//! A stream whose member goes away (after its watchers were created) is created again on the
//! next member that accepts a connection, each watcher from the revision after the last event
//! it received, so the zero-loss proof holds across the move.

mod config;
mod grpc;
mod http;
mod state;
mod watchers;

pub use crate::stats::{Loss, WatchOutcome};
pub use crate::workload::etcd::{STAMP_LEN, stamp};
pub use config::WatchConfig;
pub use watchers::Watchers;

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use crate::client::RuntimeError;
use crate::config::Endpoint;
use crate::outcome::{Failure, FailureKind};
use state::WatchState;

/// Why the watchers could not all be created, or gave no outcome.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("cannot start the watch thread: {0}")]
    Thread(io::Error),
    #[error("watches were not all created within {0:?}")]
    Setup(Duration),
    #[error("the watch thread panicked (a bug: please report it)")]
    Panicked,
    #[error("connect to {addr}: {source}")]
    Connect { addr: SocketAddr, source: io::Error },
    #[error("etcd watch runs over HTTP/1.1 or gRPC, not plain HTTP/2 or HTTP/3")]
    PlainH2,
    #[error("{0}")]
    Link(io::Error),
    /// `failures`: what the streams failed with meanwhile
    #[error(
        "only {created} of {watchers} watches were created{}",
        in_parens(.failures)
    )]
    Incomplete {
        created: usize,
        watchers: usize,
        failures: Vec<Failure>,
    },
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

/// ` (a; b)`, or nothing for no failures.
fn in_parens(failures: &[Failure]) -> String {
    if failures.is_empty() {
        return String::new();
    }
    let texts: Vec<String> = failures.iter().map(ToString::to_string).collect();
    format!(" ({})", texts.join("; "))
}

/// How a stream's run on one connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// the run is over
    Stopped,
    /// the stream, its connection or its member failed (the failure is in the state)
    Broken,
}

/// After stream `index` of `watchers` broke (at `broke`) on member `from`: None when it stays
/// down (the run stopped, or it broke before etcd confirmed all its watchers: the setup fails
/// as before); else a connection to the next live member (`next_member`), that member, and
/// the move, recorded in the state.
async fn move_stream<C, Fut>(
    st: &WatchState,
    members: &[Endpoint],
    (index, watchers): (usize, &[usize]),
    from: usize,
    broke: std::time::Instant,
    connect: impl Fn(usize) -> Fut,
) -> Option<(C, usize, usize)>
where
    Fut: Future<Output = io::Result<C>>,
{
    let established = {
        let confirmed = st.confirmed.borrow();
        watchers.iter().all(|&w| confirmed[w])
    };
    if !established || st.stopped.get() {
        return None;
    }
    let (conn, to) = next_member(st, members, from, connect).await?;
    let mut moves = st.moves.borrow_mut();
    moves.push(crate::stats::StreamMove {
        stream: index,
        from: members[from].url.clone(),
        to: members[to].url.clone(),
        watchers: watchers.len(),
        broke,
        recreated: None,
    });
    Some((conn, to, moves.len() - 1))
}

/// How long a stream waits before trying every member again when none accepted it.
const RETRY: Duration = Duration::from_millis(50);

/// After a stream broke on member `from`: a connection to the next member after it (in turn,
/// ending with `from` itself) that accepts one, every member tried again every `RETRY`, until
/// the run stops (None). Each refusal is counted as a `connect` error.
async fn next_member<C, Fut>(
    st: &WatchState,
    members: &[Endpoint],
    from: usize,
    connect: impl Fn(usize) -> Fut,
) -> Option<(C, usize)>
where
    Fut: Future<Output = io::Result<C>>,
{
    let n = members.len();
    loop {
        for i in 1..=n {
            if st.stopped.get() {
                return None;
            }
            let m = (from + i) % n;
            let attempt = tokio::select! {
                r = connect(m) => r,
                _ = st.stop.notified() => return None,
            };
            match attempt {
                Ok(c) => return Some((c, m)),
                Err(e) => st.error(Failure::with(
                    FailureKind::Connect,
                    format_args!("{}: {e}", members[m].url),
                )),
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(RETRY) => {}
            _ = st.stop.notified() => return None,
        }
    }
}
