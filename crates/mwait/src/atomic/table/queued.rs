//! A parked waiter's place in its bucket's queue, held while it parks and withdrawn
//! when it ends (see the table's module docs).

use super::{summary, tag, Bucket, Doorbell, Entry, FENCED, MANY};
use crate::primitive::Ordering;
use std::sync::Arc;

/// A waiter's entry in its bucket's queue, withdrawn on drop (a panic of the
/// predicate or of the barrier included). If a notifier took the entry off the
/// queue and this waiter does not consume that wake (its re-check found the
/// predicate true, its deadline passed, or it waits on several words and another
/// one ended the wait), the drop passes a wake of one on to another waiter of the
/// address, as a futex wake would have woken one that was asleep. (A wake of all
/// that took the entry took every other entry of the address with it: the wake
/// passed on then finds nobody, or a waiter that came later, which re-checks.)
pub(crate) struct Queued<'a> {
    pub(super) bucket: &'a Bucket,
    pub(super) addr: usize,
    /// The waiter's doorbell (taken by the drop).
    pub(super) bell: Option<Arc<Doorbell>>,
    /// Whether the bell is the bucket's to keep as a spare ([`Bucket::announce_own`]).
    pub(super) own: bool,
    /// Whether the announcement found the bucket [`FENCED`] for the waiter's tag:
    /// the waiter may skip its barrier.
    pub(super) fenced: bool,
    pub(super) consumed: bool,
}

impl Queued<'_> {
    /// The doorbell this waiter sleeps on.
    pub(crate) fn bell(&self) -> &Arc<Doorbell> {
        self.bell
            .as_ref()
            .expect("the bell is taken only when the guard drops")
    }

    /// Whether the waiter may skip the waiter barrier: its announcement (3) found the
    /// bucket [`FENCED`] for its tag (see "A word that parks often" in `mod.rs`).
    pub(crate) fn fenced(&self) -> bool {
        self.fenced
    }

    /// After the waiter's barrier: marks the bucket [`FENCED`] for the waiter's tag,
    /// so that the next waiters of the tag skip theirs, if the waiter is still
    /// queued (no notifier took its entry) and every queued waiter waits on its tag.
    pub(crate) fn barrier_done(&self) {
        let t = tag(self.addr);
        if t == MANY {
            return;
        }
        let bell = self.bell();
        let mut q = self.bucket.queue.lock();
        let queued = q
            .entries
            .iter()
            .any(|e| e.addr == self.addr && Arc::ptr_eq(&e.bell, bell));
        if queued && summary(&q.entries) == t {
            q.idle = 0;
            self.bucket.announced.store(t | FENCED, Ordering::SeqCst);
        }
    }

    /// The waiter slept and a ring woke it (or a ring landed as it went to sleep):
    /// it consumes the wake.
    pub(crate) fn consume(&mut self) {
        self.consumed = true;
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        let Some(bell) = self.bell.take() else {
            return;
        };
        let forward = {
            let mut q = self.bucket.queue.lock();
            let mine = |e: &Entry| e.addr == self.addr && Arc::ptr_eq(&e.bell, &bell);
            let forward = match q.entries.iter().position(mine) {
                Some(i) => {
                    q.entries.remove(i);
                    let announced = self.bucket.settled(&q.entries);
                    self.bucket.announced.store(announced, Ordering::SeqCst);
                    false
                }
                // A notifier took the entry off: a wake this waiter does not
                // consume goes on.
                None => !self.consumed,
            };
            if self.own {
                if let Some(slot) = q.spares.iter_mut().find(|s| s.is_none()) {
                    *slot = Some(bell);
                }
            }
            forward
        };
        if forward {
            self.bucket.wake_slow(self.addr, 1);
        }
    }
}
