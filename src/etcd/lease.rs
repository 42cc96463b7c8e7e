//! `etcd lease-keepalive`'s leases: one granted per client before a run's measured window and
//! revoked after it, over gRPC on a connection of their own (outside every figure of the run).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use crate::config::{Endpoint, Proto};
use crate::net::{H2Config, NetConfig};
use crate::outcome::{Failure, FailureKind};
use crate::stats::Leases;
use crate::workload::etcd::client::{Client, Connection};

/// Grants or revocations in flight at once (h2 streams on one connection).
const IN_FLIGHT: usize = 32;

/// etcd's answer to revoking a lease it no longer has.
const NOT_FOUND: &str = "requested lease not found";

/// Where the lease calls go: the members a run may use (its endpoints first), its
/// connection settings, its auth token and its per-request timeout.
pub struct Via<'a> {
    pub members: &'a [Endpoint],
    pub net: &'a NetConfig,
    pub h2: &'a H2Config,
    pub token: Option<&'a str>,
    pub timeout: Duration,
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

/// Grants `n` leases of `ttl` seconds: their ids and the TTL etcd granted. One line on error
/// (the leases granted until then are revoked first).
pub fn grant(via: &Via<'_>, n: usize, ttl: i64) -> Result<(Vec<i64>, i64), String> {
    let answers = calls(via, vec![Call::Grant(ttl); n]);
    let (answers, stopped) = match answers {
        Ok(a) => (a, None),
        Err((a, why)) => (a, Some(why)),
    };
    let mut granted = Vec::with_capacity(n);
    let mut first_error = stopped;
    for a in answers.into_iter().flatten() {
        match a {
            Ok(Some(lease)) => granted.push(lease),
            Ok(None) => {}
            Err(f) => {
                first_error.get_or_insert_with(|| f.to_string());
            }
        }
    }
    let ids: Vec<i64> = granted.iter().map(|&(id, _)| id).collect();
    if let Some(e) = first_error {
        let _ = revoke(via, &ids);
        return Err(format!("granting the clients' leases: {e}"));
    }
    Ok((ids, granted.first().map_or(ttl, |&(_, t)| t)))
}

/// Revokes the leases `ids`: a lease already gone counts as gone, not failed; a revocation
/// that could not be made leaves its lease to expire (counted as failed, with the last reason).
pub fn revoke(via: &Via<'_>, ids: &[i64]) -> Leases {
    let (answers, stopped) = match calls(via, ids.iter().map(|&id| Call::Revoke(id)).collect()) {
        Ok(a) => (a, None),
        Err((a, why)) => (a, Some(why)),
    };
    let mut t = Leases::default();
    for a in answers {
        match a {
            Some(Ok(_)) => t.revoked += 1,
            Some(Err(f))
                if f.kind == FailureKind::Etcd
                    && f.detail.as_deref().is_some_and(|d| d.contains(NOT_FOUND)) =>
            {
                t.gone += 1
            }
            Some(Err(f)) => {
                t.revoke_failed += 1;
                t.revoke_error = Some(f.to_string());
            }
            None => t.revoke_failed += 1,
        }
    }
    if let Some(why) = stopped {
        t.revoke_error = Some(why);
    }
    t
}

/// Makes every call of `todo`, `IN_FLIGHT` at a time on one gRPC connection to the first of
/// `via.members` that accepts one, each bounded by the timeout: each call's answer (None: not
/// made). A timeout stops the batch (the connection is in doubt); so does finding no member:
/// then the answers so far and the reason.
#[allow(clippy::type_complexity)]
fn calls(
    via: &Via<'_>,
    todo: Vec<Call>,
) -> Result<Vec<Option<Answer>>, (Vec<Option<Answer>>, String)> {
    let n = todo.len();
    let timeout = via.timeout;
    let answers: Rc<RefCell<Vec<Option<Answer>>>> = Rc::new(RefCell::new(vec![None; n]));
    let todo: Rc<[Call]> = todo.into();
    let out = crate::client::block_on(async {
        let mut last = String::from("no member to ask");
        for (m, ep) in via.members.iter().enumerate() {
            let conn = match Connection::open(ep, m, Proto::Grpc, via.net, via.h2).await {
                Ok(c) => c,
                Err(e) => {
                    last = format!("connect to {}: {e}", ep.url);
                    continue;
                }
            };
            let Connection::Grpc(grpc_conn, _) = &conn else {
                return Some("the lease calls run over gRPC".to_string());
            };
            let next = Rc::new(Cell::new(0usize));
            let stop: Rc<RefCell<Option<String>>> = Rc::default();
            let mut tasks = Vec::with_capacity(IN_FLIGHT);
            for _ in 0..IN_FLIGHT.min(n) {
                let mut send = grpc_conn.handle();
                let ledger = grpc_conn.ledger().clone();
                let (next, stop, todo, answers) =
                    (next.clone(), stop.clone(), todo.clone(), answers.clone());
                let (authority, token) = (ep.authority.clone(), via.token.map(str::to_string));
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
                                stop.borrow_mut()
                                    .get_or_insert(format!("no answer within {timeout:?}"));
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
        Ok(None) => Ok(answers),
        Ok(Some(why)) | Err(why) => Err((answers, why)),
    }
}
