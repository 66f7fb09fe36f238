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
    "gcc-multilib",
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

/// `cargo xtask checkpatch`: the kernel's checkpatch.pl over the module, its
/// uapi header and the C test (`kmod/tests/checkpatch.sh`; it downloads the
/// Debian kernel source package once, without installing it, for the script).
pub fn checkpatch(_args: &[String]) -> Res {
    step("checkpatch: packages");
    ensure_apt(&["perl", "xz-utils"])?;
    step("checkpatch: module, uapi header, C test");
    let root = project_root();
    run(Command::new("sh")
        .arg(root.join("kmod/tests/checkpatch.sh"))
        .env("WORK", root.join("target/checkpatch")))
}
