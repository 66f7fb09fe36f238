//! The public API from outside the crate, in one test binary: the cell, the policy
//! and the selection (`cell.rs`), the counts (`stats.rs`), the futures under a
//! minimal std-only executor (`async_executor.rs`) and under tokio
//! (`async_tokio.rs`), the peers' conformance cases (`conformance.rs`), `Parker`
//! (`parker.rs`), and the CPU time a parked waiter is charged (`park_cpu.rs`).

mod async_executor;
mod async_tokio;
mod cell;
mod conformance;
mod park_cpu;
mod parker;
mod stats;
#[path = "../support/mod.rs"]
mod support;
