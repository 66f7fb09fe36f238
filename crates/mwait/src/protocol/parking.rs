//! The park half of the protocol: announce (3), barrier, re-check (4), sleep,
//! withdraw; and the async waiter's announcement through the registry (the notes:
//! `protocol.rs`, "Notes about memory ordering").

use super::sleepers::Sleepers;
use super::state::{
    announced, replaces_foreign_count, withdrawn, FENCED, PARKED_MASK, SHARED_SLOW, WOKEN,
};
use super::tree::ask_whether_trees_help;
use super::{epoch_tag, MonitorLine};
use crate::primitive::{loom_sc_fence, Ordering, RELAY_FANOUT};
use crate::sys::park::{self, Parked};
use crate::sys::stamp::{self, Point};
use std::task::Waker;

impl MonitorLine {
    /// One park: announce, barrier, re-check, sleep, withdraw. `Ok(v)` when the
    /// re-check found the predicate true (the waiter did not sleep).
    ///
    /// Inline, generic over the predicate: a wait that parks without the climb runs
    /// it in its caller's own body (`ladder::park::without_climb`), and a waiter that
    /// slept long comes back to the few lines of that body instead of a chain of
    /// frames its sleep took from the caches. What an idle cell's park does not
    /// need (a count left by a fork, the barrier, a wake tree's turns) is a call
    /// out of line.
    #[inline(always)]
    pub(crate) fn park<P: FnMut(u32) -> bool + ?Sized>(
        &self,
        s: &Sleepers,
        pred: &mut P,
        deadline_ns: Option<u64>,
    ) -> Result<u32, Parked> {
        // From here the waiter is counted: the guard withdraws it however this
        // function ends, a panic of the barrier, the predicate or the sleep included
        // (a count left behind would send every later notify to the slow path and
        // keep `FENCED` set for ever).
        stamp::mark(Point::Park);
        let tag = epoch_tag(s);
        let old = self.announce(s, tag); // (3)
        let counted = Announced {
            line: self,
            tag,
            // What a lone waiter's withdrawal most likely finds: its own
            // announcement, and the mark of the notify that woke it.
            guess: announced(old, tag) | WOKEN,
        };
        if replaces_foreign_count(old, tag) {
            self.wake_foreign_sleepers(s);
        }
        if self.barrier_unless_fenced(s, old) {
            // Still counted: the bit is set while our announcement stands.
            self.state.fetch_or(FENCED, Ordering::SeqCst);
        }
        if old & PARKED_MASK >= RELAY_FANOUT && !s.shared {
            ask_whether_trees_help();
        }
        let v = self.value.load(Ordering::SeqCst); // (4)
        let parked = if pred(v) {
            Ok(v)
        } else if epoch_tag(s) != tag {
            // The predicate forked, and this is the child: the announcement counts
            // this thread under the parent's tag, which this process's notifiers
            // drop. Announce again under this process's own.
            Err(Parked::Changed)
        } else {
            stamp::mark(Point::Rechecked);
            let slept = park::wait(&s.queue, &self.value, v, deadline_ns, s.shared);
            if slept == Parked::Woken {
                // Before anything else (the predicate may panic): a wake tree may
                // count on this waiter to wake the next ones.
                let _ = self.relay(s);
            }
            Err(slept)
        };
        counted.withdraw();
        parked
    }

    /// After an announcement that replaced a count an ancestor process left: a
    /// thread of that count may be asleep here (it forked during its park), and
    /// its count is gone, so it must re-check and announce itself again (see
    /// "Counts left by a fork").
    #[cold]
    #[inline(never)]
    fn wake_foreign_sleepers(&self, s: &Sleepers) {
        park::wake(&s.queue, &self.value, park::ALL, s.shared);
    }

    /// The announcement (3) of a parking waiter under the fork tag `tag`: a
    /// `SeqCst` read-modify-write that counts it; returns the state before it.
    ///
    /// The compare-exchanges start from a guess, the state of an idle cell between
    /// two parks (nobody counted; `FENCED`, or `SHARED_SLOW` on a cell whose
    /// notifiers always fence), not from a load: after a long sleep the line is no
    /// longer in this core's cache, and a load would fetch it shared before the
    /// exchange fetched it again to write. A wrong guess costs one exchange that
    /// fails, with the line then in this core's cache for the next; the exchanges
    /// that succeed are those of a plain read-modify-write loop, so nothing of the
    /// protocol changes.
    #[inline(always)]
    pub(super) fn announce(&self, s: &Sleepers, tag: u32) -> u32 {
        let mut st = if s.notifiers_fence() {
            SHARED_SLOW
        } else {
            FENCED
        };
        loop {
            match self.state.compare_exchange_weak(
                st,
                announced(st, tag),
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(old) => return old,
                Err(now) => st = now,
            }
        }
    }

    /// The waiter's barrier after its announcement (3), which returned `old`: none
    /// when `old` has `FENCED` (see "Who may skip the barrier"), else the barrier.
    /// Returns whether it ran the barrier: then the caller marks the cell `FENCED`
    /// for those that come after it, while its own announcement still stands.
    #[inline(always)]
    fn barrier_unless_fenced(&self, s: &Sleepers, old: u32) -> bool {
        loom_sc_fence();
        if s.notifiers_fence() {
            // Every notifier of such a cell orders its write (1) before its load (2)
            // with a `SeqCst` read-modify-write or fence (a light store goes to the
            // fenced slow path by the `SHARED_SLOW` bit), and the announcement (3) is
            // a `SeqCst` read-modify-write before the `SeqCst` re-check (4): no
            // barrier is needed (the fence-to-access rule of the `SeqCst` total
            // order). `FENCED`, which would send the notifies that find the waiter
            // awake to the slow path to count themselves, stays off.
            return false;
        }
        let run = old & FENCED == 0;
        if run {
            self.waiter_barrier(s);
        } else {
            // The registration the first barrier would have settled (a new cell
            // starts `FENCED` and may never run one): a no-op once it is settled.
            park::prepare();
        }
        run
    }

    /// The heavy half of the barrier between announcing a waiter in `state` and the
    /// re-check of the value (see "Notes about memory ordering"). A process-shared
    /// cell never gets here (its notifiers always fence, by its `SHARED_SLOW` bit),
    /// which also keeps a child of `fork()` that waits on one off the one-time
    /// registration, whose lock another thread of the parent may have held at the
    /// fork.
    #[cold]
    #[inline(never)]
    fn waiter_barrier(&self, s: &Sleepers) {
        debug_assert!(!s.shared, "a shared cell's waiters run no barrier");
        park::waiter_barrier();
    }

    /// The async waiter's announcement: arms `waker` in the registry, which sets
    /// `ASYNC_REGISTERED` with a `SeqCst` read-modify-write (the (3) of an async
    /// waiter), then runs the same barrier as a parking thread, skipped on a `FENCED`
    /// cell as a park's is (see "Async waiters" in the notes). The caller then
    /// re-checks the value with a `SeqCst` load, its (4).
    pub(crate) fn arm_async(&self, s: &Sleepers, key: &mut Option<usize>, waker: &Waker) {
        let old = s.registry.arm(&self.state, key, waker); // (3)
        if self.barrier_unless_fenced(s, old) {
            // Only while our slot is still armed, under the registry's lock: a notify
            // may have taken our waker during the barrier, and with it the
            // announcement that kept `ASYNC_REGISTERED` set.
            let k = key.expect("arm allocates a slot");
            s.registry.set_while_armed(&self.state, k, FENCED);
        }
    }

    /// The announcement of a waiter over several words ([`wait_any`]), which runs one
    /// barrier for all of them: arms `waker` as [`arm_async`](Self::arm_async) does,
    /// without the barrier. Returns whether this cell needs the caller's barrier
    /// (not on a parker's cell, nor on a `FENCED` one); the caller then runs it and
    /// calls [`fenced_by_caller`](Self::fenced_by_caller).
    ///
    /// [`wait_any`]: crate::atomic::wait_any
    pub(crate) fn arm_async_without_barrier(
        &self,
        s: &Sleepers,
        key: &mut Option<usize>,
        waker: &Waker,
    ) -> bool {
        debug_assert!(!s.shared, "no waker is armed on a shared cell");
        let old = s.registry.arm(&self.state, key, waker); // (3)
        if s.parker {
            return false;
        }
        if old & FENCED != 0 {
            // As in `barrier_unless_fenced`: the registration a barrier would settle.
            park::prepare();
            return false;
        }
        true
    }

    /// After the barrier that the caller of
    /// [`arm_async_without_barrier`](Self::arm_async_without_barrier) ran for this
    /// cell: marks it `FENCED` while the slot `key` is still armed.
    pub(crate) fn fenced_by_caller(&self, s: &Sleepers, key: usize) {
        s.registry.set_while_armed(&self.state, key, FENCED);
    }

    /// Releases an async waiter's slot (`forward`: pass an unconsumed `notify_one`
    /// on to another armed waiter).
    pub(crate) fn disarm_async(&self, s: &Sleepers, key: usize, forward: bool) {
        s.registry.disarm(&self.state, key, forward);
    }
}

/// A parked waiter's announcement in `state` under the fork tag `tag`, withdrawn
/// where the park returns ([`withdraw`](Self::withdraw)), or on drop if it unwinds:
/// `Relaxed`, it orders nothing (a notifier that still sees the old count makes one
/// unneeded wake, no more).
pub(super) struct Announced<'a> {
    pub(super) line: &'a MonitorLine,
    pub(super) tag: u32,
    /// The state the withdrawal's first compare-exchange expects, instead of a load
    /// (as in [`MonitorLine::announce`]: the notifier that woke us last wrote the
    /// line, and a load would fetch it from the notifier's cache only for the
    /// exchange to fetch it again).
    pub(super) guess: u32,
}

impl Announced<'_> {
    /// The withdrawal where the park returns: in the park's own body, where the
    /// drop on an unwind is a call of its own.
    #[inline(always)]
    fn withdraw(self) {
        self.take_count();
        std::mem::forget(self);
    }

    /// One less in the count. The last one out takes the count's fork tag with it;
    /// a count under another tag (or none left) is not ours to take from.
    #[inline(always)]
    fn take_count(&self) {
        let (state, tag) = (&self.line.state, self.tag);
        let mut st = self.guess;
        let mut guessed = true;
        loop {
            let Some(new) = withdrawn(st, tag) else {
                if guessed {
                    // The guess says there is nothing to take: only the state
                    // itself may say so.
                    st = state.load(Ordering::Relaxed);
                    guessed = false;
                    continue;
                }
                return;
            };
            match state.compare_exchange_weak(st, new, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(now) => {
                    st = now;
                    guessed = false;
                }
            }
        }
    }
}

impl Drop for Announced<'_> {
    /// The withdrawal of a park that unwinds (a panic of the barrier, the predicate
    /// or the sleep).
    fn drop(&mut self) {
        self.take_count();
    }
}
