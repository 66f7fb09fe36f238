//! Rows of per-round measures and the verdicts of targets judged on them.

use mwait_benches::impls;
use mwait_benches::{median, min_max, paired_ratio, sign_test_p};

/// One implementation's measure in an interleaved scenario: its value in each
/// round, compared with other implementations round by round.
pub struct Row {
    pub name: String,
    pub per_round: Vec<f64>,
}

impl Row {
    pub fn median(&self) -> f64 {
        median(&self.per_round)
    }

    /// "lo–hi" of the per-round values, the spread the median hides.
    pub fn range(&self, digits: usize) -> String {
        let (lo, hi) = min_max(&self.per_round);
        format!("{lo:.digits$}–{hi:.digits$}")
    }
}

/// One row per implementation from its per-round values (`per_round[i]` belongs
/// to `all[i]`).
pub fn rows(all: &[(String, impls::Make)], per_round: Vec<Vec<f64>>) -> Vec<Row> {
    all.iter()
        .zip(per_round)
        .map(|((name, _), per_round)| Row {
            name: name.clone(),
            per_round,
        })
        .collect()
}

/// The row named `name` (empty if the scenario did not run).
pub fn row<'a>(rows: &'a [Row], name: &str) -> &'a [f64] {
    rows.iter()
        .find(|r| r.name == name)
        .map_or(&[], |r| &r.per_round[..])
}

/// How a target fared in a run.
#[derive(Clone, Copy, PartialEq)]
pub enum Verdict {
    Holds,
    /// Past its bound, but by no more than chance explains (see [`matched_target`]).
    Tie,
    Missed,
    /// Nothing to judge: the measurement is missing (its bench was left out with
    /// `--only`, or every child that measures it failed).
    NoMeasurement,
}

impl Verdict {
    pub fn of(holds: bool) -> Verdict {
        if holds {
            Verdict::Holds
        } else {
            Verdict::Missed
        }
    }

    /// [`Verdict::of`], or [`Verdict::NoMeasurement`] where `value` is NaN (what a
    /// median of nothing is).
    pub fn on(value: f64, holds: bool) -> Verdict {
        if value.is_nan() {
            Verdict::NoMeasurement
        } else {
            Verdict::of(holds)
        }
    }
}

/// A target on a paired ratio: "`what`: median of N rounds 1.05x (0.98–1.12x)".
pub fn ratio_target(
    what: &str,
    a: &[f64],
    b: &[f64],
    holds: impl Fn(f64) -> bool,
) -> (String, Verdict) {
    let (m, lo, hi) = paired_ratio(a, b);
    (
        format!(
            "{what}: {m:.2}x, the median of {} paired rounds (range {lo:.2}–{hi:.2}x)",
            a.len().min(b.len())
        ),
        Verdict::on(m, holds(m)),
    )
}

/// A target on ratios measured side by side inside one process, one per round (a
/// cold child's mechanism against the PAUSE loop interleaved with it, a waiter
/// against a futex waiter running beside it): "`what`: median of N rounds 1.05x
/// (0.98–1.12x)".
pub fn in_process_target(
    what: &str,
    ratios: &[f64],
    holds: impl Fn(f64) -> bool,
) -> (String, Verdict) {
    let m = median(ratios);
    let (lo, hi) = min_max(ratios);
    (
        format!(
            "{what}: {m:.2}x, the median of {} rounds, each a ratio of two mechanisms measured side by side in one process (range {lo:.2}–{hi:.2}x)",
            ratios.len()
        ),
        Verdict::on(m, holds(m)),
    )
}

/// A target judged process by process: holds when at least `share` of the rounds'
/// in-process ratios (one fresh process each) meet the bound, so that a bimodal
/// result (most processes fine, some far off) cannot hide behind a median.
pub fn per_process_target(
    what: &str,
    ratios: &[f64],
    holds: impl Fn(f64) -> bool,
    share: f64,
) -> (String, Verdict) {
    let good = ratios.iter().filter(|&&r| holds(r)).count();
    let needed = (share * ratios.len() as f64).ceil() as usize;
    let (lo, hi) = min_max(ratios);
    let listed: Vec<String> = ratios.iter().map(|r| format!("{r:.2}x")).collect();
    (
        format!(
            "{what}: {good} of {} fresh processes within the bound, {needed} needed \
             (each a ratio of two mechanisms measured side by side in one process: {}; \
             range {lo:.2}–{hi:.2}x)",
            ratios.len(),
            listed.join(", ")
        ),
        if ratios.is_empty() {
            Verdict::NoMeasurement
        } else {
            Verdict::of(good >= needed)
        },
    )
}

/// An interference target between waitcell and futex, judged on placement-matched
/// per-round ratios (`matched`; `unmatched`: the plain per-round ratios, shown
/// beside). With the CPUs oversubscribed both park in the kernel and are woken by
/// the same system call, and what separates them in a round is mostly where the
/// scheduler put the waiter: on the producer's CPU (a wake of ~2.5 µs on the 2-vCPU
/// VM, the workers undisturbed) or on the other one (~9 µs, preempting a worker).
/// That choice tends to hold for a whole round and is a coin toss per round, so
/// rounds are compared only where both pairs were placed alike. Holds when the
/// median matched ratio meets the bound; a tie when it does not, but the rounds that
/// miss the bound are no more than a fair coin gives with probability 5 % or more
/// (one-sided sign test); missed otherwise.
pub fn matched_target(
    what: &str,
    matched: &[f64],
    unmatched: (f64, f64, f64),
    holds: impl Fn(f64) -> bool,
) -> (String, Verdict) {
    let (um, ulo, uhi) = unmatched;
    let all = format!("unmatched: {um:.2}x, range {ulo:.2}–{uhi:.2}x");
    if matched.is_empty() {
        return (
            format!("{what}: no round placed both pairs alike ({all})"),
            Verdict::on(um, holds(um)),
        );
    }
    let m = median(matched);
    let (lo, hi) = min_max(matched);
    let missing = matched.iter().filter(|&&r| !holds(r)).count();
    let p = sign_test_p(missing, matched.len());
    let verdict = if holds(m) {
        Verdict::Holds
    } else if p >= 0.05 {
        Verdict::Tie
    } else {
        Verdict::Missed
    };
    (
        format!(
            "{what}: {m:.3}x, the median of {n} placement-matched comparisons (range \
             {lo:.2}–{hi:.2}x; {missing} of {n} past the bound, sign test p = {p:.2}; {all})",
            n = matched.len()
        ),
        verdict,
    )
}
