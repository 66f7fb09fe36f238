//! Targets without the x86-64 wait instructions (and the loom model, which has no
//! hardware): the capability tokens exist but are empty types, so no code that needs
//! one can run, and the tiers built on them compile everywhere unchanged.


/// This build has none of the instructions.
pub(crate) const AVAILABLE: bool = false;

/// No TSC to convert from here.
pub(crate) fn tsc_ticks_to_ns(_ticks: u64) -> Option<u64> {
    None
}

/// UMWAIT/TPAUSE control for C0.1 (unused here).
pub(crate) const WAITPKG_C0_1: u32 = 1;
/// UMWAIT/TPAUSE control for C0.2 (unused here).
pub(crate) const WAITPKG_C0_2: u32 = 0;
/// MWAITX hint for C0 (unused here).
pub(crate) const MWAITX_HINT_C0: u32 = 0xF0;
/// MWAITX hint for C1 (unused here).
pub(crate) const MWAITX_HINT_C1: u32 = 0x00;

/// WAITPKG cannot exist here: no value of this type can be made.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Waitpkg {}

impl Waitpkg {
    /// Never: this build has no WAITPKG.
    pub(crate) fn new<C>(_caps: &C) -> Option<Waitpkg> {
        None
    }

    /// Never: this build has no WAITPKG.
    ///
    /// # Safety
    ///
    /// None needed; `unsafe` only to match the x86-64 signature.
    pub(crate) unsafe fn new_unchecked() -> Option<Waitpkg> {
        None
    }

    pub(crate) fn umonitor<W>(self, _word: &W) {
        match self {}
    }

    pub(crate) fn umwait(self, _ctrl: u32, _deadline_tsc: u64) -> bool {
        match self {}
    }

    pub(crate) fn tsc_after(self, _ns: u64) -> u64 {
        match self {}
    }

    pub(crate) fn tsc_reached(self, _deadline_tsc: u64) -> bool {
        match self {}
    }

    pub(crate) fn ticks(self, _ns: u64) -> u64 {
        match self {}
    }

    pub(crate) fn pause(self, _ticks: u64) {
        match self {}
    }
}

/// MONITORX cannot exist here: no value of this type can be made.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum MonitorX {}

impl MonitorX {
    /// Never: this build has no MONITORX.
    pub(crate) fn new<C>(_caps: &C) -> Option<MonitorX> {
        None
    }

    /// Never: this build has no MONITORX.
    ///
    /// # Safety
    ///
    /// None needed; `unsafe` only to match the x86-64 signature.
    pub(crate) unsafe fn new_unchecked() -> Option<MonitorX> {
        None
    }

    pub(crate) fn monitorx<W>(self, _word: &W) {
        match self {}
    }

    pub(crate) fn mwaitx(self, _hint: u32, _timeout_tsc: u32) {
        match self {}
    }

    pub(crate) fn ticks(self, _ns: u64) -> u64 {
        match self {}
    }
}

/// No PREFETCHW off x86-64.
// Only the Linux light notify uses it (not the loom model).
#[cfg(all(target_os = "linux", not(mwait_loom)))]
pub(crate) fn prefetchw_supported() -> bool {
    false
}

/// No RDPID off x86-64.
// Only the Linux CPU number uses it (not the loom model).
#[cfg(all(target_os = "linux", not(mwait_loom)))]
pub(crate) fn rdpid_supported() -> bool {
    false
}

/// Never called off x86-64: [`rdpid_supported`] is false.
///
/// # Safety
///
/// None needed; `unsafe` only to match the x86-64 signature.
#[inline(always)]
// Only the Linux CPU number uses it (not the loom model).
#[cfg(all(target_os = "linux", not(mwait_loom)))]
pub(crate) unsafe fn rdpid() -> u64 {
    0
}

/// Off x86-64 a TLB shootdown is no interrupt (Arm broadcasts its TLB maintenance):
/// no fallback barrier, so no light notify.
#[cfg(all(target_os = "linux", not(mwait_loom)))]
pub(crate) fn shootdown_interrupts() -> bool {
    false
}

/// Nothing to do off x86-64 (never called: [`prefetchw_supported`] is false).
///
/// # Safety
///
/// None needed; `unsafe` only to match the x86-64 signature.
#[inline(always)]
// Only the Linux light notify uses it (not the loom model).
#[cfg(all(target_os = "linux", not(mwait_loom)))]
pub(crate) unsafe fn prefetch_for_write(_word: &crate::primitive::AtomicU32) {}
