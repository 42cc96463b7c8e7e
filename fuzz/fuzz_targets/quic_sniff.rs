//! QUIC datagrams sniffed in both directions, with secrets and without.
//!
//! The check is `wirebench_wire::fuzzing::quic_sniff`; the wire crate's tests run it too, on
//! the seeds in fuzz/corpus/quic_sniff and on proptest's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench_wire::fuzzing::quic_sniff(data));
