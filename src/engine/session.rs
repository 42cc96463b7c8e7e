//! The one client loop every stack runs: a client takes a turn (closed loop, the open-loop
//! schedule, the `--client-stages` gate), makes sure it has a connection (backing off while it
//! cannot connect), and hands the request to its stack's `Session`, which sends it, reads the
//! answer and records it. A stack is a `Session`: it never drives the loop itself.

use std::time::Instant;

use crate::outcome::Failure;

use super::plan::quota;
use super::ramp::Gate;
use super::worker::{Reconnect, Turn, Worker};

/// What became of one request: done (recorded), or to be sent again with the same turn (the
/// target refused the credentials and the client authenticated again).
pub(super) enum Exchange {
    Done,
    Again,
}

/// One client of a stack: its connection (or its share of one) and what it sends.
pub(super) trait Session {
    /// The endpoint slot the client's requests go to.
    fn endpoint(&self) -> usize;

    /// The client leaves its stretch of `--client-stages` until its next turn (HTTP/1.1 closes
    /// its connection meanwhile).
    fn pause(&mut self, _w: &Worker) {}

    /// A live connection to send on: the one it has, or a new one (a reconnect unless the client
    /// had none because of its stretch). The error is the connect's.
    async fn ready(&mut self, w: &Worker) -> Result<(), Failure>;

    /// Request number `idx` of `turn`: sent, answered (or failed) and recorded. `setup_from`:
    /// with `--requests-per-conn`, when the turn began, before the connect `ready` may have made
    /// (the request's latency counts from there).
    async fn exchange(
        &mut self,
        w: &Worker,
        turn: Turn,
        idx: u64,
        setup_from: Option<Instant>,
    ) -> Exchange;
}

/// Client `id`'s loop over `session` until the run stops it (its quota, the duration, the
/// schedule, Ctrl-C), or it gives up on an unreachable server.
pub(super) async fn drive<S: Session>(w: &Worker, id: usize, session: &mut S) {
    let ctx = &w.ctx;
    let quota = quota(ctx, id);
    let endpoint = session.endpoint();
    // request numbers: id, id + clients, ... (every client of every thread its own)
    let mut idx = id as u64;
    let mut sent = 0u64;
    let mut reconnect = Reconnect::new();
    // a turn to use again: the request goes again after re-authenticating
    let mut again = None;
    let mut gate = Gate::new(ctx, w.warmup_end, id);
    while let Some(turn) = w
        .turn(
            &mut again,
            &mut gate,
            || session.pause(w),
            endpoint,
            sent,
            quota,
        )
        .await
    {
        let warm = turn.warm;
        // --requests-per-conn: the connect is part of the request it precedes
        let setup_from = ctx.requests_per_conn.map(|_| Instant::now());
        if let Err(f) = session.ready(w).await {
            // boxed: the backoff's sleep would otherwise be in every client's future
            if Box::pin(reconnect.connect_failed(w, endpoint, warm, &mut sent, quota, f)).await {
                continue;
            }
            break;
        }
        reconnect.ok();
        let this = idx;
        idx += ctx.clients as u64;
        sent += u64::from(!warm);
        if let Exchange::Again = session.exchange(w, turn, this, setup_from).await {
            // the same request goes again: it was not counted
            sent -= u64::from(!warm);
            again = Some(turn);
        }
    }
}
