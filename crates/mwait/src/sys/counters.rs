//! The counters of the `test-counters` feature, for tests that prove what the fast
//! paths do not do. Without the feature, [`count`] compiles to nothing.
//!
//! Also the switch of the wait statistics: [`WAIT_STATS`].

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Whether waits are counted (`WaitCell::stats`, `mwait::stats`). Always, except in a
/// build with `--cfg mwait_no_stats`, which exists only to measure what counting
/// costs (`docs/default-policy.md`).
pub(crate) const WAIT_STATS: bool = !cfg!(mwait_no_stats);

/// What is counted.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Counter {
    /// A `futex_wake` system call (or its stand-in on targets without futex).
    FutexWake,
    /// A `membarrier` system call.
    Membarrier,
    /// A `/dev/mwait` wait that ended for this `MWAIT_REASON_*` (0: refused, or a
    /// reason this build does not know).
    KernelWait(u32),
}

static FUTEX_WAKE_CALLS: AtomicU64 = AtomicU64::new(0);
static MEMBARRIER_CALLS: AtomicU64 = AtomicU64::new(0);
/// Indexed by `MWAIT_REASON_*`, which runs from 1 to 4.
static KERNEL_WAIT_RETURNS: [AtomicU64; 5] = [const { AtomicU64::new(0) }; 5];

fn counter(c: Counter) -> &'static AtomicU64 {
    match c {
        Counter::FutexWake => &FUTEX_WAKE_CALLS,
        Counter::Membarrier => &MEMBARRIER_CALLS,
        Counter::KernelWait(reason) => KERNEL_WAIT_RETURNS
            .get(reason as usize)
            .unwrap_or(&KERNEL_WAIT_RETURNS[0]),
    }
}

/// Counts one `c` (with the `test-counters` feature; nothing without it).
#[inline(always)]
pub(crate) fn count(c: Counter) {
    if cfg!(feature = "test-counters") {
        counter(c).fetch_add(1, Relaxed);
    }
}

/// How many `c` this process has counted.
#[cfg(feature = "test-counters")]
pub(crate) fn read(c: Counter) -> u64 {
    match c {
        Counter::KernelWait(reason) if reason as usize >= KERNEL_WAIT_RETURNS.len() => 0,
        _ => counter(c).load(Relaxed),
    }
}
