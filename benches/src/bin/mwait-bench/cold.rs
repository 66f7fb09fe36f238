//! The cold-start section: every cold scenario of [`mwait_benches::cold`] in fresh
//! child processes, in interleaved rounds, and the targets judged on them.

use crate::judge::{in_process_target, ratio_target, Bound, Target};
use crate::report::{md, num, Out};
use crate::Ctx;
use mwait_benches::cold::{self, Measures, Scenario};
use mwait_benches::{median, min_max, round_order};
use std::fmt::Write as _;
use std::time::Duration;

/// How much one cold run measures.
pub struct ColdBudget {
    /// Rounds: each starts one child per scenario and mechanism.
    pub rounds: u32,
    /// The steady state of a ping-pong child, after its first round trips.
    pub steady: Duration,
    /// A long_wait child.
    pub long_wait: Duration,
    /// Episodes of a barrier child, its first [`cold::FIRST`] included.
    pub barrier_episodes: u32,
}

/// What the cold children measured: per scenario, per mechanism (in
/// [`Scenario::impls`] order), one [`Measures`] per round (empty where the child
/// failed), and the failures.
#[derive(Default)]
pub struct ColdRuns {
    runs: Vec<(Scenario, Vec<Vec<Measures>>)>,
    failures: Vec<String>,
}

impl ColdRuns {
    /// The per-round values of `key` for the mechanism `name` in `scenario` (NaN
    /// for a round whose child failed).
    pub fn series(&self, scenario: Scenario, name: &str, key: &str) -> Vec<f64> {
        let Some((_, per_impl)) = self.runs.iter().find(|(s, _)| *s == scenario) else {
            return Vec::new();
        };
        let Some(i) = scenario.impls().iter().position(|n| *n == name) else {
            return Vec::new();
        };
        per_impl[i].iter().map(|m| m.get(key)).collect()
    }
}

/// `cold`: every latency scenario again, cold, in child processes (see
/// [`mwait_benches::cold`]), with the targets judged on them.
pub fn run(o: &mut Out, ctx: &Ctx) {
    if !ctx.runs("cold") {
        o.targets.extend(targets(&ColdRuns::default()));
        return;
    }
    eprintln!("cold ...");
    let runs = measure(&ctx.b.cold);
    section(o, &runs, &ctx.b.cold);
    o.targets.extend(targets(&runs));
}

/// Runs every cold scenario, `budget.rounds` times, each mechanism of a scenario
/// in an order rotated from round to round.
fn measure(budget: &ColdBudget) -> ColdRuns {
    let mut runs: Vec<(Scenario, Vec<Vec<Measures>>)> = Scenario::ALL
        .into_iter()
        .map(|s| (s, vec![Vec::new(); s.impls().len()]))
        .collect();
    let mut failures = Vec::new();
    for r in 0..budget.rounds as usize {
        for (scenario, per_impl) in &mut runs {
            let amount = match scenario {
                Scenario::Barrier => u64::from(budget.barrier_episodes),
                Scenario::LongWait | Scenario::LongWaitFirst => budget.long_wait.as_millis() as u64,
                Scenario::FirstWake => 0,
                _ => budget.steady.as_millis() as u64,
            };
            let impls = scenario.impls();
            for i in round_order(impls.len(), r) {
                let args = cold::child_args(*scenario, impls[i], amount);
                let got = mwait_support::run_self(&args)
                    .and_then(|out| Measures::parse(out.trim()))
                    .unwrap_or_else(|e| {
                        failures.push(format!("{} {}: {e}", scenario.name(), impls[i]));
                        Measures::default()
                    });
                per_impl[i].push(got);
            }
        }
    }
    ColdRuns { runs, failures }
}

/// The median over the rounds, with the range.
fn summary(v: &[f64], digits: usize) -> (String, String) {
    let (lo, hi) = min_max(v);
    (
        format!("{:.digits$}", median(v)),
        format!("{lo:.digits$}–{hi:.digits$}"),
    )
}

/// "spin / hardware / park" shares from the runs' tier counts, or "n/a" where no
/// wait went through the crate (see [`cold::tier_shares`]).
fn shares(runs: &ColdRuns, scenario: Scenario, name: &str) -> String {
    let share = |key: &str| median(&runs.series(scenario, name, key));
    let [s, h, p] = ["spin_share", "hardware_share", "park_share"].map(share);
    if s.is_nan() {
        return "n/a".into();
    }
    format!(
        "{:.0} % / {:.0} % / {:.0} %",
        s * 100.0,
        h * 100.0,
        p * 100.0
    )
}

/// The section: ping-pong arrangements, long_wait and barrier, cold.
fn section(o: &mut Out, runs: &ColdRuns, budget: &ColdBudget) {
    md!(o, "## Cold starts (`cold`)\n");
    md!(
        o,
        "Each value is the median over {} rounds; each round starts a fresh process per \
         scenario and mechanism (`mwait-bench {} SCENARIO IMPL AMOUNT`), with no warm-up \
         and no call to mwait's selection before the threads exist, each thread pinned \
         (where the scenario pins) before its first wait. First {}: the p50 of the first \
         {} round trips (episodes, for the barrier); steady: the p50 of the round trips of \
         the next {} ms (the barrier's other {} episodes; on two CPUs, half of those ms \
         go to the interleaved PAUSE slices described below the table). A ping-pong sample is the mean \
         of {} consecutive round trips (`mwait_benches::ROUND_TRIP_BATCH`). Tier shares (the share of waits \
         that ended in spin / hardware / park): from the child's `mwait::stats()`, n/a for \
         the mechanisms that do not wait through mwait.\n",
        budget.rounds,
        cold::COLD_ARG,
        cold::FIRST,
        cold::FIRST,
        budget.steady.as_millis(),
        budget.barrier_episodes.saturating_sub(cold::FIRST),
        mwait_benches::ROUND_TRIP_BATCH,
    );
    md!(o, "| scenario | impl | first {} p50 ns | steady p50 ns | steady range across rounds | tier shares |", cold::FIRST);
    md!(o, "| --- | --- | ---: | ---: | ---: | --- |");
    let pingpongs = [
        Scenario::Pinned,
        Scenario::Unpinned,
        Scenario::LatePartner,
        Scenario::AfterPause,
        Scenario::SameCpu,
    ];
    for s in pingpongs {
        for name in s.impls() {
            let first = runs.series(s, name, "first_p50_ns");
            let steady = runs.series(s, name, "steady_p50_ns");
            let (f, _) = summary(&first, 0);
            let (st, range) = summary(&steady, 0);
            let tiers = shares(runs, s, name);
            md!(
                o,
                "| {} | {name} | {f} | {st} | {range} | {tiers} |",
                s.describe()
            );
            o.json.push(format!(
                "{{\"bench\": \"cold\", \"scenario\": \"{}\", \"impl\": \"{name}\", \"first_p50_ns\": {}, \"steady_p50_ns\": {}, \"rounds\": {}}}",
                s.name(), num(median(&first)), num(median(&steady)), first.len()
            ));
        }
    }
    md!(o);
    in_process_table(o, runs);
    long_wait_table(o, runs);
    first_wake_table(o, runs);
    barrier_table(o, runs);
    if !runs.failures.is_empty() {
        md!(
            o,
            "Cold children that failed (their rounds count as missing):\n"
        );
        for f in &runs.failures {
            md!(o, "- {}", f.replace('\n', " "));
        }
        md!(o);
    }
}

/// The ping-pongs' ratios to the PAUSE loop that each cold child measured beside its
/// mechanism: what the pingpong targets are judged on.
fn in_process_table(o: &mut Out, runs: &ColdRuns) {
    md!(
        o,
        "Each ping-pong child on two CPUs also interleaves its steady phase, {} ms slices \
         at a time, with a PAUSE ping-pong in the same process: where the child pins, on \
         its own two threads and cells (plain stores and PAUSE loops on the cells' values, \
         since a round trip depends on where its lines live), and in the unpinned variant \
         on a pair of its own pinned to CPUs 0 and 1; the ratios below are taken inside each child (steady: the median of the slices' \
         p50 ratios; first {}: against the median PAUSE slice), so that both sides of a \
         ratio share the host's placement of the vCPUs, which moves between runs. The \
         cold pingpong targets are judged on these.\n",
        mwait_benches::scenarios::SLICE.as_millis(),
        cold::FIRST
    );
    md!(o, "| scenario | impl | first {} / PAUSE | steady / PAUSE | steady ratio range across rounds |", cold::FIRST);
    md!(o, "| --- | --- | ---: | ---: | ---: |");
    for s in [
        Scenario::Pinned,
        Scenario::Unpinned,
        Scenario::LatePartner,
        Scenario::AfterPause,
    ] {
        for name in s.impls() {
            let first = runs.series(s, name, "first_vs_pause");
            let steady = runs.series(s, name, "steady_vs_pause");
            let (lo, hi) = min_max(&steady);
            md!(
                o,
                "| {} | {name} | {:.2}x | {:.2}x | {lo:.2}–{hi:.2}x |",
                s.describe(),
                median(&first),
                median(&steady)
            );
        }
    }
    md!(o);
}

fn long_wait_table(o: &mut Out, runs: &ColdRuns) {
    let [second, first] = [Scenario::LongWait, Scenario::LongWaitFirst];
    md!(o, "Cold {}:\n", second.describe());
    md!(
        o,
        "Each child runs a futex producer and waiter beside its mechanism's, at the same \
         time in one process (producers on CPU 0, waiters on CPU 1, stores half a gap \
         apart), its mechanism's pair started half a gap after the futex pair in one \
         child and half a gap before it in another (the pair started second pays more \
         or less per wake whatever its mechanism: the futex row shows by how much). \
         The last three columns are ratios of the two waiters' CPU times in one child, \
         medians with their ranges across rounds: started second, started first, and \
         the geometric mean of each round's two, which cancels the order's part and is \
         what the target is judged on.\n"
    );
    md!(o, "| impl | waiter CPU (fraction of one CPU) | its range across rounds | wake p50 ns | tier shares | CPU / futex, started second | started first | both orders |");
    md!(o, "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: |");
    for name in second.impls() {
        let mut cpu = runs.series(second, name, "waiter_cpu");
        cpu.extend(runs.series(first, name, "waiter_cpu"));
        let (c, range) = summary(&cpu, 4);
        let (w, _) = summary(&runs.series(second, name, "wake_p50_ns"), 0);
        let ratio = |v: &[f64]| {
            let (lo, hi) = min_max(v);
            format!("{:.2}x ({lo:.2}–{hi:.2}x)", median(v))
        };
        md!(
            o,
            "| {name} | {c} | {range} | {w} | {} | {} | {} | {} |",
            shares(runs, second, name),
            ratio(&runs.series(second, name, "cpu_vs_futex")),
            ratio(&runs.series(first, name, "cpu_vs_futex")),
            ratio(&long_wait_both_orders(runs, name))
        );
        o.json.push(format!(
            "{{\"bench\": \"cold\", \"scenario\": \"{}\", \"impl\": \"{name}\", \"waiter_cpu\": {}, \"rounds\": {}}}",
            second.name(), num(median(&cpu)), cpu.len()
        ));
    }
    md!(o);
}

/// Per round, the geometric mean of `name`'s cold long_wait ratios to futex started
/// second and started first (rounds where either child failed are left out).
fn long_wait_both_orders(runs: &ColdRuns, name: &str) -> Vec<f64> {
    let second = runs.series(Scenario::LongWait, name, "cpu_vs_futex");
    let first = runs.series(Scenario::LongWaitFirst, name, "cpu_vs_futex");
    second
        .iter()
        .zip(&first)
        .map(|(a, b)| (a * b).sqrt())
        .filter(|r| r.is_finite())
        .collect()
}

fn first_wake_table(o: &mut Out, runs: &ColdRuns) {
    let s = Scenario::FirstWake;
    md!(o, "Cold {}:\n", s.describe());
    md!(
        o,
        "Each child's main thread makes the process's first wait, which parks; a \
         thread it started stores {} ms later. The value is how long after that store \
         the wait returned (an `Instant` read on each side): a first park pays whatever \
         one-time work the crate does there.\n",
        cold::FIRST_WAKE_DELAY.as_millis()
    );
    md!(
        o,
        "| impl | returned after the store, µs | its range across rounds |"
    );
    md!(o, "| --- | ---: | ---: |");
    for name in s.impls() {
        let ns = runs.series(s, name, "first_wake_ns");
        let us: Vec<f64> = ns.iter().map(|n| n / 1e3).collect();
        let (m, range) = summary(&us, 0);
        md!(o, "| {name} | {m} | {range} |");
        o.json.push(format!(
            "{{\"bench\": \"cold\", \"scenario\": \"{}\", \"impl\": \"{name}\", \"first_wake_ns\": {}, \"rounds\": {}}}",
            s.name(), num(median(&ns)), ns.len()
        ));
    }
    md!(o);
}

fn barrier_table(o: &mut Out, runs: &ColdRuns) {
    let s = Scenario::Barrier;
    md!(o, "Cold {}:\n", s.describe());
    md!(
        o,
        "| impl | first {} episodes, ns per episode | steady ns per episode | its range across rounds | tier shares |",
        cold::FIRST
    );
    md!(o, "| --- | ---: | ---: | ---: | --- |");
    for name in s.impls() {
        let first = runs.series(s, name, "first_ns_per_episode");
        let steady = runs.series(s, name, "steady_ns_per_episode");
        let (f, _) = summary(&first, 0);
        let (st, range) = summary(&steady, 0);
        md!(
            o,
            "| {name} | {f} | {st} | {range} | {} |",
            shares(runs, s, name)
        );
        o.json.push(format!(
            "{{\"bench\": \"cold\", \"scenario\": \"{}\", \"impl\": \"{name}\", \"first_ns_per_episode\": {}, \"steady_ns_per_episode\": {}, \"rounds\": {}}}",
            s.name(), num(median(&first)), num(median(&steady)), first.len()
        ));
    }
    md!(o);
}

/// The report's targets judged on the cold runs, on per-round paired ratios.
fn targets(runs: &ColdRuns) -> Vec<Target> {
    let mut t = Vec::new();
    let ratio = |s: Scenario, key: &str, base: &str, bound: f64, what: String| {
        ratio_target(
            &what,
            &runs.series(s, "waitcell", key),
            &runs.series(s, base, key),
            Bound::AtMost(bound),
        )
    };
    for (s, label) in [
        (Scenario::Pinned, "pinned before the first wait"),
        (Scenario::Unpinned, "unpinned"),
        (Scenario::LatePartner, "partner 2 ms late"),
        (Scenario::AfterPause, "after a 2 ms pause mid-run"),
    ] {
        t.push(if s == Scenario::Unpinned {
            // Two unpinned threads that the scheduler starts on one CPU park in
            // turn until it separates them, whatever waits: mwait does not move
            // them unless asked (`WaitPolicy::move_apart`), so the first round
            // trips are judged against a futex pair in the same arrangement.
            ratio(
                s,
                "first_p50_ns",
                "futex",
                1.0,
                format!(
                    "cold pingpong, {label}: first {} p50 <= futex's (same arrangement)",
                    cold::FIRST
                ),
            )
        } else {
            in_process_target(
                &format!(
                    "cold pingpong, {label}: first {} p50 <= 2x pause",
                    cold::FIRST
                ),
                &runs.series(s, "waitcell", "first_vs_pause"),
                Bound::AtMost(2.0),
            )
        });
        t.push(in_process_target(
            &format!("cold pingpong, {label}: steady p50 <= 1.05x pause"),
            &runs.series(s, "waitcell", "steady_vs_pause"),
            Bound::AtMost(1.05),
        ));
    }
    t.push(ratio(
        Scenario::SameCpu,
        "steady_p50_ns",
        "futex",
        1.2,
        "cold same_cpu steady p50 <= 1.2x futex".into(),
    ));
    t.push(in_process_target(
        "cold long_wait waiter CPU <= 1.05x futex",
        &long_wait_both_orders(runs, "waitcell"),
        Bound::AtMost(1.05),
    ));
    // A first park that made the `membarrier` registration itself would wait out an
    // RCU grace period (milliseconds) before it could be woken; twice futex's
    // leaves room for the one-time detection, a fraction of that.
    t.push(ratio(
        Scenario::FirstWake,
        "first_wake_ns",
        "futex",
        2.0,
        "cold first wake (the process's first wait, parked) <= 2x futex's".into(),
    ));
    t.push(ratio_target(
        "cold barrier faster than std Barrier (steady ns per episode)",
        &runs.series(Scenario::Barrier, "waitcell", "steady_ns_per_episode"),
        &runs.series(Scenario::Barrier, "std-barrier", "steady_ns_per_episode"),
        Bound::Below(1.0),
    ));
    t
}
