//! `mwait-bench [--quick] [--out DIR] [--only BENCH]`: runs every scenario side by
//! side and writes `DIR/report.md`, `DIR/summary.json` and `DIR/pingpong.svg`
//! (default DIR: `target/mwait-bench`). `cargo xtask bench` runs it.
//!
//! The process measures its warm scenarios without asking mwait anything first:
//! mwait reads the machine and makes its selection at the first wait, which is a
//! pinned thread's, as in a program that pins its threads before they wait. The
//! machine and the selection are printed after the measurements. The binary also
//! serves as its own child processes, by hidden first arguments: the compute
//! workers of the interference scenario, the cold starts
//! ([`mwait_benches::cold`]), and `--waitcell-tiers`, which lists the WaitCell
//! tiers usable here as a fresh process's selection sees them.

use mwait_benches::impls;
use mwait_benches::scenarios::{self, Placement};
use mwait_benches::{
    in_main_placement, matched_ratios, median, min_max, paired_ratio, round_order, stats,
};
use mwait_support::{compute_throughput_process, duration_ns};
use std::fmt::Write as _;
use std::time::Duration;

mod judge;
mod svg;

use judge::{in_process_target, matched_target, ratio_target, row, rows, Row, Verdict};
use svg::svg;

/// The hidden argument of the child that lists the usable WaitCell tiers.
const TIERS_ARG: &str = "--waitcell-tiers";

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
    cold: ColdBudget,
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
            cold: ColdBudget {
                rounds: if scale == 1 { 3 } else { 7 },
                steady: Duration::from_millis(100) * scale,
                long_wait: Duration::from_millis(300) * scale,
                barrier_episodes: 3_000 * scale,
            },
        }
    }
}

#[derive(Default)]
struct Out {
    json: Vec<String>,
    md: String,
    svg_series: Vec<(String, Vec<u64>)>,
}

fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3}")
    } else {
        "null".into()
    }
}

/// Appends one line to the markdown report.
macro_rules! md {
    ($o:expr) => {
        md!($o, "")
    };
    ($o:expr, $($fmt:tt)*) => {
        writeln!($o.md, $($fmt)*).expect("writing to a String cannot fail")
    };
}

mod clients;
mod cold;

use cold::{ColdBudget, ColdRuns};

/// The command line: `[--quick] [--out DIR] [--only BENCH]`.
#[derive(Debug)]
struct Options {
    quick: bool,
    out_dir: String,
    only: Option<String>,
}

/// The benches `--only` can name.
const BENCHES: [&str; 9] = [
    "pingpong",
    "same_cpu",
    "notify",
    "long_wait",
    "interference",
    "barrier",
    "cold",
    "async",
    "clients",
];

impl Options {
    /// The options, or why the command line is not one: an unknown argument, a
    /// flag without its value, or a bench `--only` does not know (a full run takes
    /// minutes, so a typo must not start one).
    fn parse(args: &[String]) -> Result<Options, String> {
        let mut o = Options {
            quick: false,
            out_dir: "target/mwait-bench".into(),
            only: None,
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = || it.next().cloned().ok_or(format!("{a} needs a value"));
            match a.as_str() {
                "--quick" => o.quick = true,
                "--out" => o.out_dir = value()?,
                "--only" => {
                    let b = value()?;
                    if !BENCHES.contains(&b.as_str()) {
                        return Err(format!(
                            "--only {b}: no such bench (one of {})",
                            BENCHES.join(", ")
                        ));
                    }
                    o.only = Some(b);
                }
                other => return Err(format!("unknown argument `{other}`")),
            }
        }
        Ok(o)
    }
}

/// What every section needs: the budgets, the implementations, the `--only` filter.
struct Ctx {
    b: Budgets,
    all: Vec<(String, impls::Make)>,
    only: Option<String>,
    /// The CPUs the process may use: the main thread's affinity mask at start,
    /// before anything is pinned.
    process_cpus: usize,
}

impl Ctx {
    /// Whether the scenario `bench` runs (all do unless `--only` names another).
    fn runs(&self, bench: &str) -> bool {
        self.only.as_deref().map_or(true, |o| o == bench)
    }
}

/// The measures the targets are judged on.
#[derive(Default)]
struct Measured {
    same_cpu: Vec<Row>,
    /// ns per notify, per implementation.
    notify: Vec<(String, f64)>,
    /// Per round, waitcell's round trip over a PAUSE loop's, interleaved in slices.
    pingpong_interleaved: Vec<f64>,
    /// Per round, waitcell's waiter CPU over a futex waiter's measured beside it.
    long_wait_beside: Vec<f64>,
    interference: Judged,
    /// ns per episode, per barrier.
    barrier: Vec<(String, f64)>,
    /// The cold starts, where they ran.
    cold: Option<ColdRuns>,
    /// The clients section's per-round ratios.
    clients: clients::ClientsRuns,
}

/// The interference comparisons of waitcell with futex: placement-matched
/// per-round ratios and the plain paired ratio shown beside them.
#[derive(Default)]
struct Judged {
    thr_matched: Vec<f64>,
    thr_unmatched: (f64, f64, f64),
    wake_matched: Vec<f64>,
    wake_unmatched: (f64, f64, f64),
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if mwait_support::compute_worker_entry(&args) {
        return;
    }
    if let Some(cold) = mwait_benches::cold::child_entry(&args) {
        match cold {
            Ok(m) => println!("{m}"),
            Err(e) => {
                eprintln!("mwait-bench: {e}");
                std::process::exit(2);
            }
        }
        return;
    }
    if args == [TIERS_ARG] {
        for (name, _) in impls::waitcell_tiers() {
            println!("{name}");
        }
        return;
    }
    let opts = Options::parse(&args).unwrap_or_else(|e| {
        eprintln!(
            "mwait-bench: {e}\nusage: mwait-bench [--quick] [--out DIR] [--only BENCH] \
             (or {} SCENARIO IMPL AMOUNT, {TIERS_ARG})",
            mwait_benches::cold::COLD_ARG
        );
        std::process::exit(2);
    });
    let ctx = Ctx {
        b: Budgets::new(if opts.quick { 1 } else { FULL_SCALE }),
        all: implementations(),
        only: opts.only.clone(),
        process_cpus: mwait_support::affinity_cpus(),
    };
    let mut o = Out::default();
    rounds_note(&mut o, ctx.b.rounds);
    latency(&mut o, &ctx, Placement::TwoCpus);
    let pingpong_interleaved = pingpong_beside_pause(&mut o, &ctx);
    let same_cpu = latency(&mut o, &ctx, Placement::SameCpu);
    let notify = notify(&mut o, &ctx);
    let long_wait_beside = long_wait(&mut o, &ctx);
    let mut m = Measured {
        pingpong_interleaved,
        same_cpu,
        notify,
        long_wait_beside,
        interference: interference(&mut o, &ctx),
        barrier: barrier(&mut o, &ctx),
        cold: cold_starts(&mut o, &ctx),
        clients: Default::default(),
    };
    async_pingpong(&mut o, &ctx);
    m.clients = clients::section(&mut o, &ctx);
    targets_section(&mut o, &targets(&m), ctx.only.as_deref());
    // Only now, after every measurement, is mwait asked what it detected and chose.
    let caps = mwait::Capabilities::detect();
    let sel = mwait::selection();
    header(&mut o, &opts, &ctx, caps, sel);
    write_files(&o, &opts, &ctx, caps, sel);
}

/// The peers, the default WaitCell and the WaitCell tiers usable here. Which
/// tiers are usable is the selection's answer, asked of a child process so that
/// this one makes its own selection at its first wait, as a program would.
fn implementations() -> Vec<(String, impls::Make)> {
    let tiers = mwait_support::run_self(&[TIERS_ARG.to_string()])
        .unwrap_or_else(|e| panic!("listing the WaitCell tiers: {e}"));
    let mut all = impls::peers();
    all.extend(tiers.lines().map(|name| {
        let make = impls::by_name(name).unwrap_or_else(|| panic!("no mechanism {name}"));
        (name.to_string(), make)
    }));
    all
}

/// The title, the mode and the machine, put at the top of the report; written
/// last, because asking mwait for the machine and the selection before the
/// measurements would make its process-wide choice from an unpinned thread.
fn header(
    o: &mut Out,
    opts: &Options,
    ctx: &Ctx,
    caps: &mwait::Capabilities,
    sel: &mwait::Selection,
) {
    let body = std::mem::take(&mut o.md);
    md!(o, "# mwait benchmark report\n");
    md!(
        o,
        "Mode: {}. Every number below was measured in this one run, side by side; \
         compare ratios within the run, not with other runs. Machine, as mwait detected \
         it in this process at its first wait (a pinned thread's; `usable cpus` is what \
         mwait concluded), read after the measurements; the process may use {} CPUs:\n",
        if opts.quick { "quick" } else { "full" },
        ctx.process_cpus
    );
    md!(
        o,
        "```\n{caps}\nbackend: {} ({})\n```\n",
        sel.backend,
        sel.reason
    );
    o.md.push_str(&body);
}

/// Every latency scenario again, cold, in child processes (see
/// [`mwait_benches::cold`]).
fn cold_starts(o: &mut Out, ctx: &Ctx) -> Option<ColdRuns> {
    if !ctx.runs("cold") {
        return None;
    }
    eprintln!("cold ...");
    let runs = cold::measure(&ctx.b.cold);
    cold::section(o, &runs, &ctx.b.cold);
    Some(runs)
}

/// How the interleaved rounds work, once for every scenario that uses them.
fn rounds_note(o: &mut Out, rounds: u32) {
    md!(
        o,
        "The latency, waiter-CPU and interference scenarios run in {rounds} interleaved rounds: \
         each round measures every implementation once, in an order rotated from round \
         to round, with 1/{rounds} of its budget. A value below is the median of its \
         rounds, and a target compares two implementations round by round (the median \
         of the per-round ratios), so that a machine whose speed drifts during the run \
         moves both sides of each ratio alike. The ranges show the spread across rounds.\n"
    );
}

/// Ping-pong round trips with the threads placed as `placement` says, in
/// interleaved rounds (`pingpong` on two CPUs, `same_cpu` on one).
fn latency(o: &mut Out, ctx: &Ctx, placement: Placement) -> Vec<Row> {
    let (title, bench) = match placement {
        Placement::TwoCpus => ("Round trip, two threads on two CPUs", "pingpong"),
        Placement::SameCpu => ("Round trip, both threads pinned to one CPU", "same_cpu"),
    };
    if !ctx.runs(bench) {
        return Vec::new();
    }
    eprintln!("{bench} ...");
    let (all, rounds) = (&ctx.all, ctx.b.rounds);
    let mut pooled: Vec<Vec<u64>> = vec![Vec::new(); all.len()];
    let mut p50s: Vec<Vec<f64>> = vec![Vec::new(); all.len()];
    for r in 0..rounds as usize {
        for i in round_order(all.len(), r) {
            let mut s = scenarios::pingpong(
                all[i].1,
                placement,
                ctx.b.pingpong / rounds,
                scenarios::WARMUP_ROUND_TRIPS,
            );
            p50s[i].push(stats(&mut s).p50);
            pooled[i].extend(s);
        }
    }
    md!(o, "## {title} (`{bench}`)\n");
    md!(
        o,
        "A sample is the mean of {} consecutive round trips (the clock's step and the \
         cost of reading it, divided by {}: `mwait_benches::ROUND_TRIP_BATCH`); p50 and \
         p99 are over samples.\n",
        mwait_benches::ROUND_TRIP_BATCH,
        mwait_benches::ROUND_TRIP_BATCH,
    );
    md!(
        o,
        "| impl | p50 ns (median of rounds) | p50 range across rounds | p99 ns (all rounds) | samples |"
    );
    md!(o, "| --- | ---: | ---: | ---: | ---: |");
    let mut out = Vec::new();
    for (((name, _), mut s), p50s) in all.iter().zip(pooled).zip(p50s) {
        let st = stats(&mut s);
        let row = Row {
            name: name.clone(),
            per_round: p50s,
        };
        md!(
            o,
            "| {name} | {:.0} | {} | {:.0} | {} |",
            row.median(),
            row.range(0),
            st.p99,
            st.n
        );
        o.json.push(format!(
            "{{\"bench\": \"{bench}\", \"impl\": \"{name}\", \"p50_ns\": {}, \"p99_ns\": {}, \"samples\": {}, \"rounds\": {rounds}}}",
            num(row.median()), num(st.p99), st.n
        ));
        if placement == Placement::TwoCpus {
            o.svg_series.push((name.clone(), s));
        }
        out.push(row);
    }
    md!(o);
    out
}

/// The cost of a notify with nobody waiting; ns per call, per implementation.
fn notify(o: &mut Out, ctx: &Ctx) -> Vec<(String, f64)> {
    eprintln!("notify ...");
    let budget = if ctx.runs("notify") {
        ctx.b.notify
    } else {
        Duration::ZERO
    };
    let notify: Vec<(String, f64)> = scenarios::notify_costs(budget)
        .into_iter()
        .map(|(n, v)| {
            let mut v: Vec<u64> = v.iter().map(|x| (x * 1000.0) as u64).collect();
            (n, stats(&mut v).p50 / 1000.0)
        })
        .collect();
    md!(o, "## Notify with nobody waiting (`notify`)\n");
    md!(
        o,
        "Median of batches of {} calls, per call.\n",
        scenarios::NOTIFY_BATCH
    );
    md!(o, "| impl | ns per notify |\n| --- | ---: |");
    for (n, ns) in &notify {
        md!(o, "| {n} | {ns:.2} |");
        o.json.push(format!(
            "{{\"bench\": \"notify\", \"impl\": \"{n}\", \"ns\": {}}}",
            num(*ns)
        ));
    }
    md!(o);
    notify
}

/// A store every ~1 ms: the waiter's CPU and its wake latency, in interleaved
/// rounds, then waitcell's waiter beside a futex waiter at the same time (the
/// target's comparison, see `scenarios::slow_producers_beside`); returns the
/// per-round ratios of the second part.
fn long_wait(o: &mut Out, ctx: &Ctx) -> Vec<f64> {
    eprintln!("long_wait ...");
    let (all, rounds) = (&ctx.all, ctx.b.rounds);
    let mut long_cpu: Vec<Row> = Vec::new();
    let mut long_wake: Vec<Row> = Vec::new();
    let mut beside = Vec::new();
    if ctx.runs("long_wait") {
        let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); all.len()];
        let mut wake: Vec<Vec<f64>> = vec![Vec::new(); all.len()];
        for r in 0..rounds as usize {
            for i in round_order(all.len(), r) {
                let mut p = scenarios::slow_producer(
                    all[i].1,
                    Duration::from_millis(1),
                    ctx.b.long_wait / rounds,
                );
                cpu[i].push(p.waiter_cpu);
                wake[i].push(stats(&mut p.wake_ns).p50);
            }
        }
        long_cpu = rows(all, cpu);
        long_wake = rows(all, wake);
        beside = long_wait_beside(ctx);
    }
    md!(o, "## A store every ~1 ms (`long_wait`)\n");
    md!(
        o,
        "| impl | waiter CPU (fraction of one CPU) | its range across rounds | wake p50 ns |\n| --- | ---: | ---: | ---: |"
    );
    for (c, w) in long_cpu.iter().zip(&long_wake) {
        md!(
            o,
            "| {} | {:.4} | {} | {:.0} |",
            c.name,
            c.median(),
            c.range(4),
            w.median()
        );
        o.json.push(format!(
            "{{\"bench\": \"long_wait\", \"impl\": \"{}\", \"waiter_cpu\": {}, \"wake_p50_ns\": {}, \"rounds\": {rounds}}}",
            c.name, num(c.median()), num(w.median())
        ));
    }
    let (lo, hi) = min_max(&beside);
    md!(
        o,
        "\nwaitcell's waiter beside a futex waiter, both pairs at once (producers' stores \
         half a gap apart), {} rounds: CPU ratio {:.2}x (range {lo:.2}–{hi:.2}x). The \
         target is judged on these: across the interleaved rounds above, the host's \
         wake-up path moves between a round of one and a round of the other.\n",
        beside.len(),
        median(&beside)
    );
    beside
}

/// `rounds` runs of waitcell's slow producer beside futex's, unpinned as above: the
/// ratio of the waiters' CPU times in each.
fn long_wait_beside(ctx: &Ctx) -> Vec<f64> {
    let (waitcell, futex) = (impl_make(ctx, "waitcell"), impl_make(ctx, "futex"));
    (0..ctx.b.rounds)
        .map(|_| {
            let (w, f) = scenarios::slow_producers_beside(
                waitcell,
                futex,
                Duration::from_millis(1),
                ctx.b.long_wait / ctx.b.rounds,
                None,
            );
            w.waiter_cpu / f.waiter_cpu
        })
        .collect()
}

/// waitcell's ping-pong on two CPUs against a PAUSE ping-pong, in slices that
/// alternate between the two (`scenarios::interleaved_with_pause`), one warmed-up
/// waitcell pair per round: the pingpong target's comparison. Returns each round's
/// median slice ratio.
fn pingpong_beside_pause(o: &mut Out, ctx: &Ctx) -> Vec<f64> {
    if !ctx.runs("pingpong") {
        return Vec::new();
    }
    let waitcell = impl_make(ctx, "waitcell");
    let ratios: Vec<f64> = (0..ctx.b.rounds)
        .map(|_| {
            let mut pp = scenarios::PingPong::start(waitcell, Placement::TwoCpus);
            for _ in 0..scenarios::WARMUP_ROUND_TRIPS {
                pp.round_trip();
            }
            scenarios::interleaved_with_pause(
                &mut pp,
                Some(Placement::TwoCpus.cpus()),
                ctx.b.pingpong / ctx.b.rounds,
            )
            .median_ratio
        })
        .collect();
    let (lo, hi) = min_max(&ratios);
    md!(
        o,
        "waitcell against a PAUSE ping-pong in {} ms slices that alternate between the \
         two on CPUs 0 and 1, {} rounds: {:.2}x (range {lo:.2}–{hi:.2}x), the median of \
         each round's slice ratios. The target is judged on these: in the rounds above \
         the two are measured hundreds of ms apart, and the host moves the vCPUs \
         between placements at that scale.\n",
        scenarios::SLICE.as_millis(),
        ratios.len(),
        median(&ratios)
    );
    ratios
}

/// The mechanism called `name` among the report's implementations.
fn impl_make(ctx: &Ctx, name: &str) -> impls::Make {
    ctx.all
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, make)| *make)
        .unwrap_or_else(|| panic!("{name} is one of the report's implementations"))
}

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

/// Compute workers beside a slow pair: the measures, the table, the noise floor;
/// returns the waitcell-against-futex comparisons.
fn interference(o: &mut Out, ctx: &Ctx) -> Judged {
    eprintln!("interference ...");
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
    Judged {
        thr_matched: matched_ratios(&by_placement("waitcell"), &by_placement("futex")),
        thr_unmatched: paired_ratio(row(&runs.thr, "waitcell"), row(&runs.thr, "futex")),
        wake_matched: matched_ratios(placed_of("waitcell"), placed_of("futex")),
        wake_unmatched: paired_ratio(row(&runs.wake, "waitcell"), row(&runs.wake, "futex")),
    }
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

/// Two threads with asymmetric work meeting at a barrier; ns per episode, per
/// barrier.
fn barrier(o: &mut Out, ctx: &Ctx) -> Vec<(String, f64)> {
    eprintln!("barrier ...");
    let n = ctx.b.barrier_episodes;
    let mut bar: Vec<(String, f64)> = Vec::new();
    md!(
        o,
        "## Barrier, two threads with asymmetric work, {n} episodes (`barrier`)\n"
    );
    md!(o, "| impl | ns per episode |\n| --- | ---: |");
    for (name, barrier) in scenarios::barriers()
        .into_iter()
        .filter(|_| ctx.runs("barrier"))
    {
        let per = duration_ns(scenarios::barrier_episodes(barrier(), n)) as f64 / f64::from(n);
        md!(o, "| {name} | {per:.0} |");
        o.json.push(format!(
            "{{\"bench\": \"barrier\", \"impl\": \"{name}\", \"ns_per_episode\": {}}}",
            num(per)
        ));
        bar.push((name.to_string(), per));
    }
    md!(o);
    bar
}

/// Round trips between two tokio tasks, WaitCell futures against tokio's Notify.
fn async_pingpong(o: &mut Out, ctx: &Ctx) {
    if !ctx.runs("async") {
        return;
    }
    eprintln!("async ...");
    md!(
        o,
        "## Async round trip between two tokio tasks (`async_pingpong`)\n"
    );
    md!(o, "| impl | p50 ns | p99 ns |\n| --- | ---: | ---: |");
    for (name, round_trips) in scenarios::async_mechanisms()
        .into_iter()
        .filter(|_| ctx.runs("async_pingpong"))
    {
        let mut s = round_trips(ctx.b.pingpong);
        let st = stats(&mut s);
        md!(o, "| {name} | {:.0} | {:.0} |", st.p50, st.p99);
        o.json.push(format!(
            "{{\"bench\": \"async_pingpong\", \"impl\": \"{name}\", \"p50_ns\": {}, \"p99_ns\": {}}}",
            num(st.p50), num(st.p99)
        ));
    }
    md!(o);
}

/// The report's targets (WaitCell default policy), each with its verdict: latency,
/// CPU and interference ones on per-round paired ratios.
fn targets(m: &Measured) -> Vec<(String, Verdict)> {
    let of =
        |v: &[(String, f64)], n: &str| v.iter().find(|x| x.0 == n).map(|x| x.1).unwrap_or(f64::NAN);
    let nget = |n: &str| of(&m.notify, n);
    let bget = |n: &str| of(&m.barrier, n);
    let i = &m.interference;
    vec![
        in_process_target(
            "pingpong p50 <= 1.1x pause (interleaved with it)",
            &m.pingpong_interleaved,
            |r| r <= 1.1,
        ),
        (
            format!("notify <= 5 ns: {:.2} ns", nget("waitcell")),
            Verdict::on(nget("waitcell"), nget("waitcell") <= 5.0),
        ),
        (
            format!(
                "notify >= 45x cheaper than atomic-wait ({:.0}x) and std-condvar ({:.0}x)",
                nget("atomic-wait") / nget("waitcell"),
                nget("std-condvar") / nget("waitcell")
            ),
            Verdict::on(
                nget("atomic-wait") + nget("std-condvar") + nget("waitcell"),
                nget("atomic-wait") >= 45.0 * nget("waitcell")
                    && nget("std-condvar") >= 45.0 * nget("waitcell"),
            ),
        ),
        matched_target(
            "interference throughput >= 0.98x futex's",
            &i.thr_matched,
            i.thr_unmatched,
            |r| r >= 0.98,
        ),
        matched_target(
            "interference wake p50 <= futex's",
            &i.wake_matched,
            i.wake_unmatched,
            |r| r <= 1.0,
        ),
        ratio_target(
            "same_cpu p50 <= 1.2x futex",
            row(&m.same_cpu, "waitcell"),
            row(&m.same_cpu, "futex"),
            |r| r <= 1.2,
        ),
        in_process_target(
            "long_wait waiter CPU <= 1.2x futex (beside it)",
            &m.long_wait_beside,
            |r| r <= 1.2,
        ),
        (
            format!(
                "barrier faster than std Barrier: {:.0} vs {:.0} ns per episode",
                bget("waitcell"),
                bget("std-barrier")
            ),
            Verdict::on(
                bget("waitcell") + bget("std-barrier"),
                bget("waitcell") < bget("std-barrier"),
            ),
        ),
    ]
    .into_iter()
    .chain(m.cold.as_ref().map(cold::targets).unwrap_or_default())
    .chain(clients::targets(&m.clients))
    .collect()
}

/// The targets with their verdicts and the count that hold.
fn targets_section(o: &mut Out, targets: &[(String, Verdict)], only: Option<&str>) {
    md!(
        o,
        "## Targets (WaitCell default policy)\n\nWarm ones first, then the same targets \
         judged on the cold starts.\n"
    );
    for (t, v) in targets {
        let label = match v {
            Verdict::Holds => "HOLDS:",
            Verdict::Tie => "TIE (past the bound by no more than chance explains):",
            Verdict::Missed => "MISSED:",
            Verdict::NoMeasurement if only.is_some() => "NOT RUN (outside --only):",
            Verdict::NoMeasurement => "MISSED (no measurement: see the failed runs above):",
        };
        md!(o, "- {label} {t}");
    }
    let count = |v: Verdict| targets.iter().filter(|t| t.1 == v).count();
    let ties = count(Verdict::Tie);
    let not_run = if only.is_some() {
        count(Verdict::NoMeasurement)
    } else {
        0
    };
    md!(
        o,
        "\n{} of {} targets hold in this run{}{}.",
        count(Verdict::Holds),
        targets.len() - not_run,
        if ties > 0 {
            format!(
                "; {ties} more {}, not counted as holding",
                if ties == 1 { "is a tie" } else { "are ties" }
            )
        } else {
            String::new()
        },
        if not_run > 0 {
            format!(" ({not_run} more not run: outside --only)")
        } else {
            String::new()
        }
    );
}

/// Writes `report.md`, `summary.json` and `pingpong.svg`, and prints the report.
fn write_files(
    o: &Out,
    opts: &Options,
    ctx: &Ctx,
    caps: &mwait::Capabilities,
    sel: &mwait::Selection,
) {
    let out_dir = &opts.out_dir;
    std::fs::create_dir_all(out_dir).unwrap();
    std::fs::write(format!("{out_dir}/report.md"), &o.md).unwrap();
    let machine = format!(
        "{{\"cpu\": {:?}, \"hypervisor\": {}, \"usable_cpus\": {}, \"process_cpus\": {}, \"waitpkg\": {}, \"monitorx\": {}, \"monitor_mwait\": {}, \"backend\": \"{}\", \"quick\": {}}}",
        caps.brand, caps.hypervisor, caps.usable_cpus, ctx.process_cpus, caps.waitpkg, caps.monitorx, caps.monitor_mwait, sel.backend, opts.quick
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, String> {
        Options::parse(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn the_command_line_takes_its_flags_and_refuses_anything_else() {
        let o = parse(&["--quick", "--out", "d", "--only", "cold"]).unwrap();
        assert!(o.quick);
        assert_eq!((o.out_dir.as_str(), o.only.as_deref()), ("d", Some("cold")));
        let o = parse(&[]).unwrap();
        assert!(!o.quick && o.only.is_none());
        assert_eq!(o.out_dir, "target/mwait-bench");
        // A typo must not start a full run of several minutes.
        assert!(parse(&["--version"])
            .unwrap_err()
            .contains("unknown argument"));
        assert!(parse(&["--out"]).unwrap_err().contains("needs a value"));
        assert!(parse(&["--only", "pingpong-pinned"])
            .unwrap_err()
            .contains("no such bench"));
    }
}
