//! [`WaitCell`]: a 32-bit value on its own monitor line, the waiter-state word beside
//! it, and the tier ladder that waits on it.
//!
//! # Notes about memory ordering
//!
//! Three kinds of waiter share one cell: spinners and hardware waiters, which need
//! nothing from the notifier but its store (a spinner re-loads the line; a monitor armed
//! on the line is woken by the write itself), and parked waiters, which sleep in the
//! kernel and need a `futex_wake`. The notifier must not pay for that system call when
//! nobody is parked, so parked waiters announce themselves in `state`, on the *same*
//! line as `value` (the notifier's load of `state` then hits the line its own store
//! just took exclusive: one store and one L1 load when nobody is parked).
//!
//! The protocol is the classic store-buffering (Dekker) pair:
//!
//! ```text
//! notifier                          parking waiter
//! value.store(new, SeqCst)     (1)  state.fetch_add(1, SeqCst)       (3)
//! if state.load(SeqCst) != 0   (2)  v = value.load(SeqCst)           (4)
//!     futex_wake(value)             if !pred(v) { futex_wait(value, v) }
//! ```
//!
//! All four accesses are `SeqCst`, so they lie in one total order. If (2) reads 0, then
//! (2) precedes (3), hence (1) precedes (4) and (4) sees `new` (or later): the waiter
//! does not sleep. Otherwise the notifier calls `futex_wake`; if the waiter has not
//! yet reached `futex_wait`, the kernel's own check of `value == v` under its bucket
//! lock fails and the waiter returns at once. Either way no wake-up is lost. Weaker
//! orderings (`Release` store, `Acquire` load) would allow both sides to read the old
//! values (store buffering), and the waiter could sleep forever.
//!
//! Writers that are read-modify-writes (`swap`, `fetch_*`, `compare_exchange`) are
//! `SeqCst` as well. [`WaitCell::notify_one`]/[`WaitCell::notify_all`] are for callers
//! who changed the value through [`WaitCell::as_atomic`] with any ordering: they issue
//! a `SeqCst` fence before their load of `state`, which pairs with (3)/(4) the same way.
//!
//! ## The asymmetric barrier: `store` without a locked instruction
//!
//! On x86 a `SeqCst` store is an `xchg`, a full barrier that costs about 12 ns on the
//! AMD EPYC this was measured on, while a plain store costs about 1. Notifiers are the
//! hot side and parkers the cold one (a park costs a system call anyway), so once the
//! process has registered for `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`,
//! [`WaitCell::store`] takes the *light* path, and the parking waiter the *heavy* one:
//!
//! ```text
//! notifier (light)                  parking waiter (heavy)
//! value.store(new, Release)    (1)  state.fetch_add(1, SeqCst)       (3)
//! compiler_fence(SeqCst)            membarrier(PRIVATE_EXPEDITED)
//! if state.load(Relaxed) != 0  (2)  v = value.load(SeqCst)           (4)
//! ```
//!
//! `membarrier` returns only after every CPU running a thread of this process has
//! executed a full memory barrier (or is not running one of its threads, and a
//! context switch is a barrier too). So any notifier is either past its (1)/(2) pair
//! when the barrier hits it, in which case (3) is ordered after the whole pair and (4)
//! sees `new`, or before (1), in which case (2) sees the count. This is the pairing
//! that membarrier(2) documents (a compiler barrier on the fast path, membarrier on
//! the slow path, in place of a full barrier on both).
//!
//! On Windows `FlushProcessWriteBuffers` plays the part of `membarrier`: it interrupts
//! every CPU running a thread of this process and returns once each has taken the
//! interrupt, a full barrier there, which gives the same two cases (the argument is
//! in `sys/windows.rs`; Wine 8 implements it as a no-op, so under Wine the light path
//! stays off). macOS, FreeBSD and the parking-table fallback have no such call and
//! keep the symmetric protocol.
//!
//! The light path is taken only while `futex::light_notify()` says so: a flag set once,
//! when registration succeeded, and never cleared. Every waiter blocks on that one-time
//! registration before choosing its barrier, so no waiter uses a mere fence while a
//! notifier may use the light path; where registration fails (old kernel, seccomp)
//! both sides keep the `SeqCst` protocol above. The flag is one more load on the
//! notify path, of a read-only global that stays in L1.
//!
//! `membarrier` reaches only this process's threads. A process-shared cell
//! ([`WaitCell::new_shared`]) therefore carries a permanent bit in `state` that sends
//! every notify to the slow path, which issues a `SeqCst` fence and looks at `state`
//! again. Its waiters, facing fenced notifiers only, use a `SeqCst` fence in place of
//! `membarrier` (the symmetric protocol above).
//!
//! ## A cell that parks often: the `FENCED` bit
//!
//! `membarrier` costs a system call, a look at every CPU's run queue and an
//! interrupt to each CPU running one of our threads: on a waiter that parks for every
//! value (a consumer fed every millisecond), it is most of the cost mwait adds to a
//! futex wait. So a parking waiter, once its barrier is done, sets a sticky bit
//! `FENCED` in `state`, and every notifier that sees a bit other than the parked
//! count in its load (2) takes the slow path, which issues a `SeqCst` fence and loads
//! `state` again, as for a shared cell. A waiter whose announcement (3) returns a
//! state with `FENCED` set skips `membarrier`: its (3) is a `SeqCst` read-modify-write,
//! and a notifier either saw `FENCED` in (2) and fenced before its second look (the
//! symmetric protocol), or did not see it, in which case its (2), and the store (1)
//! before it, came before the barrier point that the grace period of the waiter who
//! set `FENCED` put on its CPU, and that waiter set the bit only after the grace
//! period ended, so (1) is visible to everything ordered after our (3), which read
//! the bit. (A bit set *before* the grace period would not do: a waiter could read it
//! while the setter's `membarrier` is still under way.)
//!
//! The bit costs notifiers a fence while it is set, so a notifier whose second look
//! finds nobody parked (and no async waiter armed) clears it with a compare-exchange
//! from exactly that state: the compare-exchange fails if a waiter has announced
//! itself meanwhile, and a waiter that announces itself after it sees no `FENCED`
//! and runs `membarrier` again. A cell whose waiter is always parked when the value
//! changes keeps the bit and never pays `membarrier` again; a cell that is mostly
//! stored to with nobody parked loses it at its first such store and goes back to the
//! light path.
//!
//! Loom cannot model `membarrier`: the loom build keeps the symmetric `SeqCst`
//! protocol. Loom also models `SeqCst` accesses as `AcqRel`, so the loom build adds
//! the `SeqCst` fences it does model between (1) and (2) and between (3) and (4) (see
//! `primitive::loom_sc_fence`).
//!
//! A parked waiter that wakes decrements `state` (`Relaxed`: it orders nothing; a
//! notifier that still sees the old count makes one unneeded `futex_wake`, no more).

use crate::backend::futex::{self, Parked};
use crate::backend::{spin, HardwareWait, HwWake};
use crate::clock::{self, now_ns};
use crate::policy::{Resolved, WaitPolicy};
use crate::primitive::{
    compiler_fence, fence, loom_sc_fence, spin_hint, yield_now, AtomicU32, Ordering,
};
use std::fmt;
use std::time::{Duration, Instant};

/// Length of one spin round of a waiter that never parks (`WaitPolicy::park(false)`
/// or the spin backend), between two `sched_yield` calls.
const NO_PARK_SPIN_ROUND_NS: u64 = 50_000;

/// Loads (each after a pause) of the inline spin before the ladder: two rounds of the
/// spin tier (16 pauses: ~0.45 µs on the development VM, whose PAUSE takes 27 ns).
/// One under loom, which needs only to see the path.
const QUICK_SPIN_LOADS: u32 = if cfg!(loom) {
    1
} else {
    2 * spin::LOADS_PER_CLOCK_READ
};

/// Bits of `state` that count parked (futex) waiters.
const PARKED_MASK: u32 = 0x1fff_ffff;
/// Bit of `state` that says "this cell's notifiers fence": set by a parking waiter
/// after its barrier (so after a whole `membarrier` grace period), so that the
/// waiters parking after it need no `membarrier` of their own; cleared by a notifier
/// that finds nobody parked. See "A cell that parks often" in the notes above.
const FENCED: u32 = 0x2000_0000;
/// Bit of `state` set for the whole life of a process-shared cell: it sends every
/// notify to the slow path, which orders with a `SeqCst` fence, because the
/// asymmetric barrier (`membarrier`) only reaches this process's threads.
const SHARED_SLOW: u32 = 0x4000_0000;
/// Bit of `state` that says async waiters have armed wakers (see `future.rs`).
pub(crate) const ASYNC_REGISTERED: u32 = 0x8000_0000;

/// The cache line the monitor watches: the value and the waiter-state word, nothing
/// else, so that only writes that matter wake a hardware waiter.
#[repr(C, align(64))]
struct MonitorLine {
    value: AtomicU32,
    state: AtomicU32,
}

/// The rest of the cell, on the next line: read by waiters, written only by waiters.
#[repr(C, align(64))]
struct WaiterLine {
    adapt: crate::adapt::Adaptive,
    policy: WaitPolicy,
    shared: bool,
    registry: crate::future::Registry,
    #[cfg(loom)]
    park: futex::ParkModel,
}

/// A 32-bit value that threads can wait on until it satisfies a predicate.
///
/// Writers change the value with [`store`](Self::store), [`swap`](Self::swap),
/// [`fetch_add`](Self::fetch_add), [`fetch_or`](Self::fetch_or),
/// [`fetch_and`](Self::fetch_and) or [`compare_exchange`](Self::compare_exchange); each
/// wakes parked waiters when there are any, and costs one atomic store and one load
/// when there are none. Waiters call [`wait_until`](Self::wait_until) and its
/// variants, which climb the tier ladder: a short spin, a hardware wait where the CPU
/// offers one, then a futex park (see the [crate docs](crate)).
///
/// The cell is 128-byte aligned: the value sits alone on its 64-byte monitor line (the
/// line size every current x86 CPU reports in CPUID leaf 5), and the next line is
/// this cell's own too, so that adjacent-line prefetch does not couple it to a
/// neighbour.
///
/// # Examples
///
/// ```
/// use mwait::WaitCell;
/// use std::thread;
///
/// static READY: WaitCell = WaitCell::new(0);
///
/// let t = thread::spawn(|| READY.wait_until(|v| v == 1));
/// READY.store(1);
/// assert_eq!(t.join().unwrap(), 1);
/// ```
#[repr(C, align(128))]
pub struct WaitCell {
    line: MonitorLine,
    waiters: WaiterLine,
}

/// How a timed wait ended.
///
/// # Examples
///
/// ```
/// use mwait::{WaitCell, WaitResult};
/// use std::time::Duration;
///
/// let cell = WaitCell::new(7);
/// let r = cell.wait_until_timeout(|v| v == 8, Duration::from_millis(1));
/// assert_eq!(r, WaitResult::TimedOut(7));
/// assert!(r.is_timed_out());
/// assert_eq!(r.value(), 7);
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[must_use]
pub enum WaitResult {
    /// The predicate held for this value.
    Ready(u32),
    /// The deadline passed first; the last value seen, for which the predicate was
    /// false.
    TimedOut(u32),
}

impl WaitResult {
    /// The value: the one that satisfied the predicate, or the last one seen.
    pub const fn value(self) -> u32 {
        match self {
            WaitResult::Ready(v) | WaitResult::TimedOut(v) => v,
        }
    }

    /// Whether the deadline passed first.
    pub const fn is_timed_out(self) -> bool {
        matches!(self, WaitResult::TimedOut(_))
    }

    /// `Some(value)` when the predicate held.
    pub const fn ready(self) -> Option<u32> {
        match self {
            WaitResult::Ready(v) => Some(v),
            WaitResult::TimedOut(_) => None,
        }
    }
}

impl Default for WaitCell {
    fn default() -> Self {
        WaitCell::new(0)
    }
}

impl fmt::Debug for WaitCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.line.state.load(Ordering::Relaxed);
        f.debug_struct("WaitCell")
            .field("value", &self.load())
            .field("parked", &(state & PARKED_MASK))
            .field("policy", &self.waiters.policy)
            .finish()
    }
}

macro_rules! cell_ctor {
    ($($const:ident)?) => {
        /// A cell holding `value`, with the default [`WaitPolicy`].
        ///
        /// # Examples
        ///
        /// ```
        /// static CELL: mwait::WaitCell = mwait::WaitCell::new(0);
        /// assert_eq!(CELL.load(), 0);
        /// ```
        pub $($const)? fn new(value: u32) -> WaitCell {
            WaitCell::build(value, WaitPolicy::new(), false)
        }

        /// A cell whose waits use `policy` unless a call passes its own.
        ///
        /// # Examples
        ///
        /// ```
        /// use mwait::{WaitCell, WaitPolicy};
        /// use std::time::Duration;
        /// static LOW_LATENCY: WaitCell =
        ///     WaitCell::with_policy(0, WaitPolicy::new().spin(Duration::from_micros(50)));
        /// assert_eq!(LOW_LATENCY.policy().get_spin(), Some(Duration::from_micros(50)));
        /// ```
        pub $($const)? fn with_policy(value: u32, policy: WaitPolicy) -> WaitCell {
            WaitCell::build(value, policy, false)
        }

        /// A cell for memory shared between processes (`mmap(MAP_SHARED)`): parked
        /// waiters use non-private futexes, which a notifier in another process can
        /// wake. Hardware waiters need nothing special: monitors watch physical lines.
        ///
        /// On Linux, macOS and FreeBSD the OS's wait is keyed on the physical page
        /// for such a cell. On Windows (`WaitOnAddress` is process-private) and on the
        /// targets that park on a table of threads, a notifier in another process
        /// cannot wake a parked waiter: there a shared cell's waiter sleeps at most
        /// 1 ms per park and re-checks the value, so it sees another process's store
        /// within a millisecond or so (Windows rounds up to its timer resolution,
        /// 15.6 ms by default), and a notifier of its own process still wakes it at
        /// once.
        ///
        /// # Examples
        ///
        /// ```
        /// let cell = mwait::WaitCell::new_shared(0);
        /// assert!(cell.is_shared());
        /// ```
        pub $($const)? fn new_shared(value: u32) -> WaitCell {
            WaitCell::build(value, WaitPolicy::new(), true)
        }

        $($const)? fn build(value: u32, policy: WaitPolicy, shared: bool) -> WaitCell {
            WaitCell {
                line: MonitorLine {
                    value: AtomicU32::new(value),
                    state: AtomicU32::new(if shared { SHARED_SLOW } else { 0 }),
                },
                waiters: WaiterLine {
                    adapt: crate::adapt::Adaptive::new(),
                    policy,
                    shared,
                    registry: crate::future::Registry::new(),
                    #[cfg(loom)]
                    park: futex::ParkModel::new(),
                },
            }
        }
    };
}

impl WaitCell {
    #[cfg(not(loom))]
    cell_ctor!(const);
    #[cfg(loom)]
    cell_ctor!();

    pub(crate) fn registry(&self) -> &crate::future::Registry {
        &self.waiters.registry
    }

    pub(crate) fn state_word(&self) -> &AtomicU32 {
        &self.line.state
    }

    /// The cell's own policy.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(*mwait::WaitCell::new(0).policy(), mwait::WaitPolicy::new());
    /// ```
    pub fn policy(&self) -> &WaitPolicy {
        &self.waiters.policy
    }

    /// Whether parked waiters use process-shared futexes ([`WaitCell::new_shared`];
    /// on Windows and the parking-table targets, bounded sleeps instead).
    ///
    /// # Examples
    ///
    /// ```
    /// assert!(!mwait::WaitCell::new(0).is_shared());
    /// ```
    pub fn is_shared(&self) -> bool {
        self.waiters.shared
    }

    /// The current value (`Acquire`).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(mwait::WaitCell::new(3).load(), 3);
    /// ```
    #[inline]
    pub fn load(&self) -> u32 {
        self.line.value.load(Ordering::Acquire)
    }

    /// The value as an atomic, for operations the cell does not wrap. A change made
    /// through it wakes nobody: follow it with [`notify_all`](Self::notify_all) or
    /// [`notify_one`](Self::notify_one). (Spinning and hardware waiters see it anyway.)
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::atomic::Ordering;
    /// let cell = mwait::WaitCell::new(0);
    /// cell.as_atomic().fetch_xor(5, Ordering::Release);
    /// cell.notify_all();
    /// assert_eq!(cell.load(), 5);
    /// ```
    #[inline]
    pub fn as_atomic(&self) -> &AtomicU32 {
        &self.line.value
    }

    /// Sets the value and wakes every parked waiter (if any).
    ///
    /// # Examples
    ///
    /// ```
    /// let cell = mwait::WaitCell::new(0);
    /// cell.store(9);
    /// assert_eq!(cell.load(), 9);
    /// ```
    #[inline]
    pub fn store(&self, value: u32) {
        if futex::light_notify() {
            // The asymmetric barrier: parking waiters run membarrier(), so a
            // compiler barrier orders our store before our load of `state`.
            self.line.value.store(value, Ordering::Release);
            compiler_fence(Ordering::SeqCst);
            let s = self.line.state.load(Ordering::Relaxed);
            if s != 0 {
                self.wake_slow(s, i32::MAX);
            }
        } else {
            self.line.value.store(value, Ordering::SeqCst);
            self.wake_parked(i32::MAX);
        }
    }

    /// Sets the value, returns the old one, and wakes every parked waiter (if any).
    ///
    /// # Examples
    ///
    /// ```
    /// let cell = mwait::WaitCell::new(1);
    /// assert_eq!(cell.swap(2), 1);
    /// ```
    #[inline]
    pub fn swap(&self, value: u32) -> u32 {
        let old = self.line.value.swap(value, Ordering::SeqCst);
        self.wake_parked(i32::MAX);
        old
    }

    /// Adds `delta` (wrapping), returns the old value, wakes every parked waiter.
    ///
    /// # Examples
    ///
    /// ```
    /// let cell = mwait::WaitCell::new(u32::MAX);
    /// assert_eq!(cell.fetch_add(2), u32::MAX);
    /// assert_eq!(cell.load(), 1);
    /// ```
    #[inline]
    pub fn fetch_add(&self, delta: u32) -> u32 {
        let old = self.line.value.fetch_add(delta, Ordering::SeqCst);
        self.wake_parked(i32::MAX);
        old
    }

    /// ORs in `bits`, returns the old value, wakes every parked waiter.
    ///
    /// # Examples
    ///
    /// ```
    /// let cell = mwait::WaitCell::new(0b01);
    /// assert_eq!(cell.fetch_or(0b10), 0b01);
    /// assert_eq!(cell.load(), 0b11);
    /// ```
    #[inline]
    pub fn fetch_or(&self, bits: u32) -> u32 {
        let old = self.line.value.fetch_or(bits, Ordering::SeqCst);
        self.wake_parked(i32::MAX);
        old
    }

    /// ANDs with `bits`, returns the old value, wakes every parked waiter.
    ///
    /// # Examples
    ///
    /// ```
    /// let cell = mwait::WaitCell::new(0b11);
    /// assert_eq!(cell.fetch_and(0b10), 0b11);
    /// assert_eq!(cell.load(), 0b10);
    /// ```
    #[inline]
    pub fn fetch_and(&self, bits: u32) -> u32 {
        let old = self.line.value.fetch_and(bits, Ordering::SeqCst);
        self.wake_parked(i32::MAX);
        old
    }

    /// Replaces `current` with `new` if the value is `current`, then wakes every
    /// parked waiter. Returns the previous value: `Ok` if it was replaced.
    ///
    /// # Examples
    ///
    /// ```
    /// let cell = mwait::WaitCell::new(1);
    /// assert_eq!(cell.compare_exchange(1, 2), Ok(1));
    /// assert_eq!(cell.compare_exchange(1, 3), Err(2));
    /// ```
    #[inline]
    pub fn compare_exchange(&self, current: u32, new: u32) -> Result<u32, u32> {
        let r = self
            .line
            .value
            .compare_exchange(current, new, Ordering::SeqCst, Ordering::Acquire);
        if r.is_ok() {
            self.wake_parked(i32::MAX);
        }
        r
    }

    /// Wakes one parked waiter (and one armed async waiter), after a change made
    /// through [`as_atomic`](Self::as_atomic). With predicates that differ between
    /// waiters, prefer [`notify_all`](Self::notify_all): the one woken may not be one
    /// whose predicate now holds. An async waiter chosen by `notify_one` and dropped
    /// before it ran passes the wake to another armed one.
    ///
    /// # Examples
    ///
    /// ```
    /// let cell = mwait::WaitCell::new(0);
    /// cell.notify_one(); // nobody waits: a fence and a load, no system call
    /// ```
    #[inline]
    pub fn notify_one(&self) {
        fence(Ordering::SeqCst);
        self.wake_parked(1);
    }

    /// Wakes every parked waiter, after a change made through
    /// [`as_atomic`](Self::as_atomic).
    ///
    /// # Examples
    ///
    /// ```
    /// let cell = mwait::WaitCell::new(0);
    /// cell.notify_all();
    /// ```
    #[inline]
    pub fn notify_all(&self) {
        fence(Ordering::SeqCst);
        self.wake_parked(i32::MAX);
    }

    /// The notifier's second half: one load of `state`, and the cold path only when
    /// somebody is parked or registered.
    #[inline(always)]
    fn wake_parked(&self, n: i32) {
        loom_sc_fence();
        let s = self.line.state.load(Ordering::SeqCst);
        if s != 0 {
            self.wake_slow(s, n);
        }
    }

    #[cold]
    #[inline(never)]
    fn wake_slow(&self, mut state: u32, n: i32) {
        if state & (SHARED_SLOW | FENCED) != 0 {
            // A waiter may be parking right now without membarrier (in another
            // process, or on a FENCED cell): order our store before this second look
            // at `state` with a full fence.
            fence(Ordering::SeqCst);
            state = self.line.state.load(Ordering::SeqCst);
            if state == FENCED {
                // Nobody parked or armed: back to the light path. Fails (harmlessly)
                // if a waiter announced itself since our load.
                let _ = self.line.state.compare_exchange(
                    FENCED,
                    0,
                    Ordering::SeqCst,
                    Ordering::Relaxed,
                );
            }
        }
        if state & PARKED_MASK != 0 {
            #[cfg(not(loom))]
            futex::wake(&self.line.value, n, self.waiters.shared);
            #[cfg(loom)]
            {
                let _ = n;
                self.waiters.park.wake();
            }
            // Remember the hand-off (the answer we may wait for next comes after the
            // partner's wake-up), unless the partner shares our CPU. After the wake,
            // not before: this bookkeeping (the CPU number, the cell's score) is not
            // on the woken waiter's path then.
            if !self.waiters.adapt.waking_on_same_cpu() {
                crate::adapt::note_woke();
            }
        }
        if state & ASYNC_REGISTERED != 0 {
            self.wake_async(if n == 1 { 1 } else { usize::MAX });
        }
    }

    /// Blocks until `pred` accepts the value; returns that value. Never returns
    /// spuriously: the predicate has held for the returned value.
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
        let v = self.load();
        if pred(v) {
            return v;
        }
        if let Some(v) = self.quick_spin(&mut pred, policy) {
            return v;
        }
        self.wait_slow(&mut pred, None, policy).value()
    }

    /// The first loads of the spin tier inline, in the caller's frame, on a cell whose
    /// last spin caught the change: a partner that answers within a few hundred ns
    /// (a ping-pong between nearby cores) is then seen without entering the ladder
    /// at all, whose call, policy resolution and bookkeeping sat on the round trip
    /// (10–20 ns per wait on the 2-vCPU VM's fast core pairs). At most
    /// `QUICK_SPIN_LOADS` pauses; the ladder's own budget starts after them. Untimed
    /// waits only.
    #[inline(always)]
    fn quick_spin(&self, pred: &mut impl FnMut(u32) -> bool, policy: &WaitPolicy) -> Option<u32> {
        if !(policy.allows_quick_spin() && self.waiters.adapt.quick_spin_ok()) {
            return None;
        }
        for _ in 0..QUICK_SPIN_LOADS {
            spin_hint();
            let v = self.line.value.load(Ordering::Acquire);
            if pred(v) {
                return Some(v);
            }
        }
        None
    }

    /// Blocks while the value equals `old`; returns the new value.
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

    /// Blocks until `pred` accepts the value or `timeout` passes.
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
        self.wait_deadline_ns(pred, clock::after(timeout), &self.waiters.policy)
    }

    /// Blocks until `pred` accepts the value or the clock reaches `deadline`.
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
        self.wait_deadline_ns(pred, clock::instant_to_ns(deadline), &self.waiters.policy)
    }

    /// [`wait_until_deadline`](Self::wait_until_deadline) with a per-call policy.
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
        self.wait_deadline_ns(pred, clock::instant_to_ns(deadline), policy)
    }

    /// Blocks while the value equals `old`, at most `timeout`.
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

    #[inline]
    fn wait_deadline_ns(
        &self,
        mut pred: impl FnMut(u32) -> bool,
        deadline_ns: u64,
        policy: &WaitPolicy,
    ) -> WaitResult {
        let v = self.load();
        if pred(v) {
            return WaitResult::Ready(v);
        }
        // No inline round here: it does not read the clock, and a timed wait keeps
        // the ladder's bound on how far it may run past its deadline (one round).
        self.wait_slow(&mut pred, Some(deadline_ns), policy)
    }

    /// The tier ladder: spin → hardware wait → park (or yield, if parking is off).
    #[cold]
    #[inline(never)]
    fn wait_slow(
        &self,
        pred: &mut dyn FnMut(u32) -> bool,
        deadline: Option<u64>,
        policy: &WaitPolicy,
    ) -> WaitResult {
        let pol: Resolved = policy.resolve();
        let cap = |t: u64| deadline.map_or(t, |d| t.min(d));
        let word = &self.line.value;

        // Tier 1: bounded spin. The clock and the run-queue check are read only
        // where a spin or a hardware wait may follow: a waiter that goes straight to
        // park (a slow producer) pays for neither.
        let handoff = crate::adapt::take_woke();
        let spin_ns = match pol.adaptive {
            false => pol.spin_ns,
            true => {
                let base = if handoff && pol.spin_ns > 0 {
                    pol.spin_ns.max(crate::adapt::HANDOFF_SPIN_NS)
                } else {
                    pol.spin_ns
                };
                self.waiters.adapt.spin_budget(base, handoff)
            }
        };
        let hw_wanted = pol.hw.is_some() && pol.hw_ns > 0;
        // Whether the CPU we would hold is needed by others. A wait that will spin
        // starts from the last reading of the run queue and spins its first round of
        // loads before it reads the clock at all: a partner that answers within a
        // few hundred ns (a ping-pong between nearby cores) is caught without the
        // time that the clock reads and the checks cost (before this, 77 ns from the
        // call to the first re-check: `mwait-experiments first-recheck`), which
        // would otherwise sit on the round trip. The reading is refreshed right after
        // that round, or here when it says no, so that a "no" cannot stick.
        let mut can_help = !pol.adaptive
            || (spin_ns == 0 && !hw_wanted)
            || crate::adapt::spinning_could_help()
            || crate::adapt::spinning_can_help(now_ns());
        let spin_ns = if can_help { spin_ns } else { 0 };
        let mut spun = spin_ns > 0;
        if spun {
            let mut hit = spin::spin_round(word, &mut *pred, pol.spin_pause);
            if hit.is_none() {
                // The budget counts from this first clock reading, one round of loads
                // after the spin began: a spin may last one round (LOADS_PER_CLOCK_READ
                // pauses) longer than its budget, as its end may already overshoot.
                let now = now_ns();
                if pol.adaptive && !crate::adapt::spinning_can_help(now) {
                    // The fresh reading says the CPUs are needed: stop, and do not
                    // count this as a failed spin.
                    can_help = false;
                    spun = false;
                } else {
                    hit = spin::spin_until(
                        word,
                        &mut *pred,
                        cap(now.saturating_add(spin_ns)),
                        pol.spin_pause,
                    );
                }
            }
            if spun && pol.adaptive {
                let adapt = &self.waiters.adapt;
                adapt.note_caught(hit.is_some());
                if handoff {
                    adapt.record_handoff_spin(hit.is_some());
                } else {
                    adapt.record_spin(hit.is_some());
                }
            }
            if let Some(v) = hit {
                return WaitResult::Ready(v);
            }
        }
        // Learning from a wait that did not spin: did it end soon enough for a spin
        // to have caught it? Answered with the clock where the hardware tier ran (its
        // start is read anyway), else by whether the waiter ever slept in the kernel.
        let learn = pol.adaptive && !spun;
        let mut hw_start = None;
        let done = |hw_start: Option<u64>, slept: bool| {
            if learn {
                match hw_start {
                    Some(t) => self
                        .waiters
                        .adapt
                        .record_unspun_wait(t, now_ns(), pol.spin_ns),
                    None if !slept => self.waiters.adapt.record_spin(true),
                    None => {}
                }
            }
        };

        // Tier 2: hardware wait, bounded by its own budget (skipped, like the spin,
        // when the CPU we would hold is needed by others).
        if let (Some(hw), true) = (pol.hw, hw_wanted && can_help) {
            let t = now_ns();
            hw_start = Some(t);
            let until = cap(t.saturating_add(pol.hw_ns));
            loop {
                let v = word.load(Ordering::Acquire);
                if pred(v) {
                    done(hw_start, false);
                    return WaitResult::Ready(v);
                }
                if now_ns() >= until {
                    break;
                }
                match hw.wait_episode(word, v, until, pol.cstate) {
                    HwWake::Woken | HwWake::Deadline => {}
                    HwWake::Yield => break,
                }
            }
        }

        // Tier 3: park (or yield rounds when parking is off).
        let mut slept = false;
        loop {
            let v = word.load(Ordering::Acquire);
            if pred(v) {
                done(hw_start, slept);
                return WaitResult::Ready(v);
            }
            if deadline.is_some_and(|d| now_ns() >= d) {
                return WaitResult::TimedOut(v);
            }
            if !pol.park {
                // Never parks: spin in rounds, giving the CPU back between rounds so
                // that a partner waiting for this CPU gets it at least then.
                let round = pol.spin_ns.max(NO_PARK_SPIN_ROUND_NS);
                if let Some(v) = spin::spin_until(
                    word,
                    &mut *pred,
                    cap(now_ns().saturating_add(round)),
                    pol.spin_pause,
                ) {
                    return WaitResult::Ready(v);
                }
                yield_now();
                continue;
            }
            match self.park(&mut *pred, deadline) {
                Ok(v) => {
                    done(hw_start, slept);
                    return WaitResult::Ready(v);
                }
                Err(Parked::Woken) => slept = true,
                Err(Parked::TimedOut) => {
                    let v = word.load(Ordering::Acquire);
                    return if pred(v) {
                        WaitResult::Ready(v)
                    } else {
                        WaitResult::TimedOut(v)
                    };
                }
            }
        }
    }

    /// One park: announce, re-check, sleep, withdraw. `Ok(v)` when the re-check found
    /// the predicate true.
    fn park(
        &self,
        pred: &mut dyn FnMut(u32) -> bool,
        deadline: Option<u64>,
    ) -> Result<u32, Parked> {
        let word = &self.line.value;
        self.waiters.adapt.note_parking();
        self.waiters.adapt.note_caught(false);
        let old = self.line.state.fetch_add(1, Ordering::SeqCst); // (3)
        loom_sc_fence();
        if old & FENCED == 0 {
            self.waiter_barrier();
            self.line.state.fetch_or(FENCED, Ordering::SeqCst);
        }
        let v = word.load(Ordering::SeqCst); // (4)
        if pred(v) {
            self.line.state.fetch_sub(1, Ordering::Relaxed);
            return Ok(v);
        }
        #[cfg(not(loom))]
        let r = futex::wait(word, v, deadline, self.waiters.shared);
        #[cfg(loom)]
        let r = self.waiters.park.wait(word, v, deadline);
        self.line.state.fetch_sub(1, Ordering::Relaxed);
        Err(r)
    }

    /// The heavy half of the barrier between announcing a waiter in `state` and the
    /// re-check of the value (see "Notes about memory ordering"). A process-shared
    /// cell's notifiers always fence (its `SHARED_SLOW` bit), so its waiters need no
    /// `membarrier`, which would not reach another process's notifier anyway; a
    /// plain fence also keeps a child of `fork()` off the one-time registration,
    /// whose lock another thread of the parent may have held at the fork.
    #[inline]
    pub(crate) fn waiter_barrier(&self) {
        if self.waiters.shared {
            fence(Ordering::SeqCst);
        } else {
            futex::waiter_barrier();
        }
    }

    /// How many waiters are parked right now (a snapshot, for tests and reports).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(mwait::WaitCell::new(0).parked_waiters(), 0);
    /// ```
    pub fn parked_waiters(&self) -> u32 {
        self.line.state.load(Ordering::Relaxed) & PARKED_MASK
    }
}
