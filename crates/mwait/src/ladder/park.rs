//! Tier 3, the park: [`park_tier`] for a wait that climbed to it, [`at_once`] for a
//! wait that will neither spin nor wait in hardware, which parks without building
//! the climb, and [`without_climb`] for the commonest of those, a wait on a cell
//! without evidence that the change is near, which parks without the ladder's
//! decision at all ([`idle`] is a `Parker`'s way to it, with its first look), and
//! then parks through [`at_once`]. All sleep through one loop, [`park_until`], and
//! the word's park half (`MonitorLine::park`).
//!
//! Most waits that park take the third way: under the default policy, a wait on a
//! cell whose spins keep failing (a consumer fed every millisecond) spins only on a
//! probe, and a parker's wait without evidence that a token is near (an executor's
//! idle worker) never spins. Such a wait parks from what it reads first (this
//! thread's notes, the cell's last catch, the policy, the cell's score) and then
//! runs the park loop and the learning that the climb's end applies to a wait that
//! did not spin, and nothing else: no climb record built, no tier's checks, no
//! branch of the climb's end that cannot apply, no frame of the ladder's. After an
//! idle spell its code and data are cold, and each line it does not touch is a
//! cache miss the park does not pay (`docs/clients.md`). A wait on a cell, timed or
//! not, runs it in the caller's own body (`WaitCell::climb`), generic over the
//! predicate, with the protocol's park and the futex call inline: after the futex
//! call it returns to its caller without a call of its own. A wait on a bare atomic,
//! and a wait whose thread has a note to take, decide in the ladder's general start
//! ([`Start`]) and park at once from there.

use super::adapt;
use super::outcome::{Ended, Outcome};
use super::word::{ValueOf, Word};
use super::{end, estimate, spin, Climb, Learning, Start, Waiter, NO_PARK_SPIN_ROUND_NS};
use crate::backend::Watched;
use crate::policy::WaitPolicy;
use crate::primitive::yield_now;
use crate::primitive::Ordering;
use crate::sys::clock::now_ns;
use crate::sys::park::Parked;
use crate::sys::stamp::{self, Point};

/// The wait of `start` on `word`, which neither spins nor waits in hardware: the
/// park loop, then the learning of the climb's end for a wait that did not spin
/// (`Climb::finish`): a change that came before the waiter slept is one a spin would
/// have caught. `measure`: which of its parks measure their wake-up.
#[inline(always)]
pub(super) fn at_once<'a, W: Word<'a>, P: FnMut(ValueOf<'a, W>) -> bool + ?Sized>(
    word: W,
    cell: Learning<'a>,
    pred: &mut P,
    deadline: Option<u64>,
    adaptive: bool,
    start: Start,
    measure: Measure,
) -> Outcome<ValueOf<'a, W>> {
    let mut slept = false;
    let (value, ended) = park_until(word, cell, pred, deadline, measure, &mut slept);
    if adaptive && ended == Ended::Park && !slept {
        cell.adapt.record_spin(true);
        cell.caught.note(true);
    }
    parked_end(cell, value, ended, &start, slept)
}

/// [`end`] for a wait of `start` that parked at once and ended `ended` with
/// `value`, having `slept` or not.
#[inline(always)]
fn parked_end<V>(
    cell: Learning<'_>,
    value: V,
    ended: Ended,
    start: &Start,
    slept: bool,
) -> Outcome<V> {
    end(
        cell.stats,
        Outcome {
            value,
            ended,
            handoff: start.handoff,
            slept,
        },
    )
}

/// The untimed wait of a `Parker` (on its token's cell, a parker's): a first look,
/// then, if the token is not there, [`without_climb`]. Returns how the wait ended,
/// or `None` (nothing written, no note taken) when the first look missed and the
/// wait is not one that [`without_climb`] makes: the caller then waits as
/// `WaitCell::wait_until` does.
#[inline(never)]
pub(crate) fn idle<P: FnMut(u32) -> bool>(
    cell: Waiter<'_>,
    pred: &mut P,
    policy: &WaitPolicy,
) -> Option<Outcome> {
    stamp::mark(Point::Entry);
    let v = cell.line.value.load(Ordering::Acquire);
    if pred(v) {
        return Some(end(cell.stats, Outcome::before_ladder(v, Ended::Entry)));
    }
    stamp::mark(Point::Ladder);
    debug_assert!(cell.sleepers.parker(), "a Parker's cell is a parker's");
    without_climb(cell, &mut *pred, None, policy, true)
}

/// The park that the ladder would decide on at once ([`at_once`]: no spin, no
/// hardware wait), made without the ladder's general start, until the predicate
/// holds or `deadline` passes, for a wait on a cell whose first look missed and
/// that nothing says will end soon: this thread has no note for its wait
/// (`adapt::notes_pending`), the cell's last spin did not catch the change, and
/// `policy` parks and adapts. On a parker's cell that is all: its wait spins only
/// on evidence, and reads no clock but a deadline's. On a plain cell the policy
/// also has no hardware tier to try, and the cell's spins keep failing
/// (`Adaptive::skip`: no probe is due); its parks measure their wake-up only while
/// the process's estimate fills its first window ([`Measure::Young`]). Returns how
/// the wait ended, or `None` (nothing written, no note taken) when the wait is not
/// one of these. `parker`: whether the cell is a parker's (`Sleepers::parker`),
/// given as a constant where the caller knows it.
///
/// These are the commonest waits that sleep, an executor's idle worker and the
/// consumer of a slow producer. After an idle spell every line a park touches is
/// cold, and a fresh thread's first park runs on lines no thread has touched for as
/// long: each line this path does not touch is a miss the park does not pay, and
/// the path runs in one function, the order it is written in (`docs/clients.md`).
#[inline(always)]
pub(crate) fn without_climb<P: FnMut(u32) -> bool + ?Sized>(
    cell: Waiter<'_>,
    pred: &mut P,
    deadline: Option<u64>,
    policy: &WaitPolicy,
    parker: bool,
) -> Option<Outcome> {
    if adapt::notes_pending() || cell.caught.get() {
        return None;
    }
    let pol = policy.resolve();
    if !(pol.park && pol.adaptive) {
        return None;
    }
    if !parker && (pol.hw_wanted() || (pol.spin_ns > 0 && !cell.adapt.skip())) {
        return None;
    }
    stamp::mark(Point::Decided);
    // What `Start::decide` would have decided: no hand-off, no spin; a parker's
    // wait has no evidence, and its parks measure nothing.
    let start = Start {
        handoff: false,
        caught: false,
        no_evidence: parker,
        spin_ns: 0,
        judged_ns: 0,
        probe: false,
    };
    let measure = if parker {
        Measure::Never
    } else {
        Measure::Young
    };
    let outcome = at_once(
        cell.word(),
        cell.learning(),
        pred,
        deadline,
        true,
        start,
        measure,
    );
    stamp::mark(Point::Ended);
    Some(outcome)
}

/// Tier 3 of a climb: park until the predicate holds or the deadline passes (or,
/// with parking off, spin in rounds and yield between them).
pub(super) fn park_tier<'a, W: Word<'a>>(
    c: &mut Climb<'a, W>,
    pred: &mut dyn FnMut(ValueOf<'a, W>) -> bool,
) -> Outcome<ValueOf<'a, W>> {
    if !c.pol.park {
        return no_park_tier(c, pred);
    }
    let measure = if c.judges_park() {
        c.cell.adapt.probe_begins();
        Measure::Stamp
    } else {
        Measure::sampled_unless(c.no_evidence)
    };
    let (value, ended) = park_until(c.word, c.cell, pred, c.deadline, measure, &mut c.slept);
    c.finish(value, ended)
}

/// A probe of a cell whose spins stopped (`adapt.rs`), made by a wait that would
/// otherwise park at once: it parks, every park's wake stamped, and learns
/// from the notifier's stamp of the wake that ended it (taken right after the
/// change: `protocol::Sleepers::stamp_wake`) whether the change came within the
/// spin budget of `start`, so that a spin would have caught it. A change that came
/// before the waiter slept is caught, as in [`at_once`].
///
/// The probe asks what a spin of the budget would have found, at the cost of one
/// clock reading and the notifier's one, where the spin costs the budget itself:
/// a consumer fed every few milliseconds probes 32 waits after its spins stopped,
/// then 64, 128 and up to 1024 waits apart, and each of those spins would be a whole
/// budget (5 µs under a hypervisor) for nothing.
#[cold]
#[inline(never)]
pub(super) fn probe<'a, W: Word<'a>>(
    word: W,
    cell: Learning<'a>,
    pred: &mut dyn FnMut(ValueOf<'a, W>) -> bool,
    deadline: Option<u64>,
    start: Start,
) -> Outcome<ValueOf<'a, W>> {
    let began = now_ns();
    cell.adapt.probe_begins();
    let mut slept = false;
    let (value, ended) = park_until(word, cell, pred, deadline, Measure::Stamp, &mut slept);
    let before_sleep = ended == Ended::Park && !slept;
    let in_time = before_sleep
        || (ended == Ended::Park
            && word
                .wake_stamp()
                .checked_sub(began)
                .is_some_and(|after| after <= start.spin_ns));
    cell.adapt.record_probe(in_time);
    if before_sleep {
        cell.caught.note(true);
    }
    parked_end(cell, value, ended, &start, slept)
}

/// Which parks of [`park_until`] measure their wake-up latency.
#[derive(Copy, Clone, PartialEq, Eq)]
pub(super) enum Measure {
    /// None: a parker's park without evidence reads no clock.
    Never,
    /// Those due for it (`estimate::wake_sample_due`).
    Sampled,
    /// Only while the process's wake-up estimate fills its first window
    /// (`estimate::wake_young`): the parks of a wait that parks without the climb
    /// on a cell whose spins stopped ([`without_climb`]), a slow producer's
    /// consumer that woke and notified nobody since its last wait. It sizes no
    /// spin, and nothing it learns sizes one: a cell's probes sample as the
    /// ladder's parks do ([`Stamp`](Self::Stamp)). The ladder's parks keep
    /// sampling, those that park at once included: a thread that woke its partner
    /// parks there, and the wake-ups such parks measure size the hand-off spin that
    /// brings a pair parking in turn back to spinning.
    Young,
    /// Those due for it, as [`Sampled`](Self::Sampled), and every one has the
    /// notifier stamp its wake: a wait judged by when the change came (a
    /// [`probe`]'s, or one whose spin failed: `Climb::finish`), which reads the
    /// stamp and not the clock.
    Stamp,
}

impl Measure {
    /// The parks due for it, or none for a parker's park without evidence.
    #[inline(always)]
    pub(super) fn sampled_unless(no_evidence: bool) -> Measure {
        if no_evidence {
            Measure::Never
        } else {
            Measure::Sampled
        }
    }
}

/// The park loop: look, then announce, re-check and sleep through the word's park
/// half, until the predicate holds or the deadline passes; returns the value and
/// [`Ended::Park`], [`Ended::TimedOut`] or [`Ended::AtDeadline`], and sets `slept`
/// once the waiter has slept in the kernel. `measure`: which parks read the clock
/// around their sleep for the wake-up estimate.
#[inline(always)]
fn park_until<'a, W: Word<'a>, P: FnMut(ValueOf<'a, W>) -> bool + ?Sized>(
    word: W,
    cell: Learning<'a>,
    pred: &mut P,
    deadline: Option<u64>,
    measure: Measure,
    slept: &mut bool,
) -> (ValueOf<'a, W>, Ended) {
    loop {
        let v = word.atomic().load_acquire();
        if pred(v) {
            return (v, Ended::Park);
        }
        if deadline.is_some_and(|d| now_ns() >= d) {
            return (v, Ended::TimedOut);
        }
        cell.adapt.note_parking();
        cell.caught.note(false);
        // The clock is read around the sleep only on the parks that measure it, and
        // never on a parker's park without evidence, which reads no clock at all:
        // after an idle spell the clock's pages are cold, and their misses would
        // cost an idle park more than the rest of mwait's path (`docs/clients.md`).
        // The parks that spin on evidence measure the wake-up latency, out of line.
        let sampled = match measure {
            Measure::Never => false,
            Measure::Sampled | Measure::Stamp => estimate::wake_sample_due(),
            Measure::Young => estimate::wake_young(),
        };
        let parked = if sampled || measure == Measure::Stamp {
            park_measured(word, &mut |v| pred(v), deadline, sampled)
        } else {
            let parked = word.park(&mut *pred, deadline);
            stamp::mark(Point::Withdrawn);
            parked
        };
        match parked {
            Ok(v) => return (v, Ended::Park),
            Err(Parked::Woken) => *slept = true,
            // The value changed before the kernel put us to sleep: no wake-up to
            // measure.
            Err(Parked::Changed) => {}
            Err(Parked::TimedOut) => {
                let v = word.atomic().load_acquire();
                let ended = if pred(v) {
                    Ended::AtDeadline
                } else {
                    Ended::TimedOut
                };
                return (v, ended);
            }
        }
    }
}

/// One park of [`park_until`] whose notifier stamps the wake, and that, where
/// `sampled` (one park in `WAKE_SAMPLE_EVERY`), measures its wake-up latency with a
/// clock reading on each side of its sleep: out of the loop's body, which then holds
/// one park, and one body for every predicate. It says so before it announces
/// itself: only then does the notifier that wakes it stamp the wake.
#[cold]
#[inline(never)]
fn park_measured<'a, W: Word<'a>>(
    word: W,
    pred: &mut dyn FnMut(ValueOf<'a, W>) -> bool,
    deadline: Option<u64>,
    sampled: bool,
) -> Result<ValueOf<'a, W>, Parked> {
    word.measure_wake(true);
    let parked_ns = if sampled { now_ns() } else { 0 };
    let parked = word.park(pred, deadline);
    stamp::mark(Point::Withdrawn);
    let stamp_ns = word.wake_stamp();
    word.measure_wake(false);
    if sampled && parked == Err(Parked::Woken) {
        let _ = estimate::offer_wake(stamp_ns, parked_ns, now_ns());
    }
    parked
}

/// Tier 3 with parking off: rounds of spin and yield until the predicate holds or
/// the deadline passes.
#[cold]
#[inline(never)]
fn no_park_tier<'a, W: Word<'a>>(
    c: &mut Climb<'a, W>,
    pred: &mut dyn FnMut(ValueOf<'a, W>) -> bool,
) -> Outcome<ValueOf<'a, W>> {
    let word = c.word();
    loop {
        let v = word.load_acquire();
        if pred(v) {
            return c.finish(v, Ended::Park);
        }
        if c.deadline.is_some_and(|d| now_ns() >= d) {
            return c.finish(v, Ended::TimedOut);
        }
        if let Some(v) = no_park_round(c, pred) {
            return c.finish(v, Ended::NoPark);
        }
    }
}

/// One round of a waiter that never parks: spin, then give the CPU back, so that a
/// partner waiting for this CPU gets it at least between rounds.
fn no_park_round<'a, W: Word<'a>>(
    c: &Climb<'a, W>,
    pred: &mut dyn FnMut(ValueOf<'a, W>) -> bool,
) -> Option<ValueOf<'a, W>> {
    let round = c.pol.spin_ns.max(NO_PARK_SPIN_ROUND_NS);
    let until = c.cap(now_ns().saturating_add(round));
    let hit = spin::spin_until(c.word(), pred, until, c.pol.spin_pause).value;
    if hit.is_none() {
        yield_now();
    }
    hit
}
