//! The kernel tier: ring-0 MONITOR/MWAIT through the `/dev/mwait` shim (`kmod/`), for
//! CPUs that have MWAIT but no user-mode wait.
//!
//! The device is opened once per process and kept open (`sys/x86/dev_mwait.rs`). Each
//! episode is one `MWAIT_IOC_WAIT`; the module returns once it sees the word changed
//! (at the next wake of its MWAIT: the store to the line, or any interrupt), the
//! deadline passes, the scheduler needs the CPU or a signal is pending. The last
//! two become [`HwWake::Yield`], so the ladder parks on the futex instead of holding a
//! CPU the scheduler wants.
//!
//! The module compares 32 bits: a wait on a 64-bit word keeps the contract's default
//! [`HardwareWait::wait_episode_u64`] (`Yield`) and goes on to park.
//!
//! Executed in a QEMU TCG guest only (where kernel MWAIT is a no-op); never timed.

use super::{CState, HardwareWait, HwWake};
use crate::primitive::AtomicU32;
use crate::sys::x86::dev_mwait::Device;
use crate::sys::{clock, ShimWake};

/// The MWAIT hint for C1, which every MWAIT CPU allows. C0.1 and C0.2 have no MWAIT
/// encoding, so every [`CState`] maps to it for now.
const C1_HINT: u32 = 0x00;

/// The module's cap on one wait (it refuses longer ones with `ERANGE`); an episode
/// with a later deadline is cut to this and reported as `Woken`.
const MAX_EPISODE_NS: u64 = 1_000_000_000;

/// A handle on the shim: holding one proves `/dev/mwait` is open, speaks our ABI and
/// reports MWAIT usable.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Kernel(Device);

impl Kernel {
    /// Opens the device (once per process) and checks its ABI version.
    pub(crate) fn open() -> Result<Kernel, String> {
        Device::open().map(Kernel)
    }
}

impl HardwareWait for Kernel {
    fn wait_episode(
        &self,
        word: &AtomicU32,
        old: u32,
        deadline_ns: u64,
        _cstate: CState,
    ) -> HwWake {
        let cap = clock::now_ns().saturating_add(MAX_EPISODE_NS);
        let clamped = deadline_ns > cap;
        match self.0.wait(word, old, deadline_ns.min(cap), C1_HINT) {
            ShimWake::Deadline if clamped => HwWake::Woken,
            ShimWake::Deadline => HwWake::Deadline,
            ShimWake::Yield => HwWake::Yield,
            ShimWake::Woken => HwWake::Woken,
        }
    }
}
