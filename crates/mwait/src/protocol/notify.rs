//! The notify half of the protocol: the write (1) and the load of `state` (2), then,
//! only when somebody is parked or armed, the cold path that wakes them (the notes:
//! `protocol.rs`, "Notes about memory ordering").

use super::sleepers::Sleepers;
use super::state::{
    fenced_after_idle_notify, EPOCH_MASK, FENCED, IDLE_MASK, PARKED_MASK, SHARED_SLOW, SKIPPED,
    WOKEN,
};
use super::tree::trees_help;
use super::{counts_every_sleeper, epoch_tag, MonitorLine, OnWake};
use crate::primitive::{fence, loom_sc_fence, Ordering, RELAY_FANOUT};
use crate::registry::ASYNC_REGISTERED;
use crate::sys::park;

impl MonitorLine {
    /// Stores `value` and wakes every parked waiter, through the light half of the
    /// asymmetric barrier where the platform allows it. `on_woke` hears of a wake of
    /// parked waiters.
    #[inline(always)]
    pub(crate) fn store(&self, s: &Sleepers, value: u32, on_woke: &impl OnWake) {
        // One load of the platform's notify mode; where it is light, the line may
        // be asked for exclusively first, so that the load of `state` does not
        // fetch it shared for the store to fetch it again.
        if park::begin_light_store(&self.value) {
            // The asymmetric barrier: parking waiters run membarrier(), so a
            // compiler barrier orders our store before our load of `state`.
            self.value.store(value, Ordering::Release); // (1)
            park::light_fence();
            let state = self.state.load(Ordering::Relaxed); // (2)
            park::end_light_store();
            if state != 0 {
                self.wake_slow(s, park::ALL, on_woke, state);
            }
        } else {
            self.value.store(value, Ordering::SeqCst); // (1)
            self.notify(s, park::ALL, on_woke);
        }
    }

    /// The notifier's second half, after a `SeqCst` write (1) or fence: one load of
    /// `state` (2), and the cold path only when somebody is parked or registered.
    /// Wakes up to `n` parked waiters (and as many async ones).
    #[inline(always)]
    pub(crate) fn notify(&self, s: &Sleepers, n: u32, on_woke: &impl OnWake) {
        loom_sc_fence();
        // `SHARED_SLOW` is for light stores only: after a `SeqCst` write or fence the
        // symmetric protocol needs no second look (see the notes).
        let state = self.state.load(Ordering::SeqCst); // (2)
        if state & !SHARED_SLOW != 0 {
            self.wake_slow(s, n, on_woke, state);
        }
    }

    #[cold]
    #[inline(never)]
    fn wake_slow(&self, s: &Sleepers, n: u32, on_woke: &impl OnWake, first: u32) {
        let tag = epoch_tag(s);
        if first & WOKEN != 0 && first & EPOCH_MASK == tag {
            // A wake on its way, by the first look: the mark of our skip is our second
            // look, a `SeqCst` read-modify-write that orders our store before it and
            // reads the latest state, so it needs no fence before it (see "A wake on
            // its way"). If the bit has gone, the full second look below decides.
            let skipped = self
                .state
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |st| {
                    (st & WOKEN != 0 && st & EPOCH_MASK == tag).then_some(st | SKIPPED)
                });
            if let Ok(state) = skipped {
                self.wake_async(s, n, state);
                return;
            }
        }
        let mut state = self.second_look(s, tag);
        let mut wake_parked = state & PARKED_MASK != 0;
        if state & WOKEN != 0 {
            // A wake is on its way to every counted waiter: say that we skipped
            // ours, in a read-modify-write that still finds the bit (see "A wake on
            // its way"); if it is gone, go on with the state as it is now.
            match self
                .state
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |st| {
                    (st & WOKEN != 0).then_some(st | SKIPPED)
                }) {
                Ok(_) => wake_parked = false,
                Err(now) => {
                    state = now;
                    wake_parked = state & PARKED_MASK != 0;
                }
            }
        }
        if wake_parked {
            self.wake_parked(s, n, state);
            on_woke.parked_woken();
        }
        self.wake_async(s, n, state);
    }

    /// The notifier's second look at `state`, after a full fence, with the
    /// bookkeeping it owes on the way: a count left by an ancestor process goes (and
    /// its sleepers are woken to announce themselves again), and the run of idle
    /// notifies on a `FENCED` cell is counted or ended. Returns the state to act on.
    fn second_look(&self, s: &Sleepers, tag: u32) -> u32 {
        // Whatever the first look found, order our store before a second look with a
        // full fence: a waiter may be announcing itself right now without
        // `membarrier` (in another process, on a `FENCED` cell, or relying on an
        // announcement that this first look saw), and only the second look is sure
        // to see it (see "Who may skip the barrier" in the notes).
        fence(Ordering::SeqCst);
        let mut state = self.state.load(Ordering::SeqCst);
        if state & PARKED_MASK != 0 && state & EPOCH_MASK != tag {
            // Counted under the tag of an ancestor process: none of those waiters
            // runs here, but the thread that called `fork()` may have been one of
            // them (a predicate or a signal handler that forked during its park). The
            // count goes, and a wake of every sleeper makes such a thread re-check
            // and announce itself under this process's tag.
            let repaired = state & !(PARKED_MASK | EPOCH_MASK | WOKEN | SKIPPED);
            state = match self.state.compare_exchange(
                state,
                repaired,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => {
                    park::wake(&s.queue, &self.value, park::ALL, s.shared);
                    repaired
                }
                Err(now) => now,
            };
        }
        if state & !IDLE_MASK == FENCED {
            // Nobody parked or armed: one more such notify in a row, and after
            // enough of them back to the light path. Fails (harmlessly) if a waiter
            // announced itself since our load.
            let _ = self.state.compare_exchange(
                state,
                fenced_after_idle_notify(state),
                Ordering::SeqCst,
                Ordering::Relaxed,
            );
        } else if state & PARKED_MASK != 0 && state & IDLE_MASK != 0 {
            // The run of idle notifies ends: the waiters still park.
            state = self.state.fetch_and(!IDLE_MASK, Ordering::Relaxed) & !IDLE_MASK;
        }
        state
    }

    /// Wakes up to `n` of the parked waiters that `state` counts: by a wake tree
    /// where it helps, else by one wake that, when it is for every sleeper, first
    /// marks the wake as on its way (`WOKEN`, see "A wake on its way").
    fn wake_parked(&self, s: &Sleepers, n: u32, state: u32) {
        let count = state & PARKED_MASK;
        if n == park::ALL && !s.shared && count > RELAY_FANOUT && trees_help() {
            // A wake tree: wake a few, who wake the rest, while this thread goes on
            // taking turns beside them (see "A wake tree").
            s.relay.fetch_add(count - RELAY_FANOUT, Ordering::SeqCst);
            self.relay_wake(s, RELAY_FANOUT);
            while self.relay(s) {}
            return;
        }
        s.stamp_wake();
        // A wake of every sleeper reaches every waiter counted now that sleeps: the
        // bit says so to the notifies that follow, which then make no call (see "A
        // wake on its way"). A change since our look fails the exchange.
        let claimed = n == park::ALL
            && counts_every_sleeper(s)
            && self
                .state
                .compare_exchange(
                    state,
                    (state | WOKEN) & !SKIPPED,
                    Ordering::SeqCst,
                    Ordering::Relaxed,
                )
                .is_ok();
        let woke = park::wake(&s.queue, &self.value, n, s.shared);
        if claimed && woke < count as usize {
            // A counted waiter was not asleep yet: the bit goes, and if a notify
            // skipped its wake meanwhile, one more wake covers it.
            let before = self.state.fetch_and(!(WOKEN | SKIPPED), Ordering::SeqCst);
            if before & SKIPPED != 0 {
                park::wake(&s.queue, &self.value, park::ALL, s.shared);
            }
        }
    }

    /// Wakes the armed async waiters that `state` says there are (`n` of them, or
    /// all). A process-shared cell never arms a waker (its entries refuse async
    /// waits), so the bit there can only come from another process: its registry,
    /// with pointers into that process's memory, is never touched.
    fn wake_async(&self, s: &Sleepers, n: u32, state: u32) {
        if state & ASYNC_REGISTERED != 0 && !s.shared {
            s.registry
                .wake(&self.state, if n == 1 { 1 } else { usize::MAX });
        }
    }
}
