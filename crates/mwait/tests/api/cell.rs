//! `WaitCell`, the policy and the backend choice, as users call them.

use mwait::{Backend, Capabilities, WaitCell, WaitPolicy, WaitResult};
use mwait_support::{poll_until, SETTLE_LIMIT};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

#[test]
fn layout_is_one_cell_per_monitor_line_pair() {
    assert_eq!(std::mem::align_of::<WaitCell>(), 128);
    assert_eq!(std::mem::size_of::<WaitCell>() % 128, 0);
    let cells = [WaitCell::new(0), WaitCell::new(1)];
    let a = cells[0].as_atomic() as *const _ as usize;
    let b = cells[1].as_atomic() as *const _ as usize;
    assert_eq!(a % 128, 0, "the value starts its own line");
    assert!(b - a >= 128);
}

#[test]
fn cell_is_send_sync_and_static() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<WaitCell>();
    static S: WaitCell = WaitCell::new(5);
    assert_eq!(S.load(), 5);
}

#[test]
fn writers_return_what_atomics_return() {
    let c = WaitCell::new(10);
    assert_eq!(c.swap(11), 10);
    assert_eq!(c.fetch_add(u32::MAX), 11);
    assert_eq!(c.load(), 10);
    assert_eq!(c.fetch_or(0b101), 10);
    assert_eq!(c.fetch_and(0b100), 0b1111);
    assert_eq!(c.compare_exchange(4, 9), Ok(4));
    assert_eq!(c.compare_exchange(4, 1), Err(9));
}

#[test]
fn wait_returns_the_value_that_satisfied_the_predicate() {
    let cell = Arc::new(WaitCell::new(0));
    let c = cell.clone();
    let t = thread::spawn(move || c.wait_until(|v| v > 2 && v % 2 == 1));
    for v in 1..=5 {
        thread::sleep(Duration::from_millis(2));
        cell.store(v);
    }
    let got = t.join().unwrap();
    assert!(got == 3 || got == 5, "{got}");
}

#[test]
fn timeout_reports_last_value_and_waits_long_enough() {
    let cell = WaitCell::new(3);
    let t0 = Instant::now();
    let r = cell.wait_until_timeout(|v| v == 4, Duration::from_millis(20));
    assert_eq!(r, WaitResult::TimedOut(3));
    assert!(
        t0.elapsed() >= Duration::from_millis(20),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(cell.parked_waiters(), 0);
}

#[test]
fn deadline_in_the_past_returns_at_once_with_current_value() {
    let cell = WaitCell::new(1);
    let past = Instant::now() - Duration::from_millis(1);
    assert_eq!(
        cell.wait_until_deadline(|v| v == 2, past),
        WaitResult::TimedOut(1)
    );
    assert_eq!(
        cell.wait_until_deadline(|v| v == 1, past),
        WaitResult::Ready(1)
    );
}

#[test]
fn timed_wait_is_woken_before_its_deadline() {
    let cell = Arc::new(WaitCell::new(0));
    let c = cell.clone();
    let policy = WaitPolicy::new().backend(Backend::Futex);
    let t = thread::spawn(move || {
        c.wait_until_deadline_with(
            |v| v == 1,
            Instant::now() + Duration::from_secs(30),
            &policy,
        )
    });
    assert!(poll_until(SETTLE_LIMIT, || cell.parked_waiters() == 1));
    cell.store(1);
    assert_eq!(t.join().unwrap(), WaitResult::Ready(1));
}

#[test]
fn notify_all_wakes_waiters_after_as_atomic_change() {
    let cell = Arc::new(WaitCell::new(0));
    let policy = WaitPolicy::new().backend(Backend::Futex);
    let ts: Vec<_> = (0..4)
        .map(|_| {
            let c = cell.clone();
            thread::spawn(move || c.wait_until_with(|v| v == 1, &policy))
        })
        .collect();
    assert!(poll_until(SETTLE_LIMIT, || cell.parked_waiters() == 4));
    cell.as_atomic()
        .store(1, std::sync::atomic::Ordering::Relaxed);
    cell.notify_all();
    for t in ts {
        assert_eq!(t.join().unwrap(), 1);
    }
}

#[test]
fn notify_one_wakes_one_parked_waiter() {
    let cell = Arc::new(WaitCell::new(0));
    let policy = WaitPolicy::new().backend(Backend::Futex);
    let ts: Vec<_> = (0..2)
        .map(|_| {
            let c = cell.clone();
            // Each waiter consumes one unit, like a semaphore.
            thread::spawn(move || loop {
                let v = c.wait_until_with(|v| v > 0, &policy);
                if c.compare_exchange(v, v - 1).is_ok() {
                    return;
                }
            })
        })
        .collect();
    assert!(poll_until(SETTLE_LIMIT, || cell.parked_waiters() == 2));
    for _ in 0..2 {
        cell.as_atomic()
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        cell.notify_one();
    }
    for t in ts {
        t.join().unwrap();
    }
    assert_eq!(cell.load(), 0);
}

#[test]
fn park_false_keeps_waiting_without_parking() {
    let cell = Arc::new(WaitCell::new(0));
    let c = cell.clone();
    let policy = WaitPolicy::new().park(false).spin(Duration::from_micros(1));
    let t = thread::spawn(move || c.wait_until_with(|v| v == 1, &policy));
    thread::sleep(Duration::from_millis(10));
    assert_eq!(
        cell.parked_waiters(),
        0,
        "a non-parking waiter never registers"
    );
    cell.store(1);
    assert_eq!(t.join().unwrap(), 1);
}

/// Unix only: Windows has no `fork` (and its park tier is process-private).
#[cfg(unix)]
#[test]
fn shared_cell_wakes_across_a_fork() {
    // A cell in MAP_SHARED memory, a waiter in a child process, the notifier here.
    // SAFETY: an anonymous shared mapping of one page is large and aligned enough for
    // a WaitCell; it is written once before the fork, the child only waits on it and
    // exits with _exit, and the parent unmaps it after reaping the child.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        let cell = p as *mut WaitCell;
        cell.write(WaitCell::new_shared(0));
        let cell = &*cell;
        // The test harness runs other tests on other threads. A child of fork()
        // has only this thread, so anything another thread was initializing at the
        // fork would stay locked in the child forever: settle the process-wide
        // selection first. (The waiter side of a shared cell takes no other
        // one-time lock: it fences instead of registering for membarrier.)
        let _ = mwait::selection();
        let pid = libc::fork();
        if pid == 0 {
            let policy = WaitPolicy::new().backend(Backend::Futex);
            let v = cell.wait_until_with(|v| v == 42, &policy);
            libc::_exit(if v == 42 { 0 } else { 1 });
        }
        assert!(
            poll_until(SETTLE_LIMIT, || cell.parked_waiters() == 1),
            "the child parked"
        );
        cell.store(42);
        let mut status = 0;
        assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        libc::munmap(p, 4096);
    }
}

#[test]
fn this_process_selection_is_consistent_with_detection() {
    let caps = Capabilities::detect();
    let sel = mwait::selection();
    assert!(caps.offers(sel.backend) || sel.unsafe_forced, "{sel:?}");
    assert!(caps.usable_cpus >= 1);
}

#[test]
fn huge_timeouts_saturate_instead_of_overflowing() {
    let cell = Arc::new(WaitCell::new(0));
    let c = cell.clone();
    let policy = WaitPolicy::new().backend(Backend::Futex);
    let t = thread::spawn(move || {
        let far = Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600);
        let a = c.wait_until_timeout(|v| v >= 1, Duration::MAX);
        let b = c.wait_until_deadline_with(|v| v >= 2, far, &policy);
        (a, b)
    });
    cell.store(1);
    assert!(poll_until(SETTLE_LIMIT, || cell.parked_waiters() == 1
        || t.is_finished()));
    cell.store(2);
    let (a, b) = t.join().unwrap();
    assert!(matches!(a, WaitResult::Ready(v) if v >= 1));
    assert_eq!(b, WaitResult::Ready(2));
}
