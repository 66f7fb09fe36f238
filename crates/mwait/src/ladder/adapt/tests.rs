use super::*;

/// The test-only views of the score's answer.
impl Adaptive {
    /// The spin budget for the next wait: `base`, or 0 while spinning keeps failing.
    pub(crate) fn spin_budget(&self, base: u64, handoff: bool) -> u64 {
        if base != 0 && self.spins(handoff) {
            base
        } else {
            0
        }
    }

    /// Whether the next wait spins or probes ([`grant`](Self::grant) is not
    /// [`Grant::No`]).
    pub(crate) fn spins(&self, handoff: bool) -> bool {
        self.grant(handoff) != Grant::No
    }
}

#[test]
fn the_inline_spin_follows_the_last_ladder_spin() {
    let a = Caught::new();
    assert!(!a.inline_spin_ok(), "nothing caught yet");
    a.note(true);
    assert!(a.inline_spin_ok(), "whatever the run queue says");
    a.note(false);
    assert!(!a.inline_spin_ok(), "a failed spin or a park turns it off");
}

/// Indices of the waits that probe among `n`, every probe failing.
fn failing_probes(a: &Adaptive, n: u32) -> Vec<u32> {
    (0..n)
        .filter(|_| {
            let probe = a.spin_budget(1000, false) > 0;
            if probe {
                a.record_spin(false);
            }
            probe
        })
        .collect()
}

#[test]
fn failing_spins_stop_spinning_and_probes_back_off() {
    let a = Adaptive::new();
    for _ in 0..3 {
        assert_eq!(a.spin_budget(1000, false), 1000);
        a.record_spin(false);
    }
    assert_eq!(
        a.spin_budget(1000, false),
        1000,
        "three failures still spin"
    );
    a.record_spin(false);
    assert!(a.score() < SCORE_SPIN_MIN, "score {}", a.score());
    let probes = failing_probes(&a, 20_000);
    let gaps: Vec<u32> = probes.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(
        probes[0], PROBE_MIN,
        "the first probe comes a whole gap after the failures"
    );
    assert_eq!(
        gaps[0],
        2 * PROBE_MIN + 1,
        "the first failed probe doubles the gap"
    );
    for w in gaps.windows(2) {
        assert!(
            w[1] == (w[0] - 1) * 2 + 1 || w[1] == PROBE_MAX + 1,
            "{gaps:?}"
        );
    }
    assert_eq!(*gaps.last().unwrap(), PROBE_MAX + 1, "capped: {gaps:?}");
}

/// `skip` answers as `spins(false)` would and counts the same waits of the gap, but
/// leaves a due probe (and a cell that spins) to `spins`: over the same failing
/// waits, one cell asked by `skip` first and then, where it declines, by `spins`
/// (as the park without the climb and then the ladder ask), probes on the same
/// waits and ends in the same state as one asked by `spins` alone.
#[test]
fn skip_declines_a_probe_and_counts_the_gap_as_spins_does() {
    let (a, b) = (Adaptive::new(), Adaptive::new());
    assert!(!a.skip(), "a new cell spins");
    let snapshot = |x: &Adaptive| format!("{x:?}");
    assert_eq!(snapshot(&a), snapshot(&b), "and nothing was written");
    for x in [&a, &b] {
        x.record_failed_wait(true);
    }
    let (mut probes_a, mut probes_b) = (Vec::new(), Vec::new());
    for i in 0..5_000 {
        if !a.skip() {
            assert!(a.spins(false), "wait {i}: a declined skip is a probe");
            a.record_spin(false);
            probes_a.push(i);
        }
        if b.spins(false) {
            b.record_spin(false);
            probes_b.push(i);
        }
        assert_eq!(snapshot(&a), snapshot(&b), "wait {i}");
    }
    assert_eq!(probes_a, probes_b);
    assert!(probes_a.len() > 3, "{probes_a:?}");
}

#[test]
fn a_far_failure_stops_a_cell_that_no_spin_paid_off_on() {
    let budget = 5_000;
    for before in [
        |_: &Adaptive| {},
        // A spin that failed near is no pay-off either.
        |a: &Adaptive| {
            a.record_spin(false);
            a.record_failed_wait(false);
        },
    ] {
        let a = Adaptive::new();
        before(&a);
        assert_eq!(a.spin_budget(budget, false), budget);
        a.record_spin(false);
        a.record_failed_wait(true);
        assert!(a.score() < SCORE_SPIN_MIN, "score {}", a.score());
        assert_eq!(
            a.spin_budget(budget, false),
            0,
            "the next wait parks at once"
        );
    }
    // A wait that skipped the spin and ended within the budget is a pay-off too.
    let a = Adaptive::new();
    a.record_unspun_wait(0, budget, budget);
    a.record_spin(false);
    a.record_failed_wait(true);
    assert_eq!(
        a.spin_budget(budget, false),
        budget,
        "one far failure is ordinary"
    );
}

#[test]
fn two_failures_by_far_in_a_row_stop_spinning() {
    let (budget, at) = (5_000, 1_000);
    let far = at + budget * FAR_FAILURE_BUDGETS + 1;
    assert!(failed_by_far(far - at, budget));
    assert!(!failed_by_far(far - 1 - at, budget));
    let a = Adaptive::new();
    a.record_spin(true);
    for _ in 0..2 {
        assert_eq!(a.spin_budget(budget, false), budget);
        a.record_spin(false);
        a.record_failed_wait(true);
    }
    assert!(a.score() < SCORE_SPIN_MIN);
    assert_eq!(
        a.spin_budget(budget, false),
        0,
        "the third wait parks at once"
    );
    a.record_spin(true);
    assert_eq!(
        a.spin_budget(budget, false),
        budget,
        "a success lifts it again"
    );

    // One far failure alone (a gap before a burst, a preempted partner) is an
    // ordinary one, and a success or a nearer failure ends the row.
    for end_the_row in [
        |a: &Adaptive| a.record_spin(true),
        |a: &Adaptive| {
            a.record_spin(false);
            a.record_failed_wait(false);
        },
    ] {
        let a = Adaptive::new();
        a.record_spin(true);
        a.record_spin(false);
        a.record_failed_wait(true);
        assert_eq!(a.spin_budget(budget, false), budget);
        end_the_row(&a);
        a.record_spin(false);
        a.record_failed_wait(true);
        assert_eq!(a.spin_budget(budget, false), budget, "not in a row");
    }
}

#[test]
fn a_successful_probe_brings_probing_back_to_its_fastest() {
    let a = Adaptive::new();
    for _ in 0..20 {
        a.record_spin(false);
    }
    let _ = failing_probes(&a, 10_000);
    a.record_spin(true);
    let probes = failing_probes(&a, 5_000);
    let first_gap = probes.windows(2).map(|w| w[1] - w[0]).find(|&g| g > 1);
    assert_eq!(first_gap, Some(PROBE_MIN + 1), "{probes:?}");
}

/// A cell whose spins stopped (a new cell's first far failure).
fn stopped() -> Adaptive {
    let a = Adaptive::new();
    a.record_failed_wait(true);
    a
}

/// Between probes the score grants nothing; a due probe is a probe, and a spin
/// where the wait just woke its partner (a hand-off's probe); a cell whose spins
/// pay off spins.
#[test]
fn a_due_probe_is_granted_as_a_probe_and_as_a_spin_after_a_handoff() {
    assert_eq!(
        Adaptive::new().grant(false),
        Grant::Spin,
        "a fresh cell spins"
    );
    for (handoff, due) in [(false, Grant::Probe), (true, Grant::Spin)] {
        let a = stopped();
        let grants: Vec<Grant> = (0..=PROBE_MIN).map(|_| a.grant(handoff)).collect();
        let (last, between) = grants.split_last().expect("some");
        assert!(between.iter().all(|g| *g == Grant::No), "{grants:?}");
        assert_eq!(*last, due, "handoff: {handoff}");
    }
}

/// A probe that parked learns as a spin would have: a change in time is a success
/// (the cell spins again), a late one a failure (the probes back off). One woken by
/// a notifier on the CPU it slept on learns nothing more than that wake's failure,
/// and the next probe forgets that wake.
#[test]
fn a_parked_probe_learns_as_a_spin_unless_woken_beside() {
    let a = stopped();
    a.probe_begins();
    a.record_probe(false);
    let probes = failing_probes(&a, 8 * PROBE_MIN);
    assert_eq!(
        probes[..2],
        [2 * PROBE_MIN, 6 * PROBE_MIN + 1],
        "backed off"
    );
    let a = stopped();
    a.probe_begins();
    a.record_probe(true);
    assert_eq!(a.grant(false), Grant::Spin, "in time: spinning again");
    let a = stopped();
    a.probe_begins();
    a.note_beside();
    let before = a.score();
    a.record_probe(true);
    assert_eq!(a.score(), before, "a wake beside is no success");
    a.probe_begins();
    a.record_probe(true);
    assert_eq!(a.grant(false), Grant::Spin, "the next probe forgot it");
}

/// A wake by a notifier on the CPU its waiter slept on is noted for a sleeping
/// probe, beside the failed spin it counts as; a wake from another CPU is not.
#[test]
fn a_wake_beside_its_waiter_is_noted_for_the_probe() {
    if sys::current_cpu() == u32::MAX {
        // The CPU is unknown on this platform: no wake is beside its waiter.
        return;
    }
    let a = stopped();
    a.probe_begins();
    // Parks and wakes on this thread's CPU, until the two readings are on one CPU.
    let beside = (0..100).any(|_| {
        a.note_parking();
        a.parked_woken();
        take_woke() != Woke::Partner
    });
    assert!(
        beside,
        "the thread stayed on one CPU for two calls at least once"
    );
    let before = a.score();
    a.record_probe(true);
    assert_eq!(a.score(), before);
    a.probe_begins();
    a.parked_cpu.store(u32::MAX - 1, Relaxed);
    a.parked_woken();
    assert_eq!(take_woke(), Woke::Partner, "another CPU's sleeper");
    a.record_probe(true);
    assert_eq!(a.grant(false), Grant::Spin);
}

#[test]
fn successes_restore_spinning() {
    let a = Adaptive::new();
    for _ in 0..20 {
        a.record_spin(false);
    }
    assert_eq!(a.spin_budget(0, false), 0);
    a.record_spin(true);
    a.record_spin(true);
    assert!(a.score() >= SCORE_SPIN_MIN);
    assert_eq!(a.spin_budget(1000, false), 1000);
}

#[test]
fn a_wake_is_remembered_once() {
    assert_eq!(take_woke(), Woke::Nobody);
    note_woke(Woke::Partner);
    assert_eq!(take_woke(), Woke::Partner);
    assert_eq!(take_woke(), Woke::Nobody, "taken once");
    note_woke(Woke::Beside(3));
    assert_eq!(take_woke(), Woke::Beside(3));
}

#[test]
fn a_short_unspun_wait_counts_as_success() {
    let a = Adaptive::new();
    for _ in 0..20 {
        a.record_spin(false);
    }
    let before = a.score();
    a.record_unspun_wait(100, 600, 1000);
    assert!(a.score() > before);
    let mid = a.score();
    a.record_unspun_wait(100, 5000, 1000);
    assert_eq!(a.score(), mid);
}

#[test]
fn a_notify_is_evidence_for_one_wait() {
    let _ = take_notified();
    assert!(!take_notified(), "nothing notified");
    note_notified();
    assert!(take_notified(), "a notify since the last wait");
    assert!(!take_notified(), "taken by that wait");
}
