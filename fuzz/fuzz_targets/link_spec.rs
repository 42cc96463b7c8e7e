//! The link spec grammar (`--link`, `--links`).
//!
//! The check is `wirebench_link::spec::fuzz_check`: any text reads without a panic, and a spec
//! that reads is written in a form that reads back to the same spec; the link crate's tests run
//! it too, on the seeds in fuzz/corpus/link_spec and on proptest's strings.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench_link::spec::fuzz_check(data));
