//! The scale scenarios: several ping-pong pairs at once, one notifier waking every
//! other CPU's waiter, a barrier of every CPU, and what a pair that parks costs the
//! busy threads of its own process. Each is sized from the CPUs the process may use
//! (`cpus`, the affinity mask at start), so that it runs on 2 CPUs as on 64.
//!
//! Threads are pinned before their first wait: pair `k` to CPUs `2k` and `2k + 1`,
//! the broadcast's notifier to CPU 0 and its waiters to the others, the barrier's
//! party `i` to CPU `i`. The busy process runs in a child process per mode
//! ([`BUSY_ARG`]), because one of its modes is a process started with
//! `MWAIT_MEMBARRIER=0`, and because `membarrier` interrupts the CPUs that run
//! threads of the calling process, so the compute threads it disturbs must be the
//! pair's own process's.

use crate::cold::Measures;
use crate::impls::Make;
use crate::scenarios::{round_trips, work, BarrierLike, PingPong, SLICE, WARMUP_ROUND_TRIPS};
use crate::{median, stats, Signal, ROUND_TRIP_BATCH};
use mwait_support::{affinity_cpus, compute_throughput_placed, duration_ns, pin_to_cpu};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// The number of pairs of the pairs scenario on `cpus` CPUs: one per two CPUs.
pub fn pair_count(cpus: usize) -> usize {
    (cpus / 2).max(1)
}

/// The waiters of the broadcast on `cpus` CPUs: one on every CPU but the
/// notifier's.
pub fn broadcast_waiters(cpus: usize) -> usize {
    cpus.saturating_sub(1).max(1)
}

/// The compute threads of the busy process on `cpus` CPUs: every CPU but the
/// pair's two, and at least one (on 2 CPUs it shares a CPU with the pair).
pub fn busy_workers(cpus: usize) -> usize {
    cpus.saturating_sub(2).max(1)
}

/// The CPUs of pair `k` on `cpus` CPUs: `2k` and `2k + 1`, modulo `cpus`.
fn pair_cpus(k: usize, cpus: usize) -> (usize, usize) {
    let cpus = cpus.max(1);
    ((2 * k) % cpus, (2 * k + 1) % cpus)
}

/// Runs `body(k, start_line)` on `n` threads, `k` in `0..n`, and returns what each
/// returned; `start_line(i)` returns when every thread has called it for the
/// `i`-th time (0, 1, ...), so that the threads run their slices at once.
fn on_threads<T: Send + 'static>(
    n: usize,
    body: impl Fn(usize, &dyn Fn(usize)) -> T + Send + Sync + Clone + 'static,
) -> Vec<T> {
    let arrived = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..n)
        .map(|k| {
            let (arrived, body) = (arrived.clone(), body.clone());
            thread::spawn(move || {
                let start_line = |i: usize| {
                    arrived.fetch_add(1, Ordering::AcqRel);
                    // Every thread has a CPU of its own: spin, so that no thread
                    // is woken onto another's CPU.
                    while arrived.load(Ordering::Acquire) < n * (i + 1) {
                        std::hint::spin_loop();
                    }
                };
                body(k, &start_line)
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("scenario thread"))
        .collect()
}

/// [`pair_count`]`(cpus)` ping-pongs of `make` at once, pair `k` on CPUs `2k` and
/// `2k + 1` (modulo `cpus`), each warmed up and then sampled for `budget` from a
/// common start. Returns every pair's round-trip samples together (ns, each the mean
/// of [`ROUND_TRIP_BATCH`] round trips).
pub fn pairs(make: Make, cpus: usize, budget: Duration) -> Vec<u64> {
    on_threads(pair_count(cpus), move |k, start_line| {
        let mut pp = PingPong::start_with(make, Some(pair_cpus(k, cpus)), Duration::ZERO);
        for _ in 0..WARMUP_ROUND_TRIPS {
            pp.round_trip();
        }
        start_line(0);
        round_trips(&mut pp, budget, SAMPLES_MAX)
    })
    .concat()
}

/// The most samples one pair keeps per call.
const SAMPLES_MAX: usize = 2_000_000 / ROUND_TRIP_BATCH as usize;

/// What [`pairs_beside_pause`] measured, every pair's samples together.
pub struct PairsBesidePause {
    /// The mechanism's samples (ns per round trip).
    pub mine: Vec<u64>,
    /// The PAUSE pairs' samples.
    pub pause: Vec<u64>,
    /// The median over slice pairs of the mechanism's p50 over the PAUSE pairs'.
    pub median_ratio: f64,
}

/// [`pairs`] of `make` interleaved with PAUSE pairs in [`SLICE`]s, all pairs at once:
/// a slice of fresh PAUSE ping-pongs, each on its pair's CPUs, then a slice of the
/// mechanism's (whose partners wait meanwhile, as the mechanism does), for about
/// `budget`. Each ratio compares the two within a few ms, at one placement of the
/// vCPUs by the host (see [`crate::scenarios::interleaved_with_pause`]).
pub fn pairs_beside_pause(make: Make, cpus: usize, budget: Duration) -> PairsBesidePause {
    let pause = crate::impls::by_name("pause").expect("the PAUSE ping-pong is a known mechanism");
    let slices = (budget.as_nanos() / (2 * SLICE.as_nanos())).max(1) as usize;
    let per_pair = on_threads(pair_count(cpus), move |k, start_line| {
        let pins = pair_cpus(k, cpus);
        let mut pp = PingPong::start_with(make, Some(pins), Duration::ZERO);
        for _ in 0..WARMUP_ROUND_TRIPS {
            pp.round_trip();
        }
        let mut out = Vec::with_capacity(slices);
        for i in 0..slices {
            start_line(2 * i);
            let theirs = {
                let mut p = PingPong::start_with(pause, Some(pins), Duration::ZERO);
                // The fresh partner's start (milliseconds on a loaded host) is no
                // round trip of the mechanism.
                for _ in 0..WARMUP_ROUND_TRIPS {
                    p.round_trip();
                }
                round_trips(&mut p, SLICE, SAMPLES_MAX)
            };
            // Dropping the PAUSE ping-pong unpinned this thread.
            pin_to_cpu(pins.0);
            start_line(2 * i + 1);
            out.push((round_trips(&mut pp, SLICE, SAMPLES_MAX), theirs));
        }
        out
    });
    let mut result = PairsBesidePause {
        mine: Vec::new(),
        pause: Vec::new(),
        median_ratio: f64::NAN,
    };
    let mut ratios = Vec::with_capacity(slices);
    for i in 0..slices {
        let mut mine: Vec<u64> = per_pair
            .iter()
            .flat_map(|p| p[i].0.iter().copied())
            .collect();
        let mut theirs: Vec<u64> = per_pair
            .iter()
            .flat_map(|p| p[i].1.iter().copied())
            .collect();
        ratios.push(stats(&mut mine).p50 / stats(&mut theirs).p50);
        result.mine.extend(mine);
        result.pause.extend(theirs);
    }
    result.median_ratio = median(&ratios);
    result
}

/// The idle time between two broadcasts: long enough that every waiter of every
/// mechanism has gone to sleep (the longest spin of the default policy is 20 µs),
/// so that each broadcast wakes sleepers.
pub const BROADCAST_GAP: Duration = Duration::from_micros(500);

/// One notifier on CPU 0 and [`broadcast_waiters`]`(cpus)` waiters on the other
/// CPUs, all on one signal of `make`; every [`BROADCAST_GAP`] the notifier publishes
/// the next value (a WaitCell's `store`, which wakes every parked waiter as
/// `notify_all` does; a futex wake of all; a Condvar's `notify_all`) and waits until
/// every waiter has seen it. Returns, per broadcast, the time from just before the
/// notifier's store to the moment the last waiter saw the value (ns), for `budget`.
pub fn broadcast(make: Make, cpus: usize, budget: Duration) -> Vec<u64> {
    let w = broadcast_waiters(cpus);
    let signal: Arc<dyn Signal> = Arc::from(make());
    let base = Instant::now();
    let sent_ns = Arc::new(AtomicU64::new(0));
    let last_ns = Arc::new(AtomicU64::new(0));
    let seen = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let waiters: Vec<_> = (0..w)
        .map(|i| {
            let (signal, sent_ns, last_ns, seen, stop) = (
                signal.clone(),
                sent_ns.clone(),
                last_ns.clone(),
                seen.clone(),
                stop.clone(),
            );
            thread::spawn(move || {
                pin_to_cpu(1 + i % cpus.saturating_sub(1).max(1));
                let mut v = 0u32;
                loop {
                    v = signal.wait_ge(v.wrapping_add(1));
                    let at = duration_ns(base.elapsed());
                    if stop.load(Ordering::Acquire) {
                        return;
                    }
                    last_ns.fetch_max(
                        at.saturating_sub(sent_ns.load(Ordering::Relaxed)),
                        Ordering::Relaxed,
                    );
                    seen.fetch_add(1, Ordering::AcqRel);
                }
            })
        })
        .collect();
    pin_to_cpu(0);
    let mut out = Vec::new();
    let end = Instant::now() + budget;
    let mut v = 0u32;
    while Instant::now() < end || out.is_empty() {
        thread::sleep(BROADCAST_GAP);
        v += 1;
        seen.store(0, Ordering::Relaxed);
        last_ns.store(0, Ordering::Relaxed);
        sent_ns.store(duration_ns(base.elapsed()), Ordering::Relaxed);
        signal.set(v);
        let mut round = 0u32;
        while seen.load(Ordering::Acquire) < w {
            // The waiters may share this CPU (fewer CPUs than threads): give it up
            // now and then.
            round = round.wrapping_add(1);
            if round % 256 == 0 {
                thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        out.push(last_ns.load(Ordering::Relaxed));
    }
    stop.store(true, Ordering::Release);
    signal.set(v + 1);
    for h in waiters {
        h.join().expect("broadcast waiter");
    }
    mwait_support::unpin();
    out
}

/// A constructor of a barrier for `n` parties.
pub type MakeBarrierN = fn(usize) -> Arc<dyn BarrierLike>;

/// The barriers of the scale barrier scenario by report name.
pub fn barriers_n() -> [(&'static str, MakeBarrierN); 2] {
    [
        ("waitcell", |n| {
            Arc::new(mwait::Barrier::new(u32::try_from(n).unwrap_or(u32::MAX)))
        }),
        ("std-barrier", |n| Arc::new(std::sync::Barrier::new(n))),
    ]
}

/// Work units of the party that arrives last in an episode, and of the others.
const HEAVY: u32 = 600;
const LIGHT: u32 = 200;

/// `cpus` parties, party `i` pinned to CPU `i`, meet `episodes` times at one
/// barrier; in episode `e` party `e % cpus` does the heavy work and the others the
/// light (so every party is sometimes the last to arrive). Returns the time per
/// episode (ns), measured by party 0 from a common start.
pub fn barrier_all(make: MakeBarrierN, cpus: usize, episodes: u32) -> f64 {
    let n = cpus.max(2);
    let b = make(n);
    let took = on_threads(n, move |i, start_line| {
        pin_to_cpu(i % cpus.max(1));
        start_line(0);
        let t0 = Instant::now();
        for e in 0..episodes {
            work(if e as usize % n == i { HEAVY } else { LIGHT });
            b.wait();
        }
        t0.elapsed()
    });
    duration_ns(took[0]) as f64 / f64::from(episodes.max(1))
}

/// The argument that turns the report runner into a busy-process child:
/// `BUSY_ARG MODE MILLIS`, MODE one of [`BUSY_MODES`].
pub const BUSY_ARG: &str = "--scale-busy";

/// One mode of the busy process.
pub struct BusyMode {
    /// Its name in the report and on the child's command line.
    pub name: &'static str,
    /// The pair's mechanism.
    pub mechanism: &'static str,
    /// A variable set in the child's environment.
    pub env: Option<(&'static str, &'static str)>,
    /// Values the producer publishes back to back each period (see
    /// [`busy_process`]).
    pub burst: u32,
}

/// The values of a burst: more than the 32 notifies in a row that find nobody
/// parked after which a WaitCell clears its `FENCED` bit, so that every period's
/// park pays `membarrier` again (`protocol.rs`, "A cell that parks often").
pub const BURST: u32 = 40;

/// The busy process's modes: each mechanism with one value per period (a
/// WaitCell's waiter parks for every value and, its cell keeping `FENCED`, issues
/// `membarrier` once in the whole run) and with a [`BURST`] per period (a
/// `membarrier` per park in the default mode). `xchg`: the default WaitCell in a
/// process started with `MWAIT_MEMBARRIER=0`, whose notify is an exchange instead of
/// a plain store and whose parks issue no `membarrier`.
pub const BUSY_MODES: [BusyMode; 6] = [
    busy_mode("waitcell", "waitcell", None, 1),
    busy_mode("waitcell-xchg", "waitcell", Some(XCHG), 1),
    busy_mode("futex", "futex", None, 1),
    busy_mode("waitcell-burst", "waitcell", None, BURST),
    busy_mode("waitcell-xchg-burst", "waitcell", Some(XCHG), BURST),
    busy_mode("futex-burst", "futex", None, BURST),
];

/// The environment of the `xchg` modes.
const XCHG: (&str, &str) = ("MWAIT_MEMBARRIER", "0");

const fn busy_mode(
    name: &'static str,
    mechanism: &'static str,
    env: Option<(&'static str, &'static str)>,
    burst: u32,
) -> BusyMode {
    BusyMode {
        name,
        mechanism,
        env,
        burst,
    }
}

/// How often the busy process's pair hands a value over.
pub const BUSY_PERIOD: Duration = Duration::from_millis(1);

/// The child of the busy process: [`busy_workers`] compute threads (pinned to CPUs
/// 2, 3, ... modulo the CPUs) run for `duration` beside a producer (CPU 0) that
/// publishes a value every [`BUSY_PERIOD`] (and, with a `burst` above 1, `burst - 1`
/// more back to back as soon as the waiter has seen the first) and a waiter (CPU 1)
/// that waits for each next value, through `make`. Measures the compute threads'
/// iterations per second, the values the waiter saw, and the share of the waiter's
/// waits that parked.
pub fn busy_process(make: Make, duration: Duration, burst: u32) -> Measures {
    let cpus = affinity_cpus();
    let workers = busy_workers(cpus);
    let signal: Arc<dyn Signal> = Arc::from(make());
    let stop = Arc::new(AtomicBool::new(false));
    let got = Arc::new(AtomicU32::new(0));
    let waiter = {
        let (signal, stop, got) = (signal.clone(), stop.clone(), got.clone());
        thread::spawn(move || {
            pin_to_cpu(1 % cpus.max(1));
            let mut v = 0u32;
            while !stop.load(Ordering::Acquire) {
                v = signal.wait_ge(v.wrapping_add(1));
                got.store(v, Ordering::Release);
            }
        })
    };
    let producer = {
        let (signal, stop, got) = (signal.clone(), stop.clone(), got.clone());
        thread::spawn(move || {
            pin_to_cpu(0);
            let t0 = Instant::now();
            let (mut period, mut v) = (0u32, 0u32);
            while !stop.load(Ordering::Acquire) {
                period += 1;
                if let Some(left) = (BUSY_PERIOD * period).checked_sub(t0.elapsed()) {
                    thread::sleep(left);
                }
                v = v.wrapping_add(1);
                signal.set(v);
                if burst > 1 {
                    // The rest of the burst once the waiter is awake: notifies that
                    // find nobody parked. Spinning, not yielding: a yield would hand
                    // this CPU to a compute thread for a whole time slice.
                    let until = Instant::now() + BUSY_PERIOD;
                    while got.load(Ordering::Acquire) < v && Instant::now() < until {
                        std::hint::spin_loop();
                    }
                    for _ in 1..burst {
                        v = v.wrapping_add(1);
                        signal.set(v);
                    }
                }
            }
            signal.set(v.wrapping_add(1));
        })
    };
    let per_s = compute_throughput_placed(workers, duration, move |k| {
        pin_to_cpu((2 + k) % cpus.max(1));
    });
    stop.store(true, Ordering::Release);
    producer.join().expect("busy producer");
    waiter.join().expect("busy waiter");
    let waits = mwait::stats().waits;
    let (_, _, park) = waits.shares();
    Measures(vec![
        ("compute_per_s".into(), per_s),
        ("workers".into(), workers as f64),
        ("handed_over".into(), f64::from(got.load(Ordering::Relaxed))),
        ("park_share".into(), park / 100.0),
    ])
}

/// The busy-process child's entry: `Some` when `args` start with [`BUSY_ARG`] (its
/// measures, or why it could not run), `None` otherwise.
pub fn busy_child_entry(args: &[String]) -> Option<Result<Measures, String>> {
    if args.first().map(String::as_str) != Some(BUSY_ARG) {
        return None;
    }
    let [_, mode, ms] = args else {
        return Some(Err(format!("usage: {BUSY_ARG} MODE MILLIS, got {args:?}")));
    };
    let Some(m) = BUSY_MODES.iter().find(|m| m.name == mode) else {
        return Some(Err(format!("no busy mode {mode}")));
    };
    let Some(make) = crate::impls::by_name(m.mechanism) else {
        return Some(Err(format!("no mechanism {}", m.mechanism)));
    };
    let Ok(ms) = ms.parse::<u64>() else {
        return Some(Err(format!("`{ms}` is not a number of ms")));
    };
    Some(Ok(busy_process(make, Duration::from_millis(ms), m.burst)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::impls::by_name;

    #[test]
    fn the_scenarios_are_sized_from_the_cpus() {
        assert_eq!((pair_count(1), pair_count(2), pair_count(16)), (1, 1, 8));
        assert_eq!((broadcast_waiters(1), broadcast_waiters(16)), (1, 15));
        assert_eq!((busy_workers(2), busy_workers(16)), (1, 14));
        assert_eq!(pair_cpus(3, 16), (6, 7));
        assert_eq!(pair_cpus(1, 3), (2, 0), "modulo the CPUs");
    }

    #[test]
    fn pairs_and_broadcasts_measure_every_pair_and_every_waiter() {
        let cpus = affinity_cpus();
        let futex = by_name("futex").unwrap();
        assert!(!pairs(futex, cpus, Duration::from_millis(20)).is_empty());
        let m = pairs_beside_pause(by_name("waitcell").unwrap(), cpus, 2 * SLICE);
        assert!(!m.mine.is_empty() && !m.pause.is_empty());
        assert!(m.median_ratio > 0.0, "{}", m.median_ratio);
        let last = broadcast(futex, cpus, Duration::from_millis(20));
        // Each broadcast waits until every waiter saw it, and its wake-up cannot
        // come before the store.
        assert!(!last.is_empty());
        assert!(
            last.iter().all(|&ns| ns > 0 && ns < 10_000_000_000),
            "{last:?}"
        );
    }

    #[test]
    fn every_barrier_of_all_cpus_completes_its_episodes() {
        for (name, make) in barriers_n() {
            let ns = barrier_all(make, affinity_cpus(), 200);
            assert!(ns.is_finite() && ns > 0.0, "{name}: {ns}");
        }
    }

    #[test]
    fn the_busy_child_measures_and_refuses_what_it_does_not_know() {
        let m = busy_process(by_name("waitcell").unwrap(), Duration::from_millis(30), 3);
        assert!(m.get("compute_per_s") > 0.0, "{m}");
        assert!(m.get("handed_over") >= 1.0, "{m}");
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(busy_child_entry(&args(&["--cold", "x"])).is_none());
        assert!(busy_child_entry(&args(&[BUSY_ARG, "nope", "10"]))
            .unwrap()
            .is_err());
        assert!(busy_child_entry(&args(&[BUSY_ARG, "futex"]))
            .unwrap()
            .is_err());
        assert!(busy_child_entry(&args(&[BUSY_ARG, "futex", "x"]))
            .unwrap()
            .is_err());
    }
}
