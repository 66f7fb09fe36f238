//! `cargo xtask`: the workspace's build, test, VM-test, stress, bench and codegen driver.
//!
//! One binary whose only dependency is the workspace's support crate (std and libc),
//! so that it builds in seconds on a fresh machine. Every subcommand installs what it
//! needs (rustup targets, Debian packages) and says what it installs.

mod aarch64;
mod bench;
mod client_bench;
mod clients;
mod codegen;
mod dkms;
mod hwreport;
mod hwtest;
mod miri;
mod ports;
mod test;
mod tidy;
mod util;
mod vm;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  test            everything CI runs: fmt, clippy, generated bindings, tests,
                  doctests, loom, docs, other targets, packaging, hardware-tier
                  suites, DKMS, VM tests, checkpatch
  tidy            the docs, lists and comments agree with the tree (backticked
                  paths exist, the architecture walks' functions, the examples,
                  docs and clients lists, no development notes)
  clients [NAME...]
                  other crates' own test suites (parking, event-listener,
                  async-channel, async-lock, async-executor, futures-lite,
                  async-io, rayon-core, atomic-wait, tokio), stock and on
                  mwait, from their published sources; fails when one
                  passes stock only, or when a row's semantics tests differ
  patch NAME DIR [VERSION]
                  copies the pinned release of NAME (tokio, rayon-core, parking,
                  atomic-wait) from crates.io into DIR, moved onto mwait, and
                  prints the [patch.crates-io] line; refuses another VERSION
  package         `cargo publish --dry-run` of the published crates in dependency
                  order, then a build of their tests from the unpacked .crate files
  miri            the unit and integration tests that Miri can run today, under
                  Miri (installs nightly miri and rust-src when missing)
  stress [N] [--rounds R]
                  long stress run with each tier forced (default 10^8 handoffs)
                  and R rounds of the lost wake-up stress (default 10^7);
                  --rounds alone runs only the latter
  bench [--quick] the benchmark suite; writes target/mwait-bench/report.md
  bench --rayon [ROUNDS]
                  only its rayon part (rayon-core stock and patched, in turns);
                  appends to target/mwait-bench/rayon.md
  hw-test         the hardware tiers' suites (UMWAIT under qemu-user, MWAITX native)
  aarch64-test    builds the mwait test suites for aarch64-unknown-linux-gnu
                  and runs them under qemu-aarch64 (installs qemu-user, clang
                  and the cross libc): the futex park tier and the wfe tier
  wine-test       builds the mwait test suites for x86_64-pc-windows-gnu and
                  runs them under Wine (installs wine64 and MinGW)
  cross-check     clippy and `cargo test --no-run` (link skipped) for macOS,
                  FreeBSD and NetBSD, clippy for Windows
  hw-report [--no-bench]
                  what this machine offers, the hardware tiers it offers put
                  through their suites, and a quick bench, in one file to send:
                  target/mwait-hw-report.md
  vm-test         builds the kernel module, boots it in QEMU and runs the in-guest suite
  dkms            builds and installs kmod/ with DKMS (kmod/dkms.conf) into a
                  private tree, against the kernel headers vm-test uses
  checkpatch      the kernel's checkpatch.pl over kmod/ (module, uapi header, C test)
  codegen [--check]
                  regenerates crates/mwait-sys/src/bindings.rs from the uapi
                  header with bindgen; --check fails when the file is stale
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (cmd, rest) = match args.split_first() {
        Some((c, r)) => (c.as_str(), r),
        None => {
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let result = match cmd {
        "test" => test::run(rest),
        "tidy" => tidy::run(rest),
        "clients" => clients::run(rest),
        "package" => test::package_only(rest),
        "patch" => clients::patch(rest),
        "miri" => miri::run(rest),
        "stress" => test::stress(rest),
        "bench" => bench::run(rest),
        "hw-test" => hwtest::run(rest),
        "aarch64-test" => aarch64::run(rest),
        "wine-test" => ports::wine_test(rest),
        "cross-check" => ports::cross_check(rest),
        "hw-report" => hwreport::run(rest),
        "vm-test" => vm::run_vm(rest),
        "dkms" => dkms::run(rest),
        "checkpatch" => vm::checkpatch(rest),
        "codegen" => codegen::run(rest),
        "help" | "--help" | "-h" => {
            print!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown command `{other}`\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask {cmd}: error: {e}");
            ExitCode::FAILURE
        }
    }
}
