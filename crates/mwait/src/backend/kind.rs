//! [`Backend`]: the names of the waiting mechanisms, as `MWAIT_BACKEND` and the
//! reports spell them, and which of them a machine's [`Capabilities`] offer.

use crate::detect::Capabilities;
use crate::sys;
use std::fmt;

/// A waiting mechanism. The ladder's hardware tier is one of `Umwait`, `Mwaitx`,
/// `Wfe` and `Kernel`; `Spin` and `Futex` name the ladders that have no hardware tier.
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
    /// AArch64 LDAXR + WFE (WFET where the CPU has it) on the exclusive monitor,
    /// where the event stream or WFET bounds every wait; then futex.
    Wfe,
}

impl Backend {
    /// All backends, in the order auto-selection prefers them (best first).
    pub const ALL: [Backend; 6] = [
        Backend::Umwait,
        Backend::Mwaitx,
        Backend::Wfe,
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
            Backend::Wfe => "wfe",
        }
    }

    /// Whether this backend has a hardware tier (a monitor armed on the cell's line).
    pub const fn is_hardware(self) -> bool {
        matches!(
            self,
            Backend::Umwait | Backend::Mwaitx | Backend::Kernel | Backend::Wfe
        )
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
            "unknown backend `{}` (expected one of spin, futex, umwait, mwaitx, wfe, kernel)",
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

/// Which backends a machine offers: the bits of [`Capabilities`] read against
/// what each backend needs on this target.
impl Capabilities {
    /// The backends whose instructions or devices this machine offers, best first
    /// (before any kill switch or self-test).
    ///
    /// # Examples
    ///
    /// ```
    /// let offered = mwait::Capabilities::detect().offered();
    /// assert_eq!(offered.last(), Some(&mwait::Backend::Spin));
    /// ```
    pub fn offered(&self) -> Vec<Backend> {
        Backend::ALL
            .into_iter()
            .filter(|&b| self.offers(b))
            .collect()
    }

    /// Whether this machine offers `backend` (CPUID, device and OS facts only).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(mwait::Capabilities::detect().offers(mwait::Backend::Spin));
    /// ```
    pub fn offers(&self, backend: Backend) -> bool {
        match backend {
            Backend::Spin => true,
            // Every platform's park tier sleeps (futex on Linux, the OS's own call
            // or a table of parked threads elsewhere: `sys/`).
            Backend::Futex => true,
            Backend::Umwait => sys::HAS_X86_WAITS && self.waitpkg,
            Backend::Mwaitx => sys::HAS_X86_WAITS && self.monitorx,
            Backend::Kernel => sys::HAS_DEV_MWAIT && self.monitor_mwait && self.dev_mwait,
            Backend::Wfe => sys::HAS_ARM_WAITS && self.wfe_wait_bounded(),
        }
    }

    /// Whether a WFE on this CPU ends on its own: the event stream runs (every WFE
    /// ends within its period) or WFET exists (a deadline ends it). The WFE tier is
    /// offered only then: a WFE that nothing bounds could sleep until an unrelated
    /// interrupt, past any deadline.
    pub(crate) fn wfe_wait_bounded(&self) -> bool {
        self.event_stream || self.wfxt
    }

    /// Why the WFE tier is not offered here, naming the missing `HWCAP` bits;
    /// `None` where it is.
    pub(crate) fn wfe_missing(&self) -> Option<&'static str> {
        if !self.wfe_wait_bounded() {
            Some(
                "AT_HWCAP has no HWCAP_EVTSTRM (no event stream ends a WFE) and \
                 AT_HWCAP2 has no HWCAP2_WFXT (no WFET): nothing would bound a wait",
            )
        } else if !sys::HAS_ARM_WAITS {
            Some("this build is not for AArch64 Linux")
        } else {
            None
        }
    }
}
