//! `mwait-experiments park-segments GAP_US [ROUNDS]` (built with the `stamps`
//! feature): where the user-space time of a long wait goes. A default `WaitCell`'s
//! waiter and a hand-written futex waiter ([`Futex`]), each a fresh thread fed
//! [`WAKES`] stores `GAP_US` µs apart, run at once as in the `long_wait` scenario
//! (unpinned, the pair started second taking turns). Each wait is stamped with the
//! cycle counter: the futex waiter's around its `FUTEX_WAIT`, the cell's at the
//! points of mwait's `stamps` feature, from the caller's call to the system call
//! and from its return back to the caller. Each waiter's first [`SKIP`] waits,
//! in which a fresh cell learns, are left out. Printed: the two waiters' CPU per
//! wake, and over the waits that parked once, the user-space time before the sleep
//! and after the wake of each, and the cell's time per segment between two points.

use crate::impls::Futex;
use crate::{median, min_max, Signal};
use mwait::stamps;
use mwait::WaitCell;
use mwait_support::{duration_ns, thread_cpu_time};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// Stores per pair and round.
pub const WAKES: u32 = 200;
/// The first waits of each waiter, left out of the segments: a fresh cell learns in
/// them that its spins fail.
pub const SKIP: usize = 10;
/// A segment longer than this held a preemption or an interrupt: left out of the
/// means (the medians keep it).
const OUTLIER_NS: f64 = 100_000.0;

/// One waiter's run: its CPU per wake and, per wait that parked once, the user-space
/// time before the sleep and after the wake, and (the cell's) each segment.
#[derive(Default)]
struct Run {
    cpu_per_wake: f64,
    before: Vec<f64>,
    after: Vec<f64>,
    segments: Vec<Vec<f64>>,
}

/// The readings of one wait: the caller's before it, the points (the cell's; the
/// futex waiter's `syscall` and `returned` only, 0 when it slept more than once),
/// the caller's after it.
type Stamps = [u64; stamps::POINTS + 2];

/// The two waiters.
#[derive(Copy, Clone)]
enum Kind {
    Cell,
    Futex,
}

/// The index of `name` among the points of [`Stamps`].
fn at(name: &str) -> usize {
    1 + stamps::NAMES
        .iter()
        .position(|n| *n == name)
        .expect("a point of that name")
}

/// Runs `wait(i)` for `i` in `1..=wakes`, keeping each wait's readings in memory
/// taken before the first (so that both waiters do the same bookkeeping, a copy of a
/// few words, between two waits), and the CPU time of the waits after the first
/// [`SKIP`]; the readings are turned into a [`Run`] afterwards.
fn waits(wakes: u32, mut wait: impl FnMut(u32, &mut Stamps)) -> Run {
    let mut all: Vec<Stamps> = vec![[0; stamps::POINTS + 2]; wakes as usize];
    let mut cpu0 = thread_cpu_time();
    for (k, s) in all.iter_mut().enumerate() {
        if k == SKIP {
            cpu0 = thread_cpu_time();
        }
        wait(k as u32 + 1, s);
    }
    let cpu = duration_ns(thread_cpu_time() - cpu0) as f64 / (wakes as usize - SKIP) as f64;
    let mut run = Run {
        cpu_per_wake: cpu,
        segments: vec![Vec::new(); stamps::POINTS + 1],
        ..Run::default()
    };
    let (syscall, returned) = (at("syscall"), at("returned"));
    let ns = |a: u64, b: u64| stamps::ticks_to_ns(b.wrapping_sub(a));
    for s in &all[SKIP..] {
        // A wait that parked once passed every point it stamps in order, after the
        // call (the futex waiter stamps only the two around its system call).
        let passed: Vec<u64> = s.iter().copied().filter(|t| *t != 0).collect();
        if s[syscall] == 0 || passed.windows(2).any(|w| w[0] > w[1]) || passed[0] != s[0] {
            continue;
        }
        run.before.push(ns(s[0], s[syscall]));
        run.after.push(ns(s[returned], s[s.len() - 1]));
        if passed.len() == s.len() {
            for (k, w) in s.windows(2).enumerate() {
                if k != syscall {
                    run.segments[k].push(ns(w[0], w[1]));
                }
            }
        }
    }
    run
}

/// The cell's waiter: the caller's readings around `wait_until`, and the points
/// between them.
fn cell_waits(cell: &WaitCell, wakes: u32) -> Run {
    waits(wakes, |i, s| {
        s[0] = stamps::now();
        cell.wait_until(|v| v >= i);
        let back = stamps::now();
        s[1..=stamps::POINTS].copy_from_slice(&stamps::read());
        s[stamps::POINTS + 1] = back;
    })
}

/// The futex waiter: readings at the call, around its `FUTEX_WAIT` (left 0 where it
/// slept more than once), and at the return.
fn futex_waits(f: &Futex, wakes: u32) -> Run {
    let (syscall, returned) = (at("syscall"), at("returned"));
    waits(wakes, |i, s| {
        let mut sleeps = 0;
        s[0] = stamps::now();
        f.wait_ge_around(i, |before| match before {
            true => s[syscall] = stamps::now(),
            false => {
                s[returned] = stamps::now();
                sleeps += 1;
            }
        });
        s[stamps::POINTS + 1] = stamps::now();
        if sleeps != 1 {
            s[syscall] = 0;
        }
    })
}

/// One pair: a fresh waiter thread of `kind`, fed [`WAKES`] stores `gap` apart by
/// the calling thread.
fn pair(kind: Kind, gap: Duration) -> Run {
    match kind {
        Kind::Cell => fed(WaitCell::new(0), gap, cell_waits, WaitCell::store),
        Kind::Futex => fed(Futex::default(), gap, futex_waits, |f, i| f.set(i)),
    }
}

/// `waits` on a thread of its own on `sig`, which the calling thread `set`s to 1,
/// 2, ... [`WAKES`], `gap` apart.
fn fed<S: Send + Sync + 'static>(
    sig: S,
    gap: Duration,
    waits: fn(&S, u32) -> Run,
    set: fn(&S, u32),
) -> Run {
    let sig = Arc::new(sig);
    let theirs = sig.clone();
    let waiter = thread::spawn(move || waits(&theirs, WAKES));
    for i in 1..=WAKES {
        thread::sleep(gap);
        set(&sig, i);
    }
    waiter.join().expect("the waiter does not panic")
}

/// Median, 90th percentile and mean without the outliers, in ns.
fn summary(v: &[f64]) -> String {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let p90 = s.get(s.len() * 9 / 10).copied().unwrap_or(f64::NAN);
    let kept: Vec<f64> = s.iter().copied().filter(|x| *x < OUTLIER_NS).collect();
    let mean = kept.iter().sum::<f64>() / kept.len().max(1) as f64;
    format!(
        "p50 {:>5.0}  p90 {:>5.0}  mean {:>5.0}",
        median(&s),
        p90,
        mean
    )
}

/// `park-segments`: see the module docs.
pub fn run(gap: Duration, rounds: usize) {
    let (mut cell, mut futex) = (Run::default(), Run::default());
    cell.segments = vec![Vec::new(); stamps::POINTS + 1];
    let (mut ratios, mut cell_cpu, mut futex_cpu) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        let (second, first) = if r % 2 == 0 {
            (Kind::Cell, Kind::Futex)
        } else {
            (Kind::Futex, Kind::Cell)
        };
        let other = thread::spawn(move || pair(first, gap));
        thread::sleep(gap / 2);
        let mine = pair(second, gap);
        let theirs = other.join().expect("the other pair does not panic");
        let (c, f) = match second {
            Kind::Cell => (mine, theirs),
            Kind::Futex => (theirs, mine),
        };
        ratios.push(c.cpu_per_wake / f.cpu_per_wake);
        cell_cpu.push(c.cpu_per_wake);
        futex_cpu.push(f.cpu_per_wake);
        cell.before.extend(c.before);
        cell.after.extend(c.after);
        for (all, s) in cell.segments.iter_mut().zip(c.segments) {
            all.extend(s);
        }
        futex.before.extend(f.before);
        futex.after.extend(f.after);
    }
    let (lo, hi) = min_max(&ratios);
    println!(
        "park-segments: {rounds} rounds of {WAKES} wakes {} us apart, both pairs at once, \
         unpinned; the waits that parked once after each waiter's first {SKIP}, \
         ns (means without segments over {OUTLIER_NS:.0} ns)",
        gap.as_micros()
    );
    println!(
        "waiter CPU per wake, waitcell / futex: {:.3}x (range {lo:.2}-{hi:.2}x): {:.0} ns \
         against {:.0} ns",
        median(&ratios),
        median(&cell_cpu),
        median(&futex_cpu)
    );
    for (name, v) in [
        ("waitcell, before the sleep", &cell.before),
        ("futex, before the sleep", &futex.before),
        ("waitcell, after the wake", &cell.after),
        ("futex, after the wake", &futex.after),
    ] {
        println!("{name:<34} {}", summary(v));
    }
    println!(
        "waitcell, segment by segment ({} waits):",
        cell.before.len()
    );
    let mut names = vec!["call"];
    names.extend_from_slice(&stamps::NAMES);
    names.push("back");
    for (k, s) in cell.segments.iter().enumerate() {
        if !s.is_empty() {
            let seg = format!("  {} -> {}", names[k], names[k + 1]);
            println!("{seg:<34} {}", summary(s));
        }
    }
}
