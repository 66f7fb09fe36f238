//! What mwait leaves open in a process, seen from the process itself (the README's
//! "What mwait does in your process"): the run-queue gate's `/proc/loadavg`
//! descriptor, which a process opens only once its waits have spun and missed often
//! enough for a reading of the run queue to pay (`ladder/load.rs`). Each case runs
//! in a child process of its own, since the gate's state is the process's.

// Linux only: the gate reads `/proc/loadavg`, and the descriptors are listed in
// `/proc/self/fd`.
#![cfg(target_os = "linux")]

use mwait::WaitCell;
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
