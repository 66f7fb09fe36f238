//! The MWAITX tier (AMD MONITORX): MONITORX on the cell's line, re-check, MWAITX with
//! the timer enabled.
//!
//! What wakes it: a write to the monitored line, an interrupt, the timer, or nothing
//! at all. The timer (EBX) is a *relative* count of TSC-rate ticks, 32 bits wide: an
//! episode waits at most `u32::MAX` ticks (1.4 s at 3 GHz) and the ladder loops for
//! longer budgets (passing an absolute deadline there was a DPDK bug).
//!
//! C-states (EAX bits 7:4): [`CState::C0_1`] and `C0_2` ask for C0 (hint 0xF0: the
//! core stops issuing instructions but stays in C0, the fastest wake-up); `C1` asks
//! for C1 (hint 0x00: lower power, slower wake-up).
//!
//! Where it has run (executed, forced past CPUID, on guests that trap it, where the
//! self-test's check (b) demotes it) and where it has been timed:
//! `docs/hardware-results.md`.

use super::{CState, HwWake, LineMonitor};
use crate::sys::clock::now_ns;
use crate::sys::x86::{MonitorX, MWAITX_HINT_C0, MWAITX_HINT_C1};
use crate::sys::Watchable;

/// The MWAITX tier: the MONITORX token is all it needs.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Mwaitx(pub(crate) MonitorX);

/// The MWAITX hint for a C-state.
#[inline]
pub(crate) fn hint(c: CState) -> u32 {
    match c {
        CState::C0_1 | CState::C0_2 => MWAITX_HINT_C0,
        CState::C1 => MWAITX_HINT_C1,
    }
}

/// The timer count of one episode: what is left of the budget (in TSC ticks), capped
/// at 32 bits, and never 0 (which would mean no timeout).
#[inline]
pub(crate) fn episode_ticks(remaining_ticks: u64) -> u32 {
    u32::try_from(remaining_ticks).unwrap_or(u32::MAX).max(1)
}

impl LineMonitor for Mwaitx {
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
        let ticks = episode_ticks(self.0.ticks(deadline_ns - now));
        self.0.monitorx(word);
        if changed() {
            return HwWake::Woken;
        }
        self.0.mwaitx(hint(cstate), ticks);
        if now_ns() >= deadline_ns {
            HwWake::Deadline
        } else {
            HwWake::Woken
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_budgets_are_split_into_32_bit_episodes() {
        // An hour is far more than 2^32 ticks at any TSC rate above 1.2 MHz.
        assert_eq!(episode_ticks(1 << 40), u32::MAX);
        assert_eq!(episode_ticks(1_000), 1_000);
        assert_eq!(episode_ticks(0), 1, "a zero timer would mean no timeout");
    }

    #[test]
    fn hints_follow_the_documented_table() {
        assert_eq!(hint(CState::C0_1), 0xF0);
        assert_eq!(hint(CState::C0_2), 0xF0);
        assert_eq!(hint(CState::C1), 0x00);
    }
}
