//! What mwait leaves open in a process, seen from the process itself (the README's
//! "What mwait does in your process"): the run-queue gate's `/proc/loadavg`
//! descriptor, which a process opens only once its waits have spun and missed often
//! enough for a reading of the run queue to pay (`ladder/load.rs`); and the reads
//! the kernel counts in `/proc/self/io`, which show that a first wait leaves the
//! count of usable CPUs (the cgroup's files) for when something needs it
//! (`detect::process_cpus`). Each case runs in a child process of its own, since
//! the gate's state and the count are the process's.

// Linux only: the gate reads `/proc/loadavg`, and the descriptors are listed in
// `/proc/self/fd`.
#![cfg(target_os = "linux")]

use mwait::WaitCell;
use mwait_support::{poll_until, SETTLE_LIMIT};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// Whether this process is the child of test `name`, which then runs the test's
/// body; the harness's process runs that child and checks that it succeeded.
fn in_child(name: &str) -> bool {
    crate::support::in_child(module_path!(), name, || ())
}

/// Whether this process holds a descriptor open on `/proc/loadavg`.
fn holds_loadavg() -> bool {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd lists this process's descriptors")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .any(|target| target == std::path::Path::new("/proc/loadavg"))
}

/// Whether a spin of this process has measured its rounds: the waits spun. Where
/// they cannot (one usable CPU), the gate is never asked, and there is nothing to see.
fn waits_spun() -> bool {
    mwait::stats().spin_round.is_some()
}

/// A consumer fed every 2 ms: its cell spins on its first wait and then on a probe
/// now and then, each spin missing by far. Those spins are too few for a reading of
/// the run queue to pay, so the process never reads it and never opens the file.
#[test]
fn a_process_whose_waits_rarely_spin_keeps_no_descriptor_open() {
    if !in_child("a_process_whose_waits_rarely_spin_keeps_no_descriptor_open") {
        return;
    }
    let cell = Arc::new(WaitCell::new(0));
    let producer = {
        let cell = cell.clone();
        thread::spawn(move || {
            for v in 1..=40 {
                thread::sleep(Duration::from_millis(2));
                cell.store(v);
            }
        })
    };
    for v in 1..=40 {
        cell.wait_until(|x| x >= v);
    }
    producer.join().unwrap();
    if !waits_spun() {
        println!("no wait spun here: nothing to check");
        return;
    }
    assert!(!holds_loadavg(), "a few missed spins opened /proc/loadavg");
}

/// Sixteen fresh cells, one timed wait on each that nobody ends: each spins first
/// and misses, one after another within a few milliseconds. That many spins make a
/// reading pay, so the gate reads the run queue, through the descriptor it keeps.
#[test]
fn a_process_whose_spins_keep_missing_reads_the_run_queue() {
    if !in_child("a_process_whose_spins_keep_missing_reads_the_run_queue") {
        return;
    }
    for _ in 0..16 {
        let cell = WaitCell::new(0);
        let _ = cell.wait_until_timeout(|x| x == 1, Duration::from_micros(200));
    }
    if !waits_spun() {
        println!("no wait spun here: nothing to check");
        return;
    }
    assert!(
        holds_loadavg(),
        "sixteen missed spins did not read the run queue"
    );
}

/// The number on the line of `/proc` file `path` that starts with `field`, or
/// `None` where the file or the line is missing.
fn proc_count(path: &str, field: &str) -> Option<u64> {
    std::fs::read_to_string(path)
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .trim()
        .parse()
        .ok()
}

/// The read system calls this process has made (`syscr` in `/proc/self/io`), or
/// `None` where the kernel does not count them.
fn reads_made() -> Option<u64> {
    proc_count("/proc/self/io", "syscr:")
}

/// A fresh process's first wait, one that spins, misses and parks, leaves the count
/// of usable CPUs unread: its files (the cgroup's, which cost a fresh process most
/// of its one-time work) are read when something first needs the count, here
/// `Capabilities::detect` after the wait. Where the wait read them, `detect` would
/// find nothing left to read. (The wait itself may read what detection needs on
/// some machines: the MIDR on AArch64, the UMWAIT limits where CPUID has WAITPKG.)
#[test]
fn a_first_wait_leaves_the_cpu_count_for_later() {
    if !in_child("a_first_wait_leaves_the_cpu_count_for_later") {
        return;
    }
    if std::env::var("MWAIT_BACKEND").is_ok_and(|b| b.trim().eq_ignore_ascii_case("spin")) {
        println!("the spin backend never sleeps: nothing to check");
        return;
    }
    let (Some(a), Some(b)) = (reads_made(), reads_made()) else {
        println!("this kernel does not count reads: nothing to check");
        return;
    };
    // What a look at the counter costs in reads itself.
    let look = b - a;
    let cell = Arc::new(WaitCell::new(0));
    // The store comes once the waiter sleeps in the kernel, not at a time: under an
    // emulator a first spin can outlast any delay (its code is translated as it
    // first runs), and a wait answered before it slept reads the count as a spin
    // that caught would. Where the kernel does not say (`wchan`), the store comes
    // anyway, and the wait's own context switches tell whether it slept.
    let waiter = mwait_support::thread_id();
    let producer = {
        let cell = cell.clone();
        thread::spawn(move || {
            assert!(poll_until(SETTLE_LIMIT, || cell.parked_waiters() == 1));
            let _ = poll_until(Duration::from_secs(2), || {
                mwait_support::sleeps_in_futex(waiter) == Some(true)
            });
            cell.store(1);
        })
    };
    let before = voluntary_switches();
    cell.wait_until(|x| x == 1);
    let slept = voluntary_switches() > before;
    producer.join().unwrap();
    if !slept {
        println!("the wait was answered before it slept: nothing to check");
        return;
    }
    let c = reads_made().expect("counted before");
    assert!(mwait::Capabilities::detect().usable_cpus >= 1);
    let d = reads_made().expect("counted before");
    assert!(
        d - c > look,
        "detect found the count read already ({} reads in the wait)",
        c - b - look
    );
}

/// How many times the calling thread has given up its CPU to sleep
/// (`voluntary_ctxt_switches` in `/proc/thread-self/status`; 0 where unreadable).
fn voluntary_switches() -> u64 {
    proc_count("/proc/thread-self/status", "voluntary_ctxt_switches:").unwrap_or(0)
}
