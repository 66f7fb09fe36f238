//! `mwait-experiments <experiment>`: the one-off measurements behind the ladder's
//! design notes in `docs/hardware-results.md`, kept runnable so that each quoted
//! number has a command. Each prints medians and ratios measured in one run.
//!
//! - `first-recheck`: how long a wait takes from its call to its first re-check of
//!   the value (a predicate that accepts on its second look), median of 20 batches.
//! - `windows [SECONDS]`: 20-ms ping-pong windows alternating PAUSE and the default
//!   WaitCell; counts the windows whose WaitCell round trip says "parked" (over
//!   5 µs), and gives the median ratio over the windows on the fast core pair
//!   (PAUSE under 300 ns). Run it beside a bursty process to see the run-queue
//!   check: `sh -c 'while :; do sleep 0.003; done' &`.
//! - `pinned-wake`: a producer storing every 50 µs and its waiter, beside compute
//!   workers filling the CPUs, pinned to one CPU and then to two: wake p50 of the
//!   hand-written futex and the default WaitCell, six alternating rounds each.
//! - `interference-wake IMPL...`: the `interference` scenario unpinned, eight rounds
//!   of 300 ms visiting each named mechanism (`futex waitcell`, say): per round the
//!   wake p50, the share of wakes the scheduler placed on the producer's CPU, the
//!   p50 of those and of the others, and the waiter's CPU. Shows that placement, not
//!   the mechanism, decides a round's p50 (about 2.5 µs against 9 µs on the 2-vCPU VM).
//! - `waiter-cpu GAP_US IMPL...`: a producer storing every `GAP_US` µs on an otherwise
//!   idle machine (the `long_wait` scenario, shorter gaps for more wakes), ten rounds
//!   of 500 ms visiting each named mechanism: the median over the rounds of the
//!   waiter's CPU time per wake.
//! - `long-wait-beside [ROUNDS [IMPL]]`: the `long_wait` comparison at three gaps
//!   (200 µs, 1 ms, 5 ms): the default WaitCell's waiter (or that of `IMPL`, any
//!   report name, `mwait-atomic` included) beside a hand-written futex waiter,
//!   both pairs at once (`slow_producers_beside`), in
//!   `ROUNDS` rounds per gap (8 unless given; 400 ms or 200 gaps, the longer) that
//!   swap which pair runs on the calling thread; per round the two waiters' CPU per
//!   wake and the share of each one's wakes that ran on its producer's CPU, and per
//!   gap the median ratio of the two waiters' CPU per wake, its range, and the
//!   medians of each one's CPU per wake.
//! - `long-wait-trace pinned|unpinned|alone ROUNDS WAKES GAP_US [IMPL BESIDE]`: where a
//!   fresh waiter's CPU goes, wait by wait: two slow pairs at once (the default
//!   WaitCell's and a hand-written futex's unless named), each a fresh cell and a
//!   fresh waiter thread fed `WAKES` stores `GAP_US` µs apart, the pair started second
//!   taking turns; per round the ratio of the two waiters' CPU, per mechanism the
//!   median CPU of each of the first six waits and of the rest, and the three later
//!   waits whose median excess over the other mechanism's wait of the same index is
//!   largest (a probe's, a park that measures its wake-up). `pinned` puts both
//!   producers on CPU 0 and both waiters on CPU 1; `alone` runs the two pairs one
//!   after the other, unpinned (what a wait costs without the other pair's noise).
//! - `pattern-switch`: one default WaitCell that sees both patterns in turn: a
//!   ping-pong on CPUs 0 and 1 (the cell carries the answers), then a producer that
//!   stores into it every millisecond, twice over; per phase the cell's wait
//!   statistics (where its waits ended, hand-off spins), and the round-trip p50 or
//!   the waiter's CPU per wake. Shows the cell moving from spinning to parking at
//!   once and back.
//! - `spsc-placement [ROUNDS]`: the bench's `spsc` throughput (the ring on two
//!   WaitCells against `crossbeam_channel::bounded` and the same ring on PAUSE
//!   loops, 2 M messages at saturation) with the sender and receiver where the
//!   scheduler puts them, pinned to CPUs 0 and 1, and both pinned to CPU 0; per
//!   placement `ROUNDS` (10) rounds, the three channels in a rotated order: each
//!   one's median throughput and the medians of the ring's per-round ratios to the
//!   other two, with their ranges. Shows how much of the section's spread is
//!   where the two threads run, and how much of it the ring's design gives any
//!   waiting primitive on that placement.
//! - `stalled-pingpong EVERY`: a ping-pong on CPUs 0 and 1 (the main thread stores
//!   into one cell and waits on the other) whose partner stalls 3 ms before every
//!   `EVERY`-th answer, as a preempted thread does: the round trip's p50 and p90 per
//!   batch of 16, and where the waiting cell's waits ended. Shows what a stall costs
//!   the spinning after it.
//! - `atomic`: waits on bare atomics (`mwait::atomic`): ns per store-and-wake of an
//!   unwaited word, alone in its bucket and beside a parked waiter of the bucket, and
//!   atomic-wait's; ping-pong p50 of two `AtomicU32`s, a WaitCell, PAUSE and
//!   atomic-wait in rounds of 10 ms slices (median of the per-round ratios); the
//!   resident memory 64 parked waiters add to a 10^7-word array; the wake-up p50 of a
//!   `wait_any` over eight words against a wait on one, in alternating rounds.
//! - `broadcast ROUNDS IMPL...`: the scale section's broadcast (one notifier on CPU 0,
//!   a waiter on every other CPU, a value every 500 µs), `ROUNDS` rounds of 1.5 s
//!   visiting each named mechanism in turn: per mechanism the medians over the rounds
//!   of the last waiter's p50 and p99, and per round the ratios to the first one's.
//! - `executor WORKLOAD SIDE SECONDS`: the clients section's executor workload
//!   (`spawn_one`, `yield_now`, `channels`) on one side (`stock` or `mwait`) alone
//!   for `SECONDS`: the median ns per iteration and the process's CPU time and
//!   context switches per iteration, to run under `strace -f -c` side by side.
//! - `fresh-idle [WAIT_MS [ROUNDS]]`: the bench's idle `block_on` (`clients`), then a
//!   raw park on a new parker (`parking::Parker` against `mwait::Parker`, and the
//!   least a futex parker can be, `clients::BareParker`, as the floor of both), each
//!   wait `WAIT_MS` (200) long, on threads whose first wait it is and on threads that
//!   waited before: `ROUNDS` (41) of each kind, the sides in turns (the first side
//!   rotating); per kind the median CPU of each side, and against stock's the median
//!   of the rounds' ratios and the ratio of the medians.
//! - `first-wake [PROCESSES [NAMES...]]`: the first wait of a fresh process, one
//!   that parks: `PROCESSES` (15) children per named mechanism (`waitcell futex`),
//!   in turns, each this binary started again; in each, the main thread waits for
//!   a thread it starts, which sleeps 2 ms and stores, and the child prints how long
//!   after that store the wait returned (a clock read on each side) and the waiting
//!   thread's CPU time in the wait; per mechanism the median, smallest and largest
//!   of the first, the median of the second.
//! - `cold-long-wait [ROUNDS]`: the bench's cold `long_wait` (a fresh process, a
//!   WaitCell pair and a futex pair side by side, a store every 1 ms for 300 ms,
//!   producers on CPU 0 and waiters on CPU 1), in children that start at the first
//!   wait as a program does and in children that call `mwait::prepare()` first;
//!   per round and kind one child of each start order, in turns; per kind the
//!   median of the rounds' geometric means of the waiter CPU ratio: what the
//!   process's one-time work costs the cold figure.
//! - `steady-park WAKES [parker|atomic] [timed]`: one waiter on one default WaitCell
//!   (or `mwait::Parker`, or an `AtomicU32` through `mwait::atomic`) fed every
//!   300 µs, each value only once the waiter has taken the last: `WAKES` waits that
//!   all park (`timed`: with a timeout of 60 s), and the waiter's CPU per wake. Under `valgrind --tool=callgrind`, toggled on
//!   `*mwait_steady_wait*` (each wait, its first look included, in a function of its
//!   own), the difference of two runs' counts over the difference of their `WAKES`
//!   is the user-space instructions of a parked wait's path.
//! - `park-segments GAP_US [ROUNDS]` (Linux, built with `--features stamps`): a
//!   default WaitCell's waiter and a hand-written futex waiter fed every `GAP_US` µs
//!   at once, `ROUNDS` (10) rounds of 200 wakes: each waiter's user-space time
//!   before the sleep and after the wake, and the cell's split at the points of
//!   mwait's `stamps` feature (`mwait_benches::park_segments`).
//! - `fresh-park WAIT_MS [ROUNDS [block_on]]`: a park of `WAIT_MS` on a new
//!   `mwait::Parker` and on a new `parking::Parker`, each on a new thread, in turns
//!   for `ROUNDS` (31) rounds, after one park of each on other threads (500 ms, so
//!   that the first wait's work is done, and the parks sleep under valgrind too):
//!   per side the median CPU of the parking thread in its park, and the median of
//!   the rounds' ratios. With `ROUNDS` 1 under `valgrind --tool=callgrind
//!   --dump-instr=yes --toggle-collect='*mwait_park_measured'` the count is one
//!   fresh park's instructions, and the instruction addresses give the code lines
//!   it touched. With `block_on`, the same for a new thread's first `block_on` of a
//!   channel's `recv` (`mwait::block_on` against futures-lite's, as in
//!   `fresh-idle`), collected by `*mwait_block_on_measured` and
//!   `*stock_block_on_measured`.
//! - `zero-timeout [ROUNDS]`: polls with a zero timeout, as async-io's `block_on`
//!   polls its parker on every turn of its loop: ns per `Parker::park_timeout(ZERO)`
//!   with no token (`mwait::Parker` against `parking::Parker`), per
//!   `WaitCell::wait_until_timeout` and per `mwait::atomic::wait_timeout` with a zero
//!   timeout whose predicate is false, and per `WaitCell::wait_until_deadline` with
//!   a deadline that has passed (against a plain load of the same word), in
//!   `ROUNDS` (9) rounds of 10^6 calls each, the six in a rotated order: each one's
//!   median; then the two parkers' polls on two threads at once, each thread with a
//!   parker of its own (the slower thread's figure, `ROUNDS` rounds per side in
//!   turns), where a poll that writes a line the threads share would slow both.
//! - `oversubscribed PAIRS [ROUNDS [IMPL...]]`: `PAIRS` ping-pongs at once, unpinned,
//!   of each named mechanism (`waitcell futex` unless named) in turns, `ROUNDS` (8)
//!   rounds of 500 ms: per mechanism the round trips per second of all pairs and
//!   of the slowest pair (its share of all, 1/`PAIRS` where the scheduler is fair),
//!   and the per-round ratios of both to the first mechanism's. With more pairs
//!   than half the CPUs, the process oversubscribes its own machine, where a wait
//!   that spins (a hand-off spin after waking the partner included) takes a CPU its
//!   partner may need.
//!
//! To get the "before" side of a comparison, copy this file into a checkout of the
//! earlier commit (it uses only the harness's public functions) and run it there.

use mwait_benches::impls::{self, Make};
use mwait_benches::scenarios::{self, Placement};
use mwait_benches::{median, min_max, stats};
use mwait_support::duration_ns;
use std::time::{Duration, Instant};

/// The mechanism named `name`: a peer or a tier usable here (`impls::all`), or one
/// of the names only `impls::by_name` knows (`mwait-parker`, `mwait-atomic`).
fn make(name: &str) -> Make {
    impls::all()
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, m)| m)
        .or_else(|| {
            [mwait_benches::atomic::NAME, "mwait-parker"]
                .contains(&name)
                .then(|| impls::by_name(name))
                .flatten()
        })
        .unwrap_or_else(|| panic!("no mechanism named {name}"))
}

fn first_recheck() {
    let cell = mwait::WaitCell::new(0);
    let mut per_wait = Vec::new();
    for _ in 0..20 {
        let n = 200_000;
        let t0 = Instant::now();
        for _ in 0..n {
            let mut looks = 0;
            cell.wait_until(|_| {
                looks += 1;
                looks >= 2
            });
        }
        per_wait.push(duration_ns(t0.elapsed()) as f64 / f64::from(n));
    }
    println!(
        "wait_until to its first re-check: median {:.1} ns per wait (20 batches of 200000)",
        median(&per_wait)
    );
}

fn windows(seconds: u64) {
    const PARKED_NS: f64 = 5_000.0;
    const FAST_PAUSE_NS: f64 = 300.0;
    let (pause, cell) = (make("pause"), make("waitcell"));
    let window = Duration::from_millis(20);
    let (mut n, mut parked, mut fast_ratios) = (0, 0, Vec::new());
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(seconds) {
        let p = stats(&mut scenarios::pingpong(
            pause,
            Placement::TwoCpus,
            window,
            200,
        ))
        .p50;
        let w = stats(&mut scenarios::pingpong(
            cell,
            Placement::TwoCpus,
            window,
            200,
        ))
        .p50;
        n += 1;
        parked += usize::from(w > PARKED_NS);
        if p < FAST_PAUSE_NS {
            fast_ratios.push(w / p);
        }
    }
    println!("{n} window pairs of 20 ms: waitcell parked (p50 > 5 us) in {parked}");
    println!(
        "fast core pair (pause p50 < 300 ns) in {} windows: waitcell/pause median {:.2}x",
        fast_ratios.len(),
        median(&fast_ratios)
    );
}

fn pinned_wake() {
    const ROUND: Duration = Duration::from_millis(300);
    let workers = mwait_support::affinity_cpus();
    for (label, pins) in [("one CPU", (0, 0)), ("two CPUs", (0, 1))] {
        let mut p50 = [Vec::new(), Vec::new()];
        for _ in 0..6 {
            for (k, name) in ["futex", "waitcell"].into_iter().enumerate() {
                let load = std::thread::spawn(move || {
                    mwait_support::compute_throughput_process(workers, ROUND)
                });
                let mut r = scenarios::slow_producer_pinned(
                    make(name),
                    Duration::from_micros(50),
                    ROUND,
                    Some(pins),
                );
                load.join().unwrap();
                p50[k].push(stats(&mut r.wake_ns).p50);
            }
        }
        let (f, w) = (median(&p50[0]), median(&p50[1]));
        println!(
            "pinned to {label}: wake p50 futex {f:.0} ns, waitcell {w:.0} ns ({:.3}x)",
            w / f
        );
    }
}

fn interference_wake(names: &[&str], rounds: usize) {
    const ROUND: Duration = Duration::from_millis(300);
    for r in 0..rounds {
        let mut line = format!("round {r}:");
        for name in names {
            let (_, pair) = scenarios::interference(make(name), Duration::from_micros(50), ROUND);
            line += &format!(
                "  {name} {:.0} ns ({:.0} % on the producer's CPU: {:.0} ns, elsewhere {:.0} ns) cpu {:.3}",
                stats(&mut pair.wake_ns.clone()).p50,
                pair.share_on_producer_cpu() * 100.0,
                pair.p50_where(true),
                pair.p50_where(false),
                pair.waiter_cpu
            );
        }
        println!("{line}");
    }
}

fn waiter_cpu(names: &[&str], gap_us: u64, rounds: usize) {
    const ROUND: Duration = Duration::from_millis(500);
    let mut per: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    for _ in 0..rounds {
        for (k, name) in names.iter().enumerate() {
            let r = scenarios::slow_producer(make(name), Duration::from_micros(gap_us), ROUND);
            let wakes = r.wake_ns.len().max(1) as f64;
            per[k].push(r.waiter_cpu * duration_ns(ROUND) as f64 / wakes);
        }
    }
    for (k, name) in names.iter().enumerate() {
        println!(
            "{name}: waiter CPU per wake, median {:.0} ns",
            median(&per[k])
        );
    }
}

/// `executor`: see the module docs.
fn executor(workload: &str, side: &str, secs: u64) {
    use mwait_benches::clients::{self, Workload};
    let workload = Workload::ALL
        .into_iter()
        .find(|w| w.name() == workload)
        .expect("a workload: spawn_one, yield_now or channels");
    let block_on = clients::SIDES
        .iter()
        .find(|(name, _)| *name == side)
        .expect("a side: stock or mwait")
        .1;
    let usage = || {
        // SAFETY: rusage is plain integers, for which zero is a valid value, and
        // getrusage writes one such struct into the one we pass.
        let u = unsafe {
            let mut u: libc::rusage = std::mem::zeroed();
            libc::getrusage(libc::RUSAGE_SELF, &mut u);
            u
        };
        let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
        [
            us(u.ru_utime),
            us(u.ru_stime),
            u.ru_nvcsw as f64,
            u.ru_nivcsw as f64,
        ]
    };
    let before = usage();
    let mut samples = clients::executor(block_on, workload, Duration::from_secs(secs));
    let after = usage();
    let n = samples.len().max(1) as f64;
    let per = |k: usize| (after[k] - before[k]) / n;
    println!(
        "{side} {}: {:.0} ns per iteration (median of {}); per iteration: user {:.1} µs, \
         sys {:.1} µs, voluntary switches {:.2}, involuntary {:.2}",
        workload.name(),
        stats(&mut samples).p50,
        samples.len(),
        per(0),
        per(1),
        per(2),
        per(3)
    );
}

/// `broadcast`: see the module docs.
fn broadcast(names: &[&str], rounds: usize) {
    let cpus = mwait::Capabilities::detect().usable_cpus;
    // Per mechanism and round: the last waiter's p50 and p99.
    let mut per: Vec<Vec<[f64; 2]>> = vec![Vec::new(); names.len()];
    for _ in 0..rounds {
        for (k, name) in names.iter().enumerate() {
            let mut last =
                mwait_benches::scale::broadcast(make(name), cpus, Duration::from_millis(1_500));
            let s = stats(&mut last);
            per[k].push([s.p50, s.p99]);
        }
    }
    println!(
        "broadcast to {} waiters, {rounds} rounds:",
        mwait_benches::scale::broadcast_waiters(cpus)
    );
    for (k, name) in names.iter().enumerate() {
        let col = |i: usize| median(&per[k].iter().map(|r| r[i]).collect::<Vec<_>>());
        let ratio = |i: usize| {
            median(
                &per[k]
                    .iter()
                    .zip(&per[0])
                    .map(|(r, b)| r[i] / b[i])
                    .collect::<Vec<_>>(),
            )
        };
        println!(
            "{name}: last waiter p50 {:.0} ns ({:.2}x {}), p99 {:.0} ns ({:.2}x)",
            col(0),
            ratio(0),
            names[0],
            col(1),
            ratio(1)
        );
    }
}

fn oversubscribed(pairs: usize, rounds: usize, names: &[&str]) {
    const RUN: Duration = Duration::from_millis(500);
    // Per mechanism and round: the round trips per second of all pairs and of the
    // slowest pair.
    let mut per: Vec<Vec<[f64; 2]>> = vec![Vec::new(); names.len()];
    for r in 0..rounds {
        for k in (0..names.len()).map(|i| (i + r) % names.len()) {
            let counts = pairs_at_once(make(names[k]), pairs, RUN);
            let least = counts.iter().copied().min().unwrap_or(0);
            let per_s = |n: u64| n as f64 / RUN.as_secs_f64();
            per[k].push([per_s(counts.iter().sum()), per_s(least)]);
        }
    }
    println!(
        "{pairs} ping-pongs at once, unpinned, {rounds} rounds of {} ms:",
        RUN.as_millis()
    );
    for (k, name) in names.iter().enumerate() {
        let col = |i: usize| -> Vec<f64> { per[k].iter().map(|r| r[i]).collect() };
        let ratios = |i: usize| -> Vec<f64> {
            per[k]
                .iter()
                .zip(&per[0])
                .map(|(r, b)| r[i] / b[i])
                .collect()
        };
        let shares: Vec<f64> = per[k].iter().map(|r| r[1] / r[0]).collect();
        let ((lo, hi), (llo, lhi)) = (min_max(&ratios(0)), min_max(&ratios(1)));
        println!(
            "{name}: all pairs {:.0} round trips/s, {:.2}x {first} ({lo:.2}–{hi:.2}x); \
             the slowest pair {:.0}/s, {:.2}x {first}'s slowest ({llo:.2}–{lhi:.2}x), \
             a share of {:.2} (medians over the rounds, ranges of the per-round ratios)",
            median(&col(0)),
            median(&ratios(0)),
            median(&col(1)),
            median(&ratios(1)),
            median(&shares),
            first = names[0],
        );
    }
}

/// `pairs` ping-pongs of `make` on threads of their own, unpinned, for `run`: each
/// pair's round trips.
fn pairs_at_once(make: Make, pairs: usize, run: Duration) -> Vec<u64> {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let threads: Vec<_> = (0..pairs)
            .map(|_| {
                s.spawn(|| {
                    let mut pp = scenarios::PingPong::start_with(make, None, Duration::ZERO);
                    let mut n = 0u64;
                    while !stop.load(Relaxed) {
                        pp.round_trip();
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        std::thread::sleep(run);
        stop.store(true, Relaxed);
        threads
            .into_iter()
            .map(|t| t.join().expect("ping-pong thread"))
            .collect()
    })
}

fn long_wait_beside(rounds: usize, name: &str) {
    // At least this many wakes per round, so that a 5 ms gap's rounds are not
    // decided by a handful of wakes.
    const WAKES: u32 = 200;
    let (cell, futex) = (make(name), make("futex"));
    for gap_us in [200u64, 1_000, 5_000] {
        let gap = Duration::from_micros(gap_us);
        let round = Duration::from_millis(400).max(gap * WAKES);
        let (mut ratio, mut mine, mut theirs) = (Vec::new(), Vec::new(), Vec::new());
        for r in 0..rounds {
            let (w, f) = if r % 2 == 0 {
                scenarios::slow_producers_beside(cell, futex, gap, round, None)
            } else {
                let (f, w) = scenarios::slow_producers_beside(futex, cell, gap, round, None);
                (w, f)
            };
            let per_wake = |p: &scenarios::SlowProducer| {
                p.waiter_cpu * duration_ns(round) as f64 / p.wake_ns.len().max(1) as f64
            };
            let shares = (w.share_on_producer_cpu(), f.share_on_producer_cpu());
            let (w, f) = (per_wake(&w), per_wake(&f));
            println!(
                "  gap {gap_us} us, round {r}: CPU per wake {name} {w:.0} ns, futex {f:.0} ns \
                 ({:.2}x); woken on the producer's CPU {:.0} % / {:.0} %",
                w / f,
                shares.0 * 100.0,
                shares.1 * 100.0
            );
            ratio.push(w / f);
            mine.push(w);
            theirs.push(f);
        }
        let (lo, hi) = min_max(&ratio);
        println!(
            "gap {gap_us} us: {name}/futex waiter CPU per wake {:.3}x (range {lo:.2}-{hi:.2}x, \
             {rounds} rounds): {name} {:.0} ns, futex {:.0} ns",
            median(&ratio),
            median(&mine),
            median(&theirs)
        );
    }
}

/// `spsc-placement`: see the module docs.
fn spsc_placement(rounds: usize) {
    use mwait_benches::spsc::{throughput_placed, Channel};
    const MESSAGES: u32 = 2_000_000;
    for (name, place) in [
        ("free", None),
        ("apart (CPUs 0 and 1)", Some(Placement::TwoCpus)),
        ("same CPU (0)", Some(Placement::SameCpu)),
    ] {
        const ORDER: [Channel; 3] = [Channel::Ring, Channel::Crossbeam, Channel::PauseRing];
        // Per channel of ORDER, its throughput in each round (M msg/s).
        let mut got: [Vec<f64>; 3] = Default::default();
        for r in 0..rounds {
            for i in mwait_benches::round_order(ORDER.len(), r) {
                got[i].push(throughput_placed(ORDER[i], MESSAGES, place) / 1e6);
            }
        }
        let ratio = |n: usize, d: usize| {
            let r: Vec<f64> = got[n].iter().zip(&got[d]).map(|(a, b)| a / b).collect();
            let (lo, hi) = min_max(&r);
            format!("{:.2}x (range {lo:.2}-{hi:.2}x)", median(&r))
        };
        println!(
            "{name}: ring {:.1} M msg/s, crossbeam-channel {:.1} M msg/s, PAUSE ring {:.1} M \
             msg/s (medians of {rounds} rounds); ring/crossbeam {}, ring/PAUSE ring {}",
            median(&got[0]),
            median(&got[1]),
            median(&got[2]),
            ratio(0, 1),
            ratio(0, 2)
        );
    }
}

/// `stalled-pingpong`: see the module docs.
fn stalled_pingpong(every: u32) {
    use mwait::WaitCell;
    use std::sync::Arc;
    const ROUND_TRIPS: u32 = 400_000;
    const STALL: Duration = Duration::from_millis(3);
    const BATCH: u32 = 16;
    let (a, b) = (Arc::new(WaitCell::new(0)), Arc::new(WaitCell::new(0)));
    let partner = {
        let (a, b) = (a.clone(), b.clone());
        std::thread::spawn(move || {
            mwait_support::pin_to_cpu(1);
            let mut i = 0;
            while i < ROUND_TRIPS {
                i = b.wait_until(|v| v > i);
                if i % every == 0 {
                    std::thread::sleep(STALL);
                }
                a.store(i);
            }
        })
    };
    mwait_support::pin_to_cpu(0);
    let before = a.stats();
    let (mut samples, mut next) = (Vec::new(), 0u32);
    while next < ROUND_TRIPS {
        let t0 = Instant::now();
        for _ in 0..BATCH {
            next += 1;
            b.store(next);
            a.wait_until(|v| v >= next);
        }
        samples.push(duration_ns(t0.elapsed()) / u64::from(BATCH));
    }
    partner.join().expect("the partner does not panic");
    mwait_support::unpin();
    // A batch with a stall in it is one in every / BATCH: the p90 stays clear of them
    // for every >= 160.
    samples.sort_unstable();
    let at = |q: usize| samples[(samples.len() - 1) * q / 100];
    println!(
        "a stall of {} ms every {every} round trips: round trip p50 {} ns, p90 {} ns \
         (per batch of {BATCH}); the waiting cell: {}",
        STALL.as_millis(),
        at(50),
        at(90),
        a.stats().since(&before)
    );
}

/// `pattern-switch`: see the module docs.
fn pattern_switch() {
    use mwait::WaitCell;
    use std::sync::Arc;
    const ROUND_TRIPS: u32 = 200_000;
    const SLOW_VALUES: u32 = 300;
    const GAP: Duration = Duration::from_millis(1);
    // `a` is the cell under test: the main thread waits on it in every phase.
    let (a, b) = (Arc::new(WaitCell::new(0)), Arc::new(WaitCell::new(0)));
    let mut next = 0u32;
    mwait_support::pin_to_cpu(0);
    for phase in 0..4 {
        let before = a.stats();
        let from = next;
        if phase % 2 == 0 {
            let to = from + ROUND_TRIPS;
            let partner = {
                let (a, b) = (a.clone(), b.clone());
                std::thread::spawn(move || {
                    mwait_support::pin_to_cpu(1);
                    let mut i = from;
                    while i < to {
                        i = b.wait_until(|v| v > i);
                        a.store(i);
                    }
                })
            };
            let mut samples = Vec::new();
            while next < to {
                let t0 = Instant::now();
                for _ in 0..16 {
                    next += 1;
                    b.store(next);
                    a.wait_until(|v| v >= next);
                }
                samples.push(duration_ns(t0.elapsed()) / 16);
            }
            partner.join().unwrap();
            println!(
                "phase {phase}, ping-pong: round trip p50 {:.0} ns; cell: {}",
                stats(&mut samples).p50,
                a.stats().since(&before)
            );
        } else {
            let to = from + SLOW_VALUES;
            let producer = {
                let a = a.clone();
                std::thread::spawn(move || {
                    mwait_support::pin_to_cpu(1);
                    for v in from + 1..=to {
                        std::thread::sleep(GAP);
                        a.store(v);
                    }
                })
            };
            let cpu0 = mwait_support::thread_cpu_time();
            while next < to {
                next += 1;
                a.wait_until(|v| v >= next);
            }
            let cpu = mwait_support::thread_cpu_time() - cpu0;
            producer.join().unwrap();
            println!(
                "phase {phase}, a store every {} us: waiter CPU per wake {:.0} ns; cell: {}",
                GAP.as_micros(),
                duration_ns(cpu) as f64 / f64::from(SLOW_VALUES),
                a.stats().since(&before)
            );
        }
    }
    mwait_support::unpin();
}

/// `atomic`: see the module docs.
fn atomic() {
    use mwait_benches::atomic as a;
    for (name, mut ns) in a::wake_costs(Duration::from_millis(300)) {
        ns.sort_by(f64::total_cmp);
        println!(
            "wake {name}: {:.2} ns (median of {})",
            median(&ns),
            ns.len()
        );
    }
    let rounds = a::pingpong_rounds(7);
    let ratio =
        |i: usize, j: usize| median(&rounds.iter().map(|r| r[i] / r[j]).collect::<Vec<_>>());
    let p50 = |i: usize| median(&rounds.iter().map(|r| r[i]).collect::<Vec<_>>());
    for (i, n) in a::PINGPONG_MECHANISMS.iter().enumerate() {
        println!(
            "pingpong {n}: p50 {:.0} ns (median of {} rounds)",
            p50(i),
            rounds.len()
        );
    }
    println!(
        "pingpong {} / waitcell {:.2}x, / pause {:.2}x, / atomic-wait {:.3}x (medians of per-round ratios)",
        a::NAME,
        ratio(0, 1),
        ratio(0, 2),
        ratio(0, 3)
    );
    let g = a::rss_growth(10_000_000, 64);
    println!(
        "rss: {} words, {} parked: +{:.0} KiB (bound {:.0} KiB)",
        g.words, g.parked, g.growth_kib, g.bound_kib
    );
    let w = a::any_vs_one_wakes(5, 200);
    let r = median(&w.iter().map(|(any, one)| any / one).collect::<Vec<_>>());
    println!(
        "wake p50: wait_any over 8 {:.0} ns, one word {:.0} ns: {r:.2}x (median of per-round ratios)",
        median(&w.iter().map(|x| x.0).collect::<Vec<_>>()),
        median(&w.iter().map(|x| x.1).collect::<Vec<_>>()),
    );
}

fn fresh_idle(wait: Duration, rounds: usize) {
    use mwait_benches::clients::{idle_block_on_cpu_for, idle_park_cpu_for, ParkerKind, SIDES};
    // The process's one-time work (detection, the selection's self-test, the first
    // allocations) on a thread of its own, not in the first round.
    for (_, b) in SIDES {
        idle_block_on_cpu_for(b, true, Duration::from_millis(1));
    }
    // Side `k`: 0 stock, 1 mwait (as in `SIDES`), 2 the bare futex parker; on a
    // fresh thread or not.
    let block_on = |k: usize, fresh| idle_block_on_cpu_for(SIDES[k].1, fresh, wait);
    const PARKERS: [ParkerKind; 3] = [ParkerKind::Stock, ParkerKind::Mwait, ParkerKind::Bare];
    let park = |k: usize, fresh| idle_park_cpu_for(PARKERS[k], fresh, wait);
    type Measure<'a> = &'a dyn Fn(usize, bool) -> u64;
    let ways: [(&str, Measure, usize); 2] =
        [("block_on", &block_on, 2), ("Parker::park", &park, 3)];
    for (what, measure, sides) in ways {
        for (kind, fresh) in [("fresh thread", true), ("warm thread", false)] {
            let mut cpu: [Vec<f64>; 3] = Default::default();
            let mut ratios: [Vec<f64>; 3] = Default::default();
            for p in 0..rounds {
                let mut round = [0.0; 3];
                // The sides in a rotated order, so that none always goes first.
                for i in 0..sides {
                    let k = (p + i) % sides;
                    round[k] = measure(k, fresh) as f64;
                    cpu[k].push(round[k]);
                }
                for k in 1..sides {
                    ratios[k].push(round[k] / round[0]);
                }
            }
            let s = median(&cpu[0]);
            print!(
                "{kind}, {} ms idle {what}, {rounds} rounds: stock {s:.0} ns",
                wait.as_millis()
            );
            for (k, name) in ["mwait", "bare futex"].iter().enumerate().take(sides - 1) {
                let m = median(&cpu[k + 1]);
                print!(
                    "; {name} {m:.0} ns, median of the rounds' ratios {:.3}x, ratio of \
                     the medians {:.3}x",
                    median(&ratios[k + 1]),
                    m / s
                );
            }
            println!(" (CPU of the waiting thread)");
        }
    }
}

/// What `steady-park` waits on.
#[derive(Copy, Clone, PartialEq)]
enum SteadyOn {
    Cell,
    Parker,
    Atomic,
}

/// `steady-park`: see the module docs.
fn steady_park(wakes: u32, on: SteadyOn, timed: bool) {
    use std::sync::atomic::{
        AtomicU32,
        Ordering::{Acquire, Release},
    };
    use std::sync::Arc;
    const GAP: Duration = Duration::from_micros(300);
    // How many values the waiter has taken: the feeder sends the next one only then,
    // so that no two merge into one wait.
    let taken = Arc::new(AtomicU32::new(0));
    let feed = |taken: Arc<AtomicU32>, send: Box<dyn Fn(u32) + Send>| {
        std::thread::spawn(move || {
            for i in 0..wakes {
                std::thread::sleep(GAP);
                while taken.load(Acquire) < i {
                    std::thread::sleep(GAP / 8);
                }
                send(i + 1);
            }
        })
    };
    // The waits, each through `wait(i)`, the `i`th value taken once it returns.
    let waits = |wait: &mut dyn FnMut(u32)| {
        for i in 0..wakes {
            wait(i);
            taken.store(i + 1, Release);
        }
    };
    let cpu0 = mwait_support::thread_cpu_time();
    let feeder = match on {
        SteadyOn::Parker => {
            let p = mwait::Parker::new();
            let u = p.unparker();
            let feeder = feed(
                taken.clone(),
                Box::new(move |_| {
                    u.unpark();
                }),
            );
            /// One wait, alone in a function that callgrind can collect.
            #[inline(never)]
            fn mwait_steady_wait_parker(p: &mwait::Parker, timed: bool) {
                match timed {
                    true => assert!(p.park_timeout(Duration::from_secs(60)), "a token"),
                    false => p.park(),
                }
            }
            waits(&mut |_| mwait_steady_wait_parker(&p, timed));
            feeder
        }
        SteadyOn::Cell => {
            let cell = Arc::new(mwait::WaitCell::new(0));
            let c = cell.clone();
            let feeder = feed(taken.clone(), Box::new(move |v| c.store(v)));
            /// One wait, alone in a function that callgrind can collect.
            #[inline(never)]
            fn mwait_steady_wait_cell(cell: &mwait::WaitCell, i: u32, timed: bool) {
                match timed {
                    true => {
                        let r = cell.wait_until_timeout(|v| v > i, Duration::from_secs(60));
                        assert!(!r.is_timed_out(), "a value");
                    }
                    false => {
                        cell.wait_until(|v| v > i);
                    }
                }
            }
            waits(&mut |i| mwait_steady_wait_cell(&cell, i, timed));
            feeder
        }
        SteadyOn::Atomic => {
            let word = Arc::new(AtomicU32::new(0));
            let w = word.clone();
            let feeder = feed(
                taken.clone(),
                Box::new(move |v| {
                    w.store(v, Release);
                    mwait::atomic::wake_all(&*w);
                }),
            );
            /// One wait, alone in a function that callgrind can collect.
            #[inline(never)]
            fn mwait_steady_wait_atomic(word: &AtomicU32, i: u32, timed: bool) {
                match timed {
                    true => {
                        let r = mwait::atomic::wait_timeout(word, i, Duration::from_secs(60));
                        assert!(!r.is_timed_out(), "a value");
                    }
                    false => {
                        mwait::atomic::wait(word, i);
                    }
                }
            }
            waits(&mut |i| mwait_steady_wait_atomic(&word, i, timed));
            feeder
        }
    };
    let cpu = duration_ns(mwait_support::thread_cpu_time() - cpu0);
    feeder.join().expect("the feeder");
    let kind = match on {
        SteadyOn::Cell => "WaitCell",
        SteadyOn::Parker => "Parker",
        SteadyOn::Atomic => "bare AtomicU32",
    };
    println!(
        "{wakes} parked wakes of a {kind}: waiter CPU per wake {} ns",
        cpu / u64::from(wakes.max(1))
    );
}

/// A new thread's park on a new `mwait::Parker`, unparked `wait` later; its CPU.
/// `measured`: through a function that callgrind can collect alone.
fn new_mwait_park(wait: Duration, measured: bool) -> u64 {
    /// The park alone.
    #[inline(never)]
    fn mwait_park_measured(p: &mwait::Parker) {
        p.park();
    }
    let p = mwait::Parker::new();
    let u = p.unparker();
    park_measured(
        wait,
        move || {
            u.unpark();
        },
        || match measured {
            true => mwait_park_measured(&p),
            false => p.park(),
        },
    )
}

/// [`new_mwait_park`] on a `parking::Parker`.
fn new_parking_park(wait: Duration, measured: bool) -> u64 {
    /// The park alone (see [`new_mwait_park`]).
    #[inline(never)]
    fn parking_park_measured(p: &parking::Parker) {
        p.park();
    }
    let (p, u) = parking::pair();
    park_measured(
        wait,
        move || {
            u.unpark();
        },
        || match measured {
            true => parking_park_measured(&p),
            false => p.park(),
        },
    )
}

/// `park` on the calling thread, with `unpark` called `wait` later on another; the
/// park's CPU.
fn park_measured(
    wait: Duration,
    unpark: impl FnOnce() + Send + 'static,
    park: impl FnOnce(),
) -> u64 {
    let unparker = std::thread::spawn(move || {
        std::thread::sleep(wait);
        unpark();
    });
    let cpu0 = mwait_support::thread_cpu_time();
    park();
    let cpu = duration_ns(mwait_support::thread_cpu_time() - cpu0);
    unparker.join().expect("the unparking thread");
    cpu
}

/// A new thread's first `block_on` (`mwait`: mwait's, else futures-lite's) of a
/// channel's `recv`, which a send `wait` later completes; its CPU. `measured`:
/// through a function that callgrind can collect alone.
fn new_block_on(mwait: bool, wait: Duration, measured: bool) -> u64 {
    type Rx = async_channel::Receiver<()>;
    fn block_on(mwait: bool, rx: &Rx) {
        let recv = async { rx.recv().await.expect("the sender runs") };
        match mwait {
            true => mwait::block_on(recv),
            false => futures_lite::future::block_on(recv),
        }
    }
    /// The `block_on` alone.
    #[inline(never)]
    fn mwait_block_on_measured(rx: &Rx) {
        block_on(true, rx);
    }
    /// The `block_on` alone (see [`new_block_on`]).
    #[inline(never)]
    fn stock_block_on_measured(rx: &Rx) {
        block_on(false, rx);
    }
    let (tx, rx) = async_channel::bounded::<()>(1);
    park_measured(
        wait,
        move || tx.send_blocking(()).expect("the waiter runs"),
        || match (measured, mwait) {
            (true, true) => mwait_block_on_measured(&rx),
            (true, false) => stock_block_on_measured(&rx),
            (false, _) => block_on(mwait, &rx),
        },
    )
}

/// `zero-timeout`: see the module docs.
fn zero_timeout(rounds: usize) {
    use std::hint::black_box;
    use std::sync::atomic::{AtomicU32, Ordering};
    const CALLS: u32 = 1_000_000;
    let (mine, theirs) = (mwait::Parker::new(), parking::Parker::new());
    let (cell, word) = (mwait::WaitCell::new(0), AtomicU32::new(0));
    // Each poll's time in ns, over CALLS calls.
    let time = |poll: &dyn Fn() -> u32| {
        let t = Instant::now();
        for _ in 0..CALLS {
            black_box(poll());
        }
        duration_ns(t.elapsed()) as f64 / f64::from(CALLS)
    };
    let past = Instant::now();
    let polls: [(&str, &dyn Fn() -> u32); 6] = [
        ("mwait::Parker::park_timeout(ZERO)", &|| {
            u32::from(mine.park_timeout(Duration::ZERO))
        }),
        ("parking::Parker::park_timeout(ZERO)", &|| {
            u32::from(theirs.park_timeout(Duration::ZERO))
        }),
        ("WaitCell::wait_until_timeout(.., ZERO)", &|| {
            cell.wait_until_timeout(|v| v == 1, Duration::ZERO).value()
        }),
        ("atomic::wait_timeout(.., ZERO)", &|| {
            mwait::atomic::wait_timeout(&word, 0, Duration::ZERO).value()
        }),
        (
            "WaitCell::wait_until_deadline(.., a passed instant)",
            &|| cell.wait_until_deadline(|v| v == 1, past).value(),
        ),
        ("a load of the word", &|| {
            black_box(&word).load(Ordering::Acquire)
        }),
    ];
    let mut got: Vec<Vec<f64>> = vec![Vec::new(); polls.len()];
    for r in 0..rounds {
        for i in mwait_benches::round_order(polls.len(), r) {
            got[i].push(time(polls[i].1));
        }
    }
    for ((name, _), ns) in polls.iter().zip(&got) {
        let (lo, hi) = min_max(ns);
        println!(
            "{name}: {:.1} ns per call (median of {rounds} rounds of \
             {CALLS}; {lo:.1}-{hi:.1})",
            median(ns)
        );
    }
    // Two threads at once, each polling a parker of its own: what one thread's polls
    // cost the other's (a round's figure is the slower thread's).
    let pair = |stock: bool| {
        let poller = move || {
            let t = Instant::now();
            if stock {
                let p = parking::Parker::new();
                for _ in 0..CALLS {
                    black_box(p.park_timeout(Duration::ZERO));
                }
            } else {
                let p = mwait::Parker::new();
                for _ in 0..CALLS {
                    black_box(p.park_timeout(Duration::ZERO));
                }
            }
            duration_ns(t.elapsed()) as f64 / f64::from(CALLS)
        };
        let (a, b) = (std::thread::spawn(poller), std::thread::spawn(poller));
        let (a, b) = (a.join().expect("a poller"), b.join().expect("a poller"));
        a.max(b)
    };
    let mut pairs: [Vec<f64>; 2] = Default::default();
    for r in 0..rounds {
        for side in [r % 2, 1 - r % 2] {
            pairs[side].push(pair(side == 1));
        }
    }
    for (name, ns) in ["mwait::Parker", "parking::Parker"].iter().zip(&pairs) {
        let (lo, hi) = min_max(ns);
        println!(
            "{name}::park_timeout(ZERO) on two threads at once, each its own parker: \
             {:.1} ns per call, the slower thread (median of {rounds} rounds; \
             {lo:.1}-{hi:.1})",
            median(ns)
        );
    }
}

/// `fresh-park`: see the module docs.
fn fresh_park(wait: Duration, rounds: usize, block_on: bool) {
    // Side 0 parks on `mwait::Parker` (or runs `mwait::block_on`), side 1 on
    // `parking::Parker` (or runs futures-lite's `block_on`), each on a new thread.
    let on_new_thread = move |side: usize, wait: Duration, measured: bool| {
        let park: fn(Duration, bool) -> u64 = match (block_on, side) {
            (true, 0) => |w, m| new_block_on(true, w, m),
            (true, _) => |w, m| new_block_on(false, w, m),
            (false, 0) => new_mwait_park,
            (false, _) => new_parking_park,
        };
        std::thread::spawn(move || park(wait, measured))
            .join()
            .expect("the parking thread")
    };
    for side in [0, 1] {
        on_new_thread(side, Duration::from_millis(500), false);
    }
    let mut cpu: [Vec<f64>; 2] = Default::default();
    let mut ratios = Vec::new();
    for r in 0..rounds {
        let mut pair = [0.0; 2];
        for side in [r % 2, 1 - r % 2] {
            pair[side] = on_new_thread(side, wait, true) as f64;
            cpu[side].push(pair[side]);
        }
        ratios.push(pair[0] / pair[1]);
    }
    let (what, names) = match block_on {
        true => (
            "first block_on",
            ["mwait::block_on", "futures-lite's block_on"],
        ),
        false => ("park", ["mwait::Parker", "parking::Parker"]),
    };
    println!(
        "a new thread's {what} of {} ms, {rounds} rounds: {} {:.0} ns, {} {:.0} ns of \
         its CPU (medians); median of the rounds' ratios {:.3}x",
        wait.as_millis(),
        names[0],
        median(&cpu[0]),
        names[1],
        median(&cpu[1]),
        median(&ratios)
    );
}

/// The argument that makes this binary a child of `first-wake`.
const FIRST_WAKE_CHILD: &str = "--first-wake-child";

/// `first-wake`: see the module docs.
fn first_wake(processes: usize, names: &[&str]) {
    let exe = std::env::current_exe().expect("this binary's path");
    // Per mechanism, (late, CPU) of each child.
    let mut got: Vec<(Vec<f64>, Vec<f64>)> = vec![Default::default(); names.len()];
    for _ in 0..processes {
        for (i, name) in names.iter().enumerate() {
            let out = std::process::Command::new(&exe)
                .args([FIRST_WAKE_CHILD, name])
                .output()
                .expect("the child runs");
            let text = String::from_utf8_lossy(&out.stdout);
            let nums: Vec<f64> = text
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            let [late, cpu] = nums[..] else {
                panic!(
                    "child {name}: {text} {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            };
            got[i].0.push(late);
            got[i].1.push(cpu);
        }
    }
    for (name, (mut late, cpu)) in names.iter().zip(got) {
        late.sort_by(f64::total_cmp);
        println!(
            "{name}: the first wait returned {:.0} us after the store (median of {} \
             processes; {:.0}..{:.0} us); its thread's CPU in it: median {:.0} us",
            median(&late) / 1e3,
            late.len(),
            late[0] / 1e3,
            late[late.len() - 1] / 1e3,
            median(&cpu) / 1e3
        );
    }
}

/// A child of `first-wake`: nothing of the mechanism runs before the wait.
fn first_wake_child(name: &str) {
    // `impls::by_name`, which asks mwait nothing: detection and the selection run in
    // the first wait, as in a program that meets the crate there.
    let make = impls::by_name(name).unwrap_or_else(|| panic!("no mechanism named {name}"));
    let w = mwait_benches::cold::first_wake(make);
    println!("{} {}", w.late_ns, w.cpu_ns);
}

/// The argument that makes this binary a child of `cold-long-wait`.
const COLD_LONG_WAIT_CHILD: &str = "--cold-long-wait-child";

/// `cold-long-wait`: see the module docs.
fn cold_long_wait(rounds: usize) {
    let exe = std::env::current_exe().expect("this binary's path");
    let child = |prepared: bool, order: &str| -> f64 {
        let out = std::process::Command::new(&exe)
            .args([
                COLD_LONG_WAIT_CHILD,
                if prepared { "prepared" } else { "plain" },
                order,
            ])
            .output()
            .expect("the child runs");
        let text = String::from_utf8_lossy(&out.stdout);
        text.trim()
            .parse()
            .unwrap_or_else(|_| panic!("child: {text} {}", String::from_utf8_lossy(&out.stderr)))
    };
    let mut means: [Vec<f64>; 2] = Default::default();
    for r in 0..rounds {
        for k in [r % 2, 1 - r % 2] {
            let prepared = k == 1;
            let ratio = (child(prepared, "second") * child(prepared, "first")).sqrt();
            means[k].push(ratio);
        }
    }
    for (k, what) in [
        "first wait makes the process's one-time work",
        "mwait::prepare() first",
    ]
    .into_iter()
    .enumerate()
    {
        let shown: Vec<String> = means[k].iter().map(|m| format!("{m:.2}")).collect();
        println!(
            "{what}: waitcell / futex waiter CPU {:.3}x, median of {rounds} rounds \
             (each the geometric mean of both start orders): {}",
            median(&means[k]),
            shown.join(" ")
        );
    }
}

/// A child of `cold-long-wait`: the bench's cold long-wait pairs, after
/// `mwait::prepare()` where `prepared`; prints the waiter CPU ratio.
fn cold_long_wait_child(prepared: bool, started_first: bool) {
    if prepared {
        mwait::prepare();
    }
    let cell = impls::by_name("waitcell").expect("a known mechanism");
    let m = mwait_benches::cold::long_wait(cell, Duration::from_millis(300), started_first);
    println!("{}", m.get("cpu_vs_futex"));
}

/// One slow pair of `long-wait-trace`: a fresh cell of `make` and a fresh waiter
/// thread (pinned to CPU 1 where `pinned`, its producer, the calling thread, to CPU
/// 0), `wakes` stores `gap` apart. Returns the waiter's CPU time in each wait, the
/// first wait first.
fn traced_pair(make: Make, gap: Duration, wakes: u32, pinned: bool) -> Vec<u64> {
    use mwait_support::{pin_to_cpu, thread_cpu_time, unpin};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let sig: Arc<dyn mwait_benches::Signal> = Arc::from(make());
    let stop = Arc::new(AtomicBool::new(false));
    let waiter = {
        let (sig, stop) = (sig.clone(), stop.clone());
        std::thread::spawn(move || {
            if pinned {
                pin_to_cpu(1);
            }
            let mut cpu = Vec::with_capacity(wakes as usize + 2);
            cpu.push(duration_ns(thread_cpu_time()));
            let mut i = 0u32;
            while !stop.load(Ordering::Acquire) {
                i = sig.wait_ge(i + 1);
                cpu.push(duration_ns(thread_cpu_time()));
            }
            cpu.windows(2).map(|w| w[1] - w[0]).collect::<Vec<u64>>()
        })
    };
    if pinned {
        pin_to_cpu(0);
    }
    for i in 1..=wakes {
        std::thread::sleep(gap);
        sig.set(i);
    }
    stop.store(true, Ordering::Release);
    sig.set(wakes + 1);
    if pinned {
        unpin();
    }
    let mut per_wait = waiter.join().expect("the waiter does not panic");
    // The last wait is the one that ends the run.
    per_wait.truncate(wakes as usize);
    per_wait
}

/// `long-wait-trace`: see the module docs.
/// Where `long-wait-trace` runs its two pairs.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Place {
    /// At once, producers on CPU 0 and waiters on CPU 1.
    Pinned,
    /// At once, where the scheduler puts them.
    Unpinned,
    /// One after the other, where the scheduler puts them.
    Alone,
}

fn long_wait_trace(place: Place, rounds: usize, wakes: u32, gap_us: u64, names: [&str; 2]) {
    const FIRST: usize = 6;
    assert!(
        wakes as usize > 2 * FIRST,
        "at least {} wakes",
        2 * FIRST + 1
    );
    let gap = Duration::from_micros(gap_us);
    let makes = [make(names[0]), make(names[1])];
    // Per round, each mechanism's CPU per wait, and whether the first one's pair
    // was the one started second.
    let mut runs: Vec<([Vec<u64>; 2], bool)> = Vec::new();
    let pinned = place == Place::Pinned;
    for r in 0..rounds {
        let second = r % 2;
        let first = makes[1 - second];
        let (mine, theirs) = if place == Place::Alone {
            let theirs = traced_pair(first, gap, wakes, false);
            (traced_pair(makes[second], gap, wakes, false), theirs)
        } else {
            let other = std::thread::spawn(move || traced_pair(first, gap, wakes, pinned));
            std::thread::sleep(gap / 2);
            let mine = traced_pair(makes[second], gap, wakes, pinned);
            (mine, other.join().expect("the other pair does not panic"))
        };
        let pair = if second == 0 {
            [mine, theirs]
        } else {
            [theirs, mine]
        };
        runs.push((pair, second == 0));
    }
    let total = |v: &[u64]| v.iter().sum::<u64>() as f64;
    let ratio = |p: &[Vec<u64>; 2]| total(&p[0]) / total(&p[1]);
    let show = |second: bool| -> String {
        runs.iter()
            .filter(|(_, s)| *s == second)
            .map(|(p, _)| format!("{:.2}", ratio(p)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let both_ways: Vec<f64> = runs
        .chunks_exact(2)
        .map(|c| (ratio(&c[0].0) * ratio(&c[1].0)).sqrt())
        .collect();
    println!(
        "{} / {} waiter CPU, {rounds} rounds of {wakes} wakes {gap_us} us apart, {}:",
        names[0],
        names[1],
        match place {
            Place::Pinned => "pinned",
            Place::Unpinned => "unpinned",
            Place::Alone => "one pair after the other",
        }
    );
    let started = if place == Place::Alone {
        "ran"
    } else {
        "started"
    };
    println!("  per round, {} {started} second: {}", names[0], show(true));
    println!(
        "  per round, {} {started} first:  {}",
        names[0],
        show(false)
    );
    println!(
        "  median of the two-way rounds' geometric means: {:.3}x",
        median(&both_ways)
    );
    for (k, name) in names.iter().enumerate() {
        let col = |f: &dyn Fn(&[u64]) -> f64| {
            median(&runs.iter().map(|(p, _)| f(&p[k])).collect::<Vec<_>>())
        };
        let firsts: Vec<String> = (0..FIRST)
            .map(|i| format!("{:.0}", col(&|v| v[i] as f64)))
            .collect();
        println!(
            "  {name}: CPU per wait, waits 0..{FIRST}: {} ns; the rest {:.0} ns on average; \
             in all {:.0} ns",
            firsts.join(", "),
            col(&|v| total(&v[FIRST..]) / (v.len() - FIRST) as f64),
            col(&|v| total(v))
        );
    }
    // The later waits that cost the first mechanism most over the second's wait of
    // the same index: where a probe, or a park that measures its wake-up, falls.
    // Among the waits every run made: a waiter that was late for a store sees the
    // next value too, and makes one wait fewer.
    let made = runs
        .iter()
        .flat_map(|(p, _)| p.iter().map(Vec::len))
        .min()
        .unwrap_or(0);
    let mut dearest: Vec<(usize, f64)> = (FIRST..made)
        .map(|i| {
            let excess: Vec<f64> = runs
                .iter()
                .map(|(p, _)| p[0][i] as f64 - p[1][i] as f64)
                .collect();
            (i, median(&excess))
        })
        .collect();
    dearest.sort_by(|a, b| b.1.total_cmp(&a.1));
    let dearest: Vec<String> = dearest
        .iter()
        .take(3)
        .map(|(i, ns)| format!("wait {i} {ns:+.0} ns"))
        .collect();
    println!(
        "  {} over {}, the dearest later waits (median excess): {}",
        names[0],
        names[1],
        dearest.join(", ")
    );
}

/// `park-segments`: see the module docs.
fn park_segments(gap_us: &str, rounds: &str) {
    let gap = Duration::from_micros(gap_us.parse().expect("gap in µs"));
    let rounds: usize = rounds.parse().expect("rounds");
    #[cfg(all(feature = "stamps", target_os = "linux"))]
    mwait_benches::park_segments::run(gap, rounds);
    #[cfg(not(all(feature = "stamps", target_os = "linux")))]
    {
        let _ = (gap, rounds);
        eprintln!(
            "park-segments needs Linux and mwait's stamps: cargo run --release -p \
             mwait-benches --features stamps --bin mwait-experiments -- park-segments ..."
        );
        std::process::exit(2);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // The compute workers of `pinned-wake` and `interference-wake` run in a process
    // of their own: this binary, started again.
    if mwait_support::compute_worker_entry(&args) {
        return;
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args[..] {
        ["first-recheck"] => first_recheck(),
        [FIRST_WAKE_CHILD, name] => first_wake_child(name),
        [COLD_LONG_WAIT_CHILD, start, order] => {
            cold_long_wait_child(start == "prepared", order == "first")
        }
        ["cold-long-wait"] => cold_long_wait(10),
        ["cold-long-wait", n] => cold_long_wait(n.parse().expect("rounds")),
        ["first-wake"] => first_wake(15, &["waitcell", "futex"]),
        ["first-wake", n] => first_wake(n.parse().expect("processes"), &["waitcell", "futex"]),
        ["first-wake", n, ref names @ ..] => first_wake(n.parse().expect("processes"), names),
        ["windows"] => windows(30),
        ["windows", s] => windows(s.parse().expect("seconds")),
        ["pinned-wake"] => pinned_wake(),
        ["waiter-cpu", gap, ref names @ ..] if !names.is_empty() => {
            waiter_cpu(names, gap.parse().expect("gap in µs"), 10)
        }
        ["interference-wake", ref names @ ..] if !names.is_empty() => interference_wake(names, 8),
        ["long-wait-beside"] => long_wait_beside(8, "waitcell"),
        ["long-wait-beside", n] => long_wait_beside(n.parse().expect("rounds"), "waitcell"),
        ["long-wait-beside", n, name] => long_wait_beside(n.parse().expect("rounds"), name),
        ["pattern-switch"] => pattern_switch(),
        ["oversubscribed", n, ref rest @ ..] => oversubscribed(
            n.parse().expect("pairs"),
            rest.first().map_or(8, |r| r.parse().expect("rounds")),
            match rest.get(1..) {
                Some(names) if !names.is_empty() => names,
                _ => &["waitcell", "futex"],
            },
        ),
        ["spsc-placement"] => spsc_placement(10),
        ["spsc-placement", n] => spsc_placement(n.parse().expect("rounds")),
        ["stalled-pingpong", every] => stalled_pingpong(every.parse().expect("round trips")),
        ["atomic"] => atomic(),
        ["executor", workload, side, secs] => {
            executor(workload, side, secs.parse().expect("seconds"))
        }
        ["broadcast", rounds, ref names @ ..] if !names.is_empty() => {
            broadcast(names, rounds.parse().expect("rounds"))
        }
        ["long-wait-trace", place, rounds, wakes, gap, ref rest @ ..]
            if rest.len() % 2 == 0 && rest.len() <= 2 =>
        {
            let names = match rest {
                [a, b] => [*a, *b],
                _ => ["waitcell", "futex"],
            };
            let place = match place {
                "pinned" => Place::Pinned,
                "unpinned" => Place::Unpinned,
                "alone" => Place::Alone,
                other => panic!("long-wait-trace: {other} is not pinned, unpinned or alone"),
            };
            long_wait_trace(
                place,
                rounds.parse().expect("rounds"),
                wakes.parse().expect("wakes"),
                gap.parse().expect("gap in µs"),
                names,
            )
        }
        ["steady-park", n, ref rest @ ..] => {
            let on = match rest.first() {
                Some(&"parker") => SteadyOn::Parker,
                Some(&"atomic") => SteadyOn::Atomic,
                _ => SteadyOn::Cell,
            };
            let timed = rest.last() == Some(&"timed");
            let known = rest.len() <= usize::from(on != SteadyOn::Cell) + usize::from(timed);
            assert!(known, "steady-park WAKES [parker|atomic] [timed]");
            steady_park(n.parse().expect("wakes"), on, timed)
        }
        ["fresh-park", ms] => fresh_park(Duration::from_millis(ms.parse().expect("ms")), 31, false),
        ["fresh-park", ms, rounds] => fresh_park(
            Duration::from_millis(ms.parse().expect("ms")),
            rounds.parse().expect("rounds"),
            false,
        ),
        ["fresh-park", ms, rounds, "block_on"] => fresh_park(
            Duration::from_millis(ms.parse().expect("ms")),
            rounds.parse().expect("rounds"),
            true,
        ),
        ["zero-timeout"] => zero_timeout(9),
        ["zero-timeout", n] => zero_timeout(n.parse().expect("rounds")),
        ["park-segments", gap] => park_segments(gap, "10"),
        ["park-segments", gap, rounds] => park_segments(gap, rounds),
        ["fresh-idle"] => fresh_idle(Duration::from_millis(200), 41),
        ["fresh-idle", ms] => fresh_idle(Duration::from_millis(ms.parse().expect("ms")), 41),
        ["fresh-idle", ms, rounds] => fresh_idle(
            Duration::from_millis(ms.parse().expect("ms")),
            rounds.parse().expect("rounds"),
        ),
        _ => {
            eprintln!(
                "usage: mwait-experiments first-recheck | windows [SECONDS] | pinned-wake \
                 | interference-wake IMPL... | waiter-cpu GAP_US IMPL... \
                 | long-wait-beside [ROUNDS [IMPL]] \
                 | long-wait-trace pinned|unpinned|alone ROUNDS WAKES GAP_US [IMPL BESIDE] \
                 | pattern-switch | oversubscribed PAIRS [ROUNDS [IMPL...]] \
                 | spsc-placement [ROUNDS] | stalled-pingpong EVERY \
                 | atomic \
                 | broadcast ROUNDS IMPL... | executor WORKLOAD SIDE SECONDS \
                 | fresh-idle [WAIT_MS [ROUNDS]] | first-wake [PROCESSES [IMPL...]] \
                 | cold-long-wait [ROUNDS] | steady-park WAKES [parker|atomic] [timed] \
                 | fresh-park WAIT_MS [ROUNDS [block_on]] | park-segments GAP_US [ROUNDS]"
            );
            std::process::exit(2);
        }
    }
}
