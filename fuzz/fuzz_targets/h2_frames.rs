//! The h2 frame codec: decoding, and re-encoding what was decoded.
//!
//! The check is `wirebench_wire::fuzzing::h2_frames`; the wire crate's tests run it too, on
//! the seeds in fuzz/corpus/h2_frames and on proptest's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench_wire::fuzzing::h2_frames(data));
