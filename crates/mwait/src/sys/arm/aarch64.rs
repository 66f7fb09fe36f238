//! The AArch64 wait instructions, one `#[inline] unsafe fn` each, the zero-sized
//! capability token ([`EventWait`]) that only detection can create, whose methods are
//! the safe way to call them, and the generic timer's counter, which turns nanosecond
//! budgets into WFET deadlines.
//!
//! The mechanism: a load-exclusive (LDAXR) of a word arms this core's exclusive
//! monitor on the word's reservation granule (a cache line on the cores Linux runs
//! on). A store by another core to that granule clears the monitor, and the clearing
//! is an event. WFE sleeps until an event: that one, the generic timer's event stream
//! (when the kernel runs it), a SEV, an interrupt, or none at all; WFET also ends when
//! the virtual counter `CNTVCT_EL0` reaches its operand. Linux lets EL0 execute both
//! (it leaves `SCTLR_EL1.nTWE` set, so WFE does not trap) and read `CNTVCT_EL0` and
//! `CNTFRQ_EL0`.
//!
//! WFET is written as its encoding: the mnemonic needs the `wfxt` target feature,
//! and a build that decides at run time whether to use it must not depend on that.

use crate::sys::contract::HwcapWaits;
use crate::primitive::{AtomicU32, AtomicU64};
use core::arch::asm;

/// This build has the instructions below.
pub(crate) const AVAILABLE: bool = true;

/// LDAXR (32 bits): loads `*addr` with acquire ordering and arms this core's
/// exclusive monitor on the granule that holds it.
///
/// # Safety
///
/// `addr` must be valid for reads and 4-byte aligned (a load-exclusive of an
/// unaligned address faults).
#[inline]
pub(crate) unsafe fn ldaxr32(addr: *const u32) -> u32 {
    let v: u32;
    // SAFETY: the caller guarantees a readable, aligned address; LDAXR reads it and
    // changes only the exclusive monitor's state, no memory and no flags.
    unsafe {
        asm!(
            "ldaxr {v:w}, [{a}]",
            v = out(reg) v,
            a = in(reg) addr,
            options(nostack, preserves_flags),
        );
    }
    v
}

/// LDAXR (64 bits): [`ldaxr32`] on a doubleword.
///
/// # Safety
///
/// `addr` must be valid for reads and 8-byte aligned.
#[inline]
pub(crate) unsafe fn ldaxr64(addr: *const u64) -> u64 {
    let v: u64;
    // SAFETY: as in `ldaxr32`, for an 8-byte aligned address.
    unsafe {
        asm!(
            "ldaxr {v}, [{a}]",
            v = out(reg) v,
            a = in(reg) addr,
            options(nostack, preserves_flags),
        );
    }
    v
}

/// CLREX: returns this core's exclusive monitor to the open state, so that a later
/// store to the granule it was armed on makes no event (which would end this
/// thread's next WFE at once, for nothing).
///
/// # Safety
///
/// None beyond AArch64: CLREX exists on every AArch64 CPU and touches no memory.
#[inline]
pub(crate) unsafe fn clrex() {
    // SAFETY: CLREX only clears the local monitor.
    unsafe { asm!("clrex", options(nostack, preserves_flags)) }
}

/// WFE: sleeps until an event: the armed monitor's granule written by another core,
/// the event stream, a SEV, an interrupt, or none at all (it may return at once, as
/// it does when the event register was already set).
///
/// # Safety
///
/// Not a memory-safety condition but a liveness one: something must end it. The
/// caller holds proof that the event stream runs (`HWCAP_EVTSTRM` in `AT_HWCAP`),
/// which ends every WFE within its period; without it a WFE may sleep until an
/// unrelated interrupt.
#[inline]
pub(crate) unsafe fn wfe() {
    // SAFETY: WFE exists on every AArch64 CPU, and Linux does not trap it at EL0; the
    // caller guarantees an event will come. No `nomem`: the reload of the word after
    // it must not move before it.
    unsafe { asm!("wfe", options(nostack, preserves_flags)) }
}

/// WFET: [`wfe`] that also ends when `CNTVCT_EL0` reaches `deadline_ticks`
/// (absolute).
///
/// # Safety
///
/// The CPU must have FEAT_WFxT (`HWCAP2_WFXT` in `AT_HWCAP2`); elsewhere the
/// encoding is undefined and raises SIGILL.
#[inline]
pub(crate) unsafe fn wfet(deadline_ticks: u64) {
    // SAFETY: the caller guarantees FEAT_WFxT; WFET reads X0 and writes nothing.
    unsafe {
        // wfet x0
        asm!(
            ".inst 0xd5031000",
            in("x0") deadline_ticks,
            options(nostack, preserves_flags),
        );
    }
}

/// `CNTVCT_EL0`: the virtual counter of the generic timer, in ticks of
/// [`cntfrq`]. Linux lets EL0 read it on every AArch64 system.
#[inline]
pub(crate) fn cntvct() -> u64 {
    let t: u64;
    // SAFETY: an EL0-readable system register (CNTKCTL_EL1.EL0VCTEN, set by Linux);
    // the read changes nothing.
    unsafe {
        asm!("mrs {t}, cntvct_el0", t = out(reg) t, options(nomem, nostack, preserves_flags))
    };
    t
}

/// `CNTFRQ_EL0`: the generic timer's frequency in Hz, as the firmware set it.
#[inline]
pub(crate) fn cntfrq() -> u64 {
    let f: u64;
    // SAFETY: CNTFRQ_EL0 is readable at every exception level; the read changes
    // nothing.
    unsafe {
        asm!("mrs {f}, cntfrq_el0", f = out(reg) f, options(nomem, nostack, preserves_flags))
    };
    f
}

/// `AT_HWCAP` and `AT_HWCAP2` of this process's auxiliary vector: what the kernel says
/// this CPU offers to EL0.
pub(crate) fn auxv_hwcaps() -> (u64, u64) {
    // SAFETY: getauxval has no precondition; it returns 0 for an absent entry.
    let (hwcap, hwcap2) = unsafe {
        (
            libc::getauxval(libc::AT_HWCAP),
            libc::getauxval(libc::AT_HWCAP2),
        )
    };
    (hwcap, hwcap2)
}

// The constant detection decodes with is libc's where libc has it (libc has no
// `HWCAP2_WFXT` for glibc targets yet: detection cites the kernel header).
const _: () = assert!(libc::HWCAP_EVTSTRM == crate::detect::HWCAP_EVTSTRM);

/// Proof that a WFE on this CPU ends on its own: the event stream runs, or WFET
/// exists (`timed`), whose deadline ends it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct EventWait {
    timed: bool,
}

impl EventWait {
    /// The token, if the auxiliary vector reports the event stream or WFET; it waits
    /// with WFET where that exists.
    pub(crate) fn new(caps: &impl HwcapWaits) -> Option<EventWait> {
        let timed = caps.wfxt();
        (caps.event_stream() || timed).then_some(EventWait { timed })
    }

    /// The token without the auxiliary vector's word (`None` only where the build has
    /// no such instructions at all).
    ///
    /// # Safety
    ///
    /// Every WFE must end on its own here (under an emulator that executes WFE as a
    /// no-op, say), and with `timed`, WFET must execute.
    pub(crate) unsafe fn new_unchecked(timed: bool) -> Option<EventWait> {
        Some(EventWait { timed })
    }

    /// Whether [`wait`](Self::wait) uses WFET (and honours its deadline exactly).
    #[inline]
    pub(crate) fn timed(self) -> bool {
        self.timed
    }

    /// [`ldaxr32`] of `word`: its value, the monitor armed on its granule.
    #[inline]
    pub(crate) fn arm32(self, word: &AtomicU32) -> u32 {
        // SAFETY: a reference to an `AtomicU32` is readable and 4-byte aligned.
        unsafe { ldaxr32(word.as_ptr()) }
    }

    /// [`ldaxr64`] of `word`: its value, the monitor armed on its granule.
    #[inline]
    pub(crate) fn arm64(self, word: &AtomicU64) -> u64 {
        // SAFETY: a reference to an `AtomicU64` is readable and 8-byte aligned.
        unsafe { ldaxr64(word.as_ptr()) }
    }

    /// [`clrex`].
    #[inline]
    pub(crate) fn disarm(self) {
        // SAFETY: no precondition on AArch64.
        unsafe { clrex() }
    }

    /// Sleeps until an event: [`wfet`] until `deadline_ticks` where the token is
    /// timed, else [`wfe`] (which the event stream ends).
    #[inline]
    pub(crate) fn wait(self, deadline_ticks: u64) {
        if self.timed {
            // SAFETY: a timed token proves FEAT_WFxT.
            unsafe { wfet(deadline_ticks) }
        } else {
            // SAFETY: an untimed token proves the event stream, which ends the WFE.
            unsafe { wfe() }
        }
    }

    /// The counter reading `ns` nanoseconds from now (saturating), at the rate
    /// `CNTFRQ_EL0` states.
    #[inline]
    pub(crate) fn ticks_after(self, ns: u64) -> u64 {
        cntvct().saturating_add(ns_to_ticks(ns, cntfrq()))
    }
}

/// `ns` nanoseconds in ticks of a counter running at `hz` (saturating).
#[inline]
pub(crate) fn ns_to_ticks(ns: u64, hz: u64) -> u64 {
    u64::try_from(u128::from(ns) * u128::from(hz) / 1_000_000_000).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_counter_runs_at_its_stated_rate() {
        let hz = cntfrq();
        assert!(hz >= 1_000_000, "a generic timer below 1 MHz: {hz}");
        let (t0, n0) = (cntvct(), crate::sys::clock::now_ns());
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (t1, n1) = (cntvct(), crate::sys::clock::now_ns());
        let predicted = ns_to_ticks(n1 - n0, hz) as f64;
        let counted = (t1 - t0) as f64;
        // Loose: the two clocks are read a few instructions apart, on a shared and
        // perhaps emulated machine.
        assert!(
            (predicted / counted - 1.0).abs() < 0.05,
            "predicted {predicted} ticks, counted {counted}"
        );
    }

    #[test]
    fn a_load_exclusive_reads_the_word_and_clrex_leaves_it_alone() {
        // SAFETY: WFE is not executed here; the token only arms and disarms.
        let t = unsafe { EventWait::new_unchecked(false) }.unwrap();
        let w32 = AtomicU32::new(0xdead_beef);
        let w64 = AtomicU64::new(0x0123_4567_89ab_cdef);
        assert_eq!(t.arm32(&w32), 0xdead_beef);
        t.disarm();
        assert_eq!(t.arm64(&w64), 0x0123_4567_89ab_cdef);
        t.disarm();
        assert_eq!(w32.load(core::sync::atomic::Ordering::Relaxed), 0xdead_beef);
    }

    #[test]
    fn conversion_saturates() {
        assert_eq!(ns_to_ticks(1_000_000_000, 25_000_000), 25_000_000);
        assert_eq!(ns_to_ticks(0, 1_000_000_000), 0);
        assert_eq!(ns_to_ticks(u64::MAX, 1_000_000_000), u64::MAX);
    }
}
