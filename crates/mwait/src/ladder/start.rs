//! What a wait does and decides before it climbs the ladder: the inline spin, the
//! first loads of the spin tier in the caller's frame ([`inline_spin`]), and the
//! ladder's start ([`Start`]): the thread's notes taken, the cell's last catch, the
//! evidence rule and the spin budget, from which a wait parks at once or climbs.

use super::adapt::{self, Caught, Grant, Woke};
use super::{apart, estimate, Learning};
use crate::backend::Watched;
use crate::detect::Capabilities;
use crate::policy::{Resolved, WaitPolicy};

/// The first loads of the spin tier inline, in the caller's frame, on a word whose
/// last spin caught the change (`caught`): a partner that answers within a few
/// hundred ns (a ping-pong between nearby cores) is then seen without entering the
/// ladder at all, whose call, policy resolution and bookkeeping would sit on the
/// round trip. About `estimate::INLINE_SPIN_NS` (1 µs) of loads at the measured cost
/// of a spin round, within bounds (`estimate::inline_spin_loads`; one load in the
/// loom model, which needs only to see the path); the ladder's own budget starts
/// after them. Untimed waits only, and only where the policy spins.
#[inline(always)]
pub(crate) fn inline_spin<W: Watched + ?Sized>(
    word: &W,
    caught: &Caught,
    pred: &mut impl FnMut(W::Bits) -> bool,
    policy: &WaitPolicy,
) -> Option<W::Bits> {
    if !(policy.allows_inline_spin() && caught.inline_spin_ok()) {
        return None;
    }
    let loads = estimate::inline_spin_loads();
    for _ in 0..loads {
        crate::primitive::spin_hint();
        let v = word.load_acquire();
        if pred(v) {
            return Some(v);
        }
    }
    None
}

/// What a wait's spin is: how long it spins, the budget it is judged against, and
/// whether the wait is a probe.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct Budget {
    pub(super) spin_ns: u64,
    pub(super) judged_ns: u64,
    pub(super) probe: bool,
}

impl Budget {
    /// A spin of `ns`, judged against `ns`.
    pub(super) fn of(ns: u64, probe: bool) -> Budget {
        Budget {
            spin_ns: ns,
            judged_ns: ns,
            probe,
        }
    }

    /// The spin that the rule's budgets `b` give a wait that `grant` lets spin or
    /// probe: the hand-off spin after a hand-off, else the spin budget, of which a
    /// wait on an `unproven` cell (no spin has paid off on it, and no hardware tier
    /// follows) spins only the unproven spin, judged against the whole.
    pub(super) fn from_rule(
        b: &estimate::Budgets,
        grant: Grant,
        handoff: bool,
        unproven: bool,
    ) -> Budget {
        let probe = grant == Grant::Probe;
        if handoff {
            Budget::of(b.handoff_ns, probe)
        } else if unproven && !probe {
            Budget {
                spin_ns: b.unproven_ns,
                judged_ns: b.spin_ns,
                probe,
            }
        } else {
            Budget::of(b.spin_ns, probe)
        }
    }
}

/// The spin budget of a wait under `pol` on `cell`, and whether the wait is a
/// probe ([`Grant::Probe`]): the policy's own budget where it does not adapt; where
/// the process's defaults say spin (it has more than one CPU), the measured wake-up
/// latency (`estimate.rs`, "The rule"), or twice it for a hand-off, as the cell's
/// adaptive score allows. An ordinary spin on a cell that no spin has paid off on
/// yet spins the unproven spin and is judged against the whole budget, unless a
/// hardware tier follows it (which would catch what the short spin misses, and end
/// the wait before it could be judged). The score is asked first: a wait that will
/// not spin looks up no estimate.
fn spin_budget(cell: Learning<'_>, pol: &Resolved, handoff: bool) -> Budget {
    if !pol.adaptive {
        return Budget::of(pol.spin_ns, false);
    }
    let grant = match pol.spin_ns {
        0 => Grant::No,
        _ => cell.adapt.grant(handoff),
    };
    if grant == Grant::No {
        return Budget::of(0, false);
    }
    // Never 0: the rule's budgets have a floor.
    let b = estimate::current(Capabilities::for_waits().hypervisor);
    let unproven = !pol.hw_wanted() && !cell.adapt.paid_off();
    Budget::from_rule(&b, grant, handoff, unproven)
}

/// What a wait decides before it climbs, from what the climb reads first: the
/// thread's notes (did it wake a partner, notify a cell), the cell's last catch,
/// the evidence rule and the spin budget. A wait whose budget is 0 and that has no
/// hardware tier to try parks at once (`park.rs`), else it climbs from here.
#[derive(Copy, Clone, Debug)]
pub(super) struct Start {
    /// This thread woke a parked waiter since its last wait.
    pub(super) handoff: bool,
    /// Whether the cell's last spin caught the change.
    pub(super) caught: bool,
    /// A parker's wait without evidence that the change is near
    /// (`Learning::evidence_allows_spin`).
    pub(super) no_evidence: bool,
    /// The spin budget, before the run-queue gate (0: no spin).
    pub(super) spin_ns: u64,
    /// The budget that a failed spin of this wait is judged against: `spin_ns`, or
    /// the rule's whole budget where the cell spins the unproven spin
    /// (`estimate::UNPROVEN_SPIN_NS`): a change within it counts as caught.
    pub(super) judged_ns: u64,
    /// A probe of a cell whose spins stopped ([`Grant::Probe`]): where the wait
    /// would otherwise park at once, it parks and learns whether a spin of
    /// `spin_ns` would have caught the change ([`parks_to_probe`](Self::parks_to_probe)).
    pub(super) probe: bool,
}

impl Start {
    /// Takes the thread's notes and decides the spin budget. The notes are taken
    /// whatever the policy, so that they cannot reach a later wait; the cell's score
    /// is asked once, here (a probe it grants is this wait's).
    #[inline(always)]
    pub(super) fn decide(cell: Learning<'_>, pol: &Resolved) -> Start {
        let handoff = match adapt::take_woke() {
            _ if !pol.handoff => false,
            Woke::Nobody => false,
            Woke::Partner => true,
            // This thread woke its partner on its own CPU and now waits, for the
            // partner's answer most likely: where the policy lets it, it leaves the
            // CPU where another is free, and then the answer is a hand-off; else
            // the partner cannot answer while this thread holds the CPU.
            Woke::Beside(cpu) => pol.apart && apart::leave_cpu(cpu),
        };
        let notified = adapt::take_notified();
        // A cell whose last spin caught the change, and a wait that just woke the
        // partner it now waits for, spin whatever the run queue says (`load.rs`):
        // the first's partner demonstrably answers in time, and the second's was
        // just made runnable (the adaptive score still limits failing hand-off spins
        // to probes). Neither lifts the gate for the hardware tier.
        let caught = cell.caught.get();
        // A parker's cell spins only on evidence that the change is near
        // (`Learning::evidence_allows_spin`); without it the wait parks at once, and
        // neither the clock nor the run queue is read.
        let no_evidence = pol.adaptive && !cell.evidence_allows_spin(handoff || notified || caught);
        let budget = if no_evidence {
            Budget::of(0, false)
        } else {
            spin_budget(cell, pol, handoff)
        };
        Start {
            handoff,
            caught,
            no_evidence,
            spin_ns: budget.spin_ns,
            judged_ns: budget.judged_ns,
            probe: budget.probe,
        }
    }

    /// Whether the wait is a probe that parks instead of spinning
    /// ([`park::probe`](super::park::probe)): one that would park at once but for
    /// the probe's spin (see [`parks_at_once`](Self::parks_at_once)).
    #[inline(always)]
    pub(super) fn parks_to_probe(&self, pol: &Resolved, has_hw: bool) -> bool {
        self.probe && parks(pol, has_hw)
    }

    /// Whether the wait parks at once under `pol`: no spin, no hardware tier to try
    /// (`has_hw`: one is given to the climb, which runs it where `pol` grants it a
    /// budget), parking on. The climb would go straight to its park tier, and
    /// learn there what [`at_once`](super::park::at_once) learns.
    #[inline(always)]
    pub(super) fn parks_at_once(&self, pol: &Resolved, has_hw: bool) -> bool {
        self.spin_ns == 0 && parks(pol, has_hw)
    }
}

/// Whether a wait under `pol` that does not spin goes straight to its park tier:
/// parking on, and no hardware tier to try (`has_hw`: one is given to the climb,
/// which runs it where `pol` grants it a budget).
#[inline(always)]
fn parks(pol: &Resolved, has_hw: bool) -> bool {
    pol.park && !(has_hw && pol.hw_ns > 0)
}
