//! `cargo xtask miri`: the tests that Miri can run today, under Miri (also a step of
//! `cargo xtask test`).
//!
//! Miri runs the unit tests and the integration tests that need no system call but
//! futex (which Miri emulates, with the clock). The crate's `sys/` layer has a
//! `cfg(miri)` seam for each call Miri cannot follow: CPUID answers zeros (a CPU
//! with no hardware wait, `sys/x86/cpuid.rs`), the sysfs, procfs and `/dev` reads find
//! nothing (`sys/host.rs`), `sched_getcpu` says "unknown" and `membarrier` is never
//! registered, so waiters fence and notifiers keep the symmetric protocol
//! (`sys/os/linux/`). What stays out, with its reason below: RDTSC (inline assembly)
//! in the TSC unit tests, and the process-level tests (fork, `MAP_SHARED`,
//! re-running the test binary), which Miri does not model.

use crate::util::{self, output, project_root, step, Res};
use std::process::Command;

/// Which tests of one test target run.
enum Select {
    /// All but these (exact names), each left out for the reason given.
    AllBut(&'static [(&'static str, &'static str)]),
    /// Only these (exact names).
    Only(&'static [&'static str]),
}

/// One test target of `mwait` and the tests of it that run under Miri.
struct Suite {
    /// The cargo arguments that pick the target (`--lib`, `--test NAME`).
    target: &'static [&'static str],
    select: Select,
    /// Run the tests one at a time, with no other test's threads beside them.
    alone: bool,
}

/// Why tests are left out.
const NEEDS_RDTSC: &str = "the TSC rate reads RDTSC";
const NEEDS_REAL_TIME: &str = "the production plan's 20 us and 160 us timers are shorter than \
                               Miri takes to run the helper's store: check (a) is inconclusive";
const NEEDS_PROCESSES: &str = "fork and MAP_SHARED, which Miri does not model";
/// The self-test simulations of a real monitor: their check (a) needs the storing
/// thread to run during the wait, which Miri's clock does not leave room for while
/// other tests' threads run beside them (then it reads "inconclusive: an overloaded
/// machine"). They run in a suite of their own, one at a time.
const REAL_MONITOR_SIMULATIONS: &[&str] = &[
    "backend::selftest::tests::simulated_real_monitor_is_kept",
    "backend::selftest::tests::simulated_real_monitor_under_an_os_cap_is_kept_with_a_plan_that_fits",
];
const RUN_ALONE: &str = "run alone in the next suite (REAL_MONITOR_SIMULATIONS)";

const NEEDS_A_QUIET_CLOCK: &str = "Miri's clock advances with every thread it interprets, \
                                   those other tests left running included: in one full run an \
                                   at-once return lasted over half its 5 ms timer, so three \
                                   early returns in ten counted as two";

const SUITES: &[Suite] = &[
    Suite {
        target: &["--lib"],
        select: Select::AllBut(&[
            (
                "backend::mwaitx::tests::long_budgets_are_split_into_32_bit_episodes",
                NEEDS_RDTSC,
            ),
            (
                "sys::x86::tsc::tests::calibration_agrees_with_the_monotonic_clock",
                NEEDS_RDTSC,
            ),
            ("sys::x86::tsc::tests::conversion_saturates", NEEDS_RDTSC),
            (
                "backend::selftest::tests::simulated_trapped_noop_with_the_production_plan_is_demoted_by_check_b",
                NEEDS_REAL_TIME,
            ),
            (
                "backend::selftest::tests::simulated_frequent_early_return_is_demoted_by_check_c",
                NEEDS_A_QUIET_CLOCK,
            ),
            (REAL_MONITOR_SIMULATIONS[0], RUN_ALONE),
            (REAL_MONITOR_SIMULATIONS[1], RUN_ALONE),
        ]),
        alone: false,
    },
    Suite {
        target: &["--lib"],
        select: Select::Only(REAL_MONITOR_SIMULATIONS),
        alone: true,
    },
    Suite {
        target: &["--test", "api"],
        select: Select::Only(&[
            "async_executor::a_future_that_consumed_its_wake_does_not_pass_it_on",
            "async_executor::a_tiny_task_queue_runs_many_waiters_to_completion",
            "async_executor::block_on_wakes_on_store_from_another_thread",
            "async_executor::notify_one_picked_future_dropped_passes_the_wake_on",
            "async_executor::registry_bookkeeping_by_hand",
            "cell::cell_is_send_sync_and_static",
            "cell::layout_is_one_cell_per_monitor_line_pair",
            "cell::writers_return_what_atomics_return",
            "conformance::event_listener_drop_notified",
            "conformance::event_listener_notify_one_wakes_exactly_one",
            "conformance::event_listener_rearmed_future_is_woken_again",
            "conformance::folly_change_before_the_wait_returns_at_once",
            "conformance::std_zero_timeout_with_a_true_predicate_is_ready",
            "conformance::tokio_4618_a_dropped_future_passes_its_wake_on",
            "conformance::tokio_4751_a_repoll_with_a_new_waker_is_woken_through_it",
            // Of `parker`, the 200 ms CPU-time tests and the long ping-pong and race
            // loops stay out: Miri has no thread CPU clock of its own and runs them
            // for minutes.
            "parker::a_token_set_before_the_park_is_taken_at_once",
            "parker::unparks_before_a_park_leave_one_token",
            "parker::an_unpark_from_another_thread_ends_a_park",
            "parker::unparkers_name_their_parker",
            "parker::a_waker_unparks",
            "parker::block_on_runs_a_future_woken_by_another_thread",
            "parker::nested_block_on_uses_a_parker_of_its_own",
        ]),
        alone: false,
    },
];

/// `cargo xtask miri`: installs Miri on the nightly toolchain when it is missing and
/// runs [`SUITES`] under it.
pub fn run(args: &[String]) -> Res {
    if let Some(a) = args.first() {
        return Err(format!("miri takes no arguments, got `{a}`"));
    }
    ensure_nightly_miri()?;
    // Left-out tests are listed once, so that the log says what Miri did not see.
    for suite in SUITES {
        if let Select::AllBut(skips) = &suite.select {
            for (name, why) in *skips {
                println!("left out: {} {name}: {why}", suite.target.join(" "));
            }
        }
    }
    println!(
        "left out: the rest of api, and process and stress, whose tests fork: {NEEDS_PROCESSES}"
    );
    for suite in SUITES {
        step(&format!("miri: mwait {}", suite.target.join(" ")));
        let mut cmd = nightly_cargo();
        cmd.args(["miri", "test", "-p", "mwait"])
            .args(suite.target)
            .args(["--", "--exact"]);
        match &suite.select {
            Select::AllBut(skips) => {
                for (name, _) in *skips {
                    cmd.args(["--skip", name]);
                }
            }
            Select::Only(names) => {
                cmd.args(*names);
            }
        }
        if suite.alone {
            cmd.arg("--test-threads=1");
        }
        util::run(&mut cmd)?;
    }
    println!("\nxtask miri: all suites passed");
    Ok(())
}

/// `cargo +nightly`, with Miri's own target directory and flags. The rustup proxy
/// picks the toolchain from `+nightly`; `RUSTUP_TOOLCHAIN`, which the proxy that
/// started xtask may have set, would override it.
fn nightly_cargo() -> Command {
    let mut c = Command::new("cargo");
    c.arg("+nightly")
        .current_dir(project_root())
        .env_remove("RUSTUP_TOOLCHAIN")
        .env("CARGO_TARGET_DIR", project_root().join("target/miri"))
        // Two CPUs, as CI's machines have: on one, the self-test's simulated monitors
        // are (rightly) "cannot be measured", since no thread could store during a
        // wait.
        .env("MIRIFLAGS", "-Zmiri-num-cpus=2");
    c
}

/// Installs the nightly toolchain's `miri` and `rust-src` components (and the
/// toolchain itself) when they are missing.
fn ensure_nightly_miri() -> Res {
    let toolchains = output(Command::new("rustup").args(["toolchain", "list"]))?;
    if !toolchains.lines().any(|l| l.starts_with("nightly")) {
        println!("installing the nightly toolchain (minimal profile) with miri and rust-src");
        return util::run(Command::new("rustup").args([
            "toolchain",
            "install",
            "nightly",
            "--profile",
            "minimal",
            "--component",
            "miri",
            "--component",
            "rust-src",
        ]));
    }
    let installed =
        output(Command::new("rustup").args(["+nightly", "component", "list", "--installed"]))?;
    let missing: Vec<&str> = ["miri", "rust-src"]
        .into_iter()
        .filter(|c| !installed.lines().any(|l| l.starts_with(c)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    println!("installing nightly components: {}", missing.join(" "));
    util::run(
        Command::new("rustup")
            .args(["+nightly", "component", "add"])
            .args(&missing),
    )
}
