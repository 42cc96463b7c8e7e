//! etcd gateway response bodies.
//!
//! The check is `wirebench_wire::fuzzing::gateway_json`; the wire crate's tests run it too, on
//! the seeds in fuzz/corpus/gateway_json and on proptest's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench_wire::fuzzing::gateway_json(data));
