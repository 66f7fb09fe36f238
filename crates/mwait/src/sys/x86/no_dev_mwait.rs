//! Targets where the `/dev/mwait` shim cannot exist (it is a Linux x86-64 module), and
//! the loom model: the handle is an empty type, so the kernel tier never runs.

use crate::primitive::AtomicU32;
use crate::sys::contract::ShimWake;

/// This build cannot talk to the shim.
pub(crate) const AVAILABLE: bool = false;

/// No value of this type can be made.
#[derive(Copy, Clone, Debug)]
pub(crate) enum Device {}

impl Device {
    /// Always refused, with the reason.
    pub(crate) fn open() -> Result<Device, String> {
        Err("the kernel tier is not part of this build".to_string())
    }

    pub(crate) fn wait(
        self,
        _word: &AtomicU32,
        _expected: u32,
        _deadline_ns: u64,
        _hint: u32,
    ) -> ShimWake {
        match self {}
    }
}
