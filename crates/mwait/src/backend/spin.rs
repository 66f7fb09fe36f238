//! The spin tier: re-load the value with a CPU pause between loads, for a bounded time.
//!
//! What ends it: the predicate holds, or the monotonic clock passes `until_ns`. The
//! clock is read once per [`LOADS_PER_CLOCK_READ`] loads, so the budget is overshot by
//! at most that many pauses (tens of ns before Skylake, ~1 µs after).
//!
//! Where the CPU has WAITPKG, the pause between two loads is a TPAUSE in C0.1 of
//! [`TPAUSE_NS`] instead of a PAUSE: a timed pause whose length does not depend on the
//! microarchitecture (PAUSE costs 10 cycles on some cores and 140 on others).

use crate::clock::now_ns;
use crate::policy::SpinPause;
use crate::primitive::{spin_hint, AtomicU32, Ordering};

/// Length of one TPAUSE between two loads of the spin tier.
#[cfg_attr(not(all(target_arch = "x86_64", not(loom))), allow(dead_code))]
pub(crate) const TPAUSE_NS: u64 = 100;

/// Loads (each followed by a pause) between two readings of the clock: a vDSO clock
/// read costs about as much as a few pauses, so this keeps its share small.
pub(crate) const LOADS_PER_CLOCK_READ: u32 = 8;

/// Spins until `pred` accepts the value (returns it) or the clock passes `until_ns`
/// (returns `None`).
#[inline]
pub(crate) fn spin_until(
    word: &AtomicU32,
    pred: &mut dyn FnMut(u32) -> bool,
    until_ns: u64,
    pause: Option<SpinPause>,
) -> Option<u32> {
    let ticks = tpause_ticks(pause);
    let (mut first, mut rounds) = (None, 0u32);
    loop {
        if let Some(v) = round(word, pred, pause, ticks) {
            return Some(v);
        }
        let now = now_ns();
        let start = *first.get_or_insert(now);
        if now >= until_ns {
            if rounds > 0 {
                crate::ladder::estimate::offer_spin_rounds(rounds, now - start);
            }
            return None;
        }
        rounds += 1;
    }
}

/// One round of the spin without the clock: [`LOADS_PER_CLOCK_READ`] loads, each
/// followed by a pause. Returns the value if `pred` accepted one.
#[inline]
pub(crate) fn spin_round(
    word: &AtomicU32,
    pred: &mut dyn FnMut(u32) -> bool,
    pause: Option<SpinPause>,
) -> Option<u32> {
    round(word, pred, pause, tpause_ticks(pause))
}

/// The length of one TPAUSE in TSC ticks, where the spin pauses with TPAUSE;
/// worked out once per spin, not once per round.
#[inline]
fn tpause_ticks(pause: Option<SpinPause>) -> Option<u64> {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    {
        pause.map(|_| crate::tsc::ns_to_ticks(TPAUSE_NS))
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom))))]
    {
        let _ = pause;
        None
    }
}

#[inline]
fn round(
    word: &AtomicU32,
    pred: &mut dyn FnMut(u32) -> bool,
    pause: Option<SpinPause>,
    tpause_ticks: Option<u64>,
) -> Option<u32> {
    for _ in 0..LOADS_PER_CLOCK_READ {
        let v = word.load(Ordering::Acquire);
        if pred(v) {
            return Some(v);
        }
        #[cfg(all(target_arch = "x86_64", not(loom)))]
        if let (Some(t), Some(ticks)) = (pause, tpause_ticks) {
            let deadline = crate::arch::x86_64::rdtsc().wrapping_add(ticks);
            t.tpause(crate::arch::x86_64::WAITPKG_C0_1, deadline);
            continue;
        }
        #[cfg(not(all(target_arch = "x86_64", not(loom))))]
        let _ = (pause, tpause_ticks);
        spin_hint();
        #[cfg(loom)]
        break;
    }
    None
}
