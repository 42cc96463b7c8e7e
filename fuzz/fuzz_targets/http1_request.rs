//! The server's HTTP/1.1 request-head decoder.
//!
//! The check is `wirebench_wire::fuzzing::http1_request`; the wire crate's tests run it too, on
//! the seeds in fuzz/corpus/http1_request and on proptest's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench_wire::fuzzing::http1_request(data));
