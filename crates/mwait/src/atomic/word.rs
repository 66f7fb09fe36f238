//! A bare atomic as a ladder word. The type is `pub` in a private module: the
//! sealed trait of the atomic words names it in the signature of each word's
//! ladder (`Sealed::ladder`), and no other crate can name it.

use super::table::Bucket;
use super::Atomic;
use crate::ladder::word::Word;
use crate::sys::park::{self, Parked};

/// A bare atomic as a ladder [`Word`]: its park half is the table's.
pub struct TableWord<'a, A: ?Sized> {
    pub(super) atomic: &'a A,
    pub(super) bucket: &'static Bucket,
    /// Set when a ring woke this waiter ([`wait_or_woken`](super::wait_or_woken),
    /// whose predicate then holds whatever the value).
    pub(super) woken: Option<&'a std::cell::Cell<bool>>,
}

impl<A: ?Sized> Clone for TableWord<'_, A> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<A: ?Sized> Copy for TableWord<'_, A> {}

impl<'a, A: Atomic> Word<'a> for TableWord<'a, A> {
    type Atomic = A;

    #[inline(always)]
    fn atomic(self) -> &'a A {
        self.atomic
    }

    /// Announce (3), barrier, re-check (4), sleep on the doorbell, withdraw (see the
    /// notes of `atomic/mod.rs`).
    fn park<P: FnMut(A::Value) -> bool + ?Sized>(
        self,
        pred: &mut P,
        deadline_ns: Option<u64>,
    ) -> Result<A::Value, Parked> {
        let addr = self.atomic as *const A as usize;
        let mut queued = self.bucket.announce_own(addr); // (3)
        if !queued.fenced() {
            park::waiter_barrier();
            queued.barrier_done();
        }
        crate::primitive::loom_sc_fence();
        let v = self.atomic.load_acquire(); // (4)
        if pred(v) {
            return Ok(v);
        }
        let parked = queued.bell().sleep(deadline_ns);
        if queued.bell().rung() && parked != Parked::TimedOut {
            queued.consume();
            if let Some(woken) = self.woken {
                woken.set(true);
            }
        }
        Err(parked)
    }

    #[inline]
    fn wake_stamp(self) -> u64 {
        self.bucket.wake_stamp()
    }
}
