//! The table's behaviour with real threads: waits that end on a change of either
//! half of a 64-bit word, wakes of one that wake exactly one waiter of their word
//! whatever shares the bucket, and timeouts that leave the queue clean.

use super::table::Doorbell;
use super::*;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Long enough for a parked waiter to be woken on a loaded 2-vCPU machine.
const SETTLE: Duration = Duration::from_secs(20);

/// Waits until `cond` holds (panics after [`SETTLE`]).
fn settle(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < SETTLE, "{what}: not within {SETTLE:?}");
        thread::sleep(Duration::from_micros(200));
    }
}

/// Two distinct words of `words` that share a bucket.
fn colliding<A: Atomic>(words: &[A]) -> (&A, &A) {
    let mut seen = std::collections::HashMap::new();
    for w in words {
        if let Some(first) = seen.insert(bucket_index(w), w) {
            return (first, w);
        }
    }
    panic!(
        "no two of {} words share one of {} buckets",
        words.len(),
        table::BUCKETS
    );
}

#[test]
fn a_u32_wait_ends_on_a_change_and_its_wake() {
    let a = AtomicU32::new(0);
    thread::scope(|s| {
        let t = s.spawn(|| wait(&a, 0));
        settle("parked", || parked_waiters(&a) == 1);
        a.store(7, Ordering::Relaxed);
        wake_one(&a);
        assert_eq!(t.join().unwrap(), 7);
    });
    assert_eq!(parked_waiters(&a), 0);
}

/// Queued is not yet asleep: a waiter between its announcement and its sleep sees
/// the store itself and takes its entry off the queue, so the wake finds nobody. The
/// scenario runs until a wake takes the entry (a pause before each store makes the
/// first try almost always the one); every try must end with the new value.
#[test]
fn a_change_of_the_high_half_alone_wakes_a_parked_u64_waiter() {
    const TRIES: u32 = 20;
    let rung = (0..TRIES).any(|try_| {
        let a = AtomicU64::new(5);
        thread::scope(|s| {
            let t = s.spawn(|| wait(&a, 5));
            settle("parked", || parked_waiters(&a) == 1);
            thread::sleep(Duration::from_millis(20 << try_.min(4)));
            a.store(5 | (1 << 32), Ordering::Relaxed);
            let woken = wake_counted(&a, 1);
            assert_eq!(t.join().unwrap(), 5 | (1 << 32));
            assert!(woken <= 1, "{woken}");
            woken == 1
        })
    });
    assert!(rung, "no wake of {TRIES} found the waiter queued");
}

#[test]
fn a_wake_of_one_wakes_exactly_one_waiter_of_its_word_in_a_shared_bucket() {
    let words: Vec<AtomicU32> = (0..4 * table::BUCKETS).map(|_| AtomicU32::new(0)).collect();
    let (a, b) = colliding(&words);
    thread::scope(|s| {
        let wa: Vec<_> = (0..2).map(|_| s.spawn(|| wait(a, 0))).collect();
        let wb = s.spawn(|| wait(b, 0));
        settle("parked", || {
            parked_waiters(a) == 2 && parked_waiters(b) == 1
        });
        // A queued waiter may not be asleep yet (the test above): it would see the
        // store itself and pass the wake on.
        thread::sleep(Duration::from_millis(100));
        // A wake of a word nobody waits on rings nothing, though the bucket is full.
        let c = words
            .iter()
            .find(|w| !std::ptr::eq(*w, a) && !std::ptr::eq(*w, b))
            .unwrap();
        assert_eq!(wake_counted(c, park::ALL), 0);
        a.store(1, Ordering::Relaxed);
        assert_eq!(wake_counted(a, 1), 1);
        settle("one of a's waiters leaves", || {
            wa.iter().filter(|t| t.is_finished()).count() == 1
        });
        thread::sleep(Duration::from_millis(20));
        assert_eq!(
            wa.iter().filter(|t| t.is_finished()).count(),
            1,
            "exactly one woke"
        );
        assert_eq!((parked_waiters(a), parked_waiters(b)), (1, 1));
        assert_eq!(wake_counted(a, park::ALL), 1);
        for t in wa {
            assert_eq!(t.join().unwrap(), 1);
        }
        assert!(!wb.is_finished(), "b's waiter was never woken");
        b.store(2, Ordering::Relaxed);
        wake_one(b);
        assert_eq!(wb.join().unwrap(), 2);
    });
}

#[test]
fn a_timed_wait_times_out_and_leaves_the_queue_clean() {
    let a = AtomicU64::new(3);
    let r = wait_timeout(&a, 3, Duration::from_millis(30));
    assert_eq!(r, WaitResult::TimedOut(3));
    assert_eq!(parked_waiters(&a), 0);
    let r = wait_until(
        &a,
        |v| v == 4,
        Some(Instant::now() + Duration::from_millis(5)),
    );
    assert_eq!(r, WaitResult::TimedOut(3));
    assert_eq!(wait_deadline(&a, 2, Instant::now()), WaitResult::Ready(3));
}

#[test]
fn a_wake_of_a_dangling_pointer_is_harmless() {
    let p: *const AtomicU32 = &*Box::new(AtomicU32::new(0));
    wake_one(p);
    wake_all(p);
    assert_eq!(parked_waiters(p), 0);
}

#[test]
fn a_taken_wake_of_one_goes_on_unless_its_waiter_consumes_it() {
    // Two entries of one word queued, as two waiters between their announcement
    // and their sleep are; a wake of one takes the oldest.
    let a = AtomicU32::new(0);
    let addr = &a as *const AtomicU32 as usize;
    let b = bucket(addr);
    let (bell1, bell2) = (Arc::new(Doorbell::new()), Arc::new(Doorbell::new()));
    let mut first = b.announce(addr, &bell1);
    let second = b.announce(addr, &bell2);
    assert_eq!(b.wake(addr, 1), 1);
    assert!(bell1.rung() && !bell2.rung());
    // Its waiter slept and was woken by it: the wake is spent.
    first.consume();
    drop(first);
    assert!(!bell2.rung());
    drop(second);
    assert_eq!(parked_waiters(&a), 0);

    let (bell3, bell4) = (Arc::new(Doorbell::new()), Arc::new(Doorbell::new()));
    let first = b.announce(addr, &bell3);
    let second = b.announce(addr, &bell4);
    assert_eq!(b.wake(addr, 1), 1);
    // Its waiter found its predicate true without sleeping: the wake goes on.
    drop(first);
    assert!(bell4.rung(), "passed on to the next waiter of the word");
    drop(second);
    assert_eq!(parked_waiters(&a), 0);
}

#[test]
fn a_park_sleeps_on_a_spare_doorbell_once_nobody_else_holds_it() {
    // A bucket of the test's own, whose spares no other test's park takes.
    let b = table::Bucket::new();
    let addr = 0x1000;
    let mut first = b.announce_own(addr);
    let bell1 = Arc::as_ptr(first.bell());
    // A notifier takes the entry, marks the bell and rings it; its ring returned.
    assert_eq!(b.wake(addr, park::ALL), 1);
    assert!(first.bell().rung());
    first.consume();
    drop(first);
    // Were the bell freed, the allocator would hand its memory to this decoy, and
    // the next park's bell could not have its address.
    let decoy = Arc::new(Doorbell::new());

    // The next park sleeps on the same doorbell, armed again.
    let second = b.announce_own(addr);
    assert_eq!(Arc::as_ptr(second.bell()), bell1);
    assert!(!second.bell().rung());
    // Held elsewhere, as by a notifier whose ring has not returned, a spare is not
    // handed out: the park allocates.
    let held = Arc::clone(second.bell());
    drop(second);
    let third = b.announce_own(addr);
    let bell3 = Arc::as_ptr(third.bell());
    assert_ne!(bell3, bell1);
    drop(third);

    // Both are kept; once the holder lets go, two parks at once take them both,
    // and a third allocates.
    drop(held);
    let decoys = [Arc::new(Doorbell::new()), Arc::new(Doorbell::new())];
    let (x, y, z) = (
        b.announce_own(addr),
        b.announce_own(addr),
        b.announce_own(addr),
    );
    let mut taken = [Arc::as_ptr(x.bell()), Arc::as_ptr(y.bell())];
    taken.sort();
    let mut kept = [bell1, bell3];
    kept.sort();
    assert_eq!(taken, kept);
    assert!(!kept.contains(&Arc::as_ptr(z.bell())));
    assert!(![&x, &y, &z].iter().any(|q| q.bell().rung()));
    assert_eq!(b.queued(addr), 3);
    drop((x, y, z));
    assert_eq!(b.queued(addr), 0);
    drop((decoy, decoys));
}

/// A park of `addr` on `b` as `TableWord::park` makes it, without the barrier
/// itself: announced, and marking the bucket where it was not marked for `addr`.
/// Returns the guard and whether the park found the mark.
fn park_marking(b: &table::Bucket, addr: usize) -> (table::Queued<'_>, bool) {
    let q = b.announce_own(addr);
    let fenced = q.fenced();
    if !fenced {
        q.barrier_done();
    }
    (q, fenced)
}

#[test]
fn a_word_whose_waiter_parked_lets_its_next_waiters_skip_the_barrier() {
    use crate::primitive::FENCED_IDLE_NOTIFIES;
    let b = table::Bucket::new();
    let (x, y) = (0x1000, 0x2000);
    let park = |addr: usize| park_marking(&b, addr);

    // The first park runs its barrier and marks the bucket; a notifier takes it.
    let (mut first, fenced) = park(x);
    assert!(!fenced);
    assert_eq!(b.wake(x, park::ALL), 1);
    first.consume();
    drop(first);
    // The next ones skip it, however many wakes find nobody parked in between.
    for _ in 0..3 * FENCED_IDLE_NOTIFIES {
        let (q, fenced) = park(x);
        assert!(fenced);
        drop(q);
        assert_eq!(b.wake(x, park::ALL), 0);
    }
    // A wake of another word takes nothing and leaves the mark.
    for _ in 0..2 * FENCED_IDLE_NOTIFIES {
        assert_eq!(b.wake(y, park::ALL), 0);
    }
    assert!(park(x).1);
    // A run of wakes of the word that find nobody parked clears it.
    for _ in 0..FENCED_IDLE_NOTIFIES {
        assert_eq!(b.wake(x, park::ALL), 0);
    }
    let (q, fenced) = park(x);
    assert!(!fenced, "cleared by a run of idle wakes");
    drop(q);
}

#[test]
fn the_barrier_mark_is_dropped_by_another_word_and_never_set_out_of_the_queue() {
    let b = table::Bucket::new();
    let (x, y) = (0x1000, 0x2000);
    let park = |addr: usize| park_marking(&b, addr);

    // A waiter of another word drops the mark; so do two words queued at once.
    let (q, _) = park(x);
    drop(q);
    assert!(park(x).1);
    let (qy, fenced) = park(y);
    assert!(!fenced);
    drop(qy);
    let (q, fenced) = park(x);
    assert!(!fenced, "another word's waiter took the mark");
    let (qy, fenced) = park(y);
    assert!(!fenced);
    drop((q, qy));
    assert!(!park(x).1, "no mark while two words were queued");

    // A waiter whose entry a notifier took before its barrier ended sets no mark,
    // even with another waiter of the word queued by then (the bucket was empty
    // in between, and a notifier may have looked).
    assert!(!park(y).1);
    let mut q = b.announce_own(x);
    assert!(!q.fenced());
    assert_eq!(b.wake(x, 1), 1);
    let later = b.announce_own(x);
    q.barrier_done();
    q.consume();
    drop((q, later));
    assert!(!park(x).1);
    assert_eq!(b.queued(x) + b.queued(y), 0);
}

#[test]
fn the_table_is_32_kib_of_two_line_buckets_and_spreads_neighbouring_words() {
    assert_eq!(std::mem::size_of::<table::Bucket>(), 128);
    assert_eq!(std::mem::size_of::<table::Table>(), 32 * 1024);
    // A ring's slots, side by side, fall in different buckets.
    let ring: Vec<AtomicU32> = (0..64).map(|_| AtomicU32::new(0)).collect();
    let buckets: std::collections::HashSet<usize> = ring.iter().map(|w| bucket_index(w)).collect();
    assert!(
        buckets.len() >= 48,
        "64 neighbouring words in {} buckets",
        buckets.len()
    );
}

/// `wait_or_woken` ends on a wake that finds its waiter asleep, changed value or
/// not: a wake with no change, and a change undone right after the wake (it returns
/// the value it reads then). `wait` sleeps through both.
#[test]
fn a_wake_ends_a_futex_style_wait_whatever_the_value() {
    let w = AtomicU32::new(0);
    thread::scope(|s| {
        // A wake with no change.
        let sleeper = s.spawn(|| wait_or_woken(&w, 0));
        settle("parked", || parked_waiters(&w) == 1);
        wake_all(&w);
        assert_eq!(sleeper.join().unwrap(), 0);
        // A change, its wake, and the change undone.
        let sleeper = s.spawn(|| wait_or_woken(&w, 0));
        settle("parked", || parked_waiters(&w) == 1);
        w.store(1, Ordering::Release);
        wake_one(&w);
        w.store(0, Ordering::Release);
        // The count goes up before the sleep: a sleeper still on its way to the
        // futex sees the 1 itself; one asleep is woken and returns what it reads.
        let v = sleeper.join().unwrap();
        assert!(v <= 1, "{v}");
        // `wait` goes back to sleep after the same wake, until the value changes.
        let sleeper = s.spawn(|| wait(&w, 0));
        settle("parked", || parked_waiters(&w) == 1);
        wake_all(&w);
        settle("parked again", || parked_waiters(&w) == 1);
        assert!(!sleeper.is_finished());
        w.store(2, Ordering::Release);
        wake_all(&w);
        assert_eq!(sleeper.join().unwrap(), 2);
    });
}

/// The timed predicate waits end on a change their predicate accepts, woken from a
/// park, and time out with the last value otherwise.
#[test]
fn the_timed_predicate_waits_end_on_an_accepted_change_or_time_out() {
    let a = AtomicU64::new(0);
    thread::scope(|s| {
        let t = s.spawn(|| wait_until_timeout(&a, |v| v >= 2, SETTLE));
        settle("parked", || parked_waiters(&a) == 1);
        a.store(1, Ordering::Release);
        wake_all(&a);
        a.store(2, Ordering::Release);
        wake_all(&a);
        assert_eq!(t.join().unwrap(), WaitResult::Ready(2));
        let t = s.spawn(|| wait_until_deadline(&a, |v| v == 9, Instant::now() + SETTLE));
        settle("parked", || parked_waiters(&a) == 1);
        a.store(9, Ordering::Release);
        wake_one(&a);
        assert_eq!(t.join().unwrap(), WaitResult::Ready(9));
    });
    let start = Instant::now();
    let r = wait_until_timeout(&a, |v| v == 0, Duration::from_millis(5));
    assert_eq!(r, WaitResult::TimedOut(9));
    assert!(start.elapsed() >= Duration::from_millis(5));
}
