//! The park tier on every target without a futex-like system call: a small global
//! table of parked threads keyed by address, on std's `park` / `unpark`.
//!
//! The table plays the kernel's part: it is split into [`BUCKETS`] queues, each under
//! its own lock, and a word's address picks its queue. A waiter takes the lock,
//! compares the word with `expected` and enqueues itself *under that lock*; a waker
//! takes the same lock to dequeue. A store made before a wake therefore either
//! happened before the waiter's comparison (which fails, and the waiter does not
//! sleep) or the waiter is already queued when the waker looks (and is woken): no
//! wake-up is lost, exactly as with a futex's bucket lock. Each queued waiter owns a
//! `notified` flag that only a waker sets, under the lock, so a spurious return of
//! `park` (which std allows) or a stray `unpark` from elsewhere only makes it look
//! at the flag and sleep again.
//!
//! What wakes a waiter: a wake on the word, its deadline (`park_timeout`), and for a
//! process-shared cell the end of a [`SHARED_POLL_NS`] slice: the table lives in this
//! process, so a notifier in another process cannot reach it, and a shared cell's
//! waiter re-checks the value at least that often (it still sleeps in between).
//!
//! The table is global rather than kept in each cell's [`Queue`]: a process-shared
//! cell lives in memory that several processes map, where a std `Mutex` (a pointer to
//! a lazily allocated OS lock on some of these targets) and thread handles would mean
//! nothing to the other processes. The word itself is the only thing the table reads
//! from the cell.
//!
//! Waiters order with a `SeqCst` fence and notifiers never take the light path: there
//! is no process-wide barrier to lean on.

use crate::primitive::AtomicU32;
use crate::sys::contract::Parked;
use crate::sys::counters::{self, Counter};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::{self, Thread};
use std::time::Duration;

// No process-wide barrier (notifiers never take the light path, waiters fence),
// nothing the ladder reads about CPUs or load, and nothing to keep beside the word:
// the global table keys waiters by address (see the module docs).
pub(crate) use super::plain::{
    begin_light_check, begin_light_store, current_cpu, end_light_store, fork_generation,
    light_fence, prepare, running_threads, usable_cpus, waiter_barrier, Queue, ThreadCpus,
};

/// How many queues the table has; a power of two. Waiters on different words rarely
/// share one, and sharing one costs only a longer scan under its lock.
const BUCKETS: usize = 64;

/// The longest a waiter on a process-shared cell sleeps before it re-checks (see the
/// module docs).
pub(crate) const SHARED_POLL_NS: u64 = 1_000_000;

/// One thread's presence in the table: its handle and whether a waker chose it.
struct Node {
    thread: Thread,
    /// Set by a waker (under the bucket lock, `Release`) when it dequeues this node;
    /// cleared by the owning thread alone, before it enqueues itself.
    notified: AtomicBool,
}

impl Node {
    fn new() -> Arc<Node> {
        Arc::new(Node {
            thread: thread::current(),
            notified: AtomicBool::new(false),
        })
    }
}

/// A queued waiter: the address it sleeps on and its node.
struct Entry {
    addr: usize,
    node: Arc<Node>,
}

static TABLE: [Mutex<Vec<Entry>>; BUCKETS] = [const { Mutex::new(Vec::new()) }; BUCKETS];

thread_local! {
    /// This thread's node, made once and reused by every wait of the thread.
    static NODE: Arc<Node> = Node::new();
}

/// The queue of `addr`, locked. Nothing panics while a queue is locked, but a lock
/// poisoned anyway holds a consistent queue, so poisoning is ignored.
fn lock(addr: usize) -> MutexGuard<'static, Vec<Entry>> {
    // Fibonacci hashing of the word index: neighbouring words land far apart.
    let hash = ((addr >> 2) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let i = (hash >> (64 - BUCKETS.trailing_zeros())) as usize;
    TABLE[i].lock().unwrap_or_else(PoisonError::into_inner)
}

/// Sleeps while `*word == expected`, until woken or `deadline_ns` (absolute, on the
/// crate's monotonic clock, [`crate::sys::clock::now_ns`]).
pub(crate) fn wait(
    _queue: &Queue,
    word: &AtomicU32,
    expected: u32,
    deadline_ns: Option<u64>,
    shared: bool,
) -> Parked {
    let addr = word.as_ptr() as usize;
    // A thread-local destroyed already (a wait from another thread-local's destructor)
    // gets a node of its own.
    let node = NODE.try_with(Arc::clone).unwrap_or_else(|_| Node::new());
    node.notified.store(false, Ordering::Relaxed);
    {
        let mut queue = lock(addr);
        if word.load(Ordering::SeqCst) != expected {
            return Parked::Changed;
        }
        queue.push(Entry {
            addr,
            node: Arc::clone(&node),
        });
    }
    loop {
        if node.notified.load(Ordering::Acquire) {
            return Parked::Woken;
        }
        let now = crate::sys::clock::now_ns();
        let mut slice = match deadline_ns {
            Some(d) if now >= d => break,
            Some(d) => Some(d - now),
            None => None,
        };
        if shared {
            slice = Some(slice.map_or(SHARED_POLL_NS, |s| s.min(SHARED_POLL_NS)));
        }
        match slice {
            Some(ns) => thread::park_timeout(Duration::from_nanos(ns)),
            None => thread::park(),
        }
        if shared {
            break;
        }
    }
    // The deadline or a poll slice ended: leave the queue, unless a waker has just
    // taken us out of it (then it has set `notified`, under the lock we now hold).
    {
        let mut queue = lock(addr);
        if let Some(i) = queue.iter().position(|e| Arc::ptr_eq(&e.node, &node)) {
            queue.swap_remove(i);
        }
    }
    if node.notified.load(Ordering::Acquire) {
        return Parked::Woken;
    }
    match deadline_ns {
        Some(d) if crate::sys::clock::now_ns() >= d => Parked::TimedOut,
        _ => Parked::Woken,
    }
}

/// Wakes up to `n` threads parked on `word`, the longest-waiting first; returns how
/// many it woke.
pub(crate) fn wake(_queue: &Queue, word: &AtomicU32, n: u32, _shared: bool) -> usize {
    counters::count(Counter::FutexWake);
    let addr = word.as_ptr() as usize;
    let limit = usize::try_from(n).unwrap_or(usize::MAX);
    let mut woken: Vec<Arc<Node>> = Vec::new();
    {
        let mut queue = lock(addr);
        let mut i = 0;
        while i < queue.len() && woken.len() < limit {
            if queue[i].addr == addr {
                let entry = queue.remove(i);
                entry.node.notified.store(true, Ordering::Release);
                woken.push(entry.node);
            } else {
                i += 1;
            }
        }
    }
    // Unpark outside the lock, so that a woken thread does not block on it at once.
    for node in &woken {
        node.thread.unpark();
    }
    woken.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::park::ALL;

    #[test]
    fn notifiers_never_take_the_light_path() {
        waiter_barrier();
        assert!(!begin_light_store(&AtomicU32::new(0)));
    }

    #[test]
    fn a_changed_value_returns_at_once_and_nobody_is_woken() {
        let word = AtomicU32::new(1);
        assert_eq!(wait(&Queue, &word, 0, None, false), Parked::Changed);
        assert_eq!(wake(&Queue, &word, ALL, false), 0);
    }

    #[test]
    fn a_passed_deadline_times_out() {
        let word = AtomicU32::new(0);
        let deadline = crate::sys::clock::now_ns() + 2_000_000;
        assert_eq!(
            wait(&Queue, &word, 0, Some(deadline), false),
            Parked::TimedOut
        );
        assert!(crate::sys::clock::now_ns() >= deadline);
        // The timed-out waiter left the queue.
        assert_eq!(wake(&Queue, &word, ALL, false), 0);
    }

    #[test]
    fn a_shared_wait_returns_after_a_poll_slice() {
        let word = AtomicU32::new(0);
        assert_eq!(wait(&Queue, &word, 0, None, true), Parked::Woken);
        assert_eq!(wake(&Queue, &word, ALL, false), 0);
    }

    /// Parks `k` threads on `word` and returns once all are queued.
    fn park_threads(word: &'static AtomicU32, k: usize) -> Vec<thread::JoinHandle<()>> {
        let handles = (0..k)
            .map(|_| {
                thread::spawn(move || {
                    while word.load(Ordering::SeqCst) == 0 {
                        wait(&Queue, word, 0, None, false);
                    }
                })
            })
            .collect();
        let addr = word.as_ptr() as usize;
        while lock(addr).iter().filter(|e| e.addr == addr).count() < k {
            thread::yield_now();
        }
        handles
    }

    #[test]
    fn wake_one_wakes_exactly_one_and_only_on_its_word() {
        static WORD: AtomicU32 = AtomicU32::new(0);
        static OTHER: AtomicU32 = AtomicU32::new(0);
        let handles = park_threads(&WORD, 3);
        assert_eq!(wake(&Queue, &OTHER, ALL, false), 0);
        WORD.store(1, Ordering::SeqCst);
        assert_eq!(wake(&Queue, &WORD, 1, false), 1);
        // Only a waker takes a waiter without a deadline out of the queue: the other
        // two are still in it.
        assert_eq!(wake(&Queue, &WORD, ALL, false), 2);
        for h in handles {
            h.join().unwrap();
        }
    }

    /// A ping-pong that hangs if a wake-up is ever lost between a waiter's check and
    /// its sleep.
    #[test]
    fn no_lost_wake_ups_in_a_ping_pong() {
        // Miri interprets each round hundreds of times slower: fewer rounds there.
        const ROUNDS: u32 = if cfg!(miri) { 200 } else { 20_000 };
        static WORD: AtomicU32 = AtomicU32::new(0);
        /// Waits for the partner's move before each of ours (`first`: 1, 3, ... or
        /// 2, 4, ...), then makes it and wakes the partner.
        fn play(first: u32) {
            for i in 0..ROUNDS {
                let mine = first + 2 * i;
                loop {
                    let v = WORD.load(Ordering::SeqCst);
                    if v == mine - 1 {
                        break;
                    }
                    wait(&Queue, &WORD, v, None, false);
                }
                WORD.store(mine, Ordering::SeqCst);
                wake(&Queue, &WORD, ALL, false);
            }
        }
        let partner = thread::spawn(|| play(1));
        play(2);
        partner.join().unwrap();
        assert_eq!(WORD.load(Ordering::SeqCst), 2 * ROUNDS);
    }
}
