//! Wait for another thread to change a value in memory, as cheaply as the CPU allows.
//!
//! A [`WaitCell`] holds a `u32` on its own cache line. Waiters block until a
//! predicate on the value holds; writers change the value with a plain atomic store
//! (or `swap`, `fetch_add`, ...), which is also the wake-up: when nobody is parked
//! in the kernel, a notify costs one store and one load, with no lock and no system
//! call.
//!
//! ```
//! use mwait::WaitCell;
//! use std::sync::Arc;
//! use std::thread;
//!
//! let cell = Arc::new(WaitCell::new(0));
//! let waiter = {
//!     let cell = cell.clone();
//!     thread::spawn(move || cell.wait_until(|v| v == 42))
//! };
//! cell.store(42);
//! assert_eq!(waiter.join().unwrap(), 42);
//! ```
//!
//! # Which primitive
//!
//! | you want | coming from | in mwait |
//! | --- | --- | --- |
//! | a value other threads wait on until a predicate holds | `Mutex` + `Condvar` (std, parking_lot) | [`WaitCell`]: `wait_until`, `store`/`swap`/`fetch_*` |
//! | to wait on an atomic that lives elsewhere (a lock word, a ring's slot) | `atomic-wait`'s `wait`/`wake_one`/`wake_all`, a futex | [`atomic::wait`], [`atomic::wait_until`], [`atomic::wake_one`], [`atomic::wake_all`]; `atomic-wait`'s exact contract (a wake ends the wait without a change): [`atomic::wait_or_woken`] |
//! | to wait on several words at once | `select` over channels | [`atomic::wait_any`] |
//! | a thread parker with a token | `std::thread::park`/`unpark`, `parking::Parker`, `parking_lot_core::park` | [`Parker`] / [`Unparker`] (or the `mwait-parking` drop-in) |
//! | to block on a future | `futures::executor::block_on`, `pollster` | [`block_on`] |
//! | an async wait on a value | `tokio::sync::Notify`, `event-listener` | [`WaitCell::wait_until_async`] |
//! | a barrier | `std::sync::Barrier` | [`Barrier`] |
//!
//! Any `AtomicU32` or `AtomicU64` can be waited on too, wherever it lives (a ring's
//! slots, a lock word inside a struct), through [`atomic`]: `wait`, `wait_until`
//! and their timed forms, `wake_one` and `wake_all` as in `atomic-wait`, and
//! [`atomic::wait_any`] over several words and cells. The same ladder runs; parked
//! waiters queue in a fixed 32 KiB table, so a word costs no memory and a wake of a
//! word nobody waits on costs one load.
//!
//! # Parking threads
//!
//! [`Parker`] and [`Unparker`] are a thread parker on one cell (a token that
//! `unpark` sets and `park` waits for and takes), for executors whose idle workers
//! should spin or monitor-wait through a short gap and sleep through a long one;
//! [`block_on`] runs a future on one, and an [`Unparker`] converts into a
//! [`Waker`](std::task::Waker). An unpark of a parker that is awake makes no system
//! call.
//!
//! # The tier ladder
//!
//! A wait climbs at most three tiers, each bounded in time by the [`WaitPolicy`]:
//!
//! 1. **spin**: re-load the value with PAUSE between loads, a few µs by default
//!    (shorter under a hypervisor, none when the process has one CPU, and adaptively
//!    none on cells where spinning keeps failing);
//! 2. **hardware wait**: arm a monitor on the cell's line and let the CPU sleep until
//!    the line is written (UMONITOR/UMWAIT on Intel, MONITORX/MWAITX on AMD, or
//!    MONITOR/MWAIT in ring 0 through the `/dev/mwait` kernel shim);
//! 3. **park**: sleep on a futex (or the OS's equivalent), which frees the CPU
//!    for other threads.
//!
//! The process's [`Backend`] is chosen once, from CPUID ([`Capabilities::detect`]),
//! and reported by [`selection`]. The park tier sleeps on every operating system;
//! `Backend::Futex` names it everywhere. The README has the table of backends and
//! the CPUs that have them, and of operating systems and what their park tier
//! calls, each with where it has run.
//!
//! Two threads that wait for each other and share a CPU park in turn, and the
//! scheduler, which sees one runnable thread at a time, leaves them there even while
//! another CPU of the process idles (unpinned threads that start together often
//! begin that way). The thread that woke its partner on its own CPU therefore leaves
//! that CPU at its next wait, where its affinity mask names other CPUs and the
//! machine has no more runnable threads than CPUs: it takes the CPU out of its
//! affinity mask, which makes the kernel move it, and puts the mask back at once.
//! A thread pinned to one CPU is never moved, and the attempts of a thread back off
//! to one per 10 ms. A program that changes a thread's affinity from another thread
//! at that very moment can have its change overwritten by the restore.
//!
//! # Environment
//!
//! - `MWAIT_BACKEND=auto|spin|futex|umwait|mwaitx|kernel` forces a backend. A backend
//!   this machine does not offer is refused with the reason (see [`try_selection`]),
//!   unless the test-only `MWAIT_UNSAFE_FORCE=1` is set too.
//! - `MWAIT_DISABLE=umwait,mwaitx,kernel` (or `hw`) is the kill switch: auto-selection
//!   skips those backends.
//! - `MWAIT_MEMBARRIER=0` (or `false`, `off`) turns off the asymmetric barrier (see
//!   below).
//! - `MWAIT_LOG=1` writes the process's choice to stderr once, when it is made: the
//!   backend, why, the budgets, the notify mode.
//! - `MWAIT_STRICT=1` makes a bad setting a panic at the first wait that needs it.
//!   Without it, a setting this machine cannot honour (an unknown name, a backend it
//!   does not offer, a value that is not one of `0, 1, false, true, off, on`) is
//!   reported once per process on stderr, in one line that names the variable, its
//!   value and what is used instead, and the automatic choice is made: a typo never
//!   stops a program that got mwait through a dependency.
//!
//! The same settings can be made from code with [`Settings`], before the first wait;
//! the variables, where set, come first.
//! - `MWAIT_SELFTEST=0` (test-only) skips the hardware tiers' self-test, so that a
//!   tier that an emulator runs as a no-op can still be exercised.
//!
//! # The self-test
//!
//! Every hardware tier runs a self-test the first time it is chosen (about 1 ms): it
//! checks that a wait (a) ends within a few µs of another thread's store to the armed
//! line, (b) without a store lasts about its timer (waits of 20 µs and 160 µs last in
//! proportion, under the OS cap `umwait_control` for UMWAIT) and (c) rarely returns
//! early, judging medians of several tries. A tier that fails is demoted (a trapped
//! no-op fails (b), an emulation that sleeps until its timer fails (a)), with the
//! failed check named in [`Selection::demoted`].
//!
//! # The asymmetric barrier, and what it costs
//!
//! A notifier must order its store before its check for parked waiters. A locked
//! instruction does that (an `xchg`); instead, once a process has parked a waiter,
//! mwait registers for `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` and lets the
//! *parking* waiter pay: the notify becomes a plain store and a load, and every park
//! runs one `membarrier`, which is cheap when no other thread of the process is
//! running and costs an inter-processor interrupt to each CPU running one (a VM exit
//! under a hypervisor) when some are, briefly interrupting those threads (the costs:
//! `docs/hardware-results.md`, "Building-block costs"). A cell whose waiter keeps
//! parking (a consumer fed every millisecond) pays that once: the first park sets a
//! sticky bit that makes the cell's notifiers fence (about as costly as the `xchg`),
//! later parks skip `membarrier`, and 32 notifies in a row that find nobody parked
//! clear the bit again. Programs that park often while other threads of theirs
//! compute can turn the asymmetric barrier off with `MWAIT_MEMBARRIER=0`. The full
//! argument is in the source (`protocol.rs`, "Notes about memory ordering").
//!
//! # The contract
//!
//! - `wait_until` returns only when the predicate held for the value it returns; it
//!   hides every spurious wake-up of the tiers below.
//! - A change made through a `WaitCell` writer method (`store`, `swap`, `fetch_add`,
//!   `fetch_or`, `fetch_and`, a successful `compare_exchange`) is seen by every waiter:
//!   spinners and hardware waiters see the store itself, parked waiters are woken
//!   (all of them). A change made through [`WaitCell::as_atomic`] needs a
//!   [`WaitCell::notify_all`] (or `notify_one`) for parked waiters.
//! - A waiter checks the value at least once after every change it could have missed,
//!   but it may miss *intermediate* values: if the value goes 0 → 1 → 0 quickly, a
//!   waiter for `1` may never see it (as with every futex-based primitive).
//! - Timed waits return [`WaitResult::TimedOut`] with the last value seen once the
//!   deadline passed; they may overshoot it by the kernel's timer slack.
//! - Across `fork()`: a cell made with [`WaitCell::new_shared`] in `MAP_SHARED`
//!   memory works between parent and child; its waiters order with a fence, not
//!   `membarrier`. As with any library, a child forked from a multi-threaded parent
//!   may only rely on state that no other thread was setting up at the fork: call
//!   [`prepare`] before forking, which settles every one-time initialisation of
//!   mwait (detection, the choice of backend, the `membarrier` registration), so
//!   that the child's first wait does not block on one that a thread of the parent
//!   had under way.

//!
//! # The semver surface
//!
//! The public API is what the root re-exports and [`platform`] holds: the items
//! above and their documented methods and fields. Structs and enums marked
//! `#[non_exhaustive]` may gain fields and variants in minor releases. The choice
//! of backend, the default budgets' values and every figure in the docs may change
//! in any release; the contract above does not. The `test-counters` feature and
//! the environment variables marked test-only are for this crate's tests, outside
//! the semver promise.

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

// The layers, top to bottom; a file imports only from the defining modules of
// layers below it, never through these re-exports (docs/architecture.md).
pub mod atomic;
mod backend;
mod barrier;
mod cell;
mod detect;
mod future;
mod ladder;
mod parker;
mod policy;
mod primitive;
mod protocol;
mod registry;
mod select;
mod settings;
mod sys;

pub use backend::{Backend, CState};
pub use barrier::Barrier;
pub use cell::WaitCell;
pub use detect::Capabilities;
pub use future::{WaitUntil, WaitUntilTimer};
pub use ladder::outcome::WaitResult;
pub use ladder::stats::{stats, ProcessStats, WaitStats};
pub use parker::{block_on, Parker, Unparker};
pub use policy::{prepare, WaitPolicy};
pub use select::{selection, try_selection, Selection};
pub use settings::{NotifyMode, Settings, SettingsError};

/// The types and constants that the root API's fields, errors and defaults name:
/// what a caller needs to spell a [`Capabilities`] field, match a
/// [`try_selection`] error or compare a budget with the defaults.
pub mod platform {
    pub use crate::backend::{ParseBackendError, C0_2_MIN_LATENCY_NS, C1_MIN_LATENCY_NS};
    pub use crate::detect::{UmwaitControl, Vendor};
    pub use crate::select::{
        Defaults, SelectError, HW_BUDGET_NS, SPIN_BUDGET_HYPERVISOR_NS, SPIN_BUDGET_NS,
    };
}

/// Counters compiled in with the `test-counters` feature, for tests that prove what
/// the fast paths do not do.
#[cfg(feature = "test-counters")]
#[doc(hidden)]
pub mod test_counters {
    use crate::sys::counters::{read, Counter};

    /// How many `futex_wake` system calls this process has made through mwait.
    pub fn futex_wake_calls() -> u64 {
        read(Counter::FutexWake)
    }

    /// How many `membarrier` system calls this process has made through mwait.
    pub fn membarrier_calls() -> u64 {
        read(Counter::Membarrier)
    }

    /// How many `/dev/mwait` waits of this process ended for `reason`, an
    /// `MWAIT_REASON_*` value of `mwait-sys` (a signal counts as
    /// `MWAIT_REASON_SIGNAL`, a refusal as 0); always 0 where the build has no
    /// kernel tier.
    pub fn kernel_wait_returns(reason: u32) -> u64 {
        read(Counter::KernelWait(reason))
    }
}
