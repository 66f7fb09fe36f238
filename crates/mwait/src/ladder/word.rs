//! What the ladder waits on: a [`Word`] is a word the spin and hardware tiers watch
//! (`backend::Watched`: 32 or 64 bits) and the park half that sleeps until a notifier
//! of that word wakes it. A `WaitCell` is one ([`CellWord`]: its value and the
//! protocol's park half); any `AtomicU32` or `AtomicU64` is another (`atomic::table`,
//! whose park half queues the waiter in a hashed table).

use crate::backend::Watched;
use crate::protocol::sleepers::Sleepers;
use crate::protocol::MonitorLine;
use crate::sys::park::Parked;

/// Value type of a [`Word`].
pub(crate) type ValueOf<'a, W> = <<W as Word<'a>>::Atomic as Watched>::Bits;

/// A word the ladder can wait on.
pub(crate) trait Word<'a>: Copy {
    /// The atomic the spin and hardware tiers load and watch.
    type Atomic: Watched + ?Sized + 'a;

    /// That atomic.
    fn atomic(self) -> &'a Self::Atomic;

    /// One park: announce, barrier, re-check (`Ok(v)`: the predicate held for `v`,
    /// the waiter did not sleep), sleep until woken or `deadline_ns`, withdraw.
    fn park<P: FnMut(ValueOf<'a, Self>) -> bool + ?Sized>(
        self,
        pred: &mut P,
        deadline_ns: Option<u64>,
    ) -> Result<ValueOf<'a, Self>, Parked>;

    /// The clock reading of the last wake of a parked waiter of this word (0: none
    /// known), from which a woken waiter measures its wake-up latency.
    fn wake_stamp(self) -> u64;

    /// Says that the next park measures its wake-up (`true`), or that the measured
    /// park has read the stamp (`false`). A cell's notifier stamps its wakes only in
    /// between (`protocol::Sleepers::stamp_wake`); words whose wakes always stamp
    /// ignore it.
    #[inline]
    fn measure_wake(self, _on: bool) {}
}

/// A `WaitCell`'s value as a [`Word`]: the protocol's park half (`protocol/parking.rs`).
#[derive(Copy, Clone)]
pub(crate) struct CellWord<'a> {
    pub(crate) line: &'a MonitorLine,
    pub(crate) sleepers: &'a Sleepers,
}

impl<'a> Word<'a> for CellWord<'a> {
    type Atomic = crate::primitive::AtomicU32;

    #[inline(always)]
    fn atomic(self) -> &'a Self::Atomic {
        &self.line.value
    }

    /// The protocol's park, inline: a wait that parks without the climb runs it in
    /// its caller's body (`docs/architecture.md`).
    #[inline(always)]
    fn park<P: FnMut(u32) -> bool + ?Sized>(
        self,
        pred: &mut P,
        deadline_ns: Option<u64>,
    ) -> Result<u32, Parked> {
        self.line.park(self.sleepers, pred, deadline_ns)
    }

    #[inline]
    fn wake_stamp(self) -> u64 {
        self.sleepers.wake_stamp()
    }

    #[inline]
    fn measure_wake(self, on: bool) {
        self.sleepers.measure_wake(on);
    }
}
