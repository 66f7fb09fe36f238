//! Builds that are not AArch64 Linux (and the loom model, which has no hardware): the
//! capability token exists but is an empty type, so the WFE tier compiles everywhere
//! unchanged and can never be built.

use crate::primitive::{AtomicU32, AtomicU64};

/// This build has none of the instructions.
pub(crate) const AVAILABLE: bool = false;

/// No auxiliary vector to read here: no AArch64 capability.
pub(crate) fn auxv_hwcaps() -> (u64, u64) {
    (0, 0)
}

/// An exclusive-monitor wait cannot exist here: no value of this type can be made.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum EventWait {}

impl EventWait {
    /// Never: this build has no WFE.
    pub(crate) fn new<C>(_caps: &C) -> Option<EventWait> {
        None
    }

    /// Never: this build has no WFE.
    ///
    /// # Safety
    ///
    /// None needed; `unsafe` only to match the AArch64 signature.
    pub(crate) unsafe fn new_unchecked(_timed: bool) -> Option<EventWait> {
        None
    }

    pub(crate) fn timed(self) -> bool {
        match self {}
    }

    pub(crate) fn arm32(self, _word: &AtomicU32) -> u32 {
        match self {}
    }

    pub(crate) fn arm64(self, _word: &AtomicU64) -> u64 {
        match self {}
    }

    pub(crate) fn disarm(self) {
        match self {}
    }

    pub(crate) fn wait(self, _deadline_ticks: u64) {
        match self {}
    }

    pub(crate) fn ticks_after(self, _ns: u64) -> u64 {
        match self {}
    }
}
