//! The `clients` section: executors parking their threads through futures-lite's
//! `block_on` (stock: the `parking` crate's `Mutex` + `Condvar`) against
//! `mwait::block_on` (`mwait::Parker`), and a raw `mwait::Parker` ping-pong against
//! a PAUSE ping-pong, in interleaved rounds; each target is judged on the per-round
//! ratios (`mwait_benches::clients` has the scenarios).

use crate::judge::{in_process_target, Bound, Target};
use crate::report::{md, num, Out};
use crate::Ctx;
use mwait_benches::clients::{self, BlockOn, Workload, SIDES};
use mwait_benches::scenarios::{self, PingPong, Placement};
use mwait_benches::{median, min_max, round_order, stats};
use std::fmt::Write as _;

/// Idle `block_on`s per side, kind (warm, fresh) and round; the round's value is
/// their median.
const IDLE_SAMPLES: usize = 3;

/// `clients`: measures (unless `--only` names another section), writes the tables
/// and judges the targets (listed as not run when left out).
pub fn run(o: &mut Out, ctx: &Ctx) {
    let runs = measure(o, ctx);
    for t in targets(&runs) {
        o.target(t);
    }
}

/// Per-round ratios, mwait over stock unless named otherwise.
#[derive(Default)]
struct ClientsRuns {
    /// mwait's ping-pong p50 over a `block_on` that spins where it would park.
    pingpong_p50_vs_spin: Vec<f64>,
    pingpong_p99: Vec<f64>,
    /// The raw parker ping-pong over a PAUSE ping-pong interleaved with it.
    parker_vs_pause: Vec<f64>,
    /// Time per iteration, per workload.
    executor: Vec<(Workload, Vec<f64>)>,
    idle_warm: Vec<f64>,
    idle_fresh: Vec<f64>,
}

/// Runs the scenarios and writes their tables; nothing when `--only` names another
/// section.
fn measure(o: &mut Out, ctx: &Ctx) -> ClientsRuns {
    let mut r = ClientsRuns::default();
    if !ctx.runs("clients") {
        return r;
    }
    eprintln!("clients ...");
    let rounds = ctx.b.rounds as usize;
    let slice = ctx.b.pingpong / ctx.b.rounds;
    md!(
        o,
        "## Clients: executors on `mwait::block_on` against futures-lite's (`clients`)\n\n\
         Stock is futures-lite's `block_on` (the `parking` crate: `Mutex` + `Condvar`), \
         mwait is `mwait::block_on` (`mwait::Parker`); both sides run in this process, \
         one after the other in each of {rounds} rounds (the first side alternating), \
         and each value below is the median of the per-round values (a round's idle \
         `block_on` CPU is the median of {IDLE_SAMPLES} per side, the sides alternating).\n"
    );
    let mut pp: [Vec<(f64, f64)>; 2] = Default::default();
    let mut spin_p50 = Vec::new();
    let mut idle: [[Vec<f64>; 2]; 2] = Default::default();
    let mut ex: Vec<[Vec<f64>; 2]> = vec![Default::default(); Workload::ALL.len()];
    for round in 0..rounds {
        for side in round_order(SIDES.len(), round) {
            let block_on: BlockOn = SIDES[side].1;
            // The spinning baseline runs beside mwait's, before it in one round
            // and after it in the next.
            let spin_before = round % 2 == 0;
            if side == 1 && spin_before {
                spin_p50.push(spin_pingpong_p50(slice));
            }
            let mut s = clients::block_on_pingpong(block_on, slice);
            let st = stats(&mut s);
            pp[side].push((st.p50, st.p99));
            if side == 1 && !spin_before {
                spin_p50.push(spin_pingpong_p50(slice));
            }
            for (w, workload) in Workload::ALL.into_iter().enumerate() {
                let mut s = clients::executor(block_on, workload, slice);
                ex[w][side].push(stats(&mut s).p50);
            }
        }
        // A single idle wait costs some 10 us of CPU, which one interrupt or one
        // cache-cold page moves by tens of percent: each round takes the median of
        // a few, the two sides alternating.
        for (f, fresh) in [false, true].into_iter().enumerate() {
            let mut per_side: [Vec<f64>; 2] = Default::default();
            for _ in 0..IDLE_SAMPLES {
                for side in round_order(SIDES.len(), round) {
                    let cpu = clients::idle_block_on_cpu(SIDES[side].1, fresh);
                    per_side[side].push(cpu as f64);
                }
            }
            for (side, v) in per_side.iter().enumerate() {
                idle[f][side].push(median(v));
            }
        }
        let mut parker = PingPong::start(clients::parker_signal, Placement::TwoCpus);
        for _ in 0..scenarios::WARMUP_ROUND_TRIPS {
            parker.round_trip();
        }
        let pinned = Some(Placement::TwoCpus.cpus());
        r.parker_vs_pause
            .push(scenarios::interleaved_with_pause(&mut parker, pinned, slice).median_ratio);
    }
    let ratio =
        |m: &[f64], s: &[f64]| -> Vec<f64> { m.iter().zip(s).map(|(m, s)| m / s).collect() };
    let p50s = |side: usize| -> Vec<f64> { pp[side].iter().map(|x| x.0).collect() };
    let p99s = |side: usize| -> Vec<f64> { pp[side].iter().map(|x| x.1).collect() };
    r.pingpong_p99 = ratio(&p99s(1), &p99s(0));
    r.pingpong_p50_vs_spin = ratio(&p50s(1), &spin_p50);
    r.idle_warm = ratio(&idle[0][1], &idle[0][0]);
    r.idle_fresh = ratio(&idle[1][1], &idle[1][0]);
    md!(o, "| measure | stock | mwait | mwait / stock (range) |");
    md!(o, "| --- | ---: | ---: | ---: |");
    let line = |o: &mut Out, what: &str, unit: &str, s: &[f64], m: &[f64]| {
        let ratios = ratio(m, s);
        let (lo, hi) = min_max(&ratios);
        md!(
            o,
            "| {what} | {:.0} {unit} | {:.0} {unit} | {:.3}x ({lo:.3}–{hi:.3}x) |",
            median(s),
            median(m),
            median(&ratios)
        );
        o.json.push(format!(
            "{{\"bench\": \"clients\", \"measure\": \"{what}\", \"stock\": {}, \"mwait\": {}, \"ratio\": {}}}",
            num(median(s)),
            num(median(m)),
            num(median(&ratios))
        ));
    };
    line(o, "block_on ping-pong p50", "ns", &p50s(0), &p50s(1));
    line(o, "block_on ping-pong p99", "ns", &p99s(0), &p99s(1));
    for (w, workload) in Workload::ALL.into_iter().enumerate() {
        let what = format!("executor {} (2 workers), per iteration", workload.name());
        line(o, &what, "ns", &ex[w][0], &ex[w][1]);
        r.executor.push((workload, ratio(&ex[w][1], &ex[w][0])));
    }
    line(
        o,
        "idle block_on 200 ms, warm thread: CPU",
        "ns",
        &idle[0][0],
        &idle[0][1],
    );
    line(
        o,
        "idle block_on 200 ms, fresh thread: CPU",
        "ns",
        &idle[1][0],
        &idle[1][1],
    );
    let (slo, shi) = min_max(&r.pingpong_p50_vs_spin);
    md!(
        o,
        "\nThe same ping-pong in a `block_on` whose thread never sleeps (after a pending \
         poll it spins with PAUSE on a flag its waker sets), beside mwait's in each \
         round (before it in one round, after it in the next): p50 {:.0} ns; \
         mwait's over it {:.2}x (range {slo:.2}–{shi:.2}x).",
        median(&spin_p50),
        median(&r.pingpong_p50_vs_spin),
    );
    o.json.push(format!(
        "{{\"bench\": \"clients\", \"measure\": \"block_on ping-pong p50, spinning\", \"ns\": {}, \"mwait_ratio\": {}}}",
        num(median(&spin_p50)),
        num(median(&r.pingpong_p50_vs_spin))
    ));
    let (lo, hi) = min_max(&r.parker_vs_pause);
    md!(
        o,
        "\nA raw `mwait::Parker` ping-pong (each side unparks the other and parks: \
         the token is the message) on CPUs 0 and 1 against a PAUSE ping-pong in \
         {} ms slices that alternate between the two: {:.2}x (range {lo:.2}–{hi:.2}x).\n\n\
         The executor workloads are shaped like async-executor's own benches \
         (`spawn_one`: one empty task spawned from outside and awaited; `yield_now`: \
         {} tasks yielding {} times each; `channels`: a value passed {} times down a \
         chain of {} tasks linked by bounded(1) channels), on an executor run by two \
         worker threads, each in the side's `block_on`.\n",
        scenarios::SLICE.as_millis(),
        median(&r.parker_vs_pause),
        clients::YIELD_TASKS,
        clients::YIELDS,
        clients::CHAIN_MESSAGES,
        clients::CHAIN_TASKS,
    );
    r
}

/// The p50 of a [`clients::block_on_pingpong`] in [`clients::spin_block_on`].
fn spin_pingpong_p50(slice: std::time::Duration) -> f64 {
    let mut s = clients::block_on_pingpong(clients::spin_block_on, slice);
    stats(&mut s).p50
}

/// The section's targets.
fn targets(r: &ClientsRuns) -> Vec<Target> {
    let mut t = vec![
        in_process_target(
            "clients: block_on ping-pong p50 <= 1.1x a spinning block_on (PAUSE)",
            &r.pingpong_p50_vs_spin,
            Bound::AtMost(1.1),
        ),
        in_process_target(
            "clients: block_on ping-pong p99 <= stock's",
            &r.pingpong_p99,
            Bound::AtMost(1.0),
        ),
        in_process_target(
            "clients: raw Parker ping-pong p50 <= 1.1x PAUSE (interleaved with it)",
            &r.parker_vs_pause,
            Bound::AtMost(1.1),
        ),
    ];
    // Every workload, measured or not (a run that left the section out has none).
    for w in Workload::ALL {
        let ratios = r
            .executor
            .iter()
            .find(|(x, _)| *x == w)
            .map_or(&[][..], |(_, v)| &v[..]);
        t.push(in_process_target(
            &format!(
                "clients: executor {} (2 workers) time per iteration <= 1.0x stock's",
                w.name()
            ),
            ratios,
            Bound::AtMost(1.0),
        ));
    }
    t.push(in_process_target(
        "clients: idle block_on CPU, warm thread, <= 1.2x stock's",
        &r.idle_warm,
        Bound::AtMost(1.2),
    ));
    t.push(in_process_target(
        "clients: idle block_on CPU, fresh thread, <= 1.1x stock's",
        &r.idle_fresh,
        Bound::AtMost(1.1),
    ));
    t
}
