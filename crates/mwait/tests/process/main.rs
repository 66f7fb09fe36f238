//! The tests that start processes of their own, in one test binary: the soundness
//! cases that fork, map memory shared between processes or install a seccomp filter
//! (`soundness.rs`), what mwait leaves open in a process (`footprint.rs`), and the
//! environment variables end to end (`env.rs`). Each
//! re-runs this binary as a child with one test selected (`support::run_child`,
//! under `MWAIT_TEST_RUNNER` where set).

mod env;
mod footprint;
mod soundness;
#[path = "../support/mod.rs"]
mod support;
