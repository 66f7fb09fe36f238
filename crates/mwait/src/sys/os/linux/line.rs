//! What every park and every notify of this process reads, on one cache line: a
//! park that wakes after a long sleep misses on each line it reads. Each field is
//! written once, or on a failure, so the line stays shared between the CPUs that
//! read it. The barrier (`barrier.rs`) keeps its mode, flags and fork count here,
//! and `cpus.rs` where it reads the calling thread's CPU number.

use super::barrier::NOTIFY_FENCED;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8};
use std::sync::OnceLock;

#[repr(C, align(64))]
pub(super) struct ReadMostly {
    /// Which notify this process's notifiers use, in one byte read (`Relaxed`) on
    /// every notify: `NOTIFY_FENCED` until this process has registered for
    /// `membarrier(PRIVATE_EXPEDITED)`, then `NOTIFY_LIGHT`, or
    /// `NOTIFY_LIGHT_PREFETCH` where the CPU has PREFETCHW. Set once, never reset.
    pub(super) notify_mode: AtomicU8,
    /// Set once `membarrier` has failed after registration: from then on notifiers
    /// fence (`NOTIFY_FENCED`) and waiters run the shootdown barrier.
    pub(super) barrier_lost: AtomicBool,
    /// Set once the shootdown barrier has failed too (`mprotect` refused): from then
    /// on every park sleeps in slices of at most `SLICE_NS`.
    pub(super) sliced: AtomicBool,
    /// Set by `register_at_load` when the kernel accepted the registration.
    pub(super) registered_at_load: AtomicBool,
    /// Where `current_cpu` reads the CPU number: `CPU_SOURCE_UNKNOWN` until its
    /// first call, then `CPU_FROM_TSC_AUX` or `CPU_FROM_LIBC` for good (pending
    /// in between while the calls run on CPU 0).
    pub(super) cpu_source: AtomicU8,
    /// See `fork_generation`.
    pub(super) fork_generation: AtomicU32,
    /// See `registered` in `barrier.rs`.
    pub(super) registered: OnceLock<bool>,
    /// Whether `fork_generation`'s handler is installed.
    pub(super) fork_handler: OnceLock<()>,
}

pub(super) static LINE: ReadMostly = ReadMostly {
    notify_mode: AtomicU8::new(NOTIFY_FENCED),
    barrier_lost: AtomicBool::new(false),
    sliced: AtomicBool::new(false),
    registered_at_load: AtomicBool::new(false),
    cpu_source: AtomicU8::new(super::cpus::CPU_SOURCE_UNKNOWN),
    fork_generation: AtomicU32::new(0),
    registered: OnceLock::new(),
    fork_handler: OnceLock::new(),
};

const _: () = assert!(std::mem::size_of::<ReadMostly>() <= 64);
