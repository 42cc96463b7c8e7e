//! `--verify` (put, txn-put, txn-mixed): after the run, every acknowledged write is looked up in
//! etcd's history. A range of each of its keys at its revision must return the key with exactly
//! that mod revision (what the write put there, whatever was written to the key later);
//! anything else means etcd lost an acknowledged write. A transaction's keys are consecutive
//! key indices from its first, modulo the key space.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::client::RuntimeError;
use crate::client::grpc::H2Config;
use crate::config::Endpoint;
use crate::net::NetConfig;
use crate::outcome::{Failure, FailureKind};
use crate::stack::Proto;
use crate::workload::etcd::client::{Client, Connection, Dial};
use crate::workload::etcd::put_key;
use wirebench_wire::grpc::Code;

/// Lookups in flight at once (h2 streams on one connection).
const IN_FLIGHT: usize = 32;

/// Lost writes kept as examples in the report.
const EXAMPLES: usize = 10;

/// The keys of the writes looked up: each write's first key index and how many consecutive
/// ones it wrote (1 for a put), in a key space of `space` keys of `size` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keys {
    pub size: usize,
    pub ops: usize,
    pub space: u64,
}

/// What the lookups found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Verified {
    /// acknowledged writes looked up (a transaction once, however many keys it wrote)
    pub checked: u64,
    /// acknowledged writes of which a key had another mod revision (or none) at their revision
    pub lost: u64,
    /// up to 10 of them: (key index, acknowledged revision, mod revision found), the first key
    /// of the write that was not as written
    pub lost_examples: Vec<(u64, i64, Option<i64>)>,
    /// lookups asked again (after an election's error, on another member after a connection's
    /// loss or a silent member)
    pub retried: u64,
    /// the member that answered the last lookups
    pub via: String,
}

/// Why a lookup got no answer.
#[derive(Debug, thiserror::Error)]
pub enum Unanswered {
    #[error("{0}")]
    Failed(Failure),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}

/// A failure on the way to an answer: a member that took no connection, or a lookup that got
/// no answer.
#[derive(Debug, thiserror::Error)]
pub enum Miss {
    #[error("connect to {url}: {source}")]
    Connect { url: String, source: io::Error },
    #[error("range at revision {rev} via {url}: {why}")]
    Lookup {
        rev: i64,
        url: String,
        why: Unanswered,
    },
}

/// Why `--verify` could not look every write up (not a lost write: that is a finding).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("--verify: no member to ask")]
    NoMember,
    /// `last`: the last failure that made a lookup be asked again or elsewhere
    #[error(
        "--verify: no lookup answered for {PATIENCE:?}; the last failure: {}",
        .last.as_ref().map_or_else(|| "none".to_string(), ToString::to_string)
    )]
    OutOfPatience { last: Option<Miss> },
    #[error("--verify: the lookups run over gRPC")]
    NotGrpc,
    /// a lookup failed in a way asking again cannot change
    #[error("--verify: {0}")]
    Failed(Miss),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

/// How long the lookups may go on without one of them answered before `--verify` gives up: an
/// election (etcd answers "leader changed" or "no leader", or times out) or the loss of the
/// member asked takes a few seconds.
const PATIENCE: Duration = Duration::from_secs(15);

/// The pause before a lookup etcd could not answer is asked again, doubled each time up to
/// `PAUSE_MAX`.
const PAUSE_MIN: Duration = Duration::from_millis(20);
const PAUSE_MAX: Duration = Duration::from_millis(500);

/// What a failed lookup calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// the member is there but cannot answer now (an election): ask it again after a pause
    Again,
    /// the connection is gone or the member silent: ask the next member
    Move,
    /// an answer that asking again cannot change (compacted, permission denied, ...)
    Fail,
}

fn next_step(f: &Failure) -> Next {
    match f.kind {
        FailureKind::Connect
        | FailureKind::Timeout
        | FailureKind::Closed
        | FailureKind::Io
        | FailureKind::Goaway
        | FailureKind::H2 => Next::Move,
        FailureKind::RstStream => Next::Again,
        // etcd's election and overload errors: "leader changed", "no leader", "request timed
        // out" (UNAVAILABLE), "too many requests" (RESOURCE_EXHAUSTED), and a deadline
        FailureKind::Etcd => match f.code {
            Some(Code::Unavailable | Code::DeadlineExceeded | Code::ResourceExhausted) => {
                Next::Again
            }
            _ => Next::Fail,
        },
        _ => Next::Fail,
    }
}

/// The lookups' shared state, kept across the members they move to.
struct Work {
    acks: Vec<(u64, i64)>,
    keys: Keys,
    /// indices into `acks` still to look up
    queue: RefCell<VecDeque<usize>>,
    found: RefCell<Verified>,
    /// a lookup that failed for good
    fatal: RefCell<Option<VerifyError>>,
    /// the last failure that made a lookup be asked again or elsewhere
    last: RefCell<Option<Miss>>,
    /// when a lookup was last answered (or the lookups started)
    progress: Cell<Instant>,
    /// the connection in use failed: its tasks end and the next member is asked
    broken: Cell<bool>,
}

impl Work {
    fn out_of_patience(&self) -> bool {
        self.progress.get().elapsed() > PATIENCE
    }

    fn give_up(&self) {
        let mut fatal = self.fatal.borrow_mut();
        if fatal.is_none() {
            let last = self.last.borrow_mut().take();
            *fatal = Some(VerifyError::OutOfPatience { last });
        }
    }

    /// Fails the lookups for good with `e`, unless they failed already.
    fn fail(&self, e: VerifyError) {
        self.fatal.borrow_mut().get_or_insert(e);
    }
}

/// Looks up every `(first key index, revision)` of `acks` (their `keys`), `IN_FLIGHT` at a
/// time over one gRPC connection to a member of `members`, each bounded by `timeout`. A
/// lookup that etcd cannot answer during an election is asked again after a pause; when the
/// connection fails or the member falls silent, the rest go to the next member (cycling
/// through them), until every write is looked up or none was answered for `PATIENCE`. An
/// error is one line: no member reachable, or a lookup that failed for good (not a lost write).
pub fn verify_writes(
    members: &[Endpoint],
    acks: &[(u64, i64)],
    keys: Keys,
    net: &NetConfig,
    h2: &H2Config,
    token: Option<&str>,
    timeout: Duration,
) -> Result<Verified, VerifyError> {
    if members.is_empty() {
        return Err(VerifyError::NoMember);
    }
    let work = Rc::new(Work {
        acks: acks.to_vec(),
        keys,
        queue: RefCell::new((0..acks.len()).collect()),
        found: RefCell::default(),
        fatal: RefCell::default(),
        last: RefCell::default(),
        progress: Cell::new(Instant::now()),
        broken: Cell::new(false),
    });
    crate::client::block_on(async {
        for (i, ep) in members.iter().enumerate().cycle() {
            if work.queue.borrow().is_empty() {
                break;
            }
            if work.out_of_patience() {
                work.give_up();
            }
            if let Some(e) = work.fatal.borrow_mut().take() {
                return Err(e);
            }
            let dial = Dial {
                ep,
                proto: Proto::Grpc,
                net,
                h2,
            };
            match Connection::open(dial, i).await {
                Ok(conn) => {
                    lookups(conn, ep, &work, token, timeout).await;
                }
                Err(source) => {
                    *work.last.borrow_mut() = Some(Miss::Connect {
                        url: ep.url.clone(),
                        source,
                    });
                    // every member refused: wait a little before the next round
                    if i + 1 == members.len() {
                        tokio::time::sleep(PAUSE_MAX).await;
                    }
                }
            }
        }
        if let Some(e) = work.fatal.borrow_mut().take() {
            return Err(e);
        }
        Ok(work.found.borrow().clone())
    })?
}

/// Runs the lookups of `work` on `conn` until none is left, the connection fails (`broken`)
/// or a lookup fails for good (`fatal`).
async fn lookups(
    conn: Connection,
    ep: &Endpoint,
    work: &Rc<Work>,
    token: Option<&str>,
    timeout: Duration,
) {
    let Connection::Grpc(grpc_conn, _) = &conn else {
        work.fail(VerifyError::NotGrpc);
        return;
    };
    work.broken.set(false);
    let mut tasks = Vec::with_capacity(IN_FLIGHT);
    for _ in 0..IN_FLIGHT.min(work.queue.borrow().len()) {
        let mut send = grpc_conn.handle();
        let ledger = grpc_conn.ledger().clone();
        let work = work.clone();
        let (authority, url) = (ep.authority.clone(), ep.url.clone());
        let token = token.map(str::to_string);
        tasks.push(tokio::task::spawn_local(async move {
            let mut pause = PAUSE_MIN;
            loop {
                if work.broken.get() || work.fatal.borrow().is_some() {
                    return;
                }
                let Some(i) = work.queue.borrow_mut().pop_front() else {
                    return;
                };
                let (first, rev) = work.acks[i];
                let keys = work.keys;
                // the first key of this write that was not as written
                let mut lost = None;
                let mut failed = None;
                for j in 0..keys.ops as u64 {
                    let n = (first + j) % keys.space.max(1);
                    let key = put_key(keys.size, n);
                    let lookup = Client::grpc(&mut send, &ledger, &authority)
                        .with_token(token.as_deref())
                        .mod_revision_at(&key, rev);
                    match tokio::time::timeout(timeout, lookup).await {
                        Ok(Ok(got)) if got == Some(rev) => {}
                        Ok(Ok(got)) => {
                            lost = Some((n, rev, got));
                            break;
                        }
                        Ok(Err(f)) => {
                            failed = Some((next_step(&f), Unanswered::Failed(f)));
                            break;
                        }
                        Err(_) => {
                            failed = Some((Next::Move, Unanswered::Timeout(timeout)));
                            break;
                        }
                    }
                }
                let Some((next, why)) = failed else {
                    work.progress.set(Instant::now());
                    pause = PAUSE_MIN;
                    let mut v = work.found.borrow_mut();
                    v.checked += 1;
                    if v.via != url {
                        v.via.clone_from(&url);
                    }
                    if let Some(example) = lost {
                        v.lost += 1;
                        if v.lost_examples.len() < EXAMPLES {
                            v.lost_examples.push(example);
                        }
                    }
                    continue;
                };
                let why = Miss::Lookup {
                    rev,
                    url: url.clone(),
                    why,
                };
                if next == Next::Fail {
                    work.fail(VerifyError::Failed(why));
                    return;
                }
                // asked again, here after a pause or on the next member
                work.queue.borrow_mut().push_back(i);
                work.found.borrow_mut().retried += 1;
                *work.last.borrow_mut() = Some(why);
                if work.out_of_patience() {
                    work.give_up();
                    return;
                }
                if next == Next::Move {
                    work.broken.set(true);
                    return;
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(PAUSE_MAX);
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    conn.close().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_election_is_waited_out_a_lost_connection_moved_from_the_rest_fail() {
        // a grpc-status as `client::grpc` carries it: the code, and its name and message as text
        let etcd = |code: Code, message: &str| {
            Failure::status(
                FailureKind::Etcd,
                code,
                format_args!("{}: {message}", code.as_str()),
            )
        };
        for again in [
            etcd(Code::Unavailable, "etcdserver: leader changed"),
            etcd(Code::Unavailable, "etcdserver: no leader"),
            etcd(Code::Unavailable, "etcdserver: request timed out"),
            Failure::status(
                FailureKind::Etcd,
                Code::DeadlineExceeded,
                "DEADLINE_EXCEEDED",
            ),
            etcd(Code::ResourceExhausted, "etcdserver: too many requests"),
            // through the gateway: the code its error body names, the message alone as text
            Failure::status(
                FailureKind::Etcd,
                Code::Unavailable,
                "etcdserver: no leader",
            ),
            Failure::new(FailureKind::RstStream),
        ] {
            assert_eq!(next_step(&again), Next::Again, "{again}");
        }
        for kind in [
            FailureKind::Connect,
            FailureKind::Timeout,
            FailureKind::Closed,
            FailureKind::Io,
            FailureKind::Goaway,
            FailureKind::H2,
        ] {
            assert_eq!(next_step(&Failure::new(kind)), Next::Move, "{kind:?}");
        }
        for fail in [
            etcd(
                Code::OutOfRange,
                "etcdserver: mvcc: required revision has been compacted",
            ),
            etcd(Code::PermissionDenied, "etcdserver: permission denied"),
            etcd(Code::InvalidArgument, "etcdserver: key is not provided"),
            // UNAVAILABLE inside a message is not the status
            etcd(Code::Unknown, "UNAVAILABLE"),
            // nor is a message that reads like one without the code
            Failure::with(FailureKind::Etcd, "UNAVAILABLE: etcdserver: no leader"),
            Failure::new(FailureKind::Etcd),
            Failure::new(FailureKind::BadResponse),
            Failure::new(FailureKind::Auth),
            Failure::new(FailureKind::GrpcFraming),
        ] {
            assert_eq!(next_step(&fail), Next::Fail, "{fail}");
        }
    }
}
