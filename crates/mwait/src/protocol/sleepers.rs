//! [`Sleepers`]: what a cell keeps for its sleepers off the monitor line.

use crate::primitive::{const_fn_unless_loom, AtomicU32};
use crate::registry::Registry;
use crate::sys::park::Queue;

/// Where a cell's sleepers wait besides the monitor line: the platform's sleep queue,
/// the async registry, and whether the cell is shared between processes. Written
/// only by waiters (and the wake stamp by a notifier that wakes); kept off the
/// monitor line.
///
/// In this order: what every park reads first (the two flags and `relay`, on the
/// line of the cell's counters, which the waiter writes), the wake stamp last, on
/// the cell's last line with the registry's tail. A notifier writes the stamp right
/// before each `futex_wake`, so that line is in the notifier's cache when the woken
/// waiter runs: only a park that measures its wake-up (one in
/// `estimate::WAKE_SAMPLE_EVERY`) or an async wait reads it, where flags beside the
/// stamp would have every wake of a waiter on another CPU fetch it from there.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Sleepers {
    pub(super) queue: Queue,
    pub(super) shared: bool,
    /// A parker's cell (`WaitCell::new_parker`): every notify follows a `SeqCst`
    /// write or fence (its light stores go to the fenced slow path: `SHARED_SLOW`),
    /// so its waiters need no `membarrier`; and its waits spin only on evidence
    /// (`ladder::Learning::evidence_allows_spin`).
    pub(super) parker: bool,
    /// Sleepers that a wake of every sleeper left for the woken to wake (see "A wake
    /// tree" in `protocol.rs`): added to by a notifier, taken from by woken waiters.
    pub(super) relay: AtomicU32,
    pub(super) registry: Registry,
    /// The notifier's clock reading right before its last `futex_wake` (0: none yet):
    /// written on the slow path only, read by a woken waiter to measure its wake-up
    /// latency (`ladder::estimate`). A statistic: relaxed std atomic, not modelled.
    pub(super) wake_stamp: std::sync::atomic::AtomicU64,
}

impl Sleepers {
    const_fn_unless_loom! {
        pub(crate) fn new(shared: bool, parker: bool) -> Sleepers {
            Sleepers {
                queue: Queue::new(),
                shared,
                parker,
                relay: AtomicU32::new(0),
                registry: Registry::new(),
                wake_stamp: std::sync::atomic::AtomicU64::new(0),
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

    /// Records the clock right before a `futex_wake` of this cell's sleepers (the
    /// slow path only: it makes a system call anyway).
    #[inline]
    pub(super) fn stamp_wake(&self) {
        self.wake_stamp.store(
            crate::sys::clock::now_ns(),
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// The addresses of what a park reads (`shared`, `parker`, `relay`) and of the
    /// wake stamp, for the layout test of the cell.
    #[cfg(test)]
    pub(crate) fn addresses(&self) -> ([(&'static str, usize); 3], usize) {
        (
            [
                ("shared", std::ptr::from_ref(&self.shared) as usize),
                ("parker", std::ptr::from_ref(&self.parker) as usize),
                ("relay", std::ptr::from_ref(&self.relay) as usize),
            ],
            std::ptr::from_ref(&self.wake_stamp) as usize,
        )
    }

    /// The platform's sleep queue (the loom models count its wakes).
    #[cfg(all(test, mwait_loom))]
    pub(crate) fn queue(&self) -> &Queue {
        &self.queue
    }
}
