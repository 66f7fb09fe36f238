//! The atomics the protocol uses, swapped for loom's under `cfg(loom)` so that the
//! model checker sees every access (the crossbeam-utils pattern).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32, Ordering};
#[cfg(loom)]
pub(crate) use std::sync::atomic::compiler_fence;

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{compiler_fence, fence, AtomicU32, Ordering};

/// One step of a busy-wait: PAUSE on x86, YIELD on Arm, a model yield under loom.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}

/// Gives the CPU back to the scheduler for one round.
#[inline]
pub(crate) fn yield_now() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}

/// Loom models `SeqCst` loads, stores and read-modify-writes as `AcqRel` (its
/// documented limitation), which would report false lost wake-ups in the protocol's
/// store/load pair. It does model `fence(SeqCst)`. So the loom build adds a SeqCst
/// fence between the two halves of each pair; the real build relies on the SeqCst
/// accesses alone, which the C++/Rust memory model guarantees to be enough (a single
/// total order over all four accesses), and which cost one `xchg` on x86.
#[inline(always)]
pub(crate) fn loom_sc_fence() {
    #[cfg(loom)]
    fence(Ordering::SeqCst);
}
