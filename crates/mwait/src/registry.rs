//! The async registry of a cell: a slab of waker slots behind a mutex, and its API
//! over the cell's state word (arm, disarm, wake `n`), which keeps the word's
//! `ASYNC_REGISTERED` bit equal to "some slot is armed".
//!
//! A future that finds the predicate false arms a waker here, which sets
//! `ASYNC_REGISTERED` in `state` with a `SeqCst` read-modify-write under the lock; the
//! protocol (`protocol.rs`) then runs the waiter's barrier and the future re-checks
//! the value: the Dekker pairing of the ordering notes, with "arm a waker" in place of
//! "park". A notifier that sees the bit takes every armed waker out under the mutex,
//! clears the bit when none is left, and wakes them after unlocking.

use crate::primitive::{const_fn_unless_loom, AtomicU32, Mutex, Ordering};
use std::task::Waker;

/// The bit of the cell's state word that says "some slot is armed" (the protocol's
/// bit table lists it beside the others).
pub(crate) const ASYNC_REGISTERED: u32 = 0x8000_0000;

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

impl Slab {
    /// Takes up to `n` armed wakers (marking them picked when `n` is 1).
    fn take_wakers(&mut self, n: usize) -> Vec<Waker> {
        let mut out = Vec::new();
        for slot in self.slots.iter_mut() {
            if out.len() >= n {
                break;
            }
            if let Some(w) = slot.waker.take() {
                slot.picked = n == 1;
                out.push(w);
            }
        }
        self.armed -= out.len();
        out
    }

    /// Clears the word's `ASYNC_REGISTERED` bit when no slot is armed any more.
    fn clear_bit_if_idle(&self, state: &AtomicU32) {
        if self.armed == 0 {
            state.fetch_and(!ASYNC_REGISTERED, Ordering::SeqCst);
        }
    }
}

/// The async registry of a cell.
#[derive(Debug)]
pub(crate) struct Registry {
    slab: Mutex<Slab>,
}

impl Registry {
    const_fn_unless_loom! {
        pub(crate) fn new() -> Registry {
            Registry {
                slab: Mutex::new(Slab {
                    slots: Vec::new(),
                    free: Vec::new(),
                    armed: 0,
                }),
            }
        }
    }

    /// Arms `waker` in slot `key` (allocating one if `key` is `None`) and publishes it
    /// in `state`.
    pub(crate) fn arm(&self, state: &AtomicU32, key: &mut Option<usize>, waker: &Waker) {
        let mut slab = self.slab.lock();
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
        state.fetch_or(ASYNC_REGISTERED, Ordering::SeqCst);
        drop(slab);
    }

    /// Releases slot `key`. `forward`: pass an unconsumed `notify_one` on.
    pub(crate) fn disarm(&self, state: &AtomicU32, key: usize, forward: bool) {
        let mut slab = self.slab.lock();
        let slot = &mut slab.slots[key];
        let had_waker = slot.waker.take().is_some();
        let picked = std::mem::take(&mut slot.picked);
        slot.owned = false;
        if had_waker {
            slab.armed -= 1;
        }
        slab.free.push(key);
        let pass_on = if forward && picked {
            slab.take_wakers(1)
        } else {
            Vec::new()
        };
        slab.clear_bit_if_idle(state);
        drop(slab);
        pass_on.into_iter().for_each(Waker::wake);
    }

    /// The notifier's side: wakes up to `n` armed futures. Called from the cold wake
    /// path when `state` has `ASYNC_REGISTERED`.
    pub(crate) fn wake(&self, state: &AtomicU32, n: usize) {
        let mut slab = self.slab.lock();
        let wakers = slab.take_wakers(n);
        slab.clear_bit_if_idle(state);
        drop(slab);
        wakers.into_iter().for_each(Waker::wake);
    }

    /// How many futures are armed right now (a snapshot).
    pub(crate) fn armed(&self) -> usize {
        self.slab.lock().armed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn waker() -> (Arc<Count>, Waker) {
        let c = Arc::new(Count(AtomicUsize::new(0)));
        (c.clone(), Waker::from(c))
    }

    #[test]
    fn the_state_bit_says_whether_a_slot_is_armed() {
        let (state, r) = (AtomicU32::new(0), Registry::new());
        let (_, w) = waker();
        let (mut a, mut b) = (None, None);
        r.arm(&state, &mut a, &w);
        r.arm(&state, &mut b, &w);
        assert_eq!(state.load(Ordering::Relaxed), ASYNC_REGISTERED);
        assert_eq!(r.armed(), 2);
        r.disarm(&state, a.unwrap(), false);
        assert_eq!(
            state.load(Ordering::Relaxed),
            ASYNC_REGISTERED,
            "b is armed"
        );
        r.disarm(&state, b.unwrap(), false);
        assert_eq!(state.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_dropped_pick_of_notify_one_passes_the_wake_on() {
        let (state, r) = (AtomicU32::new(0), Registry::new());
        let (ca, wa) = waker();
        let (cb, wb) = waker();
        let (mut a, mut b) = (None, None);
        r.arm(&state, &mut a, &wa);
        r.arm(&state, &mut b, &wb);
        r.wake(&state, 1);
        assert_eq!(
            ca.0.load(Ordering::Relaxed),
            1,
            "the first armed slot is picked"
        );
        assert_eq!(cb.0.load(Ordering::Relaxed), 0);
        r.disarm(&state, a.unwrap(), true);
        assert_eq!(
            cb.0.load(Ordering::Relaxed),
            1,
            "its drop forwards the wake"
        );
        assert_eq!(state.load(Ordering::Relaxed), 0, "nothing armed any more");
    }
}
