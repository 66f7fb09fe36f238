//! `cargo xtask clients`: other people's test suites, run stock and on mwait.
//!
//! Each row of [`CLIENTS`] names a published crate at a pinned version and how its
//! build is moved onto mwait. The published sources come through cargo (a scratch
//! package that depends on every row, `cargo metadata` for where cargo unpacked
//! them); each is copied twice under `target/clients/`, once as published and once
//! moved onto mwait, and `cargo test` runs in both copies (lib, integration and doc
//! tests, or the features and targets the row names), with the package's own
//! `Cargo.lock` where it ships one. The two sides
//! build in target directories of their own, shared by the rows, so that a
//! dependency common to several suites is built once per side.
//!
//! A row is moved onto mwait in one of three ways ([`OnMwait`]): its dependency on a
//! crate is replaced by a drop-in under `integrations/` (`[patch.crates-io]`), its
//! own source is replaced by the drop-in's (for the drop-in's original, whose tests
//! then run against the drop-in), or a patch kept under `integrations/` is applied
//! to its source. Every mwait side must then have `mwait` in its `Cargo.lock`, or the
//! run fails: cargo ignores a `[patch]` that matches nothing with only a warning.
//!
//! It prints `NAME: mwait N passed, N failed; stock N passed, N failed` per row and
//! fails when a suite that passes stock does not pass on mwait.

use crate::util::{capture, project_root, step, tail, Captured, Res};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// How a row's build is moved onto mwait.
enum OnMwait {
    /// `[patch.crates-io]`: each (crate, drop-in directory under the root). Cargo
    /// patches a crate only with a package of the same name, and the drop-ins
    /// publish under names of their own (`mwait-parking`): the patch is a package
    /// named after the crate that re-exports the drop-in ([`shim`]), the one a
    /// user writes (the drop-in's README).
    PatchCratesIo(&'static [(&'static str, &'static str)]),
    /// The drop-in (a directory under the root) replaces the row's `src/`, and the
    /// drop-in's path dependencies (crate, directory under the root) are added: the
    /// row's own tests then test it.
    ReplaceSource {
        drop_in: &'static str,
        path_deps: &'static [(&'static str, &'static str)],
    },
    /// A unified diff (a file under the root) applied with `patch -p1` to the row's
    /// source, and the path dependencies it needs.
    ApplyPatch {
        diff: &'static str,
        path_deps: &'static [(&'static str, &'static str)],
    },
}

/// One client crate: a published crate whose own test suite runs stock and on mwait.
struct Client {
    name: &'static str,
    /// The exact published version, so that a run is repeatable and a patch applies.
    version: &'static str,
    on_mwait: OnMwait,
    /// What `cargo test` builds and runs beyond `--no-fail-fast`: empty for the whole
    /// suite (lib, integration and doc tests), or features and test targets where
    /// the whole suite would not fit in the run's time.
    test_args: &'static [&'static str],
    /// Tests of the behaviours the original documents (a file under the root),
    /// added to both sides as the test target `mwait_semantics`: they must give the
    /// same results stock and on mwait, all passing.
    semantics: Option<&'static str>,
}

/// The mwait crate, as a path dependency.
const MWAIT: (&str, &str) = ("mwait", "crates/mwait");

/// The drop-in for the `parking` crate.
const PARKING: (&str, &str) = ("parking", "integrations/parking");

/// The crates whose suites run, in order. Another drop-in is one more row.
const CLIENTS: &[Client] = &[
    Client {
        name: "parking",
        version: "2.2.1",
        on_mwait: OnMwait::ReplaceSource {
            drop_in: "integrations/parking",
            path_deps: &[MWAIT],
        },
        test_args: &[],
        semantics: Some("integrations/parking/tests/semantics.rs"),
    },
    Client {
        name: "atomic-wait",
        version: "1.1.0",
        on_mwait: OnMwait::ReplaceSource {
            drop_in: "integrations/atomic-wait",
            path_deps: &[MWAIT],
        },
        test_args: &[],
        semantics: Some("integrations/atomic-wait/tests/semantics.rs"),
    },
    Client {
        name: "event-listener",
        version: "5.4.2",
        on_mwait: OnMwait::PatchCratesIo(&[PARKING]),
        test_args: &[],
        semantics: None,
    },
    Client {
        name: "async-channel",
        version: "2.5.0",
        on_mwait: OnMwait::PatchCratesIo(&[PARKING]),
        test_args: &[],
        semantics: None,
    },
    Client {
        name: "async-lock",
        version: "3.5.0",
        on_mwait: OnMwait::PatchCratesIo(&[PARKING]),
        test_args: &[],
        semantics: None,
    },
    Client {
        name: "async-executor",
        version: "1.14.1",
        on_mwait: OnMwait::PatchCratesIo(&[PARKING]),
        test_args: &[],
        semantics: None,
    },
    Client {
        name: "futures-lite",
        version: "2.6.1",
        on_mwait: OnMwait::PatchCratesIo(&[PARKING]),
        test_args: &[],
        semantics: None,
    },
    Client {
        name: "async-io",
        version: "2.6.0",
        on_mwait: OnMwait::PatchCratesIo(&[PARKING]),
        test_args: &[],
        semantics: None,
    },
    Client {
        name: "rayon-core",
        version: "1.13.0",
        on_mwait: OnMwait::ApplyPatch {
            diff: "integrations/rayon-core/sleep.patch",
            path_deps: &[MWAIT],
        },
        test_args: &[],
        semantics: Some("integrations/rayon-core/tests/semantics.rs"),
    },
    // tokio: the test files that park (see TOKIO_TESTS), not the whole suite.
    Client {
        name: "tokio",
        version: "1.54.1",
        on_mwait: OnMwait::ApplyPatch {
            diff: "integrations/tokio/park.patch",
            path_deps: &[MWAIT],
        },
        test_args: TOKIO_TESTS,
        semantics: Some("integrations/tokio/tests/semantics.rs"),
    },
];

/// The names of the rows, in order.
pub fn names() -> impl Iterator<Item = &'static str> {
    CLIENTS.iter().map(|c| c.name)
}

/// The tokio row's `cargo test` arguments: the test files that park a thread
/// (`block_on` on `ParkThread` / `CachedParkThread`; a multi-thread worker on its
/// condvar while another holds the driver) or wake one that is parked.
///
/// Not the whole suite: as published, its I/O tests do not build (they use
/// `tokio-test`'s mocks, which implement the traits of the registry's tokio that
/// `tokio-test` depends on, not this copy's), and its 188 test binaries and
/// doctests would take longer than every other row together. Not the lib's unit
/// tests either: a second build of tokio (about 35 s a side here) for tests that
/// are mostly of data structures (the queues, the timer wheel, `fs::File` on a
/// mock). `full` is what the test files ask for, `test-util` what the paused-clock
/// tests need.
const TOKIO_TESTS: &[&str] = &[
    "--features",
    "full,test-util",
    // Both runtimes (each `rt_common` test runs on the current-thread and the
    // multi-thread runtime), workers parking and waking, `LocalRuntime`.
    "--test",
    "rt_common",
    "--test",
    "rt_threaded",
    "--test",
    "rt_basic",
    "--test",
    "rt_local",
    // `Handle::block_on` from threads inside and outside a runtime.
    "--test",
    "rt_handle",
    "--test",
    "rt_handle_block_on",
    // `spawn_blocking`, `block_in_place`, and a `LocalSet`'s `block_on`.
    "--test",
    "task_blocking",
    "--test",
    "task_local_set",
    // Blocking sends and receives park a plain thread; wake-ups across threads.
    "--test",
    "sync_mpsc",
    "--test",
    "sync_oneshot",
    "--test",
    "sync_notify",
    "--test",
    "sync_barrier",
    // Timed parks.
    "--test",
    "time_sleep",
    "--test",
    "time_timeout",
    "--test",
    "time_rt",
];

/// How long one suite (its build included) may run before it counts as hung.
const SUITE_LIMIT: Duration = Duration::from_secs(600);

/// The two sides of a row.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Stock,
    Mwait,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Stock => "stock",
            Side::Mwait => "mwait",
        }
    }
}

/// What one suite did.
struct Tally {
    passed: u64,
    failed: u64,
    /// Whether `cargo test` exited 0 (a suite whose build failed, or that crashed or
    /// hung, has failed even where no test reported a failure).
    ok: bool,
    status: String,
}

impl Tally {
    /// Sums the `test result:` lines of every test binary and the doctests.
    fn of(run: &Captured) -> Tally {
        let (mut passed, mut failed) = (0, 0);
        for line in run.stdout.lines().filter(|l| l.starts_with("test result:")) {
            passed += count_before(line, " passed");
            failed += count_before(line, " failed");
        }
        Tally {
            passed,
            failed,
            ok: run.ok,
            status: run.status.clone(),
        }
    }

    fn passes(&self) -> bool {
        self.ok && self.failed == 0
    }

    /// `N passed, N failed`, and the exit status where the suite did not pass
    /// although no test reported a failure (a build failure, a crash, a hang).
    fn describe(&self) -> String {
        let mut s = format!("{} passed, {} failed", self.passed, self.failed);
        if !self.ok && self.failed == 0 {
            s.push_str(&format!(" ({})", self.status));
        }
        s
    }
}

/// The number just before `what` in `line` (`"... 12 passed; ..."` -> 12).
fn count_before(line: &str, what: &str) -> u64 {
    line.find(what)
        .and_then(|end| {
            let head = &line[..end];
            let start = head
                .rfind(|c: char| !c.is_ascii_digit())
                .map_or(0, |i| i + 1);
            head[start..].parse().ok()
        })
        .unwrap_or(0)
}

/// `cargo xtask clients [NAME...]`: every row, or the rows named.
pub fn run(args: &[String]) -> Res {
    let rows: Vec<&Client> = if args.is_empty() {
        CLIENTS.iter().collect()
    } else {
        args.iter()
            .map(|a| {
                CLIENTS.iter().find(|c| c.name == a).ok_or_else(|| {
                    let names: Vec<_> = CLIENTS.iter().map(|c| c.name).collect();
                    format!("no client `{a}`; the clients: {}", names.join(", "))
                })
            })
            .collect::<Res<_>>()?
    };
    let t0 = Instant::now();
    let work = project_root().join("target/clients");
    step("clients: the published sources, through cargo");
    let sources = fetch(&work, &rows)?;
    let mut lines = Vec::new();
    let mut regressions = Vec::new();
    for (client, source) in rows.iter().zip(&sources) {
        let mut tallies = Vec::new();
        let mut semantics = Vec::new();
        for side in [Side::Stock, Side::Mwait] {
            step(&format!(
                "clients: {} {} {}",
                client.name,
                client.version,
                side.name()
            ));
            let dir = work.join(side.name()).join(client.name);
            prepare(client, source, &dir, side)?;
            let run = test_suite(client, &dir, &work.join(format!("build-{}", side.name())));
            let tally = Tally::of(&run);
            println!(
                "{} {}: {} in {:.0} s",
                client.name,
                side.name(),
                tally.describe(),
                run.secs
            );
            if !tally.passes() {
                println!("{}\n{}", tail(&run.stdout, 30), tail(&run.stderr, 30));
            }
            if side == Side::Mwait {
                check_on_mwait(client, &dir)?;
            }
            tallies.push(tally);
            if client.semantics.is_some() {
                let target_dir = work.join(format!("build-{}", side.name()));
                semantics.push(semantics_suite(client, &dir, &target_dir));
            }
        }
        if let [stock, mwait] = &semantics[..] {
            let verdict = compare_semantics(stock, mwait);
            let line = format!(
                "{} semantics: {}",
                client.name,
                verdict.as_ref().map_or_else(|e| e.clone(), |s| s.clone())
            );
            println!("{line}");
            if verdict.is_err() {
                regressions.push(client.name);
            }
            lines.push(line);
        }
        let (stock, mwait) = (&tallies[0], &tallies[1]);
        let line = format!(
            "{}: mwait {}; stock {}",
            client.name,
            mwait.describe(),
            stock.describe()
        );
        println!("{line}");
        if stock.passes() && !mwait.passes() {
            regressions.push(client.name);
        }
        lines.push(line);
    }
    println!(
        "\nclients ({:.0} s):\n{}",
        t0.elapsed().as_secs_f64(),
        lines.join("\n")
    );
    if regressions.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "suites that pass stock fail on mwait, or semantics that differ: {}",
            regressions.join(", ")
        ))
    }
}

/// The file name and test target of a row's semantics tests in its copies.
const SEMANTICS_TARGET: &str = "mwait_semantics";

/// `cargo test --test mwait_semantics` in `dir`, with the row's features: each test's
/// name and whether it passed, or why the run gave none.
fn semantics_suite(client: &Client, dir: &Path, target_dir: &Path) -> Res<Vec<(String, bool)>> {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir)
        .env_remove("RUSTFLAGS")
        .args(["test", "--no-fail-fast", "--test", SEMANTICS_TARGET]);
    for pair in client.test_args.windows(2) {
        if pair[0] == "--features" {
            cmd.args(pair);
        }
    }
    let run = capture(&mut cmd, SUITE_LIMIT);
    let results = test_outcomes(&run.stdout);
    if results.is_empty() {
        return Err(format!(
            "no test ran ({}): {}",
            run.status,
            tail(&run.stderr, 20)
        ));
    }
    Ok(results)
}

/// The `test NAME ... ok` / `... FAILED` lines of a test binary's output, sorted.
fn test_outcomes(stdout: &str) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = stdout
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("test ")?;
            let (name, outcome) = rest.rsplit_once(" ... ")?;
            match outcome.trim() {
                "ok" => Some((name.to_string(), true)),
                "FAILED" => Some((name.to_string(), false)),
                _ => None,
            }
        })
        .collect();
    out.sort();
    out
}

/// The semantics tests' verdict: the same tests on both sides, every one passing.
fn compare_semantics(
    stock: &Res<Vec<(String, bool)>>,
    mwait: &Res<Vec<(String, bool)>>,
) -> Res<String> {
    let (stock, mwait) = match (stock, mwait) {
        (Ok(s), Ok(m)) => (s, m),
        (Err(e), _) => return Err(format!("stock: {e}")),
        (_, Err(e)) => return Err(format!("mwait: {e}")),
    };
    let failed = |v: &[(String, bool)]| -> Vec<String> {
        v.iter()
            .filter(|(_, ok)| !ok)
            .map(|(n, _)| n.clone())
            .collect()
    };
    let (fs, fm) = (failed(stock), failed(mwait));
    if stock != mwait || !fs.is_empty() {
        return Err(format!(
            "differ or fail: stock failed {fs:?}, mwait failed {fm:?} ({} and {} tests)",
            stock.len(),
            mwait.len()
        ));
    }
    Ok(format!(
        "the same {} passed stock and on mwait",
        stock.len()
    ))
}

/// A copy of the row `name`'s published source for each side, stock then mwait,
/// ready to build: (side's name, its directory, its target directory).
pub fn prepared(name: &str) -> Res<Vec<(&'static str, PathBuf, PathBuf)>> {
    let client = CLIENTS
        .iter()
        .find(|c| c.name == name)
        .ok_or_else(|| format!("no client `{name}`"))?;
    let work = project_root().join("target/clients");
    let source = fetch(&work, &[client])?.remove(0);
    [Side::Stock, Side::Mwait]
        .into_iter()
        .map(|side| {
            let dir = work.join(side.name()).join(client.name);
            prepare(client, &source, &dir, side)?;
            Ok((
                side.name(),
                dir,
                work.join(format!("build-{}", side.name())),
            ))
        })
        .collect()
}

/// `cargo xtask patch NAME DIR [VERSION]`: a copy of the row `NAME`'s pinned
/// release in `DIR`, moved onto mwait (its patch applied, or its source replaced by
/// the drop-in's), and the `[patch.crates-io]` line that puts it in a program's
/// build. A `VERSION` other than the pinned one is refused: the patch is written
/// against that release.
pub fn patch(args: &[String]) -> Res {
    let (name, dir, version) = match args {
        [n, d] => (n, d, None),
        [n, d, v] => (n, d, Some(v)),
        _ => return Err("usage: cargo xtask patch NAME DIR [VERSION]".into()),
    };
    let client = CLIENTS
        .iter()
        .find(|c| c.name == name && !matches!(c.on_mwait, OnMwait::PatchCratesIo(_)))
        .ok_or_else(|| {
            let names: Vec<_> = CLIENTS
                .iter()
                .filter(|c| !matches!(c.on_mwait, OnMwait::PatchCratesIo(_)))
                .map(|c| c.name)
                .collect();
            format!(
                "no patch for `{name}`; there are patches for: {}",
                names.join(", ")
            )
        })?;
    if let Some(v) = version.filter(|v| v.trim_start_matches('=') != client.version) {
        return Err(format!(
            "{name} {v}: the patch is written against {name} {pinned} and applies to that \
             release only; pin it in the program (`{name} = \"={pinned}\"`, then \
             `cargo update -p {name} --precise {pinned}`) and patch that",
            pinned = client.version
        ));
    }
    let dir = std::env::current_dir()
        .map_err(|e| e.to_string())?
        .join(dir);
    if dir.exists()
        && fs::read_dir(&dir)
            .map_err(|e| e.to_string())?
            .next()
            .is_some()
    {
        return Err(format!(
            "{}: not empty; name a new directory",
            dir.display()
        ));
    }
    let work = project_root().join("target/clients");
    step(&format!(
        "{name} {}: the published source, through cargo",
        client.version
    ));
    let source = fetch(&work, &[client])?.remove(0);
    prepare(client, &source, &dir, Side::Mwait)?;
    println!(
        "\n{name} {} on mwait is in {}. Pin {name} to that release in the program's \
         Cargo.toml (`{name} = \"={}\"`, with its features) and add:\n\n\
         [patch.crates-io]\n{name} = {{ path = \"{}\" }}\n\n\
         `cargo tree -i {name}` then shows that path.",
        client.version,
        dir.display(),
        client.version,
        dir.display()
    );
    Ok(())
}

/// The pinned version of the row `name`.
pub fn version(name: &str) -> Option<&'static str> {
    CLIENTS.iter().find(|c| c.name == name).map(|c| c.version)
}

/// Has cargo download every row's published package; returns where it unpacked
/// each (the directory of its `Cargo.toml`), in the rows' order.
fn fetch(work: &Path, rows: &[&Client]) -> Res<Vec<PathBuf>> {
    let scratch = work.join("fetch");
    fs::create_dir_all(scratch.join("src")).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let mut manifest = String::from(
        "[package]\nname = \"mwait-clients-fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
         publish = false\n\n[workspace]\n\n[dependencies]\n",
    );
    for c in rows {
        manifest.push_str(&format!("{} = \"={}\"\n", c.name, c.version));
    }
    write(&scratch.join("Cargo.toml"), &manifest)?;
    write(&scratch.join("src/lib.rs"), "")?;
    // `cargo metadata` downloads every package it resolves, and says where each is.
    let meta = crate::util::output(
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .current_dir(&scratch)
            .args(["metadata", "--format-version", "1"]),
    )?;
    rows.iter()
        .map(|c| {
            let tail = format!("/{}-{}/Cargo.toml\"", c.name, c.version);
            let end = meta
                .find(&tail)
                .ok_or_else(|| format!("cargo metadata does not list {} {}", c.name, c.version))?;
            let start = meta[..end].rfind('"').map_or(0, |i| i + 1);
            Ok(PathBuf::from(
                &meta[start..end + tail.len() - "/Cargo.toml\"".len()],
            ))
        })
        .collect()
}

/// Makes `dir` a fresh copy of the published `source`, a workspace of its own,
/// moved onto mwait on that side.
fn prepare(client: &Client, source: &Path, dir: &Path, side: Side) -> Res {
    let root = project_root();
    if dir.exists() {
        fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    copy_dir(source, dir)?;
    let mut manifest = read(&dir.join("Cargo.toml"))?;
    // Under target/, the copy sits inside this repository's workspace directory;
    // an empty [workspace] makes it a workspace of its own.
    manifest.push_str("\n[workspace]\n");
    if side == Side::Mwait {
        match &client.on_mwait {
            OnMwait::PatchCratesIo(drop_ins) => {
                manifest.push_str("\n[patch.crates-io]\n");
                for (name, path) in *drop_ins {
                    let shim = shim(&root.join("target/clients/shims"), name, &root.join(path))?;
                    manifest.push_str(&format!("{name} = {{ path = \"{}\" }}\n", shim.display()));
                }
            }
            OnMwait::ReplaceSource { drop_in, path_deps } => {
                fs::remove_dir_all(dir.join("src")).map_err(|e| e.to_string())?;
                copy_dir(&root.join(drop_in).join("src"), &dir.join("src"))?;
                add_path_deps(&mut manifest, path_deps);
            }
            OnMwait::ApplyPatch { diff, path_deps } => {
                let diff = root.join(diff);
                crate::util::run(
                    Command::new("patch")
                        .args(["-p1", "--forward", "--batch", "-d"])
                        .arg(dir)
                        .arg("-i")
                        .arg(&diff),
                )?;
                add_path_deps(&mut manifest, path_deps);
            }
        }
    }
    if let Some(file) = client.semantics {
        fs::create_dir_all(dir.join("tests")).map_err(|e| e.to_string())?;
        fs::copy(
            root.join(file),
            dir.join(format!("tests/{SEMANTICS_TARGET}.rs")),
        )
        .map_err(|e| format!("{file}: {e}"))?;
        manifest.push_str(&format!(
            "\n[[test]]\nname = \"{SEMANTICS_TARGET}\"\npath = \"tests/{SEMANTICS_TARGET}.rs\"\n"
        ));
    }
    write(&dir.join("Cargo.toml"), &manifest)?;
    if let (Side::Mwait, OnMwait::PatchCratesIo(drop_ins)) = (side, &client.on_mwait) {
        unlock(dir, drop_ins)?;
    }
    Ok(())
}

/// Writes, under `dir`, the package that patches `name` with the drop-in at
/// `drop_in`: named `name`, at the drop-in's version, with the drop-in's features,
/// its library re-exporting the drop-in's. Returns its directory.
pub fn shim(dir: &Path, name: &str, drop_in: &Path) -> Res<PathBuf> {
    let manifest = read(&drop_in.join("Cargo.toml"))?;
    let field = |key: &str| -> Res<String> {
        manifest
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key} = \"")))
            .map(|v| v.trim_end_matches('"').to_string())
            .ok_or_else(|| format!("{}: no {key}", drop_in.display()))
    };
    let (package, version) = (field("name")?, field("version")?);
    let mut features = String::new();
    let mut in_features = false;
    for line in manifest.lines() {
        if line.starts_with('[') {
            in_features = line.trim() == "[features]";
        } else if in_features {
            if let Some((feature, _)) = line.split_once('=').filter(|_| !line.starts_with('#')) {
                let feature = feature.trim();
                features.push_str(&format!("{feature} = [\"inner/{feature}\"]\n"));
            }
        }
    }
    let shim = dir.join(name);
    fs::create_dir_all(shim.join("src")).map_err(|e| format!("{}: {e}", shim.display()))?;
    write(
        &shim.join("Cargo.toml"),
        &format!(
            "[package]\nname = \"{name}\"\nversion = \"{version}\"\nedition = \"2021\"\n\n\
             [features]\n{features}\n[dependencies]\n\
             inner = {{ package = \"{package}\", path = \"{}\" }}\n\n[workspace]\n",
            drop_in.display()
        ),
    )?;
    write(&shim.join("src/lib.rs"), "pub use inner::*;\n")?;
    Ok(shim)
}

/// Moves the locked registry versions of the patched crates onto the patches: a
/// package's own `Cargo.lock` may lock an older release than the drop-in's (it
/// then keeps it, and cargo only warns that the patch went unused). Everything else
/// stays as locked, as on the stock side.
fn unlock(dir: &Path, drop_ins: &[(&str, &str)]) -> Res {
    let Ok(lock) = fs::read_to_string(dir.join("Cargo.lock")) else {
        return Ok(()); // no lock: the first build resolves the patch
    };
    for (name, _) in drop_ins {
        for version in locked_registry_versions(&lock, name) {
            crate::util::run(
                Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                    .current_dir(dir)
                    .args(["update", "-p", &format!("{name}@{version}")]),
            )?;
        }
    }
    Ok(())
}

/// The versions of `name` that `lock` (a `Cargo.lock`) takes from a registry.
fn locked_registry_versions(lock: &str, name: &str) -> Vec<String> {
    let wanted = format!("name = \"{name}\"");
    lock.split("[[package]]")
        .filter(|block| block.lines().any(|l| l.trim() == wanted))
        .filter(|block| block.contains("source = \"registry+"))
        .filter_map(|block| {
            let line = block.lines().find(|l| l.starts_with("version = "))?;
            Some(
                line.trim_start_matches("version = ")
                    .trim_matches('"')
                    .to_string(),
            )
        })
        .collect()
}

/// A `[dependencies.NAME]` table for each (crate, directory under the root).
fn add_path_deps(manifest: &mut String, deps: &[(&str, &str)]) {
    for (name, path) in deps {
        manifest.push_str(&format!(
            "\n[dependencies.{name}]\npath = \"{}\"\n",
            project_root().join(path).display()
        ));
    }
}

/// `cargo test` in `dir` with the row's own arguments, building in `target_dir`.
fn test_suite(client: &Client, dir: &Path, target_dir: &Path) -> Captured {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir)
        // The suites' own flags, not this workspace's.
        .env_remove("RUSTFLAGS")
        .args(["test", "--no-fail-fast"])
        .args(client.test_args);
    capture(&mut cmd, SUITE_LIMIT)
}

/// Fails unless the mwait side's build resolved mwait: a `[patch]` that matched
/// nothing is only a warning to cargo, and the suite would have run stock twice.
fn check_on_mwait(client: &Client, dir: &Path) -> Res {
    let lock = read(&dir.join("Cargo.lock"))?;
    if lock.contains("name = \"mwait\"") {
        Ok(())
    } else {
        Err(format!(
            "{}: the mwait side's Cargo.lock has no mwait: the drop-in was not used",
            client.name
        ))
    }
}

fn copy_dir(from: &Path, to: &Path) -> Res {
    fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for entry in fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))? {
        let entry = entry.map_err(|e| e.to_string())?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().map_err(|e| e.to_string())?.is_dir() {
            copy_dir(&src, &dst)?;
        } else {
            fs::copy(&src, &dst).map_err(|e| format!("{}: {e}", src.display()))?;
        }
    }
    Ok(())
}

fn read(path: &Path) -> Res<String> {
    fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn write(path: &Path, text: &str) -> Res {
    fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_read_from_the_test_result_lines() {
        let run = Captured {
            ok: false,
            status: "exit 101".into(),
            stdout: "running 3 tests\n\
                     test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured\n\
                     test result: FAILED. 10 passed; 2 failed; 1 ignored; 0 measured\n"
                .into(),
            ..Captured::default()
        };
        let t = Tally::of(&run);
        assert_eq!((t.passed, t.failed), (13, 2));
        assert!(!t.passes());
        assert_eq!(t.describe(), "13 passed, 2 failed");
    }

    #[test]
    fn a_suite_that_did_not_finish_has_not_passed() {
        let run = Captured {
            ok: false,
            status: "timed out after 600 s".into(),
            stdout: "test result: ok. 4 passed; 0 failed;\n".into(),
            ..Captured::default()
        };
        let t = Tally::of(&run);
        assert!(!t.passes());
        assert_eq!(t.describe(), "4 passed, 0 failed (timed out after 600 s)");
    }

    #[test]
    fn locked_registry_versions_of_one_crate_are_found() {
        let lock = "version = 3\n\n[[package]]\nname = \"parking\"\nversion = \"2.2.0\"\n\
                    source = \"registry+https://github.com/rust-lang/crates.io-index\"\n\n\
                    [[package]]\nname = \"parking_lot\"\nversion = \"0.12.1\"\n\
                    source = \"registry+https://github.com/rust-lang/crates.io-index\"\n\n\
                    [[package]]\nname = \"parking\"\nversion = \"2.2.1\"\n";
        assert_eq!(locked_registry_versions(lock, "parking"), ["2.2.0"]);
    }

    #[test]
    fn the_parking_shim_is_named_parking_and_reexports_the_drop_in() {
        let dir = project_root().join("target/clients-test-shims");
        let shim = shim(
            &dir,
            "parking",
            &project_root().join("integrations/parking"),
        )
        .unwrap();
        let manifest = read(&shim.join("Cargo.toml")).unwrap();
        assert!(
            manifest.contains("name = \"parking\"\nversion = \"2.2.1\""),
            "{manifest}"
        );
        assert!(manifest.contains("loom = [\"inner/loom\"]"), "{manifest}");
        assert!(
            manifest.contains("package = \"mwait-parking\""),
            "{manifest}"
        );
        assert_eq!(
            read(&shim.join("src/lib.rs")).unwrap(),
            "pub use inner::*;\n"
        );
    }

    #[test]
    fn semantics_verdicts_require_the_same_passing_tests_on_both_sides() {
        let out = "running 2 tests\ntest b ... ok\ntest a ... FAILED\ntest c ... ignored\n\
                   test result: FAILED. 1 passed; 1 failed;\n";
        let got = test_outcomes(out);
        assert_eq!(got, [("a".to_string(), false), ("b".to_string(), true)]);
        let pass = Ok(vec![("a".to_string(), true), ("b".to_string(), true)]);
        assert!(compare_semantics(&pass, &pass).is_ok());
        assert!(compare_semantics(&pass, &Ok(got.clone())).is_err());
        assert!(
            compare_semantics(&Ok(got.clone()), &Ok(got)).is_err(),
            "failing on both"
        );
        let fewer = Ok(vec![("a".to_string(), true)]);
        assert!(compare_semantics(&pass, &fewer).is_err());
        assert!(compare_semantics(&pass, &Err("no test ran".into())).is_err());
    }

    #[test]
    fn every_row_names_an_exact_version_and_a_drop_in_that_exists() {
        for c in CLIENTS {
            assert!(c.version.split('.').count() == 3, "{}", c.name);
            let paths: Vec<&str> = match &c.on_mwait {
                OnMwait::PatchCratesIo(d) => d.iter().map(|(_, p)| *p).collect(),
                OnMwait::ReplaceSource { drop_in, path_deps } => {
                    let mut v: Vec<&str> = path_deps.iter().map(|(_, p)| *p).collect();
                    v.push(drop_in);
                    v
                }
                OnMwait::ApplyPatch { diff, path_deps } => {
                    let mut v: Vec<&str> = path_deps.iter().map(|(_, p)| *p).collect();
                    v.push(diff);
                    v
                }
            };
            for p in paths.into_iter().chain(c.semantics) {
                assert!(project_root().join(p).exists(), "{}: {p}", c.name);
            }
        }
    }
}
