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
#[cfg(all(target_os = "linux", target_arch = "x86_64", not(loom)))]
pub(crate) mod kernel;
#[cfg(all(target_arch = "x86_64", not(loom)))]
pub(crate) mod mwaitx;
pub(crate) mod spin;
#[cfg(all(target_arch = "x86_64", not(loom)))]
pub(crate) mod umwait;

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
    /// Bounded PAUSE spin, then `sched_yield` rounds; never sleeps.
    Spin,
    /// Spin (budget from the policy), then sleep on a futex, or on the OS's
    /// equivalent off Linux (`WaitOnAddress` on Windows, `os_sync_wait_on_address` or
    /// `__ulock_wait` on macOS, `_umtx_op` on FreeBSD, a table of parked threads on
    /// std's `park` elsewhere).
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
    /// UMONITOR/UMWAIT.
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    Umwait(umwait::Umwait),
    /// MONITORX/MWAITX.
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    Mwaitx(mwaitx::Mwaitx),
    /// Ring-0 MONITOR/MWAIT through `/dev/mwait`.
    #[cfg(all(target_os = "linux", target_arch = "x86_64", not(loom)))]
    Kernel(kernel::Kernel),
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
            #[cfg(all(target_arch = "x86_64", not(loom)))]
            HwTier::Umwait(_) => Backend::Umwait,
            #[cfg(all(target_arch = "x86_64", not(loom)))]
            HwTier::Mwaitx(_) => Backend::Mwaitx,
            #[cfg(all(target_os = "linux", target_arch = "x86_64", not(loom)))]
            HwTier::Kernel(_) => Backend::Kernel,
            #[cfg(loom)]
            HwTier::Model => Backend::Umwait,
        }
    }
}

impl HardwareWait for HwTier {
    #[inline]
    fn wait_episode(&self, word: &AtomicU32, old: u32, deadline_ns: u64, cstate: CState) -> HwWake {
        // No hardware tier exists on other architectures: the enum is empty there.
        #[cfg(not(any(target_arch = "x86_64", loom)))]
        let _ = (word, old, deadline_ns, cstate);
        match *self {
            #[cfg(all(target_arch = "x86_64", not(loom)))]
            HwTier::Umwait(t) => t.wait_episode(word, old, deadline_ns, cstate),
            #[cfg(all(target_arch = "x86_64", not(loom)))]
            HwTier::Mwaitx(t) => t.wait_episode(word, old, deadline_ns, cstate),
            #[cfg(all(target_os = "linux", target_arch = "x86_64", not(loom)))]
            HwTier::Kernel(t) => t.wait_episode(word, old, deadline_ns, cstate),
            #[cfg(loom)]
            HwTier::Model => {
                let _ = (word, old, deadline_ns, cstate);
                loom::thread::yield_now();
                HwWake::Woken
            }
        }
    }
}

/// The self-test's wait: no writer, this deadline.
// The model has no hardware to test.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const SELF_TEST_WAIT_NS: u64 = 20_000;
/// Tries of the self-test. Preemption and interrupts can only make a try look
/// *longer* (or end a real wait early, rarely): so the shortest try counts.
// The model has no hardware to test.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) const SELF_TEST_TRIES: u32 = 5;

/// A line of its own for the self-test's word, so that no neighbour's write ends the
/// wait.
// The model has no hardware to test.
#[cfg_attr(loom, allow(dead_code))]
#[repr(align(128))]
struct SelfTestLine(AtomicU32);

/// Times [`SELF_TEST_TRIES`] waits of `wait_ns` on a word that nobody writes; the tier
/// passes when even the shortest lasted a quarter of `wait_ns` (an emulator or a
/// hypervisor that does not really wait returns at once: MWAITX on the AMD EPYC guests
/// used here returns after about 1.9 µs whatever its timer).
// The model has no hardware to test.
#[cfg_attr(loom, allow(dead_code))]
pub(crate) fn self_test(tier: HwTier, wait_ns: u64) -> Result<u64, String> {
    let line = SelfTestLine(AtomicU32::new(0));
    let mut shortest = u64::MAX;
    for _ in 0..SELF_TEST_TRIES {
        let t0 = crate::clock::now_ns();
        let _ = tier.wait_episode(&line.0, 0, t0 + wait_ns, CState::C0_1);
        shortest = shortest.min(crate::clock::now_ns() - t0);
    }
    if shortest >= wait_ns / 4 {
        Ok(shortest)
    } else {
        Err(format!(
            "a {wait_ns} ns wait with no writer returned after {shortest} ns (the shortest \
             of {SELF_TEST_TRIES} tries): the instruction is emulated as a no-op here"
        ))
    }
}

/// The self-test's wait for `tier`: [`SELF_TEST_WAIT_NS`], shortened to fit under the
/// OS's UMWAIT limit so that a real wait is not cut short by it.
#[cfg(not(loom))]
fn self_test_wait_ns(tier: HwTier, caps: &crate::Capabilities) -> u64 {
    match (tier.backend(), caps.umwait_control) {
        #[cfg(target_arch = "x86_64")]
        (Backend::Umwait, Some(c)) if c.max_time_tsc != 0 => {
            let hz = crate::tsc::rate().hz.max(1);
            let cap_ns = u64::from(c.max_time_tsc) * 1_000_000_000 / hz;
            SELF_TEST_WAIT_NS.min(cap_ns * 9 / 10).max(1)
        }
        _ => SELF_TEST_WAIT_NS,
    }
}

/// Why a hardware tier cannot be used.
// The model has no hardware to test.
#[cfg_attr(loom, allow(dead_code))]
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

/// Whether the self-test runs (`MWAIT_SELFTEST=0` turns it off: test-only, so that the
/// tier's logic can be exercised where the instructions are no-ops).
// The model has no hardware to test.
#[cfg_attr(loom, allow(dead_code))]
fn self_test_enabled() -> bool {
    std::env::var("MWAIT_SELFTEST").map_or(true, |v| v.trim() != "0")
}

/// Builds the hardware tier of `backend` for this machine: opens what it needs and
/// runs its self-test. `unsafe_forced` is true when CPUID does not offer it and the
/// test-only override `MWAIT_UNSAFE_FORCE` lets it through anyway.
pub(crate) fn hw_tier(
    backend: Backend,
    caps: &crate::Capabilities,
    unsafe_forced: bool,
) -> Result<HwTier, HwError> {
    #[cfg(loom)]
    {
        let _ = (backend, caps, unsafe_forced);
        Ok(HwTier::Model)
    }
    #[cfg(not(loom))]
    {
        let tier = build_tier(backend, caps, unsafe_forced)?;
        if self_test_enabled() {
            self_test(tier, self_test_wait_ns(tier, caps)).map_err(HwError::Demoted)?;
        }
        Ok(tier)
    }
}

#[cfg(not(loom))]
fn build_tier(
    backend: Backend,
    caps: &crate::Capabilities,
    unsafe_forced: bool,
) -> Result<HwTier, HwError> {
    let _ = (caps, unsafe_forced);
    match backend {
        #[cfg(target_arch = "x86_64")]
        Backend::Umwait => {
            use crate::arch::x86_64::Waitpkg;
            let token = match Waitpkg::new(caps) {
                Some(t) => t,
                // SAFETY: only reached with MWAIT_UNSAFE_FORCE=1, whose documented
                // contract is that the instructions execute here.
                None if unsafe_forced => unsafe { Waitpkg::new_unchecked() },
                None => return Err(HwError::Unavailable("CPUID reports no WAITPKG".into())),
            };
            Ok(HwTier::Umwait(umwait::Umwait(token)))
        }
        #[cfg(target_arch = "x86_64")]
        Backend::Mwaitx => {
            use crate::arch::x86_64::MonitorX;
            let token = match MonitorX::new(caps) {
                Some(t) => t,
                // SAFETY: only reached with MWAIT_UNSAFE_FORCE=1, whose documented
                // contract is that the instructions execute here.
                None if unsafe_forced => unsafe { MonitorX::new_unchecked() },
                None => return Err(HwError::Unavailable("CPUID reports no MONITORX".into())),
            };
            Ok(HwTier::Mwaitx(mwaitx::Mwaitx(token)))
        }
        #[cfg(all(target_os = "linux", target_arch = "x86_64", not(loom)))]
        Backend::Kernel => kernel::Kernel::open()
            .map(HwTier::Kernel)
            .map_err(HwError::Unavailable),
        other => Err(HwError::Unavailable(format!(
            "the {other} tier is not part of this build"
        ))),
    }
}
