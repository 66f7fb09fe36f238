//! In-guest test of the `mwait` crate's kernel tier: run with
//! `MWAIT_BACKEND=kernel` inside the QEMU guest that has `/dev/mwait` loaded.
//! Prints one `ok`/`not ok` line per test.
//!
//! The functional run is meant to have `MWAIT_SELFTEST=0`: it tests the tier's
//! logic, which must hold whatever the self-test would say of the guest's CPU.
//! The self-test's verdict depends on the host (the guest's vCPUs are host
//! threads, and a loaded host can leave its check (a) inconclusive), so
//! `--selftest` runs it on its own and asserts only that the verdict is a
//! legitimate one, with its reason: kept, or demoted naming the check that
//! failed.
//!
//! Built with the `counters` feature, it also proves which way out of the
//! kernel a wait took (a signal, a reschedule), from the crate's count of
//! `MWAIT_IOC_WAIT` returns by reason; without it those checks are skipped.
use mwait::{Backend, WaitCell, WaitPolicy};
use std::{
    os::unix::thread::JoinHandleExt,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    thread,
    time::{Duration, Instant},
};

/// Ping-pong round trips that must all complete (a lost wake-up hangs).
const PINGPONGS: u32 = 100_000;
/// Waiters on their own cells.
const WAITERS: u32 = 64;
/// A wait with no writer must last at least this long.
const DEADLINE: Duration = Duration::from_millis(20);
/// How long the signal and reschedule checks try before they give up.
const PROOF_LIMIT: Duration = Duration::from_secs(10);
/// Kernel-tier waits with no store whose lateness is judged, and their timeout.
const LATE_TRIES: usize = 9;
const LATE_WAIT: Duration = Duration::from_millis(2);
/// The median lateness allowed: the module's deadline timer ends a wait within
/// µs of its deadline; the bound leaves room for vCPUs that a loaded host
/// preempts.
const LATE_MAX: Duration = Duration::from_millis(5);

fn check(ok: bool, name: &str) -> bool {
    println!("{} rust {name}", if ok { "ok" } else { "not ok" });
    ok
}

/// A store from another thread, 20 ms later, ends a wait on `cell` (which must
/// hold 0).
fn wake_on_store(cell: &WaitCell, name: &str) -> bool {
    thread::scope(|s| {
        s.spawn(|| {
            thread::sleep(Duration::from_millis(20));
            cell.store(1);
        });
        check(cell.wait_until(|v| v != 0) == 1, name)
    })
}

/// Kernel waits of this process that ended for `reason`, if counted.
#[cfg(feature = "counters")]
fn returns(reason: u32) -> Option<u64> {
    Some(mwait::test_counters::kernel_wait_returns(reason))
}

#[cfg(not(feature = "counters"))]
fn returns(_reason: u32) -> Option<u64> {
    None
}

/// The count of kernel-wait returns for one reason since a starting point: the
/// proof that a wait left the kernel that way (always given without counters).
struct Returns {
    reason: u32,
    what: &'static str,
    before: Option<u64>,
}

impl Returns {
    fn since_now(reason: u32, what: &'static str) -> Returns {
        Returns {
            reason,
            what,
            before: returns(reason),
        }
    }

    /// Whether a counted return is still missing (never, without counters).
    fn missing(&self) -> bool {
        self.before.is_some() && returns(self.reason) <= self.before
    }

    /// "`N` `what` returns", or "not counted".
    fn describe(&self) -> String {
        match (self.before, returns(self.reason)) {
            (Some(b), Some(a)) => format!("{} {} returns", a - b, self.what),
            _ => "not counted".into(),
        }
    }
}

/// A policy that stays in the kernel tier (no spin, no adaptation, a long
/// hardware budget), so that what ends a wait is the kernel's reason.
fn kernel_only() -> WaitPolicy {
    WaitPolicy::new()
        .spin(Duration::ZERO)
        .adaptive(false)
        .hardware(Duration::from_secs(5))
}

/// SIGUSR1 handler: does nothing; its only job is to make the signal interrupt.
extern "C" fn on_signal(_: libc::c_int) {}

/// A signal sent to a thread waiting in `/dev/mwait` ends its kernel wait
/// (`EINTR`, counted as `MWAIT_REASON_SIGNAL`); the wait itself still ends
/// only when the value changes.
fn signal_interrupts_a_kernel_wait() -> bool {
    // SAFETY: a zeroed sigaction is valid; the handler does nothing, and no
    // SA_RESTART, so the interrupted ioctl surfaces as EINTR.
    let ok = unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()) == 0
    };
    if !ok {
        return check(false, "sigaction");
    }
    let signals = Returns::since_now(mwait_sys::MWAIT_REASON_SIGNAL, "signal");
    let cell = Arc::new(WaitCell::new(0));
    let c = cell.clone();
    let waiter = thread::spawn(move || {
        // Each call re-enters the kernel tier; a signal sends one to the futex.
        loop {
            let p = kernel_only();
            if let Some(v) = c
                .wait_until_deadline_with(|v| v != 0, Instant::now() + DEADLINE, &p)
                .ready()
            {
                return v;
            }
        }
    });
    let t0 = Instant::now();
    while signals.missing() && t0.elapsed() < PROOF_LIMIT {
        // SAFETY: the waiter thread is alive (it returns only after the store
        // below) and SIGUSR1 has a handler.
        unsafe { libc::pthread_kill(waiter.as_pthread_t(), libc::SIGUSR1) };
        thread::sleep(Duration::from_millis(2));
    }
    cell.store(1);
    let v = waiter.join().unwrap();
    check(
        v == 1 && !signals.missing(),
        &format!(
            "a signal interrupts a kernel wait, the wait completes ({})",
            signals.describe()
        ),
    )
}

/// Kernel-tier waits with no store end as `TimedOut` through the module's
/// `MWAIT_REASON_DEADLINE`, and (median) soon after their deadline.
fn deadline_ends_a_kernel_wait() -> bool {
    let deadlines = Returns::since_now(mwait_sys::MWAIT_REASON_DEADLINE, "deadline");
    let cell = WaitCell::new(0);
    let mut late = Vec::with_capacity(LATE_TRIES);
    let mut all_timed_out = true;
    for _ in 0..LATE_TRIES {
        let deadline = Instant::now() + LATE_WAIT;
        let r = cell.wait_until_deadline_with(|v| v != 0, deadline, &kernel_only());
        let end = Instant::now();
        all_timed_out &= r.is_timed_out() && end >= deadline;
        late.push(end.saturating_duration_since(deadline));
    }
    late.sort();
    let median = late[LATE_TRIES / 2];
    check(
        all_timed_out && median <= LATE_MAX && !deadlines.missing(),
        &format!(
            "{LATE_TRIES} kernel waits of {LATE_WAIT:?} with no store time out, \
             median {median:?} late (max {:?}; {})",
            late[LATE_TRIES - 1],
            deadlines.describe()
        ),
    )
}

/// `--selftest`: the kernel tier's self-test (run at selection, so the process
/// must not have `MWAIT_SELFTEST=0`) gives a legitimate verdict: the tier is
/// kept with its measurements, or demoted with a reason that names the check
/// that failed. Prints the verdict either way.
fn selftest_verdict() -> ! {
    let sel = mwait::selection();
    let (ok, verdict) = match (&sel.backend, &sel.demoted) {
        (Backend::Kernel, None) => (true, format!("kept: {}", sel.reason)),
        (_, Some((Backend::Kernel, why))) => (
            why.contains("self-test") && why.contains("check ("),
            why.clone(),
        ),
        _ => (false, format!("{}: {}", sel.backend, sel.reason)),
    };
    println!("# rust self-test verdict: {verdict}");
    let ok = check(ok, "kernel tier self-test: kept, or demoted naming a check");
    std::process::exit(if ok { 0 } else { 1 });
}

/// More waiters than CPUs, all in the kernel tier: the scheduler needs the
/// CPUs, and the module must hand them back (`MWAIT_REASON_RESCHED`) so the
/// waiters park; every waiter still sees its store.
fn resched_when_oversubscribed() -> bool {
    let cpus = thread::available_parallelism().map_or(2, |n| n.get());
    let n = 4 * cpus;
    let rescheds = Returns::since_now(mwait_sys::MWAIT_REASON_RESCHED, "resched");
    let cells: Arc<Vec<WaitCell>> = Arc::new((0..n).map(|_| WaitCell::new(0)).collect());
    let go = Arc::new(AtomicBool::new(false));
    let hs: Vec<_> = (0..n)
        .map(|i| {
            let (cs, go) = (cells.clone(), go.clone());
            thread::spawn(move || {
                while !go.load(Ordering::Acquire) {
                    thread::yield_now();
                }
                cs[i].wait_until_with(|v| v != 0, &kernel_only())
            })
        })
        .collect();
    go.store(true, Ordering::Release);
    let t0 = Instant::now();
    thread::sleep(Duration::from_millis(200));
    while rescheds.missing() && t0.elapsed() < PROOF_LIMIT {
        thread::sleep(Duration::from_millis(10));
    }
    for c in cells.iter() {
        c.store(1);
    }
    let all = hs.into_iter().all(|h| h.join().unwrap() == 1);
    check(
        all && !rescheds.missing(),
        &format!(
            "{n} kernel waiters on {cpus} CPUs give the CPUs back ({})",
            rescheds.describe()
        ),
    )
}

/// Child mode: exits 0 when the process's selection is refused with an error
/// that contains `want`.
fn expect_refusal(want: &str) -> ! {
    let ok = match mwait::try_selection() {
        Ok(sel) => {
            println!("# rust child: selected {} ({})", sel.backend, sel.reason);
            false
        }
        Err(e) => {
            println!("# rust child: refused: {e}");
            e.to_string().contains(want)
        }
    };
    std::process::exit(if ok { 0 } else { 1 });
}

/// Runs this binary again with `env`, in child mode expecting a refusal that
/// contains `want`.
fn child_refuses(env: &[(&str, &str)], want: &str) -> bool {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args(["--expect-refusal", want])
        .env_remove("MWAIT_BACKEND")
        .env_remove("MWAIT_UNSAFE_FORCE");
    cmd.envs(env.iter().copied());
    cmd.status().is_ok_and(|st| st.success())
}

/// The guest whose CPU has no MONITOR/MWAIT (`CPUID.1:ECX[3]` cleared), with the
/// module loaded: the crate must not pick the kernel tier, must refuse it when
/// asked for it (with the CPUID bit), must refuse it when forced past CPUID
/// (the module says MWAIT is not usable), and must still wait correctly.
fn no_mwait() -> ! {
    let sel = mwait::selection();
    let mut all = check(
        sel.backend != Backend::Kernel,
        &format!(
            "no-mwait: kernel tier not picked ({}: {})",
            sel.backend, sel.reason
        ),
    );
    all &= check(
        child_refuses(&[("MWAIT_BACKEND", "kernel")], "MONITOR is 0"),
        "no-mwait: MWAIT_BACKEND=kernel refused with the CPUID bit",
    );
    all &= check(
        child_refuses(
            &[("MWAIT_BACKEND", "kernel"), ("MWAIT_UNSAFE_FORCE", "1")],
            "no usable MWAIT",
        ),
        "no-mwait: forced past CPUID, refused because the module says so",
    );
    all &= wake_on_store(&WaitCell::new(0), "no-mwait: wake on store across threads");
    std::process::exit(if all { 0 } else { 1 });
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["--expect-refusal", want] => expect_refusal(want),
        ["--no-mwait"] => no_mwait(),
        ["--selftest"] => selftest_verdict(),
        [] => {}
        _ => {
            eprintln!("usage: mwait-vm-guest [--no-mwait | --selftest | --expect-refusal TEXT]");
            std::process::exit(2);
        }
    }
    let sel = mwait::selection();
    let mut all = check(
        sel.backend == Backend::Kernel,
        &format!("kernel tier selected ({})", sel.reason),
    );
    all &= check(
        returns(0).is_some(),
        "built with the kernel-return counters",
    );

    let cell = WaitCell::new(0);
    all &= wake_on_store(&cell, "wake on store across threads");

    let t0 = Instant::now();
    let r = cell.wait_until_timeout(|v| v == 99, DEADLINE);
    all &= check(
        r.is_timed_out() && t0.elapsed() >= DEADLINE,
        "deadline honoured",
    );

    all &= deadline_ends_a_kernel_wait();
    all &= signal_interrupts_a_kernel_wait();
    all &= resched_when_oversubscribed();

    let cells: Arc<Vec<WaitCell>> = Arc::new((0..WAITERS).map(|_| WaitCell::new(0)).collect());
    let hs: Vec<_> = (0..WAITERS as usize)
        .map(|i| {
            let cs = cells.clone();
            thread::spawn(move || cs[i].wait_until(|v| v != 0))
        })
        .collect();
    for c in cells.iter() {
        c.store(1);
    }
    all &= check(
        hs.into_iter().all(|h| h.join().unwrap() == 1),
        "64 waiters on 64 cells",
    );

    let ping = Arc::new(WaitCell::new(0));
    let pong = Arc::new(WaitCell::new(0));
    let (pi, po) = (ping.clone(), pong.clone());
    let t0 = Instant::now();
    let t = thread::spawn(move || {
        for i in 1..=PINGPONGS {
            pi.wait_until(|v| v == i);
            po.store(i);
        }
    });
    for i in 1..=PINGPONGS {
        ping.store(i);
        pong.wait_until(|v| v == i);
    }
    t.join().unwrap();
    println!("# rust: 10^5 ping-pongs in {:?}", t0.elapsed());
    all &= check(pong.load() == PINGPONGS, "10^5 ping-pongs, no lost wake");
    std::process::exit(if all { 0 } else { 1 });
}
