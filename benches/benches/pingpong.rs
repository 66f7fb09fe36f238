//! `cargo bench --bench pingpong`: round trips between two threads (two CPUs, then one
//! CPU), every mechanism side by side. `cargo xtask bench` reports p50/p99 of the same
//! round trips; criterion gives its usual mean and outlier analysis.

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use mwait_benches::impls;
use mwait_benches::scenarios::{PingPong, Placement};
use std::time::{Duration, Instant};

fn bench(c: &mut Criterion) {
    for (group, placement) in [
        ("pingpong", Placement::TwoCpus),
        ("same_cpu", Placement::SameCpu),
    ] {
        let mut g = c.benchmark_group(group);
        g.warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1))
            .sample_size(20);
        for (name, make) in impls::all() {
            if placement == Placement::SameCpu && (name == "spin" || name == "pause") {
                // A spinner pinned beside its partner waits a whole time slice per
                // hop: criterion's sampling would take minutes. The report runner
                // measures it with a time budget instead.
                continue;
            }
            g.bench_function(name.as_str(), |b| {
                let mut pp = PingPong::start(make, placement);
                b.iter_custom(|iters| {
                    let t0 = Instant::now();
                    for _ in 0..iters {
                        pp.round_trip();
                    }
                    t0.elapsed()
                });
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
