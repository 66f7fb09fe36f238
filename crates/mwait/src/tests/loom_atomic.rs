//! Loom model of waits on bare atomics through the waiter table: two words that
//! share a bucket (the model's table has one), a wake of one that must reach a
//! sleeper of its own word, a waiter that skips its barrier on a `FENCED` bucket,
//! and a 64-bit word whose high half alone changes.
//!
//! Run with `RUSTFLAGS="--cfg mwait_loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p mwait
//! --release --lib -- tests::loom_atomic` (`cargo xtask test` does). A lost wake-up shows as a
//! deadlock, which loom reports.

use super::model;

use crate::atomic;
use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;

#[test]
fn two_words_in_one_bucket_each_wake_reaches_its_own_waiter() {
    model(|| {
        let words = Arc::new((AtomicU32::new(0), AtomicU32::new(0)));
        let w = words.clone();
        let wa = thread::spawn(move || atomic::wait(&w.0, 0));
        let w = words.clone();
        let wb = thread::spawn(move || atomic::wait(&w.1, 0));
        words.0.store(1, Ordering::Release);
        assert!(atomic::wake_counted(&words.0, 1) <= 1);
        words.1.store(2, Ordering::Relaxed);
        atomic::wake_one(&words.1);
        assert_eq!(wa.join().unwrap(), 1);
        assert_eq!(wb.join().unwrap(), 2);
        assert_eq!(atomic::parked_waiters(&words.0), 0);
        assert_eq!(atomic::parked_waiters(&words.1), 0);
    });
}

#[test]
fn a_wake_of_another_word_in_the_bucket_rings_nobody() {
    model(|| {
        let words = Arc::new((AtomicU32::new(0), AtomicU32::new(0)));
        let w = words.clone();
        let wb = thread::spawn(move || atomic::wait(&w.1, 0));
        words.0.store(1, Ordering::Relaxed);
        assert_eq!(atomic::wake_counted(&words.0, u32::MAX), 0);
        words.1.store(1, Ordering::Relaxed);
        atomic::wake_all(&words.1);
        assert_eq!(wb.join().unwrap(), 1);
    });
}

#[test]
fn wakes_of_one_hand_each_token_to_a_sleeper() {
    // A semaphore: two waiters take one token each; every post wakes one. A wake of
    // one taken by a waiter that then finds its token without sleeping is passed on.
    model(|| {
        let tokens = Arc::new(AtomicU32::new(0));
        let take = |t: Arc<AtomicU32>| {
            move || loop {
                let v = t.load(Ordering::Acquire);
                if v == 0 {
                    atomic::wait(&*t, 0);
                } else if t
                    .compare_exchange(v, v - 1, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    return;
                }
            }
        };
        let t1 = thread::spawn(take(tokens.clone()));
        let t2 = thread::spawn(take(tokens.clone()));
        for _ in 0..2 {
            tokens.fetch_add(1, Ordering::Release);
            atomic::wake_one(&*tokens);
        }
        t1.join().unwrap();
        t2.join().unwrap();
        assert_eq!(tokens.load(Ordering::Relaxed), 0);
    });
}

#[test]
fn a_waiter_that_skips_its_barrier_on_a_fenced_bucket_sees_every_value() {
    // The waiter waits for each of three values in turn: once a park of its has
    // marked the bucket `FENCED` (after its barrier), its later parks skip theirs,
    // while the notifier's wakes that find it awake count towards clearing the bit
    // (two in a row in the model).
    model(|| {
        let x = Arc::new(AtomicU32::new(0));
        let w = x.clone();
        let t = thread::spawn(move || {
            let mut v = 0;
            while v < 3 {
                v = atomic::wait(&*w, v);
            }
            v
        });
        for v in 1..=3 {
            x.store(v, Ordering::Release);
            atomic::wake_all(&*x);
        }
        assert_eq!(t.join().unwrap(), 3);
        assert_eq!(atomic::parked_waiters(&*x), 0);
    });
}

#[test]
fn a_change_of_the_high_half_alone_wakes_a_u64_waiter() {
    model(|| {
        let x = Arc::new(AtomicU64::new(5));
        let w = x.clone();
        let t = thread::spawn(move || atomic::wait(&*w, 5));
        x.store(5 | (1 << 32), Ordering::Relaxed);
        atomic::wake_one(&*x);
        assert_eq!(t.join().unwrap(), 5 | (1 << 32));
    });
}

/// `wait_any` over a bare word and a cell, `which` of them changed and woken.
fn wait_any_woken_by(which: usize) {
    model(move || {
        let both = Arc::new((AtomicU32::new(0), crate::WaitCell::new(0)));
        let b = both.clone();
        let t = thread::spawn(move || {
            let m = [
                atomic::Member::atomic(&b.0, 0),
                atomic::Member::cell(&b.1, 0),
            ];
            atomic::wait_any(&m)
        });
        if which == 0 {
            both.0.store(7, Ordering::Relaxed);
            atomic::wake_one(&both.0);
        } else {
            both.1.store(7);
        }
        assert_eq!(t.join().unwrap(), (which, 7));
        assert_eq!(atomic::parked_waiters(&both.0), 0);
        assert_eq!(both.1.armed_async_waiters(), 0);
    });
}

#[test]
fn wait_any_is_woken_by_a_bare_member() {
    wait_any_woken_by(0);
}

#[test]
fn wait_any_is_woken_by_a_cell_member() {
    wait_any_woken_by(1);
}
