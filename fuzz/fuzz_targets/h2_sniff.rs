//! The h2 frame classifier.
//!
//! The check is `wirebench_wire::fuzzing::h2_sniff`; the wire crate's tests run it too, on
//! the seeds in fuzz/corpus/h2_sniff and on proptest's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench_wire::fuzzing::h2_sniff(data));
