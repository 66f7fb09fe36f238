//! The spin tier: re-load the value with a CPU pause between loads, for a bounded time.
//!
//! What ends it: the predicate holds, or the monotonic clock passes `until_ns`. The
//! clock is read once per [`LOADS_PER_CLOCK_READ`] loads, so the budget is overshot by
//! at most that many pauses (tens of ns before Skylake, ~1 µs after).

use crate::clock::now_ns;
use crate::primitive::{spin_hint, AtomicU32, Ordering};

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
) -> Option<u32> {
    loop {
        for _ in 0..LOADS_PER_CLOCK_READ {
            let v = word.load(Ordering::Acquire);
            if pred(v) {
                return Some(v);
            }
            spin_hint();
            #[cfg(loom)]
            break;
        }
        if now_ns() >= until_ns {
            return None;
        }
    }
}
