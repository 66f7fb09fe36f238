//! The tier ladder: [`run`] climbs spin tier → hardware tier → park tier, each a
//! function of its own, and ends every wait in [`end`], which knows how it ended.
//!
//! A wait climbs at most three tiers, each bounded in time by its [`Resolved`] policy:
//!
//! 1. [`spin_tier`]: re-load the value with a pause between loads;
//! 2. [`hardware_tier`]: episodes of a [`HardwareWait`] (a monitor armed on the line),
//!    each followed by a re-check;
//! 3. [`park::park_tier`]: announce, re-check and sleep through the protocol's park
//!    half (or, with parking off, rounds of spin and yield).
//!
//! A wait first decides its spin budget ([`Start`], `start.rs`, with the inline spin
//! that untimed waits make before the ladder); one whose budget is 0 and that
//! has no hardware tier to try parks at once ([`park::at_once`]), through the same
//! park loop, without building the climb. The commonest of those park without the
//! ladder's start at all ([`park::without_climb`]: a consumer whose spins keep
//! failing, a parker's idle wait): a wait on a cell, timed or not, in its caller's
//! body (`WaitCell::climb`).
//!
//! What the climb knows and learns on its way is one record, [`Climb`]: whether this
//! thread just handed off to a parked partner, whether spinning can help, whether it
//! spun, when the hardware tier began, whether it slept. The spin tier updates the
//! cell's score as soon as it knows; the rest is learned once, where the wait ends.
//! Per-cell learning is `adapt.rs`; the process-wide "can spinning help" is `load.rs`;
//! the process-wide wake-up and spin-round estimates, and the rule that sizes the
//! budgets from them, `estimate.rs`; the counts of how waits ended (taken in [`end`],
//! the spin tier and the hardware tier) `stats.rs`.

pub(crate) mod adapt;
mod apart;
pub(crate) mod estimate;
mod filter;
pub(crate) mod load;
pub(crate) mod outcome;
mod park;
pub(crate) use park::idle as park_idle;
pub(crate) use park::without_climb as park_without_climb;
mod start;
pub(crate) use start::inline_spin;
pub(crate) mod stats;
pub(crate) mod word;

use crate::backend::{spin, HardwareWait, HwWake, Watched};
use crate::policy::{Resolved, WaitPolicy};
use crate::primitive::thread_tests;
use crate::protocol::sleepers::Sleepers;
use crate::protocol::MonitorLine;
use crate::sys::clock::now_ns;
use crate::sys::stamp::{self, Point};
use adapt::{Adaptive, Caught};
use outcome::{Ended, Outcome};
use start::Start;
use stats::CellStats;
use word::{CellWord, ValueOf, Word};

/// Length of one spin round of a waiter that never parks (`WaitPolicy::park(false)`
/// or the spin backend), between two `sched_yield` calls.
const NO_PARK_SPIN_ROUND_NS: u64 = 50_000;

/// Every wait ends here, the ladder's and the ones that end before it: the one place
/// that sees how each wait ended, and counts it in the cell's and the thread's
/// statistics (`stats.rs`; a wait whose predicate held at the first look is not
/// counted).
#[inline(always)]
pub(crate) fn end<V>(stats: &CellStats, outcome: Outcome<V>) -> Outcome<V> {
    stats.record(outcome.ended);
    outcome
}

/// [`end`] for a wait that ended before the ladder: at its first look
/// ([`Ended::Entry`]) or in the inline spin ([`Ended::Inline`]).
#[inline(always)]
pub(crate) fn end_before_ladder<V>(stats: &CellStats, value: V, ended: Ended) -> Outcome<V> {
    stats.record_before_ladder(ended);
    Outcome::before_ladder(value, ended)
}

/// A timed wait whose time was up before it began
/// ([`Deadline::Passed`](outcome::Deadline::Passed)), its first look having found the
/// predicate false: it ends timed out, without a clock reading or the climb. Like a
/// wait whose predicate held at its first look it is a poll, not a wait, and is not
/// counted: the park tier's timeouts count with a locked add in a process-wide set
/// (`stats/parks.rs`), noise beside the system call of a wait that parked, but
/// threads that poll their own parkers would contend on it at every poll. It takes
/// the thread's notes, as a wait that climbs does in [`Start::decide`], so that a
/// note meant for the next wait does not pass over this one.
#[inline(always)]
pub(crate) fn time_up<V>(value: V) -> Outcome<V> {
    adapt::take_woke();
    adapt::take_notified();
    Outcome::before_ladder(value, Ended::TimedOut)
}

/// The cell as the ladder sees it.
#[derive(Copy, Clone)]
pub(crate) struct Waiter<'a> {
    pub(crate) line: &'a MonitorLine,
    pub(crate) sleepers: &'a Sleepers,
    pub(crate) adapt: &'a Adaptive,
    pub(crate) caught: &'a Caught,
    pub(crate) stats: &'a CellStats,
}

impl<'a> Waiter<'a> {
    /// The cell's value as a ladder [`Word`].
    #[inline(always)]
    fn word(self) -> CellWord<'a> {
        CellWord {
            line: self.line,
            sleepers: self.sleepers,
        }
    }

    /// Where the cell's waits learn and count.
    #[inline(always)]
    fn learning(self) -> Learning<'a> {
        Learning {
            adapt: self.adapt,
            caught: self.caught,
            stats: self.stats,
            on_evidence: self.sleepers.parker(),
        }
    }
}

/// Where a wait learns and counts: the adaptive state and the counters of its cell
/// (or, for a wait on a bare atomic, of its bucket in the waiter table).
#[derive(Copy, Clone)]
pub(crate) struct Learning<'a> {
    pub(crate) adapt: &'a Adaptive,
    pub(crate) caught: &'a Caught,
    pub(crate) stats: &'a CellStats,
    /// The waits spin only on evidence (a parker's cell): see
    /// [`Learning::evidence_allows_spin`].
    pub(crate) on_evidence: bool,
}

impl Learning<'_> {
    /// Whether a wait may spin (and wait in the hardware tier), given whether
    /// something says the change is near (`evidence`): the waiting thread notified
    /// some cell or woke a partner since its last wait (an answer may be on its
    /// way), or the cell's last wait was caught by its spin or ended before it
    /// slept. Always on a plain cell; only with evidence on a parker's, whose wait
    /// otherwise goes straight to the park, reading neither the clock nor the run
    /// queue: an executor's idle worker parks without having told anyone anything,
    /// and its park then costs what a futex wait costs, where a spin first would add
    /// a whole spin budget to every idle park (5 us under a hypervisor, more than the
    /// futex wait itself on the 2-vCPU guest).
    #[inline]
    pub(crate) fn evidence_allows_spin(&self, evidence: bool) -> bool {
        !self.on_evidence || evidence
    }
}

/// What one climb of the ladder knows and learns on its way.
struct Climb<'a, W> {
    word: W,
    cell: Learning<'a>,
    pol: Resolved,
    /// Absolute deadline on the monotonic clock.
    deadline: Option<u64>,
    /// This thread woke a parked waiter since its last wait.
    handoff: bool,
    /// The spin budget of this wait (0: no spin).
    spin_ns: u64,
    /// The budget a failed spin is judged against ([`Start::judged_ns`]).
    judged_ns: u64,
    /// Whether the CPU we would hold is free for us: spin and hardware tier allowed.
    can_help: bool,
    /// Whether the cell's last spin caught the change (then the run-queue gate does
    /// not stop this wait's spin: see `load.rs`).
    caught: bool,
    /// Whether the spin tier ran (and counted, for the adaptation).
    spun: bool,
    /// When a spin that failed gave up (an adaptive wait's ordinary spin, not a
    /// hand-off's): how far the change came after it is learned where the wait ends.
    spin_failed_ns: Option<u64>,
    /// When the hardware tier began, if it ran.
    hw_start: Option<u64>,
    /// Whether the waiter slept in the kernel.
    slept: bool,
    /// A parker's wait without evidence that the change is near: it parks at once
    /// and reads no clock (`Learning::evidence_allows_spin`).
    no_evidence: bool,
}

impl<'a, W: Word<'a>> Climb<'a, W> {
    /// Whether spinning can help, from what `start` decided. The clock and the
    /// run-queue check are read only where a spin or a hardware wait may follow: a
    /// waiter that goes straight to park (a slow producer) pays for neither.
    fn from_start(
        word: W,
        cell: Learning<'a>,
        pol: Resolved,
        deadline: Option<u64>,
        start: Start,
    ) -> Climb<'a, W> {
        let Start {
            handoff,
            caught,
            no_evidence,
            spin_ns,
            judged_ns,
            probe: _,
        } = start;
        // Whether the CPU we would hold is needed by others. A wait that will spin
        // starts from the last reading of the run queue and spins its first round of
        // loads before it reads the clock at all, so that a partner that answers
        // within a few hundred ns is caught without the clock reads and checks on
        // the round trip. The reading is refreshed right after that round, or here
        // when it says no, so that a "no" cannot stick.
        let can_help = !no_evidence
            && (!pol.adaptive
                || (spin_ns == 0 && !pol.hw_wanted())
                || caught
                || load::last_reading_allows_spin()
                || load::allows_spin_now(now_ns()));
        Climb {
            word,
            cell,
            pol,
            deadline,
            handoff,
            spin_ns: if can_help || handoff { spin_ns } else { 0 },
            judged_ns,
            can_help,
            caught,
            spun: false,
            spin_failed_ns: None,
            hw_start: None,
            slept: false,
            no_evidence,
        }
    }

    fn word(&self) -> &'a W::Atomic {
        self.word.atomic()
    }

    /// `t`, or the wait's deadline if that comes first.
    fn cap(&self, t: u64) -> u64 {
        self.deadline.map_or(t, |d| t.min(d))
    }

    /// Whether the park that follows a failed spin is judged from the notifier's
    /// stamp of its wake ([`learn_failed_spin`](Self::learn_failed_spin)).
    fn judges_park(&self) -> bool {
        self.spin_failed_ns.is_some()
    }

    /// The wait ends: learning how far the change came after a spin that failed
    /// ([`learn_failed_spin`](Self::learn_failed_spin)), and from a wait that did
    /// not spin (did it end soon enough for a spin to have caught it? Answered with
    /// the clock where the hardware tier ran, its start being read anyway, else by
    /// whether the waiter ever slept in the kernel), then [`end`].
    fn finish(&self, value: ValueOf<'a, W>, ended: Ended) -> Outcome<ValueOf<'a, W>> {
        let learns = matches!(ended, Ended::Hardware | Ended::Park);
        if let Some(t) = self.spin_failed_ns.filter(|_| ended == Ended::Park) {
            self.learn_failed_spin(t);
        }
        if learns && self.pol.adaptive && !self.spun {
            let adapt = self.cell.adapt;
            match self.hw_start {
                Some(t) => adapt.record_unspun_wait(t, now_ns(), self.pol.spin_ns),
                None if !self.slept => adapt.record_spin(true),
                None => {}
            }
        }
        if ended == Ended::Park && self.pol.adaptive && !self.slept {
            // The change came while this wait was on its way to sleep (the partner
            // answered within the park tier's few hundred ns): it demonstrably runs
            // and answers in time, as if a spin had caught it. Without this a cell
            // whose spin the run-queue gate skipped (`load.rs`: only cells whose last
            // spin caught the change are exempt) would keep taking this path, its
            // waits never sleeping and never spinning again.
            self.cell.caught.note(true);
        }
        end(
            self.cell.stats,
            Outcome {
                value,
                ended,
                handoff: self.handoff,
                slept: self.slept,
            },
        )
    }

    /// Learns when the change came after a spin that gave up at `failed_ns` and
    /// parked (`adapt.rs`, far failures). A wait that never slept found it within
    /// the park tier's few hundred ns: near, and no clock is read. A woken one takes
    /// the notifier's stamp of the wake, which its park asked for
    /// (`park::Measure::Stamp`), or reads the clock where no stamp is newer than the
    /// spin (a wake that its notifier did not stamp): after an idle spell the
    /// clock's pages are cold, and the reading comes a wake-up latency after the
    /// change. A change within the budget the spin is judged against, where the spin
    /// was shorter (an unproven cell's), counts as a spin that caught it.
    fn learn_failed_spin(&self, failed_ns: u64) {
        let adapt = self.cell.adapt;
        if !self.slept {
            adapt.record_failed_wait(false);
            return;
        }
        let after = match self.word.wake_stamp().checked_sub(failed_ns) {
            Some(after) => after,
            None => now_ns().saturating_sub(failed_ns),
        };
        let unspun = self.judged_ns.saturating_sub(self.spin_ns);
        if unspun > 0 && after <= unspun {
            adapt.record_probe(true);
        } else {
            adapt.record_failed_wait(adapt::failed_by_far(after, self.judged_ns));
        }
    }
}

/// Runs the ladder for one wait: spin → hardware wait → park (or yield, if parking
/// is off). `deadline`: absolute, on the clock of `sys::clock::now_ns`.
#[cold]
#[inline(never)]
pub(crate) fn run(
    cell: Waiter<'_>,
    pred: &mut dyn FnMut(u32) -> bool,
    deadline: Option<u64>,
    policy: &WaitPolicy,
) -> Outcome {
    stamp::mark(Point::Ladder);
    // The ladder in this function's own body, not through a call of `run_word`: a
    // wait that parks at once comes back through one frame less (and one call
    // through the GOT less), on code that its sleep took from the caches.
    ladder(cell.word(), cell.learning(), pred, deadline, policy)
}

/// [`run`] on any [`Word`], learning and counting in `learning`.
#[inline(never)]
pub(crate) fn run_word<'a, W: Word<'a>>(
    word: W,
    learning: Learning<'a>,
    pred: &mut dyn FnMut(ValueOf<'a, W>) -> bool,
    deadline: Option<u64>,
    policy: &WaitPolicy,
) -> Outcome<ValueOf<'a, W>> {
    ladder(word, learning, pred, deadline, policy)
}

/// The body of [`run`] and [`run_word`]: the policy resolved, then the climb.
#[inline(always)]
fn ladder<'a, W: Word<'a>>(
    word: W,
    learning: Learning<'a>,
    pred: &mut dyn FnMut(ValueOf<'a, W>) -> bool,
    deadline: Option<u64>,
    policy: &WaitPolicy,
) -> Outcome<ValueOf<'a, W>> {
    let pol = policy.resolve();
    let hw = pol.hw;
    climb_word(word, learning, pred, deadline, pol, hw.as_ref())
}

thread_tests! {
    /// The ladder of [`run`] on a cell with `hw` as its hardware tier: a simulated
    /// monitor (`backend/sim.rs`), which is how the tests run the whole ladder
    /// against monitors this machine does not have.
    pub(crate) fn climb(
        cell: Waiter<'_>,
        pred: &mut dyn FnMut(u32) -> bool,
        deadline: Option<u64>,
        pol: Resolved,
        hw: Option<&impl HardwareWait>,
    ) -> Outcome {
        climb_word(cell.word(), cell.learning(), pred, deadline, pol, hw)
    }
}

/// The ladder on any [`Word`] with `hw` as its hardware tier (the process's tier
/// from [`run_word`], or a simulated monitor in the tests). The hardware tier runs
/// when `hw` is given, `pol` grants it a budget and spinning can help.
#[inline(always)]
fn climb_word<'a, W: Word<'a>>(
    word: W,
    learning: Learning<'a>,
    pred: &mut dyn FnMut(ValueOf<'a, W>) -> bool,
    deadline: Option<u64>,
    pol: Resolved,
    hw: Option<&impl HardwareWait>,
) -> Outcome<ValueOf<'a, W>> {
    let start = Start::decide(learning, &pol);
    stamp::mark(Point::Decided);
    if start.parks_to_probe(&pol, hw.is_some()) {
        return park::probe(word, learning, pred, deadline, start);
    }
    if start.parks_at_once(&pol, hw.is_some()) {
        let measure = park::Measure::sampled_unless(start.no_evidence);
        return park::at_once(word, learning, pred, deadline, pol.adaptive, start, measure);
    }
    let mut climb = Climb::from_start(word, learning, pol, deadline, start);
    // The spin and hardware tiers are calls of their own, out of this body, so that
    // the lines the waits that park at once run through here lie close together.
    if climb.spin_ns > 0 {
        if let Some(v) = spin_tier(&mut climb, pred) {
            return climb.finish(v, Ended::Spin);
        }
    }
    if let Some(hw) = hw.filter(|_| climb.pol.hw_ns > 0 && climb.can_help) {
        if let Some(v) = hardware_tier(&mut climb, hw, pred) {
            return climb.finish(v, Ended::Hardware);
        }
    }
    park::park_tier(&mut climb, pred)
}

/// Tier 1: a bounded spin, skipped when the budget is 0 (or spinning cannot help).
/// Records on the cell whether it caught the change.
#[inline(never)]
fn spin_tier<'a, W: Word<'a>>(
    c: &mut Climb<'a, W>,
    pred: &mut dyn FnMut(ValueOf<'a, W>) -> bool,
) -> Option<ValueOf<'a, W>> {
    if c.spin_ns == 0 {
        return None;
    }
    c.spun = true;
    let word = c.word();
    let mut hit = spin::spin_round(word, &mut *pred, c.pol.spin_pause);
    if hit.is_none() {
        // The budget counts from this first clock reading, one round of loads after
        // the spin began, or from the end of a reading of the run queue that the
        // gate takes here: a spin may last one round (LOADS_PER_CLOCK_READ pauses)
        // longer than its budget, as its end may already overshoot.
        let mut now = now_ns();
        let guarded_ns = c.spin_ns.saturating_add(c.pol.hw_ns);
        if c.pol.adaptive && !c.caught && !c.handoff && !load::allows_spin_of(&mut now, guarded_ns)
        {
            // The fresh reading says the CPUs are needed: stop, and do not count this
            // as a failed spin.
            c.can_help = false;
            c.spun = false;
        } else {
            let until = c.cap(now.saturating_add(c.spin_ns));
            let spun = spin::spin_until(word, &mut *pred, until, c.pol.spin_pause);
            if spun.rounds > 0 {
                estimate::offer_spin_rounds(spun.rounds, spun.last_ns.saturating_sub(now));
            }
            hit = spun.value;
            if hit.is_none() && c.pol.adaptive && !c.handoff {
                c.spin_failed_ns = Some(spun.last_ns.max(now));
            }
        }
    }
    if c.spun {
        if c.handoff {
            c.cell.stats.record_handoff(hit.is_some());
        }
        if c.pol.adaptive {
            c.cell.caught.note(hit.is_some());
            if c.handoff {
                c.cell.adapt.record_handoff_spin(hit.is_some());
            } else {
                c.cell.adapt.record_spin(hit.is_some());
            }
        }
    }
    hit
}

/// Tier 2: episodes of `hw` until the predicate holds, the tier's budget ends, or the
/// tier yields the CPU.
#[inline(never)]
fn hardware_tier<'a, W: Word<'a>>(
    c: &mut Climb<'a, W>,
    hw: &impl HardwareWait,
    pred: &mut dyn FnMut(ValueOf<'a, W>) -> bool,
) -> Option<ValueOf<'a, W>> {
    let t = now_ns();
    c.hw_start = Some(t);
    let until = c.cap(t.saturating_add(c.pol.hw_ns));
    let word = c.word();
    loop {
        let v = word.load_acquire();
        if pred(v) {
            return Some(v);
        }
        if now_ns() >= until {
            return None;
        }
        match word.episode(hw, v, until, c.pol.cstate) {
            HwWake::Woken => {
                if word.load_acquire() == v {
                    // Woken with nothing changed: a timer, an interrupt, another
                    // write to the line, a trapped instruction.
                    c.cell.stats.record_spurious_hardware();
                }
            }
            HwWake::Deadline => {}
            HwWake::Yield => return None,
        }
    }
}

// The simulated monitor is not in the loom build.
thread_tests! {
    mod tests;
}
