//! The spin tier: re-load the value with a CPU pause between loads, for a bounded time.
//!
//! What ends it: the predicate holds, or the monotonic clock passes `until_ns`. The
//! clock is read once per [`LOADS_PER_CLOCK_READ`] loads, so the budget is overshot by
//! at most that many pauses (tens of ns before Skylake, ~1 µs after).
//!
//! Where the CPU has WAITPKG, the pause between two loads is a TPAUSE in C0.1 of
//! [`TPAUSE_NS`] instead of a PAUSE: a timed pause whose length does not depend on the
//! microarchitecture (PAUSE costs 10 cycles on some cores and 140 on others).

use super::Watched;
use crate::primitive::{spin_hint, SPIN_ROUND_LOADS_CAP};
use crate::sys::clock::now_ns;
use crate::sys::x86::Waitpkg;

/// The token the spin tier needs for TPAUSE between its loads.
pub(crate) type SpinPause = Waitpkg;

/// Length of one TPAUSE between two loads of the spin tier.
pub(crate) const TPAUSE_NS: u64 = 100;

/// The WAITPKG token for TPAUSE in the spin tier, where the CPU has WAITPKG (or
/// `unsafe_forced`: the test-only `MWAIT_UNSAFE_FORCE=1` forces UMWAIT) and `allowed`
/// (the kill switch leaves UMWAIT on).
pub(crate) fn pause_token(
    caps: &crate::detect::Capabilities,
    allowed: bool,
    unsafe_forced: bool,
) -> Option<SpinPause> {
    if !allowed {
        return None;
    }
    let token = Waitpkg::new(caps).or_else(|| {
        if unsafe_forced {
            // SAFETY: only with MWAIT_UNSAFE_FORCE=1 forcing UMWAIT, whose documented
            // contract is that the WAITPKG instructions execute here.
            unsafe { Waitpkg::new_unchecked() }
        } else {
            None
        }
    });
    if let Some(t) = token {
        // Resolve the TSC rate now (a calibration takes 2 ms), not in the middle of
        // the first spin.
        let _ = t.ticks(TPAUSE_NS);
    }
    token
}

/// Loads (each followed by a pause) between two readings of the clock: a vDSO clock
/// read costs about as much as a few pauses, so this keeps its share small.
pub(crate) const LOADS_PER_CLOCK_READ: u32 = 8;

/// What a [`spin_until`] saw: the value `pred` accepted (`None`: the clock passed
/// `until_ns` first), and its clock readings, from which the ladder learns what a
/// round costs.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Spun<V> {
    /// The value `pred` accepted, if it did.
    pub(crate) value: Option<V>,
    /// How many rounds ended in a clock reading.
    pub(crate) rounds: u32,
    /// The last clock reading (meaningless when `rounds` is 0).
    pub(crate) last_ns: u64,
}

/// Spins until `pred` accepts the value or the clock passes `until_ns`.
#[inline]
pub(crate) fn spin_until<W: Watched + ?Sized>(
    word: &W,
    pred: &mut dyn FnMut(W::Bits) -> bool,
    until_ns: u64,
    pause: Option<SpinPause>,
) -> Spun<W::Bits> {
    let tpause = tpause_ticks(pause);
    let (mut rounds, mut last_ns) = (0u32, 0u64);
    loop {
        if let Some(v) = round(word, pred, tpause) {
            return Spun {
                value: Some(v),
                rounds,
                last_ns,
            };
        }
        last_ns = now_ns();
        rounds = rounds.saturating_add(1);
        if last_ns >= until_ns {
            return Spun {
                value: None,
                rounds,
                last_ns,
            };
        }
    }
}

/// One round of the spin without the clock: [`LOADS_PER_CLOCK_READ`] loads, each
/// followed by a pause. Returns the value if `pred` accepted one.
#[inline]
pub(crate) fn spin_round<W: Watched + ?Sized>(
    word: &W,
    pred: &mut dyn FnMut(W::Bits) -> bool,
    pause: Option<SpinPause>,
) -> Option<W::Bits> {
    round(word, pred, tpause_ticks(pause))
}

/// The length of one TPAUSE in TSC ticks, where the spin pauses with TPAUSE;
/// worked out once per spin, not once per round.
#[inline]
fn tpause_ticks(pause: Option<SpinPause>) -> Option<(SpinPause, u64)> {
    pause.map(|t| (t, t.ticks(TPAUSE_NS)))
}

/// Loads of one round: [`LOADS_PER_CLOCK_READ`], or fewer where the primitives cap it.
const ROUND_LOADS: u32 = if LOADS_PER_CLOCK_READ < SPIN_ROUND_LOADS_CAP {
    LOADS_PER_CLOCK_READ
} else {
    SPIN_ROUND_LOADS_CAP
};

/// Up to [`LOADS_PER_CLOCK_READ`] loads (one in the loom model, which needs only to
/// see the path), each followed by a pause.
#[inline]
fn round<W: Watched + ?Sized>(
    word: &W,
    pred: &mut dyn FnMut(W::Bits) -> bool,
    tpause: Option<(SpinPause, u64)>,
) -> Option<W::Bits> {
    for _ in 0..ROUND_LOADS {
        let v = word.load_acquire();
        if pred(v) {
            return Some(v);
        }
        match tpause {
            Some((t, ticks)) => t.pause(ticks),
            None => spin_hint(),
        }
    }
    None
}
