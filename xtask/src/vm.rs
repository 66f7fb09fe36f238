//! `cargo xtask vm-test`: boots the kernel shim and its tests in a QEMU TCG
//! guest. The work is done by `kmod/tests/run-vm.sh` (build the module with
//! W=1 against the cloud headers, fetch the matching kernel image without
//! installing it, build the C and Rust in-guest tests statically, boot, parse
//! the serial log, print `N passed, N failed`); this installs what it needs.
use crate::util::{ensure_apt, project_root, run, step, Res};
use std::process::Command;

/// Debian packages the VM test needs.
const PACKAGES: &[&str] = &[
    "qemu-system-x86",
    "busybox-static",
    "cpio",
    "linux-headers-cloud-amd64",
    "gcc",
    "make",
];

/// Runs the VM test; fails on any failed test or on no result.
pub fn run_vm(_args: &[String]) -> Res {
    step("vm-test: packages");
    ensure_apt(PACKAGES)?;
    step("vm-test: build, boot, check");
    let root = project_root();
    run(Command::new("sh")
        .arg(root.join("kmod/tests/run-vm.sh"))
        .env("WORK", root.join("target/vm")))
}
