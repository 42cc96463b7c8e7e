//! Watch streams over HTTP/1.1: one `POST /v3/watch` per stream through the gateway, read as a
//! chunked response of newline-delimited JSON lines.

use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use bytes::{BufMut, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::config::{WatchConfig, stream_watchers};
use super::state::WatchState;
use crate::net::{self, Layers};
use crate::outcome::{Failure, FailureKind};
use wirebench_wire::http1::{self as h1, BodyKind, ChunkedDecoder, RequestTemplate};
use wirebench_wire::watch as wline;

/// Opens one connection per stream and starts its `POST /v3/watch` task.
pub(super) async fn open(
    cfg: &Arc<WatchConfig>,
    st: &Rc<WatchState>,
) -> Result<Vec<tokio::task::JoinHandle<()>>, String> {
    let mut tasks = Vec::with_capacity(cfg.streams);
    for s in 0..cfg.streams {
        let e = s % cfg.endpoints.len();
        let ep = &cfg.endpoints[e];
        let watchers = stream_watchers(cfg.watchers, cfg.streams, s);
        let opened = net::open(ep.addr, &ep.host, &cfg.net, net::Alpn::Http1, Layers::Http1)
            .await
            .map_err(|err| format!("connect to {}: {err}", ep.addr))?;
        tasks.push(tokio::task::spawn_local(stream(
            st.clone(),
            cfg.clone(),
            opened,
            e,
            ep.authority.clone(),
            watchers,
        )));
    }
    Ok(tasks)
}

/// One `POST /v3/watch` on its own connection: the create requests of `watchers` in the body,
/// then their events from the chunked response until stopped. The connection's record joins
/// the state when the stream ends.
async fn stream(
    st: Rc<WatchState>,
    cfg: Arc<WatchConfig>,
    opened: net::Opened,
    endpoint: usize,
    authority: String,
    watchers: Vec<usize>,
) {
    let (mut io, ledger, local_port) = (opened.io, opened.ledger, opened.local_port);
    let opened = Instant::now();
    let record = |io: &net::Io| {
        let tcp = net::tcp_info(io.tcp());
        ledger.record(
            endpoint,
            local_port,
            opened.elapsed().as_micros() as u64,
            tcp,
            None,
        )
    };
    let template = match RequestTemplate::new(
        "POST",
        "/v3/watch",
        &authority,
        &[("Content-Type", "application/json")],
    ) {
        Ok(t) => t,
        Err(e) => {
            st.error(Failure::with(FailureKind::Http1, e));
            return;
        }
    };
    let mut body = BytesMut::new();
    for (i, &w) in watchers.iter().enumerate() {
        if i > 0 {
            body.put_u8(b'\n');
        }
        let (key, range_end) = cfg.range(w);
        wline::render_create_request(&key, range_end.as_deref(), 0, None, &mut body);
    }
    let mut wbuf = BytesMut::new();
    let head_len = template.encode(&body, &mut wbuf);
    ledger.count_request();
    ledger.http1_request(head_len, body.len());
    let now = Instant::now();
    for &w in &watchers {
        st.create_sent.borrow_mut()[w] = Some(now);
    }
    if let Err(e) = io.write_all(&wbuf).await {
        st.error(crate::client::io_failure(&e));
        st.conns.borrow_mut().push(record(&io));
        return;
    }
    let mut rbuf = BytesMut::with_capacity(16 * 1024);
    let mut lines = BytesMut::with_capacity(16 * 1024);
    let mut chunked = ChunkedDecoder::new(u64::MAX);
    let mut pending: VecDeque<usize> = watchers.iter().copied().collect();
    let mut ids: HashMap<i64, usize> = HashMap::new();
    let mut head: Option<h1::ResponseHead> = None;
    loop {
        if st.stopped.get() {
            break;
        }
        let n = tokio::select! {
            r = io.read_buf(&mut rbuf) => r,
            _ = st.stop.notified() => break,
        };
        match n {
            Ok(0) => {
                st.error(Failure::with(
                    FailureKind::Closed,
                    "etcd closed the watch connection",
                ));
                break;
            }
            Ok(_) => {}
            Err(e) => {
                st.error(crate::client::io_failure(&e));
                break;
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
                        break;
                    }
                    head = Some(h);
                }
                Ok(None) => continue,
                Err(e) => {
                    st.error(Failure::with(FailureKind::Http1, e));
                    break;
                }
            }
        }
        let ended = match chunked.decode(&mut rbuf, &mut lines) {
            Ok(ended) => ended,
            Err(e) => {
                st.error(Failure::with(FailureKind::Http1, e));
                break;
            }
        };
        loop {
            // At the end of the body the gateway's last line (an error) has no newline.
            let next = if ended {
                wline::next_line_eof(&mut lines)
            } else {
                wline::next_line(&mut lines)
            };
            match next {
                Ok(Some(line)) => match wline::parse_line(&line) {
                    Ok(wline::WatchLine::Response {
                        watch_id,
                        created,
                        canceled,
                        compact_revision,
                        cancel_reason,
                        events,
                        ..
                    }) => st.response(
                        watch_id,
                        created,
                        canceled,
                        compact_revision,
                        cancel_reason.as_deref().unwrap_or(""),
                        events
                            .into_iter()
                            .map(|e| (e.delete, e.mod_revision, e.value)),
                        &mut pending,
                        &mut ids,
                    ),
                    Ok(wline::WatchLine::Error { message, .. }) => {
                        st.error(Failure::with(FailureKind::Etcd, message))
                    }
                    Err(e) => st.error(Failure::with(FailureKind::BadResponse, e)),
                },
                Ok(None) => break,
                Err(e) => {
                    st.error(Failure::with(FailureKind::BadResponse, e));
                    break;
                }
            }
        }
        if ended {
            st.error(Failure::with(
                FailureKind::Watch,
                "etcd ended the watch response",
            ));
            break;
        }
    }
    if let Some(h) = head {
        ledger.http1_response(
            h.head_len,
            chunked.data_bytes() as usize,
            chunked.framing_bytes(),
        );
    }
    st.chunks.set(st.chunks.get() + chunked.chunks());
    st.conns.borrow_mut().push(record(&io));
}
