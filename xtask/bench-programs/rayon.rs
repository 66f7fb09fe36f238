//! The rayon-core program of `cargo xtask bench` (xtask/src/client_bench.rs).
mod cpu;

use std::time::{Duration, Instant};

const N: u32 = 25;
const RUNS: usize = 9;

fn fib(n: u32) -> u64 {
    if n < 2 {
        return u64::from(n);
    }
    let (a, b) = rayon_core::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn main() {
    let pool = rayon_core::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    for _ in 0..2 {
        assert_eq!(pool.install(|| fib(N)), 75025);
    }
    // The pool idles once before anything is measured: a worker's first sleep
    // pays the process's one-time set-up (mwait's detection and choice of
    // backend), which a long-running program pays once, not after each burst.
    std::thread::sleep(Duration::from_millis(100));
    let mut times: Vec<u128> = (0..RUNS)
        .map(|_| {
            let t0 = Instant::now();
            std::hint::black_box(pool.install(|| fib(N)));
            t0.elapsed().as_nanos()
        })
        .collect();
    times.sort_unstable();
    println!("workload_ns {}", times[RUNS / 2]);
    let c0 = cpu::threads_cpu_ns(false);
    std::thread::sleep(Duration::from_secs(1));
    println!("idle_cpu_ns {}", cpu::threads_cpu_ns(false) - c0);
}
