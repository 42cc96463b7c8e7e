//! Fuzzes the server's request-head decoder: heads and bodies decoded back to back until it
//! stops, then the input fed in two pieces (split at the first byte's value) against whole.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use wirebench_wire::http1::{RequestLimits, decode_request_head};

fuzz_target!(|data: &[u8]| {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let limits = RequestLimits {
        max_head_bytes: 64 + usize::from(first) * 4,
        max_headers: usize::from(first % 70),
        max_body: u64::from(first),
    };

    let mut buf = BytesMut::from(input);
    let mut consumed = 0;
    while let Ok(Some(head)) = decode_request_head(&mut buf, limits) {
        assert!(head.head_len() > 0 && head.head_len() <= limits.max_head_bytes);
        assert!(head.headers().len() <= limits.max_headers);
        consumed += head.head_len();
        let _ = (head.method(), head.path());
        match head.decode_body(&mut buf) {
            Ok(Some(body)) => consumed += body.len(),
            _ => break,
        }
    }
    // nothing is lost: every byte is in a head, a body or still in the buffer
    assert_eq!(consumed + buf.len(), input.len());

    let mut whole = BytesMut::from(input);
    let expected = decode_request_head(&mut whole, limits);
    let cut = usize::from(first) % (input.len() + 1);
    let mut split = BytesMut::from(&input[..cut]);
    let got = match decode_request_head(&mut split, limits) {
        Ok(None) => {
            // an incomplete head consumes nothing
            assert_eq!(&split[..], &input[..cut]);
            split.extend_from_slice(&input[cut..]);
            decode_request_head(&mut split, limits)
        }
        other => other,
    };
    assert_eq!(got, expected);
});
