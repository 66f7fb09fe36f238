//! Loom model of the wait/notify protocol, the clearing of the `FENCED` bit included.
//!
//! Run with `RUSTFLAGS="--cfg mwait_loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p mwait
//! --release --lib -- tests::loom_cell`
//! (`cargo xtask test` does). Loom explores every interleaving (and every weak-memory
//! outcome it models) of the threads below; a lost wake-up shows as a deadlock, which
//! loom reports as a failure.
//!
//! In the model the futex is a mutex (the kernel's bucket lock) plus a condvar, the
//! clock advances 1 ms per reading (so spin and hardware budgets end after one round),
//! timed futex waits return at once as "timed out", and a hardware-wait episode is a
//! yield that may end spuriously.

use super::{model, model_from_both_starts};

use crate::{Backend, WaitCell, WaitPolicy, WaitResult};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

/// Park at once: the interesting interleavings are all in the park path.
fn futex_only() -> WaitPolicy {
    WaitPolicy::new().backend(Backend::Futex)
}

/// Spin (one model round), then park.
fn spin_then_park() -> WaitPolicy {
    WaitPolicy::new()
        .backend(Backend::Futex)
        .spin(Duration::from_nanos(1))
}

/// A hardware tier (loom's stand-in), then park.
fn hardware_then_park() -> WaitPolicy {
    WaitPolicy::new()
        .backend(Backend::Umwait)
        .spin(Duration::ZERO)
        .hardware(Duration::from_nanos(1))
}

#[test]
fn waiter_vs_notifier() {
    model_from_both_starts(|start| {
        let cell = start.cell(0);
        let c = cell.clone();
        let waiter = thread::spawn(move || c.wait_until_with(|v| v == 1, &futex_only()));
        cell.store(1);
        assert_eq!(waiter.join().unwrap(), 1);
        assert_eq!(cell.parked_waiters(), 0);
    });
}

/// A parker's cell: its waiters skip `membarrier`, so a plain store on it must take
/// the fenced path (its `SHARED_SLOW` bit); an exchange needs no second look.
#[test]
fn a_store_or_a_swap_on_a_parker_cell_wakes_its_waiter() {
    for swap in [false, true] {
        model(move || {
            let cell = Arc::new(WaitCell::new_parker(0));
            let c = cell.clone();
            let waiter = thread::spawn(move || c.wait_until_with(|v| v == 1, &futex_only()));
            if swap {
                cell.swap(1);
            } else {
                cell.store(1);
            }
            assert_eq!(waiter.join().unwrap(), 1);
            assert_eq!(cell.parked_waiters(), 0);
        });
    }
}

#[test]
fn waiter_with_spin_vs_fetch_add() {
    model_from_both_starts(|start| {
        let cell = start.cell(0);
        let c = cell.clone();
        let waiter = thread::spawn(move || c.wait_until_with(|v| v != 0, &spin_then_park()));
        cell.fetch_add(1);
        assert_eq!(waiter.join().unwrap(), 1);
    });
}

#[test]
fn notify_after_as_atomic_store() {
    model_from_both_starts(|start| {
        let cell = start.cell(0);
        let c = cell.clone();
        let waiter = thread::spawn(move || c.wait_until_with(|v| v == 7, &futex_only()));
        cell.as_atomic()
            .store(7, loom::sync::atomic::Ordering::Relaxed);
        cell.notify_one();
        assert_eq!(waiter.join().unwrap(), 7);
    });
}

/// Two parked waiters and the `FENCED` bit's idle count: the first waiter's barrier
/// marks the cell `FENCED`, the second may skip its own because of it, and the
/// light notifier's stores count idle notifies and clear the bit (after two in the
/// model) while either waiter announces itself.
#[test]
fn two_waiters_notify_all() {
    model_from_both_starts(|start| {
        let cell = start.cell(0);
        let waiters: Vec<_> = [1u32, 2]
            .into_iter()
            .map(|want| {
                let c = cell.clone();
                // Different predicates: the first is satisfied by the first store,
                // the second only by the second one.
                thread::spawn(move || c.wait_until_with(move |v| v >= want, &futex_only()))
            })
            .collect();
        cell.store(1);
        cell.store(2);
        for w in waiters {
            assert!(w.join().unwrap() >= 1);
        }
        assert_eq!(cell.parked_waiters(), 0);
    });
}

#[test]
fn timed_wait_racing_notify() {
    model_from_both_starts(|start| {
        let cell = start.cell(0);
        let c = cell.clone();
        let waiter = thread::spawn(move || {
            let deadline = std::time::Instant::now() + Duration::from_secs(3600);
            c.wait_until_deadline_with(|v| v == 1, deadline, &futex_only())
        });
        cell.store(1);
        match waiter.join().unwrap() {
            WaitResult::Ready(v) => assert_eq!(v, 1),
            // In the model a timed park may time out at any moment; then the value it
            // reports is one it saw, and the predicate was false for it.
            WaitResult::TimedOut(v) => assert_eq!(v, 0),
        }
        // Whatever happened, the waiter withdrew: a later notify makes no wake call.
        assert_eq!(cell.parked_waiters(), 0);
    });
}

#[test]
fn hardware_waiter_and_parked_waiter_on_one_cell() {
    model_from_both_starts(|start| {
        let cell = start.cell(0);
        let hw = {
            let c = cell.clone();
            thread::spawn(move || c.wait_until_with(|v| v == 1, &hardware_then_park()))
        };
        let parked = {
            let c = cell.clone();
            thread::spawn(move || c.wait_until_with(|v| v == 1, &futex_only()))
        };
        cell.store(1);
        assert_eq!(hw.join().unwrap(), 1);
        assert_eq!(parked.join().unwrap(), 1);
    });
}

/// A waiter that parks, is woken by a value its predicate rejects, withdraws and
/// parks again, while the notifier's next store finds the cell `FENCED` with nobody
/// parked and clears the bit: the compare-exchange that clears it races the
/// waiter's second announcement. Either the clear fails (the waiter was counted
/// first), or the waiter sees no `FENCED` and runs its barrier again; in both cases
/// the last store must reach it.
#[test]
fn notifier_clears_fenced_while_the_waiter_reparks() {
    model_from_both_starts(|start| {
        let cell = start.cell(0);
        let c = cell.clone();
        let waiter = thread::spawn(move || c.wait_until_with(|v| v == 2, &futex_only()));
        cell.store(1);
        cell.store(2);
        assert_eq!(waiter.join().unwrap(), 2);
        assert_eq!(cell.parked_waiters(), 0);
    });
}

/// The same race across two waits of one thread: the second wait announces itself
/// on a cell whose `FENCED` bit a notifier may be clearing at that moment.
#[test]
fn notifier_clears_fenced_between_two_waits() {
    model_from_both_starts(|start| {
        let cell = start.cell(0);
        let c = cell.clone();
        let waiter = thread::spawn(move || {
            c.wait_until_with(|v| v >= 1, &futex_only());
            c.wait_until_with(|v| v == 2, &futex_only())
        });
        cell.store(1);
        cell.store(2);
        assert_eq!(waiter.join().unwrap(), 2);
        assert_eq!(cell.parked_waiters(), 0);
    });
}

/// `notify_one` wakes exactly one parked waiter: two waiters take one token each
/// from the cell (a semaphore: wait for a token, take it with a compare-exchange,
/// else wait again). Both park; a token and a `notify_one` release one of them, which
/// says so on a second cell; a second token and `notify_one` release the other. The
/// model futex counts the sleepers it woke: at most one per `notify_one`. A model
/// that woke every sleeper would wake both at the first (one of them takes the token,
/// the other re-parks) and one more at the second: three.
#[test]
fn notify_one_wakes_one_parked_waiter() {
    use loom::sync::atomic::Ordering::SeqCst;
    model_from_both_starts(|start| {
        let cell = start.cell(0);
        let done = Arc::new(WaitCell::new(0));
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let (c, d) = (cell.clone(), done.clone());
                thread::spawn(move || {
                    loop {
                        let v = c.wait_until_with(|v| v > 0, &futex_only());
                        if c.as_atomic()
                            .compare_exchange(v, v - 1, SeqCst, SeqCst)
                            .is_ok()
                        {
                            break;
                        }
                    }
                    d.fetch_add(1);
                })
            })
            .collect();
        while cell.parked_waiters() < 2 {
            thread::yield_now();
        }
        cell.as_atomic().store(1, SeqCst);
        cell.notify_one();
        done.wait_until_with(|v| v >= 1, &futex_only());
        cell.as_atomic().fetch_add(1, SeqCst);
        cell.notify_one();
        for w in waiters {
            w.join().unwrap();
        }
        assert!(
            cell.model_wakes() <= 2,
            "{} wakes for two notify_one",
            cell.model_wakes()
        );
    });
}

/// Two waiters with different predicates on one cell (the rayon patch's shape): a
/// store that satisfies one of them must reach it even when the other starts to
/// sleep right after the store's wake. The model's futex wakes only the threads
/// already asleep, as `FUTEX_WAKE` does; a queue that let the late sleeper take that
/// wake deadlocked here, though Linux never does.
#[test]
fn a_late_sleeper_does_not_take_an_earlier_sleeper_s_wake() {
    model_from_both_starts(|start| {
        let cell = start.cell(0);
        let (a, b) = (cell.clone(), cell.clone());
        let first = thread::spawn(move || a.wait_until_with(|v| v >= 1, &futex_only()));
        let second = thread::spawn(move || b.wait_until_with(|v| v >= 2, &futex_only()));
        cell.store(1);
        assert!(first.join().unwrap() >= 1);
        cell.store(2);
        assert_eq!(second.join().unwrap(), 2);
        assert_eq!(cell.parked_waiters(), 0);
    });
}

/// Two notifiers add to the cell while the waiter waits for both: one may find the
/// other's wake on its way (`WOKEN`) and skip its own, also while the waiter is
/// between its announcement and its sleep (the first notifier's wake then wakes
/// fewer than it counted, and it wakes once more for the notify that skipped).
#[test]
fn a_notify_that_finds_a_wake_on_its_way_skips_it() {
    model_from_both_starts(|start| {
        let cell = start.cell(0);
        let c = cell.clone();
        let waiter = thread::spawn(move || c.wait_until_with(|v| v == 2, &futex_only()));
        let c = cell.clone();
        let other = thread::spawn(move || {
            c.fetch_add(1);
        });
        cell.fetch_add(1);
        other.join().unwrap();
        assert_eq!(waiter.join().unwrap(), 2);
        assert_eq!(cell.parked_waiters(), 0);
    });
}

/// A ring's pattern: the notifier stores after every step while the waiter, woken
/// by the first store, wants the third; the second and third stores may find the
/// first one's wake on its way and skip theirs.
#[test]
fn stores_after_a_wake_on_its_way_reach_a_waiter_that_parks_again() {
    model_from_both_starts(|start| {
        let cell = start.cell(0);
        let c = cell.clone();
        let waiter = thread::spawn(move || c.wait_until_with(|v| v == 3, &futex_only()));
        for v in 1..=3 {
            cell.store(v);
        }
        assert_eq!(waiter.join().unwrap(), 3);
        assert_eq!(cell.parked_waiters(), 0);
    });
}

/// A wake tree (one sleeper woken by the notifier, the other by it, in the model):
/// one waiter waits untimed, the other with a deadline (in the model a timed park
/// returns at once), so the count may hold a waiter that never sleeps, and the
/// tree's wake may find fewer sleepers than it asked for.
#[test]
fn a_wake_tree_leaves_nobody_asleep() {
    crate::sys::set_model_wake_trees(true);
    model_from_both_starts(|start| {
        let cell = start.cell(0);
        let c = cell.clone();
        let untimed = thread::spawn(move || c.wait_until_with(|v| v == 1, &futex_only()));
        let c = cell.clone();
        let timed = thread::spawn(move || {
            let deadline = std::time::Instant::now() + Duration::from_secs(3600);
            c.wait_until_deadline_with(|v| v == 1, deadline, &futex_only())
        });
        cell.store(1);
        assert_eq!(untimed.join().unwrap(), 1);
        let _ = timed.join().unwrap();
        assert_eq!(cell.parked_waiters(), 0);
    });
    crate::sys::set_model_wake_trees(false);
}
