//! A parked waiter sleeps: over a 200 ms wait, the waiting thread's CPU time stays
//! under 5 % of the wait. This is the one property that tells a park tier from a
//! spin or `yield` loop, and it holds on a loaded machine too (a sleeping thread is
//! charged nothing, however long it waits for a CPU afterwards), so it is asserted.
//!
//! The thread CPU clock is `mwait_support::thread_cpu_time`:
//! `clock_gettime(CLOCK_THREAD_CPUTIME_ID)` on unix and `GetThreadTimes` on Windows.
//! The latter counts in scheduler ticks (15.6 ms on Windows by default, 10 ms under
//! Wine) and truncates, so a thread charged less than one tick reads 0 and the 5 %
//! bound (10 ms of a 200 ms wait) stays meaningful. A control test proves that the
//! clock does count a busy thread, so that a clock stuck at 0 cannot pass the others.

use mwait::{WaitCell, WaitResult};
use mwait_support::thread_cpu_time as thread_cpu;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// How long each measured wait lasts.
const WAIT: Duration = Duration::from_millis(200);

/// The most CPU a waiting thread may use, as a share of its wait: 1/20 = 5 %.
const MAX_CPU_SHARE_DIVISOR: u32 = 20;

/// Runs `wait` on this thread; returns (CPU time used, wall time taken).
fn measure<R>(wait: impl FnOnce() -> R) -> (R, Duration, Duration) {
    let cpu0 = thread_cpu();
    let t0 = Instant::now();
    let r = wait();
    let wall = t0.elapsed();
    (r, thread_cpu() - cpu0, wall)
}

fn assert_slept(what: &str, cpu: Duration, wall: Duration) {
    println!("{what}: {cpu:?} of CPU over {wall:?}");
    assert!(
        cpu < wall / MAX_CPU_SHARE_DIVISOR,
        "{what} used {cpu:?} of CPU over {wall:?}: it does not sleep"
    );
}

#[test]
fn a_timed_out_wait_sleeps() {
    let cell = WaitCell::new(0);
    // One short wait first, so that the process-wide selection and the park tier's
    // one-time set-up are not charged to the measured wait.
    let _ = cell.wait_until_timeout(|v| v != 0, Duration::from_millis(1));
    let (r, cpu, wall) = measure(|| cell.wait_until_timeout(|v| v != 0, WAIT));
    assert_eq!(r, WaitResult::TimedOut(0));
    assert!(wall >= WAIT, "the wait returned after {wall:?}");
    assert_slept("a 200 ms timed wait", cpu, wall);
}

#[test]
fn a_waiter_woken_after_200_ms_slept_until_then() {
    let cell = Arc::new(WaitCell::new(0));
    let ready = Arc::new(WaitCell::new(0));
    let waiter = {
        let (cell, ready) = (cell.clone(), ready.clone());
        thread::spawn(move || {
            let _ = cell.wait_until_timeout(|v| v != 0, Duration::from_millis(1));
            ready.store(1);
            measure(|| cell.wait_until(|v| v != 0))
        })
    };
    ready.wait_until(|v| v == 1);
    thread::sleep(WAIT);
    cell.store(1);
    let (v, cpu, wall) = waiter.join().unwrap();
    assert_eq!(v, 1);
    assert_slept("a waiter woken after 200 ms", cpu, wall);
}

/// The control: a busy thread's clock advances, so the tests above can fail.
#[test]
fn the_thread_cpu_clock_counts_a_busy_thread() {
    const BUSY: Duration = Duration::from_millis(50);
    const GIVE_UP_AFTER: Duration = Duration::from_secs(30);
    let cpu0 = thread_cpu();
    let t0 = Instant::now();
    while thread_cpu() - cpu0 < BUSY {
        assert!(
            t0.elapsed() < GIVE_UP_AFTER,
            "the thread CPU clock did not advance by {BUSY:?} in {GIVE_UP_AFTER:?} of spinning"
        );
        std::hint::spin_loop();
    }
}
