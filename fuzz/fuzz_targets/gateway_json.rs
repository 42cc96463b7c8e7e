//! etcd gateway response bodies: the borrowed checks must never panic on any bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wirebench_wire::json::{GwError, GwResponse};

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = serde_json::from_slice::<GwResponse>(data) {
        let _ = r.header.and_then(|h| h.revision).map(str::len);
    }
    if let Ok(e) = serde_json::from_slice::<GwError>(data) {
        let _ = e.text().len();
    }
});
