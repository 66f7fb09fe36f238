//! [`Sleepers`]: what a cell keeps for its sleepers off the monitor line.

use crate::primitive::{const_fn_unless_loom, AtomicU32};
use crate::registry::Registry;
use crate::sys::park::Queue;

/// Where a cell's sleepers wait besides the monitor line: the platform's sleep queue,
/// the async registry, and whether the cell is shared between processes. Written
/// only by waiters; kept off the monitor line.
#[derive(Debug)]
pub(crate) struct Sleepers {
    pub(super) queue: Queue,
    pub(super) registry: Registry,
    pub(super) shared: bool,
    /// A parker's cell (`WaitCell::new_parker`): every notify follows a `SeqCst`
    /// write or fence (its light stores go to the fenced slow path: `SHARED_SLOW`),
    /// so its waiters need no `membarrier`; and its waits spin only on evidence
    /// (`ladder::Learning::evidence_allows_spin`).
    pub(super) parker: bool,
    /// The notifier's clock reading right before its last `futex_wake` (0: none yet):
    /// written on the slow path only, read by a woken waiter to measure its wake-up
    /// latency (`ladder::estimate`). A statistic: relaxed std atomic, not modelled.
    pub(super) wake_stamp: std::sync::atomic::AtomicU64,
    /// Sleepers that a wake of every sleeper left for the woken to wake (see "A wake
    /// tree" in `protocol.rs`): added to by a notifier, taken from by woken waiters.
    pub(super) relay: AtomicU32,
}

impl Sleepers {
    const_fn_unless_loom! {
        pub(crate) fn new(shared: bool, parker: bool) -> Sleepers {
            Sleepers {
                queue: Queue::new(),
                registry: Registry::new(),
                shared,
                parker,
                wake_stamp: std::sync::atomic::AtomicU64::new(0),
                relay: AtomicU32::new(0),
            }
        }
    }

    /// Whether the cell lives in memory shared between processes.
    #[inline]
    pub(crate) fn shared(&self) -> bool {
        self.shared
    }

    /// Whether this is a parker's cell (see the field).
    #[inline]
    pub(crate) fn parker(&self) -> bool {
        self.parker
    }

    /// The async registry.
    #[inline]
    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The clock reading of the last `futex_wake` on this cell (0: none yet).
    #[inline]
    pub(crate) fn wake_stamp(&self) -> u64 {
        self.wake_stamp.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The platform's sleep queue (the loom models count its wakes).
    #[cfg(all(test, mwait_loom))]
    pub(crate) fn queue(&self) -> &Queue {
        &self.queue
    }
}
