//! `cargo run --release --example cold_pingpong -- [pinned|unpinned|same] [ROUND_TRIPS]`:
//! a ping-pong through two `WaitCell`s with the default policy in a process that has
//! not touched mwait before, as a new user's program would run it, beside a PAUSE loop
//! in the same arrangement.
//!
//! The arrangement: `pinned` puts the two threads on CPUs 0 and 1 before their first
//! wait, `same` puts both on CPU 0, `unpinned` leaves them to the scheduler. The PAUSE
//! ping-pong runs first, on its own threads, so that mwait's process-wide choice is
//! made by the first wait of the mwait ping-pong, from a pinned thread when the
//! arrangement pins (nothing calls `mwait::selection()` before). The PAUSE loop runs
//! on the very cells of the mwait ping-pong (their values, through `as_atomic`), since
//! a round trip depends on where its lines live as well as on the mechanism. Prints the median
//! round trip of the first 1000 round trips and of the second half of the run (the
//! steady state), in ns, for both, and their ratio. Run it once per fresh process.

use mwait::{Backend, WaitCell, WaitPolicy};
use mwait_support::{current_cpu, percentile, pin_to_cpu};
use std::hint::spin_loop;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

/// Round trips whose median is reported as the cold start.
const FIRST: usize = 1000;
/// Default number of round trips per ping-pong.
const DEFAULT_ROUND_TRIPS: usize = 20_000;

/// Where the two threads run.
#[derive(Copy, Clone)]
enum Arrangement {
    Pinned,
    Unpinned,
    Same,
}

impl Arrangement {
    fn place(self, side: usize) {
        let cpu = match self {
            Arrangement::Pinned => side,
            Arrangement::Same => 0,
            Arrangement::Unpinned => return,
        };
        if !pin_to_cpu(cpu) {
            eprintln!("cold_pingpong: could not pin to CPU {cpu}");
        }
    }
}

/// The two halves of a ping-pong: `ping` publishes round `i` and waits for the
/// partner's answer; `pong` waits for round `i` and answers it.
trait Channel: Send + Sync + 'static {
    fn ping(&self, i: u32);
    fn pong(&self, i: u32);
}

struct Mwait {
    to_partner: WaitCell,
    to_timer: WaitCell,
}

impl Channel for Mwait {
    fn ping(&self, i: u32) {
        self.to_partner.store(i);
        self.to_timer.wait_until(|v| v == i);
    }
    fn pong(&self, i: u32) {
        self.to_partner.wait_until(|v| v == i);
        self.to_timer.store(i);
    }
}

/// A plain store and a PAUSE loop on the values of a ping-pong's cells.
struct Pause(Arc<Mwait>);

fn pause_until(a: &AtomicU32, i: u32) {
    while a.load(Ordering::Acquire) != i {
        spin_loop();
    }
}

impl Channel for Pause {
    fn ping(&self, i: u32) {
        self.0.to_partner.as_atomic().store(i, Ordering::Release);
        pause_until(self.0.to_timer.as_atomic(), i);
    }
    fn pong(&self, i: u32) {
        pause_until(self.0.to_partner.as_atomic(), i);
        self.0.to_timer.as_atomic().store(i, Ordering::Release);
    }
}

/// The CPU the calling thread runs on (`u32::MAX` where unknown).
fn cpu() -> u32 {
    u32::try_from(current_cpu()).unwrap_or(u32::MAX)
}

/// What one ping-pong saw: each round trip's length in ns, mwait's process-wide
/// counts after the first [`FIRST`] round trips and at the end, and the CPUs of the
/// timing thread and its partner when they finished.
struct Run {
    samples: Vec<u64>,
    stats: [mwait::WaitStats; 2],
    cpus: [u32; 2],
}

/// Runs `n` round trips.
fn run<C: Channel>(chan: Arc<C>, at: Arrangement, n: usize) -> Run {
    let partner = {
        let chan = chan.clone();
        thread::spawn(move || {
            at.place(1);
            for i in 1..=n as u32 {
                chan.pong(i);
            }
            cpu()
        })
    };
    let timer = thread::spawn(move || {
        at.place(0);
        let mut first = mwait::WaitStats::default();
        let samples = (1..=n as u32)
            .map(|i| {
                if i as usize == FIRST + 1 {
                    first = mwait::stats().waits;
                }
                let t = Instant::now();
                chan.ping(i);
                t.elapsed().as_nanos() as u64
            })
            .collect::<Vec<u64>>();
        (samples, first, cpu())
    });
    let (samples, first, timer_cpu) = timer.join().expect("timer thread");
    let partner_cpu = partner.join().expect("partner thread");
    Run {
        samples,
        stats: [first, mwait::stats().waits],
        cpus: [timer_cpu, partner_cpu],
    }
}

fn main() {
    let (at, n) = parse_args();
    let (base_name, base, cold) = ping_pongs(at, n);
    print_medians(base_name, &base, &cold.samples, n);
    print_counts(&cold);
}

/// The arrangement and the number of round trips (at least `2 * FIRST`); exits with
/// the usage on an unknown arrangement.
fn parse_args() -> (Arrangement, usize) {
    let mut args = std::env::args().skip(1);
    let at = match args.next().as_deref() {
        None | Some("pinned") => Arrangement::Pinned,
        Some("unpinned") => Arrangement::Unpinned,
        Some("same") => Arrangement::Same,
        Some(other) => {
            eprintln!("usage: cold_pingpong [pinned|unpinned|same] [ROUND_TRIPS] ({other}?)");
            std::process::exit(2);
        }
    };
    let n = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_ROUND_TRIPS)
        .max(2 * FIRST);
    (at, n)
}

/// The baseline's name and samples, and the cold mwait ping-pong. With both
/// threads on one CPU (`same`) the baseline is a ping-pong with the futex forced,
/// run after the cold one; otherwise it is the PAUSE loop, run first.
fn ping_pongs(at: Arrangement, n: usize) -> (&'static str, Vec<u64>, Run) {
    let cells = |policy: WaitPolicy| {
        Arc::new(Mwait {
            to_partner: WaitCell::with_policy(0, policy),
            to_timer: WaitCell::with_policy(0, policy),
        })
    };
    match at {
        Arrangement::Same => {
            let cold = run(cells(WaitPolicy::new()), at, n);
            let futex = run(cells(WaitPolicy::new().backend(Backend::Futex)), at, n).samples;
            ("futex", futex, cold)
        }
        _ => {
            let mwait = cells(WaitPolicy::new());
            let pause = run(Arc::new(Pause(mwait.clone())), at, n).samples;
            // Nobody waits on the cells now: plain stores put them back to 0.
            mwait.to_partner.as_atomic().store(0, Ordering::Relaxed);
            mwait.to_timer.as_atomic().store(0, Ordering::Relaxed);
            ("pause", pause, run(mwait, at, n))
        }
    }
}

/// The medians of the first [`FIRST`] round trips and of the second half, mwait's
/// beside the baseline's, and their ratios.
fn print_medians(base_name: &str, base: &[u64], cold: &[u64], n: usize) {
    let summary = |s: &[u64]| (percentile(&s[..FIRST], 50.0), percentile(&s[n / 2..], 50.0));
    let (pf, ps) = summary(base);
    let (mf, ms) = summary(cold);
    println!(
        "first{FIRST}_p50_ns mwait {mf} {base_name} {pf} ratio {:.2} | steady_p50_ns mwait {ms} \
         {base_name} {ps} ratio {:.2} | usable_cpus {}",
        mf as f64 / pf.max(1) as f64,
        ms as f64 / ps.max(1) as f64,
        mwait::Capabilities::detect().usable_cpus,
    );
}

/// Where the cold ping-pong's waits ended (first round trips, then the rest), the
/// process's statistics, and the CPUs the threads ended on.
fn print_counts(cold: &Run) {
    let [first_stats, end_stats] = cold.stats;
    let [timer_cpu, partner_cpu] = cold.cpus;
    println!(
        "  first{FIRST}: {} | rest: {}",
        shares(first_stats),
        shares(end_stats.since(&first_stats))
    );
    println!("  {}", mwait::stats().to_string().replace('\n', "\n  "));
    let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "  ended on CPUs {timer_cpu} and {partner_cpu}; /proc/loadavg {}",
        loadavg.trim()
    );
}

/// The shares of waits per tier and the hand-off spins' catches.
fn shares(s: mwait::WaitStats) -> String {
    let (spin, hw, park) = s.shares();
    format!(
        "spin {spin:.0} % hw {hw:.0} % park {park:.0} % (hand-off {}/{})",
        s.handoff_caught, s.handoff_spins
    )
}
