//! CPU time of this process's threads, for the programs of `cargo xtask bench`
//! (xtask/src/client_bench.rs writes this file beside each program).

/// The CPU time (ns) of this process's live threads, from
/// /proc/self/task/*/schedstat (its first field: ns on a CPU); the main thread's
/// counts only where `with_main` is true.
pub fn threads_cpu_ns(with_main: bool) -> u64 {
    let main = std::process::id().to_string();
    let mut sum = 0;
    for e in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        if !with_main && e.file_name().to_string_lossy() == main {
            continue;
        }
        let s = std::fs::read_to_string(e.path().join("schedstat")).unwrap_or_default();
        sum += s
            .split_whitespace()
            .next()
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0);
    }
    sum
}
