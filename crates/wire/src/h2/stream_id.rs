//! Maps keyed by stream id (the client's stream table, the sniffer's per-stream gRPC framing),
//! hashed by a cheap multiplicative mix: stream ids are small odd (or even) integers chosen by
//! the peers, which it spreads well enough.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A map from stream id to `V`, hashed by `StreamIdHasher`.
pub(crate) type StreamIdMap<V> = HashMap<u32, V, BuildHasherDefault<StreamIdHasher>>;

/// Fibonacci hashing of a u32 stream id.
#[derive(Default)]
pub(crate) struct StreamIdHasher(u64);

impl Hasher for StreamIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}
