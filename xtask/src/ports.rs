//! The other operating systems' park tiers: `cargo xtask wine-test` runs the test
//! suites for `x86_64-pc-windows-gnu` under Wine, and `cargo xtask cross-check`
//! builds them for macOS, FreeBSD and NetBSD (the parking-table fallback), which no
//! machine here can run.
//!
//! What each target gets:
//!
//! | target | what runs |
//! | --- | --- |
//! | `x86_64-pc-windows-gnu` | clippy `-D warnings`; docs `-D warnings`; every test binary of `mwait`, executed under Wine |
//! | `aarch64-apple-darwin`, `x86_64-unknown-freebsd`, `x86_64-unknown-netbsd` | clippy `-D warnings` on all targets; `cargo test --no-run` with the final link skipped |
//!
//! No cross linker or system libraries for macOS and the BSDs exist on Debian, so
//! `cargo test --no-run` runs there with `true` as the linker: every crate, the tests
//! included, is compiled to machine code, and only the link of the test executables
//! (which would need the target's libc) is left out.

use crate::util::{self, cargo, ensure_apt, ensure_rust_target, project_root, step, Res};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Instant;

/// The Windows target the suites are built for and run under Wine.
const WINDOWS_TARGET: &str = "x86_64-pc-windows-gnu";

/// The targets that are built only, with the park tier each one compiles.
const BUILT_ONLY: [(&str, &str); 3] = [
    (
        "aarch64-apple-darwin",
        "macOS: os_sync_wait_on_address / __ulock_wait",
    ),
    ("x86_64-unknown-freebsd", "FreeBSD: _umtx_op"),
    (
        "x86_64-unknown-netbsd",
        "NetBSD: the table of parked threads",
    ),
];

/// How long one test binary may run under Wine before it counts as hung.
const WINE_BINARY_TIMEOUT_S: u32 = 600;

/// `cargo xtask wine-test`: builds every test binary of `mwait` for Windows and runs
/// each under Wine; prints `wine-test: N passed, N failed`.
pub fn wine_test(args: &[String]) -> Res {
    if let Some(a) = args.first() {
        return Err(format!("wine-test takes no arguments, got `{a}`"));
    }
    let t0 = Instant::now();
    step("Wine and MinGW (Debian's wine64, gcc-mingw-w64-x86-64), rustup target");
    ensure_apt(&["wine64", "gcc-mingw-w64-x86-64"])?;
    ensure_rust_target(WINDOWS_TARGET)?;
    let wine = find_tool(&["wine64", "wine"], "/usr/lib/wine/wine64")?;
    let version = util::output(Command::new(&wine).arg("--version"))?;
    let installed = t0.elapsed();

    step(&format!("build the test binaries for {WINDOWS_TARGET}"));
    let bins = build_windows_tests()?;
    let built = t0.elapsed();

    step(&format!("a Wine prefix ({})", version.trim()));
    let prefix = project_root().join("target/wine-prefix");
    prepare_prefix(&wine, &prefix)?;
    let prepared = t0.elapsed();

    let (mut passed, mut failed) = (0u64, 0u64);
    let mut broken = Vec::new();
    for (name, exe) in &bins {
        step(&format!("{name} under Wine"));
        match run_under_wine(&wine, &prefix, exe) {
            Ok((p, f, ok)) => {
                passed += p;
                failed += f;
                if !ok {
                    broken.push(name.clone());
                }
            }
            Err(e) => {
                println!("{e}");
                broken.push(name.clone());
            }
        }
    }
    let done = t0.elapsed();
    println!(
        "\nwine-test: {passed} passed, {failed} failed ({} test binaries for {WINDOWS_TARGET} under {})",
        bins.len(),
        version.trim()
    );
    println!(
        "wine-test: took {:.0} s: install {:.0} s, build {:.0} s, prefix {:.0} s, run {:.0} s",
        done.as_secs_f64(),
        installed.as_secs_f64(),
        (built - installed).as_secs_f64(),
        (prepared - built).as_secs_f64(),
        (done - prepared).as_secs_f64()
    );
    if broken.is_empty() && failed == 0 {
        Ok(())
    } else {
        Err(format!("test binaries failed under Wine: {broken:?}"))
    }
}

/// `cargo xtask cross-check`: clippy and `cargo test --no-run` (link skipped) for the
/// targets no machine here runs, and clippy and the docs for Windows; prints how long
/// it took.
pub fn cross_check(args: &[String]) -> Res {
    if let Some(a) = args.first() {
        return Err(format!("cross-check takes no arguments, got `{a}`"));
    }
    let t0 = Instant::now();
    ensure_rust_target(WINDOWS_TARGET)?;
    step(&format!(
        "clippy -D warnings, all targets, {WINDOWS_TARGET}"
    ));
    clippy(WINDOWS_TARGET)?;
    step(&format!("docs -D warnings, {WINDOWS_TARGET}"));
    util::run(&mut util::strict_docs(&[
        "-p",
        "mwait",
        "--target",
        WINDOWS_TARGET,
    ]))?;
    for (target, tier) in BUILT_ONLY {
        ensure_rust_target(target)?;
        step(&format!(
            "{target} ({tier}): clippy -D warnings, all targets"
        ));
        clippy(target)?;
        step(&format!(
            "{target}: cargo test --no-run, compiled to machine code, link skipped"
        ));
        let linker_var = format!(
            "CARGO_TARGET_{}_LINKER",
            target.to_uppercase().replace('-', "_")
        );
        util::run(
            cargo()
                .args(["test", "-p", "mwait", "--target", target, "--no-run"])
                .env(linker_var, "true")
                // For Apple targets rustc asks `xcrun` (absent here) where the SDK
                // is, for the link alone; naming a directory keeps it from asking.
                .env("SDKROOT", project_root().join("target")),
        )?;
    }
    println!(
        "cross-check: took {:.0} s ({WINDOWS_TARGET} and {} built-only targets)",
        t0.elapsed().as_secs_f64(),
        BUILT_ONLY.len()
    );
    Ok(())
}

fn clippy(target: &str) -> Res {
    util::run(cargo().args([
        "clippy",
        "-p",
        "mwait",
        "-p",
        "mwait-support",
        "--target",
        target,
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))
}

/// `names` on the PATH, else `fallback` (Debian's `wine64` package installs its
/// loader in /usr/lib/wine and puts nothing on the PATH).
fn find_tool(names: &[&str], fallback: &str) -> Res<PathBuf> {
    if let Some(n) = names.iter().find(|n| util::have(n)) {
        return Ok(PathBuf::from(n));
    }
    let p = PathBuf::from(fallback);
    if p.exists() {
        Ok(p)
    } else {
        Err(format!("none of {names:?} on the PATH, and no {fallback}"))
    }
}

/// Builds every test binary of `mwait` for Windows, and `no_syscall` once more with
/// the `test-counters` feature that it needs; returns (target name, path).
fn build_windows_tests() -> Res<Vec<(String, PathBuf)>> {
    let field = |line: &str, key: &str| -> Option<String> {
        let tag = format!("\"{key}\":\"");
        let i = line.find(&tag)? + tag.len();
        let j = line[i..].find('"')? + i;
        Some(line[i..j].to_string())
    };
    let mut bins: Vec<(String, PathBuf)> = Vec::new();
    for (extra, label) in [
        (&["--tests"][..], ""),
        (
            &["--features", "test-counters", "--test", "no_syscall"],
            " (test-counters)",
        ),
    ] {
        let out = util::output(
            cargo()
                .args(["test", "-p", "mwait", "--target", WINDOWS_TARGET])
                .args(extra)
                .args(["--no-run", "--message-format=json"]),
        )?;
        bins.extend(
            out.lines()
                .filter(|l| l.contains("\"reason\":\"compiler-artifact\""))
                .filter_map(|l| {
                    let name = field(l, "name")? + label;
                    Some((name, PathBuf::from(field(l, "executable")?)))
                }),
        );
    }
    for (name, exe) in &bins {
        println!("built {name}: {}", exe.display());
    }
    if bins.is_empty() {
        return Err("cargo reported no test binary".into());
    }
    Ok(bins)
}

/// Makes the Wine prefix once, and installs the `bcryptprimitives.dll` stand-in when
/// this Wine has none (see `xtask/wine/bcryptprimitives.c`).
fn prepare_prefix(wine: &Path, prefix: &Path) -> Res {
    let system32 = prefix.join("drive_c/windows/system32");
    if !system32.exists() {
        std::fs::create_dir_all(prefix).map_err(|e| format!("{}: {e}", prefix.display()))?;
        util::run(wine_env(
            Command::new(wine).args(["wineboot", "--init"]),
            prefix,
        ))?;
        let server = find_tool(&["wineserver"], "/usr/lib/wine/wineserver64")?;
        // Wait until the prefix's set-up processes have finished.
        util::run(Command::new(server).arg("-w").env("WINEPREFIX", prefix))?;
    }
    let dll = system32.join("bcryptprimitives.dll");
    if !dll.exists() {
        println!("this Wine has no bcryptprimitives.dll: building the stand-in");
        let src = project_root().join("xtask/wine/bcryptprimitives.c");
        util::run(
            Command::new("x86_64-w64-mingw32-gcc")
                .args(["-shared", "-O2", "-Wall", "-Werror", "-o"])
                .arg(&dll)
                .arg(&src)
                .arg("-ladvapi32"),
        )?;
    }
    Ok(())
}

/// Sets up `cmd` to run Wine in `prefix`, quiet, without the Mono and Gecko
/// installers.
fn wine_env<'a>(cmd: &'a mut Command, prefix: &Path) -> &'a mut Command {
    cmd.env("WINEPREFIX", prefix)
        .env("WINEDEBUG", "-all")
        .env("WINEDLLOVERRIDES", "mscoree,mshtml=")
}

/// Runs one test binary under Wine, echoing its output; returns the passed and failed
/// counts of its `test result:` line and whether it exited successfully.
fn run_under_wine(wine: &Path, prefix: &Path, exe: &Path) -> Res<(u64, u64, bool)> {
    let mut cmd = Command::new("timeout");
    wine_env(&mut cmd, prefix)
        .arg(WINE_BINARY_TIMEOUT_S.to_string())
        .arg(wine)
        .arg(exe)
        .env("MWAIT_TEST_UNDER_WINE", "1")
        .stdout(Stdio::piped());
    for v in [
        "MWAIT_BACKEND",
        "MWAIT_DISABLE",
        "MWAIT_UNSAFE_FORCE",
        "MWAIT_SELFTEST",
        "MWAIT_STRESS_HANDOFFS",
    ] {
        cmd.env_remove(v);
    }
    println!(
        "$ timeout {WINE_BINARY_TIMEOUT_S} {} {}",
        wine.display(),
        exe.display()
    );
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", wine.display()))?;
    let (passed, failed, status) = echo_and_count(&mut child)?;
    if !status.success() {
        println!("{} exited with {status}", exe.display());
    }
    Ok((passed, failed, status.success()))
}

/// Echoes a test run's standard output (piped) line by line, adds up the counts of
/// its `test result:` lines, and waits for it: `(passed, failed, its exit status)`.
pub fn echo_and_count(child: &mut Child) -> Res<(u64, u64, ExitStatus)> {
    let (mut passed, mut failed) = (0, 0);
    let stdout = child.stdout.take().expect("stdout is piped");
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|e| format!("reading the test output: {e}"))?;
        println!("{line}");
        if let Some((p, f)) = parse_result(&line) {
            passed += p;
            failed += f;
        }
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    Ok((passed, failed, status))
}

/// The passed and failed counts of a libtest summary line
/// (`test result: ok. 17 passed; 0 failed; 0 ignored; ...`).
pub fn parse_result(line: &str) -> Option<(u64, u64)> {
    let rest = line.trim().strip_prefix("test result: ")?;
    let count = |what: &str| -> Option<u64> {
        rest.split(';').find_map(|part| {
            let words: Vec<&str> = part.split_whitespace().collect();
            match words.as_slice() {
                [.., n, w] if *w == what => n.parse().ok(),
                _ => None,
            }
        })
    };
    Some((count("passed")?, count("failed")?))
}

#[cfg(test)]
mod tests {
    use super::parse_result;

    #[test]
    fn libtest_summaries_parse() {
        assert_eq!(
            parse_result("test result: ok. 17 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.12s"),
            Some((17, 0))
        );
        assert_eq!(
            parse_result("test result: FAILED. 15 passed; 2 failed; 0 ignored"),
            Some((15, 2))
        );
        assert_eq!(parse_result("running 17 tests"), None);
    }
}
