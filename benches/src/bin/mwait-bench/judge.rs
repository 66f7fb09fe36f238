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

impl Verdict {
    /// The verdict's name in `summary.json`.
    pub fn key(self) -> &'static str {
        match self {
            Verdict::Holds => "holds",
            Verdict::Tie => "tie",
            Verdict::Missed => "missed",
            Verdict::NoMeasurement => "no_measurement",
        }
    }
}

/// The bound of a target: how its measure must compare with a number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// At most this.
    AtMost(f64),
    /// Below this.
    Below(f64),
    /// At least this.
    AtLeast(f64),
}

impl Bound {
    /// Whether `v` is within the bound.
    pub fn holds(self, v: f64) -> bool {
        match self {
            Bound::AtMost(b) => v <= b,
            Bound::Below(b) => v < b,
            Bound::AtLeast(b) => v >= b,
        }
    }

    /// The comparison and the number, for `summary.json`.
    fn parts(self) -> (&'static str, f64) {
        match self {
            Bound::AtMost(b) => ("<=", b),
            Bound::Below(b) => ("<", b),
            Bound::AtLeast(b) => (">=", b),
        }
    }
}

/// A target as judged in a run: the sentence of the report and the numbers behind
/// it, which `summary.json` carries for other tools.
pub struct Target {
    /// The sentence of the report.
    pub text: String,
    pub verdict: Verdict,
    /// The measure judged (a ratio, or a value in the bound's unit); NaN if none.
    pub value: f64,
    pub bound: Bound,
    /// The smallest and largest of the per-round values behind `value` (NaN where
    /// there are none).
    pub range: (f64, f64),
}

impl Target {
    /// A target judged on `value` alone.
    pub fn on(text: String, value: f64, bound: Bound) -> Target {
        Target {
            text,
            verdict: Verdict::on(value, bound.holds(value)),
            value,
            bound,
            range: (f64::NAN, f64::NAN),
        }
    }

    /// The same target, left unjudged: its section did not run.
    pub fn not_run(self) -> Target {
        Target {
            verdict: Verdict::NoMeasurement,
            ..self
        }
    }

    /// The target as one JSON object (numbers that are not finite as `null`).
    pub fn json(&self) -> String {
        let (op, b) = self.bound.parts();
        let n = |x: f64| {
            if x.is_finite() {
                format!("{x}")
            } else {
                "null".into()
            }
        };
        let text = self.text.replace('\\', "\\\\").replace('"', "\\\"");
        format!(
            "{{\"target\": \"{text}\", \"value\": {}, \"bound\": {{\"op\": \"{op}\", \"value\": {}}}, \"range\": [{}, {}], \"verdict\": \"{}\"}}",
            n(self.value),
            n(b),
            n(self.range.0),
            n(self.range.1),
            self.verdict.key()
        )
    }
}

/// The smaller of `a` and `b`; NaN if either is (`f64::min` would pass the other).
pub fn lesser(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

/// A target on a paired ratio: "`what`: median of N rounds 1.05x (0.98–1.12x)".
pub fn ratio_target(what: &str, a: &[f64], b: &[f64], bound: Bound) -> Target {
    let (m, lo, hi) = paired_ratio(a, b);
    Target {
        text: format!(
            "{what}: {m:.2}x, the median of {} paired rounds (range {lo:.2}–{hi:.2}x)",
            a.len().min(b.len())
        ),
        verdict: Verdict::on(m, bound.holds(m)),
        value: m,
        bound,
        range: (lo, hi),
    }
}

/// A target on ratios measured side by side inside one process, one per round (a
/// cold child's mechanism against the PAUSE loop interleaved with it, a waiter
/// against a futex waiter running beside it): "`what`: median of N rounds 1.05x
/// (0.98–1.12x)".
pub fn in_process_target(what: &str, ratios: &[f64], bound: Bound) -> Target {
    let m = median(ratios);
    let (lo, hi) = min_max(ratios);
    Target {
        text: format!(
            "{what}: {m:.2}x, the median of {} rounds, each a ratio of two mechanisms measured side by side in one process (range {lo:.2}–{hi:.2}x)",
            ratios.len()
        ),
        verdict: Verdict::on(m, bound.holds(m)),
        value: m,
        bound,
        range: (lo, hi),
    }
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
    bound: Bound,
) -> Target {
    let (um, ulo, uhi) = unmatched;
    let all = format!("unmatched: {um:.2}x, range {ulo:.2}–{uhi:.2}x");
    if matched.is_empty() {
        return Target {
            text: format!("{what}: no round placed both pairs alike ({all})"),
            verdict: Verdict::on(um, bound.holds(um)),
            value: um,
            bound,
            range: (ulo, uhi),
        };
    }
    let m = median(matched);
    let (lo, hi) = min_max(matched);
    let missing = matched.iter().filter(|&&r| !bound.holds(r)).count();
    let p = sign_test_p(missing, matched.len());
    let verdict = if bound.holds(m) {
        Verdict::Holds
    } else if p >= 0.05 {
        Verdict::Tie
    } else {
        Verdict::Missed
    };
    Target {
        text: format!(
            "{what}: {m:.3}x, the median of {n} placement-matched comparisons (range \
             {lo:.2}–{hi:.2}x; {missing} of {n} past the bound, sign test p = {p:.2}; {all})",
            n = matched.len()
        ),
        verdict,
        value: m,
        bound,
        range: (lo, hi),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_carries_its_numbers_into_the_summary() {
        let t = ratio_target(
            "x \"quoted\"",
            &[1.0, 2.0, 3.0],
            &[1.0, 1.0, 1.0],
            Bound::AtMost(1.5),
        );
        assert!(t.verdict == Verdict::Missed);
        assert_eq!((t.value, t.range), (2.0, (1.0, 3.0)));
        let j = t.json();
        assert!(j.contains(r#""target": "x \"quoted\": 2.00x"#), "{j}");
        assert!(j.contains(r#""bound": {"op": "<=", "value": 1.5}"#), "{j}");
        assert!(j.contains(r#""range": [1, 3], "verdict": "missed""#), "{j}");
        let none = Target::on("n".into(), f64::NAN, Bound::AtLeast(0.98));
        assert!(none.verdict == Verdict::NoMeasurement);
        assert!(none.json().contains(r#""value": null"#));
    }
}
