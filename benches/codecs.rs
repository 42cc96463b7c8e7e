//! Codec throughput: the per-request encode/decode work of each stack, without IO.

use bytes::BytesMut;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

use wirebench::config::Endpoint;
use wirebench::wire::{grpc, http1};
use wirebench::workload::{EtcdOp, EtcdWorkload};

const HEAD: &[u8] = b"HTTP/1.1 200 OK\r\nAccess-Control-Allow-Headers: accept, content-type, authorization\r\nAccess-Control-Allow-Methods: POST, GET, OPTIONS, PUT, DELETE\r\nAccess-Control-Allow-Origin: *\r\nContent-Type: application/json\r\nGrpc-Metadata-Content-Type: application/grpc\r\nDate: Sun, 29 Nov 2026 21:00:00 GMT\r\nContent-Length: 121\r\n\r\n";

fn bench(c: &mut Criterion) {
    let ep = Endpoint::parse("http://127.0.0.1:2379").unwrap();
    let op = EtcdOp::Put {
        key_size: 8,
        val_size: 256,
        key_space_size: 100_000,
        sequential_keys: false,
    };
    let mut put = EtcdWorkload::new(op, &[ep], 1).unwrap().for_client(0);

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
            black_box(put.encode_grpc(idx))
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
}

criterion_group!(benches, bench);
criterion_main!(benches);
