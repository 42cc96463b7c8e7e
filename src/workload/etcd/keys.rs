//! The keys and values of etcd's benchmark tool: key N as Go's binary.PutVarint writes N at
//! the front of a zeroed key, and one random value per run.

use crate::config::EtcdOp;
use crate::rng::Rng;

/// Bytes of a zigzag varint (Go's binary.PutVarint) for a non-negative n.
pub fn varint_len(n: u64) -> usize {
    let mut z = u128::from(n) << 1;
    let mut len = 1;
    while z >= 0x80 {
        z >>= 7;
        len += 1;
    }
    len
}

/// Writes n as Go's binary.PutVarint does (zigzag, so 2n as a uvarint) at the start of `key`,
/// leaving the rest zero: the key layout of etcd's benchmark tool. `key` must hold varint_len(n).
pub(super) fn put_key_index(key: &mut [u8], n: u64) {
    key.fill(0);
    let mut z = u128::from(n) << 1;
    let mut i = 0;
    while z >= 0x80 {
        key[i] = (z as u8) | 0x80;
        z >>= 7;
        i += 1;
    }
    key[i] = z as u8;
}

/// Sets `key` to the key of put number `idx`: sequential, or uniform over the key space.
/// Put: writes the key of request `idx` into `key`; returns its key index (0 for range).
pub(super) fn next_key(op: &EtcdOp, rng: &mut Rng, key: &mut [u8], idx: u64) -> u64 {
    if let EtcdOp::Put {
        key_space_size,
        sequential_keys,
        ..
    } = *op
    {
        let n = if sequential_keys {
            idx % key_space_size
        } else {
            rng.below(key_space_size)
        };
        put_key_index(key, n);
        return n;
    }
    0
}

/// The put key of index `n`, `key_size` bytes (what the put load wrote for it).
pub fn put_key(key_size: usize, n: u64) -> Vec<u8> {
    let mut key = vec![0; key_size];
    put_key_index(&mut key, n);
    key
}

/// The value a put run writes: `val_size` bytes from the run's generator, drawn first (the
/// sweep writes the same value once before it reads it back).
pub fn put_value(rng: &mut Rng, val_size: usize) -> Vec<u8> {
    let mut value = vec![0u8; val_size];
    rng.fill(&mut value);
    value
}
