use super::*;
use crate::ladder::filter::WINDOW;

#[test]
fn wake_samples_from_other_wakes_or_absurd_clocks_are_refused() {
    // Parked at 1000, stamped at 5000, running at 30_000: 25 µs.
    assert_eq!(wake_sample(5_000, 1_000, 30_000), Some(25_000));
    // A stamp older than the park belongs to an earlier wake.
    assert_eq!(wake_sample(900, 1_000, 30_000), None);
    // The clock went backwards, or the wake is too fast or too slow to be one.
    assert_eq!(wake_sample(5_000, 1_000, 4_000), None);
    assert_eq!(wake_sample(5_000, 1_000, 5_100), None);
    assert_eq!(wake_sample(5_000, 1_000, 5_000 + 20_000_000), None);
    assert_eq!(offer_wake(5_000, 6_000, 30_000), None);
    assert_eq!(offer_wake(5_000, 1_000, 30_000), Some(25_000));
}

#[test]
fn the_inline_spin_lasts_about_its_time_within_bounds() {
    // 8 loads per 250 ns round: 1 µs is 32 loads.
    assert_eq!(inline_loads(250), 32);
    // A slow PAUSE (140 cycles): the minimum, two rounds.
    assert_eq!(inline_loads(4_000), INLINE_LOADS_MIN);
    // A fast one, and nonsense: the maximum.
    assert_eq!(inline_loads(10), INLINE_LOADS_MAX);
    assert_eq!(inline_loads(0), INLINE_LOADS_MAX);
    const { assert!(INLINE_SPIN_NS <= SPIN_FLOOR_NS * 2) };
    assert!((INLINE_LOADS_MIN..=INLINE_LOADS_MAX).contains(&inline_spin_loads()));
}

#[test]
fn spin_round_samples_are_per_round_and_bounded() {
    assert_eq!(spin_round_sample(4, 1_000), Some(250));
    assert_eq!(spin_round_sample(0, 1_000), None);
    assert_eq!(spin_round_sample(1, 1_000_000), None);
    assert_eq!(spin_round_sample(100, 0), None);
}

#[test]
fn one_spin_in_so_many_of_a_thread_is_offered() {
    // On a thread of its own, so that the count starts at zero.
    std::thread::spawn(|| {
        let before = SPIN_ROUND.samples();
        for _ in 0..2 * SPIN_SAMPLE_EVERY {
            offer_spin_rounds(4, 1_000);
        }
        let taken = SPIN_ROUND.samples() - before;
        // Two offered; another test thread may have raced one away, none added.
        assert!((1..=2).contains(&taken), "{taken}");
    })
    .join()
    .unwrap();
}

#[test]
fn parks_measure_their_wake_up_always_while_young_then_one_in_so_many() {
    let fresh = LogEstimate::new();
    assert!(fresh.young());
    for _ in 0..WINDOW {
        fresh.record(5_000);
    }
    assert!(!fresh.young(), "a full window");
    // Fill the process's estimate (other tests only add to it), then count on a
    // thread of its own, whose count starts at zero.
    for _ in 0..WINDOW {
        WAKE.record(5_000);
    }
    let due = std::thread::spawn(|| {
        (0..2 * WAKE_SAMPLE_EVERY)
            .map(|_| wake_sample_due())
            .collect::<Vec<_>>()
    })
    .join()
    .unwrap();
    let expected: Vec<bool> = (0..2 * WAKE_SAMPLE_EVERY)
        .map(|k| k % WAKE_SAMPLE_EVERY == 0)
        .collect();
    assert_eq!(due, expected);
}

#[test]
fn the_prior_gives_the_budgets_of_the_constants_it_replaces() {
    let b = budgets(None, None, false);
    assert_eq!(b.spin_ns, WAKE_PRIOR_NS);
    assert_eq!(b.handoff_ns, 20_000);
    let b = budgets(None, None, true);
    assert_eq!(b.spin_ns, SPIN_CEILING_HYPERVISOR_NS);
    assert_eq!(b.handoff_ns, 20_000);
}

#[test]
fn budgets_follow_the_wake_latency_within_their_bounds() {
    // A machine with 25 µs wake-ups. The spin stops at the ceiling, the hand-off
    // covers two wake-ups.
    let b = budgets(Some(25_000), Some(250), true);
    assert_eq!(
        b,
        Budgets {
            spin_ns: 5_000,
            handoff_ns: 50_000,
            unproven_ns: UNPROVEN_SPIN_NS,
        }
    );
    // Bare metal, 3 µs wake-ups: spin 3 µs, hand-off 6 µs.
    let b = budgets(Some(3_000), Some(40), false);
    assert_eq!(
        b,
        Budgets {
            spin_ns: 3_000,
            handoff_ns: 6_000,
            unproven_ns: UNPROVEN_SPIN_NS,
        }
    );
    // Very fast wake-ups: the floor, and enough rounds for a slow PAUSE.
    assert_eq!(budgets(Some(300), Some(40), false).spin_ns, SPIN_FLOOR_NS);
    assert_eq!(budgets(Some(300), Some(400), false).spin_ns, 1_600);
    // Very slow ones: the ceilings.
    let b = budgets(Some(5_000_000), None, false);
    assert_eq!(
        b,
        Budgets {
            spin_ns: SPIN_CEILING_NS,
            handoff_ns: HANDOFF_CEILING_NS,
            unproven_ns: UNPROVEN_SPIN_NS,
        }
    );
    // The unproven spin: at least the floor (four slow rounds), at most the budget.
    assert_eq!(budgets(Some(300), Some(400), false).unproven_ns, 1_600);
    assert_eq!(
        budgets(Some(300), Some(40), false).unproven_ns,
        SPIN_FLOOR_NS
    );
    // An absurd round cost cannot push the floor past the ceiling.
    assert_eq!(
        budgets(Some(1_000), Some(50_000), true).spin_ns,
        SPIN_CEILING_HYPERVISOR_NS
    );
}
