//! gRPC message deframing, grpc-status and grpc-message.
//!
//! The check is `wirebench_wire::fuzzing::grpc_deframe`; the wire crate's tests run it too, on
//! the seeds in fuzz/corpus/grpc_deframe and on proptest's bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench_wire::fuzzing::grpc_deframe(data));
