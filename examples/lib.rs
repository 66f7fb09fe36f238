//! Small helpers shared by the examples: thread pinning and percentiles.

/// Pins the calling thread to `cpu` (Linux); elsewhere, or if the CPU is not in the
/// process's mask, does nothing and returns false.
pub fn pin_to_cpu(cpu: usize) -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: an all-zero cpu_set_t is a valid empty set; CPU_SET writes within
        // it for `cpu` below CPU_SETSIZE, which the check guarantees; the set outlives
        // the call.
        unsafe {
            if cpu >= libc::CPU_SETSIZE as usize {
                return false;
            }
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpu;
        false
    }
}

/// The `p`-th percentile (0..=100) of `samples` (nearest rank; 0 when empty).
///
/// # Examples
///
/// ```
/// assert_eq!(mwait_examples::percentile(&[5, 1, 3], 50.0), 3);
/// ```
pub fn percentile(samples: &[u64], p: f64) -> u64 {
    if samples.is_empty() {
        return 0;
    }
    let mut v = samples.to_vec();
    v.sort_unstable();
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}
