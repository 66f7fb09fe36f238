//! The words a hardware wait can watch, named without an architecture: the tier
//! contract (`backend/mod.rs`) bounds its words by [`Watchable`], and the monitors of
//! `x86/` read their address from it.

use crate::primitive::{AtomicU32, AtomicU64};

/// A word a monitor can be armed on: an atomic of 32 or 64 bits, whose reference is
/// always mapped (a monitor armed on an unmapped address faults). Where no monitor
/// exists (off x86-64, and in the loom model) it has no method: only its bound stays.
pub(crate) trait Watchable {
    /// The word's address.
    #[cfg(all(target_arch = "x86_64", not(mwait_loom)))]
    fn addr(&self) -> *const u8;
}

impl Watchable for AtomicU32 {
    #[cfg(all(target_arch = "x86_64", not(mwait_loom)))]
    #[inline(always)]
    fn addr(&self) -> *const u8 {
        self.as_ptr().cast()
    }
}

impl Watchable for AtomicU64 {
    #[cfg(all(target_arch = "x86_64", not(mwait_loom)))]
    #[inline(always)]
    fn addr(&self) -> *const u8 {
        self.as_ptr().cast()
    }
}
