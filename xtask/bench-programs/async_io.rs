//! The async-io program of `cargo xtask bench` (xtask/src/client_bench.rs).
//!
//! async-io's `block_on` polls its parker (a `parking::Parker`, on the mwait side the
//! `parking` drop-in's) with a zero timeout on every turn of its loop and once more
//! when the future is ready, so a poll's cost is paid by every call.

use std::hint::black_box;
use std::time::Instant;

const CALLS: u32 = 200_000;
const RUNS: usize = 9;

/// The median over `RUNS` runs of `CALLS` calls of `f`, in ns per call.
fn per_call(mut f: impl FnMut()) -> f64 {
    let mut runs: Vec<f64> = (0..RUNS)
        .map(|_| {
            let t0 = Instant::now();
            for _ in 0..CALLS {
                f();
            }
            t0.elapsed().as_nanos() as f64 / f64::from(CALLS)
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[RUNS / 2]
}

fn main() {
    // The thread's cached parker and waker are made by its first call, and with
    // them, on the mwait side, the process's one-time set-up: not measured.
    async_io::block_on(async {});
    let ready = per_call(|| {
        black_box(async_io::block_on(async { black_box(1) }));
    });
    let yields = per_call(|| async_io::block_on(futures_lite::future::yield_now()));
    println!("ready_ns {ready}");
    println!("yield_ns {yields}");
}
