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
//!
//! # A reading is taken once it pays
//!
//! A reading costs what it costs on this machine, measured on each one: a `pread`
//! after an idle spell runs on cold caches, 3–19 µs of CPU on the 2-vCPU guest
//! (`docs/default-policy.md`, "The load reading"), up to four times the spin budget
//! it guards there. What it guards is the spins of the next interval, the ones that
//! would burn a CPU an oversubscribed machine needs. So while the last reading allows
//! spinning, a stale one is refreshed by the spin tier only once the spins that
//! asked within one interval would together have cost a reading
//! ([`looks_per_reading`]: the last reading's cost over the budget of the spin and
//! the hardware wait it guards, at least 1, at most [`READING_LOOKS_MAX`]); the
//! spins before it go ahead on the stale reading. A process whose waits spin rarely
//! (a consumer fed every millisecond, whose cells spin on their first wait and then
//! on a probe every 32 or more waits) then reads the run queue only where its spins
//! bunch up, instead of once for nearly every spin, and the CPU its unguarded spins
//! can burn in an interval stays below one reading's: fewer budgets than a reading
//! costs. Where readings cost less than a
//! budget (bare metal), every stale look reads. Until a first reading has been
//! timed its cost is taken to be the most, so a process reads the run queue (and
//! opens `/proc/loadavg`) only once it has spun [`READING_LOOKS_MAX`] times within
//! one interval: one whose waits rarely spin never does, and one that spins often
//! reads within microseconds of its first spins. A last reading that says no is
//! refreshed at the first stale look, so that a no cannot stick.
//!
//! The first reading also reads the process's count of usable CPUs
//! (`detect::process_cpus`: the cgroup's files, which cost a fresh process more
//! than a reading of the run queue), unless a spin that caught its partner read it
//! before (`Caught::note`), and a count of one turns the automatic spin off for
//! good (`WaitPolicy::resolve`). Until then the waits spin as in a process with
//! more CPUs: on one CPU, fewer than [`READING_LOOKS_MAX`] spins that miss in an
//! interval (their cells' scores soon turn them to probes), or that many once, or
//! one that catches; then none.

use crate::policy::usable_cpus;
use crate::sys;
use crate::sys::clock::now_ns;
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

/// The most stale looks of the spin tier before a reading, however much one costs:
/// the bound on the spins that go ahead on a stale reading in one interval.
const READING_LOOKS_MAX: u32 = 8;

/// The gate's state: the process's is [`GATE`], the tests make their own.
struct Gate {
    /// When the run queue was last read (ns; 0: never).
    checked_ns: AtomicU64,
    /// Consecutive readings that showed more runnable threads than CPUs, up to
    /// [`OVER_READINGS`].
    over_streak: AtomicU32,
    /// The stale looks that have not read yet: how many...
    looks: AtomicU32,
    /// ...and when the first of them came (0: none).
    looks_since_ns: AtomicU64,
    /// What the last reading took on the monotonic clock (ns; 0: none taken yet).
    reading_ns: AtomicU64,
}

static GATE: Gate = Gate::new();

/// Whether spinning could help, from the last reading of the run queue (no clock,
/// no refresh): what a wait uses to start spinning at once. The caller refreshes the
/// reading with [`allows_spin_now`] right after its first round of loads, or
/// before it parks when this says no (so that the answer cannot stick).
#[inline]
pub(crate) fn last_reading_allows_spin() -> bool {
    GATE.allows()
}

/// Whether spinning can help now (`now` from the monotonic clock): the machine is
/// not oversubscribed. Re-reads the run queue if the last reading is older than
/// [`LOAD_CHECK_INTERVAL_NS`].
pub(crate) fn allows_spin_now(mut now: u64) -> bool {
    GATE.allows_at(&mut now, None, &machine())
}

/// [`allows_spin_now`] for a spin that has begun and may be followed by a hardware
/// wait, `budget_ns` the two budgets together: a stale reading that allows spinning
/// is refreshed only once it pays (see the module docs). Where it reads, `now`
/// becomes the time the reading ended, so that the spin's budget, and the spin
/// rounds it measures, start after the reading, not before it.
pub(crate) fn allows_spin_of(now: &mut u64, budget_ns: u64) -> bool {
    GATE.allows_at(now, Some(budget_ns), &machine())
}

/// What a reading reads: the process's CPUs, the run queue and the clock. The count
/// of CPUs is asked for only by a reading, so that a process whose waits never read
/// the run queue never reads it either (`detect::process_cpus`).
struct Machine<K, R, C> {
    cpus: K,
    running: R,
    clock: C,
}

/// This machine's [`Machine`].
fn machine() -> Machine<impl Fn() -> usize, impl Fn() -> Option<usize>, impl Fn() -> u64> {
    Machine {
        cpus: usable_cpus,
        running: sys::running_threads,
        clock: now_ns,
    }
}

/// How many stale looks of spins of `budget_ns` make a reading that costs
/// `reading_ns` pay: the readings' cost over the budget, rounded up, at least 1 and
/// at most [`READING_LOOKS_MAX`], the most while no reading has been timed
/// (`reading_ns` 0).
fn looks_per_reading(reading_ns: u64, budget_ns: u64) -> u32 {
    if reading_ns == 0 {
        return READING_LOOKS_MAX;
    }
    let n = reading_ns.div_ceil(budget_ns.max(1));
    u32::try_from(n)
        .unwrap_or(u32::MAX)
        .clamp(1, READING_LOOKS_MAX)
}

/// The stale looks after one more at `now` (`since`: when the first of the pending
/// ones came, 0 for none; `looks`: how many), when `needed` make a reading pay.
/// Returns the looks left pending, `(since, looks)`, and whether this one reads;
/// looks older than an interval are forgotten, so that spins rarer than
/// `needed` per interval never read.
fn next_looks(since: u64, looks: u32, now: u64, needed: u32) -> ((u64, u32), bool) {
    let looks = if since == 0 || now.saturating_sub(since) >= LOAD_CHECK_INTERVAL_NS {
        1
    } else {
        looks.saturating_add(1)
    };
    if looks >= needed {
        ((0, 0), true)
    } else {
        let since = if looks == 1 { now.max(1) } else { since };
        ((since, looks), false)
    }
}

/// The streak after a reading: `running` runnable threads (None: unreadable) on
/// `cpus` CPUs.
fn next_streak(streak: u32, running: Option<usize>, cpus: usize) -> u32 {
    match running {
        Some(r) if r > cpus => (streak + 1).min(OVER_READINGS),
        _ => 0,
    }
}

impl Gate {
    const fn new() -> Gate {
        Gate {
            checked_ns: AtomicU64::new(0),
            over_streak: AtomicU32::new(0),
            looks: AtomicU32::new(0),
            looks_since_ns: AtomicU64::new(0),
            reading_ns: AtomicU64::new(0),
        }
    }

    /// Whether the last reading allows spinning.
    #[inline]
    fn allows(&self) -> bool {
        self.over_streak.load(Relaxed) < OVER_READINGS
    }

    /// Whether a stale reading is to be refreshed now: always for a look that
    /// guards no spin of its own (`budget_ns` `None`) and when the last reading
    /// said no; else when this look makes a reading pay ([`next_looks`]).
    fn reading_pays(&self, now: u64, budget_ns: Option<u64>) -> bool {
        let Some(budget_ns) = budget_ns.filter(|_| self.allows()) else {
            return true;
        };
        let needed = looks_per_reading(self.reading_ns.load(Relaxed), budget_ns);
        let ((since, looks), read) = next_looks(
            self.looks_since_ns.load(Relaxed),
            self.looks.load(Relaxed),
            now,
            needed,
        );
        self.looks_since_ns.store(since, Relaxed);
        self.looks.store(looks, Relaxed);
        read
    }

    /// Whether spinning can help at `now`: not more threads runnable than there are
    /// CPUs (the reading thread counts itself) in [`OVER_READINGS`] readings in a
    /// row. A reading older than [`LOAD_CHECK_INTERVAL_NS`] is refreshed where
    /// [`Gate::reading_pays`] for a spin of `budget_ns`; the refresh is timed, and
    /// `now` moved to its end.
    fn allows_at<K, R, C>(
        &self,
        now: &mut u64,
        budget_ns: Option<u64>,
        m: &Machine<K, R, C>,
    ) -> bool
    where
        K: Fn() -> usize,
        R: Fn() -> Option<usize>,
        C: Fn() -> u64,
    {
        let last = self.checked_ns.load(Relaxed);
        if now.saturating_sub(last) >= LOAD_CHECK_INTERVAL_NS
            && self.reading_pays(*now, budget_ns)
            && self
                .checked_ns
                .compare_exchange(last, *now, Relaxed, Relaxed)
                .is_ok()
        {
            let cpus = (m.cpus)();
            let running = (m.running)();
            let end = (m.clock)().max(*now);
            self.reading_ns.store((end - *now).max(1), Relaxed);
            *now = end;
            self.over_streak.store(
                next_streak(self.over_streak.load(Relaxed), running, cpus),
                Relaxed,
            );
        }
        self.allows()
    }
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

    #[test]
    fn a_reading_pays_after_as_many_spins_as_it_costs_budgets() {
        // None timed yet: taken to cost the most.
        assert_eq!(looks_per_reading(0, 5_000), READING_LOOKS_MAX);
        assert_eq!(looks_per_reading(0, u64::MAX), READING_LOOKS_MAX);
        // Cheaper than one budget: every stale look reads.
        assert_eq!(looks_per_reading(2_000, 5_000), 1);
        assert_eq!(looks_per_reading(5_000, 5_000), 1);
        // 18 µs against a 5 µs budget: the fourth look reads.
        assert_eq!(looks_per_reading(18_000, 5_000), 4);
        // A reading that was preempted, a budget of 0: never more than the bound.
        assert_eq!(looks_per_reading(10_000_000, 5_000), READING_LOOKS_MAX);
        assert_eq!(looks_per_reading(1, 0), 1);
        assert_eq!(looks_per_reading(u64::MAX, 0), READING_LOOKS_MAX);
    }

    /// Spins that asked `needed` times within one interval read; spins spread more
    /// thinly never do. `gap_ms` between looks, 100 looks; the reads.
    fn reads(needed: u32, gap_ms: u64) -> usize {
        let (mut pending, mut n) = ((0, 0), 0);
        for i in 1..=100u64 {
            let (next, read) = next_looks(pending.0, pending.1, i * gap_ms * MS, needed);
            pending = next;
            n += usize::from(read);
        }
        n
    }

    /// A machine of 2 CPUs whose run queue holds `running` threads, whose readings
    /// each take `reading_ns` by a clock that `now` sets, and that counts them.
    struct Fake {
        running: usize,
        reading_ns: u64,
        now: std::cell::Cell<u64>,
        reads: std::cell::Cell<u32>,
        counts: std::cell::Cell<u32>,
    }

    impl Fake {
        fn new(running: usize, reading_ns: u64) -> Fake {
            Fake {
                running,
                reading_ns,
                now: std::cell::Cell::new(0),
                reads: std::cell::Cell::new(0),
                counts: std::cell::Cell::new(0),
            }
        }

        /// A look of a spin of `budget_ns` (`None`: a look that guards none) at
        /// `at` ns: whether it allows spinning, and when the spin's budget starts.
        fn look(&self, gate: &Gate, at: u64, budget_ns: Option<u64>) -> (bool, u64) {
            self.now.set(at);
            let m = Machine {
                cpus: || {
                    self.counts.set(self.counts.get() + 1);
                    2
                },
                running: || {
                    self.reads.set(self.reads.get() + 1);
                    self.now.set(self.now.get() + self.reading_ns);
                    Some(self.running)
                },
                clock: || self.now.get(),
            };
            let mut now = at;
            let allows = gate.allows_at(&mut now, budget_ns, &m);
            (allows, now)
        }
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn a_spin_s_budget_starts_after_the_reading_it_waited_for() {
        let gate = Gate::new();
        let quiet = Fake::new(1, 15_000);
        let _ = quiet.look(&gate, 1_000 * MS, None);
        assert_eq!(gate.reading_ns.load(Relaxed), 15_000, "timed");
        // A stale reading that a spin of 50 µs refreshes: the spin starts after it.
        assert_eq!(
            quiet.look(&gate, 1_200 * MS, Some(50_000)),
            (true, 1_200 * MS + 15_000)
        );
        // A fresh reading: no refresh, and the spin starts where it was.
        assert_eq!(
            quiet.look(&gate, 1_250 * MS, Some(50_000)),
            (true, 1_250 * MS)
        );
        assert_eq!(quiet.reads.get(), 2);
    }

    #[test]
    fn a_process_reads_the_run_queue_once_its_spins_need_it() {
        // Spins 20 ms apart, five in an interval: never a reading.
        let gate = Gate::new();
        let quiet = Fake::new(1, 15_000);
        for k in 1..=50 {
            assert!(quiet.look(&gate, k * 20 * MS, Some(5_000)).0);
        }
        assert_eq!(quiet.reads.get(), 0);
        // Nor the count of CPUs, which only a reading asks for.
        assert_eq!(quiet.counts.get(), 0);
        // Spins 1 µs apart: the eighth reads, and the reading is timed.
        let gate = Gate::new();
        for k in 1..=u64::from(READING_LOOKS_MAX) {
            let _ = quiet.look(&gate, 1_000 * MS + k * 1_000, Some(5_000));
            assert_eq!(quiet.counts.get(), quiet.reads.get());
        }
        assert_eq!(quiet.reads.get(), 1);
        assert_eq!(gate.reading_ns.load(Relaxed), 15_000);
    }

    #[test]
    fn stale_readings_that_allow_spinning_are_refreshed_once_they_pay() {
        let gate = Gate::new();
        let quiet = Fake::new(1, 15_000);
        let _ = quiet.look(&gate, 1_000 * MS, None);
        // 15 µs against 5 µs spins: the third look within an interval reads.
        let t = 1_200 * MS;
        assert_eq!(quiet.look(&gate, t, Some(5_000)), (true, t));
        assert_eq!(quiet.look(&gate, t + MS, Some(5_000)), (true, t + MS));
        assert_eq!(quiet.reads.get(), 1);
        assert_eq!(
            quiet.look(&gate, t + 2 * MS, Some(5_000)),
            (true, t + 2 * MS + 15_000)
        );
        assert_eq!(quiet.reads.get(), 2);
        // Spins 60 ms apart (two in an interval, not three) never make it pay; a look
        // that guards no spin reads.
        for k in 1..=17 {
            let _ = quiet.look(&gate, t + 200 * MS + k * 60 * MS, Some(5_000));
        }
        assert_eq!(quiet.reads.get(), 2);
        let _ = quiet.look(&gate, t + 1_300 * MS, None);
        assert_eq!(quiet.reads.get(), 3);
        // Spins whose budget (with a hardware wait) outweighs the reading: every
        // stale look reads.
        let _ = quiet.look(&gate, t + 1_500 * MS, Some(50_000));
        assert_eq!(quiet.reads.get(), 4);
    }

    #[test]
    fn a_reading_that_says_no_is_refreshed_at_the_first_stale_look() {
        let gate = Gate::new();
        let busy = Fake::new(5, 15_000);
        let _ = busy.look(&gate, 1_000 * MS, None);
        let (allows, _) = busy.look(&gate, 1_100 * MS, None);
        assert!(!allows, "two busy readings in a row stop the spinning");
        // However costly readings are, the next stale look reads, and one quiet
        // reading turns spinning back on.
        let quiet = Fake::new(1, 15_000);
        assert_eq!(
            quiet.look(&gate, 1_200 * MS, Some(1_000)),
            (true, 1_200 * MS + 15_000)
        );
        assert_eq!(quiet.reads.get(), 1);
    }

    #[test]
    fn spins_rarer_than_a_reading_s_worth_per_interval_never_read() {
        // A probe every 40 ms against a reading worth 4 spins: never.
        assert_eq!(reads(4, 40), 0);
        // Every 20 ms: the fourth of each run of four reads.
        assert_eq!(reads(4, 20), 25);
        // A reading worth one spin or less: every look reads.
        assert_eq!(reads(1, 200), 100);
        // A busy spinner (a look every µs) reads at its fourth.
        let first = next_looks(0, 0, 1_000, 4);
        let second = next_looks(first.0 .0, first.0 .1, 2_000, 4);
        let third = next_looks(second.0 .0, second.0 .1, 3_000, 4);
        assert_eq!((first.1, second.1, third.1), (false, false, false));
        assert_eq!(next_looks(third.0 .0, third.0 .1, 4_000, 4), ((0, 0), true));
    }
}
