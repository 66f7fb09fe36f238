//! `cargo bench --bench scenarios`: wake latency under a slow producer (`long_wait`,
//! `interference`), the barrier, and the async round trip, as criterion timings. The
//! CPU-time and throughput columns of those experiments come from `cargo xtask bench`
//! (criterion measures time only).

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use mwait_benches::impls;
use mwait_benches::scenarios;
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("long_wait_wake_latency");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(2));
    for (name, make) in impls::all() {
        g.bench_function(name.as_str(), |b| {
            b.iter_custom(|iters| {
                // One sample: the median wake latency of `iters` stores 1 ms apart,
                // scaled back to `iters` wake-ups.
                let n = iters.clamp(1, 200);
                let mut r = scenarios::slow_producer(
                    make,
                    Duration::from_millis(1),
                    Duration::from_millis(n),
                );
                let p50 = mwait_benches::stats(&mut r.wake_ns).p50;
                Duration::from_nanos((p50 * iters as f64) as u64)
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("barrier");
    g.sample_size(10);
    for (name, barrier) in scenarios::barriers() {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| scenarios::barrier_episodes(barrier(), iters.max(1) as u32))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("async_pingpong");
    g.sample_size(10);
    for (name, round_trips) in scenarios::async_mechanisms() {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut s = round_trips(Duration::from_millis(50));
                let p50 = mwait_benches::stats(&mut s).p50;
                Duration::from_nanos((p50 * iters as f64) as u64)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
