//! Proof that a notify makes no system call when nobody is parked, and one when
//! somebody is: run with `--features test-counters` (`cargo xtask test` does), which
//! counts every `futex_wake` the crate makes.
#![cfg(feature = "test-counters")]

#[path = "support/mod.rs"]
mod support;

use mwait::test_counters::futex_wake_calls;
use mwait::{Backend, WaitCell, WaitPolicy};
use mwait_support::{poll_until, SETTLE_LIMIT};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::Duration;
use support::FENCED_IDLE_NOTIFIES;

/// The counter is process-wide: tests that read it take turns.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn uncontended_writers_make_no_wake_call() {
    let _g = SERIAL.lock().unwrap();
    let cell = WaitCell::new(0);
    let before = futex_wake_calls();
    for i in 0..10_000u32 {
        cell.store(i);
        cell.swap(i);
        cell.fetch_add(1);
        cell.fetch_or(1);
        cell.fetch_and(!0);
        let _ = cell.compare_exchange(cell.load(), i);
        cell.notify_one();
        cell.notify_all();
    }
    assert_eq!(futex_wake_calls(), before);
}

#[test]
fn spinning_waiter_costs_the_notifier_nothing() {
    let _g = SERIAL.lock().unwrap();
    let cell = WaitCell::new(0);
    let before = futex_wake_calls();
    let spin_only = WaitPolicy::new().backend(Backend::Spin);
    thread::scope(|s| {
        let w = s.spawn(|| cell.wait_until_with(|v| v == 1, &spin_only));
        thread::sleep(Duration::from_millis(5));
        cell.store(1);
        assert_eq!(w.join().unwrap(), 1);
    });
    assert_eq!(futex_wake_calls(), before, "a spinning waiter never parks");
}

/// The calling thread's id for [`until_asleep`] (1 where the kernel's is not read).
fn waiter_id() -> i32 {
    #[cfg(target_os = "linux")]
    return mwait_support::thread_id();
    #[cfg(not(target_os = "linux"))]
    return 1;
}

/// Waits until the one waiter of `cell`, whose thread's id `tid` holds once it is
/// set (by [`waiter_id`]), sleeps in the kernel: counted among the parked waiters
/// and, where the kernel says (`wchan`), in a futex wait. Counted is not enough: a
/// waiter between its announcement and its sleep re-checks the value, and when its
/// re-check sees a store and its withdrawal comes before the notifier's look at the
/// count, nobody needs a wake and no call is made (seen under qemu-aarch64, whose
/// threads run slowly enough for that window).
fn until_asleep(cell: &WaitCell, tid: &AtomicI32) -> bool {
    #[cfg(target_os = "linux")]
    let in_kernel = |t: i32| mwait_support::sleeps_in_futex(t) != Some(false);
    #[cfg(not(target_os = "linux"))]
    let in_kernel = |_: i32| true;
    poll_until(SETTLE_LIMIT, || {
        let t = tid.load(Ordering::Acquire);
        cell.parked_waiters() == 1 && t != 0 && in_kernel(t)
    })
}

#[test]
fn parked_waiter_gets_exactly_the_wake_it_needs() {
    let _g = SERIAL.lock().unwrap();
    let cell = WaitCell::new(0);
    let park_at_once = WaitPolicy::new().backend(Backend::Futex);
    let tid = AtomicI32::new(0);
    thread::scope(|s| {
        let w = s.spawn(|| {
            tid.store(waiter_id(), Ordering::Release);
            cell.wait_until_with(|v| v == 1, &park_at_once)
        });
        assert!(until_asleep(&cell, &tid));
        let before = futex_wake_calls();
        cell.store(1);
        assert_eq!(w.join().unwrap(), 1);
        assert_eq!(futex_wake_calls(), before + 1, "one store, one wake call");
    });
    // The waiter has withdrawn: the next store is free again.
    let before = futex_wake_calls();
    cell.store(2);
    assert_eq!(futex_wake_calls(), before);
}

/// A writer that stores on every step (a ring buffer's position) after waking its
/// waiter makes one wake call, not one per store, while the woken waiter has not run
/// yet: the waiter shares the writer's CPU at idle priority, so it stays off the CPU
/// until the writer sleeps, and stays counted. Each store found the count (with
/// `WOKEN` ignored: 100 calls).
#[cfg(target_os = "linux")]
#[test]
fn stores_after_a_wake_make_no_call_until_the_woken_waiter_runs() {
    use mwait_support::{current_cpu, idle_priority, pin_to_cpu, unpin};
    const STORES: u32 = 100;
    let _g = SERIAL.lock().unwrap();
    let cell = WaitCell::new(0);
    let park_at_once = WaitPolicy::new().backend(Backend::Futex);
    let cpu = current_cpu();
    assert!(pin_to_cpu(cpu));
    let tid = AtomicI32::new(0);
    thread::scope(|s| {
        let w = s.spawn(|| {
            assert!(pin_to_cpu(cpu));
            assert!(idle_priority());
            tid.store(waiter_id(), Ordering::Release);
            cell.wait_until_with(|v| v == STORES, &park_at_once)
        });
        // Asleep in the kernel, not only counted: a wake that found it between its
        // announcement and its sleep would leave `WOKEN` off.
        assert!(until_asleep(&cell, &tid));
        thread::sleep(Duration::from_millis(5));
        let before = futex_wake_calls();
        for v in 1..=STORES {
            cell.store(v);
        }
        let calls = futex_wake_calls() - before;
        assert_eq!(w.join().unwrap(), STORES);
        // One, or a few if the waiter ran in between after all (another CPU's idle
        // balancing cannot move it, but the scheduler may still give it a slice).
        assert!(calls <= 3, "{calls} wake calls for {STORES} stores");
    });
    unpin();
}

#[test]
fn parking_on_a_shared_cell_makes_no_membarrier_call() {
    // Its notifiers always fence, and membarrier would not reach another process's
    // notifier anyway.
    let _g = SERIAL.lock().unwrap();
    let soon = || std::time::Instant::now() + Duration::from_millis(2);
    let park_at_once = WaitPolicy::new().backend(Backend::Futex);
    let shared = WaitCell::new_shared(0);
    let before = mwait::test_counters::membarrier_calls();
    let _ = shared.wait_until_deadline_with(|v| v == 1, soon(), &park_at_once);
    thread::scope(|s| {
        let w = s.spawn(|| shared.wait_until_with(|v| v == 1, &park_at_once));
        assert!(poll_until(SETTLE_LIMIT, || shared.parked_waiters() == 1));
        shared.store(1);
        assert_eq!(w.join().unwrap(), 1);
    });
    assert_eq!(mwait::test_counters::membarrier_calls(), before);
}

/// Linux x86-64 only: the counter counts `membarrier`, and only Linux has it
/// (Windows' twin, `FlushProcessWriteBuffers`, is not counted, and stays off under
/// Wine); the light notify, and with it `membarrier`, is offered on x86-64 only.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn a_new_cell_pays_membarrier_only_once_idle_stores_clear_fenced() {
    let _g = SERIAL.lock().unwrap();
    if std::env::var("MWAIT_MEMBARRIER").is_ok_and(|v| v.trim() == "0") {
        return; // no asymmetric barrier: parks fence instead
    }
    let soon = || std::time::Instant::now() + Duration::from_millis(2);
    let park_at_once = WaitPolicy::new().backend(Backend::Futex);
    // The process's first park settles the registration (a call, where the program's
    // load did not make it): get that done first.
    let _ = WaitCell::new(0).wait_until_deadline_with(|v| v == 1, soon(), &park_at_once);
    let cell = WaitCell::new(0);
    let calls = mwait::test_counters::membarrier_calls;
    let c0 = calls();
    let _ = cell.wait_until_deadline_with(|v| v == 1, soon(), &park_at_once);
    assert_eq!(
        calls(),
        c0,
        "a new cell starts FENCED: no barrier at its first park"
    );
    // A parked waiter woken by each store, three times: no membarrier either.
    let done = std::sync::atomic::AtomicU32::new(0);
    thread::scope(|s| {
        let w = s.spawn(|| {
            for i in 1..=3 {
                cell.wait_until_with(|v| v == i, &park_at_once);
                done.store(i, std::sync::atomic::Ordering::Release);
            }
        });
        for i in 1..=3 {
            assert!(poll_until(SETTLE_LIMIT, || cell.parked_waiters() == 1));
            cell.store(i);
            let woken = || done.load(std::sync::atomic::Ordering::Acquire) == i;
            assert!(poll_until(SETTLE_LIMIT, woken));
        }
        w.join().unwrap();
    });
    assert_eq!(calls(), c0, "parks rely on the FENCED bit");
    // Fewer than FENCED_IDLE_NOTIFIES (32) stores in a row with nobody parked keep
    // the bit: a woken waiter is often not parked again when its partner answers.
    for i in 10..10 + FENCED_IDLE_NOTIFIES - 1 {
        cell.store(i);
    }
    let _ = cell.wait_until_deadline_with(|v| v == 1, soon(), &park_at_once);
    assert_eq!(calls(), c0, "31 idle stores in a row keep the bit");
    // A park that times out is no notify: one more store is the 32nd in a row and
    // clears the bit; the next park pays once and sets it again.
    cell.store(99);
    let _ = cell.wait_until_deadline_with(|v| v == 1, soon(), &park_at_once);
    assert_eq!(
        calls(),
        c0 + 1,
        "after 32 stores in a row with nobody parked"
    );
    let _ = cell.wait_until_deadline_with(|v| v == 1, soon(), &park_at_once);
    assert_eq!(calls(), c0 + 1, "the park that paid set the bit again");
}

/// A `wait_any` announces itself to every member and then runs one barrier for all
/// of them, as its docs say, not one per member: each of its parks over a bare word
/// and three cells makes at most one `membarrier` call.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn a_wait_any_park_runs_one_barrier_for_all_its_members() {
    use mwait::atomic::{wait_any_deadline, Member};
    let _g = SERIAL.lock().unwrap();
    if std::env::var("MWAIT_MEMBARRIER").is_ok_and(|v| v.trim() == "0") {
        return; // no asymmetric barrier: parks fence instead
    }
    let park_at_once = WaitPolicy::new().backend(Backend::Futex);
    let soon = || std::time::Instant::now() + Duration::from_millis(2);
    // The process's first park settles the registration (a call, where the program's
    // load did not make it): get that done first.
    let _ = WaitCell::new(0).wait_until_deadline_with(|v| v == 1, soon(), &park_at_once);
    let word = std::sync::atomic::AtomicU32::new(0);
    let cells = [WaitCell::new(0), WaitCell::new(0), WaitCell::new(0)];
    let members = [
        Member::atomic(&word, 0),
        Member::cell(&cells[0], 0),
        Member::cell(&cells[1], 0),
        Member::cell(&cells[2], 0),
    ];
    let calls = mwait::test_counters::membarrier_calls;
    let c0 = calls();
    assert!(wait_any_deadline(&members, soon()).ready().is_none());
    let parks = calls() - c0;
    assert!(parks >= 1, "the wait parked at least once");
    // Each park of the wait (one, unless the futex returned early) runs one barrier.
    assert!(
        parks <= 2,
        "{parks} membarrier calls for one timed wait_any"
    );
    let c1 = calls();
    let _ = wait_any_deadline(&members[1..], soon());
    assert!(
        calls() - c1 <= 2,
        "cells alone: one barrier per park ({} calls)",
        calls() - c1
    );
}

/// Two distinct words of `words` in one bucket of the waiter table.
fn sharing_a_bucket(
    words: &[std::sync::atomic::AtomicU32],
) -> (&std::sync::atomic::AtomicU32, &std::sync::atomic::AtomicU32) {
    let mut seen = std::collections::HashMap::new();
    for w in words {
        if let Some(first) = seen.insert(mwait::atomic::bucket_index(w), w) {
            return (first, w);
        }
    }
    panic!("no two of {} words share a bucket", words.len());
}

#[test]
fn a_wake_of_an_unwaited_word_makes_no_call_though_its_bucket_has_a_parked_waiter() {
    use mwait::atomic;
    use std::sync::atomic::Ordering::Relaxed;
    let _g = SERIAL.lock().unwrap();
    let words: Vec<std::sync::atomic::AtomicU32> = (0..4096)
        .map(|_| std::sync::atomic::AtomicU32::new(0))
        .collect();
    let (parked, other) = sharing_a_bucket(&words);
    thread::scope(|s| {
        let w = s.spawn(|| atomic::wait(parked, 0));
        assert!(poll_until(SETTLE_LIMIT, || atomic::parked_waiters(parked) == 1));
        let before = futex_wake_calls();
        for i in 1..=10_000 {
            other.store(i, Relaxed);
            atomic::wake_one(other);
            atomic::wake_all(other);
        }
        assert_eq!(futex_wake_calls(), before, "no call for the other word");
        assert_eq!(atomic::parked_waiters(parked), 1, "its waiter still parked");
        parked.store(1, Relaxed);
        atomic::wake_one(parked);
        assert_eq!(w.join().unwrap(), 1);
        assert_eq!(
            futex_wake_calls(),
            before + 1,
            "one call for the parked one"
        );
    });
    // Nobody parked at all: free again.
    let before = futex_wake_calls();
    atomic::wake_all(parked);
    assert_eq!(futex_wake_calls(), before);
}
/// An unpark while the parker is awake is the cell's exchange and one load: no
/// system call, however many, whether the token is taken between them or not.
#[test]
fn unparking_an_awake_parker_makes_no_wake_call() {
    let _g = SERIAL.lock().unwrap();
    let p = mwait::Parker::new();
    let u = p.unparker();
    let waker = std::task::Waker::from(p.unparker());
    let before = futex_wake_calls();
    thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..10_000 {
                u.unpark();
                waker.wake_by_ref();
            }
        });
        // The parker's thread is awake, taking tokens that are there.
        for _ in 0..10_000 {
            let _ = p.park_timeout(Duration::ZERO);
        }
    });
    for _ in 0..10_000 {
        u.unpark();
        p.park();
    }
    assert_eq!(futex_wake_calls(), before);
}

/// A parker asleep in the kernel costs its unparker one wake call.
#[test]
fn unparking_a_parked_parker_makes_one_wake_call() {
    let _g = SERIAL.lock().unwrap();
    let p = mwait::Parker::new();
    let u = p.unparker();
    let parked = std::sync::atomic::AtomicBool::new(false);
    thread::scope(|s| {
        let parked = &parked;
        let w = s.spawn(move || {
            parked.store(true, std::sync::atomic::Ordering::Release);
            p.park();
        });
        assert!(poll_until(SETTLE_LIMIT, || parked
            .load(std::sync::atomic::Ordering::Acquire)));
        // Long enough for the spin and hardware tiers to end: the park sleeps.
        thread::sleep(Duration::from_millis(50));
        let before = futex_wake_calls();
        u.unpark();
        w.join().unwrap();
        assert_eq!(futex_wake_calls(), before + 1);
    });
}

/// A parker's token cell is written only by exchanges, so its parks need no
/// `membarrier`: not a fresh parker's first park, nor one after a run of unparks
/// that found it awake (which clears a plain cell's `FENCED` bit). The same pattern
/// on a plain cell pays twice (`a_cell_that_keeps_parking_pays_membarrier_once`).
#[cfg(target_os = "linux")]
#[test]
fn a_parker_s_parks_make_no_membarrier_call() {
    let _g = SERIAL.lock().unwrap();
    // The process's first park registers for membarrier: done before counting.
    let soon = || std::time::Instant::now() + Duration::from_millis(2);
    let park_at_once = WaitPolicy::new().backend(Backend::Futex);
    let _ = WaitCell::new(0).wait_until_deadline_with(|v| v == 1, soon(), &park_at_once);
    let calls = mwait::test_counters::membarrier_calls;
    let c0 = calls();
    let p = mwait::Parker::with_policy(park_at_once);
    assert!(
        !p.park_timeout(Duration::from_millis(2)),
        "a first park, timed out"
    );
    let u = p.unparker();
    thread::scope(|s| {
        s.spawn(|| {
            thread::sleep(Duration::from_millis(20));
            u.unpark();
        });
        p.park(); // asleep in the kernel, woken
    });
    for _ in 0..FENCED_IDLE_NOTIFIES + 1 {
        u.unpark();
        p.park();
    }
    assert!(
        !p.park_timeout(Duration::from_millis(2)),
        "a park after them"
    );
    assert_eq!(calls(), c0, "no park of the parker ran membarrier");
}

/// A parker's cell (`WaitCell::new_parker`): its exchanges cost no call while
/// nobody sleeps, a plain store on it (the fenced slow path) still wakes a parked
/// waiter with exactly one call, and none of its parks runs `membarrier`.
#[cfg(target_os = "linux")]
#[test]
fn a_parker_cell_s_notifies_wake_exactly_whom_they_must() {
    let _g = SERIAL.lock().unwrap();
    let park_at_once = WaitPolicy::new().backend(Backend::Futex);
    let soon = || std::time::Instant::now() + Duration::from_millis(2);
    // The process's first park registers for membarrier: done before counting.
    let _ = WaitCell::new(0).wait_until_deadline_with(|v| v == 1, soon(), &park_at_once);
    let barriers = mwait::test_counters::membarrier_calls();
    let cell = WaitCell::new_parker(0);
    let before = futex_wake_calls();
    for i in 0..1_000 {
        cell.swap(i);
        cell.store(i);
    }
    assert_eq!(futex_wake_calls(), before, "nobody sleeps: no call");
    let tid = AtomicI32::new(0);
    thread::scope(|s| {
        let w = s.spawn(|| {
            tid.store(waiter_id(), Ordering::Release);
            cell.wait_until_with(|v| v == 7_000, &park_at_once)
        });
        assert!(until_asleep(&cell, &tid));
        let before = futex_wake_calls();
        cell.store(7_000);
        assert_eq!(w.join().unwrap(), 7_000);
        assert_eq!(futex_wake_calls(), before + 1, "one store, one wake call");
    });
    assert_eq!(mwait::test_counters::membarrier_calls(), barriers);
}
