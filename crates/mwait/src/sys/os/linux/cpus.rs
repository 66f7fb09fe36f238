//! What the ladder reads about the machine (the CPU a thread runs on, the runnable
//! threads, the CPUs the process may use) and the affinity control of the hardware
//! self-test: `sched_getcpu`, `/proc/loadavg`, the cgroup files, `sched_getaffinity`.

/// The CPU the calling thread runs on (`u32::MAX` where unknown).
#[inline]
pub(crate) fn current_cpu() -> u32 {
    if cfg!(miri) {
        // Miri has no sched_getcpu: unknown.
        return u32::MAX;
    }
    // SAFETY: sched_getcpu takes no arguments and only reads the vDSO/rseq data.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).unwrap_or(u32::MAX)
}

/// How many threads are runnable right now, machine-wide (the fourth field of
/// `/proc/loadavg`, `running/total`; the reading thread counts itself); `None` when
/// unreadable.
pub(crate) fn running_threads() -> Option<usize> {
    let mut buf = [0u8; LOADAVG_BYTES];
    let s = read_loadavg(&mut buf)?;
    let field = s.split_whitespace().nth(3)?;
    field.split('/').next()?.parse::<usize>().ok()
}

/// Room for `/proc/loadavg`: five fields of at most about 20 characters each.
const LOADAVG_BYTES: usize = 128;

/// `/proc/loadavg` into `buf`. The file stays open after the first reading (one
/// descriptor per process, close-on-exec) and each reading is one `pread` at offset
/// 0, which has procfs write the text afresh: a sparse wait's reading comes after an
/// idle spell, when the path lookup, open and close of a fresh read would cost it
/// over ten times the `pread` (`docs/default-policy.md`, "The load reading").
/// Under Miri, which refuses host files, there is no reading.
fn read_loadavg(buf: &mut [u8]) -> Option<&str> {
    use std::os::unix::fs::FileExt;
    static LOADAVG: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
    if cfg!(miri) {
        return None;
    }
    let file = LOADAVG
        .get_or_init(|| std::fs::File::open("/proc/loadavg").ok())
        .as_ref()?;
    let n = file.read_at(buf, 0).ok()?;
    std::str::from_utf8(&buf[..n]).ok()
}

/// How many CPUs this process may use: the online CPUs within its cgroup's cpuset, at
/// most its CPU quota (`cgroup.rs`), never the calling thread's affinity mask (a thread
/// that pinned itself before the first wait does not make a one-CPU process).
pub(crate) fn usable_cpus() -> Option<usize> {
    Some(super::cgroup::process_cpus_from(
        &crate::sys::host::read,
        online_cpus,
    ))
}

/// `sysconf(_SC_NPROCESSORS_ONLN)` (at least 1): the online count where the sysfs list
/// cannot be read. Not the affinity mask.
fn online_cpus() -> usize {
    // SAFETY: sysconf takes a constant and reads no memory of ours.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(0).max(1)
}

/// The CPUs a thread may run on (its affinity mask).
pub(crate) struct ThreadCpus(libc::cpu_set_t);

impl ThreadCpus {
    /// The calling thread's affinity mask.
    pub(crate) fn of_this_thread() -> Option<ThreadCpus> {
        // SAFETY: an all-zero cpu_set_t is a valid empty set; sched_getaffinity writes
        // at most `size_of::<cpu_set_t>()` bytes into it.
        unsafe {
            let mut set: libc::cpu_set_t = core::mem::zeroed();
            let n = core::mem::size_of::<libc::cpu_set_t>();
            (libc::sched_getaffinity(0, n, &mut set) == 0).then_some(ThreadCpus(set))
        }
    }

    /// How many CPUs.
    pub(crate) fn count(&self) -> usize {
        // SAFETY: CPU_COUNT only reads the set.
        unsafe { libc::CPU_COUNT(&self.0) as usize }
    }

    /// Restricts the calling thread to these CPUs but `cpu`; false when that leaves
    /// none (or the kernel refused).
    pub(crate) fn move_off(&self, cpu: usize) -> bool {
        set_affinity(&self.without(cpu).0)
    }

    /// These CPUs but `cpu`.
    pub(crate) fn without(&self, cpu: usize) -> ThreadCpus {
        let mut set = self.0;
        if cpu < libc::CPU_SETSIZE as usize {
            // SAFETY: `cpu` is below CPU_SETSIZE, the set's capacity.
            unsafe { libc::CPU_CLR(cpu, &mut set) };
        }
        ThreadCpus(set)
    }

    /// Whether the calling thread's mask is exactly these CPUs now.
    pub(crate) fn is_this_thread_s(&self) -> bool {
        ThreadCpus::of_this_thread().is_some_and(|now| {
            // SAFETY: CPU_EQUAL only reads both sets.
            unsafe { libc::CPU_EQUAL(&now.0, &self.0) }
        })
    }

    /// Gives the calling thread these CPUs again; false if the kernel refused.
    pub(crate) fn apply(&self) -> bool {
        set_affinity(&self.0)
    }
}

/// Restricts the calling thread to `set`; false when it is empty or the kernel refused.
fn set_affinity(set: &libc::cpu_set_t) -> bool {
    // SAFETY: CPU_COUNT only reads the set.
    if unsafe { libc::CPU_COUNT(set) } == 0 {
        return false;
    }
    let n = core::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is a valid cpu_set_t of `n` bytes; pid 0 is this thread.
    unsafe { libc::sched_setaffinity(0, n, set) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kept descriptor reads the file afresh each time: the same text as a
    /// fresh open's, field for field (the load averages and the count of threads
    /// move between two readings, the fields stay).
    #[test]
    #[cfg_attr(miri, ignore = "Miri refuses host files")]
    fn the_kept_loadavg_reads_what_a_fresh_open_reads() {
        for _ in 0..3 {
            let mut buf = [0u8; LOADAVG_BYTES];
            let kept = read_loadavg(&mut buf).expect("/proc/loadavg is readable");
            let fresh = std::fs::read_to_string("/proc/loadavg").unwrap();
            assert_eq!(
                kept.split_whitespace().count(),
                fresh.split_whitespace().count()
            );
            assert!(running_threads().is_some_and(|n| n >= 1));
        }
    }
}
