//! The `/dev/mwait` kernel shim (`kmod/`): opening the device and one `WAIT` ioctl.
//! Linux on x86-64 only; `no_dev_mwait.rs` stands in elsewhere.

use crate::primitive::AtomicU32;
use crate::sys::contract::ShimWake;
use crate::sys::counters::{self, Counter};
use std::sync::OnceLock;

/// This build can talk to the shim.
pub(crate) const AVAILABLE: bool = true;

/// The shim's device node.
const DEVICE: &std::ffi::CStr = c"/dev/mwait";

/// The open `/dev/mwait`, or why it could not be used.
static DEVICE_FD: OnceLock<Result<i32, String>> = OnceLock::new();

/// A handle on the shim: holding one proves `/dev/mwait` is open, speaks our ABI and
/// reports MWAIT usable.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Device(i32);

impl Device {
    /// Opens the device (once per process, kept open) and checks its ABI version.
    pub(crate) fn open() -> Result<Device, String> {
        DEVICE_FD.get_or_init(open_device).clone().map(Device)
    }

    /// One `MWAIT_IOC_WAIT`: MONITOR/MWAIT in ring 0 with `hint` while `word` holds
    /// `expected`, until it changes, `deadline_ns` (absolute, `CLOCK_MONOTONIC`, at
    /// most a second away: the module refuses longer waits with `ERANGE`), the
    /// scheduler needs the CPU, or a signal is pending.
    pub(crate) fn wait(
        self,
        word: &AtomicU32,
        expected: u32,
        deadline_ns: u64,
        hint: u32,
    ) -> ShimWake {
        let mut w = mwait_sys::mwait_wait {
            addr: word.as_ptr() as u64,
            deadline_ns,
            mask: u32::MAX,
            expected,
            hint,
            ..Default::default()
        };
        // SAFETY: self.0 is the open device; `w` is a valid in/out mwait_wait; the
        // kernel only reads `word`, which outlives the call.
        let r = unsafe { libc::ioctl(self.0, mwait_sys::MWAIT_IOC_WAIT as _, &mut w) };
        // The module writes the reason back on success and on EINTR (SIGNAL); a
        // refusal leaves it 0, and so is counted a reason this build does not know
        // (never as one it does).
        counters::count(Counter::KernelWait(w.reason));
        if r < 0 {
            // EINTR (a signal) is expected; a refusal means a bug in the arguments.
            // Either way the CPU goes back to the futex park.
            let errno = std::io::Error::last_os_error().raw_os_error();
            debug_assert_eq!(errno, Some(libc::EINTR), "/dev/mwait WAIT refused");
            return ShimWake::Yield;
        }
        match w.reason {
            mwait_sys::MWAIT_REASON_DEADLINE => ShimWake::Deadline,
            mwait_sys::MWAIT_REASON_RESCHED | mwait_sys::MWAIT_REASON_SIGNAL => ShimWake::Yield,
            _ => ShimWake::Woken,
        }
    }
}

fn open_device() -> Result<i32, String> {
    // SAFETY: DEVICE is a valid NUL-terminated path.
    let fd = unsafe { libc::open(DEVICE.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(format!("/dev/mwait: {}", std::io::Error::last_os_error()));
    }
    let mut info = mwait_sys::mwait_info::default();
    // SAFETY: fd is open and `info` is a writable mwait_info of the size the opcode
    // encodes.
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
