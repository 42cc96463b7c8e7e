//! The link emulator: a model of one bottleneck path (delay, jitter, loss, bursts, rate, queue)
//! that is fed packets and the clock and answers with release times and drops (`spec`,
//! `model`), and the IO part that puts it between a network namespace and the host (`io`).

pub mod io;
pub mod model;
pub mod rng;
pub mod spec;
