//! Watch streams over gRPC: bidi `Watch` streams on shared h2 connections, each carrying the
//! create requests of its watchers and their WatchResponses.

use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use http::Uri;

use super::config::{WatchConfig, stream_watchers};
use super::state::WatchState;
use crate::client::grpc::{Bidi, Call, Conn as GrpcConn};
use crate::outcome::{Failure, FailureKind};
use wirebench_wire::grpc;
use wirebench_wire::proto::etcd::{
    WatchCreateRequest, WatchRequest, WatchResponse, watch_request::RequestUnion,
};

/// Largest gRPC WatchResponse accepted (etcd fragments larger ones only when asked to).
const MAX_WATCH_MESSAGE: usize = 64 << 20;

/// Opens `--conns` h2 connections and one bidi Watch stream task per stream over them; one
/// more task closes the connections (their ledgers and TCP_INFO join the state) once every
/// stream task is done.
pub(super) async fn open(
    cfg: &Arc<WatchConfig>,
    st: &Rc<WatchState>,
) -> Result<Vec<tokio::task::JoinHandle<()>>, String> {
    let mut conns = Vec::with_capacity(cfg.conns);
    for c in 0..cfg.conns {
        let ep = &cfg.endpoints[c % cfg.endpoints.len()];
        let conn = GrpcConn::connect(
            ep.addr,
            &ep.host,
            c % cfg.endpoints.len(),
            &cfg.net,
            &cfg.h2,
        )
        .await
        .map_err(|e| format!("connect to {}: {e}", ep.addr))?;
        conns.push((Rc::new(conn), ep.authority.clone()));
    }
    let mut streams = Vec::with_capacity(cfg.streams);
    for s in 0..cfg.streams {
        let (conn, authority) = &conns[s % conns.len()];
        let watchers = stream_watchers(cfg.watchers, cfg.streams, s);
        let uri: Uri = format!("http://{authority}/etcdserverpb.Watch/Watch")
            .parse()
            .map_err(|e| format!("{authority}: {e}"))?;
        streams.push(tokio::task::spawn_local(stream(
            st.clone(),
            cfg.clone(),
            conn.clone(),
            uri,
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

fn create_request(cfg: &WatchConfig, w: usize) -> WatchRequest {
    let (key, range_end) = cfg.range(w);
    WatchRequest {
        request_union: Some(RequestUnion::CreateRequest(WatchCreateRequest {
            key: key.into(),
            range_end: range_end.unwrap_or_default().into(),
            ..Default::default()
        })),
    }
}

/// One bidi Watch stream: the create requests of `watchers`, then their events until stopped.
async fn stream(
    st: Rc<WatchState>,
    cfg: Arc<WatchConfig>,
    conn: Rc<GrpcConn>,
    uri: Uri,
    watchers: Vec<usize>,
) {
    let mut send = conn.handle();
    let ledger = conn.ledger().clone();
    let call = Call::new(uri, Vec::new(), FailureKind::Etcd);
    let mut bidi = match Bidi::open(&mut send, &ledger, &call, MAX_WATCH_MESSAGE).await {
        Ok(b) => b,
        Err(f) => {
            st.error(f);
            return;
        }
    };
    let mut frame = BytesMut::new();
    for &w in &watchers {
        frame.clear();
        grpc::encode(&create_request(&cfg, w), &mut frame);
        st.create_sent.borrow_mut()[w] = Some(Instant::now());
        if let Err(f) = bidi.send(frame.split().freeze()) {
            st.error(f);
            return;
        }
    }
    let head = tokio::select! {
        h = bidi.head() => h,
        _ = st.stop.notified() => return,
    };
    let head = match head {
        Ok(h) => h,
        Err(f) => {
            st.error(f);
            return;
        }
    };
    // the response head's uncompressed header list, for the ledger's HPACK ratio (a watch
    // stream has no trailers: it is reset when the run ends)
    if ledger.h2.is_some() {
        ledger.h2_header_lists(0, bidi.header_bytes_in());
    }
    if head.status != 200 || head.trailers_only {
        let status = head
            .message
            .unwrap_or_else(|| format!("HTTP {}", head.status));
        st.error(Failure::with(FailureKind::Etcd, status));
        return;
    }
    let mut pending: VecDeque<usize> = watchers.iter().copied().collect();
    let mut ids: HashMap<i64, usize> = HashMap::new();
    let mut rx = BytesMut::with_capacity(16 * 1024);
    loop {
        if st.stopped.get() {
            break;
        }
        let more = tokio::select! {
            r = bidi.recv(&mut rx) => r,
            _ = st.stop.notified() => break,
        };
        match more {
            Ok(true) => {}
            Err(f) => {
                st.error(f);
                break;
            }
            Ok(false) => {
                st.error(Failure::with(
                    FailureKind::Watch,
                    "etcd ended the watch stream",
                ));
                break;
            }
        }
        loop {
            match grpc::decode_message::<WatchResponse>(&mut rx, MAX_WATCH_MESSAGE) {
                Ok(Some(r)) => {
                    let revision_events = r.events.into_iter().map(|e| {
                        let kv = e.kv.unwrap_or_default();
                        (e.r#type == 1, kv.mod_revision, kv.value.to_vec())
                    });
                    st.response(
                        r.watch_id,
                        r.created,
                        r.canceled,
                        r.compact_revision,
                        &r.cancel_reason,
                        revision_events,
                        &mut pending,
                        &mut ids,
                    );
                }
                Ok(None) => break,
                Err(e) => {
                    st.error(Failure::with(FailureKind::GrpcFraming, e));
                    return;
                }
            }
        }
    }
    // Ends the stream: the request side is reset (CANCEL), which cancels its watches.
    drop(bidi);
}
