//! The platform layer: the only part of the crate that dispatches on the operating
//! system, the architecture and the loom model. Everything above it is written once.
//!
//! Two folders, one concern each, every file picked by one `cfg` line below:
//!
//! - `os/`: one file per operating system, each providing the items of [`park`]
//!   (with the contract written there) and the few facts the ladder reads about the
//!   machine: [`current_cpu`], [`running_threads`] and [`usable_cpus`] (and
//!   `ThreadCpus`, the affinity control of the hardware self-test). `linux.rs`
//!   (futex, `membarrier`), `windows.rs` (`WaitOnAddress`,
//!   `FlushProcessWriteBuffers`), `macos.rs` (`os_sync_wait_on_address`, else
//!   `__ulock_wait`), `freebsd.rs` (`_umtx_op`), `table.rs` (every other target: a
//!   table of parked threads on std `park` / `unpark`), `loom.rs` (the model: a
//!   mutex and a condvar per cell); `plain.rs` has the parts of a platform without a
//!   process-wide barrier, `cpus.rs` the process's CPU count from the cgroup files
//!   (pure parsers). Every platform's park tier sleeps, so the `Futex` ladder (spin,
//!   then park) is offered on every target. To add a platform, write its file with
//!   those items and add its line to the dispatch below.
//! - `x86/`: the x86-64 instructions and their capability tokens (`x86_64.rs`, with
//!   stand-ins in `none.rs`, whose tokens cannot be built, elsewhere), RDTSC and the
//!   TSC rate (`tsc.rs`), shared CPUID decoding and this CPU's CPUID reader
//!   (`cpuid.rs`), and the `/dev/mwait` calls (`dev_mwait.rs`, Linux on x86-64 only;
//!   `no_dev_mwait.rs` elsewhere).
//!
//! At the top: the clock (`clock.rs`), reads of the host's files (`host.rs`), the
//! counters of the `test-counters` feature (`counters.rs`), and the types the
//! platform files share with the layers above (`contract.rs`).

mod contract;
pub(crate) use contract::{CpuidWaits, ShimWake};

pub(crate) mod clock;
// The cgroup and CPU-list parsers; only the Linux platform reads those files.
#[cfg_attr(not(all(target_os = "linux", not(loom))), allow(dead_code))]
#[path = "os/cpus.rs"]
mod cpus;
pub(crate) mod host;
// The loom model counts nothing.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) mod counters;
// Each platform takes the parts it lacks (Windows has a barrier of its own, the loom
// model a queue, Linux only the queue): the rest go unused.
#[allow(dead_code)]
#[path = "os/plain.rs"]
mod plain;

#[cfg(all(target_os = "linux", not(loom)))]
#[path = "os/linux.rs"]
mod platform;
#[cfg(all(windows, not(loom)))]
#[path = "os/windows.rs"]
mod platform;
#[cfg(all(target_os = "macos", not(loom)))]
#[path = "os/macos.rs"]
mod platform;
#[cfg(all(target_os = "freebsd", not(loom)))]
#[path = "os/freebsd.rs"]
mod platform;
#[cfg(not(any(
    target_os = "linux",
    windows,
    target_os = "macos",
    target_os = "freebsd",
    loom
)))]
#[path = "os/table.rs"]
mod platform;
#[cfg(loom)]
#[path = "os/loom.rs"]
mod platform;

// The fallback table runs its unit tests on Linux too, where they can be executed;
// there it is not the platform, so the items it provides as one go unused.
#[cfg(all(test, target_os = "linux", not(loom)))]
#[allow(dead_code, unused_imports)]
#[path = "os/table.rs"]
mod table;

#[cfg(target_arch = "x86_64")]
#[path = "x86/cpuid.rs"]
pub(crate) mod cpuid;
#[cfg(all(target_arch = "x86_64", not(loom)))]
#[path = "x86/tsc.rs"]
pub(crate) mod tsc;
#[cfg(all(target_arch = "x86_64", not(loom)))]
#[path = "x86/x86_64.rs"]
pub(crate) mod x86;
#[cfg(not(all(target_arch = "x86_64", not(loom))))]
#[path = "x86/none.rs"]
pub(crate) mod x86;

#[cfg(all(target_os = "linux", target_arch = "x86_64", not(loom)))]
#[path = "x86/dev_mwait.rs"]
pub(crate) mod dev_mwait;
#[cfg(not(all(target_os = "linux", target_arch = "x86_64", not(loom))))]
#[path = "x86/no_dev_mwait.rs"]
pub(crate) mod dev_mwait;

// Process-shared memory for `SharedCells` (Unix only: `mmap`).
#[cfg(all(unix, not(loom)))]
pub(crate) mod shared_map;

#[cfg(not(loom))]
pub(crate) use no_model::{model_hardware, ModelHardware};
/// The failures unit tests inject into system calls (Linux's membarrier and futex).
#[cfg(all(test, target_os = "linux", not(loom)))]
pub(crate) use platform::inject;
pub(crate) use platform::{current_cpu, running_threads, usable_cpus, ThreadCpus};
#[cfg(loom)]
pub(crate) use platform::{model_hardware, ModelHardware};

/// Outside the loom model there is no simulated hardware tier: its type is empty.
#[cfg(not(loom))]
mod no_model {
    /// The simulated monitor, which only the loom model has.
    #[derive(Copy, Clone, Debug)]
    pub(crate) enum ModelHardware {}

    impl ModelHardware {
        /// Unreachable: no value of this type exists.
        pub(crate) fn episode(self) {
            match self {}
        }
    }

    /// None: real builds have real tiers only.
    pub(crate) fn model_hardware() -> Option<ModelHardware> {
        None
    }
}

/// Whether this build has the x86-64 wait instructions (UMWAIT, MWAITX, TPAUSE).
pub(crate) const HAS_X86_WAITS: bool = x86::AVAILABLE;
/// Whether this build can talk to the `/dev/mwait` kernel shim.
pub(crate) const HAS_DEV_MWAIT: bool = dev_mwait::AVAILABLE;

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
    //!   [`clock::now_ns`](super::clock::now_ns) reaches `deadline_ns` (absolute; `None`:
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

    pub(crate) use super::contract::Parked;
    pub(crate) use super::platform::{
        begin_light_check, begin_light_store, end_light_store, fork_generation, light_fence,
        prepare, wait, waiter_barrier, wake, Queue,
    };

    /// `wake`'s `n` for "every sleeper".
    pub(crate) const ALL: u32 = u32::MAX;
}
