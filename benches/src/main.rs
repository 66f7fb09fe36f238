//! `mwait-bench [--quick] [--out DIR]`: runs every scenario side by side and writes
//! `DIR/report.md`, `DIR/summary.json` and `DIR/pingpong.svg` (default DIR:
//! `target/mwait-bench`). `cargo xtask bench` runs it.

use mwait_benches::impls;
use mwait_benches::scenarios::{self, Placement};
use mwait_benches::{
    in_main_placement, matched_ratios, median, min_max, paired_ratio, round_order, sign_test_p,
    stats,
};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

/// Scale of every budget: 1 in quick mode, [`FULL_SCALE`] otherwise.
const FULL_SCALE: u32 = 6;

struct Budgets {
    pingpong: Duration,
    notify: Duration,
    long_wait: Duration,
    interference: Duration,
    barrier_episodes: u32,
    /// Rounds of the interleaved scenarios: each visits every implementation once
    /// with 1/rounds of its budget (see [`mwait_benches::round_order`]).
    rounds: u32,
}

impl Budgets {
    fn new(scale: u32) -> Budgets {
        Budgets {
            pingpong: Duration::from_millis(400) * scale,
            notify: Duration::from_millis(150) * scale,
            long_wait: Duration::from_millis(800) * scale,
            interference: Duration::from_millis(800) * scale,
            barrier_episodes: 25_000 * scale,
            rounds: if scale == 1 { 5 } else { 13 },
        }
    }
}

#[derive(Default)]
struct Out {
    json: Vec<String>,
    md: String,
    svg_series: Vec<(String, Vec<u64>)>,
}

/// One implementation's measure in an interleaved scenario: its value in each
/// round, compared with other implementations round by round.
struct Row {
    name: String,
    per_round: Vec<f64>,
}

impl Row {
    fn median(&self) -> f64 {
        median(&self.per_round)
    }

    /// "lo–hi" of the per-round values, the spread the median hides.
    fn range(&self, digits: usize) -> String {
        let (lo, hi) = min_max(&self.per_round);
        format!("{lo:.digits$}–{hi:.digits$}")
    }
}

/// One row per implementation from its per-round values (`per_round[i]` belongs
/// to `all[i]`).
fn rows(all: &[(String, impls::Make)], per_round: Vec<Vec<f64>>) -> Vec<Row> {
    all.iter()
        .zip(per_round)
        .map(|((name, _), per_round)| Row {
            name: name.clone(),
            per_round,
        })
        .collect()
}

/// The row named `name` (empty if the scenario did not run).
fn row<'a>(rows: &'a [Row], name: &str) -> &'a [f64] {
    rows.iter()
        .find(|r| r.name == name)
        .map_or(&[], |r| &r.per_round[..])
}

/// How a target fared in a run.
#[derive(Clone, Copy, PartialEq)]
enum Verdict {
    Holds,
    /// Past its bound, but by no more than chance explains (see [`matched_target`]).
    Tie,
    Missed,
}

impl Verdict {
    fn of(holds: bool) -> Verdict {
        if holds {
            Verdict::Holds
        } else {
            Verdict::Missed
        }
    }
}

/// A target on a paired ratio: "`what`: median of N rounds 1.05x (0.98–1.12x)".
fn ratio_target(
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
        Verdict::of(holds(m)),
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
fn matched_target(
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
            Verdict::of(holds(um)),
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

fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3}")
    } else {
        "null".into()
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(scenarios::COMPUTE_WORKER_ARG) {
        // The interference load: `--compute-worker THREADS MILLIS` prints iterations/s.
        let workers: usize = args[1].parse().expect("thread count");
        let ms: u64 = args[2].parse().expect("milliseconds");
        println!(
            "{}",
            scenarios::compute_throughput(workers, Duration::from_millis(ms))
        );
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let out_dir = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| "target/mwait-bench".into());
    let only: Option<String> = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1).cloned());
    let run = |bench: &str| only.as_deref().map_or(true, |o| o == bench);
    let b = Budgets::new(if quick { 1 } else { FULL_SCALE });
    let caps = mwait::Capabilities::detect();
    let sel = mwait::selection();
    let mut o = Out::default();

    writeln!(o.md, "# mwait benchmark report\n").unwrap();
    writeln!(
        o.md,
        "Mode: {}. Every number below was measured in this one run, side by side; \
         compare ratios within the run, not with other runs. Machine:\n",
        if quick { "quick" } else { "full" }
    )
    .unwrap();
    writeln!(
        o.md,
        "```\n{caps}\nbackend: {} ({})\n```\n",
        sel.backend, sel.reason
    )
    .unwrap();

    let all = impls::all();

    // Ping-pong, two CPUs and one CPU, in interleaved rounds.
    let rounds = b.rounds;
    writeln!(
        o.md,
        "The latency, waiter-CPU and interference scenarios run in {rounds} interleaved rounds: \
         each round measures every implementation once, in an order rotated from round \
         to round, with 1/{rounds} of its budget. A value below is the median of its \
         rounds, and a target compares two implementations round by round (the median \
         of the per-round ratios), so that a machine whose speed drifts during the run \
         moves both sides of each ratio alike. The ranges show the spread across rounds.\n"
    )
    .unwrap();
    let mut pp: Vec<Row> = Vec::new();
    let mut same: Vec<Row> = Vec::new();
    for (placement, title, bench, dest) in [
        (
            Placement::TwoCpus,
            "Round trip, two threads on two CPUs",
            "pingpong",
            &mut pp,
        ),
        (
            Placement::SameCpu,
            "Round trip, both threads pinned to one CPU",
            "same_cpu",
            &mut same,
        ),
    ] {
        if !run(bench) {
            continue;
        }
        eprintln!("{bench} ...");
        let mut pooled: Vec<Vec<u64>> = vec![Vec::new(); all.len()];
        let mut p50s: Vec<Vec<f64>> = vec![Vec::new(); all.len()];
        for r in 0..rounds as usize {
            for i in round_order(all.len(), r) {
                let mut s = scenarios::pingpong(all[i].1, placement, b.pingpong / rounds, 200);
                p50s[i].push(stats(&mut s).p50);
                pooled[i].extend(s);
            }
        }
        writeln!(o.md, "## {title} (`{bench}`)\n").unwrap();
        writeln!(
            o.md,
            "| impl | p50 ns (median of rounds) | p50 range across rounds | p99 ns (all rounds) | samples |"
        )
        .unwrap();
        writeln!(o.md, "| --- | ---: | ---: | ---: | ---: |").unwrap();
        for (((name, _), mut s), p50s) in all.iter().zip(pooled).zip(p50s) {
            let st = stats(&mut s);
            let row = Row {
                name: name.clone(),
                per_round: p50s,
            };
            writeln!(
                o.md,
                "| {name} | {:.0} | {} | {:.0} | {} |",
                row.median(),
                row.range(0),
                st.p99,
                st.n
            )
            .unwrap();
            o.json.push(format!(
                "{{\"bench\": \"{bench}\", \"impl\": \"{name}\", \"p50_ns\": {}, \"p99_ns\": {}, \"samples\": {}, \"rounds\": {rounds}}}",
                num(row.median()), num(st.p99), st.n
            ));
            if placement == Placement::TwoCpus {
                o.svg_series.push((name.clone(), s));
            }
            dest.push(row);
        }
        writeln!(o.md).unwrap();
    }

    // Notify with nobody waiting.
    eprintln!("notify ...");
    let notify: Vec<(String, f64)> = scenarios::notify_costs(if run("notify") {
        b.notify
    } else {
        Duration::ZERO
    })
    .into_iter()
    .map(|(n, v)| {
        let mut v: Vec<u64> = v.iter().map(|x| (x * 1000.0) as u64).collect();
        (n, stats(&mut v).p50 / 1000.0)
    })
    .collect();
    writeln!(o.md, "## Notify with nobody waiting (`notify`)\n").unwrap();
    writeln!(
        o.md,
        "Median of batches of {} calls, per call.\n",
        scenarios::NOTIFY_BATCH
    )
    .unwrap();
    writeln!(o.md, "| impl | ns per notify |\n| --- | ---: |").unwrap();
    for (n, ns) in &notify {
        writeln!(o.md, "| {n} | {ns:.2} |").unwrap();
        o.json.push(format!(
            "{{\"bench\": \"notify\", \"impl\": \"{n}\", \"ns\": {}}}",
            num(*ns)
        ));
    }
    writeln!(o.md).unwrap();

    // Long waits: CPU while waiting, in interleaved rounds.
    eprintln!("long_wait ...");
    let mut long_cpu: Vec<Row> = Vec::new();
    let mut long_wake: Vec<Row> = Vec::new();
    if run("long_wait") {
        let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); all.len()];
        let mut wake: Vec<Vec<f64>> = vec![Vec::new(); all.len()];
        for r in 0..rounds as usize {
            for i in round_order(all.len(), r) {
                let mut p = scenarios::slow_producer(
                    all[i].1,
                    Duration::from_millis(1),
                    b.long_wait / rounds,
                );
                cpu[i].push(p.waiter_cpu);
                wake[i].push(stats(&mut p.wake_ns).p50);
            }
        }
        long_cpu = rows(&all, cpu);
        long_wake = rows(&all, wake);
    }
    writeln!(o.md, "## A store every ~1 ms (`long_wait`)\n").unwrap();
    writeln!(
        o.md,
        "| impl | waiter CPU (fraction of one CPU) | its range across rounds | wake p50 ns |\n| --- | ---: | ---: | ---: |"
    )
    .unwrap();
    for (c, w) in long_cpu.iter().zip(&long_wake) {
        writeln!(
            o.md,
            "| {} | {:.4} | {} | {:.0} |",
            c.name,
            c.median(),
            c.range(4),
            w.median()
        )
        .unwrap();
        o.json.push(format!(
            "{{\"bench\": \"long_wait\", \"impl\": \"{}\", \"waiter_cpu\": {}, \"wake_p50_ns\": {}, \"rounds\": {rounds}}}",
            c.name, num(c.median()), num(w.median())
        ));
    }
    writeln!(o.md).unwrap();

    // Interference, in interleaved rounds; the workers alone are one more entry
    // of each round, the baseline of that round's throughput ratios.
    eprintln!("interference ...");
    let workers = mwait_benches::usable_cpus();
    let mut inter_thr: Vec<Row> = Vec::new();
    let mut inter_cpu: Vec<Row> = Vec::new();
    let mut inter_wake: Vec<Row> = Vec::new();
    // Per implementation, per round: wake p50 on the producer's CPU and elsewhere
    // (NaN where that placement was rare in the round), and the share of the wakes
    // on the producer's CPU.
    let mut placed: Vec<Vec<[f64; 2]>> = vec![Vec::new(); all.len()];
    let mut share: Vec<Vec<f64>> = vec![Vec::new(); all.len()];
    // A second futex pair in every round: futex against itself, the noise floor of
    // the wake and throughput comparisons.
    let futex_at = all.iter().position(|(name, _)| name == "futex");
    let mut futex_again: Vec<[f64; 2]> = Vec::new();
    let mut futex_again_thr: Vec<[f64; 2]> = Vec::new();
    let mut base_spread = f64::NAN;
    if run("interference") {
        let per = b.interference / rounds;
        let n = all.len();
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
                    round_base = scenarios::compute_throughput_process(workers, per);
                    continue;
                }
                if i == n + 1 {
                    if let Some(f) = futex_at {
                        let (t, pair) = scenarios::interference(all[f].1, gap, per);
                        futex_again.push([pair.p50_where(true), pair.p50_where(false)]);
                        again = (t, pair.share_on_producer_cpu());
                    }
                    continue;
                }
                let (t, mut pair) = scenarios::interference(all[i].1, gap, per);
                raw[i] = t;
                cpu[i].push(pair.waiter_cpu);
                placed[i].push([pair.p50_where(true), pair.p50_where(false)]);
                share[i].push(pair.share_on_producer_cpu());
                wake[i].push(stats(&mut pair.wake_ns).p50);
            }
            for (i, t) in raw.into_iter().enumerate() {
                thr[i].push(t / round_base);
            }
            if futex_at.is_some() {
                let t = again.0 / round_base;
                futex_again_thr.push(in_main_placement(t, again.1));
            }
            base.push(round_base);
        }
        let (lo, hi) = min_max(&base);
        base_spread = (hi - lo) / median(&base) * 100.0;
        inter_thr = rows(&all, thr);
        inter_cpu = rows(&all, cpu);
        inter_wake = rows(&all, wake);
    }
    writeln!(
        o.md,
        "## Compute workers beside a slow pair (`interference`)\n"
    )
    .unwrap();
    writeln!(
        o.md,
        "{workers} compute threads in a separate process (the seeds' load was a kernel build) \
         fill the CPUs; a producer stores every ~50 µs and a waiter waits for each store. \
         Throughput is relative to the workers alone in the same round (the workers alone \
         ranged over {base_spread:.1} % of their median across rounds: this run's noise). \
         A parked waiter's wake latency depends first on where the scheduler wakes it: \
         on the producer's CPU or on the other one, where it must preempt a compute \
         worker. The last three columns split the wakes that way (medians of the rounds \
         in which that placement made at least a fifth of the wakes).\n"
    )
    .unwrap();
    writeln!(o.md, "| impl | worker throughput ratio | its range across rounds | waiter CPU | wake p50 ns | its range | wakes on the producer's CPU | wake p50 there | wake p50 elsewhere |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |").unwrap();
    let placed_median =
        |i: usize, c: usize| median(&placed[i].iter().map(|p| p[c]).collect::<Vec<_>>());
    for (i, ((t, c), w)) in inter_thr
        .iter()
        .zip(&inter_cpu)
        .zip(&inter_wake)
        .enumerate()
    {
        let share_mean = share[i].iter().sum::<f64>() / share[i].len().max(1) as f64;
        writeln!(
            o.md,
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
        )
        .unwrap();
        o.json.push(format!(
            "{{\"bench\": \"interference\", \"impl\": \"{}\", \"throughput_ratio\": {}, \"waiter_cpu\": {}, \"wake_p50_ns\": {}, \"wake_share_on_producer_cpu\": {}, \"wake_p50_on_producer_cpu_ns\": {}, \"wake_p50_elsewhere_ns\": {}, \"rounds\": {rounds}}}",
            t.name, num(t.median()), num(c.median()), num(w.median()), num(share_mean),
            num(placed_median(i, 0)), num(placed_median(i, 1))
        ));
    }
    writeln!(o.md).unwrap();
    // The wake comparisons within placement.
    let placed_of = |name: &str| {
        all.iter()
            .position(|(n, _)| n == name)
            .map_or(&[][..], |i| &placed[i][..])
    };
    let wake_matched = matched_ratios(placed_of("waitcell"), placed_of("futex"));
    // Throughput is one number per round: it goes in the slot of the round's main
    // placement (most wakes on the producer's CPU, or most elsewhere).
    let by_placement = |name: &str| -> Vec<[f64; 2]> {
        let (Some(i), t) = (
            all.iter().position(|(n, _)| n == name),
            row(&inter_thr, name),
        ) else {
            return Vec::new();
        };
        t.iter()
            .zip(&share[i])
            .map(|(&t, &sh)| in_main_placement(t, sh))
            .collect()
    };
    let thr_matched = matched_ratios(&by_placement("waitcell"), &by_placement("futex"));
    let wake_aa = matched_ratios(&futex_again, placed_of("futex"));
    let thr_aa = matched_ratios(&futex_again_thr, &by_placement("futex"));
    if !wake_aa.is_empty() || !thr_aa.is_empty() {
        let aa = |v: &[f64]| {
            let (lo, hi) = min_max(v);
            format!(
                "{:.3}x (median of {} placement-matched comparisons, range {lo:.2}–{hi:.2}x)",
                median(v),
                v.len()
            )
        };
        writeln!(
            o.md,
            "The noise of a comparison between two pairs that park: a second futex pair ran \
             in every round, and against the first, compared as the targets below compare \
             waitcell with futex, its wake p50 ratio was {} and its throughput ratio {}. \
             A round gives one wake comparison for each placement both pairs saw in at least \
             a fifth of their wakes, and one throughput comparison if most of both pairs' \
             wakes were placed alike.\n",
            aa(&wake_aa),
            aa(&thr_aa)
        )
        .unwrap();
    }

    // Barrier.
    eprintln!("barrier ...");
    let n = b.barrier_episodes;
    let barriers: Vec<(&str, Arc<dyn scenarios::BarrierLike>)> = vec![
        ("waitcell", Arc::new(mwait::Barrier::new(2))),
        ("std-barrier", Arc::new(std::sync::Barrier::new(2))),
        ("spin", Arc::new(scenarios::SpinBarrier::default())),
    ];
    let mut bar: Vec<(String, f64)> = Vec::new();
    writeln!(
        o.md,
        "## Barrier, two threads with asymmetric work, {n} episodes (`barrier`)\n"
    )
    .unwrap();
    writeln!(o.md, "| impl | ns per episode |\n| --- | ---: |").unwrap();
    for (name, barrier) in barriers.into_iter().filter(|_| run("barrier")) {
        let per = scenarios::barrier_episodes(barrier, n).as_nanos() as f64 / f64::from(n);
        writeln!(o.md, "| {name} | {per:.0} |").unwrap();
        o.json.push(format!(
            "{{\"bench\": \"barrier\", \"impl\": \"{name}\", \"ns_per_episode\": {}}}",
            num(per)
        ));
        bar.push((name.to_string(), per));
    }
    writeln!(o.md).unwrap();

    // Async.
    eprintln!("async ...");
    writeln!(
        o.md,
        "## Async round trip between two tokio tasks (`async_pingpong`)\n"
    )
    .unwrap();
    writeln!(o.md, "| impl | p50 ns | p99 ns |\n| --- | ---: | ---: |").unwrap();
    for (name, tokio_notify) in [("waitcell-async", false), ("tokio-notify", true)]
        .into_iter()
        .filter(|_| run("async_pingpong"))
    {
        let mut s = scenarios::async_pingpong(tokio_notify, b.pingpong);
        let st = stats(&mut s);
        writeln!(o.md, "| {name} | {:.0} | {:.0} |", st.p50, st.p99).unwrap();
        o.json.push(format!(
            "{{\"bench\": \"async_pingpong\", \"impl\": \"{name}\", \"p50_ns\": {}, \"p99_ns\": {}}}",
            num(st.p50), num(st.p99)
        ));
    }
    writeln!(o.md).unwrap();

    // Targets: latency, CPU and interference ones on per-round paired ratios.
    let nget = |n: &str| {
        notify
            .iter()
            .find(|x| x.0 == n)
            .map(|x| x.1)
            .unwrap_or(f64::NAN)
    };
    let bget = |n: &str| {
        bar.iter()
            .find(|x| x.0 == n)
            .map(|x| x.1)
            .unwrap_or(f64::NAN)
    };
    let targets: Vec<(String, Verdict)> = vec![
        ratio_target(
            "pingpong p50 <= 1.1x pause",
            row(&pp, "waitcell"),
            row(&pp, "pause"),
            |m| m <= 1.1,
        ),
        (
            format!("notify <= 5 ns: {:.2} ns", nget("waitcell")),
            Verdict::of(nget("waitcell") <= 5.0),
        ),
        (
            format!(
                "notify >= 45x cheaper than atomic-wait ({:.0}x) and std-condvar ({:.0}x)",
                nget("atomic-wait") / nget("waitcell"),
                nget("std-condvar") / nget("waitcell")
            ),
            Verdict::of(
                nget("atomic-wait") >= 45.0 * nget("waitcell")
                    && nget("std-condvar") >= 45.0 * nget("waitcell"),
            ),
        ),
        matched_target(
            "interference throughput >= 0.98x futex's",
            &thr_matched,
            paired_ratio(row(&inter_thr, "waitcell"), row(&inter_thr, "futex")),
            |m| m >= 0.98,
        ),
        matched_target(
            "interference wake p50 <= futex's",
            &wake_matched,
            paired_ratio(row(&inter_wake, "waitcell"), row(&inter_wake, "futex")),
            |m| m <= 1.0,
        ),
        ratio_target(
            "same_cpu p50 <= 1.2x futex",
            row(&same, "waitcell"),
            row(&same, "futex"),
            |m| m <= 1.2,
        ),
        ratio_target(
            "long_wait waiter CPU <= 1.2x futex",
            row(&long_cpu, "waitcell"),
            row(&long_cpu, "futex"),
            |m| m <= 1.2,
        ),
        (
            format!(
                "barrier faster than std Barrier: {:.0} vs {:.0} ns per episode",
                bget("waitcell"),
                bget("std-barrier")
            ),
            Verdict::of(bget("waitcell") < bget("std-barrier")),
        ),
    ];
    writeln!(o.md, "## Targets (WaitCell default policy)\n").unwrap();
    for (t, v) in &targets {
        let label = match v {
            Verdict::Holds => "HOLDS:",
            Verdict::Tie => "TIE (past the bound by no more than chance explains):",
            Verdict::Missed => "MISSED:",
        };
        writeln!(o.md, "- {label} {t}").unwrap();
    }
    let count = |v: Verdict| targets.iter().filter(|t| t.1 == v).count();
    let ties = count(Verdict::Tie);
    writeln!(
        o.md,
        "\n{} of {} targets hold in this run{}.",
        count(Verdict::Holds),
        targets.len(),
        if ties > 0 {
            format!("; {ties} more is a tie, not counted as holding")
        } else {
            String::new()
        }
    )
    .unwrap();

    std::fs::create_dir_all(&out_dir).unwrap();
    std::fs::write(format!("{out_dir}/report.md"), &o.md).unwrap();
    let machine = format!(
        "{{\"cpu\": {:?}, \"hypervisor\": {}, \"usable_cpus\": {}, \"waitpkg\": {}, \"monitorx\": {}, \"monitor_mwait\": {}, \"backend\": \"{}\", \"quick\": {}}}",
        caps.brand, caps.hypervisor, caps.usable_cpus, caps.waitpkg, caps.monitorx, caps.monitor_mwait, sel.backend, quick
    );
    let json = format!(
        "{{\"machine\": {machine},\n \"results\": [\n  {}\n ]}}\n",
        o.json.join(",\n  ")
    );
    std::fs::write(format!("{out_dir}/summary.json"), json).unwrap();
    std::fs::write(format!("{out_dir}/pingpong.svg"), svg(&o.svg_series)).unwrap();
    print!("{}", o.md);
    eprintln!("wrote {out_dir}/report.md, summary.json, pingpong.svg");
}

/// The round-trip distributions as cumulative curves on a log time axis.
fn svg(series: &[(String, Vec<u64>)]) -> String {
    const W: f64 = 900.0;
    const H: f64 = 480.0;
    const LEFT: f64 = 60.0;
    const RIGHT: f64 = 200.0;
    let lo = 10f64.ln();
    let hi = 1e6f64.ln();
    let x = |ns: f64| LEFT + (ns.max(10.0).ln() - lo) / (hi - lo) * (W - LEFT - RIGHT);
    let y = |q: f64| H - 40.0 - q * (H - 70.0);
    let colours = [
        "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
        "#bcbd22", "#17becf", "#000000", "#aa3377",
    ];
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{LEFT}\" y=\"20\" font-size=\"14\">Round-trip latency, two CPUs: cumulative distribution (log time)</text>\n");
    for (i, ns) in [10.0, 100.0, 1e3, 1e4, 1e5, 1e6].iter().enumerate() {
        let label = ["10 ns", "100 ns", "1 µs", "10 µs", "100 µs", "1 ms"][i];
        let _ = writeln!(s, "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{2:.1}\" stroke=\"#ddd\"/><text x=\"{0:.1}\" y=\"{3:.1}\" text-anchor=\"middle\">{label}</text>", x(*ns), y(0.0), y(1.0), H - 20.0);
    }
    for q in [0.0, 0.5, 0.99, 1.0] {
        let _ = writeln!(s, "<line x1=\"{LEFT}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\" stroke=\"#ddd\"/><text x=\"{2}\" y=\"{0:.1}\" text-anchor=\"end\">p{3}</text>", y(q), W - RIGHT, LEFT - 5.0, (q * 100.0) as u32);
    }
    for (i, (name, samples)) in series.iter().enumerate() {
        let mut v = samples.clone();
        v.sort_unstable();
        if v.is_empty() {
            continue;
        }
        let steps = 200usize;
        let pts: Vec<String> = (0..=steps)
            .map(|k| {
                let q = k as f64 / steps as f64;
                let idx = ((q * (v.len() - 1) as f64).round() as usize).min(v.len() - 1);
                format!("{:.1},{:.1}", x(v[idx] as f64), y(q))
            })
            .collect();
        let c = colours[i % colours.len()];
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"1.5\" points=\"{}\"/>",
            pts.join(" ")
        );
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{c}\">{name}</text>",
            W - RIGHT + 10.0,
            50.0 + 16.0 * i as f64
        );
    }
    s.push_str("</svg>\n");
    s
}
