//! `cargo run --release --example hop_cost -- [CYCLES]`: where a `WaitCell` ping-pong
//! spends the time a PAUSE loop does not, measured so that the host's placement of
//! the two CPUs cannot pass for a difference between mechanisms.
//! `cargo run --release --example hop_cost -- parts [CYCLES]` splits the notify
//! itself into its pieces (see [`parts`]).
//!
//! Three ping-pongs between CPUs 0 and 1, back to back, round trips with no clock
//! reading between them, all three on the same two `WaitCell`s (fresh ones each
//! cycle):
//!
//! - `pause`: a plain store to the cell's value ([`WaitCell::as_atomic`]) and a PAUSE
//!   loop on it;
//! - `cell`: `store` and `wait_until` (the default policy);
//! - `cell-store`: `store` and a PAUSE loop on `load`, which keeps the notify of
//!   `cell` and drops its wait path.
//!
//! So `cell-store` minus `pause` is what the notify costs per round trip, and `cell`
//! minus `cell-store` what the wait path costs. The three share their memory because
//! the round trip depends on where a line lives as well as on the CPUs: on the 16-vCPU
//! guest a `WaitCell::store` ping-pong on one pair of cells read 23–30 ns per round
//! trip below a bare-store ping-pong on another pair in two processes, and 47 ns above
//! it in a third, of about 320 ns (`parts`). A cycle runs the three in turn, each for [`ROUND_TRIPS`]
//! round trips, and prints the best chunk of each (ns per round trip); each line is
//! one cycle. On a virtual machine the round trip of the *same* mechanism moves
//! between a few levels within seconds (the host places the two vCPUs on one core,
//! one cache complex or two), so compare the three only on lines whose three values
//! sit at one level; the summary does that for you, grouping the cycles by the level
//! of `pause`.

use mwait::WaitCell;
use mwait_support::pin_to_cpu;
use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, Ordering};
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
    /// Publishes `v`; 0 resets.
    fn set(&self, v: u32);
    fn wait(&self, v: u32);
}

/// A plain store to a cell's value and a PAUSE loop on it.
struct Pause<'a>(&'a WaitCell);

impl Signal for Pause<'_> {
    #[inline]
    fn set(&self, v: u32) {
        self.0.as_atomic().store(v, Ordering::Release);
    }
    #[inline]
    fn wait(&self, v: u32) {
        while self.0.as_atomic().load(Ordering::Acquire) < v {
            spin_loop();
        }
    }
}

/// `WaitCell::store` and `wait_until`.
struct Cell<'a>(&'a WaitCell);

impl Signal for Cell<'_> {
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
struct CellStore<'a>(&'a WaitCell);

impl Signal for CellStore<'_> {
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
/// `to` and `back`, which start at 0 (and are set back to 0 at the end); returns the
/// best chunk in ns per round trip.
fn best_round_trip<S: Signal>(to: &S, back: &S) -> f64 {
    let ready = AtomicBool::new(false);
    let best = thread::scope(|s| {
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
    });
    to.set(0);
    back.set(0);
    best
}

/// The median of `v` (0 for none).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Groups the cycles whose values (but those in columns `skip`) all lie within 1.5x
/// of one another (one placement throughout the cycle) by the level of the first
/// value (PAUSE's), in factors of two, and returns each group's count and medians,
/// fastest level first.
fn levels(rows: Vec<Vec<f64>>, skip: &[usize]) -> Vec<(usize, Vec<f64>)> {
    let mut levels: Vec<(i32, Vec<Vec<f64>>)> = Vec::new();
    for r in rows {
        let kept = r.iter().enumerate().filter(|(k, _)| !skip.contains(k));
        let lo = kept.clone().map(|(_, x)| *x).fold(f64::MAX, f64::min);
        let hi = kept.map(|(_, x)| *x).fold(0.0, f64::max);
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
    levels
        .into_iter()
        .map(|(_, v)| {
            let cols = (0..v[0].len())
                .map(|k| median(v.iter().map(|r| r[k]).collect()))
                .collect();
            (v.len(), cols)
        })
        .collect()
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let split = args.peek().is_some_and(|a| a == "parts");
    if split {
        args.next();
    }
    let cycles = args
        .next()
        .map(|a| a.parse().expect("CYCLES: a number"))
        .unwrap_or(DEFAULT_CYCLES);
    if split {
        parts::run(cycles);
        return;
    }
    println!("cycle: pause / cell / cell-store, ns per round trip (best chunk)");
    let mut rows = Vec::new();
    for c in 0..cycles {
        let (a, b) = (Box::new(WaitCell::new(0)), Box::new(WaitCell::new(0)));
        let pause = best_round_trip(&Pause(&a), &Pause(&b));
        let cell = best_round_trip(&Cell(&a), &Cell(&b));
        let store = best_round_trip(&CellStore(&a), &CellStore(&b));
        println!("{c:>3}: {pause:.0} / {cell:.0} / {store:.0}");
        rows.push(vec![pause, cell, store]);
    }
    println!("\ncycles at one level throughout, by the level of pause (medians):");
    for (n, m) in levels(rows, &[]) {
        let (p, c, s) = (m[0], m[1], m[2]);
        println!(
            "  {n} cycles: pause {p:.0} ns, cell {c:.0} ns ({:.2}x), cell-store {s:.0} ns ({:.2}x): notify +{:.0} ns, wait +{:.0} ns per round trip",
            c / p,
            s / p,
            s - p,
            c - s
        );
    }
}

/// The notify's pieces, each added to a bare store in turn, every waiter a PAUSE
/// loop on the value: what each piece costs per round trip, at each placement.
///
/// - `store`: the value's store alone (PAUSE's ping-pong, the baseline);
/// - `+load`: and a load of a word at the start of the next line, as the light
///   notify loads `state`;
/// - `+mode`: and before them a load of a global byte, as the notify loads its mode;
/// - `+prefetchw`: `+load` with a PREFETCHW of the value's line before the store
///   (x86-64 only; elsewhere it repeats `+load`);
/// - `same line`: `+load` with the word on the value's own line;
/// - `cell-store`: `WaitCell::store`, all of it (on a pair of cells of its own: the
///   pieces' words cannot sit in a cell).
///
/// The five pieces run on one pair of fresh lines per cycle, since the round trip
/// depends on where a line lives: compare `cell-store` with them over many cycles.
mod parts {
    use super::{best_round_trip, levels, CellStore, Signal};
    use mwait::WaitCell;
    use std::hint::{black_box, spin_loop};
    use std::sync::atomic::{compiler_fence, AtomicU32, AtomicU8, Ordering};

    /// A value (word 0) and the words a state may sit in, on a 128-byte pair of lines.
    #[repr(C, align(128))]
    struct Line([AtomicU32; 32]);

    /// The word at the start of the next line, where a cell's `state` sits.
    const NEXT_LINE: usize = 16;
    /// A word on the value's own line.
    const SAME_LINE: usize = 1;

    /// Which pieces a signal's `set` runs.
    #[derive(Clone, Copy, PartialEq)]
    enum Piece {
        Store,
        Load,
        Mode,
        Prefetch,
    }

    /// One direction of a ping-pong on `line`: the pieces of `piece`, the state word
    /// at `state`.
    struct Split<'a> {
        line: &'a Line,
        piece: Piece,
        state: usize,
    }

    /// The global byte `+mode` loads.
    static MODE: AtomicU8 = AtomicU8::new(1);

    #[cfg(target_arch = "x86_64")]
    fn prefetch_for_write(word: &AtomicU32) {
        // SAFETY: PREFETCHW only hints at a line of a live reference; it writes
        // nothing and faults on nothing (CPUs without it execute it as a NOP).
        unsafe {
            std::arch::asm!("prefetchw [{}]", in(reg) word.as_ptr(), options(nostack, preserves_flags));
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn prefetch_for_write(_: &AtomicU32) {}

    impl Signal for Split<'_> {
        #[inline]
        fn set(&self, v: u32) {
            let w = &self.line.0;
            if self.piece == Piece::Mode && black_box(&MODE).load(Ordering::Relaxed) == 0 {
                return;
            }
            if self.piece == Piece::Prefetch {
                prefetch_for_write(&w[0]);
            }
            w[0].store(v, Ordering::Release);
            if self.piece != Piece::Store {
                compiler_fence(Ordering::SeqCst);
                black_box(w[self.state].load(Ordering::Relaxed));
            }
        }
        #[inline]
        fn wait(&self, v: u32) {
            while self.line.0[0].load(Ordering::Acquire) < v {
                spin_loop();
            }
        }
    }

    const NAMES: [&str; 6] = [
        "store",
        "+load",
        "+mode",
        "+prefetchw",
        "same line",
        "cell-store",
    ];

    pub fn run(cycles: usize) {
        println!(
            "cycle: {}, ns per round trip (best chunk)",
            NAMES.join(" / ")
        );
        let mut rows = Vec::new();
        for c in 0..cycles {
            let fresh = || Box::new(Line(std::array::from_fn(|_| AtomicU32::new(0))));
            let (a, b) = (fresh(), fresh());
            let pair = |piece, state| {
                let split = |line| Split { line, piece, state };
                best_round_trip(&split(&a), &split(&b))
            };
            let (x, y) = (Box::new(WaitCell::new(0)), Box::new(WaitCell::new(0)));
            let row = vec![
                pair(Piece::Store, NEXT_LINE),
                pair(Piece::Load, NEXT_LINE),
                pair(Piece::Mode, NEXT_LINE),
                pair(Piece::Prefetch, NEXT_LINE),
                pair(Piece::Load, SAME_LINE),
                best_round_trip(&CellStore(&x), &CellStore(&y)),
            ];
            let shown: Vec<String> = row.iter().map(|x| format!("{x:.0}")).collect();
            println!("{c:>3}: {}", shown.join(" / "));
            rows.push(row);
        }
        // `same line` is expected to sit a level above the rest: leave it out of the
        // test for one placement throughout the cycle.
        println!(
            "\ncycles at one level throughout, by the level of store (medians, ns per round trip beside store):"
        );
        for (n, m) in levels(rows, &[4]) {
            let extra: Vec<String> = NAMES[1..]
                .iter()
                .zip(&m[1..])
                .map(|(name, x)| format!("{name} {:+.0}", x - m[0]))
                .collect();
            println!("  {n} cycles: store {:.0} ns; {}", m[0], extra.join(", "));
        }
    }
}
