//! [`wait_any`]: one wait over several words, bare `AtomicU32`s and `WaitCell`s,
//! that ends when any of them holds a value other than the one expected of it.
//!
//! It climbs the same ladder as a wait on one word, with the set of words as the
//! ladder's word: the spin tier loads every member in each round; the hardware tier
//! arms its monitor on the first member's line (a monitor watches one line) in
//! episodes of at most [`ANY_EPISODE_NS`], and re-checks every member after each; the
//! park tier sleeps on one doorbell of the waiter's, announced to every member at
//! once:
//!
//! - for a bare word, an entry in the word's bucket of the waiter table, as a park on
//!   that word queues one (`table.rs`), all entries with the same doorbell;
//! - for a cell, an armed waker in the cell's async registry, whose wake rings the
//!   doorbell: the cell's notifiers already wake armed wakers (`protocol.rs`, "Async
//!   waiters"), so a cell's `store` needs nothing new.
//!
//! Then one barrier, which orders every announcement before the re-check of every
//! member (the argument of `mod.rs` and of the protocol, once per member), and one
//! sleep. On Linux that sleep is one futex wait on the doorbell. `futex_waitv`
//! (Linux 5.16) waits on several futex words at once, but it would add nothing here:
//! a notifier must find the waiter through its announcement anyway (that is what
//! keeps a wake of an unwaited word free of system calls), and a table notifier
//! wakes doorbells, never the word's own address, so the one futex word that any
//! member's notifier wakes is the doorbell.

use super::table::{bucket, Bucket, Doorbell, Queued};
use crate::backend::{CState, HardwareWait, HwWake, Watched};
use crate::cell::WaitCell;
use crate::ladder;
use crate::ladder::outcome::WaitResult;
use crate::ladder::outcome::{Deadline, Ended};
use crate::ladder::word::Word;
use crate::policy::WaitPolicy;
use crate::primitive::{loom_sc_fence, AtomicU32, AtomicU64, Ordering};
use crate::sys::clock;
use crate::sys::park::{self, Parked};
use std::sync::Arc;
use std::task::{Wake, Waker};
use std::time::{Duration, Instant};

/// The longest hardware-tier episode of a [`wait_any`]: its monitor watches the first
/// member's line only, so the other members are re-checked at least this often while
/// the tier lasts.
pub(crate) const ANY_EPISODE_NS: u64 = 2_000;

/// One word of a [`wait_any`] and the value it is expected to hold: the wait ends
/// when a member holds another.
///
/// # Examples
///
/// ```
/// use mwait::atomic::Member;
/// use mwait::WaitCell;
/// use std::sync::atomic::AtomicU32;
///
/// let (a, cell) = (AtomicU32::new(0), WaitCell::new(5));
/// let members = [Member::atomic(&a, 0), Member::cell(&cell, 5)];
/// assert_eq!(members.len(), 2);
/// ```
#[derive(Copy, Clone, Debug)]
pub struct Member<'a> {
    source: Source<'a>,
    expected: u64,
}

#[derive(Copy, Clone, Debug)]
enum Source<'a> {
    Atomic(&'a AtomicU32),
    Atomic64(&'a AtomicU64),
    Cell(&'a WaitCell),
}

impl<'a> Member<'a> {
    /// A bare word, woken by [`wake_one`](super::wake_one) or
    /// [`wake_all`](super::wake_all) after a change.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::AtomicU32;
    /// let a = AtomicU32::new(1);
    /// let m = mwait::atomic::Member::atomic(&a, 0);
    /// assert_eq!(mwait::atomic::wait_any(&[m]), (0, 1));
    /// ```
    pub const fn atomic(word: &'a AtomicU32, expected: u32) -> Member<'a> {
        Member {
            source: Source::Atomic(word),
            expected: expected as u64,
        }
    }

    /// A bare 64-bit word, woken by [`wake_one`](super::wake_one) or
    /// [`wake_all`](super::wake_all) after a change; all 64 bits are compared.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::AtomicU64;
    /// let a = AtomicU64::new(1 << 40);
    /// let m = mwait::atomic::Member::atomic_u64(&a, 0);
    /// assert_eq!(mwait::atomic::wait_any(&[m]), (0, 1 << 40));
    /// ```
    pub const fn atomic_u64(word: &'a AtomicU64, expected: u64) -> Member<'a> {
        Member {
            source: Source::Atomic64(word),
            expected,
        }
    }

    /// A cell, woken by its writers (and `notify_*`) as any of its waiters is.
    ///
    /// # Examples
    ///
    /// ```
    /// let cell = mwait::WaitCell::new(2);
    /// let m = mwait::atomic::Member::cell(&cell, 0);
    /// assert_eq!(mwait::atomic::wait_any(&[m]), (0, 2));
    /// ```
    pub const fn cell(cell: &'a WaitCell, expected: u32) -> Member<'a> {
        Member {
            source: Source::Cell(cell),
            expected: expected as u64,
        }
    }

    /// The member's value now (`Acquire`), widened to 64 bits.
    #[inline(always)]
    fn load(&self) -> u64 {
        match self.source {
            Source::Atomic(w) => u64::from(w.load(Ordering::Acquire)),
            Source::Atomic64(w) => w.load(Ordering::Acquire),
            Source::Cell(c) => u64::from(c.as_atomic().load(Ordering::Acquire)),
        }
    }

    /// The address of the member's word (its waiter-table key, for bare words).
    #[inline(always)]
    fn addr(&self) -> usize {
        match self.source {
            Source::Atomic(w) => w as *const AtomicU32 as usize,
            Source::Atomic64(w) => w as *const AtomicU64 as usize,
            Source::Cell(c) => c.as_atomic() as *const AtomicU32 as usize,
        }
    }
}

/// Blocks until one of `members` holds a value other than the one expected of it.
/// Returns the index of that member and its value (the first such member in the
/// slice order, at the look that ended the wait; a 32-bit member's value widened).
///
/// Every member's notifier reaches the waiter: a bare word's through
/// [`wake_one`](super::wake_one) or [`wake_all`](super::wake_all), a cell's
/// through its writers. A wake of one taken by this waiter when another member ends
/// the wait is passed on to another waiter of that word. The timed forms are
/// [`wait_any_timeout`] and [`wait_any_deadline`].
///
/// # Panics
///
/// If `members` is empty (nothing could end the wait), or if a member is a
/// process-shared cell ([`WaitCell::new_shared`]): this wait announces itself to a
/// cell's notifiers with a waker of this process's, which a notifier in another
/// process cannot call. Nothing is written to any member before the panic. Wait on
/// a shared cell with its own blocking `wait_*` methods. Also with `MWAIT_STRICT=1`,
/// when a setting this machine cannot honour is refused (the crate docs'
/// "Environment").
///
/// # Examples
///
/// ```
/// use mwait::atomic::{self, Member};
/// use std::sync::atomic::{AtomicU32, Ordering};
///
/// let words: Vec<AtomicU32> = (0..8).map(|_| AtomicU32::new(0)).collect();
/// std::thread::scope(|s| {
///     let w = &words;
///     let t = s.spawn(move || {
///         let members: Vec<Member> = w.iter().map(|a| Member::atomic(a, 0)).collect();
///         atomic::wait_any(&members)
///     });
///     words[5].store(9, Ordering::Release);
///     atomic::wake_all(&words[5]);
///     assert_eq!(t.join().unwrap(), (5, 9));
/// });
/// ```
pub fn wait_any(members: &[Member<'_>]) -> (usize, u64) {
    assert!(
        !members.is_empty(),
        "mwait: wait_any on no words would never return"
    );
    match wait_any_ns(members, Deadline::Never) {
        WaitResult::Ready(r) | WaitResult::TimedOut(r) => r,
    }
}

/// [`wait_any`] for at most `timeout`: `Ready((index, value))` as `wait_any`
/// returns it, or `TimedOut((0, value))` once the time has passed with every member
/// as expected (`value` is the first member's at the last look; `(0, 0)` for no
/// members).
///
/// # Panics
///
/// If a member is a process-shared cell, as [`wait_any`]; with `MWAIT_STRICT=1`,
/// when a setting this machine cannot honour is refused.
///
/// # Examples
///
/// ```
/// use mwait::atomic::{self, Member};
/// use mwait::WaitResult;
/// use std::sync::atomic::{AtomicU32, AtomicU64};
/// use std::time::Duration;
///
/// let (a, b) = (AtomicU32::new(3), AtomicU64::new(7));
/// let m = [Member::atomic(&a, 3), Member::atomic_u64(&b, 7)];
/// assert_eq!(atomic::wait_any_timeout(&m, Duration::from_micros(50)), WaitResult::TimedOut((0, 3)));
/// let m = [Member::atomic(&a, 3), Member::atomic_u64(&b, 0)];
/// assert_eq!(atomic::wait_any_timeout(&m, Duration::ZERO), WaitResult::Ready((1, 7)));
/// ```
pub fn wait_any_timeout(members: &[Member<'_>], timeout: Duration) -> WaitResult<(usize, u64)> {
    wait_any_ns(members, Deadline::after(timeout))
}

/// [`wait_any`] until the clock reaches `deadline`, with the results of
/// [`wait_any_timeout`].
///
/// # Panics
///
/// As [`wait_any_timeout`].
///
/// # Examples
///
/// ```
/// use mwait::atomic::{self, Member};
/// use std::sync::atomic::AtomicU32;
/// use std::time::Instant;
///
/// let a = AtomicU32::new(1);
/// let r = atomic::wait_any_deadline(&[Member::atomic(&a, 1)], Instant::now());
/// assert_eq!(r.ready(), None);
/// ```
pub fn wait_any_deadline(members: &[Member<'_>], deadline: Instant) -> WaitResult<(usize, u64)> {
    wait_any_ns(members, Deadline::at(deadline))
}

/// The three entries' wait: refuses shared cells, then the fast look and the ladder
/// (none for a wait whose time was up before it began).
fn wait_any_ns(members: &[Member<'_>], deadline: Deadline) -> WaitResult<(usize, u64)> {
    if let Some(i) = members
        .iter()
        .position(|m| matches!(m.source, Source::Cell(c) if c.is_shared()))
    {
        panic!(
            "mwait: wait_any member {i} is a process-shared cell (WaitCell::new_shared): \
             wait_any reaches a cell's notifiers through a waker of this process, which \
             another process cannot call; wait on a shared cell with its blocking wait_* \
             methods"
        );
    }
    let set = Set { members };
    let b = bucket(members.first().map_or(0, Member::addr));
    let seen = set.load_acquire();
    let word = AnyWord {
        set: &set,
        bucket: b,
    };
    let found = match deadline {
        _ if seen.is_some() => ladder::end_before_ladder(b.stats(), seen, Ended::Entry).value,
        Deadline::Passed => ladder::time_up(seen).value,
        Deadline::At(ns) => climb(word, Some(ns)),
        Deadline::Never => climb(word, None),
    };
    match found {
        Some(r) => WaitResult::Ready(r),
        None => WaitResult::TimedOut((0, members.first().map_or(0, Member::load))),
    }
}

/// The ladder for a [`wait_any`], with the process's default policy.
#[cold]
#[inline(never)]
fn climb(word: AnyWord<'_, '_>, deadline_ns: Option<u64>) -> Option<(usize, u64)> {
    let policy = WaitPolicy::new();
    let learning = word.bucket.learning();
    let o = ladder::run_word(word, learning, &mut |v| v.is_some(), deadline_ns, &policy);
    if o.timed_out() {
        None
    } else {
        o.value
    }
}

/// The members as the ladder's word.
struct Set<'s, 'a> {
    members: &'s [Member<'a>],
}

impl Watched for Set<'_, '_> {
    /// The first member not holding its expected value, and its value.
    type Bits = Option<(usize, u64)>;

    #[inline]
    fn load_acquire(&self) -> Option<(usize, u64)> {
        self.members.iter().enumerate().find_map(|(i, m)| {
            let v = m.load();
            (v != m.expected).then_some((i, v))
        })
    }

    /// An episode on the first member's line, cut to [`ANY_EPISODE_NS`].
    fn episode(
        &self,
        hw: &impl HardwareWait,
        _old: Option<(usize, u64)>,
        deadline_ns: u64,
        cstate: CState,
    ) -> HwWake {
        let Some(first) = self.members.first() else {
            return HwWake::Yield;
        };
        let cap = clock::now_ns().saturating_add(ANY_EPISODE_NS);
        let until = deadline_ns.min(cap);
        let ended = match first.source {
            Source::Atomic(w) => hw.wait_episode(w, first.expected as u32, until, cstate),
            Source::Atomic64(w) => hw.wait_episode_u64(w, first.expected, until, cstate),
            Source::Cell(c) => hw.wait_episode(c.as_atomic(), first.expected as u32, until, cstate),
        };
        match ended {
            HwWake::Deadline if deadline_ns > cap => HwWake::Woken,
            w => w,
        }
    }
}

/// A [`Set`] and the bucket where its waits learn and count.
#[derive(Copy, Clone)]
struct AnyWord<'s, 'a> {
    set: &'s Set<'s, 'a>,
    bucket: &'static Bucket,
}

impl<'s, 'a: 's> Word<'s> for AnyWord<'s, 'a> {
    type Atomic = Set<'s, 'a>;

    #[inline(always)]
    fn atomic(self) -> &'s Set<'s, 'a> {
        self.set
    }

    /// Announce to every member (3), one barrier, re-check every member (4), sleep
    /// on the doorbell, withdraw from every member.
    fn park<P: FnMut(Option<(usize, u64)>) -> bool + ?Sized>(
        self,
        pred: &mut P,
        deadline_ns: Option<u64>,
    ) -> Result<Option<(usize, u64)>, Parked> {
        let bell = Arc::new(Doorbell::new());
        let waker = Waker::from(Arc::new(Bell(Arc::clone(&bell))));
        let mut queued: Vec<(usize, Queued<'_>)> = Vec::new();
        let mut armed: Vec<Armed<'_>> = Vec::new();
        for (i, m) in self.set.members.iter().enumerate() {
            match m.source {
                Source::Atomic(_) | Source::Atomic64(_) => {
                    let addr = m.addr();
                    queued.push((i, bucket(addr).announce(addr, &bell))); // (3)
                }
                Source::Cell(c) => {
                    let mut a = Armed {
                        cell: c,
                        key: None,
                        barrier: false,
                    };
                    let w = c.waiter();
                    a.barrier = w
                        .line
                        .arm_async_without_barrier(w.sleepers, &mut a.key, &waker); // (3)
                    armed.push(a);
                }
            }
        }
        // One barrier for every announcement: a bare word's always needs one (the
        // table keeps no sticky bit); a cell's only where its own park would run one.
        if !queued.is_empty() || armed.iter().any(|a| a.barrier) {
            park::waiter_barrier();
            for a in armed.iter().filter(|a| a.barrier) {
                let w = a.cell.waiter();
                w.line
                    .fenced_by_caller(w.sleepers, a.key.expect("arm allocates a slot"));
            }
        }
        loom_sc_fence();
        let v = self.set.load_acquire(); // (4)
        if pred(v) {
            return Ok(v);
        }
        let parked = bell.sleep(deadline_ns);
        if parked != Parked::TimedOut && bell.rung() {
            // The wake of the member that ends the wait is this waiter's; the
            // others' are passed on as the guards drop.
            if let Some((i, _)) = self.set.load_acquire() {
                if let Some((_, q)) = queued.iter_mut().find(|(j, _)| *j == i) {
                    q.consume();
                }
            }
        }
        Err(parked)
    }

    #[inline]
    fn wake_stamp(self) -> u64 {
        self.bucket.wake_stamp()
    }
}

/// The waker armed in a cell's registry: its wake rings the waiter's doorbell.
struct Bell(Arc<Doorbell>);

impl Wake for Bell {
    fn wake(self: Arc<Self>) {
        self.0.mark_and_ring();
    }
}

/// A waker armed in a cell's registry, disarmed on drop. A `notify_one` of the cell
/// that chose it and that this waiter does not consume goes to another armed waiter.
struct Armed<'c> {
    cell: &'c WaitCell,
    key: Option<usize>,
    /// Whether the cell needs the waiter's barrier (see
    /// `MonitorLine::arm_async_without_barrier`).
    barrier: bool,
}

impl Drop for Armed<'_> {
    fn drop(&mut self) {
        if let Some(k) = self.key.take() {
            let w = self.cell.waiter();
            w.line.disarm_async(w.sleepers, k, true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;
    use std::time::Duration;

    #[test]
    fn every_member_of_128_ends_the_wait_with_its_index() {
        let words: Vec<AtomicU32> = (0..128).map(|_| AtomicU32::new(0)).collect();
        for k in [0usize, 1, 63, 127] {
            for w in &words {
                w.store(0, Ordering::Relaxed);
            }
            thread::scope(|s| {
                let t = s.spawn(|| {
                    let m: Vec<Member> = words.iter().map(|a| Member::atomic(a, 0)).collect();
                    wait_any(&m)
                });
                while super::super::parked_waiters(&words[127]) == 0 {
                    thread::sleep(Duration::from_micros(100));
                }
                words[k].store(k as u32 + 1, Ordering::Release);
                super::super::wake_one(&words[k]);
                assert_eq!(t.join().unwrap(), (k, k as u64 + 1));
            });
            for w in &words {
                assert_eq!(super::super::parked_waiters(w), 0, "all withdrawn");
            }
        }
    }

    #[test]
    fn a_cell_member_is_woken_by_its_store() {
        let a = AtomicU32::new(0);
        let cell = WaitCell::new(0);
        thread::scope(|s| {
            let t = s.spawn(|| wait_any(&[Member::atomic(&a, 0), Member::cell(&cell, 0)]));
            while super::super::parked_waiters(&a) == 0 {
                thread::sleep(Duration::from_micros(100));
            }
            cell.store(4);
            assert_eq!(t.join().unwrap(), (1, 4));
        });
        assert_eq!(cell.armed_async_waiters(), 0);
    }

    #[test]
    fn a_deadline_ends_the_wait_with_none() {
        let a = AtomicU32::new(0);
        let cell = WaitCell::new(1);
        let soon = Instant::now() + Duration::from_millis(20);
        let m = [Member::atomic(&a, 0), Member::cell(&cell, 1)];
        assert_eq!(wait_any_deadline(&m, soon), WaitResult::TimedOut((0, 0)));
        assert!(Instant::now() >= soon);
        assert_eq!(super::super::parked_waiters(&a), 0);
        assert_eq!(cell.armed_async_waiters(), 0);
        let now = Instant::now();
        assert_eq!(wait_any_deadline(&[], now), WaitResult::TimedOut((0, 0)));
    }

    /// A 64-bit member is compared whole: a change of its high half alone ends the
    /// wait, through the park (a wake of the word) as through the first look.
    #[test]
    fn a_64_bit_member_ends_the_wait_on_a_change_of_its_high_half() {
        let (a, b) = (AtomicU32::new(0), AtomicU64::new(5));
        thread::scope(|s| {
            let t = s.spawn(|| wait_any(&[Member::atomic(&a, 0), Member::atomic_u64(&b, 5)]));
            while super::super::parked_waiters(&b) == 0 {
                thread::sleep(Duration::from_micros(100));
            }
            b.store(5 | 1 << 40, Ordering::Release);
            super::super::wake_all(&b);
            assert_eq!(t.join().unwrap(), (1, 5 | 1 << 40));
        });
        assert_eq!(super::super::parked_waiters(&b), 0);
        let r = wait_any_timeout(&[Member::atomic_u64(&b, 5)], Duration::from_millis(1));
        assert_eq!(r, WaitResult::Ready((0, 5 | 1 << 40)));
    }

    #[test]
    #[should_panic(expected = "on no words")]
    fn an_untimed_wait_on_no_members_is_refused() {
        wait_any(&[]);
    }
}
