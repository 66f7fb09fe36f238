//! Thread placement where the platform offers no affinity call: nothing is pinned
//! and the current CPU is unknown.

pub(crate) fn pin_to_cpu(_cpu: usize) -> bool {
    false
}

pub(crate) fn unpin() {}

pub(crate) fn current_cpu() -> usize {
    usize::MAX
}

pub(crate) fn affinity_cpus() -> Option<usize> {
    None
}
