//! The h2 client connection fed a server's bytes.
//!
//! The check is `wirebench_wire::fuzzing::h2_client`; the wire crate's tests run it too, on
//! the seeds in fuzz/corpus/h2_client and on proptest's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench_wire::fuzzing::h2_client(data));
