//! The trade-off section (`latency_cpu`): each mechanism's wake-up p50 against its
//! waiter's CPU share across idle gaps ([`mwait_benches::tradeoff`]), drawn in
//! `latency_cpu.svg`.

use crate::report::{md, num, Out};
use crate::Ctx;
use mwait_benches::impls;
use mwait_benches::tradeoff::{self, Point, GAPS, MECHANISMS};
use std::fmt::Write as _;
use std::time::Duration;

/// The section: measures every curve (unless `--only` leaves it out), writes the
/// table and keeps the curves for `latency_cpu.svg`.
pub fn run(o: &mut Out, ctx: &Ctx) {
    if !ctx.runs("latency_cpu") {
        return;
    }
    eprintln!("latency_cpu ...");
    o.latency_cpu = section(o, ctx.b.latency_cpu);
}

/// Measures every curve (`budget` per gap and mechanism) and writes the table.
fn section(o: &mut Out, budget: Duration) -> Vec<(String, Vec<Point>)> {
    let curves: Vec<(String, Vec<Point>)> = MECHANISMS
        .iter()
        .map(|&name| {
            let make = impls::by_name(name).unwrap_or_else(|| panic!("no mechanism {name}"));
            (name.to_string(), tradeoff::curve(make, budget))
        })
        .collect();
    md!(o, "## Latency against CPU (`latency_cpu`)\n");
    md!(
        o,
        "A producer on CPU 0 stores after each idle gap (slept, then spun for the last \
         200 µs), a waiter on CPU 1 waits for every store; at least {} ms and {} stores \
         per gap. Each cell: the waiter's CPU share / its wake-up p50 (store to waiter \
         running). Drawn in `latency_cpu.svg`. `mwait::Parker` is not drawn: its one \
         token merges the stores that come before a park, so it cannot wait for every \
         store; the clients section measures it.\n",
        budget.as_millis(),
        tradeoff::MIN_STORES
    );
    let head: Vec<String> = GAPS.iter().map(|g| format!("{g:?}")).collect();
    md!(o, "| impl | {} |", head.join(" | "));
    md!(o, "| --- |{}", " ---: |".repeat(GAPS.len()));
    for (name, pts) in &curves {
        let cells: Vec<String> = pts
            .iter()
            .map(|p| format!("{:.2} % / {:.0} ns", 100.0 * p.cpu, p.wake_p50))
            .collect();
        md!(o, "| {name} | {} |", cells.join(" | "));
        for p in pts {
            o.json.push(format!(
                "{{\"bench\": \"latency_cpu\", \"impl\": \"{name}\", \"gap_ns\": {}, \"waiter_cpu\": {}, \"wake_p50_ns\": {}}}",
                p.gap.as_nanos(), num(p.cpu), num(p.wake_p50)
            ));
        }
    }
    md!(o);
    curves
}
