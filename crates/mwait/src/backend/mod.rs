//! The waiting mechanisms, one file each, and the hardware-wait contract they share.
//!
//! The tier ladder (`ladder/`) runs at most three tiers per wait:
//!
//! 1. **spin** (`spin.rs`): bounded in time; PAUSE (or TPAUSE where WAITPKG exists);
//! 2. **hardware wait** (one of `umwait.rs`, `mwaitx.rs`, `kernel.rs`; `model.rs` in
//!    the loom model): the CPU stops issuing instructions until the cell's line is
//!    written, an interrupt arrives or the tier's budget ends; bounded in time as well;
//! 3. **park**: sleep in the kernel until a notifier wakes us (`protocol.rs` announces
//!    the sleeper, `sys::park` sleeps).
//!
//! `selftest.rs` checks, once per process, that a hardware tier behaves like a monitor
//! before it is used; `sim.rs` (tests only) simulates monitors to test it against.
//!
//! A hardware tier implements [`HardwareWait`]: *one episode* of waiting, which may end
//! early for any reason; the ladder re-checks the predicate after every episode, so a
//! tier never has to be exact, only to be safe (never sleep past `deadline_ns`, never
//! hold a CPU that the scheduler needs for longer than an episode).
//!
//! Every tier file compiles on every target: a tier holds a capability token from
//! `sys/`, and where the target cannot have the instructions that token's type is
//! empty, so the tier exists but can never be built. To add a tier, write its file
//! with a `HardwareWait` impl, add its [`HwTier`] variant, its [`Backend`], and its
//! arm in `build_tier`.

mod cstate;
pub(crate) mod kernel;
pub(crate) mod kind;
pub(crate) mod model;
pub(crate) mod mwaitx;
pub(crate) mod selftest;
#[cfg(all(test, not(loom)))]
pub(crate) mod sim;
pub(crate) mod spin;
pub(crate) mod umwait;

pub use cstate::{CState, C0_2_MIN_LATENCY_NS, C1_MIN_LATENCY_NS};
pub use kind::{Backend, ParseBackendError};

use crate::primitive::AtomicU32;
use std::fmt;

/// Why one hardware-wait episode returned.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
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

/// One episode of a hardware wait on `word`: the contract between the ladder's
/// hardware tier and a mechanism (a real monitor, the loom stand-in, or a simulated
/// monitor in a test).
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
    /// UMONITOR/UMWAIT.
    Umwait(umwait::Umwait),
    /// MONITORX/MWAITX.
    Mwaitx(mwaitx::Mwaitx),
    /// Ring-0 MONITOR/MWAIT through `/dev/mwait`.
    Kernel(kernel::Kernel),
    /// Loom's stand-in for any hardware tier.
    Model(model::Model),
}

impl HardwareWait for HwTier {
    #[inline]
    fn wait_episode(&self, word: &AtomicU32, old: u32, deadline_ns: u64, cstate: CState) -> HwWake {
        match *self {
            HwTier::Umwait(t) => t.wait_episode(word, old, deadline_ns, cstate),
            HwTier::Mwaitx(t) => t.wait_episode(word, old, deadline_ns, cstate),
            HwTier::Kernel(t) => t.wait_episode(word, old, deadline_ns, cstate),
            HwTier::Model(t) => t.wait_episode(word, old, deadline_ns, cstate),
        }
    }
}

/// Why a hardware tier cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HwError {
    /// The machine lacks it or it could not be set up.
    Unavailable(String),
    /// It exists but failed its self-test.
    Demoted(String),
}

impl fmt::Display for HwError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HwError::Unavailable(s) => f.write_str(s),
            HwError::Demoted(s) => write!(f, "demoted by its self-test: {s}"),
        }
    }
}

/// Builds the hardware tier of `backend` for this machine: opens what it needs and
/// runs its self-test. `unsafe_forced` is true when CPUID does not offer it and the
/// test-only override `MWAIT_UNSAFE_FORCE` lets it through anyway. In the loom model
/// every hardware backend is the model's stand-in.
pub(crate) fn hw_tier(
    backend: Backend,
    caps: &crate::detect::Capabilities,
    unsafe_forced: bool,
) -> Result<HwTier, HwError> {
    if let Some(m) = model::Model::new() {
        return Ok(HwTier::Model(m));
    }
    let tier = build_tier(backend, caps, unsafe_forced)?;
    if selftest::enabled() {
        selftest::run(&tier, selftest::Plan::for_tier(backend, caps)).map_err(HwError::Demoted)?;
    }
    Ok(tier)
}

fn build_tier(
    backend: Backend,
    caps: &crate::detect::Capabilities,
    unsafe_forced: bool,
) -> Result<HwTier, HwError> {
    let not_built =
        |b: Backend| HwError::Unavailable(format!("the {b} tier is not part of this build"));
    match backend {
        Backend::Umwait => {
            use crate::sys::x86::Waitpkg;
            let token = match Waitpkg::new(caps) {
                Some(t) => t,
                None if unsafe_forced => {
                    // SAFETY: only reached with MWAIT_UNSAFE_FORCE=1, whose documented
                    // contract is that the instructions execute here.
                    unsafe { Waitpkg::new_unchecked() }.ok_or_else(|| not_built(backend))?
                }
                None => return Err(HwError::Unavailable("CPUID reports no WAITPKG".into())),
            };
            Ok(HwTier::Umwait(umwait::Umwait(token)))
        }
        Backend::Mwaitx => {
            use crate::sys::x86::MonitorX;
            let token = match MonitorX::new(caps) {
                Some(t) => t,
                None if unsafe_forced => {
                    // SAFETY: only reached with MWAIT_UNSAFE_FORCE=1, whose documented
                    // contract is that the instructions execute here.
                    unsafe { MonitorX::new_unchecked() }.ok_or_else(|| not_built(backend))?
                }
                None => return Err(HwError::Unavailable("CPUID reports no MONITORX".into())),
            };
            Ok(HwTier::Mwaitx(mwaitx::Mwaitx(token)))
        }
        Backend::Kernel => kernel::Kernel::open()
            .map(HwTier::Kernel)
            .map_err(HwError::Unavailable),
        other => Err(not_built(other)),
    }
}
