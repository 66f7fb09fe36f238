//! Every target without a futex: the park tier degrades to a `sched_yield` loop (the
//! waiter never sleeps, and the crate docs say so), notifiers always fence.

use super::contract::Parked;
use crate::primitive::AtomicU32;

pub(crate) use super::plain::{
    current_cpu, light_notify, prepare, running_threads, usable_cpus, waiter_barrier, ThreadCpus,
};

/// No futex here: the park tier yields instead of sleeping.
pub(crate) const HAS_FUTEX: bool = false;

/// Nothing to keep: nobody sleeps.
#[derive(Debug, Default)]
pub(crate) struct Queue;

impl Queue {
    pub(crate) const fn new() -> Queue {
        Queue
    }
}

/// Yields once and lets the caller re-check.
pub(crate) fn wait(
    _queue: &Queue,
    _word: &AtomicU32,
    _expected: u32,
    deadline_ns: Option<u64>,
    _shared: bool,
) -> Parked {
    std::thread::yield_now();
    match deadline_ns {
        Some(d) if super::clock::now_ns() >= d => Parked::TimedOut,
        _ => Parked::Woken,
    }
}

/// Nobody sleeps, so nobody needs waking.
pub(crate) fn wake(_queue: &Queue, _word: &AtomicU32, _n: u32, _shared: bool) -> usize {
    super::counters::count(super::counters::Counter::FutexWake);
    0
}
