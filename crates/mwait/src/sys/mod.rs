//! The platform layer: the only part of the crate that dispatches on the operating
//! system, the architecture and the loom model. Everything above it is written once.
//!
//! Three folders, one concern each; the module tree is the file tree, and each folder's
//! `mod.rs` picks its files with one `pick!` choice:
//!
//! - [`os`]: one file (or folder) per operating system, each providing the items of
//!   [`park`] (with the contract written there and pinned by signatures) and the few
//!   facts the ladder reads about the machine: [`current_cpu`], [`running_threads`]
//!   and [`usable_cpus`] (and [`ThreadCpus`], the affinity control of the hardware
//!   self-test).
//! - [`arm`]: the AArch64 exclusive-monitor wait (LDAXR, WFE, WFET, CLREX) and its
//!   capability token, with the generic timer's counter.
//! - [`x86`]: the x86-64 instructions and their capability tokens, RDTSC and the TSC
//!   rate, CPUID decoding, and the `/dev/mwait` calls.
//!
//! At the top: the clock (`clock.rs`), reads of the host's files (`host.rs`), the
//! counters of the `test-counters` feature (`counters.rs`), the process's settings
//! (`settings.rs`: what code applied, `MWAIT_STRICT`, `MWAIT_LOG`, `MWAIT_MEMBARRIER`),
//! the words a hardware wait watches (`watchable.rs`, which the tier contract names
//! without naming an architecture), and the types the platform files share with the
//! layers above (`contract.rs`).

/// Declares the first module whose `cfg` holds and re-exports its items, else the one
/// after `_`, in the manner of `cfg_if`: each choice is one list, a new target adds
/// its line, and the fallback's `cfg` is derived from the lines above it.
macro_rules! pick {
    ($(#[cfg($m:meta)] $name:ident,)* _ => $fallback:ident $(,)?) => {
        pick!(@ () $(#[cfg($m)] $name,)* _ => $fallback);
    };
    (@ ($($done:meta,)*) #[cfg($m:meta)] $name:ident, $($rest:tt)*) => {
        #[cfg(all($m, not(any($($done),*))))]
        mod $name;
        #[cfg(all($m, not(any($($done),*))))]
        pub(crate) use self::$name::*;
        pick!(@ ($($done,)* $m,) $($rest)*);
    };
    (@ ($($done:meta,)*) _ => $fallback:ident) => {
        #[cfg(not(any($($done),*)))]
        mod $fallback;
        #[cfg(not(any($($done),*)))]
        pub(crate) use self::$fallback::*;
    };
}

mod contract;
#[cfg(all(target_arch = "x86_64", not(mwait_loom)))]
pub(crate) use contract::CpuidWaits;
#[cfg(all(target_arch = "aarch64", target_os = "linux", not(mwait_loom)))]
pub(crate) use contract::HwcapWaits;
pub(crate) use contract::ShimWake;
mod watchable;
pub(crate) use watchable::Watchable;

pub(crate) mod clock;
pub(crate) mod host;
pub(crate) mod settings;
pub(crate) mod stamp;
// The loom model counts nothing; only Linux calls `membarrier`, and only Linux on
// x86-64 `/dev/mwait`: the other counters go unread but by `mwait::test_counters`.
#[cfg_attr(
    any(mwait_loom, not(all(target_os = "linux", target_arch = "x86_64"))),
    allow(dead_code)
)]
pub(crate) mod counters;

pub(crate) mod arm;
pub(crate) mod os;
pub(crate) mod x86;

// Process-shared memory for `SharedCells` (Unix only: `mmap`).
#[cfg(all(unix, not(mwait_loom)))]
pub(crate) mod anon_map;

/// Declares items that need process-shared memory ([`anon_map`]): on Unix outside
/// the loom model, and nowhere else.
macro_rules! with_shared_memory {
    ($($item:item)*) => {
        $(#[cfg(all(unix, not(mwait_loom)))] $item)*
    };
}
pub(crate) use with_shared_memory;

#[cfg(not(mwait_loom))]
pub(crate) use no_model::{model_hardware, ModelHardware};
/// The failures unit tests inject into system calls (Linux's futex).
#[cfg(all(test, target_os = "linux", not(mwait_loom)))]
pub(crate) use os::inject;
pub(crate) use os::park;
#[cfg(all(test, mwait_loom))]
pub(crate) use os::set_model_wake_trees;
pub(crate) use os::{current_cpu, running_threads, usable_cpus, ThreadCpus};
#[cfg(mwait_loom)]
pub(crate) use os::{model_hardware, ModelHardware};

/// Whether a wake of every sleeper builds a wake tree (`protocol.rs`, "A wake
/// tree"): as `machine` answers for this machine.
#[cfg(not(mwait_loom))]
#[inline]
pub(crate) fn wake_trees(machine: impl FnOnce() -> bool) -> bool {
    machine()
}

/// In the loom model, as the model asks (`os::model_wake_trees`), whatever the
/// machine: the models check the single marked wake and the tree each.
#[cfg(mwait_loom)]
pub(crate) fn wake_trees(_machine: impl FnOnce() -> bool) -> bool {
    os::model_wake_trees()
}

/// Outside the loom model there is no simulated hardware tier: its type is empty.
#[cfg(not(mwait_loom))]
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
/// Whether this build has the AArch64 exclusive-monitor wait (LDAXR, WFE, WFET).
pub(crate) const HAS_ARM_WAITS: bool = arm::AVAILABLE;
/// Whether this build can talk to the `/dev/mwait` kernel shim.
pub(crate) const HAS_DEV_MWAIT: bool = x86::dev_mwait::AVAILABLE;
