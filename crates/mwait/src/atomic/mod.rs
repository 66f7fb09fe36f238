//! Waiting on any atomic word: `AtomicU32` and `AtomicU64`, wherever they live (a
//! ring's slots, a lock word inside a struct), through a hashed table of waiters
//! instead of a 256-byte [`WaitCell`](crate::WaitCell) per word.
//!
//! A wait climbs the same ladder as a cell's, with the same measured budgets: a spin
//! that re-loads the word, a hardware monitor armed on the word's line, then a park.
//! The park queues the waiter in its word's bucket of a fixed table
//! ([`wake_one`]/[`wake_all`] find it there), and the waits of a bucket's words share
//! its adaptive state and counters (counted in [`stats`](crate::stats()) too).
//!
//! The writer changes the word with any atomic operation and any ordering, then
//! calls [`wake_one`] or [`wake_all`], as with `atomic-wait` or a futex. A wake of a
//! word that nobody waits on costs a compiler barrier and one load of the bucket's
//! announcement word (a full fence and that load where the process could not
//! register for `membarrier`), and no system call, even when the bucket holds parked
//! waiters of other words.
//!
//! ```
//! use mwait::atomic;
//! use std::sync::atomic::{AtomicU32, Ordering};
//!
//! static FLAG: AtomicU32 = AtomicU32::new(0);
//!
//! let t = std::thread::spawn(|| atomic::wait(&FLAG, 0));
//! FLAG.store(1, Ordering::Release);
//! atomic::wake_all(&FLAG);
//! assert_eq!(t.join().unwrap(), 1);
//! ```
//!
//! What differs from a cell:
//!
//! - the cell's sticky `FENCED` bit, which spares a waiter that parks for every value
//!   its `membarrier` (about 0.1–5 µs), is its bucket's, and holds for one tag (one
//!   word, bar collisions) at a time: a park of another word in the bucket takes it
//!   away, and that word's next park runs its barrier to set it (see "A word that
//!   parks often" below);
//! - a park sleeps on a doorbell, a few words of its own: one its bucket kept from an
//!   earlier park where one is free, else a new allocation;
//! - the words are process-private: a wake reaches the waiters of its own process
//!   only (as `atomic-wait`'s private futexes do). For a word in memory shared
//!   between processes, use [`WaitCell::new_shared`](crate::WaitCell::new_shared);
//! - the kernel shim's tier compares 32 bits, so a wait on an `AtomicU64` goes from
//!   the spin tier to park where `/dev/mwait` is the hardware tier.
//!
//! # Notes about memory ordering
//!
//! The protocol is the cell's Dekker pair (`protocol.rs`), with the bucket's
//! announcement word in place of the cell's state word:
//!
//! ```text
//! notifier                               parking waiter
//! word.store(new, any ordering)     (1)  lock(bucket.queue); push (addr, bell)
//! [light] compiler_fence(SeqCst)          announced.swap(summary, SeqCst)    (3)
//! [else]  fence(SeqCst)                   unlock
//! a = announced.load()              (2)  unless (3) found FENCED for the tag:
//!                                           waiter_barrier() (membarrier or a fence)
//!                                           lock; mark FENCED if still queued; unlock
//! if a is EMPTY or another tag: done      v = word.load()                    (4)
//! else: lock; take the entries of addr;   if !pred(v): sleep while bell == ARMED
//!       mark their bells; unlock; wake
//! ```
//!
//! Where the notifier takes the light path (`sys::park::begin_light_check`: the
//! process registered for `membarrier`), the waiter's barrier is a `membarrier`, and
//! every CPU running a notifier executes a full barrier inside it: a notifier whose
//! (1)/(2) pair the barrier point follows has (1) visible to (4); one whose pair it
//! precedes loads (2) after (3). Where it does not, both sides run a `SeqCst` fence
//! between their two accesses, the fence form of the same store-buffering argument.
//! A waiter that skips its barrier relies on an earlier waiter's instead (below).
//!
//! What (2) reads decides the notifier's path. The announcement word is written only
//! under the queue's lock, from the queue's contents: `EMPTY`, the tag of the one
//! address every queued waiter waits on, or `MANY`, and the `FENCED` bit with a tag
//! (below); a notifier looks at the tag bits alone. A value that does not show this
//! waiter comes from a write before its (3) in the word's modification order (every
//! write after (3), until this waiter leaves the queue, is computed from a queue that
//! holds it), so by the argument above (4) sees `new`, and the waiter does not sleep.
//! A value that shows it sends the notifier to the queue, under the lock, where it
//! finds the entry (pushed before (3) in the same critical section) unless the
//! waiter has already withdrawn.
//!
//! ## A word that parks often: the `FENCED` bit
//!
//! A consumer fed every millisecond parks for every value, and a `membarrier` on
//! each park would be most of what the park adds to a futex wait
//! (`docs/design-notes.md` has the figures). So, as on a cell, a waiter that has run
//! its barrier marks the announcement word `FENCED` with its tag, under the queue's
//! lock, if its entry is still queued and every queued waiter waits on its tag. The
//! mark stays, keeping its tag, while the queue holds waiters of that tag only or
//! nobody; a write that queues a waiter of another tag, or of several, drops it. A
//! waiter whose announcement (3) finds the mark for its own tag skips its barrier.
//! A notifier whose (2) finds its word's tag, marked or not, takes the lock as
//! before; one that finds another tag, or `EMPTY`, returns: a wake of another word
//! of a marked bucket still costs one load.
//!
//! Why no wake is lost. Let W wait on X and skip its barrier on the strength of a
//! mark set by S, a waiter of X (the last marking before W's (3)), and let N be a
//! notifier of X. S's barrier put a full barrier at a point P of N. If N's (1)
//! precedes P, it happens before the end of S's barrier, so before S's marking and
//! unlock, so before W takes the lock for (3) and before W's (4): W sees the value.
//! Otherwise N's (2) follows P and reads S's (3) or a later state. From S's (3) to
//! its marking the queue holds S's entry (S marks only while queued, and entries
//! leave only under the lock), so the word shows X's tag or `MANY`; from the marking
//! to W's (3) it shows X's tag and `FENCED` (nothing dropped the mark, or W would
//! not have read it). So if (2) reads a state before W's (3), N takes the lock: if
//! before W's announcement, W's (4), after W's own lock, sees (1); if after, N finds
//! W's entry. If (2) reads W's (3) or a later state, it shows X's tag while W is
//! queued, as without the mark. Two addresses that share a tag are one to this
//! argument: a notifier of either takes the lock. Where the barrier is a fence (no
//! `membarrier`), the same argument runs with the fences.
//!
//! Both conditions of the marking matter: a waiter whose entry a notifier took
//! before its barrier ended may have left the queue empty for a moment, and a
//! notifier of X that read `EMPTY` then returned without the lock; and a mark with
//! a waiter of another word queued would send that word's notifiers away from the
//! queue.
//!
//! The mark costs a wake of X that finds no waiter of X queued the lock (about
//! 20–40 ns instead of a load), so, as on a cell, such wakes count themselves under
//! the lock, and the 32nd in a row (no announcement between; `FENCED_IDLE_NOTIFIES`,
//! as on a cell) clears it: about one barrier's worth of them.
//!
//! The sleep itself compares no value of the word: the waiter sleeps on its own
//! doorbell, a 32-bit word that is `ARMED` until a notifier takes its entry off the
//! queue and marks it (under the lock), then wakes it; the platform's wait compares
//! the doorbell with `ARMED` atomically with the decision to sleep, so a ring
//! between (4) and the sleep is not lost.
//!
//! ## 64-bit words
//!
//! An `AtomicU64` waits on the same table. The spin tier loads all 64 bits, the
//! hardware tier's user-mode monitors (UMWAIT, MWAITX) are armed on the word's line
//! and re-check all 64 bits (the kernel shim, which compares 32 bits itself, hands
//! such a wait on to park), and the park tier's re-check (4) compares all 64 bits
//! while its sleep compares only the doorbell. So a store that changes only the high
//! half wakes the waiter on every tier: nothing in the argument above looks at which
//! bits changed, unlike a futex on the low half, whose kernel comparison would find
//! the low half unchanged and sleep through the wake.
//!
//! ## Waking one
//!
//! [`wake_one`] takes one entry of the address off the queue, the oldest, and rings
//! only that waiter's doorbell: waiters of other words in the bucket are never woken
//! by it. A waiter is queued before its re-check (4), so the entry taken may belong
//! to a waiter that then finds its predicate true without sleeping, or whose
//! deadline passes; such a waiter, finding its entry gone, passes a wake of one on
//! to the next waiter of the address, so that a sleeping waiter is woken, as a
//! futex's wake of one would have woken it.
//!
//! ## Several words
//!
//! [`wait_any`] announces one doorbell to every member (an entry in each bare
//! word's bucket, a waker in each cell's async registry), runs one barrier, and
//! re-checks every member: the argument above, once per member (`any.rs`).

mod any;
mod table;
mod word;

pub use any::{wait_any, wait_any_deadline, wait_any_timeout, Member};

use crate::ladder;
use crate::ladder::outcome::{Deadline, Ended, Outcome, WaitResult};
use crate::policy::WaitPolicy;
use crate::primitive::AtomicU32;
use crate::primitive::AtomicU64;
use crate::sys::park;
use std::time::{Duration, Instant};
use table::bucket;
use word::TableWord;

mod sealed {
    use super::word::TableWord;
    use crate::ladder::outcome::Outcome;

    /// Keeps [`Atomic`](super::Atomic) implemented by this crate's two words only,
    /// and gives each its ladder.
    pub trait Sealed: crate::backend::Watched + Sized {
        /// The ladder of a wait on this word, with the process's default policy: a
        /// function of this crate for each word. The generic functions of this
        /// module are compiled in the crates that call them, and what their bodies
        /// name this crate exports, reached through the GOT by its own code too;
        /// they name this and no part of the ladder (`docs/architecture.md`).
        fn ladder(
            word: TableWord<'_, Self>,
            pred: &mut dyn FnMut(Self::Bits) -> bool,
            deadline_ns: Option<u64>,
        ) -> Outcome<Self::Bits>;
    }
}

/// An atomic word the functions of this module wait on: `AtomicU32` or
/// `AtomicU64`.
///
/// # Examples
///
/// ```
/// use mwait::atomic::{self, Atomic};
/// use std::sync::atomic::AtomicU64;
///
/// fn changed<A: Atomic>(a: &A, from: A::Value) -> A::Value {
///     atomic::wait(a, from)
/// }
/// assert_eq!(changed(&AtomicU64::new(1 << 40), 0), 1 << 40);
/// ```
pub trait Atomic: sealed::Sealed + crate::backend::Watched<Bits = <Self as Atomic>::Value> {
    /// The word's value.
    type Value: Copy + Eq + std::fmt::Debug;
}

impl sealed::Sealed for AtomicU32 {
    #[inline(never)]
    fn ladder(
        word: TableWord<'_, Self>,
        pred: &mut dyn FnMut(u32) -> bool,
        deadline_ns: Option<u64>,
    ) -> Outcome<u32> {
        ladder_of(word, pred, deadline_ns)
    }
}
impl Atomic for AtomicU32 {
    type Value = u32;
}

impl sealed::Sealed for AtomicU64 {
    #[inline(never)]
    fn ladder(
        word: TableWord<'_, Self>,
        pred: &mut dyn FnMut(u64) -> bool,
        deadline_ns: Option<u64>,
    ) -> Outcome<u64> {
        ladder_of(word, pred, deadline_ns)
    }
}
impl Atomic for AtomicU64 {
    type Value = u64;
}

/// The ladder of a wait on a bare word (`Sealed::ladder`).
#[inline(always)]
fn ladder_of<A: Atomic>(
    word: TableWord<'_, A>,
    pred: &mut dyn FnMut(A::Value) -> bool,
    deadline_ns: Option<u64>,
) -> Outcome<A::Value> {
    ladder::run_word(
        word,
        word.bucket.learning(),
        pred,
        deadline_ns,
        &WaitPolicy::new(),
    )
}

/// Blocks while `atomic` holds `expected`; returns the value it then holds.
///
/// Unlike a futex wait, it never returns spuriously: it returns once it has seen a
/// value other than `expected` (a wake that finds the word unchanged sends it back to
/// waiting). It may miss intermediate values: a word that goes 0 → 1 → 0 while the
/// waiter sleeps keeps it waiting.
///
/// # Panics
///
/// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
/// refused (the crate docs' "Environment"); without it no setting makes this panic.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// assert_eq!(mwait::atomic::wait(&AtomicU32::new(3), 2), 3); // already different
/// ```
#[inline]
pub fn wait<A: Atomic>(atomic: &A, expected: A::Value) -> A::Value {
    wait_ns(atomic, |v| v != expected, Deadline::Never).value
}

/// Blocks while `atomic` holds `expected` and no wake reaches this waiter: a wait
/// with a futex's contract, which [`wait`] refines. It returns the value it then
/// holds, which may be `expected`: after a [`wake_one`] or [`wake_all`] of the word
/// that found this waiter asleep, whether or not the word changed.
///
/// A wake that comes while the waiter still spins or watches the line in hardware,
/// before it sleeps, ends the wait only where the word changed (as a wake that
/// comes before a futex waiter's sleep finds nobody to wake).
///
/// # Panics
///
/// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
/// refused (the crate docs' "Environment"); without it no setting makes this panic.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use std::time::Duration;
///
/// static W: AtomicU32 = AtomicU32::new(0);
/// let sleeper = std::thread::spawn(|| mwait::atomic::wait_or_woken(&W, 0));
/// // Once the sleeper is parked, a wake with no change ends its wait.
/// while mwait::atomic::parked_waiters(&W) == 0 {
///     std::thread::sleep(Duration::from_millis(1));
/// }
/// mwait::atomic::wake_all(&W);
/// assert_eq!(sleeper.join().unwrap(), 0);
/// ```
#[inline]
pub fn wait_or_woken<A: Atomic>(atomic: &A, expected: A::Value) -> A::Value {
    let woken = std::cell::Cell::new(false);
    let b = bucket(atomic as *const A as usize);
    let v = atomic.load_acquire();
    if v != expected {
        return ladder::end_before_ladder(b.stats(), v, Ended::Entry).value;
    }
    let word = TableWord {
        atomic,
        bucket: b,
        woken: Some(&woken),
    };
    climb(word, |v| v != expected || woken.get(), None).value
}

/// Blocks while `atomic` holds `expected`, at most `timeout`.
///
/// # Panics
///
/// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
/// refused (the crate docs' "Environment"); without it no setting makes this panic.
///
/// # Examples
///
/// ```
/// use mwait::WaitResult;
/// use std::sync::atomic::AtomicU64;
/// use std::time::Duration;
///
/// let a = AtomicU64::new(5);
/// let r = mwait::atomic::wait_timeout(&a, 5, Duration::from_micros(50));
/// assert_eq!(r, WaitResult::TimedOut(5));
/// ```
#[inline]
pub fn wait_timeout<A: Atomic>(
    atomic: &A,
    expected: A::Value,
    timeout: Duration,
) -> WaitResult<A::Value> {
    result(wait_ns(atomic, |v| v != expected, Deadline::after(timeout)))
}

/// Blocks while `atomic` holds `expected`, until the clock reaches `deadline`.
///
/// # Panics
///
/// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
/// refused (the crate docs' "Environment"); without it no setting makes this panic.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use std::time::Instant;
///
/// let r = mwait::atomic::wait_deadline(&AtomicU32::new(1), 0, Instant::now());
/// assert_eq!(r.ready(), Some(1));
/// ```
#[inline]
pub fn wait_deadline<A: Atomic>(
    atomic: &A,
    expected: A::Value,
    deadline: Instant,
) -> WaitResult<A::Value> {
    result(wait_ns(atomic, |v| v != expected, Deadline::at(deadline)))
}

/// Blocks until `pred` accepts the value of `atomic`, or until `deadline` (`None`:
/// no deadline). Returns [`WaitResult::Ready`] with the value `pred` accepted, or
/// [`WaitResult::TimedOut`] with the last value seen.
///
/// # Panics
///
/// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
/// refused (the crate docs' "Environment"); without it no setting makes this panic.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use std::sync::Arc;
///
/// let a = Arc::new(AtomicU32::new(0));
/// let b = a.clone();
/// let t = std::thread::spawn(move || mwait::atomic::wait_until(&*b, |v| v >= 2, None));
/// for _ in 0..2 {
///     a.fetch_add(1, Ordering::Release);
///     mwait::atomic::wake_all(&*a);
/// }
/// assert_eq!(t.join().unwrap().ready(), Some(2));
/// ```
#[inline]
pub fn wait_until<A: Atomic>(
    atomic: &A,
    pred: impl FnMut(A::Value) -> bool,
    deadline: Option<Instant>,
) -> WaitResult<A::Value> {
    result(wait_ns(
        atomic,
        pred,
        deadline.map_or(Deadline::Never, Deadline::at),
    ))
}

/// Blocks until `pred` accepts the value of `atomic` or `timeout` passes, as
/// [`WaitCell::wait_until_timeout`](crate::WaitCell::wait_until_timeout) does for a
/// cell.
///
/// # Panics
///
/// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
/// refused (the crate docs' "Environment"); without it no setting makes this panic.
///
/// # Examples
///
/// ```
/// use mwait::WaitResult;
/// use std::sync::atomic::AtomicU64;
/// use std::time::Duration;
///
/// let a = AtomicU64::new(3);
/// let r = mwait::atomic::wait_until_timeout(&a, |v| v > 5, Duration::from_micros(50));
/// assert_eq!(r, WaitResult::TimedOut(3));
/// assert_eq!(mwait::atomic::wait_until_timeout(&a, |v| v == 3, Duration::ZERO).ready(), Some(3));
/// ```
#[inline]
pub fn wait_until_timeout<A: Atomic>(
    atomic: &A,
    pred: impl FnMut(A::Value) -> bool,
    timeout: Duration,
) -> WaitResult<A::Value> {
    result(wait_ns(atomic, pred, Deadline::after(timeout)))
}

/// Blocks until `pred` accepts the value of `atomic` or the clock reaches
/// `deadline`, as
/// [`WaitCell::wait_until_deadline`](crate::WaitCell::wait_until_deadline) does for a
/// cell.
///
/// # Panics
///
/// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
/// refused (the crate docs' "Environment"); without it no setting makes this panic.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// use std::time::Instant;
///
/// let a = AtomicU32::new(1);
/// let r = mwait::atomic::wait_until_deadline(&a, |v| v == 2, Instant::now());
/// assert_eq!(r.ready(), None);
/// ```
#[inline]
pub fn wait_until_deadline<A: Atomic>(
    atomic: &A,
    pred: impl FnMut(A::Value) -> bool,
    deadline: Instant,
) -> WaitResult<A::Value> {
    result(wait_ns(atomic, pred, Deadline::at(deadline)))
}

/// Wakes one thread parked on the word at `ptr`, after the caller changed it (with
/// any atomic operation and ordering). Waiters that spin or watch the line in
/// hardware need no wake: they see the change itself. `ptr` may dangle: only its
/// address is used.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// let a = AtomicU32::new(0);
/// mwait::atomic::wake_one(&a); // nobody waits: one load, no system call
/// ```
#[inline]
pub fn wake_one<A: Atomic>(ptr: *const A) {
    wake(ptr as usize, 1);
}

/// Wakes every thread parked on the word at `ptr`, after the caller changed it.
/// `ptr` may dangle: only its address is used.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::AtomicU64;
/// let a = AtomicU64::new(0);
/// mwait::atomic::wake_all(&a);
/// ```
#[inline]
pub fn wake_all<A: Atomic>(ptr: *const A) {
    wake(ptr as usize, park::ALL);
}

/// How many threads are parked on the word at `ptr` right now (a snapshot, for tests
/// and reports). `ptr` may dangle.
///
/// # Examples
///
/// ```
/// use std::sync::atomic::AtomicU32;
/// assert_eq!(mwait::atomic::parked_waiters(&AtomicU32::new(0)), 0);
/// ```
pub fn parked_waiters<A: Atomic>(ptr: *const A) -> usize {
    let addr = ptr as usize;
    bucket(addr).queued(addr)
}

/// The index of the table bucket of the word at `ptr`: tests and benchmarks use it
/// to find words that share a bucket.
#[doc(hidden)]
pub fn bucket_index<A: Atomic>(ptr: *const A) -> usize {
    table::bucket_index(ptr as usize)
}

/// How many parked waiters a wake of up to `n` of the word at `ptr` woke: the tests
/// (the loom models among them) check with it that a wake of one wakes exactly one.
#[cfg(test)]
pub(crate) fn wake_counted<A: Atomic>(ptr: *const A, n: u32) -> usize {
    wake(ptr as usize, n)
}

/// The notify half: one load of the bucket's announcement word unless a waiter of
/// `addr` may be parked.
#[inline(always)]
fn wake(addr: usize, n: u32) -> usize {
    bucket(addr).wake(addr, n)
}

/// The value and outcome of one wait: the first look, the inline spin (untimed
/// waits on a bucket whose last spin caught the change), then the ladder (none for
/// a wait whose time was up before it began).
#[inline(always)]
fn wait_ns<A: Atomic>(
    atomic: &A,
    mut pred: impl FnMut(A::Value) -> bool,
    deadline: Deadline,
) -> Outcome<A::Value> {
    let b = bucket(atomic as *const A as usize);
    let v = atomic.load_acquire();
    if pred(v) {
        return ladder::end_before_ladder(b.stats(), v, Ended::Entry);
    }
    let deadline_ns = match deadline {
        Deadline::Passed => return ladder::time_up(v),
        Deadline::At(ns) => Some(ns),
        Deadline::Never => {
            let caught = b.learning().caught;
            if let Some(v) = ladder::inline_spin(atomic, caught, &mut pred, &WaitPolicy::new()) {
                return ladder::end_before_ladder(b.stats(), v, Ended::Inline);
            }
            None
        }
    };
    let word = TableWord {
        atomic,
        bucket: b,
        woken: None,
    };
    climb(word, pred, deadline_ns)
}

/// The ladder for a wait on a bare word, with the process's default policy. It
/// takes the predicate by value, so that the caller's first look and inline spin
/// keep what the predicate captures in registers (as `WaitCell`'s `climb` does).
#[cold]
#[inline(never)]
fn climb<A: Atomic>(
    word: TableWord<'_, A>,
    mut pred: impl FnMut(A::Value) -> bool,
    deadline_ns: Option<u64>,
) -> Outcome<A::Value> {
    A::ladder(word, &mut pred, deadline_ns)
}

#[inline(always)]
fn result<V: Copy>(o: Outcome<V>) -> WaitResult<V> {
    if o.timed_out() {
        WaitResult::TimedOut(o.value)
    } else {
        WaitResult::Ready(o.value)
    }
}

#[cfg(test)]
mod tests;
