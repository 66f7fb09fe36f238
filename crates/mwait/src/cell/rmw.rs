//! The waking writers a counter or a semaphore needs beside `fetch_add`: each
//! changes the value with one atomic read-modify-write and wakes every parked
//! waiter, as `fetch_add` does (`cell.rs`).

use super::WaitCell;
use crate::primitive::Ordering;
use crate::sys::park;

impl WaitCell {
    /// Subtracts `delta` (wrapping), returns the old value, wakes every parked
    /// waiter.
    ///
    /// # Examples
    ///
    /// ```
    /// let permits = mwait::WaitCell::new(3);
    /// assert_eq!(permits.fetch_sub(1), 3);
    /// assert_eq!(permits.load(), 2);
    /// ```
    #[inline]
    pub fn fetch_sub(&self, delta: u32) -> u32 {
        let old = self.line.value.fetch_sub(delta, Ordering::SeqCst);
        self.notify(park::ALL);
        old
    }

    /// Stores the larger of the value and `v`, returns the old value, wakes every
    /// parked waiter.
    ///
    /// # Examples
    ///
    /// ```
    /// let high = mwait::WaitCell::new(5);
    /// assert_eq!(high.fetch_max(9), 5);
    /// assert_eq!(high.fetch_max(7), 9);
    /// assert_eq!(high.load(), 9);
    /// ```
    #[inline]
    pub fn fetch_max(&self, v: u32) -> u32 {
        let old = self.line.value.fetch_max(v, Ordering::SeqCst);
        self.notify(park::ALL);
        old
    }

    /// Stores the smaller of the value and `v`, returns the old value, wakes every
    /// parked waiter.
    ///
    /// # Examples
    ///
    /// ```
    /// let low = mwait::WaitCell::new(5);
    /// assert_eq!(low.fetch_min(2), 5);
    /// assert_eq!(low.load(), 2);
    /// ```
    #[inline]
    pub fn fetch_min(&self, v: u32) -> u32 {
        let old = self.line.value.fetch_min(v, Ordering::SeqCst);
        self.notify(park::ALL);
        old
    }

    /// Replaces the value with `f(value)` while `f` returns `Some` (retrying when
    /// another writer came between the load and the exchange), and wakes every
    /// parked waiter once it has. Returns `Ok(old)` after a change, `Err(value)`
    /// when `f` returned `None` (nothing changed, nobody woken), as
    /// `AtomicU32::fetch_update` does.
    ///
    /// # Examples
    ///
    /// ```
    /// // Take a permit if there is one.
    /// let permits = mwait::WaitCell::new(1);
    /// let take = |n: u32| n.checked_sub(1);
    /// assert_eq!(permits.fetch_update(take), Ok(1));
    /// assert_eq!(permits.fetch_update(take), Err(0));
    /// ```
    #[inline]
    pub fn fetch_update(&self, f: impl FnMut(u32) -> Option<u32>) -> Result<u32, u32> {
        let r = self
            .line
            .value
            .fetch_update(Ordering::SeqCst, Ordering::Acquire, f);
        if r.is_ok() {
            self.notify(park::ALL);
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    /// A cell's first value, the value a writer makes of it, and the writer.
    type Case = (u32, u32, fn(&WaitCell));

    /// Each writer wakes a waiter parked for the value it produces.
    #[test]
    fn each_writer_wakes_a_parked_waiter() {
        let writers: [Case; 4] = [
            (5, 4, |c| {
                c.fetch_sub(1);
            }),
            (5, 8, |c| {
                c.fetch_max(8);
            }),
            (5, 1, |c| {
                c.fetch_min(1);
            }),
            (5, 10, |c| {
                c.fetch_update(|v| Some(v * 2)).unwrap();
            }),
        ];
        for (start, want, write) in writers {
            let cell = WaitCell::new(start);
            let park_at_once =
                crate::WaitPolicy::new().backend(crate::backend::kind::Backend::Futex);
            thread::scope(|s| {
                let waiter = s.spawn(|| cell.wait_until_with(|v| v == want, &park_at_once));
                while cell.parked_waiters() == 0 && !waiter.is_finished() {
                    thread::yield_now();
                }
                write(&cell);
                assert_eq!(waiter.join().unwrap(), want);
            });
        }
    }
}
