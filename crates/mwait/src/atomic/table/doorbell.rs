//! A parked waiter's doorbell, the word it sleeps on, and its entry in a bucket's
//! queue (see the table's module docs).

use crate::primitive::{AtomicU32, Ordering};
use crate::sys::park::{self, Parked, Queue};
use std::sync::Arc;

/// A doorbell nobody has rung.
const ARMED: u32 = 0;
/// A doorbell a notifier has taken off a queue (and rings, or has rung).
const RUNG: u32 = 1;

/// A parked waiter: the address it waits on and its doorbell.
pub(super) struct Entry {
    pub(super) addr: usize,
    pub(super) bell: Arc<Doorbell>,
}

impl Entry {
    /// A notifier takes the entry off the queue (under the lock) and marks the bell.
    pub(super) fn take(self) -> Arc<Doorbell> {
        self.bell.word.store(RUNG, Ordering::Release);
        self.bell
    }
}

/// The word one parked waiter sleeps on: [`ARMED`] until a notifier that takes its
/// entry off a queue marks it [`RUNG`] under the queue's lock (and wakes its
/// sleeper after the unlock); and the platform's per-word queue (empty but in the
/// loom model). A waiter of several words has an entry with the same doorbell in
/// each of their buckets, and a cell's notifier rings it through a waker (`any.rs`).
#[derive(Debug)]
pub(crate) struct Doorbell {
    word: AtomicU32,
    queue: Queue,
}

impl Doorbell {
    pub(crate) fn new() -> Doorbell {
        Doorbell {
            word: AtomicU32::new(ARMED),
            queue: Queue::new(),
        }
    }

    /// Wakes the bell's sleeper, after [`Entry::take`] marked it. The sleeper
    /// compares the word with `ARMED` atomically with its decision to sleep (the
    /// platform's `wait` contract), so a ring that lands before it sleeps is not
    /// lost.
    pub(super) fn ring(&self) {
        park::wake(&self.queue, &self.word, 1, false);
    }

    /// Arms a spare bell again for the park that takes it (nobody else holds it).
    pub(super) fn rearm(&self) {
        self.word.store(ARMED, Ordering::Relaxed);
    }

    /// Marks and rings the bell from outside any queue (a cell's waker).
    pub(crate) fn mark_and_ring(&self) {
        self.word.store(RUNG, Ordering::Release);
        self.ring();
    }

    /// Whether a notifier has taken this waiter off the queue.
    pub(crate) fn rung(&self) -> bool {
        self.word.load(Ordering::Acquire) != ARMED
    }

    /// Sleeps until rung, until `deadline_ns`, or spuriously.
    pub(crate) fn sleep(&self, deadline_ns: Option<u64>) -> Parked {
        park::wait(&self.queue, &self.word, ARMED, deadline_ns, false)
    }
}
