//! The gateway's watch-stream lines.
//!
//! The check is `wirebench_wire::fuzzing::watch_lines`; the wire crate's tests run it too, on
//! the seeds in fuzz/corpus/watch_lines and on proptest's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench_wire::fuzzing::watch_lines(data));
