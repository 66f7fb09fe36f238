#![doc = include_str!("../README.md")]
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
sys::with_shared_memory! {
    mod shared;
}
mod sys;
primitive::model_tests! {
    mod tests;
}
mod thread;

pub use backend::{Backend, CState};
pub use barrier::Barrier;
pub use cell::WaitCell;
pub use detect::Capabilities;
pub use ladder::outcome::WaitResult;
pub use ladder::stats::{stats, ProcessStats, WaitStats};
pub use parker::{block_on, Parker, Unparker};
pub use policy::{prepare, WaitPolicy};
pub use select::{selection, try_selection, Selection};
pub use settings::Settings;
sys::with_shared_memory! {
    pub use shared::SharedCells;
}

/// The types and constants that the root API's fields, arguments, results, errors
/// and defaults name: what a caller needs to spell a [`Capabilities`] field, a
/// [`Settings`] argument or error, the future of an async wait, match a
/// [`try_selection`] error or compare a budget with the defaults.
pub mod platform {
    pub use crate::backend::{ParseBackendError, C0_2_MIN_LATENCY_NS, C1_MIN_LATENCY_NS};
    pub use crate::detect::{UmwaitControl, Vendor};
    pub use crate::future::{WaitUntil, WaitUntilTimer};
    pub use crate::select::{
        Defaults, SelectError, HW_BUDGET_NS, SPIN_BUDGET_HYPERVISOR_NS, SPIN_BUDGET_NS,
    };
    pub use crate::settings::{NotifyMode, SettingsError};
}

#[doc(hidden)]
pub use sys::stamp::public as stamps;

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
