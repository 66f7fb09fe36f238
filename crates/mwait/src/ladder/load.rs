//! The process-wide gate "can spinning help": on a machine with more runnable threads
//! than CPUs, a spinner burns a CPU that its partner may need, so waits skip the spin
//! and the hardware tier while that lasts.
//!
//! The rule, and why it is sound for the user: the reading is machine-wide (Linux
//! has no cheap count of one process's runnable threads), so it also fires under
//! *other* processes' load, where our pair may well run on CPUs of its own. The gate
//! therefore stops only the waits of cells whose last spin failed (or that slept
//! since): a cell whose last spin caught its partner keeps spinning, because that
//! partner demonstrably runs and answers within the budget (so does a cell whose
//! last wait found the change in the park tier before it slept: that partner
//! answered within a few hundred ns), and a spin that fails
//! turns the gate on for that cell's next wait. A wait that just woke the partner it
//! now waits for (the hand-off) spins too, as often as the cell's adaptive score
//! lets it (every time while such spins succeed, one wait in 32 while they fail):
//! that is the way back to spinning for a pair that a busy neighbour pushed into
//! parking, which would otherwise park for as long as the neighbour stays. Under an oversubscription of the
//! process's own making (more spinning pairs than CPUs), spins fail and the gate
//! holds; under a busy neighbour, a pair that answers itself in time is not slowed
//! down. At most every other spin of a cell fails while the machine reads as
//! oversubscribed.
//!
//! The run-queue length (`sys::running_threads`, `/proc/loadavg` on Linux) is re-read
//! at most every [`LOAD_CHECK_INTERVAL_NS`] and acted on after [`OVER_READINGS`]
//! readings in a row. These are heuristics, not protocol: relaxed std atomics, racy
//! read-modify-write is fine, and loom does not track them.

use crate::detect::Capabilities;
use crate::sys;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

/// How often the run-queue length is re-read, at most: often enough to follow a
/// change of load within a fraction of a second, rarely enough that the reads (a file
/// read each) cost a negligible share of a CPU.
pub(crate) const LOAD_CHECK_INTERVAL_NS: u64 = 100_000_000;

/// How many readings in a row must show oversubscription before waits stop
/// spinning. The run-queue length is an instant: a pair of spinning threads on a
/// two-CPU machine plus any thread that happens to be runnable at the moment of the
/// reading (a kernel worker, a shell) reads as oversubscribed, and acting on one such
/// reading would turn every spin of the process off for a whole interval. A real
/// oversubscription shows in every reading; it is acted on after two, so within
/// 100–200 ms, and one reading without it turns spinning back on.
const OVER_READINGS: u32 = 2;

static LOAD_CHECKED_NS: AtomicU64 = AtomicU64::new(0);
/// Consecutive readings that showed more runnable threads than CPUs, up to
/// [`OVER_READINGS`].
static OVER_STREAK: AtomicU32 = AtomicU32::new(0);

/// Whether spinning could help, from the last reading of the run queue (no clock,
/// no refresh): what a wait uses to start spinning at once. The caller refreshes the
/// reading with [`allows_spin_now`] right after its first round of loads, or
/// before it parks when this says no (so that the answer cannot stick).
#[inline]
pub(crate) fn last_reading_allows_spin() -> bool {
    OVER_STREAK.load(Relaxed) < OVER_READINGS
}

/// Whether spinning can help now (`now` from the monotonic clock): the machine is
/// not oversubscribed. Re-reads the run queue if the last reading is older than
/// [`LOAD_CHECK_INTERVAL_NS`].
pub(crate) fn allows_spin_now(now: u64) -> bool {
    !oversubscribed(Capabilities::for_waits().usable_cpus, now)
}

/// The streak after a reading: `running` runnable threads (None: unreadable) on
/// `cpus` CPUs.
fn next_streak(streak: u32, running: Option<usize>, cpus: usize) -> u32 {
    match running {
        Some(r) if r > cpus => (streak + 1).min(OVER_READINGS),
        _ => 0,
    }
}

/// Whether more threads are runnable than there are CPUs (the reading thread counts
/// itself), in [`OVER_READINGS`] readings in a row.
fn oversubscribed(cpus: usize, now: u64) -> bool {
    let last = LOAD_CHECKED_NS.load(Relaxed);
    if now.saturating_sub(last) >= LOAD_CHECK_INTERVAL_NS
        && LOAD_CHECKED_NS
            .compare_exchange(last, now, Relaxed, Relaxed)
            .is_ok()
    {
        let running = sys::running_threads();
        OVER_STREAK.store(
            next_streak(OVER_STREAK.load(Relaxed), running, cpus),
            Relaxed,
        );
    }
    !last_reading_allows_spin()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_busy_reading_does_not_stop_the_spinning() {
        let cpus = 2;
        // A third runnable thread caught once, between quiet readings.
        let s = next_streak(0, Some(3), cpus);
        assert!(s < OVER_READINGS);
        assert_eq!(next_streak(s, Some(2), cpus), 0);
        // Oversubscribed in two readings in a row: spinning stops...
        let s = next_streak(next_streak(0, Some(4), cpus), Some(3), cpus);
        assert!(s >= OVER_READINGS);
        // ...stays stopped while it lasts, and one quiet reading restarts it.
        assert!(next_streak(s, Some(5), cpus) >= OVER_READINGS);
        assert_eq!(next_streak(s, Some(1), cpus), 0);
        // An unreadable /proc/loadavg never stops spinning.
        assert_eq!(next_streak(s, None, cpus), 0);
    }
}
