//! The tokio program of `cargo xtask bench` (xtask/src/client_bench.rs).
mod cpu;

use std::time::{Duration, Instant};

const ROUND_TRIPS: usize = 20_000;
/// Round trips before the measured ones: the first waits pay the process's
/// one-time set-up (mwait's detection and choice of backend).
const WARM_UP: usize = 2_000;

/// Prints `{name}_p50_ns`, `{name}_p99_ns` and `{name}_cpu_ns` (the process's CPU
/// time per round trip) of `ROUND_TRIPS` calls of `round_trip`, after `WARM_UP`.
fn measure(name: &str, mut round_trip: impl FnMut(u64)) {
    for i in 0..WARM_UP as u64 {
        round_trip(i);
    }
    let mut times = Vec::with_capacity(ROUND_TRIPS);
    let c0 = cpu::threads_cpu_ns(true);
    for i in 0..ROUND_TRIPS as u64 {
        let t0 = Instant::now();
        round_trip(i);
        times.push(t0.elapsed().as_nanos());
    }
    let cpu = cpu::threads_cpu_ns(true) - c0;
    times.sort_unstable();
    println!("{name}_p50_ns {}", times[ROUND_TRIPS / 2]);
    println!("{name}_p99_ns {}", times[ROUND_TRIPS * 99 / 100]);
    println!("{name}_cpu_ns {}", cpu / ROUND_TRIPS as u64);
}

/// Two plain threads hand a number back and forth through two bounded(1) tokio
/// channels with `blocking_send` / `blocking_recv`: each wait parks the thread on
/// tokio's `CachedParkThread`.
fn blocking_pingpong() {
    let (tx1, mut rx1) = tokio::sync::mpsc::channel::<u64>(1);
    let (tx2, mut rx2) = tokio::sync::mpsc::channel::<u64>(1);
    let echo = std::thread::spawn(move || {
        while let Some(v) = rx1.blocking_recv() {
            if tx2.blocking_send(v).is_err() {
                break;
            }
        }
    });
    measure("pingpong", |i| {
        tx1.blocking_send(i).unwrap();
        assert_eq!(rx2.blocking_recv(), Some(i));
    });
    drop(tx1);
    echo.join().unwrap();
}

/// A multi-thread runtime of 2 workers with its I/O and time driver: the main
/// thread's `block_on` spawns a task and awaits it. An idle worker parks, on the
/// driver or, while the other holds it, on its condvar path; `block_on`'s thread
/// parks on `CachedParkThread`. The runtime idles now and then, so that its
/// workers park again.
fn spawn_round_trip() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    measure("spawn", |i| {
        let v = rt.block_on(async move { tokio::spawn(async move { i }).await.unwrap() });
        assert_eq!(v, i);
        if i % 1000 == 999 {
            std::thread::sleep(Duration::from_micros(200));
        }
    });
}

fn main() {
    blocking_pingpong();
    spawn_round_trip();
}
