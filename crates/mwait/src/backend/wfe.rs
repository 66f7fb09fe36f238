//! The WFE tier (AArch64): LDAXR arms the exclusive monitor on the word's granule and
//! loads the value, a re-check, then WFE (WFET with the episode's deadline where the
//! CPU has FEAT_WFxT) until an event.
//!
//! What wakes it: another core's store to the granule (it clears the monitor, which
//! is an event), the generic timer's event stream, a SEV, an interrupt, WFET's
//! deadline, or nothing at all. The event stream is what makes a plain WFE safe to
//! use: the tier is offered only where the auxiliary vector reports it
//! (`HWCAP_EVTSTRM`) or WFET (`HWCAP2_WFXT`), never on the word of a caller's copy of
//! the capabilities.
//!
//! An episode re-arms and waits again while the word keeps its value: the event
//! stream ends a WFE about every 100 µs whether or not the word changed, and those
//! ends are the stream's, not the cell's. It waits for at most
//! [`events_budget`] events before it returns `Woken` (as many as the stream
//! delivers before the deadline, plus [`EXTRA_EVENTS`]), so that a WFE that does
//! nothing (an emulator's, under which the tier spins) ends the episode within a few
//! loads: the self-test then sees episodes that ignore their timers and demotes the
//! tier by the rules that demote a no-op UMWAIT.
//!
//! Deadlines: WFET ends at the deadline (in `CNTVCT_EL0` ticks at `CNTFRQ_EL0`'s
//! rate, both read at run time). A plain WFE cannot be told one, so it may pass the
//! deadline by up to one event-stream period; the episode checks the clock after
//! every WFE and returns `Deadline` once it has passed.
//!
//! Where it ran: executed under `qemu-aarch64 -cpu max` by `cargo xtask
//! aarch64-test`, where WFE is a no-op and the auxiliary vector reports neither the
//! event stream nor WFET (so the tier is forced with `MWAIT_UNSAFE_FORCE=1` there);
//! never timed on real hardware so far (see `docs/hardware-results.md`).

use super::{CState, HardwareWait, HwWake};
use crate::primitive::{AtomicU32, AtomicU64};
use crate::sys::arm::EventWait;
use crate::sys::clock::now_ns;

/// The event stream's shortest period that an episode's event budget assumes: half of
/// Linux's nominal 100 µs (`ARCH_TIMER_EVT_STREAM_PERIOD_US`), because the kernel
/// rounds the stream's divisor of the counter's rate to a power of two.
pub(crate) const EVENT_STREAM_MIN_PERIOD_NS: u64 = 50_000;
/// Events an episode waits for beyond the event stream's: one that was pending when
/// it began (WFE then returns at once), the stream's tick at a random phase, and a
/// few interrupts or SEVs.
pub(crate) const EXTRA_EVENTS: u64 = 4;

/// The WFE tier: the exclusive-monitor token is all it needs.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Wfe(pub(crate) EventWait);

/// How many WFEs an episode with `remaining_ns` left makes at most while the word
/// keeps its value.
#[inline]
pub(crate) fn events_budget(remaining_ns: u64) -> u64 {
    (remaining_ns / EVENT_STREAM_MIN_PERIOD_NS).saturating_add(EXTRA_EVENTS)
}

impl Wfe {
    /// One episode: `arm` loads the word with the monitor armed and says whether it
    /// no longer holds the awaited value.
    #[inline(always)]
    fn episode(&self, deadline_ns: u64, arm: impl Fn() -> bool) -> HwWake {
        let now = now_ns();
        if now >= deadline_ns {
            return HwWake::Deadline;
        }
        let ev = self.0;
        let deadline_ticks = if ev.timed() {
            ev.ticks_after(deadline_ns - now)
        } else {
            0
        };
        let mut events = events_budget(deadline_ns - now);
        loop {
            // The store may have landed before the monitor was armed: the value the
            // arming load returns is the re-check.
            if arm() {
                ev.disarm();
                return HwWake::Woken;
            }
            ev.wait(deadline_ticks);
            if now_ns() >= deadline_ns {
                ev.disarm();
                return HwWake::Deadline;
            }
            events -= 1;
            if events == 0 {
                ev.disarm();
                return HwWake::Woken;
            }
        }
    }
}

impl HardwareWait for Wfe {
    #[inline]
    fn wait_episode(&self, word: &AtomicU32, old: u32, deadline_ns: u64, _c: CState) -> HwWake {
        self.episode(deadline_ns, || self.0.arm32(word) != old)
    }

    #[inline]
    fn wait_episode_u64(&self, word: &AtomicU64, old: u64, deadline_ns: u64, _c: CState) -> HwWake {
        self.episode(deadline_ns, || self.0.arm64(word) != old)
    }
}

// The selection on recorded capabilities and the episode budget, outside the model.
crate::primitive::thread_tests! {
    mod tests;
}

/// The tier itself, where it can run: forced past the auxiliary vector (its WFE ends
/// at once under qemu-user, and on hardware the event stream ends it).
#[cfg(all(test, target_arch = "aarch64", target_os = "linux", not(mwait_loom)))]
mod on_aarch64 {
    use super::*;
    use crate::backend::HardwareWait;
    use std::sync::Arc;

    /// The tier as detection offers it, or forced where an emulator runs the tests
    /// (`MWAIT_TEST_RUNNER`, which `cargo xtask aarch64-test` sets: its WFE is a
    /// no-op); `None` on a CPU that offers it not, where a WFE could sleep unbounded.
    fn tier() -> Option<Wfe> {
        let caps = crate::detect::Capabilities::for_waits();
        let emulated = std::env::var_os("MWAIT_TEST_RUNNER").is_some();
        let token = crate::sys::arm::EventWait::new(caps).or_else(|| {
            // SAFETY: only under the emulator, whose WFE returns at once.
            emulated.then(|| unsafe { crate::sys::arm::EventWait::new_unchecked(false) })?
        });
        if token.is_none() {
            println!("no event stream, no WFET, no emulator: the wfe tier cannot run here");
        }
        token.map(Wfe)
    }

    #[test]
    fn a_changed_word_returns_at_once_and_an_unchanged_one_at_its_deadline() {
        let Some(hw) = tier() else { return };
        let w = AtomicU32::new(7);
        let far = now_ns() + 10_000_000_000;
        assert_eq!(hw.wait_episode(&w, 6, far, CState::C0_1), HwWake::Woken);
        let w64 = AtomicU64::new(1 << 40);
        // Only the high half differs: the 64-bit re-check must see it.
        assert_eq!(
            hw.wait_episode_u64(&w64, 0, far, CState::C0_1),
            HwWake::Woken
        );
        let past = now_ns();
        assert_eq!(hw.wait_episode(&w, 7, past, CState::C0_1), HwWake::Deadline);
        // An unchanged word: the episode ends by its deadline or its event budget,
        // never by a change, and not later than one event-stream period after the
        // deadline (plus scheduling slack on a shared machine).
        let t0 = now_ns();
        let r = hw.wait_episode(&w, 7, t0 + 2_000_000, CState::C0_1);
        let took = now_ns() - t0;
        assert!(matches!(r, HwWake::Deadline | HwWake::Woken), "{r:?}");
        assert!(took < 2_000_000 + 200_000 + 50_000_000, "{took} ns");
    }

    #[test]
    fn a_store_from_another_thread_ends_the_waits_that_follow() {
        let Some(hw) = tier() else { return };
        let w = Arc::new(AtomicU32::new(0));
        let w2 = w.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(5));
            w2.store(1, core::sync::atomic::Ordering::Release);
        });
        let give_up = now_ns() + 10_000_000_000;
        while w.load(core::sync::atomic::Ordering::Acquire) == 0 {
            let r = hw.wait_episode(&w, 0, give_up, CState::C0_1);
            assert_ne!(r, HwWake::Deadline, "no store seen in 10 s");
        }
        assert_eq!(hw.wait_episode(&w, 0, give_up, CState::C0_1), HwWake::Woken);
        t.join().unwrap();
    }
}
