//! Thread placement on Linux: `sched_setaffinity`, `sched_getaffinity`,
//! `sched_getcpu`.

/// The CPUs an affinity call names; the kernel keeps only those of the process's
/// cpuset.
const MASK_CPUS: usize = libc::CPU_SETSIZE as usize;

pub(crate) fn pin_to_cpu(cpu: usize) -> bool {
    if cpu >= MASK_CPUS {
        return false;
    }
    // SAFETY: an all-zero cpu_set_t is a valid empty set; CPU_SET writes within it
    // for `cpu` below CPU_SETSIZE, which the check above guarantees; the set
    // outlives the call.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

pub(crate) fn unpin() {
    // SAFETY: an all-zero cpu_set_t is a valid empty set; CPU_SET writes within it
    // for CPUs below CPU_SETSIZE; the set outlives the call.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for cpu in 0..MASK_CPUS {
            libc::CPU_SET(cpu, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

pub(crate) fn current_cpu() -> usize {
    // SAFETY: sched_getcpu takes no arguments and only reads the vDSO/rseq data.
    let c = unsafe { libc::sched_getcpu() };
    usize::try_from(c).unwrap_or(usize::MAX)
}

pub(crate) fn affinity_cpus() -> Option<usize> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set; sched_getaffinity writes
    // at most `size_of::<cpu_set_t>()` bytes into it.
    let n = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return None;
        }
        libc::CPU_COUNT(&set)
    };
    usize::try_from(n).ok().filter(|&n| n > 0)
}
