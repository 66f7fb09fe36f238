//! Linux: the futex park (`futex.rs`, its system call in `syscall.rs`), the
//! asymmetric barrier of `membarrier` with its TLB-shootdown fallback and the count
//! of `fork()`s (`barrier.rs`), what every park and notify reads of it on one cache
//! line (`line.rs`), what the ladder reads about CPUs and load and the affinity
//! control (`cpus.rs`), and the usable CPU count from the cgroup files (`cgroup.rs`,
//! their parsers in `cgroup/parse.rs`).

mod barrier;
mod cgroup;
mod cpus;
mod futex;
mod line;
mod syscall;

pub(crate) use barrier::{
    begin_light_check, begin_light_store, fork_generation, prepare, waiter_barrier,
};
pub(crate) use cpus::{current_cpu, running_threads, usable_cpus, ThreadCpus};
#[cfg(test)]
pub(crate) use futex::inject;
pub(crate) use futex::{wait, wake};
/// Nothing to keep beside the word: the kernel keys futex sleepers by address.
pub(crate) use super::plain::{end_light_store, light_fence, Queue};
