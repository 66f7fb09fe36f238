//! The UMWAIT tier (Intel WAITPKG): UMONITOR on the cell's line, re-check, UMWAIT until
//! an absolute TSC deadline.
//!
//! What wakes it: a write to the monitored line (the notifier's store), an interrupt,
//! the TSC deadline, the OS limit `IA32_UMWAIT_CONTROL` (Linux
//! `/sys/devices/system/cpu/umwait_control/max_time`, 100 000 ticks by default; CF=1
//! reports it), or nothing at all. An episode covers one UMWAIT; the ladder re-arms
//! and loops until its own hardware budget ends, so the OS limit only shortens
//! episodes, it never ends the tier early.
//!
//! C-states: [`CState::C0_1`] asks for C0.1 (ECX=1); `C0_2` and `C1` ask for C0.2
//! (ECX=0), which the OS turns into C0.1 when `enable_c02` is 0.
//!
//! Where it ran: executed (as a no-op: QEMU decodes the instructions as fences) under
//! `qemu-x86_64-static -cpu max` by `cargo xtask hw-test`; never timed on real
//! hardware so far (see `docs/hardware-results.md`).

use super::{CState, HwWake, LineMonitor};
use crate::sys::clock::now_ns;
use crate::sys::x86::{Waitpkg, WAITPKG_C0_1, WAITPKG_C0_2};
use crate::sys::Watchable;

/// The UMWAIT tier: the WAITPKG token is all it needs.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Umwait(pub(crate) Waitpkg);

/// The UMWAIT/TPAUSE control word for a C-state.
#[inline]
pub(crate) fn ctrl(c: CState) -> u32 {
    match c {
        CState::C0_1 => WAITPKG_C0_1,
        CState::C0_2 | CState::C1 => WAITPKG_C0_2,
    }
}

impl LineMonitor for Umwait {
    /// One episode on `word`'s line: arm, re-check with `changed`, wait.
    #[inline(always)]
    fn episode(
        &self,
        word: &impl Watchable,
        changed: impl Fn() -> bool,
        deadline_ns: u64,
        cstate: CState,
    ) -> HwWake {
        let now = now_ns();
        if now >= deadline_ns {
            return HwWake::Deadline;
        }
        let deadline_tsc = self.0.tsc_after(deadline_ns - now);
        self.0.umonitor(word);
        // The store may have landed before the monitor was armed: look once more.
        if changed() {
            return HwWake::Woken;
        }
        // CF=1 (the OS limit) needs nothing special: the ladder re-arms and waits
        // again until its budget ends.
        let _os_limit = self.0.umwait(ctrl(cstate), deadline_tsc);
        if self.0.tsc_reached(deadline_tsc) {
            HwWake::Deadline
        } else {
            HwWake::Woken
        }
    }
}
