//! Conformance with the peers' test suites: the cases that found real bugs in std's
//! `Condvar` and `park`, folly's futex, ParkingLot and atomic-notification code,
//! libc++'s and libstdc++'s `atomic::wait`, tokio's `Notify`, event-listener, and
//! std's `Barrier`, each retold in terms of `WaitCell` (the comment above each test
//! names the case it follows). Written from what each case checks, not from its code.
//!
//! Run with `cargo test -p mwait --test api --release -- conformance::`; the stress cases are
//! sized for a 2-vCPU VM in a release build and shrink in a debug build (see
//! [`scaled`]), where `cargo test --workspace` runs them.

use crate::support::{
    armed_futures, counting_waker, hook_waker, no_hang, poll_with, Counter, Hooks, Pending, NEVER,
};
use mwait::{Backend, Barrier, WaitCell, WaitPolicy, WaitResult};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::thread;
use std::time::{Duration, Instant};

/// Parks at once: the cases below are about the park tier unless they say otherwise.
const PARK_AT_ONCE: WaitPolicy = WaitPolicy::new().backend(Backend::Futex);

/// `n` for a release build, a tenth of it (at least 1) in a debug build, whose
/// unoptimised atomics and ladder make each iteration several times slower.
fn scaled(n: u32) -> u32 {
    if cfg!(debug_assertions) {
        (n / 10).max(1)
    } else {
        n
    }
}

/// Waits until `n` waiters are parked on `cell`.
fn until_parked(cell: &WaitCell, n: u32) {
    while cell.parked_waiters() < n {
        thread::sleep(Duration::from_micros(200));
    }
}

/// A parked waiter with a timeout of `timeout` is woken by a store and reports it.
fn woken_despite_huge_timeout(timeout: Duration) {
    no_hang("a wait with a huge timeout", move || {
        let cell = Arc::new(WaitCell::with_policy(0, PARK_AT_ONCE));
        let c = cell.clone();
        let w = thread::spawn(move || c.wait_until_timeout(|v| v == 1, timeout));
        until_parked(&cell, 1);
        cell.store(1);
        assert_eq!(w.join().unwrap(), WaitResult::Ready(1));
        assert_eq!(cell.parked_waiters(), 0);
    });
}

// std: library/std/tests/sync/condvar.rs, `wait_timeout_wake` with a timeout of
// `u64::MAX` milliseconds (the overflow of the deadline computation that std fixed).
#[test]
fn std_condvar_timeout_of_u64_max_millis() {
    woken_despite_huge_timeout(Duration::from_millis(u64::MAX));
}

// std: `thread::park_timeout(Duration::MAX)` and `Condvar::wait_timeout(Duration::MAX)`:
// the largest duration saturates instead of wrapping into a deadline in the past.
#[test]
fn std_timeout_of_duration_max() {
    woken_despite_huge_timeout(Duration::MAX);
}

// std: the same with an absolute deadline a century ahead (`Instant + Duration` near
// the top of the clock's range).
#[test]
fn std_deadline_a_century_ahead() {
    no_hang("a deadline a century ahead", || {
        let cell = Arc::new(WaitCell::with_policy(0, PARK_AT_ONCE));
        let far = Instant::now()
            .checked_add(Duration::from_secs(100 * 365 * 24 * 3600))
            .expect("a century fits in Instant on Linux");
        let c = cell.clone();
        let w = thread::spawn(move || c.wait_until_deadline(|v| v == 1, far));
        until_parked(&cell, 1);
        cell.store(1);
        assert_eq!(w.join().unwrap(), WaitResult::Ready(1));
    });
}

// std: condvar.rs `wait_timeout_while_instant_satisfy`: a zero timeout whose predicate
// already holds reports "ready", not "timed out".
#[test]
fn std_zero_timeout_with_a_true_predicate_is_ready() {
    let cell = WaitCell::new(1);
    assert_eq!(
        cell.wait_until_timeout(|v| v == 1, Duration::ZERO),
        WaitResult::Ready(1)
    );
    assert_eq!(
        cell.wait_while_eq_timeout(0, Duration::ZERO),
        WaitResult::Ready(1)
    );
    assert_eq!(
        cell.wait_until_deadline_with(|v| v == 1, Instant::now(), &PARK_AT_ONCE),
        WaitResult::Ready(1)
    );
}

// std: `park_timeout(Duration::ZERO)` returns at once: a zero timeout with a false
// predicate times out with the current value and never stays parked.
#[test]
fn std_zero_timeout_with_a_false_predicate_times_out_at_once() {
    let cell = WaitCell::with_policy(5, PARK_AT_ONCE);
    assert_eq!(
        cell.wait_until_timeout(|v| v == 6, Duration::ZERO),
        WaitResult::TimedOut(5)
    );
    assert_eq!(cell.parked_waiters(), 0);
}

// std: condvar.rs `notify_all`: ten waiters, each registered before the notify, all
// return after one `notify_all`.
#[test]
fn std_notify_all_wakes_ten_waiters() {
    const WAITERS: u32 = 10;
    no_hang("ten waiters and notify_all", || {
        let cell = Arc::new(WaitCell::with_policy(0, PARK_AT_ONCE));
        let ws: Vec<_> = (0..WAITERS)
            .map(|_| {
                let c = cell.clone();
                thread::spawn(move || c.wait_until(|v| v == 1))
            })
            .collect();
        until_parked(&cell, WAITERS);
        cell.as_atomic().store(1, Ordering::Relaxed);
        cell.notify_all();
        for w in ws {
            assert_eq!(w.join().unwrap(), 1);
        }
        assert_eq!(cell.parked_waiters(), 0);
    });
}

// std: condvar.rs `notify_all` again, with the value changed by a waking writer
// (`store`) instead of `as_atomic` + `notify_all`, and waiters on every tier.
#[test]
fn std_store_wakes_ten_waiters_on_the_default_ladder() {
    const WAITERS: u32 = 10;
    no_hang("ten waiters and a store", || {
        let cell = Arc::new(WaitCell::new(0));
        let started = Arc::new(AtomicU32::new(0));
        let ws: Vec<_> = (0..WAITERS)
            .map(|_| {
                let (c, s) = (cell.clone(), started.clone());
                thread::spawn(move || {
                    s.fetch_add(1, Ordering::SeqCst);
                    c.wait_until(|v| v == 1)
                })
            })
            .collect();
        while started.load(Ordering::SeqCst) < WAITERS {
            thread::yield_now();
        }
        cell.store(1);
        for w in ws {
            assert_eq!(w.join().unwrap(), 1);
        }
    });
}

// std: condvar.rs `notify_one`: one parked waiter, woken by one `notify_one`.
#[test]
fn std_notify_one_wakes_the_parked_waiter() {
    no_hang("notify_one", || {
        let cell = Arc::new(WaitCell::with_policy(0, PARK_AT_ONCE));
        let c = cell.clone();
        let w = thread::spawn(move || c.wait_until(|v| v == 3));
        until_parked(&cell, 1);
        cell.as_atomic().store(3, Ordering::Relaxed);
        cell.notify_one();
        assert_eq!(w.join().unwrap(), 3);
    });
}

// std: condvar.rs `wait_timeout_wake`: a timed wait woken before its deadline
// reports the wake (not a timeout), well before the deadline.
#[test]
fn std_wait_timeout_wake_is_not_a_timeout() {
    no_hang("wait_timeout_wake", || {
        let cell = Arc::new(WaitCell::with_policy(0, PARK_AT_ONCE));
        let c = cell.clone();
        let w = thread::spawn(move || c.wait_while_eq_timeout(0, Duration::from_secs(3600)));
        until_parked(&cell, 1);
        cell.store(8);
        assert_eq!(w.join().unwrap(), WaitResult::Ready(8));
    });
}

// std: condvar.rs `wait_timeout_wait` and thread tests `test_park_timeout_unpark_not_called`:
// a timed wait nobody answers lasts at least its timeout and reports the last value.
#[test]
fn std_unanswered_timed_wait_lasts_its_timeout() {
    let cell = WaitCell::with_policy(4, PARK_AT_ONCE);
    for timeout in [Duration::from_micros(1), Duration::from_millis(5)] {
        let start = Instant::now();
        let r = cell.wait_until_timeout(|v| v == 5, timeout);
        assert!(start.elapsed() >= timeout, "returned before {timeout:?}");
        assert_eq!(r, WaitResult::TimedOut(4));
    }
}

// std: condvar.rs `wait_while`: wake-ups that leave the predicate false (here explicit
// notifies and a store of a value nobody waits for) are not returns.
#[test]
fn std_wait_while_hides_wakes_that_leave_the_predicate_false() {
    no_hang("wait_while", || {
        let cell = Arc::new(WaitCell::with_policy(0, PARK_AT_ONCE));
        let c = cell.clone();
        let w = thread::spawn(move || c.wait_until(|v| v == 2));
        until_parked(&cell, 1);
        for _ in 0..10 {
            cell.notify_all();
        }
        cell.store(1);
        until_parked(&cell, 1);
        cell.store(2);
        assert_eq!(w.join().unwrap(), 2);
    });
}

/// Checks one timed result against its deadline: "timed out" only once the clock
/// has reached the deadline (folly's `FutexResult::TIMEDOUT` contract).
fn check_timed_out_only_after(r: WaitResult, deadline: Instant) {
    if r.is_timed_out() {
        let now = Instant::now();
        assert!(
            now >= deadline,
            "timed out {:?} before its deadline",
            deadline - now
        );
    }
}

// folly: test/FutexTest.cpp `liveClockWaitUntilTests`: 1000 rounds, each a waiter that
// loops on waits with deadlines of now + 2^(i % 20) µs until a waker gets through;
// every "timed out" must come at or after its deadline. The waker answers each round
// at once, so a round costs one hand-off, not 2^19 µs.
#[test]
fn folly_live_clock_wait_until() {
    const ROUNDS: u32 = 1000;
    no_hang("liveClockWaitUntilTests", || {
        let cell = Arc::new(WaitCell::new(0));
        let round = Arc::new(AtomicU32::new(0));
        let (c, r) = (cell.clone(), round.clone());
        let waiter = thread::spawn(move || {
            for i in 0..ROUNDS {
                r.store(i + 1, Ordering::SeqCst);
                loop {
                    let deadline = Instant::now() + Duration::from_micros(1 << (i % 20));
                    let res = c.wait_until_deadline(|v| v > i, deadline);
                    check_timed_out_only_after(res, deadline);
                    if let WaitResult::Ready(v) = res {
                        assert_eq!(v, i + 1);
                        break;
                    }
                }
            }
        });
        for i in 0..ROUNDS {
            while round.load(Ordering::SeqCst) <= i {
                thread::yield_now();
            }
            cell.store(i + 1);
        }
        waiter.join().unwrap();
    });
}

// folly: FutexTest.cpp `liveClockWaitUntilTests`, second half, and
// `deadlineClockWaitUntilTests`: with nobody waking, each wait times out, and only at
// or after its deadline. The exponent is capped at 2^9 µs to keep the 1000 waits
// under a second.
#[test]
fn folly_unanswered_deadlines_time_out_only_after_them() {
    const ROUNDS: u32 = 1000;
    let cell = WaitCell::new(0);
    for i in 0..ROUNDS {
        let deadline = Instant::now() + Duration::from_micros(1 << (i % 10));
        let policy = if i % 2 == 0 {
            WaitPolicy::new()
        } else {
            PARK_AT_ONCE
        };
        let r = cell.wait_until_deadline_with(|v| v == 1, deadline, &policy);
        assert_eq!(r, WaitResult::TimedOut(0));
        check_timed_out_only_after(r, deadline);
    }
}

// folly: FutexTest.cpp, a deadline far in the past (the clock's epoch): returns at once,
// "timed out" with the current value when the predicate is false, "ready" when true,
// on every ladder.
#[test]
fn folly_deadline_far_in_the_past() {
    let past = Instant::now()
        .checked_sub(Duration::from_secs(3600))
        .unwrap_or_else(Instant::now);
    let spin_only = WaitPolicy::new().backend(Backend::Spin);
    let no_park = WaitPolicy::new().park(false);
    for policy in [WaitPolicy::new(), PARK_AT_ONCE, spin_only, no_park] {
        let cell = WaitCell::new(9);
        assert_eq!(
            cell.wait_until_deadline_with(|v| v == 1, past, &policy),
            WaitResult::TimedOut(9)
        );
        assert_eq!(
            cell.wait_until_deadline_with(|v| v == 9, past, &policy),
            WaitResult::Ready(9)
        );
        assert_eq!(cell.parked_waiters(), 0);
    }
}

// folly: FutexTest.cpp basic wake test (the value changes before the wait starts): a
// wait whose predicate already holds returns at once and never parks.
#[test]
fn folly_change_before_the_wait_returns_at_once() {
    let cell = WaitCell::with_policy(0, PARK_AT_ONCE);
    cell.store(1);
    assert_eq!(cell.wait_while_eq(0), 1);
    assert_eq!(cell.parked_waiters(), 0);
}

// folly: test/AtomicNotificationTest.cpp and ParkingLotTest.cpp, waits on an object
// destroyed and re-created at the same address: the new cell carries nothing of the
// old one (no parked count, no armed waker, no stale wake), round after round.
#[test]
fn folly_cell_recreated_at_the_same_address() {
    const ROUNDS: u32 = 200;
    no_hang("re-created cell", || {
        let mut slot = Box::new(Some(WaitCell::with_policy(0, PARK_AT_ONCE)));
        let addr = slot.as_ref().as_ref().unwrap() as *const WaitCell as usize;
        for round in 0..ROUNDS {
            *slot = Some(WaitCell::with_policy(round, PARK_AT_ONCE));
            let cell = slot.as_ref().as_ref().unwrap();
            assert_eq!(cell as *const WaitCell as usize, addr, "same address");
            assert_eq!(cell.parked_waiters(), 0);
            assert_eq!(cell.armed_async_waiters(), 0);
            // A timed wait on the fresh cell is not ended by anything of the old one.
            assert_eq!(
                cell.wait_until_timeout(|v| v != round, Duration::from_micros(50)),
                WaitResult::TimedOut(round)
            );
            // An async waiter armed and left armed when the cell dies.
            let (_, waker) = counting_waker();
            let mut fut = cell.wait_until_async(|v| v == NEVER);
            assert!(poll_with(&mut fut, &waker).is_pending());
            drop(fut);
            thread::scope(|s| {
                let w = s.spawn(|| cell.wait_until(|v| v == round + 1));
                until_parked(cell, 1);
                cell.store(round + 1);
                assert_eq!(w.join().unwrap(), round + 1);
            });
        }
    });
}

// folly: ParkingLotTest.cpp ping-pong stress: two threads hand a token back and forth
// through waits, many times, on the default ladder and on the park tier.
#[test]
fn folly_parking_lot_ping_pong() {
    let rounds = scaled(20_000);
    for policy in [WaitPolicy::new(), PARK_AT_ONCE] {
        no_hang("ping-pong", move || {
            let cell = Arc::new(WaitCell::with_policy(0, policy));
            let c = cell.clone();
            let pong = thread::spawn(move || {
                for i in 0..rounds {
                    c.wait_until(|v| v == 2 * i + 1);
                    c.store(2 * i + 2);
                }
            });
            for i in 0..rounds {
                cell.store(2 * i + 1);
                cell.wait_until(|v| v == 2 * i + 2);
            }
            pong.join().unwrap();
            assert_eq!(cell.load(), 2 * rounds);
        });
    }
}

// libc++: test/std/atomics/.../atomics.types.operations.wait/lost_wakeup.pass.cpp: 20
// runs, 8 waiters, 10 000 iterations; a notify racing a waiter that is about to sleep
// must not be lost. Each iteration the notifier publishes a new value and waits until
// all 8 waiters have seen it; a lost wake-up hangs (caught by the watchdog).
#[test]
fn libcxx_lost_wakeup() {
    const RUNS: u32 = 20;
    const WAITERS: u32 = 8;
    let iterations = scaled(10_000);
    no_hang("lost_wakeup", move || {
        for _ in 0..RUNS {
            let go = Arc::new(WaitCell::new(0));
            let acks = Arc::new(WaitCell::new(0));
            let ws: Vec<_> = (0..WAITERS)
                .map(|_| {
                    let (go, acks) = (go.clone(), acks.clone());
                    thread::spawn(move || {
                        for i in 1..=iterations {
                            assert_eq!(go.wait_until(|v| v >= i), i);
                            acks.fetch_add(1);
                        }
                    })
                })
                .collect();
            for i in 1..=iterations {
                go.store(i);
                acks.wait_until(|v| v == i * WAITERS);
            }
            for w in ws {
                w.join().unwrap();
            }
        }
    });
}

// libstdc++: PR 100334 (testsuite/29_atomics/atomic/wait_notify/100334.cc): waiters on
// four different atomics must not be woken by notifies of the others. Here a waiter
// on each of cells 1..3 makes a timed wait while cell 0 is written and notified
// thousands of times: they must time out with their own untouched values, and
// cell 0's waiter must see only cell 0's values.
#[test]
fn libstdcxx_pr100334_four_cells_do_not_wake_each_other() {
    const WRITES: u32 = 5_000;
    no_hang("PR 100334", || {
        // Four adjacent cells: one array, consecutive lines.
        let cells: Arc<[WaitCell; 4]> =
            Arc::new([0, 1, 2, 3].map(|k| WaitCell::with_policy(k << 24, PARK_AT_ONCE)));
        let quiet: Vec<_> = (1..4usize)
            .map(|k| {
                let cs = cells.clone();
                thread::spawn(move || {
                    let own = (k as u32) << 24;
                    cs[k].wait_until_timeout(|v| v != own, Duration::from_millis(300))
                })
            })
            .collect();
        let cs = cells.clone();
        let busy = thread::spawn(move || {
            let mut last = 0;
            while last != WRITES {
                let v = cs[0].wait_until(|v| v != last);
                assert_eq!(v >> 24, 0, "cell 0's waiter saw {v:#x}");
                assert!(v > last, "values go up: {v} after {last}");
                last = v;
            }
        });
        // Each quiet waiter parks before the writes begin, unless it has already
        // timed out (a very loaded machine), which the check below still accepts.
        for (k, q) in (1..4usize).zip(&quiet) {
            while cells[k].parked_waiters() == 0 && !q.is_finished() {
                thread::sleep(Duration::from_micros(200));
            }
        }
        for i in 1..=WRITES {
            cells[0].store(i);
            cells[0].notify_all();
        }
        busy.join().unwrap();
        for (k, q) in (1u32..).zip(quiet) {
            assert_eq!(q.join().unwrap(), WaitResult::TimedOut(k << 24));
        }
    });
}

// tokio: issue 4618 (`Notify::notified` dropped after `notify_one` chose it): a future
// that notify_one picked and that is dropped without being polled passes the wake to
// another armed future.
#[test]
fn tokio_4618_a_dropped_future_passes_its_wake_on() {
    let cell = WaitCell::new(0);
    let mut futs = armed_futures(&cell, 2);
    cell.notify_one();
    let wakes = |futs: &[(Pending, Arc<Counter>, _)]| -> Vec<usize> {
        futs.iter().map(|(_, c, _)| c.wakes()).collect()
    };
    let chosen = match wakes(&futs)[..] {
        [1, 0] => 0,
        [0, 1] => 1,
        ref w => panic!("notify_one woke {w:?}"),
    };
    // Drop the chosen one, unpolled: the other must get the wake.
    let (fut, counter, _) = futs.remove(chosen);
    drop(fut);
    assert_eq!(counter.wakes(), 1);
    assert_eq!(wakes(&futs), [1], "the dropped future's wake went nowhere");
}

// tokio: issue 4751 (a `Notified` re-polled with a different waker kept the old one):
// the wake goes to the waker of the latest poll.
#[test]
fn tokio_4751_a_repoll_with_a_new_waker_is_woken_through_it() {
    let cell = WaitCell::new(0);
    let (old_wakes, old_waker) = counting_waker();
    let (new_wakes, new_waker) = counting_waker();
    let mut fut = cell.wait_until_async(|v| v == 1);
    assert!(poll_with(&mut fut, &old_waker).is_pending());
    assert!(poll_with(&mut fut, &new_waker).is_pending());
    assert_eq!(cell.armed_async_waiters(), 1, "one future, one slot");
    cell.store(1);
    assert_eq!(new_wakes.wakes(), 1, "the latest waker is woken");
    assert_eq!(old_wakes.wakes(), 0, "the replaced waker is not");
    assert_eq!(poll_with(&mut fut, &new_waker), Poll::Ready(1));
}

/// Hooks that notify `cell` on clone (`on_clone`) or on drop.
fn notifying_hooks(cell: &Arc<WaitCell>, on_clone: bool, on_drop: bool) -> Arc<Hooks> {
    let (c1, c2) = (cell.clone(), cell.clone());
    Arc::new(Hooks {
        on_clone: Box::new(move || {
            if on_clone {
                c1.notify_all();
            }
        }),
        on_drop: Box::new(move || {
            if on_drop {
                c2.notify_all();
            }
        }),
        wakes: AtomicUsize::new(0),
    })
}

// tokio: issue 4129 (a waker whose clone re-enters the primitive deadlocked on its
// lock): arming a waker whose clone notifies the same cell, while another future is
// armed, completes, and the notify reaches the other future.
#[test]
fn tokio_4129_a_waker_that_notifies_from_its_clone() {
    no_hang("a waker that notifies from clone", || {
        let cell = Arc::new(WaitCell::new(0));
        let (other_wakes, other_waker) = counting_waker();
        let mut other = cell.wait_until_async(|v| v == NEVER);
        assert!(poll_with(&mut other, &other_waker).is_pending());
        let waker = hook_waker(notifying_hooks(&cell, true, false));
        let mut fut = cell.wait_until_async(|v| v == NEVER);
        assert!(poll_with(&mut fut, &waker).is_pending());
        assert_eq!(other_wakes.wakes(), 1);
    });
}

// tokio: issue 4129, the drop half: a future holding an armed waker whose drop
// notifies the same cell is dropped (the registry drops the waker) and completes.
#[test]
fn tokio_4129_a_waker_that_notifies_from_its_drop() {
    no_hang("a waker that notifies from drop", || {
        let cell = Arc::new(WaitCell::new(0));
        let (other_wakes, other_waker) = counting_waker();
        let mut other = cell.wait_until_async(|v| v == NEVER);
        assert!(poll_with(&mut other, &other_waker).is_pending());
        let waker = hook_waker(notifying_hooks(&cell, false, true));
        let mut fut = cell.wait_until_async(|v| v == NEVER);
        assert!(poll_with(&mut fut, &waker).is_pending());
        // Our own handle is leaked, so that the only drop that notifies is that of the
        // registry's clone, which dropping the armed future makes.
        std::mem::forget(waker);
        drop(fut);
        assert_eq!(other_wakes.wakes(), 1);
        assert_eq!(cell.armed_async_waiters(), 0);
    });
}

// event-listener: tests/notify.rs `drop_notified`: of three listeners, the one that a
// notify of one chose is dropped; exactly one of the other two gets the notification.
#[test]
fn event_listener_drop_notified() {
    let cell = WaitCell::new(0);
    let mut futs: Vec<_> = armed_futures(&cell, 3).into_iter().map(Some).collect();
    let wakes = |futs: &[Option<(Pending, Arc<Counter>, _)>]| -> Vec<usize> {
        futs.iter().flatten().map(|(_, c, _)| c.wakes()).collect()
    };
    cell.notify_one();
    let chosen = wakes(&futs)
        .iter()
        .position(|&w| w == 1)
        .expect("one woken");
    assert_eq!(
        wakes(&futs).iter().sum::<usize>(),
        1,
        "notify_one wakes one of three"
    );
    futs[chosen] = None;
    assert_eq!(
        wakes(&futs).iter().sum::<usize>(),
        1,
        "the dropped listener's notification went to exactly one of the other two"
    );
    assert_eq!(cell.armed_async_waiters(), 1);
}

// event-listener: tests/notify.rs `notify` (notify(n) wakes at most n): notify_one
// with three armed futures wakes exactly one, and a later notify_one another.
#[test]
fn event_listener_notify_one_wakes_exactly_one() {
    let cell = WaitCell::new(0);
    let futs = armed_futures(&cell, 3);
    let total = || futs.iter().map(|(_, c, _)| c.wakes()).sum::<usize>();
    cell.notify_one();
    assert_eq!(total(), 1);
    cell.notify_one();
    assert_eq!(total(), 2);
    cell.notify_all();
    assert_eq!(total(), 3, "notify_all wakes the last armed one");
    assert!(futs.iter().all(|(_, c, _)| c.wakes() == 1));
}

// event-listener and tokio: a future woken by notify_all and polled again re-arms and
// is woken by the next change, the way a task re-polls in a loop.
#[test]
fn event_listener_rearmed_future_is_woken_again() {
    let cell = WaitCell::new(0);
    let (wakes, waker) = counting_waker();
    let mut fut = cell.wait_until_async(|v| v == 3);
    for round in 1..=2 {
        assert!(poll_with(&mut fut, &waker).is_pending());
        cell.store(round);
        assert_eq!(wakes.wakes(), round as usize);
    }
    cell.store(3);
    assert_eq!(poll_with(&mut fut, &waker), Poll::Ready(3));
    assert_eq!(cell.armed_async_waiters(), 0);
}

// std: library/std/tests/sync/barrier.rs `test_barrier` (exactly one leader per
// generation), scaled up as the issue asks: 8 threads, 100 000 phases, and no thread
// leaves a phase before all 8 have arrived in it.
#[test]
fn std_barrier_one_leader_per_phase() {
    const THREADS: u32 = 8;
    let phases = scaled(100_000);
    no_hang("barrier", move || {
        let barrier = Arc::new(Barrier::new(THREADS));
        let leaders: Arc<Vec<AtomicU32>> =
            Arc::new((0..phases).map(|_| AtomicU32::new(0)).collect());
        let arrived: Arc<Vec<AtomicU32>> =
            Arc::new((0..phases).map(|_| AtomicU32::new(0)).collect());
        let ts: Vec<_> = (0..THREADS)
            .map(|_| {
                let (b, l, a) = (barrier.clone(), leaders.clone(), arrived.clone());
                thread::spawn(move || {
                    for p in 0..phases as usize {
                        a[p].fetch_add(1, Ordering::SeqCst);
                        if b.wait() {
                            l[p].fetch_add(1, Ordering::SeqCst);
                        }
                        assert_eq!(a[p].load(Ordering::SeqCst), THREADS, "left phase {p} early");
                    }
                })
            })
            .collect();
        for t in ts {
            t.join().unwrap();
        }
        for (p, l) in leaders.iter().enumerate() {
            assert_eq!(l.load(Ordering::SeqCst), 1, "phase {p}");
        }
    });
}
