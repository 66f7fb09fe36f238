//! The warm latency and waiter-CPU sections: ping-pong on two CPUs and on one,
//! notify with nobody waiting, a store every ~1 ms, the barrier and the async
//! round trip, each with its targets.

use crate::judge::{in_process_target, lesser, ratio_target, row, rows, Bound, Row, Target};
use crate::report::{md, num, Out};
use crate::Ctx;
use mwait_benches::scenarios::{self, Placement};
use mwait_benches::{median, min_max, round_order, stats};
use mwait_support::duration_ns;
use std::fmt::Write as _;
use std::time::Duration;

/// `pingpong`: round trips on two CPUs, then waitcell against a PAUSE ping-pong,
/// which its target is judged on.
pub fn pingpong(o: &mut Out, ctx: &Ctx) {
    round_trips(o, ctx, Placement::TwoCpus);
    let interleaved = pingpong_beside_pause(o, ctx);
    o.target(in_process_target(
        "pingpong p50 <= 1.05x pause (interleaved with it)",
        &interleaved,
        Bound::AtMost(1.05),
    ));
}

/// `same_cpu`: round trips with both threads pinned to one CPU.
pub fn same_cpu(o: &mut Out, ctx: &Ctx) {
    let rows = round_trips(o, ctx, Placement::SameCpu);
    o.target(ratio_target(
        "same_cpu p50 <= 1.2x futex",
        row(&rows, "waitcell"),
        row(&rows, "futex"),
        Bound::AtMost(1.2),
    ));
}

/// Ping-pong round trips with the threads placed as `placement` says, in
/// interleaved rounds (`pingpong` on two CPUs, `same_cpu` on one).
fn round_trips(o: &mut Out, ctx: &Ctx, placement: Placement) -> Vec<Row> {
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
    let mut energy = EnergyPer::new(ctx, all.len());
    for r in 0..rounds as usize {
        for i in round_order(all.len(), r) {
            let e0 = energy.start();
            let mut s = scenarios::pingpong(
                all[i].1,
                placement,
                ctx.b.pingpong / rounds,
                scenarios::WARMUP_ROUND_TRIPS,
            );
            let trips = s.len() as u64 * u64::from(mwait_benches::ROUND_TRIP_BATCH);
            energy.add(i, e0, trips);
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
    energy.table(o, all, "round trip");
    out
}

/// Package energy per event of each implementation over the interleaved rounds of
/// one scenario, where the machine tells it (`mwait_benches::energy`): the counters
/// read around each implementation's slice, the energy summed over the rounds and
/// divided by the events (round trips, wakes) in them.
struct EnergyPer<'c> {
    meter: Option<&'c mwait_benches::energy::Meter>,
    why_not: Option<&'c str>,
    /// Per implementation: µJ and events.
    sums: Vec<(u64, u64)>,
}

impl<'c> EnergyPer<'c> {
    fn new(ctx: &'c Ctx, impls: usize) -> EnergyPer<'c> {
        EnergyPer {
            meter: ctx.energy.as_ref().ok(),
            why_not: ctx.energy.as_ref().err().map(String::as_str),
            sums: vec![(0, 0); impls],
        }
    }

    fn start(&self) -> Option<mwait_benches::energy::Reading> {
        self.meter.and_then(|m| m.read())
    }

    fn add(&mut self, i: usize, before: Option<mwait_benches::energy::Reading>, events: u64) {
        let (Some(m), Some(b)) = (self.meter, before) else {
            return;
        };
        if let Some(a) = m.read() {
            self.sums[i].0 += m.between(&b, &a);
            self.sums[i].1 += events;
        }
    }

    /// The table, or the one line that says why there is none.
    fn table(&self, o: &mut Out, all: &[(String, mwait_benches::impls::Make)], per: &str) {
        if let Some(why) = self.why_not {
            md!(
                o,
                "Energy per {per}: not readable on this machine ({why}).\n"
            );
            return;
        }
        md!(
            o,
            "Package energy per {per} (RAPL, the whole package while each ran):\n\n| impl | µJ per {per} |\n| --- | ---: |"
        );
        for ((name, _), (uj, n)) in all.iter().zip(&self.sums) {
            let per_event = if *n == 0 {
                f64::NAN
            } else {
                *uj as f64 / *n as f64
            };
            md!(o, "| {name} | {per_event:.3} |");
            o.json.push(format!(
                "{{\"bench\": \"energy\", \"per\": \"{per}\", \"impl\": \"{name}\", \"uj\": {}}}",
                num(per_event)
            ));
        }
        md!(o);
    }
}

/// `notify`: the cost of a notify with nobody waiting, and its two targets.
pub fn notify(o: &mut Out, ctx: &Ctx) {
    let costs = notify_costs(o, ctx);
    let ns = |n: &str| of(&costs, n);
    o.target(Target::on(
        format!("notify <= 5 ns: {:.2} ns", ns("waitcell")),
        ns("waitcell"),
        Bound::AtMost(5.0),
    ));
    o.target(Target::on(
        format!(
            "notify >= 45x cheaper than atomic-wait ({:.0}x) and std-condvar ({:.0}x)",
            ns("atomic-wait") / ns("waitcell"),
            ns("std-condvar") / ns("waitcell")
        ),
        lesser(
            ns("atomic-wait") / ns("waitcell"),
            ns("std-condvar") / ns("waitcell"),
        ),
        Bound::AtLeast(45.0),
    ));
}

/// The value measured for `name`, or NaN where it was not measured.
fn of(v: &[(String, f64)], name: &str) -> f64 {
    v.iter().find(|x| x.0 == name).map_or(f64::NAN, |x| x.1)
}

/// The notify table; ns per call, per implementation.
fn notify_costs(o: &mut Out, ctx: &Ctx) -> Vec<(String, f64)> {
    if !ctx.runs("notify") {
        return Vec::new();
    }
    eprintln!("notify ...");
    let notify: Vec<(String, f64)> = scenarios::notify_costs(ctx.b.notify)
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

/// The producers' gaps at which waitcell's waiter is compared with a futex waiter
/// beside it (µs): a store every 200 µs, 1 ms and 5 ms. The longer the sleep, the
/// more of the lines a wait touches have left the caches when it wakes.
const BESIDE_GAPS_US: [u64; 3] = [200, 1_000, 5_000];

/// The fewest stores of one run beside a futex waiter: a 5 ms gap's run lasts at
/// least this many gaps, so that a handful of wakes does not decide it.
const BESIDE_WAKES: u32 = 100;

/// waitcell's waiter beside a futex waiter at one producers' gap: the per-round
/// ratios the target is judged on, and those of the same runs with a futex pair in
/// waitcell's place, interleaved with them (what a mechanism's ratio to itself
/// spreads over on this machine).
struct Beside {
    gap_us: u64,
    ratios: Vec<f64>,
    control: Vec<f64>,
}

/// A store every ~1 ms: the waiter's CPU and its wake latency, in interleaved
/// rounds, then waitcell's waiter beside a futex waiter at the same time at each
/// gap of [`BESIDE_GAPS_US`] (the target's comparison, see
/// `scenarios::slow_producers_beside`); returns the second part.
fn long_wait_table(o: &mut Out, ctx: &Ctx) -> Vec<Beside> {
    let (all, rounds) = (&ctx.all, ctx.b.rounds);
    let mut long_cpu: Vec<Row> = Vec::new();
    let mut long_wake: Vec<Row> = Vec::new();
    let mut beside = Vec::new();
    let mut energy = EnergyPer::new(ctx, all.len());
    if ctx.runs("long_wait") {
        eprintln!("long_wait ...");
        let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); all.len()];
        let mut wake: Vec<Vec<f64>> = vec![Vec::new(); all.len()];
        for r in 0..rounds as usize {
            for i in round_order(all.len(), r) {
                let e0 = energy.start();
                let mut p = scenarios::slow_producer(
                    all[i].1,
                    Duration::from_millis(1),
                    ctx.b.long_wait / rounds,
                );
                energy.add(i, e0, p.wake_ns.len() as u64);
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
    if !beside.is_empty() {
        beside_table(o, ctx, &beside);
    }
    if ctx.runs("long_wait") {
        energy.table(o, all, "wake");
    }
    beside
}

/// The report's table of waitcell's waiter beside a futex waiter, per gap, with
/// the futex-beside-futex control.
fn beside_table(o: &mut Out, ctx: &Ctx, beside: &[Beside]) {
    md!(
        o,
        "\nwaitcell's waiter beside a futex waiter, both pairs at once (producers' stores \
         half a gap apart), {} rounds of two runs at each gap (each at least {BESIDE_WAKES} \
         stores), each pair started second in one of them. The targets are judged on \
         these: across the interleaved rounds above, the host's wake-up path moves \
         between a round of one and a round of the other. The control runs a futex \
         pair in waitcell's place, in the same rounds, taking turns with it: how far \
         two waiters of one mechanism differ on this machine.\n\n\
         | a store every | waiter CPU, waitcell / futex | its range across rounds | \
         control: futex / futex | its range |\n\
         | --- | ---: | ---: | ---: | ---: |",
        ctx.b.rounds
    );
    for b in beside {
        let ((lo, hi), (clo, chi)) = (min_max(&b.ratios), min_max(&b.control));
        md!(
            o,
            "| {} | {:.2}x | {lo:.2}–{hi:.2}x | {:.2}x | {clo:.2}–{chi:.2}x |",
            gap_text(b.gap_us),
            median(&b.ratios),
            median(&b.control)
        );
        o.json.push(format!(
            "{{\"bench\": \"long_wait_beside\", \"gap_us\": {}, \"cpu_ratio\": {}, \"control_ratio\": {}, \"rounds\": {}}}",
            b.gap_us,
            num(median(&b.ratios)),
            num(median(&b.control)),
            b.ratios.len()
        ));
    }
    md!(o);
}

/// `long_wait`: a store every ~1 ms, and the waiter-CPU targets judged on
/// waitcell's waiter beside futex's, one per gap of [`BESIDE_GAPS_US`].
pub fn long_wait(o: &mut Out, ctx: &Ctx) {
    let beside = long_wait_table(o, ctx);
    for gap_us in BESIDE_GAPS_US {
        let ratios = beside
            .iter()
            .find(|b| b.gap_us == gap_us)
            .map_or(&[][..], |b| &b.ratios[..]);
        o.target(in_process_target(
            &format!(
                "long_wait waiter CPU <= 1.05x futex (beside it), a store every {}",
                gap_text(gap_us)
            ),
            ratios,
            Bound::AtMost(1.05),
        ));
    }
}

/// A gap in µs as the report writes it: `200 µs`, `1 ms`, `5 ms`.
fn gap_text(gap_us: u64) -> String {
    if gap_us % 1_000 == 0 {
        format!("{} ms", gap_us / 1_000)
    } else {
        format!("{gap_us} µs")
    }
}

/// For each gap of [`BESIDE_GAPS_US`], `rounds` rounds of waitcell's slow producer
/// beside futex's, unpinned as above, each two runs with the pairs' order swapped:
/// the ratio of the waiters' CPU times in each round
/// (`scenarios::slow_producers_both_ways`); and in each round the same with a futex
/// pair in waitcell's place, before it in even rounds and after it in odd ones. A
/// run lasts the long_wait budget's share of a round, or [`BESIDE_WAKES`] gaps if
/// that is longer.
fn long_wait_beside(ctx: &Ctx) -> Vec<Beside> {
    let (waitcell, futex) = (ctx.make("waitcell"), ctx.make("futex"));
    BESIDE_GAPS_US
        .iter()
        .map(|&gap_us| {
            let gap = Duration::from_micros(gap_us);
            let run = (ctx.b.long_wait / ctx.b.rounds).max(gap * BESIDE_WAKES);
            let mut b = Beside {
                gap_us,
                ratios: Vec::new(),
                control: Vec::new(),
            };
            for r in 0..ctx.b.rounds {
                let both = |make| scenarios::slow_producers_both_ways(make, futex, gap, run, None);
                if r % 2 == 0 {
                    b.control.push(both(futex));
                    b.ratios.push(both(waitcell));
                } else {
                    b.ratios.push(both(waitcell));
                    b.control.push(both(futex));
                }
            }
            b
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
    let waitcell = ctx.make("waitcell");
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

/// `barrier`: two threads with asymmetric work meeting at a barrier, and its
/// target against std's Barrier.
pub fn barrier(o: &mut Out, ctx: &Ctx) {
    let per_episode = barrier_table(o, ctx);
    let ns = |n: &str| of(&per_episode, n);
    o.target(Target::on(
        format!(
            "barrier faster than std Barrier: {:.0} vs {:.0} ns per episode",
            ns("waitcell"),
            ns("std-barrier")
        ),
        ns("waitcell") / ns("std-barrier"),
        Bound::Below(1.0),
    ));
}

/// The barrier table; ns per episode, per barrier.
fn barrier_table(o: &mut Out, ctx: &Ctx) -> Vec<(String, f64)> {
    if ctx.runs("barrier") {
        eprintln!("barrier ...");
    }
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

/// `async`: round trips between two tokio tasks, WaitCell futures against tokio's
/// Notify.
pub fn async_pingpong(o: &mut Out, ctx: &Ctx) {
    if !ctx.runs("async") {
        return;
    }
    eprintln!("async ...");
    md!(
        o,
        "## Async round trip between two tokio tasks (`async_pingpong`)\n"
    );
    md!(o, "| impl | p50 ns | p99 ns |\n| --- | ---: | ---: |");
    for (name, round_trips) in scenarios::async_mechanisms().into_iter() {
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
