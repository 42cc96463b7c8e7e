//! HTTP/3 frames read whole and in pieces, and re-encoding what was read.
//!
//! The check is `wirebench_wire::fuzzing::h3_frames`; the wire crate's tests run it too, on the
//! seeds in fuzz/corpus/h3_frames and on proptest's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench_wire::fuzzing::h3_frames(data));
