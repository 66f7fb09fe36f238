//! `Parker`, `Unparker` and `block_on`: the token, timed parks, the waker, a
//! ping-pong that would hang on a lost unpark, and a long park that sleeps.

use mwait::{block_on, Parker, Unparker};
use mwait_support::thread_cpu_time;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

#[test]
fn a_token_set_before_the_park_is_taken_at_once() {
    let p = Parker::new();
    let u = p.unparker();
    assert!(u.unpark());
    let t0 = Instant::now();
    p.park();
    assert!(t0.elapsed() < Duration::from_secs(5));
    // Taken: the next timed park finds none.
    assert!(!p.park_timeout(Duration::from_millis(1)));
}

#[test]
fn unparks_before_a_park_leave_one_token() {
    let p = Parker::new();
    let u = p.unparker();
    assert!(u.unpark());
    assert!(!u.unpark());
    assert!(!p.unpark());
    assert!(p.park_timeout(Duration::from_secs(60)));
    assert!(!p.park_timeout(Duration::ZERO), "three unparks, one token");
}

#[test]
fn a_timed_park_without_a_token_lasts_its_timeout() {
    let p = Parker::new();
    let t0 = Instant::now();
    assert!(!p.park_timeout(Duration::from_millis(20)));
    assert!(t0.elapsed() >= Duration::from_millis(20));
    let deadline = Instant::now() + Duration::from_millis(20);
    assert!(!p.park_deadline(deadline));
    assert!(Instant::now() >= deadline);
    // A deadline in the past returns at once, and still takes a token that is there.
    p.unpark();
    assert!(p.park_deadline(Instant::now() - Duration::from_millis(1)));
}

#[test]
fn huge_timeouts_do_not_overflow() {
    let (p, u) = (Parker::new(), Parker::new().unparker());
    assert!(!u.will_unpark(&p));
    p.unpark();
    assert!(p.park_timeout(Duration::MAX));
    p.unpark();
    assert!(p.park_timeout(Duration::from_millis(u64::from(u32::MAX))));
}

#[test]
fn an_unpark_from_another_thread_ends_a_park() {
    for delay_ms in [0, 1, 20] {
        let p = Parker::new();
        let u = p.unparker();
        let t = thread::spawn(move || {
            thread::sleep(Duration::from_millis(delay_ms));
            u.unpark();
        });
        p.park();
        t.join().unwrap();
        let p2 = Parker::new();
        let u2 = p2.unparker();
        let t = thread::spawn(move || {
            thread::sleep(Duration::from_millis(delay_ms));
            u2.unpark();
        });
        assert!(p2.park_timeout(Duration::from_secs(60)));
        t.join().unwrap();
    }
}

#[test]
fn unparkers_name_their_parker() {
    let p = Parker::new();
    let q = Parker::new();
    let (u1, u2) = (p.unparker(), p.unparker().clone());
    assert!(u1.will_unpark(&p) && u2.will_unpark(&p));
    assert!(u1.same_parker(&u2));
    assert!(!u1.will_unpark(&q));
    assert!(!u1.same_parker(&q.unparker()));
    assert!(format!("{p:?} {u1:?}").contains("notified: false"));
    u1.unpark();
    assert!(format!("{p:?}").contains("notified: true"));
}

#[test]
fn a_waker_unparks() {
    let p = Parker::new();
    let waker = Waker::from(p.unparker());
    waker.wake_by_ref();
    assert!(p.park_timeout(Duration::ZERO));
    let clone = waker.clone();
    clone.wake();
    assert!(p.park_timeout(Duration::ZERO));
    assert!(!p.park_timeout(Duration::ZERO));
}

/// Two threads hand a turn back and forth through two parkers, each with a shared
/// counter that says whose turn it is. A lost unpark hangs a thread, and the test
/// with it; a park that returned without a token would see the counter unchanged.
#[test]
fn ping_pong_loses_no_unpark() {
    const ROUNDS: u32 = 20_000;
    let turn = Arc::new(AtomicU32::new(0));
    let (pa, pb) = (Parker::new(), Parker::new());
    let (ua, ub) = (pa.unparker(), pb.unparker());
    let other = {
        let turn = turn.clone();
        thread::spawn(move || {
            for i in 0..ROUNDS {
                pb.park();
                assert_eq!(
                    turn.load(Ordering::Acquire),
                    2 * i + 1,
                    "no token, no return"
                );
                turn.store(2 * i + 2, Ordering::Release);
                ua.unpark();
            }
        })
    };
    for i in 0..ROUNDS {
        turn.store(2 * i + 1, Ordering::Release);
        ub.unpark();
        pa.park();
        assert_eq!(turn.load(Ordering::Acquire), 2 * i + 2);
    }
    other.join().unwrap();
}

/// Unparks racing timed parks: every token an unpark set (it returned `true`) is
/// taken by exactly one park (a timed park that returned `true`, or the final park),
/// whether it came before, during or just after a park's timeout.
#[test]
fn unparks_racing_timeouts_are_each_taken_once() {
    const UNPARKS: u32 = 2_000;
    let p = Parker::new();
    let u = p.unparker();
    let done = Arc::new(AtomicBool::new(false));
    let unparker = {
        let done = done.clone();
        thread::spawn(move || {
            let mut set = 0u32;
            for i in 0..UNPARKS {
                if i % 4 == 0 {
                    thread::sleep(Duration::from_micros(50));
                }
                set += u32::from(u.unpark());
            }
            done.store(true, Ordering::Release);
            set
        })
    };
    let mut taken = 0u32;
    while !done.load(Ordering::Acquire) {
        taken += u32::from(p.park_timeout(Duration::from_micros(30)));
    }
    let set = unparker.join().unwrap();
    taken += u32::from(p.park_timeout(Duration::ZERO));
    assert_eq!(taken, set);
    assert!(set > 0);
}

/// A future that is pending until another thread sets its flag and wakes it.
struct Flag {
    set: Arc<AtomicBool>,
    waker: Arc<std::sync::Mutex<Option<Waker>>>,
}

impl Future for Flag {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        *self.waker.lock().unwrap() = Some(cx.waker().clone());
        if self.set.load(Ordering::Acquire) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

fn flag_set_later(after: Duration) -> (Flag, thread::JoinHandle<()>) {
    let set = Arc::new(AtomicBool::new(false));
    let waker: Arc<std::sync::Mutex<Option<Waker>>> = Arc::default();
    let t = {
        let (set, waker) = (set.clone(), waker.clone());
        thread::spawn(move || {
            thread::sleep(after);
            set.store(true, Ordering::Release);
            if let Some(w) = waker.lock().unwrap().take() {
                w.wake();
            }
        })
    };
    (Flag { set, waker }, t)
}

#[test]
fn block_on_runs_a_future_woken_by_another_thread() {
    for _ in 0..3 {
        let (flag, t) = flag_set_later(Duration::from_millis(5));
        block_on(flag);
        t.join().unwrap();
    }
    assert_eq!(block_on(async { 7 }), 7);
}

#[test]
fn nested_block_on_uses_a_parker_of_its_own() {
    let v = block_on(async {
        let (flag, t) = flag_set_later(Duration::from_millis(5));
        block_on(flag);
        t.join().unwrap();
        3
    });
    assert_eq!(v, 3);
    let (flag, t) = flag_set_later(Duration::from_millis(1));
    block_on(flag);
    t.join().unwrap();
}

/// A park that waits 200 ms sleeps in the kernel: its thread's CPU time stays under
/// 5 % of the wait (as `park_cpu.rs` asserts for the cell's own waits).
#[test]
fn a_long_park_sleeps() {
    const WAIT: Duration = Duration::from_millis(200);
    let p = Parker::new();
    let u: Unparker = p.unparker();
    // One short park first: the process's one-time selection is not the park's.
    assert!(!p.park_timeout(Duration::from_millis(1)));
    // The clock starts before the unparker's sleep does, so that the wall time
    // covers the whole sleep however late the spawning thread gets to read it.
    let (cpu0, t0) = (thread_cpu_time(), Instant::now());
    let t = thread::spawn(move || {
        thread::sleep(WAIT);
        u.unpark();
    });
    p.park();
    let (cpu, wall) = (thread_cpu_time() - cpu0, t0.elapsed());
    t.join().unwrap();
    println!("a 200 ms park: {cpu:?} of CPU over {wall:?}");
    assert!(wall >= WAIT);
    assert!(
        cpu < wall / 20,
        "{cpu:?} of CPU over {wall:?}: it does not sleep"
    );
}

/// The same for a timed park that runs out.
#[test]
fn a_long_timed_park_sleeps() {
    const WAIT: Duration = Duration::from_millis(200);
    let p = Parker::new();
    assert!(!p.park_timeout(Duration::from_millis(1)));
    let (cpu0, t0) = (thread_cpu_time(), Instant::now());
    assert!(!p.park_timeout(WAIT));
    let (cpu, wall) = (thread_cpu_time() - cpu0, t0.elapsed());
    assert!(wall >= WAIT);
    assert!(
        cpu < wall / 20,
        "{cpu:?} of CPU over {wall:?}: it does not sleep"
    );
}

/// A future that is pending until a helper thread, started beforehand, has taken its
/// waker and woken it: a `block_on` of it parks at least once, and needs no thread
/// spawned where it runs (a thread-local destructor).
struct WokenByHelper {
    slot: Arc<std::sync::Mutex<Option<Waker>>>,
    woken: Arc<AtomicBool>,
}

impl WokenByHelper {
    fn new() -> (WokenByHelper, thread::JoinHandle<()>) {
        let slot: Arc<std::sync::Mutex<Option<Waker>>> = Arc::default();
        let woken = Arc::new(AtomicBool::new(false));
        let helper = {
            let (slot, woken) = (slot.clone(), woken.clone());
            thread::spawn(move || loop {
                if let Some(w) = slot.lock().unwrap().take() {
                    woken.store(true, Ordering::Release);
                    w.wake();
                    return;
                }
                thread::sleep(Duration::from_millis(1));
            })
        };
        (WokenByHelper { slot, woken }, helper)
    }
}

impl Future for WokenByHelper {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.woken.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        *self.slot.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// Runs a `block_on` that parks when the thread's locals are destroyed, and counts it.
struct BlockOnAtExit {
    future: Option<WokenByHelper>,
    done: Arc<AtomicU32>,
}

impl Drop for BlockOnAtExit {
    fn drop(&mut self) {
        if let Some(f) = self.future.take() {
            block_on(f);
            self.done.fetch_add(1, Ordering::SeqCst);
        }
    }
}

thread_local! {
    static AT_EXIT: std::cell::RefCell<Option<BlockOnAtExit>> =
        const { std::cell::RefCell::new(None) };
}

/// A `block_on` in a thread-local destructor finishes, whether the thread's own
/// `block_on` state was made before that thread-local (and may be gone by then) or
/// not at all (and is made, or not, while the thread exits).
#[test]
fn block_on_finishes_in_a_thread_local_destructor() {
    let done = Arc::new(AtomicU32::new(0));
    for wait_first in [false, true] {
        let (future, helper) = WokenByHelper::new();
        let d = done.clone();
        thread::spawn(move || {
            if wait_first {
                let (f, h) = WokenByHelper::new();
                block_on(f);
                h.join().unwrap();
            }
            AT_EXIT.with(|s| {
                *s.borrow_mut() = Some(BlockOnAtExit {
                    future: Some(future),
                    done: d,
                })
            });
        })
        .join()
        .unwrap();
        helper.join().unwrap();
    }
    assert_eq!(done.load(Ordering::SeqCst), 2);
}
