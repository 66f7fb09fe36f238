//! `cargo xtask test` (everything CI runs) and `cargo xtask stress`.

use crate::util::{
    self, cargo, ensure_rust_component, ensure_rust_target, project_root, step, Res,
};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `cargo xtask test`: every check of the project, in the order that fails fastest.
pub fn run(args: &[String]) -> Res {
    if let Some(a) = args.first() {
        return Err(format!("test takes no arguments, got `{a}`"));
    }
    style_and_bindings()?;
    tests()?;
    docs_and_other_targets()?;
    package()?;
    hardware_and_kernel()?;
    println!("\nxtask test: all steps passed");
    Ok(())
}

/// Formatting, lints and the generated bindings: the checks that fail fastest.
fn style_and_bindings() -> Res {
    ensure_rust_component("rustfmt")?;
    ensure_rust_component("clippy")?;

    step("tidy: docs, lists and comments agree with the tree");
    crate::tidy::run(&[])?;

    step("format check");
    util::run(cargo().args(["fmt", "--all", "--check"]))?;

    step("clippy, all targets, -D warnings");
    util::run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;

    // The generator is a workspace of its own (bindgen stays out of the main
    // one), so the two checks above do not reach it.
    step("the bindings generator: format check and clippy");
    let manifest = ["--manifest-path", crate::codegen::MANIFEST];
    util::run(cargo().arg("fmt").args(manifest).arg("--check"))?;
    util::run(
        cargo()
            .arg("clippy")
            .args(manifest)
            .args(["--all-targets", "--", "-D", "warnings"])
            .env("CARGO_TARGET_DIR", project_root().join("target/codegen")),
    )?;

    // The drop-ins are packages of their own too (outside the workspace); their
    // tests are the originals' suites, which `cargo xtask clients` runs.
    step("the drop-ins under integrations/: format check, clippy and docs");
    let target_dir = project_root().join("target/integrations");
    for drop_in in ["parking", "atomic-wait"] {
        let path = format!("integrations/{drop_in}/Cargo.toml");
        let manifest = ["--manifest-path", path.as_str()];
        util::run(cargo().arg("fmt").args(manifest).arg("--check"))?;
        util::run(
            cargo()
                .arg("clippy")
                .args(manifest)
                .args(["--all-targets", "--", "-D", "warnings"])
                .env("CARGO_TARGET_DIR", &target_dir),
        )?;
        util::run(util::strict_docs(&manifest).env("CARGO_TARGET_DIR", &target_dir))?;
    }

    // The drift check is this step, not a #[test]: it needs libclang, which this
    // step installs, and `cargo test --workspace` must pass on a machine without
    // it. A stale bindings.rs fails here and reads as such in the log.
    step("generated bindings match the uapi header");
    crate::codegen::generator("check")?;
    Ok(())
}

/// The test suites: the workspace's tests and doctests, the test-counters and stamps builds,
/// the loom models and Miri.
fn tests() -> Res {
    step("tests and doctests");
    util::run(cargo().args(["test", "--workspace"]))?;

    step("tests with the futex-wake counter (no syscall on an uncontended notify)");
    util::run(cargo().args(["test", "-p", "mwait", "--features", "test-counters"]))?;

    step("the stamps build: clippy of the experiments on it, and its test");
    util::run(cargo().args([
        "clippy",
        "-p",
        "mwait-benches",
        "--all-targets",
        "--features",
        "stamps",
        "--",
        "-D",
        "warnings",
    ]))?;
    util::run(cargo().args([
        "test",
        "-p",
        "mwait",
        "--features",
        "stamps",
        "--lib",
        "sys::stamp",
    ]))?;

    step("a user crate built with --cfg loom keeps a static WaitCell");
    loom_user()?;

    step("loom models of the wait/notify protocol, the async registry, the parker, the waiter table and the fallback barrier");
    // The models are unit tests of the loom build (`src/tests/`, and beside the
    // model platform in `sys/os/loom.rs`); the filter leaves out the other unit
    // tests, which need the real platform.
    util::run(
        cargo()
            .args([
                "test",
                "-p",
                "mwait",
                "--release",
                "--lib",
                "--",
                "tests::loom_",
                "sys::os::loom::tests",
            ])
            .env("RUSTFLAGS", "--cfg mwait_loom")
            // Three preemptions per execution cover every two-sided race of the
            // protocol (a notifier and one or two waiters); unbounded, the two-waiter
            // model runs for hours.
            .env("LOOM_MAX_PREEMPTIONS", "3")
            .env("CARGO_TARGET_DIR", util::project_root().join("target/loom")),
    )?;

    // About 8 minutes on the 2-vCPU guest with an empty target/clients (both
    // sides' builds of every suite), less when the builds are reused.
    step("clients: other crates' test suites, stock and on mwait");
    crate::clients::run(&[])?;

    // 119 tests, about two minutes on two CPUs (plus the nightly components'
    // installation on a fresh machine, which `cargo xtask miri` does when they are
    // missing).
    step("Miri: the unit tests and the integration tests that need no process");
    crate::miri::run(&[])?;
    Ok(())
}

/// The library of a user crate that loom-tests its own code: built with
/// `--cfg loom`, it holds a `WaitCell` in a `static`.
const LOOM_USER_LIB: &str = "\
//! A user crate that loom-tests its own code.

/// A cell in a static: `WaitCell::new` must stay a `const fn` under `--cfg loom`.
pub static CELL: mwait::WaitCell = mwait::WaitCell::new(0);
";

/// `cargo check` of a user crate with `RUSTFLAGS="--cfg loom"`: mwait's model switch
/// is its own `cfg(mwait_loom)`, so another crate's loom build sees the real mwait
/// (whose constructors are `const fn`). The crate lives under target/ as a workspace
/// of its own, with the workspace's lock file, so that it resolves what the
/// workspace already has.
fn loom_user() -> Res {
    let root = project_root();
    let dir = root.join("target/loom-user");
    let src = dir.join("src");
    std::fs::create_dir_all(&src).map_err(|e| format!("cannot create {}: {e}", src.display()))?;
    let manifest = format!(
        "[package]\nname = \"loom-user\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
         publish = false\n\n[dependencies]\nmwait = {{ path = {:?} }}\n\n[workspace]\n",
        root.join("crates/mwait").display().to_string()
    );
    let write = |path: std::path::PathBuf, text: &str| {
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    write(dir.join("Cargo.toml"), &manifest)?;
    write(src.join("lib.rs"), LOOM_USER_LIB)?;
    if !dir.join("Cargo.lock").exists() {
        std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock"))
            .map_err(|e| format!("cannot copy Cargo.lock: {e}"))?;
    }
    util::run(
        cargo()
            .arg("check")
            .arg("--manifest-path")
            .arg(dir.join("Cargo.toml"))
            .env("RUSTFLAGS", "--cfg loom")
            .env("CARGO_TARGET_DIR", dir.join("target")),
    )
}

/// The docs, and the targets this machine can only compile for or emulate: the
/// fallback ladders, the cross-checks, the Windows park tier under Wine and AArch64
/// Linux under qemu-user.
fn docs_and_other_targets() -> Res {
    step("docs, -D warnings");
    util::run(&mut util::strict_docs(&["--workspace"]))?;
    // The crate's internals document one another through links (a constant's
    // reason, the function a rule lives in): a rename that leaves one dangling
    // fails here. Its own target directory keeps the public docs above as they are.
    step("the crate's private docs, -D warnings");
    util::run(
        util::strict_docs(&["-p", "mwait", "--document-private-items"]).env(
            "CARGO_TARGET_DIR",
            project_root().join("target/private-docs"),
        ),
    )?;

    step("other targets compile (fallback ladders): aarch64 Linux, x86_64 macOS");
    for target in ["aarch64-unknown-linux-gnu", "x86_64-apple-darwin"] {
        ensure_rust_target(target)?;
        util::run(
            cargo()
                .args(["check", "-p", "mwait", "--target", target])
                .env("RUSTFLAGS", "-D warnings"),
        )?;
    }

    crate::ports::cross_check(&[])?;

    step("the Windows park tier: the test suites under Wine");
    crate::ports::wine_test(&[])?;

    step("AArch64 Linux: the test suites under qemu-aarch64 (park and wfe tiers)");
    crate::aarch64::run(&[])?;
    Ok(())
}

/// The publishable crates of the workspace, in the order they publish (each
/// depends only on those before it).
pub const PUBLISHED: &[&str] = &["mwait-sys", "mwait"];

/// The drop-ins, published after mwait under names of their own: (package, its
/// directory under the root).
pub const PUBLISHED_DROP_INS: &[(&str, &str)] = &[
    ("mwait-parking", "integrations/parking"),
    ("mwait-atomic-wait", "integrations/atomic-wait"),
];

/// `cargo xtask package`: the package step of `cargo xtask test` alone.
pub fn package_only(args: &[String]) -> Res {
    if let Some(a) = args.first() {
        return Err(format!("package takes no arguments, got `{a}`"));
    }
    package()
}

/// The publishable crates: a dry run of their publication in dependency order,
/// and a build of the packaged tests from the unpacked `.crate` files.
fn package() -> Res {
    step("publish --dry-run (the crates publish, in dependency order)");
    // Verification builds mwait against mwait-sys taken from a temporary registry;
    // cargo treats registry crates as immutable and reuses an old build of the same
    // name and version from the target dir even when the package changed (an older
    // mwait-sys API failed the check here). A target dir of its own, emptied first,
    // rules that out.
    let verify_dir = project_root().join("target/package-verify");
    let _ = std::fs::remove_dir_all(&verify_dir);
    let mut publish = cargo();
    publish.args(["publish", "--dry-run", "--allow-dirty"]);
    for name in PUBLISHED {
        publish.args(["-p", name]);
    }
    util::run(publish.arg("--target-dir").arg(&verify_dir))?;
    // The dry run keeps its `.crate` files in a scratch folder of cargo's; packaging
    // again without the verification (which the dry run made) puts them where
    // `cargo package` documents them, target/package.
    let mut pack = cargo();
    pack.args(["package", "--no-verify", "--allow-dirty"]);
    for name in PUBLISHED {
        pack.args(["-p", name]);
    }
    util::run(pack.arg("--target-dir").arg(&verify_dir))?;

    step("the packaged tests build from the unpacked .crate files");
    let patch = packaged_tests(&verify_dir)?;

    // The drop-ins live outside the workspace (their libraries have the names of
    // crates that the workspace's benches depend on), so cargo's overlay of the
    // workspace's unpublished crates does not reach them: their dry run takes
    // mwait and mwait-sys from the unpacked `.crate` files, patched in.
    step("the drop-ins: publish --dry-run, and their packaged tests build");
    for (name, dir) in PUBLISHED_DROP_INS {
        let manifest = project_root().join(dir).join("Cargo.toml");
        let mut publish = cargo();
        publish
            .args(["publish", "--dry-run", "--allow-dirty", "--manifest-path"])
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&verify_dir);
        for (dep, path) in &patch {
            publish
                .arg("--config")
                .arg(format!("patch.crates-io.{dep}.path='{}'", path.display()));
        }
        util::run(&mut publish)?;
        let mut pack = cargo();
        pack.args(["package", "--no-verify", "--allow-dirty", "--manifest-path"])
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&verify_dir);
        for (dep, path) in &patch {
            pack.arg("--config")
                .arg(format!("patch.crates-io.{dep}.path='{}'", path.display()));
        }
        util::run(&mut pack)?;
        let version = package_version(&manifest)?;
        build_unpacked(&verify_dir, &format!("{name}-{version}"), &patch)?;
    }
    Ok(())
}

/// Unpacks each published crate's `.crate` from `verify_dir/package` and builds its
/// tests there, the unpublished ones among its dependencies taken from their
/// unpacked `.crate` too (`[patch.crates-io]`): what a user who downloads the crate
/// builds, with nothing from this checkout. Returns the unpacked crates (name,
/// directory).
fn packaged_tests(verify_dir: &Path) -> Res<Vec<(String, PathBuf)>> {
    let mut patch = Vec::new();
    for name in PUBLISHED {
        let manifest = project_root().join("crates").join(name).join("Cargo.toml");
        let dir = build_unpacked(
            verify_dir,
            &format!("{name}-{}", package_version(&manifest)?),
            &patch,
        )?;
        patch.push((name.to_string(), dir));
    }
    Ok(patch)
}

/// The `version` of the package whose manifest is `manifest`.
fn package_version(manifest: &Path) -> Res<String> {
    let text =
        std::fs::read_to_string(manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    text.lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .map(|v| v.trim_end_matches('"').to_string())
        .ok_or_else(|| format!("{}: no version", manifest.display()))
}

/// Unpacks `verify_dir/package/NAME_VERSION.crate` under `verify_dir/unpacked`, makes
/// it a workspace of its own with `patch` (crate, directory) as its
/// `[patch.crates-io]`, and builds every target and test there. Returns its
/// directory.
fn build_unpacked(
    verify_dir: &Path,
    name_version: &str,
    patch: &[(String, PathBuf)],
) -> Res<PathBuf> {
    let unpacked = verify_dir.join("unpacked");
    std::fs::create_dir_all(&unpacked).map_err(|e| format!("{}: {e}", unpacked.display()))?;
    let krate = verify_dir
        .join("package")
        .join(format!("{name_version}.crate"));
    util::run(
        Command::new("tar")
            .arg("-xzf")
            .arg(&krate)
            .arg("-C")
            .arg(&unpacked),
    )?;
    let dir = unpacked.join(name_version);
    let manifest = dir.join("Cargo.toml");
    let mut text =
        std::fs::read_to_string(&manifest).map_err(|e| format!("{}: {e}", manifest.display()))?;
    text.push_str("\n[workspace]\n\n[patch.crates-io]\n");
    for (dep, path) in patch {
        text.push_str(&format!("{dep} = {{ path = '{}' }}\n", path.display()));
    }
    std::fs::write(&manifest, text).map_err(|e| format!("{}: {e}", manifest.display()))?;
    util::run(
        cargo()
            .current_dir(&dir)
            .args(["test", "--no-run", "--all-targets"])
            .env("CARGO_TARGET_DIR", verify_dir.join("unpacked-target")),
    )?;
    Ok(dir)
}

/// The hardware tiers' suites, then the kernel shim: DKMS, the QEMU guest and
/// checkpatch.
fn hardware_and_kernel() -> Res {
    step("hardware tiers: UMWAIT under qemu-user, MWAITX natively");
    crate::hwtest::run(&[])?;

    step("kernel shim built and installed by DKMS (kmod/dkms.conf)");
    crate::dkms::run(&[])?;

    step("kernel shim in a QEMU TCG guest");
    crate::vm::run_vm(&[])?;

    step("kernel style of the module (checkpatch.pl)");
    crate::vm::checkpatch(&[])?;
    Ok(())
}

/// `cargo xtask stress [N] [--rounds R]`: the long handoff stress with every tier
/// forced (N handoffs per test, 10^8 by default), and R rounds (10^7 by default) of the
/// lost wake-up stress of a future's arm racing two notifies. `--rounds R` alone runs
/// only the latter.
pub fn stress(args: &[String]) -> Res {
    let mut handoffs = None;
    let mut rounds = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--rounds" => {
                let r = it.next().ok_or("--rounds needs a count")?;
                rounds = Some(count(r, "--rounds takes a round count")?);
            }
            other if handoffs.is_none() => {
                handoffs = Some(count(other, "stress takes a handoff count")?);
            }
            other => return Err(format!("stress: unexpected argument `{other}`")),
        }
    }
    let only_rounds = handoffs.is_none() && rounds.is_some();
    let handoffs = handoffs.unwrap_or(100_000_000);
    let rounds = rounds.unwrap_or(10_000_000);
    let mut cmd = cargo();
    cmd.args(["test", "-p", "mwait", "--release", "--test", "stress", "--"]);
    if only_rounds {
        step(&format!("stress: {rounds} lost wake-up rounds"));
        cmd.arg("a_notify_inside_an_arms_barrier_is_never_lost");
    } else {
        step(&format!(
            "stress: {handoffs} handoffs per tier, {rounds} lost wake-up rounds"
        ));
    }
    util::run(
        cmd.args(["--nocapture", "--test-threads=1"])
            .env("MWAIT_STRESS_HANDOFFS", handoffs.to_string())
            .env("MWAIT_STRESS_ROUNDS", rounds.to_string()),
    )
}

/// `s` as a count, or `why`.
fn count(s: &str, why: &str) -> Result<u64, String> {
    s.parse::<u64>().map_err(|_| format!("{why}, got `{s}`"))
}
