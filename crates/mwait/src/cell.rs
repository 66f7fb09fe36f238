//! [`WaitCell`]: a 32-bit value alone on its monitor line with the waiter-state word
//! at the start of the next line; its constructors, readers and writers. Its waits
//! (the `wait_*` entry points, the inline spin, the futures) are `cell/wait.rs`.
//!
//! The ordering argument behind the writers and the park is in `protocol.rs` ("Notes
//! about memory ordering"); the tier ladder is `ladder/`.

use crate::ladder::adapt::{self, Adaptive, Caught};
use crate::ladder::stats::{CellStats, WaitStats};
use crate::policy::WaitPolicy;
use crate::primitive::{const_fn_unless_loom, fence, AtomicU32, Ordering};
use crate::protocol::sleepers::Sleepers;
use crate::protocol::MonitorLine;
use crate::sys::park;
use std::fmt;

/// The rest of the cell, after the state word on the line that follows the monitor
/// line: read by waiters, written only by waiters (and the wake stamp, on the notify
/// slow path while a waiter measures). The statistics are eight 32-bit counters, so
/// the cell stays 256 bytes, and they sit past offset 128, in the second 128-byte
/// pair of lines, with the `caught` flag: a waiter writes them on every wait, and
/// the line beside the monitor line (in its 128-byte pair, which adjacent-line
/// prefetchers fetch together into the notifier's cache, and where the notifier
/// reads `state` on every notify) is kept to what waiters mostly read.
#[repr(C)]
struct WaiterLine {
    adapt: Adaptive,
    policy: WaitPolicy,
    stats: CellStats,
    caught: Caught,
    sleepers: Sleepers,
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

impl Default for WaitCell {
    fn default() -> Self {
        WaitCell::new(0)
    }
}

impl fmt::Debug for WaitCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitCell")
            .field("value", &self.load())
            .field("parked", &self.line.parked())
            .field("policy", &self.waiters.policy)
            .field("stats", &self.stats())
            .finish()
    }
}

impl WaitCell {
    const_fn_unless_loom! {
        /// A cell holding `value`, with the default [`WaitPolicy`].
        ///
        /// # Examples
        ///
        /// ```
        /// static CELL: mwait::WaitCell = mwait::WaitCell::new(0);
        /// assert_eq!(CELL.load(), 0);
        /// ```
        pub fn new(value: u32) -> WaitCell {
            WaitCell::build(value, WaitPolicy::new(), false, false)
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
        /// assert_eq!(LOW_LATENCY.policy().spin_budget(), Some(Duration::from_micros(50)));
        /// ```
        pub fn with_policy(value: u32, policy: WaitPolicy) -> WaitCell {
            WaitCell::build(value, policy, false, false)
        }

        /// A cell for a thread parker's state word: an executor's own parker (the
        /// token of [`Parker`](crate::Parker) is one), or any state machine whose
        /// threads sleep until another changes the word with a read-modify-write.
        /// It differs from [`new`](Self::new) in two ways:
        ///
        /// - Its waits spin, and wait in the hardware tier, only on evidence that
        ///   the change is near: the waiting thread changed a cell with a
        ///   read-modify-write or `notify_*` (an unpark, say) or woke a parked
        ///   waiter since its last wait, or the cell's last wait was caught by its
        ///   spin or ended before it slept. Otherwise a wait goes straight to the
        ///   kernel and reads neither the clock nor the run queue, so an idle
        ///   worker's park costs what a futex wait costs.
        /// - Its waiters run no `membarrier` before they sleep. Its
        ///   read-modify-writes (`swap`, `fetch_*`, `compare_exchange`) and
        ///   `notify_*` cost what they cost on any cell, but a
        ///   [`store`](Self::store) on it takes the fenced slow path (a fence and a
        ///   second look at the waiters), as on a shared cell: a parker
        ///   writes its state with exchanges anyway.
        ///
        /// # Examples
        ///
        /// ```
        /// use mwait::WaitCell;
        /// use std::sync::Arc;
        /// const EMPTY: u32 = 0;
        /// const NOTIFIED: u32 = 1;
        /// let token = Arc::new(WaitCell::new_parker(EMPTY));
        /// let t = token.clone();
        /// let unparker = std::thread::spawn(move || t.swap(NOTIFIED));
        /// token.wait_until(|v| v == NOTIFIED);
        /// assert_eq!(token.swap(EMPTY), NOTIFIED);
        /// unparker.join().unwrap();
        /// ```
        pub fn new_parker(value: u32) -> WaitCell {
            WaitCell::parker_with_policy(value, WaitPolicy::new())
        }

        /// [`new_parker`](Self::new_parker) with a policy of its own (`Parker::with_policy`).
        pub(crate) fn parker_with_policy(value: u32, policy: WaitPolicy) -> WaitCell {
            WaitCell::build(value, policy, false, true)
        }

        /// A cell for memory shared between processes (`mmap(MAP_SHARED)`): parked
        /// waiters use non-private futexes, which a notifier in another process can
        /// wake. Hardware waiters need nothing special: monitors watch physical lines.
        /// Async waits ([`wait_until_async`](Self::wait_until_async)) panic on such a
        /// cell: wakers are pointers into one process's memory.
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
        /// A waiter whose process is killed while it is parked leaves its count on
        /// the cell: nothing in the cell tells it from a live waiter about to sleep.
        /// The waiters that remain are still woken, but every later notify makes a
        /// wake system call that finds nobody, where it would be a store and a load,
        /// and [`parked_waiters`](Self::parked_waiters) counts the dead waiter. A
        /// program that restarts crashed workers can map fresh cells for the new ones.
        ///
        /// # Examples
        ///
        /// ```
        /// let cell = mwait::WaitCell::new_shared(0);
        /// assert!(cell.is_shared());
        /// ```
        pub fn new_shared(value: u32) -> WaitCell {
            WaitCell::build(value, WaitPolicy::new(), true, false)
        }

        /// `parker`: the cell of [`new_parker`](Self::new_parker).
        fn build(value: u32, policy: WaitPolicy, shared: bool, parker: bool) -> WaitCell {
            WaitCell {
                line: MonitorLine::new(value, shared || parker),
                waiters: WaiterLine {
                    adapt: Adaptive::new(),
                    policy,
                    stats: CellStats::new(),
                    caught: Caught::new(),
                    sleepers: Sleepers::new(shared, parker),
                },
            }
        }
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
        self.waiters.sleepers.shared()
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
        self.line
            .store(&self.waiters.sleepers, value, &self.waiters.adapt);
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
        self.notify(park::ALL);
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
        self.notify(park::ALL);
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
        self.notify(park::ALL);
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
        self.notify(park::ALL);
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
            self.notify(park::ALL);
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
        self.notify(1);
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
        self.notify(park::ALL);
    }

    /// The notifier's second half (see `protocol.rs`): one load of `state`, and the
    /// cold path only when somebody is parked or registered.
    #[inline(always)]
    fn notify(&self, n: u32) {
        adapt::note_notified();
        self.line
            .notify(&self.waiters.sleepers, n, &self.waiters.adapt);
    }

    /// What the waits on this cell did: how many ended in the inline spin, the spin
    /// tier, the hardware tier, a park or a timeout, the hand-off spins and their
    /// successes, the spurious hardware returns. A wait whose predicate held at the
    /// first look is not counted, nor one whose time was up before it began (a zero
    /// timeout, a deadline already passed). The counters are 32-bit per cell (they
    /// wrap after 2^32 waits); [`stats`](crate::stats()) has the process's 64-bit
    /// totals and the estimates.
    ///
    /// # Examples
    ///
    /// ```
    /// use mwait::WaitCell;
    /// use std::time::Duration;
    ///
    /// let cell = WaitCell::new(0);
    /// let _ = cell.wait_until_timeout(|v| v == 1, Duration::from_millis(1));
    /// let s = cell.stats();
    /// assert_eq!((s.waits(), s.timeout), (1, 1));
    /// ```
    pub fn stats(&self) -> WaitStats {
        self.waiters.stats.snapshot()
    }

    /// How many waiters are parked right now (a snapshot, for tests and reports).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(mwait::WaitCell::new(0).parked_waiters(), 0);
    /// ```
    pub fn parked_waiters(&self) -> u32 {
        self.line.parked()
    }

    /// How many futures are armed right now (a snapshot, for tests and reports).
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(mwait::WaitCell::new(0).armed_async_waiters(), 0);
    /// ```
    pub fn armed_async_waiters(&self) -> usize {
        self.waiters.sleepers.registry().armed()
    }
}

mod rmw;
mod wait;

// The simulated monitor is not in the loom build.
crate::primitive::thread_tests! {
    mod simulated;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn the_counters_sit_off_the_monitor_lines_pair_and_the_cell_is_256_bytes() {
        let stats = offset_of!(WaitCell, waiters) + offset_of!(WaiterLine, stats);
        assert!(stats >= 128, "{stats}");
        let caught = offset_of!(WaitCell, waiters) + offset_of!(WaiterLine, caught);
        assert!(
            caught >= 128,
            "the flag a caught wait writes is off the state's line"
        );
        assert_eq!(size_of::<WaitCell>(), 256);
    }

    #[test]
    fn a_park_reads_nothing_on_the_line_of_the_wake_stamp_and_its_flag_sits_by_shared() {
        let cell = WaitCell::new(0);
        let line = |p: usize| (p - std::ptr::from_ref(&cell) as usize) / 64;
        let (read, stamp) = cell.waiters.sleepers.addresses();
        let cell_line = [
            ("caught", std::ptr::from_ref(&cell.waiters.caught) as usize),
            ("stats", std::ptr::from_ref(&cell.waiters.stats) as usize),
        ];
        for (what, at) in read.into_iter().chain(cell_line) {
            assert_ne!(line(at), line(stamp), "{what} shares the wake stamp's line");
        }
        // The notifier that wakes reads `shared`: the flag that tells it to stamp
        // the wake is on the same line, so its look costs no other.
        let at = |name: &str| read.iter().find(|(n, _)| *n == name).map(|(_, a)| *a);
        assert_eq!(line(at("measuring").unwrap()), line(at("shared").unwrap()));
    }

    #[test]
    fn the_value_is_alone_on_its_line_and_the_state_word_starts_the_next() {
        let cell = WaitCell::new(0);
        let base = std::ptr::from_ref(&cell) as usize;
        assert_eq!(base % 128, 0);
        assert_eq!(std::ptr::from_ref(cell.as_atomic()) as usize, base);
        assert_eq!(offset_of!(WaitCell, line), 0);
        assert_eq!(size_of::<MonitorLine>(), 68);
        assert!(offset_of!(WaitCell, waiters) >= 68);
    }
}
