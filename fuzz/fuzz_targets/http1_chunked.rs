//! The HTTP/1.1 chunked-body decoder.
//!
//! The check is `wirebench_wire::fuzzing::http1_chunked`; the wire crate's tests run it too, on
//! the seeds in fuzz/corpus/http1_chunked and on proptest's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench_wire::fuzzing::http1_chunked(data));
