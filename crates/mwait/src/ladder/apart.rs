//! Pairs that the scheduler put on one CPU while another CPU of the process is free.
//!
//! Two threads that answer each other and share a CPU hand that CPU back and forth
//! through the kernel on every round trip: one parks, the other runs. The CPU then
//! never holds more than one runnable thread of the pair, and the kernel's load
//! balancer, which only moves threads that wait in a run queue, has nothing to move:
//! the pair stays on one CPU, at a futex wake-up per hop, while another CPU idles.
//! Unpinned threads that start together land there often: thread creation and the
//! first wake-ups (a start-up handshake, the process's one-time backend selection)
//! place a thread beside the one that created or woke it.
//!
//! Where the policy opts in ([`WaitPolicy::move_apart`](crate::WaitPolicy::move_apart),
//! off by default: a library changes nothing of its caller's unasked), a thread that
//! has woken a waiter that went to sleep on the thread's own CPU
//! ([`Woke::Beside`](super::adapt::Woke::Beside)) and then waits itself, for the
//! partner's answer most likely, therefore leaves that CPU at the start of that
//! wait, where it may: its affinity mask names other CPUs, the process has more than
//! one, and the machine has no more runnable threads than CPUs (`load.rs`, so that a
//! CPU is likely free). It takes its CPU out of its affinity mask, which makes the
//! kernel migrate it before the call returns, and then puts the mask back as it was;
//! the woken partner runs on the CPU that the thread left. The scheduler may bring
//! the pair together again (other threads' wake-ups, a busy machine): a thread leaves
//! again after [`LEAVE_GAP_MIN_NS`], and each time it has to leave again soon the gap
//! doubles, up to [`LEAVE_GAP_MAX_NS`], so that a scheduler that keeps the pair
//! together for reasons of its own is not fought on every hop. A pair pinned to one
//! CPU (each mask names one CPU) stays together: there the same-CPU hand-off is the
//! right way to wait.

use super::load;
use crate::policy::usable_cpus;
use crate::sys::{self, clock::now_ns};
use std::cell::Cell;

/// The first gap between two attempts of one thread to leave its CPU: a pair that
/// the scheduler brings back together within its first few hundred round trips is
/// separated again within a few hundred more.
pub(crate) const LEAVE_GAP_MIN_NS: u64 = 200_000;
/// The longest gap, reached after six attempts in a row that each came as soon as
/// the gap allowed: at most a hundred attempts per second, each two system calls and
/// a migration (tens of µs), cost a thread well under 1 % of a CPU.
pub(crate) const LEAVE_GAP_MAX_NS: u64 = 10_000_000;

std::thread_local! {
    /// When this thread last tried to leave its CPU (0: never), and the gap it keeps
    /// before the next attempt.
    static LAST_LEAVE: Cell<(u64, u64)> = const { Cell::new((0, LEAVE_GAP_MIN_NS)) };
}

/// The gap after an attempt `since` ns after the last one, which kept `gap`: the
/// shortest after a long quiet spell, doubled after an attempt that came as soon as
/// it was allowed.
fn next_gap(since: u64, gap: u64) -> u64 {
    if since > LEAVE_GAP_MAX_NS.saturating_mul(2) {
        LEAVE_GAP_MIN_NS
    } else {
        gap.saturating_mul(2).min(LEAVE_GAP_MAX_NS)
    }
}

/// Called at the start of a wait by a thread that has woken a waiter parked on CPU
/// `cpu`, its own then: moves this thread to another CPU where that is allowed and
/// likely to help. Returns whether the two are apart now.
#[cold]
pub(crate) fn leave_cpu(cpu: u32) -> bool {
    if sys::current_cpu() != cpu {
        // The scheduler has moved this thread meanwhile.
        return true;
    }
    let now = now_ns();
    let (last, gap) = LAST_LEAVE.with(Cell::get);
    let since = if last == 0 {
        u64::MAX
    } else {
        now.saturating_sub(last)
    };
    if since < gap {
        return false;
    }
    LAST_LEAVE.with(|l| l.set((now.max(1), next_gap(since, gap))));
    if usable_cpus() <= 1 || !load::allows_spin_now(now) {
        return false;
    }
    let Some(mask) = sys::ThreadCpus::of_this_thread().filter(|m| m.count() > 1) else {
        return false;
    };
    let narrowed = mask.without(cpu as usize);
    if !mask.move_off(cpu as usize) {
        return false;
    }
    // Put the mask back only if it is still ours: a `sched_setaffinity` that another
    // thread made on this one in between stands. Should the kernel refuse the mask as
    // it was (the cpuset changed meanwhile), the thread keeps the narrower one, a
    // subset of the one it had.
    if narrowed.is_this_thread_s() {
        let _restored = mask.apply();
    }
    sys::current_cpu() != cpu
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::WaitCell;
    use std::sync::Arc;

    /// Restricts the calling thread to CPU `cpu` (one `move_off` per other CPU).
    fn pin_to(cpu: u32) {
        for c in (0..1024).filter(|&c| c != cpu as usize) {
            if let Some(mask) = sys::ThreadCpus::of_this_thread() {
                let _ = mask.move_off(c);
            }
        }
    }

    /// Two threads ping-pong through two cells whose policy has `move_apart(on)`:
    /// `together` round trips pinned to one CPU, then `apart` more with their masks
    /// as they were. Returns, per round trip of the second part, whether the two
    /// threads ran on one CPU.
    fn ping_pong_from_one_cpu(together: u32, apart: u32, on: bool) -> Vec<bool> {
        let policy = crate::WaitPolicy::new().move_apart(on);
        let cells = Arc::new([
            WaitCell::with_policy(0, policy),
            WaitCell::with_policy(0, policy),
            WaitCell::with_policy(0, policy),
        ]);
        let cpu = sys::current_cpu();
        let n = together + apart;
        let side = |timer: bool| {
            let cells = cells.clone();
            std::thread::spawn(move || {
                let mask = sys::ThreadCpus::of_this_thread().expect("affinity mask");
                pin_to(cpu);
                let mut cpus = Vec::new();
                for i in 1..=n {
                    if i == together + 1 {
                        assert!(mask.apply(), "mask restored");
                    }
                    if timer {
                        cells[0].store(i);
                        cells[1].wait_until(|v| v == i);
                        cpus.push(cells[2].load());
                    } else {
                        cells[0].wait_until(|v| v == i);
                        cells[2].store(sys::current_cpu());
                        cells[1].store(i);
                    }
                    if timer && i > together {
                        let partner = cpus.pop().unwrap();
                        cpus.push(u32::from(partner == sys::current_cpu()));
                    }
                }
                cpus
            })
        };
        let partner = side(false);
        let timer = side(true);
        let shared = timer.join().unwrap();
        partner.join().unwrap();
        shared[shared.len() - apart as usize..]
            .iter()
            .map(|&s| s == 1)
            .collect()
    }

    /// A thread that leaves its CPU runs elsewhere when the call returns, with the
    /// mask it had.
    #[test]
    #[cfg_attr(miri, ignore = "Miri has no CPU numbers and no affinity masks")]
    fn leaving_moves_the_thread_off_its_cpu_and_puts_its_mask_back() {
        let Some(mask) = sys::ThreadCpus::of_this_thread().filter(|m| m.count() >= 2) else {
            return;
        };
        if usable_cpus() < 2 || sys::current_cpu() == u32::MAX {
            return;
        }
        // A thread of its own: one that has never tried to leave, so no gap holds it.
        std::thread::spawn(move || {
            let cpu = sys::current_cpu();
            let moved = leave_cpu(cpu);
            // A machine with more runnable threads than CPUs (other tests, other
            // processes) is the one case where the thread stays.
            if !moved {
                assert!(!load::allows_spin_now(now_ns()), "stayed on CPU {cpu}");
                return;
            }
            assert_ne!(sys::current_cpu(), cpu);
            assert!(mask.is_this_thread_s(), "the mask it had is back");
        })
        .join()
        .unwrap();
    }

    /// End to end: a pair that learned to park on one CPU, whose masks then name
    /// both again, runs apart (the scheduler may bring it back together: see the
    /// module docs). Without the opt-in such a pair may stay on one CPU for the
    /// whole second part (`docs/design-notes.md`).
    #[test]
    #[cfg_attr(miri, ignore = "Miri has no CPU numbers and no affinity masks")]
    fn a_pair_that_the_scheduler_keeps_on_one_cpu_moves_apart() {
        let cpus = sys::ThreadCpus::of_this_thread().map_or(1, |m| m.count());
        if cpus < 2 || usable_cpus() < 2 || sys::current_cpu() == u32::MAX {
            return;
        }
        let shared = ping_pong_from_one_cpu(200, 2_000, true);
        // A machine with more runnable threads than CPUs is the one case where the
        // pair may stay together.
        assert!(
            shared.contains(&false) || !load::allows_spin_now(now_ns()),
            "all {} round trips on one CPU",
            shared.len()
        );
    }

    /// The restore after a move puts the mask back only while it is still the
    /// narrowed one: a mask that another thread set on this one in between stands.
    #[test]
    #[cfg_attr(miri, ignore = "Miri has no affinity masks")]
    fn a_mask_set_by_another_thread_in_between_is_not_overwritten() {
        let Some(mask) = sys::ThreadCpus::of_this_thread().filter(|m| m.count() >= 2) else {
            return;
        };
        let cpu = sys::current_cpu() as usize;
        std::thread::spawn(move || {
            let narrowed = mask.without(cpu);
            assert!(mask.move_off(cpu));
            assert!(narrowed.is_this_thread_s(), "the narrowed mask is ours");
            // Another thread's setting (here: this thread's own, standing in for it).
            let theirs = mask.without((cpu + 1) % 2);
            assert!(theirs.apply());
            assert!(
                !narrowed.is_this_thread_s(),
                "another mask is not ours to restore"
            );
            assert!(theirs.is_this_thread_s());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_gap_doubles_while_the_pair_keeps_meeting_and_resets_after_a_quiet_spell() {
        let mut gap = LEAVE_GAP_MIN_NS;
        let mut gaps = Vec::new();
        for _ in 0..8 {
            gap = next_gap(gap, gap);
            gaps.push(gap);
        }
        assert_eq!(gaps[0], 2 * LEAVE_GAP_MIN_NS);
        assert!(gaps
            .windows(2)
            .all(|w| w[1] == (2 * w[0]).min(LEAVE_GAP_MAX_NS)));
        assert_eq!(*gaps.last().unwrap(), LEAVE_GAP_MAX_NS, "{gaps:?}");
        assert_eq!(next_gap(u64::MAX, LEAVE_GAP_MAX_NS), LEAVE_GAP_MIN_NS);
        assert_eq!(
            next_gap(3 * LEAVE_GAP_MAX_NS, LEAVE_GAP_MAX_NS),
            LEAVE_GAP_MIN_NS
        );
    }
}
