//! Cold starts: each latency scenario in a fresh process, as a program meets the
//! crate for the first time.
//!
//! The report runner starts itself again as a child, `mwait-bench --cold SCENARIO
//! IMPL AMOUNT` ([`COLD_ARG`]), once per scenario, mechanism and round. The child
//! does nothing before the scenario's threads exist: no warm-up, no call to
//! `mwait::selection()` or `Capabilities::detect()` (the first wait makes them, from
//! the thread that waits first), and each thread is pinned, where the scenario pins,
//! before its first wait. It prints one line of [`Measures`] and exits.

use crate::impls::{self, Make};
use crate::scenarios::{self, PingPong};
use crate::stats;
use mwait_support::duration_ns;
use std::fmt;
use std::thread;
use std::time::Duration;

/// The argument that turns the report runner into a cold-start child.
pub const COLD_ARG: &str = "--cold";

/// The round trips (or barrier episodes) at the start of a cold run that are
/// reported on their own, before the steady state.
pub const FIRST: u32 = 1_000;

/// How late the partner of the late-partner variant starts its first wait.
pub const PARTNER_DELAY: Duration = Duration::from_millis(2);

/// The pause in the middle of the pause variant, after which it is measured.
pub const MID_RUN_PAUSE: Duration = Duration::from_millis(2);

/// The most steady-state round trips one cold run keeps.
const MAX_SAMPLES: usize = 2_000_000;

/// A cold scenario: the ping-pong in one of its arrangements, the slow producer,
/// or the barrier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// Threads pinned to CPUs 0 and 1 before their first wait.
    Pinned,
    /// Neither thread pinned.
    Unpinned,
    /// Pinned; the partner starts its first wait [`PARTNER_DELAY`] late.
    LatePartner,
    /// Pinned; measured after a [`MID_RUN_PAUSE`] that follows a first run of
    /// [`FIRST`] round trips and half the steady budget.
    AfterPause,
    /// Both threads pinned to CPU 0.
    SameCpu,
    /// A store every ~1 ms, producer pinned to CPU 0 and waiter to CPU 1; the
    /// mechanism's pair started half a gap after the futex pair beside it.
    LongWait,
    /// [`Scenario::LongWait`] with the mechanism's pair started first: the pair
    /// started second pays more or less per wake whatever its mechanism
    /// ([`scenarios::slow_producers_both_ways`]), and the two orders together cancel
    /// that.
    LongWaitFirst,
    /// The process's first wait, one that parks: the main thread waits for a thread
    /// that stores [`FIRST_WAKE_DELAY`] after it starts; measured is how long after
    /// the store the wait returned.
    FirstWake,
    /// The barrier scenario (its threads pinned to CPUs 0 and 1).
    Barrier,
}

impl Scenario {
    /// Every cold scenario, in report order.
    pub const ALL: [Scenario; 9] = [
        Scenario::Pinned,
        Scenario::Unpinned,
        Scenario::LatePartner,
        Scenario::AfterPause,
        Scenario::SameCpu,
        Scenario::LongWait,
        Scenario::LongWaitFirst,
        Scenario::FirstWake,
        Scenario::Barrier,
    ];

    /// The name on the child's command line and in the report's JSON.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Pinned => "pingpong-pinned",
            Scenario::Unpinned => "pingpong-unpinned",
            Scenario::LatePartner => "pingpong-late-partner",
            Scenario::AfterPause => "pingpong-after-pause",
            Scenario::SameCpu => "same_cpu",
            Scenario::LongWait => "long_wait",
            Scenario::LongWaitFirst => "long_wait_first",
            Scenario::FirstWake => "first_wake",
            Scenario::Barrier => "barrier",
        }
    }

    /// What the scenario does, for the report.
    pub fn describe(self) -> &'static str {
        match self {
            Scenario::Pinned => "pingpong, pinned to CPUs 0 and 1 before the first wait",
            Scenario::Unpinned => "pingpong, unpinned",
            Scenario::LatePartner => "pingpong, pinned, partner 2 ms late",
            Scenario::AfterPause => "pingpong, pinned, after a 2 ms pause mid-run",
            Scenario::SameCpu => "same_cpu, both pinned to CPU 0",
            Scenario::LongWait => "long_wait, pinned, a store every ~1 ms",
            Scenario::LongWaitFirst => "long_wait, pinned, a store every ~1 ms, started first",
            Scenario::FirstWake => "first wake: the process's first wait, parked, a store 2 ms in",
            Scenario::Barrier => "barrier, pinned, asymmetric work",
        }
    }

    /// The mechanisms measured side by side, the default WaitCell first. A PAUSE
    /// spinner beside its partner on one CPU waits a whole time slice per hop, so
    /// `same_cpu` compares with futex only.
    pub fn impls(self) -> &'static [&'static str] {
        match self {
            Scenario::Pinned
            | Scenario::Unpinned
            | Scenario::LatePartner
            | Scenario::AfterPause => &["waitcell", "pause", "futex"],
            Scenario::SameCpu
            | Scenario::LongWait
            | Scenario::LongWaitFirst
            | Scenario::FirstWake => &["waitcell", "futex"],
            Scenario::Barrier => &["waitcell", "std-barrier", "spin"],
        }
    }

    fn parse(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// Named numbers one cold child measured; on the wire, one line of `key=value`
/// pairs separated by spaces (NaN where a number could not be taken).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measures(pub Vec<(String, f64)>);

impl Measures {
    /// The number named `key`; NaN when absent.
    pub fn get(&self, key: &str) -> f64 {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map_or(f64::NAN, |&(_, v)| v)
    }

    /// Reads the child's line.
    pub fn parse(line: &str) -> Result<Measures, String> {
        line.split_whitespace()
            .map(|pair| {
                let (k, v) = pair
                    .split_once('=')
                    .ok_or_else(|| format!("`{pair}` is not key=value"))?;
                let v = v.parse().map_err(|_| format!("`{v}` is not a number"))?;
                Ok((k.to_string(), v))
            })
            .collect::<Result<_, _>>()
            .map(Measures)
    }

    fn push(&mut self, key: &str, value: f64) {
        self.0.push((key.to_string(), value));
    }
}

impl fmt::Display for Measures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (k, v)) in self.0.iter().enumerate() {
            write!(f, "{}{k}={v}", if i > 0 { " " } else { "" })?;
        }
        Ok(())
    }
}

/// The share of the waits that ended in the spin, hardware and park tiers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TierShares {
    /// Ended while spinning (the inline spin included).
    pub spin: f64,
    /// Ended in the hardware tier.
    pub hardware: f64,
    /// Ended after a park.
    pub park: f64,
}

/// Set in a cold child's environment, it prints the whole `mwait::stats()` on stderr
/// at the end (what each wait did, the estimates and budgets): to look into a run
/// whose tier shares surprise.
pub const STATS_ENV: &str = "MWAIT_BENCH_STATS";

/// Which tier the waits of this cold run ended in, from the crate's own counts
/// (`mwait::stats()`): each cold run is a process of its own, so the process-wide
/// counts belong to that one scenario and mechanism. `None` where no wait went
/// through the crate (a futex or PAUSE mechanism), which the report prints as "n/a".
pub fn tier_shares() -> Option<TierShares> {
    let waits = mwait::stats().waits;
    (waits.waits() > 0).then(|| {
        // `shares` is in per cent, the report's shares are fractions.
        let (spin, hardware, park) = waits.shares();
        TierShares {
            spin: spin / 100.0,
            hardware: hardware / 100.0,
            park: park / 100.0,
        }
    })
}

/// The child's command line for `scenario` with the mechanism `name`: `amount` is
/// the steady budget in ms, the barrier's episode count, or (first wake) ignored.
pub fn child_args(scenario: Scenario, name: &str, amount: u64) -> Vec<String> {
    vec![
        COLD_ARG.to_string(),
        scenario.name().to_string(),
        name.to_string(),
        amount.to_string(),
    ]
}

/// The child side: when `args` (the process's arguments after its name) start
/// with [`COLD_ARG`], runs that scenario and returns what it measured, or why it
/// could not run; otherwise `None`. Called first thing in `main`.
pub fn child_entry(args: &[String]) -> Option<Result<Measures, String>> {
    let [flag, scenario, name, amount] = args else {
        return (args.first().map(String::as_str) == Some(COLD_ARG)).then(|| {
            Err(format!(
                "usage: {COLD_ARG} SCENARIO IMPL AMOUNT, got {args:?}"
            ))
        });
    };
    if flag != COLD_ARG {
        return None;
    }
    Some(run(scenario, name, amount))
}

fn run(scenario: &str, name: &str, amount: &str) -> Result<Measures, String> {
    let scenario = Scenario::parse(scenario).ok_or(format!("no cold scenario {scenario}"))?;
    let amount: u64 = amount
        .parse()
        .map_err(|_| format!("`{amount}` is not a number"))?;
    let mut m = match scenario {
        Scenario::Barrier => {
            let (_, make) = scenarios::barriers()
                .into_iter()
                .find(|(n, _)| *n == name)
                .ok_or(format!("no barrier {name}"))?;
            barrier(make(), u32::try_from(amount).unwrap_or(u32::MAX))
        }
        _ => {
            let make = impls::by_name(name).ok_or(format!("no mechanism {name}"))?;
            let budget = Duration::from_millis(amount);
            if let Scenario::LongWait | Scenario::LongWaitFirst = scenario {
                long_wait(make, budget, scenario == Scenario::LongWaitFirst)
            } else if scenario == Scenario::FirstWake {
                let mut m = Measures::default();
                m.push("first_wake_ns", first_wake(make).late_ns as f64);
                m
            } else {
                pingpong(make, scenario, budget)
            }
        }
    };
    if std::env::var_os(STATS_ENV).is_some() {
        eprintln!("{}", mwait::stats());
    }
    if let Some(t) = tier_shares() {
        m.push("spin_share", t.spin);
        m.push("hardware_share", t.hardware);
        m.push("park_share", t.park);
    }
    Ok(m)
}

/// The first [`FIRST`] round trips and the steady state after them (p50 of each).
///
/// Where the comparison is with a PAUSE loop (the ping-pongs on two CPUs), the steady
/// phase alternates slices between the mechanism and a PAUSE ping-pong pinned to
/// CPUs 0 and 1 in this same process ([`scenarios::interleaved_with_pause`], which
/// says why; a PAUSE loop has no state to warm, so it is as cold as it will ever
/// be): two children run one after the other compared the host's placements of the
/// vCPUs as often as mechanisms. `steady_vs_pause` is the median of the slice pairs'
/// ratios, `first_vs_pause` compares the first [`FIRST`] round trips with the median
/// of the PAUSE slices.
fn pingpong(make: Make, scenario: Scenario, budget: Duration) -> Measures {
    let (pins, delay) = match scenario {
        Scenario::Unpinned => (None, Duration::ZERO),
        Scenario::LatePartner => (Some((0, 1)), PARTNER_DELAY),
        Scenario::SameCpu => (Some((0, 0)), Duration::ZERO),
        _ => (Some((0, 1)), Duration::ZERO),
    };
    let mut pp = PingPong::start_with(make, pins, delay);
    let mut budget = budget;
    if scenario == Scenario::AfterPause {
        budget /= 2;
        scenarios::round_trips(&mut pp, Duration::MAX, FIRST_SAMPLES);
        scenarios::round_trips(&mut pp, budget, MAX_SAMPLES);
        thread::sleep(MID_RUN_PAUSE);
    }
    let mut first = scenarios::round_trips(&mut pp, Duration::MAX, FIRST_SAMPLES);
    let mut m = Measures::default();
    let first_p50 = stats(&mut first).p50;
    m.push("first_p50_ns", first_p50);
    if scenario == Scenario::SameCpu {
        let mut steady = scenarios::round_trips(&mut pp, budget, MAX_SAMPLES);
        m.push("steady_p50_ns", stats(&mut steady).p50);
        m.push("steady_samples", steady.len() as f64);
        return m;
    }
    let s = scenarios::interleaved_with_pause(&mut pp, pins, budget);
    m.push("steady_p50_ns", s.steady_p50);
    m.push("steady_samples", s.samples as f64);
    m.push("pause_steady_p50_ns", s.pause_p50);
    m.push("first_vs_pause", first_p50 / s.pause_slice_p50);
    m.push("steady_vs_pause", s.median_ratio);
    m
}

/// Samples of [`crate::ROUND_TRIP_BATCH`] round trips each, [`FIRST`] round trips'
/// worth.
const FIRST_SAMPLES: usize = (FIRST / crate::ROUND_TRIP_BATCH) as usize;

/// How long after its partner's store [`Scenario::FirstWake`]'s first wait waits.
pub const FIRST_WAKE_DELAY: Duration = Duration::from_millis(2);

/// What [`first_wake`] measured.
#[derive(Clone, Copy, Debug)]
pub struct FirstWake {
    /// How long after the store the wait returned, ns (an `Instant` read on each
    /// side).
    pub late_ns: u64,
    /// The waiting thread's CPU time in the wait, ns: the one-time work of a first
    /// wait (detection, registrations) and the park.
    pub cpu_ns: u64,
}

/// The calling thread's first wait on a `make` signal: a thread it starts stores
/// [`FIRST_WAKE_DELAY`] later. Call it before anything else of the mechanism has
/// run, in a fresh process, for a first wait.
pub fn first_wake(make: Make) -> FirstWake {
    let signal: std::sync::Arc<dyn crate::Signal> = std::sync::Arc::from(make());
    let s = signal.clone();
    let storer = thread::spawn(move || {
        thread::sleep(FIRST_WAKE_DELAY);
        let at = std::time::Instant::now();
        s.set(1);
        at
    });
    let cpu0 = mwait_support::thread_cpu_time();
    signal.wait_ge(1);
    let woke = std::time::Instant::now();
    let cpu = mwait_support::thread_cpu_time() - cpu0;
    let stored = storer.join().expect("the storing thread");
    FirstWake {
        late_ns: duration_ns(woke.saturating_duration_since(stored)),
        cpu_ns: duration_ns(cpu),
    }
}

/// The waiter's CPU and wake latency under a store every ~1 ms, pinned.
///
/// Beside a futex pair that runs at the same time in this same process, its producer
/// on the same CPU and its stores half a gap apart (the two waiters are awake a few
/// % of the time each, so they rarely meet): `cpu_vs_futex` compares the two waiters'
/// CPU times over the same seconds. A waiter's CPU time per wake is mostly the
/// kernel's and the hypervisor's wake-up path, which moves with the host's load
/// within seconds (from 10 to 20 us of CPU per wake here); compared across children
/// run one after the other, that moved the ratio from 0.8x to 1.3x between runs of
/// one build, and slices of one child alternating between the two (a fresh waiter
/// each) still moved a futex-against-futex ratio by 30 %. The mechanism's pair starts
/// half a gap after the futex pair, or, `started_first`, half a gap before it.
pub fn long_wait(make: Make, budget: Duration, started_first: bool) -> Measures {
    let futex = impls::by_name("futex").expect("futex is a known mechanism");
    let (gap, pins) = (Duration::from_millis(1), Some((0, 1)));
    let (mut p, f) = if started_first {
        let (f, p) = scenarios::slow_producers_beside(futex, make, gap, budget, pins);
        (p, f)
    } else {
        scenarios::slow_producers_beside(make, futex, gap, budget, pins)
    };
    let mut m = Measures::default();
    m.push("waiter_cpu", p.waiter_cpu);
    m.push("wake_p50_ns", stats(&mut p.wake_ns).p50);
    m.push("futex_waiter_cpu", f.waiter_cpu);
    m.push("cpu_vs_futex", p.waiter_cpu / f.waiter_cpu);
    m
}

/// ns per episode over the first [`FIRST`] episodes and over the rest.
fn barrier(b: std::sync::Arc<dyn scenarios::BarrierLike>, episodes: u32) -> Measures {
    let first = FIRST.min(episodes);
    let [t_first, t_rest] = scenarios::barrier_episodes_split(b, episodes, first);
    let per = |t: Duration, n: u32| duration_ns(t) as f64 / f64::from(n.max(1));
    let mut m = Measures::default();
    m.push("first_ns_per_episode", per(t_first, first));
    m.push("steady_ns_per_episode", per(t_rest, episodes - first));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_survive_the_wire() {
        let mut m = Measures::default();
        m.push("first_p50_ns", 120.0);
        m.push("waiter_cpu", 0.0125);
        m.push("missing", f64::NAN);
        let back = Measures::parse(&m.to_string()).unwrap();
        assert_eq!(back.get("first_p50_ns"), 120.0);
        assert_eq!(back.get("waiter_cpu"), 0.0125);
        assert!(back.get("missing").is_nan() && back.get("absent").is_nan());
        assert!(Measures::parse("x=1 y").is_err());
    }

    #[test]
    fn scenario_names_round_trip_and_every_one_has_impls() {
        for s in Scenario::ALL {
            assert_eq!(Scenario::parse(s.name()), Some(s));
            assert_eq!(s.impls()[0], "waitcell");
        }
    }

    #[test]
    fn a_cold_pingpong_reports_both_phases() {
        let m = run("pingpong-unpinned", "futex", "1").unwrap();
        assert!(m.get("first_p50_ns") > 0.0, "{m}");
        assert!(m.get("steady_p50_ns") > 0.0, "{m}");
        assert!(m.get("steady_samples") >= 1.0, "{m}");
        // Beside an interleaved PAUSE ping-pong: both ratios measured and positive.
        assert!(m.get("pause_steady_p50_ns") > 0.0, "{m}");
        assert!(m.get("first_vs_pause") > 0.0, "{m}");
        assert!(m.get("steady_vs_pause") > 0.0, "{m}");
        // On one CPU the comparison is with futex, in another child: no PAUSE slices.
        let m = run("same_cpu", "futex", "1").unwrap();
        assert!(m.get("steady_p50_ns") > 0.0, "{m}");
        assert!(m.get("steady_vs_pause").is_nan(), "{m}");
    }

    #[test]
    fn the_entry_ignores_other_commands_and_rejects_bad_cold_ones() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(child_entry(&args(&["--quick"])).is_none());
        assert!(child_entry(&args(&[COLD_ARG])).unwrap().is_err());
        assert!(child_entry(&args(&[COLD_ARG, "nope", "waitcell", "1"]))
            .unwrap()
            .is_err());
        assert!(child_entry(&args(&[COLD_ARG, "same_cpu", "nope", "1"]))
            .unwrap()
            .is_err());
    }
}
