//! What the ladder reads about the machine (the CPU a thread runs on, the runnable
//! threads, the CPUs the process may use) and the affinity control of the hardware
//! self-test: RDPID or `sched_getcpu`, `/proc/loadavg`, the cgroup files,
//! `sched_getaffinity`.

use super::line::LINE;
use std::sync::atomic::Ordering::Relaxed;

/// [`current_cpu`]'s source before its first call has looked.
pub(super) const CPU_SOURCE_UNKNOWN: u8 = 0;
/// RDPID, the low bits of IA32_TSC_AUX ([`TSC_AUX_CPU_MASK`]).
const CPU_FROM_TSC_AUX: u8 = 1;
/// glibc's `sched_getcpu` (the rseq area, else the vDSO).
const CPU_FROM_LIBC: u8 = 2;
/// RDPID may serve, but no call has run on a CPU other than 0 yet to tell: 0 is
/// also what IA32_TSC_AUX holds where nobody wrote it. `sched_getcpu` meanwhile.
const CPU_SOURCE_PENDING: u8 = 3;

/// The bits of IA32_TSC_AUX that hold the CPU number: Linux writes the CPU number
/// below bit 12 and the NUMA node above it on every x86-64 CPU that has RDTSCP or
/// RDPID, for its vDSO's `getcpu`, which reads them with one of the two.
const TSC_AUX_CPU_MASK: u64 = 0xfff;

/// The CPUs whose numbers fit in [`TSC_AUX_CPU_MASK`].
const TSC_AUX_CPUS: usize = 4096;

/// The CPU the calling thread runs on (`u32::MAX` where unknown).
///
/// One instruction on an x86-64 CPU with RDPID, a call of `sched_getcpu` elsewhere:
/// the park and the notify that wakes a parked waiter each read it, and after a
/// long sleep the call's code in libc, its GOT entries and the rseq area are lines
/// and pages that miss (`docs/design-notes.md` has the counts). The first calls
/// choose the source for the process ([`choose_cpu_source`]).
#[inline]
pub(crate) fn current_cpu() -> u32 {
    if cfg!(miri) {
        // Miri has neither RDPID nor sched_getcpu: unknown.
        return u32::MAX;
    }
    match LINE.cpu_source.load(Relaxed) {
        CPU_FROM_TSC_AUX => {
            // SAFETY: the source is CPU_FROM_TSC_AUX only where `rdpid_supported`
            // found RDPID.
            let aux = unsafe { crate::sys::x86::rdpid() };
            (aux & TSC_AUX_CPU_MASK) as u32
        }
        CPU_FROM_LIBC => libc_cpu(),
        _ => choose_cpu_source(),
    }
}

/// `sched_getcpu`, `u32::MAX` where it fails.
fn libc_cpu() -> u32 {
    // SAFETY: sched_getcpu takes no arguments and only reads the rseq/vDSO data.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).unwrap_or(u32::MAX)
}

/// Answers a call of [`current_cpu`] before its source is settled, with
/// `sched_getcpu`, and moves the choice on ([`next_cpu_source`]). Two threads that
/// choose at once choose alike.
#[cold]
#[inline(never)]
fn choose_cpu_source() -> u32 {
    let cpu = libc_cpu();
    let state = LINE.cpu_source.load(Relaxed);
    let may = state == CPU_SOURCE_PENDING || tsc_aux_may_hold_cpus();
    let next = next_cpu_source(may, cpu, || tsc_aux_agrees(cpu));
    if next != state {
        LINE.cpu_source.store(next, Relaxed);
    }
    cpu
}

/// The source after an unsettled call on `cpu`: `sched_getcpu` for good where
/// RDPID cannot serve (`may` false) or TSC_AUX disagrees with it (`agrees`:
/// `Some(false)`), RDPID for good where it agrees on a CPU other than 0, pending
/// while the calls run on CPU 0 or a migration keeps the comparison from telling
/// (`None`).
fn next_cpu_source(may: bool, cpu: u32, agrees: impl FnOnce() -> Option<bool>) -> u8 {
    if !may {
        return CPU_FROM_LIBC;
    }
    if cpu == 0 || cpu == u32::MAX {
        return CPU_SOURCE_PENDING;
    }
    match agrees() {
        Some(true) => CPU_FROM_TSC_AUX,
        Some(false) => CPU_FROM_LIBC,
        None => CPU_SOURCE_PENDING,
    }
}

/// Whether RDPID can give the CPU number here: the CPU has RDPID, and every CPU
/// number the kernel can give fits [`TSC_AUX_CPU_MASK`] (it has at most
/// [`TSC_AUX_CPUS`] CPUs).
fn tsc_aux_may_hold_cpus() -> bool {
    crate::sys::x86::rdpid_supported() && cpu_numbers_below::<{ TSC_AUX_CPUS / 64 }>()
}

/// Whether TSC_AUX holds `sched_getcpu`'s answer on the CPU this runs on, from a
/// reading between two calls that both answer `cpu` (`None` where a migration
/// came between them in every try). A kernel or hypervisor that keeps another
/// value there disagrees, and the process keeps `sched_getcpu`.
fn tsc_aux_agrees(cpu: u32) -> Option<bool> {
    for _ in 0..TSC_AUX_TRIES {
        // SAFETY: this runs only where `tsc_aux_may_hold_cpus` found RDPID.
        let aux = unsafe { crate::sys::x86::rdpid() };
        if libc_cpu() == cpu {
            return Some(aux & TSC_AUX_CPU_MASK == u64::from(cpu));
        }
    }
    None
}

/// Readings [`tsc_aux_agrees`] takes, at most, for one that no migration spoiled.
const TSC_AUX_TRIES: usize = 4;

/// Whether every CPU number the kernel gives is below `64 * N`: its
/// `sched_getaffinity` takes a mask of `64 * N` bits only when it has at most that
/// many CPUs (it refuses a mask shorter than its CPU count with `EINVAL`).
fn cpu_numbers_below<const N: usize>() -> bool {
    let mut mask = [0u64; N];
    let bytes = core::mem::size_of_val(&mask);
    // SAFETY: `mask` is `bytes` long and writable; pid 0 is the calling thread. The
    // kernel writes at most `bytes` bytes, glibc zeroes the rest of them.
    let r = unsafe { libc::sched_getaffinity(0, bytes, mask.as_mut_ptr().cast()) };
    r == 0
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

    /// On each CPU the thread may use, pinned there alone, the CPU number is that
    /// CPU's, from whichever source the calls chose, and the same as
    /// `sched_getcpu`'s; once a call has run on a CPU other than 0, RDPID serves
    /// exactly where the CPU has it (Linux keeps TSC_AUX on every machine this
    /// runs on).
    #[test]
    #[cfg_attr(miri, ignore = "Miri has neither RDPID nor sched_getcpu")]
    fn the_cpu_number_is_the_cpu_the_thread_is_pinned_to() {
        std::thread::spawn(|| {
            let all = ThreadCpus::of_this_thread().expect("the thread's mask");
            let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
                // SAFETY: `c` is below CPU_SETSIZE; CPU_ISSET only reads the set.
                .filter(|&c| unsafe { libc::CPU_ISSET(c, &all.0) })
                .collect();
            for &cpu in &cpus {
                let mut only = ThreadCpus(all.0);
                for &other in cpus.iter().filter(|&&o| o != cpu) {
                    only = only.without(other);
                }
                assert!(only.apply(), "pinned to CPU {cpu}");
                for _ in 0..3 {
                    assert_eq!(current_cpu() as usize, cpu);
                    assert_eq!(libc_cpu() as usize, cpu);
                }
            }
            assert!(all.apply());
            if cpus.iter().any(|&c| c != 0) {
                let rdpid = crate::sys::x86::rdpid_supported();
                let want = if rdpid { CPU_FROM_TSC_AUX } else { CPU_FROM_LIBC };
                assert_eq!(LINE.cpu_source.load(Relaxed), want);
            }
        })
        .join()
        .unwrap();
    }

    /// The choice: `sched_getcpu` for good without RDPID or on a disagreement,
    /// RDPID for good on an agreement off CPU 0, pending on CPU 0 (not even
    /// comparing there) and after a migration spoiled every reading.
    #[test]
    fn the_source_is_settled_only_off_cpu_0() {
        let never = || -> Option<bool> { panic!("compared on CPU 0 or without RDPID") };
        assert_eq!(next_cpu_source(false, 3, never), CPU_FROM_LIBC);
        assert_eq!(next_cpu_source(false, 0, never), CPU_FROM_LIBC);
        assert_eq!(next_cpu_source(true, 0, never), CPU_SOURCE_PENDING);
        assert_eq!(next_cpu_source(true, u32::MAX, never), CPU_SOURCE_PENDING);
        assert_eq!(next_cpu_source(true, 3, || Some(true)), CPU_FROM_TSC_AUX);
        assert_eq!(next_cpu_source(true, 3, || Some(false)), CPU_FROM_LIBC);
        assert_eq!(next_cpu_source(true, 3, || None), CPU_SOURCE_PENDING);
    }

    /// A mask of no bits is too short for any kernel; 4096 bits hold this one's.
    #[test]
    #[cfg_attr(miri, ignore = "Miri has no sched_getaffinity of that size")]
    fn the_cpu_count_check_refuses_a_short_mask() {
        assert!(!cpu_numbers_below::<0>());
        assert!(cpu_numbers_below::<{ TSC_AUX_CPUS / 64 }>());
    }

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
