//! The public API from outside the crate, in one test binary: the cell, the policy
//! and the selection (`cell.rs`), the counts (`stats.rs`), and the futures under a
//! minimal std-only executor (`async_executor.rs`) and under tokio
//! (`async_tokio.rs`).

mod async_executor;
mod async_tokio;
mod cell;
mod stats;
