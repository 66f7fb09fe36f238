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
//! 3. **park**: sleep on a futex (or the OS's equivalent, below), which frees the CPU
//!    for other threads.
//!
//! The process's [`Backend`] is chosen once, from CPUID ([`Capabilities::detect`]),
//! and reported by [`selection`]:
//!
//! | CPU | hardware tier | ladder |
//! | --- | --- | --- |
//! | Intel with WAITPKG (Tremont, Alder Lake, Sapphire Rapids and later) | UMWAIT | spin → UMWAIT → futex |
//! | AMD with MONITORX (family 15h and later, Zen) | MWAITX | spin → MWAITX → futex |
//! | Intel without WAITPKG, `/dev/mwait` loaded | kernel MWAIT | spin → ioctl → futex |
//! | anything else on Linux (and most VMs, which hide all three) | none | spin → futex |
//! | other operating systems | UMWAIT or MWAITX where CPUID offers them (no `/dev/mwait`) | spin → (UMWAIT / MWAITX →) park |
//!
//! The park tier sleeps on every operating system; `Backend::Futex` names it
//! everywhere. Whether it has been executed or only compiled:
//!
//! | OS | park tier | asymmetric barrier (light notify) | process-shared cells | tested |
//! | --- | --- | --- | --- | --- |
//! | Linux | `futex(FUTEX_WAIT_BITSET)`, absolute `CLOCK_MONOTONIC` deadline | `membarrier(PRIVATE_EXPEDITED)` | non-private futexes | executed (`cargo test`, x86-64) |
//! | Windows 8+ | `WaitOnAddress` (timeout in ms, rounded up), `WakeByAddressSingle` / `All` | `FlushProcessWriteBuffers`; off under Wine | degraded: `WaitOnAddress` is process-private, so a waiter re-checks every 1 ms | executed under Wine 8 (`cargo xtask wine-test`), where the light notify is off |
//! | macOS | `os_sync_wait_on_address` (14.4+, found at run time), else `__ulock_wait` | none: `SeqCst` fences | the `SHARED` flags | built only (clippy, `cargo test --no-run` without the link) |
//! | FreeBSD | `_umtx_op(UMTX_OP_WAIT_UINT_PRIVATE)`, absolute `CLOCK_MONOTONIC` deadline | none: `SeqCst` fences | `UMTX_OP_WAIT_UINT` | built only (as macOS) |
//! | every other target | a table of parked threads keyed by address, std `park` / `unpark` | none: `SeqCst` fences | degraded as on Windows | its unit tests executed on Linux; built for NetBSD |
//!
//! # Environment
//!
//! - `MWAIT_BACKEND=auto|spin|futex|umwait|mwaitx|kernel` forces a backend. A backend
//!   this machine does not offer is refused with the reason (see [`try_selection`]),
//!   unless the test-only `MWAIT_UNSAFE_FORCE=1` is set too.
//! - `MWAIT_DISABLE=umwait,mwaitx,kernel` (or `hw`) is the kill switch: auto-selection
//!   skips those backends.
//! - `MWAIT_MEMBARRIER=0` turns off the asymmetric barrier (see below).
//! - `MWAIT_SELFTEST=0` (test-only) skips the hardware tiers' self-test, so that a
//!   tier that an emulator runs as a no-op can still be exercised.
//!
//! # Where each hardware tier has run
//!
//! | tier | executed | timed on real hardware |
//! | --- | --- | --- |
//! | UMWAIT / TPAUSE | under `qemu-x86_64-static -cpu max` (no-op there), `cargo xtask hw-test` | not yet |
//! | MWAITX | natively on AMD EPYC Firecracker guests that execute it although CPUID hides it (trapped: ~7 µs whatever its timer, so the self-test's check (b) demotes it), `cargo xtask hw-test` | not yet |
//! | kernel MWAIT | in a QEMU TCG guest (`cargo xtask vm-test`; MWAIT is a no-op there with two vCPUs, and the module's deadline timer ends a wait on time) | not yet |
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
//! instruction does that (an `xchg`: about 12 ns on the AMD EPYC guests measured
//! here); instead, once a process has parked a waiter, mwait registers for
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` and lets the *parking* waiter pay:
//! the notify becomes a plain store and a load (about 1.4 ns), and every park runs one
//! `membarrier`, which costs about 0.1 µs when no other thread of the process is
//! running and about 5 µs (an inter-processor interrupt to each CPU running one; a VM
//! exit under a hypervisor) when some are, and briefly interrupts those threads.
//! A cell whose waiter keeps parking (a consumer fed every millisecond) pays that once:
//! the first park sets a sticky bit that makes the cell's notifiers fence (about as
//! costly as the `xchg`), later parks skip `membarrier`, and 32 notifies in a row
//! that find nobody parked clear the bit again. Programs that park often while other
//! threads of theirs compute can turn the asymmetric barrier off with
//! `MWAIT_MEMBARRIER=0`. The full argument is in the source (`protocol.rs`, "Notes
//! about memory ordering").
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

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

// The layers, top to bottom; a file imports only from layers below it, except that
// detect.rs names the backends of backend/kind.rs, a leaf (see docs/architecture.md).
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
mod sys;

pub use backend::{Backend, CState, ParseBackendError, C0_2_MIN_LATENCY_NS, C1_MIN_LATENCY_NS};
pub use barrier::Barrier;
pub use cell::WaitCell;
pub use detect::{Capabilities, OsFacts, UmwaitControl, Vendor};
pub use future::{WaitUntil, WaitUntilTimer};
pub use ladder::stats::{stats, ProcessStats, WaitStats};
pub use ladder::WaitResult;
pub use parker::{block_on, Parker, Unparker};
pub use policy::{prepare, WaitPolicy};
/// The CPUID crate whose [`CpuIdReader`](raw_cpuid::CpuIdReader) feeds
/// [`Capabilities::from_cpuid`], re-exported so that callers use the same version.
#[cfg(target_arch = "x86_64")]
pub use raw_cpuid;
pub use select::{
    plan, select, selection, try_selection, Defaults, EnvConfig, SelectError, Selection,
    HW_BUDGET_NS, SPIN_BUDGET_HYPERVISOR_NS, SPIN_BUDGET_NS,
};

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
