//! The waiting mechanisms, one file each, and the hardware-wait contract they share.
//!
//! The tier ladder (`cell.rs`) runs at most three tiers per wait:
//!
//! 1. **spin** (`spin.rs`): bounded in time; PAUSE (or TPAUSE where WAITPKG exists);
//! 2. **hardware wait** (one of `umwait.rs`, `mwaitx.rs`, `kernel.rs`): the CPU stops
//!    issuing instructions until the cell's line is written, an interrupt arrives or
//!    the tier's budget ends; bounded in time as well;
//! 3. **park** (`futex.rs` on Linux): sleep in the kernel until a notifier wakes us.
//!
//! A hardware tier implements [`HardwareWait`]: *one episode* of waiting, which may end
//! early for any reason; the ladder re-checks the predicate after every episode, so a
//! tier never has to be exact, only to be safe (never sleep past `deadline_ns`, never
//! hold a CPU that the scheduler needs for longer than an episode).

pub(crate) mod futex;
pub(crate) mod spin;

use crate::primitive::AtomicU32;
use crate::CState;
use std::fmt;

/// A waiting mechanism. The ladder's hardware tier is one of `Umwait`, `Mwaitx` and
/// `Kernel`; `Spin` and `Futex` name the ladders that have no hardware tier.
///
/// # Examples
///
/// ```
/// let b: mwait::Backend = "futex".parse().unwrap();
/// assert_eq!(b, mwait::Backend::Futex);
/// assert_eq!(b.to_string(), "futex");
/// assert!(!b.is_hardware());
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// Bounded PAUSE spin, then `sched_yield` rounds; never sleeps. The only ladder
    /// on targets without futex.
    Spin,
    /// Spin (budget from the policy), then sleep on a futex.
    Futex,
    /// User-mode UMONITOR/UMWAIT (Intel WAITPKG), then futex.
    Umwait,
    /// User-mode MONITORX/MWAITX (AMD), then futex.
    Mwaitx,
    /// Ring-0 MONITOR/MWAIT through the `/dev/mwait` kernel shim, then futex.
    Kernel,
}

impl Backend {
    /// All backends, in the order auto-selection prefers them (best first).
    pub const ALL: [Backend; 5] = [
        Backend::Umwait,
        Backend::Mwaitx,
        Backend::Kernel,
        Backend::Futex,
        Backend::Spin,
    ];

    /// The name used by `MWAIT_BACKEND` and in reports.
    pub const fn name(self) -> &'static str {
        match self {
            Backend::Spin => "spin",
            Backend::Futex => "futex",
            Backend::Umwait => "umwait",
            Backend::Mwaitx => "mwaitx",
            Backend::Kernel => "kernel",
        }
    }

    /// Whether this backend has a hardware tier (a monitor armed on the cell's line).
    pub const fn is_hardware(self) -> bool {
        matches!(self, Backend::Umwait | Backend::Mwaitx | Backend::Kernel)
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of parsing a backend name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseBackendError(pub(crate) String);

impl fmt::Display for ParseBackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown backend `{}` (expected one of spin, futex, umwait, mwaitx, kernel)",
            self.0
        )
    }
}

impl std::error::Error for ParseBackendError {}

impl std::str::FromStr for Backend {
    type Err = ParseBackendError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Backend::ALL
            .into_iter()
            .find(|b| b.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| ParseBackendError(s.to_string()))
    }
}

/// Why one hardware-wait episode returned.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[allow(dead_code)] // Constructed by the hardware tiers, which are cfg-dependent.
pub(crate) enum HwWake {
    /// The line was written, an interrupt arrived, or the wait ended for no stated
    /// reason: the value may have changed, re-check it.
    Woken,
    /// `deadline_ns` passed.
    Deadline,
    /// The tier must not keep this CPU now (the scheduler needs it, a signal is
    /// pending, the kernel refused): the ladder goes on to park.
    Yield,
}

/// One episode of a hardware wait on `word`.
pub(crate) trait HardwareWait {
    /// Waits while `word` holds `old`, until the line is written, an interrupt
    /// arrives, or the monotonic clock reaches `deadline_ns`, whichever is first.
    /// Implementations arm the monitor, re-load `word` and return `Woken` at once if it
    /// no longer holds `old` (the store may have landed before the arm), and only then
    /// wait. Returning early is always allowed.
    fn wait_episode(&self, word: &AtomicU32, old: u32, deadline_ns: u64, cstate: CState) -> HwWake;
}

/// The hardware tier in use, if any: a capability token (or the shim's handle) per
/// variant, so that holding an `HwTier` proves the instructions may run.
#[derive(Copy, Clone, Debug)]
pub(crate) enum HwTier {
    /// Loom's stand-in for any hardware tier: an episode is a yield that returns
    /// `Woken`, i.e. a wait that may end spuriously at any point.
    #[cfg(loom)]
    Model,
}

impl HwTier {
    /// The backend this tier belongs to.
    #[allow(dead_code)]
    pub(crate) fn backend(self) -> Backend {
        match self {
            #[cfg(loom)]
            HwTier::Model => Backend::Umwait,
        }
    }
}

impl HardwareWait for HwTier {
    #[inline]
    fn wait_episode(
        &self,
        _word: &AtomicU32,
        _old: u32,
        _deadline_ns: u64,
        _cstate: CState,
    ) -> HwWake {
        match *self {
            #[cfg(loom)]
            HwTier::Model => {
                loom::thread::yield_now();
                HwWake::Woken
            }
        }
    }
}

/// Builds the hardware tier of `backend` for this machine: opens what it needs and
/// runs its self-test. `unsafe_forced` is true when CPUID does not offer it and the
/// test-only override `MWAIT_UNSAFE_FORCE` lets it through anyway.
pub(crate) fn hw_tier(
    backend: Backend,
    _caps: &crate::Capabilities,
    _unsafe_forced: bool,
) -> Result<HwTier, String> {
    Err(format!("the {backend} tier is not part of this build yet"))
}
