//! The harness behind both `cargo bench` (criterion) and `cargo xtask bench` (the report
//! runner, `src/main.rs`): one [`Signal`] per mechanism, and the scenarios.
//!
//! A [`Signal`] carries a `u32` from one thread to another: `set` publishes a value and
//! wakes the other side as that mechanism does; `wait_eq` blocks until the value is
//! seen. Every mechanism is measured through the same scenario code, side by side in
//! one run, so only ratios within a run are quoted.

pub mod impls;
pub mod scenarios;

use std::time::{Duration, Instant};

/// A one-way, one-waiter signal of a growing `u32` counter.
pub trait Signal: Send + Sync {
    /// Publishes `v` (larger than every earlier value) and wakes the waiter if that
    /// mechanism needs to.
    fn set(&self, v: u32);
    /// Blocks until the value is at least `v`; returns the value seen. (A waiter that
    /// waited for one exact value could miss it when the setter is faster.)
    fn wait_ge(&self, v: u32) -> u32;
}

/// Pins the calling thread to `cpu` (Linux); false if that is not possible.
pub fn pin_to_cpu(cpu: usize) -> bool {
    // SAFETY: an all-zero cpu_set_t is a valid empty set; CPU_SET stays within it for
    // a CPU below CPU_SETSIZE; the set outlives the call.
    unsafe {
        if cpu >= libc::CPU_SETSIZE as usize {
            return false;
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// CPU time consumed by the calling thread so far (`CLOCK_THREAD_CPUTIME_ID`, the
/// clock behind `RUSAGE_THREAD`, at ns resolution).
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; the clock always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPUs this process may use.
pub fn usable_cpus() -> usize {
    mwait::Capabilities::detect().usable_cpus
}

/// Summary statistics of a sample of nanoseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Number of samples.
    pub n: usize,
}

/// p50/p99 of `samples` (nearest rank).
pub fn stats(samples: &mut [u64]) -> Stats {
    samples.sort_unstable();
    let at = |p: f64| -> f64 {
        if samples.is_empty() {
            return 0.0;
        }
        let rank = ((p / 100.0) * samples.len() as f64).ceil() as usize;
        samples[rank.clamp(1, samples.len()) - 1] as f64
    };
    Stats {
        p50: at(50.0),
        p99: at(99.0),
        n: samples.len(),
    }
}

/// Runs `f` repeatedly until `budget` has passed (at least once); returns the
/// per-call samples in ns.
pub fn sample_for(budget: Duration, max: usize, mut f: impl FnMut()) -> Vec<u64> {
    let mut out = Vec::with_capacity(max.min(1 << 20));
    let end = Instant::now() + budget;
    loop {
        let t0 = Instant::now();
        f();
        let t1 = Instant::now();
        out.push((t1 - t0).as_nanos() as u64);
        if t1 >= end || out.len() >= max {
            return out;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_are_nearest_rank() {
        let mut v: Vec<u64> = (1..=100).rev().collect();
        let s = stats(&mut v);
        assert_eq!((s.p50, s.p99, s.n), (50.0, 99.0, 100));
    }
}
