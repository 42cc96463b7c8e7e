//! Pipelined HTTP/1.1 (`--pipeline N`): up to N clients share one connection, each with one
//! request in it at a time (`client::http1::pipeline::Pipe`, driven by a task of its own): the
//! pipelined `Session`.

use std::rc::Rc;
use std::time::Instant;

use crate::client::http1::Conn;
use crate::client::http1::pipeline::Pipe;
use crate::outcome::{Failure, FailureKind};
use crate::workload::{ClientWork, Http1Work, reauthenticate_http};

use super::http1::{connect, retire};
use super::plan::connect_turn;
use super::session::{Exchange, Session, drive};
use super::worker::{Trace, Turn, Worker};
use super::{Assignment, Ctx, EngineError};

/// Opens this thread's connections before the start line (`a.conns` in order).
pub(super) async fn setup(ctx: &Ctx, a: &Assignment) -> Result<Vec<Conn>, EngineError> {
    let mut conns = Vec::with_capacity(a.conns.len());
    let t0 = Instant::now();
    for (j, &endpoint) in a.conns.iter().enumerate() {
        connect_turn(ctx, a, j, t0).await;
        conns.push(connect(ctx, endpoint).await?);
    }
    Ok(conns)
}

/// A pipe (and its driver task, in `run`) for each connection of `setup`.
pub(super) fn pipes(ctx: &Ctx, a: &Assignment, conns: Vec<Conn>) -> Vec<Rc<Pipe>> {
    let mut sharing = vec![0usize; a.conns.len()];
    for &(_, k) in &a.clients {
        sharing[k] += 1;
    }
    a.conns
        .iter()
        .zip(conns)
        .enumerate()
        .map(|(j, (&endpoint, conn))| Rc::new(Pipe::new(endpoint, sharing[j], conn, ctx.timeout)))
        .collect()
}

/// Runs every pipe's driver and every client; the drivers live on until `close`.
pub(super) async fn run(w: Rc<Worker>, a: &Assignment, pipes: &[Rc<Pipe>], work: &Http1Work) {
    for pipe in pipes {
        let (pipe, w) = (pipe.clone(), w.clone());
        tokio::task::spawn_local(async move {
            while let Some(dead) = pipe.drive().await {
                retire(&w, dead);
            }
        });
    }
    let mut next = vec![0usize; pipes.len()];
    let mut tasks = Vec::with_capacity(a.clients.len());
    for &(id, k) in &a.clients {
        let local = next[k];
        next[k] += 1;
        let mut client = Client {
            work: work.for_client(id as u64),
            pipe: pipes[k].clone(),
            local,
            reauthed: false,
        };
        let w = w.clone();
        tasks.push(tokio::task::spawn_local(async move {
            drive(&w, id, &mut client).await;
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

/// Stops every pipe's driver and starts closing its connection (the records are collected
/// with the others).
pub(super) fn close(w: &Worker, pipes: Vec<Rc<Pipe>>) {
    for pipe in pipes {
        if let Some(c) = pipe.close() {
            retire(w, c);
        }
    }
}

/// One client of a pipelined connection: `local` among the clients of `pipe`.
struct Client {
    pipe: Rc<Pipe>,
    local: usize,
    work: Http1Work,
    /// the request at hand is the one sent again after re-authenticating (at most once)
    reauthed: bool,
}

impl Session for Client {
    fn endpoint(&self) -> usize {
        self.pipe.endpoint
    }

    async fn ready(&mut self, w: &Worker) -> Result<(), Failure> {
        let endpoint = self.pipe.endpoint;
        let new = self
            .pipe
            .acquire(|| {
                Box::pin(async { connect(&w.ctx, endpoint).await.map_err(|e| e.to_string()) })
            })
            .await?;
        if new {
            w.stats.borrow_mut().reconnects += 1;
        }
        Ok(())
    }

    async fn exchange(
        &mut self,
        w: &Worker,
        turn: Turn,
        idx: u64,
        _setup_from: Option<Instant>,
    ) -> Exchange {
        let ctx = &w.ctx;
        let Client {
            pipe,
            local,
            work,
            reauthed,
        } = self;
        let (endpoint, local, warm) = (pipe.endpoint, *local, turn.warm);
        let started = Instant::now();
        let trace = Trace::on(started, pipe.local_port());
        pipe.submit(local, started + ctx.timeout, |buf| {
            work.encode_http(idx, endpoint, buf)
        });
        let out = pipe.outcome(local).await;
        let was_reauthed = std::mem::take(reauthed);
        // a request sent again after re-authenticating was written (and counted) the first time
        if out.written && !was_reauthed {
            w.wrote(warm);
        }
        let class = work.class();
        let status = match out.result {
            Ok(status) => status,
            Err(f) => {
                w.fail(endpoint, warm, None, f, trace);
                w.classed(class, warm, None);
                return Exchange::Done;
            }
        };
        match pipe.with_body(local, |body| work.check_http(status, body)) {
            // the target no longer accepts the token: authenticate on a connection of its own
            // (this one carries other clients' requests), then send again
            Err((_, f)) if !was_reauthed && ctx.auth.is_some() && work.token_refused(&f) => {
                match Box::pin(reauthenticate_apart(w, endpoint, work)).await {
                    Ok(()) => {
                        w.stats.borrow_mut().reauthenticated += 1;
                        *reauthed = true;
                        return Exchange::Again;
                    }
                    Err(f) => {
                        w.fail(endpoint, warm, None, f, trace);
                        w.classed(class, warm, None);
                    }
                }
            }
            _ if warm => w.warmup_done(),
            Ok((status, ack)) => {
                let trace = trace.bytes(pipe.with_body(local, <[u8]>::len));
                let latency = w.ok(endpoint, turn, started, status, trace);
                w.classed(class, warm, Some(latency));
                w.acked(ack);
                w.keep_sample(|| pipe.with_body(local, |body| work.sample_http(body)));
            }
            Err((status, f)) => {
                let trace = trace.bytes(pipe.with_body(local, <[u8]>::len));
                w.fail(endpoint, warm, Some(status), f, trace);
                w.classed(class, warm, None);
            }
        }
        Exchange::Done
    }
}

/// Re-authentication for a pipelined client, on a connection opened for it and closed after.
async fn reauthenticate_apart(
    w: &Worker,
    endpoint: usize,
    work: &mut Http1Work,
) -> Result<(), Failure> {
    let ctx = &w.ctx;
    let mut c = connect(ctx, endpoint)
        .await
        .map_err(|e| Failure::with(FailureKind::Connect, e))?;
    let authority = &ctx.authorities[ctx.member(endpoint)];
    let result = reauthenticate_http(work, &mut c, authority, ctx.auth.as_ref(), ctx.timeout).await;
    retire(w, c);
    result
}
