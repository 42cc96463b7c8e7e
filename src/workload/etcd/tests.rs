//! The etcd workload's requests over every stack, and the verdicts on their answers.

use std::time::{Duration, Instant};

use super::*;
use wirebench_wire::proto::etcd::{TxnRequest, request_op};

#[test]
fn stamps_read_back_as_the_time_since_they_were_written() {
    let mut value = vec![0xaa; 12];
    stamp(&mut value);
    assert_eq!(&value[STAMP_LEN..], &[0xaa; 4]);
    let later = Instant::now() + Duration::from_millis(5);
    let age = since_stamp(&value, later).expect("a stamp");
    assert!(age >= Duration::from_millis(5), "{age:?}");
    assert!(age < Duration::from_secs(5), "{age:?}");
    assert_eq!(since_stamp(&value[..4], later), None);
}

use wirebench_wire::proto::etcd::PutRequest;

fn endpoint() -> Endpoint {
    Endpoint::parse("http://127.0.0.1:2379").unwrap()
}

#[test]
fn key_layout_matches_go_putvarint() {
    // Go: binary.PutVarint(k, 1) -> 0x02; 64 -> 0x80 0x01; 300 -> 0xd8 0x04
    let mut k = [0xffu8; 4];
    put_key_index(&mut k, 1);
    assert_eq!(k, [0x02, 0, 0, 0]);
    put_key_index(&mut k, 64);
    assert_eq!(k, [0x80, 0x01, 0, 0]);
    put_key_index(&mut k, 300);
    assert_eq!(k, [0xd8, 0x04, 0, 0]);
    assert_eq!(varint_len(63), 1);
    assert_eq!(varint_len(64), 2);
}

#[test]
fn put_requests_agree_across_protocols() {
    let op = EtcdOp::Put {
        key_size: 8,
        val_size: 16,
        key_space_size: 1000,
        sequential_keys: true,
    };
    let base = EtcdWorkload::new(op, &[endpoint()], 7, None).unwrap();
    let mut w = base.for_client(0);
    w.next_grpc(300);
    let framed = w.grpc_request();
    let mut buf = BytesMut::from(&framed[..]);
    let msg = grpc::decode(&mut buf, 1 << 20).unwrap().unwrap();
    let req = PutRequest::decode(msg).unwrap();
    assert_eq!(&req.key[..], &[0xd8, 0x04, 0, 0, 0, 0, 0, 0]);
    assert_eq!(req.value.len(), 16);

    let mut out = BytesMut::new();
    w.encode_http(300, 0, &mut out);
    let text = std::str::from_utf8(&out).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("POST /v3/kv/put HTTP/1.1\r\nHost: 127.0.0.1:2379\r\n"));
    assert!(head.contains(&format!("Content-Length: {}", body.len())));
    let v: Value = serde_json::from_str(body).unwrap();
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    assert_eq!(
        b64.decode(v["key"].as_str().unwrap()).unwrap(),
        &req.key[..]
    );
    assert_eq!(
        b64.decode(v["value"].as_str().unwrap()).unwrap(),
        &req.value[..]
    );
}

fn mixed(rw_ratio: f64) -> EtcdOp {
    EtcdOp::TxnMixed(TxnMixed {
        key_size: 8,
        val_size: 4,
        key_space_size: 10,
        rw_ratio,
        limit: 1000,
        end_key: Vec::new(),
        serializable: true,
    })
}

/// The framed gRPC request `w` made, decoded.
fn txn_of(w: &EtcdWorkload) -> TxnRequest {
    let mut buf = BytesMut::from(&w.grpc_request()[..]);
    TxnRequest::decode(grpc::decode(&mut buf, 1 << 20).unwrap().unwrap()).unwrap()
}

#[test]
fn txn_mixed_reads_range_every_key_and_writes_put_one_over_both_stacks() {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let base = EtcdWorkload::new(mixed(1.0), &[endpoint()], 3, None).unwrap();
    assert_eq!(base.classes(), ["read", "write"]);
    let (mut reads, mut writes) = (0, 0);
    for idx in 0..200u64 {
        // the same client twice: gRPC and HTTP/1.1 draw the same classes and keys
        let mut g = base.for_client(1);
        let mut h = base.for_client(1);
        for i in 0..idx % 3 {
            g.next_grpc(i);
            let mut out = BytesMut::new();
            h.encode_http(i, 0, &mut out);
        }
        g.next_grpc(idx);
        let mut out = BytesMut::new();
        h.encode_http(idx, 0, &mut out);
        assert_eq!(g.class(), h.class());
        let text = std::str::from_utf8(&out).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("POST /v3/kv/txn HTTP/1.1\r\n"), "{head}");
        assert!(
            head.contains(&format!("Content-Length: {}", body.len())),
            "{head}"
        );
        let json: Value = serde_json::from_str(body).unwrap();
        let op = &txn_of(&g).success[0];
        match (&op.request, g.class()) {
            (Some(request_op::Request::RequestRange(r)), Some(0)) => {
                reads += 1;
                // every key, from \0, limited and serializable as asked
                assert_eq!((&r.key[..], &r.range_end[..]), (&b"\0"[..], &b"\0"[..]));
                assert_eq!((r.limit, r.serializable), (1000, true));
                let jr = &json["success"][0]["request_range"];
                assert_eq!(jr["key"], "AA==");
                assert_eq!(jr["range_end"], "AA==");
                assert_eq!(jr["limit"], "1000");
                assert_eq!(jr["serializable"], true);
                assert_eq!(g.ack(5), None, "a read acknowledges no write");
            }
            (Some(request_op::Request::RequestPut(p)), Some(1)) => {
                writes += 1;
                // request N writes key N mod the key space, as etcd's tool
                let mut key = vec![0u8; 8];
                put_key_index(&mut key, idx % 10);
                assert_eq!(&p.key[..], &key[..]);
                assert_eq!(p.value.len(), 4);
                let jp = &json["success"][0]["request_put"];
                assert_eq!(b64.decode(jp["key"].as_str().unwrap()).unwrap(), key);
                assert_eq!(
                    b64.decode(jp["value"].as_str().unwrap()).unwrap(),
                    &p.value[..]
                );
                assert_eq!(g.ack(7), Some(((idx % 10) as usize, 7)));
                assert_eq!(h.ack(7), Some(((idx % 10) as usize, 7)));
            }
            other => panic!("request {idx}: {other:?}"),
        }
    }
    assert_eq!(reads + writes, 200);
    assert!(
        (60..140).contains(&reads),
        "{reads} reads of 200 at rw-ratio 1"
    );
}

#[test]
fn txn_mixed_honours_the_ratio_and_its_extremes() {
    let share = |ratio: f64| {
        let mut w = EtcdWorkload::new(mixed(ratio), &[endpoint()], 11, None)
            .unwrap()
            .for_client(0);
        let reads = (0..10_000u64)
            .filter(|&i| {
                w.next_grpc(i);
                w.class() == Some(0)
            })
            .count();
        reads as f64 / 10_000.0
    };
    assert_eq!(share(0.0), 0.0, "rw-ratio 0: writes only");
    let s = share(3.0);
    assert!((0.73..0.77).contains(&s), "rw-ratio 3: {s} reads");
    let s = share(0.25);
    assert!((0.18..0.22).contains(&s), "rw-ratio 0.25: {s} reads");
    assert_eq!(share(1e12), 1.0, "a huge ratio: reads only");
}

#[test]
fn txn_mixed_reads_below_an_end_key() {
    let op = EtcdOp::TxnMixed(TxnMixed {
        end_key: b"k".to_vec(),
        limit: 0,
        serializable: false,
        ..match mixed(1e12) {
            EtcdOp::TxnMixed(m) => m,
            _ => unreachable!(),
        }
    });
    let mut w = EtcdWorkload::new(op, &[endpoint()], 1, None)
        .unwrap()
        .for_client(0);
    w.next_grpc(0);
    let Some(request_op::Request::RequestRange(r)) = &txn_of(&w).success[0].request else {
        panic!("a read");
    };
    assert_eq!(
        (&r.range_end[..], r.limit, r.serializable),
        (&b"k"[..], 0, false)
    );
    let mut out = BytesMut::new();
    w.encode_http(0, 0, &mut out);
    let text = String::from_utf8(out.to_vec()).unwrap();
    assert!(
        text.ends_with(r#"{"success":[{"request_range":{"key":"AA==","range_end":"aw=="}}]}"#),
        "{text}"
    );
}

#[test]
fn txn_put_acknowledges_its_first_key() {
    let op = EtcdOp::TxnPut {
        key_size: 8,
        val_size: 4,
        key_space_size: 5,
        ops: 3,
    };
    let mut w = EtcdWorkload::new(op, &[endpoint()], 9, None)
        .unwrap()
        .for_client(0);
    for idx in 0..20 {
        w.next_grpc(idx);
        let txn = txn_of(&w);
        let Some((first, 4)) = w.ack(4) else {
            panic!("a txn-put acknowledges its write");
        };
        // its keys: consecutive indices from the first, modulo the key space
        for (j, op) in txn.success.iter().enumerate() {
            let Some(request_op::Request::RequestPut(p)) = &op.request else {
                panic!("a put");
            };
            assert_eq!(&p.key[..], &put_key(8, (first as u64 + j as u64) % 5)[..]);
        }
    }
}

#[test]
fn lease_keepalives_name_each_clients_lease_and_judge_the_answer() {
    use wirebench_wire::proto::etcd::{LeaseKeepAliveRequest, ResponseHeader};
    let base = EtcdWorkload::new(EtcdOp::LeaseKeepalive { ttl: 100 }, &[endpoint()], 1, None)
        .unwrap()
        .with_leases(&[11, 22]);
    assert!(base.bidi());
    let mut w = base.for_client(3);
    assert_eq!(w.lease, 22, "client 3 of 2 leases keeps the second");
    w.next_grpc(3);
    let mut buf = BytesMut::from(&w.grpc_request()[..]);
    let req: LeaseKeepAliveRequest = grpc::decode_message(&mut buf, 1 << 20).unwrap().unwrap();
    assert_eq!(req.id, 22);
    let mut out = BytesMut::new();
    w.encode_http(3, 0, &mut out);
    let text = String::from_utf8(out.to_vec()).unwrap();
    assert!(
        text.starts_with("POST /v3/lease/keepalive HTTP/1.1\r\n"),
        "{text}"
    );
    assert!(text.ends_with(r#"{"ID":"22"}"#), "{text}");

    let answer = |id, ttl| {
        Bytes::from(
            LeaseKeepAliveResponse {
                header: Some(ResponseHeader {
                    revision: 4,
                    ..Default::default()
                }),
                id,
                ttl,
            }
            .encode_to_vec(),
        )
    };
    assert_eq!(w.check_grpc(&answer(22, 100)), Ok(None));
    let kind = |m| w.check_grpc(&m).map_err(|f| f.kind);
    assert_eq!(kind(answer(22, 0)), Err(FailureKind::Lease));
    assert_eq!(kind(answer(22, -1)), Err(FailureKind::Lease));
    assert_eq!(kind(answer(11, 100)), Err(FailureKind::Lease));
    assert_eq!(
        kind(Bytes::from_static(b"\xff")),
        Err(FailureKind::BadResponse)
    );

    let http = |body: &[u8]| {
        w.check_http(200, body)
            .map(|(_, a)| a)
            .map_err(|(_, f)| f.kind)
    };
    let line = br#"{"result":{"header":{"revision":"4"},"ID":"22","TTL":"100"}}"#;
    assert_eq!(http(line), Ok(None));
    let gone = br#"{"result":{"header":{"revision":"4"},"ID":"22"}}"#;
    assert_eq!(http(gone), Err(FailureKind::Lease));
    let other = br#"{"result":{"header":{"revision":"4"},"ID":"11","TTL":"9"}}"#;
    assert_eq!(http(other), Err(FailureKind::Lease));
    let err = br#"{"error":{"grpc_code":14,"message":"etcdserver: no leader"}}"#;
    assert_eq!(http(err), Err(FailureKind::Etcd));
    // the stream's error line names its gRPC code; the text is its message
    let (_, f) = w.check_http(200, err).unwrap_err();
    assert_eq!(f.code, Some(wirebench_wire::grpc::Code::Unavailable));
    assert_eq!(f.to_string(), "etcd: etcdserver: no leader");
    assert_eq!(http(b"{}"), Err(FailureKind::BadResponse));
}

#[test]
fn gateway_errors_become_etcd_failures() {
    let op = EtcdOp::Range {
        key: b"k".to_vec(),
        serializable: false,
        options: Default::default(),
    };
    let w = EtcdWorkload::new(op, &[endpoint()], 1, None).unwrap();
    let body = br#"{"error":"etcdserver: user name is empty","message":"etcdserver: user name is empty","code":3}"#;
    let (status, failure) = w.check_http(400, body).unwrap_err();
    assert_eq!(status, StatusKey::Http(400));
    assert_eq!(
        failure,
        Failure::status(
            FailureKind::Etcd,
            wirebench_wire::grpc::Code::InvalidArgument,
            "etcdserver: user name is empty"
        )
    );
    assert!(w.check_http(200, br#"{"header":{"revision":"1"}}"#).is_ok());
    assert!(w.check_http(200, b"{}").is_err());
    assert!(w.check_http(200, b"not json").is_err());
}
