//! The operating system's part of the platform: one file (or folder) per system, picked
//! below, each providing the items of [`park`] and the few facts the ladder reads about
//! the machine ([`current_cpu`], [`running_threads`], [`usable_cpus`], and
//! [`ThreadCpus`], the affinity control of the hardware self-test).
//!
//! `linux/` (futex, `membarrier` and its shootdown fallback, CPU facts and affinity,
//! the cgroup parsers), `windows.rs` (`WaitOnAddress`, `FlushProcessWriteBuffers`),
//! `macos.rs` (`os_sync_wait_on_address`, else `__ulock_wait`), `freebsd.rs`
//! (`_umtx_op`), `table.rs` (every other target: a table of parked threads on std
//! `park` / `unpark`), `loom.rs` (the model: a mutex and a condvar per cell);
//! `plain.rs` has the parts of a platform without a process-wide barrier, which each
//! file takes what it lacks from. Every platform's park tier sleeps, so the `Futex`
//! ladder (spin, then park) is offered on every target.
//!
//! To add a platform, write its file with the items the signatures below pin and add
//! its line to the choice: the fallback needs no edit.

use crate::primitive::AtomicU32;
use crate::sys::contract::Parked;

pick! {
    #[cfg(mwait_loom)] loom,
    #[cfg(target_os = "linux")] linux,
    #[cfg(windows)] windows,
    #[cfg(target_os = "macos")] macos,
    #[cfg(target_os = "freebsd")] freebsd,
    _ => table,
}

// Each platform takes the parts it lacks (Windows has a barrier of its own, Linux takes
// only the queue and the light notifier's two marks): the rest go unused.
#[allow(dead_code)]
mod plain;

// The fallback table runs its unit tests on Linux too, where they can be executed;
// there it is not the platform, so the items it provides as one go unused.
#[cfg(all(test, target_os = "linux", not(mwait_loom)))]
#[allow(dead_code, unused_imports)]
mod table;

// The contract, checked by the compiler: a platform file that lacks an item, or gives
// it another signature, fails here.
const _: fn(&Queue, &AtomicU32, u32, Option<u64>, bool) -> Parked = wait;
const _: fn(&Queue, &AtomicU32, u32, bool) -> usize = wake;
const _: fn() = waiter_barrier;
const _: fn(&AtomicU32) -> bool = begin_light_store;
const _: fn() -> bool = begin_light_check;
const _: fn() = light_fence;
const _: fn() = end_light_store;
const _: fn() -> u32 = fork_generation;
const _: fn() = prepare;
const _: fn() -> u32 = current_cpu;
const _: fn() -> Option<usize> = running_threads;
const _: fn() -> Option<usize> = usable_cpus;
const _: fn() -> Option<ThreadCpus> = ThreadCpus::of_this_thread;
const _: fn(&ThreadCpus) -> usize = ThreadCpus::count;
const _: fn(&ThreadCpus, usize) -> bool = ThreadCpus::move_off;
const _: fn(&ThreadCpus, usize) -> ThreadCpus = ThreadCpus::without;
const _: fn(&ThreadCpus) -> bool = ThreadCpus::is_this_thread_s;
const _: fn(&ThreadCpus) -> bool = ThreadCpus::apply;

pub(crate) mod park {
    //! Sleeping in the kernel until another thread changes a word, and the barrier that
    //! makes announcing such a sleeper cheap for notifiers.
    //!
    //! The contract every platform file meets:
    //!
    //! - [`Queue`]: per-word state that a platform may keep beside the word (the loom
    //!   model keeps its sleep queue there); zero-sized where the kernel keys sleepers by
    //!   address. `Queue::new` is a `const fn` outside the loom model.
    //! - [`wait`]`(queue, word, expected, deadline_ns, shared) -> Parked`: sleeps while
    //!   `word` holds `expected`, until woken by [`wake`], until the monotonic clock of
    //!   [`clock::now_ns`](crate::sys::clock::now_ns) reaches `deadline_ns` (absolute; `None`:
    //!   no deadline), or for no reason at all. The comparison with `expected` and the
    //!   decision to sleep must be atomic with respect to [`wake`] (a store followed by a
    //!   `wake` that lands between our caller's last check and our sleep must not be lost).
    //!   Returns [`Parked::TimedOut`] only once the deadline has passed,
    //!   [`Parked::Changed`] when it found the word unequal to `expected` and never slept
    //!   (where it can tell), and [`Parked::Woken`] otherwise; the caller re-checks after
    //!   either. A platform with no sleep may return `Woken` at once (after yielding the
    //!   CPU).
    //! - [`wake`]`(queue, word, n, shared) -> usize`: wakes up to `n` sleepers of `word`
    //!   (`u32::MAX`: all); returns how many it woke where the platform says, else 0:
    //!   never more than it woke (the protocol trusts a count as high as its parked
    //!   count to mean that every counted waiter was asleep, see `protocol.rs`).
    //!   `shared`: the word lives in memory shared between processes (a non-private
    //!   futex, say); the same flag is passed to `wait` and `wake` of one word.
    //! - [`waiter_barrier`]: the waiter's half of the barrier between announcing a
    //!   sleeper and re-checking the word (see `protocol.rs`): a `SeqCst` fence at
    //!   least; something heavier (`membarrier`) where [`begin_light_store`] can return
    //!   true.
    //! - [`prepare`]: settles the one-time set-up of [`waiter_barrier`] (`membarrier`
    //!   registration), so that a child of `fork()` never finds it half done.
    //! - [`begin_light_store`]: whether notifiers may order their store to `word` before
    //!   their look at the sleeper count with a compiler barrier alone, in the one load
    //!   the notify path makes. It may return true only after every later
    //!   [`waiter_barrier`] is a process-wide barrier (every CPU running a thread of this
    //!   process executes a full barrier before it returns). Where it says yes it may
    //!   also prepare the line for the store (a PREFETCHW on Linux x86-64), which orders
    //!   nothing.
    //! - [`begin_light_check`]: the same answer, for a notifier that only reads the
    //!   line it looks at (the waiter table's announcement word, after the caller's
    //!   own store elsewhere): no preparation of the line.
    //! - [`light_fence`]: between the light notifier's store and its load of the sleeper
    //!   count: a compiler barrier ([`end_light_store`] after the load: nothing). The
    //!   loom model puts its barrier's interrupt points at these three calls.

    pub(crate) use super::{
        begin_light_check, begin_light_store, end_light_store, fork_generation, light_fence,
        prepare, wait, waiter_barrier, wake, Queue,
    };
    pub(crate) use crate::sys::contract::Parked;

    /// `wake`'s `n` for "every sleeper".
    pub(crate) const ALL: u32 = u32::MAX;
}
