//! The plan of a run: which thread owns which clients and connections, each client's quota,
//! and the connect ramp.

use std::time::{Duration, Instant};

use crate::config::Stop;
use crate::stack::Proto;

use super::{Assignment, Ctx};

/// Opens connection `j` of this thread no earlier than `--connect-rate` allows: connection g
/// (over all threads) at `t0 + g / rate`.
pub(super) async fn connect_turn(ctx: &Ctx, a: &Assignment, j: usize, t0: Instant) {
    if let Some(rate) = ctx.connect_rate {
        let g = (j * ctx.threads + a.thread) as f64;
        tokio::time::sleep_until((t0 + Duration::from_secs_f64(g / rate)).into()).await;
    }
}

/// Number of measured requests client `id` of `clients` sends for `-n total`: the requests
/// with index id, id + clients, id + 2*clients, ... below total. Open loop: the schedule decides.
pub(super) fn quota(ctx: &Ctx, id: usize) -> u64 {
    if ctx.rate.is_some() {
        return u64::MAX;
    }
    quota_of(ctx.stop, id, ctx.clients)
}

pub(super) fn quota_of(stop: Stop, id: usize, clients: usize) -> u64 {
    match stop {
        Stop::Total(n) => {
            let (id, c) = (id as u64, clients as u64);
            if id >= n { 0 } else { (n - id).div_ceil(c) }
        }
        Stop::Duration(_) => u64::MAX,
    }
}

/// Splits clients (and shared connections: h2, or HTTP/1.1 with `pipeline` > 1) over threads;
/// returns only non-empty assignments.
pub(super) fn assign(
    proto: Proto,
    pipeline: usize,
    clients: usize,
    conns: usize,
    threads: usize,
    endpoints: usize,
) -> Vec<Assignment> {
    let mut out: Vec<Assignment> = (0..threads).map(|_| Assignment::default()).collect();
    match proto {
        Proto::Http if pipeline <= 1 => {
            for c in 0..clients {
                out[c % threads].clients.push((c, c % endpoints));
            }
        }
        _ => {
            // connection k lives on thread k % threads; client c uses connection c % conns
            let mut local = vec![0usize; conns];
            for (k, slot) in local.iter_mut().enumerate() {
                let t = &mut out[k % threads];
                *slot = t.conns.len();
                t.conns.push(k % endpoints);
            }
            for c in 0..clients {
                let k = c % conns;
                out[k % threads].clients.push((c, local[k]));
            }
        }
    }
    out.retain(|a| !a.clients.is_empty());
    for (i, a) in out.iter_mut().enumerate() {
        a.thread = i;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotas_add_up_to_total() {
        for (n, c) in [(20_000u64, 10usize), (7, 3), (2, 5), (0, 4), (1, 1)] {
            let sum: u64 = (0..c).map(|id| quota_of(Stop::Total(n), id, c)).sum();
            assert_eq!(sum, n, "n={n} c={c}");
        }
    }

    #[test]
    fn assignment_spreads_clients_and_conns() {
        let a = assign(Proto::Grpc, 1, 10, 3, 2, 1);
        let conns: usize = a.iter().map(|t| t.conns.len()).sum();
        let clients: usize = a.iter().map(|t| t.clients.len()).sum();
        assert_eq!((conns, clients), (3, 10));
        for t in &a {
            for &(_, k) in &t.clients {
                assert!(k < t.conns.len());
            }
        }
        // one connection: everything on one thread, the other thread unused
        let a = assign(Proto::Grpc, 1, 8, 1, 2, 1);
        assert_eq!(a.len(), 1);
        let a = assign(Proto::Http, 1, 5, 5, 2, 2);
        assert_eq!(a.iter().map(|t| t.clients.len()).sum::<usize>(), 5);
        assert_eq!(a[0].clients[1], (2, 0));
        // pipelined: 20 clients on ceil(20 / 16) = 2 connections, 10 each, one per thread
        let a = assign(Proto::Http, 16, 20, 2, 2, 1);
        assert_eq!(a.len(), 2);
        for t in &a {
            assert_eq!((t.conns.len(), t.clients.len()), (1, 10));
        }
    }
}
