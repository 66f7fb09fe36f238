//! The `spsc` section: a bounded ring of 256 slots on two `WaitCell`s (head and
//! tail, each side storing its position after every message) against
//! `crossbeam_channel::bounded(256)` and `std::sync::mpsc::sync_channel(256)`
//! ([`mwait_benches::spsc`]), every channel once per round in a rotated order, with
//! the same ring on PAUSE loops beside them at saturation (no waiting primitive: it
//! shows what the ring's design and the host give any primitive there), and its
//! targets:
//!
//! - throughput at saturation ≥ 1x crossbeam's;
//! - with a gap between messages, the receiver's latency p50 ≤ crossbeam's and its
//!   CPU time per message ≤ 1.5x crossbeam's;
//!
//! each the median of the per-round ratios.

use crate::judge::{in_process_target, Bound, Target};
use crate::report::{md, num, Out};
use crate::Ctx;
use mwait_benches::spsc::{self, Channel, Gapped, CHANNELS, SATURATED};
use mwait_benches::{median, min_max, round_order};
use std::fmt::Write as _;
use std::time::Duration;

/// Messages of a throughput run.
const MESSAGES: u32 = 2_000_000;
/// The sender's sleep between two messages of a gapped run: long enough that a
/// receiver that spins past it is seen in its CPU time, short enough that a round
/// stays short.
const GAP: Duration = Duration::from_micros(100);
/// Messages of a gapped run, per unit of the budget scale (a quick run: about
/// 0.3 s per channel and round at [`GAP`] and the timer's slack).
const GAPPED_MESSAGES: u32 = 2_000;

/// One round: each channel's throughput (msg/s), in [`SATURATED`]'s order, and
/// gapped run, in [`CHANNELS`]' order.
struct Round {
    throughput: [f64; SATURATED.len()],
    gapped: [Gapped; CHANNELS.len()],
}

/// `spsc`: measures (unless `--only` names another section), writes the tables and
/// judges the targets.
pub fn run(o: &mut Out, ctx: &Ctx) {
    let rounds = if ctx.runs("spsc") {
        eprintln!("spsc ...");
        measure(ctx)
    } else {
        Vec::new()
    };
    write(o, &rounds);
    for t in targets(&rounds) {
        o.target(t);
    }
}

fn measure(ctx: &Ctx) -> Vec<Round> {
    let gapped_messages = GAPPED_MESSAGES * (ctx.b.rounds / 5).max(1);
    (0..ctx.b.rounds as usize)
        .map(|round| {
            let mut throughput = [f64::NAN; SATURATED.len()];
            let mut gapped: [Option<Gapped>; CHANNELS.len()] = Default::default();
            for i in round_order(SATURATED.len(), round) {
                throughput[i] = spsc::throughput(SATURATED[i], MESSAGES);
            }
            for i in round_order(CHANNELS.len(), round) {
                gapped[i] = Some(spsc::gapped(CHANNELS[i], gapped_messages, GAP));
            }
            Round {
                throughput,
                gapped: gapped.map(|g| g.expect("every channel ran")),
            }
        })
        .collect()
}

fn write(o: &mut Out, rounds: &[Round]) {
    md!(o, "## Bounded SPSC channels (`spsc`)\n");
    md!(
        o,
        "A ring of {} slots on two WaitCells (each side stores its position after every message) against crossbeam-channel and std's sync_channel of the same capacity, threads unpinned, {} rounds (medians of rounds): {MESSAGES} messages at saturation, and one message after each sleep of {} µs.\n",
        spsc::SLOTS,
        rounds.len(),
        GAP.as_micros()
    );
    md!(
        o,
        "| channel | throughput, M msg/s | gapped p50, µs | gapped p99, µs | receiver CPU per message, µs |\n| --- | ---: | ---: | ---: | ---: |"
    );
    let col = |f: &dyn Fn(&Round) -> f64| median(&rounds.iter().map(f).collect::<Vec<_>>());
    for (i, ch) in SATURATED.iter().enumerate() {
        let mps = col(&|r| r.throughput[i]);
        let Some(g) = CHANNELS.iter().position(|c| c == ch) else {
            md!(o, "| {} | {:.1} | — | — | — |", ch.name(), mps / 1e6);
            o.json.push(format!(
                "{{\"bench\": \"spsc\", \"impl\": \"{}\", \"msgs_per_s\": {}}}",
                ch.name(),
                num(mps)
            ));
            continue;
        };
        let p50 = col(&|r| r.gapped[g].p50_ns);
        let p99 = col(&|r| r.gapped[g].p99_ns);
        let cpu = col(&|r| r.gapped[g].cpu_per_msg_ns);
        md!(
            o,
            "| {} | {:.1} | {:.1} | {:.1} | {:.2} |",
            ch.name(),
            mps / 1e6,
            p50 / 1e3,
            p99 / 1e3,
            cpu / 1e3
        );
        o.json.push(format!(
            "{{\"bench\": \"spsc\", \"impl\": \"{}\", \"msgs_per_s\": {}, \"p50_ns\": {}, \"p99_ns\": {}, \"cpu_per_msg_ns\": {}}}",
            ch.name(),
            num(mps),
            num(p50),
            num(p99),
            num(cpu)
        ));
    }
    md!(o);
    if !rounds.is_empty() {
        let of_pause = |ch| {
            let r = saturated_ratios(rounds, ch, Channel::PauseRing);
            let (lo, hi) = min_max(&r);
            format!("{:.2}x ({lo:.2}–{hi:.2}x)", median(&r))
        };
        md!(
            o,
            "At saturation against the same ring whose sides poll with PAUSE (yielding every {} polls; medians of the rounds' ratios, with their ranges): the ring on WaitCells {}, crossbeam-channel {}. The PAUSE ring makes no system call and writes nothing but the positions: a round where it too falls below crossbeam-channel is one where the ring's design (each side reads the other's position line on every message) costs more on that placement of the threads than crossbeam-channel's slot stamps.\n",
            spsc::PAUSE_POLLS_PER_YIELD,
            of_pause(Channel::Ring),
            of_pause(Channel::Crossbeam)
        );
    }
}

/// Per round, the ring's gapped measure over crossbeam's.
fn ratios(rounds: &[Round], f: impl Fn(&Round, usize) -> f64) -> Vec<f64> {
    let (ring, cb) = (
        index(&CHANNELS, Channel::Ring),
        index(&CHANNELS, Channel::Crossbeam),
    );
    rounds.iter().map(|r| f(r, ring) / f(r, cb)).collect()
}

/// Per round, `num`'s throughput over `den`'s.
fn saturated_ratios(rounds: &[Round], num: Channel, den: Channel) -> Vec<f64> {
    let (n, d) = (index(&SATURATED, num), index(&SATURATED, den));
    rounds
        .iter()
        .map(|r| r.throughput[n] / r.throughput[d])
        .collect()
}

fn index(channels: &[Channel], ch: Channel) -> usize {
    channels
        .iter()
        .position(|&c| c == ch)
        .expect("a channel of the section")
}

fn targets(rounds: &[Round]) -> Vec<Target> {
    vec![
        in_process_target(
            "spsc: ring throughput >= 1x crossbeam-channel's",
            &saturated_ratios(rounds, Channel::Ring, Channel::Crossbeam),
            Bound::AtLeast(1.0),
        ),
        in_process_target(
            "spsc: ring latency p50 with a gap <= crossbeam-channel's",
            &ratios(rounds, |r, i| r.gapped[i].p50_ns),
            Bound::AtMost(1.0),
        ),
        in_process_target(
            "spsc: ring receiver CPU per message with a gap <= 1.5x crossbeam-channel's",
            &ratios(rounds, |r, i| r.gapped[i].cpu_per_msg_ns),
            Bound::AtMost(1.5),
        ),
    ]
}
