//! Helpers shared by the tools around the `mwait` crate: its benches, examples,
//! integration tests, `xtask` and the bindings generator. Each exists here once.
//!
//! - Placement: [`pin_to_cpu`], [`unpin`], [`current_cpu`], [`affinity_cpus`].
//! - Clocks and samples: [`duration_ns`], [`thread_cpu_time`], [`sample_for`],
//!   [`percentile`], [`nearest_rank`], [`poll_until`].
//! - Child processes of the running binary: [`run_self`], and the compute workers
//!   that load the CPUs in the interference scenarios ([`compute_worker_entry`]).
//! - The workspace: [`project_root`].
//!
//! This crate does not depend on `mwait` (which takes it as a dev-dependency), so
//! nothing here can start the crate's process-wide selection as a side effect.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as sys;
#[cfg(not(target_os = "linux"))]
mod other;
#[cfg(not(target_os = "linux"))]
use other as sys;

/// The workspace root, found from this crate's manifest directory.
pub fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("mwait-support lives two levels below the workspace root")
        .to_path_buf()
}

/// `d` in whole nanoseconds, saturating at `u64::MAX` (585 years).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// assert_eq!(mwait_support::duration_ns(Duration::from_micros(3)), 3_000);
/// assert_eq!(mwait_support::duration_ns(Duration::MAX), u64::MAX);
/// ```
pub fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Pins the calling thread to `cpu`; false where that is not possible (the CPU is
/// outside the process's mask, or the platform has no affinity call).
pub fn pin_to_cpu(cpu: usize) -> bool {
    sys::pin_to_cpu(cpu)
}

/// Gives the calling thread every CPU again (those of the process's cpuset).
pub fn unpin() {
    sys::unpin();
}

/// Makes system call `nr` fail with `errno` in the calling thread and the threads it
/// starts from now on (a seccomp filter, which cannot be removed: call it in a child
/// process). Linux only.
#[cfg(target_os = "linux")]
pub fn deny_syscall(nr: libc::c_long, errno: u16) -> std::io::Result<()> {
    sys::deny_syscall(nr, errno)
}

/// Runs `f` in a child of `fork()` and returns the child's exit status: `f`'s value
/// (0 to 255), or -1 if it panicked or the child could not be made or waited for.
/// The child has only the calling thread: `f` must not wait for a lock another
/// thread may have held at the fork (allocating included, with some allocators).
/// Linux only.
#[cfg(target_os = "linux")]
pub fn in_forked_child(f: impl FnOnce() -> i32) -> i32 {
    sys::in_forked_child(f)
}

/// Lowers the calling thread to `SCHED_IDLE`: it runs only when its CPU has nothing
/// else to run (a woken thread at this priority does not preempt the thread that
/// woke it on its CPU). False if the call failed. Linux only.
#[cfg(target_os = "linux")]
pub fn idle_priority() -> bool {
    sys::idle_priority()
}

/// The calling thread's kernel thread id. Linux only.
#[cfg(target_os = "linux")]
pub fn thread_id() -> i32 {
    sys::thread_id()
}

/// Whether thread `tid` of this process is asleep in a futex wait, by its `wchan`;
/// `None` where the kernel does not say (no such file, or `0`). Linux only.
#[cfg(target_os = "linux")]
pub fn sleeps_in_futex(tid: i32) -> Option<bool> {
    let wchan = std::fs::read_to_string(format!("/proc/self/task/{tid}/wchan")).ok()?;
    let wchan = wchan.trim();
    (!wchan.is_empty() && wchan != "0").then(|| wchan.contains("futex"))
}

/// The CPU the calling thread runs on (`usize::MAX` where unknown). On Linux a vDSO
/// read, cheap enough to take beside a timed wake.
pub fn current_cpu() -> usize {
    sys::current_cpu()
}

/// The CPUs in the calling thread's affinity mask (at least 1). Taken before any
/// thread is pinned, this is the number of CPUs the process may use.
pub fn affinity_cpus() -> usize {
    sys::affinity_cpus()
        .or_else(|| thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
}

/// CPU time consumed by the calling thread so far (`CLOCK_THREAD_CPUTIME_ID`, the
/// clock behind `RUSAGE_THREAD`, at ns resolution).
#[cfg(unix)]
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; the clock exists on every Unix
    // this workspace builds for.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU time consumed by the calling thread so far (`GetThreadTimes`: kernel plus
/// user time). It counts in scheduler ticks (15.6 ms on Windows by default, 10 ms
/// under Wine, which reads Linux's per-thread times in clock ticks) and truncates,
/// so a thread charged less than one tick reads 0.
#[cfg(windows)]
pub fn thread_cpu_time() -> Duration {
    use windows_sys::Win32::Foundation::FILETIME;
    use windows_sys::Win32::System::Threading::{GetCurrentThread, GetThreadTimes};
    let zero = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut creation, mut exit, mut kernel, mut user) = (zero, zero, zero, zero);
    // SAFETY: GetCurrentThread returns a pseudo-handle that needs no closing; the four
    // FILETIMEs are valid and writable.
    let ok = unsafe {
        GetThreadTimes(
            GetCurrentThread(),
            &mut creation,
            &mut exit,
            &mut kernel,
            &mut user,
        )
    };
    assert_ne!(ok, 0, "GetThreadTimes: {}", std::io::Error::last_os_error());
    let hundred_ns = |t: FILETIME| (u64::from(t.dwHighDateTime) << 32) | u64::from(t.dwLowDateTime);
    Duration::from_nanos((hundred_ns(kernel) + hundred_ns(user)) * 100)
}

/// The `p`-th percentile (0..=100) of `sorted`, which must be in ascending order,
/// by nearest rank; 0 when empty.
pub fn nearest_rank(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The `p`-th percentile (0..=100) of `samples` in any order (nearest rank; 0 when
/// empty).
///
/// # Examples
///
/// ```
/// assert_eq!(mwait_support::percentile(&[5, 1, 3], 50.0), 3);
/// ```
pub fn percentile(samples: &[u64], p: f64) -> u64 {
    let mut v = samples.to_vec();
    v.sort_unstable();
    nearest_rank(&v, p)
}

/// Like [`sample_for`], with each sample the mean of `batch` consecutive calls of `f`
/// (ns per call, rounded down): at most `max` samples, `batch * max` calls. Where a
/// call lasts about as long as a step of the clock, or as a reading of it, one
/// reading per call cannot resolve a difference of 10 %; a batch divides both by
/// `batch`. (A `batch` of 0 counts as 1.)
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// let s = mwait_support::sample_batches_for(Duration::MAX, 3, 4, || {});
/// assert_eq!(s.len(), 3);
/// ```
pub fn sample_batches_for(
    budget: Duration,
    max: usize,
    batch: u32,
    mut f: impl FnMut(),
) -> Vec<u64> {
    let batch = batch.max(1);
    let mut v = sample_for(budget, max, || {
        for _ in 0..batch {
            f();
        }
    });
    for ns in &mut v {
        *ns /= u64::from(batch);
    }
    v
}

/// Runs `f` repeatedly until `budget` has passed (at least once) or `max` calls were
/// timed; returns the duration of each call in ns. `Duration::MAX` times exactly
/// `max` calls.
pub fn sample_for(budget: Duration, max: usize, mut f: impl FnMut()) -> Vec<u64> {
    let mut out = Vec::with_capacity(max.min(1 << 20));
    let end = Instant::now().checked_add(budget);
    loop {
        let t0 = Instant::now();
        f();
        let t1 = Instant::now();
        out.push(duration_ns(t1 - t0));
        if end.is_some_and(|end| t1 >= end) || out.len() >= max {
            return out;
        }
    }
}

/// How long a test waits for another thread to reach a state before it fails: far
/// beyond any scheduling delay of a loaded CI machine, and short of a hung run.
pub const SETTLE_LIMIT: Duration = Duration::from_secs(20);

/// Checks `done` every millisecond until it holds or `limit` has passed; returns
/// whether it held. For tests that must see another thread reach a state (a waiter
/// parked, say) and fail rather than hang when it never does.
pub fn poll_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    loop {
        if done() {
            return true;
        }
        if t0.elapsed() >= limit {
            return false;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// Runs the running binary again with `args`; returns what it printed on stdout, or
/// a description of the failure with its stderr.
pub fn run_self(args: &[String]) -> Result<String, String> {
    run_self_with(args, &[])
}

/// [`run_self`] with the variables `env` (name, value) added to the child's
/// environment.
pub fn run_self_with(args: &[String], env: &[(&str, &str)]) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
    let out = std::process::Command::new(&exe)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .map_err(|e| format!("cannot start {} {args:?}: {e}", exe.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} {args:?} failed with {}: {}",
            exe.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The argument that turns a binary that calls [`compute_worker_entry`] first
/// thing into a compute-worker process: `--compute-worker THREADS MILLIS`.
pub const COMPUTE_WORKER_ARG: &str = "--compute-worker";

/// Iterations per second of `workers` compute threads running for `duration`.
pub fn compute_throughput(workers: usize, duration: Duration) -> f64 {
    compute_throughput_placed(workers, duration, |_| {})
}

/// [`compute_throughput`] with each worker `k` calling `place(k)` before it starts
/// (to pin itself, say).
pub fn compute_throughput_placed(
    workers: usize,
    duration: Duration,
    place: impl Fn(usize) + Clone + Send + 'static,
) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let ts: Vec<_> = (0..workers)
        .map(|k| {
            let (stop, place) = (stop.clone(), place.clone());
            thread::spawn(move || {
                place(k);
                let mut n = 0u64;
                let mut x = 1u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..1_000 {
                        x = x
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                    }
                    n += 1;
                }
                std::hint::black_box(x);
                n
            })
        })
        .collect();
    thread::sleep(duration);
    stop.store(true, Ordering::Relaxed);
    let total: u64 = ts.into_iter().map(|t| t.join().unwrap()).sum();
    total as f64 / duration.as_secs_f64()
}

/// [`compute_throughput`] in a separate process (the running binary, started with
/// [`COMPUTE_WORKER_ARG`]): the seeds' interference load was another program (a
/// kernel build), and a process-private `membarrier` does not interrupt other
/// processes.
pub fn compute_throughput_process(workers: usize, duration: Duration) -> f64 {
    let args = [
        COMPUTE_WORKER_ARG.to_string(),
        workers.to_string(),
        duration.as_millis().to_string(),
    ];
    let text = run_self(&args).unwrap_or_else(|e| panic!("compute worker: {e}"));
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("compute worker printed {text:?}"))
}

/// The compute-worker side of [`compute_throughput_process`]: when `args` (the
/// process's arguments after its name) are `--compute-worker THREADS MILLIS`, runs
/// the workers, prints their iterations per second and returns true; otherwise
/// returns false and does nothing. A binary that may serve as the worker calls this
/// first thing in `main`.
pub fn compute_worker_entry(args: &[String]) -> bool {
    let [flag, threads, ms] = args else {
        return false;
    };
    if flag != COMPUTE_WORKER_ARG {
        return false;
    }
    let workers: usize = threads.parse().expect("thread count");
    let ms: u64 = ms.parse().expect("milliseconds");
    println!("{}", compute_throughput(workers, Duration::from_millis(ms)));
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=100).rev().collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&v, 0.0), 1);
        assert_eq!(percentile(&v, 100.0), 100);
        assert_eq!(percentile(&[], 50.0), 0);
    }

    #[test]
    fn durations_saturate() {
        assert_eq!(duration_ns(Duration::from_secs(2)), 2_000_000_000);
        assert_eq!(duration_ns(Duration::MAX), u64::MAX);
    }

    #[test]
    fn poll_until_reports_both_outcomes() {
        let mut n = 0;
        assert!(poll_until(Duration::from_secs(10), || {
            n += 1;
            n == 3
        }));
        assert!(!poll_until(Duration::ZERO, || false));
    }

    #[test]
    fn the_sampler_times_every_call_and_stops_at_max() {
        let mut calls = 0;
        let s = sample_for(Duration::from_secs(60), 5, || calls += 1);
        assert_eq!((s.len(), calls), (5, 5));
        let s = sample_for(Duration::MAX, 7, || calls += 1);
        assert_eq!((s.len(), calls), (7, 12));
    }

    #[test]
    fn compute_worker_entry_ignores_other_arguments() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(!compute_worker_entry(&args(&["--quick"])));
        assert!(!compute_worker_entry(&args(&["--other", "1", "2"])));
        assert!(compute_worker_entry(&args(&[COMPUTE_WORKER_ARG, "1", "1"])));
    }

    #[test]
    fn the_root_holds_the_workspace_manifest() {
        let manifest = std::fs::read_to_string(project_root().join("Cargo.toml")).unwrap();
        assert!(manifest.contains("[workspace]"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn pinning_moves_the_thread_and_unpin_restores_the_mask() {
        thread::spawn(|| {
            let all = affinity_cpus();
            let cpu = (0..1024)
                .find(|&c| pin_to_cpu(c))
                .expect("a CPU of the mask");
            assert_eq!(current_cpu(), cpu);
            assert_eq!(affinity_cpus(), 1);
            unpin();
            assert_eq!(affinity_cpus(), all);
        })
        .join()
        .unwrap();
    }
}
