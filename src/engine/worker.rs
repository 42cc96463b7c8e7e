//! The state one worker thread's clients share (`Worker`) and what they record through it:
//! each client's turns (closed loop, the open-loop schedule, the `--client-stages` gate), the
//! outcome of each request, and the reconnect backoff.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::client::{BACKOFF_MAX, BACKOFF_MIN};
use crate::outcome::{Failure, FailureKind, GAVE_UP, StatusKey};
use crate::stats::reqlog::{Row, ThreadLog};
use crate::stats::{At, Stats};
use crate::workload::{Ack, Workload};

use super::closer::Closer;
use super::ramp::{Admit, Gate};
use super::{Ctx, pace, progress, ramp};

/// Per-thread state shared by that thread's client tasks.
pub(super) struct Worker {
    pub(super) ctx: Arc<Ctx>,
    pub(super) stats: RefCell<Stats>,
    /// connections closing in the background (replaced mid-run, or at the end) and the records
    /// of those closed
    pub(super) closer: Rc<Closer>,
    pub(super) sample: RefCell<Option<Value>>,
    /// Measurement starts here; requests started before it are warmup.
    pub(super) warmup_end: Instant,
    /// a turn's clock read saw `warmup_end` pass: later turns without a deadline read no clock
    pub(super) measuring: Cell<bool>,
    /// Duration mode: no new request starts after this.
    pub(super) deadline: Option<Instant>,
    /// open loop: the ticks this thread releases
    pub(super) pacer: Option<pace::Pacer>,
    /// the progress bar's counters for this thread
    pub(super) progress: Option<(Arc<[progress::Counters]>, usize)>,
    /// `--log-requests`: this thread's rows
    pub(super) log: RefCell<Option<ThreadLog>>,
    /// the loop this thread's HTTP/1.1 clients ran on (`stats::CLIENT_LOOP_*`), None: a runtime
    /// task each
    pub(super) client_loop: Cell<Option<&'static str>>,
}

/// What the request log (`--log-requests`) keeps of a request besides its outcome: when it
/// started, the connection it went on (its local port), its response's body bytes.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Trace {
    /// None: when it failed (a request that found no connection)
    pub(super) started: Option<Instant>,
    /// never sent (an expired open-loop send): no latency
    pub(super) unsent: bool,
    pub(super) port: Option<u16>,
    pub(super) bytes: Option<u64>,
}

impl Trace {
    /// A request started at `started` on the connection with local port `port`.
    pub(super) fn on(started: Instant, port: Option<u16>) -> Trace {
        Trace {
            started: Some(started),
            port,
            ..Trace::default()
        }
    }

    /// The same, with a response of `n` body bytes.
    pub(super) fn bytes(self, n: usize) -> Trace {
        Trace {
            bytes: Some(n as u64),
            ..self
        }
    }

    /// A send due at `at` that never went out.
    pub(super) fn unsent(at: Instant) -> Trace {
        Trace {
            started: Some(at),
            unsent: true,
            ..Trace::default()
        }
    }
}

/// A client's next send: warmup or measured, and (open loop) when it was meant to go.
#[derive(Debug, Clone, Copy)]
pub(super) struct Turn {
    pub(super) warm: bool,
    pub(super) intended: Option<Instant>,
}

impl Worker {
    /// The next send of a client talking to `endpoint`, or None when it should stop. Closed loop:
    /// at once while the run lasts. Open loop: when the schedule releases one.
    pub(super) async fn next(&self, endpoint: usize, sent: u64, quota: u64) -> Option<Turn> {
        let Some(pacer) = &self.pacer else {
            return self.phase(sent, quota).map(|warm| Turn {
                warm,
                intended: None,
            });
        };
        loop {
            if self.ctx.halted() {
                return None;
            }
            match pacer.next(self.ctx.timeout).await? {
                pace::Take::Send(t) => {
                    if !t.warm {
                        let at = self.at(endpoint, t.intended);
                        let lag = t.intended.elapsed();
                        let mut st = self.stats.borrow_mut();
                        st.record_scheduled(at);
                        st.max_send_lag = st.max_send_lag.max(lag);
                        st.lagged_sends += 1;
                        st.send_lag_sum += lag;
                    }
                    return Some(Turn {
                        warm: t.warm,
                        intended: Some(t.intended),
                    });
                }
                pace::Take::Expired(t, f) => {
                    if !t.warm {
                        let at = self.at(endpoint, t.intended);
                        let mut st = self.stats.borrow_mut();
                        st.record_scheduled(at);
                        st.expired += 1;
                    }
                    self.fail(endpoint, t.warm, None, f, Trace::unsent(t.intended))
                }
            }
        }
    }

    /// The next turn of a client: `again` (a request to send once more) first. With
    /// `--client-stages`, a client outside its stretch calls `paused` and waits first.
    pub(super) async fn turn(
        &self,
        again: &mut Option<Turn>,
        gate: &mut Option<Gate>,
        mut paused: impl FnMut(),
        endpoint: usize,
        sent: u64,
        quota: u64,
    ) -> Option<Turn> {
        if let Some(t) = again.take() {
            return Some(t);
        }
        if let Some(g) = gate {
            loop {
                match g.admit(&self.ctx, self.warmup_end) {
                    Admit::Go => break,
                    Admit::Never => return None,
                    Admit::Wait(t) => {
                        paused();
                        // boxed: the sleep would otherwise be in every client's future
                        Box::pin(ramp::pause(self.deadline, t)).await;
                        self.phase(0, u64::MAX)?;
                    }
                }
            }
        }
        self.next(endpoint, sent, quota).await
    }

    /// `endpoint`, the offset of `now` into the measured window and its stage.
    pub(super) fn at(&self, endpoint: usize, now: Instant) -> At {
        let offset = now.saturating_duration_since(self.warmup_end);
        let ends = &self.ctx.stage_ends;
        At {
            endpoint,
            offset,
            stage: (!ends.is_empty())
                .then(|| ends.partition_point(|e| *e <= offset).min(ends.len() - 1)),
        }
    }

    pub(super) fn bump_progress(&self, failed: bool) {
        if let Some((c, i)) = &self.progress {
            c[*i].done(failed);
        }
    }

    /// A successful measured request: latency from the intended send time in open loop
    /// (corrected) and from `sent` as well; from `sent` alone in closed loop. The pacer never
    /// releases a send before its intended time; should one still start earlier, the corrected
    /// latency counts from the actual start, so it is never below the uncorrected one.
    /// Returns the latency recorded. The response was complete now (see `ok_at`).
    pub(super) fn ok(
        &self,
        endpoint: usize,
        turn: Turn,
        sent: Instant,
        status: StatusKey,
        trace: Trace,
    ) -> Duration {
        self.ok_at(endpoint, turn, sent, Instant::now(), status, trace)
    }

    /// `ok` with the time the response was complete, `now`, read by the caller (the responses
    /// one pipelined read completed share one reading).
    pub(super) fn ok_at(
        &self,
        endpoint: usize,
        turn: Turn,
        sent: Instant,
        now: Instant,
        status: StatusKey,
        trace: Trace,
    ) -> Duration {
        let at = self.at(endpoint, now);
        let from = turn.intended.map_or(sent, |i| i.min(sent));
        let latency = now - from;
        let mut st = self.stats.borrow_mut();
        st.record_ok(at, latency, status);
        if turn.intended.is_some() {
            st.record_uncorrected(now - sent);
        }
        drop(st);
        if let Some(log) = self.log.borrow_mut().as_mut() {
            log.push(Row {
                start_ns: nanos(from.saturating_duration_since(self.warmup_end)),
                latency_ns: Some(nanos(latency)),
                status: Some(status),
                connection: trace.port,
                bytes: trace.bytes,
                error: None,
            });
        }
        if let Some(r) = &self.ctx.routes {
            r.succeeded(endpoint);
        }
        self.bump_progress(false);
        latency
    }

    /// After `ok` or `fail`: a measured request of a workload whose requests have classes
    /// (txn-mixed: reads, writes) counted in its class as well, with the latency `ok` recorded
    /// (None: it failed). Nothing for a warmup request or a workload of one kind.
    pub(super) fn classed(&self, class: Option<u8>, warm: bool, latency: Option<Duration>) {
        if let Some(c) = class
            && !warm
        {
            self.stats.borrow_mut().record_class(c, latency);
        }
    }

    /// `--requests-per-conn`, after `ok`: the same request's latency from `ready`, when its
    /// connection was ready (after the connect it may have waited for).
    pub(super) fn without_setup(&self, ready: Instant) {
        if self.ctx.requests_per_conn.is_some() {
            self.stats
                .borrow_mut()
                .record_without_setup(ready.elapsed());
        }
    }

    /// A successful streaming call, after `ok`: its messages and its latencies.
    pub(super) fn streamed(&self, s: &crate::stats::StreamFigures) {
        self.stats.borrow_mut().record_stream(s);
    }

    /// A ping-pong reply `d` after its message (measured turns only).
    pub(super) fn message_reply(&self, d: Duration) {
        self.stats.borrow_mut().record_message(d);
    }

    /// What a successful request acknowledged: the watch puts' revisions by key, or with
    /// `--verify` every put's key index and revision; nothing otherwise.
    pub(super) fn acked(&self, ack: Ack) {
        let Some((key, revision)) = ack else { return };
        match self.ctx.acks {
            super::Acks::ByKey => {
                let at = Workload::stamp(Instant::now());
                let mut st = self.stats.borrow_mut();
                st.record_revision(key, revision);
                st.acked_at.push((revision, at));
            }
            super::Acks::Listed => self.stats.borrow_mut().acks.push((key as u64, revision)),
            super::Acks::Dropped => {}
        }
    }

    /// Counts one failed request (warmup requests only as a number).
    pub(super) fn fail(
        &self,
        endpoint: usize,
        warm: bool,
        status: Option<StatusKey>,
        f: Failure,
        trace: Trace,
    ) {
        if let Some(r) = &self.ctx.routes {
            r.failed(endpoint, &f, !warm);
        }
        if warm {
            self.warmup_done();
            return;
        }
        let now = Instant::now();
        let at = self.at(endpoint, now);
        if let Some(log) = self.log.borrow_mut().as_mut() {
            let started = trace.started.unwrap_or(now);
            log.push(Row {
                start_ns: nanos(started.saturating_duration_since(self.warmup_end)),
                latency_ns: (!trace.unsent && trace.started.is_some())
                    .then(|| nanos(now.saturating_duration_since(started))),
                status,
                connection: trace.port,
                bytes: trace.bytes,
                error: Some(f.kind),
            });
        }
        self.stats.borrow_mut().record_failure(at, status, f);
        self.bump_progress(true);
    }

    /// `n` measured requests that were never sent and failed the same way (a quota given up).
    pub(super) fn fail_unsent(&self, endpoint: usize, n: u64, f: Failure) {
        let now = Instant::now();
        if let Some(log) = self.log.borrow_mut().as_mut() {
            for _ in 0..n {
                log.push(Row {
                    start_ns: nanos(now.saturating_duration_since(self.warmup_end)),
                    latency_ns: None,
                    status: None,
                    connection: None,
                    bytes: None,
                    error: Some(f.kind),
                });
            }
        }
        let at = self.at(endpoint, now);
        self.stats.borrow_mut().record_failures(at, n, f);
    }

    /// A request's bytes went to the socket: measured ones are the window's denominator.
    pub(super) fn wrote(&self, warm: bool) {
        if !warm {
            self.stats.borrow_mut().written += 1;
        }
    }

    pub(super) fn warmup_done(&self) {
        self.stats.borrow_mut().warmup += 1;
        self.bump_progress(false);
    }

    /// Whether a request starting now is warmup, measured, or not to be sent (`None`).
    pub(super) fn phase(&self, sent: u64, quota: u64) -> Option<bool> {
        self.phase_with(sent, quota, &mut None)
    }

    /// `phase` with the caller's clock reading: where the phase needs the clock (the warmup, a
    /// deadline) it uses `now`, read here if None and left there, so the request it lets go
    /// starts at that reading (one clock read for both; the loops' requests start right after).
    pub(super) fn phase_with(
        &self,
        sent: u64,
        quota: u64,
        now: &mut Option<Instant>,
    ) -> Option<bool> {
        if self.ctx.halted() {
            return None;
        }
        // the clock is read while the warmup lasts, and for a deadline
        let now = (!self.measuring.get() || self.deadline.is_some())
            .then(|| *now.get_or_insert_with(Instant::now));
        if let Some(now) = now
            && !self.measuring.get()
        {
            if now < self.warmup_end {
                return Some(true);
            }
            self.measuring.set(true);
        }
        match (self.deadline, now) {
            (Some(d), Some(now)) if now >= d => None,
            (None, _) if sent >= quota => None,
            _ => Some(false),
        }
    }

    pub(super) fn keep_sample(&self, f: impl FnOnce() -> Value) {
        let mut s = self.sample.borrow_mut();
        if s.is_none() {
            *s = Some(f());
        }
    }
}

/// Tracks connect failures of one client: capped exponential backoff, and in total mode gives
/// up once the server has been unreachable for longer than the request timeout.
pub(super) struct Reconnect {
    pub(super) delay: Duration,
    pub(super) down_since: Option<Instant>,
}

impl Reconnect {
    pub(super) fn new() -> Self {
        Reconnect {
            delay: BACKOFF_MIN,
            down_since: None,
        }
    }

    pub(super) fn ok(&mut self) {
        self.delay = BACKOFF_MIN;
        self.down_since = None;
    }

    /// Counts a turn that found no connection, backs off, and returns false when the client
    /// should stop: then its remaining quota is counted as failed too (total mode only).
    ///
    /// In total mode the turn is one of the N requests and in open loop one scheduled send:
    /// both fail as `connect`. In closed-loop duration mode there is no fixed number of
    /// requests, and how many turns fit in the run would only measure the backoff, so the turn
    /// is no request: it counts as a connect failure alone.
    pub(super) async fn connect_failed(
        &mut self,
        w: &Worker,
        endpoint: usize,
        warm: bool,
        sent: &mut u64,
        quota: u64,
        f: Failure,
    ) -> bool {
        {
            let mut st = w.stats.borrow_mut();
            st.connect_failures += 1;
            st.connect_error = Some(f.clone());
        }
        if w.deadline.is_none() || w.pacer.is_some() {
            w.fail(endpoint, warm, None, f, Trace::default());
            *sent += u64::from(!warm);
        } else if let Some(r) = &w.ctx.routes {
            r.failed(endpoint, &f, false);
        }
        if self.failed(w).await {
            return true;
        }
        w.fail_unsent(
            endpoint,
            quota.saturating_sub(*sent),
            Failure::with(FailureKind::Connect, GAVE_UP),
        );
        false
    }

    /// After a failed connect: sleeps the backoff; returns false when the client should give up.
    pub(super) async fn failed(&mut self, w: &Worker) -> bool {
        let since = *self.down_since.get_or_insert_with(Instant::now);
        // Open loop: the schedule bounds the run, and every tick counts as a failure meanwhile.
        if w.deadline.is_none() && w.pacer.is_none() && since.elapsed() >= w.ctx.timeout {
            return false;
        }
        let mut delay = self.delay;
        // clients that can be moved try again soon: the slot may point elsewhere by then
        if w.ctx.routes.is_some() {
            delay = delay.min(super::failover::RETRY_EVERY);
        }
        if let Some(d) = w.deadline {
            delay = delay.min(d.saturating_duration_since(Instant::now()));
        }
        tokio::time::sleep(delay).await;
        self.delay = (self.delay * 2).min(BACKOFF_MAX);
        true
    }
}

/// A duration in ns (saturating: 584 years).
pub(super) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
