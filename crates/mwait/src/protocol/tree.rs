//! A wake tree (see "A wake tree" in `protocol.rs`): a wake of every sleeper that
//! wakes a few, each of whom wakes the next few, and whether this machine has the
//! CPUs for it.

use super::sleepers::Sleepers;
use super::MonitorLine;
use crate::primitive::{Ordering, RELAY_FANOUT};
use crate::sys::park;

impl MonitorLine {
    /// A turn in a wake tree (see "A wake tree"), a woken waiter's or the notifier's:
    /// takes up to [`RELAY_FANOUT`] of the sleepers left to wake and wakes them, or
    /// every sleeper if it takes the last ones. Returns whether some may be left for
    /// another turn.
    #[inline(always)]
    pub(super) fn relay(&self, s: &Sleepers) -> bool {
        let left = s.relay.load(Ordering::Relaxed);
        left > 0 && self.relay_from(s, left)
    }

    /// [`relay`](Self::relay) once its load found `left` sleepers to wake.
    #[cold]
    #[inline(never)]
    fn relay_from(&self, s: &Sleepers, mut left: u32) -> bool {
        while left > 0 {
            let take = left.min(RELAY_FANOUT);
            match s.relay.compare_exchange_weak(
                left,
                left - take,
                Ordering::SeqCst,
                Ordering::Relaxed,
            ) {
                Ok(_) if left == take => {
                    park::wake(&s.queue, &self.value, park::ALL, s.shared);
                    return false;
                }
                Ok(_) => {
                    self.relay_wake(s, take);
                    return true;
                }
                Err(now) => left = now,
            }
        }
        false
    }

    /// Wakes `k` sleepers of a wake tree; if fewer were asleep, nobody may be left to
    /// go on with the tree: the sleepers left to wake are taken, and every sleeper is
    /// woken.
    pub(super) fn relay_wake(&self, s: &Sleepers, k: u32) {
        s.stamp_wake();
        if park::wake(&s.queue, &self.value, k, s.shared) < k as usize {
            s.relay.swap(0, Ordering::SeqCst);
            park::wake(&s.queue, &self.value, park::ALL, s.shared);
        }
    }
}

/// A waiter that parks beside [`RELAY_FANOUT`] others: a wake of every sleeper here
/// may now ask whether a tree helps, and the answer's one-time reading
/// ([`trees_help`]) is made on this thread, on its way to sleep, not on the
/// notifier's wake.
#[cold]
#[inline(never)]
pub(super) fn ask_whether_trees_help() {
    let _ = trees_help();
}

/// Whether a wake tree can shorten a wake of every sleeper here: its turns run at
/// once only on CPUs of their own, the notifier's and one per sleeper it wakes at
/// least. With fewer (a 2-CPU machine), the woken wait for a CPU anyway and each
/// turn's system call only adds to the last one's wait (the measurement is in
/// `docs/design-notes.md`). The count is read once per process, by the first waiter
/// that parks beside [`RELAY_FANOUT`] others (`MonitorLine::park`).
/// The loom model takes the single marked wake unless a model asks for trees
/// (`sys::wake_trees`), so that both paths are checked.
#[inline]
pub(super) fn trees_help() -> bool {
    crate::sys::wake_trees(|| crate::policy::usable_cpus() > RELAY_FANOUT as usize + 1)
}
