//! The types that the platform files share with the layers above: what a park and a
//! shim wait report, and what the capability tokens ask of detection.

/// How a park ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Parked {
    /// Slept and woken (or a signal, or spurious): re-check.
    Woken,
    /// The value differed from `expected` when the platform looked: never slept (a
    /// futex's `EAGAIN`), so there is no wake-up to measure. Re-check.
    Changed,
    /// The deadline passed.
    TimedOut,
}

/// What detection on *this* CPU reports about the x86 wait instructions: the proof
/// that the capability tokens of [`x86`](super::x86) ask for. Implemented by `Capabilities`,
/// which answers true only for the capabilities that `Capabilities::detect` found
/// (a caller's edited or recorded copy proves nothing).
// Only the real tokens of `x86_64.rs` read it: the stand-ins take any proof.
#[cfg(all(target_arch = "x86_64", not(mwait_loom)))]
pub(crate) trait CpuidWaits {
    /// CPUID.7.0:ECX\[5\] WAITPKG.
    fn waitpkg(&self) -> bool;
    /// CPUID.8000_0001:ECX\[29\] MONITORX.
    fn monitorx(&self) -> bool;
}

/// What the auxiliary vector of *this* process reports about the AArch64 waits: the
/// proof that the capability token of [`arm`](super::arm) asks for. Implemented by
/// `Capabilities`, which answers true only for the capabilities that
/// `Capabilities::detect` found.
// Only the real token of `arm/aarch64.rs` reads it: the stand-ins take any proof.
#[cfg(all(target_arch = "aarch64", target_os = "linux", not(mwait_loom)))]
pub(crate) trait HwcapWaits {
    /// `AT_HWCAP` `HWCAP_EVTSTRM`: the generic timer's event stream runs.
    fn event_stream(&self) -> bool;
    /// `AT_HWCAP2` `HWCAP2_WFXT`: WFET and WFIT.
    fn wfxt(&self) -> bool;
}

/// Why one `/dev/mwait` wait returned.
// Only `dev_mwait.rs` makes these; elsewhere the kernel tier cannot run.
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64", not(mwait_loom))),
    allow(dead_code)
)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum ShimWake {
    /// The word changed, or the wait ended for no stated reason: re-check.
    Woken,
    /// The deadline passed.
    Deadline,
    /// The scheduler needs the CPU, a signal is pending, or the module refused.
    Yield,
}
