//! The parts of a platform that has no process-wide barrier and tells nothing about
//! CPUs or load: what every platform but Linux uses (Windows takes the facts only, as
//! it has a barrier of its own; the loom model takes all), and a starting point for a
//! new one.

use crate::primitive::{compiler_fence, fence, AtomicU32, Ordering};

/// No process-wide barrier here: notifiers never take the light path.
#[inline(always)]
pub(crate) fn begin_light_store(_word: &AtomicU32) -> bool {
    false
}

/// No process-wide barrier here: notifiers never take the light path.
#[inline(always)]
pub(crate) fn begin_light_check() -> bool {
    false
}

/// Between the light notifier's store (1) and its load (2): a compiler barrier, which
/// keeps the compiler from moving the load above the store; the CPU may still do so,
/// which the waiters' process-wide barrier answers (see `protocol.rs`).
#[inline(always)]
pub(crate) fn light_fence() {
    compiler_fence(Ordering::SeqCst);
}

/// After the light notifier's load (2): nothing on a real platform (the loom model
/// leaves the section in which its barrier's interrupts may land).
#[inline(always)]
pub(crate) fn end_light_store() {}

/// A `SeqCst` fence, the symmetric protocol's half.
pub(crate) fn waiter_barrier() {
    fence(Ordering::SeqCst);
}

/// 0 for ever: counts a parent of `fork()` left in a private cell are not told apart
/// here (see "Counts left by a fork" in `protocol.rs`).
#[inline]
pub(crate) fn fork_generation() -> u32 {
    0
}

/// Nothing to settle: the barrier needs no registration.
pub(crate) fn prepare() {}

/// Whether `word` no longer holds `expected`. For an OS wait that returns at once when
/// the value differs without saying so, a look first tells that apart from a wake-up
/// (it is then `Parked::Changed`, which gives no wake-up latency sample).
#[inline]
pub(crate) fn changed(word: &AtomicU32, expected: u32) -> bool {
    word.load(Ordering::Relaxed) != expected
}

/// Nothing to keep beside the word: for a platform whose OS call (or table) keys
/// sleepers by address.
#[derive(Debug, Default)]
pub(crate) struct Queue;

impl Queue {
    pub(crate) const fn new() -> Queue {
        Queue
    }
}

/// Unknown here.
#[inline]
pub(crate) fn current_cpu() -> u32 {
    u32::MAX
}

/// Unknown here: spinning is never turned off for load.
pub(crate) fn running_threads() -> Option<usize> {
    None
}

/// Unknown here: the caller asks the standard library.
pub(crate) fn usable_cpus() -> Option<usize> {
    None
}

/// No affinity control here: the thread runs anywhere.
pub(crate) struct ThreadCpus;

impl ThreadCpus {
    /// Unknown here.
    pub(crate) fn of_this_thread() -> Option<ThreadCpus> {
        None
    }

    /// Unknown here.
    pub(crate) fn count(&self) -> usize {
        0
    }

    /// Refused here.
    pub(crate) fn move_off(&self, _cpu: usize) -> bool {
        false
    }

    /// Nothing to take out here.
    pub(crate) fn without(&self, _cpu: usize) -> ThreadCpus {
        ThreadCpus
    }

    /// Unknown here.
    pub(crate) fn is_this_thread_s(&self) -> bool {
        false
    }

    /// Refused here.
    pub(crate) fn apply(&self) -> bool {
        false
    }
}
