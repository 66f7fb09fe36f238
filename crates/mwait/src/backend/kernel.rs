//! The kernel tier: ring-0 MONITOR/MWAIT through the `/dev/mwait` shim
//! (`kmod/`), for CPUs that have MWAIT but no user-mode wait.
//!
//! The device is opened once per process and kept open. Each episode is one
//! `MWAIT_IOC_WAIT`; the module returns as soon as the word changes, the
//! deadline passes, the scheduler needs the CPU or a signal is pending. The
//! last two become [`HwWake::Yield`], so the ladder parks on the futex
//! instead of holding a CPU the scheduler wants.
//!
//! Executed in a QEMU TCG guest only (where kernel MWAIT is a no-op); never
//! timed.

use super::{HardwareWait, HwWake};
use crate::policy::CState;
use core::sync::atomic::AtomicU32;
use std::sync::OnceLock;

/// The shim's device node.
const DEVICE: &std::ffi::CStr = c"/dev/mwait";

/// The MWAIT hint for C1, which every MWAIT CPU allows. C0.1 and C0.2 have
/// no MWAIT encoding, so every [`CState`] maps to it for now.
const C1_HINT: u32 = 0x00;

/// The module's cap on one wait (it refuses longer ones with `ERANGE`); an
/// episode with a later deadline is cut to this and reported as `Woken`.
const MAX_EPISODE_NS: u64 = 1_000_000_000;

/// `MWAIT_IOC_WAIT` returns counted by `reason` (index `MWAIT_REASON_*`;
/// 0 for a refusal, which writes no reason), for tests that must prove which
/// way out a kernel wait took.
#[cfg(feature = "test-counters")]
pub(crate) static WAIT_RETURNS: [std::sync::atomic::AtomicU64; 5] =
    [const { std::sync::atomic::AtomicU64::new(0) }; 5];

/// The open `/dev/mwait`, or why it could not be used.
static DEVICE_FD: OnceLock<Result<i32, String>> = OnceLock::new();

/// A handle on the shim: holding one proves `/dev/mwait` is open, speaks our
/// ABI and reports MWAIT usable.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Kernel(i32);

impl Kernel {
    /// Opens the device (once per process) and checks its ABI version.
    pub(crate) fn open() -> Result<Kernel, String> {
        DEVICE_FD.get_or_init(open_device).clone().map(Kernel)
    }
}

fn open_device() -> Result<i32, String> {
    // SAFETY: DEVICE is a valid NUL-terminated path.
    let fd = unsafe { libc::open(DEVICE.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(format!("/dev/mwait: {}", std::io::Error::last_os_error()));
    }
    let mut info = mwait_sys::mwait_info::default();
    // SAFETY: fd is open and `info` is a writable mwait_info of the size the
    // opcode encodes.
    let r = unsafe { libc::ioctl(fd, mwait_sys::MWAIT_IOC_INFO as _, &mut info) };
    let err = if r < 0 {
        Some(format!(
            "/dev/mwait INFO: {}",
            std::io::Error::last_os_error()
        ))
    } else if info.abi_version != mwait_sys::MWAIT_ABI_VERSION {
        Some(format!(
            "/dev/mwait speaks ABI {}, this build needs {}",
            info.abi_version,
            mwait_sys::MWAIT_ABI_VERSION
        ))
    } else if info.flags & mwait_sys::MWAIT_INFO_USABLE == 0 {
        Some("/dev/mwait: this CPU has no usable MWAIT".to_string())
    } else {
        None
    };
    match err {
        Some(e) => {
            // SAFETY: fd was opened above and is not used after this.
            unsafe { libc::close(fd) };
            Err(e)
        }
        None => Ok(fd),
    }
}

impl HardwareWait for Kernel {
    fn wait_episode(&self, word: &AtomicU32, old: u32, deadline_ns: u64, cstate: CState) -> HwWake {
        let _ = cstate;
        let cap = crate::clock::now_ns().saturating_add(MAX_EPISODE_NS);
        let clamped = deadline_ns > cap;
        let mut w = mwait_sys::mwait_wait {
            addr: word.as_ptr() as u64,
            deadline_ns: deadline_ns.min(cap),
            mask: u32::MAX,
            expected: old,
            hint: C1_HINT,
            ..Default::default()
        };
        // SAFETY: self.0 is the open device; `w` is a valid in/out mwait_wait;
        // the kernel only reads `word`, which outlives the call.
        let r = unsafe { libc::ioctl(self.0, mwait_sys::MWAIT_IOC_WAIT as _, &mut w) };
        // The module writes the reason back on success and on EINTR (SIGNAL);
        // a refusal leaves it 0, and so is counted a reason this build does not
        // know (never as one it does).
        #[cfg(feature = "test-counters")]
        WAIT_RETURNS
            .get(w.reason as usize)
            .unwrap_or(&WAIT_RETURNS[0])
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if r < 0 {
            // EINTR (a signal) is expected; a refusal means a bug in the arguments
            // above. Either way the CPU goes back to the futex park.
            let errno = std::io::Error::last_os_error().raw_os_error();
            debug_assert_eq!(errno, Some(libc::EINTR), "/dev/mwait WAIT refused");
            return HwWake::Yield;
        }
        match w.reason {
            mwait_sys::MWAIT_REASON_DEADLINE if clamped => HwWake::Woken,
            mwait_sys::MWAIT_REASON_DEADLINE => HwWake::Deadline,
            mwait_sys::MWAIT_REASON_RESCHED | mwait_sys::MWAIT_REASON_SIGNAL => HwWake::Yield,
            _ => HwWake::Woken,
        }
    }
}
