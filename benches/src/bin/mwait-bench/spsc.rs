//! The `spsc` section: a bounded ring of 256 slots on two `WaitCell`s (head and
//! tail, each side storing its position after every message) against
//! `crossbeam_channel::bounded(256)` and `std::sync::mpsc::sync_channel(256)`
//! ([`mwait_benches::spsc`]), every channel once per round in a rotated order, and
//! its targets:
//!
//! - throughput at saturation ≥ 1x crossbeam's;
//! - with a gap between messages, the receiver's latency p50 ≤ crossbeam's and its
//!   CPU time per message ≤ 1.5x crossbeam's;
//!
//! each the median of the per-round ratios.

use crate::judge::{in_process_target, Bound, Target};
use crate::report::{md, num, Out};
use crate::Ctx;
use mwait_benches::spsc::{self, Channel, Gapped, CHANNELS};
use mwait_benches::{median, round_order};
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

/// One round: each channel's throughput (msg/s) and gapped run, in [`CHANNELS`]'
/// order.
struct Round {
    throughput: [f64; 3],
    gapped: [Gapped; 3],
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
            let mut throughput = [f64::NAN; 3];
            let mut gapped: [Option<Gapped>; 3] = [None, None, None];
            for i in round_order(CHANNELS.len(), round) {
                throughput[i] = spsc::throughput(CHANNELS[i], MESSAGES);
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
    for (i, ch) in CHANNELS.iter().enumerate() {
        let col = |f: &dyn Fn(&Round) -> f64| median(&rounds.iter().map(f).collect::<Vec<_>>());
        let mps = col(&|r| r.throughput[i]);
        let p50 = col(&|r| r.gapped[i].p50_ns);
        let p99 = col(&|r| r.gapped[i].p99_ns);
        let cpu = col(&|r| r.gapped[i].cpu_per_msg_ns);
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
}

/// Per round, the ring's measure over crossbeam's.
fn ratios(rounds: &[Round], f: impl Fn(&Round, usize) -> f64) -> Vec<f64> {
    let (ring, cb) = (index(Channel::Ring), index(Channel::Crossbeam));
    rounds.iter().map(|r| f(r, ring) / f(r, cb)).collect()
}

fn index(ch: Channel) -> usize {
    CHANNELS
        .iter()
        .position(|&c| c == ch)
        .expect("a channel of the section")
}

fn targets(rounds: &[Round]) -> Vec<Target> {
    vec![
        in_process_target(
            "spsc: ring throughput >= 1x crossbeam-channel's",
            &ratios(rounds, |r, i| r.throughput[i]),
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
