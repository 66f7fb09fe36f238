//! Checks the hand-written ABI against what a C compiler computes from the
//! uapi header: sizes, offsets, constants and ioctl opcodes.
use std::{path::Path, process::Command};

#[test]
fn abi_matches_c_header() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let src = out.join("abi.c");
    let exe = out.join("abi");
    std::fs::write(
        &src,
        r#"#include <stdio.h>
#include <stddef.h>
#include <linux/mwait.h>
#define P(x) printf(#x " %llu\n", (unsigned long long)(x))
int main(void) {
P(MWAIT_ABI_VERSION); P(MWAIT_INFO_USABLE); P(MWAIT_REASON_CHANGED);
P(MWAIT_REASON_DEADLINE); P(MWAIT_REASON_RESCHED); P(MWAIT_REASON_SIGNAL);
P(MWAIT_WAIT_FLAGS_ALL); P(MWAIT_IOC_INFO); P(MWAIT_IOC_WAIT);
P(sizeof(struct mwait_info)); P(sizeof(struct mwait_wait));
P(offsetof(struct mwait_info, max_wait_ns)); P(offsetof(struct mwait_wait, pad));
P(offsetof(struct mwait_wait, mask)); P(offsetof(struct mwait_wait, value));
return 0; }
"#,
    )
    .unwrap();
    let st = Command::new("cc")
        .arg("-I")
        .arg(root.join("kmod/include/uapi"))
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("cc runs");
    assert!(st.success(), "cc failed");
    let text = String::from_utf8(Command::new(&exe).output().unwrap().stdout).unwrap();
    use core::mem::{offset_of, size_of};
    use mwait_sys::*;
    let want: Vec<(&str, u64)> = vec![
        ("MWAIT_ABI_VERSION", MWAIT_ABI_VERSION.into()),
        ("MWAIT_INFO_USABLE", MWAIT_INFO_USABLE.into()),
        ("MWAIT_REASON_CHANGED", MWAIT_REASON_CHANGED.into()),
        ("MWAIT_REASON_DEADLINE", MWAIT_REASON_DEADLINE.into()),
        ("MWAIT_REASON_RESCHED", MWAIT_REASON_RESCHED.into()),
        ("MWAIT_REASON_SIGNAL", MWAIT_REASON_SIGNAL.into()),
        ("MWAIT_WAIT_FLAGS_ALL", MWAIT_WAIT_FLAGS_ALL.into()),
        ("MWAIT_IOC_INFO", MWAIT_IOC_INFO.into()),
        ("MWAIT_IOC_WAIT", MWAIT_IOC_WAIT.into()),
        ("sizeof(struct mwait_info)", size_of::<mwait_info>() as u64),
        ("sizeof(struct mwait_wait)", size_of::<mwait_wait>() as u64),
        (
            "offsetof(struct mwait_info, max_wait_ns)",
            offset_of!(mwait_info, max_wait_ns) as u64,
        ),
        (
            "offsetof(struct mwait_wait, pad)",
            offset_of!(mwait_wait, pad) as u64,
        ),
        (
            "offsetof(struct mwait_wait, mask)",
            offset_of!(mwait_wait, mask) as u64,
        ),
        (
            "offsetof(struct mwait_wait, value)",
            offset_of!(mwait_wait, value) as u64,
        ),
    ];
    let got: Vec<(String, u64)> = text
        .lines()
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect();
    assert_eq!(got.len(), want.len());
    for ((gk, gv), (wk, wv)) in got.iter().zip(&want) {
        assert_eq!((gk.as_str(), *gv), (*wk, *wv));
    }
}
