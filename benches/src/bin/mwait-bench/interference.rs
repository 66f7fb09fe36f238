//! The interference section: compute workers beside a slow pair, with the noise
//! floor of a second futex pair and the targets against futex.

use crate::judge::{matched_target, row, rows, Bound, Row};
use crate::report::{md, num, Out};
use crate::Ctx;
use mwait_benches::scenarios;
use mwait_benches::{
    in_main_placement, matched_ratios, median, min_max, paired_ratio, round_order, stats,
};
use mwait_support::compute_throughput_process;
use std::fmt::Write as _;
use std::time::Duration;

/// The interference scenario's measures, per implementation and round.
struct InterferenceRuns {
    /// Compute workers beside each pair.
    workers: usize,
    thr: Vec<Row>,
    cpu: Vec<Row>,
    wake: Vec<Row>,
    /// Per implementation, per round: wake p50 on the producer's CPU and elsewhere
    /// (NaN where that placement was rare in the round).
    placed: Vec<Vec<[f64; 2]>>,
    /// Per implementation, per round: the share of the wakes on the producer's CPU.
    share: Vec<Vec<f64>>,
    /// A second futex pair in every round, futex against itself: the noise floor
    /// of the wake and throughput comparisons (wake p50 by placement, throughput in
    /// the slot of the round's main placement).
    futex_again: Vec<[f64; 2]>,
    futex_again_thr: Vec<[f64; 2]>,
    /// The spread of the workers-alone throughput across rounds, % of its median.
    base_spread: f64,
}

/// `interference`: compute workers beside a slow pair: the measures, the table,
/// the noise floor and the targets on the waitcell-against-futex comparisons.
pub fn run(o: &mut Out, ctx: &Ctx) {
    let runs = measure_interference(ctx);
    interference_table(o, &runs);
    let all = &ctx.all;
    let placed_of = |name: &str| {
        all.iter()
            .position(|(n, _)| n == name)
            .map_or(&[][..], |i| &runs.placed[i][..])
    };
    // Throughput is one number per round: it goes in the slot of the round's main
    // placement (most wakes on the producer's CPU, or most elsewhere).
    let by_placement = |name: &str| -> Vec<[f64; 2]> {
        let (Some(i), t) = (
            all.iter().position(|(n, _)| n == name),
            row(&runs.thr, name),
        ) else {
            return Vec::new();
        };
        t.iter()
            .zip(&runs.share[i])
            .map(|(&t, &sh)| in_main_placement(t, sh))
            .collect()
    };
    interference_noise(
        o,
        &matched_ratios(&runs.futex_again, placed_of("futex")),
        &matched_ratios(&runs.futex_again_thr, &by_placement("futex")),
    );
    o.target(matched_target(
        "interference throughput >= 0.98x futex's",
        &matched_ratios(&by_placement("waitcell"), &by_placement("futex")),
        paired_ratio(row(&runs.thr, "waitcell"), row(&runs.thr, "futex")),
        Bound::AtLeast(0.98),
    ));
    o.target(matched_target(
        "interference wake p50 <= futex's",
        &matched_ratios(placed_of("waitcell"), placed_of("futex")),
        paired_ratio(row(&runs.wake, "waitcell"), row(&runs.wake, "futex")),
        Bound::AtMost(1.0),
    ));
}

/// The interference rounds; the workers alone are one more entry of each round,
/// the baseline of that round's throughput ratios.
fn measure_interference(ctx: &Ctx) -> InterferenceRuns {
    let (all, rounds) = (&ctx.all, ctx.b.rounds);
    let n = all.len();
    let mut runs = InterferenceRuns {
        workers: ctx.process_cpus,
        thr: Vec::new(),
        cpu: Vec::new(),
        wake: Vec::new(),
        placed: vec![Vec::new(); n],
        share: vec![Vec::new(); n],
        futex_again: Vec::new(),
        futex_again_thr: Vec::new(),
        base_spread: f64::NAN,
    };
    if !ctx.runs("interference") {
        return runs;
    }
    eprintln!("interference ...");
    let futex_at = all.iter().position(|(name, _)| name == "futex");
    let per = ctx.b.interference / rounds;
    let mut thr: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut wake: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut base: Vec<f64> = Vec::new();
    let gap = Duration::from_micros(50);
    for r in 0..rounds as usize {
        let mut raw = vec![f64::NAN; n];
        let mut round_base = f64::NAN;
        let mut again = (f64::NAN, 0.0);
        for i in round_order(n + 2, r) {
            if i == n {
                round_base = compute_throughput_process(runs.workers, per);
                continue;
            }
            if i == n + 1 {
                if let Some(f) = futex_at {
                    let (t, pair) = scenarios::interference(all[f].1, gap, per);
                    runs.futex_again
                        .push([pair.p50_where(true), pair.p50_where(false)]);
                    again = (t, pair.share_on_producer_cpu());
                }
                continue;
            }
            let (t, mut pair) = scenarios::interference(all[i].1, gap, per);
            raw[i] = t;
            cpu[i].push(pair.waiter_cpu);
            runs.placed[i].push([pair.p50_where(true), pair.p50_where(false)]);
            runs.share[i].push(pair.share_on_producer_cpu());
            wake[i].push(stats(&mut pair.wake_ns).p50);
        }
        for (i, t) in raw.into_iter().enumerate() {
            thr[i].push(t / round_base);
        }
        if futex_at.is_some() {
            let t = again.0 / round_base;
            runs.futex_again_thr.push(in_main_placement(t, again.1));
        }
        base.push(round_base);
    }
    let (lo, hi) = min_max(&base);
    runs.base_spread = (hi - lo) / median(&base) * 100.0;
    runs.thr = rows(all, thr);
    runs.cpu = rows(all, cpu);
    runs.wake = rows(all, wake);
    runs
}

/// The interference table: throughput, waiter CPU, wake latency split by placement.
fn interference_table(o: &mut Out, runs: &InterferenceRuns) {
    md!(
        o,
        "## Compute workers beside a slow pair (`interference`)\n"
    );
    md!(
        o,
        "{} compute threads in a separate process (the seeds' load was a kernel build) \
         fill the CPUs; a producer stores every ~50 µs and a waiter waits for each store. \
         Throughput is relative to the workers alone in the same round (the workers alone \
         ranged over {:.1} % of their median across rounds: this run's noise). \
         A parked waiter's wake latency depends first on where the scheduler wakes it: \
         on the producer's CPU or on the other one, where it must preempt a compute \
         worker. The last three columns split the wakes that way (medians of the rounds \
         in which that placement made at least a fifth of the wakes).\n",
        runs.workers,
        runs.base_spread
    );
    md!(o, "| impl | worker throughput ratio | its range across rounds | waiter CPU | wake p50 ns | its range | wakes on the producer's CPU | wake p50 there | wake p50 elsewhere |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let placed_median =
        |i: usize, c: usize| median(&runs.placed[i].iter().map(|p| p[c]).collect::<Vec<_>>());
    for (i, ((t, c), w)) in runs.thr.iter().zip(&runs.cpu).zip(&runs.wake).enumerate() {
        let share = &runs.share[i];
        let share_mean = share.iter().sum::<f64>() / share.len().max(1) as f64;
        md!(
            o,
            "| {} | {:.3} | {} | {:.3} | {:.0} | {} | {:.0} % | {:.0} | {:.0} |",
            t.name,
            t.median(),
            t.range(3),
            c.median(),
            w.median(),
            w.range(0),
            share_mean * 100.0,
            placed_median(i, 0),
            placed_median(i, 1),
        );
        o.json.push(format!(
            "{{\"bench\": \"interference\", \"impl\": \"{}\", \"throughput_ratio\": {}, \"waiter_cpu\": {}, \"wake_p50_ns\": {}, \"wake_share_on_producer_cpu\": {}, \"wake_p50_on_producer_cpu_ns\": {}, \"wake_p50_elsewhere_ns\": {}, \"rounds\": {}}}",
            t.name, num(t.median()), num(c.median()), num(w.median()), num(share_mean),
            num(placed_median(i, 0)), num(placed_median(i, 1)), t.per_round.len()
        ));
    }
    md!(o);
}

/// The noise of a comparison between two pairs that park: the second futex pair
/// against the first (`wake_aa`, `thr_aa`: their placement-matched ratios).
fn interference_noise(o: &mut Out, wake_aa: &[f64], thr_aa: &[f64]) {
    if wake_aa.is_empty() && thr_aa.is_empty() {
        return;
    }
    let aa = |v: &[f64]| {
        let (lo, hi) = min_max(v);
        format!(
            "{:.3}x (median of {} placement-matched comparisons, range {lo:.2}–{hi:.2}x)",
            median(v),
            v.len()
        )
    };
    md!(
        o,
        "The noise of a comparison between two pairs that park: a second futex pair ran \
         in every round, and against the first, compared as the targets below compare \
         waitcell with futex, its wake p50 ratio was {} and its throughput ratio {}. \
         A round gives one wake comparison for each placement both pairs saw in at least \
         a fifth of their wakes, and one throughput comparison if most of both pairs' \
         wakes were placed alike.\n",
        aa(wake_aa),
        aa(thr_aa)
    );
}
