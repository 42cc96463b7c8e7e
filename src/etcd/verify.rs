//! `--verify` (put, txn-put, txn-mixed): after the run, every acknowledged write is looked up in
//! etcd's history. A range of each of its keys at its revision must return the key with exactly
//! that mod revision (what the write put there, whatever was written to the key later);
//! anything else means etcd lost an acknowledged write. A transaction's keys are consecutive
//! key indices from its first, modulo the key space.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use crate::config::{Endpoint, Proto};
use crate::net::{H2Config, NetConfig};
use crate::workload::etcd::client::{Client, Connection};
use crate::workload::etcd::put_key;

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
    /// the member that answered
    pub via: String,
}

/// Looks up every `(first key index, revision)` of `acks` (their `keys`) on the first of
/// `members` that accepts a gRPC connection, `IN_FLIGHT` at a time, each bounded by `timeout`.
/// An error is one line: no member reachable, or a lookup that failed (not a lost write).
pub fn verify_writes(
    members: &[Endpoint],
    acks: &[(u64, i64)],
    keys: Keys,
    net: &NetConfig,
    h2: &H2Config,
    token: Option<&str>,
    timeout: Duration,
) -> Result<Verified, String> {
    crate::client::block_on(async {
        let mut last = String::from("no member to ask");
        for (i, ep) in members.iter().enumerate() {
            match Connection::open(ep, i, Proto::Grpc, net, h2).await {
                Ok(conn) => {
                    let out = lookups(conn, ep, acks, keys, token, timeout).await;
                    return out.map(|v| Verified {
                        via: ep.url.clone(),
                        ..v
                    });
                }
                Err(e) => last = format!("connect to {}: {e}", ep.url),
            }
        }
        Err(format!("--verify: {last}"))
    })?
}

async fn lookups(
    conn: Connection,
    ep: &Endpoint,
    acks: &[(u64, i64)],
    keys: Keys,
    token: Option<&str>,
    timeout: Duration,
) -> Result<Verified, String> {
    let Connection::Grpc(grpc_conn, _) = &conn else {
        return Err("--verify: the lookups run over gRPC".into());
    };
    let next = Rc::new(Cell::new(0usize));
    let found = Rc::new(RefCell::new(Verified::default()));
    let failure: Rc<RefCell<Option<String>>> = Rc::default();
    let acks: Rc<[(u64, i64)]> = acks.into();
    let mut tasks = Vec::with_capacity(IN_FLIGHT);
    for _ in 0..IN_FLIGHT.min(acks.len()) {
        let mut send = grpc_conn.handle();
        let ledger = grpc_conn.ledger().clone();
        let (next, found, failure, acks) =
            (next.clone(), found.clone(), failure.clone(), acks.clone());
        let (authority, token) = (ep.authority.clone(), token.map(str::to_string));
        tasks.push(tokio::task::spawn_local(async move {
            loop {
                let i = next.get();
                if i >= acks.len() || failure.borrow().is_some() {
                    return;
                }
                next.set(i + 1);
                let (first, rev) = acks[i];
                // the first key of this write that was not as written
                let mut lost = None;
                for j in 0..keys.ops as u64 {
                    let n = (first + j) % keys.space.max(1);
                    let key = put_key(keys.size, n);
                    let lookup = Client::grpc(&mut send, &ledger, &authority)
                        .with_token(token.as_deref())
                        .mod_revision_at(&key, rev);
                    let got = match tokio::time::timeout(timeout, lookup).await {
                        Ok(Ok(m)) => m,
                        Ok(Err(f)) => {
                            failure
                                .borrow_mut()
                                .get_or_insert(format!("--verify: range at revision {rev}: {f}"));
                            return;
                        }
                        Err(_) => {
                            failure.borrow_mut().get_or_insert(format!(
                                "--verify: range at revision {rev}: no answer within {timeout:?}"
                            ));
                            return;
                        }
                    };
                    if got != Some(rev) {
                        lost = Some((n, rev, got));
                        break;
                    }
                }
                let mut v = found.borrow_mut();
                v.checked += 1;
                if let Some(example) = lost {
                    v.lost += 1;
                    if v.lost_examples.len() < EXAMPLES {
                        v.lost_examples.push(example);
                    }
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    conn.close().await;
    if let Some(e) = failure.borrow_mut().take() {
        return Err(e);
    }
    let v = found.borrow().clone();
    Ok(v)
}
