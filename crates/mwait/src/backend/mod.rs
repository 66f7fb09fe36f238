//! The waiting mechanisms, one file each, and the hardware-wait contract they share.
//!
//! The tier ladder (`ladder/`) runs at most three tiers per wait:
//!
//! 1. **spin** (`spin.rs`): bounded in time; PAUSE (or TPAUSE where WAITPKG exists);
//! 2. **hardware wait** (one of `umwait.rs`, `mwaitx.rs`, `kernel.rs`, `wfe.rs` on
//!    AArch64; `model.rs` in the loom model): the CPU stops issuing instructions
//!    until the cell's line is written, an interrupt arrives or the tier's budget
//!    ends; bounded in time as well;
//! 3. **park**: sleep in the kernel until a notifier wakes us (`protocol/parking.rs`
//!    announces the sleeper, `sys::park` sleeps).
//!
//! `selftest/` checks, once per process, that a hardware tier behaves like a monitor
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
pub(crate) mod spin;
pub(crate) mod umwait;
pub(crate) mod wfe;
// The one simulator, for the unit tests on real threads.
crate::primitive::thread_tests! {
    pub(crate) mod sim;
}

pub use cstate::{CState, C0_2_MIN_LATENCY_NS, C1_MIN_LATENCY_NS};
pub use kind::{Backend, ParseBackendError};

use crate::primitive::AtomicU64;
use crate::primitive::{AtomicU32, Ordering};
use std::fmt;

/// Why one hardware-wait episode returned.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum HwWake {
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
pub trait HardwareWait {
    /// Waits while `word` holds `old`, until the line is written, an interrupt
    /// arrives, or the monotonic clock reaches `deadline_ns`, whichever is first.
    /// Implementations arm the monitor, re-load `word` and return `Woken` at once if it
    /// no longer holds `old` (the store may have landed before the arm), and only then
    /// wait. Returning early is always allowed.
    fn wait_episode(&self, word: &AtomicU32, old: u32, deadline_ns: u64, cstate: CState) -> HwWake;

    /// [`wait_episode`](Self::wait_episode) on a 64-bit word: the monitor is armed on
    /// its line and the re-check compares all 64 bits, so a change of the high half
    /// alone wakes it. A tier that can only compare 32 bits (the kernel shim, which
    /// checks the value itself) keeps this default, `Yield`: such a wait goes on to
    /// park rather than sleep through a change it cannot see.
    fn wait_episode_u64(
        &self,
        _word: &AtomicU64,
        _old: u64,
        _deadline_ns: u64,
        _cstate: CState,
    ) -> HwWake {
        HwWake::Yield
    }
}

/// A word the spin and hardware tiers watch: a 32-bit atomic (a `WaitCell`'s value or
/// any `AtomicU32`) or a 64-bit one. Both tiers compare the whole word. (`pub` in a
/// private module, as are [`HardwareWait`] and [`HwWake`], which it names: the
/// supertrait of the public, sealed `atomic::Atomic`.)
pub trait Watched {
    /// The word's value.
    type Bits: Copy + PartialEq;

    /// An `Acquire` load of the word.
    fn load_acquire(&self) -> Self::Bits;

    /// One episode of `hw` on this word's line while it holds `old`.
    fn episode(
        &self,
        hw: &impl HardwareWait,
        old: Self::Bits,
        deadline_ns: u64,
        cstate: CState,
    ) -> HwWake;
}

impl Watched for AtomicU32 {
    type Bits = u32;

    #[inline(always)]
    fn load_acquire(&self) -> u32 {
        self.load(Ordering::Acquire)
    }

    #[inline(always)]
    fn episode(&self, hw: &impl HardwareWait, old: u32, deadline_ns: u64, c: CState) -> HwWake {
        hw.wait_episode(self, old, deadline_ns, c)
    }
}

impl Watched for AtomicU64 {
    type Bits = u64;

    #[inline(always)]
    fn load_acquire(&self) -> u64 {
        self.load(Ordering::Acquire)
    }

    #[inline(always)]
    fn episode(&self, hw: &impl HardwareWait, old: u64, deadline_ns: u64, c: CState) -> HwWake {
        hw.wait_episode_u64(self, old, deadline_ns, c)
    }
}

/// A tier whose monitor is armed from user mode on any word's line (UMWAIT,
/// MWAITX): one episode on `word`'s line, with `changed` as the re-check after the
/// arm. It is a [`HardwareWait`] on 32- and 64-bit words alike.
pub(crate) trait LineMonitor {
    /// Arms the monitor on `word`'s line, returns `Woken` at once if `changed()`, else
    /// waits until the line is written, an interrupt, or `deadline_ns`.
    fn episode(
        &self,
        word: &impl crate::sys::Watchable,
        changed: impl Fn() -> bool,
        deadline_ns: u64,
        cstate: CState,
    ) -> HwWake;
}

impl<T: LineMonitor> HardwareWait for T {
    #[inline]
    fn wait_episode(&self, word: &AtomicU32, old: u32, deadline_ns: u64, cstate: CState) -> HwWake {
        let changed = || word.load(Ordering::Acquire) != old;
        self.episode(word, changed, deadline_ns, cstate)
    }

    #[inline]
    fn wait_episode_u64(
        &self,
        word: &AtomicU64,
        old: u64,
        deadline_ns: u64,
        cstate: CState,
    ) -> HwWake {
        let changed = || word.load(Ordering::Acquire) != old;
        self.episode(word, changed, deadline_ns, cstate)
    }
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
    /// AArch64 LDAXR + WFE/WFET.
    Wfe(wfe::Wfe),
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
            HwTier::Wfe(t) => t.wait_episode(word, old, deadline_ns, cstate),
            HwTier::Model(t) => t.wait_episode(word, old, deadline_ns, cstate),
        }
    }

    #[inline]
    fn wait_episode_u64(
        &self,
        word: &AtomicU64,
        old: u64,
        deadline_ns: u64,
        cstate: CState,
    ) -> HwWake {
        match *self {
            HwTier::Umwait(t) => t.wait_episode_u64(word, old, deadline_ns, cstate),
            HwTier::Mwaitx(t) => t.wait_episode_u64(word, old, deadline_ns, cstate),
            HwTier::Kernel(t) => t.wait_episode_u64(word, old, deadline_ns, cstate),
            HwTier::Wfe(t) => t.wait_episode_u64(word, old, deadline_ns, cstate),
            HwTier::Model(t) => t.wait_episode_u64(word, old, deadline_ns, cstate),
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
        Backend::Wfe => {
            use crate::sys::arm::EventWait;
            let token = match EventWait::new(caps) {
                Some(t) => t,
                None if unsafe_forced => {
                    // SAFETY: only reached with MWAIT_UNSAFE_FORCE=1, whose documented
                    // contract is that the instructions execute here (and, for WFE,
                    // that something ends every wait: an emulator's no-op WFE). WFET
                    // only where the auxiliary vector reports it.
                    unsafe { EventWait::new_unchecked(caps.wfxt) }
                        .ok_or_else(|| not_built(backend))?
                }
                None => {
                    let why = caps.wfe_missing().unwrap_or("the auxiliary vector says no");
                    return Err(HwError::Unavailable(why.into()));
                }
            };
            Ok(HwTier::Wfe(wfe::Wfe(token)))
        }
        Backend::Kernel => kernel::Kernel::open()
            .map(HwTier::Kernel)
            .map_err(HwError::Unavailable),
        other => Err(not_built(other)),
    }
}
