//! The placeholder grammar of requests that vary (`{{seq}}`, `{{rand A B}}`, ...).
//!
//! The check is `wirebench_wire::fuzzing::template`: any text reads or says why without a
//! panic, and a template that reads is spelled in a form that reads back to the same template.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wirebench_wire::fuzzing::template(data));
