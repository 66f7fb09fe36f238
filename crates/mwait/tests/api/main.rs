//! The public API from outside the crate, in one test binary: the cell, the policy
//! and the selection (`cell.rs`), the counts (`stats.rs`), the futures under a
//! minimal std-only executor (`async_executor.rs`) and under tokio
//! (`async_tokio.rs`), the peers' conformance cases (`conformance.rs`), `Parker`
//! (`parker.rs`), the CPU time a parked waiter is charged (`park_cpu.rs`), and
//! what the crate exports to the crates that compile its generic waits
//! (`exports.rs`, on x86-64 Linux).

mod async_executor;
mod async_tokio;
mod cell;
mod conformance;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod exports;
mod park_cpu;
mod parker;
mod stats;
#[path = "../support/mod.rs"]
mod support;
