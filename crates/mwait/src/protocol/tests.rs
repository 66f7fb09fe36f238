//! The park half's announcement is withdrawn however a park ends: a panic of the
//! predicate, or a futex wait that fails (an injected failure).

use super::parking::Announced;
use super::*;
use crate::primitive::FENCED_IDLE_NOTIFIES;
use crate::registry::ASYNC_REGISTERED;
use crate::sys::inject;
use state::{announced, replaces_foreign_count, withdrawn, IDLE_MASK, IDLE_ONE, SKIPPED, WOKEN};
use std::panic::{catch_unwind, AssertUnwindSafe};

fn cell() -> (MonitorLine, Sleepers) {
    (MonitorLine::new(0, false), Sleepers::new(false, false))
}

struct Quiet;
impl OnWake for Quiet {
    fn parked_woken(&self) {}
}

#[test]
fn the_state_word_starts_the_line_after_the_value() {
    assert_eq!(std::mem::offset_of!(MonitorLine, value), 0);
    assert_eq!(std::mem::offset_of!(MonitorLine, state), 64);
}

/// A new cell starts `FENCED` with nobody counted, so its first park skips the barrier
/// and a run of idle notifies brings it to the light path; a shared cell and a
/// parker's start with `SHARED_SLOW` alone, and keep it.
#[test]
fn a_new_cell_starts_fenced_until_a_run_of_idle_notifies() {
    let (line, s) = cell();
    assert_eq!(line.state.load(Ordering::Relaxed), FENCED);
    assert_eq!(
        line.announce(&s, epoch_tag(&s)),
        FENCED,
        "the first park skips the barrier"
    );
    let (line, s) = cell();
    for n in 1..=FENCED_IDLE_NOTIFIES {
        line.store(&s, n, &Quiet);
    }
    assert_eq!(line.state.load(Ordering::Relaxed), 0);
    for (shared, parker) in [(true, false), (false, true)] {
        let line = MonitorLine::new(0, true);
        let s = Sleepers::new(shared, parker);
        for n in 1..=FENCED_IDLE_NOTIFIES {
            line.store(&s, n, &Quiet);
        }
        assert_eq!(line.state.load(Ordering::Relaxed), SHARED_SLOW);
    }
}

#[test]
fn idle_notifies_clear_fenced_only_after_a_whole_run() {
    let (line, s) = cell();
    line.state.store(FENCED, Ordering::Relaxed);
    for n in 1..FENCED_IDLE_NOTIFIES {
        line.store(&s, n, &Quiet);
        assert_eq!(line.state.load(Ordering::Relaxed), FENCED | (n * IDLE_ONE));
    }
    line.store(&s, 0, &Quiet);
    assert_eq!(
        line.state.load(Ordering::Relaxed),
        0,
        "the last of the run clears"
    );
    line.store(&s, 1, &Quiet);
    assert_eq!(
        line.state.load(Ordering::Relaxed),
        0,
        "the light path counts nothing"
    );
}

#[test]
fn a_wake_of_a_parked_waiter_ends_the_run_of_idle_notifies() {
    let (line, s) = cell();
    // One waiter counted (nobody sleeps in the queue: the wake finds nobody).
    line.state
        .store(FENCED | (7 * IDLE_ONE) | 1, Ordering::Relaxed);
    line.store(&s, 1, &Quiet);
    assert_eq!(line.state.load(Ordering::Relaxed), FENCED | 1);
}

#[test]
fn a_shared_or_armed_cell_counts_no_idle_notifies() {
    let (line, s) = cell();
    line.state
        .store(FENCED | ASYNC_REGISTERED, Ordering::Relaxed);
    line.notify(&s, park::ALL, &Quiet);
    assert_eq!(line.state.load(Ordering::Relaxed) & IDLE_MASK, 0);
    let shared = MonitorLine::new(0, true);
    let s = Sleepers::new(true, false);
    shared.store(&s, 1, &Quiet);
    assert_eq!(shared.state.load(Ordering::Relaxed), SHARED_SLOW);
}

#[test]
fn a_panicking_predicate_withdraws_the_announcement() {
    let (line, s) = cell();
    let r = catch_unwind(AssertUnwindSafe(|| {
        line.park(&s, &mut |_| panic!("the predicate panics"), None)
    }));
    assert!(r.is_err());
    assert_eq!(line.parked(), 0);
}

#[test]
fn a_failing_futex_wait_withdraws_the_announcement() {
    let (line, s) = cell();
    inject::set_futex_wait_errno(Some(libc::ENOSYS));
    let r = catch_unwind(AssertUnwindSafe(|| {
        line.park(&s, &mut |_| false, Some(crate::sys::clock::now_ns()))
    }));
    inject::set_futex_wait_errno(None);
    assert!(matches!(r, Ok(Err(_))), "the park returns, without panic");
    assert_eq!(line.parked(), 0);
}

/// A tag that is not this process's: the count of a parent of `fork()` as the child
/// sees it.
fn other_tag(s: &Sleepers) -> u32 {
    epoch_tag(s) ^ (1 << EPOCH_SHIFT)
}

#[test]
fn a_notify_removes_a_count_left_by_a_fork_and_fenced_clears_again() {
    let (line, s) = cell();
    line.state
        .store(FENCED | other_tag(&s) | 3, Ordering::Relaxed);
    line.store(&s, 1, &Quiet);
    assert_eq!(
        line.parked(),
        0,
        "the parent's three waiters do not run here"
    );
    for n in 2..=FENCED_IDLE_NOTIFIES + 1 {
        line.store(&s, n, &Quiet);
    }
    assert_eq!(
        line.state.load(Ordering::Relaxed),
        0,
        "a run of idle notifies clears FENCED, as in the parent"
    );
}

#[test]
fn a_park_replaces_a_count_left_by_a_fork_by_its_own() {
    let (line, s) = cell();
    line.state.store(other_tag(&s) | 5, Ordering::Relaxed);
    let mut seen = 0;
    let r = line.park(
        &s,
        &mut |_| {
            seen = line.state.load(Ordering::Relaxed);
            true
        },
        None,
    );
    assert_eq!(r, Ok(0));
    assert_eq!(seen & PARKED_MASK, 1, "counted alone while it parks");
    assert_eq!(seen & EPOCH_MASK, epoch_tag(&s));
    assert_eq!(
        line.state.load(Ordering::Relaxed),
        FENCED,
        "no count, no tag after"
    );
}

#[test]
fn a_count_of_this_process_is_kept_and_the_tag_goes_with_the_last_waiter() {
    let s = Sleepers::new(false, false);
    let tag = epoch_tag(&s);
    assert_eq!(announced(0, tag), tag | 1);
    assert_eq!(announced(tag | 1, tag), tag | 2);
    assert_eq!(withdrawn(tag | 2, tag), Some(tag | 1));
    assert_eq!(withdrawn(FENCED | tag | 1, tag), Some(FENCED));
    // A process-shared cell's counts carry no tag.
    assert_eq!(epoch_tag(&Sleepers::new(true, false)), 0);
}

/// A parker's cell: its park runs no barrier and leaves no `FENCED` behind, so an
/// exchange's notify that finds the waiter gone takes the fast path (`state` keeps
/// only `SHARED_SLOW`), where a plain cell's park leaves `FENCED` and sends the next
/// notifies to the slow path to count themselves.
#[test]
fn a_park_on_a_parker_cell_leaves_no_fenced_bit() {
    let parker = (MonitorLine::new(0, true), Sleepers::new(false, true));
    let plain = cell();
    for ((line, s), base) in [(parker, SHARED_SLOW), (plain, 0)] {
        assert_eq!(line.park(&s, &mut |_| true, None), Ok(0));
        let fenced = if base == 0 { FENCED } else { 0 };
        assert_eq!(line.state.load(Ordering::Relaxed), base | fenced);
        line.value.swap(1, Ordering::SeqCst);
        line.notify(&s, park::ALL, &Quiet);
        let idle = if base == 0 {
            FENCED | IDLE_ONE
        } else {
            SHARED_SLOW
        };
        assert_eq!(line.state.load(Ordering::Relaxed), idle);
    }
}

/// A waiter counted under a tag that is no longer its process's (it forked inside
/// its park) never takes from another tag's count, nor from a count of 0: on a zero
/// state its withdrawal once underflowed into 262143 parked waiters with
/// `SHARED_SLOW` and `ASYNC_REGISTERED` set.
#[test]
fn a_withdrawal_takes_only_from_its_own_tag_s_count() {
    let s = Sleepers::new(false, false);
    let tag = epoch_tag(&s);
    let other = other_tag(&s);
    assert_eq!(withdrawn(0, other), None, "no count: nothing to take");
    assert_eq!(withdrawn(FENCED, tag), None);
    assert_eq!(withdrawn(tag | 2, other), None, "another tag's count");
    assert_eq!(withdrawn(other | 1, other), Some(0));
    // Through the guard, as a forked waiter's park ends.
    let (line, _) = cell();
    line.state.store(tag | 1, Ordering::Relaxed);
    drop(Announced {
        line: &line,
        tag: other,
        guess: other | 1,
    });
    assert_eq!(line.state.load(Ordering::Relaxed), tag | 1, "kept");
    line.state.store(0, Ordering::Relaxed);
    drop(Announced {
        line: &line,
        tag: other,
        guess: other | 1,
    });
    assert_eq!(line.state.load(Ordering::Relaxed), 0, "no underflow");
    assert_eq!(line.parked(), 0);
}

/// The announcement and the withdrawal start their compare-exchanges from a guess
/// instead of a load: right or wrong, the state they leave is the plain
/// read-modify-write's.
#[test]
fn a_guessed_announcement_and_withdrawal_leave_the_state_a_plain_update_would() {
    // A plain cell's announcement guesses `FENCED`, a shared or parker's cell's
    // `SHARED_SLOW`: each meets every state, its own guess's included.
    for (shared, parker) in [(false, false), (true, false), (false, true)] {
        let s = Sleepers::new(shared, parker);
        let tag = epoch_tag(&s);
        a_guessed_update_on(&s, tag);
    }
}

fn a_guessed_update_on(s: &Sleepers, tag: u32) {
    for before in [
        0,
        FENCED,
        SHARED_SLOW,
        FENCED | tag | 2,
        SHARED_SLOW | tag | 1,
        tag | 1 | WOKEN,
        (IDLE_ONE * 3) | FENCED,
    ] {
        for guess in [0, FENCED | tag | 1 | WOKEN, before, before | WOKEN] {
            let (line, _) = cell();
            line.state.store(before, Ordering::Relaxed);
            assert_eq!(line.announce(s, tag), before, "the state before (3)");
            let counted = announced(before, tag);
            assert_eq!(line.state.load(Ordering::Relaxed), counted);
            drop(Announced {
                line: &line,
                tag,
                guess,
            });
            assert_eq!(
                line.state.load(Ordering::Relaxed),
                withdrawn(counted, tag).unwrap(),
                "before {before:#x}, guess {guess:#x}"
            );
        }
    }
}

#[test]
fn an_announcement_that_replaces_a_foreign_count_is_told() {
    let s = Sleepers::new(false, false);
    let (tag, other) = (epoch_tag(&s), other_tag(&s));
    assert!(replaces_foreign_count(other | 3, tag));
    assert!(!replaces_foreign_count(tag | 3, tag));
    assert!(!replaces_foreign_count(FENCED, tag), "no count");
}

/// A process-shared cell's park runs no barrier and leaves no `FENCED` behind: its
/// notifiers fence anyway (`SHARED_SLOW`). With the bit left set, every exchange and
/// `notify_*` on the cell took the slow path for good, since the run of idle notifies
/// that clears it never matched a state that also holds `SHARED_SLOW`.
#[test]
fn a_park_on_a_shared_cell_leaves_no_fenced_bit() {
    let line = MonitorLine::new(0, true);
    let s = Sleepers::new(true, false);
    assert_eq!(line.park(&s, &mut |_| true, None), Ok(0));
    assert_eq!(line.state.load(Ordering::Relaxed), SHARED_SLOW);
    for n in 1..=2 * FENCED_IDLE_NOTIFIES {
        line.value.swap(n, Ordering::SeqCst);
        line.notify(&s, park::ALL, &Quiet);
        line.store(&s, n, &Quiet);
        assert_eq!(line.state.load(Ordering::Relaxed), SHARED_SLOW);
    }
}

/// An async bit on a process-shared cell can only come from another process (its
/// entries refuse async waits): a notify never looks at the registry then, whose
/// wakers would point into that process's memory.
#[test]
fn a_notify_of_a_shared_cell_leaves_the_registry_alone() {
    let line = MonitorLine::new(0, true);
    let s = Sleepers::new(true, false);
    line.state
        .store(SHARED_SLOW | ASYNC_REGISTERED, Ordering::Relaxed);
    line.store(&s, 1, &Quiet);
    line.notify(&s, park::ALL, &Quiet);
    assert_eq!(
        line.state.load(Ordering::Relaxed),
        SHARED_SLOW | ASYNC_REGISTERED,
        "the registry's bookkeeping did not run"
    );
}

/// `WOKEN` lives as long as the count it describes: an announcement takes it off (a
/// new waiter has no wake on its way), the last withdrawal takes it and `SKIPPED`
/// with the count, an earlier one leaves both.
#[test]
fn an_announcement_clears_woken_and_the_last_withdrawal_both_bits() {
    let s = Sleepers::new(false, false);
    let tag = epoch_tag(&s);
    assert_eq!(announced(tag | 1 | WOKEN | SKIPPED, tag), tag | 2 | SKIPPED);
    assert_eq!(
        withdrawn(tag | 2 | WOKEN | SKIPPED, tag),
        Some(tag | 1 | WOKEN | SKIPPED)
    );
    assert_eq!(
        withdrawn(FENCED | tag | 1 | WOKEN | SKIPPED, tag),
        Some(FENCED)
    );
}

/// A notify that finds `WOKEN` marks `SKIPPED` and wakes nobody; one that wakes a
/// count of which nobody sleeps yet (a waiter between its announcement and its
/// sleep) leaves neither bit behind, so the next notify wakes again.
#[test]
fn a_notify_skips_only_behind_a_wake_that_reached_every_counted_waiter() {
    let (line, s) = cell();
    let tag = epoch_tag(&s);
    line.state.store(tag | 1 | WOKEN, Ordering::Relaxed);
    line.value.swap(1, Ordering::SeqCst);
    line.notify(&s, park::ALL, &Quiet);
    assert_eq!(
        line.state.load(Ordering::Relaxed),
        tag | 1 | WOKEN | SKIPPED
    );
    line.state.store(tag | 1, Ordering::Relaxed);
    line.value.swap(2, Ordering::SeqCst);
    line.notify(&s, park::ALL, &Quiet);
    assert_eq!(line.state.load(Ordering::Relaxed), tag | 1, "nobody slept");
}

/// A notifier that wakes a parked waiter reads the clock and stamps the wake only
/// while a parked waiter measures its wake-up; the other wakes leave the stamp alone
/// (a clock read after a long sleep misses on the clock's code and data).
#[test]
fn a_wake_is_stamped_only_while_a_parked_waiter_measures() {
    for measuring in [false, true] {
        let (line, s) = cell();
        s.measure_wake(measuring);
        // One waiter counted (it has announced itself and not slept yet: the wake
        // finds nobody asleep, which changes nothing here).
        line.announce(&s, epoch_tag(&s));
        line.store(&s, 1, &Quiet);
        assert_eq!(s.wake_stamp() != 0, measuring, "measuring: {measuring}");
    }
}
