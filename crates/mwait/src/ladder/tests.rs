use super::*;
use crate::backend::sim::SimMonitor;
use crate::backend::CState;
use crate::ladder::outcome::WaitResult;
use crate::ladder::stats::WaitStats;
use crate::primitive::AtomicU64;
use crate::primitive::Ordering;
use crate::sys::park::Parked;
use adapt::{Grant, Woke};
use std::cell::Cell;

/// A resolved policy for the ladder's tests: spin and hardware budgets, whether it
/// adapts; no hardware tier of the process's, parking on, the hand-off spin on.
fn policy(spin_ns: u64, hw_ns: u64, adaptive: bool) -> Resolved {
    Resolved {
        spin_ns,
        hw_ns,
        hw: None,
        spin_pause: None,
        park: true,
        adaptive,
        cstate: CState::C0_1,
        handoff: true,
        apart: false,
    }
}

/// Runs the hardware tier on a fresh cell holding 0 with `hw`, until `target`.
/// Returns what the tier returned, whether it recorded its start, and how many
/// spurious returns it counted.
fn run_hardware_tier(hw: &SimMonitor, target: u32) -> (Option<u32>, bool, u64) {
    let parts = Parts::new(0);
    let pol = policy(0, 60_000_000_000, false);
    let cell = parts.waiter();
    let mut c = started(cell, pol, None);
    let r = hardware_tier(&mut c, hw, &mut |v| v == target);
    (
        r,
        c.hw_start.is_some(),
        parts.stats.snapshot().spurious_hardware,
    )
}

/// The climb of a wait on `cell` under `pol`: [`Start::decide`], then the climb from
/// there, as `climb_word` builds it for a wait that does not park at once.
fn started(cell: Waiter<'_>, pol: Resolved, deadline: Option<u64>) -> Climb<'_, CellWord<'_>> {
    let start = Start::decide(cell.learning(), &pol);
    Climb::from_start(cell.word(), cell.learning(), pol, deadline, start)
}

/// What a cell gives the ladder, each part on its own.
struct Parts {
    line: MonitorLine,
    sleepers: Sleepers,
    adapt: Adaptive,
    caught: Caught,
    stats: CellStats,
}

impl Parts {
    fn new(value: u32) -> Parts {
        Parts {
            line: MonitorLine::new(value, false),
            sleepers: Sleepers::new(false, false),
            adapt: Adaptive::new(),
            caught: Caught::new(),
            stats: CellStats::new(),
        }
    }

    /// Stores `value` once a waiter is counted parked, with a notifier that learns
    /// nothing from its wake ([`Quiet`]); the waiter may not have slept yet.
    fn store_once_parked(&self, value: u32) {
        while self.line.parked() == 0 {
            std::thread::yield_now();
        }
        self.line.store(&self.sleepers, value, &Quiet);
    }

    /// The ladder's view of these parts.
    fn waiter(&self) -> Waiter<'_> {
        Waiter {
            line: &self.line,
            sleepers: &self.sleepers,
            adapt: &self.adapt,
            caught: &self.caught,
            stats: &self.stats,
        }
    }
}

/// The first of up to 100 runs of `run` whose waiter `slept`: a store made once
/// the waiter is counted may come before it sleeps, and then it finds the value.
fn until_slept<T>(run: impl FnMut(u32) -> T, slept: impl FnMut(&T) -> bool) -> T {
    (0..100)
        .map(run)
        .find(slept)
        .expect("a waiter that sleeps before the store")
}

#[test]
fn a_wait_that_finds_the_change_in_the_park_tier_counts_as_caught() {
    let parts = Parts::new(1);
    let (cell, caught) = (parts.waiter(), &parts.caught);
    // An adaptive wait whose spin is skipped (as the run-queue gate skips it),
    // on a cell whose last spin did not catch the change.
    let pol = policy(0, 0, true);
    assert!(!caught.get());
    let hw: Option<&SimMonitor> = None;
    let o = climb(cell, &mut |v| v == 1, None, pol, hw);
    assert_eq!((o.value, o.ended, o.slept), (1, Ended::Park, false));
    assert!(caught.get(), "the next wait may spin inline again");
    // A wait that times out in the park tier does not.
    caught.note(false);
    let o = climb(cell, &mut |v| v == 2, Some(0), pol, hw);
    assert_eq!(o.ended, Ended::TimedOut);
    assert!(!caught.get());
}

/// A parker's cell with no evidence that the change is near goes straight to the
/// park: no spin budget, and no look at the run queue (`can_help` false, so the
/// gate's reading is skipped); a notify by this thread since its last wait, or a
/// caught last wait, is evidence.
#[test]
fn a_parker_cell_without_evidence_parks_at_once() {
    let mut parts = Parts::new(0);
    parts.sleepers = Sleepers::new(false, true);
    let cell = parts.waiter();
    let pol = policy(1_000, 1_000, true);
    let _ = (adapt::take_woke(), adapt::take_notified());
    let c = started(cell, pol, None);
    assert_eq!((c.spin_ns, c.can_help), (0, false));
    // With evidence the ordinary rules apply (a caught last wait also passes the
    // run-queue gate, so the budget is the estimate's whatever the load).
    parts.caught.note(true);
    let c = started(cell, pol, None);
    assert!(c.can_help, "a caught cell may spin");
    // A notify is evidence for one wait: the gate may still refuse, never the rule.
    parts.caught.note(false);
    adapt::note_notified();
    let c = started(cell, pol, None);
    assert!(!adapt::take_notified(), "the wait took the note");
    let gate = load::last_reading_allows_spin();
    assert!(c.can_help || !gate, "only the run-queue gate may stop it");
}

/// Where a wait whose spin failed ends, it learns how far the change came after the
/// spin gave up: on a cell that a spin has paid off on, two sleeps in a row of a
/// millisecond past a 1 µs budget stop the spinning, on a new cell the first does;
/// waits that found the change before they slept are near failures.
#[test]
fn waits_woken_far_after_their_failed_spins_stop_the_spinning() {
    let ends = |parts: &Parts, slept: bool| {
        let cell = parts.waiter();
        let _ = (adapt::take_woke(), adapt::take_notified());
        let mut c = started(cell, policy(1_000, 0, true), None);
        // As the spin tier leaves a failed spin of 1 µs, a millisecond ago.
        parts.adapt.record_spin(false);
        c.spin_ns = 1_000;
        c.spun = true;
        c.spin_failed_ns = Some(now_ns().saturating_sub(1_000_000));
        c.slept = slept;
        c.finish(1, Ended::Park);
    };
    let parts = Parts::new(1);
    ends(&parts, true);
    assert_eq!(
        parts.adapt.spin_budget(1_000, false),
        0,
        "one stops a new cell"
    );
    let parts = Parts::new(1);
    parts.adapt.record_spin(true);
    ends(&parts, true);
    assert_eq!(
        parts.adapt.spin_budget(1_000, false),
        1_000,
        "one is not enough once a spin paid off"
    );
    ends(&parts, true);
    assert_eq!(parts.adapt.spin_budget(1_000, false), 0, "two in a row are");
    let parts = Parts::new(1);
    for _ in 0..3 {
        ends(&parts, false);
    }
    assert_eq!(
        parts.adapt.spin_budget(1_000, false),
        1_000,
        "three near failures still spin"
    );
}

/// Until a spin has paid off on a cell, its ordinary spin is the unproven spin,
/// judged against the whole budget; a hand-off, a probe and a paid-off cell spin the
/// budget they are judged against.
#[test]
fn a_cell_no_spin_paid_off_on_spins_the_unproven_spin() {
    let b = estimate::budgets(Some(25_000), Some(250), true);
    assert!(b.unproven_ns < b.spin_ns);
    // (grant, hand-off, unproven) and what the rule gives: (spin, judged, probe).
    let cases = [
        (
            (Grant::Spin, false, true),
            (b.unproven_ns, b.spin_ns, false),
        ),
        ((Grant::Spin, false, false), (b.spin_ns, b.spin_ns, false)),
        (
            (Grant::Spin, true, true),
            (b.handoff_ns, b.handoff_ns, false),
        ),
        ((Grant::Probe, false, true), (b.spin_ns, b.spin_ns, true)),
    ];
    for ((grant, handoff, unproven), want) in cases {
        let r = start::Budget::from_rule(&b, grant, handoff, unproven);
        assert_eq!(
            (r.spin_ns, r.judged_ns, r.probe),
            want,
            "{grant:?} {handoff} {unproven}"
        );
    }
    // What the cell says: unproven until a spin pays off.
    let parts = Parts::new(0);
    assert!(!parts.adapt.paid_off());
    parts.adapt.record_spin(false);
    assert!(!parts.adapt.paid_off());
    parts.adapt.record_spin(true);
    assert!(parts.adapt.paid_off());
}

/// The park after a failed spin has the notifier stamp its wake, and the wait
/// learns from that stamp when the change came: on a cell that no spin has paid off
/// on, a spin of 1 µs judged against 1 ms pays off where the change came within the
/// millisecond of its start, fails ordinarily up to eight milliseconds after it gave
/// up, and stops the spinning beyond that.
#[test]
fn a_failed_spin_is_judged_from_the_stamp_of_its_wake() {
    // A real park, woken from its sleep by a store from another thread, with the
    // whole budget a minute: stamped, and in time.
    let parked = until_slept(
        |_| {
            let parts = Parts::new(0);
            let cell = parts.waiter();
            let o = std::thread::scope(|s| {
                s.spawn(|| parts.store_once_parked(1));
                let _ = (adapt::take_woke(), adapt::take_notified());
                let mut c = started(cell, policy(1_000, 0, true), None);
                c.spin_ns = 1_000;
                c.judged_ns = 60_000_000_000;
                c.spun = true;
                c.spin_failed_ns = Some(now_ns());
                park::park_tier(&mut c, &mut |v| v == 1)
            });
            (o.slept, parts.sleepers.wake_stamp(), parts.adapt.paid_off())
        },
        |(slept, _, _)| *slept,
    );
    assert!(parked.1 != 0, "the wake is stamped");
    assert!(parked.2, "in time: paid off");
    // The judgement of a stamp `after_ns` past the spin's end, the stamp set as a
    // notifier's would be, so that no clock races the bounds: whether the cell is
    // paid off then, and whether its next wait spins.
    let judged = |after_ns: u64| {
        const FAILED_NS: u64 = 1 << 40;
        let parts = Parts::new(0);
        let _ = (adapt::take_woke(), adapt::take_notified());
        let mut c = started(parts.waiter(), policy(1_000, 0, true), None);
        c.spin_ns = 1_000;
        c.judged_ns = 1_000_000;
        c.spun = true;
        c.slept = true;
        c.spin_failed_ns = Some(FAILED_NS);
        parts
            .sleepers
            .wake_stamp
            .store(FAILED_NS + after_ns, std::sync::atomic::Ordering::Relaxed);
        c.finish(1, Ended::Park);
        (parts.adapt.paid_off(), parts.adapt.spins(false))
    };
    assert_eq!(judged(999_000), (true, true), "within the budget: paid off");
    assert_eq!(judged(999_001), (false, true), "late: an ordinary failure");
    assert_eq!(
        judged(8_000_000),
        (false, true),
        "eight budgets: still ordinary"
    );
    assert_eq!(judged(8_000_001), (false, false), "far: stopped");
}

#[test]
fn a_policy_without_the_handoff_spin_ignores_and_forgets_a_wake() {
    let parts = Parts::new(0);
    let cell = parts.waiter();
    let pol = |handoff| Resolved {
        handoff,
        ..policy(1_000, 0, false)
    };
    adapt::note_woke(Woke::Partner);
    assert!(started(cell, pol(true), None).handoff);
    adapt::note_woke(Woke::Partner);
    assert!(!started(cell, pol(false), None).handoff);
    assert_eq!(adapt::take_woke(), Woke::Nobody, "the wake was taken");
}

/// Brings a cell's adaptive score below the spin threshold, as failed spins do: the
/// next waits skip the spin until a probe is due.
fn stop_spinning(adapt: &Adaptive) {
    for _ in 0..4 {
        adapt.record_spin(false);
    }
    assert_eq!(adapt.spin_budget(1_000, false), 0);
}

/// The waits that park at once are those whose climb would go straight to its park
/// tier: no spin budget (a cell whose spins stopped, between its probes; a parker's
/// cell without evidence; a policy without a spin), no hardware tier, parking on. A
/// probe the score grants is taken by the climb, not asked for twice.
#[test]
fn waits_without_a_spin_or_a_hardware_tier_park_at_once() {
    let at_once = |parts: &Parts, pol: Resolved, hw: bool| {
        let _ = (adapt::take_woke(), adapt::take_notified());
        Start::decide(parts.waiter().learning(), &pol).parks_at_once(&pol, hw)
    };
    let spin = policy(1_000, 0, true);
    let parts = Parts::new(0);
    assert!(!at_once(&parts, spin, false), "a fresh cell spins");
    stop_spinning(&parts.adapt);
    let skipped = (0..64).filter(|_| at_once(&parts, spin, false)).count();
    assert_eq!(skipped, 63, "every wait between two probes parks at once");
    assert!(
        !at_once(&parts, policy(0, 1_000, true), true),
        "a hardware tier"
    );
    assert!(at_once(&parts, policy(0, 1_000, true), false), "none given");
    let no_park = Resolved {
        park: false,
        ..policy(0, 0, true)
    };
    assert!(!at_once(&parts, no_park, false), "the yield rounds climb");
    assert!(at_once(&Parts::new(0), policy(0, 0, false), false));
    // A parker's cell: at once without evidence, not with a notify since the last
    // wait (its spin budget is the estimate's then).
    let mut parker = Parts::new(0);
    parker.sleepers = Sleepers::new(false, true);
    assert!(at_once(&parker, spin, false));
    adapt::note_notified();
    let pol = spin;
    assert!(!Start::decide(parker.waiter().learning(), &pol).parks_at_once(&pol, false));
}

/// A probe of a cell whose spins stopped parks instead of spinning where the wait
/// would otherwise park at once, and learns from the notifier's stamp of the wake
/// whether a spin of its budget would have caught the change: a store within the
/// budget brings the spinning back, a later one backs the probes off. With a
/// hardware tier to try it spins, as before.
#[test]
fn a_probe_parks_and_learns_when_the_change_came() {
    let pol = policy(1_000, 0, true);
    // A probe woken from its sleep by a store from another thread, the budget
    // `budget_ns`: what it learnt, and whether it spun.
    let probe = |budget_ns: u64| {
        until_slept(
            |_| {
                let parts = Parts::new(0);
                stop_spinning(&parts.adapt);
                while parts.adapt.skip() {}
                let cell = parts.waiter();
                let o = std::thread::scope(|s| {
                    s.spawn(|| parts.store_once_parked(1));
                    let _ = (adapt::take_woke(), adapt::take_notified());
                    let start = Start::decide(cell.learning(), &pol);
                    assert!(start.probe && start.parks_to_probe(&pol, false));
                    assert!(!start.parks_to_probe(&policy(1_000, 1_000, true), true));
                    let start = Start {
                        spin_ns: budget_ns,
                        ..start
                    };
                    park::probe(cell.word(), cell.learning(), &mut |v| v == 1, None, start)
                });
                let stats = parts.stats.snapshot();
                // The waits skipped before the next probe and the one after it.
                let mut gaps = [0; 2];
                for gap in &mut gaps {
                    *gap = (0..).take_while(|_| parts.adapt.skip()).count();
                    assert!(parts.adapt.spins(false));
                }
                (o.slept, (stats.spin, stats.park), gaps)
            },
            |(slept, _, _)| *slept,
        )
    };
    let (_, counts, gaps) = probe(60_000_000_000);
    assert_eq!((counts, gaps), ((0, 1), [0, 0]), "in time: spinning again");
    let (_, counts, gaps) = probe(1);
    assert_eq!(counts, (0, 1));
    assert_eq!(gaps, [64, 64], "late: the probes back off at once");
}

/// A notifier that learns nothing from its wakes (an `Adaptive` would count a wake
/// on the waiter's CPU as a failed spin, as the scheduler places the two).
struct Quiet;

impl crate::protocol::OnWake for Quiet {
    fn parked_woken(&self) {}
}

/// What a wait taught `parts`: the score and probes (not the CPU it parked on, which
/// the scheduler picks), whether it caught, its counts.
fn learnt(parts: &Parts) -> (String, bool, WaitStats) {
    let adapt = format!("{:?}", parts.adapt);
    let cpu = adapt.find("parked_cpu").expect("the field");
    let rest = &adapt[cpu..];
    let score = format!(
        "{}{}",
        &adapt[..cpu],
        &rest[rest.find(',').expect("more")..]
    );
    (score, parts.caught.get(), parts.stats.snapshot())
}

/// A wait that parks at once learns and counts what the climb's park tier learns
/// and counts for a wait that did not spin: one whose change came before it slept
/// counts as caught (and the next wait may spin inline), one that timed out learns
/// nothing, and one woken from its sleep counts a park and leaves the score alone.
#[test]
fn a_wait_that_parks_at_once_learns_as_the_climb_does() {
    let pol = policy(0, 0, true);
    // How each way ends a wait: the cell's score, whether it caught, its counts.
    let run = |at_once: bool, value: u32, deadline: Option<u64>, store: bool| {
        let parts = Parts::new(value);
        stop_spinning(&parts.adapt);
        let cell = parts.waiter();
        let o = std::thread::scope(|s| {
            if store {
                s.spawn(|| parts.store_once_parked(1));
            }
            let _ = (adapt::take_woke(), adapt::take_notified());
            let pred = &mut |v| v == 1;
            if at_once {
                climb(cell, pred, deadline, pol, None::<&SimMonitor>)
            } else {
                let mut c = started(cell, pol, deadline);
                park::park_tier(&mut c, pred)
            }
        });
        (o, learnt(&parts))
    };
    // A woken wait: the store comes once the waiter is counted, which may be before
    // it sleeps (then it finds the value, as the first case does); each way is run
    // until its waiter slept.
    let woken = |at_once| until_slept(|_| run(at_once, 0, None, true), |(o, _)| o.slept);
    let cases = [(1, None, false), (0, Some(0), false)]
        .map(|(value, deadline, store)| {
            let a = run(true, value, deadline, store);
            let c = run(false, value, deadline, store);
            (a, c)
        })
        .into_iter()
        .chain([(woken(true), woken(false))]);
    for ((a, learnt_a), (c, learnt_c)) in cases {
        assert_eq!((a.value, a.ended, a.slept), (c.value, c.ended, c.slept));
        assert_eq!(learnt_a, learnt_c, "{a:?}");
    }
}

/// A wait through the park without the climb waits as the first look and the
/// ladder would: a value there at the first look ends it there, one that the next
/// look finds (it came before the sleep) counts as caught, one that wakes it from
/// its sleep counts a park, a deadline that passes ends it timed out; each learns
/// and counts the same. On a `Parker`'s cell (its idle park, `park::idle`, when
/// untimed), and on a plain cell whose spins keep failing; untimed and timed.
#[test]
fn the_park_without_the_climb_waits_and_learns_as_the_ladder_does() {
    for (parker, timed) in [(true, false), (false, false), (true, true), (false, true)] {
        without_the_climb_against_the_ladder(parker, timed);
    }
}

/// A wait that parks without the climb, on a cell whose spins stopped, does not
/// measure its wake-up once the process's estimate has a full window: the notifier
/// that wakes it stamps nothing. The ladder's parks measure one park in
/// `WAKE_SAMPLE_EVERY` of their thread, the first included: on the same cell
/// (where a wait with a note parks at once), under a policy without a spin, and
/// after a spin. A thread's first park, the sampled one, owes a stamp only where the
/// store woke it from its sleep: one that finds the store at its re-check returns
/// before the notifier stamps, so such a thread is run again.
#[test]
fn parks_without_the_climb_measure_only_while_the_estimate_is_young() {
    for _ in 0..filter::WINDOW {
        estimate::WAKE.record(5_000);
    }
    #[derive(Copy, Clone, PartialEq, Debug)]
    enum Way {
        WithoutClimb,
        StoppedCell,
        NoSpin,
        AfterSpin,
    }
    // On a fresh thread (its count of parks since the last sample at zero), one
    // way's waits on as many fresh cells as a sampling gap holds, each stored to
    // once its waiter is counted: how many of the cells were stamped, and whether
    // the first wait slept.
    let run = |way: Way| {
        std::thread::spawn(move || {
            let default = WaitPolicy::new();
            let pol = match way {
                Way::WithoutClimb | Way::StoppedCell => default.resolve(),
                Way::NoSpin => policy(0, 0, false),
                Way::AfterSpin => policy(1_000, 0, false),
            };
            let (mut stamped, mut first_slept) = (0, None);
            for _ in 0..estimate::WAKE_SAMPLE_EVERY {
                let parts = Parts::new(0);
                if way != Way::AfterSpin {
                    parts.adapt.record_failed_wait(true);
                }
                let cell = parts.waiter();
                let (o, lean) = std::thread::scope(|s| {
                    s.spawn(|| parts.store_once_parked(1));
                    let pred = &mut |v| v == 1;
                    let o = (way == Way::WithoutClimb)
                        .then(|| park::without_climb(cell, &mut *pred, None, &default, false))
                        .flatten();
                    let lean = o.is_some();
                    // The ladder parks too, so that the store comes whichever way.
                    let o = o.unwrap_or_else(|| climb(cell, pred, None, pol, None::<&SimMonitor>));
                    (o, lean)
                });
                assert_eq!(lean, way == Way::WithoutClimb, "{way:?}");
                assert_eq!((o.value, o.ended), (1, Ended::Park));
                stamped += u32::from(parts.sleepers.wake_stamp() != 0);
                first_slept.get_or_insert(o.slept);
            }
            (stamped, first_slept == Some(true))
        })
        .join()
        .expect("the waiter does not panic")
    };
    let stamped = |way: Way| until_slept(|_| run(way), |&(_, first_slept)| first_slept).0;
    assert_eq!(stamped(Way::WithoutClimb), 0, "without the climb");
    let ladder = [Way::StoppedCell, Way::NoSpin, Way::AfterSpin].map(stamped);
    assert_eq!(ladder, [1; 3], "the ladder's parks");
}

/// One wait of [`without_the_climb_against_the_ladder`] on `cell`: the first look,
/// then the park without the climb (`lean`) or the ladder of `WaitCell::wait_until`
/// (no hardware tier). If `timed`, a wait that `ends` has 60 s, one that does not
/// 2 ms. Returns the value and how the wait ended.
fn lean_or_ladder(
    (lean, parker, timed): (bool, bool, bool),
    cell: Waiter<'_>,
    mut pred: &mut dyn FnMut(u32) -> bool,
    ends: bool,
) -> (u32, Ended) {
    let policy = WaitPolicy::new();
    let deadline = timed.then(|| now_ns() + if ends { 60_000_000_000 } else { 2_000_000 });
    if lean && parker && !timed {
        let o = park::idle(cell, &mut pred, &policy).expect("no evidence");
        return (o.value, o.ended);
    }
    let v = cell.line.value.load(Ordering::Acquire);
    let o = match (pred(v), lean) {
        (true, _) => end(cell.stats, Outcome::before_ladder(v, Ended::Entry)),
        (false, true) => {
            park::without_climb(cell, pred, deadline, &policy, parker).expect("no evidence")
        }
        (false, false) => climb(cell, pred, deadline, policy.resolve(), None::<&SimMonitor>),
    };
    (o.value, o.ended)
}

/// [`the_park_without_the_climb_waits_and_learns_as_the_ladder_does`] on a parker's
/// cell or a plain one, its waits untimed or timed.
fn without_the_climb_against_the_ladder(parker: bool, timed: bool) {
    // Each way on a fresh cell, a plain one's spins stopped by a far failure;
    // `looks`: the look that accepts the value (a store comes from another thread
    // once the waiter is counted, if 0; none is accepted, if `u32::MAX`).
    let run = |lean: bool, looks: u32| {
        let mut parts = Parts::new(u32::from(looks != 0));
        parts.sleepers = Sleepers::new(false, parker);
        if !parker {
            parts.adapt.record_failed_wait(true);
        }
        let v = std::thread::scope(|s| {
            if looks == 0 {
                s.spawn(|| parts.store_once_parked(1));
            }
            let _ = (adapt::take_woke(), adapt::take_notified());
            let mut seen = 0;
            let mut pred = |v: u32| {
                seen += 1;
                v == 1 && (looks == 0 || seen >= looks)
            };
            let how = (lean, parker, timed);
            lean_or_ladder(how, parts.waiter(), &mut pred, looks != u32::MAX)
        });
        (v, learnt(&parts))
    };
    // A woken wait may find the value before it sleeps; each way is run until it
    // learnt that it slept (it did not count as caught).
    let woken = |lean| until_slept(|_| run(lean, 0), |(_, (_, caught, _))| !caught);
    let mut cases = vec![(run(true, 1), run(false, 1)), (run(true, 2), run(false, 2))];
    cases.push((woken(true), woken(false)));
    if timed {
        cases.push((run(true, u32::MAX), run(false, u32::MAX)));
    }
    for (a, b) in cases {
        assert_eq!(a, b, "parker: {parker}, timed: {timed}");
    }
    let counted = |(_, (_, _, stats)): ((u32, Ended), (String, bool, WaitStats))| stats.park;
    assert_eq!((counted(run(true, 2)), counted(woken(true))), (1, 1));
    if timed {
        assert_eq!(run(true, u32::MAX).0, (1, Ended::TimedOut));
    }
}

/// The park without the climb takes only a wait without evidence: with a note of
/// this thread's, a caught last wait, or a policy that does not adapt or does not
/// park, it leaves the wait to the ladder (`None`) and the note where it was; on a
/// plain cell also while its spins pay off, and when a probe is due, which it
/// leaves to the ladder's `Adaptive::spins`.
#[test]
fn the_park_without_the_climb_leaves_a_wait_with_evidence_to_the_ladder() {
    let mut parts = Parts::new(0);
    parts.sleepers = Sleepers::new(false, true);
    let default = WaitPolicy::new();
    // Any look would be the park's: the test fails there, rather than sleep.
    let takes = |parts: &Parts, policy: &WaitPolicy| {
        let parker = parts.sleepers.parker();
        let mut pred = |_: u32| -> bool { panic!("the park without the climb went on") };
        park::without_climb(parts.waiter(), &mut pred, None, policy, parker).is_some()
    };
    let _ = (adapt::take_woke(), adapt::take_notified());
    adapt::note_notified();
    assert!(!takes(&parts, &default));
    assert!(adapt::take_notified(), "the note is left for the ladder");
    adapt::note_woke(Woke::Partner);
    assert!(!takes(&parts, &default));
    assert_eq!(adapt::take_woke(), Woke::Partner, "so is a wake's");
    parts.caught.note(true);
    assert!(!takes(&parts, &default));
    parts.caught.note(false);
    assert!(!takes(&parts, &default.adaptive(false)));
    assert!(!takes(&parts, &default.park(false)));
    assert_eq!(parts.stats.snapshot().waits(), 0, "none of them counted");
    let plain = Parts::new(0);
    assert!(!takes(&plain, &default), "a new cell spins");
    plain.adapt.record_failed_wait(true);
    while plain.adapt.skip() {}
    let before = learnt(&plain);
    assert!(!takes(&plain, &default), "a probe is due");
    assert_eq!(learnt(&plain), before, "nothing written");
    assert!(plain.adapt.spins(false), "the probe is left to the ladder");
}

#[test]
fn the_hardware_tier_rechecks_after_every_episode() {
    let hw = SimMonitor::scripted(3, 7, HwWake::Woken);
    assert_eq!(
        run_hardware_tier(&hw, 7),
        (Some(7), true, 2),
        "two episodes woke with the value unchanged"
    );
    assert_eq!(
        hw.episodes.load(Ordering::Relaxed),
        3,
        "two spurious episodes, then the store"
    );
}

#[test]
fn a_monitor_that_yields_sends_the_wait_on_to_park() {
    let hw = SimMonitor::scripted(u64::MAX, 0, HwWake::Yield);
    assert_eq!(run_hardware_tier(&hw, 1), (None, true, 0));
    assert_eq!(hw.episodes.load(Ordering::Relaxed), 1);
}

#[test]
fn only_a_timeout_reads_as_timed_out_and_end_counts_every_wait_but_the_first_look() {
    let stats = CellStats::new();
    for ended in [
        Ended::Entry,
        Ended::Spin,
        Ended::Hardware,
        Ended::Park,
        Ended::NoPark,
        Ended::AtDeadline,
    ] {
        let o = Outcome::before_ladder(5, ended);
        assert_eq!(end(&stats, o).result(), WaitResult::Ready(5), "{ended:?}");
    }
    let o = Outcome::before_ladder(5, Ended::TimedOut);
    assert_eq!(end(&stats, o).result(), WaitResult::TimedOut(5));
    let s = stats.snapshot();
    // Entry is no wait; the yield rounds and a park that met its deadline as the
    // value arrived count as parks. (Inline endings reach a cell in batches:
    // `stats.rs` tests them.)
    assert_eq!(
        (s.inline_spin, s.spin, s.hardware, s.park, s.timeout),
        (0, 1, 1, 3, 1)
    );
}

/// A monitor on a 64-bit word whose `store_at`-th episode changes only the high
/// half, as a writer on another CPU would.
struct HighHalf<'a> {
    word: &'a AtomicU64,
    episodes: Cell<u32>,
    store_at: u32,
}

impl crate::backend::LineMonitor for HighHalf<'_> {
    fn episode(
        &self,
        _word: &impl crate::sys::Watchable,
        changed: impl Fn() -> bool,
        _deadline_ns: u64,
        _cstate: CState,
    ) -> HwWake {
        let n = self.episodes.get() + 1;
        self.episodes.set(n);
        assert!(!changed(), "an episode starts unchanged");
        if n == self.store_at {
            let v = self.word.load(Ordering::Relaxed);
            self.word.store(v | (1 << 32), Ordering::Release);
        }
        HwWake::Woken
    }
}

/// A 64-bit word whose park tier must not be reached.
#[derive(Copy, Clone)]
struct NoPark<'a>(&'a AtomicU64);

impl<'a> Word<'a> for NoPark<'a> {
    type Atomic = AtomicU64;
    fn atomic(self) -> &'a AtomicU64 {
        self.0
    }
    fn park<P: FnMut(u64) -> bool + ?Sized>(
        self,
        _: &mut P,
        _: Option<u64>,
    ) -> Result<u64, Parked> {
        panic!("the hardware tier should have seen the change")
    }
    fn wake_stamp(self) -> u64 {
        0
    }
}

#[test]
fn the_hardware_tier_sees_a_change_of_the_high_half_of_a_u64() {
    let word = AtomicU64::new(5);
    let hw = HighHalf {
        word: &word,
        episodes: Cell::new(0),
        store_at: 3,
    };
    let (adapt, stats) = (Adaptive::new(), CellStats::new());
    let pol = policy(0, 60_000_000_000, false);
    let caught = Caught::new();
    let learning = Learning {
        adapt: &adapt,
        caught: &caught,
        stats: &stats,
        on_evidence: false,
    };
    let o = climb_word(
        NoPark(&word),
        learning,
        &mut |v| v != 5,
        None,
        pol,
        Some(&hw),
    );
    assert_eq!((o.value, o.ended), (5 | (1 << 32), Ended::Hardware));
    assert_eq!(hw.episodes.get(), 3);
    assert_eq!(stats.snapshot().spurious_hardware, 2);
}

/// A timed wait whose time is up before it begins (a zero timeout) is its first
/// look: it ends timed out, is not counted (a poll, as a first look that holds), and
/// takes the thread's notes as a wait that climbs does, so that they do not reach
/// the next wait.
#[test]
fn a_wait_whose_time_is_up_takes_the_notes_and_is_not_counted() {
    let cell = crate::WaitCell::new(3);
    adapt::note_notified();
    adapt::note_woke(Woke::Partner);
    let r = cell.wait_until_timeout(|v| v == 4, std::time::Duration::ZERO);
    assert_eq!(r, WaitResult::TimedOut(3));
    assert!(!adapt::take_notified(), "the notify note was taken");
    assert_eq!(adapt::take_woke(), Woke::Nobody, "the wake note was taken");
    let r = cell.wait_until_timeout(|v| v == 3, std::time::Duration::ZERO);
    assert_eq!(r, WaitResult::Ready(3));
    assert_eq!(cell.stats().waits(), 0, "polls are not counted");
    // A wait that had time to climb is.
    let r = cell.wait_until_timeout(|v| v == 4, std::time::Duration::from_micros(1));
    assert_eq!(r, WaitResult::TimedOut(3));
    assert_eq!((cell.stats().waits(), cell.stats().timeout), (1, 1));
}
