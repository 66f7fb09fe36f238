//! `cargo xtask test` (everything CI runs) and `cargo xtask stress`.

use crate::util::{cargo, ensure_rust_component, ensure_rust_target, run, step, Res};

/// Every check of the project, in the order that fails fastest.
pub fn run_all(args: &[String]) -> Res {
    let skip_vm = args.iter().any(|a| a == "--no-vm");
    ensure_rust_component("rustfmt")?;
    ensure_rust_component("clippy")?;

    step("format check");
    run(cargo().args(["fmt", "--all", "--check"]))?;

    step("clippy, all targets, -D warnings");
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;

    step("tests and doctests");
    run(cargo().args(["test", "--workspace"]))?;

    step("tests with the futex-wake counter (no syscall on an uncontended notify)");
    run(cargo().args(["test", "-p", "mwait", "--features", "test-counters"]))?;

    step("loom model of the wait/notify protocol");
    run(cargo()
        .args(["test", "-p", "mwait", "--test", "loom", "--release"])
        .env("RUSTFLAGS", "--cfg loom")
        .env("CARGO_TARGET_DIR", crate::util::project_root().join("target/loom")))?;

    step("docs, -D warnings");
    run(cargo()
        .args(["doc", "--workspace", "--no-deps"])
        .env("RUSTDOCFLAGS", "-D warnings"))?;

    step("aarch64 check (non-x86 fallback compiles)");
    ensure_rust_target("aarch64-unknown-linux-gnu")?;
    run(cargo().args([
        "check",
        "-p",
        "mwait",
        "--target",
        "aarch64-unknown-linux-gnu",
    ]))?;

    step("package (the crate is publishable)");
    run(cargo().args(["package", "-p", "mwait-sys", "--allow-dirty", "--no-verify"]))?;

    step("hardware tiers: UMWAIT under qemu-user, MWAITX natively");
    crate::hwtest::run(&[])?;

    if skip_vm {
        println!("\n(skipping the VM tests: --no-vm)");
    } else {
        step("kernel module in QEMU");
        crate::vm::run(&[])?;
    }
    println!("\nxtask test: all steps passed");
    Ok(())
}

/// `cargo xtask test [--no-vm]`.
pub fn run(args: &[String]) -> Res {
    run_all(args)
}

/// `cargo xtask stress [N]`: the long handoff stress with every tier forced.
pub fn stress(args: &[String]) -> Res {
    let n = args.first().map(String::as_str).unwrap_or("100000000");
    n.parse::<u64>()
        .map_err(|_| format!("stress takes a handoff count, got `{n}`"))?;
    step(&format!("stress: {n} handoffs per tier"));
    run(cargo()
        .args([
            "test",
            "-p",
            "mwait",
            "--release",
            "--test",
            "stress",
            "--",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MWAIT_STRESS_HANDOFFS", n))
}
