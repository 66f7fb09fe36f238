//! The `atomic` section: waits on bare atomics (`mwait::atomic`, the
//! `mwait-atomic` mechanism) against their peers, and its targets:
//!
//! - a store and wake of an unwaited word: ≤ 5 ns, and ≥ 45x cheaper than
//!   atomic-wait's store and `wake_one`;
//! - the same with a parked waiter of another word in the word's bucket: ≤ 10 ns;
//! - ping-pong on two `AtomicU32`s: ≤ 1.1x a WaitCell's and ≤ 1.1x PAUSE's, and
//!   ≤ 0.1x atomic-wait's, each the median of per-round ratios of 10 ms slices run
//!   one after the other in one process;
//! - 64 waiters parked on a 10^7-word array: resident memory growth ≤ the table and
//!   1 KiB per parked thread;
//! - the wake-up p50 of a `wait_any` over 8 words ≤ 1.2x a wait on one (median of
//!   per-round ratios of alternating rounds).

use crate::judge::{in_process_target, Bound, Target};
use crate::report::{md, num, Out};
use crate::Ctx;
use mwait_benches::atomic::{self as a, RssGrowth};
use mwait_benches::{median, min_max, stats};
use std::fmt::Write as _;

/// What the section measured.
struct Measured {
    /// ns per store-and-wake: unwaited, and beside a parked waiter of the bucket.
    unwaited_ns: f64,
    bucket_parked_ns: f64,
    atomic_wait_ns: f64,
    /// Per round, mwait-atomic's ping-pong p50 over waitcell's, PAUSE's and
    /// atomic-wait's.
    over_waitcell: Vec<f64>,
    over_pause: Vec<f64>,
    over_atomic_wait: Vec<f64>,
    rss: Option<RssGrowth>,
    /// Per round, the wait_any wake p50 over the one-word wait's.
    any_over_one: Vec<f64>,
}

/// `atomic`: measures (unless `--only` names another section), writes the tables
/// and judges the targets.
pub fn run(o: &mut Out, ctx: &Ctx) {
    let m = measure(o, ctx);
    for t in targets(&m) {
        o.target(t);
    }
}

/// Measures and writes the section's tables.
fn measure(o: &mut Out, ctx: &Ctx) -> Measured {
    let runs = ctx.runs("atomic");
    if runs {
        eprintln!("atomic ...");
    }
    let p50 = |v: &[f64]| {
        let mut ns: Vec<u64> = v.iter().map(|x| (x * 1000.0) as u64).collect();
        stats(&mut ns).p50 / 1000.0
    };
    let costs = if runs {
        a::wake_costs(ctx.b.notify)
    } else {
        Vec::new()
    };
    let cost = |n: &str| {
        costs
            .iter()
            .find(|(c, _)| c == n)
            .map_or(f64::NAN, |(_, v)| p50(v))
    };
    let rounds = if runs {
        a::pingpong_rounds(ctx.b.rounds as usize)
    } else {
        Vec::new()
    };
    let over = |j: usize| rounds.iter().map(|r| r[0] / r[j]).collect::<Vec<f64>>();
    let m = Measured {
        unwaited_ns: cost("unwaited"),
        bucket_parked_ns: cost("bucket-parked"),
        atomic_wait_ns: cost("atomic-wait"),
        over_waitcell: over(1),
        over_pause: over(2),
        over_atomic_wait: over(3),
        rss: runs.then(|| a::rss_growth(10_000_000, 64)),
        any_over_one: if runs {
            a::any_vs_one_wakes(ctx.b.rounds as usize, 100)
                .iter()
                .map(|(any, one)| any / one)
                .collect()
        } else {
            Vec::new()
        },
    };
    md!(o, "## Waits on bare atomics (`atomic`)\n");
    md!(
        o,
        "`mwait::atomic` on `AtomicU32`s through the waiter table (`mwait-atomic`).\n"
    );
    md!(o, "| store and wake | ns per call |\n| --- | ---: |");
    for (n, ns) in [
        ("unwaited word", m.unwaited_ns),
        (
            "unwaited word, parked waiter in its bucket",
            m.bucket_parked_ns,
        ),
        ("atomic-wait (store and wake_one)", m.atomic_wait_ns),
    ] {
        md!(o, "| {n} | {ns:.2} |");
        o.json.push(format!(
            "{{\"bench\": \"atomic-wake\", \"case\": \"{n}\", \"ns\": {}}}",
            num(ns)
        ));
    }
    md!(o);
    md!(
        o,
        "Ping-pong on CPUs 0 and 1, {} rounds of 10 ms slices of each mechanism:\n",
        rounds.len()
    );
    md!(
        o,
        "| mechanism | p50 round trip (median of rounds), ns |\n| --- | ---: |"
    );
    for (i, n) in a::PINGPONG_MECHANISMS.iter().enumerate() {
        let v = median(&rounds.iter().map(|r| r[i]).collect::<Vec<f64>>());
        md!(o, "| {n} | {v:.0} |");
        o.json.push(format!(
            "{{\"bench\": \"atomic-pingpong\", \"impl\": \"{n}\", \"p50_ns\": {}}}",
            num(v)
        ));
    }
    md!(o);
    if let Some(g) = &m.rss {
        md!(
            o,
            "{} threads parked on a {}-word array: resident memory +{:.0} KiB (bound {:.0} KiB).\n",
            g.parked,
            g.words,
            g.growth_kib,
            g.bound_kib
        );
        o.json.push(format!(
            "{{\"bench\": \"atomic-rss\", \"growth_kib\": {}, \"bound_kib\": {}}}",
            num(g.growth_kib),
            num(g.bound_kib)
        ));
    }
    let (lo, hi) = min_max(&m.any_over_one);
    md!(
        o,
        "`wait_any` over 8 words, wake p50 over a one-word wait's: {:.2}x (median of {} rounds, range {lo:.2}–{hi:.2}x).\n",
        median(&m.any_over_one),
        m.any_over_one.len()
    );
    m
}

/// The section's targets.
fn targets(m: &Measured) -> Vec<Target> {
    let rss = m.rss.as_ref();
    vec![
        Target::on(
            format!(
                "atomic: wake of an unwaited word <= 5 ns: {:.2} ns",
                m.unwaited_ns
            ),
            m.unwaited_ns,
            Bound::AtMost(5.0),
        ),
        Target::on(
            format!(
                "atomic: wake of an unwaited word >= 45x cheaper than atomic-wait: {:.0}x",
                m.atomic_wait_ns / m.unwaited_ns
            ),
            m.atomic_wait_ns / m.unwaited_ns,
            Bound::AtLeast(45.0),
        ),
        Target::on(
            format!(
                "atomic: wake of an unwaited word beside a parked waiter of its bucket <= 10 ns: {:.2} ns",
                m.bucket_parked_ns
            ),
            m.bucket_parked_ns,
            Bound::AtMost(10.0),
        ),
        in_process_target(
            "atomic: ping-pong p50 <= 1.1x waitcell's",
            &m.over_waitcell,
            Bound::AtMost(1.1),
        ),
        in_process_target(
            "atomic: ping-pong p50 <= 1.1x pause's",
            &m.over_pause,
            Bound::AtMost(1.1),
        ),
        in_process_target(
            "atomic: ping-pong p50 <= 0.1x atomic-wait's",
            &m.over_atomic_wait,
            Bound::AtMost(0.1),
        ),
        Target::on(
            format!(
                "atomic: RSS growth of 64 parked waiters on 10^7 words <= table + 1 KiB each: {}",
                rss.map_or("not run".to_string(), |g| format!(
                    "+{:.0} KiB of {:.0} KiB",
                    g.growth_kib, g.bound_kib
                ))
            ),
            rss.map_or(f64::NAN, |g| g.growth_kib),
            Bound::AtMost(rss.map_or(f64::NAN, |g| g.bound_kib)),
        ),
        in_process_target(
            "atomic: wait_any over 8 words, wake p50 <= 1.2x one word's",
            &m.any_over_one,
            Bound::AtMost(1.2),
        ),
    ]
}
