//! The futures of [`WaitCell::wait_until_async`](crate::WaitCell::wait_until_async)
//! and friends, woken by the same notify that wakes blocking and hardware waiters.
//!
//! A future that finds the predicate false arms a waker in the cell's registry
//! (`registry.rs`), which the protocol announces in `state` before the future looks
//! at the value once more: the Dekker pairing of the "Notes about memory ordering" (in
//! `protocol.rs`) with "arm a waker" in place of "park". Nobody registered: the
//! notify path is unchanged, a store and one load.
//!
//! Every value change wakes every armed future (predicates differ between tasks); a
//! woken future re-checks and re-arms.
//! [`WaitCell::notify_one`](crate::WaitCell::notify_one) wakes one; if that
//! future is dropped before it could run, its drop passes the wake to another armed
//! future, so cancellation loses no notification.
//!
//! The futures use only [`std::task::Waker`]: they run on any executor.

use crate::ladder::outcome::WaitResult;
use crate::ladder::{self, Waiter};
use crate::policy::WaitPolicy;
use crate::primitive::Ordering;
use crate::sys::clock;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// The future of [`WaitCell::wait_until_async`](crate::WaitCell::wait_until_async);
/// resolves to the value that satisfied the predicate.
#[must_use = "futures do nothing unless polled"]
pub struct WaitUntil<'a, F> {
    cell: Waiter<'a>,
    pred: F,
    key: Option<usize>,
    prewait: Option<Duration>,
}

impl<F> std::fmt::Debug for WaitUntil<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitUntil")
            .field("registered", &self.key.is_some())
            .field("prewait", &self.prewait)
            .finish()
    }
}

// The future holds no self-references: `pred` is never pinned.
impl<F> Unpin for WaitUntil<'_, F> {}

impl<'a, F: FnMut(u32) -> bool> WaitUntil<'a, F> {
    /// A future on the cell that `cell` is the ladder's view of.
    pub(crate) fn new(cell: Waiter<'a>, pred: F) -> WaitUntil<'a, F> {
        WaitUntil {
            cell,
            pred,
            key: None,
            prewait: None,
        }
    }

    /// Before arming a waker on its first poll, wait up to `d` on the executor thread
    /// (spin, then the hardware tier, never park): for latency-critical tasks whose
    /// partner usually answers within microseconds, this saves the waker round trip
    /// through the executor (wake, re-queue, re-poll). Off by default: while it runs,
    /// no other task on this executor thread makes progress, so keep `d` in the
    /// microseconds.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// let cell = mwait::WaitCell::new(3);
    /// let fut = cell.wait_until_async(|v| v == 3).prewait(Duration::from_micros(5));
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// assert_eq!(fut.await, 3);
    /// # });
    /// ```
    pub fn prewait(mut self, d: Duration) -> WaitUntil<'a, F> {
        self.prewait = (!d.is_zero()).then_some(d);
        self
    }

    fn load(&self) -> u32 {
        self.cell.line.value.load(Ordering::Acquire)
    }

    fn poll_value(&mut self, cx: &mut Context<'_>) -> Poll<u32> {
        let cell = self.cell;
        let v = self.load();
        if (self.pred)(v) {
            self.finish();
            return Poll::Ready(v);
        }
        if let Some(d) = self.prewait.take() {
            if let Some(v) = self.prewait_for(d) {
                return Poll::Ready(v);
            }
        }
        cell.line
            .arm_async(cell.sleepers, &mut self.key, cx.waker());
        let v = cell.line.value.load(Ordering::SeqCst); // (4)
        if (self.pred)(v) {
            self.finish();
            return Poll::Ready(v);
        }
        Poll::Pending
    }

    /// The ladder without its park tier, bounded by `d`.
    fn prewait_for(&mut self, d: Duration) -> Option<u32> {
        let policy = WaitPolicy::new().park(false).hardware(d);
        let deadline_ns = clock::instant_to_ns(Instant::now() + d);
        let v = self.load();
        if (self.pred)(v) {
            return Some(
                ladder::end_before_ladder(self.cell.stats, v, crate::ladder::outcome::Ended::Entry)
                    .value,
            );
        }
        ladder::run(self.cell, &mut self.pred, Some(deadline_ns), &policy)
            .result()
            .ready()
    }

    /// Releases the slot after a `Ready`: the wake (if any) was consumed.
    fn finish(&mut self) {
        if let Some(k) = self.key.take() {
            self.cell.line.disarm_async(self.cell.sleepers, k, false);
        }
    }
}

impl<F: FnMut(u32) -> bool> Future for WaitUntil<'_, F> {
    type Output = u32;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        self.get_mut().poll_value(cx)
    }
}

impl<F> Drop for WaitUntil<'_, F> {
    fn drop(&mut self) {
        if let Some(k) = self.key.take() {
            // Cancelled: a notify_one that chose us goes to another future.
            self.cell.line.disarm_async(self.cell.sleepers, k, true);
        }
    }
}

/// The future of
/// [`WaitCell::wait_until_async_with_timer`](crate::WaitCell::wait_until_async_with_timer).
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct WaitUntilTimer<'a, F, T> {
    inner: WaitUntil<'a, F>,
    // Boxed so that this future is Unpin without pin projection.
    timer: Pin<Box<T>>,
}

impl<'a, F: FnMut(u32) -> bool, T: Future<Output = ()>> WaitUntilTimer<'a, F, T> {
    /// `inner`, ended by `timer`.
    pub(crate) fn new(inner: WaitUntil<'a, F>, timer: T) -> WaitUntilTimer<'a, F, T> {
        WaitUntilTimer {
            inner,
            timer: Box::pin(timer),
        }
    }
}

impl<F: FnMut(u32) -> bool, T: Future<Output = ()>> Future for WaitUntilTimer<'_, F, T> {
    type Output = WaitResult;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<WaitResult> {
        let this = self.get_mut();
        if let Poll::Ready(v) = this.inner.poll_value(cx) {
            return Poll::Ready(WaitResult::Ready(v));
        }
        if this.timer.as_mut().poll(cx).is_ready() {
            let v = this.inner.load();
            let r = if (this.inner.pred)(v) {
                WaitResult::Ready(v)
            } else {
                WaitResult::TimedOut(v)
            };
            this.inner.finish();
            return Poll::Ready(r);
        }
        Poll::Pending
    }
}
