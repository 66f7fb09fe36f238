//! [`Sleepers`]: what a cell keeps for its sleepers off the monitor line.

use crate::primitive::{const_fn_unless_loom, AtomicU32};
use crate::registry::Registry;
use crate::sys::park::Queue;

/// Where a cell's sleepers wait besides the monitor line: the platform's sleep queue,
/// the async registry, and whether the cell is shared between processes. Written
/// only by waiters (and the wake stamp by a notifier that wakes); kept off the
/// monitor line.
///
/// In this order: what every park reads first (the flags and `relay`, on the line
/// of the cell's counters, which the waiter writes and a notifier that wakes reads),
/// the wake stamp last, on the cell's last line with the registry's tail. A notifier
/// writes the stamp right before its `futex_wake` only while a parked waiter
/// measures its wake-up (`measuring`: the few parks `ladder/estimate.rs` names), so
/// that its other wakes read no clock (a clock read after a long sleep misses on the
/// clock's code and data); only such a park reads the stamp, where flags beside it
/// would have every wake of a waiter on another CPU fetch that line from there.
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
    /// Whether a parked waiter measures its wake-up latency: set by such a waiter
    /// before it announces itself (so that a notifier that counts it reads the flag
    /// set), cleared once it has read the stamp. A statistic: relaxed std atomic, not
    /// modelled; a wake that a cleared flag leaves unstamped only loses a sample.
    measuring: std::sync::atomic::AtomicBool,
    /// Sleepers that a wake of every sleeper left for the woken to wake (see "A wake
    /// tree" in `protocol.rs`): added to by a notifier, taken from by woken waiters.
    pub(super) relay: AtomicU32,
    pub(super) registry: Registry,
    /// The notifier's clock reading right before its last `futex_wake` while a
    /// waiter measured (0: none yet): written on the slow path only (and by the
    /// ladder's tests, as a notifier would), read by a woken waiter to measure its
    /// wake-up latency (`ladder::estimate`). A statistic: relaxed std atomic, not
    /// modelled.
    pub(crate) wake_stamp: std::sync::atomic::AtomicU64,
}

impl Sleepers {
    const_fn_unless_loom! {
        pub(crate) fn new(shared: bool, parker: bool) -> Sleepers {
            Sleepers {
                queue: Queue::new(),
                shared,
                parker,
                measuring: std::sync::atomic::AtomicBool::new(false),
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

    /// Whether every notifier of the cell fences (its light stores go to the fenced
    /// slow path by `SHARED_SLOW`): a shared cell's or a parker's, whose waiters run
    /// no barrier and whose idle state is `SHARED_SLOW` alone.
    #[inline(always)]
    pub(super) fn notifiers_fence(&self) -> bool {
        self.parker || self.shared
    }

    /// The async registry.
    #[inline]
    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Says that a waiter about to park measures its wake-up (`true`: before its
    /// announcement), or that it has read the stamp (`false`).
    #[inline]
    pub(crate) fn measure_wake(&self, on: bool) {
        self.measuring
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// The clock reading of the last stamped `futex_wake` on this cell (0: none
    /// yet).
    #[inline]
    pub(crate) fn wake_stamp(&self) -> u64 {
        self.wake_stamp.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Records the clock right before a `futex_wake` of this cell's sleepers, while
    /// a parked waiter measures its wake-up (the slow path only: it makes a system
    /// call anyway).
    #[inline]
    pub(super) fn stamp_wake(&self) {
        if self.measuring.load(std::sync::atomic::Ordering::Relaxed) {
            self.wake_stamp.store(
                crate::sys::clock::now_ns(),
                std::sync::atomic::Ordering::Relaxed,
            );
        }
    }

    /// The addresses of what a park reads (`shared`, `parker`, `relay`,
    /// `measuring`) and of the wake stamp, for the layout test of the cell.
    #[cfg(test)]
    pub(crate) fn addresses(&self) -> ([(&'static str, usize); 4], usize) {
        (
            [
                ("shared", std::ptr::from_ref(&self.shared) as usize),
                ("parker", std::ptr::from_ref(&self.parker) as usize),
                ("relay", std::ptr::from_ref(&self.relay) as usize),
                ("measuring", std::ptr::from_ref(&self.measuring) as usize),
            ],
            std::ptr::from_ref(&self.wake_stamp) as usize,
        )
    }

    crate::primitive::model_tests! {
        /// The platform's sleep queue (the loom models count its wakes).
        pub(crate) fn queue(&self) -> &Queue {
            &self.queue
        }
    }
}
