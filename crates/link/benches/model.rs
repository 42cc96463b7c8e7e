//! The path model's cost per packet: one `offer` of a 1500-byte packet through a loaded path
//! (rtt 40 ms, 1 Gbit/s, 1% loss, 1 ms jitter) and through a passthrough one.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use wirebench_link::model::Path;
use wirebench_link::spec::LinkSpec;

/// Offers 1500-byte packets to one direction of `spec`, `gap` ns apart on a fake clock.
fn offer(c: &mut Criterion, name: &str, spec: &str, gap: u64) {
    let spec: LinkSpec = spec.parse().expect("the bench's spec parses");
    let mut path = Path::new(&spec.up, spec.reorder, spec.seed);
    let mut now = 0u64;
    c.bench_function(name, |b| {
        b.iter(|| {
            now += gap;
            black_box(path.offer(black_box(now), black_box(1500)))
        })
    });
    black_box(path.counts());
}

fn paths(c: &mut Criterion) {
    // 1500 bytes at 1 Gbit/s take 12 µs: packets 11 µs apart keep the queue full, so the
    // bench pays for admissions, drops and the FIFO's pops alike
    offer(
        c,
        "offer/rtt=40ms,rate=1gbit,loss=1%,jitter=1ms",
        "rtt=40ms,rate=1gbit,loss=1%,jitter=1ms",
        11_000,
    );
    offer(c, "offer/none", "none", 11_000);
}

criterion_group!(benches, paths);
criterion_main!(benches);
