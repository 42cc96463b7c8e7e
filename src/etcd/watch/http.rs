//! Watch streams over HTTP/1.1: one `POST /v3/watch` per stream through the gateway, read as a
//! chunked response of newline-delimited JSON lines.

use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use bytes::{BufMut, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::config::{WatchConfig, stream_watchers};
use super::state::{Response, WatchState};
use super::{Ended, WatchError};
use crate::config::Endpoint;
use crate::net::{self, Layers};
use crate::outcome::{Failure, FailureKind};
use crate::workload::etcd::client::gateway_code;
use wirebench_wire::etcd::watch as wline;
use wirebench_wire::http1::{self as h1, BodyKind, ChunkedDecoder, RequestTemplate};

/// Opens one connection per stream and starts its `POST /v3/watch` task. A stream that breaks
/// after its watchers were created moves to the next member of `members` that accepts a
/// connection (the given endpoints first).
pub(super) async fn open(
    cfg: &Arc<WatchConfig>,
    st: &Rc<WatchState>,
    members: &Rc<[Endpoint]>,
) -> Result<Vec<tokio::task::JoinHandle<()>>, WatchError> {
    let mut tasks = Vec::with_capacity(cfg.streams);
    for s in 0..cfg.streams {
        let e = s % cfg.endpoints.len();
        let ep = &cfg.endpoints[e];
        let watchers = stream_watchers(cfg.watchers, cfg.streams, s);
        let opened = net::open(
            &ep.dest(),
            &ep.host,
            &cfg.net,
            net::Alpn::Http1,
            Layers::Http1,
        )
        .await
        .map_err(|source| WatchError::Connect {
            addr: ep.addr,
            source,
        })?;
        tasks.push(tokio::task::spawn_local(stream(
            st.clone(),
            cfg.clone(),
            members.clone(),
            opened,
            e,
            s,
            watchers,
        )));
    }
    Ok(tasks)
}

/// One watch stream of `watchers`: created on its first member, and after a break that left
/// them created, again on the next live member from each watcher's resume revision, until the
/// run stops.
async fn stream(
    st: Rc<WatchState>,
    cfg: Arc<WatchConfig>,
    members: Rc<[Endpoint]>,
    mut opened: net::Opened,
    mut member: usize,
    index: usize,
    watchers: Vec<usize>,
) {
    let mut moved: Option<usize> = None;
    loop {
        let ep = &members[member];
        let ended = watch_on(&st, &cfg, opened, member, ep, &watchers, moved).await;
        if ended == Ended::Stopped {
            return;
        }
        let broke = Instant::now();
        let next = super::move_stream(&st, &members, (index, &watchers), member, broke, |m| {
            let ep = &members[m];
            let (dest, cfg) = (ep.dest(), &cfg);
            async move { net::open(&dest, &ep.host, &cfg.net, net::Alpn::Http1, Layers::Http1).await }
        });
        let Some((conn, to, m)) = next.await else {
            return;
        };
        moved = Some(m);
        (opened, member) = (conn, to);
    }
}

/// One `POST /v3/watch` on `opened`, a connection to `ep` (member `endpoint`): the create
/// requests of `watchers` in the body (from their resume revisions when the stream `moved`),
/// then their events from the chunked response until the run stops or the stream breaks. The
/// connection's record joins the state when it ends.
async fn watch_on(
    st: &WatchState,
    cfg: &WatchConfig,
    opened: net::Opened,
    endpoint: usize,
    ep: &Endpoint,
    watchers: &[usize],
    moved: Option<usize>,
) -> Ended {
    let authority = &ep.authority;
    let (mut io, ledger, local_port) = (opened.io, opened.ledger, opened.local_port);
    let opened = Instant::now();
    let record = |io: &net::Io| {
        let tcp = net::tcp_info(io.sock());
        ledger.record(
            endpoint,
            local_port,
            opened.elapsed().as_micros() as u64,
            tcp,
            None,
        )
    };
    let (wbuf, head_len, body_len) = match create_request(cfg, st, authority, watchers) {
        Ok(r) => r,
        Err(e) => {
            st.error(Failure::with(FailureKind::Http1, e));
            return Ended::Stopped;
        }
    };
    ledger.count_request();
    ledger.http1_request(head_len, body_len);
    if moved.is_none() {
        let now = Instant::now();
        for &w in watchers {
            st.create_sent.borrow_mut()[w] = Some(now);
        }
    }
    if let Err(e) = io.write_all(&wbuf).await {
        st.error(crate::client::io_failure(&e));
        st.conns.borrow_mut().push(record(&io));
        return Ended::Broken;
    }
    let mut rbuf = BytesMut::with_capacity(16 * 1024);
    let mut lines = BytesMut::with_capacity(16 * 1024);
    let mut chunked = ChunkedDecoder::new(u64::MAX);
    let mut pending: VecDeque<usize> = watchers.iter().copied().collect();
    let mut ids: HashMap<i64, usize> = HashMap::new();
    let mut head: Option<h1::ResponseHead> = None;
    let ended = loop {
        if st.stopped.get() {
            break Ended::Stopped;
        }
        let n = tokio::select! {
            r = io.read_buf(&mut rbuf) => r,
            _ = st.stop.notified() => break Ended::Stopped,
        };
        match n {
            Ok(0) => {
                st.error(Failure::with(
                    FailureKind::Closed,
                    "etcd closed the watch connection",
                ));
                break Ended::Broken;
            }
            Ok(_) => {}
            Err(e) => {
                st.error(crate::client::io_failure(&e));
                break Ended::Broken;
            }
        }
        if head.is_none() {
            match h1::decode_response_head(&mut rbuf, u64::MAX) {
                Ok(Some(h)) => {
                    if h.status != 200 || h.body != BodyKind::Chunked {
                        let msg = String::from_utf8_lossy(&rbuf).into_owned();
                        st.error(Failure::with(
                            FailureKind::Etcd,
                            format_args!("HTTP {}: {}", h.status, msg.trim()),
                        ));
                        break Ended::Broken;
                    }
                    head = Some(h);
                }
                Ok(None) => continue,
                Err(e) => {
                    st.error(Failure::with(FailureKind::Http1, e));
                    break Ended::Broken;
                }
            }
        }
        let ended = match chunked.decode(&mut rbuf, &mut lines) {
            Ok(ended) => ended,
            Err(e) => {
                st.error(Failure::with(FailureKind::Http1, e));
                break Ended::Broken;
            }
        };
        handle_lines(st, &mut lines, ended, moved, &mut pending, &mut ids);
        if ended {
            st.error(Failure::with(
                FailureKind::Watch,
                "etcd ended the watch response",
            ));
            break Ended::Broken;
        }
    };
    if let Some(h) = head {
        ledger.http1_response(
            h.head_len,
            chunked.data_bytes() as usize,
            chunked.framing_bytes(),
        );
    }
    st.chunks.set(st.chunks.get() + chunked.chunks());
    st.conns.borrow_mut().push(record(&io));
    ended
}

/// The `POST /v3/watch` request creating `watchers` (each from its start revision), to
/// `authority`: the request, its head's length and its body's.
fn create_request(
    cfg: &WatchConfig,
    st: &WatchState,
    authority: &str,
    watchers: &[usize],
) -> Result<(BytesMut, usize, usize), h1::Error> {
    // `Connection: close`, because the stream's connection is never reused, and because without
    // it etcd's HTTP server (Go's net/http) discards whatever part of the body the gateway has
    // not read yet when it writes the response head, which it does on the first confirmation:
    // a body of many create requests then loses some of them.
    let template = RequestTemplate::new(
        "POST",
        "/v3/watch",
        authority,
        &[
            ("Content-Type", "application/json"),
            ("Connection", "close"),
        ],
    )?;
    let mut body = BytesMut::new();
    for (i, &w) in watchers.iter().enumerate() {
        if i > 0 {
            body.put_u8(b'\n');
        }
        let (key, range_end) = cfg.range(w);
        wline::render_create_request(
            &key,
            range_end.as_deref(),
            st.start_revision(w),
            None,
            &mut body,
        );
    }
    let mut wbuf = BytesMut::new();
    let head_len = template.encode(&body, &mut wbuf);
    Ok((wbuf, head_len, body.len()))
}

/// Handles every complete line of `lines` (at the end of the body, `at_end`, also the last one,
/// which has no newline): WatchResponses for the stream's watchers (`pending`: those not
/// created yet, in order; `ids`: the watch ids of those created), and etcd's errors.
fn handle_lines(
    st: &WatchState,
    lines: &mut BytesMut,
    at_end: bool,
    moved: Option<usize>,
    pending: &mut VecDeque<usize>,
    ids: &mut HashMap<i64, usize>,
) {
    loop {
        let next = if at_end {
            wline::next_line_eof(lines)
        } else {
            wline::next_line(lines)
        };
        let line = match next {
            Ok(Some(line)) => line,
            Ok(None) => return,
            Err(e) => {
                st.error(Failure::with(FailureKind::BadResponse, e));
                return;
            }
        };
        match wline::parse_line(&line) {
            Ok(wline::WatchLine::Response {
                watch_id,
                revision,
                created,
                canceled,
                compact_revision,
                cancel_reason,
                events,
                ..
            }) => {
                let response = Response {
                    watch_id,
                    revision,
                    created,
                    canceled,
                    compact_revision,
                    cancel_reason: cancel_reason.as_deref().unwrap_or(""),
                    events: events
                        .into_iter()
                        .map(|e| (e.delete, e.mod_revision, e.value)),
                };
                st.response(response, pending, ids);
                st.recreated_all(moved, pending.is_empty());
            }
            Ok(wline::WatchLine::Error { code, message }) => st.error(match gateway_code(code) {
                Some(code) => Failure::status(FailureKind::Etcd, code, message),
                None => Failure::with(FailureKind::Etcd, message),
            }),
            Err(e) => st.error(Failure::with(FailureKind::BadResponse, e)),
        }
    }
}
