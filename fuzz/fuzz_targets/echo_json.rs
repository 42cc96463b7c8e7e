//! The echo answer's one-pass scan against serde_json's parse of the same bytes.
//!
//! The check is `wirebench_wire::fuzzing::echo_json`; the wire crate's tests run it too, on the
//! seeds in fuzz/corpus/echo_json and on proptest's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench_wire::fuzzing::echo_json(data));
