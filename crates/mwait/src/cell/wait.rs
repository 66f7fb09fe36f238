//! The waits of a [`WaitCell`]: the blocking `wait_*` entry points, the inline spin
//! before the ladder, and the futures of `wait_until_async`.

use super::WaitCell;
use crate::future::{WaitUntil, WaitUntilTimer};
use crate::ladder::outcome::{Deadline, Ended, Outcome, WaitResult};
use crate::ladder::{self, Waiter};
use crate::policy::WaitPolicy;
use crate::sys::stamp::{self, Point};
use std::future::Future;
use std::time::{Duration, Instant};

impl WaitCell {
    /// The cell as the ladder sees it.
    #[inline(always)]
    pub(crate) fn waiter(&self) -> Waiter<'_> {
        Waiter {
            line: &self.line,
            sleepers: &self.waiters.sleepers,
            adapt: &self.waiters.adapt,
            caught: &self.waiters.caught,
            stats: &self.waiters.stats,
        }
    }

    /// Blocks until `pred` accepts the value; returns that value. Never returns
    /// spuriously: the predicate has held for the returned value.
    ///
    /// # Panics
    ///
    /// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
    /// refused (the crate docs' "Environment"); without it no setting makes this panic.
    ///
    /// # Examples
    ///
    /// ```
    /// use mwait::WaitCell;
    /// use std::sync::Arc;
    ///
    /// let cell = Arc::new(WaitCell::new(0));
    /// let c = cell.clone();
    /// let t = std::thread::spawn(move || c.wait_until(|v| v >= 3));
    /// for _ in 0..3 {
    ///     cell.fetch_add(1);
    /// }
    /// assert_eq!(t.join().unwrap(), 3);
    /// ```
    #[inline]
    pub fn wait_until(&self, pred: impl FnMut(u32) -> bool) -> u32 {
        self.wait_until_with(pred, &self.waiters.policy)
    }

    /// [`wait_until`](Self::wait_until) with a per-call policy.
    ///
    /// # Panics
    ///
    /// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
    /// refused (the crate docs' "Environment"); without it no setting makes this panic.
    ///
    /// # Examples
    ///
    /// ```
    /// use mwait::{Backend, WaitCell, WaitPolicy};
    /// let cell = WaitCell::new(1);
    /// let v = cell.wait_until_with(|v| v == 1, &WaitPolicy::new().backend(Backend::Futex));
    /// assert_eq!(v, 1);
    /// ```
    #[inline]
    pub fn wait_until_with(&self, mut pred: impl FnMut(u32) -> bool, policy: &WaitPolicy) -> u32 {
        stamp::mark(Point::Entry);
        let v = self.load();
        if pred(v) {
            return ladder::end_before_ladder(&self.waiters.stats, v, Ended::Entry).value;
        }
        self.after_first_look(pred, policy)
    }

    /// An untimed wait after a first look that missed: the inline spin, then the
    /// ladder.
    #[inline(always)]
    fn after_first_look(&self, mut pred: impl FnMut(u32) -> bool, policy: &WaitPolicy) -> u32 {
        if let Some(v) = self.inline_spin(&mut pred, policy) {
            return ladder::end_before_ladder(&self.waiters.stats, v, Ended::Inline).value;
        }
        let v = self.climb(pred, None, policy).value;
        stamp::mark(Point::Ended);
        v
    }

    /// The untimed wait of a `Parker` (this is its token's cell): the idle park
    /// (`ladder::park_idle`: the first look, then the park without the climb,
    /// `ladder::park::without_climb`, when nothing says the token is near); else
    /// the wait of [`wait_until`](Self::wait_until), whose inline spin and ladder
    /// are for a token that is near.
    #[inline(always)]
    pub(crate) fn wait_parker(&self, mut pred: impl FnMut(u32) -> bool) -> u32 {
        match ladder::park_idle(self.waiter(), &mut pred, &self.waiters.policy) {
            Some(outcome) => outcome.value,
            None => self.wait_near(pred),
        }
    }

    /// [`wait_until`](Self::wait_until) after its first look, which the idle park
    /// made, for [`wait_parker`](Self::wait_parker): out of its caller's body, which
    /// is the idle park's way back from its sleep.
    #[inline(never)]
    fn wait_near(&self, pred: impl FnMut(u32) -> bool) -> u32 {
        self.after_first_look(pred, &self.waiters.policy)
    }

    /// The rest of a wait whose first look missed. A wait that parks without the
    /// climb (`ladder::park::without_climb`: a consumer whose spins keep failing, a
    /// parker's idle wait), with a deadline or without, parks right here, in the
    /// caller's body: after a long sleep every line the wait touches is cold, and a
    /// chain of frames (this crate's entry, the protocol's park, the predicate
    /// through a `dyn` call) costs a wait that sleeps 5 ms a tenth of its CPU on the
    /// 2-vCPU guest (`docs/design-notes.md`). The other waits go to the ladder. A
    /// predicate that captures something goes to it by value, through
    /// [`climb_out_of_line`](Self::climb_out_of_line), so that only that path takes
    /// the predicate's address (the ladder calls it through `&mut dyn FnMut`): the
    /// caller's first look and inline spin then keep what the predicate captures in
    /// registers, where with the address taken in the caller's frame they read it
    /// back from the stack after each load of the value. A predicate that captures
    /// nothing (a parker's) has nothing to keep and calls the ladder straight away.
    #[inline(always)]
    fn climb(
        &self,
        mut pred: impl FnMut(u32) -> bool,
        deadline_ns: Option<u64>,
        policy: &WaitPolicy,
    ) -> Outcome {
        stamp::mark(Point::Ladder);
        let parker = self.waiters.sleepers.parker();
        if let Some(outcome) =
            ladder::park_without_climb(self.waiter(), &mut pred, deadline_ns, policy, parker)
        {
            return outcome;
        }
        if std::mem::size_of_val(&pred) == 0 {
            ladder::run(self.waiter(), &mut pred, deadline_ns, policy)
        } else {
            self.climb_out_of_line(pred, deadline_ns, policy)
        }
    }

    /// [`climb`](Self::climb) for a predicate that captures something.
    #[inline(never)]
    fn climb_out_of_line(
        &self,
        mut pred: impl FnMut(u32) -> bool,
        deadline_ns: Option<u64>,
        policy: &WaitPolicy,
    ) -> Outcome {
        ladder::run(self.waiter(), &mut pred, deadline_ns, policy)
    }

    /// The first loads of the spin tier inline, in the caller's frame
    /// (`ladder::inline_spin`), on a cell whose last spin caught the change.
    #[inline(always)]
    fn inline_spin(&self, pred: &mut impl FnMut(u32) -> bool, policy: &WaitPolicy) -> Option<u32> {
        ladder::inline_spin(&self.line.value, &self.waiters.caught, pred, policy)
    }

    /// Blocks while the value equals `old`; returns the new value.
    ///
    /// # Panics
    ///
    /// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
    /// refused (the crate docs' "Environment"); without it no setting makes this panic.
    ///
    /// # Examples
    ///
    /// ```
    /// let cell = mwait::WaitCell::new(5);
    /// assert_eq!(cell.wait_while_eq(4), 5); // already different: returns at once
    /// ```
    #[inline]
    pub fn wait_while_eq(&self, old: u32) -> u32 {
        self.wait_until(|v| v != old)
    }

    /// Blocks until `pred` accepts the value or `timeout` passes. A zero timeout is
    /// one look at the value: it reads no clock, and a miss returns
    /// [`WaitResult::TimedOut`] at once.
    ///
    /// # Panics
    ///
    /// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
    /// refused (the crate docs' "Environment"); without it no setting makes this panic.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let cell = mwait::WaitCell::new(1);
    /// assert!(cell.wait_until_timeout(|v| v == 1, Duration::ZERO).ready().is_some());
    /// ```
    #[inline]
    pub fn wait_until_timeout(
        &self,
        pred: impl FnMut(u32) -> bool,
        timeout: Duration,
    ) -> WaitResult {
        self.wait_timed(pred, Deadline::after(timeout), &self.waiters.policy)
    }

    /// Blocks until `pred` accepts the value or the clock reaches `deadline`. A
    /// deadline that has passed makes it one look at the value, as a zero timeout
    /// does.
    ///
    /// # Panics
    ///
    /// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
    /// refused (the crate docs' "Environment"); without it no setting makes this panic.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let cell = mwait::WaitCell::new(0);
    /// let r = cell.wait_until_deadline(|v| v == 1, Instant::now() + Duration::from_micros(100));
    /// assert!(r.is_timed_out());
    /// ```
    #[inline]
    pub fn wait_until_deadline(
        &self,
        pred: impl FnMut(u32) -> bool,
        deadline: Instant,
    ) -> WaitResult {
        self.wait_timed(pred, Deadline::at(deadline), &self.waiters.policy)
    }

    /// [`wait_until_deadline`](Self::wait_until_deadline) with a per-call policy.
    ///
    /// # Panics
    ///
    /// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
    /// refused (the crate docs' "Environment"); without it no setting makes this panic.
    ///
    /// # Examples
    ///
    /// ```
    /// use mwait::{WaitCell, WaitPolicy};
    /// use std::time::{Duration, Instant};
    /// let cell = WaitCell::new(0);
    /// let policy = WaitPolicy::new().spin(Duration::ZERO);
    /// let r = cell.wait_until_deadline_with(|v| v != 0, Instant::now(), &policy);
    /// assert!(r.is_timed_out());
    /// ```
    #[inline]
    pub fn wait_until_deadline_with(
        &self,
        pred: impl FnMut(u32) -> bool,
        deadline: Instant,
        policy: &WaitPolicy,
    ) -> WaitResult {
        self.wait_timed(pred, Deadline::at(deadline), policy)
    }

    /// Blocks while the value equals `old`, at most `timeout`.
    ///
    /// # Panics
    ///
    /// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
    /// refused (the crate docs' "Environment"); without it no setting makes this panic.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let cell = mwait::WaitCell::new(0);
    /// assert!(cell.wait_while_eq_timeout(0, Duration::from_micros(10)).is_timed_out());
    /// ```
    #[inline]
    pub fn wait_while_eq_timeout(&self, old: u32, timeout: Duration) -> WaitResult {
        self.wait_until_timeout(|v| v != old, timeout)
    }

    /// A timed wait: the first look, then the ladder, or nothing more when the time
    /// was up before the wait began.
    #[inline]
    fn wait_timed(
        &self,
        mut pred: impl FnMut(u32) -> bool,
        deadline: Deadline,
        policy: &WaitPolicy,
    ) -> WaitResult {
        let v = self.load();
        let stats = &self.waiters.stats;
        if pred(v) {
            return ladder::end_before_ladder(stats, v, Ended::Entry).result();
        }
        // No inline round here: it does not read the clock, and a timed wait keeps
        // the ladder's bound on how far it may run past its deadline (one round).
        match deadline {
            Deadline::Passed => ladder::time_up(v),
            Deadline::At(ns) => self.climb(pred, Some(ns), policy),
            Deadline::Never => self.climb(pred, None, policy),
        }
        .result()
    }

    /// A future that resolves to the value once `pred` accepts it.
    ///
    /// It never blocks the executor thread: when the predicate is false it arms the
    /// task's waker and returns `Pending`; any writer (or `notify_*`) wakes it. Drop it
    /// to cancel. Blocking, hardware and async waiters may wait on one cell at once.
    ///
    /// # Panics
    ///
    /// On a process-shared cell ([`new_shared`](Self::new_shared)): a waker points
    /// into one process's memory, so the registry of armed wakers cannot live in
    /// memory that another process's notifier reads. Async waits are for cells of
    /// one process; wait on a shared cell with the blocking `wait_*` methods.
    ///
    /// # Examples
    ///
    /// ```
    /// use mwait::WaitCell;
    /// use std::sync::Arc;
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let cell = Arc::new(WaitCell::new(0));
    /// let c = cell.clone();
    /// let task = tokio::spawn(async move { c.wait_until_async(|v| v == 5).await });
    /// tokio::task::yield_now().await;
    /// cell.store(5);
    /// assert_eq!(task.await.unwrap(), 5);
    /// # });
    /// ```
    pub fn wait_until_async<F: FnMut(u32) -> bool>(&self, pred: F) -> WaitUntil<'_, F> {
        assert!(
            !self.is_shared(),
            "mwait: wait_until_async on a process-shared cell (WaitCell::new_shared): async \
             waits are for cells of one process; use the blocking wait_* methods"
        );
        WaitUntil::new(self.waiter(), pred)
    }

    /// Like [`wait_until_async`](Self::wait_until_async), with a deadline enforced by
    /// the caller's own timer: `timer` is any future that completes at the deadline
    /// (`tokio::time::sleep(d)`, an async-io `Timer`, ...). Resolves to
    /// [`WaitResult::TimedOut`] with the last value seen once `timer` completes first.
    /// The library itself arms no timer and depends on no runtime.
    ///
    /// # Panics
    ///
    /// On a process-shared cell, as [`wait_until_async`](Self::wait_until_async).
    ///
    /// # Examples
    ///
    /// ```
    /// use mwait::{WaitCell, WaitResult};
    /// use std::time::Duration;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let cell = WaitCell::new(1);
    /// let r = cell
    ///     .wait_until_async_with_timer(|v| v == 2, tokio::time::sleep(Duration::from_millis(5)))
    ///     .await;
    /// assert_eq!(r, WaitResult::TimedOut(1));
    /// # });
    /// ```
    pub fn wait_until_async_with_timer<F, T>(&self, pred: F, timer: T) -> WaitUntilTimer<'_, F, T>
    where
        F: FnMut(u32) -> bool,
        T: Future<Output = ()>,
    {
        WaitUntilTimer::new(self.wait_until_async(pred), timer)
    }
}
