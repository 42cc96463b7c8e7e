//! QPACK field section decoding, and re-encoding what was decoded.
//!
//! The check is `wirebench_wire::fuzzing::qpack_decode`; the wire crate's tests run it too, on the
//! seeds in fuzz/corpus/qpack_decode and on proptest's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench_wire::fuzzing::qpack_decode(data));
