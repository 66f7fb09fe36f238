//! The loom model: a futex made of a mutex (the kernel's hash-bucket lock) and a
//! condvar (its sleep queue) per cell, `membarrier` as interrupts that land at the
//! light notifier's interrupt points, model time, and a hardware tier whose episodes
//! may end at any point.

use crate::sys::contract::Parked;
use crate::primitive::{AtomicU32, Ordering};
use loom::sync::atomic::fence;

// The model machine has no CPUs to tell apart and is never oversubscribed.
pub(crate) use super::plain::{
    current_cpu, fork_generation, running_threads, usable_cpus, ThreadCpus,
};

/// The model's `membarrier(PRIVATE_EXPEDITED)`.
///
/// The real call returns once every CPU that runs a thread of the process has taken
/// an interrupt, which executes a full barrier, or is running none of them (a context
/// switch is a barrier too). Only the light notifier relies on it: every other access
/// of the protocol is a `SeqCst` access or sits behind a `SeqCst` fence, which an
/// extra barrier does not change. So the model lets the interrupt land where it can
/// matter: before the light store (1), between (1) and (2), and after (2), the three
/// points `begin_light_store`, `light_fence` and `end_light_store` mark. A thread
/// inside that section is "running" for the barrier, which waits until the thread has
/// passed an interrupt point after the request (a `SeqCst` fence, then an
/// acknowledgement) or has left the section; a thread outside it has no access the
/// barrier could order, and counts as having taken the interrupt.
///
/// Each thread's mailbox is under a mutex, so that a barrier that waits blocks (two
/// waiters that spun on one mailbox could take turns for ever in the model); the
/// mutex also orders a request before or after a thread's entry into the section.
struct Cpus {
    /// How many model threads have ever entered the light section (their slots).
    used: loom::sync::Mutex<usize>,
    slots: [Cpu; loom::MAX_THREADS],
}

/// One model thread's interrupt mailbox.
struct Cpu {
    mailbox: loom::sync::Mutex<Mailbox>,
    /// Signalled when the thread acknowledges or leaves the section.
    answered: loom::sync::Condvar,
}

#[derive(Default)]
struct Mailbox {
    /// In the light section (between `begin_light_store` and `end_light_store`).
    inside: bool,
    /// Barriers asked of this thread so far.
    requested: usize,
    /// Barriers it has executed.
    acked: usize,
}

loom::lazy_static! {
    static ref CPUS: Cpus = Cpus {
        used: loom::sync::Mutex::new(0),
        slots: std::array::from_fn(|_| Cpu {
            mailbox: loom::sync::Mutex::new(Mailbox::default()),
            answered: loom::sync::Condvar::new(),
        }),
    };
}

loom::thread_local! {
    /// This model thread's slot in [`CPUS`], once it has entered the light section.
    static SLOT: core::cell::Cell<Option<usize>> = core::cell::Cell::new(None);
}

/// This thread's slot, taken on first use.
fn my_slot() -> usize {
    SLOT.with(|s| match s.get() {
        Some(i) => i,
        None => {
            let mut used = CPUS.used.lock().unwrap();
            let i = *used;
            *used += 1;
            s.set(Some(i));
            i
        }
    })
}

/// An interrupt point of this thread's slot `i`, `inside` the section from here on
/// or not: executes the barriers asked of the thread since its last one.
fn interrupt_point(i: usize, inside: bool) {
    let cpu = &CPUS.slots[i];
    let mut m = cpu.mailbox.lock().unwrap();
    if m.requested > m.acked {
        fence(Ordering::SeqCst);
        m.acked = m.requested;
    }
    m.inside = inside;
    cpu.answered.notify_all();
}

/// The light notify always: the model checks the protocol as it runs on Linux with
/// `membarrier` (a process-shared cell still fences, by its `SHARED_SLOW` bit).
/// Enters the section in which the model's barrier interrupts this thread.
pub(crate) fn begin_light_store(_word: &AtomicU32) -> bool {
    interrupt_point(my_slot(), true);
    true
}

/// As [`begin_light_store`], for a notifier that only reads.
pub(crate) fn begin_light_check() -> bool {
    interrupt_point(my_slot(), true);
    true
}

/// Between the light store (1) and load (2): an interrupt point.
pub(crate) fn light_fence() {
    interrupt_point(my_slot(), true);
}

/// After the light load (2): leaves the section; the barrier no longer waits for us.
pub(crate) fn end_light_store() {
    interrupt_point(my_slot(), false);
}

/// The model's waiter barrier: `membarrier`, or what the process falls back to once
/// `membarrier` is lost (`FALLBACK`), the two the same interrupts.
pub(crate) fn waiter_barrier() {
    match FALLBACK.with(std::cell::Cell::get) {
        FALLBACK_FENCE => fence(Ordering::SeqCst),
        _ => interrupt_every_cpu(),
    }
}

// The barrier the model's waiters run: `FALLBACK_NONE` (`membarrier`), or after a
// lost `membarrier`, the TLB-shootdown barrier (the same interrupts, 1) or a mere
// fence (`FALLBACK_FENCE`, which a light notify in flight at the switch defeats). Set
// by the model tests of this file only; outside the model's threads, so not a
// modelled access. One per OS thread: loom runs a model's threads on the thread that
// checks it, so a test's setting reaches its own models and not those that the
// harness runs beside it on other threads (the other models of the crate's loom
// build, which must see `membarrier`).
std::thread_local! {
    static FALLBACK: std::cell::Cell<u8> = const { std::cell::Cell::new(FALLBACK_NONE) };
}
const FALLBACK_NONE: u8 = 0;
/// `FALLBACK_SHOOTDOWN` (1), which only the tests set, takes the default arm.
const FALLBACK_FENCE: u8 = 2;

// Whether the model's wake of every sleeper builds a wake tree (`protocol.rs`, "A
// wake tree"): off, as on a machine of at most three usable CPUs, so that the models
// take the marked single wake that such a machine takes; the tree's own model turns
// it on. One per OS thread, as `FALLBACK` above.
std::thread_local! {
    static WAKE_TREES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether the model's wakes of every sleeper build a tree (see `WAKE_TREES`).
pub(crate) fn model_wake_trees() -> bool {
    WAKE_TREES.with(std::cell::Cell::get)
}

/// Turns the model's wake trees on or off for the models this thread checks.
#[cfg(test)]
pub(crate) fn set_model_wake_trees(on: bool) {
    WAKE_TREES.with(|t| t.set(on));
}

/// The model's `membarrier` (and shootdown): a full barrier here, then a request to
/// every other thread in the light section and a wait until it has executed the
/// request or left.
fn interrupt_every_cpu() {
    fence(Ordering::SeqCst);
    let me = SLOT.with(|s| s.get());
    let used = *CPUS.used.lock().unwrap();
    for (i, cpu) in CPUS.slots.iter().enumerate().take(used) {
        if Some(i) == me {
            continue;
        }
        let mut m = cpu.mailbox.lock().unwrap();
        if m.inside {
            m.requested += 1;
            let want = m.requested;
            while m.inside && m.acked < want {
                m = cpu.answered.wait(m).unwrap();
            }
        }
    }
    fence(Ordering::SeqCst);
}

/// Nothing to settle: the model's barrier needs no registration.
pub(crate) fn prepare() {}

/// The sleep queue of one cell, under one mutex (the kernel's bucket lock): the
/// threads asleep in it, each by the number it drew when it went to sleep, oldest
/// first. A wake of `n` marks up to `n` of the threads asleep *at that moment* as
/// woken, the oldest first, and only a marked thread returns: as with `FUTEX_WAKE`,
/// a thread that goes to sleep after a wake cannot take that wake from one that was
/// asleep before it, and `wake(1)` wakes exactly one sleeper.
/// Timed waits never sleep in the model (a timeout may fire at any moment, so
/// returning at once is one of the behaviours a real timed wait has).
#[derive(Debug, Default)]
pub(crate) struct Queue {
    lock: loom::sync::Mutex<Sleep>,
    cv: loom::sync::Condvar,
}

#[derive(Debug, Default)]
struct Sleep {
    /// The next sleeper's number.
    next: u64,
    /// The numbers of the threads asleep and not yet woken, oldest first.
    asleep: Vec<u64>,
    /// The numbers of the threads woken and not yet returned.
    woken_unreturned: Vec<u64>,
    /// Sleepers woken so far, for the models' checks.
    woken: u32,
}

impl Queue {
    pub(crate) fn new() -> Queue {
        Queue::default()
    }

    /// How many sleepers wakes have woken so far (for the models of `tests/`).
    #[cfg(test)]
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
    let me = g.next;
    g.next += 1;
    g.asleep.push(me);
    while !g.woken_unreturned.contains(&me) {
        g = queue.cv.wait(g).unwrap();
    }
    g.woken_unreturned.retain(|&t| t != me);
    g.woken += 1;
    Parked::Woken
}

/// Wakes up to `n` of the threads asleep in the queue now (`u32::MAX`: all), the
/// oldest first; returns how many.
pub(crate) fn wake(queue: &Queue, _word: &AtomicU32, n: u32, _shared: bool) -> usize {
    let mut g = queue.lock.lock().unwrap();
    let k = (n as usize).min(g.asleep.len());
    let woken: Vec<u64> = g.asleep.drain(..k).collect();
    g.woken_unreturned.extend(woken);
    if k > 0 {
        // Every sleeper looks; those not marked sleep again.
        queue.cv.notify_all();
    }
    k
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

#[cfg(test)]
mod tests {
    //! The fallback once `membarrier` is lost: run with the crate's loom build,
    //! `cargo test -p mwait --release --lib -- sys::os::loom::tests`.
    use super::*;
    use std::panic::{catch_unwind, AssertUnwindSafe};

    /// The shootdown barrier: interrupts, as `membarrier`'s.
    const FALLBACK_SHOOTDOWN: u8 = 1;

    /// One model: a light notify in flight (its process still in the light mode
    /// when it read it) against a future that arms after the switch, under the
    /// fallback barrier `fallback`, on a cell whose `FENCED` bit a run of idle
    /// notifies has cleared (so that the future runs the barrier). Whether every
    /// execution ended.
    fn future_against_light_store(fallback: u8) -> bool {
        FALLBACK.with(|f| f.set(fallback));
        let r = catch_unwind(AssertUnwindSafe(|| {
            let mut b = loom::model::Builder::new();
            b.preemption_bound = Some(2);
            b.check(|| {
                let cell = crate::tests::Start::Cleared.cell(0);
                let c = cell.clone();
                let notifier = loom::thread::spawn(move || c.store(1));
                let v = loom::future::block_on(cell.wait_until_async(|v| v == 1));
                assert_eq!(v, 1);
                notifier.join().unwrap();
            });
        }));
        FALLBACK.with(|f| f.set(FALLBACK_NONE));
        r.is_ok()
    }

    /// A future that arms after `membarrier` is lost, with only a fence for a
    /// barrier, can miss a light store that was under way at the switch and wait
    /// for ever (loom reports the deadlock); with the shootdown barrier, which
    /// interrupts that notifier as `membarrier` did, it never does.
    #[test]
    fn a_future_armed_after_the_switch_needs_the_shootdown_barrier() {
        assert!(
            !future_against_light_store(FALLBACK_FENCE),
            "a fence alone was expected to lose the wake-up"
        );
        assert!(future_against_light_store(FALLBACK_SHOOTDOWN));
    }
}
