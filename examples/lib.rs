//! The runnable examples of the `mwait` crate (`cargo run --release --example NAME`):
//!
//! - `probe`: what this CPU offers, which backend mwait picked and why, and a
//!   round-trip latency table of every tier usable here;
//! - `cpuid_dump`: this machine's CPUID leaves, in the format of the detection
//!   tests' recorded dumps;
//! - `tokio_pipeline`: a three-stage pipeline of tokio tasks and an OS thread handing
//!   work over through `WaitCell`s.
//!
//! This library holds nothing: Cargo needs one target beside the examples, and
//! the helpers they share (pinning, percentiles, the timed sampler) live in
//! `mwait-support` with those of the benches and tests.
