//! Fuzzes the client's response reader as its driver runs it: reads of sizes taken from the
//! first byte, never more than the room the reader left, then EOF. Split and whole must agree,
//! and the buffer must never grow past the body limit's bound.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use wirebench_wire::http1::{self, Error, ResponseReader};

/// The outcome, the body, and what is left after a complete response.
type Read = (Result<http1::Response, Error>, Vec<u8>, Vec<u8>);

fn drive(input: &[u8], read: usize, max_body: u64, eof: bool) -> Option<Read> {
    let mut reader = ResponseReader::new(max_body);
    let mut buf = BytesMut::new();
    let mut dechunked = BytesMut::new();
    let bound = max_body as usize + http1::MAX_HEAD_BYTES + http1::READ_CHUNK;
    let mut fed = 0;
    let outcome = loop {
        match reader.poll(&mut buf, &mut dechunked) {
            Ok(Some(response)) => break Ok(response),
            Err(e) => break Err(e),
            Ok(None) => {}
        }
        let spare = buf.capacity() - buf.len();
        assert!(spare >= http1::READ_CHUNK / 4);
        assert!(buf.capacity() <= bound.max(2 * http1::READ_CHUNK));
        if fed == input.len() {
            if !eof {
                return None;
            }
            break reader.eof(&buf);
        }
        let n = read.min(spare).min(input.len() - fed);
        buf.extend_from_slice(&input[fed..fed + n]);
        fed += n;
    };
    Some(match outcome {
        Ok(response) => {
            let body = response.body(&buf, &dechunked).to_vec();
            assert_eq!(body.len(), response.body_len());
            assert!(body.len() as u64 <= max_body);
            reader.next_response(&mut buf);
            let mut rest = buf.to_vec();
            rest.extend_from_slice(&input[fed..]);
            (Ok(response), body, rest)
        }
        // what was not read after an error depends on the read sizes
        Err(e) => (Err(e), Vec::new(), Vec::new()),
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let max_body = u64::from(first) * 64;
    let eof = first & 1 == 1;
    let split = drive(input, usize::from(first % 13) + 1, max_body, eof);
    let whole = drive(input, usize::MAX, max_body, eof);
    assert_eq!(split, whole);
});
