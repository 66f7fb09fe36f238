//! `cargo bench --bench notify`: the cost of a notify when nobody waits.

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("notify");
    g.warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    let plain = AtomicU32::new(0);
    g.bench_function("plain-store", |b| {
        let mut i = 0u32;
        b.iter(|| {
            i = i.wrapping_add(1);
            black_box(&plain).store(i, Ordering::Release)
        })
    });
    let cell = mwait::WaitCell::new(0);
    // One park, so the process uses the asymmetric barrier like any that ever parked.
    let _ = cell.wait_until_timeout(|v| v == u32::MAX, Duration::from_micros(1));
    g.bench_function("waitcell", |b| {
        let mut i = 0u32;
        b.iter(|| {
            i = i.wrapping_add(1);
            black_box(&cell).store(i)
        })
    });
    let aw = AtomicU32::new(0);
    g.bench_function("atomic-wait", |b| {
        let mut i = 0u32;
        b.iter(|| {
            i = i.wrapping_add(1);
            aw.store(i, Ordering::Release);
            atomic_wait::wake_one(&aw);
        })
    });
    let cv = std::sync::Condvar::new();
    g.bench_function("std-condvar", |b| b.iter(|| cv.notify_one()));
    let pcv = parking_lot::Condvar::new();
    g.bench_function("parking-lot", |b| b.iter(|| pcv.notify_one()));
    let t = std::thread::current();
    g.bench_function("park", |b| b.iter(|| t.unpark()));
    let parker = crossbeam_utils::sync::Parker::new();
    let unparker = parker.unparker().clone();
    g.bench_function("crossbeam-parker", |b| b.iter(|| unparker.unpark()));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
