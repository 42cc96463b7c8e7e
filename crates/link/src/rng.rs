//! One small seedable generator (SplitMix64) for whatever needs random numbers but no secrecy:
//! the link model's losses and jitter, and (re-exported by the binary) the etcd workloads' keys
//! and values and the built-in server's injected faults. A leaf: it imports nothing.

use std::sync::atomic::{AtomicU64, Ordering};

/// SplitMix64: tiny, fast, seedable; not for secrets.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// The generator of `seed`: the same seed, the same sequence.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// A generator seeded apart from every other one this process makes this way (the clock
    /// and a counter): for draws that need no repeating.
    pub fn unique() -> Rng {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Rng(t ^ n.wrapping_mul(0x2545_F491_4F6C_DD1D))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (n > 0), by Lemire's multiply-shift (bias below 2^-32 for our n).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in [0, 1), 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_its_sequence_and_draws_stay_in_range() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        assert_eq!(a.next_u64(), b.next_u64());
        // SplitMix64's first output for seed 0
        assert_eq!(Rng::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
        for _ in 0..1000 {
            assert!(a.below(10) < 10);
            let u = a.unit();
            assert!((0.0..1.0).contains(&u));
        }
        let mut buf = [0u8; 11];
        a.fill(&mut buf);
        assert!(buf.iter().any(|&x| x != 0));
        assert_ne!(Rng::unique().next_u64(), Rng::unique().next_u64());
    }
}
