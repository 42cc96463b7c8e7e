//! Watch streams over gRPC: bidi `Watch` streams on shared h2 connections, each carrying the
//! create requests of its watchers and their WatchResponses.

use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use http::header::{CONTENT_TYPE, HeaderValue, TE};
use http::{Method, Request, Uri, Version};

use super::config::{WatchConfig, stream_watchers};
use super::state::WatchState;
use crate::client::grpc::Conn as GrpcConn;
use crate::net::{H2Client, H2Config};
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
            // the bidi streams run on the h2 crate's client
            &H2Config {
                client: H2Client::H2,
                ..cfg.h2
            },
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
    // `open` connected with the h2 crate's client, which has this handle
    let mut send = conn
        .h2_handle()
        .expect("watch connections run on the h2 crate");
    let ledger = conn.ledger().clone();
    let mut req = Request::new(());
    *req.method_mut() = Method::POST;
    *req.uri_mut() = uri;
    *req.version_mut() = Version::HTTP_2;
    req.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    req.headers_mut()
        .insert(TE, HeaderValue::from_static("trailers"));
    if let Err(e) = std::future::poll_fn(|cx| send.poll_ready(cx)).await {
        st.error(Failure::with(FailureKind::H2, e));
        return;
    }
    let (response, mut tx) = match send.send_request(req, false) {
        Ok(r) => r,
        Err(e) => {
            st.error(Failure::with(FailureKind::H2, e));
            return;
        }
    };
    ledger.count_request();
    let mut frame = BytesMut::new();
    for &w in &watchers {
        frame.clear();
        grpc::encode(&create_request(&cfg, w), &mut frame);
        st.create_sent.borrow_mut()[w] = Some(Instant::now());
        if let Err(e) = tx.send_data(frame.split().freeze(), false) {
            st.error(Failure::with(FailureKind::H2, e));
            return;
        }
    }
    let response = tokio::select! {
        r = response => r,
        _ = st.stop.notified() => return,
    };
    let response = match response {
        Ok(r) => r,
        Err(e) => {
            st.error(Failure::with(FailureKind::H2, e));
            return;
        }
    };
    let (parts, mut body) = response.into_parts();
    if parts.status != http::StatusCode::OK || parts.headers.contains_key("grpc-status") {
        let status = parts
            .headers
            .get("grpc-message")
            .map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned())
            .unwrap_or_else(|| format!("HTTP {}", parts.status));
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
        let chunk = tokio::select! {
            c = body.data() => c,
            _ = st.stop.notified() => break,
        };
        let chunk = match chunk {
            Some(Ok(c)) => c,
            Some(Err(e)) => {
                st.error(Failure::with(FailureKind::H2, e));
                break;
            }
            None => {
                st.error(Failure::with(
                    FailureKind::Watch,
                    "etcd ended the watch stream",
                ));
                break;
            }
        };
        let _ = body.flow_control().release_capacity(chunk.len());
        rx.extend_from_slice(&chunk);
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
    drop(tx);
}
