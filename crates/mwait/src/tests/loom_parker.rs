//! Loom models of `Parker`: the token (an unpark is never lost, a park never returns
//! without one, unparks before a park leave one token) and an unpark racing a timed
//! park's timeout (the token is taken by exactly one park).
//!
//! Run with `RUSTFLAGS="--cfg mwait_loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p mwait
//! --release --lib -- tests::loom_parker` (`cargo xtask test` does). A lost unpark shows as a
//! deadlock, which loom reports as a failure. In the model a timed park may time out
//! at any moment (timed futex waits return at once, the clock advances 1 ms per
//! reading), so every interleaving of a timeout with an unpark is explored.
//!
//! `block_on` is not modelled: its per-thread cache is a std thread-local, which
//! loom's threads (all on one OS thread) and executions would share; it is
//! `Parker::park` and the waker below, which are.

use super::model;

use crate::{Backend, Parker, WaitPolicy};
use loom::sync::atomic::{AtomicU32, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::task::Waker;
use std::time::{Duration, Instant};

/// The ladders a park may climb: straight to the futex (where the interleavings of
/// a lost wake-up are), a spin first, and loom's hardware stand-in first. The spin
/// and the hardware episodes yield, which lets loom run the other threads first;
/// only a park that goes straight to the futex reaches every order of a park and an
/// unpark, so every model runs with each.
fn policies() -> [WaitPolicy; 3] {
    [
        WaitPolicy::new().backend(Backend::Futex),
        WaitPolicy::new()
            .backend(Backend::Futex)
            .spin(Duration::from_nanos(1)),
        WaitPolicy::new()
            .backend(Backend::Umwait)
            .spin(Duration::ZERO)
            .hardware(Duration::from_nanos(1)),
    ]
}

/// An unpark from another thread ends a park, whichever comes first; the park
/// returns only after the unpark set the token, so the unparker's earlier write is
/// visible; the token is gone afterwards.
#[test]
fn unpark_ends_a_park() {
    for policy in policies() {
        model(move || {
            let p = Parker::with_policy(policy);
            let u = p.unparker();
            let data = Arc::new(AtomicU32::new(0));
            let d = data.clone();
            let t = thread::spawn(move || {
                d.store(1, Ordering::Relaxed);
                assert!(u.unpark(), "nobody else set the token");
            });
            p.park();
            assert_eq!(
                data.load(Ordering::Relaxed),
                1,
                "park returned without the token"
            );
            t.join().unwrap();
            assert!(!p.park_timeout(Duration::ZERO), "the park took the token");
        });
    }
}

/// Two unparkers, one park: one token is set (one unpark returns `true` unless the
/// park took the first token before the second came, then both do), the park takes
/// one, and whatever is left is at most one token, which the counts account for.
#[test]
fn two_unparks_one_park() {
    for policy in policies() {
        model(move || {
            let p = Parker::with_policy(policy);
            let ts: Vec<_> = (0..2)
                .map(|_| {
                    let u = p.unparker();
                    thread::spawn(move || u32::from(u.unpark()))
                })
                .collect();
            p.park();
            let set: u32 = ts.into_iter().map(|t| t.join().unwrap()).sum();
            let left = u32::from(p.park_timeout(Duration::ZERO));
            assert!((1..=2).contains(&set));
            assert_eq!(1 + left, set, "each token set is taken once");
        });
    }
}

/// An unpark racing a timed park: the park returns `true` exactly when it took the
/// token; when it returns `false`, the token (if the unpark set it) is still there
/// for the next park. No token is lost and none is taken twice.
#[test]
fn unpark_racing_a_timeout() {
    for policy in policies() {
        model(move || {
            let p = Parker::with_policy(policy);
            let u = p.unparker();
            let t = thread::spawn(move || u.unpark());
            let deadline = Instant::now() + Duration::from_secs(3600);
            let took = p.park_deadline(deadline);
            let set = t.join().unwrap();
            assert!(set, "only this unpark sets the token");
            let left = p.park_timeout(Duration::ZERO);
            assert!(
                took != left,
                "taken by the timed park xor still there: {took} {left}"
            );
        });
    }
}

/// A waker made from an unparker wakes a park.
#[test]
fn waker_wakes_a_park() {
    for policy in policies() {
        model(move || {
            let p = Parker::with_policy(policy);
            let waker = Waker::from(p.unparker());
            let t = thread::spawn(move || waker.wake());
            p.park();
            t.join().unwrap();
        });
    }
}
