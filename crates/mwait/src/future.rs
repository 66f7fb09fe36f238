//! Async waits: [`WaitCell::wait_until_async`] and friends, futures woken by the same
//! notify that wakes blocking and hardware waiters.
//!
//! A future that finds the predicate false arms a waker in the cell's registry (a slab
//! of slots on the waiter line, behind a mutex) and sets `ASYNC_REGISTERED` in `state`
//! with a `SeqCst` read-modify-write, then runs the same heavy barrier as a parking
//! thread and looks at the value once more: the Dekker pairing of the crate's
//! "Notes about memory ordering" (in `cell.rs`) with "arm a waker" in place of "park".
//! A notifier that sees the bit takes every armed waker out under the mutex, clears
//! the bit when none is left, and wakes them after unlocking. Nobody registered: the
//! notify path is unchanged, a store and one load.
//!
//! Every value change wakes every armed future (predicates differ between tasks); a
//! woken future re-checks and re-arms. [`WaitCell::notify_one`] wakes one; if that
//! future is dropped before it could run, its drop passes the wake to another armed
//! future, so cancellation loses no notification.
//!
//! The futures use only [`std::task::Waker`]: they run on any executor.

use crate::cell::{WaitCell, ASYNC_REGISTERED};
use crate::primitive::{loom_sc_fence, Ordering};
use crate::{WaitPolicy, WaitResult};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

#[cfg(loom)]
use loom::sync::Mutex;
#[cfg(not(loom))]
use std::sync::Mutex;

/// One waiter's slot: owned by a future from its first registration until it
/// completes or is dropped.
#[derive(Debug)]
struct Slot {
    /// The armed waker; `None` while the slot's future is owned but not armed (it
    /// was woken, or not yet re-armed).
    waker: Option<Waker>,
    /// Whether `notify_one` chose this slot and its future has not consumed the wake.
    picked: bool,
    /// Whether a future owns the slot.
    owned: bool,
}

#[derive(Debug)]
struct Slab {
    slots: Vec<Slot>,
    free: Vec<usize>,
    armed: usize,
}

/// The async registry of a cell.
#[derive(Debug)]
pub(crate) struct Registry {
    slab: Mutex<Slab>,
}

macro_rules! registry_ctor {
    ($($const:ident)?) => {
        pub(crate) $($const)? fn new() -> Registry {
            Registry {
                slab: Mutex::new(Slab {
                    slots: Vec::new(),
                    free: Vec::new(),
                    armed: 0,
                }),
            }
        }
    };
}

impl Registry {
    #[cfg(not(loom))]
    registry_ctor!(const);
    #[cfg(loom)]
    registry_ctor!();

    fn lock(&self) -> impl std::ops::DerefMut<Target = Slab> + '_ {
        // A panic while holding this lock cannot leave the slab inconsistent (every
        // update is a few field writes), so poisoning is ignored.
        #[cfg(not(loom))]
        {
            self.slab.lock().unwrap_or_else(|e| e.into_inner())
        }
        #[cfg(loom)]
        {
            self.slab.lock().unwrap()
        }
    }
}

impl WaitCell {
    /// Arms `waker` in slot `key` (allocating one if `key` is `None`) and publishes it.
    fn arm(&self, key: &mut Option<usize>, waker: &Waker) {
        let mut slab = self.registry().lock();
        let k = match *key {
            Some(k) => k,
            None => {
                let k = slab.free.pop().unwrap_or_else(|| {
                    slab.slots.push(Slot {
                        waker: None,
                        picked: false,
                        owned: false,
                    });
                    slab.slots.len() - 1
                });
                slab.slots[k].owned = true;
                *key = Some(k);
                k
            }
        };
        let slot = &mut slab.slots[k];
        match &mut slot.waker {
            Some(w) => {
                if !w.will_wake(waker) {
                    w.clone_from(waker);
                }
            }
            None => {
                slot.waker = Some(waker.clone());
                slab.armed += 1;
            }
        }
        // Published under the lock, so a notifier that sees the bit and then takes
        // the lock sees this slot. `SeqCst`: the first half of the Dekker pair.
        self.state_word()
            .fetch_or(ASYNC_REGISTERED, Ordering::SeqCst);
        drop(slab);
        loom_sc_fence();
        self.waiter_barrier();
    }

    /// Releases slot `key`. `forward`: pass an unconsumed `notify_one` on.
    fn disarm(&self, key: usize, forward: bool) {
        let mut slab = self.registry().lock();
        let slot = &mut slab.slots[key];
        let had_waker = slot.waker.take().is_some();
        let picked = std::mem::take(&mut slot.picked);
        slot.owned = false;
        if had_waker {
            slab.armed -= 1;
        }
        slab.free.push(key);
        let pass_on = if forward && picked {
            self.take_wakers(&mut slab, 1)
        } else {
            Vec::new()
        };
        if slab.armed == 0 {
            self.state_word()
                .fetch_and(!ASYNC_REGISTERED, Ordering::SeqCst);
        }
        drop(slab);
        pass_on.into_iter().for_each(Waker::wake);
    }

    /// Takes up to `n` armed wakers (marking them picked when `n` is 1).
    fn take_wakers(&self, slab: &mut Slab, n: usize) -> Vec<Waker> {
        let mut out = Vec::new();
        for slot in slab.slots.iter_mut() {
            if out.len() >= n {
                break;
            }
            if let Some(w) = slot.waker.take() {
                slot.picked = n == 1;
                out.push(w);
            }
        }
        slab.armed -= out.len();
        out
    }

    /// The notifier's side: wakes up to `n` armed futures. Called from the cold wake
    /// path when `state` has `ASYNC_REGISTERED`.
    pub(crate) fn wake_async(&self, n: usize) {
        let mut slab = self.registry().lock();
        let wakers = self.take_wakers(&mut slab, n);
        if slab.armed == 0 {
            self.state_word()
                .fetch_and(!ASYNC_REGISTERED, Ordering::SeqCst);
        }
        drop(slab);
        wakers.into_iter().for_each(Waker::wake);
    }

    /// How many futures are armed right now (a snapshot, for tests and reports).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(mwait::WaitCell::new(0).armed_async_waiters(), 0);
    /// ```
    pub fn armed_async_waiters(&self) -> usize {
        self.registry().lock().armed
    }

    /// A future that resolves to the value once `pred` accepts it.
    ///
    /// It never blocks the executor thread: when the predicate is false it arms the
    /// task's waker and returns `Pending`; any writer (or `notify_*`) wakes it. Drop it
    /// to cancel. Blocking, hardware and async waiters may wait on one cell at once.
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
        WaitUntil {
            cell: self,
            pred,
            key: None,
            prewait: None,
        }
    }

    /// Like [`wait_until_async`](Self::wait_until_async), with a deadline enforced by
    /// the caller's own timer: `timer` is any future that completes at the deadline
    /// (`tokio::time::sleep(d)`, an async-io `Timer`, ...). Resolves to
    /// [`WaitResult::TimedOut`] with the last value seen once `timer` completes first.
    /// The library itself arms no timer and depends on no runtime.
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
        WaitUntilTimer {
            inner: self.wait_until_async(pred),
            timer: Box::pin(timer),
        }
    }
}

/// The future of [`WaitCell::wait_until_async`]; resolves to the value that satisfied
/// the predicate.
#[must_use = "futures do nothing unless polled"]
pub struct WaitUntil<'a, F> {
    cell: &'a WaitCell,
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

    fn poll_value(&mut self, cx: &mut Context<'_>) -> Poll<u32> {
        let cell = self.cell;
        let v = cell.load();
        if (self.pred)(v) {
            self.finish();
            return Poll::Ready(v);
        }
        if let Some(d) = self.prewait.take() {
            // The ladder without its park tier, bounded by `d`.
            let policy = WaitPolicy::new().park(false).hardware(d);
            if let WaitResult::Ready(v) =
                cell.wait_until_deadline_with(&mut self.pred, Instant::now() + d, &policy)
            {
                return Poll::Ready(v);
            }
        }
        cell.arm(&mut self.key, cx.waker());
        let v = cell.as_atomic().load(Ordering::SeqCst);
        if (self.pred)(v) {
            self.finish();
            return Poll::Ready(v);
        }
        Poll::Pending
    }

    /// Releases the slot after a `Ready`: the wake (if any) was consumed.
    fn finish(&mut self) {
        if let Some(k) = self.key.take() {
            self.cell.disarm(k, false);
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
            self.cell.disarm(k, true);
        }
    }
}

/// The future of [`WaitCell::wait_until_async_with_timer`].
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct WaitUntilTimer<'a, F, T> {
    inner: WaitUntil<'a, F>,
    // Boxed so that this future is Unpin without pin projection.
    timer: Pin<Box<T>>,
}

impl<F: FnMut(u32) -> bool, T: Future<Output = ()>> Future for WaitUntilTimer<'_, F, T> {
    type Output = WaitResult;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<WaitResult> {
        let this = self.get_mut();
        if let Poll::Ready(v) = this.inner.poll_value(cx) {
            return Poll::Ready(WaitResult::Ready(v));
        }
        if this.timer.as_mut().poll(cx).is_ready() {
            let v = this.inner.cell.load();
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
