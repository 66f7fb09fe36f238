//! `cargo run --release --example hop_cost -- [CYCLES]`: where a `WaitCell` ping-pong
//! spends the time a PAUSE loop does not, measured so that the host's placement of
//! the two CPUs cannot pass for a difference between mechanisms.
//!
//! Three ping-pongs between CPUs 0 and 1, back to back, round trips with no clock
//! reading between them:
//!
//! - `pause`: two 128-byte-aligned `AtomicU32`s, a plain store and a PAUSE loop;
//! - `cell`: two `WaitCell`s, `store` and `wait_until` (the default policy);
//! - `cell-store`: two `WaitCell`s, `store` and a PAUSE loop on `load`, which keeps
//!   the notify of `cell` and drops its wait path.
//!
//! So `cell-store` minus `pause` is what the notify costs per round trip, and `cell`
//! minus `cell-store` what the wait path costs. A cycle runs the three in turn, each
//! for [`ROUND_TRIPS`] round trips, and prints the best chunk of each (ns per round
//! trip); each line is one cycle. On a virtual machine the round trip of the *same*
//! mechanism moves between a few levels within seconds (the host places the two
//! vCPUs on one core, one cache complex or two), so compare the three only on lines
//! whose three values sit at one level; the summary does that for you, grouping the
//! cycles by the level of `pause`.

use mwait::WaitCell;
use mwait_support::pin_to_cpu;
use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread;
use std::time::Instant;

/// Round trips per mechanism per cycle.
const ROUND_TRIPS: u32 = 100_000;
/// Round trips per timed chunk: the clock is read once per chunk.
const CHUNK: u32 = 20_000;
/// Cycles when none is given.
const DEFAULT_CYCLES: usize = 20;

/// One direction of a ping-pong.
trait Signal: Sync {
    fn set(&self, v: u32);
    fn wait(&self, v: u32);
}

/// A flag on a 128-byte pair of lines of its own, as a `WaitCell`'s value is.
#[repr(align(128))]
struct Pause(AtomicU32);

impl Signal for Pause {
    #[inline]
    fn set(&self, v: u32) {
        self.0.store(v, Ordering::Release);
    }
    #[inline]
    fn wait(&self, v: u32) {
        while self.0.load(Ordering::Acquire) < v {
            spin_loop();
        }
    }
}

/// `WaitCell::store` and `wait_until`.
struct Cell(WaitCell);

impl Signal for Cell {
    #[inline]
    fn set(&self, v: u32) {
        self.0.store(v);
    }
    #[inline]
    fn wait(&self, v: u32) {
        self.0.wait_until(|x| x >= v);
    }
}

/// `WaitCell::store`, and a PAUSE loop in place of the wait.
struct CellStore(WaitCell);

impl Signal for CellStore {
    #[inline]
    fn set(&self, v: u32) {
        self.0.store(v);
    }
    #[inline]
    fn wait(&self, v: u32) {
        while self.0.load() < v {
            spin_loop();
        }
    }
}

/// A ping-pong of `ROUND_TRIPS` between CPU 0 (this thread) and CPU 1 through
/// `to` and `back`, which start at 0; returns the best chunk in ns per round trip.
fn best_round_trip<S: Signal>(to: &S, back: &S) -> f64 {
    let ready = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            pin_to_cpu(1);
            ready.store(true, Ordering::Release);
            for i in 1..=ROUND_TRIPS {
                to.wait(i);
                back.set(i);
            }
        });
        pin_to_cpu(0);
        while !ready.load(Ordering::Acquire) {
            spin_loop();
        }
        let mut best = f64::MAX;
        let mut i = 0;
        while i < ROUND_TRIPS {
            let t = Instant::now();
            for _ in 0..CHUNK {
                i += 1;
                to.set(i);
                back.wait(i);
            }
            best = best.min(t.elapsed().as_nanos() as f64 / f64::from(CHUNK));
        }
        best
    })
}

/// The median of `v` (0 for none).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn main() {
    let cycles = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("CYCLES: a number"))
        .unwrap_or(DEFAULT_CYCLES);
    println!("cycle: pause / cell / cell-store, ns per round trip (best chunk)");
    let mut rows = Vec::new();
    for c in 0..cycles {
        let pause = best_round_trip(&Pause(AtomicU32::new(0)), &Pause(AtomicU32::new(0)));
        let cell = best_round_trip(&Cell(WaitCell::new(0)), &Cell(WaitCell::new(0)));
        let store = best_round_trip(&CellStore(WaitCell::new(0)), &CellStore(WaitCell::new(0)));
        println!("{c:>3}: {pause:.0} / {cell:.0} / {store:.0}");
        rows.push([pause, cell, store]);
    }
    // Group the cycles whose three values lie within 1.5x of one another (one
    // placement throughout the cycle) by the level of `pause`, in factors of two.
    let mut levels: Vec<(i32, Vec<[f64; 3]>)> = Vec::new();
    for r in rows {
        let (lo, hi) = (
            r.iter().copied().fold(f64::MAX, f64::min),
            r.iter().copied().fold(0.0, f64::max),
        );
        if hi > 1.5 * lo {
            continue;
        }
        let level = r[0].log2().round() as i32;
        match levels.iter_mut().find(|(l, _)| *l == level) {
            Some((_, v)) => v.push(r),
            None => levels.push((level, vec![r])),
        }
    }
    levels.sort_by_key(|(l, _)| *l);
    println!("\ncycles at one level throughout, by the level of pause (medians):");
    for (_, v) in levels {
        let col = |k: usize| median(v.iter().map(|r| r[k]).collect());
        let (p, c, s) = (col(0), col(1), col(2));
        println!(
            "  {} cycles: pause {p:.0} ns, cell {c:.0} ns ({:.2}x), cell-store {s:.0} ns ({:.2}x): notify +{:.0} ns, wait +{:.0} ns per round trip",
            v.len(),
            c / p,
            s / p,
            s - p,
            c - s
        );
    }
}
