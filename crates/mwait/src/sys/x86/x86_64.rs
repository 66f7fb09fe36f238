//! The x86-64 wait instructions, one `#[inline] unsafe fn` each, the zero-sized
//! capability tokens ([`Waitpkg`], [`MonitorX`]) that only detection can create, whose
//! methods are the safe way to call them, and the TSC rate that turns nanosecond
//! budgets into the TSC deadlines and counts those instructions take.
//!
//! The instructions are written as bytes: assemblers disagree about whether WAITPKG
//! and MONITORX mnemonics need target features, and a runtime-dispatched build must
//! not depend on that (the build breaks that oneTBB, ONNX Runtime and DPDK hit).

use crate::sys::contract::CpuidWaits;
use crate::sys::Watchable;
use super::tsc::{ns_to_ticks, rdtsc};
use core::arch::asm;

/// This build has the instructions below.
pub(crate) const AVAILABLE: bool = true;

/// `ticks` of the TSC in nanoseconds (the OS states UMWAIT's cap in ticks).
pub(crate) fn tsc_ticks_to_ns(ticks: u64) -> Option<u64> {
    let hz = super::tsc::rate().hz.max(1);
    Some(ticks.saturating_mul(1_000_000_000) / hz)
}

/// UMONITOR/UMWAIT/TPAUSE control (ECX): 1 selects C0.1, 0 selects C0.2. All other bits
/// must be zero.
pub(crate) const WAITPKG_C0_1: u32 = 1;
/// See [`WAITPKG_C0_1`].
pub(crate) const WAITPKG_C0_2: u32 = 0;
/// MWAITX EAX hint, bits 7:4: 0xF means "stay in C0" (no C-state change).
pub(crate) const MWAITX_HINT_C0: u32 = 0xF0;
/// MWAITX EAX hint, bits 7:4: 0 means C1.
pub(crate) const MWAITX_HINT_C1: u32 = 0x00;
/// MWAITX ECX bit 1: the EBX timer is enabled.
const MWAITX_ECX_TIMER: u32 = 1 << 1;

/// UMONITOR: arms the user-mode address monitor on the line holding `addr`.
///
/// # Safety
///
/// CPUID.(EAX=7,ECX=0):ECX\[5\] (WAITPKG) must be set. `addr` must be mapped.
#[inline]
pub(crate) unsafe fn umonitor(addr: *const u8) {
    // SAFETY: the caller guarantees WAITPKG and a mapped address; UMONITOR only
    // arms the monitor and writes no memory or flags.
    unsafe {
        // umonitor rax
        asm!(".byte 0xf3, 0x0f, 0xae, 0xf0", in("rax") addr, options(nostack, preserves_flags));
    }
}

/// UMWAIT: waits in C0.1 (`ctrl` = 1) or C0.2 (`ctrl` = 0) until the monitored line is
/// written, an interrupt or other wake event arrives, the TSC reaches `deadline_tsc`
/// (absolute), or the OS limit `IA32_UMWAIT_CONTROL` ends it. Returns CF: `true` when
/// the OS limit ended the wait.
///
/// # Safety
///
/// WAITPKG must be set, and [`umonitor`] should have armed the monitor (without it
/// UMWAIT returns at once, which is safe but useless).
#[inline]
pub(crate) unsafe fn umwait(ctrl: u32, deadline_tsc: u64) -> bool {
    let cf: u8;
    // SAFETY: the caller guarantees WAITPKG; UMWAIT reads EDX:EAX and ECX and sets
    // CF, which is why this asm does not claim `preserves_flags`.
    unsafe {
        // umwait ecx
        asm!(
            ".byte 0xf2, 0x0f, 0xae, 0xf1",
            "setc {cf}",
            cf = out(reg_byte) cf,
            in("ecx") ctrl,
            in("eax") deadline_tsc as u32,
            in("edx") (deadline_tsc >> 32) as u32,
            options(nostack),
        );
    }
    cf != 0
}

/// TPAUSE: a timed pause in C0.1 (`ctrl` = 1) or C0.2 (`ctrl` = 0) until the TSC reaches
/// `deadline_tsc` (absolute), an interrupt, or the OS limit. Returns CF: `true` when the
/// OS limit ended it. Needs no monitor.
///
/// # Safety
///
/// WAITPKG must be set.
#[inline]
pub(crate) unsafe fn tpause(ctrl: u32, deadline_tsc: u64) -> bool {
    let cf: u8;
    // SAFETY: the caller guarantees WAITPKG; TPAUSE reads EDX:EAX and ECX and sets CF.
    unsafe {
        // tpause ecx
        asm!(
            ".byte 0x66, 0x0f, 0xae, 0xf1",
            "setc {cf}",
            cf = out(reg_byte) cf,
            in("ecx") ctrl,
            in("eax") deadline_tsc as u32,
            in("edx") (deadline_tsc >> 32) as u32,
            options(nostack),
        );
    }
    cf != 0
}

/// MONITORX: arms the address monitor on the line holding `addr` (ECX = EDX = 0).
///
/// # Safety
///
/// CPUID.8000_0001:ECX\[29\] (MONITORX) must be set. `addr` must be mapped.
#[inline]
pub(crate) unsafe fn monitorx(addr: *const u8) {
    // SAFETY: the caller guarantees MONITORX and a mapped address; MONITORX arms the
    // monitor and changes no flags.
    unsafe {
        // monitorx rax, ecx, edx
        asm!(
            ".byte 0x0f, 0x01, 0xfa",
            in("rax") addr,
            in("ecx") 0u32,
            in("edx") 0u32,
            options(nostack, preserves_flags),
        );
    }
}

/// MWAITX with the timer enabled: waits with C-state `hint` (EAX bits 7:4) until the
/// monitored line is written, an interrupt arrives, or `timeout_tsc` TSC-rate ticks
/// (relative, 32 bits) pass.
///
/// # Safety
///
/// MONITORX must be set, and [`monitorx`] should have armed the monitor.
#[inline]
pub(crate) unsafe fn mwaitx(hint: u32, timeout_tsc: u32) {
    // SAFETY: the caller guarantees MONITORX. EBX carries the timeout but LLVM
    // reserves RBX, so it is saved in a scratch register and restored.
    unsafe {
        // mwaitx eax, ecx, ebx
        asm!(
            "xchg {save:r}, rbx",
            ".byte 0x0f, 0x01, 0xfb",
            "xchg {save:r}, rbx",
            save = inout(reg) u64::from(timeout_tsc) => _,
            in("eax") hint,
            in("ecx") MWAITX_ECX_TIMER,
            options(nostack, preserves_flags),
        );
    }
}

/// Proof that this CPU has WAITPKG (UMONITOR/UMWAIT/TPAUSE).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Waitpkg(());

impl Waitpkg {
    /// The token, if CPUID reports WAITPKG.
    pub(crate) fn new(caps: &impl CpuidWaits) -> Option<Waitpkg> {
        caps.waitpkg().then_some(Waitpkg(()))
    }

    /// The token without the CPUID check (`None` only where the build has no
    /// WAITPKG instructions at all).
    ///
    /// # Safety
    ///
    /// The instructions must execute on this CPU (for tests under an emulator that
    /// implements them without reporting them).
    pub(crate) unsafe fn new_unchecked() -> Option<Waitpkg> {
        Some(Waitpkg(()))
    }

    /// The TSC reading `ns` nanoseconds from now (saturating).
    #[inline]
    pub(crate) fn tsc_after(self, ns: u64) -> u64 {
        rdtsc().saturating_add(ns_to_ticks(ns))
    }

    /// Whether the TSC has reached `deadline_tsc`.
    #[inline]
    pub(crate) fn tsc_reached(self, deadline_tsc: u64) -> bool {
        rdtsc() >= deadline_tsc
    }

    /// `ns` nanoseconds in TSC ticks, for [`Waitpkg::pause`].
    #[inline]
    pub(crate) fn ticks(self, ns: u64) -> u64 {
        ns_to_ticks(ns)
    }

    /// A TPAUSE in C0.1 of `ticks` TSC ticks: the spin tier's pause.
    #[inline]
    pub(crate) fn pause(self, ticks: u64) {
        self.tpause(WAITPKG_C0_1, rdtsc().wrapping_add(ticks));
    }

    /// [`umonitor`] on `word`'s line.
    #[inline]
    pub(crate) fn umonitor(self, word: &impl Watchable) {
        // SAFETY: the token proves WAITPKG; a reference is always mapped.
        unsafe { umonitor(word.addr()) }
    }

    /// [`umwait`]; returns whether the OS limit ended the wait.
    #[inline]
    pub(crate) fn umwait(self, ctrl: u32, deadline_tsc: u64) -> bool {
        // SAFETY: the token proves WAITPKG; `ctrl` is 0 or 1 (the callers pass the
        // named constants).
        unsafe { umwait(ctrl & 1, deadline_tsc) }
    }

    /// [`tpause`]; returns whether the OS limit ended the pause.
    #[inline]
    pub(crate) fn tpause(self, ctrl: u32, deadline_tsc: u64) -> bool {
        // SAFETY: the token proves WAITPKG; `ctrl` is masked to its one valid bit.
        unsafe { tpause(ctrl & 1, deadline_tsc) }
    }
}

/// Proof that this CPU has MONITORX/MWAITX.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct MonitorX(());

impl MonitorX {
    /// The token, if CPUID reports MONITORX.
    pub(crate) fn new(caps: &impl CpuidWaits) -> Option<MonitorX> {
        caps.monitorx().then_some(MonitorX(()))
    }

    /// The token without the CPUID check (`None` only where the build has no
    /// MONITORX instructions at all).
    ///
    /// # Safety
    ///
    /// The instructions must execute on this CPU (some guests execute them although
    /// CPUID hides them: `docs/hardware-results.md`).
    pub(crate) unsafe fn new_unchecked() -> Option<MonitorX> {
        Some(MonitorX(()))
    }

    /// `ns` nanoseconds in TSC ticks (MWAITX's timer counts at the TSC rate).
    #[inline]
    pub(crate) fn ticks(self, ns: u64) -> u64 {
        ns_to_ticks(ns)
    }

    /// [`monitorx`] on `word`'s line.
    #[inline]
    pub(crate) fn monitorx(self, word: &impl Watchable) {
        // SAFETY: the token proves MONITORX; a reference is always mapped.
        unsafe { monitorx(word.addr()) }
    }

    /// [`mwaitx`] with the timer.
    #[inline]
    pub(crate) fn mwaitx(self, hint: u32, timeout_tsc: u32) {
        // SAFETY: the token proves MONITORX; any hint value is accepted by the CPU
        // (unsupported C-states fall back to C1 or C0).
        unsafe { mwaitx(hint, timeout_tsc) }
    }
}

/// Whether this CPU has PREFETCHW (CPUID.8000_0001:ECX\[8\], PRFCHW), which
/// [`prefetch_for_write`] needs: every AMD CPU with 64-bit mode, Intel since Broadwell.
// Only the Linux light notify uses it.
#[cfg(target_os = "linux")]
pub(crate) fn prefetchw_supported() -> bool {
    const PRFCHW: u32 = 1 << 8;
    extended_leaf(0x8000_0001).ecx & PRFCHW != 0
}

/// Whether this CPU has RDPID (CPUID.(EAX=7,ECX=0):ECX\[22\]), which [`rdpid`]
/// needs: Intel since Ice Lake and Goldmont Plus, AMD since Zen 2. A hypervisor or
/// an emulator may hide it (valgrind does).
// Only the Linux CPU number uses it.
#[cfg(target_os = "linux")]
pub(crate) fn rdpid_supported() -> bool {
    use raw_cpuid::CpuIdReader;
    const RDPID: u32 = 1 << 22;
    let reader = super::cpuid::native_reader();
    reader.cpuid1(0).eax >= 7 && reader.cpuid2(7, 0).ecx & RDPID != 0
}

/// RDPID: this CPU's IA32_TSC_AUX, the value the kernel wrote there for it.
///
/// # Safety
///
/// The CPU must have RDPID ([`rdpid_supported`]).
#[inline(always)]
// Only the Linux CPU number uses it.
#[cfg(target_os = "linux")]
pub(crate) unsafe fn rdpid() -> u64 {
    let aux: u64;
    // SAFETY: the caller guarantees RDPID. `rdpid rax` (F3 0F C7 /7, ModRM F8)
    // writes only RAX, reads no memory and touches no flag and no stack.
    unsafe {
        asm!(
            ".byte 0xf3, 0x0f, 0xc7, 0xf8",
            out("rax") aux,
            options(nomem, nostack, preserves_flags)
        );
    }
    aux
}

/// Whether a TLB shootdown on this CPU interrupts every other CPU that runs a thread
/// of the process: false where the CPU has INVLPGB (CPUID.8000_0008:EBX\[3\]), which
/// Linux 6.15 and later may use to flush other CPUs' TLBs without an interrupt.
// Only the Linux fallback barrier uses it.
#[cfg(target_os = "linux")]
pub(crate) fn shootdown_interrupts() -> bool {
    const INVLPGB: u32 = 1 << 3;
    extended_leaf(0x8000_0008).ebx & INVLPGB == 0
}

/// CPUID leaf `leaf` of 0x8000_0001 and 0x8000_0008, through the process's CPUID
/// memo (detection has filled it with the first).
///
/// Leaf 0x8000_0000 is not asked whether the CPU has them, one exit to the
/// hypervisor fewer in a process's first park: every CPU that runs 64-bit code has
/// 0x8000_0001 (it reports long mode), and every one its vendor's manual describes
/// reports extended leaves through 0x8000_0008 (the address sizes). On a CPU that
/// did not, 0x8000_0008 would read as zeros (AMD) or as another leaf (Intel), and a
/// stray INVLPGB bit would only turn the light notify off: a CPU that has INVLPGB
/// has the leaf.
#[cfg(target_os = "linux")]
fn extended_leaf(leaf: u32) -> raw_cpuid::CpuIdResult {
    use raw_cpuid::CpuIdReader;
    super::cpuid::native_reader().cpuid1(leaf)
}

/// Asks for `word`'s cache line in the exclusive state ahead of a store to it
/// (PREFETCHW), so that the light notify's store does not wait for the line's
/// transfer after the CPU has started on the instructions that follow it (the
/// figures are in `docs/design-notes.md`). On a line this CPU already owns it costs
/// next to nothing. A hint: it never faults and writes nothing.
///
/// It may end a hardware wait armed on the line early. The request for ownership
/// invalidates the waiter's copy of the line, and the SDM and APM leave the events
/// that end UMWAIT and MWAITX besides a store to the armed range to the
/// implementation; an invalidation is one on some parts. That is harmless: every
/// hardware wait tolerates an early return (the waiter re-checks the value and arms
/// again), and the store that would have ended the wait follows within nanoseconds.
///
/// # Safety
///
/// The CPU must have PREFETCHW ([`prefetchw_supported`]); elsewhere the opcode is not
/// guaranteed to execute as a no-op.
#[inline(always)]
// Only the Linux light notify uses it.
#[cfg(target_os = "linux")]
pub(crate) unsafe fn prefetch_for_write(word: &crate::primitive::AtomicU32) {
    // SAFETY: the caller guarantees PREFETCHW exists; it reads no memory
    // architecturally (a hint on the line of a valid reference), writes no register
    // and no flag, and touches no stack.
    unsafe {
        asm!(
            "prefetchw [{0}]",
            in(reg) word.as_ptr(),
            options(nostack, preserves_flags, readonly)
        );
    }
}
