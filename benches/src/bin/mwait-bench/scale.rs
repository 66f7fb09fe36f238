//! The scale section (`scale`): several pairs at once, a broadcast, a barrier of
//! every CPU and the busy process, sized from the CPUs the process may use
//! ([`mwait_benches::scale`]), with their targets.

use crate::judge::{in_process_target, ratio_target, Bound, Target};
use crate::report::{md, num, Out};
use crate::Ctx;
use mwait_benches::cold::Measures;
use mwait_benches::scale::{self, BUSY_ARG, BUSY_MODES};
use mwait_benches::{impls, median, min_max, round_order, stats};
use std::fmt::Write as _;
use std::time::Duration;

/// The mechanisms of the pairs scenario: the default WaitCell, interleaved with
/// PAUSE pairs, and futex pairs.
const PAIRS: [&str; 3] = ["waitcell", "pause", "futex"];
/// The mechanisms of the broadcast.
const BROADCAST: [&str; 3] = ["waitcell", "futex", "std-condvar"];

/// What the scale scenarios run for, per mechanism and round.
pub struct ScaleBudget {
    rounds: u32,
    pairs: Duration,
    broadcast: Duration,
    barrier_episodes: u32,
    busy: Duration,
}

impl ScaleBudget {
    /// The budgets at `scale` (1: quick).
    pub fn new(scale: u32) -> ScaleBudget {
        ScaleBudget {
            rounds: if scale == 1 { 3 } else { 7 },
            pairs: Duration::from_millis(600) * scale,
            broadcast: Duration::from_millis(1_500) * scale,
            barrier_episodes: 20_000 * scale,
            busy: Duration::from_millis(1_500) * scale,
        }
    }
}

/// Per mechanism, one value (or pair of values) per round.
type Series<T> = Vec<(String, Vec<T>)>;

/// Everything the scale scenarios measured.
#[derive(Default)]
pub struct ScaleRuns {
    cpus: usize,
    /// p50 and p99 (ns) of the round trips of every pair together, per round.
    pairs: Series<[f64; 2]>,
    /// Per round, the median over slices of waitcell's pairs' p50 over the PAUSE
    /// pairs' interleaved with them.
    pairs_vs_pause: Vec<f64>,
    /// p50 and p99 (ns) of the last waiter's wake-up, per round.
    broadcast: Series<[f64; 2]>,
    /// ns per barrier episode, per round.
    barrier: Series<f64>,
    /// The busy-process children's measures, per mode and round.
    busy: Series<Measures>,
    failures: Vec<String>,
}

impl ScaleRuns {
    fn of<'a, T>(series: &'a Series<T>, name: &str) -> &'a [T] {
        series
            .iter()
            .find(|(n, _)| n == name)
            .map_or(&[], |(_, v)| &v[..])
    }
}

/// The section: measures (unless `--only` leaves it out), writes its tables and
/// judges its targets.
pub fn run(o: &mut Out, ctx: &Ctx) {
    if !ctx.runs("scale") {
        // No measurement, on the CPUs the targets name.
        let none = ScaleRuns {
            cpus: ctx.process_cpus,
            ..ScaleRuns::default()
        };
        o.targets.extend(targets(&none));
        return;
    }
    eprintln!("scale ...");
    let runs = measure(&ctx.b.scale, ctx.process_cpus);
    section(o, &runs, &ctx.b.scale);
    o.targets.extend(targets(&runs));
}

/// Runs every scale scenario in interleaved rounds on the process's `cpus` CPUs.
fn measure(b: &ScaleBudget, cpus: usize) -> ScaleRuns {
    let make = |name: &str| impls::by_name(name).unwrap_or_else(|| panic!("no mechanism {name}"));
    let mut runs = ScaleRuns {
        cpus,
        pairs: PAIRS.iter().map(|n| (n.to_string(), Vec::new())).collect(),
        broadcast: BROADCAST
            .iter()
            .map(|n| (n.to_string(), Vec::new()))
            .collect(),
        barrier: scale::barriers_n()
            .iter()
            .map(|(n, _)| (n.to_string(), Vec::new()))
            .collect(),
        busy: BUSY_MODES
            .iter()
            .map(|m| (m.name.to_string(), Vec::new()))
            .collect(),
        pairs_vs_pause: Vec::new(),
        failures: Vec::new(),
    };
    let p50_p99 = |mut v: Vec<u64>| {
        let s = stats(&mut v);
        [s.p50, s.p99]
    };
    for r in 0..b.rounds as usize {
        for i in round_order(2, r) {
            if i == 0 {
                let m = scale::pairs_beside_pause(make("waitcell"), cpus, b.pairs / b.rounds);
                runs.pairs[0].1.push(p50_p99(m.mine));
                runs.pairs[1].1.push(p50_p99(m.pause));
                runs.pairs_vs_pause.push(m.median_ratio);
            } else {
                let futex = scale::pairs(make("futex"), cpus, b.pairs / b.rounds);
                runs.pairs[2].1.push(p50_p99(futex));
            }
        }
        for i in round_order(BROADCAST.len(), r) {
            let last = scale::broadcast(make(BROADCAST[i]), cpus, b.broadcast / b.rounds);
            runs.broadcast[i].1.push(p50_p99(last));
        }
        let barriers = scale::barriers_n();
        for i in round_order(barriers.len(), r) {
            let ns = scale::barrier_all(barriers[i].1, cpus, b.barrier_episodes / b.rounds);
            runs.barrier[i].1.push(ns);
        }
        for i in round_order(BUSY_MODES.len(), r) {
            let mode = &BUSY_MODES[i];
            let args = [
                BUSY_ARG.to_string(),
                mode.name.to_string(),
                (b.busy / b.rounds).as_millis().to_string(),
            ];
            let env: Vec<(&str, &str)> = mode.env.into_iter().collect();
            match mwait_support::run_self_with(&args, &env)
                .and_then(|out| Measures::parse(out.trim()))
            {
                Ok(m) => runs.busy[i].1.push(m),
                Err(e) => runs.failures.push(e),
            }
        }
    }
    runs
}

/// "median (lo–hi)" of per-round values, with `digits` decimals.
fn summary(v: &[f64], digits: usize) -> String {
    let (lo, hi) = min_max(v);
    format!("{:.digits$} ({lo:.digits$}–{hi:.digits$})", median(v))
}

/// The section's tables.
fn section(o: &mut Out, runs: &ScaleRuns, b: &ScaleBudget) {
    let cpus = runs.cpus;
    md!(o, "## Scale (`scale`)\n");
    md!(
        o,
        "Sized from the {cpus} CPUs this process may use; {} interleaved rounds, each \
         value the median of the rounds' values with their range. Threads are pinned \
         before their first wait.\n",
        b.rounds
    );
    md!(
        o,
        "**Pairs**: ping-pong pairs at once: {} (pair k on CPUs 2k and 2k+1), each \
         sample the mean of {} round trips; p50 and p99 over every pair's samples. \
         The waitcell pairs alternate, {} ms slices at a time and all pairs at once, \
         with fresh PAUSE pairs on the same CPUs (the pause row); the median over \
         slices of their p50 ratio, the target's measure, was {} per round. The futex \
         pairs run on their own.\n",
        scale::pair_count(cpus),
        mwait_benches::ROUND_TRIP_BATCH,
        mwait_benches::scenarios::SLICE.as_millis(),
        summary(&runs.pairs_vs_pause, 3)
    );
    percentile_table(
        o,
        &runs.pairs,
        ("scale-pairs", "pairs", scale::pair_count(cpus)),
        "",
    );
    md!(
        o,
        "\n**Broadcast**: one notifier (CPU 0) and waiters on the other CPUs ({}), all \
         on one signal; every {} µs the notifier publishes a value (WaitCell: `store`, which \
         wakes every parked waiter; futex: a wake of all; std Condvar: `notify_all`). \
         The time from just before the store to the moment the last waiter saw it.\n",
        scale::broadcast_waiters(cpus),
        scale::BROADCAST_GAP.as_micros()
    );
    percentile_table(
        o,
        &runs.broadcast,
        ("scale-broadcast", "waiters", scale::broadcast_waiters(cpus)),
        "last waiter ",
    );
    md!(
        o,
        "\n**Barrier**: {} parties (party i on CPU i), the heavy work turning from party \
         to party by episode.\n",
        cpus.max(2)
    );
    md!(o, "| impl | ns per episode |\n| --- | ---: |");
    for (name, v) in &runs.barrier {
        md!(o, "| {name} | {} |", summary(v, 0));
        o.json.push(format!(
            "{{\"bench\": \"scale-barrier\", \"impl\": \"{name}\", \"parties\": {}, \"ns_per_episode\": {}, \"rounds\": {}}}",
            cpus.max(2), num(median(v)), v.len()
        ));
    }
    busy_table(o, runs);
    if !runs.failures.is_empty() {
        md!(o, "Busy-process children that failed:\n");
        for f in &runs.failures {
            md!(o, "- {}", f.replace('\n', " "));
        }
        md!(o);
    }
}

fn busy_table(o: &mut Out, runs: &ScaleRuns) {
    let cpus = runs.cpus;
    md!(
        o,
        "\n**Busy process**: a child process per mode and round: compute threads \
         ({}, on CPUs 2, 3, ... modulo {cpus}) beside a pair (producer on CPU 0, waiter \
         on CPU 1) that hands a value over every {} ms; in the burst modes the producer \
         publishes {} more values back to back once the waiter has seen the first. \
         waitcell: the default, whose parks issue `membarrier` (it interrupts every CPU \
         running a thread of the process) unless the cell keeps its `FENCED` bit, which \
         a waiter that parks for every value does: one `membarrier` in the whole run \
         (strace), while the bursts clear the bit and bring `membarrier` back on a share \
         of the parks; xchg: the same in a process started with `MWAIT_MEMBARRIER=0` \
         (the notify is an exchange, a park no `membarrier`); futex: a plain futex pair. \
         Ratios are to the futex mode with the same bursts, round by round.\n",
        scale::busy_workers(cpus),
        scale::BUSY_PERIOD.as_millis(),
        scale::BURST - 1
    );
    md!(
        o,
        "| mode | compute iterations/s | / futex, per round | values seen | waits that parked |"
    );
    md!(o, "| --- | ---: | ---: | ---: | ---: |");
    for (name, _) in &runs.busy {
        let thr = busy_series(runs, name, "compute_per_s");
        let ratios = busy_vs_futex(runs, name);
        let parked = busy_series(runs, name, "park_share");
        md!(
            o,
            "| {name} | {} | {} | {} | {} |",
            summary(&thr, 0),
            summary(&ratios, 3),
            summary(&busy_series(runs, name, "handed_over"), 0),
            if name.starts_with("futex") {
                "n/a".to_string()
            } else {
                summary(&parked, 3)
            }
        );
        o.json.push(format!(
            "{{\"bench\": \"scale-busy\", \"impl\": \"{name}\", \"workers\": {}, \"compute_per_s\": {}, \"vs_futex\": {}, \"rounds\": {}}}",
            scale::busy_workers(cpus), num(median(&thr)), num(median(&ratios)), thr.len()
        ));
    }
    md!(o);
}

/// The futex mode that `mode` is compared with: the one with the same bursts.
fn futex_of(mode: &str) -> &'static str {
    if mode.ends_with("-burst") {
        "futex-burst"
    } else {
        "futex"
    }
}

/// Per round, `mode`'s compute throughput over its futex mode's.
fn busy_vs_futex(runs: &ScaleRuns, mode: &str) -> Vec<f64> {
    let base = busy_series(runs, futex_of(mode), "compute_per_s");
    busy_series(runs, mode, "compute_per_s")
        .iter()
        .zip(&base)
        .map(|(a, b)| a / b)
        .collect()
}

/// A table of per-round p50 and p99 (ns) per mechanism, and their JSON lines:
/// `(bench, count_key, count)` name the bench and its size, `what` precedes "p50"
/// in the column heads.
fn percentile_table(
    o: &mut Out,
    series: &Series<[f64; 2]>,
    (bench, count_key, count): (&str, &str, usize),
    what: &str,
) {
    md!(
        o,
        "| impl | {what}p50 ns | {what}p99 ns |\n| --- | ---: | ---: |"
    );
    for (name, v) in series {
        let p50: Vec<f64> = v.iter().map(|x| x[0]).collect();
        let p99: Vec<f64> = v.iter().map(|x| x[1]).collect();
        md!(
            o,
            "| {name} | {} | {} |",
            summary(&p50, 0),
            summary(&p99, 0)
        );
        o.json.push(format!(
            "{{\"bench\": \"{bench}\", \"impl\": \"{name}\", \"{count_key}\": {count}, \"p50_ns\": {}, \"p99_ns\": {}, \"rounds\": {}}}",
            num(median(&p50)), num(median(&p99)), v.len()
        ));
    }
}

fn busy_series(runs: &ScaleRuns, mode: &str, key: &str) -> Vec<f64> {
    ScaleRuns::of(&runs.busy, mode)
        .iter()
        .map(|m| m.get(key))
        .collect()
}

/// The scale targets, on per-round paired ratios.
fn targets(runs: &ScaleRuns) -> Vec<Target> {
    let cpus = runs.cpus;
    let col = |series: &Series<[f64; 2]>, name: &str, k: usize| -> Vec<f64> {
        ScaleRuns::of(series, name).iter().map(|x| x[k]).collect()
    };
    vec![
        in_process_target(
            &format!(
                "scale: pairs at once ({}), p50 <= 1.1x PAUSE pairs (interleaved with them)",
                scale::pair_count(cpus)
            ),
            &runs.pairs_vs_pause,
            Bound::AtMost(1.1),
        ),
        ratio_target(
            &format!(
                "scale: broadcast (waiters: {}), last waiter's p99 <= futex's",
                scale::broadcast_waiters(cpus)
            ),
            &col(&runs.broadcast, "waitcell", 1),
            &col(&runs.broadcast, "futex", 1),
            Bound::AtMost(1.0),
        ),
        ratio_target(
            &format!(
                "scale: barrier of {} CPUs faster than std Barrier",
                cpus.max(2)
            ),
            ScaleRuns::of(&runs.barrier, "waitcell"),
            ScaleRuns::of(&runs.barrier, "std-barrier"),
            Bound::Below(1.0),
        ),
    ]
    .into_iter()
    .chain(["waitcell", "waitcell-burst"].map(|mode| {
        ratio_target(
            &format!(
                "scale: busy process ({mode}, compute threads: {}), compute throughput >= 0.98x futex's",
                scale::busy_workers(cpus)
            ),
            &busy_series(runs, mode, "compute_per_s"),
            &busy_series(runs, futex_of(mode), "compute_per_s"),
            Bound::AtLeast(0.98),
        )
    }))
    .collect()
}
