//! `etcd lease-keepalive`'s leases: one granted per client before a run's measured window and
//! revoked after it, over gRPC on a connection of their own (outside every figure of the run).

use std::cell::{Cell, RefCell};
use std::io;
use std::rc::Rc;
use std::time::Duration;

use super::Cluster;
use crate::client::RuntimeError;
use crate::outcome::{Failure, FailureKind};
use crate::stack::Proto;
use crate::stats::Leases;
use crate::workload::etcd::client::{Client, Connection, Dial};
use wirebench_wire::grpc::Code;

/// Grants or revocations in flight at once (h2 streams on one connection).
const IN_FLIGHT: usize = 32;

/// Why a batch of lease calls stopped before every call was made.
#[derive(Debug, thiserror::Error)]
pub enum Stopped {
    #[error("no member to ask")]
    NoMember,
    #[error("connect to {url}: {source}")]
    Connect { url: String, source: io::Error },
    #[error("the lease calls run over gRPC")]
    NotGrpc,
    /// a call had no answer in time: the connection is in doubt
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

/// Why the clients' leases could not be granted.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error("granting the clients' leases: {0}")]
    Stopped(Stopped),
    #[error("granting the clients' leases: {0}")]
    Refused(Failure),
}

/// One lease call.
#[derive(Debug, Clone, Copy)]
enum Call {
    /// a lease of this TTL, seconds
    Grant(i64),
    Revoke(i64),
}

/// What a call answered: a granted lease's (id, TTL), or nothing.
type Answer = Result<Option<(i64, i64)>, Failure>;

/// Grants `n` leases of `ttl` seconds on `cluster`: their ids and the TTL etcd granted. On
/// error the leases granted until then are revoked first.
pub fn grant(cluster: &Cluster, n: usize, ttl: i64) -> Result<(Vec<i64>, i64), LeaseError> {
    let (answers, stopped) = calls(cluster, vec![Call::Grant(ttl); n]);
    let mut granted = Vec::with_capacity(n);
    let mut first_error = stopped.map(LeaseError::Stopped);
    for a in answers.into_iter().flatten() {
        match a {
            Ok(Some(lease)) => granted.push(lease),
            Ok(None) => {}
            Err(f) => {
                first_error.get_or_insert(LeaseError::Refused(f));
            }
        }
    }
    let ids: Vec<i64> = granted.iter().map(|&(id, _)| id).collect();
    if let Some(e) = first_error {
        let _ = revoke(cluster, &ids);
        return Err(e);
    }
    Ok((ids, granted.first().map_or(ttl, |&(_, t)| t)))
}

/// Whether a failed revocation says the lease is gone already (etcd's NOT_FOUND: "requested
/// lease not found").
fn gone(f: &Failure) -> bool {
    f.kind == FailureKind::Etcd && f.code == Some(Code::NotFound)
}

/// Revokes the leases `ids` on `cluster`: a lease already gone counts as gone, not failed; a
/// revocation that could not be made leaves its lease to expire (counted as failed, with the
/// last reason).
pub fn revoke(cluster: &Cluster, ids: &[i64]) -> Leases {
    let (answers, stopped) = calls(cluster, ids.iter().map(|&id| Call::Revoke(id)).collect());
    let mut t = Leases::default();
    for a in answers {
        match a {
            Some(Ok(_)) => t.revoked += 1,
            Some(Err(f)) if gone(&f) => t.gone += 1,
            Some(Err(f)) => {
                t.revoke_failed += 1;
                t.revoke_error = Some(f.to_string());
            }
            None => t.revoke_failed += 1,
        }
    }
    if let Some(why) = stopped {
        t.revoke_error = Some(why.to_string());
    }
    t
}

/// Makes every call of `todo`, `IN_FLIGHT` at a time on one gRPC connection to the first of
/// `cluster.members` that accepts one, each bounded by the timeout: each call's answer (None:
/// not made), and why the batch stopped early, if it did: a timeout (the connection is in
/// doubt), or no member to make them on.
fn calls(cluster: &Cluster, todo: Vec<Call>) -> (Vec<Option<Answer>>, Option<Stopped>) {
    let n = todo.len();
    let timeout = cluster.timeout;
    let answers: Rc<RefCell<Vec<Option<Answer>>>> = Rc::new(RefCell::new(vec![None; n]));
    let todo: Rc<[Call]> = todo.into();
    let out = crate::client::block_on(async {
        let mut last = Stopped::NoMember;
        for (m, ep) in cluster.members.iter().enumerate() {
            let dial = Dial {
                ep,
                proto: Proto::Grpc,
                net: &cluster.net,
                h2: &cluster.h2,
            };
            let conn = match Connection::open(dial, m).await {
                Ok(c) => c,
                Err(source) => {
                    last = Stopped::Connect {
                        url: ep.url.clone(),
                        source,
                    };
                    continue;
                }
            };
            let Connection::Grpc(grpc_conn, _) = &conn else {
                return Some(Stopped::NotGrpc);
            };
            let next = Rc::new(Cell::new(0usize));
            let stop: Rc<RefCell<Option<Stopped>>> = Rc::default();
            let mut tasks = Vec::with_capacity(IN_FLIGHT);
            for _ in 0..IN_FLIGHT.min(n) {
                let mut send = grpc_conn.handle();
                let ledger = grpc_conn.ledger().clone();
                let (next, stop, todo, answers) =
                    (next.clone(), stop.clone(), todo.clone(), answers.clone());
                let (authority, token) = (ep.authority.clone(), cluster.token.clone());
                tasks.push(tokio::task::spawn_local(async move {
                    loop {
                        let i = next.get();
                        if i >= todo.len() || stop.borrow().is_some() {
                            return;
                        }
                        next.set(i + 1);
                        let client = Client::grpc(&mut send, &ledger, &authority)
                            .with_token(token.as_deref());
                        let answer = match todo[i] {
                            Call::Grant(ttl) => {
                                let call = client.lease_grant(ttl);
                                tokio::time::timeout(timeout, call)
                                    .await
                                    .map(|r| r.map(Some))
                            }
                            Call::Revoke(id) => {
                                let call = client.lease_revoke(id);
                                tokio::time::timeout(timeout, call)
                                    .await
                                    .map(|r| r.map(|()| None))
                            }
                        };
                        match answer {
                            Ok(a) => answers.borrow_mut()[i] = Some(a),
                            Err(_) => {
                                stop.borrow_mut().get_or_insert(Stopped::Timeout(timeout));
                                return;
                            }
                        }
                    }
                }));
            }
            for t in tasks {
                let _ = t.await;
            }
            conn.close().await;
            return stop.take();
        }
        Some(last)
    });
    let answers = answers.take();
    match out {
        Ok(stopped) => (answers, stopped),
        Err(e) => (answers, Some(Stopped::Runtime(e))),
    }
}
