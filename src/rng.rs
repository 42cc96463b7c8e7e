//! The one seedable generator every part of wirebench draws from (SplitMix64, in the link
//! crate, whose model draws from it too).

pub use wirebench_link::rng::Rng;
