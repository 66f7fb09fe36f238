//! The runnable examples of the `mwait` crate (`cargo run --release --example NAME`):
//!
//! - `probe`: what this CPU offers, which backend mwait picked and why, and a
//!   round-trip latency table of every tier usable here;
//! - `cpuid_dump`: this machine's CPUID leaves, in the format of the detection
//!   tests' recorded dumps;
//! - `tokio_pipeline`: a three-stage pipeline of tokio tasks and an OS thread handing
//!   work over through `WaitCell`s;
//! - `cold_pingpong`: a ping-pong through two `WaitCell`s in a process that has not
//!   touched mwait before (pinned, unpinned or on one CPU), beside a PAUSE loop;
//! - `hop_cost`: where a `WaitCell` ping-pong spends the time a PAUSE loop does not,
//!   three ping-pongs back to back between CPUs 0 and 1.
//!
//! This library holds nothing: Cargo needs one target beside the examples, and
//! the helpers they share (pinning, percentiles, the timed sampler) live in
//! `mwait-support` with those of the benches and tests.
