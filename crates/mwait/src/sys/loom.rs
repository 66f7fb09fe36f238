//! The loom model: a futex made of a mutex (the kernel's hash-bucket lock) and a
//! condvar (its sleep queue) per cell, the symmetric `SeqCst` barrier (loom cannot
//! model `membarrier`), model time, and a hardware tier whose episodes may end at any
//! point.

use super::contract::Parked;
use crate::primitive::{AtomicU32, Ordering};

// Loom cannot model `membarrier`: notifiers never take the light path, and the
// model machine has no CPUs to tell apart and is never oversubscribed.
pub(crate) use super::plain::{
    begin_light_store, current_cpu, prepare, running_threads, usable_cpus, waiter_barrier,
    ThreadCpus,
};

/// The sleep queue of one cell: how many threads sleep in it, and the wake-ups
/// granted to them and not yet taken, under one mutex (the kernel's bucket lock).
/// A wake of `n` grants `min(n, sleepers - granted)` tickets; a sleeper returns only
/// with a ticket, so `wake(1)` wakes exactly one sleeper, as `FUTEX_WAKE` does.
/// Timed waits never sleep in the model (a timeout may fire at any moment, so
/// returning at once is one of the behaviours a real timed wait has).
#[derive(Debug, Default)]
pub(crate) struct Queue {
    lock: loom::sync::Mutex<Sleep>,
    cv: loom::sync::Condvar,
}

#[derive(Debug, Default)]
struct Sleep {
    /// Threads inside [`wait`]'s sleep.
    sleepers: u32,
    /// Wake-ups granted and not yet taken by a sleeper.
    tickets: u32,
    /// Sleepers woken so far (tickets taken), for the models' checks.
    woken: u32,
}

impl Queue {
    pub(crate) fn new() -> Queue {
        Queue::default()
    }

    /// How many sleepers wakes have woken so far.
    pub(crate) fn woken(&self) -> u32 {
        self.lock.lock().unwrap().woken
    }
}

/// Compares under the queue's lock, then sleeps until it takes a ticket.
pub(crate) fn wait(
    queue: &Queue,
    word: &AtomicU32,
    expected: u32,
    deadline_ns: Option<u64>,
    _shared: bool,
) -> Parked {
    let mut g = queue.lock.lock().unwrap();
    if word.load(Ordering::SeqCst) != expected {
        return Parked::Changed;
    }
    if deadline_ns.is_some() {
        return Parked::TimedOut;
    }
    g.sleepers += 1;
    while g.tickets == 0 {
        g = queue.cv.wait(g).unwrap();
    }
    g.tickets -= 1;
    g.sleepers -= 1;
    g.woken += 1;
    Parked::Woken
}

/// Wakes up to `n` sleepers of the queue (`u32::MAX`: all); returns how many.
pub(crate) fn wake(queue: &Queue, _word: &AtomicU32, n: u32, _shared: bool) -> usize {
    let mut g = queue.lock.lock().unwrap();
    let grant = n.min(g.sleepers - g.tickets);
    g.tickets += grant;
    if grant > 0 {
        // Every sleeper looks; those without a ticket sleep again.
        queue.cv.notify_all();
    }
    grant as usize
}

/// Model time: every reading advances this thread's clock by [`LOOM_TICK_NS`], so spin
/// and hardware budgets run out after a reading or two and the model stays small,
/// while the ladder's deadline logic still runs.
pub(crate) fn now_ns() -> u64 {
    loom::thread_local! {
        static NOW: core::cell::Cell<u64> = core::cell::Cell::new(1_000_000_000);
    }
    NOW.with(|c| {
        let t = c.get() + LOOM_TICK_NS;
        c.set(t);
        t
    })
}

/// How far one reading of the model clock advances it.
pub(crate) const LOOM_TICK_NS: u64 = 1_000_000;

/// Loom's stand-in for every hardware tier: an episode is a yield that returns, i.e.
/// a wait that may end spuriously at any point.
#[derive(Copy, Clone, Debug)]
pub(crate) struct ModelHardware;

impl ModelHardware {
    /// One episode: give the other model threads a turn.
    pub(crate) fn episode(self) {
        loom::thread::yield_now();
    }
}

/// The model's hardware tier, whichever backend asks.
pub(crate) fn model_hardware() -> Option<ModelHardware> {
    Some(ModelHardware)
}
