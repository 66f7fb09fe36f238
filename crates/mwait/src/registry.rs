//! The async registry of a cell: a slab of waker slots behind a mutex, and its API
//! over the cell's state word (arm, disarm, wake `n`), which keeps the word's
//! `ASYNC_REGISTERED` bit equal to "some slot is armed".
//!
//! A future that finds the predicate false arms a waker here, which sets
//! `ASYNC_REGISTERED` in `state` with a `SeqCst` read-modify-write under the lock; the
//! protocol (`protocol.rs`) then runs the waiter's barrier and the future re-checks
//! the value: the Dekker pairing of the ordering notes, with "arm a waker" in place of
//! "park". A notifier that sees the bit takes every armed waker out under the mutex,
//! clears the bit when none is left, and wakes them after unlocking. `notify_one` takes
//! the armed slots in turn (from the one after its previous pick), so no armed future
//! starves while another keeps re-arming.

use crate::primitive::{const_fn_unless_loom, AtomicU32, Mutex, Ordering};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
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
    /// The slot where the next `notify_one` starts looking: one past the last slot it
    /// picked, so that a future that re-arms in the same slot at once does not take
    /// every `notify_one` while another armed future starves.
    next: usize,
}

impl Slab {
    /// Takes up to `n` armed wakers (marking them picked when `n` is 1), looking from
    /// the slot after the previous pick round the slab.
    fn take_wakers(&mut self, n: usize) -> Vec<Waker> {
        let mut out = Vec::new();
        let len = self.slots.len();
        for i in 0..len {
            if out.len() >= n {
                break;
            }
            let k = (self.next + i) % len;
            let slot = &mut self.slots[k];
            if let Some(w) = slot.waker.take() {
                slot.picked = n == 1;
                out.push(w);
                if n == 1 {
                    self.next = k + 1;
                }
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

/// Wakes every waker of `wakers`, even when one of them panics: the panic is held
/// until the others have been woken, then resumed (the first one, if several
/// panic). Each armed waker was taken out of its slot already; one left unwoken
/// would leave its future pending for ever.
fn wake_all(wakers: Vec<Waker>) {
    let mut panic = None;
    for w in wakers {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| w.wake())) {
            panic.get_or_insert(p);
        }
    }
    if let Some(p) = panic {
        resume_unwind(p);
    }
}

/// The async registry of a cell.
///
/// Wakers run code of the future's executor when they are cloned, dropped or woken,
/// and that code may touch this very cell (a waker that notifies from its drop):
/// none of the three happens under the registry's lock. Clones are made before it is
/// taken, and wakers taken out of slots are dropped or woken after it is released.
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
                    next: 0,
                }),
            }
        }
    }

    /// Arms `waker` in slot `key` (allocating one if `key` is `None`) and publishes it
    /// in `state` with a `SeqCst` read-modify-write, whose result (the state before
    /// it) is returned: the protocol reads its `FENCED` bit.
    pub(crate) fn arm(&self, state: &AtomicU32, key: &mut Option<usize>, waker: &Waker) -> u32 {
        // Cloned before the lock: a clone may run executor code that notifies this cell.
        let mut new = Some(waker.clone());
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
            // `will_wake` compares the wakers' data and vtable pointers: no executor
            // code runs under the lock. The replaced waker (or our unused clone) is
            // dropped after unlocking.
            Some(w) => {
                if !w.will_wake(waker) {
                    std::mem::swap(w, new.as_mut().expect("not taken yet"));
                }
            }
            None => {
                slot.waker = new.take();
                slab.armed += 1;
            }
        }
        // Published under the lock, so a notifier that sees the bit and then takes
        // the lock sees this slot. `SeqCst`: the first half of the Dekker pair.
        let old = state.fetch_or(ASYNC_REGISTERED, Ordering::SeqCst);
        drop(slab);
        drop(new);
        old
    }

    /// Sets `bits` in `state` if slot `key` is still armed, under the lock, so that
    /// no notifier takes the slot's waker (and clears `ASYNC_REGISTERED` with it)
    /// between the look at the slot and the write. Returns whether it set them.
    pub(crate) fn set_while_armed(&self, state: &AtomicU32, key: usize, bits: u32) -> bool {
        let slab = self.slab.lock();
        let armed = slab.slots[key].waker.is_some();
        if armed {
            state.fetch_or(bits, Ordering::SeqCst);
        }
        armed
    }

    /// Releases slot `key`. `forward`: pass an unconsumed `notify_one` on.
    pub(crate) fn disarm(&self, state: &AtomicU32, key: usize, forward: bool) {
        let mut slab = self.slab.lock();
        let slot = &mut slab.slots[key];
        let had_waker = slot.waker.take();
        let picked = std::mem::take(&mut slot.picked);
        slot.owned = false;
        if had_waker.is_some() {
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
        // Dropped after unlocking: a waker's drop may notify this cell.
        drop(had_waker);
        wake_all(pass_on);
    }

    /// The notifier's side: wakes up to `n` armed futures. Called from the cold wake
    /// path when `state` has `ASYNC_REGISTERED`.
    pub(crate) fn wake(&self, state: &AtomicU32, n: usize) {
        let mut slab = self.slab.lock();
        let wakers = slab.take_wakers(n);
        slab.clear_bit_if_idle(state);
        drop(slab);
        wake_all(wakers);
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

    /// A registry with two slots armed, each with a waker of its own.
    struct Armed2 {
        state: AtomicU32,
        r: Registry,
        a: (Option<usize>, Arc<Count>, Waker),
        b: (Option<usize>, Arc<Count>, Waker),
    }

    fn armed_two() -> Armed2 {
        let (state, r) = (AtomicU32::new(0), Registry::new());
        let arm = || {
            let (c, w) = waker();
            let mut k = None;
            r.arm(&state, &mut k, &w);
            (k, c, w)
        };
        let (a, b) = (arm(), arm());
        Armed2 { state, r, a, b }
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
        let Armed2 {
            state,
            r,
            a: (a, ca, _),
            b: (_, cb, _),
        } = armed_two();
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

    #[test]
    fn notify_one_takes_the_armed_slots_in_turn() {
        let Armed2 {
            state,
            r,
            a: (mut a, ca, wa),
            b: (_, cb, _),
        } = armed_two();
        r.wake(&state, 1);
        // `a` was picked and re-arms in its slot at once, as its task would.
        r.arm(&state, &mut a, &wa);
        r.wake(&state, 1);
        assert_eq!(ca.0.load(Ordering::Relaxed), 1);
        assert_eq!(cb.0.load(Ordering::Relaxed), 1, "b's turn after a's");
    }
}
