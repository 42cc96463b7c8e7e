//! HPACK header block decoding, and re-encoding what was decoded.
//!
//! The check is `wirebench_wire::fuzzing::hpack_decode`; the wire crate's tests run it too, on
//! the seeds in fuzz/corpus/hpack_decode and on proptest's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench_wire::fuzzing::hpack_decode(data));
