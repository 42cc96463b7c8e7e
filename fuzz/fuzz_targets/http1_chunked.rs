//! Fuzzes the chunked-body decoder fed in two pieces (split at the first byte's value) and whole.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use wirebench_wire::http1::ChunkedDecoder;

fuzz_target!(|data: &[u8]| {
    let Some(&first) = data.first() else {
        return;
    };
    let (a, b) = data.split_at(usize::from(first) % data.len());
    let mut dec = ChunkedDecoder::new(1 << 20);

    let mut src = BytesMut::from(a);
    let mut dst = BytesMut::new();
    let mut split_result = dec.decode(&mut src, &mut dst);
    if split_result == Ok(false) {
        src.extend_from_slice(b);
        split_result = dec.decode(&mut src, &mut dst);
    }
    let split_counts = (dec.framing_bytes(), dec.data_bytes());
    let split_dst = dst;

    dec.reset();
    let mut src = BytesMut::from(data);
    let mut dst = BytesMut::new();
    let whole_result = dec.decode(&mut src, &mut dst);

    // Feeding in pieces must not change the outcome.
    assert_eq!(split_result, whole_result);
    assert_eq!(split_dst, dst);
    assert_eq!(split_counts, (dec.framing_bytes(), dec.data_bytes()));
    if whole_result == Ok(true) {
        let consumed = dec.framing_bytes() + dec.data_bytes();
        assert_eq!(consumed + src.len() as u64, data.len() as u64);
    }
});
