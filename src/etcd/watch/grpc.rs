//! Watch streams over gRPC: bidi `Watch` streams on shared h2 connections, each carrying the
//! create requests of its watchers and their WatchResponses.

use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use http::Uri;

use super::config::{WatchConfig, stream_watchers};
use super::state::{Response, WatchState};
use super::{Ended, WatchError};
use crate::client::grpc::{Bidi, Call, Conn as GrpcConn};
use crate::config::Endpoint;
use crate::outcome::{Failure, FailureKind};
use wirebench_wire::grpc;
use wirebench_wire::proto::etcd::{
    WatchCreateRequest, WatchRequest, WatchResponse, watch_request::RequestUnion,
};

/// Largest gRPC WatchResponse accepted (etcd fragments larger ones only when asked to).
const MAX_WATCH_MESSAGE: usize = 64 << 20;

/// Opens `--conns` h2 connections and one bidi Watch stream task per stream over them; one
/// more task closes the connections (their ledgers and TCP_INFO join the state) once every
/// stream task is done. A stream that breaks after its watchers were created moves to the next
/// member of `members` that accepts a connection (the given endpoints first).
pub(super) async fn open(
    cfg: &Arc<WatchConfig>,
    st: &Rc<WatchState>,
    members: &Rc<[Endpoint]>,
) -> Result<Vec<tokio::task::JoinHandle<()>>, WatchError> {
    let mut conns = Vec::with_capacity(cfg.conns);
    for c in 0..cfg.conns {
        let m = c % cfg.endpoints.len();
        let ep = &cfg.endpoints[m];
        let conn = GrpcConn::connect(&ep.dest(), &ep.host, m, &cfg.net, &cfg.h2)
            .await
            .map_err(|source| WatchError::Connect {
                addr: ep.addr,
                source,
            })?;
        conns.push((Rc::new(conn), m));
    }
    let mut streams = Vec::with_capacity(cfg.streams);
    for s in 0..cfg.streams {
        let (conn, member) = &conns[s % conns.len()];
        let watchers = stream_watchers(cfg.watchers, cfg.streams, s);
        streams.push(tokio::task::spawn_local(stream(
            st.clone(),
            cfg.clone(),
            members.clone(),
            Link::Shared(conn.clone(), *member),
            s,
            watchers,
        )));
    }
    // The connections close (ledger, TCP_INFO) once every stream task is done.
    let st = st.clone();
    let linger = cfg.drain;
    Ok(vec![tokio::task::spawn_local(async move {
        for t in streams {
            let _ = t.await;
        }
        for (conn, _) in conns {
            if let Ok(conn) = Rc::try_unwrap(conn) {
                let rec = conn.close(linger).await;
                st.conns.borrow_mut().push(rec);
            }
        }
    })])
}

/// The connection a stream runs on: one of the shared ones it started on, or one of its own
/// after it moved; with the member it goes to.
enum Link {
    Shared(Rc<GrpcConn>, usize),
    Own(GrpcConn, usize),
}

impl Link {
    fn conn(&self) -> &GrpcConn {
        match self {
            Link::Shared(c, _) => c,
            Link::Own(c, _) => c,
        }
    }

    fn member(&self) -> usize {
        match self {
            Link::Shared(_, m) | Link::Own(_, m) => *m,
        }
    }

    /// Its own connection closes (its record joins the state); a shared one is closed by
    /// `open`'s closing task.
    async fn close(self, st: &WatchState, linger: std::time::Duration) {
        if let Link::Own(conn, _) = self {
            let rec = conn.close(linger).await;
            st.conns.borrow_mut().push(rec);
        }
    }
}

fn create_request(cfg: &WatchConfig, w: usize, start_revision: i64) -> WatchRequest {
    let (key, range_end) = cfg.range(w);
    WatchRequest {
        request_union: Some(RequestUnion::CreateRequest(WatchCreateRequest {
            key: key.into(),
            range_end: range_end.unwrap_or_default().into(),
            start_revision,
            ..Default::default()
        })),
    }
}

/// One watch stream of `watchers`: created on its first member, and after a break that left
/// them created, again on the next live member from each watcher's resume revision, until the
/// run stops.
async fn stream(
    st: Rc<WatchState>,
    cfg: Arc<WatchConfig>,
    members: Rc<[Endpoint]>,
    mut link: Link,
    index: usize,
    watchers: Vec<usize>,
) {
    let mut moved: Option<usize> = None;
    loop {
        let member = &members[link.member()];
        let ended = watch_on(&st, &cfg, link.conn(), member, &watchers, moved).await;
        if ended == Ended::Stopped {
            break;
        }
        let (broke, from) = (Instant::now(), link.member());
        link.close(&st, std::time::Duration::ZERO).await;
        let next = super::move_stream(&st, &members, (index, &watchers), from, broke, |m| {
            let ep = &members[m];
            let (dest, cfg) = (ep.dest(), &cfg);
            async move { GrpcConn::connect(&dest, &ep.host, m, &cfg.net, &cfg.h2).await }
        });
        let Some((conn, to, m)) = next.await else {
            return;
        };
        moved = Some(m);
        link = Link::Own(conn, to);
    }
    link.close(&st, cfg.drain).await;
}

/// Creates `watchers` on `conn` (from their resume revisions when the stream `moved`) and
/// takes their events until the run stops or the stream breaks.
async fn watch_on(
    st: &WatchState,
    cfg: &WatchConfig,
    conn: &GrpcConn,
    member: &Endpoint,
    watchers: &[usize],
    moved: Option<usize>,
) -> Ended {
    let uri: Uri = match format!("http://{}/etcdserverpb.Watch/Watch", member.authority).parse() {
        Ok(u) => u,
        Err(e) => {
            st.error(Failure::with(
                FailureKind::Watch,
                format_args!("{}: {e}", member.authority),
            ));
            return Ended::Stopped;
        }
    };
    let mut send = conn.handle();
    let ledger = conn.ledger().clone();
    let call = Call::new(uri, Vec::new(), FailureKind::Etcd);
    let mut bidi = match Bidi::open(&mut send, &ledger, &call, MAX_WATCH_MESSAGE).await {
        Ok(b) => b,
        Err(f) => {
            st.error(f);
            return Ended::Broken;
        }
    };
    let mut frame = BytesMut::new();
    for &w in watchers {
        frame.clear();
        grpc::encode(&create_request(cfg, w, st.start_revision(w)), &mut frame);
        if moved.is_none() {
            st.create_sent.borrow_mut()[w] = Some(Instant::now());
        }
        if let Err(f) = bidi.send(frame.split().freeze()) {
            st.error(f);
            return Ended::Broken;
        }
    }
    let head = tokio::select! {
        h = bidi.head() => h,
        _ = st.stop.notified() => return Ended::Stopped,
    };
    let head = match head {
        Ok(h) => h,
        Err(f) => {
            st.error(f);
            return Ended::Broken;
        }
    };
    // the response head's uncompressed header list, for the ledger's HPACK ratio (a watch
    // stream has no trailers: it is reset when the run ends)
    if ledger.h2.is_some() {
        ledger.h2_header_lists(0, bidi.header_bytes_in());
    }
    if head.status != 200 || head.trailers_only {
        let text = head
            .message
            .unwrap_or_else(|| format!("HTTP {}", head.status));
        st.error(match head.grpc_status {
            Some(Ok(code)) => Failure::status(FailureKind::Etcd, code, text),
            _ => Failure::with(FailureKind::Etcd, text),
        });
        return Ended::Broken;
    }
    let mut pending: VecDeque<usize> = watchers.iter().copied().collect();
    let mut ids: HashMap<i64, usize> = HashMap::new();
    let mut rx = BytesMut::with_capacity(16 * 1024);
    loop {
        if st.stopped.get() {
            return Ended::Stopped;
        }
        let more = tokio::select! {
            r = bidi.recv(&mut rx) => r,
            _ = st.stop.notified() => return Ended::Stopped,
        };
        match more {
            Ok(true) => {}
            Err(f) => {
                st.error(f);
                return Ended::Broken;
            }
            Ok(false) => {
                st.error(Failure::with(
                    FailureKind::Watch,
                    "etcd ended the watch stream",
                ));
                return Ended::Broken;
            }
        }
        loop {
            match grpc::decode_message::<WatchResponse>(&mut rx, MAX_WATCH_MESSAGE) {
                Ok(Some(r)) => {
                    let revision = r.header.as_ref().map_or(0, |h| h.revision);
                    let revision_events = r.events.into_iter().map(|e| {
                        let kv = e.kv.unwrap_or_default();
                        (e.r#type == 1, kv.mod_revision, kv.value.to_vec())
                    });
                    let response = Response {
                        watch_id: r.watch_id,
                        revision,
                        created: r.created,
                        canceled: r.canceled,
                        compact_revision: r.compact_revision,
                        cancel_reason: &r.cancel_reason,
                        events: revision_events,
                    };
                    st.response(response, &mut pending, &mut ids);
                    st.recreated_all(moved, pending.is_empty());
                }
                Ok(None) => break,
                Err(e) => {
                    st.error(Failure::with(FailureKind::GrpcFraming, e));
                    return Ended::Broken;
                }
            }
        }
    }
    // Dropping `bidi` ends the stream: the request side is reset (CANCEL), which cancels its
    // watches.
}
