//! A `--targets` file's text (vegeta's http and JSON-lines formats) and the weights' schedule.
//!
//! The check is `wirebench_wire::fuzzing::targets_file`: any bytes read as text without a panic,
//! what reads is within the limits, an http-format file reads back the same from what
//! `write_http` writes of it; the wire crate's tests run it too, on the seeds in
//! fuzz/corpus/targets_file and on proptest's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench_wire::fuzzing::targets_file(data));
