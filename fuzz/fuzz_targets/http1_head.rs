//! Fuzzes the HTTP/1.1 response-head parser by decoding heads from the input until it stops.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use wirebench_wire::http1::decode_response_head;

fuzz_target!(|data: &[u8]| {
    let mut buf = BytesMut::from(data);
    // Each success consumes at least one byte, so this terminates.
    while let Ok(Some(head)) = decode_response_head(&mut buf, 1 << 20) {
        assert!(head.head_len > 0 && head.head_len <= data.len());
    }
});
