//! How a wait ends: [`Deadline`], when its time is up, as its entry point knows it;
//! [`WaitResult`], what a caller gets; and [`Outcome`], what the ladder knows of it
//! ([`Ended`]: the tier or the deadline that ended it).

use crate::sys::clock;
use std::time::{Duration, Instant};

/// When a wait's time is up, as its entry point knows it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Deadline {
    /// Never: an untimed wait.
    Never,
    /// At this reading of the monotonic clock (`sys::clock::now_ns`).
    At(u64),
    /// Before the wait began (a zero timeout, a deadline already passed): the wait
    /// is its first look, and does not climb the ladder (`ladder::time_up`). A
    /// caller that polls with a zero timeout, as async-io's `block_on` does with
    /// its parker on every turn of its loop, then pays for a load.
    Passed,
}

impl Deadline {
    /// `timeout` from now; a zero timeout reads no clock.
    #[inline]
    pub(crate) fn after(timeout: Duration) -> Deadline {
        if timeout.is_zero() {
            Deadline::Passed
        } else {
            Deadline::At(clock::after(timeout))
        }
    }

    /// At `instant`; one that has come already reads no monotonic clock beside
    /// `Instant::now`.
    #[inline]
    pub(crate) fn at(instant: Instant) -> Deadline {
        match instant.checked_duration_since(Instant::now()) {
            Some(ahead) if !ahead.is_zero() => Deadline::At(clock::after(ahead)),
            _ => Deadline::Passed,
        }
    }
}

/// How a timed wait ended.
///
/// # Examples
///
/// ```
/// use mwait::{WaitCell, WaitResult};
/// use std::time::Duration;
///
/// let cell = WaitCell::new(7);
/// let r = cell.wait_until_timeout(|v| v == 8, Duration::from_millis(1));
/// assert_eq!(r, WaitResult::TimedOut(7));
/// assert!(r.is_timed_out());
/// assert_eq!(r.value(), 7);
/// ```
///
/// The waits of [`atomic`](crate::atomic) on an `AtomicU64` return a
/// `WaitResult<u64>`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[must_use]
pub enum WaitResult<V = u32> {
    /// The predicate held for this value.
    Ready(V),
    /// The deadline passed first; the last value seen, for which the predicate was
    /// false.
    TimedOut(V),
}

impl<V: Copy> WaitResult<V> {
    /// The value: the one that satisfied the predicate, or the last one seen.
    pub const fn value(self) -> V {
        match self {
            WaitResult::Ready(v) | WaitResult::TimedOut(v) => v,
        }
    }

    /// Whether the deadline passed first.
    pub const fn is_timed_out(self) -> bool {
        matches!(self, WaitResult::TimedOut(_))
    }

    /// `Some(value)` when the predicate held.
    pub const fn ready(self) -> Option<V> {
        match self {
            WaitResult::Ready(v) => Some(v),
            WaitResult::TimedOut(_) => None,
        }
    }
}

/// Where a wait ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The first look, before any tier.
    Entry,
    /// The inline spin in the caller's frame, before the ladder.
    Inline,
    /// The spin tier.
    Spin,
    /// The hardware tier.
    Hardware,
    /// The park tier: at a look before a park, or after one or more (see
    /// [`Outcome::slept`]).
    Park,
    /// The spin-and-yield rounds of a waiter that never parks.
    NoPark,
    /// The deadline passed during a park, and the last look found the predicate
    /// true after all.
    AtDeadline,
    /// The deadline passed: the predicate was false at the last look.
    TimedOut,
}

/// How one wait ended: the value (a cell's `u32` unless the word is another),
/// where, and what the climb knew then. `pub` in a private module: the sealed
/// trait of the atomic words names it (`atomic::sealed::Sealed::ladder`), and no
/// other crate can name it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Outcome<V = u32> {
    /// The value returned.
    pub(crate) value: V,
    /// Where the wait ended.
    pub(crate) ended: Ended,
    /// Whether this thread had just woken a parked partner (a hand-off spin).
    pub(crate) handoff: bool,
    /// Whether the waiter slept in the kernel.
    pub(crate) slept: bool,
}

impl<V> Outcome<V> {
    /// A wait that ended before the ladder (at `Entry` or in the `Inline` spin).
    #[inline(always)]
    pub(crate) const fn before_ladder(value: V, ended: Ended) -> Outcome<V> {
        Outcome {
            value,
            ended,
            handoff: false,
            slept: false,
        }
    }

    /// Whether the deadline passed first (the predicate was false at the last look).
    #[inline(always)]
    pub(crate) fn timed_out(&self) -> bool {
        self.ended == Ended::TimedOut
    }
}

impl Outcome {
    /// What the caller gets.
    #[inline(always)]
    pub(crate) const fn result(self) -> WaitResult {
        match self.ended {
            Ended::TimedOut => WaitResult::TimedOut(self.value),
            _ => WaitResult::Ready(self.value),
        }
    }
}
