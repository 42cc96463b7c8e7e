//! Codec throughput: the per-request encode/decode work of each stack, without IO, the check of
//! an echo answer, and what rendering a request with placeholders adds to writing it.

use std::borrow::Cow;
use std::hint::black_box;

use bytes::BytesMut;
use criterion::{Criterion, criterion_group, criterion_main};
use serde::Deserialize;

use wirebench::config::{Endpoint, HttpHead, HttpRequestSpec, HttpSpec};
use wirebench::workload::{EchoWorkload, EtcdOp, EtcdWorkload, HttpWorkload};
use wirebench_wire::echo::scan::echoed_body_matches;
use wirebench_wire::h2::frame::PREFACE;
use wirebench_wire::h2::sniff::H2Sniffer;
use wirebench_wire::h3::qpack::{self, QpackCounts};
use wirebench_wire::quic::keys::{Keys, Secret};
use wirebench_wire::quic::{Dir, FrameKind, Sniffer, Suite};
use wirebench_wire::{grpc, http1};

const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nAccess-Control-Allow-Headers: accept, content-type, authorization\r\nAccess-Control-Allow-Methods: POST, GET, OPTIONS, PUT, DELETE\r\nAccess-Control-Allow-Origin: *\r\nContent-Type: application/json\r\nGrpc-Metadata-Content-Type: application/grpc\r\nDate: Sun, 29 Nov 2026 21:00:00 GMT\r\nContent-Length: 121\r\n\r\n";

fn bench(c: &mut Criterion) {
    let ep = Endpoint::parse("http://127.0.0.1:2379").unwrap();
    let op = EtcdOp::Put {
        key_size: 8,
        val_size: 256,
        key_space_size: 100_000,
        sequential_keys: false,
    };
    let mut put = EtcdWorkload::new(op, &[ep], 1, None).unwrap().for_client(0);

    let mut out = BytesMut::with_capacity(4096);
    let mut idx = 0u64;
    c.bench_function("etcd_put_encode_http1", |b| {
        b.iter(|| {
            out.clear();
            put.encode_http(idx, 0, &mut out);
            idx += 1;
            black_box(out.len())
        })
    });
    c.bench_function("etcd_put_encode_grpc", |b| {
        b.iter(|| {
            idx += 1;
            put.next_grpc(idx);
            black_box(put.grpc_request().len())
        })
    });

    let mut buf = BytesMut::with_capacity(4096);
    c.bench_function("http1_response_head_decode", |b| {
        b.iter(|| {
            buf.clear();
            buf.extend_from_slice(HEAD);
            black_box(http1::decode_response_head(&mut buf, 1 << 20).unwrap())
        })
    });

    let mut response = HEAD.to_vec();
    response.resize(HEAD.len() + 121, b'b');
    let mut reader = http1::ResponseReader::new(1 << 20);
    let mut dechunked = BytesMut::new();
    c.bench_function("http1_response_read_content_length", |b| {
        b.iter(|| {
            reader.next_response(&mut buf);
            buf.clear();
            buf.extend_from_slice(&response);
            let r = reader.poll(&mut buf, &mut dechunked).unwrap().unwrap();
            black_box(r.body(&buf, &dechunked).len())
        })
    });

    let request = b"POST /v1/echo HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\nUser-Agent: wirebench\r\nAccept: */*\r\nContent-Length: 14\r\n\r\n{\"ping\":\"hey\"}";
    let limits = http1::RequestLimits::default();
    c.bench_function("http1_request_head_decode", |b| {
        b.iter(|| {
            buf.clear();
            buf.extend_from_slice(request);
            let head = http1::decode_request_head(&mut buf, limits)
                .unwrap()
                .unwrap();
            black_box(head.decode_body(&mut buf).unwrap().unwrap().len())
        })
    });

    let mut chunked = BytesMut::new();
    for _ in 0..16 {
        http1::encode_chunk(&[b'x'; 200], &mut chunked);
    }
    http1::encode_last_chunk(&mut chunked);
    let mut dec = http1::ChunkedDecoder::new(1 << 20);
    let mut body = BytesMut::with_capacity(8192);
    c.bench_function("http1_chunked_decode_16x200", |b| {
        b.iter(|| {
            buf.clear();
            buf.extend_from_slice(&chunked);
            body.clear();
            dec.reset();
            black_box(dec.decode(&mut buf, &mut body).unwrap())
        })
    });

    let mut framed = BytesMut::new();
    grpc::encode_raw(&[7u8; 300], &mut framed);
    c.bench_function("grpc_deframe_300", |b| {
        b.iter(|| {
            buf.clear();
            buf.extend_from_slice(&framed);
            black_box(grpc::decode(&mut buf, 1 << 20).unwrap())
        })
    });

    let fields: [(&[u8], &[u8]); 5] = [
        (b":method", b"POST"),
        (b":scheme", b"http"),
        (b":authority", b"127.0.0.1:8080"),
        (b":path", b"/v1/echo"),
        (b"content-type", b"application/json"),
    ];
    let (mut block, mut counts) = (Vec::with_capacity(256), QpackCounts::default());
    c.bench_function("qpack_request_encode", |b| {
        b.iter(|| {
            block.clear();
            qpack::encode_section(fields, &mut block, &mut counts);
            black_box(block.len())
        })
    });
    let mut decoder = qpack::Decoder::new();
    c.bench_function("qpack_request_decode", |b| {
        b.iter(|| {
            let mut n = 0;
            let sum = |name: &[u8], value: &[u8]| n += name.len() + value.len();
            decoder.decode(&block, 1 << 16, &mut counts, sum).unwrap();
            black_box(n)
        })
    });
}

/// The ledger's per-byte cost: a typical client->server h2 stream of unary gRPC calls (HEADERS
/// + DATA per call), fed to the sniffer in socket-sized pieces.
fn sniffer(c: &mut Criterion) {
    let mut stream = Vec::new();
    stream.extend_from_slice(PREFACE);
    let frame = |out: &mut Vec<u8>, ty: u8, flags: u8, id: u32, payload: &[u8]| {
        let len = payload.len() as u32;
        out.extend_from_slice(&len.to_be_bytes()[1..]);
        out.push(ty);
        out.push(flags);
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(payload);
    };
    frame(&mut stream, 4, 0, 0, &[0, 3, 0, 0, 0, 100]);
    let mut msg = vec![0u8, 0, 0, 0, 15];
    msg.extend_from_slice(&[7u8; 15]);
    for i in 0..1000u32 {
        let id = 1 + 2 * i;
        frame(
            &mut stream,
            1,
            0x4,
            id,
            &[0x83, 0x86, 0xc4, 0xc3, 0xc2, 0xc1, 0xc0, 0xbf, 0xbe],
        );
        frame(&mut stream, 0, 0x1, id, &msg);
    }
    c.bench_function("h2sniff_feed_1000_unary_calls", |b| {
        b.iter(|| {
            let mut s = H2Sniffer::new(true);
            for chunk in stream.chunks(16 * 1024) {
                s.feed(chunk);
            }
            black_box(s.counts().grpc_messages)
        })
    });
}

/// The QUIC ledger's per-packet cost: one 1-RTT packet of 117 bytes (an ACK and an 80-byte
/// STREAM frame, AES-128-GCM) sniffed: header protection removed, decrypted on a copy, its
/// frames walked.
fn quic_sniffer(c: &mut Criterion) {
    let secret = [7u8; 32];
    let dcid = [0x5a; 8];
    let mut packet = vec![0x41];
    packet.extend_from_slice(&dcid);
    packet.extend_from_slice(&[0x00, 0x2a]);
    let header_len = packet.len();
    // ACK: largest 100, delay 25, no more ranges, first range 5
    packet.extend_from_slice(&[0x02, 0x40, 0x64, 0x19, 0x00, 0x05]);
    // STREAM with a length: stream 0, 80 bytes
    packet.extend_from_slice(&[0x0a, 0x00, 0x40, 80]);
    packet.extend_from_slice(&[b'h'; 80]);
    let keys = Keys::new(Suite::Aes128Gcm, &Secret::new(&secret).unwrap());
    keys.protect(0x2a, header_len, &mut packet).unwrap();
    assert_eq!(packet.len(), 117);

    let mut sniffer = Sniffer::new();
    sniffer.set_suite(Suite::Aes128Gcm);
    sniffer.set_short_dcid_len(Dir::Out, dcid.len());
    sniffer.secret("CLIENT_TRAFFIC_SECRET_0", &secret).unwrap();
    sniffer.datagram(Dir::Out, &packet);
    assert_eq!(
        sniffer.counts(Dir::Out).frame(FrameKind::Stream).data_bytes,
        80
    );
    c.bench_function("quic_sniff_1rtt_117", |b| {
        b.iter(|| {
            sniffer.datagram(Dir::Out, black_box(&packet));
            black_box(sniffer.counts(Dir::Out).datagrams)
        })
    });
}

/// An answer of the built-in server to `POST /v1/echo`, 388 bytes.
const ECHO_ANSWER: &[u8] = include_bytes!("../fuzz/corpus/echo_json/seed-typical");

/// The struct the echo answer was parsed into before the scan.
#[derive(Deserialize)]
struct EchoJson<'a> {
    #[serde(borrow, default)]
    body: Cow<'a, str>,
}

/// The client's check of each echo answer: the one-pass scan, serde_json's parse it replaced,
/// and the workload's whole check of a 200 answer.
fn echo_answer(c: &mut Criterion) {
    let ping = "Hello, world!";
    c.bench_function("echo_json_scan", |b| {
        b.iter(|| echoed_body_matches(black_box(ECHO_ANSWER), ping.as_bytes()).unwrap())
    });
    c.bench_function("echo_json_serde", |b| {
        b.iter(|| {
            let answer: EchoJson = serde_json::from_slice(black_box(ECHO_ANSWER)).unwrap();
            answer.body == ping
        })
    });
    let ep = Endpoint::parse("http://127.0.0.1:8080").unwrap();
    let echo = EchoWorkload::new(ping.to_string(), &[], &[ep]).unwrap();
    c.bench_function("echo_json_check_http", |b| {
        b.iter(|| echo.check_http(200, black_box(ECHO_ANSWER)).is_ok())
    });
}

/// An `http` request fixed, and the same with placeholders in its path, a header and its
/// body (the same sizes): what rendering per request adds to writing it, over HTTP/1.1 and as
/// HTTP/2's body and call.
fn varying_requests(c: &mut Criterion) {
    let ep = Endpoint::parse("http://127.0.0.1:8080").unwrap();
    let spec = |path: &str, id: &str, body: &str| HttpSpec {
        requests: vec![HttpRequestSpec {
            head: std::sync::Arc::new(HttpHead {
                method: "POST".into(),
                path: path.into(),
                headers: vec![("X-Id".into(), id.into())],
            }),
            body: Some(body.to_string().into()),
        }],
        weights: Vec::new(),
        ok_status: (200, 299),
    };
    let fixed = spec(
        "/v1/echo?n=123456",
        "6f1c2a9e-4b7d-4c1e-9a3f-2d5e8b7c0a14",
        r#"{"ping":"Hello, world! 123456"}"#,
    );
    let varying = spec(
        "/v1/echo?n={{seq}}",
        "{{uuid}}",
        r#"{"ping":"Hello, world! {{rand 100000 999999}}"}"#,
    );
    for (name, s) in [
        ("http1_request_fixed", &fixed),
        ("http1_request_placeholders", &varying),
    ] {
        let mut w = HttpWorkload::new(s, std::slice::from_ref(&ep))
            .unwrap()
            .for_client(0);
        let mut out = BytesMut::with_capacity(4096);
        let mut idx = 100_000;
        c.bench_function(name, |b| {
            b.iter(|| {
                out.clear();
                idx += 1;
                w.encode_http(black_box(idx), 0, &mut out)
            })
        });
    }
    for (name, s) in [
        ("h2_request_fixed", &fixed),
        ("h2_request_placeholders", &varying),
    ] {
        let mut w = HttpWorkload::new(s, std::slice::from_ref(&ep))
            .unwrap()
            .for_client(0);
        let mut idx = 100_000;
        c.bench_function(name, |b| {
            b.iter(|| {
                idx += 1;
                let (body, call) = w.next_h2(black_box(idx), 0);
                body.len() + call.fields().count()
            })
        });
    }
}

criterion_group!(
    benches,
    bench,
    sniffer,
    quic_sniffer,
    echo_answer,
    varying_requests
);
criterion_main!(benches);
