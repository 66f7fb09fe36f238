//! [`Barrier`]: a reusable barrier on one [`WaitCell`], so that the threads that wait
//! for the last arrival climb the same tier ladder (spin, hardware wait, park) as any
//! other wait, and the last arrival's release is one store.

use crate::cell::WaitCell;
use crate::policy::WaitPolicy;
use crate::primitive::Ordering;

/// Bits of the cell that count arrivals in the current generation.
const COUNT_MASK: u32 = 0xffff;
/// The generation lives above the count.
const GENERATION_SHIFT: u32 = 16;

/// A reusable barrier for up to 65 535 threads.
///
/// The cell holds the generation (high 16 bits) and the arrivals of that generation
/// (low 16 bits). Each arrival is one `fetch_add`, which wakes nobody; the last one
/// stores the next generation with a zero count, which releases everybody (one wake
/// of the parked parties per generation); the others wait until the generation
/// changes.
///
/// # Examples
///
/// ```
/// use mwait::Barrier;
/// use std::sync::Arc;
///
/// let barrier = Arc::new(Barrier::new(3));
/// let threads: Vec<_> = (0..3)
///     .map(|_| {
///         let b = barrier.clone();
///         std::thread::spawn(move || b.wait())
///     })
///     .collect();
/// let leaders = threads
///     .into_iter()
///     .map(|t| t.join().unwrap())
///     .filter(|&leader| leader)
///     .count();
/// assert_eq!(leaders, 1);
/// ```
#[derive(Debug)]
pub struct Barrier {
    cell: WaitCell,
    n: u32,
}

impl Barrier {
    /// A barrier for `n` threads, with the default wait policy. A barrier of 0 is one
    /// of 1, as `std::sync::Barrier::new(0)` is: each wait returns at once, as the
    /// leader.
    ///
    /// # Panics
    ///
    /// When `n` is above 65 535.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = mwait::Barrier::new(1);
    /// assert!(b.wait(), "a barrier of one releases at once, as its leader");
    /// let none = mwait::Barrier::new(0);
    /// assert!(none.wait() && none.parties() == 1);
    /// ```
    pub fn new(n: u32) -> Barrier {
        Barrier::with_policy(n, WaitPolicy::new())
    }

    /// A barrier whose waits use `policy`; `n` as in [`new`](Self::new).
    ///
    /// # Panics
    ///
    /// When `n` is above 65 535.
    ///
    /// # Examples
    ///
    /// ```
    /// use mwait::{Barrier, WaitPolicy};
    /// use std::time::Duration;
    /// let b = Barrier::with_policy(2, WaitPolicy::new().spin(Duration::from_micros(20)));
    /// assert_eq!(b.parties(), 2);
    /// ```
    pub fn with_policy(n: u32, policy: WaitPolicy) -> Barrier {
        assert!(
            n <= COUNT_MASK,
            "mwait::Barrier: {n} parties; it takes at most {COUNT_MASK}"
        );
        Barrier {
            cell: WaitCell::with_policy(0, policy),
            n: n.max(1),
        }
    }

    /// How many threads the barrier waits for.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(mwait::Barrier::new(4).parties(), 4);
    /// ```
    pub fn parties(&self) -> u32 {
        self.n
    }

    /// Blocks until all parties have called `wait` in this generation. Returns `true`
    /// in exactly one of them (the last to arrive, the leader), as
    /// `std::sync::BarrierWaitResult::is_leader` does.
    ///
    /// # Panics
    ///
    /// Only with `MWAIT_STRICT=1`, when a setting this machine cannot honour is
    /// refused (the crate docs' "Environment"); without it no setting makes this panic.
    ///
    /// # Examples
    ///
    /// ```
    /// let b = mwait::Barrier::new(1);
    /// for _ in 0..3 {
    ///     assert!(b.wait());
    /// }
    /// ```
    pub fn wait(&self) -> bool {
        // A plain read-modify-write, not the cell's waking `fetch_add`: an arrival
        // that is not the last changes no waiter's predicate (they wait for the
        // generation to change), so it wakes nobody. Only the last arrival's `store`
        // wakes the parked parties, once per generation. (A hardware waiter's
        // monitor still sees the write and re-checks; a parker whose futex wait
        // races it finds the word changed and re-checks too.)
        let old = self.cell.as_atomic().fetch_add(1, Ordering::SeqCst);
        let generation = old >> GENERATION_SHIFT;
        if (old & COUNT_MASK) + 1 == self.n {
            self.cell
                .store(generation.wrapping_add(1) << GENERATION_SHIFT);
            return true;
        }
        self.cell
            .wait_until(|v| v >> GENERATION_SHIFT != generation);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    #[test]
    fn no_thread_passes_before_all_arrive_and_one_leads_each_round() {
        const THREADS: u32 = 4;
        // Miri runs each round some ten thousand times slower.
        const ROUNDS: u32 = if cfg!(miri) { 10 } else { 2_000 };
        let barrier = Arc::new(Barrier::new(THREADS));
        let arrived = Arc::new(AtomicU32::new(0));
        let leaders = Arc::new(AtomicU32::new(0));
        let ts: Vec<_> = (0..THREADS)
            .map(|_| {
                let (b, a, l) = (barrier.clone(), arrived.clone(), leaders.clone());
                std::thread::spawn(move || {
                    for round in 0..ROUNDS {
                        a.fetch_add(1, Ordering::SeqCst);
                        if b.wait() {
                            l.fetch_add(1, Ordering::SeqCst);
                        }
                        // Everyone of this round has arrived once we pass.
                        assert!(a.load(Ordering::SeqCst) >= (round + 1) * THREADS);
                        b.wait();
                    }
                })
            })
            .collect();
        for t in ts {
            t.join().unwrap();
        }
        assert_eq!(leaders.load(Ordering::SeqCst), ROUNDS);
    }

    #[test]
    fn generations_wrap_around() {
        let b = Barrier::new(1);
        for _ in 0..(1 << 16) + 5 {
            assert!(b.wait());
        }
    }

    #[test]
    fn zero_parties_is_one_as_in_std() {
        let (ours, std) = (Barrier::new(0), std::sync::Barrier::new(0));
        for _ in 0..3 {
            assert_eq!(ours.wait(), std.wait().is_leader());
        }
        assert_eq!(ours.parties(), 1);
    }

    #[test]
    #[should_panic(expected = "it takes at most 65535")]
    fn too_many_parties_is_refused() {
        let _ = Barrier::new(COUNT_MASK + 1);
    }
}
