//! Fuzzes gRPC message deframing, grpc-status parsing and grpc-message percent-decoding.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use wirebench_wire::grpc::{decode, decode_message_text, parse_status};

fuzz_target!(|data: &[u8]| {
    const MAX: usize = 1024 * 1024;
    let mut src = BytesMut::from(data);
    while let Ok(Some(payload)) = decode(&mut src, MAX) {
        assert!(payload.len() <= MAX);
    }

    let _ = parse_status(data);

    let mut text = String::new();
    decode_message_text(data, 1024, &mut text);
    assert!(text.len() <= 1024);
});
